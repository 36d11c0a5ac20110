"""specialize_shapes: concrete shapes from fed shapes; compile-time values become Consts."""

import pytest

import tfc as tf
from tfc.compiler import run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.prune import prune_graph
from tfc.passes.specialize import specialize_shapes


def _specialize(fetches, feeds):
    g = make_program_graph(tf.get_default_graph(), fetches, (), feeds)
    return run_passes(g, [prune_graph, specialize_shapes, prune_graph], verify=True)


def test_fed_shape_propagates():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.exp(x, name="y") + tf.constant([1.0, 2.0, 3.0])
    g = _specialize([(y.op.name, 0)], [FeedSpec(("x", 0), tf.float32, (5, 3))])
    assert g.node("y")["shapes"] == [(5, 3)] and g.node(y.op.name)["shapes"] == [(5, 3)]
    assert tf.get_default_graph().node("y")["shapes"] == [(None, 3)]  # user graph unchanged


def test_shape_of_a_fed_tensor_becomes_a_constant():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.shape(x, name="n")
    g = _specialize([("n", 0)], [FeedSpec(("x", 0), tf.float32, (7, 3))])
    assert g.node("n")["op"] == "Const"
    assert g.node("n")["attrs"]["value"].tolist() == [7, 3]
    assert "x" not in g.nx  # nothing needs the feed's values any more


def test_incompatible_fed_shapes_raise_at_run_time():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    z = tf.add(x, y, name="z")
    feeds = [FeedSpec(("x", 0), tf.float32, (3,)), FeedSpec(("y", 0), tf.float32, (4,))]
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="Dimensions must be equal, but are 3 and 4"
    ):
        _specialize([("z", 0)], feeds)
    del z
