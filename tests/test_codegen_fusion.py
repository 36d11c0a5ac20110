"""Fused kernels compiled and run: the same bits with fusion on and off (and as the Fusion op's
NumPy reference), the loops and kernel counts fusion gives, and fused code under sanitizers.
Which groups the fuse pass forms is tests/test_pass_fuse.py's."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_codegen_c import sanitizer_env

import tfc as tf
from tfc.codegen.lower import lower_program
from tfc.compiler import OPTIMIZATIONS, pass_name, pipeline, run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops import training_ops
from tfc.passes.fuse import fuse_elementwise
from tfc.passes.memory import plan_memory
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import schedule_graph
from tfc.passes.specialize import specialize_shapes
from tfc.reference.interp import InterpState, evaluate

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("digits_mlp_sample", REPO / "samples/digits_mlp.py")
digits_mlp = importlib.util.module_from_spec(_spec)  # the sample's model and data
_spec.loader.exec_module(digits_mlp)

FRONT = [prune_graph, specialize_shapes, prune_graph]
UNFUSED = tf.CompileOptions(passes=[])
FUSED = tf.CompileOptions(passes=["fuse"])
# fusion alone, and fusion after the other optimizations (a graph without tuple identities...)
PIPELINES = {
    "fuse-alone": (UNFUSED, FUSED),
    "all-optimizations": (tf.CompileOptions(disable=["fuse"]), tf.CompileOptions()),
}


# gcc at -O1 (conftest.quick_builds) for the tests that compare the fused kernels' bits with the
# unfused ops' on small models: ISO C without FMA contraction gives -O3's bits at -O1 at a third
# of the build time. At -O3 stay the digits MLP through the whole pipeline (what users build),
# the in-place accumulation (aliasing is what -O3 exploits) and the kernels split between threads.
quick_builds = pytest.mark.usefixtures("quick_builds")


def _feeds(feed_dict):
    return [
        FeedSpec((t.op.name, t.value_index), t.dtype, np.shape(v)) for t, v in feed_dict.items()
    ]


def _program(fetches, feed_dict=None, targets=(), passes=(fuse_elementwise,)):
    """The program graph of `fetches` after the front passes and `passes`, checked."""
    graph = make_program_graph(
        tf.get_default_graph(),
        [(t.op.name, t.value_index) for t in fetches],
        [op.name for op in targets],
        _feeds(feed_dict or {}),
    )
    return run_passes(graph, FRONT + list(passes), verify=True)


def _both(fetches, feed_dict=None, pipelines="fuse-alone"):
    """The fetched values compiled without and with fusion (each in its own session)."""
    results = []
    for options in PIPELINES[pipelines]:
        with tf.Session(config=options) as sess:
            results.append(sess.run(fetches, feed_dict))
    return results


def _trained_both(train, feed_dict, init, steps, watch=(), pipelines="fuse-alone"):
    """Without and with fusion (each in its own session): the `watch` tensors at each of `steps`
    runs of `train` (the step's own program computes them), then every variable's value read
    from the session's state (a fetch of the variables would be one more program to compile)."""
    results = []
    for options in PIPELINES[pipelines]:
        with tf.Session(config=options) as sess:
            sess.run(init)
            watched = [sess.run([train, *watch], feed_dict)[1:] for _ in range(steps)]
            variables = [sess.read_variable(v.op.name) for v in tf.global_variables()]
        results.append([value for step in watched for value in step] + variables)
    return results


def _assert_identical(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        assert np.asarray(x).dtype == np.asarray(y).dtype, i
        np.testing.assert_array_equal(x, y, err_msg=f"fetch {i}")


def _assert_same_bits_unfused_and_at_1_2_3_threads(train, feed):
    """The variables after three training steps: the fused kernels at 1, 2 and 3 threads give
    the bits of the unfused ops."""
    init = tf.global_variables_initializer()
    results = []
    for options, threads in ((UNFUSED, 1), (FUSED, 1), (FUSED, 2), (FUSED, 3)):
        options = tf.ConfigProto(intra_op_parallelism_threads=threads, compile_options=options)
        with tf.Session(config=options) as sess:
            sess.run(init)
            for _ in range(3):
                sess.run(train, feed)
            results.append([sess.read_variable(v.op.name) for v in tf.global_variables()])
    for other in results[1:]:
        _assert_identical(results[0], other)


def _source(fetches, feed_dict):
    with tf.Session(config=FUSED) as sess:
        return sess.source(fetches, feed_dict)


def _interpret(fetches, feed_dict, passes):
    """Values from the ops' NumPy references on the program after `passes` (the Fusion op's
    reference when "fuse" is among them)."""
    graph = _program(fetches, feed_dict, passes=list(passes) + [schedule_graph])
    return evaluate(graph, list(feed_dict.values()), InterpState())


# -- fused loops, in the generated code -----------------------------------------------------------
def test_what_reads_a_reduction_runs_in_a_loop_over_the_kept_dim():
    x = tf.placeholder(tf.float32, [6, 5], name="x")
    p = tf.multiply(x, x, name="p")
    s = tf.reduce_sum(p, axis=0, name="s")
    t = tf.reduce_max(p, axis=0, name="t")  # the same reduced dims: the same loop
    after = tf.sqrt(s + t, name="after")  # on reduced values: a loop over the kept dim
    m = tf.reduce_mean(p, axis=1, name="m")  # other dims: another kernel
    source = _source([after, m], {x: np.ones((6, 5), np.float32)})
    assert source.count("for (int64_t e0 = 0; e0 < 5; ++e0)") == 1  # the loop after


def test_matmul_bias_add_and_activation_are_one_kernel():
    x = tf.placeholder(tf.float32, [7, 5], name="x")
    w = tf.constant(np.ones((5, 3), np.float32), name="w")
    b = tf.constant(np.ones(3, np.float32), name="b")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w, name="mm"), b, name="ba"), name="h")
    g = _program([h], {x: np.ones((7, 5), np.float32)})
    kernels = lower_program(run_passes(g, [schedule_graph, plan_memory])).steps
    assert sum(len(s.kernels) for s in kernels) == 1


def test_a_product_added_to_a_whole_tensor_accumulates_into_it_in_place():
    """acc + matmul(a, b) is one GEMM with beta = 1 into the sum's buffer: a loop's gradient
    accumulator is updated where it lives (no second buffer, no pass over a separate product);
    an addend that stays alive (a feed) is copied into the output first."""
    a = tf.placeholder(tf.float32, [6, 5], name="a")
    b = tf.placeholder(tf.float32, [5, 4], name="b")
    c = tf.placeholder(tf.float32, [6, 4], name="c")

    def body(i, acc):
        scaled = a * tf.cast(i + 1, tf.float32)  # a different product every iteration
        return i + 1, tf.add(acc, tf.matmul(scaled, b), name="accumulate")

    total = tf.while_loop(lambda i, acc: i < 3, body, (0, c), name="loop")[1]
    once = tf.add(c, tf.matmul(a, b), name="once")
    feeds = {
        a: np.linspace(-1, 1, 30, dtype=np.float32).reshape(6, 5),
        b: np.linspace(0, 2, 20, dtype=np.float32).reshape(5, 4),
        c: np.arange(24, dtype=np.float32).reshape(6, 4),
    }
    g = _program([total, once], feeds, passes=list(OPTIMIZATIONS) + [schedule_graph, plan_memory])
    body_graph = g.node("loop")["attrs"]["body"]
    (fused,) = [n for n in body_graph.nx if n.startswith("loop/accumulate")]
    assert body_graph.node(fused)["attrs"]["accumulate"] is not None
    assert body_graph.graph_attrs["carried"] == ["direct", "direct"]
    source = _source([total, once], feeds)
    assert source.count("1.0f, 1.0f, NULL, 0);") == 2 and "if (y0 != x" in source
    with tf.Session() as sess:
        got_total, got_once = sess.run([total, once], feeds)
    av, bv, cv = (feeds[t].astype(np.float64) for t in (a, b, c))
    np.testing.assert_allclose(got_total, cv + 6 * av @ bv, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(got_once, cv + av @ bv, rtol=1e-6, atol=1e-6)


# -- the same numbers ----------------------------------------------------------------------------
@quick_builds
def test_an_assignment_of_an_element_wise_value_gives_the_same_bits():
    x = tf.placeholder(tf.float32, [5], name="x")
    v = tf.Variable(tf.ones([5]), name="v")
    step = tf.assign(v, tf.sqrt(v.value() * x + 1.0, name="value"), name="step")
    feed = {x: np.arange(5, dtype=np.float32)}
    _assert_identical(*_trained_both(step.op, feed, v.initializer, steps=3))


@quick_builds
def test_an_update_reading_its_variable_element_by_element_gives_the_same_bits():
    x = tf.placeholder(tf.float32, [8, 4], name="x")
    w = tf.Variable(np.arange(12.0, dtype=np.float32).reshape(4, 3), name="w")
    loss = tf.reduce_sum(tf.matmul(x, w)) + 0.1 * tf.nn.l2_loss(w)  # the gradient reads w
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.arange(32, dtype=np.float32).reshape(8, 4) / 10}
    init = tf.global_variables_initializer()
    _assert_identical(*_trained_both(train, feed, init, steps=3, watch=[loss]))


@quick_builds
def test_an_update_whose_loop_reads_its_variable_elsewhere_gives_the_same_bits():
    x = tf.placeholder(tf.float32, [3, 3], name="x")
    w = tf.Variable(np.arange(9.0, dtype=np.float32).reshape(3, 3) / 10, name="w")
    step = tf.nn.relu(tf.matmul(x, w, name="mm"), name="step")  # a GEMM row reads all of w
    train = training_ops.apply_gradient_descent(w, 0.5, step, name="sgd")
    feed = {x: np.eye(3, dtype=np.float32)[::-1]}
    _assert_identical(*_trained_both(train, feed, w.initializer, steps=3))


@quick_builds
def test_elementwise_chains_with_broadcasting_give_the_same_bits():
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [5, 1, 4], name="x")
    y = tf.placeholder(tf.float32, [3, 1], name="y")
    n = tf.placeholder(tf.int32, [6], name="n")
    z = tf.constant(rng.normal(size=4).astype(np.float32))
    a = x * y + z
    b = tf.nn.relu(a) - tf.sigmoid(a) * 0.5
    c = tf.where(b > 0, tf.exp(-b), tf.square(b))
    fetches = [
        c,
        tf.reduce_sum(c, axis=[0, 2]),  # reduced, kept, reduced
        tf.reduce_mean(tf.tanh(c), axis=2),  # a reduced suffix: a double accumulator
        tf.reduce_max(b * 2.0, axis=0),  # no suffix: accumulated in the output
        tf.reduce_sum(a * a),  # everything
        tf.tile(tf.expand_dims(z, 0), [6, 1]) * 2.0 + tf.zeros_like(z),
        tf.cast(tf.logical_and(b > 0, c < 1.0), tf.float32) + tf.ones_like(b),
        tf.abs(n - 4) * n + tf.maximum(n, 2),
        tf.cast(tf.cast(n, tf.float64) * 0.75, tf.int64),
        tf.add_n([x * 2.0, x, x + 1.0]),
    ]
    feed = {
        x: rng.normal(size=(5, 1, 4)).astype(np.float32),
        y: rng.normal(size=(3, 1)).astype(np.float32),
        n: np.arange(-3, 3, dtype=np.int32),
    }
    unfused_kernels = _kernel_count(fetches, feed, [], FRONT + [schedule_graph, plan_memory])
    fused_kernels = _kernel_count(
        fetches, feed, [], FRONT + [fuse_elementwise, schedule_graph, plan_memory]
    )
    assert (unfused_kernels, fused_kernels) == (39, 8)
    unfused, fused = _both(fetches, feed)
    _assert_identical(unfused, fused)
    # the Fusion op's NumPy reference agrees with the ops' own
    _assert_identical(_interpret(fetches, feed, []), _interpret(fetches, feed, [fuse_elementwise]))
    for got, want in zip(fused, _interpret(fetches, feed, [])):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@quick_builds
def test_rows_of_a_few_channels_run_several_rows_per_loop_and_give_the_same_bits():
    # LeNet's BiasAdd + Relu over [N*H*W, 6]: 8 rows (48 values) per inner loop, the bias read
    # from a local row repeated 8 times; rows of 3 and 5 values: 16 rows per loop
    rng = np.random.default_rng(3)
    fetches, feed = [], {}
    for shape in [(2, 4, 5, 6), (48, 3), (32, 5)]:
        x = tf.placeholder(tf.float32, shape)
        b = tf.constant(rng.normal(size=shape[-1]).astype(np.float32))
        fetches.append(tf.nn.relu(tf.nn.bias_add(x, b)) * 3.0)
        feed[x] = rng.normal(size=shape).astype(np.float32)
    source = _source(fetches, feed)
    for rows, values in [(5, 48), (3, 48), (2, 80)]:
        assert f"< {rows}; ++" in source and f"< {values}; ++" in source
    unfused, fused = _both(fetches, feed)
    _assert_identical(unfused, fused)
    for got, want in zip(fused, _interpret(fetches, feed, [])):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@quick_builds
def test_softmax_cross_entropy_forward_and_backward_give_the_same_bits():
    rng = np.random.default_rng(1)
    logits = tf.placeholder(tf.float32, [16, 10], name="logits")
    labels = tf.placeholder(tf.float32, [16, 10], name="labels")
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    dlogits, dlabels = tf.gradients(loss, [logits, labels])
    feed = {
        logits: rng.normal(size=(16, 10)).astype(np.float32) * 3,
        labels: rng.dirichlet(np.ones(10), size=16).astype(np.float32),
    }
    fetches = [loss, dlogits, dlabels]
    unfused, fused = _both(fetches, feed)
    _assert_identical(unfused, fused)
    want = _interpret(fetches, feed, [])
    for got, ref in zip(fused, want):
        np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-7)


def _mlp(optimizer, clip=False):
    tf.set_random_seed(5)
    x = tf.placeholder(tf.float32, [32, 12], name="x")
    y = tf.placeholder(tf.float32, [32, 3], name="y")
    h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="h1")
    h = tf.layers.dense(h, 8, activation=tf.tanh, name="h2")
    out = tf.layers.dense(h, 3, activation=tf.sigmoid, name="out")
    loss = tf.reduce_mean(tf.squared_difference(out, y))
    grads = optimizer.compute_gradients(loss)
    if clip:
        grads = [(tf.clip_by_value(g, -0.05, 0.05), v) for g, v in grads]
    train = optimizer.apply_gradients(grads)
    rng = np.random.default_rng(2)
    feed = {
        x: rng.normal(size=(32, 12)).astype(np.float32),
        y: rng.uniform(size=(32, 3)).astype(np.float32),
    }
    return x, loss, train, feed


@quick_builds
@pytest.mark.parametrize("pipelines", PIPELINES)
@pytest.mark.parametrize(
    "optimizer, clip",
    [
        (lambda: tf.train.AdamOptimizer(0.01), False),
        (lambda: tf.train.MomentumOptimizer(0.1, 0.9), True),
    ],
    ids=["adam", "momentum-clipped"],
)
def test_an_mlp_training_step_gives_the_same_bits(optimizer, clip, pipelines):
    x, loss, train, feed = _mlp(optimizer(), clip)
    init = tf.global_variables_initializer()
    unfused, fused = _trained_both(train, feed, init, 5, watch=[loss], pipelines=pipelines)
    _assert_identical(unfused, fused)


@quick_builds
@pytest.mark.parametrize(
    "optimizer",
    [lambda: tf.train.GradientDescentOptimizer(0.1), lambda: tf.train.AdamOptimizer(0.01)],
    ids=["sgd", "adam"],
)
def test_linear_layers_without_activations_train_to_the_same_bits(optimizer):
    # 20-16-16-3, no nonlinearity: the middle layer's input gradient (a product the next
    # products read) and its bias gradient (a sum of its rows) form one group; the group once
    # exported only one row of the product, and lowering the readers failed (issue 19)
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [8, 20], name="x")
    y = tf.placeholder(tf.float32, [8, 3], name="y")
    h = tf.layers.dense(tf.layers.dense(x, 16, name="h1"), 16, name="h2")
    loss = tf.reduce_mean(tf.square(tf.layers.dense(h, 3, name="out") - y))
    train = optimizer().minimize(loss)
    rng = np.random.default_rng(4)
    feed = {x: rng.normal(size=(8, 20)).astype(np.float32), y: rng.normal(size=(8, 3))}
    init = tf.global_variables_initializer()
    for pipelines in PIPELINES:
        unfused, fused = _trained_both(train, feed, init, 3, watch=[loss], pipelines=pipelines)
        _assert_identical(unfused, fused)


def _digits(batch=64):
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 64], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    loss, train, accuracy = digits_mlp.build_model(x, y, 0.002)
    (images, labels), _ = digits_mlp.load_digits()
    return x, y, loss, train, accuracy, {x: images[:batch], y: labels[:batch]}


def _kernel_count(fetches, feed, targets, passes):
    graph = make_program_graph(
        tf.get_default_graph(),
        [(t.op.name, t.value_index) for t in fetches],
        [op.name for op in targets],
        _feeds(feed),
    )
    program = lower_program(run_passes(graph, passes, verify=True))
    return sum(len(step.kernels) for step in program.steps)


def test_the_digits_training_step_runs_as_at_most_half_the_kernels():
    x, y, loss, train, _, feed = _digits()
    with_fuse = pipeline()
    without = pipeline([pass_name(p) for p in OPTIMIZATIONS if p is not fuse_elementwise])
    assert fuse_elementwise in with_fuse and fuse_elementwise not in without
    before = _kernel_count([loss], feed, [train], without)
    after = _kernel_count([loss], feed, [train], with_fuse)
    print(f"digits MLP training step: {before} kernels without fusion, {after} with")
    assert 2 * after <= before


@pytest.mark.parametrize("pipelines", PIPELINES)
def test_the_digits_mlp_trains_to_the_same_bits(pipelines, request):
    if pipelines == "fuse-alone":  # the whole pipeline, below, is built as users build it
        request.getfixturevalue("quick_builds")
    x, y, loss, train, accuracy, feed = _digits()
    init = tf.global_variables_initializer()  # the variables: with Adam's slots and beta powers
    watch = [loss, accuracy]
    unfused, fused = _trained_both(train, feed, init, 5, watch, pipelines=pipelines)
    _assert_identical(unfused, fused)


SANITIZED_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tfc as tf

    sys.path.insert(0, {samples!r})
    import digits_mlp

    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 64], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    loss, train, accuracy = digits_mlp.build_model(x, y, 0.002)
    clipped = tf.clip_by_value(loss * 2.0, 0.0, 5.0) + tf.reduce_sum(tf.abs(x), axis=0)
    (images, labels), _ = digits_mlp.load_digits()
    feed = {{x: images[:32], y: labels[:32]}}
    # one program per session besides the initializer: the step fetches the values, and the
    # variables are read from the state (each sanitized build takes seconds)
    fetches = [train, loss, accuracy, clipped]
    results = []
    for options in (tf.CompileOptions(disable=["fuse"]), tf.CompileOptions()):
        with tf.Session(config=options) as sess:
            sess.run(tf.global_variables_initializer())
            steps = [sess.run(fetches, feed)[1:] for _ in range(3)]
            variables = [sess.read_variable(v.op.name) for v in tf.trainable_variables()]
            results.append([value for step in steps for value in step] + variables)
            source = sess.source(fetches, feed)
    # _cols_at: hidden1's bias gradient, 128 columns (one part on one thread)
    for fused in ("(FusedApplyAdam)", "(FusedAssign)", "tfc_gemm_f32_ex(", "e0 < 10; ++e0",
                  "_cols_at("):
        assert fused in source, fused
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    print("SANITIZED-OK")
    """
)


def test_fused_kernels_are_clean_under_asan_and_ubsan(tmp_path, sanitized_cache):
    env = sanitizer_env(sanitized_cache)
    script = tmp_path / "fused.py"
    script.write_text(SANITIZED_SCRIPT.format(samples=str(REPO / "samples")))
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0 and "SANITIZED-OK" in proc.stdout, proc.stderr[-4000:]
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_an_update_after_a_product_splits_its_rows_between_threads_with_the_same_bits():
    """A weight gradient's Adam update of fewer than 128 columns (wider ones split by rows,
    each part computing its own GEMM blocks: the next test) runs block by block after its
    GEMM, each block's rows split into parts
    (one per thread, at most 2 here: 144 x 120 values a block, 700 rows = four whole blocks
    and one of 124): the variables after three steps have the same bits at 1, 2 and 3
    threads, and as the unfused ops compute them."""
    tf.set_random_seed(9)
    x = tf.placeholder(tf.float32, [16, 700], name="x")
    y = tf.placeholder(tf.float32, [16, 120], name="y")
    out = tf.layers.dense(x, 120, name="wide")
    loss = tf.reduce_mean(tf.squared_difference(out, y))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    rng = np.random.default_rng(4)
    feed = {
        x: rng.normal(size=(16, 700)).astype(np.float32),
        y: rng.normal(size=(16, 120)).astype(np.float32),
    }
    assert "_rows_at(" in _source([train], feed)
    _assert_same_bits_unfused_and_at_1_2_3_threads(train, feed)


def test_bias_gradients_split_columns_and_weight_updates_rows_with_the_same_bits():
    """The hidden layer's bias gradient (dX = dY W^T, ReluGrad, the column Sum and its Adam
    update: one kernel) runs each part of its columns on its own thread, GEMM blocks
    included: 96 x 300 values make 3 parts at 3 threads (64, 128 and 108 columns, the last
    one ending in a partial panel); so does the output layer's (96 x 200). The hidden kernel's
    update (its gradient's GEMM X^T dY and Adam, 200 x 300) splits by rows instead, each part
    computing its rows' GEMM in blocks of its own: 144-row blocks on one thread (one whole,
    one of 56), parts of 102 and 98 rows in blocks of 72 at 2 threads, three of 66, 66 and 68
    rows in blocks of 48 at 3 (a partial tile at the end, the scratch's last row copied out
    by the last part). Each column's sum keeps its order over the rows: the variables after
    three steps have the same bits at 1, 2 and 3 threads, and as the unfused ops compute
    them."""
    tf.set_random_seed(11)
    x = tf.placeholder(tf.float32, [96, 200], name="x")
    y = tf.placeholder(tf.float32, [96, 200], name="y")
    h = tf.layers.dense(x, 300, activation=tf.nn.relu, name="hidden")
    out = tf.layers.dense(h, 200, name="out")
    loss = tf.reduce_mean(tf.squared_difference(out, y))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    rng = np.random.default_rng(6)
    feed = {
        x: rng.normal(size=(96, 200)).astype(np.float32),
        y: rng.normal(size=(96, 200)).astype(np.float32),
    }
    source = _source([train], feed)
    assert source.count("_cols_at(c0, c1 < 300 ? c1 : 300") == 1  # hidden's bias
    assert source.count("_cols_at(c0, c1 < 200 ? c1 : 200") == 1  # out's bias
    assert source.count("_row_parts_at(begin, end < 200 ? end : 200") == 1  # hidden's kernel
    _assert_same_bits_unfused_and_at_1_2_3_threads(train, feed)
