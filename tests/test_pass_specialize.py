"""specialize_shapes: concrete shapes from fed shapes; compile-time values become Consts."""

import pytest
from passcheck import assert_graph, feed, program, run

import tfc as tf
from tfc.passes.prune import prune_graph
from tfc.passes.specialize import specialize_shapes


def _specialize(fetches, feeds):
    return run(specialize_shapes, run(prune_graph, program(fetches, feeds)))


def test_fed_shape_propagates():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.add(tf.exp(x, name="y"), tf.constant([1.0, 2.0, 3.0], name="c"), name="z")
    g = _specialize([("z", 0)], [feed("x", (5, 3))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[5,3] {dtype=float32, index=0, shape=(5, 3)}
        y = Exp(x:0) -> float32[5,3]
        c = Const() -> float32[3] {dtype=float32, value=[1.0, 2.0, 3.0]}
        z = Add(y:0, c:0) -> float32[5,3]
        fetches: z:0
        """,
    )
    assert_graph(
        tf.get_default_graph(),
        """
        x = Placeholder() -> float32[?,3] {dtype=float32, shape=(None, 3)}
        y = Exp(x:0) -> float32[?,3]
        c = Const() -> float32[3] {dtype=float32, value=[1.0, 2.0, 3.0]}
        z = Add(y:0, c:0) -> float32[?,3]
        """,
    )  # the user's graph is unchanged


def test_shape_of_a_fed_tensor_becomes_a_constant():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.shape(x, name="n")
    g = _specialize([("n", 0)], [feed("x", (7, 3))])
    # nothing needs the feed's values any more: the next prune removes it
    assert_graph(
        g,
        """
        x = Feed() -> float32[7,3] {dtype=float32, index=0, shape=(7, 3)}
        n = Const() -> int32[2] {dtype=int32, value=[7, 3]}
        fetches: n:0
        """,
    )
    assert_graph(
        run(prune_graph, g),
        """
        n = Const() -> int32[2] {dtype=int32, value=[7, 3]}
        fetches: n:0
        """,
    )


def test_compile_time_inputs_become_consts():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.reshape(x, tf.stack([tf.shape(x)[0] * 3]), name="flat")
    g = _specialize([("flat", 0)], [feed("x", (2, 3))])
    assert_graph(
        run(prune_graph, g),
        """
        x = Feed() -> float32[2,3] {dtype=float32, index=0, shape=(2, 3)}
        flat = Reshape(x:0, flat/const_input_1:0) -> float32[6]
        flat/const_input_1 = Const() -> int32[1] {dtype=int32, value=[6]}
        fetches: flat:0
        """,
    )


def test_incompatible_fed_shapes_raise_at_run_time():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    tf.add(x, y, name="z")
    feeds = [feed("x", (3,)), feed("y", (4,))]
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="Dimensions must be equal, but are 3 and 4"
    ):
        _specialize([("z", 0)], feeds)
