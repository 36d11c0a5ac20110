"""`tf.nn.embedding_lookup`: rows of a parameter tensor, or of one sharded over several tensors.

A single tensor is one gather. Shards are looked up as TF1 assigns ids to them ("mod": id % n
picks the shard and id // n the row; "div": contiguous ranges of ids, the first shards one
row longer when the total does not divide). TF routes ids with DynamicPartition and
DynamicStitch, whose shapes depend on the ids; a compiled program has static shapes, so here
every shard gathers a row for every id (rows of other shards ask for row 0) and a select
keeps each id's own: the same values. Each shard's gradient holds the rows of its own ids
(IndexedSlices, the others at index -1: no row), so optimizers update what TF1's would.
"""

from __future__ import annotations

from typing import Any

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.indexed_slices import IndexedSlices
from tfc.ops.logic import equal, less, where
from tfc.ops.math import floordiv, floormod, maximum, minimum, sqrt
from tfc.ops.reduce import reduce_sum
from tfc.ops.registry import NAMED_GRADIENTS

__all__ = ["embedding_lookup"]

_STRATEGIES = ("mod", "div")


def _shards(params: Any) -> list:
    """params as a list of tensors: a list or tuple, a PartitionedVariable, or one tensor."""
    if isinstance(params, (list, tuple)):
        shards = list(params)
    elif is_tensor_like(params) and not isinstance(params, Tensor) and hasattr(params, "__len__"):
        shards = list(params)  # a PartitionedVariable: its shards
    else:
        shards = [params]
    if not shards:
        raise ValueError("Need at least one param")
    return shards


def _clip_rows(rows: Tensor, ids: Tensor, max_norm: Any) -> Tensor:
    """Each embedding scaled down to an L2 norm of at most max_norm (TF's _clip)."""
    if max_norm is None:
        return rows
    ids_rank, rows_rank = ids.shape.ndims, rows.shape.ndims
    if ids_rank is None or rows_rank is None:
        raise ValueError("embedding_lookup with max_norm needs the ranks of ids and params")
    axes = list(range(ids_rank, rows_rank))
    norm = sqrt(reduce_sum(rows * rows, axes, keepdims=True))
    limit = convert_to_tensor(max_norm, dtype=rows.dtype)
    return rows * (limit / maximum(norm, limit))


def embedding_lookup(
    params: Any,
    ids: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    validate_indices: bool = True,
    max_norm: Any = None,
) -> Tensor:
    """`tf.nn.embedding_lookup`: params[ids] (shape ids.shape + params.shape[1:]); params may
    be a list of shards of the rows (or a PartitionedVariable), split by `partition_strategy`.
    Ids outside the rows fail the run, as in TF."""
    if partition_strategy not in _STRATEGIES:
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    shards = _shards(params)
    with name_scope(name, "embedding_lookup", [*shards, ids]) as scope:
        ids = convert_to_tensor(ids, name="ids")
        if ids.dtype not in (_dt.int32, _dt.int64):
            raise TypeError(f"ids must be int32 or int64, got {ids.dtype.name}")
        tensors = [convert_to_tensor(p, name="params") for p in shards]
        if len(tensors) == 1:
            rows = _clip_rows(_array.gather(tensors[0], ids), ids, max_norm)
            return _array.identity(rows, name=scope)
        n = len(tensors)
        if partition_strategy == "mod":
            shard_of = floormod(ids, constant(n, dtype=ids.dtype))
            row_of = floordiv(ids, constant(n, dtype=ids.dtype))
        else:
            shard_of, row_of = _div_assignment(tensors, ids)
        result = None
        for p, table in enumerate(tensors):
            mine = equal(shard_of, constant(p, dtype=ids.dtype))
            # ids of other shards read row 0 (always there) and are dropped by the select;
            # the gradient names no row (-1) for them
            local = where(mine, row_of, _array.zeros_like(row_of))
            with local.graph.gradient_override_map({"GatherV2": SHARD_ROWS_GRADIENT}):
                rows = _array.gather(table, local)
            if result is None:
                result = rows
                continue
            if rows.shape.ndims is None or ids.shape.ndims is None:
                raise ValueError("embedding_lookup over shards needs the ranks of ids and params")
            for _ in range(rows.shape.ndims - ids.shape.ndims):  # a mask per row of values
                mine = _array.expand_dims(mine, -1)
            result = where(mine, rows, result)
        return _array.identity(_clip_rows(result, ids, max_norm), name=scope)


SHARD_ROWS_GRADIENT = "EmbeddingShardRows"


def _shard_rows_gradient(op: Any, dy: Tensor) -> list:
    """The rows a shard's gather read, as IndexedSlices whose ids of other shards have the
    index -1 (no row: tfc/ops/indexed_slices.py), so an optimizer updates only the rows the
    shard holds for this lookup, as TF's partitioned lookup (DynamicPartition) gives them."""
    table, local, _ = op.inputs
    if local.op.type != "SelectV2":
        raise ValueError(f"'{op.name}' is not a gather of embedding_lookup's shards")
    mine, row_of, _ = local.op.inputs  # local = where(mine, row_of, 0)
    masked = where(mine, row_of, -_array.ones_like(row_of))
    flat = _array.reshape(masked, [-1])
    row_shape = table._shape_tuple[1:] if table._shape_tuple is not None else None
    if row_shape is None or None in row_shape:
        raise ValueError(f"the gradient of '{op.name}' needs the shape of its shard's rows")
    values = _array.reshape(dy, [-1, *row_shape])
    return [IndexedSlices(values, flat, _array.shape(table)), None, None]


NAMED_GRADIENTS[SHARD_ROWS_GRADIENT] = _shard_rows_gradient


def _div_assignment(tensors: list[Tensor], ids: Tensor) -> tuple[Tensor, Tensor]:
    """TF1's "div" strategy: the shard and the row within it of each id, from the static
    number of rows of every shard."""
    sizes = [t.shape[0].value if t.shape.ndims else None for t in tensors]
    if any(s is None for s in sizes):
        raise ValueError(
            "embedding_lookup with partition_strategy='div' needs the number of rows of every "
            "shard when the graph is built"
        )
    n, total = len(tensors), sum(sizes)
    per_shard, extras = total // n, total % n
    dtype = ids.dtype
    big = constant(per_shard + 1, dtype=dtype)
    extras_t = constant(extras, dtype=dtype)
    if per_shard == 0:  # fewer ids than shards: each of the first `total` shards holds one
        shard_of = ids
    else:
        small = constant(per_shard, dtype=dtype)
        shard_of = maximum(floordiv(ids, big), floordiv(ids - extras_t, small))
    in_long = less(shard_of, extras_t)
    if per_shard == 0:
        row_of = floormod(ids, big)
    else:
        row_of = where(in_long, floormod(ids, big), floormod(ids - extras_t, small))
    # an id past the end goes to the last shard at a row it lacks, a negative id stays
    # negative: the gather fails the run, as TF's partitioning does
    last = constant(n - 1, dtype=dtype)
    past_end = less(last, shard_of)
    beyond = ids - constant(total - sizes[-1], dtype=dtype)
    row_of = where(past_end, beyond, where(less(ids, _array.zeros_like(ids)), ids, row_of))
    shard_of = maximum(minimum(shard_of, last), _array.zeros_like(shard_of))
    return shard_of, row_of
