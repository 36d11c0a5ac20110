"""prune_graph: partial execution. Fed tensors become Feed nodes; only what the fetches need stays.

Guarantees: every remaining node is an ancestor (by data or control edge) of a fetch or a
target; no Placeholder remains (an unfed one that is needed raises TF's missing-feed error);
the producers of fed tensors run only if something else needs them; an unfed
PlaceholderWithDefault becomes an Identity of its default (so it takes the default's shape);
no op the Session runs around the program (OpDef.session_side: queue ops) remains, a control
edge from one becoming edges from its own inputs; where the caller runs no such ops (a native
build: graph_attrs["session_side_ops"] unset), one that the fetches need is an error naming it.

Nested graphs (If's branches, While's cond and body) are pruned the same way, for the outputs
of their op that something needs: an If loses the results nobody reads, a While the loop
variables that neither a needed output nor the condition depends on (through any number of
iterations) and the accumulators nobody reads; then both lose the inputs their nested graphs
no longer read. The effects a body must have (its targets) keep what they need.
"""

from __future__ import annotations

import networkx as nx

from tfc.ir import errors
from tfc.ir.graph import CONTROL, Graph
from tfc.ops.constant import missing_feed_message
from tfc.ops.registry import get_opdef
from tfc.passes.nested import (
    feed_indices_needed,
    feeds_by_index,
    functional_nodes,
    input_offset,
    shrink_interface,
)


def prune_graph(graph: Graph) -> Graph:
    attrs = graph.graph_attrs
    if not attrs.get("feeds_cut"):
        _cut_feeds(graph)
        attrs["feeds_cut"] = True
    while True:
        _remove_unneeded(graph)
        # consumers first: a loop's gradient dropping an input frees an output of the loop
        order = list(nx.topological_sort(graph.nx))
        holders = set(functional_nodes(graph))
        functional = [n for n in reversed(order) if n in holders]
        before = {n: _interface(graph, n) for n in functional}
        for name in functional:
            _prune_functional(graph, name)
        if all(_interface(graph, n) == before[n] for n in functional):
            break
    if _remove_session_side(graph):
        _remove_unneeded(graph)
    for name in graph.node_names():
        node = graph.node(name)
        if node["op"] == "PlaceholderWithDefault":
            node.update(op="Identity", attrs={})
            graph.version += 1
        if node["op"] == "Placeholder":
            dtype, shape = node["attrs"]["dtype"], node["attrs"]["shape"]
            raise errors.InvalidArgumentError(None, None, missing_feed_message(name, dtype, shape))
    return graph


def _remove_unneeded(graph: Graph) -> None:
    attrs = graph.graph_attrs
    roots = [f[0] for f in attrs["fetches"] if f is not None] + list(attrs["targets"])
    keep = set(roots)
    stack = list(roots)
    while stack:
        for pred in graph.nx.predecessors(stack.pop()):
            if pred not in keep:
                keep.add(pred)
                stack.append(pred)
    for name in [n for n in graph.nx.nodes if n not in keep]:
        graph.remove_node(name)


def _interface(graph: Graph, name: str) -> tuple[int, int]:
    return len(graph.input_edges(name)), len(graph.node(name)["dtypes"])


def _used_outputs(graph: Graph, name: str) -> set[int]:
    used = {
        d["out"] for _, _, k, d in graph.nx.out_edges(name, keys=True, data=True) if k != CONTROL
    }
    return used | {i for n, i in graph.graph_attrs["fetches"] if n == name}


def _pruned(inner: Graph, fetches: list) -> Graph:
    inner = inner.copy()
    inner.graph_attrs["fetches"] = list(fetches)
    inner.graph_attrs["targets"] = list(inner.graph_attrs.get("targets", []))
    return prune_graph(inner)


def _prune_functional(graph: Graph, name: str) -> None:
    """Cut an If or While down to what is needed of it (see the module docstring)."""
    node = graph.node(name)
    attrs = dict(node["attrs"])
    used = _used_outputs(graph, name)
    n_in, n_out = len(graph.input_edges(name)), len(node["dtypes"])
    offset = input_offset(node["op"])
    if node["op"] == "If":
        results, carried = attrs["results"], attrs["carried"]
        keep_out = [j for j in range(n_out) if j in used or results <= j < results + carried]
        for key in ("then_branch", "else_branch"):
            fetches = attrs[key].graph_attrs["fetches"]
            attrs[key] = _pruned(attrs[key], [fetches[j] for j in keep_out])
        attrs["results"] = sum(1 for j in keep_out if j < results)
        keys = ("then_branch", "else_branch")
        fixed = list(range(1 + carried))
    else:
        n_lv = attrs["loop_vars"]
        cond, body = attrs["cond"], attrs["body"]
        body_fetches = body.graph_attrs["fetches"]
        accs = [a for a in range(n_out - n_lv - 1) if n_lv + 1 + a in used]
        live = {j for j in range(n_lv) if j in used}
        needs_cond = feed_indices_needed(
            cond, cond.graph_attrs["fetches"], cond.graph_attrs["targets"]
        )
        live |= {j for j in needs_cond if j < n_lv}
        while True:  # a loop variable is live when the next value of a live one depends on it
            wanted = [body_fetches[j] for j in sorted(live)]
            wanted += [body_fetches[n_lv + a] for a in accs]
            grown = live | {
                j
                for j in feed_indices_needed(body, wanted, body.graph_attrs["targets"])
                if j < n_lv
            }
            if grown == live:
                break
            live = grown
        kept = sorted(live)
        attrs["body"] = _pruned(
            body, [body_fetches[j] for j in kept] + [body_fetches[n_lv + a] for a in accs]
        )
        attrs["cond"] = _pruned(cond, cond.graph_attrs["fetches"])
        attrs["loop_vars"] = len(kept)
        attrs["shape_invariants"] = tuple(attrs["shape_invariants"][j] for j in kept)
        keep_out = kept + [n_lv] + [n_lv + 1 + a for a in accs]
        keys = ("cond", "body")
        fixed = kept + ([n_in - 1] if attrs["maximum_iterations"] else [])
    read = set()
    for key in keys:
        read |= {i + offset for i in feeds_by_index(attrs[key])}
    keep_in = sorted(set(fixed) | read)
    shrink_interface(graph, name, keep_in, keep_out, attrs)


def _cut_feeds(graph: Graph) -> None:
    attrs = graph.graph_attrs
    for index, spec in enumerate(attrs["feeds"]):
        src, out = spec.tensor
        feed_attrs = {"index": index, "dtype": spec.dtype, "shape": tuple(spec.shape)}
        node = graph.node(src)
        if node["op"] in ("Placeholder", "PlaceholderWithDefault") and out == 0:
            # the placeholder itself becomes the feed: generated code keeps the user's name
            for u, _, k in list(graph.nx.in_edges(src, keys=True)):
                graph.nx.remove_edge(u, src, key=k)
            node.update(op="Feed", attrs=feed_attrs, shapes=[tuple(spec.shape)])
            graph.version += 1
            continue
        feed = graph.unique_name(f"{src}/feed_{out}")
        graph.add_node(feed, "Feed", [], feed_attrs, [spec.dtype], [tuple(spec.shape)])
        for consumer, in_index in graph.consumers(src, out):
            graph.set_input(consumer, in_index, (feed, 0))
        attrs["fetches"] = [(feed, 0) if f == (src, out) else f for f in attrs["fetches"]]


def _remove_session_side(graph: Graph) -> bool:
    """Take out the ops the Session runs before or after the program (their outputs are fed,
    their inputs fetched): whatever ran after one through a control edge now runs after what
    it waited for, and what a targeted one waited for is targeted. Whether any was removed."""
    attrs = graph.graph_attrs
    removed = False
    for name in graph.node_names():
        node = graph.node(name)
        if not get_opdef(node["op"]).session_side:
            continue
        if not attrs.get("session_side_ops"):
            raise errors.UnimplementedError(
                None,
                None,
                f"'{name}' (op: '{node['op']}') is a queue op: only Session.run (and the "
                "interpreter) run queue ops, around their compiled programs; native builds "
                "(tfc compile), Session.profile and time_runs do not",
            )
        used = graph.consumers(name)
        fetched = [f for f in attrs["fetches"] if f is not None and f[0] == name]
        if used or fetched:
            out = graph.input_edges(used[0][0])[used[0][1]][1] if used else fetched[0][1]
            raise errors.InvalidArgumentError(
                None,
                None,
                f"'{name}' (op: '{node['op']}') runs in the Session around the compiled program, "
                f"and its output {name}:{out} was not fed: run it with a tf.Session (not a "
                "native build), which feeds the values it takes from its queue",
            )
        before = [u for u, _ in graph.nx.in_edges(name)]
        for after in graph.control_output_names(name):
            for u in before:
                graph.add_control_edge(u, after)
        if name in attrs["targets"]:
            targets = [t for t in attrs["targets"] if t != name]
            attrs["targets"] = targets + [u for u in dict.fromkeys(before) if u not in targets]
        graph.remove_node(name)
        removed = True
    return removed
