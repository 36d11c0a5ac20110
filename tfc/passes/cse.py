"""eliminate_common_subexpressions: one node for ops that compute the same value twice."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import networkx as nx
import numpy as np

from tfc.ir.graph import Graph
from tfc.ops.registry import get_opdef
from tfc.passes.nested import map_subgraphs
from tfc.passes.rewrite import replace_node

# Ops whose two inputs may be swapped with bit-identical results (IEEE + and * are commutative;
# Maximum/Minimum are not: max(-0.0, +0.0) depends on the order).
_COMMUTATIVE = frozenset({"Add", "Mul", "Equal", "NotEqual", "LogicalAnd", "LogicalOr"})


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """Merge nodes with the same op type, device, attributes, inputs and control inputs.

    Guarantees: of each set of equivalent nodes the first in topological (creation) order
    stays and takes over the others' consumers, control outputs, fetches and targets (when
    both were fetched, the duplicate stays as an Identity of it: no kernel, one copy out);
    merging repeats until no two nodes are equivalent (a fixed point), so duplicated subgraphs
    collapse from their inputs down. NumPy-array attributes (Const values) are equal when
    dtype, shape and bytes are; float attributes when their bits are. Never merged: stateful ops
    (Placeholder, Feed, VariableV2, Assign*, Apply*, NoOp, iterators, CheckNumerics) and
    random ops, which are distinct however alike they look. Inputs of Add, Mul, Equal,
    NotEqual, LogicalAnd and LogicalOr count in either order. Nested graphs are merged within
    themselves only: a value of a loop body is never merged with one outside it or in another
    branch (their nodes are in other graphs), and If and While (stateful: they may hold effects)
    are never merged.
    """
    map_subgraphs(graph, lambda inner, node, key: eliminate_common_subexpressions(inner))
    changed = True
    while changed:
        changed = False
        seen: dict[Hashable, str] = {}
        order = nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
        for name in list(order):
            key = _equivalence_key(graph, name)
            if key is None:
                continue
            survivor = seen.setdefault(key, name)
            if survivor == name:
                continue
            outputs = [(survivor, k) for k in range(len(graph.node(name)["dtypes"]))]
            result = replace_node(graph, name, outputs)
            if result == "unused":
                graph.remove_node(name)
            changed = changed or result != "unchanged"
    return graph


def _equivalence_key(graph: Graph, name: str) -> Hashable | None:
    node = graph.node(name)
    opdef = get_opdef(node["op"])
    if opdef.stateful or opdef.random:
        return None
    try:
        attrs = _canonical(node["attrs"])
    except TypeError:  # an attribute value that cannot be compared safely: keep the node
        return None
    inputs = graph.input_edges(name)
    if node["op"] in _COMMUTATIVE and len(inputs) == 2:
        inputs = sorted(inputs)
    return (
        node["op"],
        node["device"],
        attrs,
        tuple(inputs),
        tuple(sorted(graph.control_input_names(name))),
        tuple(d.name for d in node["dtypes"]),
        tuple(None if s is None else tuple(s) for s in node["shapes"]),
    )


def _canonical(value: Any) -> Hashable:
    """A hashable stand-in for an attribute value, equal exactly when the values are identical
    (arrays by dtype, shape and bytes; floats by bits, so -0.0 and 0.0 differ)."""
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise TypeError("object array")
        return ("array", array.dtype.str, array.shape, array.tobytes())
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    hash(value)  # raises TypeError for unhashable values
    return (type(value).__name__, value)


# -- rewiring, shared by the passes that replace nodes (simplify, fold) -------------------------
