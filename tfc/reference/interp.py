"""The reference interpreter: runs a graph with the ops' NumPy references.

It is the living definition of every op and the oracle of the tests. It takes the same path as
compilation up to the schedule (tfc.compiler.INTERP_PIPELINE: prune, specialize, schedule), then
evaluates each node with its `reference`. Variables behave as in generated code: one buffer per
variable, updated in place, so values read through aliases (W/read) are the same in both;
fetched values are copied when their node runs.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tfc.client.python_stage import evaluate_python_stage
from tfc.client.queue_runs import QueueRuns, make_queue
from tfc.client.request import RunRequest
from tfc.client.resources import SessionState
from tfc.compiler import interpreter_partitions, interpreter_program, split_python_stages
from tfc.data.runtime import IteratorStates
from tfc.ir.graph import Graph, get_default_graph
from tfc.ir.program import make_program_graph
from tfc.ops.evaluate import evaluate_graph
from tfc.passes.python_stage import PYTHON, with_feed_shapes


class InterpState:
    """Variables, random streams, tf.data iterators and queues of an interpreter session."""

    def __init__(self) -> None:
        self.vars: dict[str, np.ndarray] = {}
        self.rng: dict[str, np.ndarray] = {}
        # map functions of iterators are interpreted too, each in an interpreter of its own
        self.iterators = IteratorStates(lambda graph: Interpreter(graph))
        # queues are native, as in a Session: the interpreter runs their ops around each step
        self.resources = SessionState()
        self.queue_runs = QueueRuns(
            lambda spec: self.resources.queue(
                (spec.container, spec.shared_name or spec.op),
                lambda: make_queue(spec, _fresh_seeds),
            )
        )
        # where _Send/_Recv of partitioned graphs meet (evaluate_partitions), and the step
        self.rendezvous: Any = None
        self.step_id = 0

    def variable(self, name: str) -> np.ndarray | None:
        return self.vars.get(name)

    def assign(self, name: str, value: np.ndarray) -> np.ndarray:
        """Write `value` into the variable's buffer in place (made on first assignment)."""
        buf = self.vars.get(name)
        if buf is None or buf.shape != value.shape or buf.dtype != value.dtype:
            buf = self.vars[name] = np.array(value, copy=True)
        else:
            buf[...] = value
        return buf

    def rng_state(self, name: str, attrs: dict) -> np.ndarray:
        state = self.rng.get(name)
        if state is None:
            seed, seed2 = int(attrs.get("seed", 0)), int(attrs.get("seed2", 0))
            if seed == 0 and seed2 == 0:
                seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
            state = self.rng[name] = np.array([seed, seed2, 0], dtype=np.uint64)
        return state


def _fresh_seeds() -> tuple[int, int]:
    return int.from_bytes(os.urandom(8), "little"), int.from_bytes(os.urandom(8), "little")


class Interpreter:
    """A session-like object that evaluates graphs with NumPy instead of compiled code."""

    def __init__(self, graph: Graph | None = None) -> None:
        self.graph = graph or get_default_graph()
        self.state = InterpState()
        # the scheduled program of each run signature, as Session keeps its compiled ones: a
        # training loop plans its step once, not on every run
        self._programs: dict[tuple, Graph] = {}

    def run(self, fetches: Any, feed_dict: Any = None) -> Any:
        state = self.state
        request = RunRequest(self.graph, fetches, feed_dict, state.iterators, state.queue_runs)
        key = (request.signature(), self.graph.version)
        program = self._programs.get(key)
        if program is None:
            program = make_program_graph(
                self.graph, request.fetch_keys, request.targets, request.feeds
            )
            program.graph_attrs["session_side_ops"] = True  # the queue ops run around it
            stages = split_python_stages(program)
            if stages:  # ops only Python runs (py_func, strings, shapes that depend on values)
                n = len(request.fetch_keys)
                values = evaluate_python_stages(stages, request.feed_values, n, self.state)
                request.finish(values)
                return request.results(values)
            program = self._programs[key] = interpreter_program(program)
        values = evaluate(program, request.feed_values, state)
        request.finish(values)
        return request.results(values)


def evaluate(program: Graph, feed_values: list[np.ndarray], state: InterpState) -> list[np.ndarray]:
    """Evaluate a scheduled program graph; returns one array per fetch."""
    return evaluate_graph(program, feed_values, state)


# -- partitioned graphs --------------------------------------------------------------------------
def partition_program(
    graph: Graph,
    fetches: list[tuple[str, int]],
    targets: list[str] = (),
    feeds: list = (),
    **graph_attrs: Any,
) -> tuple[Graph, dict[str, Graph]]:
    """The program graph of a run, placed and cut into scheduled partitions (device -> Graph).

    `graph_attrs` go to the program graph before placement ("default_device", "cluster")."""
    program = make_program_graph(graph, fetches, targets, feeds)
    program.graph_attrs.update(graph_attrs)
    return interpreter_partitions(program)


def evaluate_partitions(
    parts: dict[str, Graph], feed_values: list[np.ndarray], state: InterpState
) -> list[np.ndarray]:
    """Evaluate the partitions of one step, each in its own thread, exchanging tensors through
    `state.rendezvous` (a tfc.reference.rendezvous.LocalRendezvous, made on first use) under
    `state.step_id`, which advances by one; returns the program's fetches in their order."""
    import threading

    from tfc.reference.rendezvous import LocalRendezvous

    if state.rendezvous is None:
        state.rendezvous = LocalRendezvous()
    n = sum(len(p.graph_attrs["fetches"]) for p in parts.values())
    results: list[Any] = [None] * n
    failures: list[BaseException] = []

    def run(part: Graph) -> None:
        try:
            values = evaluate(part, feed_values, state)
            for j, value in zip(part.graph_attrs["fetch_index"], values):
                results[j] = value
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            failures.append(e)
            state.rendezvous.abort(e)

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in parts.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state.step_id += 1
    if failures:
        raise failures[0]
    return results


# -- host/device stages --------------------------------------------------------------------------
def evaluate_stages(
    stages: list, feed_values: list[np.ndarray], n_fetches: int, state: InterpState
) -> list[np.ndarray]:
    """Run the stages of tfc/passes/stage.py in order (each scheduled), handing each the program
    feeds and the earlier stages' outputs it reads; returns the program's `n_fetches` fetches."""
    results: list[Any] = [None] * n_fetches
    sent: dict[str, np.ndarray] = {}
    for stage in stages:
        inputs = [feed_values[k] if kind == "feed" else sent[k] for kind, k in stage.inputs]
        for (kind, k), value in zip(stage.outputs, evaluate(stage.graph, inputs, state)):
            if kind == "fetch":
                results[k] = value
            else:
                sent[k] = value
    return results


# -- native and Python stages ----------------------------------------------------------------------
def evaluate_python_stages(
    stages: list, feed_values: list[np.ndarray], n_fetches: int, state: InterpState
) -> list[np.ndarray]:
    """Run the native and Python stages of tfc/passes/python_stage.py in order, as a Session
    does: each native stage specialized for the shapes it is handed and interpreted, each
    Python stage evaluated as the client evaluates it; returns the program's fetches."""
    results: list[Any] = [None] * n_fetches
    sent: dict[str, np.ndarray] = {}
    for stage in stages:
        inputs = [feed_values[k] if kind == "feed" else sent[k] for kind, k in stage.inputs]
        if stage.device == PYTHON:
            outputs = evaluate_python_stage(stage.graph, inputs, state=state)
        else:
            graph = with_feed_shapes(stage, [np.shape(v) for v in inputs])
            outputs = evaluate(interpreter_program(graph), inputs, state)
        for (kind, k), value in zip(stage.outputs, outputs):
            if kind == "fetch":
                results[k] = value
            else:
                sent[k] = value
    return results
