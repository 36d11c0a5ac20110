"""guard_updates: a step writes no variable unless its loss and the values its updates read are
finite.

Guarantees: every float tensor that the program fetches (a train step's loss) or that a
variable-writing node (an op with ref inputs: the optimizer's Apply*, Assign, AssignAdd) reads
besides its variables, and that no such node computes, is checked by a CheckNumerics node
named GUARD_SCOPE/...; every variable-writing node waits for all the checks. So a run that
fails a check (a NaN feature, an infinite gradient) returns before any variable changes. The
checked values stay alive until the updates read them: the arena holds every gradient at once.
"""

from __future__ import annotations

import networkx as nx

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph
from tfc.ops.registry import get_opdef

GUARD_SCOPE = "tfc_finite"  # the name scope of the checks: a failing node's name starts with it
_FLOATS = (_dt.float32, _dt.float64)


def guard_updates(graph: Graph) -> Graph:
    updates = [n for n in graph.node_names() if get_opdef(graph.op_type(n)).ref_inputs]
    if not updates:
        return graph
    after = set(updates)  # the updates and what runs after one of them
    for name in updates:
        after |= nx.descendants(graph.nx, name)
    checked: list[tuple[str, int]] = []

    def check(tensor: tuple[str, int]) -> None:
        src, out = tensor
        if src not in after and tensor not in checked:
            if graph.node(src)["dtypes"][out] in _FLOATS:
                checked.append(tensor)

    for tensor in graph.graph_attrs["fetches"]:
        check(tuple(tensor))
    for name in updates:
        arity = len(graph.input_edges(name))
        refs = {i % arity for i in get_opdef(graph.op_type(name)).ref_inputs}
        for i, tensor in enumerate(graph.input_edges(name)):
            if i not in refs:
                check(tensor)
    checks = []
    for src, out in checked:
        node = graph.node(src)
        name = f"{GUARD_SCOPE}/{src}" + (f"_{out}" if out else "")
        while name in graph.nx:
            name += "_"
        graph.add_node(
            name,
            "CheckNumerics",
            [(src, out)],
            {"message": f"{src}:{out}"},
            [node["dtypes"][out]],
            [node["shapes"][out]],
            device=node.get("device", ""),
        )
        checks.append(name)
    for name in updates:
        for c in checks:
            graph.add_control_edge(c, name)
    return graph
