"""schedule_graph: one topological order of the program, stored as graph_attrs["schedule"].

Guarantees: every node comes after its data and control inputs; among free choices the
user's creation order wins (so generated code reads like the model code); a node that reads a
variable, and does not depend on a write to it, runs before that write, so a training step's
forward pass sees the weights as they were when the step began.
"""

from __future__ import annotations

import networkx as nx

from tfc.graph import Graph
from tfc.ops.registry import get_opdef


def schedule_graph(graph: Graph) -> Graph:
    order = nx.DiGraph(graph.nx)
    for name in graph.node_names():
        opdef = get_opdef(graph.op_type(name))
        if not opdef.ref_inputs:
            continue
        inputs = graph.input_edges(name)
        for i in opdef.ref_inputs:
            var = inputs[i][0]
            for reader in variable_readers(graph, var):
                if reader != name and not nx.has_path(order, name, reader):
                    order.add_edge(reader, name)
    key = {n: graph.node(n)["id"] for n in order.nodes}
    graph.graph_attrs["schedule"] = list(nx.lexicographical_topological_sort(order, key=key.get))
    return graph


def variable_readers(graph: Graph, var: str) -> list[str]:
    """Nodes that read variable `var`'s memory: consumers through any chain of aliasing ops,
    except writers that take it as their ref input."""
    readers, stack, seen = [], [(var, 0)], set()
    while stack:
        tensor = stack.pop()
        for consumer, index in graph.consumers(*tensor):
            if (consumer, index) in seen:
                continue
            seen.add((consumer, index))
            opdef = get_opdef(graph.op_type(consumer))
            if index in opdef.ref_inputs:
                continue
            readers.append(consumer)
            if opdef.alias == index:
                stack.append((consumer, 0))
    return readers
