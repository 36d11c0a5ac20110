"""`tf.nn` moments and normalization: moments, sufficient statistics, batch normalization
(plain and fused), l2_normalize, built from reductions and element-wise ops as TF1 builds them.

fused_batch_norm is a composition too, not a FusedBatchNormV3 kernel: the fusion pass merges
its element-wise parts, and its reductions are the passes over the data a dedicated kernel
would make. Measured by bench/batch_norm.py (one thread, a machine shared with other work), a
training step of the normalization alone (forward and the three gradients) took 0.5x to 0.8x
the time of TensorFlow's FusedBatchNormV3 and FusedBatchNormGradV3 at [32..64, 28, 28, 8],
[64, 14, 14, 32] and [32, 8, 8, 256], and inference 0.1x to 0.4x: no kernel of its own needed.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.math import (
    add,
    cast,
    maximum,
    multiply,
    reciprocal,
    rsqrt,
    square,
    squared_difference,
    subtract,
)
from tfc.ops.reduce import reduce_mean, reduce_prod, reduce_sum

__all__ = [
    "moments",
    "weighted_moments",
    "sufficient_statistics",
    "normalize_moments",
    "batch_normalization",
    "batch_norm_with_global_normalization",
    "fused_batch_norm",
    "l2_normalize",
]


def _keep(keep_dims: Any, keepdims: Any) -> bool:
    if keep_dims is not None and keepdims is not None and bool(keep_dims) != bool(keepdims):
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims' with different values")
    return bool(keepdims if keepdims is not None else keep_dims)


def _axes_list(axes: Any) -> list[int]:
    if isinstance(axes, (numbers.Integral, np.integer)):
        return [int(axes)]
    return [int(a) for a in axes]


def moments(
    x: Any,
    axes: Any,
    shift: Any = None,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """`tf.nn.moments`: (mean, variance) of x over `axes`; the variance is the mean squared
    deviation from the mean (not the unbiased estimate). `shift` is unused, as in TF."""
    keep = _keep(keep_dims, keepdims)
    axes = _axes_list(axes)
    with name_scope(name, "moments", [x, axes]):
        y = convert_to_tensor(x, name="x")
        mean = reduce_mean(y, axes, keepdims=True, name="mean")
        # the gradient reaching the mean through the variance is zero: stop it, as TF does
        deviation = squared_difference(y, _array.stop_gradient(mean))
        variance = reduce_mean(deviation, axes, keepdims=True, name="variance")
        if not keep:
            mean = _array.squeeze(mean, axes)
            variance = _array.squeeze(variance, axes)
        return mean, variance


def weighted_moments(
    x: Any,
    axes: Any,
    frequency_weights: Any,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """`tf.nn.weighted_moments`: the mean and variance of x over `axes`, each element counted
    `frequency_weights` times (weights broadcast against x)."""
    keep = _keep(keep_dims, keepdims)
    axes = _axes_list(axes)
    with name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(frequency_weights, name="frequency_weights")
        if weights.dtype != x.dtype:
            weights = cast(weights, x.dtype)
        weighted_sum = reduce_sum(weights * x, axes, keepdims=True, name="weighted_input_sum")
        # weights broadcast to x's shape, so that each element's weight is counted
        broadcast_weights = weights + _array.zeros_like(x)
        total = reduce_sum(broadcast_weights, axes, keepdims=True, name="sum_of_weights")
        divisor = reciprocal(total, name="inv_weight_sum")
        mean = multiply(weighted_sum, divisor)
        spread = reduce_sum(
            weights * squared_difference(x, mean), axes, keepdims=True, name="weighted_distsq"
        )
        variance = multiply(spread, divisor)
        if not keep:
            mean = _array.squeeze(mean, axes)
            variance = _array.squeeze(variance, axes)
        return mean, variance


def sufficient_statistics(
    x: Any,
    axes: Any,
    shift: Any = None,
    keep_dims: bool | None = None,
    name: str | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """`tf.nn.sufficient_statistics`: (count, sum of x - shift, sum of (x - shift)^2, shift)
    over `axes`; the count is a constant when those dims are known, else computed."""
    keep = _keep(keep_dims, keepdims)
    axes = sorted(set(_axes_list(axes)))
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        dims = x._shape_tuple
        if dims is not None and all(dims[d] is not None for d in axes):
            count = int(np.prod([dims[d] for d in axes], dtype=np.int64))
            counts = constant(count, dtype=x.dtype)
        else:
            sizes = cast(_array.shape(x), x.dtype)
            picked = _array.gather(sizes, [a if a >= 0 else a + len(dims or ()) for a in axes])
            if dims is None and any(a < 0 for a in axes):
                raise ValueError(
                    "sufficient_statistics with negative axes needs the rank of x when the graph "
                    "is built"
                )
            counts = reduce_prod(picked, name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift")
            m_ss = subtract(x, shift)
            v_ss = squared_difference(x, shift)
        else:
            m_ss, v_ss = x, square(x)
        m_ss = reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
        v_ss = reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
        return counts, m_ss, v_ss, shift


def normalize_moments(
    counts: Any, mean_ss: Any, variance_ss: Any, shift: Any, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """`tf.nn.normalize_moments`: (mean, variance) from sufficient statistics."""
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = multiply(mean_ss, divisor, name="shifted_mean")
            mean = add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = subtract(multiply(variance_ss, divisor), square(shifted_mean), name="variance")
        return mean, variance


def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: Any,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.batch_normalization`: scale * (x - mean) / sqrt(variance + epsilon) + offset,
    computed as TF does: x * inv + (offset - mean * inv), inv = scale * rsqrt(variance + eps)."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        mean = convert_to_tensor(mean, dtype=x.dtype, name="mean")
        variance = convert_to_tensor(variance, dtype=x.dtype, name="variance")
        inv = rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype=x.dtype, name="scale")
        if offset is not None:
            shifted = convert_to_tensor(offset, dtype=x.dtype, name="offset") - mean * inv
        else:
            shifted = -mean * inv
        return x * inv + shifted


# cuDNN's smallest epsilon, which TF's fused_batch_norm imposes on every device
_MIN_FUSED_EPSILON = 1.001e-5


def fused_batch_norm(
    x: Any,
    scale: Any,
    offset: Any,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 0.001,
    data_format: str = "NHWC",
    is_training: bool = True,
    name: str | None = None,
    exponential_avg_factor: float = 1.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """`tf.nn.fused_batch_norm` of a 4-D NHWC or NCHW x: (y, mean, variance).

    Training normalizes with the batch's moments over every dim but the channel one and
    returns the batch mean and the unbiased batch variance (n / (n - 1) times the one used),
    each blended with the given running values by `exponential_avg_factor` when it is below
    1; inference normalizes with the given mean and variance and returns them.
    """
    if is_training and exponential_avg_factor == 1.0:
        if mean is not None or variance is not None:
            raise ValueError(
                "Both 'mean' and 'variance' must be None when is_training is True and "
                "exponential_avg_factor == 1.0."
            )
    elif mean is None or variance is None:
        what = "is_training is False" if not is_training else "exponential_avg_factor != 1.0"
        raise ValueError(f"Both 'mean' and 'variance' must be a Tensor when {what}.")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(
            f"fused_batch_norm supports data_format 'NHWC' or 'NCHW' (4-D), got {data_format!r}"
        )
    epsilon = max(float(epsilon), _MIN_FUSED_EPSILON)
    with name_scope(name, "FusedBatchNormV3", [x, scale, offset]):
        x = convert_to_tensor(x, name="input")
        if x.dtype not in (_dt.float32, _dt.float64):
            raise TypeError(
                f"fused_batch_norm needs a float32 or float64 input, got {x.dtype.name}"
            )
        if x.shape.ndims is not None and x.shape.ndims != 4:
            raise ValueError(f"input must be 4-dimensional, got shape {x.shape}")
        scale = convert_to_tensor(scale, dtype=x.dtype, name="scale")
        offset = convert_to_tensor(offset, dtype=x.dtype, name="offset")
        axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
        channel_shape = [-1] if data_format == "NHWC" else [-1, 1, 1]

        def per_channel(t: Tensor) -> Tensor:
            return t if data_format == "NHWC" else _array.reshape(t, channel_shape)

        if is_training:
            batch_mean, batch_variance = moments(x, axes)
            y = batch_normalization(
                x,
                per_channel(batch_mean),
                per_channel(batch_variance),
                per_channel(offset),
                per_channel(scale),
                epsilon,
            )
            count = _count(x, axes)
            unbiased = batch_variance * (count / maximum(count - 1.0, 1.0))
            if exponential_avg_factor != 1.0:
                factor = constant(exponential_avg_factor, dtype=x.dtype)
                old_mean = convert_to_tensor(mean, dtype=x.dtype, name="mean")
                old_variance = convert_to_tensor(variance, dtype=x.dtype, name="variance")
                batch_mean = (1.0 - factor) * old_mean + factor * batch_mean
                unbiased = (1.0 - factor) * old_variance + factor * unbiased
            return y, batch_mean, unbiased
        mean = convert_to_tensor(mean, dtype=x.dtype, name="mean")
        variance = convert_to_tensor(variance, dtype=x.dtype, name="variance")
        y = batch_normalization(
            x,
            per_channel(mean),
            per_channel(variance),
            per_channel(offset),
            per_channel(scale),
            epsilon,
        )
        return y, _array.identity(mean), _array.identity(variance)


def _count(x: Tensor, axes: list[int]) -> Tensor:
    """The number of elements each channel's moments average, as a scalar of x's dtype."""
    dims = x._shape_tuple
    if dims is not None and all(dims[a] is not None for a in axes):
        return constant(float(np.prod([dims[a] for a in axes])), dtype=x.dtype)
    return reduce_prod(_array.gather(cast(_array.shape(x), x.dtype), axes))


def l2_normalize(
    x: Any,
    axis: Any = None,
    epsilon: float = 1e-12,
    name: str | None = None,
    dim: Any = None,
) -> Tensor:
    """`tf.math.l2_normalize`: x / sqrt(max(sum(x^2, axis), epsilon))."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = dim if axis is None else axis
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = reduce_sum(square(x), axis, keepdims=True)
        inv_norm = rsqrt(maximum(square_sum, constant(epsilon, dtype=x.dtype)))
        return multiply(x, inv_norm, name=scope)


def batch_norm_with_global_normalization(
    t: Any = None,
    m: Any = None,
    v: Any = None,
    beta: Any = None,
    gamma: Any = None,
    variance_epsilon: Any = None,
    scale_after_normalization: Any = None,
    name: str | None = None,
    input: Any = None,  # noqa: A002  TF's argument names
    mean: Any = None,
    variance: Any = None,
) -> Tensor:
    """`tf.nn.batch_norm_with_global_normalization`: TF1's older spelling of
    batch_normalization (t, m, v: input, mean, variance; gamma used only when
    scale_after_normalization)."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    if t is None or m is None or v is None or variance_epsilon is None:
        raise ValueError(
            "batch_norm_with_global_normalization needs the input, mean, variance and "
            "variance_epsilon"
        )
    scale = gamma if scale_after_normalization else None
    return batch_normalization(t, m, v, beta, scale, variance_epsilon, name=name)
