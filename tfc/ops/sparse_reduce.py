"""The reductions of SparseTensors: tf.sparse_reduce_sum, sparse_reduce_sum_sparse,
sparse_reduce_max and sparse_reduce_max_sparse.

A reduction to a dense tensor of a dense_shape known when compiling sums natively (the
densified entries); the others group the entries by their remaining coordinates, as many
groups as the entries make (or a reduced shape known at run time only), so they run in a
Session's Python stage with their NumPy references. As in TF, a maximum takes only the
entries present, and a reduced element without entries is 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Operation, Tensor
from tfc.ops.constant import constant
from tfc.ops.registry import VALUE_DEPENDENT_REASON, OpContext, OpDef, apply_op, register
from tfc.ops.sequences import range as _range
from tfc.ops.sparse_ops import as_sparse, invalid_argument, sparse_tensor_to_dense
from tfc.ops.sparse_tensor import SparseTensor

_I64 = _dt.int64

__all__ = [
    "sparse_reduce_sum",
    "sparse_reduce_sum_sparse",
    "sparse_reduce_max",
    "sparse_reduce_max_sparse",
]


def sparse_reduce_sum(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """`tf.sparse_reduce_sum`: the dense sums over `axis` (all axes when None) of a
    SparseTensor's values."""
    axis = reduction_axes if axis is None else axis
    keep = bool(keep_dims if keepdims is None else keepdims)
    # TF's SparseReduceSum takes the entries in any order
    dense = sparse_tensor_to_dense(as_sparse(sp_input), validate_indices=False)
    return _reduce.reduce_sum(dense, axis, keepdims=keep)


# -- SparseReduceSumSparse, SparseReduceMax, SparseReduceMaxSparse -----------------------------
def _reduced_groups(ctx: OpContext, indices, shape, axes) -> tuple:
    """Each entry's coordinates in the reduced tensor, and that tensor's shape."""
    rank = len(shape)
    axes = sorted({int(a) + rank if int(a) < 0 else int(a) for a in np.reshape(axes, -1)})
    if any(not 0 <= a < rank for a in axes):
        raise invalid_argument(ctx, f"reduction axes {np.reshape(axes, -1).tolist()} out of range")
    kept = [d for d in range(rank) if d not in axes]
    keep_dims = bool(ctx.attrs.get("keep_dims", False))
    columns = list(range(rank)) if keep_dims else kept
    out_idx = np.array(indices, np.int64).reshape(-1, rank)[:, columns]
    if keep_dims:
        out_idx[:, axes] = 0
    out_shape = np.array([1 if (d in axes) else shape[d] for d in columns], np.int64)
    return out_idx, out_shape


def _reduce_groups(ctx: OpContext, indices, values, shape, axes) -> tuple:
    """(the coordinates of the reduced elements that have entries, in row-major order, their
    sums or maxima, the reduced shape)."""
    out_idx, out_shape = _reduced_groups(ctx, indices, shape, axes)
    if out_idx.shape[1] == 0:  # everything reduced: one group, if there is an entry
        groups = np.zeros((1 if len(values) else 0, 0), np.int64)
        inverse = np.zeros(len(values), np.int64)
    else:
        groups, inverse = np.unique(out_idx, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    if "Max" in ctx.type:
        low = -np.inf if values.dtype.kind == "f" else np.iinfo(values.dtype).min
        out = np.full(len(groups), low, values.dtype)
        np.maximum.at(out, inverse, values)
    else:
        out = np.zeros(len(groups), values.dtype)
        np.add.at(out, inverse, values)
    return groups.astype(np.int64), out, out_shape


def _reduce_sparse_infer(ctx: OpContext) -> list:
    return [(_I64, (None, None)), (ctx.in_dtypes[1], (None,)), (_I64, (None,))]


def _reduce_sparse_reference(ctx: OpContext, indices, values, shape, axes) -> list:
    return list(_reduce_groups(ctx, indices, values, shape, axes))


def _reduce_dense_infer(ctx: OpContext) -> list:
    return [(ctx.in_dtypes[1], None)]


def _reduce_dense_reference(ctx: OpContext, indices, values, shape, axes) -> np.ndarray:
    # a reduced element without entries is 0, as in TF (not the lowest value)
    groups, reduced, out_shape = _reduce_groups(ctx, indices, values, shape, axes)
    out = np.zeros(tuple(out_shape), values.dtype)
    if out.ndim == 0:  # every axis reduced
        return np.asarray(reduced[0] if len(reduced) else 0, values.dtype)
    out[tuple(groups.T)] = reduced
    return out


_REDUCE_INPUTS = ("input_indices", "input_values", "input_shape", "reduction_axes")
for _name, _infer, _reference in (
    ("SparseReduceSumSparse", _reduce_sparse_infer, _reduce_sparse_reference),
    ("SparseReduceMaxSparse", _reduce_sparse_infer, _reduce_sparse_reference),
    ("SparseReduceMax", _reduce_dense_infer, _reduce_dense_reference),
):
    register(
        OpDef(
            _name,
            infer=_infer,
            reference=_reference,
            differentiable=False,
            in_python=VALUE_DEPENDENT_REASON,
            dtypes=_dt.NUMERIC,
            input_names=_REDUCE_INPUTS,
        )
    )


def _apply_reduction(
    op_type: str, sp_input: Any, axis: Any, keepdims: Any, reduction_axes: Any, keep_dims: Any
) -> Operation:
    sp = as_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keep = bool(keep_dims if keepdims is None else keepdims)
    if axis is None:  # every axis
        axes = _range(_array.size(sp.dense_shape))
    else:
        axes = constant(np.reshape(np.asarray(axis, np.int32), -1), _dt.int32)
    return apply_op(op_type, [*sp.components(), axes], {"keep_dims": keep}, name=op_type)


def sparse_reduce_sum_sparse(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
) -> SparseTensor:
    """`tf.sparse_reduce_sum_sparse`: the sums over `axis` of the entries, as a SparseTensor
    holding one entry per group of coordinates that had any."""
    op = _apply_reduction(
        "SparseReduceSumSparse", sp_input, axis, keepdims, reduction_axes, keep_dims
    )
    return SparseTensor(*op.outputs)


def sparse_reduce_max_sparse(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
) -> SparseTensor:
    """`tf.sparse_reduce_max_sparse`: the maxima over `axis` of the entries (missing elements
    take no part), as a SparseTensor with one entry per group that had any."""
    op = _apply_reduction(
        "SparseReduceMaxSparse", sp_input, axis, keepdims, reduction_axes, keep_dims
    )
    return SparseTensor(*op.outputs)


def sparse_reduce_max(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """`tf.sparse_reduce_max`: the dense maxima over `axis` of the entries (missing elements
    take no part; a reduced element without entries is 0)."""
    op = _apply_reduction("SparseReduceMax", sp_input, axis, keepdims, reduction_axes, keep_dims)
    return op.outputs[0]
