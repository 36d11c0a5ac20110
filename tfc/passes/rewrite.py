"""Graph rewriting shared by the optimization passes: replacing nodes, removing dead ones,
and knowing which nodes have effects (stateful or random) that must keep running."""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from tfc.ir.graph import CONTROL, Graph
from tfc.ops.registry import get_opdef


def replace_node(graph: Graph, old: str, new: list[tuple[str, int]]) -> str:
    """Make everything that uses `old` use `new` instead (`new[k]` for output k): its data
    consumers, fetches and targets; its control outputs then wait for the producers of `new`.

    A fetch is never duplicated (two fetch slots naming one tensor): when `new[k]` is fetched
    already, a single-output `old` stays as an Identity of it (no kernel: its value is
    copied out) and a multi-output one is left alone. Returns "unused" (the caller removes
    `old`), "identity", or "unchanged".
    """
    attrs = graph.graph_attrs
    fetches = [tuple(f) for f in attrs["fetches"]]
    collides = [(old, k) in fetches and tensor in fetches for k, tensor in enumerate(new)]
    if any(collides) and len(new) > 1:
        return "unchanged"
    for k, tensor in enumerate(new):
        for consumer, index in graph.consumers(old, k):
            graph.set_input(consumer, index, tensor)
        if not collides[k]:
            fetches = [tensor if f == (old, k) else f for f in fetches]
    attrs["fetches"] = fetches
    producers = list(dict.fromkeys(src for src, _ in new))
    for consumer in graph.control_output_names(old):
        graph.nx.remove_edge(old, consumer, key=CONTROL)
        for src in producers:
            graph.add_control_edge(src, consumer)
    if old in attrs.get("targets", ()):
        targets = [t for t in attrs["targets"] if t != old] + producers
        attrs["targets"] = list(dict.fromkeys(targets))
    graph.version += 1
    if any(collides):
        _become_identity(graph, old, new[0])
        return "identity"
    return "unused"


def _become_identity(graph: Graph, name: str, tensor: tuple[str, int]) -> None:
    for u, _, k in list(graph.nx.in_edges(name, keys=True)):
        if k != CONTROL:
            graph.nx.remove_edge(u, name, key=k)
    graph.nx.add_edge(tensor[0], name, key=0, out=tensor[1])
    graph.node(name).update(op="Identity", attrs={})
    graph.version += 1


def remove_unused(graph: Graph, candidates: Iterable[str]) -> None:
    """Remove the `candidates` that nothing uses any more (no consumers, control outputs,
    fetch or target) and are free of effects, then their inputs that became unused the same
    way. The passes call it on what their rewrites disconnected, having checked that nothing
    those nodes ordered or kept running is lost."""
    attrs = graph.graph_attrs
    fetched = {f[0] for f in attrs["fetches"]}
    targets = set(attrs.get("targets", ()))
    stack = list(candidates)
    while stack:
        name = stack.pop()
        if name not in graph.nx or name in fetched or name in targets:
            continue
        if graph.nx.out_degree(name) or not is_effect_free(graph, name):
            continue
        preds = list(graph.nx.predecessors(name))
        graph.remove_node(name)
        stack.extend(preds)


def is_effect_free(graph: Graph, name: str) -> bool:
    """Whether not running `name` changes nothing the program does. Stateful ops (variable
    reads included: an uninitialized variable must still fail the run) and random ops (their
    streams advance) have effects; an unused feed has none."""
    op = graph.op_type(name)
    opdef = get_opdef(op)
    return op == "Feed" or not (opdef.stateful or opdef.random)


class Effects:
    """Which effectful nodes (see is_effect_free) each node depends on, kept as bit sets so that
    a pass can ask cheaply, rewrite after rewrite, whether some nodes may stop running.

    The sets stay exact while rewrites only point edges at ancestors of their old source and
    let go of effect-free nodes only; letting go of a variable read (allowed when something
    else still reads it) marks them stale, and they are rebuilt on the next question.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._bits: dict[str, int] | None = None
        self._nodes: list[str] = []

    def _build(self) -> dict[str, int]:
        graph, bits, self._nodes = self.graph, {}, []
        for name in nx.topological_sort(graph.nx):
            mask = 0
            for pred in graph.nx.predecessors(name):
                mask |= bits[pred]
            if not is_effect_free(graph, name):
                mask |= 1 << len(self._nodes)
                self._nodes.append(name)
            bits[name] = mask
        self._bits = bits
        return bits

    def can_stop_running(
        self, nodes: Iterable[str], cut: Iterable[str], kept: Iterable[str] = ()
    ) -> bool:
        """Whether `nodes` and their ancestors may stop running, once the nodes in `cut` no
        longer need their inputs: each of them that `kept` does not need (directly or through
        ancestors) is free of effects, or is a variable that the fetches and targets still read
        otherwise. Anything that writes, draws random numbers or orders such ops is never let
        go: dropping it would also let readers of a variable move across its writes."""
        bits = self._bits if self._bits is not None else self._build()
        lost = 0
        for name in nodes:
            lost |= bits.get(name, 0)
        for name in kept:
            lost &= ~bits.get(name, 0)
        effectful = []
        while lost:
            low = lost & -lost
            effectful.append(self._nodes[low.bit_length() - 1])
            lost ^= low
        if not effectful:
            return True
        if any(self.graph.op_type(name) != "VariableV2" for name in effectful):
            return False
        needed = _needed_without(self.graph, set(cut))
        if all(name in needed for name in effectful):
            self._bits = None  # other nodes may no longer read these variables
            return True
        return False


def _needed_without(graph: Graph, cut: set[str]) -> set[str]:
    """The nodes the fetches and targets need when the nodes in `cut` need nothing."""
    attrs = graph.graph_attrs
    roots = [f[0] for f in attrs["fetches"]] + list(attrs.get("targets", ()))
    seen = set(roots)
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in cut:
            continue
        for pred in graph.nx.predecessors(name):
            if pred not in seen:
                seen.add(pred)
                stack.append(pred)
    return seen
