"""prune_graph: feeds cut the graph, and only what fetches and targets need is kept."""

import pytest

import tfc as tf
from tfc.compiler import run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.prune import prune_graph


def _program(fetches, targets=(), feeds=()):
    graph = tf.get_default_graph()
    return make_program_graph(graph, fetches, targets, feeds)


def test_keeps_exactly_the_ancestors_of_fetches():
    x = tf.placeholder(tf.float32, [2], name="x")
    a = tf.exp(x, name="a")
    tf.log(x, name="unused")
    b = tf.add(a, 1.0, name="b")
    g = run_passes(
        _program([("b", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (2,))]),
        [prune_graph],
        verify=True,
    )
    assert sorted(g.nx.nodes) == sorted(["a", "b", "x", b.op.inputs[1].op.name])
    assert g.node("x")["op"] == "Feed"  # the fed placeholder itself becomes the feed
    assert "unused" not in g.nx


def test_control_inputs_and_targets_are_kept():
    a = tf.constant(1.0, name="a")
    side = tf.constant(2.0, name="side")
    with tf.control_dependencies([side]):
        c = tf.identity(a, name="c")
    t = tf.no_op(name="t")
    g = run_passes(_program([("c", 0)], targets=["t"]), [prune_graph], verify=True)
    assert sorted(g.nx.nodes) == ["a", "c", "side", "t"]
    del c, t


def test_feeding_an_inner_tensor_drops_its_producers():
    x = tf.placeholder(tf.float32, [2], name="x")
    h = tf.exp(x, name="h")
    y = tf.square(h, name="y")
    feeds = [FeedSpec(("h", 0), tf.float32, (2,))]
    g = run_passes(_program([("y", 0), ("h", 0)], feeds=feeds), [prune_graph], verify=True)
    assert "x" not in g.nx and "h" not in g.nx
    feed = [n for n in g.nx.nodes if g.node(n)["op"] == "Feed"]
    assert feed == ["h/feed_0"]
    assert g.input_edges("y") == [("h/feed_0", 0)]
    assert g.graph_attrs["fetches"] == [("y", 0), ("h/feed_0", 0)]  # a fetched feed is rewired
    del y


def test_unfed_needed_placeholder_is_an_error_unneeded_is_not():
    x = tf.placeholder(tf.float32, name="x")
    tf.placeholder(tf.float32, name="other")
    y = tf.exp(x, name="y")
    with pytest.raises(tf.errors.InvalidArgumentError, match="placeholder tensor 'x'"):
        run_passes(_program([("y", 0)]), [prune_graph])
    g = run_passes(_program([("y", 0)], feeds=[FeedSpec(("x", 0), tf.float32, ())]), [prune_graph])
    assert "other" not in g.nx
    del y


def test_user_graph_is_untouched():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.exp(x, name="y")
    tf.log(x, name="z")
    before = sorted(tf.get_default_graph().nx.nodes)
    run_passes(_program([("y", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (2,))]), [prune_graph])
    assert sorted(tf.get_default_graph().nx.nodes) == before
    assert tf.get_default_graph().node("x")["op"] == "Placeholder"
    del y
