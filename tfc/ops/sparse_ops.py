"""The ops of tf.sparse that rearrange SparseTensors: reorder, reshape, concat, slice, split,
add, maximum/minimum, softmax, fill_empty_rows, merge, to_indicator, reset_shape, and
SparseToDense.

Most of them give as many entries as their input values decide (a slice keeps the entries
inside it, an addition merges equal coordinates), so they run in a Session's Python stage with
their NumPy references, as tf.unique does (tfc/ops/array_dynamic.py), and native builds
refuse them naming the op. Those whose result has a shape fixed when compiling are built from
native ops where tfc has them: sparse_retain and from_dense (a Where and gathers),
sparse_transpose (a column gather, then a reorder), sparse_to_dense of a dense_shape known
when compiling (a ScatterNd). The arithmetic that mixes sparse and dense operands
(matmul, segment sums, lookups, edit distances) is tfc/ops/sparse_math.py, the reductions
tfc/ops/sparse_reduce.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.check_ops as check_ops
import tfc.ops.math as _math
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, control_dependencies, name_scope
from tfc.ops.array_dynamic import setdiff1d
from tfc.ops.array_index import gather
from tfc.ops.array_nd_index import gather_nd, scatter_nd
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.indexed_slices import IndexedSlices
from tfc.ops.logic import not_equal, where_indices
from tfc.ops.registry import (
    VALUE_DEPENDENT_REASON,
    OpContext,
    OpDef,
    apply_op,
    constant_value,
    register,
)
from tfc.ops.sequences import range as _range
from tfc.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = [
    "sparse_add",
    "sparse_concat",
    "sparse_fill_empty_rows",
    "sparse_mask",
    "sparse_maximum",
    "sparse_minimum",
    "sparse_merge",
    "sparse_to_indicator",
    "sparse_reset_shape",
    "sparse_reorder",
    "sparse_reshape",
    "sparse_retain",
    "sparse_slice",
    "sparse_softmax",
    "sparse_split",
    "sparse_tensor_to_dense",
    "sparse_to_dense",
    "sparse_transpose",
]

# ops whose output size is fixed but tfc has no native kernel for (a sort, a grouped softmax)
NO_KERNEL_REASON = "tfc has no native kernel for it (a Session runs it in a Python stage)"
_I64 = _dt.int64


def as_sparse(value: Any, what: str = "sp_input") -> SparseTensor:
    """`value` as a SparseTensor (a SparseTensorValue becomes one of constants)."""
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if not isinstance(value, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(value).__name__} for {what}")
    return value


def _register(
    name: str,
    infer: Any,
    reference: Any,
    inputs: Sequence[str],
    reason: str = VALUE_DEPENDENT_REASON,
    grad: Any = None,
) -> None:
    register(
        OpDef(
            name,
            infer=infer,
            reference=reference,
            grad=grad,
            differentiable=grad is not None,
            in_python=reason,
            dtypes=_dt.STORABLE,
            input_names=tuple(inputs),
        )
    )


def dense_rank(ctx: OpContext, shape_input: int) -> int | None:
    """The rank of a SparseTensor whose dense_shape is input `shape_input`, when known."""
    shape = ctx.in_shapes[shape_input]
    return None if shape is None else shape[0]


def row_major_order(indices: np.ndarray) -> np.ndarray:
    """The permutation that puts coordinates in row-major order (stable)."""
    if indices.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.lexsort(indices.T[::-1])


def invalid_argument(ctx: OpContext, message: str) -> errors.InvalidArgumentError:
    """The run-time error of a sparse op's reference, naming the node."""
    return errors.InvalidArgumentError(
        None, None, f"{message} (op '{ctx.name}' of type {ctx.type})"
    )


def _check_indices(ctx: OpContext, indices: np.ndarray, shape: np.ndarray) -> None:
    bad = (indices < 0) | (indices >= shape)
    if bad.any():
        i = int(np.argwhere(bad.any(axis=1))[0][0])
        raise invalid_argument(
            ctx,
            f"indices[{i}] = {indices[i].tolist()} is out of bounds: need 0 <= index < "
            f"{shape.tolist()}",
        )


def _sparse_outputs(op: Operation, shape: Any) -> SparseTensor:
    return SparseTensor(op.outputs[0], op.outputs[1], shape)


# -- SparseToDense ------------------------------------------------------------------------------
def _to_dense_infer(ctx: OpContext) -> list:
    known = ctx.const(1)
    rank = dense_rank(ctx, 1)
    shape = (
        tuple(int(d) for d in known)
        if known is not None
        else (None if rank is None else (None,) * rank)
    )
    return [(ctx.in_dtypes[2], shape)]


def _to_dense_reference(ctx: OpContext, indices, shape, values, default) -> np.ndarray:
    shape = np.asarray(shape, np.int64).reshape(-1)
    indices = np.asarray(indices, np.int64).reshape(-1, len(shape))
    out = np.full(tuple(shape), default, dtype=ctx.in_dtypes[2].np)
    values = np.broadcast_to(values, (indices.shape[0],))
    _check_indices(ctx, indices, shape)
    if ctx.attrs.get("validate_indices", True) and indices.shape[0] > 1:
        linear = np.ravel_multi_index(tuple(indices.T), tuple(shape)) if shape.size else indices
        if (np.diff(linear) <= 0).any():
            raise invalid_argument(
                ctx, "indices are not in lexicographic order or hold a repeated index"
            )
    if indices.shape[0]:
        out[tuple(indices.T)] = values
    return out


def _to_dense_grad(op: Operation, dy: Tensor) -> list:
    indices, values = op.inputs[0], op.inputs[2]
    picked = gather_nd(dy, indices)
    if values.shape.rank == 0:
        picked_total = _reduce.reduce_sum(picked)
        return [None, None, picked_total, _reduce.reduce_sum(dy) - picked_total]
    return [None, None, picked, _reduce.reduce_sum(dy) - _reduce.reduce_sum(picked)]


_register(
    "SparseToDense",
    _to_dense_infer,
    _to_dense_reference,
    ("sparse_indices", "output_shape", "sparse_values", "default_value"),
    reason="its output shape is a run-time value (a dense_shape known when compiling makes "
    "it a native ScatterNd)",
    grad=_to_dense_grad,
)


def sparse_to_dense(
    sparse_indices: Any,
    output_shape: Any,
    sparse_values: Any,
    default_value: Any = 0,
    validate_indices: bool = True,
    name: str | None = None,
) -> Tensor:
    """`tf.sparse_to_dense`: a dense tensor of `output_shape` holding `sparse_values` (a
    vector, or one scalar for all) at `sparse_indices` and `default_value` elsewhere.

    With an output_shape known when compiling it is a native ScatterNd, which checks each
    index against the shape but not their order (TF's validate_indices): repeated indices
    add up there. With a run-time output_shape it runs in Python and checks both, as TF."""
    with name_scope(name, "SparseToDense", [sparse_indices, sparse_values]) as scope:
        indices = convert_to_tensor(sparse_indices, name="sparse_indices")
        shape = convert_to_tensor(output_shape, dtype=indices.dtype, name="output_shape")
        values = convert_to_tensor(sparse_values, name="sparse_values")
        default = convert_to_tensor(default_value, dtype=values.dtype, name="default_value")
        if indices.shape.rank is not None and indices.shape.rank < 2:
            indices = _array.reshape(indices, [-1, 1])
        known = constant_value(shape.graph, (shape.op.name, shape.value_index))
        if known is not None and values.shape.rank == 1 and values.dtype in _dt.NUMERIC:
            # the output's size is known when compiling: a native scatter; its gradient is a
            # gather_nd of the incoming one, and the default's the sum of what it fills. The
            # shape becomes a Const, which every stage of a program cut by Python stages holds
            shape = constant(np.asarray(known), shape.dtype)
            filled = scatter_nd(indices, values, shape)
            mask = scatter_nd(indices, _array.ones_like(values), shape)
            default_part = _math.multiply(default, 1 - mask)
            return _math.add(filled, default_part, name=scope)
        attrs = {"validate_indices": bool(validate_indices)}
        op = apply_op("SparseToDense", [indices, shape, values, default], attrs, name=scope)
        return op.outputs[0]


def sparse_tensor_to_dense(
    sp_input: Any, default_value: Any = 0, validate_indices: bool = True, name: str | None = None
) -> Tensor:
    """`tf.sparse_tensor_to_dense` (tf.sparse.to_dense): the dense tensor of a SparseTensor,
    `default_value` where it has no entry."""
    sp = as_sparse(sp_input)
    return sparse_to_dense(
        sp.indices, sp.dense_shape, sp.values, default_value, validate_indices, name=name
    )


# -- SparseReorder ------------------------------------------------------------------------------
def _reorder_infer(ctx: OpContext) -> list:
    return [(_I64, ctx.in_shapes[0]), (ctx.in_dtypes[1], ctx.in_shapes[1])]


def _reorder_reference(ctx: OpContext, indices, values, shape) -> list:
    order = row_major_order(indices)
    return [indices[order], values[order]]


_register(
    "SparseReorder",
    _reorder_infer,
    _reorder_reference,
    ("input_indices", "input_values", "input_shape"),
    reason=NO_KERNEL_REASON,
)


def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_reorder`: the same SparseTensor with its entries in row-major order."""
    sp = as_sparse(sp_input)
    op = apply_op("SparseReorder", list(sp.components()), name=name or "SparseReorder")
    return _sparse_outputs(op, sp.dense_shape)


# -- SparseReshape ------------------------------------------------------------------------------
def _reshape_infer(ctx: OpContext) -> list:
    n = None if ctx.in_shapes[0] is None else ctx.in_shapes[0][0]
    rank = dense_rank(ctx, 2)
    return [(_I64, (n, rank)), (_I64, (rank,))]


def _reshape_reference(ctx: OpContext, indices, shape, new_shape) -> list:
    new_shape = np.asarray(new_shape, np.int64).copy()
    total = int(np.prod(shape))
    unknown = np.flatnonzero(new_shape == -1)
    if len(unknown) > 1:
        raise invalid_argument(ctx, "only one output dimension may be -1")
    if len(unknown):
        known = int(np.prod(np.delete(new_shape, unknown)))
        if known == 0 or total % known:
            raise invalid_argument(
                ctx, f"cannot infer the -1 of {new_shape.tolist()} for {total} elements"
            )
        new_shape[unknown[0]] = total // known
    if int(np.prod(new_shape)) != total:
        raise invalid_argument(
            ctx,
            f"Input to reshape is a tensor with {total} dense values, but the requested shape "
            f"has {int(np.prod(new_shape))}",
        )
    if indices.shape[0] == 0:
        return [np.zeros((0, len(new_shape)), np.int64), new_shape]
    linear = np.ravel_multi_index(tuple(indices.T), tuple(shape))
    out = np.stack(np.unravel_index(linear, tuple(new_shape)), axis=1).astype(np.int64)
    return [out, new_shape]


_register(
    "SparseReshape",
    _reshape_infer,
    _reshape_reference,
    ("input_indices", "input_shape", "new_shape"),
    reason="its output shape's -1 is a run-time value",
)


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_reshape`: the same entries in a dense shape of as many elements (one -1)."""
    sp = as_sparse(sp_input)
    with name_scope(name, "SparseReshape", [sp.indices]) as scope:
        new_shape = convert_to_tensor(shape, dtype=_I64, name="shape")
        op = apply_op("SparseReshape", [sp.indices, sp.dense_shape, new_shape], name=scope)
    return SparseTensor(op.outputs[0], sp.values, op.outputs[1])


# -- SparseConcat -------------------------------------------------------------------------------
def _concat_infer(ctx: OpContext) -> list:
    n = ctx.attrs["N"]
    rank = next((dense_rank(ctx, 2 * n + i) for i in range(n) if dense_rank(ctx, 2 * n + i)), None)
    return [(_I64, (None, rank)), (ctx.in_dtypes[n], (None,)), (_I64, (rank,))]


def _concat_reference(ctx: OpContext, *parts) -> list:
    n, dim = ctx.attrs["N"], ctx.attrs["concat_dim"]
    indices, values, shapes = parts[:n], parts[n : 2 * n], parts[2 * n :]
    rank = len(shapes[0])
    dim = dim + rank if dim < 0 else dim
    out_shape = np.array(shapes[0], np.int64)
    moved = []
    offset = 0
    for i, shape in enumerate(shapes):
        if len(shape) != rank or (np.delete(shape, dim) != np.delete(out_shape, dim)).any():
            raise invalid_argument(
                ctx,
                f"Input shapes must match: expected {out_shape.tolist()} apart from dimension "
                f"{dim}, got {np.asarray(shape).tolist()} for input {i}",
            )
        shifted = np.array(indices[i], np.int64).reshape(-1, rank)
        shifted[:, dim] += offset
        moved.append(shifted)
        offset += int(shape[dim])
    out_shape[dim] = offset
    all_indices = np.concatenate(moved) if moved else np.zeros((0, rank), np.int64)
    all_values = np.concatenate([np.asarray(v) for v in values])
    order = row_major_order(all_indices)
    return [all_indices[order], all_values[order], out_shape]


_register(
    "SparseConcat",
    _concat_infer,
    _concat_reference,
    ("indices", "values", "shapes"),
)


def sparse_concat(
    axis: int,
    sp_inputs: Sequence[Any],
    name: str | None = None,
    expand_nonconcat_dim: bool = False,
    concat_dim: int | None = None,
) -> SparseTensor:
    """`tf.sparse_concat`: SparseTensors joined along `axis` (their other dimensions equal),
    entries in row-major order."""
    if expand_nonconcat_dim:
        raise NotImplementedError("tf.sparse_concat: expand_nonconcat_dim=True is not supported")
    axis = concat_dim if concat_dim is not None else axis
    sps = [as_sparse(s) for s in sp_inputs]
    inputs = [s.indices for s in sps] + [s.values for s in sps] + [s.dense_shape for s in sps]
    # T is kept (TF's attribute): the values are inputs N..2N-1, which no derived rule names
    attrs = {"N": len(sps), "concat_dim": int(axis), "T": sps[0].dtype}
    op = apply_op("SparseConcat", inputs, attrs, name=name or "SparseConcat")
    return SparseTensor(*op.outputs)


# -- SparseSlice, SparseSplit -------------------------------------------------------------------
def _slice_infer(ctx: OpContext) -> list:
    rank = dense_rank(ctx, 2)
    return [(_I64, (None, rank)), (ctx.in_dtypes[1], (None,)), (_I64, (rank,))]


def _slice_of(indices, values, shape, start, size) -> list:
    start = np.asarray(start, np.int64)
    end = np.minimum(start + np.asarray(size, np.int64), shape)
    keep = ((indices >= start) & (indices < end)).all(axis=1)
    return [indices[keep] - start, values[keep], np.maximum(end - start, 0).astype(np.int64)]


def _slice_reference(ctx: OpContext, indices, values, shape, start, size) -> list:
    return _slice_of(indices, values, shape, start, size)


_register(
    "SparseSlice",
    _slice_infer,
    _slice_reference,
    ("indices", "values", "shape", "start", "size"),
)


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse.slice`: the entries inside the box at `start` of `size` (clipped to the
    dense shape), their coordinates relative to `start`."""
    sp = as_sparse(sp_input)
    with name_scope(name, "SparseSlice", [sp.indices]) as scope:
        start = convert_to_tensor(start, dtype=_I64, name="start")
        size = convert_to_tensor(size, dtype=_I64, name="size")
        op = apply_op("SparseSlice", [*sp.components(), start, size], name=scope)
    return SparseTensor(*op.outputs)


def _split_infer(ctx: OpContext) -> list:
    k, rank = ctx.attrs["num_split"], dense_rank(ctx, 3)
    return [(_I64, (None, rank))] * k + [(ctx.in_dtypes[2], (None,))] * k + [(_I64, (rank,))] * k


def _split_reference(ctx: OpContext, split_dim, indices, values, shape) -> list:
    k, rank = ctx.attrs["num_split"], len(shape)
    dim = int(split_dim) + rank if int(split_dim) < 0 else int(split_dim)
    if not 0 <= dim < rank:
        raise invalid_argument(ctx, f"split_dim {int(split_dim)} is out of range for rank {rank}")
    total = int(shape[dim])
    if k > total:
        raise invalid_argument(ctx, f"num_split {k} is larger than dimension {dim} of size {total}")
    # TF's split: the first (total % k) pieces are one longer
    sizes = [total // k + (1 if i < total % k else 0) for i in range(k)]
    parts, begin = [], 0
    for size in sizes:
        start = np.zeros(rank, np.int64)
        start[dim] = begin
        box = np.array(shape, np.int64)
        box[dim] = size
        parts.append(_slice_of(indices, values, shape, start, box))
        begin += size
    return [p[0] for p in parts] + [p[1] for p in parts] + [p[2] for p in parts]


_register(
    "SparseSplit",
    _split_infer,
    _split_reference,
    ("split_dim", "indices", "values", "shape"),
)


def sparse_split(
    keyword_required: Any = None,
    sp_input: Any = None,
    num_split: int | None = None,
    axis: int | None = None,
    name: str | None = None,
    split_dim: int | None = None,
) -> list[SparseTensor]:
    """`tf.sparse_split`: `num_split` SparseTensors along `axis` (the first ones one longer
    when the dimension does not divide evenly)."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None or num_split is None:
        raise ValueError("sp_input and num_split are required")
    axis = split_dim if axis is None else axis
    if axis is None:
        raise ValueError("axis is required")
    sp = as_sparse(sp_input)
    attrs = {"num_split": int(num_split)}
    dim = constant(int(axis), _I64)
    op = apply_op("SparseSplit", [dim, *sp.components()], attrs, name=name or "SparseSplit")
    k = int(num_split)
    outs = op.outputs
    return [SparseTensor(outs[i], outs[k + i], outs[2 * k + i]) for i in range(k)]


# -- SparseAdd, SparseSparseMaximum/Minimum -----------------------------------------------------
def _merge(a_indices, a_values, b_indices, b_values) -> tuple:
    """The union of two sets of coordinates in row-major order, and each side's values there
    (with whether it has one)."""
    rank = a_indices.shape[1] if a_indices.ndim == 2 else b_indices.shape[1]
    union = np.unique(np.concatenate([a_indices, b_indices]).reshape(-1, rank), axis=0)
    keys = {tuple(row): i for i, row in enumerate(union.tolist())}
    a_full = np.zeros(len(union), a_values.dtype)
    b_full = np.zeros(len(union), b_values.dtype)
    a_has = np.zeros(len(union), bool)
    b_has = np.zeros(len(union), bool)
    for full, has, idx, vals in (
        (a_full, a_has, a_indices, a_values),
        (b_full, b_has, b_indices, b_values),
    ):
        for row, value in zip(idx.tolist(), vals):
            k = keys[tuple(row)]
            full[k] += value
            has[k] = True
    return union.astype(np.int64), a_full, a_has, b_full, b_has


def _check_same_shape(ctx: OpContext, a_shape, b_shape) -> None:
    if np.asarray(a_shape).tolist() != np.asarray(b_shape).tolist():
        raise invalid_argument(
            ctx,
            f"Operands' shapes do not match: {np.asarray(a_shape).tolist()} vs. "
            f"{np.asarray(b_shape).tolist()}",
        )


def _add_infer(ctx: OpContext) -> list:
    rank = dense_rank(ctx, 2) or dense_rank(ctx, 5)
    return [(_I64, (None, rank)), (ctx.in_dtypes[1], (None,)), (_I64, (rank,))]


def _add_reference(ctx: OpContext, ai, av, ashape, bi, bv, bshape, thresh) -> list:
    _check_same_shape(ctx, ashape, bshape)
    union, a, a_has, b, b_has = _merge(ai, av, bi, bv)
    total = a + b
    # TF's kernel drops a sum below the threshold only where both operands have an entry
    keep = ~(a_has & b_has) | (np.abs(total) >= thresh)
    return [union[keep], total[keep].astype(av.dtype), np.asarray(ashape, np.int64)]


_register(
    "SparseAdd",
    _add_infer,
    _add_reference,
    ("a_indices", "a_values", "a_shape", "b_indices", "b_values", "b_shape", "thresh"),
)


def sparse_add(a: Any, b: Any, threshold: Any = 0, thresh: Any = None) -> Any:
    """`tf.sparse_add`: the sum of two SparseTensors (a SparseTensor; sums of two entries whose
    magnitude is below `threshold` dropped), or of a SparseTensor and a dense tensor (dense)."""
    threshold = threshold if thresh is None else thresh
    a_sparse, b_sparse = (
        isinstance(a, (SparseTensor, SparseTensorValue)),
        isinstance(b, (SparseTensor, SparseTensorValue)),
    )
    if not a_sparse and not b_sparse:
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add?")
    if a_sparse and b_sparse:
        a, b = as_sparse(a), as_sparse(b)
        with name_scope(None, "SparseAdd", [a.indices, b.indices]) as scope:
            thresh_t = convert_to_tensor(threshold, dtype=a.dtype.real_dtype, name="threshold")
            op = apply_op("SparseAdd", [*a.components(), *b.components(), thresh_t], name=scope)
        return SparseTensor(*op.outputs)
    sp, dense = (as_sparse(a), b) if a_sparse else (as_sparse(b), a)
    dense = convert_to_tensor(dense, dtype=sp.dtype)
    # TF's SparseTensorDenseAdd takes the entries in any order
    return _math.add(sparse_tensor_to_dense(sp, validate_indices=False), dense)


def _extremum_infer(ctx: OpContext) -> list:
    rank = dense_rank(ctx, 2) or dense_rank(ctx, 5)
    return [(_I64, (None, rank)), (ctx.in_dtypes[1], (None,))]


def _extremum_reference(ctx: OpContext, ai, av, ashape, bi, bv, bshape) -> list:
    _check_same_shape(ctx, ashape, bshape)
    union, a, _, b, _ = _merge(ai, av, bi, bv)
    pick = np.maximum if ctx.type == "SparseSparseMaximum" else np.minimum
    return [union, pick(a, b).astype(av.dtype)]


for _name in ("SparseSparseMaximum", "SparseSparseMinimum"):
    _register(
        _name,
        _extremum_infer,
        _extremum_reference,
        ("a_indices", "a_values", "a_shape", "b_indices", "b_values", "b_shape"),
    )


def _extremum_frontend(op_type: str, doc: str) -> Any:
    def fn(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
        a, b = as_sparse(sp_a, "sp_a"), as_sparse(sp_b, "sp_b")
        op = apply_op(op_type, [*a.components(), *b.components()], name=name or op_type)
        return SparseTensor(op.outputs[0], op.outputs[1], a.dense_shape)

    fn.__doc__ = doc
    return fn


sparse_maximum = _extremum_frontend(
    "SparseSparseMaximum",
    "`tf.sparse_maximum`: the element-wise maximum of two SparseTensors of one shape (an "
    "entry one side lacks counts as 0), at the union of their coordinates.",
)
sparse_minimum = _extremum_frontend(
    "SparseSparseMinimum",
    "`tf.sparse_minimum`: the element-wise minimum of two SparseTensors of one shape (an "
    "entry one side lacks counts as 0), at the union of their coordinates.",
)


# -- SparseSoftmax ------------------------------------------------------------------------------
def _softmax_infer(ctx: OpContext) -> list:
    return [(ctx.in_dtypes[1], ctx.in_shapes[1])]


def _softmax_reference(ctx: OpContext, indices, values, shape) -> np.ndarray:
    # TF's kernel reorders the entries first and gives the values in row-major order (the
    # same as the input's for the canonical order TF requires)
    order = row_major_order(indices)
    indices, values = indices[order], values[order]
    out = np.zeros_like(values)
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(indices[:, :-1].tolist()):
        groups.setdefault(tuple(row), []).append(i)
    for members in groups.values():
        x = values[members]
        e = np.exp(x - x.max())
        out[members] = e / e.sum()
    return out


_register(
    "SparseSoftmax",
    _softmax_infer,
    _softmax_reference,
    ("sp_indices", "sp_values", "sp_shape"),
    reason=NO_KERNEL_REASON,
)


def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_softmax`: the softmax over each innermost row's entries (the missing ones
    do not take part, they are not zeros)."""
    sp = as_sparse(sp_input)
    op = apply_op("SparseSoftmax", list(sp.components()), name=name or "SparseSoftmax")
    return SparseTensor(sp.indices, op.outputs[0], sp.dense_shape)


# -- SparseFillEmptyRows ------------------------------------------------------------------------
def _fill_infer(ctx: OpContext) -> list:
    rank, n = dense_rank(ctx, 2), None if ctx.in_shapes[0] is None else ctx.in_shapes[0][0]
    return [
        (_I64, (None, rank)),
        (ctx.in_dtypes[1], (None,)),
        (_dt.bool_, (None,)),
        (_I64, (n,)),
    ]


def _fill_reference(ctx: OpContext, indices, values, shape, default) -> list:
    rows = int(shape[0])
    rank = len(shape)
    counts = np.bincount(indices[:, 0], minlength=rows) if len(indices) else np.zeros(rows, int)
    empty = counts[:rows] == 0
    added = np.zeros((int(empty.sum()), rank), np.int64)
    added[:, 0] = np.flatnonzero(empty)
    all_indices = np.concatenate([indices.reshape(-1, rank), added])
    all_values = np.concatenate([values, np.full(len(added), default, values.dtype)])
    order = np.argsort(all_indices[:, 0], kind="stable")
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    return [all_indices[order], all_values[order], empty, position[: len(indices)]]


_register(
    "SparseFillEmptyRows",
    _fill_infer,
    _fill_reference,
    ("indices", "values", "dense_shape", "default_value"),
)


def sparse_fill_empty_rows(
    sp_input: Any, default_value: Any, name: str | None = None
) -> tuple[SparseTensor, Tensor]:
    """`tf.sparse_fill_empty_rows`: the SparseTensor with an entry `default_value` at
    [row, 0, ...] of every row that has none, and a bool vector telling those rows."""
    sp = as_sparse(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp.indices]) as scope:
        default = convert_to_tensor(default_value, dtype=sp.dtype, name="default_value")
        op = apply_op("SparseFillEmptyRows", [*sp.components(), default], name=scope)
    return SparseTensor(op.outputs[0], op.outputs[1], sp.dense_shape), op.outputs[2]


# -- sparse_merge, sparse_to_indicator, sparse_reset_shape ---------------------------------------
def sparse_merge(
    sp_ids: Any, sp_values: Any, vocab_size: Any, name: str | None = None,
    already_sorted: bool = False,
) -> SparseTensor:  # fmt: skip
    """`tf.sparse_merge`: each value of `sp_values` at its row's coordinates with the last
    one replaced by its id (`sp_ids`' value there): a SparseTensor [..., vocab_size]."""
    if isinstance(vocab_size, (list, tuple)):
        raise NotImplementedError("tf.sparse_merge: tfc takes one sp_ids and one vocab_size")
    ids, values = as_sparse(sp_ids, "sp_ids"), as_sparse(sp_values, "sp_values")
    with name_scope(name, "SparseMerge", [ids.indices, values.values]):
        positions = _array.expand_dims(_math.cast(ids.values, _I64), 1)
        leading = _array.slice(ids.indices, [0, 0], [-1, _array.size(ids.dense_shape) - 1])
        indices = _array.concat([leading, positions], 1)
        outer = _array.slice(ids.dense_shape, [0], [_array.size(ids.dense_shape) - 1])
        size = _array.reshape(_math.cast(vocab_size, _I64), [1])
        merged = SparseTensor(indices, values.values, _array.concat([outer, size], 0))
        return merged if already_sorted else sparse_reorder(merged)


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """`tf.sparse_to_indicator`: a bool tensor [..., vocab_size] that is True at [..., id]
    for every id (a value of the int SparseTensor `sp_input`) of each row."""
    sp = as_sparse(sp_input)
    with name_scope(name, "SparseToIndicator", [sp.indices]):
        flags = SparseTensor(sp.indices, _array.ones_like(sp.values, dtype=_dt.bool_),
                             sp.dense_shape)  # fmt: skip
        merged = sparse_merge(sp, flags, vocab_size)
        return sparse_tensor_to_dense(merged, default_value=False, validate_indices=False)


def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """`tf.sparse_reset_shape`: the same entries with dense_shape `new_shape` (which must hold
    them), or, when None, the tightest shape that does (the largest index plus one)."""
    sp = as_sparse(sp_input)
    with name_scope(None, "SparseResetShape", [sp.indices]):
        if new_shape is None:
            tight = _reduce.reduce_max(sp.indices, axis=0) + constant(1, _I64)
            return SparseTensor(sp.indices, sp.values, tight)
        shape = convert_to_tensor(new_shape, dtype=_I64, name="new_shape")
        holds = check_ops.assert_less_equal(
            sp.dense_shape, shape, message="new_shape must not be smaller than dense_shape"
        )
        with control_dependencies([holds]):
            shape = _array.identity(shape)
        return SparseTensor(sp.indices, sp.values, shape)


# -- composites of native ops -------------------------------------------------------------------
def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """`tf.sparse_retain`: the entries whose flag in the bool vector `to_retain` is set."""
    sp = as_sparse(sp_input)
    with name_scope(None, "SparseRetain", [sp.indices]):
        keep = _array.reshape(where_indices(to_retain), [-1])
        return SparseTensor(gather(sp.indices, keep), gather(sp.values, keep), sp.dense_shape)


def sparse_from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse.from_dense`: the non-zero elements of a dense tensor as a SparseTensor."""
    with name_scope(name, "dense_to_sparse", [tensor]):
        x = convert_to_tensor(tensor)
        zero = _array.zeros([], x.dtype) if not x.dtype.is_string else constant(b"")
        indices = where_indices(not_equal(x, zero))
        return SparseTensor(indices, gather_nd(x, indices), _array.shape(x, out_type=_I64))


def sparse_transpose(sp_input: Any, perm: Any = None, name: str | None = None) -> SparseTensor:
    """`tf.sparse_transpose`: the dimensions permuted by `perm` (default: reversed), entries
    reordered to row-major order."""
    sp = as_sparse(sp_input)
    with name_scope(name, "SparseTranspose", [sp.indices]):
        if perm is None:
            rank = _array.size(sp.dense_shape)
            perm = _range(rank - 1, -1, -1)
        perm = convert_to_tensor(perm, dtype=_dt.int32, name="perm")
        indices = gather(sp.indices, perm, axis=1)
        shape = gather(sp.dense_shape, perm)
        return sparse_reorder(SparseTensor(indices, sp.values, shape))


def sparse_mask(a: IndexedSlices, mask_indices: Any, name: str | None = None) -> IndexedSlices:
    """`tf.sparse_mask`: the rows of IndexedSlices `a` whose index is not in `mask_indices`."""
    with name_scope(name, "sparse_mask", [a.indices, mask_indices]):
        kept, positions = setdiff1d(a.indices, mask_indices)
        return IndexedSlices(gather(a.values, positions), kept, a.dense_shape)
