"""Gradient plumbing: SumToShape (a broadcast gradient reduced to its input) and shape helpers.

The gradient pass and the op rules share these. They build ops with `apply_op` and import no
op family, so every family module can use them without import cycles. Shapes that are only
known when compiling (None batch dims) are taken from `Shape` ops, which the specialize pass
turns into constants; a static shape becomes a constant at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import is_fully_defined, shape_str
from tfc.ops.array_common import INDEX_DTYPES, check_rank, shape_value
from tfc.ops.constant import constant
from tfc.ops.elementwise import convert_operands
from tfc.ops.flops import per_input_element
from tfc.ops.kernels import loop_kernel, reduce_kernel, view
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, constant_value, register

__all__ = [
    "sum_to_shape",
    "broadcast_to",
    "reshape_to",
    "shape_tensor",
    "static_shape",
    "reduce_sum_over",
    "select",
    "kept_dims_shape",
]


# -- SumToShape(grad, shape) ---------------------------------------------------------------------
def summed_axes(grad_shape: tuple, target: tuple) -> list[int]:
    """The axes of `grad_shape` that broadcasting `target` to it created or stretched."""
    lead = len(grad_shape) - len(target)
    return [k for k, d in enumerate(grad_shape) if k < lead or (target[k - lead] == 1 and d != 1)]


def _sum_to_shape_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, (_dt.float32, _dt.float64), "grad")
    check_dtype(ctx, 1, INDEX_DTYPES, "shape")
    check_rank(ctx, 1, 1)
    dtype, grad = ctx.in_dtypes[0], ctx.in_shapes[0]
    target = shape_value(ctx, 1)
    if grad is not None and target is not None:
        lead = len(grad) - len(target)
        bad = lead < 0 or any(
            t is not None and d is not None and t not in (1, d)
            for t, d in zip(target, grad[max(lead, 0) :])
        )
        if bad:
            raise ctx.error(
                f"A gradient of shape {shape_str(grad)} cannot be summed to shape "
                f"{shape_str(target)}: that shape does not broadcast to it"
            )
    return [(dtype, target)]


def _sum_to_shape_reference(ctx: OpContext, grad: np.ndarray, shape: np.ndarray) -> np.ndarray:
    target = tuple(int(d) for d in shape)
    axes = tuple(summed_axes(grad.shape, target))
    # float32 sums in double, as the kernel's accumulator does
    acc = np.float64 if grad.dtype == np.float32 else grad.dtype
    return np.sum(grad, axis=axes, dtype=acc).reshape(target).astype(grad.dtype)


def _sum_to_shape_lower(ctx: OpContext) -> list:
    dtype, grad, target = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.out_shapes[0]
    axes = summed_axes(grad, target)
    if not axes:  # the shapes agree: a copy (no broadcast happened at run time)
        return loop_kernel(target, view("out0", dtype, target), [view("in0", dtype, target)], "{0}")
    acc = _dt.float64 if dtype is _dt.float32 else None
    # the kept dims, in order, are the target's layout: its size-1 and missing dims hold nothing
    return reduce_kernel(
        grad,
        axes,
        view("in0", dtype, grad),
        view("out0", dtype, target),
        "{a} + {b}",
        "0",
        None,
        acc,
    )


def _sum_to_shape_grad(op, dy: Tensor) -> list:
    return [broadcast_to(dy, op.inputs[0]), None]


register(
    OpDef(
        "SumToShape",
        infer=_sum_to_shape_infer,
        reference=_sum_to_shape_reference,
        lower=_sum_to_shape_lower,
        flops=per_input_element(1),
        grad=_sum_to_shape_grad,
        const_inputs=(1,),
        input_names=("grad", "shape"),
    )
)


# -- helpers the rules share ---------------------------------------------------------------------
def static_shape(x: Tensor) -> tuple | None:
    shape = x._shape_tuple
    return tuple(shape) if is_fully_defined(shape) else None


def shape_tensor(x: Tensor) -> Tensor:
    """x's shape as an int32 vector: a Const when it is static, else a Shape op."""
    shape = static_shape(x)
    if shape is not None:
        return constant(np.array(shape, dtype=np.int32), name="Shape")
    return apply_op("Shape", [x], {"out_type": _dt.int32}, name="Shape").outputs[0]


def reshape_to(g: Tensor, x: Tensor) -> Tensor:
    """g (with x's number of elements) in x's shape; a free view, and x's static shape."""
    if static_shape(g) is not None and static_shape(g) == static_shape(x):
        return g
    return apply_op("Reshape", [g, shape_tensor(x)], name="Reshape").outputs[0]


def sum_to_shape(g: Tensor, x: Tensor) -> Tensor:
    """g summed over the dims along which x was broadcast to g's shape."""
    return apply_op("SumToShape", [g, shape_tensor(x)], name="SumToShape").outputs[0]


def reduce_sum_over(g: Tensor, axes: list[int], keep_dims: bool = False) -> Tensor:
    axes_t = constant(np.array(axes, dtype=np.int32), name="axes")
    return apply_op("Sum", [g, axes_t], {"keep_dims": keep_dims}, name="Sum").outputs[0]


def broadcast_to(g: Tensor, x: Tensor) -> Tensor:
    """g broadcast to x's shape (g's dims are 1 or x's; missing leading dims count as 1).

    A reshape to rank(x) (free) and a Tile: one strided copy.
    """
    g_shape, x_shape = static_shape(g), static_shape(x)
    if g_shape is not None and g_shape == x_shape:
        return g
    if g._shape_tuple is None or x._shape_tuple is None:
        # ranks unknown until compiled: broadcasting by an addition needs neither
        zeros = apply_op("ZerosLike", [x], name="ZerosLike").outputs[0]
        return apply_op("Add", [g, zeros], name="Add").outputs[0]
    lead = len(x._shape_tuple) - len(g._shape_tuple)
    if g_shape is not None:
        padded = (1,) * lead + g_shape
        if lead:
            g = apply_op("Reshape", [g, _int32(padded)], name="Reshape").outputs[0]
        if x_shape is not None:
            multiples = _int32([d // max(p, 1) for d, p in zip(x_shape, padded)])
            return apply_op("Tile", [g, multiples], name="Tile").outputs[0]
        divisor = _int32([max(p, 1) for p in padded])
    else:
        padded_t = shape_tensor(g)
        if lead:
            parts = [_int32([1] * lead), padded_t, _int32(0)]
            padded_t = apply_op("ConcatV2", parts, {"N": 2}).outputs[0]
            g = apply_op("Reshape", [g, padded_t], name="Reshape").outputs[0]
        divisor = apply_op("Maximum", [padded_t, _int32(1)]).outputs[0]
    x_shape_t = shape_tensor(x)
    multiples = apply_op("FloorDiv", [x_shape_t, divisor]).outputs[0]
    tiled = apply_op("Tile", [g, multiples], name="Tile").outputs[0]
    # the Tile's static shape is unknown (its multiples are known when compiling): restore it
    return apply_op("Reshape", [tiled, x_shape_t], name="Reshape").outputs[0]


def select(cond: Tensor, x: Any, y: Any) -> Tensor:
    """SelectV2 with NumPy broadcasting (tf.where would read a 1-D cond as picking rows)."""
    x, y = convert_operands(x, y)
    return apply_op("SelectV2", [cond, x, y], name="Select").outputs[0]


def _int32(value: Any) -> Tensor:
    return constant(np.array(value, np.int32))


def kept_dims_shape(x: Tensor, axes: Tensor) -> Tensor:
    """x's shape with the dims that `axes` reduce as 1: a reduction's shape with keep_dims."""
    value = constant_value(x.graph, (axes.op.name, axes.value_index))
    shape = x._shape_tuple
    if value is not None and shape is not None:
        reduced = {a % len(shape) for a in np.ravel(value).tolist()}
        dims = [1 if k in reduced else d for k, d in enumerate(shape)]
        if None not in dims:
            return _int32(dims)
        # known dims as constants, unknown ones as shape(x)[k]: Reshape still infers the former
        sizes = shape_tensor(x)
        parts = [_int32(d) if d is not None else _dim(sizes, k) for k, d in enumerate(dims)]
        return apply_op("Pack", parts, {"axis": 0, "N": len(parts)}, name="kept").outputs[0]
    # the axes are known only when compiling: a mask of the reduced dims from a one-hot
    sizes = shape_tensor(x)
    rank = apply_op("Size", [sizes], {"out_type": _dt.int32}).outputs[0]
    flat = apply_op("Reshape", [_as_int32(axes), _int32([-1])]).outputs[0]
    wrapped = apply_op("FloorMod", [flat, rank]).outputs[0]
    hot = apply_op("OneHot", [wrapped, rank, _int32(1), _int32(0)], {"axis": -1}).outputs[0]
    mask = apply_op("Sum", [hot, _int32([0])], {"keep_dims": False}).outputs[0]
    kept = apply_op("Mul", [sizes, apply_op("Sub", [_int32(1), mask]).outputs[0]]).outputs[0]
    return apply_op("Add", [kept, mask]).outputs[0]


def _dim(sizes: Tensor, k: int) -> Tensor:
    """sizes[k] as TF1's `tf.shape(x)[k]` builds it (a form static shape inference reads)."""
    attrs = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0}
    attrs["shrink_axis_mask"] = 1
    bounds = [_int32([k]), _int32([k + 1]), _int32([1])]
    return apply_op("StridedSlice", [sizes, *bounds], attrs, name="strided_slice").outputs[0]


def _as_int32(t: Tensor) -> Tensor:
    if t.dtype == _dt.int32:
        return t
    return apply_op("Cast", [t], {"SrcT": t.dtype, "DstT": _dt.int32}).outputs[0]
