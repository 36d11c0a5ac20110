"""tfc graphs written as TensorFlow's GraphDef: `Graph.as_graph_def`, and what FileWriter shows.

Each node becomes a NodeDef: its name, op type, inputs ("node", "node:1", "^control"), device
and attributes, with the type attributes TensorFlow's op needs added from the input dtypes
(tfc/graphdef/attrs.py). Nodes come in the order they were created, so every input comes
before the node that reads it.
"""

from __future__ import annotations

import logging
from typing import Any

from tfc.graphdef.attrs import (
    TFC_ONLY_ATTRS,
    UnrepresentableAttr,
    derived_type_attrs,
    to_attr_value,
)
from tfc.io.graph_pb import GraphDef, NodeDef
from tfc.ir.graph import Graph, register_graph_def_writer

__all__ = ["PRODUCER", "graph_to_graph_def", "node_input_name"]

_log = logging.getLogger("tfc")

# The GraphDef version this writer follows (TensorFlow 2.21's GRAPH_DEF_VERSION): readers of
# older versions apply no newer semantics to it.
PRODUCER = 2474


def node_input_name(src: str, index: int) -> str:
    """A NodeDef input naming output `index` of node `src`."""
    return src if index == 0 else f"{src}:{index}"


def _fill_node_def(nd: NodeDef, graph: Graph, name: str, add_shapes: bool, lenient: bool) -> None:
    node = graph.node(name)
    op = node["op"]
    inputs = graph.input_edges(name)
    nd.name, nd.op, nd.device = name, op, node["device"] or ""
    nd.input.extend(node_input_name(src, i) for src, i in inputs)
    nd.input.extend("^" + c for c in graph.control_input_names(name))
    attrs = {k: v for k, v in node["attrs"].items() if k not in TFC_ONLY_ATTRS.get(op, {})}
    in_dtypes = [graph.node(src)["dtypes"][i] for src, i in inputs]
    for key, value in derived_type_attrs(op, in_dtypes).items():
        attrs.setdefault(key, value)
    if add_shapes:
        attrs["_output_shapes"] = list(node["shapes"])
    for key in sorted(attrs):
        try:
            nd.attr[key].CopyFrom(to_attr_value(key, attrs[key]))
        except (UnrepresentableAttr, TypeError) as e:
            if not lenient:
                raise UnrepresentableAttr(f"node '{name}' ({op}): {e}") from None
            del nd.attr[key]
            # a graph written for TensorBoard to draw: queue, reader and iterator ops hold Python
            # objects in every such graph (each Estimator writes one), so this is no warning
            _log.debug("node '%s' (%s): %s; left out of its GraphDef", name, op, e)


def graph_to_graph_def(
    graph: Graph,
    add_shapes: bool = False,
    nodes: list[str] | None = None,
    lenient: bool = False,
) -> GraphDef:
    """The GraphDef of `graph` (of the nodes named in `nodes`, when given). An attribute no
    GraphDef can hold (a Python object) raises UnrepresentableAttr naming the node, or, when
    `lenient` (a graph written for TensorBoard to draw), is left out with a warning."""
    out = GraphDef()
    out.versions.producer = PRODUCER
    wanted = set(nodes) if nodes is not None else None
    for name in graph.node_names():
        if wanted is None or name in wanted:
            _fill_node_def(out.node.add(), graph, name, add_shapes, lenient)
    return out


def _as_graph_def(graph: Graph, add_shapes: bool = False) -> Any:
    return graph_to_graph_def(graph, add_shapes=add_shapes)


register_graph_def_writer(_as_graph_def)
