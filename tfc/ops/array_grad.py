"""Gradient-only array ops: StridedSliceGrad and MirrorPadGrad, as TensorFlow names them.

Both write each element of dy back where the forward op read it: a strided slice scatters
dy into zeros; a mirror pad adds every border element onto the interior element it copied.
Each is linear in dy, so its gradient is its forward op applied to the incoming gradient.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from tfc.ir.tensor_shape import shape_str
from tfc.ops.array_common import (
    INDEX_DTYPES,
    check_rank,
    contiguous,
    int_list,
    shape_value,
    strided_copy,
)
from tfc.ops.array_index import _MASKS, _strided_slice_plan
from tfc.ops.flops import no_flops, per_input_element
from tfc.ops.kernels import Operand, c_literal, contiguous_strides, loop_kernel
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register


# -- StridedSliceGrad(shape, begin, end, strides, dy) --------------------------------------------
def _strided_slice_grad_infer(ctx: OpContext) -> list:
    for i, what in ((0, "shape"), (1, "begin"), (2, "end"), (3, "strides")):
        check_dtype(ctx, i, INDEX_DTYPES, what)
        check_rank(ctx, i, 1)
    return [(ctx.in_dtypes[4], shape_value(ctx, 0))]


def _plan(ctx: OpContext, shape: tuple, begin, end, strides) -> list:
    final, plan = _strided_slice_plan(ctx, shape, int_list(begin), int_list(end), int_list(strides))
    dy = ctx.in_shapes[4]
    if dy is not None and None not in dy and tuple(dy) != final:
        raise ctx.error(
            f"The gradient has shape {shape_str(dy)}, but the slice of a tensor of shape "
            f"{shape_str(shape)} has shape {shape_str(final)}"
        )
    return plan


def _strided_slice_grad_reference(ctx, shape, begin, end, strides, dy) -> np.ndarray:
    shape = tuple(int_list(shape))
    plan = _plan(ctx, shape, begin, end, strides)
    out = np.zeros(shape, dy.dtype)
    out[np.ix_(*[b + s * np.arange(size) for b, size, s in plan])] = dy.reshape(
        [size for _, size, _ in plan]
    )
    return out


def _strided_slice_grad_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    values = [ctx.require_const(i, what) for i, what in ((1, "begin"), (2, "end"), (3, "strides"))]
    plan = _plan(ctx, shape, *values)
    strides = contiguous_strides(shape)
    sizes = [size for _, size, _ in plan]
    target = Operand(
        "out0",
        dtype,
        tuple(s * st for (_, _, s), st in zip(plan, strides)),
        sum(b * st for (b, _, _), st in zip(plan, strides) if b is not None),
    )
    zeros = loop_kernel(shape, contiguous("out0", dtype, shape), [], c_literal(0, dtype))
    return zeros + strided_copy(sizes, target, contiguous("in4", dtype, sizes))


def _strided_slice_grad_grad(op, g) -> list:
    attrs = {m: op.get_attr(m) for m in _MASKS}
    sliced = apply_op("StridedSlice", [g, *op.inputs[1:4]], attrs).outputs[0]
    return [None, None, None, None, sliced]


register(
    OpDef(
        "StridedSliceGrad",
        infer=_strided_slice_grad_infer,
        reference=_strided_slice_grad_reference,
        lower=_strided_slice_grad_lower,
        flops=no_flops,
        grad=_strided_slice_grad_grad,
        const_inputs=(0, 1, 2, 3),
        input_names=("shape", "begin", "end", "strides", "dy"),
    )
)


# -- MirrorPadGrad(dy, paddings) -----------------------------------------------------------------
_EDGE = {"REFLECT": 1, "SYMMETRIC": 0}  # REFLECT mirrors without the edge element


def _mirror_pad_grad_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "paddings")
    check_rank(ctx, 1, 2)
    dtype, dy, paddings = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.const(1)
    if dy is None:
        return [(dtype, None)]
    if paddings is None:
        return [(dtype, (None,) * len(dy))]
    pads = np.reshape(paddings, (-1, 2)).tolist()
    if len(pads) != len(dy):
        raise ctx.error(f"Shape must be rank {len(pads)} but is rank {len(dy)}")
    edge = _EDGE[ctx.attrs["mode"]]
    out = []
    for d, (before, after) in zip(dy, pads):
        n = None if d is None else d - before - after
        if n is not None and (before < 0 or after < 0 or max(before, after) > n - edge):
            raise ctx.error(f"Paddings {before}, {after} do not fit an input of size {n}")
        out.append(n)
    return [(dtype, tuple(out))]


def _regions(n: int, before: int, after: int, edge: int) -> list[tuple[int, int, int, int]]:
    """Along one dim, (length, first interior position written, first dy position read, step)
    of the interior and of the two mirrored borders, read backwards."""
    return [
        (n, 0, before, 1),
        (before, edge, before - 1, -1),
        (after, n - edge - after, before + n + after - 1, -1),
    ]


def _mirror_pad_grad_reference(ctx: OpContext, dy: np.ndarray, paddings) -> np.ndarray:
    pads = np.reshape(paddings, (-1, 2)).tolist()
    edge = _EDGE[ctx.attrs["mode"]]
    out_shape = [d - b - a for d, (b, a) in zip(dy.shape, pads)]
    out = np.zeros(out_shape, dy.dtype)
    per_dim = [_regions(n, b, a, edge) for n, (b, a) in zip(out_shape, pads)]
    for combo in itertools.product(*per_dim):
        target = tuple(slice(start, start + length) for length, start, _, _ in combo)
        source = tuple(np.arange(length) * step + src for length, _, src, step in combo)
        out[target] += dy[np.ix_(*source)] if source else dy
    return out


def _mirror_pad_grad_lower(ctx: OpContext) -> list:
    """The interior copied, then each combination of borders added onto its target: every
    kernel writes distinct elements, and the kernels run one after another."""
    dtype, dy, out_shape = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.out_shapes[0]
    pads = np.reshape(ctx.require_const(1, "paddings"), (-1, 2)).tolist()
    edge = _EDGE[ctx.attrs["mode"]]
    dy_strides, out_strides = contiguous_strides(dy), contiguous_strides(out_shape)
    per_dim = [_regions(n, b, a, edge) for n, (b, a) in zip(out_shape, pads)]
    kernels = []
    for k, combo in enumerate(itertools.product(*per_dim)):
        lengths = [length for length, _, _, _ in combo]
        if math.prod(lengths) == 0:
            continue
        target = Operand(
            "out0", dtype, out_strides, sum(t * s for (_, t, _, _), s in zip(combo, out_strides))
        )
        source = Operand(
            "in0",
            dtype,
            tuple(step * s for (_, _, _, step), s in zip(combo, dy_strides)),
            sum(src * s for (_, _, src, _), s in zip(combo, dy_strides)),
        )
        expr = "{0}" if k == 0 else "{out} + {0}"  # combination 0 is the interior
        kernels += loop_kernel(lengths, target, [source], expr)
    return kernels


register(
    OpDef(
        "MirrorPadGrad",
        infer=_mirror_pad_grad_infer,
        reference=_mirror_pad_grad_reference,
        lower=_mirror_pad_grad_lower,
        flops=per_input_element(1),
        grad=lambda op, g: [
            apply_op("MirrorPad", [g, op.inputs[1]], {"mode": op.get_attr("mode")}).outputs[0],
            None,
        ],
        const_inputs=(1,),
        input_names=("input", "paddings"),
    )
)
