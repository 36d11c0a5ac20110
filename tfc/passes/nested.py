"""Passes and nested graphs: how a pass reaches the branches and bodies of If and While, and how
a functional op's interface (its inputs, outputs and the nested graphs' feeds and fetches)
shrinks when some of it is no longer needed.

A nested graph is a program graph (tfc.ir.subgraph): Feed i stands for input i of the op (of an
If: input i + 1), fetch j is output j. Nested graphs are attribute values, shared by the copies
of a graph (tfc.ir.program.make_program_graph copies the user's graph): a pass never changes
one in place, it transforms a copy and gives the node a new attribute dict (`map_subgraphs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tfc.ir.graph import CONTROL, Graph
from tfc.ops.registry import get_opdef

__all__ = [
    "functional_nodes",
    "map_subgraphs",
    "input_offset",
    "feeds_by_index",
    "feed_indices_needed",
    "shrink_interface",
    "nested_ops",
]


def functional_nodes(graph: Graph) -> list[str]:
    """The nodes of `graph` holding nested graphs, in creation order."""
    return [n for n in graph.node_names() if get_opdef(graph.op_type(n)).subgraphs]


def subgraph_keys(graph: Graph, name: str) -> tuple[str, ...]:
    return get_opdef(graph.op_type(name)).subgraphs


def map_subgraphs(graph: Graph, fn: Callable[[Graph, str, str], Graph]) -> None:
    """Give every node holding nested graphs new ones: fn(a copy of the graph, node, key)."""
    for name in functional_nodes(graph):
        node = graph.node(name)
        attrs = dict(node["attrs"])
        for key in subgraph_keys(graph, name):
            inner = attrs[key].copy()
            for k in ("fetches", "targets", "feeds"):
                if k in inner.graph_attrs:
                    inner.graph_attrs[k] = list(inner.graph_attrs[k])
            attrs[key] = fn(inner, name, key)
        node["attrs"] = attrs
        graph.version += 1


def input_offset(op_type: str) -> int:
    """How many inputs of the op come before the one its nested graphs' Feed 0 stands for."""
    return 1 if op_type == "If" else 0


def feeds_by_index(graph: Graph) -> dict[int, str]:
    """Feed node of each input index of a nested graph."""
    return {
        graph.node(n)["attrs"]["index"]: n for n in graph.nx.nodes if graph.op_type(n) == "Feed"
    }


def ancestors(graph: Graph, roots: Iterable[str]) -> set[str]:
    """`roots` and every node they depend on (data and control edges)."""
    seen = set(roots)
    stack = list(seen)
    while stack:
        for pred in graph.nx.predecessors(stack.pop()):
            if pred not in seen:
                seen.add(pred)
                stack.append(pred)
    return seen


def feed_indices_needed(graph: Graph, fetches: Iterable, targets: Iterable[str] = ()) -> set[int]:
    """The input indices of the Feeds that `fetches` (tensors or None) and `targets` need."""
    roots = [f[0] for f in fetches if f is not None] + list(targets)
    return {
        graph.node(n)["attrs"]["index"]
        for n in ancestors(graph, roots)
        if graph.op_type(n) == "Feed"
    }


def shrink_interface(
    graph: Graph,
    name: str,
    keep_inputs: list[int],
    keep_outputs: list[int],
    attrs: dict,
) -> None:
    """Cut node `name` down to the inputs `keep_inputs` and outputs `keep_outputs` (old
    indices, in order). `attrs` are its new attributes, whose nested graphs already fetch only
    the kept outputs and hold Feeds only for kept inputs (still numbered by the old indices:
    they are renumbered here). Consumers and fetches of kept outputs follow them."""
    node = graph.node(name)
    offset = input_offset(node["op"])
    new_input = {old: new for new, old in enumerate(keep_inputs)}
    new_output = {old: new for new, old in enumerate(keep_outputs)}
    edges = graph.input_edges(name)
    for u, _, k in list(graph.nx.in_edges(name, keys=True)):
        if k != CONTROL:
            graph.nx.remove_edge(u, name, key=k)
    for old in keep_inputs:
        src, out = edges[old]
        graph.nx.add_edge(src, name, key=new_input[old], out=out)
    for _, v, k, data in list(graph.nx.out_edges(name, keys=True, data=True)):
        if k == CONTROL:
            continue
        if data["out"] not in new_output:
            raise ValueError(f"'{name}' output {data['out']} is dropped but '{v}' reads it")
        data["out"] = new_output[data["out"]]
    fetches = graph.graph_attrs.get("fetches", [])
    graph.graph_attrs["fetches"] = [(n, new_output[i]) if n == name else (n, i) for n, i in fetches]
    for key in subgraph_keys(graph, name):
        inner = attrs[key]
        for feed in [n for n in inner.nx.nodes if inner.op_type(n) == "Feed"]:
            data = inner.node(feed)
            old = data["attrs"]["index"] + offset
            data["attrs"] = dict(data["attrs"], index=new_input[old] - offset)
        specs = inner.graph_attrs.get("feeds", [])
        inner.graph_attrs["feeds"] = [s for s in specs if s.tensor[0] in inner.nx]
        inner.version += 1
    node["attrs"] = attrs
    node["dtypes"] = [node["dtypes"][i] for i in keep_outputs]
    node["shapes"] = [node["shapes"][i] for i in keep_outputs]
    graph.version += 1


def nested_ops(graph: Graph) -> Iterable[tuple[Graph, str]]:
    """Every (graph, node) inside the nested graphs of `graph`'s nodes, at any depth."""
    for name in functional_nodes(graph):
        for key in subgraph_keys(graph, name):
            inner = graph.node(name)["attrs"][key]
            for n in inner.node_names():
                yield inner, n
            yield from nested_ops(inner)
