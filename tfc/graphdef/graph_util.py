"""`tf.graph_util`: the frozen-graph workflow on GraphDefs (what tfcompile starts from).

`extract_sub_graph` keeps the nodes an output needs, `convert_variables_to_constants` freezes a
session's variables into Const nodes, `remove_training_nodes` drops the Identity and
CheckNumerics nodes only training needs. They follow TensorFlow 1's graph_util functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tfc.graphdef.importer import parse_tensor_name
from tfc.io.graph_pb import GraphDef, NodeDef
from tfc.io.tensor_proto import make_tensor_proto

__all__ = [
    "extract_sub_graph",
    "convert_variables_to_constants",
    "remove_training_nodes",
    "tensor_shape_from_node_def_name",
]

_VARIABLE_OPS = ("VariableV2", "Variable")


def _node_name(name: str) -> str:
    return parse_tensor_name(name[1:] if name.startswith("^") else name)[0]


def _copy_frame(graph_def: GraphDef, nodes: Iterable[NodeDef]) -> GraphDef:
    out = GraphDef()
    for nd in nodes:
        out.node.add().CopyFrom(nd)
    if graph_def.HasField("library"):
        out.library.CopyFrom(graph_def.library)
    if graph_def.HasField("versions"):
        out.versions.CopyFrom(graph_def.versions)
    return out


def extract_sub_graph(graph_def: GraphDef, dest_nodes: Any) -> GraphDef:
    """The nodes of `graph_def` that `dest_nodes` (names) need, through data and control
    inputs, in their original order."""
    if not isinstance(graph_def, GraphDef):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto.")
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list.")
    by_name = {nd.name: nd for nd in graph_def.node}
    for name in dest_nodes:
        if name not in by_name:
            raise AssertionError(f"{name} is not in graph")
    keep: set[str] = set()
    stack = list(dest_nodes)
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        for inp in by_name[name].input:
            src = _node_name(inp)
            if src not in by_name:
                raise AssertionError(f"{src} (an input of {name}) is not in graph")
            stack.append(src)
    return _copy_frame(graph_def, (nd for nd in graph_def.node if nd.name in keep))


def convert_variables_to_constants(
    sess: Any,
    input_graph_def: GraphDef,
    output_node_names: list[str],
    variable_names_whitelist: list[str] | None = None,
    variable_names_blacklist: list[str] | None = None,
) -> GraphDef:
    """The subgraph `output_node_names` need, with every variable it reads (those of the
    whitelist, less those of the blacklist) replaced by a Const of its value in `sess`."""
    graph_def = extract_sub_graph(input_graph_def, output_node_names)
    names = [
        nd.name
        for nd in graph_def.node
        if nd.op in _VARIABLE_OPS
        and (variable_names_whitelist is None or nd.name in variable_names_whitelist)
        and (variable_names_blacklist is None or nd.name not in variable_names_blacklist)
    ]
    values = sess.run([f"{n}:0" for n in names]) if names else []
    frozen = dict(zip(names, values))
    out = GraphDef()
    for nd in graph_def.node:
        new = out.node.add()
        if nd.name in frozen:
            value = np.asarray(frozen[nd.name])
            new.name, new.op = nd.name, "Const"
            dtype = nd.attr["dtype"].type
            new.attr["dtype"].type = dtype
            new.attr["value"].tensor.CopyFrom(make_tensor_proto(value))
            if new.attr["value"].tensor.dtype != dtype:
                raise TypeError(
                    f"variable {nd.name} holds {value.dtype} values; its node says DataType {dtype}"
                )
            if nd.device:
                new.device = nd.device
        else:
            new.CopyFrom(nd)
    if graph_def.HasField("library"):
        out.library.CopyFrom(graph_def.library)
    if graph_def.HasField("versions"):
        out.versions.CopyFrom(graph_def.versions)
    return out


def _colocated_name(entry: bytes) -> str:
    text = entry.decode("utf-8") if isinstance(entry, bytes) else entry
    return text[len("loc:@") :] if text.startswith("loc:@") else text


def remove_training_nodes(
    input_graph: GraphDef, protected_nodes: list[str] | None = None
) -> GraphDef:
    """`input_graph` without its CheckNumerics nodes, and with the Identity nodes that neither
    have nor are control inputs (nor are colocated with, nor protected) spliced out."""
    protected = set(protected_nodes or [])
    removed = {nd.name for nd in input_graph.node
               if nd.op == "CheckNumerics" and nd.name not in protected}  # fmt: skip
    after_removal = []
    for nd in input_graph.node:
        if nd.name in removed:
            continue
        new = NodeDef()
        new.CopyFrom(nd)
        del new.input[:]
        new.input.extend(i for i in nd.input if _node_name(i) not in removed)
        after_removal.append(new)
    control_inputs: set[str] = set()
    with_control: set[str] = set()
    colocated: set[str] = set()
    for nd in after_removal:
        for inp in nd.input:
            if inp.startswith("^"):
                control_inputs.add(inp[1:])
                with_control.add(nd.name)
        if "_class" in nd.attr:
            colocated.update(_colocated_name(s) for s in nd.attr["_class"].list.s)
    splice = {
        nd.name: nd.input[0]
        for nd in after_removal
        if nd.op == "Identity"
        and nd.name not in protected
        and nd.name not in colocated
        and nd.name not in with_control
        and nd.name not in control_inputs
    }
    nodes = []
    for nd in after_removal:
        if nd.name in splice:
            continue
        inputs = []
        for inp in nd.input:
            control = inp.startswith("^")
            name = _node_name(inp)
            while name in splice:
                inp = splice[name]
                name = _node_name(inp)
            inputs.append("^" + name if control and not inp.startswith("^") else inp)
        del nd.input[:]
        nd.input.extend(inputs)
        nodes.append(nd)
    out = GraphDef()
    for nd in nodes:
        out.node.add().CopyFrom(nd)
    return out


def tensor_shape_from_node_def_name(graph: Any, input_name: str) -> Any:
    """The static shape of the tensor `input_name` ("x" means "x:0") of a tfc graph."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()
