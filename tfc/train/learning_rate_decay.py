"""TF1's learning-rate schedules: tensors computed from the global step at every run."""

from __future__ import annotations

import math
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.logic import equal, less_equal, where
from tfc.ops.math import (
    add,
    cast,
    ceil,
    cos,
    divide,
    exp,
    floor,
    log,
    minimum,
    multiply,
    negative,
    pow,
    sqrt,
    subtract,
)
from tfc.ops.random import random_normal

__all__ = [
    "exponential_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
    "natural_exp_decay",
    "inverse_time_decay",
    "cosine_decay",
    "cosine_decay_restarts",
    "linear_cosine_decay",
    "noisy_linear_cosine_decay",
]


def _in_dtype(value: Any, dtype: Any) -> Tensor:
    """`value` as a tensor of `dtype`: Python numbers directly, tensors through a Cast."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return cast(value, dtype)
    return convert_to_tensor(value, dtype=dtype)


def _require_step(global_step: Any, what: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")


def _decay_progress(
    learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any, staircase: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """(learning rate, decay rate, p = global_step / decay_steps, floored when staircase)."""
    lr = convert_to_tensor(learning_rate, name="learning_rate")
    dtype = lr.dtype
    p = divide(_in_dtype(global_step, dtype), _in_dtype(decay_steps, dtype))
    if staircase:
        p = floor(p)
    return lr, _in_dtype(decay_rate, dtype), p


def exponential_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate * decay_rate ^ (global_step / decay_steps); the exponent is floored when
    `staircase`."""
    _require_step(global_step, "exponential_decay")
    with name_scope(name, "ExponentialDecay") as scope:
        lr, rate, p = _decay_progress(
            learning_rate, global_step, decay_steps, decay_rate, staircase
        )
        return multiply(lr, pow(rate, p), name=scope)


def natural_exp_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate * exp(-decay_rate * global_step / decay_steps) (floored when staircase)."""
    _require_step(global_step, "natural_exp_decay")
    with name_scope(name, "NaturalExpDecay") as scope:
        lr, rate, p = _decay_progress(
            learning_rate, global_step, decay_steps, decay_rate, staircase
        )
        return multiply(lr, exp(multiply(negative(rate), p)), name=scope)


def inverse_time_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (floored when staircase)."""
    _require_step(global_step, "inverse_time_decay")
    with name_scope(name, "InverseTimeDecay") as scope:
        lr, rate, p = _decay_progress(
            learning_rate, global_step, decay_steps, decay_rate, staircase
        )
        one = convert_to_tensor(1, dtype=lr.dtype)
        return divide(lr, add(one, multiply(rate, p)), name=scope)


def polynomial_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    end_learning_rate: Any = 0.0001,
    power: Any = 1.0,
    cycle: bool = False,
    name: str | None = None,
) -> Tensor:
    """(learning_rate - end) * (1 - step / decay_steps) ^ power + end, with step capped at
    decay_steps, or (cycle) decay_steps stretched to the next multiple above step."""
    _require_step(global_step, "polynomial_decay")
    with name_scope(name, "PolynomialDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        end = _in_dtype(end_learning_rate, dtype)
        step = _in_dtype(global_step, dtype)
        steps = _in_dtype(decay_steps, dtype)
        if cycle:
            one = convert_to_tensor(1, dtype=dtype)
            zero = convert_to_tensor(0, dtype=dtype)
            multiplier = where(equal(step, zero), one, ceil(divide(step, steps)))
            steps = multiply(steps, multiplier)
        else:
            step = minimum(step, steps)
        p = divide(step, steps)
        one = convert_to_tensor(1, dtype=dtype)
        decayed = multiply(lr - end, pow(one - p, _in_dtype(power, dtype)))
        return add(decayed, end, name=scope)


def piecewise_constant(x: Any, boundaries: list, values: list, name: str | None = None) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
    values[-1] once x > boundaries[-1].

    The boundaries must have x's dtype (int32 boundaries of an int64 x are cast, as in TF1) and
    the values one dtype among them.
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        values_t = [convert_to_tensor(v) for v in values]
        for v in values_t[1:]:
            if v.dtype != values_t[0].dtype:
                raise ValueError(
                    "Values must have elements all with the same dtype "
                    f"({values_t[0].dtype.name} vs {v.dtype.name})."
                )
        bounds = []
        for b in boundaries:
            b = convert_to_tensor(b)
            if b.dtype != x.dtype:
                if not (b.dtype == _dt.int32 and x.dtype == _dt.int64):
                    raise ValueError(
                        f"Boundaries ({b.dtype.name}) must have the same dtype as x "
                        f"({x.dtype.name})."
                    )
                b = cast(b, x.dtype)
            bounds.append(b)
        result = values_t[-1]
        # the first boundary x does not exceed picks the value
        for i in reversed(range(len(bounds))):
            name_i = scope if i == 0 else None
            result = where(less_equal(x, bounds[i]), values_t[i], result, name=name_i)
        return result


piecewise_constant_decay = piecewise_constant


def _cosine(lr: Tensor, fraction: Tensor) -> Tensor:
    """0.5 * (1 + cos(pi * fraction)) in lr's dtype."""
    half = convert_to_tensor(0.5, dtype=lr.dtype)
    one = convert_to_tensor(1.0, dtype=lr.dtype)
    pi = convert_to_tensor(math.pi, dtype=lr.dtype)
    return multiply(half, add(one, cos(multiply(pi, fraction))))


def cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    alpha: Any = 0.0,
    name: str | None = None,
) -> Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha), with
    step capped at decay_steps (Loshchilov & Hutter's SGDR without restarts)."""
    _require_step(global_step, "cosine_decay")
    with name_scope(name, "CosineDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        steps = _in_dtype(decay_steps, lr.dtype)
        step = minimum(_in_dtype(global_step, lr.dtype), steps)
        a = _in_dtype(alpha, lr.dtype)
        one = convert_to_tensor(1.0, dtype=lr.dtype)
        decayed = add(multiply(subtract(one, a), _cosine(lr, divide(step, steps))), a)
        return multiply(lr, decayed, name=scope)


def cosine_decay_restarts(
    learning_rate: Any,
    global_step: Any,
    first_decay_steps: Any,
    t_mul: Any = 2.0,
    m_mul: Any = 1.0,
    alpha: Any = 0.0,
    name: str | None = None,
) -> Tensor:
    """Cosine decay that restarts: the i-th period lasts first_decay_steps * t_mul^i steps and
    starts from learning_rate * m_mul^i (SGDR)."""
    _require_step(global_step, "cosine_decay_restarts")
    with name_scope(name, "SGDRDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        one = convert_to_tensor(1.0, dtype=dtype)
        t = _in_dtype(t_mul, dtype)
        m = _in_dtype(m_mul, dtype)
        a = _in_dtype(alpha, dtype)
        fraction = divide(_in_dtype(global_step, dtype), _in_dtype(first_decay_steps, dtype))
        # equal periods (t_mul == 1): the restart is the integer part of the fraction
        i_equal = floor(fraction)
        # growing periods: invert the geometric sum of the period lengths
        i_geometric = floor(
            divide(log(subtract(one, multiply(fraction, subtract(one, t)))), log(t))
        )
        sum_r = divide(subtract(one, pow(t, i_geometric)), subtract(one, t))
        geometric_fraction = divide(subtract(fraction, sum_r), pow(t, i_geometric))
        # the branch not taken may be NaN (0/0 for t_mul == 1); the select drops it
        is_equal = equal(t, one)
        i_restart = where(is_equal, i_equal, i_geometric)
        fraction = where(is_equal, subtract(fraction, i_equal), geometric_fraction)
        cosine_decayed = multiply(pow(m, i_restart), _cosine(lr, fraction))
        decayed = add(multiply(subtract(one, a), cosine_decayed), a)
        return multiply(lr, decayed, name=scope)


def _linear_cosine(
    lr: Tensor, global_step: Any, decay_steps: Any, num_periods: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """(step capped at decay_steps, linear part (decay_steps - step) / decay_steps, cosine
    part 0.5 * (1 + cos(pi * 2 * num_periods * step / decay_steps)))."""
    steps = _in_dtype(decay_steps, lr.dtype)
    step = minimum(_in_dtype(global_step, lr.dtype), steps)
    linear = divide(subtract(steps, step), steps)
    two = convert_to_tensor(2.0, dtype=lr.dtype)
    periods = multiply(two, _in_dtype(num_periods, lr.dtype))
    return step, linear, _cosine(lr, multiply(periods, divide(step, steps)))


def linear_cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    num_periods: Any = 0.5,
    alpha: Any = 0.0,
    beta: Any = 0.001,
    name: str | None = None,
) -> Tensor:
    """learning_rate * ((alpha + linear) * cosine + beta), with linear = (decay_steps - step) /
    decay_steps and cosine = 0.5 * (1 + cos(2 pi num_periods step / decay_steps)), step capped at
    decay_steps (Bello et al., 2017)."""
    _require_step(global_step, "linear_cosine_decay")
    with name_scope(name, "LinearCosineDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        _, linear, cosine = _linear_cosine(lr, global_step, decay_steps, num_periods)
        a, b = _in_dtype(alpha, lr.dtype), _in_dtype(beta, lr.dtype)
        return multiply(lr, add(multiply(add(a, linear), cosine), b), name=scope)


def noisy_linear_cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    initial_variance: Any = 1.0,
    variance_decay: Any = 0.55,
    num_periods: Any = 0.5,
    alpha: Any = 0.0,
    beta: Any = 0.001,
    name: str | None = None,
) -> Tensor:
    """linear_cosine_decay with Gaussian noise added to its linear part: variance
    initial_variance / (1 + step) ^ variance_decay, a new draw at every run (seeded by the
    graph seed, as tf.random_normal)."""
    _require_step(global_step, "noisy_linear_cosine_decay")
    with name_scope(name, "NoisyLinearCosineDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        step, linear, cosine = _linear_cosine(lr, global_step, decay_steps, num_periods)
        one = convert_to_tensor(1.0, dtype=lr.dtype)
        variance = divide(
            _in_dtype(initial_variance, lr.dtype),
            pow(add(one, step), _in_dtype(variance_decay, lr.dtype)),
        )
        noisy = add(linear, random_normal([], stddev=sqrt(variance), dtype=lr.dtype))
        a, b = _in_dtype(alpha, lr.dtype), _in_dtype(beta, lr.dtype)
        return multiply(lr, add(multiply(add(a, noisy), cosine), b), name=scope)
