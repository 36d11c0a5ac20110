"""TF1's learning-rate schedules: tensors computed from the global step at every run."""

from __future__ import annotations

from typing import Any

from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.logic import equal, less_equal, where
from tfc.ops.math import add, cast, ceil, divide, exp, floor, minimum, multiply, negative, pow

__all__ = [
    "exponential_decay",
    "piecewise_constant",
    "polynomial_decay",
    "natural_exp_decay",
    "inverse_time_decay",
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
    values[-1] once x > boundaries[-1]."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        values_t = [convert_to_tensor(v) for v in values]
        if any(v.dtype != values_t[0].dtype for v in values_t):
            raise ValueError("Values must have elements all with the same dtype")
        bounds = [_in_dtype(b, x.dtype) for b in boundaries]
        result = values_t[-1]
        # the first boundary x does not exceed picks the value
        for i in reversed(range(len(bounds))):
            name_i = scope if i == 0 else None
            result = where(less_equal(x, bounds[i]), values_t[i], result, name=name_i)
        return result
