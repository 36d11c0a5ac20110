"""ONNX transformer operators: Attention (masks, causal and sliding windows, key/value caches,
grouped-query heads, soft-capping), RMSNormalization, RotaryEmbedding and SwiGLU, composed from
matrix products, softmax and element-wise ops. Shapes must be static: masks that depend only on
positions are built in NumPy as the model is imported."""

from __future__ import annotations

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.constant import constant
from tfc.ops.linalg import matmul

_NEG_INF = -np.inf


def _static(ctx: NodeContext, x: Tensor, what: str) -> tuple[int, ...]:
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error(f"the shape of {what} must be known when the model is imported")
    return tuple(int(d) for d in shape)


def _heads(x: Tensor, shape: tuple[int, ...], heads: int) -> Tensor:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    b, s, hidden = shape
    return _array.transpose(_array.reshape(x, [b, s, heads, hidden // heads]), [0, 2, 1, 3])


def _bias_constant(allowed: np.ndarray, dtype: _dt.DType) -> Tensor:
    return constant(np.where(allowed, 0.0, _NEG_INF).astype(dtype.np), dtype=dtype)


def _additive(mask: Tensor, dtype: _dt.DType) -> Tensor:
    """A boolean mask (True: attend) as an additive bias (0 or -inf); a float mask as is."""
    if mask.dtype == _dt.bool_:
        zeros = _array.zeros_like(mask, dtype=dtype)
        return _logic.where(mask, zeros, _math.add(zeros, constant(_NEG_INF, dtype=dtype)))
    return mask


def _safe_softmax(x: Tensor) -> Tensor:
    """Softmax over the last axis where a row of only -inf gives zeros (no NaN)."""
    top = _reduce.reduce_max(x, [-1], keepdims=True)
    masked = _logic.equal(top, constant(_NEG_INF, dtype=x.dtype))
    safe = _logic.where(masked, _array.zeros_like(top), top)
    e = _math.exp(_math.subtract(x, safe))
    total = _reduce.reduce_sum(e, [-1], keepdims=True)
    total = _logic.where(
        _logic.equal(total, _array.zeros_like(total)), _array.ones_like(total), total
    )
    return _math.truediv(e, total)


@converter("Attention")
def _attention(ctx: NodeContext) -> list:
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    mask, past_key, past_value = ctx.optional(3), ctx.optional(4), ctx.optional(5)
    nonpad = ctx.optional(6)
    dtype = q.dtype
    qs, ks, vs = (_static(ctx, t, n) for t, n in ((q, "Q"), (k, "K"), (v, "V")))
    rank3 = len(qs) == 3
    q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if rank3:
        if q_heads is None or kv_heads is None:
            raise ctx.error("3-D inputs need q_num_heads and kv_num_heads")
        q, k, v = _heads(q, qs, q_heads), _heads(k, ks, kv_heads), _heads(v, vs, kv_heads)
        qs, ks, vs = (_static(ctx, t, n) for t, n in ((q, "Q"), (k, "K"), (v, "V")))
    scale = ctx.attr("scale")
    if scale is None:
        scale = 1 / np.sqrt(qs[3])
    root = constant(np.asarray(np.sqrt(scale), dtype=dtype.np), dtype=dtype)
    if (past_key is None) != (past_value is None):
        raise ctx.error("past_key and past_value must be given together")
    past = 0
    if past_key is not None:
        past = _static(ctx, past_key, "past_key")[2]
        k = _array.concat([past_key, k], 2)
        v = _array.concat([past_value, v], 2)
    present_key, present_value = k, v
    q_len, kv_len = qs[2], past + ks[2]
    batch = qs[0]

    bias: Tensor | np.ndarray = np.zeros((q_len, kv_len), dtype.np)
    if mask is not None:
        mshape = _static(ctx, mask, "attn_mask")
        pad = kv_len - mshape[-1]
        if pad > 0:
            fill = False if mask.dtype == _dt.bool_ else _NEG_INF
            mask = _array.pad(
                mask,
                [[0, 0]] * (len(mshape) - 1) + [[0, pad]],
                constant_values=constant(fill, dtype=mask.dtype),
            )
        bias = _math.add(constant(bias), _additive(mask, dtype))
    offset: int | Tensor = past
    if nonpad is not None and past_key is None:
        offset = _math.subtract(_math.cast(nonpad, _dt.int64), constant(q_len, dtype=_dt.int64))
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)

    def positional(allowed_of) -> None:
        nonlocal bias
        if isinstance(offset, int):
            term = _bias_constant(allowed_of(i + offset - j), dtype)
        else:  # per batch: (batch, 1, q, kv)
            diff = _math.add(
                _array.reshape(offset, [-1, 1, 1, 1]), constant((i - j).astype(np.int64))
            )
            allowed = allowed_of(diff)
            zeros = _array.zeros_like(diff, dtype=dtype)
            term = _logic.where(allowed, zeros, _math.add(zeros, constant(_NEG_INF, dtype=dtype)))
        bias = (
            term
            if isinstance(bias, np.ndarray) and not bias.any()
            else _math.add(bias if isinstance(bias, Tensor) else constant(bias), term)
        )

    if ctx.attr("is_causal", 0):
        positional(
            lambda d: (
                d >= 0
                if isinstance(d, np.ndarray)
                else _logic.greater_equal(d, constant(0, dtype=_dt.int64))
            )
        )
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)
    if left >= 0 or right >= 0:

        def window(d):
            if isinstance(d, np.ndarray):
                ok = np.ones_like(d, bool)
                if left >= 0:
                    ok &= d <= left
                if right >= 0:
                    ok &= -d <= right
                return ok
            ok = None
            if left >= 0:
                ok = _logic.less_equal(d, constant(left, dtype=_dt.int64))
            if right >= 0:
                r = _logic.less_equal(_math.negative(d), constant(right, dtype=_dt.int64))
                ok = r if ok is None else _logic.logical_and(ok, r)
            return ok

        positional(window)
    if nonpad is not None:
        valid = _logic.less(
            constant(np.arange(kv_len, dtype=np.int64)),
            _array.reshape(_math.cast(nonpad, _dt.int64), [-1, 1]),
        )
        bias = _math.add(
            bias if isinstance(bias, Tensor) else constant(bias),
            _array.reshape(_additive(valid, dtype), [batch, 1, 1, kv_len]),
        )
    bias_t = bias if isinstance(bias, Tensor) else constant(bias)

    q_n, k_n = qs[1], _static(ctx, k, "K")[1]
    if q_n != k_n:
        if q_n % k_n:
            raise ctx.error(f"{q_n} query heads are not a multiple of {k_n} key heads")
        picks = constant(np.repeat(np.arange(k_n), q_n // k_n).astype(np.int64))
        k, v = _array.gather(k, picks, axis=1), _array.gather(v, picks, axis=1)
    scores = matmul(_math.multiply(q, root), _math.multiply(k, root), transpose_b=True)
    softcap = ctx.attr("softcap", 0.0)
    if softcap and softcap > 0:
        cap = constant(softcap, dtype=dtype)
        scores = _math.multiply(_math.tanh(_math.truediv(scores, cap)), cap)
    with_bias = _math.add(scores, bias_t)
    precision = ctx.attr("softmax_precision")
    work = with_bias
    if precision is not None:
        work_dtype = ctx.compute_dtype(precision, "softmax_precision")
        if work_dtype != dtype:
            work = _math.cast(with_bias, work_dtype)
    probs = _safe_softmax(work)
    masked_rows = _logic.equal(
        _reduce.reduce_max(bias_t, [-1], keepdims=True), constant(_NEG_INF, dtype=dtype)
    )
    probs = _logic.where(masked_rows, _array.zeros_like(probs), probs)
    if probs.dtype != dtype:
        probs = _math.cast(probs, dtype)
    mode = ctx.attr("qk_matmul_output_mode", 0)
    qk_out = {0: scores, 1: scores, 2: with_bias, 3: probs}.get(mode)
    if qk_out is None:
        raise ctx.error(f"unknown qk_matmul_output_mode {mode}")
    y = matmul(probs, v)
    if rank3:
        ys = _static(ctx, y, "the output")
        y = _array.reshape(_array.transpose(y, [0, 2, 1, 3]), [ys[0], ys[2], -1])
    return [y, present_key, present_value, qk_out]


@converter("RMSNormalization")
def _rms_normalization(ctx: NodeContext) -> list:
    x, scale = ctx.input(0), ctx.input(1)
    rank = len(_static(ctx, x, "X"))
    axis = ctx.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    eps = ctx.attr("epsilon", 1e-5)
    work = x if x.dtype == _dt.float64 or ctx.attr("stash_type", 1) != 1 else x
    mean_square = _reduce.reduce_mean(_math.square(work), list(range(axis, rank)), keepdims=True)
    inv = _math.reciprocal(_math.sqrt(_math.add(mean_square, constant(eps, dtype=x.dtype))))
    return [_math.multiply(_math.multiply(x, inv), scale)]


@converter("SwiGLU")
def _swiglu(ctx: NodeContext) -> list:
    a, b = ctx.input(0), ctx.input(1)
    alpha = ctx.attr("alpha", 1.0)
    gate = _math.sigmoid(_math.multiply(constant(alpha, dtype=a.dtype), a))
    return [_math.multiply(_math.multiply(a, gate), b)]


@converter("RotaryEmbedding")
def _rotary_embedding(ctx: NodeContext) -> list:
    x, cos, sin, positions = ctx.input(0), ctx.input(1), ctx.input(2), ctx.optional(3)
    shape = _static(ctx, x, "the input")
    if len(shape) == 4:
        x4 = _array.transpose(x, [0, 2, 1, 3])  # (batch, seq, heads, size)
    else:
        heads = ctx.attr("num_heads")
        if not heads:
            raise ctx.error("a 3-D input needs num_heads")
        x4 = _array.reshape(x, [shape[0], shape[1], heads, shape[2] // heads])
    b, s, h, size = _static(ctx, x4, "the input")
    dim = ctx.attr("rotary_embedding_dim", 0) or size
    half = dim // 2
    if positions is not None:
        cos = _array.gather(cos, _math.cast(positions, _dt.int64))
        sin = _array.gather(sin, _math.cast(positions, _dt.int64))
    cos, sin = _array.expand_dims(cos, 2), _array.expand_dims(sin, 2)
    rotate = _array.slice(x4, [0, 0, 0, 0], [b, s, h, dim])
    if ctx.attr("interleaved", 0):
        pairs = _array.reshape(rotate, [b, s, h, half, 2])
        x1 = _array.squeeze(_array.slice(pairs, [0, 0, 0, 0, 0], [b, s, h, half, 1]), [4])
        x2 = _array.squeeze(_array.slice(pairs, [0, 0, 0, 0, 1], [b, s, h, half, 1]), [4])
    else:
        x1 = _array.slice(rotate, [0, 0, 0, 0], [b, s, h, half])
        x2 = _array.slice(rotate, [0, 0, 0, half], [b, s, h, half])
    real = _math.subtract(_math.multiply(cos, x1), _math.multiply(sin, x2))
    imag = _math.add(_math.multiply(sin, x1), _math.multiply(cos, x2))
    if ctx.attr("interleaved", 0):
        rotated = _array.reshape(_array.stack([real, imag], axis=-1), [b, s, h, dim])
    else:
        rotated = _array.concat([real, imag], -1)
    if dim < size:
        rotated = _array.concat(
            [rotated, _array.slice(x4, [0, 0, 0, dim], [b, s, h, size - dim])], -1
        )
    if len(shape) == 4:
        return [_array.transpose(rotated, [0, 2, 1, 3])]
    return [_array.reshape(rotated, list(shape))]
