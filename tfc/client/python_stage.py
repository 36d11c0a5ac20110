"""A Session program with Python stages: native stages compiled per shape, Python stages evaluated.

tfc/passes/python_stage.py cuts a program that holds ops only Python can run (tf.py_func,
tf.string ops, ops whose output shape depends on their values) into stages that alternate
between native code and Python. A run goes through them in order, each reading the run's
feeds and what earlier stages handed on (NumPy arrays in host memory):

- a Python stage is evaluated here, node by node, with the ops' NumPy references (the ones the
  reference interpreter runs). Every input value is known, so each node's shape rule runs on
  the actual input shapes and values (a reshape's shape may come from a native stage), and a
  value-dependent output simply has the shape its reference produced;
- a native stage is compiled the first time it is handed inputs of a new shape (the shapes a
  Python stage produced are known only then), through the Session's own compile path (C, or
  C and CUDA stages when ops are placed on a GPU), and cached per input shapes as the Session
  caches programs per feed shape: a program whose shapes repeat compiles once.

Native stages bind the Session's variables like any of its programs, so training through a
Python stage updates the same buffers; the Session checks, before a native stage runs, that
the variables it reads were initialized (a Python stage reads no variable: a variable's value
reaches it as a hand-off). Hand-offs and fetches of native stages come back to host memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import networkx as nx
import numpy as np

from tfc.client.staged import StagedSummary
from tfc.ir import errors
from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import merge_shapes, shape_str
from tfc.ops.registry import OpContext, as_output_list, get_opdef
from tfc.passes.python_stage import PYTHON, with_feed_shapes
from tfc.passes.stage import FEED, FETCH, Stage


@dataclass
class _RunContext(OpContext):
    """An op's context in a Python stage: its input values are all known, so every input is
    'constant' to its shape rule (a reshape's shape may be a hand-off from a native stage)."""

    values: Sequence[Any] = ()

    def const(self, i: int) -> np.ndarray | None:
        return np.asarray(self.values[i]) if i < len(self.values) else None


def evaluate_python_stage(
    graph: Graph, inputs: Sequence[np.ndarray], names: Graph | None = None, state: Any = None
) -> list[np.ndarray]:
    """Evaluate a Python stage's graph (tfc/passes/python_stage.py) on its `inputs`; returns one
    array per fetch of the stage. Errors name the node as it is in `names` (the user's graph)
    when given, else in `graph`. `state` holds the variables a Python stage reads and assigns
    (`variable(name)`, `assign(name, value)`: tf.string variables, which native code cannot
    hold), as the interpreter's state does."""
    values: dict[tuple[str, int], Any] = {}
    order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
    for name in order:
        node = graph.node(name)
        if node["op"] == "Feed":
            outs = [inputs[node["attrs"]["index"]]]
        else:
            args = [values[src] for src in graph.input_edges(name)]
            _check_read(graph, name, args, names)
            outs = _run_node(graph, name, args, names, state)
        for i, value in enumerate(outs):
            values[(name, i)] = value
    fetched = [tuple(t) for t in graph.graph_attrs["fetches"]]
    for src in fetched:
        if values[src] is None:
            raise _uninitialized(graph, src[0], names)
    return [values[src] for src in fetched]


def _uninitialized(graph: Graph, variable: str, names: Graph | None) -> errors.OpError:
    source = names if names is not None and variable in names.nx else graph
    op = source.get_operation_by_name(variable) if variable in source.nx else None
    return errors.FailedPreconditionError(
        None, op, f"Attempting to use uninitialized value {variable}"
    )


def _check_read(graph: Graph, name: str, args: list, names: Graph | None) -> None:
    """An uninitialized variable (its value None) may only be assigned, as in the
    interpreter (tfc/ops/evaluate.py)."""
    opdef = get_opdef(graph.node(name)["op"])
    for i, (arg, (src, _)) in enumerate(zip(args, graph.input_edges(name))):
        if arg is None and (i not in opdef.ref_inputs or opdef.reads_ref):
            raise _uninitialized(graph, src, names)


def _run_node(graph: Graph, name: str, args: list, names: Graph | None, state: Any) -> list:
    node = graph.node(name)
    opdef = get_opdef(node["op"])
    inputs = graph.input_edges(name)
    refs = [inputs[i][0] for i in opdef.ref_inputs if i < len(inputs)]
    base = OpContext.for_node(graph, name, state=state, ref_names=refs)
    ctx = _RunContext(**{f.name: getattr(base, f.name) for f in fields(OpContext)}, values=args)
    # an uninitialized variable (None) keeps its static shape
    ctx.in_shapes = [s if a is None else tuple(np.shape(a)) for a, s in zip(args, ctx.in_shapes)]
    try:
        try:
            inferred = opdef.infer(ctx)
        except ValueError as e:  # shapes that only this run's values reveal, as TF at run time
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        ctx.out_dtypes = [d for d, _ in inferred]
        ctx.out_shapes = [s for _, s in inferred]
        if opdef.reference is None:
            raise NotImplementedError(f"Op '{node['op']}' has no NumPy reference")
        outs = as_output_list(opdef.reference(ctx, *args))
    except errors.OpError as e:
        if e.op is None:  # name the failing node, as compiled runs do
            source = names if names is not None and name in names.nx else graph
            e.op = source.get_operation_by_name(name)
        raise
    result = []
    for i, value in enumerate(outs):
        if value is None and node["op"] == "VariableV2":
            result.append(None)  # an uninitialized variable: only an assignment may take it
            continue
        dtype, shape = node["dtypes"][i], ctx.out_shapes[i]
        # a reference that picks one element of a string array (np.take with a scalar index)
        # returns the bytes object itself, which np.asarray would make a fixed-width array
        value = np.asarray(value, dtype=object) if dtype.is_string else np.asarray(value)
        if value.dtype != dtype.np or merge_shapes(shape, value.shape) is False:
            raise AssertionError(
                f"reference of {node['op']} '{name}' returned {value.dtype}{list(value.shape)}, "
                f"expected {dtype.np}{shape_str(shape)}"
            )
        result.append(value)
    return result


class PythonStagedProgram:
    """The stages of one signature (see the module doc), run for a Session: its compile path
    for one program graph (`compile_native(graph, name)`), its way of running a compiled
    program with the variables it binds (`run_native(program, inputs)`: status and outputs),
    and its graph (`names`), whose nodes errors name."""

    on_device = False  # each native stage is placed where it runs

    def __init__(
        self,
        name: str,
        stages: list[Stage],
        n_fetches: int,
        compile_native: Callable[[Graph, str], Any],
        run_native: Callable[[Any, list], tuple[int, list]],
        names: Graph | None = None,
        state: Any = None,
    ) -> None:
        self.name = name
        self._state = state  # the variables Python stages hold (evaluate_python_stage)
        self.stages = stages
        self.n_fetches = n_fetches
        self._compile_native = compile_native
        self._run_native = run_native
        self._names = names
        # native stage index -> input shapes -> its program
        self.compiled: dict[int, dict[tuple, Any]] = {}
        # variables are checked and marked per native stage, as each runs
        self.lowered = StagedSummary(name, [], [])
        self._failed: Any = None

    @property
    def source(self) -> str:
        """The generated source of the native stages compiled so far, each under a heading."""
        parts = []
        for i, stage in enumerate(self.stages):
            if stage.device == PYTHON:
                ops = ", ".join(f"{n} ({stage.graph.op_type(n)})" for n in stage.graph.node_names())
                parts.append(f"/* ---- stage {i}: Python: {ops} ---- */")
            for shapes, program in self.compiled.get(i, {}).items():
                parts.append(f"/* ---- stage {i}: native, inputs {list(shapes)} ---- */")
                parts.append(program.source)
        return "\n".join(parts)

    def __call__(self, feeds: list, fetches_on_device: bool = False) -> tuple[int, list]:
        """Run the stages in turn (see the module doc); fetches come back to host memory."""
        results: list[Any] = [None] * self.n_fetches
        sent: dict[Any, np.ndarray] = {}
        for i, stage in enumerate(self.stages):
            inputs = [feeds[k] if kind == FEED else sent[k] for kind, k in stage.inputs]
            inputs = [v if isinstance(v, np.ndarray) else v.to_host() for v in inputs]
            if stage.device == PYTHON:
                outputs = evaluate_python_stage(stage.graph, inputs, self._names, self._state)
            else:
                program = self._native(i, stage, inputs)
                rc, outputs = self._run_native(program, inputs)
                if rc != 0:
                    self._failed = program
                    return rc, results
            for (kind, k), value in zip(stage.outputs, outputs):
                if kind == FETCH:
                    results[k] = value
                else:
                    sent[k] = value
        return 0, results

    def _native(self, index: int, stage: Stage, inputs: list[np.ndarray]) -> Any:
        """Native stage `index` compiled for the shapes of `inputs` (once per shapes)."""
        shapes = tuple(tuple(v.shape) for v in inputs)
        cache = self.compiled.setdefault(index, {})
        program = cache.get(shapes)
        if program is None:
            graph = with_feed_shapes(stage, list(shapes))
            program = cache[shapes] = self._compile_native(graph, f"{self.name}.stage{index}")
        return program

    def error(self, rc: int, graph: Any) -> Any:
        """The error of the native stage that failed in the last call."""
        return self._failed.error(rc, graph)
