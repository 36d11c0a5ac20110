"""ONNX element-wise operators: arithmetic, functions, activations, comparisons and logic, casts,
and the matrix products (MatMul, Gemm, Einsum)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tfc.onnx.types as _types
import tfc.ops.array as _array
import tfc.ops.bitwise as _bitwise
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.nn as _nn
import tfc.ops.special as _special
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, channels_last_perm, converter
from tfc.ops.constant import constant
from tfc.ops.conversions import bitcast
from tfc.ops.einsum import einsum
from tfc.ops.linalg import matmul


# -- broadcasting element-wise ops, channels-last where an operand is ---------------------------
def _twin_operand(ctx: NodeContext, x: Tensor, rank: int) -> Tensor | None:
    """`x` as an operand of a channels-last computation of rank `rank`: its twin, or `x`
    reshaped when it broadcasts over the batch and the image (a scalar, a per-channel vector
    shaped (C, 1, 1)); None when only a transpose would do."""
    twin = ctx.twin(x)
    if twin is not None and len(twin.shape) == rank:
        return twin
    shape = x._shape_tuple
    if shape is None or len(shape) > rank or any(d is None for d in shape):
        return None
    aligned = (1,) * (rank - len(shape)) + tuple(shape)
    if any(d != 1 for i, d in enumerate(aligned) if i != 1):
        return None
    if len(shape) <= 1 and (not shape or shape[0] == 1):
        return x  # a scalar broadcasts the same either way
    permuted = [aligned[p] for p in channels_last_perm(rank)]
    return _array.reshape(x, permuted)


def elementwise(ctx: NodeContext, fn: Callable[..., Tensor], *xs: Tensor) -> Tensor:
    """fn(*xs) with NumPy broadcasting; computed on channels-last twins when one of `xs` has
    one and the others can follow it without a transpose."""
    twinned = [ctx.twin(x) for x in xs]
    ranks = {len(t.shape) for t in twinned if t is not None}
    if len(ranks) == 1:
        rank = ranks.pop()
        out_rank = max(len(x.shape) if x._shape_tuple is not None else rank + 1 for x in xs)
        if out_rank == rank:
            operands = [_twin_operand(ctx, x, rank) for x in xs]
            if all(o is not None for o in operands):
                return ctx.channels_first(fn(*operands))
    return fn(*xs)


def _unary(fn: Callable[[Tensor], Tensor]) -> Callable[[NodeContext], list]:
    def convert(ctx: NodeContext) -> list:
        return [elementwise(ctx, fn, ctx.input(0))]

    return convert


def _scalar(x: Tensor, value: float) -> Tensor:
    return constant(value, dtype=x.dtype)


for _op, _fn in {
    "Abs": _math.abs,
    "Neg": _math.negative,
    "Exp": _math.exp,
    "Log": _math.log,
    "Sqrt": _math.sqrt,
    "Reciprocal": _math.reciprocal,
    "Floor": _math.floor,
    "Ceil": _math.ceil,
    "Sin": _math.sin,
    "Cos": _math.cos,
    "Tan": _math.tan,
    "Asin": _math.asin,
    "Acos": _math.acos,
    "Atan": _math.atan,
    "Sinh": _math.sinh,
    "Cosh": _math.cosh,
    "Asinh": _math.asinh,
    "Acosh": _math.acosh,
    "Atanh": _math.atanh,
    "Tanh": _math.tanh,
    "Sigmoid": _math.sigmoid,
    "Erf": _special.erf,
    "Sign": _math.sign,
    "Round": _math.rint,
    "Softplus": _nn.softplus,
    "Softsign": _nn.softsign,
    "Not": _logic.logical_not,
    "IsNaN": _logic.is_nan,
}.items():
    converter(_op)(_unary(_fn))


@converter("Relu")
def _relu(ctx: NodeContext) -> list:
    x = ctx.input(0)
    if x.dtype.is_floating:
        return [elementwise(ctx, _nn.relu, x)]
    return [elementwise(ctx, lambda v: _math.maximum(v, _scalar(v, 0)), x)]


@converter("Identity")
def _identity(ctx: NodeContext) -> list:
    x = ctx.input(0)
    twin = ctx.twin(x)
    y = _array.identity(x)
    if twin is not None:
        ctx.layouts.twin[y] = twin
    return [y]


def _where_positive(x: Tensor, positive: Tensor, other: Tensor) -> Tensor:
    return _logic.where(_logic.greater(x, _scalar(x, 0)), positive, other)


@converter("Elu")
def _elu(ctx: NodeContext) -> list:
    alpha = ctx.attr("alpha", 1.0)
    if alpha == 1.0:
        return [elementwise(ctx, _nn.elu, ctx.input(0))]
    return [
        elementwise(
            ctx,
            lambda x: _where_positive(x, x, _math.multiply(_scalar(x, alpha), _math.expm1(x))),
            ctx.input(0),
        )
    ]


@converter("Selu")
def _selu(ctx: NodeContext) -> list:
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)

    def selu(x: Tensor) -> Tensor:
        negative = _math.multiply(_scalar(x, alpha), _math.expm1(x))
        return _math.multiply(_scalar(x, gamma), _where_positive(x, x, negative))

    return [elementwise(ctx, selu, ctx.input(0))]


@converter("Celu")
def _celu(ctx: NodeContext) -> list:
    alpha = ctx.attr("alpha", 1.0)

    def celu(x: Tensor) -> Tensor:
        scaled = _math.multiply(_scalar(x, alpha), _math.expm1(_math.truediv(x, _scalar(x, alpha))))
        return _math.add(_math.maximum(x, _scalar(x, 0)), _math.minimum(scaled, _scalar(x, 0)))

    return [elementwise(ctx, celu, ctx.input(0))]


@converter("LeakyRelu")
def _leaky_relu(ctx: NodeContext) -> list:
    alpha = ctx.attr("alpha", 0.01)
    return [elementwise(ctx, lambda x: _nn.leaky_relu(x, alpha), ctx.input(0))]


@converter("ThresholdedRelu")
def _thresholded_relu(ctx: NodeContext) -> list:
    alpha = ctx.attr("alpha", 1.0)
    return [
        elementwise(
            ctx,
            lambda x: _logic.where(_logic.greater(x, _scalar(x, alpha)), x, _array.zeros_like(x)),
            ctx.input(0),
        )
    ]


@converter("HardSigmoid")
def _hard_sigmoid(ctx: NodeContext) -> list:
    alpha, beta = ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5)
    return [elementwise(ctx, lambda x: _hard_sigmoid_of(x, alpha, beta), ctx.input(0))]


def _hard_sigmoid_of(x: Tensor, alpha: float, beta: float) -> Tensor:
    y = _math.add(_math.multiply(_scalar(x, alpha), x), _scalar(x, beta))
    return _math.minimum(_math.maximum(y, _scalar(x, 0)), _scalar(x, 1))


@converter("HardSwish")
def _hard_swish(ctx: NodeContext) -> list:
    return [
        elementwise(ctx, lambda x: _math.multiply(x, _hard_sigmoid_of(x, 1 / 6, 0.5)), ctx.input(0))
    ]


@converter("Mish")
def _mish(ctx: NodeContext) -> list:
    return [
        elementwise(ctx, lambda x: _math.multiply(x, _math.tanh(_nn.softplus(x))), ctx.input(0))
    ]


@converter("Swish")
def _swish(ctx: NodeContext) -> list:
    alpha = ctx.attr("alpha", 1.0)
    return [
        elementwise(
            ctx,
            lambda x: _math.multiply(x, _math.sigmoid(_math.multiply(_scalar(x, alpha), x))),
            ctx.input(0),
        )
    ]


@converter("Gelu")
def _gelu(ctx: NodeContext) -> list:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.error(f"approximate must be 'none' or 'tanh', got {approximate!r}")

    def gelu(x: Tensor) -> Tensor:
        half = _scalar(x, 0.5)
        if approximate == "tanh":
            cube = _math.multiply(_scalar(x, 0.044715), _math.multiply(x, _math.multiply(x, x)))
            inner = _math.multiply(_scalar(x, np.sqrt(2 / np.pi)), _math.add(x, cube))
            return _math.multiply(
                _math.multiply(half, x), _math.add(_scalar(x, 1), _math.tanh(inner))
            )
        scaled = _special.erf(_math.multiply(x, _scalar(x, 1 / np.sqrt(2))))
        return _math.multiply(_math.multiply(half, x), _math.add(_scalar(x, 1), scaled))

    return [elementwise(ctx, gelu, ctx.input(0))]


@converter("Shrink")
def _shrink(ctx: NodeContext) -> list:
    bias, lambd = ctx.attr("bias", 0.0), ctx.attr("lambd", 0.5)

    def shrink(x: Tensor) -> Tensor:
        below = _logic.less(x, _scalar(x, -lambd))
        above = _logic.greater(x, _scalar(x, lambd))
        return _logic.where(
            below,
            _math.add(x, _scalar(x, bias)),
            _logic.where(above, _math.subtract(x, _scalar(x, bias)), _array.zeros_like(x)),
        )

    return [elementwise(ctx, shrink, ctx.input(0))]


@converter("PRelu")
def _prelu(ctx: NodeContext) -> list:
    x, slope = ctx.input(0), ctx.input(1)
    x_shape, slope_shape = x._shape_tuple, slope._shape_tuple
    if (
        x_shape is not None
        and slope_shape is not None
        and len(slope_shape) == 1
        and len(x_shape) >= 3
        and slope_shape[0] not in (1, x_shape[-1])
        and slope_shape[0] == x_shape[1]
    ):
        # one slope per channel, as opset 6 broadcast it (ONNX's version converter keeps
        # such a slope as it is, which numpy's rules of opset 7 would refuse)
        slope = _array.reshape(slope, [slope_shape[0], *[1] * (len(x_shape) - 2)])
    return [
        elementwise(
            ctx,
            lambda v, s: _logic.where(_logic.less(v, _scalar(v, 0)), _math.multiply(s, v), v),
            x,
            slope,
        )
    ]


@converter("IsInf")
def _is_inf(ctx: NodeContext) -> list:
    x = ctx.input(0)
    negative, positive = ctx.attr("detect_negative", 1), ctx.attr("detect_positive", 1)
    inf = _logic.is_inf(x)
    if negative and positive:
        return [inf]
    if not negative and not positive:
        return [_logic.logical_and(inf, _logic.logical_not(inf))]
    side = _logic.greater if positive else _logic.less
    return [_logic.logical_and(inf, side(x, _scalar(x, 0)))]


# -- binary arithmetic ---------------------------------------------------------------------------
def _binary(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[[NodeContext], list]:
    def convert(ctx: NodeContext) -> list:
        return [elementwise(ctx, fn, ctx.input(0), ctx.input(1))]

    return convert


for _op, _fn in {
    "Add": _math.add,
    "Sub": _math.subtract,
    "Mul": _math.multiply,
    "Equal": _logic.equal,
    "Less": _logic.less,
    "Greater": _logic.greater,
    "LessOrEqual": _logic.less_equal,
    "GreaterOrEqual": _logic.greater_equal,
    "And": _logic.logical_and,
    "Or": _logic.logical_or,
    "Xor": _logic.logical_xor,
}.items():
    converter(_op)(_binary(_fn))


@converter("Div")
def _div(ctx: NodeContext) -> list:
    x = ctx.input(0)
    fn = _math.realdiv if x.dtype.is_floating else _math.truncatediv
    return [elementwise(ctx, fn, x, ctx.input(1))]


@converter("Mod")
def _mod(ctx: NodeContext) -> list:
    x = ctx.input(0)
    fmod = ctx.attr("fmod", 0)
    fn = _math.truncatemod if fmod else _math.floormod
    return [elementwise(ctx, fn, x, ctx.input(1))]


@converter("Pow")
def _pow(ctx: NodeContext) -> list:
    x, y = ctx.input(0), ctx.input(1)
    if x.dtype == y.dtype:
        return [elementwise(ctx, _math.pow, x, y)]
    if x.dtype.is_floating:
        return [elementwise(ctx, _math.pow, x, _math.cast(y, x.dtype))]
    # an integer base to a float power: computed in the float type, truncated as ONNX's
    # reference does
    wide = _dt.float64
    result = _math.pow(_math.cast(x, wide), _math.cast(y, wide))
    return [_math.cast(result, x.dtype)]


def _variadic(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[[NodeContext], list]:
    def convert(ctx: NodeContext) -> list:
        xs = [ctx.input(i) for i in range(len(ctx.inputs))]
        if not xs:
            raise ctx.error("needs at least one input")
        result = xs[0]
        if len(xs) == 1:
            return [_array.identity(result)]
        for x in xs[1:]:
            result = elementwise(ctx, fn, result, x)
        return [result]

    return convert


converter("Sum")(_variadic(_math.add))
converter("Max")(_variadic(_math.maximum))
converter("Min")(_variadic(_math.minimum))


@converter("Mean")
def _mean(ctx: NodeContext) -> list:
    (total,) = _variadic(_math.add)(ctx)
    count = len(ctx.inputs)
    return [elementwise(ctx, lambda t: _math.truediv(t, _scalar(t, count)), total)]


@converter("Where")
def _where(ctx: NodeContext) -> list:
    return [elementwise(ctx, _logic.where, ctx.input(0), ctx.input(1), ctx.input(2))]


@converter("Clip")
def _clip(ctx: NodeContext) -> list:
    x = ctx.input(0)
    if ctx.opset < 11:
        low = ctx.attr("min", float(np.finfo(np.float32).min) * 2)
        high = ctx.attr("max", float(np.finfo(np.float32).max) * 2)
        low_t = None if low == -np.inf or low < np.finfo(np.float32).min else _scalar(x, low)
        high_t = None if high == np.inf or high > np.finfo(np.float32).max else _scalar(x, high)
    else:
        low_t, high_t = ctx.optional(1), ctx.optional(2)

    def clip(v: Tensor, *bounds: Tensor) -> Tensor:
        it = iter(bounds)
        if low_t is not None:
            v = _math.maximum(v, next(it))
        if high_t is not None:
            v = _math.minimum(v, next(it))
        return v if (low_t is not None or high_t is not None) else _array.identity(v)

    return [elementwise(ctx, clip, x, *[b for b in (low_t, high_t) if b is not None])]


@converter("BitShift")
def _bit_shift(ctx: NodeContext) -> list:
    """ONNX's shifts: by an amount outside [0, bits) of the ONNX type a left shift gives 0 and
    a right shift the sign (0 or -1); inside, tf.bitwise's shifts (the result wraps into the
    narrow type after)."""
    x, y = ctx.input(0), ctx.input(1)
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    elem = ctx.input_type(0)
    bits = {
        _types.UINT8: 8,
        _types.INT8: 8,
        _types.UINT16: 16,
        _types.INT16: 16,
        _types.UINT32: 32,
        _types.INT32: 32,
    }.get(elem, 64)

    def shift(a: Tensor, b: Tensor) -> Tensor:
        outside = _logic.logical_or(
            _logic.less(b, _scalar(b, 0)), _logic.greater_equal(b, _scalar(b, bits))
        )
        if direction == "LEFT":
            fill = _array.zeros_like(_math.add(a, _math.multiply(b, _scalar(b, 0))))
            shifted = _bitwise.left_shift(a, b)
        else:
            sign = _logic.where(
                _logic.less(a, _scalar(a, 0)), _array.ones_like(a), _array.zeros_like(a)
            )
            fill = _math.add(_math.negative(sign), _math.multiply(b, _scalar(b, 0)))
            shifted = _bitwise.right_shift(a, b)
        return _logic.where(outside, fill, shifted)

    return [elementwise(ctx, shift, x, y)]


for _op, _fn in {
    "BitwiseAnd": _bitwise.bitwise_and,
    "BitwiseOr": _bitwise.bitwise_or,
    "BitwiseXor": _bitwise.bitwise_xor,
}.items():
    converter(_op)(_binary(_fn))
converter("BitwiseNot")(_unary(_bitwise.invert))


# -- casts ---------------------------------------------------------------------------------------
def round_to_float16(x: Tensor) -> Tensor:
    """float32 `x` rounded to the nearest float16 value (ties to even), as float32: normal
    values keep 11 significant bits (Veltkamp's split), subnormal ones multiples of 2**-24,
    and values beyond float16's range become infinities."""
    magnitude = _math.abs(x)
    t = _math.multiply(x, _scalar(x, 8193.0))  # 2**13 + 1
    normal = _math.subtract(t, _math.subtract(t, x))
    subnormal = _math.subtract(_math.add(x, _scalar(x, 0.75)), _scalar(x, 0.75))
    rounded = _logic.where(_logic.less(magnitude, _scalar(x, 2.0**-14)), subnormal, normal)
    inf = _math.multiply(_math.sign(x), _scalar(x, np.inf))
    overflow = _logic.greater_equal(magnitude, _scalar(x, 65520.0))
    finite = _logic.logical_not(_logic.is_nan(x))
    return _logic.where(_logic.logical_and(overflow, finite), inf, rounded)


def round_to_bfloat16(x: Tensor) -> Tensor:
    """float32 `x` rounded to the nearest bfloat16 value (8 significant bits), as float32."""
    t = _math.multiply(x, _scalar(x, 65537.0))  # 2**16 + 1
    rounded = _math.subtract(t, _math.subtract(t, x))
    return _logic.where(_logic.is_finite(t), rounded, x)


def cast_to(ctx: NodeContext, x: Tensor, src: int | None, to: int) -> Tensor:
    """`x` (ONNX type `src`) cast to ONNX type `to`, in `to`'s compute dtype."""
    dtype = ctx.compute_dtype(to, f"the cast's target type {_types.name(to)}")
    if x.dtype.is_floating and dtype.is_integer:
        # C's conversion truncates, as ONNX's reference does; NaN and out-of-range values
        # are undefined there too
        y = _math.cast(x, dtype)
    elif x.dtype == dtype:
        y = _array.identity(x)
    else:
        y = _math.cast(x, dtype)
    if to == _types.FLOAT16 and src != _types.FLOAT16:
        y = round_to_float16(y)
    elif to == _types.BFLOAT16 and src not in (_types.BFLOAT16,):
        y = round_to_bfloat16(y)
    return y


@converter("Cast")
def _cast(ctx: NodeContext) -> list:
    to = ctx.attr("to")
    if to is None:
        raise ctx.error("the 'to' attribute is missing")
    if ctx.attr("saturate", 1) == 0 and to > _types.BFLOAT16:
        raise ctx.error("saturate=0 applies to float8 types, which tfc does not compute")
    return [cast_to(ctx, ctx.input(0), ctx.input_type(0), int(to))]


@converter("BitCast")
def _bitcast(ctx: NodeContext) -> list:
    to, src = ctx.attr("to"), ctx.input_type(0)
    if to is None:
        raise ctx.error("the 'to' attribute is missing")
    if src is None:
        raise ctx.error("the type of its input is unknown")
    dtype = ctx.compute_dtype(int(to), f"the bitcast's target type {_types.name(int(to))}")
    x = ctx.input(0)
    width = _types.numpy_dtype(src).itemsize
    if _types.numpy_dtype(int(to)).itemsize != width:
        raise ctx.error(
            f"{_types.name(src)} and {_types.name(int(to))} differ in width (BitCast needs "
            "equal widths)"
        )
    if x.dtype.np.itemsize == width and dtype.np.itemsize == width:
        return [bitcast(x, dtype)]
    src_np, to_np = _types.numpy_dtype(src), _types.numpy_dtype(int(to))
    if src_np.kind in "iub" and to_np.kind in "iub" and width < 8:
        return [_integer_bits(x, width * 8, to_np.kind, dtype)]
    raise ctx.error(
        f"tfc holds {_types.name(src)} or {_types.name(int(to))} in a wider type, so the "
        "bits of one cannot be read as the other"
    )


def _integer_bits(x: Tensor, bits: int, kind: str, dtype: _dt.DType) -> Tensor:
    """The `bits` low bits of integers (or bools) held in a wider type, read as an integer of
    `kind` ('i' signed, 'u' unsigned, 'b' bool) held in `dtype`: a narrow type's BitCast
    where tfc keeps that type widened."""
    wide = _dt.int64
    low = _bitwise.bitwise_and(_math.cast(x, wide), constant((1 << bits) - 1, dtype=wide))
    if kind == "b":
        return _logic.not_equal(low, constant(0, dtype=wide))
    if kind == "i":  # the top bit set: the two's-complement negative value
        negative = _logic.greater_equal(low, constant(1 << (bits - 1), dtype=wide))
        low = _logic.where(negative, low - constant(1 << bits, dtype=wide), low)
    return _math.cast(low, dtype)


@converter("CastLike")
def _cast_like(ctx: NodeContext) -> list:
    to = ctx.input_type(1)
    if to is None:
        raise ctx.error("the type of its second input is unknown")
    return [cast_to(ctx, ctx.input(0), ctx.input_type(0), to)]


# -- constants -----------------------------------------------------------------------------------
@converter("Constant")
def _constant(ctx: NodeContext) -> list:
    for name in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if ctx.has_attr(name):
            value = np.asarray(ctx.attr(name))
            if name in ("value_float", "value_floats"):
                value = value.astype(np.float32)
            elif name in ("value_int", "value_ints"):
                value = value.astype(np.int64)
            break
    else:
        present = [a.name for a in ctx.node.attribute]
        raise ctx.error(f"tfc cannot hold a constant given as {present or 'nothing'}")
    elem = ctx.output_types[0]
    if elem is None:
        elem = _types.onnx_type(_dt.as_dtype(value.dtype)) if value.dtype.kind in "fib" else 0
    dtype = ctx.compute_dtype(elem, "the constant")
    return [constant(value.astype(dtype.np), dtype=dtype)]


# -- matrix products -----------------------------------------------------------------------------
@converter("MatMul")
def _matmul(ctx: NodeContext) -> list:
    a, b = ctx.input(0), ctx.input(1)
    return [numpy_matmul(ctx, a, b)]


def numpy_matmul(ctx: NodeContext, a: Tensor, b: Tensor) -> Tensor:
    """np.matmul's semantics: 1-D operands gain an axis that the result drops again."""
    ra, rb = ctx_rank(ctx, a), ctx_rank(ctx, b)
    if ra == 1:
        a = _array.expand_dims(a, 0)
    if rb == 1:
        b = _array.expand_dims(b, 1)
    y = matmul(a, b)
    if ra == 1 and rb == 1:
        return _array.reshape(y, [])
    if ra == 1:
        return _array.squeeze(y, [-2])
    if rb == 1:
        return _array.squeeze(y, [-1])
    return y


def ctx_rank(ctx: NodeContext, x: Tensor) -> int:
    if x._shape_tuple is None:
        raise ctx.error("the ranks of its inputs must be known when the model is imported")
    return len(x._shape_tuple)


@converter("Gemm")
def _gemm(ctx: NodeContext) -> list:
    a, b, c = ctx.input(0), ctx.input(1), ctx.optional(2)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    trans_a, trans_b = bool(ctx.attr("transA", 0)), bool(ctx.attr("transB", 0))
    b_value = ctx.const(1)
    if trans_b and b_value is not None and b_value.size > 1:
        # the weights stored as the product reads them: no transpose at run time
        b = constant(np.ascontiguousarray(b_value.T), dtype=b.dtype, name="B_transposed")
        trans_b = False
    y = matmul(a, b, transpose_a=trans_a, transpose_b=trans_b)
    if alpha != 1.0:
        y = _math.multiply(y, _scalar(y, alpha))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = _math.multiply(c, _scalar(c, beta))
        y = _math.add(y, c)
    return [y]


@converter("Einsum")
def _einsum(ctx: NodeContext) -> list:
    equation = ctx.attr("equation")
    if not equation:
        raise ctx.error("the 'equation' attribute is missing")
    xs = [ctx.input(i) for i in range(len(ctx.inputs))]
    return [einsum(equation.replace(" ", ""), *xs)]
