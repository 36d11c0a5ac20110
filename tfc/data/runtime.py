"""Where each iterator stands in one session, and the feeds Session.run takes from them.

`IteratorStates.add_feeds` is the hook that RunRequest calls (for Session and Interpreter
alike): it finds the IteratorGetNext outputs the fetches need and nobody fed, takes one
element per IteratorGetNext op, and appends its arrays to the feeds; MakeIterator ops in the
run restart their iterators first. Which ops those are depends only on the graph, the
fetches and the fed tensors, so it is computed once per such signature and cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections.abc import Iterator as PyIterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.data.blocks import Block, block_len
from tfc.data.iterator import GRAPHS_WITH_ITERATORS, Iterator
from tfc.data.pipeline import IterationContext, Stage
from tfc.ir import errors
from tfc.ir.graph import CONTROL, Graph, Tensor


@dataclass(frozen=True)
class _Pull:
    op: str  # the IteratorGetNext node
    iterator: Iterator
    outputs: tuple[tuple[int, Tensor], ...]  # (component, tensor) the run needs


@dataclass(frozen=True)
class _Plan:
    restarts: tuple[tuple[Iterator, Stage], ...]
    pulls: tuple[_Pull, ...]


def plan_key(graph: Graph, fetches: list[Tensor], targets: list[str], fed: list[Tensor]) -> tuple:
    """What decides which iterator ops a run executes (the graph's version included)."""
    return (
        graph,
        graph.version,
        tuple((t.op.name, t.value_index) for t in fetches),
        tuple(targets),
        tuple((t.op.name, t.value_index) for t in fed),
    )


def make_plan(graph: Graph, fetches: tuple, targets: tuple, fed: tuple) -> _Plan:
    """The iterator ops a run of `fetches` and `targets` executes when `fed` tensors are fed:
    the restarts of its MakeIterator ops and, per IteratorGetNext op, the outputs to feed."""
    fed_set = set(fed)
    needed: dict[str, set[int]] = {}  # IteratorGetNext node -> outputs to feed
    nodes = graph.nx.nodes

    def reach(name: str, out: int | None) -> None:
        if nodes[name]["op"] == "IteratorGetNext":
            outs = needed.setdefault(name, set())
            if out is not None:
                outs.add(out)

    stack = []
    for name, out in fetches:
        if (name, out) not in fed_set:
            reach(name, out)
            stack.append(name)
    stack += targets
    seen = set(stack)
    while stack:
        for src, _, key, data in graph.nx.in_edges(stack.pop(), keys=True, data=True):
            if key != CONTROL:
                if (src, data["out"]) in fed_set:
                    continue  # a fed tensor cuts the graph: its producer does not run for it
                reach(src, data["out"])
            else:
                reach(src, None)
            if src not in seen:
                seen.add(src)
                stack.append(src)
    by_creation = sorted(seen, key=lambda n: nodes[n]["id"])
    restarts = tuple(
        (nodes[n]["attrs"]["iterator"], nodes[n]["attrs"]["dataset"])
        for n in by_creation
        if nodes[n]["op"] == "MakeIterator"
    )
    pulls = []
    for name in sorted(needed, key=lambda n: nodes[n]["id"]):
        outputs = graph.get_operation_by_name(name).outputs
        pulls.append(
            _Pull(
                name,
                nodes[name]["attrs"]["iterator"],
                tuple((i, outputs[i]) for i in sorted(needed[name])),
            )
        )
    return _Plan(restarts, tuple(pulls))


class _Position:
    """One iterator's pass through its dataset: the current block and the row within it."""

    def __init__(self, stage: Stage, ctx: IterationContext) -> None:
        self._blocks: PyIterator[Block] = stage.blocks(ctx)
        self._block: Block = []
        self._row = self._rows = 0

    def next(self) -> list[np.ndarray] | None:
        while self._row >= self._rows:
            block = next(self._blocks, None)
            if block is None:
                return None
            self._block, self._row, self._rows = block, 0, block_len(block)
        row = self._row
        self._row += 1
        return [a[row, ...] for a in self._block]  # views: 0-d arrays for scalars


class IteratorStates:
    """The iterators of one session (Session or Interpreter): their positions, and the
    runners of the map functions they run (made by `make_runner(graph)`)."""

    def __init__(self, make_runner: Callable[[Graph], Any]) -> None:
        self._make_runner = make_runner
        self._positions: dict[Iterator, _Position] = {}
        self._runners: dict[Graph, Any] = {}
        self._plans: dict[tuple, _Plan] = {}  # by plan_key: a training loop traverses nothing
        self._lock = threading.RLock()

    def add_feeds(
        self,
        graph: Graph,
        fetches: list[Tensor],
        targets: list[str],
        feed_tensors: list[Tensor],
        feed_values: list[np.ndarray],
    ) -> None:
        """Append to the feeds the next element of each iterator the run needs."""
        if graph not in GRAPHS_WITH_ITERATORS:
            return
        key = plan_key(graph, fetches, targets, feed_tensors)
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                if len(self._plans) > 1000:  # graphs that keep changing: keep only new plans
                    self._plans.clear()
                plan = self._plans[key] = make_plan(graph, *key[2:])
            for iterator, stage in plan.restarts:
                self._positions[iterator] = _Position(stage, IterationContext(self._runner))
            for pull in plan.pulls:
                element = self._next(pull, graph)
                for component, tensor in pull.outputs:
                    feed_tensors.append(tensor)
                    feed_values.append(element[component])

    def _next(self, pull: _Pull, graph: Graph) -> list[np.ndarray]:
        position = self._positions.get(pull.iterator)
        if position is None:
            stage = pull.iterator.one_shot_stage
            if stage is None:
                raise errors.FailedPreconditionError(
                    None,
                    graph.get_operation_by_name(pull.op),
                    "GetNext() failed because the iterator has not been initialized. Ensure "
                    "that you have run the initializer operation for this iterator before "
                    "getting the next element.",
                )
            position = self._positions[pull.iterator] = _Position(
                stage, IterationContext(self._runner)
            )
        element = position.next()
        if element is None:
            raise errors.OutOfRangeError(
                None, graph.get_operation_by_name(pull.op), "End of sequence"
            )
        return element

    def _runner(self, graph: Graph) -> Any:
        with self._lock:
            runner = self._runners.get(graph)
            if runner is None:
                runner = self._runners[graph] = self._make_runner(graph)
            return runner

    def close(self) -> None:
        with self._lock:
            for runner in self._runners.values():
                close = getattr(runner, "close", None)
                if close is not None:
                    close()
            self._runners.clear()
            self._positions.clear()
            self._plans.clear()
