"""ONNX signal operators: the windows (Hann, Hamming, Blackman) and MelWeightMatrix, constants
of their sizes computed as the model is imported, and DFT and STFT as products with the
transform's cosine and sine matrices (complex values are pairs on the last axis, as in ONNX)."""

from __future__ import annotations

import numpy as np

import tfc.onnx.types as _types
import tfc.ops.array as _array
import tfc.ops.math as _math
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.constant import constant
from tfc.ops.linalg import matmul


def _scalar(ctx: NodeContext, i: int, what: str) -> float:
    return float(np.asarray(ctx.require_const(i, what)).reshape(-1)[0])


def _window_output(ctx: NodeContext, values: np.ndarray) -> list:
    elem = ctx.attr("output_datatype", _types.FLOAT)
    dtype = ctx.compute_dtype(elem, "the output type")
    # computed in the output type, as ONNX's reference does, then held in its compute dtype
    rounded = values.astype(_types.numpy_dtype(elem)).astype(dtype.np)
    return [constant(rounded, dtype=dtype)]


def _window(ctx: NodeContext) -> tuple[np.ndarray, int]:
    size = int(_scalar(ctx, 0, "size"))
    elem = ctx.attr("output_datatype", _types.FLOAT)
    n = np.arange(size, dtype=_types.numpy_dtype(elem))
    span = size if ctx.attr("periodic", 1) else size - 1
    return n, span


@converter("HannWindow")
def _hann(ctx: NodeContext) -> list:
    n, span = _window(ctx)
    return _window_output(ctx, np.sin(n * np.pi / span) ** 2)


@converter("HammingWindow")
def _hamming(ctx: NodeContext) -> list:
    n, span = _window(ctx)
    alpha = 25.0 / 46.0
    return _window_output(ctx, alpha - np.cos(n * np.pi * 2 / span) * (1 - alpha))


@converter("BlackmanWindow")
def _blackman(ctx: NodeContext) -> list:
    n, span = _window(ctx)
    n = np.arange(len(n))
    values = np.cos(n * np.pi * 2 / span) * -0.5 + np.cos(n * np.pi * 4 / span) * 0.08 + 0.42
    return _window_output(ctx, values)


@converter("MelWeightMatrix")
def _mel_weight_matrix(ctx: NodeContext) -> list:
    bins = int(_scalar(ctx, 0, "num_mel_bins"))
    length = int(_scalar(ctx, 1, "dft_length"))
    rate = _scalar(ctx, 2, "sample_rate")
    low, high = _scalar(ctx, 3, "lower_edge_hertz"), _scalar(ctx, 4, "upper_edge_hertz")
    points = np.arange(0, bins + 2)
    low_mel = 2595 * np.log1p(low / 700) / np.log(10)
    high_mel = 2595 * np.log1p(high / 700) / np.log(10)
    step = (high_mel - low_mel) / points.shape[0]
    hz = 700 * np.expm1((points * step + low_mel) / 2595 * np.log(10))
    edges = (((length + 1) * hz) // rate).astype(int)
    out = np.zeros((length // 2 + 1, bins))
    for i in range(bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return _window_output(ctx, out)


# -- transforms ----------------------------------------------------------------------------------
def _along_last(x: Tensor, axis: int, rank: int) -> tuple[Tensor, list[int]]:
    """x with `axis` moved last (the permutation to undo it)."""
    perm = [d for d in range(rank) if d != axis] + [axis]
    return _array.transpose(x, perm), [perm.index(d) for d in range(rank)]


def _transform(
    ctx: NodeContext, x: Tensor, axis: int, length: int, inverse: bool, onesided: bool
) -> Tensor:
    """ONNX's DFT of `x` (..., 1 or 2) along `axis` (not the last), computed in float64 as
    ONNX's reference computes it (the sums of a float32 product leave noise where the
    transform is exactly 0)."""
    out_dtype = x.dtype
    x = _math.cast(x, _dt.float64)
    return _math.cast(_transform64(ctx, x, axis, length, inverse, onesided), out_dtype)


def _transform64(
    ctx: NodeContext, x: Tensor, axis: int, length: int, inverse: bool, onesided: bool
) -> Tensor:
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("the signal's shape must be known when the model is imported")
    rank = len(shape)
    complex_in = shape[-1] == 2
    if complex_in:
        real, imag = (_array.squeeze(p, [-1]) for p in _array.split(x, 2, axis=-1))
    else:
        real, imag = _array.squeeze(x, [-1]), None
    axis = axis % rank
    real, undo = _along_last(real, axis, rank - 1)
    imag = None if imag is None else _along_last(imag, axis, rank - 1)[0]
    n_in = shape[axis]
    dtype = x.dtype
    if inverse and onesided:
        # one-sided spectrum in, a real signal of `length` out (the Hermitian half completed)
        k = np.arange(n_in)[:, None]
        t = np.arange(length)[None, :]
        weight = np.where((k == 0) | (2 * k == length), 1.0, 2.0) / length
        angle = 2 * np.pi * k * t / length
        cos, sin = weight * np.cos(angle), -weight * np.sin(angle)
        out_r = matmul(real, constant(cos.astype(dtype.np), dtype=dtype))
        if imag is not None:
            out_r = _math.add(out_r, matmul(imag, constant(sin.astype(dtype.np), dtype=dtype)))
        result = _array.expand_dims(_array.transpose(out_r, undo), -1)
        return result
    n = min(n_in, length)
    k_out = length // 2 + 1 if onesided else length
    sign = 1.0 if inverse else -1.0
    t = np.arange(n)[:, None]
    k = np.arange(k_out)[None, :]
    angle = 2 * np.pi * t * k / length
    cos, sin = np.cos(angle), sign * np.sin(angle)
    if inverse:
        cos, sin = cos / length, sin / length
    if n < n_in:  # the signal cut to the transform's length
        real = _array.slice(real, [0] * (rank - 1), [-1] * (rank - 2) + [n])
        imag = (
            None if imag is None else _array.slice(imag, [0] * (rank - 1), [-1] * (rank - 2) + [n])
        )
    c = constant(cos.astype(dtype.np), dtype=dtype)
    s = constant(sin.astype(dtype.np), dtype=dtype)
    out_r = matmul(real, c)
    out_i = matmul(real, s)
    if imag is not None:  # (a + ib)(cos + i sin) = a cos - b sin + i (a sin + b cos)
        out_r = _math.subtract(out_r, matmul(imag, s))
        out_i = _math.add(out_i, matmul(imag, c))
    pair = _array.stack([_array.transpose(out_r, undo), _array.transpose(out_i, undo)], axis=-1)
    return pair


@converter("DFT")
def _dft(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = len(x._shape_tuple)
    if ctx.opset < 20:
        axis = ctx.attr("axis", 1)
    else:
        axis = (
            int(np.asarray(ctx.require_const(2, "axis")).reshape(-1)[0]) if ctx.has_input(2) else -2
        )
    axis = axis % rank
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    if ctx.has_input(1):
        length = int(np.asarray(ctx.require_const(1, "dft_length")).reshape(-1)[0])
    elif inverse and onesided:
        length = 2 * (x._shape_tuple[axis] - 1)
    else:
        length = x._shape_tuple[axis]
    return [_transform(ctx, x, axis, length, inverse, onesided)]


@converter("STFT")
def _stft(ctx: NodeContext) -> list:
    signal = ctx.input(0)
    shape = signal._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("the signal's shape must be known when the model is imported")
    step = int(np.asarray(ctx.require_const(1, "frame_step")).reshape(-1)[0])
    window = ctx.optional(2)
    if ctx.has_input(3):
        length = int(np.asarray(ctx.require_const(3, "frame_length")).reshape(-1)[0])
    elif window is not None:
        length = window._shape_tuple[0]
    else:
        raise ctx.error("needs a window or a frame length")
    frames = 1 + (shape[1] - length) // step
    starts = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    # (batch, frames, length, 1 or 2): each frame a gather of the signal
    framed = _array.gather(signal, constant(starts.astype(np.int64)), axis=1)
    if window is not None:
        framed = _math.multiply(framed, _array.reshape(window, [1, 1, length, 1]))
    onesided = bool(ctx.attr("onesided", 1))
    return [_transform(ctx, framed, 2, length, False, onesided)]
