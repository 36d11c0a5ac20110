"""Variables split into shards along one axis (`tf.get_variable(..., partitioner=...)`).

Each shard is an ordinary variable named NAME/part_K, so placement puts the shards on
different ps tasks (`replica_device_setter` deals them out round-robin) and the optimizer
updates each one where it lives; reading the whole value concatenates the shards, and the
gradient of that concatenation hands each shard its rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import TensorShape

__all__ = [
    "fixed_size_partitioner",
    "min_max_variable_partitioner",
    "variable_axis_size_partitioner",
    "PartitionedVariable",
]


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


def _bytes_per_element(dtype: Any, bytes_per_string_element: int) -> int:
    dtype = _dt.as_dtype(dtype)
    return bytes_per_string_element if dtype.is_string else dtype.size


def min_max_variable_partitioner(
    max_partitions: int = 1,
    axis: int = 0,
    min_slice_size: int = 256 << 10,
    bytes_per_string_element: int = 16,
) -> Callable[..., list[int]]:
    """A partitioner giving each shard at least `min_slice_size` bytes: ceil(bytes /
    min_slice_size) shards along `axis`, at most `max_partitions` and the axis's length, at
    least 1 (TF's formula)."""

    def partitioner(shape: Any, dtype: Any = _dt.float32, **unused: Any) -> list[int]:
        shape = TensorShape(shape)
        dims = shape.as_list()
        if axis >= len(dims):
            raise ValueError(
                f"Cannot partition variable along axis {axis} when shape is only {shape}"
            )
        total_bytes = shape.num_elements() * _bytes_per_element(dtype, bytes_per_string_element)
        parts = [1] * len(dims)
        wanted = int(math.ceil(total_bytes / min_slice_size))
        parts[axis] = max(1, min(dims[axis], max_partitions, wanted))
        return parts

    return partitioner


def variable_axis_size_partitioner(
    max_shard_bytes: int,
    axis: int = 0,
    bytes_per_string_element: int = 16,
    max_shards: int | None = None,
) -> Callable[..., list[int]]:
    """A partitioner keeping each shard under `max_shard_bytes` by splitting `axis` (into
    every row, at most, when one row is already larger), at most `max_shards` shards."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(
            "Both max_shard_bytes and bytes_per_string_element must be positive. "
            f"Currently, max_shard_bytes is {max_shard_bytes} and"
            f"bytes_per_string_element is {bytes_per_string_element}"
        )
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def partitioner(shape: Any, dtype: Any = _dt.float32, **unused: Any) -> list[int]:
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        dims = shape.as_list()
        element = _bytes_per_element(dtype, bytes_per_string_element)
        bytes_per_slice = 1.0 * (shape.num_elements() / dims[axis]) * element
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * dims[axis] / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        parts = [1] * len(dims)
        parts[axis] = axis_shards
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
