"""Array ops that pad: Pad, PadV2 (a constant border) and MirrorPad (REFLECT, SYMMETRIC)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_common import INDEX_DTYPES, check_rank, contiguous, index_tensor, strided_copy
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.flops import no_flops
from tfc.ops.grad_ops import reduce_sum_over, reshape_to, shape_tensor
from tfc.ops.kernels import Operand, c_literal, contiguous_strides, loop_kernel
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, constant_value, register


# -- Pad, PadV2, MirrorPad -----------------------------------------------------------------------
def _pad_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "paddings")
    check_rank(ctx, 1, 2)
    dtype, in_shape, pshape = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.in_shapes[1]
    if pshape is not None and pshape[1] is not None and pshape[1] != 2:
        raise ctx.error(f"Dimension must be 2 but is {pshape[1]}")
    n = pshape[0] if pshape is not None else None
    if in_shape is not None and n is not None and n != len(in_shape):
        raise ctx.error(f"Shape must be rank {n} but is rank {len(in_shape)}")
    if ctx.type == "PadV2":
        check_rank(ctx, 2, 0)
        if ctx.in_dtypes[2] != dtype:
            raise TypeError(
                f"Input 'constant_values' of 'PadV2' Op has type {ctx.in_dtypes[2].name} that "
                f"does not match type {dtype.name} of argument 'input'."
            )
    r = len(in_shape) if in_shape is not None else n
    paddings = ctx.const(1)
    if r is None:
        return [(dtype, None)]
    if paddings is None:
        return [(dtype, (None,) * r)]
    dims = in_shape if in_shape is not None else (None,) * r
    # REFLECT mirrors without the edge, so it needs one more element than SYMMETRIC
    edge = {"REFLECT": 1, "SYMMETRIC": 0}.get(ctx.attrs.get("mode"))
    out = []
    for d, (before, after) in zip(dims, np.reshape(paddings, (-1, 2)).tolist()):
        if before < 0 or after < 0:
            raise ctx.error(f"Paddings must be non-negative: {before} {after}")
        if edge is not None and d is not None and max(before, after) > d - edge:
            raise ctx.error(
                f"paddings must be less than the dimension size: {before}, {after} not less "
                f"than {d}"
            )
        out.append(None if d is None else before + d + after)
    return [(dtype, tuple(out))]


def _pad_reference(ctx: OpContext, x: np.ndarray, paddings: Any, *value: Any) -> np.ndarray:
    pads = np.reshape(paddings, (-1, 2)).astype(np.int64)
    if x.ndim == 0:  # np.pad cannot take a scalar; there is nothing to pad
        return x.copy()
    if ctx.type == "MirrorPad":
        return np.pad(x, pads, mode=ctx.attrs["mode"].lower())
    fill = value[0] if value else np.zeros((), x.dtype)
    return np.pad(x, pads, mode="constant", constant_values=fill)


def _pad_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    out_shape = ctx.out_shapes[0]
    pads = np.reshape(ctx.require_const(1, "paddings"), (-1, 2)).tolist()
    out_strides = contiguous_strides(out_shape)
    interior = Operand(
        "out0", dtype, out_strides, sum(b * s for (b, _), s in zip(pads, out_strides))
    )
    copy = strided_copy(in_shape, interior, contiguous("in0", dtype, in_shape))
    if ctx.type == "Pad":
        fill = loop_kernel(out_shape, contiguous("out0", dtype, out_shape), [], c_literal(0, dtype))
    elif ctx.type == "PadV2":
        value = Operand("in2", dtype, (0,) * len(out_shape))
        fill = loop_kernel(out_shape, contiguous("out0", dtype, out_shape), [value], "{0}")
    else:
        return copy + _mirror_kernels(ctx, in_shape, pads, out_shape)
    return fill + copy


def _mirror_kernels(ctx: OpContext, in_shape: tuple, pads: list, out_shape: tuple) -> list:
    """The borders of a mirror pad, copied from the output itself one dimension at a time.

    Dimension k's borders are filled over the whole extent of dims < k (already padded) and the
    interior of dims > k, reading the interior of dim k backwards: the elements read and written
    by one kernel never overlap, so binding both pointers to the output is sound."""
    dtype = ctx.in_dtypes[0]
    edge = 1 if ctx.attrs["mode"] == "REFLECT" else 0
    strides = contiguous_strides(out_shape)
    kernels = []
    for k, (before, after) in enumerate(pads):
        n, s = in_shape[k], strides[k]
        base = sum(b * st for (b, _), st in zip(pads[k + 1 :], strides[k + 1 :]))
        extent = list(out_shape[:k]) + [0] + list(in_shape[k + 1 :])
        # (count, first written position, first read position) along dim k, read backwards
        for count, dst, src in (
            (before, 0, 2 * before - 1 + edge),
            (after, before + n, before + n - 1 - edge),
        ):
            extent[k] = count
            out = Operand("out0", dtype, strides, base + dst * s)
            read = Operand("out0", dtype, strides[:k] + (-s,) + strides[k + 1 :], base + src * s)
            kernels += strided_copy(tuple(extent), out, read)
    return kernels


def _interior(op, dy: Tensor) -> Tensor:
    """The part of dy that holds x: a slice from the leading paddings, of x's shape."""
    x, paddings = op.inputs[:2]
    value = constant_value(op.graph, (paddings.op.name, paddings.value_index))
    if value is not None:
        begin = constant(np.reshape(value, (-1, 2))[:, 0].astype(np.int32))
    else:
        first = apply_op("Slice", [paddings, constant([0, 0]), constant([-1, 1])]).outputs[0]
        begin = apply_op("Reshape", [first, constant([-1])]).outputs[0]
    size = shape_tensor(x)
    if begin.dtype != size.dtype:
        begin = apply_op("Cast", [begin], {"SrcT": begin.dtype, "DstT": size.dtype}).outputs[0]
    return reshape_to(apply_op("Slice", [dy, begin, size]).outputs[0], x)


def _pad_v2_grad(op, dy: Tensor) -> list:
    """The border holds constant_values: its gradient is what dy has outside the interior."""
    inner = _interior(op, dy)
    total = reduce_sum_over(_flat(dy), [0])
    return [inner, None, total - reduce_sum_over(_flat(inner), [0])]


def _flat(t: Tensor) -> Tensor:
    return apply_op("Reshape", [t, constant([-1])]).outputs[0]


def _mirror_pad_grad(op, dy: Tensor) -> list:
    attrs = {"mode": op.get_attr("mode")}
    return [apply_op("MirrorPadGrad", [dy, op.inputs[1]], attrs).outputs[0], None]


_PAD = dict(
    infer=_pad_infer,
    reference=_pad_reference,
    lower=_pad_lower,
    const_inputs=(1,),
    flops=no_flops,
)
register(OpDef("Pad", grad=lambda op, dy: [_interior(op, dy), None], **_PAD))
register(OpDef("PadV2", grad=_pad_v2_grad, **_PAD))
register(OpDef("MirrorPad", grad=_mirror_pad_grad, **_PAD))


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """`tf.pad`: `paddings[k] = [before, after]` elements added around dimension k, filled with
    `constant_values` (CONSTANT) or mirrored (REFLECT without the edge, SYMMETRIC with it)."""
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    if mode == "CONSTANT":
        plain = not is_tensor_like(constant_values) and np.all(np.asarray(constant_values) == 0)
        op_type = "Pad" if plain else "PadV2"
    else:
        op_type = "MirrorPad"
    with name_scope(name, op_type, [tensor]) as scope:
        x = convert_to_tensor(tensor)
        inputs = [x, index_tensor(paddings, "paddings")]
        if op_type == "PadV2":
            inputs.append(convert_to_tensor(constant_values, dtype=x.dtype, name="constant_values"))
        attrs = {"mode": mode} if op_type == "MirrorPad" else {}
        return apply_op(op_type, inputs, attrs, name=scope).outputs[0]
