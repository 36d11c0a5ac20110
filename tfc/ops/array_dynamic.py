"""Ops whose output shape depends on their input values, which run in a Session's Python stages.

tf.unique, tf.unique_with_counts, tf.setdiff1d, tf.dynamic_partition, tf.dynamic_stitch, and
tf.boolean_mask built on tf.where(condition).

A native program knows every buffer's size when it is compiled, so these ops run in Python
(OpDef.in_python): a Session evaluates them with their NumPy references in a Python stage,
and compiles what follows for the shapes they produced (tfc/client/python_stage.py); native
builds refuse them, naming the op. tf.where(condition) is one of them too (tfc/ops/logic.py).
tf.boolean_mask is TF's composite: where(mask) gives the indices (Python), a gather takes the
rows (native, differentiable). tf.dynamic_stitch with
constant indices has a static shape and compiles: a gather of the concatenated data at a
constant permutation; with run-time indices it is the DynamicStitch op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.math as _math
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ir.tensor_shape import merge_shapes, shape_str
from tfc.ops.array_index import gather
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.logic import where_indices
from tfc.ops.registry import (
    VALUE_DEPENDENT_REASON,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    constant_value,
    register,
)

__all__ = [
    "unique",
    "unique_with_counts",
    "setdiff1d",
    "boolean_mask",
    "dynamic_partition",
    "dynamic_stitch",
]

_INDEX = (_dt.int32, _dt.int64)


def _check_vector(ctx: OpContext, i: int, what: str) -> None:
    shape = ctx.in_shapes[i]
    if shape is not None and len(shape) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(shape)} for {what}")


# -- Unique, UniqueWithCounts -------------------------------------------------------------------
def _first_occurrences(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the unique values in order of first occurrence, each element's index among them, the
    count of each): TF's hash map, so NaNs are all distinct and -0.0 equals 0.0."""
    index: dict[Any, int] = {}
    idx = np.empty(x.shape[0], dtype=np.int64)
    firsts: list[int] = []
    for i, value in enumerate(x.tolist() if x.dtype != object else list(x)):
        if value != value:  # NaN: never equal to an earlier one
            index_of = len(firsts)
            firsts.append(i)
        else:
            index_of = index.setdefault(value, len(firsts))
            if index_of == len(firsts):
                firsts.append(i)
        idx[i] = index_of
    counts = np.bincount(idx, minlength=len(firsts)) if len(idx) else np.zeros(0, np.int64)
    return x[np.array(firsts, dtype=np.int64)], idx, counts


def _unique_infer(ctx: OpContext) -> list:
    _check_vector(ctx, 0, "'x'")
    out_idx = ctx.attrs["out_idx"]
    if out_idx not in _INDEX:
        raise ctx.type_error(f"out_idx must be int32 or int64, not {out_idx.name}")
    n = None if ctx.in_shapes[0] is None else ctx.in_shapes[0][0]
    outs = [(ctx.in_dtypes[0], (None,)), (out_idx, (n,))]
    if ctx.type == "UniqueWithCounts":
        outs.append((out_idx, (None,)))
    return outs


def _unique_reference(ctx: OpContext, x: np.ndarray) -> list:
    y, idx, counts = _first_occurrences(x)
    index = ctx.attrs["out_idx"].np
    outs = [y, idx.astype(index)]
    if ctx.type == "UniqueWithCounts":
        outs.append(counts.astype(index))
    return outs


for _name in ("Unique", "UniqueWithCounts"):
    register(
        OpDef(
            _name,
            infer=_unique_infer,
            reference=_unique_reference,
            dtypes=_dt.STORABLE,
            differentiable=False,
            in_python=VALUE_DEPENDENT_REASON,
            input_names=("x",),
        )
    )


def unique(x: Any, out_idx: Any = _dt.int32, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.unique`: (y, idx): the distinct values of 1-D `x` in order of first occurrence,
    and for each element of x its position in y (x = y[idx])."""
    x = convert_to_tensor(x, name="x")
    op = apply_op("Unique", [x], {"out_idx": _dt.as_dtype(out_idx)}, name=name or "Unique")
    return op.outputs[0], op.outputs[1]


def unique_with_counts(
    x: Any, out_idx: Any = _dt.int32, name: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """`tf.unique_with_counts`: tf.unique's (y, idx) and how often each value of y occurs."""
    x = convert_to_tensor(x, name="x")
    attrs = {"out_idx": _dt.as_dtype(out_idx)}
    op = apply_op("UniqueWithCounts", [x], attrs, name=name or "UniqueWithCounts")
    return op.outputs[0], op.outputs[1], op.outputs[2]


# -- ListDiff (tf.setdiff1d) --------------------------------------------------------------------
def _list_diff_infer(ctx: OpContext) -> list:
    _check_vector(ctx, 0, "'x'")
    _check_vector(ctx, 1, "'y'")
    if ctx.in_dtypes[0] != ctx.in_dtypes[1]:
        raise TypeError(
            f"Input 'y' of 'ListDiff' Op has type {ctx.in_dtypes[1].name} that does not match "
            f"type {ctx.in_dtypes[0].name} of argument 'x'."
        )
    return [(ctx.in_dtypes[0], (None,)), (ctx.attrs["out_idx"], (None,))]


def _list_diff_reference(ctx: OpContext, x: np.ndarray, y: np.ndarray) -> list:
    exclude = set(y.tolist() if y.dtype != object else list(y))
    items = x.tolist() if x.dtype != object else list(x)
    keep = np.array([v not in exclude for v in items], dtype=bool).reshape(-1)
    positions = np.flatnonzero(keep)
    return [x[positions], positions.astype(ctx.attrs["out_idx"].np)]


register(
    OpDef(
        "ListDiff",
        dtypes=_dt.STORABLE,
        infer=_list_diff_infer,
        reference=_list_diff_reference,
        differentiable=False,
        in_python=VALUE_DEPENDENT_REASON,
        input_names=("x", "y"),
    )
)


def setdiff1d(
    x: Any, y: Any, index_dtype: Any = _dt.int32, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """`tf.setdiff1d`: (out, idx): the values of 1-D `x` not in `y`, in x's order with
    duplicates kept, and their positions in x."""
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, name="y", preferred_dtype=x.dtype)  # as TF converts one type T
    attrs = {"out_idx": _dt.as_dtype(index_dtype)}
    op = apply_op("ListDiff", [x, y], attrs, name=name or "ListDiff")
    return op.outputs[0], op.outputs[1]


# -- tf.boolean_mask: TF's composite, where(mask) then a gather ---------------------------------
def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: Any = None) -> Tensor:
    """`tf.boolean_mask`: the entries of `tensor` where `mask` (a bool tensor over the dims
    from `axis` on) is true, those dims flattened into one. Its gradient is the gather's."""
    with name_scope(name, "boolean_mask", [tensor, mask]):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        shape_mask, shape_tensor = mask._shape_tuple, tensor._shape_tuple
        if shape_mask is not None and len(shape_mask) == 0:
            raise ValueError("mask cannot be scalar.")
        if shape_mask is None:
            raise ValueError(
                "Number of mask dimensions must be specified, even if some dimensions are "
                "None.  E.g. shape=[None] is ok, but shape=None is not."
            )
        axis = 0 if axis is None else int(axis)
        n = len(shape_mask)
        if shape_tensor is not None:
            span = tuple(shape_tensor[axis : axis + n])
            if len(span) != n or merge_shapes(span, shape_mask) is False:
                raise ValueError(f"Shapes {shape_str(span)} and {shape_str(shape_mask)} are "
                                 "incompatible")  # fmt: skip
        dims = _array.shape(tensor)
        leading = _reduce.reduce_prod(dims[axis : axis + n])
        new_shape = _array.concat([dims[:axis], _array.reshape(leading, [1]), dims[axis + n :]], 0)
        tensor = _array.reshape(tensor, new_shape)
        indices = _array.squeeze(where_indices(_array.reshape(mask, [-1])), axis=[1])
        return gather(tensor, indices, axis=axis)


# -- DynamicPartition ----------------------------------------------------------------------------
def _partition_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, [_dt.int32], "partitions")
    data, parts = ctx.in_shapes
    num = ctx.attrs["num_partitions"]
    if num < 1:
        raise ctx.error(f"num_partitions must be at least 1, got {num}")
    if data is None or parts is None:
        return [(ctx.in_dtypes[0], None)] * num
    if len(parts) > len(data) or merge_shapes(tuple(data[: len(parts)]), tuple(parts)) is False:
        raise ctx.error(
            f"partitions.shape {shape_str(parts)} must be a prefix of data.shape {shape_str(data)}"
        )
    return [(ctx.in_dtypes[0], (None, *data[len(parts) :]))] * num


def _partition_reference(ctx: OpContext, data: np.ndarray, partitions: np.ndarray) -> list:
    num = ctx.attrs["num_partitions"]
    flat = partitions.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= num))
    if bad.size:
        i = int(bad[0])
        raise errors.InvalidArgumentError(
            None, None, f"partitions[{i}] = {int(flat[i])} is not in [0, {num})"
        )
    rows = data.reshape((flat.size, *data.shape[partitions.ndim :]))
    return [rows[flat == k] for k in range(num)]


def _partition_grad(op: Operation, *grads: Tensor | None) -> list:
    """TF's: the gradients stitched back where each row came from (its flat position)."""
    data, partitions = op.inputs
    num = op.get_attr("num_partitions")
    flat = _array.reshape(partitions, [-1])
    # every position of partitions, as int32 0..n-1 (n may be known only at run time)
    positions = _math.cast(_array.squeeze(where_indices(_array.ones_like(flat, _dt.bool_)), [1]),
                           _dt.int32)  # fmt: skip
    positions = _array.reshape(positions, _array.shape(partitions))
    pieces = dynamic_partition(positions, partitions, num)
    grads = [
        g if g is not None else _array.zeros_like(piece_of_data)
        for g, piece_of_data in zip(grads, op.outputs)
    ]
    stitched = dynamic_stitch(pieces, grads)
    return [_array.reshape(stitched, _array.shape(data)), None]


register(
    OpDef(
        "DynamicPartition",
        dtypes=_dt.STORABLE,
        infer=_partition_infer,
        reference=_partition_reference,
        grad=_partition_grad,
        in_python=VALUE_DEPENDENT_REASON,
        input_names=("data", "partitions"),
    )
)


def dynamic_partition(
    data: Any, partitions: Any, num_partitions: int, name: str | None = None
) -> list[Tensor]:
    """`tf.dynamic_partition`: `num_partitions` tensors, the k-th holding the rows of `data`
    whose entry of `partitions` (int32, a prefix of data's shape) is k, in order."""
    data = convert_to_tensor(data, name="data")
    partitions = convert_to_tensor(partitions, name="partitions")
    attrs = {"num_partitions": int(num_partitions)}
    op = apply_op("DynamicPartition", [data, partitions], attrs, name=name or "DynamicPartition")
    return list(op.outputs)


# -- DynamicStitch -------------------------------------------------------------------------------
def _stitch_infer(ctx: OpContext) -> list:
    n = ctx.attrs["N"]
    for i in range(n):
        check_dtype(ctx, i, [_dt.int32], "indices")
    dtype = ctx.in_dtypes[n]
    for i in range(n, 2 * n):
        if ctx.in_dtypes[i] != dtype:
            raise ctx.type_error("DynamicStitch's data must all have one dtype")
    inner = None
    for i in range(n):
        index, data = ctx.in_shapes[i], ctx.in_shapes[n + i]
        if index is None or data is None:
            continue
        if len(data) < len(index) or merge_shapes(tuple(data[: len(index)]), index) is False:
            raise ctx.error(
                f"data[{i}].shape {shape_str(data)} does not start with indices[{i}].shape "
                f"{shape_str(index)}"
            )
        rest = tuple(data[len(index) :])
        merged = rest if inner is None else merge_shapes(inner, rest)
        if merged is False:
            raise ctx.error("The data of DynamicStitch must agree past their indices' dims")
        inner = merged
    values = [ctx.const(i) for i in range(n)]
    rows = None
    if all(v is not None for v in values):
        rows = max((int(v.max()) + 1 for v in values if v.size), default=0)
    return [(dtype, None if inner is None else (rows, *inner))]


def _stitch_reference(ctx: OpContext, *args: np.ndarray) -> np.ndarray:
    n = ctx.attrs["N"]
    indices, data = args[:n], args[n:]
    rows = max((int(i.max()) + 1 for i in indices if i.size), default=0)
    inner = data[0].shape[indices[0].ndim :]
    out = np.zeros((rows, *inner), dtype=data[0].dtype)
    if out.dtype == object:
        out[...] = b""
    for index, values in zip(indices, data):
        flat = index.reshape(-1)
        if (flat < 0).any():
            bad = int(np.flatnonzero(flat < 0)[0])
            raise errors.InvalidArgumentError(
                None, None, f"indices[{bad}] = {int(flat[bad])} is out of range"
            )
        out[flat] = values.reshape((flat.size, *inner))
    return out


def _stitch_grad(op: Operation, dy: Tensor) -> list:
    """TF's: each data's gradient gathered from the output's at its indices."""
    n = op.get_attr("N")
    indices = op.inputs[:n]
    return [None] * n + [gather(dy, index) for index in indices]


register(
    OpDef(
        "DynamicStitch",
        dtypes=_dt.STORABLE,
        infer=_stitch_infer,
        reference=_stitch_reference,
        grad=_stitch_grad,
        in_python=VALUE_DEPENDENT_REASON,
        input_names=("indices", "data"),
    )
)


def dynamic_stitch(indices: Sequence[Any], data: Sequence[Any], name: str | None = None) -> Tensor:
    """`tf.dynamic_stitch`: merged[indices[m][i]] = data[m][i] (later pieces win). With
    indices known when the graph is built it is a gather at a constant permutation of the
    concatenated data (native, any shape static); otherwise the DynamicStitch op (Python)."""
    if len(indices) != len(data) or not indices:
        raise ValueError(
            f"dynamic_stitch needs as many indices as data tensors (at least one), got "
            f"{len(indices)} and {len(data)}"
        )
    with name_scope(name, "DynamicStitch", [*indices, *data]) as scope:
        indices = [convert_to_tensor(i, dtype=_dt.int32, name="indices") for i in indices]
        data = [convert_to_tensor(d, name="data") for d in data]
        values = [constant_value(i.graph, (i.op.name, i.value_index)) for i in indices]
        shapes = [d._shape_tuple for d in data]
        if all(v is not None for v in values) and all(
            s is not None and None not in s for s in shapes
        ):
            return _stitch_constant(values, data, scope)
        attrs = {"N": len(indices)}
        return apply_op("DynamicStitch", [*indices, *data], attrs, name=scope).outputs[0]


def _stitch_constant(indices: list[np.ndarray], data: list[Tensor], scope: str) -> Tensor:
    """dynamic_stitch with constant indices: every row's source among the concatenated data
    rows (the last piece writing it), gathered. Rows no piece writes are zeros."""
    inner = data[0]._shape_tuple[indices[0].ndim :]
    rows = max((int(i.max()) + 1 for i in indices if i.size), default=0)
    pieces = [_array.reshape(d, [int(i.size), *inner]) for i, d in zip(indices, data)]
    pieces.append(_array.zeros([1, *inner], dtype=data[0].dtype))  # for rows nobody writes
    source = np.full(rows, sum(int(i.size) for i in indices), dtype=np.int32)
    offset = 0
    for index in indices:
        flat = index.reshape(-1)
        if (flat < 0).any():
            raise ValueError(f"dynamic_stitch index {int(flat[flat < 0][0])} is negative")
        source[flat] = offset + np.arange(flat.size, dtype=np.int32)
        offset += flat.size
    stacked = _array.concat(pieces, 0)
    return gather(stacked, constant(source, name="stitch_source"), name=scope)
