"""`tf.IndexedSlices`: some rows of a tensor (values [n, ...] at row indices [n]), the gradient
a gather (an embedding lookup) gives its table, so that optimizers update the rows it read
instead of the whole table.

`dense_shape` is the shape of the tensor the rows belong to. Converting one to a tensor
(`tf.convert_to_tensor`, or any op taking it as an input) adds the rows of equal indices into
a dense tensor (UnsortedSegmentSum), as TF does. tfc adds one convention to TF's: a row whose
index is negative stands for no row (its values are zero); it is dropped when densified and
skipped by the sparse updates. The sharded embedding lookup uses it to hand each shard only
the ids it holds while every shape stays static.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.registry import apply_op, constant_value

__all__ = ["IndexedSlices", "IndexedSlicesValue"]


class IndexedSlicesValue(collections.namedtuple("IndexedSlicesValue",
                                                ["values", "indices", "dense_shape"])):  # fmt: skip
    """What Session.run returns for a fetched IndexedSlices: its three arrays."""

    __slots__ = ()


class IndexedSlices:
    """Rows `values` [n, ...] at `indices` [n] of a tensor of shape `dense_shape`."""

    def __init__(self, values: Any, indices: Any, dense_shape: Any = None) -> None:
        self._values = convert_to_tensor(values)
        self._indices = convert_to_tensor(indices)
        if self._indices.dtype not in (_dt.int32, _dt.int64):
            raise TypeError(f"IndexedSlices indices must be int32 or int64, got "
                            f"{self._indices.dtype.name}")  # fmt: skip
        self._dense_shape = None if dense_shape is None else convert_to_tensor(dense_shape)

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Tensor | None:
        return self._dense_shape

    @property
    def shape(self) -> TensorShape:
        """The shape of the dense tensor, as far as it is known when the graph is built."""
        if self._dense_shape is None:
            return TensorShape(None)
        t = self._dense_shape
        known = constant_value(t.graph, (t.op.name, t.value_index))
        if known is not None:
            return TensorShape([int(d) for d in np.asarray(known)])
        rows = t._shape_tuple
        rank = None if rows is None or rows[0] is None else rows[0]
        if rank is None:
            return TensorShape(None)
        return TensorShape([None, *self._values.shape.as_list()[1:]])

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def dtype(self) -> _dt.DType:
        return self._values.dtype

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def op(self) -> Any:
        return self._values.op

    @property
    def graph(self) -> Any:
        return self._values.graph

    @property
    def device(self) -> str:
        return self._values.device

    def __repr__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    def __neg__(self) -> IndexedSlices:
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def fetch_components(self) -> tuple[list, Any]:
        """For Session.run: the tensors to fetch, and how their values come back."""
        parts = [self._values, self._indices]
        if self._dense_shape is not None:
            parts.append(self._dense_shape)

        def result(values: list) -> IndexedSlicesValue:
            return IndexedSlicesValue(*values, *([None] if len(values) == 2 else []))

        return parts, result

    def _as_tensor(self, dtype: Any = None) -> Tensor:
        if dtype is not None and _dt.as_dtype(dtype) != self.dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {_dt.as_dtype(dtype).name} for "
                f"IndexedSlices with dtype {self.dtype.name}"
            )
        return densify(self)


def rows_of(dense_shape: Tensor) -> Tensor:
    """dense_shape[0] as a scalar tensor (a constant when the shape is known)."""
    known = constant_value(dense_shape.graph, (dense_shape.op.name, dense_shape.value_index))
    if known is not None:
        return constant(int(np.asarray(known)[0]), dtype=dense_shape.dtype)
    first = apply_op(
        "Slice", [dense_shape, constant([0], _dt.int32), constant([1], _dt.int32)]
    ).outputs[0]
    return apply_op("Reshape", [first, constant(np.zeros(0, np.int32))]).outputs[0]


def densify(slices: IndexedSlices) -> Tensor:
    """The dense tensor: rows of equal indices added, negative indices dropped."""
    if slices.dense_shape is None:
        raise ValueError(
            f"Tensor conversion requested for IndexedSlices without dense_shape: {slices}"
        )
    rows = rows_of(slices.dense_shape)
    return apply_op(
        "UnsortedSegmentSum", [slices.values, slices.indices, rows], name="IndexedSlicesToDense"
    ).outputs[0]


def as_dense(value: Any) -> Any:
    """An IndexedSlices as a dense tensor; anything else as it is."""
    return densify(value) if isinstance(value, IndexedSlices) else value
