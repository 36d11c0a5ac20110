"""eliminate_common_subexpressions: duplicates computed once; stateful and random ops never."""

import re

import numpy as np

import tfc as tf
from tfc.compiler import run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.cse import eliminate_common_subexpressions
from tfc.passes.prune import prune_graph
from tfc.passes.specialize import specialize_shapes

BEFORE = [prune_graph, specialize_shapes, prune_graph]


def _cse(fetches, targets=(), feeds=()):
    g = make_program_graph(tf.get_default_graph(), fetches, targets, feeds)
    return run_passes(g, BEFORE + [eliminate_common_subexpressions], verify=True)


def _count(g, op):
    return sum(1 for n in g.nx if g.node(n)["op"] == op)


def _kernel_calls(source, node):
    """How many steps of the generated C compute `node` (each step names its node)."""
    return len(re.findall(rf"/\* {re.escape(node)} \(", source))


def test_the_same_matmul_written_twice_is_computed_once():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(tf.ones([3, 2]), name="w")
    a = tf.matmul(x, w, name="a")
    b = tf.matmul(x, w, name="b")  # the same product, written again
    y = tf.add(tf.nn.relu(a, name="ra"), tf.nn.relu(b, name="rb"), name="y")
    g = _cse([("y", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (4, 3))])
    assert "b" not in g.nx and "rb" not in g.nx  # relu(b) became relu(a) and merged too
    assert g.input_edges("y") == [("ra", 0), ("ra", 0)]
    feed = {x: np.arange(12, dtype=np.float32).reshape(4, 3) - 5}
    sources, values = {}, {}
    for passes in ([], ["cse"]):
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            sess.run(w.initializer)
            sources[tuple(passes)] = sess.source(y, feed)
            values[tuple(passes)] = sess.run(y, feed)
    off, on = sources[()], sources[("cse",)]
    assert _kernel_calls(off, "a") == 1 and _kernel_calls(off, "b") == 1
    assert _kernel_calls(on, "a") == 1 and _kernel_calls(on, "b") == 0
    assert off.count("(MatMul)") == 2 and on.count("(MatMul)") == 1
    assert np.array_equal(values[()], values[("cse",)])


def test_a_recomputed_loss_collapses_to_a_fixed_point():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    w = tf.Variable(tf.ones([4, 3]), name="w")

    def loss(name):
        logits = tf.matmul(x, w)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return tf.reduce_mean(xent, name=name)

    loss("loss")
    loss("summary_loss")  # the same loss built again, e.g. for a summary
    feeds = [FeedSpec(("x", 0), tf.float32, (2, 4)), FeedSpec(("labels", 0), tf.int32, (2,))]
    fetches = [("loss", 0), ("summary_loss", 0)]
    before = run_passes(make_program_graph(tf.get_default_graph(), fetches, (), feeds), BEFORE)
    g = _cse(fetches, feeds=feeds)
    # the duplicate's MatMul, cross entropy and axes Const merged away; its Mean stays as below
    assert len(before.nx) == 12 and len(g.nx) == 9
    assert _count(g, "MatMul") == 1 and _count(g, "SparseSoftmaxCrossEntropyWithLogits") == 1
    # both were fetched: the second stays as an Identity of the first (no kernel)
    assert g.graph_attrs["fetches"] == [("loss", 0), ("summary_loss", 0)]
    assert g.input_edges("summary_loss") == [("loss", 0)]
    assert g.node("summary_loss")["op"] == "Identity"
    again = run_passes(g.copy(), [eliminate_common_subexpressions], verify=True)
    assert sorted(again.nx.nodes) == sorted(g.nx.nodes)  # a fixed point


def test_random_ops_are_never_merged():
    a = tf.random_uniform([3], seed=1, name="a")
    b = tf.random_uniform([3], seed=1, name="b")  # same attributes, still two streams
    tf.add(a, b, name="s")
    g = _cse([("s", 0)])
    assert _count(g, "RandomUniform") == 2


def test_stateful_ops_are_never_merged():
    x1 = tf.placeholder(tf.float32, [2], name="x1")
    x2 = tf.placeholder(tf.float32, [2], name="x2")
    v1 = tf.Variable([1.0, 2.0], name="v1")
    v2 = tf.Variable([1.0, 2.0], name="v2")
    i1 = tf.assign_add(v1, [1.0, 1.0], name="i1")
    i2 = tf.assign_add(v1, [1.0, 1.0], name="i2")  # twice the same update: it runs twice
    tf.add(tf.exp(x1, name="e1"), tf.exp(x2, name="e2"), name="s")
    feeds = [FeedSpec(("x1", 0), tf.float32, (2,)), FeedSpec(("x2", 0), tf.float32, (2,))]
    g = _cse([("s", 0), ("v2/read", 0)], targets=["i1", "i2"], feeds=feeds)
    assert {"x1", "x2", "e1", "e2", "v1", "v2", "i1", "i2"} <= set(g.nx.nodes)
    with tf.Session(config=tf.CompileOptions(passes=["cse"])) as sess:
        sess.run([v1.initializer, v2.initializer])
        sess.run([i1, i2])
        assert sess.run(v1).tolist() == [3.0, 4.0]


def test_constants_merge_only_when_identical():
    x = tf.placeholder(tf.float32, [2], name="x")
    parts = [
        x * tf.constant([1.5, 2.0], name="c1"),
        x * tf.constant([1.5, 2.0], name="c2"),  # equal: merges
        x * tf.constant([1.5, 2.0], dtype=tf.float32, name="c3"),  # equal: merges
        x * tf.constant([0.0, 2.0], name="pos"),
        x * tf.constant([-0.0, 2.0], name="neg"),  # different bits from `pos`
    ]
    tf.add_n(parts, name="s")
    g = _cse([("s", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (2,))])
    assert {"c1", "pos", "neg"} <= set(g.nx) and not {"c2", "c3"} & set(g.nx)
    assert _count(g, "Mul") == 3
    d1 = tf.constant([1, 2], dtype=tf.int32, name="d1")
    d2 = tf.constant([1, 2], dtype=tf.int64, name="d2")
    tf.add(tf.cast(d1, tf.float32), tf.cast(d2, tf.float32), name="t")
    g = _cse([("t", 0)])
    assert "d1" in g.nx and "d2" in g.nx  # equal values of different dtypes


def test_control_inputs_must_match():
    x = tf.placeholder(tf.float32, [2], name="x")
    v = tf.Variable([0.0, 0.0], name="v")
    inc = tf.assign_add(v, [1.0, 1.0], name="inc")
    a = tf.exp(x, name="a")
    with tf.control_dependencies([inc]):
        b = tf.exp(x, name="b")  # runs after inc: not the same node as `a`
    tf.add(a, b, name="s")
    g = _cse([("s", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (2,))])
    assert "a" in g.nx and "b" in g.nx


def test_commutative_inputs_match_in_either_order():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.placeholder(tf.float32, [2], name="y")
    s = tf.add_n(
        [
            tf.add(x, y, name="xy"),
            tf.add(y, x, name="yx"),
            tf.subtract(x, y, name="x_y"),
            tf.subtract(y, x, name="y_x"),
        ],
        name="s",
    )
    feeds = [FeedSpec(("x", 0), tf.float32, (2,)), FeedSpec(("y", 0), tf.float32, (2,))]
    g = _cse([("s", 0)], feeds=feeds)
    assert "yx" not in g.nx and {"xy", "x_y", "y_x"} <= set(g.nx)
    del s


def test_merged_fetches_and_targets_stay_valid():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.square(x, name="a")
    b = tf.square(x, name="b")
    c = tf.exp(a, name="c")
    feeds = [FeedSpec(("x", 0), tf.float32, (3,))]
    g = _cse([("c", 0)], targets=["b"], feeds=feeds)  # b is only run, not fetched
    assert "b" not in g.nx and g.graph_attrs["targets"] == ["a"]
    g = _cse([("b", 0), ("c", 0)], feeds=feeds)
    assert "b" not in g.nx
    assert g.graph_attrs["fetches"] == [("a", 0), ("c", 0)]  # the fetch moved to `a`
    with tf.Session() as sess:
        got = sess.run([b, c, a], {x: [1.0, 2.0, -3.0]})
    assert got[0].tolist() == got[2].tolist() == [1.0, 4.0, 9.0]
    np.testing.assert_allclose(got[1], np.exp([1.0, 4.0, 9.0]), rtol=1e-6)


def test_training_results_with_and_without_cse_are_identical():
    def run(passes):
        tf.reset_default_graph()
        tf.set_random_seed(11)
        rng = np.random.default_rng(2)
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        h = tf.layers.dense(x, 12, activation=tf.nn.relu, name="h")
        logits = tf.layers.dense(h, 4, name="logits")
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        again = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        feed = {x: rng.standard_normal((10, 6)).astype(np.float32), labels: rng.integers(0, 4, 10)}
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, again, train], feed)[:2] for _ in range(5)]
            return losses, sess.run(tf.trainable_variables())

    off, on = run([]), run(["cse"])
    assert all(a.tobytes() == b.tobytes() for p, q in zip(off[0], on[0]) for a, b in zip(p, q))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(off[1], on[1]))
    assert off[0][0][0] == off[0][0][1]  # the loss and its recomputation agree


def test_multi_output_duplicates_with_colliding_fetches_are_left_alone():
    x = tf.placeholder(tf.float32, [4], name="x")
    a0, a1 = tf.split(x, 2, name="a")
    b0, b1 = tf.split(x, 2, name="b")
    fetches = [("a", 0), ("b", 0), ("b", 1)]
    g = _cse(fetches, feeds=[FeedSpec(("x", 0), tf.float32, (4,))])
    assert "a" in g.nx and "b" in g.nx  # b:0 cannot move to a:0, fetched already
    assert g.graph_attrs["fetches"] == fetches
    with tf.Session(config=tf.CompileOptions(passes=["cse"])) as sess:
        got = sess.run([a0, b0, b1], {x: [1.0, 2.0, 3.0, 4.0]})
    assert [v.tolist() for v in got] == [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]]
    del a1
