"""specialize_shapes: make every shape concrete for the fed shapes, and fix compile-time values.

Guarantees: every output of every node has a fully known shape; Shape, Size and Rank nodes
are Consts; every input an op needs the value of at compile time (a reshape's shape, a
transpose's perm, a reduction's axes) is produced by a Const node. Shape errors that only the
fed shapes reveal are raised as InvalidArgumentError, as TensorFlow raises them at run time.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import is_fully_defined, shape_str
from tfc.ops.registry import OpContext, constant_value, get_opdef, infer_outputs

_SHAPE_OPS = ("Shape", "Size", "Rank")


def specialize_shapes(graph: Graph) -> Graph:
    order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
    for name in list(order):
        node = graph.node(name)
        if node["op"] in ("Feed", "Const"):
            continue
        _fix_const_inputs(graph, name)
        try:
            outputs = infer_outputs(graph, name)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        for i, (_, shape) in enumerate(outputs):
            if not is_fully_defined(shape):
                raise ValueError(
                    f"The shape of output {i} of '{name}' (op: '{node['op']}') is "
                    f"{shape_str(shape)} even with every fed shape known; tfc needs static "
                    "shapes to compile."
                )
        node["shapes"] = [tuple(s) for _, s in outputs]
        if node["op"] in _SHAPE_OPS:
            value = constant_value(graph, (name, 0))
            _make_const(graph, name, np.asarray(value, dtype=node["dtypes"][0].np))
    graph.graph_attrs["specialized"] = True  # verification checks concrete shapes from here on
    return graph


def _fix_const_inputs(graph: Graph, name: str) -> None:
    node = graph.node(name)
    opdef = get_opdef(node["op"])
    inputs = graph.input_edges(name)
    for i in opdef.const_inputs:
        if i < 0:
            i += len(inputs)  # counted from the end: ConcatV2's axis follows its N values
        if not 0 <= i < len(inputs):
            continue
        src, out = inputs[i]
        if graph.node(src)["op"] == "Const":
            continue
        ctx = OpContext.for_node(graph, name)
        value = ctx.require_const(i, f"input {i}")
        dtype = graph.node(src)["dtypes"][out]
        const = graph.unique_name(f"{name}/const_input_{i}")
        array = np.asarray(value, dtype=dtype.np)
        array.setflags(write=False)
        graph.add_node(const, "Const", [], {"value": array, "dtype": dtype}, [dtype], [array.shape])
        graph.set_input(name, i, (const, 0))


def _make_const(graph: Graph, name: str, value: np.ndarray) -> None:
    for u, _, k in list(graph.nx.in_edges(name, keys=True)):
        graph.nx.remove_edge(u, name, key=k)
    value.setflags(write=False)
    node = graph.node(name)
    node.update(
        op="Const", attrs={"value": value, "dtype": _dt.as_dtype(value.dtype)}, shapes=[value.shape]
    )
    graph.version += 1
