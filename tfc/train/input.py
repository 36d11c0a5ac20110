"""TF1's queue-based input pipeline (tf.train.*): producers that fill a queue with an input's
elements epoch after epoch, and the batching functions that gather elements into batches,
each backed by a queue and a QueueRunner in the graph's QUEUE_RUNNERS collection.

    limit_epochs, input_producer, range_input_producer, slice_input_producer,
    string_input_producer
    batch, batch_join, shuffle_batch, shuffle_batch_join and their maybe_* variants

As TF1 builds them: an epoch is one enqueue_many of the whole input (shuffled first when asked,
by RandomShuffle: TF's draws), counted by limit_epochs's local variable "epochs" (run
tf.local_variables_initializer()); once `num_epochs` have been enqueued the producer's runner
closes its queue, and the batches after the last full one end in OutOfRangeError (or come
smaller with allow_smaller_final_batch). The summaries TF1 adds of how full each queue is are
not made (tfc has no tf.summary yet).
"""

from __future__ import annotations

from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, control_dependencies, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.array import gather, identity, shape, size
from tfc.ops.constant import convert_to_tensor
from tfc.ops.io_ops import matching_files
from tfc.ops.logging_ops import Assert
from tfc.ops.logic import greater
from tfc.ops.queues import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue
from tfc.ops.random_sampling import random_shuffle
from tfc.ops.registry import constant_value
from tfc.ops.sequences import range as _range
from tfc.ops.sparse_serialize import (
    deserialize_many_sparse,
    serialize_many_sparse,
    serialize_sparse,
)
from tfc.ops.sparse_tensor import SparseTensor
from tfc.train.queue_runner import QueueRunner, add_queue_runner
from tfc.variables import Variable

__all__ = [
    "match_filenames_once",
    "limit_epochs",
    "input_producer",
    "range_input_producer",
    "slice_input_producer",
    "string_input_producer",
    "batch",
    "batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
]


# -- producers ----------------------------------------------------------------------------------
def match_filenames_once(pattern: Any, name: str | None = None) -> Variable:
    """`tf.train.match_filenames_once`: a local variable (tf.string, in
    GraphKeys.LOCAL_VARIABLES) holding the sorted names of the files that match the glob
    `pattern` when tf.local_variables_initializer runs, as in TF1."""
    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(
            matching_files(pattern),
            trainable=False,
            validate_shape=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
            name=scope,
        )


def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """`tensor`, `num_epochs` times: each evaluation counts up the local variable "epochs";
    the one after the last raises OutOfRangeError. None: forever."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs") as scope:
        epochs = Variable(
            convert_to_tensor(0, dtype=_dt.int64),
            name="epochs",
            trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
        )
        counter = epochs.count_up_to(num_epochs)
        with control_dependencies([counter]):
            return identity(tensor, name=scope)


def _shuffle_rows(x: Tensor, seed: int | None) -> Tensor:
    """RandomShuffle of the rows of `x`. Strings are gathered by shuffled row numbers (a
    Python stage draws no random numbers; the order of n rows depends only on n and the
    stream, so it is the order RandomShuffle gives the strings themselves)."""
    if x.dtype != _dt.string:
        return random_shuffle(x, seed=seed)
    rows = x.get_shape().as_tuple()
    if rows is None or rows[0] is None:
        raise ValueError(f"shuffling strings needs their number when the graph is built: {x}")
    return gather(x, random_shuffle(_range(rows[0]), seed=seed))


def input_producer(
    input_tensor: Any,
    element_shape: Any = None,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    summary_name: str | None = None,
    name: str | None = None,
    cancel_op: Any = None,
) -> QueueBase:
    """A FIFOQueue of the rows of `input_tensor`, enqueued an epoch at a time (each epoch in a
    new random order when `shuffle`) by a QueueRunner; `num_epochs` None: forever."""
    with name_scope(name, "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        rows = input_tensor.get_shape()
        if rows.ndims is None or rows.ndims == 0:
            raise ValueError(f"input_producer needs a tensor of rank >= 1, got {input_tensor}")
        shape_of_element = TensorShape(rows.as_tuple()[1:]).merge_with(
            TensorShape(element_shape) if element_shape is not None else TensorShape(None)
        )
        if not shape_of_element.is_fully_defined():
            raise ValueError(
                "Either `input_tensor` must have a fully defined shape or `element_shape` must "
                "be specified"
            )
        if shuffle:  # a new order each epoch, TF's draws
            input_tensor = _shuffle_rows(input_tensor, seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(
            capacity=capacity, dtypes=[input_tensor.dtype], shapes=[shape_of_element],
            shared_name=shared_name, name=name or "fifo_queue",
        )  # fmt: skip
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        return queue


def string_input_producer(
    string_tensor: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
    cancel_op: Any = None,
) -> QueueBase:
    """A queue of the strings of `string_tensor` (file names, for a reader), epoch after epoch,
    each shuffled when `shuffle`; an empty tensor fails the first enqueue."""
    not_null = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, (Tensor, Variable)) and not len(string_tensor):
        raise ValueError(not_null)
    with name_scope(name, "input_producer") as scope:
        strings = convert_to_tensor(string_tensor, dtype=_dt.string)
        with control_dependencies([Assert(greater(size(strings), 0), [not_null])]):
            strings = identity(strings)
        return input_producer(
            strings, shuffle=shuffle, seed=seed, num_epochs=num_epochs, capacity=capacity,
            shared_name=shared_name, name=scope, summary_name=f"fraction_of_{capacity}_full",
            cancel_op=cancel_op,
        )  # fmt: skip


def range_input_producer(
    limit: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> QueueBase:
    """A queue of the integers 0 .. limit-1, epoch after epoch (each shuffled when `shuffle`)."""
    with name_scope(name, "input_producer") as scope:
        values = _range(limit)
        return input_producer(
            values, [], num_epochs, shuffle, seed, capacity, shared_name,
            f"fraction_of_{capacity}_full", scope,
        )  # fmt: skip


def slice_input_producer(
    tensor_list: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> list[Tensor]:
    """One row of each tensor of `tensor_list` per run (the same row of each), every row
    once per epoch, in order or shuffled."""
    with name_scope(name, "input_producer"):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        rows = {t.get_shape().as_tuple()[0] for t in tensors if t.get_shape().ndims}
        if len(rows - {None}) > 1:
            raise ValueError(
                f"The tensors of slice_input_producer differ in their number of rows: {rows}"
            )
        queue = range_input_producer(
            shape(tensors[0])[0], num_epochs=num_epochs, shuffle=shuffle, seed=seed,
            capacity=capacity, shared_name=shared_name,
        )  # fmt: skip
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


# -- batching ------------------------------------------------------------------------------------
def _as_tensor_list(tensors: Any) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    return [tensors]


def _as_original_type(original: Any, dequeued: Any) -> Any:
    if isinstance(original, dict):
        if len(original) == 1:
            dequeued = [dequeued]  # one component dequeues as a tensor, not a list
        return {k: dequeued[i] for i, k in enumerate(sorted(original, key=str))}
    return dequeued


def _validate(tensor_list: list) -> list[Tensor]:
    if not tensor_list:
        raise ValueError("Expected at least one tensor in batch().")
    return [t if isinstance(t, SparseTensor) else convert_to_tensor(t) for t in tensor_list]


def _store_sparse(lists: list[list[Any]], enqueue_many: bool) -> tuple[list[list[Tensor]], list]:
    """The lists with each SparseTensor serialized into strings (a queue holds tensors of one
    shape; a SparseTensor's size varies), and per position the (dtype, rank) to restore after
    the dequeue (None for a tensor), as TF1's batching does."""
    sparse: list = [None] * len(lists[0])
    out = []
    for tensors in lists:
        stored = []
        for i, t in enumerate(tensors):
            if isinstance(t, SparseTensor):
                rank = t.dense_shape.shape.as_tuple()
                if rank is None or rank[0] is None:
                    raise ValueError(f"batching a SparseTensor needs its rank: {t}")
                sparse[i] = (t.dtype, rank[0] if enqueue_many else rank[0] + 1)
                t = serialize_many_sparse(t) if enqueue_many else serialize_sparse(t)
            elif sparse[i] is not None:
                raise TypeError(f"batch_join: input {i} is a SparseTensor in one list only")
            stored.append(t)
        out.append(stored)
    return out, sparse


def _restore_sparse(dequeued: Any, sparse: list) -> Any:
    """The dequeued batch with the serialized SparseTensors made SparseTensors again."""
    if not any(sparse):
        return dequeued
    items = list(dequeued) if isinstance(dequeued, (list, tuple)) else [dequeued]
    for i, kind in enumerate(sparse):
        if kind is not None:
            items[i] = deserialize_many_sparse(items[i], kind[0], kind[1])
    return items if isinstance(dequeued, (list, tuple)) else items[0]


def _validate_join(tensor_list_list: Any) -> list[list[Tensor]]:
    lists = [_validate(_as_tensor_list(tl)) for tl in tensor_list_list]
    if not lists:
        raise ValueError("Expected at least one input in batch_join().")
    if any(len(tl) != len(lists[0]) for tl in lists):
        raise ValueError(
            f"Expected the tensor lists of batch_join() to be of one length, got "
            f"{[len(tl) for tl in lists]}"
        )
    return lists


def _dtypes(tensor_list_list: list[list[Tensor]]) -> list[_dt.DType]:
    types = [t.dtype for t in tensor_list_list[0]]
    for other in tensor_list_list[1:]:
        if [t.dtype for t in other] != types:
            raise TypeError(
                f"Expected types to be consistent: {[t.name for t in types]} vs. "
                f"{[t.dtype.name for t in other]}."
            )
    return types


def _shapes(tensor_list_list: list[list[Tensor]], shapes: Any, enqueue_many: bool) -> Any:
    """The queue's shapes: given, else each component's shape (without the leading batch
    dimension with enqueue_many), merged over the lists."""
    if shapes is not None:
        return shapes
    merged = []
    for i in range(len(tensor_list_list[0])):
        shape_i: TensorShape | None = None
        for tl in tensor_list_list:
            s = tl[i].get_shape()
            if s.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
            if enqueue_many:
                if s.ndims == 0:
                    raise ValueError(f"Shape {s} must have rank at least 1")
                s = TensorShape(s.as_tuple()[1:])
            shape_i = s if shape_i is None else shape_i.merge_with(s)
        merged.append(shape_i)
    return merged


def _keep(keep_input: Any) -> Any:
    """None when every element is kept (keep_input a true constant), else the keep tensor."""
    if isinstance(keep_input, bool):
        return None if keep_input else False
    tensor = convert_to_tensor(keep_input, dtype=_dt.bool_, name="keep_input")
    value = constant_value(tensor.graph, (tensor.op.name, tensor.value_index))
    if value is not None and value.shape == () and bool(value):
        return None
    return tensor


def _enqueue(
    queue: QueueBase,
    tensor_lists: list[list[Tensor]],
    enqueue_many: bool,
    keep_input: Any,
    threads: int = 1,
) -> None:
    """One enqueue op per list, run by a QueueRunner of the graph: a thread each, or (one
    list) `threads` threads running the one op, as TF1 runs them."""
    keep = _keep(keep_input)
    ops = []
    for tensors in tensor_lists:
        if keep is None:
            op = queue.enqueue_many(tensors) if enqueue_many else queue.enqueue(tensors)
        else:
            op = queue.enqueue_selected(tensors, keep, enqueue_many)
        ops.append(op)
    add_queue_runner(QueueRunner(queue, ops * int(threads)))


def _dequeue(queue: QueueBase, batch_size: Any, allow_smaller_final_batch: bool, name: str) -> Any:
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _batch(
    tensors: Any, batch_size: Any, keep_input: Any, num_threads: int, capacity: int,
    enqueue_many: bool, shapes: Any, dynamic_pad: bool, allow_smaller_final_batch: bool,
    shared_name: str | None, name: str | None, join: bool,
) -> Any:  # fmt: skip
    with name_scope(name, "batch_join" if join else "batch") as scope:
        lists = _validate_join(tensors) if join else [_validate(_as_tensor_list(tensors))]
        lists, sparse = _store_sparse(lists, enqueue_many)
        types, queue_shapes = _dtypes(lists), _shapes(lists, shapes, enqueue_many)
        kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        queue = kind(capacity=capacity, dtypes=types, shapes=queue_shapes, shared_name=shared_name)
        _enqueue(queue, lists, enqueue_many, keep_input, num_threads)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        dequeued = _restore_sparse(dequeued, sparse)
        return _as_original_type(tensors[0] if join else tensors, dequeued)


def _shuffle_batch(
    tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int, keep_input: Any,
    num_threads: int, seed: int | None, enqueue_many: bool, shapes: Any,
    allow_smaller_final_batch: bool, shared_name: str | None, name: str | None, join: bool,
) -> Any:  # fmt: skip
    with name_scope(name, "shuffle_batch_join" if join else "shuffle_batch") as scope:
        if capacity <= min_after_dequeue:
            raise ValueError(
                f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}."
            )
        lists = _validate_join(tensors) if join else [_validate(_as_tensor_list(tensors))]
        lists, sparse = _store_sparse(lists, enqueue_many)
        types, queue_shapes = _dtypes(lists), _shapes(lists, shapes, enqueue_many)
        queue = RandomShuffleQueue(
            capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed, dtypes=types,
            shapes=queue_shapes, shared_name=shared_name,
        )  # fmt: skip
        _enqueue(queue, lists, enqueue_many, keep_input, num_threads)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        dequeued = _restore_sparse(dequeued, sparse)
        return _as_original_type(tensors[0] if join else tensors, dequeued)


def batch(
    tensors: Any,
    batch_size: Any,
    num_threads: int = 1,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Batches of `batch_size` elements of `tensors` (a list or dict of tensors; rows of them
    with `enqueue_many`), gathered in a FIFOQueue (a PaddingFIFOQueue with `dynamic_pad`)
    filled by `num_threads` threads."""
    return _batch(
        tensors, batch_size, True, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
        allow_smaller_final_batch, shared_name, name, join=False,
    )  # fmt: skip


def maybe_batch(
    tensors: Any,
    keep_input: Any,
    batch_size: Any,
    num_threads: int = 1,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """batch() of the elements whose `keep_input` (a bool scalar, or vector with
    enqueue_many) is true."""
    return _batch(
        tensors, batch_size, keep_input, num_threads, capacity, enqueue_many, shapes,
        dynamic_pad, allow_smaller_final_batch, shared_name, name, join=False,
    )  # fmt: skip


def batch_join(
    tensors_list: Any,
    batch_size: Any,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """batch() of several inputs of one structure, each enqueued by a thread of its own."""
    return _batch(
        tensors_list, batch_size, True, 1, capacity, enqueue_many, shapes, dynamic_pad,
        allow_smaller_final_batch, shared_name, name, join=True,
    )  # fmt: skip


def maybe_batch_join(
    tensors_list: Any,
    keep_input: Any,
    batch_size: Any,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """batch_join() of the elements whose `keep_input` is true."""
    return _batch(
        tensors_list, batch_size, keep_input, 1, capacity, enqueue_many, shapes, dynamic_pad,
        allow_smaller_final_batch, shared_name, name, join=True,
    )  # fmt: skip


def shuffle_batch(
    tensors: Any,
    batch_size: Any,
    capacity: int,
    min_after_dequeue: int,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Batches of elements taken at random from a RandomShuffleQueue holding more than
    `min_after_dequeue` of them (until its input ends)."""
    return _shuffle_batch(
        tensors, batch_size, capacity, min_after_dequeue, True, num_threads, seed,
        enqueue_many, shapes, allow_smaller_final_batch, shared_name, name, join=False,
    )  # fmt: skip


def maybe_shuffle_batch(
    tensors: Any,
    batch_size: Any,
    capacity: int,
    min_after_dequeue: int,
    keep_input: Any,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """shuffle_batch() of the elements whose `keep_input` is true."""
    return _shuffle_batch(
        tensors, batch_size, capacity, min_after_dequeue, keep_input, num_threads, seed,
        enqueue_many, shapes, allow_smaller_final_batch, shared_name, name, join=False,
    )  # fmt: skip


def shuffle_batch_join(
    tensors_list: Any,
    batch_size: Any,
    capacity: int,
    min_after_dequeue: int,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """shuffle_batch() of several inputs of one structure, a thread each."""
    return _shuffle_batch(
        tensors_list, batch_size, capacity, min_after_dequeue, True, 1, seed, enqueue_many,
        shapes, allow_smaller_final_batch, shared_name, name, join=True,
    )  # fmt: skip


def maybe_shuffle_batch_join(
    tensors_list: Any,
    batch_size: Any,
    capacity: int,
    min_after_dequeue: int,
    keep_input: Any,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """shuffle_batch_join() of the elements whose `keep_input` is true."""
    return _shuffle_batch(
        tensors_list, batch_size, capacity, min_after_dequeue, keep_input, 1, seed,
        enqueue_many, shapes, allow_smaller_final_batch, shared_name, name, join=True,
    )  # fmt: skip
