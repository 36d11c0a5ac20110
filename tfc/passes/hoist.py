"""hoist_invariants: loop-invariant code motion. Work a While's condition or body does on values
that are the same in every iteration is done once, before the loop.

Guarantees: a node of a cond or body moves out of the loop (into the graph holding the While,
becoming an input of the While) when every input it depends on is a captured input of the
While (not a loop variable) or a constant, it does work (it has a kernel: views and identities
stay), it is neither stateful nor random (its effects happen every iteration), it holds no
nested graph, and none of its kernels can fail (outside the loop it would also run when the
loop runs no iteration, and an error that the loop would not have raised must not appear).
Inner loops are hoisted first, so a value invariant in two nested loops leaves both. An If's
branches are never hoisted from: only the branch taken may run. The moved nodes keep their
names (made unique in the outer graph) and the While's device; results do not change.

A rank-2 MatMul of a cond or body reading a captured input transposed (the gradient loop of an
RNN computes dz W^T every iteration) first gets a Transpose of that input, which then moves
out like any invariant: the GEMM of each iteration packs a row-major operand instead of
gathering a strided one (a fifth faster at 64 x 156 x 512), for one transpose per loop.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import CONTROL, Graph
from tfc.ops.registry import OpContext, get_opdef
from tfc.passes.nested import map_subgraphs

__all__ = ["hoist_invariants"]


def hoist_invariants(graph: Graph) -> Graph:
    map_subgraphs(graph, lambda inner, node, key: hoist_invariants(inner))
    for name in [n for n in graph.node_names() if graph.op_type(n) == "While"]:
        for key in ("cond", "body"):
            _hoist(graph, name, key)
    return graph


def _movable(inner: Graph, n: str, loop_vars: int, moved: set[str]) -> bool:
    node = inner.node(n)
    opdef = get_opdef(node["op"])
    if node["op"] in ("Feed", "Const") or opdef.stateful or opdef.random or opdef.subgraphs:
        return False
    if inner.control_input_names(n):
        return False
    for src, _ in inner.input_edges(n):
        src_node = inner.node(src)
        if src in moved or src_node["op"] == "Const":
            continue
        if src_node["op"] == "Feed" and src_node["attrs"]["index"] >= loop_vars:
            continue
        return False
    if opdef.alias is not None or opdef.lower is None:
        return False
    try:
        kernels = opdef.lower(OpContext.for_node(inner, n))
    except Exception:  # noqa: BLE001 - what cannot be lowered here is not moved
        return False
    return bool(kernels) and not any(k.can_fail for k in kernels)


def _transposed_captures(inner: Graph, loop_vars: int) -> list[tuple[str, int, str]]:
    """(MatMul, operand, its transpose attribute) for each captured rank-2 operand a MatMul of
    the loop reads transposed."""
    found = []
    for n in inner.node_names():
        if inner.op_type(n) != "MatMul":
            continue
        for i, flag in enumerate(("transpose_a", "transpose_b")):
            src, out = inner.input_edges(n)[i]
            data = inner.node(src)
            if (
                inner.node(n)["attrs"].get(flag)
                and data["op"] == "Feed"
                and data["attrs"]["index"] >= loop_vars
                and len(data["shapes"][out]) == 2
            ):
                found.append((n, i, flag))
    return found


def _transpose_captures(inner: Graph, found: list[tuple[str, int, str]]) -> None:
    """Each MatMul of `found` reads a Transpose of its captured operand, untransposed."""
    for n, i, flag in found:
        src, out = inner.input_edges(n)[i]
        data, device = inner.node(src), inner.node(n)["device"]
        rows, cols = data["shapes"][out]
        perm = np.array([1, 0], np.int32)
        perm.setflags(write=False)
        perm_name = inner.unique_name(f"{n}/{flag}/perm")
        inner.add_node(
            perm_name, "Const", [], {"value": perm, "dtype": _dt.int32}, [_dt.int32], [(2,)],
            device=device,
        )  # fmt: skip
        transposed = inner.unique_name(f"{n}/{flag}")
        inner.add_node(
            transposed, "Transpose", [(src, out), (perm_name, 0)], {}, [data["dtypes"][out]],
            [(cols, rows)], device=device,
        )  # fmt: skip
        inner.set_input(n, i, (transposed, 0))
        inner.node(n)["attrs"] = dict(inner.node(n)["attrs"], **{flag: False})


def _hoist(graph: Graph, name: str, key: str) -> None:
    node = graph.node(name)
    attrs = node["attrs"]
    loop_vars = attrs["loop_vars"]
    inner = attrs[key]
    transposed = _transposed_captures(inner, loop_vars)
    if transposed:
        inner = inner.copy()
        _transpose_captures(inner, transposed)
    order = list(nx.lexicographical_topological_sort(inner.nx, key=lambda n: inner.node(n)["id"]))
    moved: set[str] = set()
    for n in order:
        if _movable(inner, n, loop_vars, moved):
            moved.add(n)
    if not moved:
        if transposed:
            node["attrs"] = dict(attrs, **{key: inner})
            graph.version += 1
        return
    if not transposed:
        inner = inner.copy()
    inputs = graph.input_edges(name)
    has_max = attrs["maximum_iterations"]
    captures_end = len(inputs) - has_max
    renamed: dict[str, str] = {}

    def outer_tensor(src: str, out: int) -> tuple[str, int]:
        src_node = inner.node(src)
        if src in renamed:
            return renamed[src], out
        if src_node["op"] == "Feed":
            return inputs[src_node["attrs"]["index"]]
        # a constant a moved node reads: copied out with it
        new = renamed[src] = graph.unique_name(src)
        graph.add_node(
            new, "Const", [], dict(src_node["attrs"]), src_node["dtypes"], src_node["shapes"],
            device=node["device"],
        )  # fmt: skip
        return new, out

    for n in [m for m in order if m in moved]:
        data = inner.node(n)
        ins = [outer_tensor(src, out) for src, out in inner.input_edges(n)]
        new = renamed[n] = graph.unique_name(n)
        graph.add_node(
            new, data["op"], ins, dict(data["attrs"]), data["dtypes"], data["shapes"],
            device=node["device"],
        )  # fmt: skip
    # what the loop still reads of the moved values becomes new captured inputs
    fetched = {tuple(f) for f in inner.graph_attrs["fetches"]}
    used: list[tuple[str, int]] = []
    for n in moved:
        for out in range(len(inner.node(n)["dtypes"])):
            readers = [c for c, _ in inner.consumers(n, out) if c not in moved]
            if readers or (n, out) in fetched:
                used.append((n, out))
    used.sort(key=lambda t: (inner.node(t[0])["id"], t[1]))
    new_inputs = inputs[:captures_end] + [(renamed[n], out) for n, out in used]
    new_inputs += inputs[captures_end:]
    for u, _, k in list(graph.nx.in_edges(name, keys=True)):
        if k != CONTROL:
            graph.nx.remove_edge(u, name, key=k)
    for index, (src, out) in enumerate(new_inputs):
        graph.nx.add_edge(src, name, key=index, out=out)
    for index, (n, out) in enumerate(used, start=captures_end):
        data = inner.node(n)
        feed = inner.unique_name(f"{n}/hoisted")
        shape = data["shapes"][out]
        feed_attrs = {"index": index, "dtype": data["dtypes"][out], "shape": shape}
        inner.add_node(feed, "Feed", [], feed_attrs, [data["dtypes"][out]], [shape])
        for consumer, in_index in inner.consumers(n, out):
            if consumer not in moved:
                inner.set_input(consumer, in_index, (feed, 0))
        inner.graph_attrs["fetches"] = [
            (feed, 0) if tuple(f) == (n, out) else f for f in inner.graph_attrs["fetches"]
        ]
    for n in moved:
        inner.remove_node(n)
    for n in [m for m in inner.node_names() if inner.op_type(m) == "Const"]:
        if not inner.nx.out_degree(n) and (n, 0) not in fetched:
            inner.remove_node(n)
    node["attrs"] = dict(attrs, **{key: inner})
    graph.version += 1
