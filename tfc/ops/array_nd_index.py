"""Array ops indexed by tuples of coordinates: GatherNd, ScatterNd, TensorScatterUpdate and kin.

An index tuple of length r names a slice of a tensor: its first r dims fixed, the rest whole.
GatherNd reads those slices, ScatterNd writes updates into zeros, the TensorScatter ops write
them into a copy of a tensor (replacing, adding, subtracting, or keeping the minimum or maximum).
A tuple outside the shape fails the run with TensorFlow's message. The variables' scatter ops
(tfc/ops/state_scatter.py) use the same kernel on a variable's buffer.

GatherNd and ScatterNd take a `batch_dims` attribute: the leading dims that the indices and the
tensor share, each index tuple addressing only its own batch entry. TensorFlow builds that form
of `tf.gather_nd` from range ops in Python; tfc gives it to the kernel (batch_gather, and the
gradients of both, use it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import shape_str
from tfc.ops.array_common import INDEX_DTYPES, int_list, shape_value
from tfc.ops.array_fill import zeros_like
from tfc.ops.array_shape import expand_dims
from tfc.ops.constant import convert_to_tensor, is_tensor_like
from tfc.ops.flops import no_flops, per_input_element
from tfc.ops.grad_ops import shape_tensor
from tfc.ops.kernels import Kernel, NdIndexSpec, Param, format_expr, table_entry
from tfc.ops.math import cast, negative
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = [
    "gather_nd",
    "batch_gather",
    "scatter_nd",
    "tensor_scatter_nd_update",
    "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub",
    "tensor_scatter_nd_min",
    "tensor_scatter_nd_max",
    "tensor_scatter_update",
    "tensor_scatter_add",
    "tensor_scatter_sub",
]

NUMERIC_DTYPES = _dt.NUMERIC


# -- the shared parts: index tuples, their messages, the scatter's update rules -------------------
def nd_index_message(lead: tuple, pos: int, values: Any, shape: tuple, what: str) -> str:
    """TF's message for tuple number `pos` (of the indices' leading dims `lead`), which lies
    outside `shape` (twin of runtime's tfc_error_nd_index)."""
    at = "" if not lead else "[" + ",".join(str(int(k)) for k in np.unravel_index(pos, lead)) + "]"
    tuple_ = ", ".join(str(int(v)) for v in np.ravel(values))
    return f"indices{at} = [{tuple_}] does not index into {what} {shape_str(shape)}"


def check_index_tuples(
    indices: np.ndarray, dims: tuple, shape: tuple, what: str, flat: bool = False
) -> np.ndarray:
    """The tuples of `indices` (last dim: the coordinates) as rows of int64, checked against
    `dims`: the first outside them fails the run (`flat`: the 1-D scatters' message)."""
    depth = indices.shape[-1]
    rows = indices.reshape(math.prod(indices.shape[:-1]), depth).astype(np.int64)
    bad = np.flatnonzero(((rows < 0) | (rows >= np.array(dims, np.int64))).any(axis=1))
    if bad.size:
        pos = int(bad[0])
        if flat:
            message = f"indices[{pos}] = {int(rows[pos, 0])} is not in [0, {dims[0]})"
        else:
            message = nd_index_message(indices.shape[:-1], pos, rows[pos], shape, what)
        raise errors.InvalidArgumentError(None, None, message)
    return rows


def linear_offsets(rows: np.ndarray, dims: tuple) -> np.ndarray:
    """Each tuple's slice number in the indexed dims, row-major."""
    strides = np.array([math.prod(dims[k + 1 :]) for k in range(len(dims))], np.int64)
    return rows @ strides if len(dims) else np.zeros(len(rows), np.int64)


def _merge_message(a: tuple | None, b: tuple | None) -> str | None:
    """Why two partial shapes do not merge (TF's wording), or None when they do."""
    if a is None or b is None:
        return None
    if len(a) != len(b):
        return f"Shapes must be equal rank, but are {len(a)} and {len(b)}"
    for k, (x, y) in enumerate(zip(a, b)):
        if x is not None and y is not None and x != y:
            return (
                f"Dimension {k} in both shapes must be equal, but are {x} and {y}. Shapes are "
                f"{shape_str(a)} and {shape_str(b)}."
            )
    return None


def check_scatter_shapes(
    ctx: OpContext,
    indices: tuple | None,
    updates: tuple | None,
    shape: tuple | None,
    batch_dims: int = 0,
) -> None:
    """TF's ScatterNdShapeHelper: updates must be indices.shape[:-1] + shape[r:], for index
    tuples of length r (after `batch_dims` leading dims, which all three share)."""
    if batch_dims:
        if updates is not None:
            why = _merge_message(
                tuple(updates[:batch_dims]), tuple(indices or updates)[:batch_dims]
            )
            if why is not None:
                raise ctx.error(f"The batch dimensions of updates and indices must be equal: {why}")
        strip = [None if s is None else tuple(s[batch_dims:]) for s in (indices, updates, shape)]
        return check_scatter_shapes(ctx, *strip)
    if shape is not None and None not in shape and math.prod(shape) == 0:
        if any(s is not None and None not in s and math.prod(s) > 0 for s in (indices, updates)):
            raise ctx.error("Indices and updates specified for empty input")
    if indices is None or updates is None or not indices or indices[-1] is None:
        return
    outer, r = len(indices) - 1, indices[-1]
    if shape is not None and r > len(shape):
        raise ctx.error(
            f"Index innermost dimension length must be <= tensor rank; saw: {r} vs. {len(shape)}"
        )
    why = _merge_message(tuple(indices[:outer]), tuple(updates[:outer]))
    if why is not None:
        raise ctx.error(
            f"Dimensions [0,{outer}) of indices[shape={shape_str(indices)}] = "
            f"{shape_str(indices[:outer])} must match dimensions [0,{outer}) of "
            f"updates[shape={shape_str(updates)}] = {shape_str(updates[:outer])}: {why}"
        )
    if shape is None:
        return
    why = _merge_message(tuple(shape[r:]), tuple(updates[outer:]))
    if why is not None:
        raise ctx.error(
            f"Dimensions [{r},{len(shape)}) of input[shape={shape_str(shape)}] = "
            f"{shape_str(shape[r:])} must match dimensions [{outer},{len(updates)}) of "
            f"updates[shape={shape_str(updates)}] = {shape_str(updates[outer:])}: {why}"
        )


class ScatterRule:
    """How a scatter combines a target element {a} with its update {b}: the C expression per
    dtype kind, a guard on the update (integer division by zero), and the NumPy twin applying
    all updates in order (`apply(out, offsets, rows)`: out's slices at `offsets` combined with
    the rows of updates)."""

    def __init__(
        self,
        exprs: dict[str, str],
        apply: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
        guard: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        self.exprs = exprs
        self.apply = apply
        self.guards = guard or {}

    def expr(self, dtype: _dt.DType) -> str:
        template = table_entry(self.exprs, dtype) or self.exprs.get("*")
        return format_expr(template, dtype, a="{a}", b="{b}")

    def guard(self, dtype: _dt.DType) -> tuple[str, str] | None:
        found = table_entry(self.guards, dtype)
        if found is None:
            return None
        return format_expr(found[0], dtype, b="{b}"), found[1]

    def check(self, updates: np.ndarray) -> None:
        for kind, (_, message) in self.guards.items():
            kinds = "iu" if kind == "i" else kind  # NumPy's kinds: "i" signed, "u" unsigned
            if updates.dtype.kind in kinds and (updates == 0).any():
                raise errors.InvalidArgumentError(None, None, message)


def _assign_last(out: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> None:
    """Plain assignment, the last update of a slice winning (as the kernel's order gives)."""
    _, last = np.unique(offsets[::-1], return_index=True)
    keep = len(offsets) - 1 - last
    out[offsets[keep]] = rows[keep]


def _ufunc_at(ufunc: np.ufunc) -> Callable:
    def apply(out: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            ufunc.at(out, offsets, rows.astype(out.dtype))

    return apply


def _divide_in_order(out: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> None:
    """Division, truncating for integers as C does (TF's scatter_div), one update at a time."""
    with np.errstate(all="ignore"):
        for k, row in zip(offsets.tolist(), rows):
            if out.dtype.kind == "f":
                out[k] = out[k] / row
            else:
                q = np.abs(out[k]) // np.abs(row)
                out[k] = np.where((out[k] < 0) != (row < 0), -q, q).astype(out.dtype)


SCATTER_RULES: dict[str, ScatterRule] = {
    "update": ScatterRule({"*": "{b}"}, _assign_last),
    "add": ScatterRule({"f": "{a} + {b}", "i": "tfc_add_{tag}({a}, {b})"}, _ufunc_at(np.add)),
    "sub": ScatterRule({"f": "{a} - {b}", "i": "tfc_sub_{tag}({a}, {b})"}, _ufunc_at(np.subtract)),
    "mul": ScatterRule({"f": "{a} * {b}", "i": "tfc_mul_{tag}({a}, {b})"}, _ufunc_at(np.multiply)),
    "div": ScatterRule(
        {"f": "{a} / {b}", "i": "tfc_truncdiv_{tag}({a}, {b})"},
        _divide_in_order,
        guard={"i": ("{b} == 0", "Integer division by zero")},
    ),
    "min": ScatterRule(
        {"f": "tfc_min_{tag}({a}, {b})", "i": "({b} < {a} ? {b} : {a})"}, _ufunc_at(np.minimum)
    ),
    "max": ScatterRule(
        {"f": "tfc_max_{tag}({a}, {b})", "i": "({b} > {a} ? {b} : {a})"}, _ufunc_at(np.maximum)
    ),
}


def scatter_reference(
    target: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    rule: ScatterRule,
    batch_dims: int = 0,
    flat: bool = False,
) -> np.ndarray:
    """`target` (changed in place) with the updates applied at the index tuples; the twin of the
    scatter_nd kernel: every index checked first, then the updates in order."""
    shape = target.shape
    depth = indices.shape[-1]
    dims = shape[batch_dims : batch_dims + depth]
    rows = check_index_tuples(indices, dims, shape, "shape", flat)
    rule.check(updates)
    batch = math.prod(shape[:batch_dims])
    per_batch = math.prod(dims)
    inner = math.prod(shape[batch_dims + depth :])
    offsets = linear_offsets(rows, dims)
    if batch_dims:
        count = len(rows) // max(batch, 1)
        offsets = offsets + np.repeat(np.arange(batch, dtype=np.int64) * per_batch, count)
    slices = target.reshape(batch * per_batch, inner)
    if updates.ndim == 0:
        values = np.broadcast_to(updates, (len(rows), inner))
    else:
        values = updates.reshape(len(rows), inner)
    rule.apply(slices, offsets, values)
    return target


def as_updates(updates: Any, dtype: _dt.DType) -> Tensor:
    """Updates as a tensor: Python values in the target's dtype; a tensor as it is (the op's
    shape rule reports a dtype that differs, as TF does)."""
    if is_tensor_like(updates):
        return convert_to_tensor(updates, name="updates")
    return convert_to_tensor(updates, dtype=dtype, name="updates")


def _kernel_sizes(tensor_shape: tuple, indices: tuple, batch_dims: int) -> dict:
    """The sizes of a gather_nd or scatter_nd kernel over concrete shapes."""
    depth = indices[-1]
    dims = tuple(tensor_shape[batch_dims : batch_dims + depth])
    return {
        "batch": math.prod(tensor_shape[:batch_dims]),
        "batch_stride": math.prod(tensor_shape[batch_dims:]),
        "count": math.prod(indices[batch_dims:-1]),
        "lead": tuple(indices[:-1]),
        "dims": dims,
        "inner": math.prod(tensor_shape[batch_dims + depth :]),
        "shape": tuple(tensor_shape),
    }


def _batch_dims(ctx: OpContext, tensor: tuple | None, indices: tuple | None) -> tuple:
    """The batch dims of `tensor` and `indices` merged, checked against the ranks."""
    b = int(ctx.attrs.get("batch_dims", 0))
    if b < 0:
        raise ctx.error(f"batch_dims must be non-negative, got {b}")
    if b == 0:
        return ()
    if indices is not None and b >= len(indices):
        raise ctx.error(f"batch_dims ({b}) must be less than rank(indices) ({len(indices)})")
    if tensor is not None and b >= len(tensor):
        raise ctx.error(f"batch_dims ({b}) must be less than rank(params) ({len(tensor)})")
    if tensor is None or indices is None:
        return (None,) * b
    why = _merge_message(tuple(tensor[:b]), tuple(indices[:b]))
    if why is not None:
        raise ctx.error(f"The batch dimensions of params and indices must be equal: {why}")
    return tuple(x if x is not None else y for x, y in zip(tensor[:b], indices[:b]))


def _batch_attr(op) -> int:
    return int(op.node_def.attr.get("batch_dims", 0))


def _index_dtype(ctx: OpContext, i: int) -> None:
    check_dtype(ctx, i, INDEX_DTYPES, "indices")
    shape = ctx.in_shapes[i]
    if shape is not None and len(shape) == 0:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")


# -- GatherNd -------------------------------------------------------------------------------------
def _gather_nd_infer(ctx: OpContext) -> list:
    _index_dtype(ctx, 1)
    params, indices = ctx.in_shapes
    dtype = ctx.in_dtypes[0]
    batch = _batch_dims(ctx, params, indices)
    b = len(batch)
    if indices is None or indices[-1] is None:
        return [(dtype, None)]
    r = indices[-1]
    if params is not None and b + r > len(params):
        raise ctx.error(
            f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
            f"{shape_str(indices)} and params shape: {shape_str(params)}"
        )
    if params is None:
        return [(dtype, None)]
    return [(dtype, batch + tuple(indices[b:-1]) + tuple(params[b + r :]))]


def _gather_nd_reference(ctx: OpContext, params: np.ndarray, indices: np.ndarray) -> np.ndarray:
    b = int(ctx.attrs.get("batch_dims", 0))
    depth = indices.shape[-1]
    dims = params.shape[b : b + depth]
    rows = check_index_tuples(indices, dims, params.shape, "param shape")
    batch = math.prod(params.shape[:b])
    slices = params.reshape(batch, math.prod(dims), math.prod(params.shape[b + depth :]))
    offsets = linear_offsets(rows, dims).reshape(batch, math.prod(indices.shape[b:-1]))
    picked = slices[np.arange(batch)[:, None], offsets]
    return np.array(picked.reshape(ctx.out_shapes[0]))


def _gather_nd_lower(ctx: OpContext) -> list:
    params, indices = ctx.in_shapes
    b = int(ctx.attrs.get("batch_dims", 0))
    sizes = _kernel_sizes(params, indices, b)
    if sizes["batch"] * sizes["count"] == 0:
        return []  # no index tuple to check, nothing to copy
    dtype = ctx.in_dtypes[0]
    spec = NdIndexSpec(dtype, ctx.in_dtypes[1], shape_what="param shape", **sizes)
    kernel_params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    return [Kernel("gather_nd", kernel_params, spec, can_fail=True)]


def _gather_nd_grad(op, dy: Tensor) -> list:
    """dy's slices added into zeros at their tuples: ScatterNd."""
    params, indices = op.inputs
    shape = shape_tensor(params)
    if indices.dtype != shape.dtype:
        shape = cast(shape, indices.dtype)
    attrs = {"batch_dims": _batch_attr(op)}
    return [apply_op("ScatterNd", [indices, dy, shape], attrs).outputs[0], None]


register(
    OpDef(
        "GatherNd",
        dtypes=_dt.STORABLE,
        infer=_gather_nd_infer,
        reference=_gather_nd_reference,
        lower=_gather_nd_lower,
        flops=no_flops,
        grad=_gather_nd_grad,
        input_names=("params", "indices"),
    )
)


def gather_nd(params: Any, indices: Any, name: str | None = None, batch_dims: int = 0) -> Tensor:
    """`tf.gather_nd`: the slices of `params` that the tuples in `indices`' last dim name;
    `batch_dims` leading dims pair each batch entry's tuples with its own params. A tuple
    outside params' shape fails the run with InvalidArgumentError, as in TensorFlow on CPU."""
    with name_scope(name, "GatherNd", [params, indices]) as scope:
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        attrs = {"batch_dims": int(batch_dims)}
        return apply_op("GatherNd", [params, indices], attrs, name=scope).outputs[0]


def batch_gather(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """`tf.batch_gather` (TF1): gather along the dim after the batch dims that `indices` and
    `params` share (every dim of indices but its last)."""
    with name_scope(name, "BatchGather", [params, indices]):
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        shape = indices._shape_tuple
        if shape is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        if len(shape) == 0:
            raise ValueError("batch_gather needs indices of rank 1 or more, got a scalar.")
        return gather_nd(params, expand_dims(indices, -1), batch_dims=len(shape) - 1)


# -- ScatterNd (into zeros) -----------------------------------------------------------------------
def _scatter_nd_infer(ctx: OpContext) -> list:
    _index_dtype(ctx, 0)
    if ctx.in_dtypes[2] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input 'shape' of 'ScatterNd' Op has type {ctx.in_dtypes[2].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument 'indices'."
        )
    vector = ctx.in_shapes[2]
    if vector is not None and len(vector) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(vector)}")
    shape = shape_value(ctx, 2)
    if shape is not None and any(d is not None and d < 0 for d in shape):
        raise ctx.error(f"Dimensions must be non-negative, got shape {shape_str(shape)}")
    indices, updates = ctx.in_shapes[0], ctx.in_shapes[1]
    batch = _batch_dims(ctx, shape, indices)
    check_scatter_shapes(ctx, indices, updates, shape, len(batch))
    if shape is not None and batch:
        shape = batch + tuple(shape[len(batch) :])
    return [(ctx.in_dtypes[1], shape)]


def _scatter_nd_reference(ctx, indices: np.ndarray, updates: np.ndarray, shape) -> np.ndarray:
    out = np.zeros(tuple(int_list(shape)), updates.dtype)
    b = int(ctx.attrs.get("batch_dims", 0))
    return scatter_reference(out, indices, updates, SCATTER_RULES["add"], b)


def scatter_kernel(
    ctx: OpContext,
    target_shape: tuple,
    indices: tuple,
    index_buf: str,
    updates_buf: str,
    rule: str,
    init: str | None,
    batch_dims: int = 0,
    flat: bool = False,
) -> list:
    """The scatter_nd kernel writing output 0 (a variable's buffer, for the ref ops)."""
    dtype = ctx.out_dtypes[0]
    sizes = _kernel_sizes(target_shape, indices, batch_dims)
    total = math.prod(target_shape)
    if sizes["batch"] * sizes["count"] == 0 and (init is None or total == 0):
        return []
    updates_shape = ctx.in_shapes[int(updates_buf[2:])]
    scatter = SCATTER_RULES[rule]
    spec = NdIndexSpec(
        dtype,
        ctx.in_dtypes[int(index_buf[2:])],
        init=init,
        update=scatter.expr(dtype),
        update_guard=scatter.guard(dtype),
        scalar_updates=len(updates_shape) == 0,
        flat_index=flat,
        total=total,
        **sizes,
    )
    params = [Param("y", dtype.c_type, False, "out0")]
    if init == "input":
        params.append(Param("x", dtype.c_type, True, "in0"))
    params += [
        Param("idx", ctx.in_dtypes[int(index_buf[2:])].c_type, True, index_buf),
        Param("u", dtype.c_type, True, updates_buf),
    ]
    return [Kernel("scatter_nd", params, spec, can_fail=True)]


def _scatter_nd_lower(ctx: OpContext) -> list:
    b = int(ctx.attrs.get("batch_dims", 0))
    return scatter_kernel(ctx, ctx.out_shapes[0], ctx.in_shapes[0], "in0", "in1", "add", "zeros", b)


def _scatter_nd_grad(op, dy: Tensor) -> list:
    indices = op.inputs[0]
    return [None, gather_nd(dy, indices, batch_dims=_batch_attr(op)), None]


register(
    OpDef(
        "ScatterNd",
        dtypes=_dt.NUMERIC,
        computes_in=HALVES_IN_FLOAT32,
        infer=_scatter_nd_infer,
        reference=_scatter_nd_reference,
        lower=_scatter_nd_lower,
        flops=per_input_element(1, 1),
        grad=_scatter_nd_grad,
        const_inputs=(2,),
        input_names=("indices", "updates", "shape"),
    )
)


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.scatter_nd`: zeros of `shape` with `updates` added at the index tuples (repeated
    tuples add up). A tuple outside `shape` fails the run with InvalidArgumentError."""
    with name_scope(name, "ScatterNd", [indices, updates, shape]) as scope:
        indices = convert_to_tensor(indices, name="indices")
        updates = convert_to_tensor(updates, name="updates")
        shape = convert_to_tensor(shape, dtype=indices.dtype, name="shape")
        attrs = {"batch_dims": 0}
        return apply_op("ScatterNd", [indices, updates, shape], attrs, name=scope).outputs[0]


# -- TensorScatterUpdate, -Add, -Sub, -Min, -Max --------------------------------------------------
def _tensor_scatter_infer(ctx: OpContext) -> list:
    _index_dtype(ctx, 1)
    rule = ctx.type.removeprefix("TensorScatter").lower()
    if rule != "update":
        check_dtype(ctx, 0, NUMERIC_DTYPES, "tensor")
    if ctx.in_dtypes[2] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input 'updates' of '{ctx.type}' Op has type {ctx.in_dtypes[2].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument 'tensor'."
        )
    tensor, indices, updates = ctx.in_shapes
    check_scatter_shapes(ctx, indices, updates, tensor)
    return [(ctx.in_dtypes[0], tensor)]


def _tensor_scatter_reference(rule: str) -> Callable:
    def reference(ctx, tensor: np.ndarray, indices: np.ndarray, updates: np.ndarray):
        return scatter_reference(np.array(tensor, copy=True), indices, updates, SCATTER_RULES[rule])

    return reference


def _tensor_scatter_lower(rule: str) -> Callable:
    def lower(ctx: OpContext) -> list:
        return scatter_kernel(ctx, ctx.in_shapes[0], ctx.in_shapes[1], "in1", "in2", rule, "input")

    return lower


def _tensor_scatter_update_grad(op, dy: Tensor) -> list:
    """The replaced elements' gradient goes to the updates, the others' to the tensor."""
    _, indices, updates = op.inputs
    cleared = tensor_scatter_nd_update(dy, indices, zeros_like(updates))
    return [cleared, None, gather_nd(dy, indices)]


def _tensor_scatter_extremum_grad(op, dy: Tensor) -> list:
    """TF's rule for TensorScatterMin/Max: the gradient is shared among the tensor's element
    and the updates that equal the result, as ties of a maximum share it."""
    x, indices, y = op.inputs
    out = op.outputs[0]
    x_hits = cast(apply_op("Equal", [x, out]).outputs[0], dy.dtype)
    y_hits = cast(apply_op("Equal", [y, gather_nd(out, indices)]).outputs[0], dy.dtype)
    shape = shape_tensor(x)
    if indices.dtype != shape.dtype:
        shape = cast(shape, indices.dtype)
    hits = x_hits + scatter_nd(indices, y_hits, shape)  # each element's count of ties, >= 1
    share = apply_op("RealDiv", [dy, hits]).outputs[0]
    return [share * x_hits, None, gather_nd(share, indices) * y_hits]


_TENSOR_SCATTER_GRADS = {
    "update": _tensor_scatter_update_grad,
    "add": lambda op, dy: [dy, None, gather_nd(dy, op.inputs[1])],
    "sub": lambda op, dy: [dy, None, negative(gather_nd(dy, op.inputs[1]))],
    "min": _tensor_scatter_extremum_grad,
    "max": _tensor_scatter_extremum_grad,
}
for _rule, _grad in _TENSOR_SCATTER_GRADS.items():
    register(
        OpDef(
            f"TensorScatter{_rule.capitalize()}",
            infer=_tensor_scatter_infer,
            reference=_tensor_scatter_reference(_rule),
            lower=_tensor_scatter_lower(_rule),
            dtypes=_dt.STORABLE if _rule == "update" else _dt.NUMERIC,
            computes_in=None if _rule == "update" else HALVES_IN_FLOAT32,
            flops=no_flops if _rule == "update" else per_input_element(1, 2),
            grad=_grad,
            inplace=lambda ctx: [0],  # the kernel copies the tensor element by element first
            input_names=("tensor", "indices", "updates"),
        )
    )


def _tensor_scatter(op_type: str, tensor: Any, indices: Any, updates: Any, name: Any) -> Tensor:
    with name_scope(name, op_type, [tensor, indices, updates]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        indices = convert_to_tensor(indices, name="indices")
        updates = as_updates(updates, tensor.dtype)
        return apply_op(op_type, [tensor, indices, updates], name=scope).outputs[0]


def tensor_scatter_nd_update(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """`tf.tensor_scatter_nd_update`: a copy of `tensor` with the slices at the index tuples
    replaced by `updates` (a repeated tuple: the last update wins)."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """`tf.tensor_scatter_nd_add`: a copy of `tensor` with `updates` added at the tuples."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """`tf.tensor_scatter_nd_sub`: a copy of `tensor` with `updates` subtracted at the tuples."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_min(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """`tf.tensor_scatter_nd_min`: the element-wise minimum of `tensor` and the updates."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


def tensor_scatter_nd_max(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """`tf.tensor_scatter_nd_max`: the element-wise maximum of `tensor` and the updates."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


# TF1's earlier names of the same functions
tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub
