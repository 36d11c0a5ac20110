"""schedule_graph: one topological order of the program, stored as graph_attrs["schedule"].

Guarantees: every node comes after its data and control inputs; a node that reads a variable,
and does not depend on a write to it, runs before that write, so a training step's forward
pass sees the weights as they were when the step began; writes of one variable that do not
depend on each other keep their creation order. Among the orders that obey these rules, the
one with the lowest peak of live arena bytes wins among a few candidates (SCHEDULERS): the
creation order (generated code that reads like the model code) and memory-aware list
schedules. Ties go to the earlier candidate, creation order first; every candidate is
deterministic, so the same graph always gets the same schedule.

Nested graphs are scheduled first, each on its own. In a graph whose op carries values (a
While's loop variables, an If's carried TensorArrays: graph_attrs["carried_pairs"], set here),
the readers of a carried value's feed run before the node that writes the value's next
version, where the data allow it, so that the next version may take the buffer of the one
before it (tfc.passes.memory: "direct" loop variables, no double buffer).

Also stored, for the chosen schedule (definitions in tfc.passes.memory): "arena_lower_bound"
(the peak of live arena bytes: no arena can be smaller), "arena_naive_bytes" (the arena
tensors' total size) and "schedule_strategy" (the winning candidate's name).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import networkx as nx

from tfc.ir.graph import Graph
from tfc.ops.registry import get_opdef
from tfc.passes.memory import analyze_liveness, arena_model
from tfc.passes.nested import map_subgraphs


def schedule_graph(graph: Graph) -> Graph:
    map_subgraphs(graph, lambda inner, n, key: _schedule_nested(inner, graph.node(n)["attrs"], key))
    order = dependency_graph(graph)
    costs = Costs(graph)
    best = None
    for name, scheduler in SCHEDULERS.items():
        schedule = scheduler(order, costs)
        live = analyze_liveness(graph, schedule, costs.model)
        if best is None or live.lower_bound < best[0].lower_bound:
            best = (live, name, schedule)
    live, name, schedule = best
    graph.graph_attrs.update(
        schedule=schedule,
        schedule_strategy=name,
        arena_lower_bound=live.lower_bound,
        arena_naive_bytes=live.naive_bytes,
    )
    return graph


def _schedule_nested(inner: Graph, attrs: dict, key: str) -> Graph:
    inner.graph_attrs["carried_pairs"] = carried_pairs(attrs, key)
    return schedule_graph(inner)


def carried_pairs(attrs: dict, key: str) -> list[tuple[int, int]]:
    """(feed index, fetch index) of the values nested graph `key` of a node with attributes
    `attrs` carries to their next version: a While body's loop variables, an If branch's
    carried values (after its results)."""
    if key == "body":
        return [(j, j) for j in range(attrs["loop_vars"])]
    if key in ("then_branch", "else_branch"):
        return [(k, attrs["results"] + k) for k in range(attrs["carried"])]
    return []


def dependency_graph(graph: Graph) -> nx.DiGraph:
    """The program's data and control edges, plus the edges of the variable rules: each read
    of a variable before each write it does not depend on, and the writes of one variable in
    creation order where they do not depend on each other."""
    order = nx.DiGraph(graph.nx)
    writers: dict[str, list[str]] = {}
    for name in graph.node_names():
        opdef = get_opdef(graph.op_type(name))
        if not opdef.ref_inputs:
            continue
        inputs = graph.input_edges(name)
        for i in opdef.ref_inputs:
            if i >= len(inputs):
                continue
            var = inputs[i][0]
            writers.setdefault(var, []).append(name)
            for reader in variable_readers(graph, var):
                if reader != name and not nx.has_path(order, name, reader):
                    order.add_edge(reader, name)
    for chain in writers.values():
        for earlier, later in zip(chain, chain[1:]):
            if earlier != later and not nx.has_path(order, later, earlier):
                order.add_edge(earlier, later)
    _order_carried(graph, order)
    return order


def _order_carried(graph: Graph, order: nx.DiGraph) -> None:
    """Readers of a carried value's feed before the producer of its next version."""
    pairs = graph.graph_attrs.get("carried_pairs", [])
    if not pairs:
        return
    feeds = {graph.node(n)["attrs"]["index"]: n for n in graph.nx if graph.op_type(n) == "Feed"}
    fetches = graph.graph_attrs["fetches"]
    for feed_index, fetch_index in pairs:
        feed = feeds.get(feed_index)
        writer = fetches[fetch_index][0]
        if feed is None or writer == feed:
            continue
        for reader in [feed, *variable_readers(graph, feed)]:
            if reader != writer and reader != feed and not nx.has_path(order, writer, reader):
                order.add_edge(reader, writer)


def variable_readers(graph: Graph, var: str) -> list[str]:
    """Nodes that read variable `var`'s memory: consumers through any chain of aliasing ops,
    except writers that take it as their ref input."""
    readers, stack, seen = [], [(var, 0)], set()
    while stack:
        tensor = stack.pop()
        for consumer, index in graph.consumers(*tensor):
            if (consumer, index) in seen:
                continue
            seen.add((consumer, index))
            opdef = get_opdef(graph.op_type(consumer))
            if index in opdef.ref_inputs:
                continue
            readers.append(consumer)
            if opdef.alias == index:
                stack.append((consumer, 0))
    return readers


def creation_order(order: nx.DiGraph, costs: Costs) -> list[str]:
    """Among free choices, the node created first."""
    return list(nx.lexicographical_topological_sort(order, key=costs.id.get))


class Costs:
    """What running one node does to the arena (tfc.passes.memory's model): the buffers it
    reads and writes, their sizes, the buffers its output may overwrite in place."""

    def __init__(self, graph: Graph) -> None:
        self.model = model = arena_model(graph)
        self.size = model.nbytes
        self.readers = {t: len(rs) for t, rs in model.readers.items()}
        self.id = {n: graph.node(n)["id"] for n in graph.nx.nodes}
        self.reads: dict[str, list] = {n: [] for n in graph.nx.nodes}
        for t, rs in model.readers.items():
            for r in rs:
                self.reads[r].append(t)
        self.writes: dict[str, list] = {n: [] for n in graph.nx.nodes}
        for t in sorted(model.nbytes):
            self.writes[t[0]].append(t)
        self.inplace = model.inplace


def _list_schedule(order: nx.DiGraph, costs: Costs, reverse: bool, peak_aware: bool) -> list[str]:
    """Greedy list scheduling: of the nodes whose dependencies are met, run the one that grows
    the live arena bytes least (with `peak_aware`, first the one that does not raise the peak
    reached so far), ties to creation order. Nodes that touch no arena buffer run as soon as
    they can: they change nothing.

    Forward, running a node allocates its outputs and frees the inputs it reads last. Reverse
    builds the order from the end: placing a node (last among those left) makes the inputs it
    reads last alive and ends its outputs' lives, so each value is computed as late as its
    readers allow; the result is reversed.

    A ready node's effect is kept up to date incrementally: it changes only when a buffer it
    reads becomes (forward) or stops being (reverse) one whose next reader is its last, which
    happens once or twice per buffer, so a buffer's readers are revisited at most twice in all,
    not at every step (a fan-out of thousands of readers made that quadratic).
    """
    size, readers, reads, writes, inplace = (
        costs.size, costs.readers, costs.reads, costs.writes, costs.inplace,
    )  # fmt: skip
    after = order.pred if reverse else order.succ
    waiting = {n: len(order.succ[n] if reverse else order.pred[n]) for n in order.nodes}
    tie = {n: -i if reverse else i for n, i in costs.id.items()}
    left = dict(readers)  # forward: readers not yet run; reverse: readers not yet placed
    free: list[tuple[int, str]] = []  # heap of ready nodes that touch no arena buffer
    costly = ReadyByEffect()  # ready nodes that touch arena buffers, by their effect
    live = peak = 0
    result = []

    def starts(t: tuple) -> bool:
        """Whether the node run (placed) now that reads `t` starts or ends its life."""
        return left[t] == readers[t] if reverse else left[t] == 1

    def effect(n: str) -> tuple[int, int]:
        """(bytes it adds to the live bytes while it runs, change of the live bytes after)."""
        start = [t for t in reads[n] if starts(t)]
        if reverse:
            during = sum(size[t] for t in start)
            during += sum(size[t] for t in writes[n] if not readers[t])
            grow = during - sum(size[t] for t in writes[n])
        else:
            during = sum(size[t] for t in writes[n])
            grow = -sum(size[t] for t in start)
            grow += sum(size[t] for t in writes[n] if readers[t])
        if any(t in start for t in inplace[n]):
            during -= size[(n, 0)]  # the output overwrites an input it reads last
        return during, grow

    def make_ready(n: str) -> None:
        if reads[n] or writes[n]:
            costly.add(n, effect(n), tie[n])
        else:
            heapq.heappush(free, (tie[n], n))

    for n in order.nodes:
        if waiting[n] == 0:
            make_ready(n)
    while free or costly:
        if free:
            n = heapq.heappop(free)[1]
        else:
            if peak_aware:
                n, (during, grow) = costly.pop_least(
                    lambda e, live=live, peak=peak: (max(live + e[0], peak), e[1])
                )
            else:
                n, (during, grow) = costly.pop_least(lambda e: (e[1], e[0]))
            peak, live = max(peak, live + during), live + grow
            changed = []
            for t in reads[n]:
                before = starts(t)
                left[t] -= 1
                if starts(t) != before:
                    changed.append(t)
            for t in changed:  # the readers of these buffers may now free or start them
                for m in costs.model.readers[t]:
                    if m in costly:
                        costly.update(m, effect(m), tie[m])
        result.append(n)
        for m in after[n]:
            waiting[m] -= 1
            if waiting[m] == 0:
                make_ready(m)
    return result[::-1] if reverse else result


Effect = tuple[int, int]


class ReadyByEffect:
    """Ready nodes grouped by their effect, each group a heap by tie-break rank: choosing the
    node of least (key(effect), rank) looks at one node per distinct effect, not at every ready
    node (the thousands of same-size readers of one tensor are one group)."""

    def __init__(self) -> None:
        self.effect: dict[str, Effect] = {}
        self.groups: dict[Effect, list[tuple[int, str]]] = {}  # may hold stale entries
        self.count: dict[Effect, int] = {}

    def __bool__(self) -> bool:
        return bool(self.effect)

    def __contains__(self, node: str) -> bool:
        return node in self.effect

    def add(self, node: str, effect: Effect, rank: int) -> None:
        self.effect[node] = effect
        heapq.heappush(self.groups.setdefault(effect, []), (rank, node))
        self.count[effect] = self.count.get(effect, 0) + 1

    def update(self, node: str, effect: Effect, rank: int) -> None:
        if self.effect[node] != effect:
            self._leave(node)
            self.add(node, effect, rank)

    def pop_least(self, key: Callable[[Effect], tuple]) -> tuple[str, Effect]:
        """Remove and return the node of least (key(its effect), its rank), with its effect."""
        best = None
        for effect, heap in self.groups.items():
            while self.effect.get(heap[0][1]) != effect:  # moved to another group, or run
                heapq.heappop(heap)
            candidate = (key(effect), heap[0][0], effect)
            if best is None or candidate < best:
                best = candidate
        assert best is not None, "pop_least of no ready node"
        effect = best[2]
        node = heapq.heappop(self.groups[effect])[1]
        self._leave(node)
        return node, effect

    def _leave(self, node: str) -> None:
        effect = self.effect.pop(node)
        self.count[effect] -= 1
        if not self.count[effect]:
            del self.count[effect], self.groups[effect]


SCHEDULERS: dict[str, Callable[[nx.DiGraph, Costs], list[str]]] = {
    "creation": creation_order,
    "least_growth": lambda o, c: _list_schedule(o, c, reverse=False, peak_aware=False),
    "peak_aware": lambda o, c: _list_schedule(o, c, reverse=False, peak_aware=True),
    "late_least_growth": lambda o, c: _list_schedule(o, c, reverse=True, peak_aware=False),
    "late_peak_aware": lambda o, c: _list_schedule(o, c, reverse=True, peak_aware=True),
}
