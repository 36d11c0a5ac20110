"""ONNX quantization operators (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and the
integer and quantized products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), on the
2- to 16-bit integer types tfc holds in int32: per-tensor, per-axis and blocked scales, round
half to even and saturation as ONNX's reference does. Integer products are computed exactly in
float64 (every 8-bit product sum is an integer below 2**53)."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.onnx.types as _types
import tfc.ops.array as _array
import tfc.ops.math as _math
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.convert_math import numpy_matmul
from tfc.onnx.convert_nn import conv_node
from tfc.onnx.node import NodeContext, converter
from tfc.ops.constant import constant
from tfc.ops.logic import equal, where

# the quantized integer types: 2 to 16 bits, held in int32
_RANGES = {
    t: r for t, r in _types.INTEGER_RANGES.items() if t not in (_types.UINT32, _types.UINT64)
}


def _quantized_type(ctx: NodeContext, zero_point_index: int) -> int:
    if ctx.has_input(zero_point_index):
        elem = ctx.input_type(zero_point_index)
    else:
        elem = ctx.attr("output_dtype") or _types.UINT8
    if elem not in _RANGES:
        raise ctx.error(f"tfc quantizes to 2- to 16-bit integers, not {_types.name(elem)}")
    return elem


def _broadcastable(ctx: NodeContext, value: Tensor, shape: tuple, axis: int, block: int) -> Tensor:
    """A scale or zero point as ONNX's reference reshapes it: a scalar, a vector along `axis`,
    or blocks of `block` elements along it."""
    vshape = value._shape_tuple
    if vshape is None:
        raise ctx.error("the rank of the scale must be known when the model is imported")
    size = int(np.prod(vshape, dtype=np.int64))
    if len(vshape) == 0:
        return value
    if size == 1:
        return _array.reshape(value, [])
    axis = axis + len(shape) if axis < 0 else axis
    if not block:
        dims = [1] * len(shape)
        dims[axis] = size
        return _array.reshape(value, dims)
    picks = np.minimum(np.arange(shape[axis]) // block, vshape[axis] - 1).astype(np.int64)
    return _array.gather(value, constant(picks), axis=axis)


def _saturate(x: Tensor, elem: int) -> Tensor:
    low, high = _RANGES[elem]
    return _math.minimum(
        _math.maximum(x, constant(float(low), dtype=x.dtype)), constant(float(high), dtype=x.dtype)
    )


def _shape(ctx: NodeContext, x: Tensor) -> tuple:
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("the input's shape must be known when the model is imported")
    return tuple(shape)


@converter("QuantizeLinear")
def _quantize_linear(ctx: NodeContext) -> list:
    x, scale = ctx.input(0), ctx.input(1)
    elem = _quantized_type(ctx, 2)
    shape = _shape(ctx, x)
    axis, block = ctx.attr("axis", 1), ctx.attr("block_size", 0)
    scale_b = _broadcastable(ctx, scale, shape, axis, block)
    precision = ctx.attr("precision")
    if precision:
        work = ctx.compute_dtype(precision, "the precision")
        x, scale_b = _math.cast(x, work), _math.cast(scale_b, work)
    q = _math.rint(_math.truediv(x, _math.cast(scale_b, x.dtype)))
    if ctx.has_input(2):
        zp = _broadcastable(ctx, ctx.input(2), shape, axis, block)
        q = _math.add(q, _math.cast(zp, q.dtype))
    return [_math.cast(_saturate(q, elem), _dt.int32)]


@converter("DequantizeLinear")
def _dequantize_linear(ctx: NodeContext) -> list:
    x, scale = ctx.input(0), ctx.input(1)
    if ctx.input_type(0) not in (*_RANGES, _types.INT32):
        raise ctx.error(f"tfc dequantizes integers, not {_types.name(ctx.input_type(0))}")
    shape = _shape(ctx, x)
    axis, block = ctx.attr("axis", 1), ctx.attr("block_size", 0)
    dx = _math.cast(x, _dt.float32)
    if ctx.has_input(2):
        zp = _broadcastable(ctx, ctx.input(2), shape, axis, block)
        dx = _math.subtract(dx, _math.cast(zp, _dt.float32))
    y = _math.multiply(dx, _math.cast(_broadcastable(ctx, scale, shape, axis, block), _dt.float32))
    out = ctx.output_types[0]
    dtype = scale.dtype if out is None else ctx.compute_dtype(out, "the output type")
    return [_math.cast(y, dtype) if y.dtype != dtype else y]


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx: NodeContext) -> list:
    x = ctx.input(0)
    zero = constant(0.0, dtype=x.dtype)
    high = _math.maximum(zero, _reduce.reduce_max(x))
    low = _math.minimum(zero, _reduce.reduce_min(x))
    span = _math.subtract(high, low)
    scale = _math.truediv(
        where(equal(span, zero), constant(1.0, dtype=x.dtype), span), constant(255.0, dtype=x.dtype)
    )
    initial = _math.subtract(zero, _math.truediv(low, scale))
    zp = _math.rint(_saturate(initial, _types.UINT8))
    y = _saturate(_math.add(_math.rint(_math.truediv(x, scale)), zp), _types.UINT8)
    return [_math.cast(y, _dt.int32), scale, _math.cast(zp, _dt.int32)]


def _centered(ctx: NodeContext, i: int, zp_index: int, per_row_axis: int | None = None) -> Tensor:
    """Input `i` minus its zero point (input `zp_index`), exactly, as float64."""
    x = _math.cast(ctx.input(i), _dt.float64)
    if ctx.has_input(zp_index):
        zp = _math.cast(ctx.input(zp_index), _dt.float64)
        zshape = zp._shape_tuple
        if per_row_axis is not None and zshape and int(np.prod(zshape)) > 1:
            dims = [1] * len(x.shape)
            dims[per_row_axis] = int(np.prod(zshape))
            zp = _array.reshape(zp, dims)
        x = _math.subtract(x, zp)
    return x


@converter("MatMulInteger")
def _matmul_integer(ctx: NodeContext) -> list:
    a = _centered(ctx, 0, 2, per_row_axis=0 if len(ctx.input(0).shape) == 2 else None)
    b = _centered(ctx, 1, 3, per_row_axis=-1 if len(ctx.input(1).shape) >= 1 else None)
    return [_math.cast(numpy_matmul(ctx, a, b), _dt.int32)]


@converter("ConvInteger")
def _conv_integer(ctx: NodeContext) -> list:
    x = _centered(ctx, 0, 2)
    w = _centered(ctx, 1, 3, per_row_axis=0)
    return [_math.cast(conv_node(ctx, x, w, None), _dt.int32)]


def _requantize(ctx: NodeContext, acc: Tensor, scale: Any, zp_index: int, elem: int) -> Tensor:
    r = _math.multiply(acc, scale)
    if ctx.has_input(zp_index):
        r = _math.add(r, _math.cast(ctx.input(zp_index), _dt.float64))
    return _math.cast(_math.rint(_saturate(r, elem)), _dt.int32)


@converter("QLinearMatMul")
def _qlinear_matmul(ctx: NodeContext) -> list:
    a = _centered(ctx, 0, 2)
    b = _centered(ctx, 3, 5)
    acc = numpy_matmul(ctx, a, b)
    # the scale in the scales' own type, as the reference multiplies it
    scale_dtype = ctx.input(1).dtype
    scale = _math.truediv(_math.multiply(ctx.input(1), ctx.input(4)), ctx.input(6))
    scale = _math.cast(_math.cast(scale, scale_dtype), _dt.float64)
    elem = ctx.input_type(7) if ctx.has_input(7) else ctx.input_type(0)
    return [_requantize(ctx, acc, scale, 7, elem)]


@converter("QLinearConv")
def _qlinear_conv(ctx: NodeContext) -> list:
    x = _centered(ctx, 0, 2)
    w = _centered(ctx, 3, 5, per_row_axis=0)
    bias = ctx.optional(8)
    acc = conv_node(ctx, x, w, None if bias is None else _math.cast(bias, _dt.float64))
    w_scale = ctx.input(4)
    ws = w_scale._shape_tuple
    if ws and int(np.prod(ws)) > 1:  # per output channel
        w_scale = _array.reshape(w_scale, [1, -1] + [1] * (len(x.shape) - 2))
    scale = _math.cast(
        _math.truediv(_math.multiply(ctx.input(1), w_scale), ctx.input(6)), _dt.float64
    )
    elem = ctx.input_type(7) if ctx.has_input(7) else ctx.input_type(0)
    return [_requantize(ctx, acc, scale, 7, elem)]
