"""What the passes know about loops: a While's static iteration bound (its maximum_iterations, or
the trip count of a counting loop), shapes inferred through a body before it is specialized, and
the TensorArrays whose shape a loop fixes."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import Shape
from tfc.ops.registry import constant_value, get_opdef, infer_outputs

Tensor = tuple[str, int]

# comparisons a counting loop's condition makes: i OP limit
_COMPARISONS = {"Less", "LessEqual", "Greater", "GreaterEqual"}
_FLIPPED = {
    "Less": "Greater",
    "LessEqual": "GreaterEqual",
    "Greater": "Less",
    "GreaterEqual": "LessEqual",
}


def loop_bound(graph: Graph, name: str) -> int | None:
    """The most iterations While `name` of `graph` can run, when known while compiling: its
    maximum_iterations when that is a compile-time value (or the iteration count of another
    loop whose bound is known: a gradient loop runs as often as its forward loop), and the
    trip count of a loop counting a scalar from a constant by a constant step to a constant
    limit (i < n, i <= n, i > n, i >= n, in a condition that may AND more terms)."""
    node = graph.node(name)
    attrs = node["attrs"]
    inputs = graph.input_edges(name)
    bounds = []
    if attrs["maximum_iterations"]:
        src = inputs[-1]
        value = constant_value(graph, src)
        if value is not None:
            bounds.append(max(int(value), 0))
        elif graph.op_type(src[0]) == "While":
            other = graph.node(src[0])["attrs"]
            if src[1] == other["loop_vars"] and other.get("bound") is not None:
                bounds.append(other["bound"])
    trip = _trip_count(graph, name)
    if trip is not None:
        bounds.append(trip)
    return min(bounds) if bounds else None


def _through_identity(graph: Graph, tensor: Tensor) -> Tensor:
    while graph.op_type(tensor[0]) in ("Identity", "StopGradient") and tensor[1] == 0:
        tensor = graph.input_edges(tensor[0])[0]
    return tensor


def _scalar(value: np.ndarray | None) -> float | None:
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(()))


def _value(outer: Graph, name: str, inner: Graph, tensor: Tensor) -> float | None:
    """The compile-time scalar value of `tensor` of a nested graph (a constant there, or a
    feed of a captured constant of the While `name` in `outer`)."""
    tensor = _through_identity(inner, tensor)
    if inner.op_type(tensor[0]) == "Feed":
        index = inner.node(tensor[0])["attrs"]["index"]
        if index < outer.node(name)["attrs"]["loop_vars"]:
            return None
        return _scalar(constant_value(outer, outer.input_edges(name)[index]))
    return _scalar(constant_value(inner, tensor))


def _loop_var(inner: Graph, tensor: Tensor, loop_vars: int) -> int | None:
    tensor = _through_identity(inner, tensor)
    node = inner.node(tensor[0])
    if node["op"] == "Feed" and node["attrs"]["index"] < loop_vars:
        return node["attrs"]["index"]
    return None


def _trip_count(graph: Graph, name: str) -> int | None:
    attrs = graph.node(name)["attrs"]
    cond, body = attrs["cond"], attrs["body"]
    fetch = cond.graph_attrs["fetches"][0]
    return _count(graph, name, cond, body, _through_identity(cond, tuple(fetch)))


def _count(graph: Graph, name: str, cond: Graph, body: Graph, pred: Tensor) -> int | None:
    op = cond.op_type(pred[0])
    if op == "LogicalAnd":
        counts = [
            _count(graph, name, cond, body, _through_identity(cond, t))
            for t in cond.input_edges(pred[0])
        ]
        known = [c for c in counts if c is not None]
        return min(known) if known else None
    if op not in _COMPARISONS:
        return None
    loop_vars = graph.node(name)["attrs"]["loop_vars"]
    a, b = cond.input_edges(pred[0])
    j = _loop_var(cond, a, loop_vars)
    limit = _value(graph, name, cond, b)
    if j is None:  # limit OP i
        j, limit, op = _loop_var(cond, b, loop_vars), _value(graph, name, cond, a), _FLIPPED[op]
    if j is None or limit is None:
        return None
    start = _scalar(constant_value(graph, graph.input_edges(name)[j]))
    step = _step(graph, name, body, j, loop_vars)
    if start is None or step is None or step == 0:
        return None
    if op in ("Less", "LessEqual") and step > 0:
        span = limit - start
        n = math.floor(span / step) + 1 if op == "LessEqual" else math.ceil(span / step)
    elif op in ("Greater", "GreaterEqual") and step < 0:
        span = start - limit
        n = math.floor(span / -step) + 1 if op == "GreaterEqual" else math.ceil(span / -step)
    else:
        return None
    return max(int(n), 0)


def _step(graph: Graph, name: str, body: Graph, j: int, loop_vars: int) -> float | None:
    """c when the body's next value of loop variable j is i + c or i - c (c constant)."""
    fetch = _through_identity(body, tuple(body.graph_attrs["fetches"][j]))
    op = body.op_type(fetch[0])
    if op not in ("Add", "AddV2", "Sub"):
        return None
    a, b = body.input_edges(fetch[0])
    if _loop_var(body, a, loop_vars) == j:
        c = _value(graph, name, body, b)
        return None if c is None else (c if op != "Sub" else -c)
    if op != "Sub" and _loop_var(body, b, loop_vars) == j:
        return _value(graph, name, body, a)
    return None


# -- shapes before specialization ---------------------------------------------------------------
def refresh_shapes(graph: Graph) -> None:
    """Infer every node's output shapes again from its inputs' (Feeds and Consts keep theirs),
    unknown dims staying unknown: how far a body's shapes follow from some known input shapes."""
    order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
    for name in order:
        node = graph.node(name)
        if node["op"] in ("Feed", "Const"):
            continue
        node["shapes"] = [s for _, s in infer_outputs(graph, name)]
    graph.version += 1


def set_feed_shapes(graph: Graph, shapes: dict[int, Shape]) -> None:
    """Give each Feed of a nested graph the shape of the input it stands for."""
    for name in graph.nx.nodes:
        node = graph.node(name)
        if node["op"] == "Feed" and node["attrs"]["index"] in shapes:
            shape = shapes[node["attrs"]["index"]]
            shape = None if shape is None else tuple(shape)
            node["attrs"] = dict(node["attrs"], shape=shape)
            node["shapes"] = [shape]
    graph.version += 1


def tensor_array_root(graph: Graph, tensor: Tensor) -> tuple[str, list[str]] | None:
    """The TensorArrayV3 node whose buffer (or flags) `tensor` is, through the ops that alias
    it, and those ops (nearest first); None when `tensor` is no TensorArray's."""
    chain = []
    name, out = tensor
    while graph.op_type(name) != "TensorArrayV3":
        alias = get_opdef(graph.op_type(name)).alias
        if alias is None or out != 0:
            return None
        chain.append(name)
        name, out = graph.input_edges(name)[alias]
    return name, chain


def refine_tensor_array(graph: Graph, tensor: Tensor, **attrs: object) -> None:
    """Fix attributes of the TensorArray `tensor` belongs to (its element shape, its capacity),
    and infer the shapes of it and of the ops between it and `tensor` again."""
    found = tensor_array_root(graph, tensor)
    if found is None:
        return
    root, chain = found
    node = graph.node(root)
    node["attrs"] = dict(node["attrs"], **attrs)
    for name in [root, *reversed(chain)]:
        graph.node(name)["shapes"] = [s for _, s in infer_outputs(graph, name)]
    graph.version += 1
