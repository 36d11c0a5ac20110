"""prune_graph: feeds cut the graph, and only what fetches and targets need is kept."""

import pytest
from passcheck import assert_graph, feed, program, run

import tfc as tf
from tfc.ir.dump import program_text
from tfc.passes.prune import prune_graph


def test_keeps_exactly_the_ancestors_of_fetches():
    x = tf.placeholder(tf.float32, [2], name="x")
    a = tf.exp(x, name="a")
    tf.log(x, name="unused")
    tf.add(a, 1.0, name="b")
    g = run(prune_graph, program([("b", 0)], [feed("x", (2,))]))
    # the fed placeholder itself becomes the feed
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        a = Exp(x:0) -> float32[2]
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        b = Add(a:0, Const:0) -> float32[2]
        fetches: b:0
        """,
    )


def test_control_inputs_and_targets_are_kept():
    a = tf.constant(1.0, name="a")
    side = tf.constant(2.0, name="side")
    with tf.control_dependencies([side]):
        tf.identity(a, name="c")
    tf.no_op(name="t")
    tf.constant(3.0, name="unused")
    g = run(prune_graph, program([("c", 0)], targets=["t"]))
    assert_graph(
        g,
        """
        a = Const() -> float32[] {dtype=float32, value=1.0}
        side = Const() -> float32[] {dtype=float32, value=2.0}
        c = Identity(a:0, ^side) -> float32[]
        t = NoOp() -> ()
        fetches: c:0
        targets: t
        """,
    )


def test_feeding_an_inner_tensor_drops_its_producers():
    x = tf.placeholder(tf.float32, [2], name="x")
    h = tf.exp(x, name="h")
    tf.square(h, name="y")
    g = run(prune_graph, program([("y", 0), ("h", 0)], [feed("h", (2,))]))
    # a fetched feed is rewired
    assert_graph(
        g,
        """
        y = Square(h/feed_0:0) -> float32[2]
        h/feed_0 = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        fetches: y:0, h/feed_0:0
        """,
    )


def test_unfed_needed_placeholder_is_an_error_unneeded_is_not():
    x = tf.placeholder(tf.float32, name="x")
    tf.placeholder(tf.float32, name="other")
    tf.exp(x, name="y")
    with pytest.raises(tf.errors.InvalidArgumentError, match="placeholder tensor 'x'"):
        prune_graph(program([("y", 0)]))
    g = run(prune_graph, program([("y", 0)], [feed("x", ())]))
    assert_graph(
        g,
        """
        x = Feed() -> float32[] {dtype=float32, index=0, shape=()}
        y = Exp(x:0) -> float32?
        fetches: y:0
        """,
    )


def test_user_graph_is_untouched():
    x = tf.placeholder(tf.float32, [2], name="x")
    tf.exp(x, name="y")
    tf.log(x, name="z")
    before = program_text(tf.get_default_graph())
    run(prune_graph, program([("y", 0)], [feed("x", (2,))]))
    assert program_text(tf.get_default_graph()) == before
    assert_graph(
        tf.get_default_graph(),
        """
        x = Placeholder() -> float32[2] {dtype=float32, shape=(2,)}
        y = Exp(x:0) -> float32[2]
        z = Log(x:0) -> float32[2]
        """,
    )
