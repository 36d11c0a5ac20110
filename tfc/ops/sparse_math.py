"""Arithmetic with SparseTensors: sparse_tensor_dense_matmul, sparse_matmul,
sparse_segment_sum/mean/sqrt_n, the sparse embedding lookups (tf.nn.embedding_lookup_sparse,
safe_embedding_lookup_sparse) and tf.edit_distance.

Each is built from native ops where its output size is fixed when compiling (gathers,
UnsortedSegmentSum, ScatterNd), so gradients flow through their rules: the gradient of a
sparse embedding lookup reaches the table as IndexedSlices of the rows it read, as in TF.
SparseSegmentSum without `num_segments` has as many rows as its last segment id plus one, a
run-time value: it runs in a Session's Python stage, its gradient natively.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.math as _math
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ops.array_index import gather, unsorted_segment_sum
from tfc.ops.complex_ops import conj
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.embedding import embedding_lookup
from tfc.ops.linalg import matmul
from tfc.ops.logic import greater, greater_equal, where
from tfc.ops.registry import (
    VALUE_DEPENDENT_REASON,
    OpContext,
    OpDef,
    apply_op,
    constant_value,
    register,
)
from tfc.ops.sequences import range as _range
from tfc.ops.sparse_ops import (
    as_sparse,
    dense_rank,
    invalid_argument,
    row_major_order,
    sparse_fill_empty_rows,
    sparse_reshape,
    sparse_retain,
    sparse_tensor_to_dense,
)
from tfc.ops.sparse_tensor import SparseTensor

__all__ = [
    "sparse_tensor_dense_matmul",
    "sparse_matmul",
    "sparse_segment_sum",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "embedding_lookup_sparse",
    "safe_embedding_lookup_sparse",
    "edit_distance",
]


def _known(t: Tensor) -> np.ndarray | None:
    return constant_value(t.graph, (t.op.name, t.value_index))


def sparse_tensor_dense_matmul(
    sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None
) -> Tensor:
    """`tf.sparse_tensor_dense_matmul`: the 2-D SparseTensor `sp_a` times the dense matrix `b`
    (either adjoint). Differentiable in `sp_a.values` and `b`."""
    sp = as_sparse(sp_a, "sp_a")
    with name_scope(name, "SparseTensorDenseMatMul", [sp.indices, sp.values, b]) as scope:
        b = convert_to_tensor(b, dtype=sp.dtype, name="b")
        if adjoint_b:
            b = _array.transpose(b, conjugate=sp.dtype.is_complex)
        values = conj(sp.values) if adjoint_a and sp.dtype.is_complex else sp.values
        row, col = (1, 0) if adjoint_a else (0, 1)
        rows = _array.reshape(_array.slice(sp.indices, [0, row], [-1, 1]), [-1])
        cols = _array.reshape(_array.slice(sp.indices, [0, col], [-1, 1]), [-1])
        shape = _known(sp.dense_shape)
        if shape is None:
            # the output's row count is a run-time value: the dense product of the densified
            # operand (its densification runs in a Python stage)
            dense = sparse_tensor_to_dense(
                SparseTensor(sp.indices, values, sp.dense_shape), validate_indices=False
            )
            return matmul(dense, b, transpose_a=adjoint_a, name=scope)
        # each entry scales one row of b into one output row
        scaled = _math.multiply(_array.expand_dims(values, 1), gather(b, cols))
        return unsorted_segment_sum(scaled, rows, int(shape[row]))


def sparse_matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Tensor:
    """`tf.sparse_matmul`: the float32 product of two dense matrices (float32 or bfloat16);
    the sparsity hints pick an algorithm in TF and change no result, as in tf.matmul."""
    with name_scope(name, "SparseMatMul", [a, b]) as scope:
        a = _math.cast(convert_to_tensor(a, name="a"), _dt.float32)
        b = _math.cast(convert_to_tensor(b, name="b"), _dt.float32)
        return matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=scope)


# -- SparseSegmentSum ---------------------------------------------------------------------------
def _segment_infer(ctx: OpContext) -> list:
    data = ctx.in_shapes[0]
    return [(ctx.in_dtypes[0], None if data is None else (None, *data[1:]))]


def _segment_reference(ctx: OpContext, data, indices, segment_ids) -> np.ndarray:
    ids = np.asarray(segment_ids, np.int64)
    if len(ids) != len(indices):
        raise invalid_argument(
            ctx, f"segment_ids and indices should have the same size: {len(ids)} vs {len(indices)}"
        )
    if len(ids) and (ids.min() < 0 or (np.diff(ids) < 0).any()):
        raise invalid_argument(ctx, "segment ids must be >= 0 and sorted")
    if len(indices) and (np.min(indices) < 0 or np.max(indices) >= data.shape[0]):
        raise invalid_argument(
            ctx, f"indices must be in [0, {data.shape[0]}), got {np.asarray(indices)}"
        )
    num = int(ids[-1]) + 1 if len(ids) else 0
    out = np.zeros((num, *data.shape[1:]), data.dtype)
    np.add.at(out, ids, data[np.asarray(indices, np.int64)])
    return out


def _segment_grad(op: Operation, dy: Tensor) -> list:
    data, indices, segment_ids = op.inputs
    rows = _array.shape(data)[0]
    return [unsorted_segment_sum(gather(dy, segment_ids), indices, rows), None, None]


register(
    OpDef(
        "SparseSegmentSum",
        infer=_segment_infer,
        reference=_segment_reference,
        grad=_segment_grad,
        in_python=VALUE_DEPENDENT_REASON,
        dtypes=_dt.NUMERIC,
        input_names=("data", "indices", "segment_ids"),
    )
)


def sparse_segment_sum(
    data: Any,
    indices: Any,
    segment_ids: Any,
    name: str | None = None,
    num_segments: Any = None,
) -> Tensor:
    """`tf.sparse.segment_sum`: out[segment_ids[i]] += data[indices[i]] (sorted segment
    ids); as many rows as the last id plus one, or `num_segments`."""
    with name_scope(name, "SparseSegmentSum", [data, indices, segment_ids]) as scope:
        data = convert_to_tensor(data, name="data")
        indices = convert_to_tensor(indices, name="indices")
        segment_ids = convert_to_tensor(segment_ids, name="segment_ids")
        if num_segments is not None:
            return unsorted_segment_sum(gather(data, indices), segment_ids, num_segments)
        return apply_op("SparseSegmentSum", [data, indices, segment_ids], name=scope).outputs[0]


def _segment_counts(data: Tensor, indices: Any, segment_ids: Any, num_segments: Any) -> Tensor:
    """How many rows each segment sums, at least 1 (TF gives an empty segment 0), shaped to
    divide the segment sums row by row."""
    indices = convert_to_tensor(indices)
    ones = _array.ones_like(_math.cast(indices, data.dtype))
    table = _array.expand_dims(ones, 1)
    counts = sparse_segment_sum(
        table, _range(_array.size(indices)), segment_ids, None, num_segments
    )
    counts = _math.maximum(counts, constant(1, data.dtype))
    rank = data.shape.rank
    if rank is None or rank == 2:
        return counts
    return _array.reshape(counts, [-1] + [1] * (rank - 1))


def sparse_segment_mean(
    data: Any,
    indices: Any,
    segment_ids: Any,
    name: str | None = None,
    num_segments: Any = None,
) -> Tensor:
    """`tf.sparse.segment_mean`: the mean of the rows `indices` picks in each segment."""
    with name_scope(name, "SparseSegmentMean", [data, indices, segment_ids]):
        data = convert_to_tensor(data, name="data")
        total = sparse_segment_sum(data, indices, segment_ids, None, num_segments)
        return _math.truediv(total, _segment_counts(data, indices, segment_ids, num_segments))


def sparse_segment_sqrt_n(
    data: Any,
    indices: Any,
    segment_ids: Any,
    name: str | None = None,
    num_segments: Any = None,
) -> Tensor:
    """`tf.sparse.segment_sqrt_n`: each segment's sum divided by the square root of its row
    count."""
    with name_scope(name, "SparseSegmentSqrtN", [data, indices, segment_ids]):
        data = convert_to_tensor(data, name="data")
        total = sparse_segment_sum(data, indices, segment_ids, None, num_segments)
        counts = _segment_counts(data, indices, segment_ids, num_segments)
        return _math.truediv(total, _math.sqrt(counts))


# -- embedding lookups of SparseTensor ids ------------------------------------------------------
_COMBINERS = ("mean", "sqrtn", "sum")


def embedding_lookup_sparse(
    params: Any,
    sp_ids: Any,
    sp_weights: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    combiner: str | None = None,
    max_norm: Any = None,
) -> Tensor:
    """`tf.nn.embedding_lookup_sparse`: for each row of the 2-D SparseTensor `sp_ids`, the
    combination (`combiner`: "sum", "mean" (default), "sqrtn") of the embeddings its ids pick,
    weighted by `sp_weights`' values (None: weight 1). Rows: the last row with an id plus one.
    The table's gradient is IndexedSlices of the rows looked up."""
    combiner = "mean" if combiner is None else combiner
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    sp_ids = as_sparse(sp_ids, "sp_ids")
    weights = None if sp_weights is None else as_sparse(sp_weights, "sp_weights")
    with name_scope(name, "embedding_lookup_sparse", [sp_ids.indices, sp_ids.values]) as scope:
        segment_ids = _array.reshape(_array.slice(sp_ids.indices, [0, 0], [-1, 1]), [-1])
        segment_ids = _math.cast(segment_ids, _dt.int32)
        ids = sp_ids.values
        rows = embedding_lookup(
            params, ids, partition_strategy=partition_strategy, max_norm=max_norm
        )
        every = _range(_array.size(ids))
        if weights is None:
            combine = {
                "sum": sparse_segment_sum,
                "mean": sparse_segment_mean,
                "sqrtn": sparse_segment_sqrt_n,
            }[combiner]
            return _array.identity(combine(rows, every, segment_ids), name=scope)
        w = _math.cast(weights.values, rows.dtype)
        rank = rows.shape.rank
        w_rows = w if rank is None else _array.reshape(w, [-1] + [1] * (rank - 1))
        total = sparse_segment_sum(_math.multiply(rows, w_rows), every, segment_ids)
        if combiner == "sum":
            return _array.identity(total, name=scope)
        per_row = w if combiner == "mean" else _math.square(w)
        norm = sparse_segment_sum(_array.expand_dims(per_row, 1), every, segment_ids)
        if combiner == "sqrtn":
            norm = _math.sqrt(norm)
        if rank is not None and rank != 2:
            norm = _array.reshape(norm, [-1] + [1] * (rank - 1))
        # a row whose weights sum to 0 gives 0, as TF's div_no_nan does
        return _math.div_no_nan(total, norm, name=scope)


def safe_embedding_lookup_sparse(
    embedding_weights: Any,
    sparse_ids: Any,
    sparse_weights: Any = None,
    combiner: str = "mean",
    default_id: Any = None,
    name: str | None = None,
    partition_strategy: str = "div",
    max_norm: Any = None,
) -> Tensor:
    """`tf.nn.safe_embedding_lookup_sparse`: embedding_lookup_sparse over the last dimension
    of `sparse_ids` (rank >= 2) that drops negative ids (and, unless combiner is "sum",
    non-positive weights), and gives a row without ids the embedding of `default_id`, or
    zeros. The result has shape sparse_ids.dense_shape[:-1] + [embedding dimension]."""
    sp_ids = as_sparse(sparse_ids, "sparse_ids")
    weights = None if sparse_weights is None else as_sparse(sparse_weights, "sparse_weights")
    with name_scope(name, "embedding_lookup", [sp_ids.indices]) as scope:
        original_shape = sp_ids.dense_shape
        rank = original_shape.shape.as_list()[0]
        if rank is None:
            raise ValueError("safe_embedding_lookup_sparse needs sparse_ids of a known rank")
        if rank != 2:
            outer = _reduce.reduce_prod(_array.slice(original_shape, [0], [rank - 1]))
            flat = _array.stack([outer, _array.gather(original_shape, rank - 1)])
            sp_ids = sparse_reshape(sp_ids, flat)
            if weights is not None:
                weights = SparseTensor(sp_ids.indices, weights.values, sp_ids.dense_shape)
        valid = greater_equal(sp_ids.values, constant(0, sp_ids.dtype))
        sp_ids = sparse_retain(sp_ids, valid)
        if weights is not None:
            weights = sparse_retain(weights, valid)
            if combiner != "sum":
                positive = greater(weights.values, constant(0, weights.dtype))
                sp_ids, weights = sparse_retain(sp_ids, positive), sparse_retain(weights, positive)
        sp_ids, is_row_empty = sparse_fill_empty_rows(
            sp_ids, 0 if default_id is None else default_id
        )
        if weights is not None:
            weights, _ = sparse_fill_empty_rows(weights, 1.0)
        result = embedding_lookup_sparse(
            embedding_weights, sp_ids, weights, partition_strategy, None, combiner, max_norm
        )
        if default_id is None:
            empty = _array.expand_dims(is_row_empty, 1)
            result = where(_broadcast_rows(empty, result), _array.zeros_like(result), result)
        if rank == 2:
            return _array.identity(result, name=scope)
        outer_shape = _math.cast(_array.slice(original_shape, [0], [rank - 1]), _dt.int32)
        tail = _array.slice(_array.shape(result), [1], [-1])
        return _array.reshape(result, _array.concat([outer_shape, tail], 0), name=scope)


def _broadcast_rows(flags: Tensor, like: Tensor) -> Tensor:
    """A [rows, 1] bool tensor repeated across the columns of `like`."""
    columns = _array.slice(_array.shape(like), [1], [1])
    return _array.tile(flags, _array.concat([constant([1], _dt.int32), columns], 0))


# -- EditDistance ---------------------------------------------------------------------------------
def _levenshtein(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def _sequences(indices, values) -> dict[tuple, list]:
    """The values of each sequence (all but the last coordinate), in row-major order."""
    order = row_major_order(indices)
    out: dict[tuple, list] = {}
    for row, value in zip(indices[order].tolist(), values[order].tolist()):
        out.setdefault(tuple(row[:-1]), []).append(value)
    return out


def _edit_distance_infer(ctx: OpContext) -> list:
    rank = dense_rank(ctx, 2) or dense_rank(ctx, 5)
    return [(_dt.float32, None if rank is None else (None,) * (rank - 1))]


def _edit_distance_reference(ctx: OpContext, hi, hv, hshape, ti, tv, tshape) -> np.ndarray:
    if len(hshape) != len(tshape):
        raise invalid_argument(ctx, f"hypothesis has rank {len(hshape)} but truth has rank "
                                    f"{len(tshape)}")  # fmt: skip
    out = np.zeros(tuple(np.maximum(hshape[:-1], tshape[:-1])), np.float32)
    hyps, truths = _sequences(hi, hv), _sequences(ti, tv)
    for key in set(hyps) | set(truths):
        hyp, truth = hyps.get(key, []), truths.get(key, [])
        distance = float(_levenshtein(hyp, truth))
        if ctx.attrs["normalize"]:
            distance = distance / len(truth) if truth else np.inf
        out[key] = distance
    return out


register(
    OpDef(
        "EditDistance",
        infer=_edit_distance_infer,
        reference=_edit_distance_reference,
        differentiable=False,
        in_python=VALUE_DEPENDENT_REASON,
        dtypes=_dt.STORABLE,
        input_names=("hypothesis_indices", "hypothesis_values", "hypothesis_shape",
                     "truth_indices", "truth_values", "truth_shape"),
    )
)  # fmt: skip


def edit_distance(
    hypothesis: Any, truth: Any, normalize: bool = True, name: str = "edit_distance"
) -> Tensor:
    """`tf.edit_distance`: the Levenshtein distance between the sequences (the last
    dimension) of two SparseTensors, at each position of the other dimensions; divided by the
    truth's length when `normalize` (inf for a hypothesis against an empty truth)."""
    hyp, truth = as_sparse(hypothesis, "hypothesis"), as_sparse(truth, "truth")
    if hyp.dtype != truth.dtype:
        raise TypeError(f"hypothesis is {hyp.dtype.name} but truth is {truth.dtype.name}")
    op = apply_op("EditDistance", [*hyp.components(), *truth.components()],
                  {"normalize": bool(normalize)}, name=name)  # fmt: skip
    return op.outputs[0]
