"""prune_graph: partial execution. Fed tensors become Feed nodes; only what the fetches need stays.

Guarantees: every remaining node is an ancestor (by data or control edge) of a fetch or a
target; no Placeholder remains (an unfed one that is needed raises TF's missing-feed error);
the producers of fed tensors run only if something else needs them; an unfed
PlaceholderWithDefault becomes an Identity of its default (so it takes the default's shape);
no op the Session runs around the program (OpDef.session_side: queue ops) remains, a control
edge from one becoming edges from its own inputs; where the caller runs no such ops (a native
build: graph_attrs["session_side_ops"] unset), one that the fetches need is an error naming it.
"""

from __future__ import annotations

from tfc.ir import errors
from tfc.ir.graph import Graph
from tfc.ops.constant import missing_feed_message
from tfc.ops.registry import get_opdef


def prune_graph(graph: Graph) -> Graph:
    attrs = graph.graph_attrs
    if not attrs.get("feeds_cut"):
        _cut_feeds(graph)
        attrs["feeds_cut"] = True
    _remove_unreached(graph)
    if _remove_session_side(graph):
        _remove_unreached(graph)
    for name in graph.node_names():
        node = graph.node(name)
        if node["op"] == "PlaceholderWithDefault":
            node.update(op="Identity", attrs={})
            graph.version += 1
        if node["op"] == "Placeholder":
            dtype, shape = node["attrs"]["dtype"], node["attrs"]["shape"]
            raise errors.InvalidArgumentError(None, None, missing_feed_message(name, dtype, shape))
    return graph


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


def _remove_unreached(graph: Graph) -> None:
    attrs = graph.graph_attrs
    roots = [n for n, _ in attrs["fetches"]] + list(attrs["targets"])
    keep = set(roots)
    stack = list(roots)
    while stack:
        for pred in graph.nx.predecessors(stack.pop()):
            if pred not in keep:
                keep.add(pred)
                stack.append(pred)
    for name in [n for n in graph.nx.nodes if n not in keep]:
        graph.remove_node(name)


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
        fetched = [f for f in attrs["fetches"] if f[0] == name]
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
