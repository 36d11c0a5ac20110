"""Readable text form of a graph: one line per node, in schedule (or creation) order."""

from __future__ import annotations

from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import shape_str


def graph_text(graph: Graph) -> str:
    names = graph.graph_attrs.get("schedule") or graph.node_names()
    lines = []
    for name in names:
        node = graph.node(name)
        outs = ", ".join(f"{d.name}{shape_str(s)}" for d, s in zip(node["dtypes"], node["shapes"]))
        ins = ", ".join(f"{s}:{i}" for s, i in graph.input_edges(name))
        ctrl = "".join(f", ^{c}" for c in graph.control_input_names(name))
        attrs = {k: v for k, v in node["attrs"].items() if k != "value"}
        extra = f" {attrs}" if attrs else ""
        storage = f"  @ {node['storage']}" if "storage" in node else ""
        device = f"  [{node['device']}]" if node["device"] else ""
        lines.append(f"{name} = {node['op']}({ins}{ctrl}) -> {outs}{extra}{device}{storage}")
    return "\n".join(lines) + "\n"
