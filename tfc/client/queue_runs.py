"""The queue ops of one run: what the Session does before and after the compiled program.

A run's dequeues (and queue sizes, is_closed) happen before its program: their values become
feeds. Its enqueues and closes happen after: the components they enqueue are fetched from the
program. Which ops those are depends only on the graph, the fetches, the targets and the fed
tensors, so the plan is computed once per such signature. The queues themselves are native
(tfc/backend/native_queue.py), kept in the session's state (tfc/client/resources.py).

A run that would need a dequeue after one of its own enqueues (a control dependency from an
enqueue to a dequeue) cannot be done this way, and is refused naming both ops.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from tfc.backend.native_queue import FIFO, PRIORITY, RANDOM_SHUFFLE, NativeQueue
from tfc.client.reader_runs import Readers
from tfc.ir import errors
from tfc.ir.graph import CONTROL, Graph, Tensor
from tfc.ops.queues import DEQUEUE_OPS, QUERY_OPS, QUEUE_KINDS, QueueSpec, graph_has_queues
from tfc.ops.readers import READER_KINDS, READER_OPS
from tfc.ops.registry import get_opdef

_KINDS = {
    "FIFOQueueV2": FIFO,
    "PaddingFIFOQueueV2": FIFO,
    "RandomShuffleQueueV2": RANDOM_SHUFFLE,
    "PriorityQueueV2": PRIORITY,
}


@dataclass(frozen=True)
class _Action:
    op: str  # the node
    type: str
    spec: QueueSpec | None  # None: a reader op without a queue (counts, reset)
    attrs: dict
    tensors: tuple[Tensor, ...]  # the outputs fed (before) or the components fetched (after)


@dataclass(frozen=True)
class _Plan:
    before: tuple[_Action, ...]
    after: tuple[_Action, ...]


def make_queue(spec: QueueSpec, seeds: Callable[[], tuple[int, int]]) -> NativeQueue:
    """The native queue of `spec`; `seeds` draws a random shuffle queue's seeds when the graph
    gave none."""
    seed, seed2 = spec.seed, spec.seed2
    if spec.type == "RandomShuffleQueueV2" and seed == 0 and seed2 == 0:
        seed, seed2 = seeds()
    # the components whose shape is fully known: every element has it (enqueues are checked)
    shapes = [s if s is not None and None not in s else None for s in spec.shapes]
    return NativeQueue(
        spec.label, _KINDS[spec.type], spec.capacity, [d.np for d in spec.dtypes],
        spec.min_after_dequeue, seed, seed2, shapes,
    )  # fmt: skip


def make_plan(graph: Graph, fetches: tuple, targets: tuple, fed: tuple) -> _Plan | None:
    """The queue ops a run of `fetches` and `targets` executes when `fed` tensors are fed, in
    the order they were created; None when it has none."""
    fed_set = set(fed)
    nodes = graph.nx.nodes
    stack = [n for n, out in fetches if (n, out) not in fed_set] + list(targets)
    seen = set(stack)
    while stack:
        for src, _, key, data in graph.nx.in_edges(stack.pop(), keys=True, data=True):
            if key != CONTROL and (src, data["out"]) in fed_set:
                continue
            if src not in seen:
                seen.add(src)
                stack.append(src)
    ops = [n for n in seen if get_opdef(nodes[n]["op"]).session_side]
    ops.sort(key=lambda n: nodes[n]["id"])
    if not ops:
        return None
    before, after = [], []
    for name in ops:
        op = graph.get_operation_by_name(name)
        node = nodes[name]
        if node["op"] in QUEUE_KINDS or node["op"] in READER_KINDS:  # made when first used
            continue
        spec = QueueSpec.of(node["attrs"]) if "queue" in node["attrs"] else None
        if node["op"] in DEQUEUE_OPS or node["op"] in QUERY_OPS or node["op"] in READER_OPS:
            before.append(_Action(name, node["op"], spec, node["attrs"], tuple(op.outputs)))
        else:
            after.append(_Action(name, node["op"], spec, node["attrs"], tuple(op.inputs)))
    if before and after:
        late = {a.op for a in after}
        for action in before:
            blocking = late & nx.ancestors(graph.nx, action.op)
            if blocking:
                raise errors.UnimplementedError(
                    None,
                    graph.get_operation_by_name(action.op),
                    f"'{action.op}' runs after '{sorted(blocking)[0]}' in one Session.run: tfc's "
                    "session takes a run's dequeues before its compiled program and does its "
                    "enqueues and closes after it; run them in two Session.run calls",
                )
    return _Plan(tuple(before), tuple(after))


class QueueStep:
    """The queue ops of one run: the values taken before the program, and the enqueues and
    closes to do after it (`finish`)."""

    def __init__(
        self, plan: _Plan, queue_of: Callable[[QueueSpec], NativeQueue], deadline_ns: int,
        readers: Readers,
    ) -> None:  # fmt: skip
        self._plan = plan
        self._queue_of = queue_of
        self._readers = readers
        self._deadline = deadline_ns
        self.extra_fetches = [t for a in plan.after for t in a.tensors]

    def take(self, graph: Graph, feed_tensors: list[Tensor], feed_values: list[np.ndarray]) -> None:
        """Do the dequeues, sizes and is_closed of the run; append their values to the feeds."""
        for action in self._plan.before:
            queue = None if action.spec is None else self._queue_of(action.spec)
            op = graph.get_operation_by_name(action.op)
            if action.type in READER_OPS:
                values = self._readers.run(action.type, action.attrs, queue, self._deadline, op)
            elif action.type == "QueueSizeV2":
                values = [np.array(queue.size(), dtype=np.int32)]
            elif action.type == "QueueIsClosedV2":
                values = [np.array(queue.is_closed())]
            else:
                n = None if action.type == "QueueDequeueV2" else action.attrs["n"]
                values = queue.dequeue(
                    n, action.type == "QueueDequeueUpToV2", action.spec.padded, self._deadline, op
                )
            fed = set(feed_tensors)
            for tensor, value in zip(action.tensors, values):
                if tensor not in fed:  # the caller's own feed of an output wins, as in TF
                    feed_tensors.append(tensor)
                    feed_values.append(value)

    def finish(self, graph: Graph, values: dict[Tensor, np.ndarray]) -> None:
        """Do the enqueues and closes of the run, with the program's fetched `values`."""
        for action in self._plan.after:
            assert action.spec is not None
            queue = self._queue_of(action.spec)
            op = graph.get_operation_by_name(action.op)
            if action.type == "QueueCloseV2":
                queue.close(action.attrs["cancel_pending_enqueues"])
                continue
            components = [np.asarray(values[t]) for t in action.tensors]
            many = action.type == "QueueEnqueueManyV2"
            if action.attrs.get("keep_input"):  # enqueue_selected: the elements kept
                keep = components.pop()
                if keep.ndim == 0 and not keep:
                    continue
                if keep.ndim == 1:
                    if len(keep) != len(components[0]):
                        raise errors.InvalidArgumentError(
                            None, op, f"keep_input of '{action.op}' has {len(keep)} entries "
                            f"for {len(components[0])} rows",
                        )  # fmt: skip
                    components = [c[keep] for c in components]
            _check_components(action, components, many, op)
            queue.enqueue(components, many, self._deadline, op)


def _check_components(action: _Action, components: list[np.ndarray], many: bool, op: Any) -> None:
    spec = action.spec
    if many:
        lengths = {c.shape[0] for c in components}
        if len(lengths) > 1:
            raise errors.InvalidArgumentError(
                None, op, f"the components enqueued into {spec.label} by '{action.op}' differ "
                f"in their first dimension: {[c.shape[0] for c in components]}",
            )  # fmt: skip
    for k, c in enumerate(components):
        why = spec.check_element(k, c.shape[1:] if many else c.shape, action.op)
        if why is not None:
            raise errors.InvalidArgumentError(None, op, why)


class QueueRuns:
    """The hook Session.run (and the interpreter) calls for the queue ops of a run: plans per
    signature, and the queues of the caller's state (`queue_of(spec)`)."""

    def __init__(self, queue_of: Callable[[QueueSpec], NativeQueue]) -> None:
        self._queue_of = queue_of
        self._readers = Readers()  # a session's readers are its own (tfc/ops/readers.py)
        self._plans: dict[tuple, _Plan | None] = {}
        self._lock = threading.Lock()

    def step(
        self, graph: Graph, fetches: list[Tensor], targets: list[str], fed: list[Tensor],
        deadline_ns: int,
    ) -> QueueStep | None:  # fmt: skip
        """The queue step of a run, or None when the run has no queue op."""
        if not graph_has_queues(graph):
            return None
        key = (
            graph,
            graph.version,
            tuple((t.op.name, t.value_index) for t in fetches),
            tuple(targets),
            tuple((t.op.name, t.value_index) for t in fed),
        )
        with self._lock:
            if key in self._plans:
                plan = self._plans[key]
            else:
                if len(self._plans) > 1000:  # graphs that keep changing: keep only new plans
                    self._plans.clear()
                plan = self._plans[key] = make_plan(graph, *key[2:])
        return None if plan is None else QueueStep(plan, self._queue_of, deadline_ns, self._readers)
