"""Variables split into shards along one axis (`tf.get_variable(..., partitioner=...)`).

Each shard is an ordinary variable named NAME/part_K, so placement puts the shards on
different ps tasks (`replica_device_setter` deals them out round-robin) and the optimizer
updates each one where it lives; reading the whole value concatenates the shards, and the
gradient of that concatenation hands each shard its rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import TensorShape

__all__ = ["fixed_size_partitioner", "PartitionedVariable"]


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable[..., list[int]]:
    """A partitioner that splits `axis` into `num_shards` shards (fewer if it is shorter)."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {num_shards}")

    def partitioner(shape: Any, dtype: Any = None) -> list[int]:
        dims = TensorShape(shape).as_list()
        if not -len(dims) <= axis < len(dims):
            raise ValueError(f"partition axis {axis} is out of range for shape {dims}")
        parts = [1] * len(dims)
        parts[axis] = max(1, min(num_shards, dims[axis]))
        return parts

    return partitioner


class PartitionedVariable:
    """The shards of one variable: iterate over them, or use it as a tensor (concatenated)."""

    def __init__(self, name: str, shape: TensorShape, dtype: _dt.DType, variables: list,
                 axis: int) -> None:  # fmt: skip
        self.name = name
        self._shape = shape
        self.dtype = dtype
        self._variables = variables
        self._axis = axis
        self._concat = None

    def __iter__(self):
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def _get_variable_list(self) -> list:
        return list(self._variables)

    def as_tensor(self):
        from tfc.ir.graph import name_scope
        from tfc.ops.array_join import concat

        if self._concat is None:
            with name_scope(None), name_scope(self.name + "/ConcatPartitions/"):
                self._concat = concat([v.value() for v in self._variables], self._axis)
        return self._concat

    def _as_tensor(self, dtype: Any = None):
        return self.as_tensor()


def shard_shapes(shape: TensorShape, parts: list[int]) -> tuple[int, list[tuple[list[int], int]]]:
    """The split axis and, per shard, its shape and offset: the first (dim % n) shards get
    one extra row, as TensorFlow splits."""
    dims = shape.as_list()
    split = [i for i, p in enumerate(parts) if p > 1]
    if len(parts) != len(dims) or len(split) > 1:
        raise ValueError(f"a partitioner must split one axis of {dims}, got {parts}")
    axis = split[0] if split else 0
    n = parts[axis]
    base, extra = divmod(dims[axis], n)
    shards, offset = [], 0
    for k in range(n):
        size = base + (1 if k < extra else 0)
        shard = list(dims)
        shard[axis] = size
        shards.append((shard, offset))
        offset += size
    return axis, shards


def create_partitioned_variable(get_variable: Callable, full: str, name: str, shape: Any,
                                dtype: _dt.DType, initializer: Any, partitioner: Callable,
                                **kwargs: Any) -> PartitionedVariable:  # fmt: skip
    """The shards NAME/part_K of a new variable, made by `get_variable` (tfc.variables)."""
    if shape is None or not TensorShape(shape).is_fully_defined():
        raise ValueError(f"a partitioned variable ({full}) needs a fully defined shape")
    shape = TensorShape(shape)
    axis, shards = shard_shapes(shape, list(partitioner(shape=shape, dtype=dtype)))
    variables = []
    for k, (shard, offset) in enumerate(shards):
        if initializer is not None and not callable(initializer):
            value = np.asarray(initializer)  # a value: each shard takes its rows
            index = [slice(None)] * len(shard)
            index[axis] = slice(offset, offset + shard[axis])
            part_init: Any = value[tuple(index)]
        else:
            part_init = initializer
        variables.append(
            get_variable(
                f"{name}/part_{k}", shape=shard, dtype=dtype, initializer=part_init, **kwargs
            )  # fmt: skip
        )
    return PartitionedVariable(full, shape, dtype, variables, axis)
