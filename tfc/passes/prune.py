"""prune_graph: partial execution. Fed tensors become Feed nodes; only what the fetches need stays.

Guarantees: every remaining node is an ancestor (by data or control edge) of a fetch or a
target; no Placeholder remains (an unfed one that is needed raises TF's missing-feed error);
the producers of fed tensors run only if something else needs them; an unfed
PlaceholderWithDefault becomes an Identity of its default (so it takes the default's shape).
"""

from __future__ import annotations

from tfc.ir import errors
from tfc.ir.graph import Graph
from tfc.ops.constant import missing_feed_message


def prune_graph(graph: Graph) -> Graph:
    attrs = graph.graph_attrs
    if not attrs.get("feeds_cut"):
        _cut_feeds(graph)
        attrs["feeds_cut"] = True
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
