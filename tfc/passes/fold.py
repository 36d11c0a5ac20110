"""fold_constants: subgraphs that depend only on constants are evaluated while compiling."""

from __future__ import annotations

import networkx as nx
import numpy as np

from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import is_fully_defined, num_elements
from tfc.ops.registry import OpContext, as_output_list, get_opdef
from tfc.passes.nested import map_subgraphs
from tfc.passes.rewrite import Effects, remove_unused

# Folded values up to this size become Consts, which the C backend embeds in the source (below
# its 64 KiB embed limit, so never passed in). A larger result (`tf.zeros([4096, 4096])`) stays
# a kernel: one loop whose output lives in the reusable arena costs less than megabytes of
# initializer in the source and the binary.
FOLD_LIMIT_BYTES = 16 * 1024

# Ops whose output depends only on the static shape of their inputs, not on their values.
_SHAPE_ONLY = frozenset({"ZerosLike", "OnesLike", "Shape", "Size", "Rank"})


def fold_constants(graph: Graph) -> Graph:
    """Replace every pure node whose data inputs are all constants by a Const of its value.

    Guarantees: the value is the op's NumPy reference applied to the constant inputs; ZerosLike,
    OnesLike (and Shape/Size/Rank) fold whatever their input, whose shape is static. Never
    folded: stateful ops (Feed, VariableV2, Assign*, Apply*, NoOp, iterators, CheckNumerics),
    random ops, nodes with a control input from a stateful or random op, results over
    FOLD_LIMIT_BYTES, and evaluations that raise (the error stays a run-time error). A folded
    node keeps its name, so fetches and consumers stay valid; it inherits the control inputs
    of what it replaces (through constants) when they lead to effects, so nothing that ran
    before stops running. A folded multi-output node becomes one Const per output.
    Constants left unused by folding are removed. Nested graphs (branches, loop bodies) are
    folded the same way, each on its own: a value computed in every iteration from constants
    alone becomes a constant of the body. If and While are never folded (they may hold effects).
    """
    map_subgraphs(graph, lambda inner, node, key: fold_constants(inner))
    effects = Effects(graph)
    order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
    dropped: set[str] = set()
    for name in list(order):
        plan = _fold_plan(graph, name, effects)
        if plan is None:
            continue
        values, control = plan
        inputs = graph.input_edges(name)
        dropped.update(src for src, _ in inputs)
        dropped.update(graph.control_input_names(name))
        if len(values) == 1:
            _make_const(graph, name, values[0], control)
        else:
            _split_into_consts(graph, name, values, control)
            dropped.add(name)
    remove_unused(graph, dropped)
    return graph


def _fold_plan(
    graph: Graph, name: str, effects: Effects
) -> tuple[list[np.ndarray], list[str]] | None:
    """The folded values of `name` and the control inputs the Consts keep, or None."""
    node = graph.node(name)
    op = node["op"]
    opdef = get_opdef(op)
    if op in ("Const", "Feed") or opdef.stateful or opdef.random or opdef.reference is None:
        return None
    if not node["dtypes"] or not all(is_fully_defined(s) for s in node["shapes"]):
        return None
    if len(node["dtypes"]) > 1 and (
        graph.control_output_names(name) or name in graph.graph_attrs.get("targets", ())
    ):
        return None  # its Consts could not stand in for the node itself
    nbytes = sum(num_elements(s) * d.size for d, s in zip(node["dtypes"], node["shapes"]))
    if nbytes > FOLD_LIMIT_BYTES:
        return None
    inputs = graph.input_edges(name)
    args: list[np.ndarray] = []
    extra: list[str] = list(graph.control_input_names(name))
    for src, out in inputs:
        src_node = graph.node(src)
        if src_node["op"] == "Const":
            args.append(src_node["attrs"]["value"])
            extra.extend(graph.control_input_names(src))
        elif op in _SHAPE_ONLY and is_fully_defined(src_node["shapes"][out]):
            dtype = src_node["dtypes"][out]
            args.append(np.broadcast_to(np.zeros((), dtype.np), src_node["shapes"][out]))
            if src_node["op"] != "Feed":  # a fed shape is fixed for the program
                extra.append(src)
        else:
            return None
    control = _kept_control(graph, name, extra, effects)
    if control is None:
        return None
    values = _evaluate(graph, name, args)
    if values is None:
        return None
    return values, control


def _kept_control(graph: Graph, name: str, extra: list[str], effects: Effects) -> list[str] | None:
    """Which of `extra` (control inputs, dropped producers) the folded Const must keep as control
    inputs; None when one is itself stateful or random (those are never folded across)."""
    kept: list[str] = []
    stack = list(extra)
    seen: set[str] = set()
    while stack:
        src = stack.pop()
        if src in seen:
            continue
        seen.add(src)
        node = graph.node(src)
        if node["op"] == "Const":  # a constant orders nothing itself: look through it
            stack.extend(graph.control_input_names(src))
            continue
        opdef = get_opdef(node["op"])
        if opdef.stateful or opdef.random:
            return None
        if not effects.can_stop_running([src], cut=[name]):
            kept.append(src)
    return sorted(kept, key=lambda n: graph.node(n)["id"])


def _evaluate(graph: Graph, name: str, args: list[np.ndarray]) -> list[np.ndarray] | None:
    node = graph.node(name)
    ctx = OpContext.for_node(graph, name)
    try:
        with np.errstate(all="ignore"):
            outs = as_output_list(get_opdef(node["op"]).reference(ctx, *args))
    except Exception:  # e.g. an integer division by zero: it must fail at run time, as in TF
        return None
    values = []
    for value, dtype, shape in zip(outs, node["dtypes"], node["shapes"]):
        if value is None:
            return None
        array = np.array(value, dtype=dtype.np, order="C")
        if array.shape != tuple(shape):
            return None
        array.setflags(write=False)
        values.append(array)
    return values if len(values) == len(node["dtypes"]) else None


def _make_const(graph: Graph, name: str, value: np.ndarray, control: list[str]) -> None:
    """Turn `name` into a Const in place: its consumers, control outputs and fetches stay."""
    for u, _, k in list(graph.nx.in_edges(name, keys=True)):
        graph.nx.remove_edge(u, name, key=k)
    node = graph.node(name)
    node.update(
        op="Const", attrs={"value": value, "dtype": node["dtypes"][0]}, shapes=[value.shape]
    )
    graph.version += 1
    for src in control:
        graph.add_control_edge(src, name)


def _split_into_consts(
    graph: Graph, name: str, values: list[np.ndarray], control: list[str]
) -> None:
    """A folded multi-output node: one Const per output takes over its consumers and fetches."""
    device = graph.node(name)["device"]
    attrs = graph.graph_attrs
    for out, (value, dtype) in enumerate(zip(values, graph.node(name)["dtypes"])):
        consumers = graph.consumers(name, out)
        fetched = (name, out) in [tuple(f) for f in attrs["fetches"]]
        if not consumers and not fetched:
            continue
        const = graph.unique_name(f"{name}/folded_{out}")
        graph.add_node(
            const, "Const", [], {"value": value, "dtype": dtype}, [dtype], [value.shape],
            device=device, control_inputs=control,
        )  # fmt: skip
        for consumer, index in consumers:
            graph.set_input(consumer, index, (const, 0))
        attrs["fetches"] = [(const, 0) if tuple(f) == (name, out) else f for f in attrs["fetches"]]
