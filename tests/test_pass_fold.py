"""fold_constants: constant subgraphs become Consts; never random, stateful or fed ones."""

import time

import numpy as np
import pytest

import tfc as tf
from tfc.compiler import run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.fold import FOLD_LIMIT_BYTES, fold_constants
from tfc.passes.prune import prune_graph
from tfc.passes.specialize import specialize_shapes

BEFORE = [prune_graph, specialize_shapes, prune_graph]


def _fold(fetches, targets=(), feeds=()):
    g = make_program_graph(tf.get_default_graph(), fetches, targets, feeds)
    return run_passes(g, BEFORE + [fold_constants], verify=True)


def _ops(g):
    return {n: g.node(n)["op"] for n in g.nx.nodes}


def test_a_constant_subgraph_becomes_one_const():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.constant(2.0, name="a")
    b = tf.constant([1.0, 2.0, 3.0], name="b")
    c = tf.add(tf.multiply(a, b, name="ab"), 1.0, name="c")
    tf.add(x, c, name="y")
    g = _fold([("y", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (3,))])
    # before: x, a, b, ab, the 1.0, c, y (7 nodes); after: x, c, y
    assert _ops(g) == {"x": "Feed", "c": "Const", "y": "Add"}
    assert g.node("c")["attrs"]["value"].tolist() == [3.0, 5.0, 7.0]
    assert g.node("c")["attrs"]["value"].dtype == np.float32
    assert g.input_edges("y") == [("x", 0), ("c", 0)]


def test_a_fetched_node_that_folds_keeps_its_name():
    a = tf.constant([1, 2], name="a")
    tf.square(a, name="sq")
    g = _fold([("sq", 0)])
    assert _ops(g) == {"sq": "Const"}
    assert g.graph_attrs["fetches"] == [("sq", 0)]
    with tf.Session() as sess:
        assert sess.run("sq:0").tolist() == [1, 4]


def test_zeros_and_ones_like_fold_from_the_static_shape():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    ones = tf.ones_like(x, name="ones")
    tf.reduce_sum(ones, name="count")
    g = _fold([("count", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (5, 2))])
    assert _ops(g) == {"count": "Const"}  # the feed's values were never needed
    assert g.node("count")["attrs"]["value"] == 10.0


def test_size_cap_keeps_big_fills_as_kernels():
    small = tf.zeros([4, 4], name="small")
    big = tf.zeros([4096, 4096], name="big")
    start = time.perf_counter()
    g = _fold([("small", 0), ("big", 0)])
    assert time.perf_counter() - start < 1.0  # the 64 MB value is never even computed
    assert g.node("small")["op"] == "Const"
    assert g.node("big")["op"] == "Fill"  # 64 MB stays one loop, not an embedded constant
    largest = max(g.node(n)["attrs"]["value"].nbytes for n in g.nx if g.node(n)["op"] == "Const")
    assert largest <= FOLD_LIMIT_BYTES
    del small, big


def test_random_stateful_and_fed_ops_are_never_folded():
    tf.set_random_seed(1)
    r = tf.random_uniform([3])
    v = tf.Variable(tf.ones([3]), name="v")
    x = tf.placeholder(tf.float32, [3], name="x")
    two = tf.constant(2.0, name="two")
    tf.multiply(r, two, name="r2")
    tf.multiply(v, two, name="v2")
    tf.multiply(x, tf.multiply(two, 3.0, name="six"), name="x6")
    inc = tf.assign_add(v, tf.constant([1.0, 1.0, 1.0], name="one"), name="inc")
    feeds = [FeedSpec(("x", 0), tf.float32, (3,))]
    g = _fold([("r2", 0), ("v2", 0), ("x6", 0)], targets=["inc"], feeds=feeds)
    ops = _ops(g)
    assert list(ops.values()).count("RandomUniform") == 1 and ops["r2"] == "Mul"
    assert ops["v"] == "VariableV2" and ops["v/read"] == "Identity" and ops["v2"] == "Mul"
    assert ops["x"] == "Feed" and ops["x6"] == "Mul" and ops["six"] == "Const"
    assert ops["inc"] == "AssignAdd" and ops["one"] == "Const"
    del inc


def test_control_inputs_from_stateful_ops_block_folding():
    v = tf.Variable(1.0, name="v")
    inc = tf.assign_add(v, 1.0, name="inc")
    with tf.control_dependencies([inc]):
        tf.add(tf.constant(1.0, name="c1"), 1.0, name="after")
    g = _fold([("after", 0)])
    assert g.node("after")["op"] == "Add"
    assert g.control_input_names("after") == ["inc"]


def test_a_folded_const_keeps_what_its_inputs_kept_running():
    # zeros_like(r * 2) folds, yet r's random stream must advance exactly as without the pass
    tf.set_random_seed(7)
    r = tf.random_uniform([4], name="r")
    r2 = tf.multiply(r, 2.0, name="r2")
    z = tf.add(tf.zeros_like(r2, name="z"), 1.0, name="z1")
    g = _fold([("z1", 0)])
    assert g.node("z1")["op"] == "Const" and g.control_input_names("z1") == ["r2"]
    assert "r" in g.nx
    results = {}
    for passes in ([], ["fold"]):
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            results[tuple(passes)] = (sess.run(z), sess.run(r))
    assert np.array_equal(results[()][0], results[("fold",)][0])
    assert np.array_equal(results[()][1], results[("fold",)][1])  # same draw: the stream moved


def test_a_failing_evaluation_stays_a_run_time_error():
    q = tf.floordiv(tf.constant(1, name="one"), tf.constant(0, name="zero"), name="q")
    g = _fold([("q", 0)])
    assert g.node("q")["op"] == "FloorDiv"
    with tf.Session(config=tf.CompileOptions(passes=["fold"])) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(q)


def test_a_multi_output_node_becomes_one_const_per_used_output():
    x = tf.placeholder(tf.float32, [2], name="x")
    parts = tf.split(tf.constant([1.0, 2.0, 3.0, 4.0], name="c"), 2, name="split")
    tf.add(x, parts[0], name="y")
    g = _fold([("y", 0), ("split", 1)], feeds=[FeedSpec(("x", 0), tf.float32, (2,))])
    assert "split" not in g.nx and "c" not in g.nx
    assert g.input_edges("y") == [("x", 0), ("split/folded_0", 0)]
    assert g.graph_attrs["fetches"] == [("y", 0), ("split/folded_1", 0)]
    assert g.node("split/folded_1")["attrs"]["value"].tolist() == [3.0, 4.0]


def _results(build, passes, runs=1):
    """Build a graph, then return what `runs` calls of its fetches give under `passes`."""
    tf.reset_default_graph()
    tf.set_random_seed(5)
    fetches, feed = build()
    with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
        sess.run(tf.global_variables_initializer())
        return [sess.run(fetches, feed) for _ in range(runs)]


def _shapes_and_constants():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    scale = tf.cast(tf.shape(x)[0], tf.float32) * tf.constant(0.5)
    w = tf.reshape(tf.constant([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), [3, 2]) / 10.0
    y = tf.matmul(x, w) * scale + tf.reduce_sum(tf.ones([4, 2]), axis=0)
    return [y, tf.reduce_mean(y)], {x: np.arange(12, dtype=np.float32).reshape(4, 3)}


def _mlp_adam_step():
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="h")
    logits = tf.layers.dense(h, 3, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    feed = {x: rng.standard_normal((16, 8)).astype(np.float32), labels: rng.integers(0, 3, 16)}
    return [loss, train, tf.trainable_variables()[0]], feed


@pytest.mark.parametrize("build", [_shapes_and_constants, _mlp_adam_step])
def test_results_with_and_without_folding_are_identical(build):
    off = _results(build, [], runs=3)
    on = _results(build, ["fold"], runs=3)
    for a, b in zip(off, on):
        for x, y in zip(a, b):
            if x is not None:
                assert np.array_equal(x, y)


def test_reading_an_uninitialized_variable_still_fails():
    v = tf.Variable([1.0, 2.0], name="v")
    z = tf.add(tf.zeros_like(tf.multiply(v, 2.0, name="twice"), name="z"), 1.0, name="z1")
    g = _fold([("z1", 0)])
    assert g.node("z1")["op"] == "Const" and g.control_input_names("z1") == ["twice"]
    with tf.Session(config=tf.CompileOptions(passes=["fold"])) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
            sess.run(z)
        sess.run(v.initializer)
        assert sess.run(z).tolist() == [1.0, 1.0]
