"""Queues of tensors: tf.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, PriorityQueue (TF1's
data_flow_ops), their ops, and the QueueBase API that builds them.

A queue's elements live in the Session, in native memory (tfc/backend/native_queue.py), shared by
every run and thread of the session. Its ops are run by the Session around each compiled
program (OpDef.session_side): the dequeues, sizes and is_closed of a run before the program,
their outputs fed to it; its enqueues and closes after it, the enqueued components fetched from
it (tfc/client/queue_runs.py). So a compiled program never blocks: a run that waits on a queue
waits before or after its program, holding no lock of the session.

Every queue op carries the queue's description (attribute "queue": `QueueSpec.as_attr()`, plain
values, so meta graph files hold it), so the session finds the queue's state from any one of
them; the creation op (FIFOQueueV2...) is the queue's node in the graph, where tf.container and
shared_name are recorded.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph, name_scope
from tfc.ir.random_seed import get_seed
from tfc.ir.tensor_shape import Shape, TensorShape, merge_shapes, shape_str
from tfc.ops.constant import convert_to_tensor
from tfc.ops.registry import REGISTRY, OpContext, OpDef, apply_op, constant_value, register

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue"]

# the creation op of each kind of queue, and the name its messages give it (TF's)
QUEUE_KINDS = {
    "FIFOQueueV2": "FIFOQueue",
    "PaddingFIFOQueueV2": "PaddingFIFOQueue",
    "RandomShuffleQueueV2": "RandomShuffleQueue",
    "PriorityQueueV2": "PriorityQueue",
}
ENQUEUE_OPS = frozenset({"QueueEnqueueV2", "QueueEnqueueManyV2"})
DEQUEUE_OPS = frozenset({"QueueDequeueV2", "QueueDequeueManyV2", "QueueDequeueUpToV2"})
QUERY_OPS = frozenset({"QueueSizeV2", "QueueIsClosedV2"})

_has_queues: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph -> (version, bool)


def graph_has_queues(graph: Graph) -> bool:
    """Whether `graph` holds a session-side op, a queue's or a reader's (a run of any other
    graph skips the queue hook); looked up once per version of the graph."""
    known = _has_queues.get(graph)
    if known is None or known[0] != graph.version:
        found = any(
            op in REGISTRY and REGISTRY[op].session_side for _, op in graph.nx.nodes(data="op")
        )
        known = _has_queues[graph] = (graph.version, found)
    return known[1]


@dataclass(frozen=True)
class QueueSpec:
    """What a queue is: its creation node, kind, capacity and components, and where its state
    is kept (the resource container, and the name sessions share it by when not empty)."""

    op: str  # the creation node's name
    type: str  # a key of QUEUE_KINDS
    capacity: int
    dtypes: tuple[_dt.DType, ...]
    shapes: tuple[Shape, ...]  # one per component; None: unknown (a queue made without shapes)
    min_after_dequeue: int = 0
    seed: int = 0
    seed2: int = 0
    container: str = ""
    shared_name: str = ""

    @property
    def label(self) -> str:
        """How messages name the queue: "FIFOQueue 'fifo_queue'"."""
        return f"{QUEUE_KINDS[self.type]} '{self.shared_name or self.op}'"

    @property
    def padded(self) -> bool:
        return self.type == "PaddingFIFOQueueV2"

    def as_attr(self) -> dict:
        """The description as the queue ops' "queue" attribute: plain values only."""
        return {
            "op": self.op, "type": self.type, "capacity": self.capacity,
            "dtypes": list(self.dtypes), "shapes": list(self.shapes),
            "min_after_dequeue": self.min_after_dequeue, "seed": self.seed, "seed2": self.seed2,
            "container": self.container, "shared_name": self.shared_name,
        }  # fmt: skip

    @staticmethod
    def of(op_attrs: dict) -> QueueSpec:
        """The description a queue op's attributes hold."""
        a = dict(op_attrs["queue"])
        a["dtypes"] = tuple(a["dtypes"])
        a["shapes"] = tuple(None if s is None else tuple(s) for s in a["shapes"])
        return QueueSpec(**a)

    def check_element(self, component: int, shape: tuple[int, ...], op: str) -> str | None:
        """Why an element of `shape` cannot go into component `component` (None if it can)."""
        expected = self.shapes[component]
        if expected is None or merge_shapes(expected, shape) is not False:
            return None
        return (
            f"Shape mismatch in tuple component {component}. Expected {shape_str(expected)}, "
            f"got {shape_str(shape)} (op '{op}' on {self.label})"
        )


def _session_side(op_type: str, infer: Any) -> None:
    register(
        OpDef(
            op_type,
            infer=infer,
            differentiable=False,
            stateful=True,  # every run acts on the queue: never merged, folded or pruned
            host_only=True,
            session_side=True,
        )
    )


for _type in QUEUE_KINDS:
    _session_side(_type, lambda ctx: [])
_session_side("QueueEnqueueV2", lambda ctx: [])
_session_side("QueueEnqueueManyV2", lambda ctx: [])
_session_side("QueueCloseV2", lambda ctx: [])
_session_side("QueueSizeV2", lambda ctx: [(_dt.int32, ())])
_session_side("QueueIsClosedV2", lambda ctx: [(_dt.bool_, ())])


def _dequeue_infer(batch: str):
    """Dequeue's outputs: one element ("one"), `n` of them ("many"), or up to `n` ("up_to")."""

    def infer(ctx: OpContext) -> list:
        spec = QueueSpec.of(ctx.attrs)
        if batch == "one":
            return list(zip(spec.dtypes, spec.shapes))
        lead = ctx.attrs["n"] if batch == "many" else None
        return [(d, None if s is None else (lead, *s)) for d, s in zip(spec.dtypes, spec.shapes)]

    return infer


_session_side("QueueDequeueV2", _dequeue_infer("one"))
_session_side("QueueDequeueManyV2", _dequeue_infer("many"))
_session_side("QueueDequeueUpToV2", _dequeue_infer("up_to"))


# -- the public API -------------------------------------------------------------------------------
def _as_type_list(dtypes: Any) -> list[_dt.DType]:
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    return [_dt.as_dtype(d) for d in dtypes]


def _as_shape_list(
    shapes: Any, dtypes: list, unknown_dim_allowed: bool = False
) -> list[TensorShape] | None:
    """TF's shapes argument of a queue: None, one shape, or one shape per component."""
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of TensorShapes.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]  # one shape given as a list of dimensions
    shapes = [TensorShape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    if len(shapes) != len(dtypes):
        raise ValueError(
            f"Queue shapes must have the same length as dtypes: {len(dtypes)} dtypes and "
            f"{len(shapes)} shapes"
        )
    return shapes


def _as_name_list(names: Any, dtypes: list) -> list[str] | None:
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


class QueueBase:
    """TF1's queue API over a queue's description: enqueue, enqueue_many, dequeue,
    dequeue_many, dequeue_up_to, close, is_closed, size. Made by the subclasses (FIFOQueue...)."""

    def __init__(
        self,
        op_type: str,
        capacity: int,
        dtypes: list[_dt.DType],
        shapes: list[TensorShape] | None,
        names: list[str] | None,
        name: str,
        shared_name: str | None,
        extra: dict | None = None,
    ) -> None:
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        graph = get_default_graph()
        node = name[:-1] if name.endswith("/") else graph.unique_name(name)  # "scope/": as is
        extra = dict(extra or {})
        spec = QueueSpec(
            op=node,
            type=op_type,
            capacity=int(capacity),
            dtypes=tuple(dtypes),
            shapes=tuple(s.as_tuple() for s in shapes) if shapes else (None,) * len(dtypes),
            container=graph.current_container,
            shared_name=shared_name or "",
            **extra,
        )  # fmt: skip
        attrs = {
            "queue": spec.as_attr(),
            "component_types": list(dtypes),
            "shapes": list(spec.shapes) if shapes is not None else [],
            "capacity": spec.capacity,
            "container": spec.container,
            "shared_name": spec.shared_name,
            **extra,
        }
        self._op = apply_op(op_type, [], attrs, name=node + "/")
        self._spec = spec
        self._dtypes = list(dtypes)
        self._shapes = [TensorShape(s) for s in spec.shapes]
        self._shapes_given = shapes is not None
        self._names = names
        self._name = node.split("/")[-1]

    # -- properties -------------------------------------------------------------------------------
    @property
    def queue_ref(self) -> Operation:
        """The queue's creation op (tfc's queue ops name their queue by attribute: TF's
        resource handle tensor has no counterpart)."""
        return self._op

    @property
    def name(self) -> str:
        return self._op.name

    @property
    def dtypes(self) -> list[_dt.DType]:
        return list(self._dtypes)

    @property
    def shapes(self) -> list[TensorShape]:
        return list(self._shapes) if self._shapes_given else [TensorShape(None)] * len(self._dtypes)

    @property
    def names(self) -> list[str] | None:
        return self._names

    @property
    def spec(self) -> QueueSpec:
        return self._spec

    @staticmethod
    def from_list(index: Any, queues: Sequence[QueueBase]) -> QueueBase:
        """TF picks one of `queues` by a tensor's value at run time; tfc's sessions act on a
        queue named when the graph is built, so this is refused."""
        raise NotImplementedError(
            "QueueBase.from_list selects a queue by a run-time index; tfc's queue ops name their "
            "queue when the graph is built. Pick the queue in Python, or use one queue with a "
            "component that says which input an element came from."
        )

    # -- enqueueing ------------------------------------------------------------------------------
    def _check_enqueue_dtypes(self, vals: Any) -> list[Tensor]:
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(
                    "Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                    f"({sorted(vals.keys())}), Queue: ({sorted(self._names)})"
                )
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(
                f"Expected {len(self._dtypes)} components for {self._spec.label}, got {len(vals)}"
            )
        return [
            convert_to_tensor(v, dtype=d, name=f"component_{i}")
            for i, (v, d) in enumerate(zip(vals, self._dtypes))
        ]

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """Enqueue one element: a tensor, or a list/tuple (a dict with names) of components."""
        with name_scope(name, f"{self._name}_enqueue") as scope:
            tensors = self._check_enqueue_dtypes(vals)
            for t, shape in zip(tensors, self._shapes):
                t.get_shape().assert_is_compatible_with(shape)
            return self._apply("QueueEnqueueV2", tensors, {}, scope)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """Enqueue the rows of each component (all of one size in their first dimension)."""
        with name_scope(name, f"{self._name}_EnqueueMany") as scope:
            tensors = self._check_enqueue_many(vals)
            return self._apply("QueueEnqueueManyV2", tensors, {}, scope)

    def enqueue_selected(
        self, vals: Any, keep_input: Any, enqueue_many: bool = False, name: str | None = None
    ) -> Operation:
        """The enqueue of TF's maybe_batch: the element only where the bool scalar
        `keep_input` is true when it runs; with `enqueue_many`, the rows whose entry of a bool
        vector `keep_input` is true (or all rows, or none, for a scalar)."""
        keep = convert_to_tensor(keep_input, dtype=_dt.bool_, name="keep_input")
        rank = keep.get_shape().ndims
        if rank is None:
            raise ValueError("`keep_input` dimensions must be known at graph construction.")
        if rank > 1:
            raise ValueError("`keep_input` must be 0 or 1 dimensions.")
        if rank == 1 and not enqueue_many:
            raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
        op_type = "QueueEnqueueManyV2" if enqueue_many else "QueueEnqueueV2"
        default = f"{self._name}_EnqueueMany" if enqueue_many else f"{self._name}_enqueue"
        with name_scope(name, default) as scope:
            if enqueue_many:
                tensors = self._check_enqueue_many(vals)
            else:
                tensors = self._check_enqueue_dtypes(vals)
                for t, shape in zip(tensors, self._shapes):
                    t.get_shape().assert_is_compatible_with(shape)
            # the session filters the elements by the last input's value (queue_runs.py)
            return self._apply(op_type, [*tensors, keep], {"keep_input": True}, scope)

    def _check_enqueue_many(self, vals: Any) -> list[Tensor]:
        """The components of an enqueue_many: of one length, each row fitting the queue."""
        tensors = self._check_enqueue_dtypes(vals)
        batch: Any = None
        for t, shape in zip(tensors, self._shapes):
            s = t.get_shape()
            if s.ndims == 0:
                raise ValueError(f"Shape {s} must have rank at least 1")
            if s.ndims is not None:
                lead = s.as_tuple()[0]
                if batch is not None and lead is not None and lead != batch:
                    raise ValueError(
                        f"Dimensions {batch} and {lead} are not compatible: the components "
                        f"enqueued together into {self._spec.label} differ in length"
                    )
                batch = batch if lead is None else lead
                TensorShape(s.as_tuple()[1:]).assert_is_compatible_with(shape)
        return tensors

    def _apply(self, op_type: str, inputs: list, attrs: dict, name: str) -> Operation:
        attrs = {"queue": self._spec.as_attr(), **attrs}
        if op_type in ENQUEUE_OPS:
            attrs["Tcomponents"] = list(self._dtypes)
        return apply_op(op_type, inputs, attrs, name=name)

    # -- dequeueing -------------------------------------------------------------------------------
    def _dequeue_return_value(self, op: Operation) -> Any:
        tensors = list(op.outputs)
        if self._names:
            return dict(zip(self._names, tensors))
        return tensors[0] if len(tensors) == 1 else tensors

    def dequeue(self, name: str | None = None) -> Any:
        """Take one element: a tensor, a list of components, or a dict (with names)."""
        op = self._apply("QueueDequeueV2", [], {}, name or f"{self._name}_Dequeue")
        return self._dequeue_return_value(op)

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """Take `n` elements, each component stacked along a new first dimension; blocks until
        `n` are there. After close(), fails with OutOfRangeError unless `n` are left."""
        count = self._count(n, "dequeue_many")
        if not self._spec.padded and any(s is None for s in self._spec.shapes):
            raise ValueError(
                f"dequeue_many of {self._spec.label} needs the shapes of its components: "
                "create the queue with shapes="
            )
        name = name or f"{self._name}_DequeueMany"
        op = self._apply("QueueDequeueManyV2", [], {"n": count}, name)
        return self._dequeue_return_value(op)

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """dequeue_many, except that after close() it takes what is left (at least one)."""
        count = self._count(n, "dequeue_up_to")
        if not self._spec.padded and any(s is None for s in self._spec.shapes):
            raise ValueError(
                f"dequeue_up_to of {self._spec.label} needs the shapes of its components: "
                "create the queue with shapes="
            )
        op = self._apply(
            "QueueDequeueUpToV2", [], {"n": count}, name or f"{self._name}_DequeueUpTo"
        )
        return self._dequeue_return_value(op)

    def _count(self, n: Any, what: str) -> int:
        value = n
        if isinstance(n, Tensor):
            known = constant_value(n.graph, (n.op.name, n.value_index))
            if known is None:
                raise ValueError(
                    f"{what}'s n must be known when the graph is built (a Python int or a "
                    f"constant); tfc's session takes the elements before the step runs, got {n}"
                )
            value = known
        value = np.asarray(value)
        if value.shape != () or value.dtype.kind not in "iu" or int(value) < 0:
            raise ValueError(f"{what}'s n must be a non-negative integer scalar, got {n!r}")
        return int(value)

    # -- state ------------------------------------------------------------------------------------
    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        """Close the queue: later enqueues fail; dequeues take what is left, then fail with
        OutOfRangeError. `cancel_pending_enqueues` also fails the enqueues waiting for room."""
        attrs = {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}
        return self._apply("QueueCloseV2", [], attrs, name or f"{self._name}_Close")

    def is_closed(self, name: str | None = None) -> Tensor:
        return self._apply("QueueIsClosedV2", [], {}, name or f"{self._name}_Is_Closed").outputs[0]

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements in the queue (an int32 scalar)."""
        return self._apply("QueueSizeV2", [], {}, name or f"{self._name}_Size").outputs[0]


class FIFOQueue(QueueBase):
    """`tf.FIFOQueue(capacity, dtypes, shapes=None, names=None, shared_name=None)`: elements in
    first-in first-out order. Without shapes, elements may differ in shape (dequeue only)."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "fifo_queue",
    ) -> None:
        dtypes = _as_type_list(dtypes)
        super().__init__(
            "FIFOQueueV2", capacity, dtypes, _as_shape_list(shapes, dtypes),
            _as_name_list(names, dtypes), name, shared_name,
        )  # fmt: skip


class PaddingFIFOQueue(QueueBase):
    """`tf.PaddingFIFOQueue`: a FIFOQueue whose shapes may have unknown dimensions (None);
    dequeue_many pads each component with zeros to the largest element of the batch."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "padding_fifo_queue",
    ) -> None:
        dtypes = _as_type_list(dtypes)
        shape_list = _as_shape_list(shapes, dtypes, unknown_dim_allowed=True)
        if shape_list is None:
            raise ValueError("PaddingFIFOQueue needs the shapes of its components (None for "
                             "the dimensions that vary)")  # fmt: skip
        super().__init__(
            "PaddingFIFOQueueV2", capacity, dtypes, shape_list, _as_name_list(names, dtypes),
            name, shared_name,
        )  # fmt: skip


class RandomShuffleQueue(QueueBase):
    """`tf.RandomShuffleQueue`: dequeues take uniformly random elements, and only while more
    than `min_after_dequeue` remain (until the queue is closed). `seed` (with the graph's,
    tf.set_random_seed) makes the order repeatable."""

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        seed: int | None = None,
        shared_name: str | None = None,
        name: str = "random_shuffle_queue",
    ) -> None:
        dtypes = _as_type_list(dtypes)
        if int(min_after_dequeue) < 0:
            raise ValueError(f"min_after_dequeue must be >= 0, got {min_after_dequeue}")
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0  # the session draws fresh seeds
        elif seed is None and shared_name is not None:
            # as TF: seed2 from the graph seed and the shared name, not from the op count
            digest = hashlib.md5((str(seed1) + shared_name).encode()).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        extra = {"min_after_dequeue": int(min_after_dequeue), "seed": seed1, "seed2": seed2}
        super().__init__(
            "RandomShuffleQueueV2", capacity, dtypes, _as_shape_list(shapes, dtypes),
            _as_name_list(names, dtypes), name, shared_name, extra,
        )  # fmt: skip


class PriorityQueue(QueueBase):
    """`tf.PriorityQueue(capacity, types, shapes)`: each element starts with an int64 scalar
    priority (enqueue (priority, *components)); dequeues take the smallest first, equal
    priorities in the order they came."""

    def __init__(
        self,
        capacity: int,
        types: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "priority_queue",
    ) -> None:
        types = _as_type_list(types)
        shape_list = _as_shape_list(shapes, types)
        dtypes = [_dt.int64, *types]
        # the priority is a scalar whether or not the other shapes are given
        rest = shape_list if shape_list is not None else [TensorShape(None)] * len(types)
        with_priority = [TensorShape(()), *rest]
        super().__init__(
            "PriorityQueueV2", capacity, dtypes, with_priority, _as_name_list(names, dtypes),
            name, shared_name,
        )  # fmt: skip
