"""`tf.data.Dataset` (TF1's DatasetV1): sources, transformations, and iterators over them."""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.data.interleave import Interleave
from tfc.data.iterator import Iterator
from tfc.data.mapping import Map
from tfc.data.pipeline import Batch, Range, Repeat, Skip, Stage, Take, Tensors, TensorSlices
from tfc.data.shuffle import Shuffle
from tfc.data.structure import flatten, leaf_paths, pack
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.random_seed import get_seed
from tfc.ops.registry import constant_value


class Dataset:
    """A sequence of elements, each a structure (tuples, dicts) of arrays.

    Datasets are values: transformations return new datasets, and every iterator made from
    one runs through it from the start. The elements are computed on whole NumPy arrays when
    Session.run needs them (see tfc/data/iterator.py).
    """

    def __init__(self, stage: Stage) -> None:
        self._stage = stage

    # -- sources ---------------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """One element per row: element i is row i of every component."""
        arrays = _to_arrays(tensors, "Dataset.from_tensor_slices")
        paths = leaf_paths(tensors)
        for path, a in zip(paths, arrays):
            if a.ndim == 0:
                raise ValueError(
                    f"Dataset.from_tensor_slices: component {path} is a scalar; slicing needs "
                    "a tensor of rank >= 1"
                )
        for path, a in zip(paths[1:], arrays[1:]):
            if a.shape[0] != arrays[0].shape[0]:
                raise ValueError(
                    "Dataset.from_tensor_slices: all components must have the same size in "
                    f"their first dimension, but component {paths[0]} has "
                    f"{arrays[0].shape[0]} and component {path} has {a.shape[0]}"
                )
        return Dataset(TensorSlices(tensors, arrays))

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        """A dataset of one element: `tensors` itself."""
        return Dataset(Tensors(tensors, _to_arrays(tensors, "Dataset.from_tensors")))

    @staticmethod
    def range(*args: Any) -> Dataset:
        """`range(stop)`, `range(start, stop)`, `range(start, stop, step)`, as int64 scalars."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Dataset.range takes 1 to 3 arguments, got {len(args)}")
        values = [int_arg(a, "Dataset.range argument") for a in args]
        start, stop, step = (0, values[0], 1) if len(values) == 1 else (*values, 1)[:3]
        if step == 0:
            raise ValueError("Dataset.range: step must not be 0")
        return Dataset(Range(start, stop, step))

    # -- transformations -------------------------------------------------------------------------
    def batch(self, batch_size: Any, drop_remainder: bool = False) -> Dataset:
        """Consecutive elements stacked `batch_size` at a time; the last batch may be smaller
        unless `drop_remainder`, so the batch dimension is static only then."""
        size = int_arg(batch_size, "batch_size")
        if size <= 0:
            raise ValueError(f"Batch size must be greater than zero, got {size}")
        return Dataset(Batch(self._stage, size, bool(drop_remainder)))

    def shuffle(
        self,
        buffer_size: Any,
        seed: int | None = None,
        reshuffle_each_iteration: bool | None = None,
    ) -> Dataset:
        """Elements in random order through a buffer of `buffer_size` (tfc/data/shuffle.py).

        The seed combines with tf.set_random_seed's graph seed as for random ops; with
        `reshuffle_each_iteration` (the default) every pass, e.g. under repeat(), has its own
        order. Seeded orders replay in every session and after re-initialization.
        """
        size = int_arg(buffer_size, "buffer_size")
        if size <= 0:
            raise ValueError(f"buffer_size must be greater than zero, got {size}")
        seed = None if seed is None else int_arg(seed, "seed")
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return Dataset(Shuffle(self._stage, size, get_seed(seed), reshuffle))

    def repeat(self, count: Any = None) -> Dataset:
        """The dataset `count` times in a row; forever when `count` is None or -1."""
        n = -1 if count is None else int_arg(count, "count")
        if n < -1:
            raise ValueError(f"repeat: count must be >= -1 (or None for forever), got {n}")
        return Dataset(Repeat(self._stage, n))

    def take(self, count: Any) -> Dataset:
        """The first `count` elements; all of them when `count` is -1."""
        return Dataset(Take(self._stage, int_arg(count, "count")))

    def skip(self, count: Any) -> Dataset:
        """All but the first `count` elements; none when `count` is -1."""
        return Dataset(Skip(self._stage, int_arg(count, "count")))

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None) -> Dataset:
        """`map_func` applied to every element (the components of a tuple element are its
        arguments). It is traced once with tfc ops on placeholders of the element's dtypes and
        shapes, so it may use tf ops and Python operators; the traced graph is compiled and run
        per element. `num_parallel_calls` is accepted; elements are mapped in order."""
        if not callable(map_func):
            raise TypeError(f"Dataset.map: map_func must be callable, got {map_func!r}")
        return Dataset(Map(self._stage, map_func))

    def interleave(
        self,
        map_func: Callable[..., Dataset],
        cycle_length: Any = None,
        block_length: Any = 1,
        num_parallel_calls: Any = None,
    ) -> Dataset:
        """The elements of the dataset `map_func` makes of each element, `cycle_length` of
        those datasets at a time, `block_length` consecutive elements of each in turn, in TF's
        order (tfc/data/interleave.py). `map_func` is traced once on placeholders; the file
        datasets take their names from them. `num_parallel_calls` is accepted; the order is
        TF's deterministic one."""
        if not callable(map_func):
            raise TypeError(f"Dataset.interleave: map_func must be callable, got {map_func!r}")
        name = getattr(map_func, "__name__", repr(map_func))

        def trace(*args: Any) -> Stage:
            result = map_func(*args)
            if not isinstance(result, Dataset):
                raise TypeError(
                    f"Dataset.interleave: {name} must return a Dataset, got {type(result).__name__}"
                )
            return result._stage

        if cycle_length is None or cycle_length == -1:  # TF1: AUTOTUNE picks the CPU count
            cycle = os.cpu_count() or 1
        else:
            cycle = int_arg(cycle_length, "cycle_length")
        block = int_arg(block_length, "block_length")
        if cycle < 1 or block < 1:
            raise ValueError(
                f"Dataset.interleave: cycle_length and block_length must be positive, got "
                f"{cycle} and {block}"
            )
        return Dataset(Interleave(self._stage, trace, cycle, block))

    def prefetch(self, buffer_size: Any) -> Dataset:
        """Accepted for compatibility: elements are computed when Session.run asks for them."""
        int_arg(buffer_size, "buffer_size")
        return self

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        dataset = transformation_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError("Dataset.apply: the transformation must return a Dataset")
        return dataset

    # -- what the elements are -------------------------------------------------------------------
    @property
    def output_types(self) -> Any:
        return self._stage.spec.output_types()

    @property
    def output_shapes(self) -> Any:
        return self._stage.spec.output_shapes()

    @property
    def output_classes(self) -> Any:
        spec = self._stage.spec
        return pack(spec.template, [Tensor] * len(spec.dtypes))

    # -- iterators -------------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Iterator:
        """An iterator that starts on its first use in each session; no initializer to run."""
        return Iterator.one_shot(self._stage)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Iterator:
        """An iterator that must be started by running its `initializer` (which restarts it)."""
        return Iterator.initializable(self._stage)

    def __repr__(self) -> str:
        return f"<{type(self._stage).__name__}Dataset elements: {self._stage.spec.describe()}>"


# -- arguments ----------------------------------------------------------------------------------
def _to_arrays(tensors: Any, what: str) -> list[np.ndarray]:
    """The components of a structure of values as read-only, C-contiguous arrays."""
    leaves = flatten(tensors)
    if not leaves:
        raise ValueError(f"{what}: the element structure has no components")
    return [to_array(leaf, path, what) for leaf, path in zip(leaves, leaf_paths(tensors))]


def to_array(value: Any, path: str, what: str) -> np.ndarray:
    """One component of a dataset's source as a read-only array; `what` names the source in
    errors."""
    if hasattr(value, "_as_tensor"):
        value = value._as_tensor()
    if isinstance(value, Tensor):
        known = constant_value(value.graph, (value.op.name, value.value_index))
        if known is None:
            raise ValueError(
                f"{what}: component {path} is the tensor {value.name}, whose value is only "
                "known when the graph runs; tfc builds input pipelines from values known when "
                "the graph is built (NumPy arrays, Python lists, constants)"
            )
        value = known
    if value is None:
        raise TypeError(f"{what}: component {path} is None")
    try:
        dtype = _dt.infer_dtype(value)
        if dtype.is_string:  # bytes objects, whatever text type the value holds
            array = _dt.string_array(value)
        else:
            array = np.array(_dt.as_numpy(value, dtype), order="C", copy=True)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: cannot convert component {path} to a tensor: {e}") from None
    array.setflags(write=False)  # blocks are views of it: nothing may change it afterwards
    return array


def int_arg(value: Any, what: str) -> int:
    """An integer argument of a dataset, known when the graph is built."""
    if isinstance(value, Tensor):
        known = constant_value(value.graph, (value.op.name, value.value_index))
        if known is None or known.ndim != 0 or not np.issubdtype(known.dtype, np.integer):
            raise TypeError(f"{what} must be an integer known when the graph is built, got {value}")
        return int(known)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)
