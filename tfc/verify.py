"""Graph invariants, checked after each pass in the tests (run_passes(..., verify=True))."""

from __future__ import annotations

import networkx as nx

from tfc.graph import CONTROL, Graph
from tfc.ops.registry import REGISTRY
from tfc.tensor_shape import is_fully_defined


class GraphInvariantError(AssertionError):
    pass


def verify_graph(graph: Graph, after: str = "") -> None:
    """Raise GraphInvariantError naming the node and the broken rule."""
    where = f" after pass '{after}'" if after else ""

    def fail(message: str) -> None:
        raise GraphInvariantError(message + where)

    if not nx.is_directed_acyclic_graph(graph.nx):
        fail(f"graph has a cycle: {nx.find_cycle(graph.nx)}")
    attrs = graph.graph_attrs
    concrete = "schedule" in attrs or attrs.get("specialized", False)
    for name, node in graph.nx.nodes(data=True):
        if node["op"] not in REGISTRY:
            fail(f"node '{name}' has unregistered op type '{node['op']}'")
        if len(node["dtypes"]) != len(node["shapes"]):
            fail(f"node '{name}' has {len(node['dtypes'])} dtypes but {len(node['shapes'])} shapes")
        keys = sorted(k for _, _, k in graph.nx.in_edges(name, keys=True) if k != CONTROL)
        if keys != list(range(len(keys))):
            fail(f"node '{name}' has input indices {keys}, not 0..n-1 (one producer per input)")
        for src, out in graph.input_edges(name):
            if out >= len(graph.node(src)["dtypes"]):
                fail(f"node '{name}' reads output {out} of '{src}', which has fewer outputs")
        if concrete and not all(is_fully_defined(s) for s in node["shapes"]):
            fail(f"node '{name}' has a shape that is not fully defined: {node['shapes']}")
    for src, out in attrs.get("fetches", []):
        if src not in graph.nx:
            fail(f"fetch '{src}:{out}' is not in the graph")
    if "schedule" in attrs:
        schedule = attrs["schedule"]
        if sorted(schedule) != sorted(graph.nx.nodes):
            fail("the schedule is not a permutation of the nodes")
        position = {n: i for i, n in enumerate(schedule)}
        for u, v in graph.nx.edges():
            if position[u] >= position[v]:
                fail(f"the schedule runs '{v}' before its input '{u}'")
    if "arena_bytes" in attrs:
        verify_memory_plan(graph, fail)


def verify_memory_plan(graph: Graph, fail) -> None:
    """No two arena buffers alive at one step overlap, and all lie inside the arena."""
    from tfc.passes.memory import ARENA_ALIGN, _nbytes

    intervals = graph.graph_attrs["arena_intervals"]
    buffers = []
    for tensor, (first, last) in intervals.items():
        kind, offset = graph.node(tensor[0])["storage"][tensor[1]]
        size = _nbytes(graph, tensor)
        if kind != "arena":
            fail(f"tensor {tensor} has a lifetime but storage {kind}")
        if offset % ARENA_ALIGN:
            fail(f"tensor {tensor} at offset {offset} is not {ARENA_ALIGN}-byte aligned")
        if offset + size > graph.graph_attrs["arena_bytes"]:
            fail(f"tensor {tensor} ends at {offset + size}, past the arena")
        if size:
            buffers.append((first, last, offset, offset + size, tensor))
    for i, (f1, l1, o1, e1, t1) in enumerate(buffers):
        for f2, l2, o2, e2, t2 in buffers[i + 1 :]:
            if f1 <= l2 and f2 <= l1 and o1 < e2 and o2 < e1:
                fail(f"tensors {t1} and {t2} are alive together and overlap in the arena")
