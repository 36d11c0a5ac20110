"""simplify_algebra: algebraic identities that remove work without changing a single bit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from tfc.ir.graph import CONTROL, Graph
from tfc.ops.registry import get_opdef
from tfc.passes.nested import map_subgraphs
from tfc.passes.rewrite import Effects, is_effect_free, remove_unused, replace_node

Tensor = tuple[str, int]


@dataclass
class _Context:
    written: set[str]  # the variables this program writes
    effects: Effects


# Ops that view their input's buffer in another shape: a reshape of one reshapes its input.
_VIEWS = ("Reshape", "ExpandDims", "Squeeze")


def simplify_algebra(graph: Graph) -> Graph:
    """Remove operations that return their input unchanged, and fold pairs into one.

    Rewrites, each only where the result has the node's dtype and shape (so `x + zeros([3,4])`
    with x of shape [4] stays) and is bit-identical for every input: x*1, 1*x, x/1, integer
    x//1; x+c, c+x and BiasAdd(x, c) for c = 0 (integers) or -0.0 (floats: x + 0.0 turns -0.0
    into 0.0, so it stays); x-c for c = 0 or +0.0; Identity, StopGradient and casts to the
    same dtype; transposes by the identity permutation; transpose of a transpose (one
    transpose by the composed permutation, or none); reshape to the input's shape; reshape of a
    reshape, expand_dims or squeeze (one reshape); squeeze that drops nothing; a gradient summed
    to the shape it has (SumToShape); select with a
    constant condition. c is a Const, or a Fill of one, with every element equal.

    Guarantees: consumers, control outputs, fetches and targets of a removed node move to its
    replacement (a fetch that would name an already-fetched tensor keeps the node as an
    Identity, which has no kernel). A rewrite is skipped when it would make anything read
    a variable this program writes through a different path (variable reads stay where they
    are: the Identity W/read of a written W is kept), or when what stops running (the
    removed node and the ancestors only it needed) includes anything with an effect:
    stateful ops, variable reads, random ops. Runs to a fixed point.

    Nested graphs are simplified within themselves. An If whose predicate is a constant is
    replaced by the ops of the branch it takes (the other branch would never run), unless it
    carries values (updates them in place) or something reads an output that branch leaves
    unset.
    """
    map_subgraphs(graph, lambda inner, node, key: simplify_algebra(inner))
    ctx = _Context(_written_variables(graph), Effects(graph))
    changed = True
    while changed:
        changed = False
        order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
        for name in list(order):
            rule = _RULES.get(graph.op_type(name)) if name in graph.nx else None
            if rule is not None and rule(graph, name, ctx):
                changed = True
    return graph


# -- the rules: each returns whether it changed the graph ---------------------------------------
def _add_zero(graph: Graph, name: str, ctx: _Context) -> bool:
    x, y = graph.input_edges(name)
    pairs = [(x, y)] if graph.op_type(name) == "BiasAdd" else [(x, y), (y, x)]
    for keep, other in pairs:
        c = _splat(graph, other)
        if c is not None and _is_zero(c, negative=True) and _replace(graph, name, keep, ctx):
            return True
    return False


def _sub_zero(graph: Graph, name: str, ctx: _Context) -> bool:
    x, y = graph.input_edges(name)
    c = _splat(graph, y)
    return c is not None and _is_zero(c, negative=False) and _replace(graph, name, x, ctx)


def _mul_one(graph: Graph, name: str, ctx: _Context) -> bool:
    x, y = graph.input_edges(name)
    for keep, other in ((x, y), (y, x)):
        c = _splat(graph, other)
        if c is not None and c == 1 and _replace(graph, name, keep, ctx):
            return True
    return False


def _div_one(graph: Graph, name: str, ctx: _Context) -> bool:
    x, y = graph.input_edges(name)
    if graph.op_type(name) == "FloorDiv" and not graph.node(name)["dtypes"][0].is_integer:
        return False  # floor(x / 1) is not x for floats
    c = _splat(graph, y)
    return c is not None and c == 1 and _replace(graph, name, x, ctx)


def _pass_through(graph: Graph, name: str, ctx: _Context) -> bool:
    """Identity, StopGradient (gradients are built already); Cast, Squeeze and SumToShape when
    they change nothing: _replace checks that dtype and shape are the input's."""
    return _replace(graph, name, graph.input_edges(name)[0], ctx)


def _reshape(graph: Graph, name: str, ctx: _Context) -> bool:
    x = graph.input_edges(name)[0]
    if _replace(graph, name, x, ctx):  # to the shape it has already
        return True
    if graph.op_type(x[0]) not in _VIEWS or x[1] != 0:
        return False
    return _rewire_input(graph, name, 0, graph.input_edges(x[0])[0], [x[0]], ctx)


def _transpose(graph: Graph, name: str, ctx: _Context) -> bool:
    x, perm_t = graph.input_edges(name)
    perm = _const_value(graph, perm_t)
    if perm is None:
        return False
    if _is_identity_perm(perm):
        return _replace(graph, name, x, ctx)
    if graph.op_type(x[0]) != "Transpose":
        return False
    inner_x, inner_perm_t = graph.input_edges(x[0])
    inner_perm = _const_value(graph, inner_perm_t)
    if inner_perm is None:
        return False
    # y = transpose(x, p1) has y.shape[i] = x.shape[p1[i]]; transposing y by p2 gives p1[p2]
    composed = np.asarray(inner_perm)[np.asarray(perm)].astype(perm.dtype)
    if _is_identity_perm(composed):
        return _replace(graph, name, inner_x, ctx)
    dropped = [x[0], perm_t[0]]
    if not _rewire_input(graph, name, 0, inner_x, dropped, ctx):
        return False
    composed.setflags(write=False)
    dtype = graph.node(perm_t[0])["dtypes"][0]
    const = graph.unique_name(f"{name}/perm")
    graph.add_node(
        const, "Const", [], {"value": composed, "dtype": dtype}, [dtype], [composed.shape],
        device=graph.node(name)["device"],
    )  # fmt: skip
    graph.set_input(name, 1, (const, 0))
    remove_unused(graph, [perm_t[0]])
    return True


def _select(graph: Graph, name: str, ctx: _Context) -> bool:
    cond, a, b = graph.input_edges(name)
    c = _splat(graph, cond)
    return c is not None and _replace(graph, name, a if c else b, ctx)


def _constant_branch(graph: Graph, name: str, ctx: _Context) -> bool:
    """An If on a constant: the ops of the branch it takes, in its place."""
    node = graph.node(name)
    inputs = graph.input_edges(name)
    c = _splat(graph, inputs[0])
    attrs = node["attrs"]
    if c is None or attrs["carried"]:
        return False
    branch = attrs["then_branch" if c else "else_branch"]
    fetches = branch.graph_attrs["fetches"]
    read = {
        d["out"] for _, _, k, d in graph.nx.out_edges(name, keys=True, data=True) if k != CONTROL
    }
    read |= {i for n, i in graph.graph_attrs["fetches"] if n == name}
    if any(fetches[j] is None for j in read):
        return False
    waits = graph.control_input_names(name)
    renamed: dict[str, str] = {}
    order = nx.lexicographical_topological_sort(branch.nx, key=lambda n: branch.node(n)["id"])
    for n in order:
        inner = branch.node(n)
        if inner["op"] == "Feed":
            continue
        new = renamed[n] = graph.unique_name(n)

        def source(edge: tuple[str, int]) -> tuple[str, int]:
            src, out = edge
            if branch.op_type(src) == "Feed":
                return inputs[branch.node(src)["attrs"]["index"] + 1]
            return renamed[src], out

        controls = [renamed[u] for u in branch.control_input_names(n)]
        graph.add_node(
            new, inner["op"], [source(e) for e in branch.input_edges(n)], dict(inner["attrs"]),
            inner["dtypes"], inner["shapes"], device=node["device"],
            control_inputs=controls + (waits if not branch.input_edges(n) else []),
        )  # fmt: skip

    def value(fetch: tuple[str, int] | None) -> tuple[str, int]:
        if fetch is None:
            return inputs[0]  # an output nothing reads (checked above)
        src, out = fetch
        if branch.op_type(src) == "Feed":
            return inputs[branch.node(src)["attrs"]["index"] + 1]
        return renamed[src], out

    targets = [renamed[t] for t in branch.graph_attrs.get("targets", [])]
    waiting = graph.control_output_names(name)
    replace_node(graph, name, [value(f) for f in fetches] or [inputs[0]])
    for consumer in waiting:  # what waited for the If waits for the branch's effects too
        for t in targets:
            graph.add_control_edge(t, consumer)
    if name in graph.graph_attrs.get("targets", ()) or targets and name not in graph.nx:
        graph.graph_attrs["targets"] = list(
            dict.fromkeys([t for t in graph.graph_attrs.get("targets", []) if t != name] + targets)
        )
    if name in graph.nx:
        for u, _, k in list(graph.nx.in_edges(name, keys=True)):
            graph.nx.remove_edge(u, name, key=k)
        graph.remove_node(name)
    remove_unused(graph, [inputs[0][0]])
    return True


_RULES: dict[str, Callable[[Graph, str, _Context], bool]] = {
    "Add": _add_zero,
    "BiasAdd": _add_zero,
    "Sub": _sub_zero,
    "Mul": _mul_one,
    "RealDiv": _div_one,
    "FloorDiv": _div_one,
    "Identity": _pass_through,
    "StopGradient": _pass_through,
    "Cast": _pass_through,
    "Squeeze": _pass_through,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "SelectV2": _select,
    "SumToShape": _pass_through,  # a gradient summed to the shape it has already
    "If": _constant_branch,
}


# -- applying a rewrite safely ------------------------------------------------------------------
def _replace(graph: Graph, name: str, tensor: Tensor, ctx: _Context) -> bool:
    """Replace node `name` (one output) by `tensor` everywhere, if that is safe; see the pass."""
    node, src = graph.node(name), graph.node(tensor[0])
    if len(node["dtypes"]) != 1 or src["dtypes"][tensor[1]] != node["dtypes"][0]:
        return False
    if tuple(src["shapes"][tensor[1]]) != tuple(node["shapes"][0]):
        return False
    fetches = [tuple(f) for f in graph.graph_attrs["fetches"]]
    if (name, 0) in fetches and tensor in fetches and _is_identity_of(graph, name, tensor):
        return False  # already the cheapest stand-in for a second fetch of `tensor`
    if _variable_root(graph, tensor) in ctx.written or not _can_drop(ctx, [name], tensor[0]):
        return False
    inputs = list(graph.nx.predecessors(name))
    if replace_node(graph, name, [tensor]) == "unused":
        graph.remove_node(name)
    remove_unused(graph, inputs)
    return True


def _rewire_input(
    graph: Graph, name: str, index: int, tensor: Tensor, dropped: list[str], ctx: _Context
) -> bool:
    """Point input `index` of `name` at `tensor` instead, if losing `dropped` is safe."""
    if _variable_root(graph, tensor) in ctx.written or not _can_drop(ctx, dropped, tensor[0]):
        return False
    old = graph.input_edges(name)[index][0]
    graph.set_input(name, index, tensor)
    remove_unused(graph, [old])
    return True


def _can_drop(ctx: _Context, dropped: list[str], kept: str) -> bool:
    """Whether `dropped` may lose their consumers, `kept` standing in for them."""
    if all(_reads_only_constants(ctx.effects.graph, name, kept) for name in dropped):
        return True  # the common case, decided without looking at ancestors
    return ctx.effects.can_stop_running(dropped, cut=dropped, kept=[kept])


def _reads_only_constants(graph: Graph, name: str, kept: str) -> bool:
    """`name` is pure, has no control inputs, and reads only `kept` and constants that have
    none either: all that may stop running with it is effect-free."""
    if not is_effect_free(graph, name) or graph.control_input_names(name):
        return False
    return all(
        src == kept or (graph.op_type(src) == "Const" and not graph.control_input_names(src))
        for src in graph.nx.predecessors(name)
    )


def _is_identity_of(graph: Graph, name: str, tensor: Tensor) -> bool:
    return graph.op_type(name) == "Identity" and graph.input_edges(name) == [tensor]


def _variable_root(graph: Graph, tensor: Tensor) -> str | None:
    """The variable whose buffer `tensor` is (through Identity, Reshape, Assign...), if any."""
    name, out = tensor
    while True:
        op = graph.op_type(name)
        if op == "VariableV2":
            return name
        alias = get_opdef(op).alias
        inputs = graph.input_edges(name)
        if alias is None or out != 0 or alias >= len(inputs):
            return None
        name, out = inputs[alias]


def _written_variables(graph: Graph) -> set[str]:
    written = set()
    for name in graph.nx.nodes:
        opdef = get_opdef(graph.op_type(name))
        inputs = graph.input_edges(name)
        for i in opdef.ref_inputs:
            if i < len(inputs):
                written.add(_variable_root(graph, inputs[i]))
    written.discard(None)
    return written


# -- constants ----------------------------------------------------------------------------------
def _const_value(graph: Graph, tensor: Tensor) -> np.ndarray | None:
    node = graph.node(tensor[0])
    return node["attrs"]["value"] if node["op"] == "Const" else None


def _splat(graph: Graph, tensor: Tensor) -> np.generic | None:
    """The one value of every element of `tensor`, if it is a Const (or a Fill of a Const)
    whose elements are all the same bits; else None."""
    node = graph.node(tensor[0])
    if node["op"] == "Fill":
        value = _const_value(graph, graph.input_edges(tensor[0])[1])
    else:
        value = _const_value(graph, tensor)
    if value is None or value.size == 0:
        return None
    flat = np.ascontiguousarray(value).reshape(-1)
    if flat.tobytes() != flat[:1].tobytes() * flat.size:
        return None
    return flat[0]


def _is_zero(c: np.generic, negative: bool) -> bool:
    """c == 0; for floats also the sign of zero that leaves every x unchanged: x + (-0.0) and
    x - (+0.0) are x for all x, while -0.0 + 0.0 is +0.0."""
    if c != 0:
        return False
    return bool(np.signbit(c)) == negative if np.asarray(c).dtype.kind == "f" else True


def _is_identity_perm(perm: np.ndarray) -> bool:
    return np.array_equal(np.asarray(perm).reshape(-1), np.arange(np.asarray(perm).size))
