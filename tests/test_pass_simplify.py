"""simplify_algebra: identities removed bit-exactly; variable reads and effects stay."""

import numpy as np
import pytest

import tfc as tf
from tfc.compiler import run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops.registry import apply_op
from tfc.passes.prune import prune_graph
from tfc.passes.simplify import simplify_algebra
from tfc.passes.specialize import specialize_shapes

BEFORE = [prune_graph, specialize_shapes, prune_graph]


def _simplify(fetches, targets=(), feeds=()):
    g = make_program_graph(tf.get_default_graph(), fetches, targets, feeds)
    return run_passes(g, BEFORE + [simplify_algebra], verify=True)


def _ops(g):
    return {n: g.node(n)["op"] for n in g.nx.nodes}


def _feed(name, shape, dtype=tf.float32):
    return FeedSpec((name, 0), dtype, shape)


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x * 1.0,
        lambda x: 1.0 * x,
        lambda x: x / 1.0,
        lambda x: x - 0.0,
        lambda x: x + tf.constant(-0.0),
        lambda x: tf.constant(-0.0) + x,
        lambda x: x * tf.ones([2, 3]),
        lambda x: tf.nn.bias_add(x, tf.constant([-0.0, -0.0, -0.0])),
    ],
)
def test_arithmetic_identities_disappear(make):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    y = tf.exp(make(x), name="y")
    g = _simplify([("y", 0)], feeds=[_feed("x", (2, 3))])
    assert _ops(g) == {"x": "Feed", "y": "Exp"}  # the operation and its constant are gone
    assert g.input_edges("y") == [("x", 0)]
    del y


def test_integer_identities_disappear():
    i = tf.placeholder(tf.int32, [4], name="i")
    y = tf.abs(((i + 0) * 1 - 0) // 1, name="y")
    g = _simplify([("y", 0)], feeds=[_feed("i", (4,), tf.int32)])
    assert _ops(g) == {"i": "Feed", "y": "Abs"}
    del y


def test_what_is_not_an_identity_stays():
    x = tf.placeholder(tf.float32, [4], name="x")
    widened = tf.add(x, tf.zeros([3, 4]), name="widened")  # broadcasts to [3, 4]: not x
    plus_zero = tf.add(x, 0.0, name="plus_zero")  # -0.0 + 0.0 is +0.0: not x, bit for bit
    minus_neg_zero = tf.subtract(x, -0.0, name="minus_neg_zero")
    times_two = tf.multiply(x, 2.0, name="times_two")
    mixed = tf.multiply(x, tf.constant([1.0, 1.0, 2.0, 1.0]), name="mixed")
    fetches = [(t.op.name, 0) for t in (widened, plus_zero, minus_neg_zero, times_two, mixed)]
    g = _simplify(fetches, feeds=[_feed("x", (4,))])
    for name, _ in fetches:
        assert name in g.nx and g.input_edges(name)[0] == ("x", 0)
    # the kept one matters: with x = -0.0 it gives +0.0
    with tf.Session() as sess:
        out = sess.run(plus_zero, {x: [-0.0, 1.0, -2.0, 0.0]})
    assert not np.signbit(out[0]) and out.tolist() == [0.0, 1.0, -2.0, 0.0]


def test_transposes_compose_and_cancel():
    x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
    t1 = tf.transpose(x, [1, 2, 0], name="t1")
    t2 = tf.transpose(t1, [2, 0, 1], name="t2")  # the inverse of t1: nothing remains
    t3 = tf.transpose(t1, [1, 0, 2], name="t3")  # one transpose by the composed perm
    t4 = tf.transpose(x, [0, 1, 2], name="t4")  # the identity perm
    fetches = [("t2", 0), ("t3", 0), ("t4", 0)]
    g = _simplify(fetches, feeds=[_feed("x", (2, 3, 4))])
    assert sorted(g.nx.nodes) == ["t3", "t3/perm_1", "t4", "x"]
    # t2's fetch moved to x; t4 stays as an Identity (no kernel) so x is not fetched twice
    assert g.graph_attrs["fetches"] == [("x", 0), ("t3", 0), ("t4", 0)]
    assert g.node("t4")["op"] == "Identity"
    assert g.input_edges("t3") == [("x", 0), ("t3/perm_1", 0)]
    perm = g.node("t3/perm_1")["attrs"]["value"]
    assert perm.tolist() == [2, 1, 0] and perm.dtype == np.int32
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    with tf.Session() as sess:
        got = sess.run([t2, t3, t4], {x: value})
    assert np.array_equal(got[0], value) and np.array_equal(got[2], value)
    assert np.array_equal(got[1], value.transpose(1, 2, 0).transpose(1, 0, 2))


def test_reshapes_collapse():
    x = tf.placeholder(tf.float32, [2, 6], name="x")
    r1 = tf.reshape(x, [3, 4], name="r1")
    r2 = tf.reshape(tf.expand_dims(r1, 0, name="e"), [12], name="r2")
    same = tf.reshape(x, [2, 6], name="same")
    g = _simplify([("r2", 0), ("same", 0)], feeds=[_feed("x", (2, 6))])
    assert "r1" not in g.nx and "e" not in g.nx and "same" not in g.nx
    assert g.input_edges("r2")[0] == ("x", 0)
    assert g.graph_attrs["fetches"] == [("r2", 0), ("x", 0)]  # the fetch moved to the input
    del r2, same


def test_identity_chains_no_op_casts_and_squeezes_disappear():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.identity(tf.stop_gradient(tf.identity(x, name="i1"), name="sg"), name="i2")
    c = apply_op("Cast", [a], {"SrcT": tf.float32, "DstT": tf.float32}, name="c").outputs[0]
    tf.negative(tf.squeeze(c, name="sq"), name="y")  # x has no dimension of size 1
    g = _simplify([("y", 0)], feeds=[_feed("x", (3,))])
    assert _ops(g) == {"x": "Feed", "y": "Neg"}


def _training_graph():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    out = tf.identity(tf.matmul(x, w), name="out")
    step = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(out), name="step")
    return x, w, out, step


def test_a_written_variable_keeps_its_read():
    x, w, out, step = _training_graph()
    train = _simplify([("out", 0)], targets=["step"], feeds=[_feed("x", (1, 2))])
    assert train.node("w/read")["op"] == "Identity"  # w is written: its read stays
    assert "out" not in train.nx  # other identities go
    predict = _simplify([("out", 0)], feeds=[_feed("x", (1, 2))])
    assert "w/read" not in predict.nx  # nothing writes w here: the read is a plain alias
    assert predict.input_edges("MatMul")[1] == ("w", 0)


def test_a_written_variable_is_not_read_through_a_removed_copy():
    v = tf.Variable([1.0, 2.0], name="v")
    snapshot = tf.multiply(v, 1.0, name="snapshot")  # a copy taken before the update
    inc = tf.assign_add(v, [10.0, 10.0], name="inc")
    with tf.control_dependencies([inc]):
        after = tf.add(snapshot, 0, name="after")
    g = _simplify([("after", 0)])
    assert g.node("snapshot")["op"] == "Mul"  # v * 1 must not become v itself
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after).tolist() == [1.0, 2.0]


def test_control_inputs_that_order_effects_are_kept():
    v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [], name="x")
    inc = tf.assign_add(v, 1.0, name="inc")
    with tf.control_dependencies([inc]):
        y = tf.identity(x, name="y")  # fetching y runs inc
    z = tf.exp(y, name="z")
    g = _simplify([("z", 0)], feeds=[_feed("x", ())])
    assert g.node("y")["op"] == "Identity" and g.control_input_names("y") == ["inc"]
    del z


def test_a_fetch_is_never_duplicated():
    x = tf.placeholder(tf.float32, [2], name="x")
    e = tf.exp(x, name="e")
    f = tf.multiply(e, 1.0, name="f")
    g = _simplify([("e", 0), ("f", 0)], feeds=[_feed("x", (2,))])
    assert g.graph_attrs["fetches"] == [("e", 0), ("f", 0)]
    assert g.node("f")["op"] == "Identity"  # no kernel, the value is copied out
    assert run_passes(g, [simplify_algebra], verify=True).node("f")["op"] == "Identity"  # stable
    with tf.Session() as sess:
        got = sess.run([e, f], {x: [0.0, 1.0]})
    assert np.array_equal(got[0], got[1])
    np.testing.assert_allclose(got[0], np.exp([0.0, 1.0]), rtol=1e-6)


def test_select_on_a_constant_condition_picks_its_branch():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.where(tf.constant([True, True, True]), x, tf.exp(x, name="unused"), name="pick")
    tf.negative(y, name="n")
    g = _simplify([("n", 0)], feeds=[_feed("x", (3,))])
    assert _ops(g) == {"x": "Feed", "n": "Neg"}


def test_results_with_and_without_simplification_are_bit_identical():
    def run(passes):
        tf.reset_default_graph()
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        h = tf.transpose(tf.transpose(x * 1.0, [1, 0]), [1, 0])
        h = tf.layers.dense(tf.reshape(tf.reshape(h, [-1]), [-1, 4]), 8, activation=tf.nn.tanh)
        logits = tf.layers.dense(tf.identity(h) - 0.0, 3)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
        rng = np.random.default_rng(1)
        xs = rng.standard_normal((6, 4)).astype(np.float32)
        xs[0, :2] = [-0.0, 0.0]
        feed = {x: xs, labels: rng.integers(0, 3, 6)}
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            sess.run(tf.global_variables_initializer())
            steps = [sess.run([loss, train], feed)[0] for _ in range(4)]
            return steps, sess.run(tf.trainable_variables())

    off, on = run([]), run(["simplify"])
    assert [v.tobytes() for v in off[0]] == [v.tobytes() for v in on[0]]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(off[1], on[1]))


def test_a_variable_read_only_an_ordering_needs_is_kept():
    v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    m = tf.exp(v, name="m")
    with tf.control_dependencies([m]):
        y = tf.identity(x, name="y")
    alone = tf.negative(y, name="alone")
    with_v = tf.add(y, v, name="with_v")
    feeds = [_feed("x", (2,))]
    assert "y" not in _simplify([("with_v", 0)], feeds=feeds).nx  # v is read anyway
    g = _simplify([("alone", 0)], feeds=feeds)
    assert g.control_input_names("y") == ["m"]  # the only read of v: it stays, and so must fail
    for passes in ([], ["simplify"]):
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
                sess.run(alone, {x: [0.0, 0.0]})
    del with_v
