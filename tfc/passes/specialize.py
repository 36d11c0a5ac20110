"""specialize_shapes: make every shape concrete for the fed shapes, and fix compile-time values.

Guarantees: every output of every node has a fully known shape; Shape, Size and Rank nodes
are Consts; every input an op needs the value of at compile time (a reshape's shape, a
transpose's perm, a reduction's axes) is produced by a Const node. Shape errors that only the
fed shapes reveal are raised as InvalidArgumentError, as TensorFlow raises them at run time.

Nested graphs are specialized for the shapes of the inputs of their op: a loop variable keeps
one shape in every iteration (a body that changes it is an error naming the loop: tfc plans
memory for static shapes), both branches of an If give an output the same shape. A While gets
its static iteration bound ("bound": tfc.passes.loops.loop_bound), which sizes the values it
accumulates for its gradient and the TensorArrays of dynamic size it grows (their capacity is
their size plus the bound). A TensorArray whose element shape only a body's write tells gets it
from the body (inferred with the shapes known so far).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import is_fully_defined, shape_str
from tfc.ops.functional import fetch_type, unbounded_message
from tfc.ops.registry import OpContext, constant_value, get_opdef, infer_outputs
from tfc.passes.loops import (
    loop_bound,
    refine_tensor_array,
    refresh_shapes,
    set_feed_shapes,
    tensor_array_root,
)
from tfc.passes.nested import input_offset, subgraph_keys

_SHAPE_OPS = ("Shape", "Size", "Rank")
# ops whose shape may stay open until a loop or branch that uses them fixes it (a TensorArray
# whose element shape a body's write tells): checked at the end
_SHAPED_LATER = ("TensorArrayV3", "Undefined")
# writes that tell a TensorArray's element shape (the value's, or its rows')
_WRITES = {"TensorArrayWriteV3": 0, "TensorArrayScatterV3": 1}


def specialize_shapes(graph: Graph) -> Graph:
    _specialize_nodes(graph)
    _check_static(graph)
    graph.graph_attrs["specialized"] = True  # verification checks concrete shapes from here on
    return graph


def _specialize_nodes(graph: Graph) -> None:
    order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
    for name in list(order):
        node = graph.node(name)
        if node["op"] in ("Feed", "Const"):
            continue
        if get_opdef(node["op"]).subgraphs:
            _specialize_functional(graph, name)
            continue
        _fix_const_inputs(graph, name)
        if node["op"] in _WRITES:
            _shape_from_write(graph, name)
        try:
            outputs = infer_outputs(graph, name)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        if node["op"] == "TensorArrayV3" and node["attrs"]["dynamic_size"]:
            if node["attrs"].get("capacity") is None and not _grown_by_a_loop(graph, name):
                size = int(constant_value(graph, graph.input_edges(name)[0]))
                node["attrs"] = dict(node["attrs"], capacity=size)  # nothing grows it
                outputs = infer_outputs(graph, name)
        if node["op"] in _SHAPED_LATER:
            node["shapes"] = [s for _, s in outputs]
            continue
        for i, (_, shape) in enumerate(outputs):
            if not is_fully_defined(shape):
                for src, _ in graph.input_edges(name):  # a TensorArray no write shaped
                    if graph.op_type(src) in _SHAPED_LATER:
                        raise _not_static(src, graph.op_type(src), 0, None)
                raise _not_static(name, node["op"], i, shape)
        node["shapes"] = [tuple(s) for _, s in outputs]
        if node["op"] in _SHAPE_OPS:
            value = constant_value(graph, (name, 0))
            _make_const(graph, name, np.asarray(value, dtype=node["dtypes"][0].np))


def _check_static(graph: Graph) -> None:
    for name in graph.nx.nodes:
        node = graph.node(name)
        for i, shape in enumerate(node["shapes"]):
            if not is_fully_defined(shape):
                raise _not_static(name, node["op"], i, shape)


def _grown_by_a_loop(graph: Graph, name: str) -> bool:
    """Whether a version of TensorArray `name`'s buffer is a loop variable of a While."""
    stack, seen = [(name, 0)], set()
    while stack:
        for consumer, index in graph.consumers(*stack.pop()):
            if graph.op_type(consumer) == "While":
                return True
            if get_opdef(graph.op_type(consumer)).alias == index and consumer not in seen:
                seen.add(consumer)
                stack.append((consumer, 0))
    return False


def _shape_from_write(graph: Graph, name: str) -> None:
    """A write to a TensorArray whose element shape is still open gives it its value's."""
    buffer, value = graph.input_edges(name)[0], graph.input_edges(name)[3]
    if is_fully_defined(graph.node(buffer[0])["shapes"][buffer[1]]):
        return
    shape = graph.node(value[0])["shapes"][value[1]]
    elem = shape[_WRITES[graph.op_type(name)] :]
    if is_fully_defined(elem):
        refine_tensor_array(graph, buffer, element_shape=tuple(elem))


def _not_static(name: str, op: str, i: int, shape) -> ValueError:
    if op == "TensorArrayV3":
        return ValueError(
            f"The element shape of TensorArray '{name}' is not known when compiling: no write "
            "tells it. Give the TensorArray an element_shape."
        )
    return ValueError(
        f"The shape of output {i} of '{name}' (op: '{op}') is {shape_str(shape)} even with "
        "every fed shape known; tfc needs static shapes to compile."
    )


def _specialize_functional(graph: Graph, name: str) -> None:
    """An If or While, and its nested graphs, specialized for its inputs' shapes."""
    node = graph.node(name)
    op = node["op"]
    attrs = dict(node["attrs"])
    offset = input_offset(op)
    inputs = graph.input_edges(name)
    loop_vars = attrs.get("loop_vars", 0)
    if op == "While":
        attrs["bound"] = bound = loop_bound(graph, name)
        for j in range(loop_vars):  # TensorArrays of dynamic size grow by the bound
            found = tensor_array_root(graph, inputs[j])
            if found is None:
                continue
            root = graph.node(found[0])
            if root["attrs"]["dynamic_size"] and root["attrs"].get("capacity") is None:
                if bound is None:
                    raise ValueError(unbounded_message(name))
                size = int(constant_value(graph, graph.input_edges(found[0])[0]))
                refine_tensor_array(graph, inputs[j], capacity=size + bound)
    keys = subgraph_keys(graph, name)
    inner = {key: attrs[key].copy() for key in keys}

    def input_shapes() -> dict:
        return {
            i - offset: graph.node(src)["shapes"][out]
            for i, (src, out) in enumerate(inputs)
            if i >= offset
        }

    shapes = input_shapes()
    open_inputs = [i for i, s in shapes.items() if not is_fully_defined(s)]
    if open_inputs:  # TensorArrays whose element shape a write inside tells
        for key, g in inner.items():
            if key == "cond":
                continue
            probe = g.copy()
            set_feed_shapes(probe, shapes)
            refresh_shapes(probe)
            for i in open_inputs:
                result = _result_of_input(op, attrs, i)
                if result is None:
                    continue
                found = fetch_type(probe, probe.graph_attrs["fetches"][result])
                if found is not None and found[1] and is_fully_defined(found[1][1:]):
                    refine_tensor_array(graph, inputs[i + offset], element_shape=found[1][1:])
        shapes = input_shapes()
    for i, shape in shapes.items():
        if not is_fully_defined(shape):
            raise ValueError(
                f"Input {i + offset} of '{name}' ({op}) has shape {shape_str(shape)} even with "
                "every fed shape known; tfc needs static shapes to compile."
            )
    for g in inner.values():
        set_feed_shapes(g, shapes)
        _specialize_nodes(g)
    if op == "If":  # an output one branch leaves unset has the other branch's shape
        _shape_unset_outputs(inner["then_branch"], inner["else_branch"])
        _shape_unset_outputs(inner["else_branch"], inner["then_branch"])
    for g in inner.values():
        _check_static(g)
    attrs.update(inner)
    if op == "While":
        body = inner["body"]
        for j in range(loop_vars):
            got = fetch_type(body, body.graph_attrs["fetches"][j])[1]
            if tuple(got) != tuple(shapes[j]):
                raise ValueError(
                    f"Loop variable {j} of while_loop '{name}' enters the loop with shape "
                    f"{shape_str(shapes[j])} but has shape {shape_str(got)} after one "
                    "iteration: tfc compiles loop variables of one static shape (memory is "
                    "planned ahead of time)."
                )
        attrs["shape_invariants"] = tuple(tuple(shapes[j]) for j in range(loop_vars))
    else:
        then, other = inner["then_branch"], inner["else_branch"]
        for j, (a, b) in enumerate(zip(then.graph_attrs["fetches"], other.graph_attrs["fetches"])):
            ta, tb = fetch_type(then, a), fetch_type(other, b)
            if ta is not None and tb is not None and tuple(ta[1]) != tuple(tb[1]):
                raise ValueError(
                    f"Output {j} of cond '{name}' has shape {shape_str(ta[1])} in its true "
                    f"branch and {shape_str(tb[1])} in its false branch: tfc compiles outputs "
                    "of one static shape."
                )
    node["attrs"] = attrs
    outputs = infer_outputs(graph, name)
    for i, (_, shape) in enumerate(outputs):
        if not is_fully_defined(shape):
            if op == "While":
                raise ValueError(unbounded_message(name))
            raise _not_static(name, op, i, shape)
    node["shapes"] = [tuple(s) for _, s in outputs]
    graph.version += 1


def _shape_unset_outputs(branch: Graph, other: Graph) -> None:
    for mine, theirs in zip(branch.graph_attrs["fetches"], other.graph_attrs["fetches"]):
        node = branch.node(mine[0])
        if node["op"] == "Undefined":
            shape = other.node(theirs[0])["shapes"][theirs[1]]
            node["attrs"] = dict(node["attrs"], shape=shape)
            node["shapes"] = [shape]
    branch.version += 1


def _result_of_input(op: str, attrs: dict, i: int) -> int | None:
    """The fetch holding the value input `i` (a feed index) carries out, if it carries one."""
    if op == "While":
        return i if i < attrs["loop_vars"] else None
    if i < attrs["carried"]:
        return attrs["results"] + i
    return None


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
