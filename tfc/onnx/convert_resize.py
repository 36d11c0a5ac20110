"""ONNX Resize and Upsample: per resized axis, each output element a weighted sum of a few input
elements along the axis (one for nearest, two for linear, four for cubic, more with antialias).
The taps and weights depend only on the sizes, so they are computed in NumPy as ONNX's reference
computes them (its coordinate modes, neighbour choice, edge clamping, exclude_outside and
extrapolation) and the graph gathers and sums."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.constant import constant
from tfc.ops.reduce import reduce_sum

Coefficients = Callable[[float, float], np.ndarray]


# -- the reference's kernels: weights of the taps around a coordinate ---------------------------
def _nearest(mode: str) -> Coefficients:
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        if mode == "round_prefer_floor":
            return np.array([ratio <= 0.5, ratio > 0.5], float)
        if mode == "round_prefer_ceil":
            return np.array([ratio < 0.5, ratio >= 0.5], float)
        if mode == "floor":
            return np.array([1.0, 0.0])
        if mode == "ceil":
            return np.array([0.0, 1.0])
        raise ValueError(f"unknown nearest_mode {mode!r}")

    return coeffs


def _linear(antialias: bool) -> Coefficients:
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([1 - ratio, ratio])
        scale = min(scale, 1.0)
        start = int(np.floor(-1 / scale) + 1)
        args = (np.arange(start, start + 2 - 2 * start) - ratio) * scale
        w = np.clip(1 - np.abs(args), 0, 1)
        return w / w.sum()

    return coeffs


def _cubic(a: float, antialias: bool) -> Coefficients:
    def keys(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x**3 - (a + 3) * x**2 + 1
        if x < 2:
            return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
        return 0.0

    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([keys(ratio + 1), keys(ratio), keys(1 - ratio), keys(2 - ratio)])
        scale = min(scale, 1.0)
        start = int(np.floor(-2 / scale) + 1)
        w = np.array([keys(scale * (i - ratio)) for i in range(start, 2 - start)])
        return w / w.sum()

    return coeffs


def _source(
    mode: str, y: np.ndarray, scale: float, size: int, out: int, roi: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray | None]:
    """Where output positions `y` sample the input, and which lie outside (tf_crop_and_resize);
    the output's width is scale * size, a float, as in ONNX's reference."""
    width = scale * size
    if mode == "align_corners":
        return (np.zeros(out) if width == 1 else y * (size - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            x = np.full(out, (end - start) * (size - 1) / 2)
        else:
            x = y * (end - start) * (size - 1) / (width - 1)
        x = x + start * (size - 1)
        return x, (x < 0) | (x > size - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def axis_taps(
    size: int,
    out: int,
    scale: float,
    coeffs: Coefficients,
    mode: str,
    roi: tuple[float, float],
    exclude_outside: bool,
):
    """(indices [out, n], weights [out, n], outside [out] or None) resampling one axis."""
    x, outside = _source(mode, np.arange(out, dtype=np.float64), scale, size, out, roi)
    base = np.floor(x)
    ratios = np.where(x == base, 1.0, x - base)
    weights = np.array([coeffs(float(r), scale) for r in ratios])
    n = weights.shape[1]
    pad = int(np.ceil(n / 2))
    padded = x + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:  # a tie between two windows goes to the smaller one
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    index = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        weights = np.where((index < 0) | (index >= size), 0.0, weights)
        total = weights.sum(-1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, size - 1), weights, outside


def _resample(x: Tensor, axis: int, index: np.ndarray, weights: np.ndarray) -> Tensor:
    """x resampled along `axis`: output row j = sum over k of weights[j, k] * x[index[j, k]]."""
    out, n = index.shape
    if (
        n == 1
        or np.all(np.count_nonzero(weights, axis=1) == 1)
        and np.allclose(weights.sum(1), 1.0)
    ):
        picks = index[np.arange(out), np.argmax(weights != 0, axis=1)]
        return _array.gather(x, constant(picks.astype(np.int64)), axis=axis)
    picked = _array.gather(x, constant(index.reshape(-1).astype(np.int64)), axis=axis)
    shape = list(x.shape.as_list())
    shape[axis : axis + 1] = [out, n]
    picked = _array.reshape(picked, shape)
    w_shape = [1] * len(shape)
    w_shape[axis], w_shape[axis + 1] = out, n
    w = constant(weights.reshape(w_shape).astype(x.dtype.np), dtype=x.dtype)
    return reduce_sum(_math.multiply(picked, w), [axis + 1])


def _static(ctx: NodeContext, x: Tensor) -> tuple[int, ...]:
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("needs the input's shape when the model is imported")
    return tuple(int(d) for d in shape)


@converter("Resize", "Upsample")
def _resize(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape = _static(ctx, x)
    rank = len(shape)
    legacy = ctx.op_type == "Upsample" or ctx.opset < 11
    mode = ctx.attr("mode", "nearest")
    antialias = bool(ctx.attr("antialias", 0))
    if mode == "nearest":
        if antialias:
            raise ctx.error("antialias applies to linear and cubic modes")
        coeffs = _nearest("floor" if legacy else ctx.attr("nearest_mode", "round_prefer_floor"))
    elif mode in ("linear", "bilinear", "trilinear"):
        coeffs = _linear(antialias)
    elif mode == "cubic":
        coeffs = _cubic(ctx.attr("cubic_coeff_a", -0.75), antialias)
    else:
        raise ctx.error(f"unknown mode {mode!r}")
    coord_mode = (
        "asymmetric" if legacy else ctx.attr("coordinate_transformation_mode", "half_pixel")
    )
    axes = list(range(rank))
    if ctx.has_attr("axes"):
        axes = [a + rank if a < 0 else a for a in ctx.attr("axes")]
    roi = np.tile([0.0, 1.0], (rank, 1))
    scales = sizes = None
    if ctx.op_type == "Upsample":
        scales = ctx.attr("scales") if ctx.opset < 9 else ctx.require_const(1, "scales")
    elif ctx.opset < 11:
        scales = ctx.require_const(1, "scales")
    else:
        if ctx.has_input(1) and coord_mode == "tf_crop_and_resize":
            r = np.asarray(ctx.require_const(1, "roi"), np.float64).reshape(2, -1)
            for k, a in enumerate(axes):
                roi[a] = (r[0][k], r[1][k])
        if ctx.has_input(2):
            scales = ctx.require_const(2, "scales")
            if scales.size == 0:
                scales = None
        if ctx.has_input(3) and scales is None:
            sizes = ctx.require_const(3, "sizes")
    full_scales = np.ones(rank)
    out = list(shape)
    if scales is not None:
        scales = np.asarray(scales, np.float64).reshape(-1)
        if len(scales) == rank and len(axes) != rank:
            scales = scales[axes]
        for k, a in enumerate(axes):
            full_scales[a] = scales[k]
            out[a] = int(scales[k] * shape[a])
    elif sizes is not None:
        sizes = np.asarray(sizes).reshape(-1)
        for k, a in enumerate(axes):
            out[a] = int(sizes[k])
            full_scales[a] = out[a] / shape[a]
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            chosen = [full_scales[a] for a in axes]
            scale = min(chosen) if policy == "not_larger" else max(chosen)
            for a in axes:
                full_scales[a] = scale
                out[a] = int(scale * shape[a] + 0.5)
    else:
        raise ctx.error("needs scales or sizes")
    extrapolation = ctx.attr("extrapolation_value", 0.0)
    exclude = bool(ctx.attr("exclude_outside", 0))
    dtype = x.dtype
    y = x if dtype.is_floating else _math.cast(x, _dt.float64)
    for a in axes:
        identity_roi = np.allclose(roi[a], (0.0, 1.0))
        if np.isclose(full_scales[a], 1.0) and out[a] == shape[a] and identity_roi:
            continue
        index, weights, outside = axis_taps(
            shape[a], out[a], full_scales[a], coeffs, coord_mode, tuple(roi[a]), exclude
        )
        y = _resample(y, a, index, weights)
        if outside is not None and outside.any():
            m_shape = [1] * rank
            m_shape[a] = out[a]
            fill = _array.fill(y.shape.as_list(), constant(extrapolation, dtype=y.dtype))
            y = _logic.where(constant(outside.reshape(m_shape)), fill, y)
    if not dtype.is_floating:  # saturated to the integer type, as the reference casts
        low, high = float(dtype.min), float(dtype.max)
        y = _math.cast(
            _math.minimum(
                _math.maximum(y, constant(low, dtype=y.dtype)), constant(high, dtype=y.dtype)
            ),
            dtype,
        )
    elif y is x:
        y = _array.identity(x)
    return [y]
