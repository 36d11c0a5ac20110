"""`tf.SparseTensor`: a tensor given by the coordinates of its non-default elements.

A SparseTensor is TF1's composite of three tensors: `indices` (int64 [n, rank], the coordinates
in row-major order), `values` ([n], the elements there) and `dense_shape` (int64 [rank]).
It is no graph node of its own: ops taking one take its three tensors, ops giving one give
three outputs. Session.run fetches one as a `SparseTensorValue` and feeds one from a
SparseTensorValue or an `(indices, values, dense_shape)` tuple (`fetch_components`,
`feed_components`: tfc/client/request.py).
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, default_session, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.constant import convert_to_tensor, placeholder
from tfc.ops.registry import constant_value

__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "sparse_placeholder",
    "convert_to_tensor_or_sparse_tensor",
]


class SparseTensorValue(
    collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
):
    """What Session.run returns for a fetched SparseTensor: its three arrays."""

    __slots__ = ()


class SparseTensor:
    """`tf.SparseTensor(indices, values, dense_shape)`: `values[i]` sits at `indices[i]` of a
    tensor of shape `dense_shape`; every other element is zero (or the default a consumer
    gives)."""

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        with name_scope(None, "SparseTensor", []):
            self._indices = convert_to_tensor(indices, dtype=_dt.int64, name="indices")
            self._values = convert_to_tensor(values, name="values")
            self._dense_shape = convert_to_tensor(dense_shape, dtype=_dt.int64, name="dense_shape")
        cols = _dims_of(self._indices, 2, "indices")[1]
        _dims_of(self._values, 1, "values")
        rank = _dims_of(self._dense_shape, 1, "dense_shape")[0]
        if cols is not None and rank is not None and cols != rank:
            raise ValueError(
                f"SparseTensor indices have {cols} columns, but dense_shape has rank {rank}"
            )

    @classmethod
    def from_value(cls, value: Any) -> SparseTensor:
        """`SparseTensor.from_value`: a SparseTensor of a SparseTensorValue (or itself)."""
        if isinstance(value, SparseTensor):
            return value
        return cls(*as_sparse_value(value))

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> _dt.DType:
        return self._values.dtype

    @property
    def op(self) -> Any:
        return self._values.op

    @property
    def graph(self) -> Any:
        return self._values.graph

    @property
    def shape(self) -> TensorShape:
        """The dense shape as far as it is known when the graph is built."""
        t = self._dense_shape
        known = constant_value(t.graph, (t.op.name, t.value_index))
        if known is not None:
            return TensorShape([int(d) for d in np.asarray(known)])
        rank = t.shape.as_list()[0] if t.shape.rank is not None else None
        return TensorShape(None if rank is None else [None] * rank)

    def get_shape(self) -> TensorShape:
        return self.shape

    def eval(self, feed_dict: Any = None, session: Any = None) -> SparseTensorValue:
        """The value of this SparseTensor in `session` (default: the default session)."""
        return (session or default_session("evaluate a SparseTensor")).run(self, feed_dict)

    def consumers(self) -> list:
        return [c for t in self.components() for c in t.consumers()]

    def components(self) -> tuple[Tensor, Tensor, Tensor]:
        return self._indices, self._values, self._dense_shape

    def fetch_components(self) -> tuple[list, Any]:
        """For Session.run: the tensors to fetch, and how their values come back."""
        return list(self.components()), lambda values: SparseTensorValue(*values)

    def feed_components(self, value: Any) -> list[tuple[Tensor, Any]]:
        """For Session.run's feed_dict: the value fed to each of the three tensors."""
        return list(zip(self.components(), as_sparse_value(value)))

    def __repr__(self) -> str:
        return (
            f"SparseTensor(indices={self._indices}, values={self._values}, "
            f"dense_shape={self._dense_shape})"
        )


def _dims_of(t: Tensor, rank: int, what: str) -> list:
    dims = t.shape.as_tuple()
    if dims is None:
        return [None] * rank
    if len(dims) != rank:
        raise ValueError(f"SparseTensor {what} must have rank {rank}, got shape {t.shape}")
    return list(dims)


def as_sparse_value(value: Any) -> SparseTensorValue:
    """A SparseTensorValue or an (indices, values, dense_shape) triple, as a SparseTensorValue."""
    if isinstance(value, SparseTensorValue):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 3:
        return SparseTensorValue(*value)
    raise TypeError(
        "A SparseTensor is fed a SparseTensorValue or an (indices, values, dense_shape) tuple, "
        f"not {type(value).__name__}"
    )


def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """`tf.sparse_placeholder`: a SparseTensor fed at run time (its three tensors are
    placeholders; a fully known `shape` makes dense_shape a constant, as in TF)."""
    with name_scope(name, "SparseTensor", []):
        static = TensorShape(shape)
        rank = static.rank
        values = placeholder(dtype, [None], name="values")
        indices = placeholder(_dt.int64, [None, rank], name="indices")
        if static.is_fully_defined():
            dense_shape = convert_to_tensor(static.as_list(), _dt.int64, name="shape")
        else:
            dense_shape = placeholder(_dt.int64, [rank], name="shape")
        return SparseTensor(indices, values, dense_shape)


def is_sparse(value: Any) -> bool:
    """Whether `value` is a SparseTensor or a SparseTensorValue."""
    return isinstance(value, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(
    value: Any, dtype: Any = None, name: str | None = None
) -> Tensor | SparseTensor:
    """`tf.convert_to_tensor_or_sparse_tensor`: a SparseTensor (or SparseTensorValue) as a
    SparseTensor, anything else as convert_to_tensor makes it."""
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and _dt.as_dtype(dtype) != value.dtype:
            raise ValueError(
                f"Sparse dtype: requested = {_dt.as_dtype(dtype).name}, actual = {value.dtype.name}"
            )
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
