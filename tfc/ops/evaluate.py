"""Evaluating a program graph with the ops' NumPy references: the interpreter's core, also what
runs the branches and loop bodies of If and While in their references."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from tfc.ir import errors
from tfc.ir.graph import Graph
from tfc.ops.registry import OpContext, as_output_list, get_opdef


def run_order(graph: Graph) -> list[str]:
    """The graph's schedule, or its creation-ordered topological order when it has none."""
    schedule = graph.graph_attrs.get("schedule")
    if schedule is not None:
        return list(schedule)
    return list(nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"]))


def evaluate_graph(
    program: Graph, feed_values: list[Any], state: Any, copy_fetches: bool = True
) -> list[Any]:
    """Evaluate a program graph (its Feeds take `feed_values` by their index); returns one value
    per fetch (None for a fetch that is None: a branch that leaves an output unset). `state`
    holds variables and random streams (the interpreter's InterpState). Fetched values are
    copies unless `copy_fetches` is False (a loop body's results, which the loop tells apart
    from its arguments by identity: a value updated in place is its own argument)."""
    fetches = program.graph_attrs["fetches"]
    fetch_slots: dict[tuple[str, int], list[int]] = {}
    for j, tensor in enumerate(fetches):
        if tensor is not None:
            fetch_slots.setdefault(tuple(tensor), []).append(j)
    results: list[Any] = [None] * len(fetches)
    values: dict[tuple[str, int], Any] = {}
    for name in run_order(program):
        node = program.node(name)
        opdef = get_opdef(node["op"])
        inputs = program.input_edges(name)
        args = [values[src] for src in inputs]
        for i, arg in enumerate(args):
            if arg is None and (i not in opdef.ref_inputs or opdef.reads_ref):
                raise errors.FailedPreconditionError(
                    None, None, f"Attempting to use uninitialized value {inputs[i][0]}"
                )
        if node["op"] == "Feed":
            outs = [feed_values[node["attrs"]["index"]]]
        else:
            if opdef.reference is None:
                raise NotImplementedError(f"Op '{node['op']}' has no NumPy reference")
            ctx = OpContext.for_node(
                program,
                name,
                state=state,
                ref_names=[inputs[i][0] for i in opdef.ref_inputs if i < len(inputs)],
            )
            try:
                outs = as_output_list(opdef.reference(ctx, *args))
            except errors.OpError as e:
                if e.op is None:  # name the failing node, as compiled runs do
                    e.op = program.get_operation_by_name(name)
                raise
        for i, value in enumerate(outs):
            if value is not None:
                if not isinstance(value, np.ndarray):
                    value = np.asarray(value)
                expected = (node["dtypes"][i].np, tuple(node["shapes"][i]))
                if (value.dtype, value.shape) != expected:
                    raise AssertionError(
                        f"reference of {node['op']} '{name}' returned {value.dtype}{value.shape}, "
                        f"expected {expected[0]}{expected[1]}"
                    )
            values[(name, i)] = value
            for j in fetch_slots.get((name, i), []):
                if value is None:
                    raise errors.FailedPreconditionError(
                        None, None, f"Attempting to use uninitialized value {name}"
                    )
                results[j] = np.array(value, copy=True) if copy_fetches else value
    return results
