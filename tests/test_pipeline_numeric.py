"""Optimization passes end to end: programs compiled (or, for partitions and stages, run by the
reference interpreter) give the same numbers, effects and errors with a pass on and off.

What each pass does to the graph is tested on the graph itself, without a compiler, in
tests/test_pass_<name>.py; fusion's compiled kernels are tests/test_codegen_fusion.py's.
"""

import re

import numpy as np
import pytest

import tfc as tf
from tfc.client.request import RunRequest
from tfc.compiler import GPU_DEVICE, STAGE_CUT, run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.cse import eliminate_common_subexpressions
from tfc.passes.fold import fold_constants
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import schedule_graph
from tfc.passes.simplify import simplify_algebra
from tfc.passes.specialize import specialize_shapes
from tfc.reference.interp import (
    Interpreter,
    InterpState,
    evaluate_partitions,
    evaluate_stages,
    partition_program,
)


# -- common subexpressions ------------------------------------------------------------------------
def _kernel_calls(source, node):
    """How many steps of the generated C compute `node` (each step names its node)."""
    return len(re.findall(rf"/\* {re.escape(node)} \(", source))


def test_cse_computes_a_matmul_written_twice_once():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(tf.ones([3, 2]), name="w")
    a = tf.matmul(x, w, name="a")
    b = tf.matmul(x, w, name="b")  # the same product, written again
    y = tf.add(tf.nn.relu(a, name="ra"), tf.nn.relu(b, name="rb"), name="y")
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


def test_cse_runs_a_stateful_op_written_twice_twice():
    x1 = tf.placeholder(tf.float32, [2], name="x1")
    x2 = tf.placeholder(tf.float32, [2], name="x2")
    v1 = tf.Variable([1.0, 2.0], name="v1")
    v2 = tf.Variable([1.0, 2.0], name="v2")
    i1 = tf.assign_add(v1, [1.0, 1.0], name="i1")
    i2 = tf.assign_add(v1, [1.0, 1.0], name="i2")  # twice the same update: it runs twice
    tf.add(tf.exp(x1, name="e1"), tf.exp(x2, name="e2"), name="s")
    with tf.Session(config=tf.CompileOptions(passes=["cse"])) as sess:
        sess.run([v1.initializer, v2.initializer])
        sess.run([i1, i2])
        assert sess.run(v1).tolist() == [3.0, 4.0]


def test_cse_merged_fetches_get_their_values():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.square(x, name="a")
    b = tf.square(x, name="b")
    c = tf.exp(a, name="c")
    with tf.Session() as sess:
        got = sess.run([b, c, a], {x: [1.0, 2.0, -3.0]})
    assert got[0].tolist() == got[2].tolist() == [1.0, 4.0, 9.0]
    np.testing.assert_allclose(got[1], np.exp([1.0, 4.0, 9.0]), rtol=1e-6)


def test_cse_multi_output_duplicates_fetched_together_get_their_values():
    x = tf.placeholder(tf.float32, [4], name="x")
    a0, _ = tf.split(x, 2, name="a")
    b0, b1 = tf.split(x, 2, name="b")
    with tf.Session(config=tf.CompileOptions(passes=["cse"])) as sess:
        got = sess.run([a0, b0, b1], {x: [1.0, 2.0, 3.0, 4.0]})
    assert [v.tolist() for v in got] == [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]]


@pytest.mark.usefixtures("quick_builds")  # a pass, not gcc, under test
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
            # read from the state: a fetch of the variables would be one more program to build
            return losses, [sess.read_variable(v.op.name) for v in tf.trainable_variables()]

    off, on = run([]), run(["cse"])
    assert all(a.tobytes() == b.tobytes() for p, q in zip(off[0], on[0]) for a, b in zip(p, q))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(off[1], on[1]))
    assert off[0][0][0] == off[0][0][1]  # the loss and its recomputation agree


# -- constant folding -----------------------------------------------------------------------------
def test_a_folded_fetch_gets_its_value():
    a = tf.constant([1, 2], name="a")
    tf.square(a, name="sq")
    with tf.Session() as sess:
        assert sess.run("sq:0").tolist() == [1, 4]


def test_a_folded_const_advances_the_random_stream_as_without_folding():
    # zeros_like(r * 2) folds, yet r's random stream must advance exactly as without the pass
    tf.set_random_seed(7)
    r = tf.random_uniform([4], name="r")
    r2 = tf.multiply(r, 2.0, name="r2")
    z = tf.add(tf.zeros_like(r2, name="z"), 1.0, name="z1")
    results = {}
    for passes in ([], ["fold"]):
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            results[tuple(passes)] = (sess.run(z), sess.run(r))
    assert np.array_equal(results[()][0], results[("fold",)][0])
    assert np.array_equal(results[()][1], results[("fold",)][1])  # same draw: the stream moved


def test_a_failing_constant_evaluation_stays_a_run_time_error():
    q = tf.floordiv(tf.constant(1, name="one"), tf.constant(0, name="zero"), name="q")
    with tf.Session(config=tf.CompileOptions(passes=["fold"])) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(q)


def test_reading_an_uninitialized_variable_still_fails_after_folding():
    v = tf.Variable([1.0, 2.0], name="v")
    z = tf.add(tf.zeros_like(tf.multiply(v, 2.0, name="twice"), name="z"), 1.0, name="z1")
    with tf.Session(config=tf.CompileOptions(passes=["fold"])) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
            sess.run(z)
        sess.run(v.initializer)
        assert sess.run(z).tolist() == [1.0, 1.0]


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


@pytest.mark.usefixtures("quick_builds")  # a pass, not gcc, under test
@pytest.mark.parametrize("build", [_shapes_and_constants, _mlp_adam_step])
def test_results_with_and_without_folding_are_identical(build):
    off = _results(build, [], runs=3)
    on = _results(build, ["fold"], runs=3)
    for a, b in zip(off, on):
        for x, y in zip(a, b):
            if x is not None:
                assert np.array_equal(x, y)


# -- algebraic simplification ---------------------------------------------------------------------
def test_x_plus_zero_is_kept_and_turns_negative_zero_positive():
    x = tf.placeholder(tf.float32, [4], name="x")
    tf.add(x, tf.zeros([3, 4]), name="widened")  # broadcasts to [3, 4]: not x
    plus_zero = tf.add(x, 0.0, name="plus_zero")  # -0.0 + 0.0 is +0.0: not x, bit for bit
    tf.subtract(x, -0.0, name="minus_neg_zero")
    tf.multiply(x, 2.0, name="times_two")
    tf.multiply(x, tf.constant([1.0, 1.0, 2.0, 1.0]), name="mixed")
    with tf.Session() as sess:
        out = sess.run(plus_zero, {x: [-0.0, 1.0, -2.0, 0.0]})
    assert not np.signbit(out[0]) and out.tolist() == [0.0, 1.0, -2.0, 0.0]


def test_composed_and_cancelled_transposes_give_the_same_values():
    x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
    t1 = tf.transpose(x, [1, 2, 0], name="t1")
    t2 = tf.transpose(t1, [2, 0, 1], name="t2")  # the inverse of t1: nothing remains
    t3 = tf.transpose(t1, [1, 0, 2], name="t3")  # one transpose by the composed perm
    t4 = tf.transpose(x, [0, 1, 2], name="t4")  # the identity perm
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    with tf.Session() as sess:
        got = sess.run([t2, t3, t4], {x: value})
    assert np.array_equal(got[0], value) and np.array_equal(got[2], value)
    assert np.array_equal(got[1], value.transpose(1, 2, 0).transpose(1, 0, 2))


def test_a_copy_taken_before_an_update_keeps_the_old_value():
    v = tf.Variable([1.0, 2.0], name="v")
    snapshot = tf.multiply(v, 1.0, name="snapshot")  # a copy taken before the update
    inc = tf.assign_add(v, [10.0, 10.0], name="inc")
    with tf.control_dependencies([inc]):
        after = tf.add(snapshot, 0, name="after")
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after).tolist() == [1.0, 2.0]


def test_a_fetch_kept_as_an_identity_gets_its_value():
    x = tf.placeholder(tf.float32, [2], name="x")
    e = tf.exp(x, name="e")
    f = tf.multiply(e, 1.0, name="f")
    with tf.Session() as sess:
        got = sess.run([e, f], {x: [0.0, 1.0]})
    assert np.array_equal(got[0], got[1])
    np.testing.assert_allclose(got[0], np.exp([0.0, 1.0]), rtol=1e-6)


@pytest.mark.usefixtures("quick_builds")  # a pass, not gcc, under test
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
            return steps, [sess.read_variable(v.op.name) for v in tf.trainable_variables()]

    off, on = run([]), run(["simplify"])
    assert [v.tobytes() for v in off[0]] == [v.tobytes() for v in on[0]]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(off[1], on[1]))


def test_a_variable_read_only_an_ordering_needs_still_fails_uninitialized():
    v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    m = tf.exp(v, name="m")
    with tf.control_dependencies([m]):
        y = tf.identity(x, name="y")
    alone = tf.negative(y, name="alone")
    tf.add(y, v, name="with_v")
    for passes in ([], ["simplify"]):
        with tf.Session(config=tf.CompileOptions(passes=passes)) as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
                sess.run(alone, {x: [0.0, 0.0]})


# -- memory planning ------------------------------------------------------------------------------
def test_in_place_results_are_correct_when_compiled():
    x = tf.placeholder(tf.float32, [3, 4], name="x")
    w = tf.constant(np.arange(16, dtype=np.float32).reshape(4, 4) / 10 - 0.7)
    h = tf.matmul(x, w)
    h = tf.nn.relu(h - 0.1)  # in place twice
    h2 = tf.matmul(h, w)
    y = tf.tanh(h2) * h2 + h2  # h2 read three times: only the last reader may overwrite it
    values = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    hv = np.maximum(values @ w.op.get_attr("value") - 0.1, 0)
    h2v = hv @ w.op.get_attr("value")
    # without fusion, which would make each chain one kernel with nothing left to overwrite
    with tf.Session(config=tf.CompileOptions(disable=["fuse"])) as sess:
        np.testing.assert_allclose(
            sess.run(y, {x: values}), np.tanh(h2v) * h2v + h2v, rtol=1e-5, atol=1e-6
        )
        source = sess.source(y, {x: values})
    # the kernels that write over their input are compiled without restrict
    assert "static void k" in source and "float *restrict y" in source
    assert any(ln.startswith("static void") and "restrict" not in ln for ln in source.splitlines())


# -- partitions, run by the reference interpreter -------------------------------------------------
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
PS = [f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(2)]


def _ps_model():
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [8, 5], name="x")
    y = tf.placeholder(tf.int32, [8], name="y")
    with tf.device("/job:ps/task:0"):
        w1 = tf.Variable(tf.random_normal([5, 6], stddev=0.5), name="W1")
        b1 = tf.Variable(tf.zeros([6]), name="b1")
    with tf.device("/job:ps/task:1"):
        w2 = tf.Variable(tf.random_normal([6, 3], stddev=0.5), name="W2")
        b2 = tf.Variable(tf.zeros([3]), name="b2")
    with tf.device("/job:worker/task:0"):
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(h, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.3, 0.9).minimize(loss, global_step=step)
    return x, y, loss, train


def test_partitions_recombine_into_the_original_computation():
    x, y, loss, train = _ps_model()
    graph = tf.get_default_graph()
    init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(8, 5)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32))
               for _ in range(5)]  # fmt: skip

    reference = Interpreter(graph)
    reference.run(init)
    want = [reference.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]

    attrs = {"default_device": WORKER, "cluster": {"ps": 2, "worker": 1}}
    state = InterpState()
    _, init_parts = partition_program(graph, [], [init.name], **attrs)
    evaluate_partitions(init_parts, [], state)
    feeds = [
        FeedSpec((x.op.name, 0), tf.float32, (8, 5)),
        FeedSpec((y.op.name, 0), tf.int32, (8,)),
    ]
    program, parts = partition_program(graph, [(loss.op.name, 0)], [train.name], feeds, **attrs)
    assert set(parts) == {WORKER, *PS}
    got = []
    for bx, by in batches:
        sends_before = state.rendezvous.sends
        got.append(evaluate_partitions(parts, [bx, by], state)[0])
        # every cut edge carried exactly one tensor this step, and every one was received
        assert state.rendezvous.sends - sends_before == len(program.graph_attrs["cut_edges"])
        assert state.rendezvous.pending() == []
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for name in ("W1", "b1", "W2", "b2", "global_step"):
        np.testing.assert_allclose(state.vars[name], reference.state.vars[name], rtol=1e-6)
    assert int(state.vars["global_step"]) == 5


# -- host and GPU stages, run by the reference interpreter ----------------------------------------
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
# what GPU programs run first
PRE = [
    prune_graph,
    specialize_shapes,
    fold_constants,
    simplify_algebra,
    eliminate_common_subexpressions,
    prune_graph,
]


def _staged(graph, fetches, feed_dict=None):
    """The request and the program graph after placement (GPU by default) and the stage pass."""
    request = RunRequest(graph, fetches, feed_dict)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    program = run_passes(program, PRE, verify=True)
    program.graph_attrs.update(default_device=GPU_DEVICE, allow_soft_placement=False)
    return request, run_passes(program, STAGE_CUT, verify=True)


def _run_stages(program, request, state):
    stages = program.graph_attrs["stages"]
    for stage in stages:
        run_passes(stage.graph, [schedule_graph])
    return evaluate_stages(stages, request.feed_values, len(request.fetches), state)


def test_a_tensor_two_host_stages_read_reaches_both():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    with tf.device("/gpu:0"):
        w = tf.Variable(tf.ones([3, 2]), name="W")
        h = tf.matmul(x, w, name="h")
    with tf.device("/cpu:0"):
        c = tf.exp(h, name="c")
    with tf.device("/gpu:0"):
        d = tf.multiply(c, 2.0, name="d")
    with tf.device("/cpu:0"):
        e = tf.add(h, d, name="e")  # h again, two host stages on
    request, program = _staged(tf.get_default_graph(), [e], {x: np.ones((4, 3), np.float32)})
    state = InterpState()
    state.vars["W"] = np.ones((3, 2), np.float32)
    (got,) = _run_stages(program, request, state)
    np.testing.assert_allclose(got, np.full((4, 2), 3 + 2 * np.exp(3)), rtol=1e-6)


def _mixed_model():
    """A training step: the first layer on the GPU, a host-placed bias (variable and update
    on the CPU), the rest on the GPU; the gradients cross back to the host for the bias."""
    tf.set_random_seed(5)
    x = tf.placeholder(tf.float32, [8, 5], name="x")
    y = tf.placeholder(tf.int32, [8], name="y")
    with tf.device("/gpu:0"):
        w1 = tf.Variable(tf.random_normal([5, 6], stddev=0.5), name="W1")
        h = tf.nn.relu(tf.matmul(x, w1))
    with tf.device("/cpu:0"):
        b = tf.Variable(tf.zeros([6]), name="b")
        s = tf.tanh(h + b)
    with tf.device("/gpu:0"):
        w2 = tf.Variable(tf.random_normal([6, 3], stddev=0.5), name="W2")
        logits = tf.matmul(s, w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.MomentumOptimizer(0.2, 0.9).minimize(loss)
    return x, y, loss, train


def test_stages_run_in_order_compute_the_unsplit_program():
    x, y, loss, train = _mixed_model()
    graph = tf.get_default_graph()
    init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(8, 5)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32))
               for _ in range(4)]  # fmt: skip
    reference = Interpreter(graph)
    reference.run(init)
    state = InterpState()
    request, program = _staged(graph, [init])
    _run_stages(program, request, state)
    for name in ("W1", "W2", "b"):
        np.testing.assert_array_equal(state.vars[name], reference.state.vars[name])

    request, program = _staged(graph, [loss, train], {x: batches[0][0], y: batches[0][1]})
    for bx, by in batches:
        want = reference.run([loss, train], {x: bx, y: by})[0]
        request.feed_values[:] = [bx, by]
        np.testing.assert_allclose(_run_stages(program, request, state)[0], want, rtol=1e-6)
    for name in ("W1", "W2", "b"):
        np.testing.assert_allclose(state.vars[name], reference.state.vars[name], rtol=1e-6)


def test_a_control_edge_between_stages_runs_its_source_first():
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/cpu:0"):
        counter = tf.Variable(0.0, name="counter")
        bump = tf.assign_add(counter, 1.0, name="bump")
    with tf.device("/gpu:0"), tf.control_dependencies([bump]):
        out = tf.multiply(x, 2.0, name="out")
    state = InterpState()
    state.vars["counter"] = np.zeros((), np.float32)
    request, program = _staged(tf.get_default_graph(), [out], {x: np.arange(3, dtype=np.float32)})
    for step in range(1, 3):
        np.testing.assert_array_equal(_run_stages(program, request, state)[0], [0, 2, 4])
        assert state.vars["counter"] == step


def test_stages_reading_only_feeds_and_constants_compute_their_fetches():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [3], name="x")
        k = tf.constant([1.0, 2.0, 3.0], name="k")
    with tf.device("/gpu:0"):
        y = tf.multiply(x, k, name="y")
    with tf.device("/cpu:0"):
        z = tf.add(x, k, name="z")
    request, program = _staged(tf.get_default_graph(), [y, z], {x: np.ones(3, np.float32)})
    y_val, z_val = _run_stages(program, request, InterpState())
    np.testing.assert_array_equal(y_val, [1, 2, 3])
    np.testing.assert_array_equal(z_val, [2, 3, 4])
