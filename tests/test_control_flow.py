"""tf.cond, tf.case, tf.switch_case, tf.while_loop and tf.map_fn/scan/foldl/foldr: their values
against NumPy (compiled, and interpreted by the reference), their gradients against finite
differences and against the same computation unrolled, TF1's errors for bad input, and the
code they compile to (only the taken branch runs; a loop is a native loop)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from cuda_devices import DEVICES

import tfc as tf
from tfc.ir import errors
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(15)


def both(fetches, feed=None, config=None):
    """The fetches' values from a Session and from the interpreter, which must agree."""
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        compiled = sess.run(fetches, feed)
    interp = Interpreter()
    interp.run(tf.global_variables_initializer())
    interpreted = interp.run(fetches, feed)
    for c, i in zip(_flat(compiled), _flat(interpreted)):
        np.testing.assert_allclose(c, i, rtol=1e-6, atol=1e-6)
    return compiled


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flat(item)]
    return [value]


# -- tf.cond ------------------------------------------------------------------------------------
def test_cond_runs_the_taken_branch_only():
    x = tf.placeholder(tf.float32, [None], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    # the false branch gathers index 7 of a 3-vector: it fails if it runs
    y = tf.cond(p, lambda: x * 2.0 + 1.0, lambda: tf.gather(x, [7, 0, 1]), name="pick")
    xv = np.array([1.0, -2.0, 3.5], np.float32)
    np.testing.assert_allclose(both(y, {x: xv, p: True}), xv * 2 + 1)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="7 is not in") as info:
            sess.run(y, {x: xv, p: False})
        assert "pick/GatherV2" in str(info.value)
        source = sess.source(y, {x: xv, p: True})
    # one C if: the gather's kernel call is inside the else block
    body = source[source.index("pick (If)") :]
    then_at, else_at = body.index("if ("), body.index("} else {")
    assert then_at < else_at < body.index('"pick/GatherV2"')


def test_cond_structures_strict_and_operations():
    x = tf.placeholder(tf.float32, [2], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    Pair = collections.namedtuple("Pair", "a b")
    d = tf.cond(p, lambda: {"s": x + 1.0, "t": Pair(x, 2 * x)}, lambda: {"s": x, "t": Pair(-x, x)})
    single = tf.cond(p, lambda: [x * 3.0], lambda: [x])
    kept = tf.cond(p, lambda: [x * 3.0], lambda: [x], strict=True)
    ran = tf.cond(p, lambda: tf.no_op(), lambda: tf.group(tf.identity(x)))
    assert isinstance(d["t"], Pair) and isinstance(single, tf.Tensor) and isinstance(kept, list)
    xv = np.array([1.0, 2.0], np.float32)
    for pv in (True, False):
        got = both([d["s"], d["t"].a, d["t"].b, single, kept[0], ran], {x: xv, p: pv})
        want = [xv + 1, xv, 2 * xv] if pv else [xv, -xv, xv]
        want += [xv * 3 if pv else xv] * 2 + [pv]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)


def test_nested_conds_and_loops():
    x = tf.placeholder(tf.float32, [3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")

    def body(i, acc):  # a cond inside a loop, a loop inside that cond
        inner = tf.cond(
            tf.equal(i % 2, 0),
            lambda: tf.while_loop(lambda k, a: k < i, lambda k, a: (k + 1, a + x), (0, acc))[1],
            lambda: acc * 0.5,
        )
        return i + 1, inner

    _, out = tf.while_loop(lambda i, acc: i < n, body, (0, tf.zeros([3])))
    xv = np.array([1.0, 2.0, -1.0], np.float32)
    acc = np.zeros(3, np.float32)
    for i in range(5):
        acc = acc + i * xv if i % 2 == 0 else acc * 0.5
    np.testing.assert_allclose(both(out, {x: xv, n: 5}), acc, rtol=1e-6)


# -- tf.case, tf.switch_case ---------------------------------------------------------------------
def test_case_and_switch_case():
    k = tf.placeholder(tf.int32, [], name="k")
    x = tf.constant([1.0, 2.0])
    first = tf.case([(k < 2, lambda: x * 10.0), (k < 4, lambda: x * 20.0)], default=lambda: -x)
    exclusive = tf.case(
        [(tf.equal(k, 1), lambda: x + 1.0), (tf.equal(k, 2), lambda: x + 2.0)],
        default=lambda: x, exclusive=True,
    )  # fmt: skip
    no_default = tf.case([(tf.equal(k, 0), lambda: x), (tf.equal(k, 1), lambda: -x)])
    switch = tf.switch_case(k, [lambda: x * 0.0, lambda: x * 1.0, lambda: x * 2.0])
    keyed = tf.switch_case(k, {0: lambda: x, 3: lambda: -x}, default=lambda: x * 7.0)
    xv = np.array([1.0, 2.0], np.float32)
    expected = {  # first, exclusive, switch (out of range: the last branch), keyed, no_default
        0: [10 * xv, xv, 0 * xv, xv, xv],
        1: [10 * xv, xv + 1, xv, 7 * xv, -xv],
        3: [20 * xv, xv, 2 * xv, -xv, None],
        5: [-xv, xv, 2 * xv, 7 * xv, None],
    }
    with tf.Session() as sess:
        for kv, want in expected.items():
            got = sess.run([first, exclusive, switch, keyed], {k: kv})
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w)
            if want[4] is None:
                with pytest.raises(errors.InvalidArgumentError, match="None of conditions"):
                    sess.run(no_default, {k: kv})
            else:
                np.testing.assert_allclose(sess.run(no_default, {k: kv}), want[4])
    two_true = tf.case([(k > 0, lambda: x), (k > 1, lambda: -x)], default=lambda: x, exclusive=True)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="exclusive=True: more than 1"):
            sess.run(two_true, {k: 5})
        np.testing.assert_allclose(sess.run(two_true, {k: 1}), xv)


# -- tf.while_loop ------------------------------------------------------------------------------
def test_while_loop_values_structures_and_maximum_iterations():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    State = collections.namedtuple("State", "total count")

    def body(i, s):
        return i + 1, {"p": s["p"] * 2.0, "st": State(s["st"].total + x, s["st"].count + 1)}

    init = {"p": tf.ones_like(x), "st": State(tf.zeros_like(x), tf.constant(0))}
    i, s = tf.while_loop(lambda i, s: i < 4, body, (0, init))
    capped = tf.while_loop(lambda v: v < 100, lambda v: v + 1, [1], maximum_iterations=5)
    never = tf.while_loop(lambda v: v > 100, lambda v: v + 1.0, [tf.constant(3.0)])
    xv = RNG.normal(size=(3, 2)).astype(np.float32)
    got = both([i, s["p"], s["st"].total, s["st"].count, capped, never], {x: xv})
    assert got[0] == 4 and got[3] == 4 and got[4] == 6 and got[5] == 3.0  # TF1 stops at 5
    np.testing.assert_allclose(got[1], np.full_like(xv, 16.0))
    np.testing.assert_allclose(got[2], 4 * xv, rtol=1e-6)


def test_rnn_over_tensor_arrays_matches_unrolled_numpy_and_gradients():
    """A dynamic_rnn in miniature: inputs unstacked into a TensorArray read by closure, the
    cell's variables (made inside the body: they go to the outermost graph) read every step,
    outputs written to a TensorArray; values and gradients equal the unrolled graph's."""
    steps, batch, n_in, n_h = 5, 3, 4, 6
    x = tf.placeholder(tf.float32, [steps, None, n_in], name="x")

    def cell(inp, h):
        with tf.variable_scope("cell", reuse=tf.AUTO_REUSE):
            w = tf.get_variable(
                "w", [n_in + n_h, n_h], initializer=tf.glorot_uniform_initializer(seed=3)
            )
            b = tf.get_variable("b", [n_h], initializer=tf.constant_initializer(0.1))
        return tf.tanh(tf.matmul(tf.concat([inp, h], 1), w) + b)

    inputs = tf.TensorArray(tf.float32, size=steps).unstack(x)
    outputs = tf.TensorArray(tf.float32, size=steps)

    def body(t, h, out):
        h = cell(inputs.read(t), h)
        return t + 1, h, out.write(t, h)

    h0 = tf.zeros([tf.shape(x)[1], n_h])
    _, h_last, out = tf.while_loop(lambda t, h, o: t < steps, body, (0, h0, outputs))
    stacked = out.stack()
    # the same cell unrolled by Python
    h = h0
    unrolled = []
    for t in range(steps):
        h = cell(x[t], h)
        unrolled.append(h)
    unrolled = tf.stack(unrolled)
    assert len(tf.trainable_variables()) == 2  # made once, in the outermost graph
    loss = tf.reduce_sum(stacked * stacked) + tf.reduce_sum(h_last)
    loss_u = tf.reduce_sum(unrolled * unrolled) + tf.reduce_sum(h)
    params = tf.trainable_variables()
    grads = tf.gradients(loss, [x, *params])
    grads_u = tf.gradients(loss_u, [x, *params])
    xv = RNG.normal(size=(steps, batch, n_in)).astype(np.float32)
    got = both([stacked, unrolled, loss, loss_u, *grads, *grads_u], {x: xv})
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], got[3], rtol=1e-5)
    for g, gu in zip(got[4:7], got[7:]):
        np.testing.assert_allclose(g, gu, rtol=1e-4, atol=1e-5)


def _finite_difference(run, values, eps=1e-6):
    """d run(values) / d values[0] elementwise, central differences (float64)."""
    base = values[0]
    grad = np.zeros_like(base)
    for k in range(base.size):
        step = np.zeros(base.size)
        step[k] = eps
        up = run([base + step.reshape(base.shape), *values[1:]])
        down = run([base - step.reshape(base.shape), *values[1:]])
        grad.flat[k] = (up - down) / (2 * eps)
    return grad


def test_gradients_through_loops_and_branches_match_finite_differences():
    """float64: a loop whose body branches, a loop inside a loop, a captured weight whose
    gradient sums over the iterations; and back_prop=False gives none."""
    x = tf.placeholder(tf.float64, [3], name="x")
    w = tf.placeholder(tf.float64, [3], name="w")

    def outer(i, a):
        a = tf.cond(tf.reduce_sum(a) > 0, lambda: tf.sin(a) * w, lambda: a * a - w)
        _, a = tf.while_loop(lambda j, b: j < 2, lambda j, b: (j + 1, b * 0.5 + tf.tanh(b)), (0, a))
        return i + 1, a

    _, y = tf.while_loop(lambda i, a: i < 3, outer, (0, x))
    loss = tf.reduce_sum(y * tf.constant([0.3, -1.2, 0.7], tf.float64))
    gx, gw = tf.gradients(loss, [x, w])
    frozen = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w), (0, x), back_prop=False)
    assert tf.gradients(tf.reduce_sum(frozen[1]), [x, w]) == [None, None]
    xv, wv = np.array([0.4, -0.3, 0.9]), np.array([1.1, 0.6, -0.8])
    with tf.Session() as sess:
        got_x, got_w = sess.run([gx, gw], {x: xv, w: wv})

        def run(values):
            return sess.run(loss, {x: values[0], w: values[1]})

        np.testing.assert_allclose(got_x, _finite_difference(run, [xv, wv]), rtol=1e-6, atol=1e-9)
        fd_w = _finite_difference(lambda v: run([v[1], v[0]]), [wv, xv])
        np.testing.assert_allclose(got_w, fd_w, rtol=1e-6, atol=1e-9)
    interp = Interpreter().run([gx, gw], {x: xv, w: wv})
    np.testing.assert_allclose(interp[0], got_x, rtol=1e-12)


def test_gradient_of_cond_flows_through_the_taken_branch_only():
    x = tf.placeholder(tf.float32, [2], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: x * x, lambda: tf.constant([1.0, 1.0]))
    (g,) = tf.gradients(tf.reduce_sum(y), x)
    xv = np.array([1.5, -2.0], np.float32)
    np.testing.assert_allclose(both(g, {x: xv, p: True}), 2 * xv)
    np.testing.assert_allclose(both(g, {x: xv, p: False}), [0.0, 0.0])


def test_random_ops_in_a_body_draw_every_iteration_and_their_gradient_uses_the_draw():
    x = tf.placeholder(tf.float32, [4], name="x")
    draws = tf.TensorArray(tf.float32, size=3)

    def body(i, h, ds):
        u = tf.random_uniform([4], seed=7)
        keep = tf.cast(u < 0.5, tf.float32)
        return i + 1, h * keep + x, ds.write(i, u)

    _, h, ds = tf.while_loop(lambda i, h, ds: i < 3, body, (0, tf.zeros([4]), draws))
    (g,) = tf.gradients(tf.reduce_sum(h), x)
    xv = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    with tf.Session() as sess:
        u, gv = sess.run([ds.stack(), g], {x: xv})
        u2 = sess.run(ds.stack(), {x: xv})
    assert len({tuple(row) for row in u}) == 3  # a fresh draw in every iteration
    assert not np.array_equal(u, u2)  # and the stream goes on from run to run
    m = (u < 0.5).astype(np.float32)
    # h = ((0 m0 + x) m1 + x) m2 + x: dh/dx = m1 m2 + m2 + 1 (with that run's draws)
    np.testing.assert_allclose(gv, m[1] * m[2] + m[2] + 1)


def test_map_fn_scan_foldl_foldr_and_their_gradients():
    x = tf.placeholder(tf.float64, [4, 2], name="x")
    mapped = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
    pairs = tf.map_fn(lambda r: (r[0], r * 2.0), x, dtype=(tf.float64, tf.float64))
    cum = tf.scan(lambda a, r: a * 0.5 + r, x)
    rev = tf.scan(lambda a, r: a + r, x, initializer=tf.ones([2], tf.float64), reverse=True)
    left = tf.foldl(lambda a, r: a * 2.0 + r, x)
    right = tf.foldr(lambda a, r: a * 2.0 + r, x, initializer=tf.zeros([2], tf.float64))
    loss = tf.reduce_sum(mapped) + tf.reduce_sum(cum * cum) + tf.reduce_sum(right)
    (g,) = tf.gradients(loss, x)
    xv = RNG.normal(size=(4, 2))
    got = both([mapped, pairs[0], pairs[1], cum, rev, left, right, loss, g], {x: xv})
    np.testing.assert_allclose(got[0], (xv * xv).sum(1))
    np.testing.assert_allclose(got[1], xv[:, 0])
    np.testing.assert_allclose(got[2], xv * 2)
    a = xv[0]
    want_cum = [a]
    for r in xv[1:]:
        a = a * 0.5 + r
        want_cum.append(a)
    np.testing.assert_allclose(got[3], np.stack(want_cum))
    np.testing.assert_allclose(got[4], 1 + np.cumsum(xv[::-1], 0)[::-1])
    want_left = xv[0]
    for r in xv[1:]:
        want_left = want_left * 2 + r
    np.testing.assert_allclose(got[5], want_left)
    want_right = np.zeros(2)
    for r in xv[::-1]:
        want_right = want_right * 2 + r
    np.testing.assert_allclose(got[6], want_right)
    with tf.Session() as sess:
        fd = _finite_difference(lambda v: sess.run(loss, {x: v[0]}), [xv])
    np.testing.assert_allclose(got[8], fd, rtol=1e-6, atol=1e-9)


def test_the_loop_is_native_and_tensor_arrays_are_written_in_place():
    x = tf.placeholder(tf.float32, [8, 16], name="x")
    inputs = tf.TensorArray(tf.float32, size=8).unstack(x)
    out = tf.TensorArray(tf.float32, size=8)
    _, _, out = tf.while_loop(
        lambda t, h, o: t < 8,
        lambda t, h, o: (t + 1, h + inputs.read(t), o.write(t, h)),
        (0, tf.zeros([16]), out),
        name="loop",
    )
    y = out.stack()
    with tf.Session() as sess:
        source = sess.source(y, {x: np.zeros((8, 16), np.float32)})
        xv = RNG.normal(size=(8, 16)).astype(np.float32)
        np.testing.assert_allclose(sess.run(y, {x: xv}), np.cumsum(xv, 0) - xv, rtol=1e-5)
    loop = source[source.index("loop (While)") :]
    assert loop.index("for (;;) {") < loop.index('"loop/TensorArrayWrite/TensorArrayWriteV3"')
    # the write updates the loop's own buffer, h is added to in place: no copy per iteration
    inside = loop[loop.index("for (;;) {") : loop.index("++w")]
    assert "memcpy(" not in inside


# -- bad input ----------------------------------------------------------------------------------
def test_bad_predicates_and_branches_are_tf1_errors():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="must not be a Python bool"):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="does not match expected type of bool"):
        tf.cond(tf.constant(1), lambda: x, lambda: x)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.cond(tf.constant([True, False]), lambda: x, lambda: x)
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tf.cond(tf.constant(True), lambda: (x, x), lambda: x)
    with pytest.raises(ValueError, match="must have the same type"):
        tf.cond(tf.constant(True), lambda: x, lambda: tf.constant([1, 2]))
    with pytest.raises(TypeError, match="must be callable"):
        tf.cond(tf.constant(True), x, lambda: x)


def test_bad_loops_are_tf1_errors():
    v = tf.constant([1.0])
    with pytest.raises(ValueError, match=r"enters the loop with shape \(1,\), but has shape"):
        tf.while_loop(lambda a: tf.size(a) < 4, lambda a: tf.concat([a, a], 0), [v])
    with pytest.raises(ValueError, match="enters the loop with type float32, but has type int32"):
        tf.while_loop(lambda a: a[0] < 4, lambda a: tf.cast(a, tf.int32), [v])
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tf.while_loop(lambda a: a[0] < 4, lambda a: (a, a), [v])
    with pytest.raises(TypeError, match="LoopCond"):
        tf.while_loop(lambda a: a, lambda a: a + 1, [tf.constant(1)])
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.while_loop(lambda a: a > 0, lambda a: a + 1.0, [v])
    with pytest.raises(ValueError, match="not compatible with the initial shape"):
        tf.while_loop(lambda a: a[0] < 4, lambda a: a, [v], shape_invariants=[tf.TensorShape([2])])


def test_a_shape_invariant_that_lets_the_shape_grow_is_refused_when_compiling():
    v = tf.constant([1.0])
    grown = tf.while_loop(
        lambda a: tf.size(a) < 4, lambda a: tf.concat([a, a], 0), [v],
        shape_invariants=[tf.TensorShape([None])], name="grow",
    )  # fmt: skip
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="while_loop 'grow'.*static shape"):
            sess.run(grown)


def test_a_gradient_needs_a_bound_on_the_iterations():
    x = tf.placeholder(tf.float32, [], name="x")

    def square(i, v):
        return i + 1, v * v

    _, y = tf.while_loop(lambda i, v: v < 100.0, square, (0, x), name="grow")
    (g,) = tf.gradients(y, x)  # keeps v of every iteration: how many is known at run time only
    with tf.Session() as sess:
        assert sess.run(y, {x: 3.0}) == 6561.0  # the loop alone needs no bound
        with pytest.raises(ValueError, match="while_loop 'grow'.*maximum_iterations"):
            sess.run(g, {x: 3.0})
    _, y = tf.while_loop(lambda i, v: v < 100.0, square, (0, x), maximum_iterations=10)
    (g,) = tf.gradients(y, x)
    assert both(g, {x: 3.0}) == 8 * 3.0**7  # y = x ** 8


def test_assigning_a_variable_inside_a_branch_is_refused_clearly():
    v = tf.Variable(1.0, name="v")
    with pytest.raises(NotImplementedError, match="updates variable v"):
        tf.cond(tf.constant(True), lambda: tf.assign(v, 2.0), lambda: tf.identity(v))


# -- CUDA (the loop on the host, the kernels on the device) -------------------------------------
@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_loops_and_branches_on_the_gpu_equal_the_cpu(cuda_device, monkeypatch):
    x = tf.placeholder(tf.float32, [6, 4], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    h = tf.scan(lambda a, r: tf.tanh(a * 0.5 + r), x)
    y = tf.cond(p, lambda: h * 2.0, lambda: h - 1.0)
    (g,) = tf.gradients(tf.reduce_sum(y * y), x)
    xv = RNG.normal(size=(6, 4)).astype(np.float32)
    with tf.Session() as sess:
        cpu = [sess.run([y, g], {x: xv, p: pv}) for pv in (True, False)]
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    with tf.Session() as sess:
        gpu = [sess.run([y, g], {x: xv, p: pv}) for pv in (True, False)]
    for c, d in zip(cpu, gpu):
        for a, b in zip(c, d):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_tuple_gates_each_tensor_on_all_of_them():
    v = tf.Variable(1.0, name="v")
    bump = tf.assign_add(v, 1.0)
    a, b, none = tf.tuple([tf.constant(2.0), tf.constant(3.0), None], control_inputs=[bump])
    assert none is None and a.op.control_inputs[0].type == "NoOp"
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([a, b]) == [2.0, 3.0]
        assert sess.read_variable("v") == 2.0  # the control input ran before a and b


def test_dropout_in_a_branch_differentiates_with_the_mask_it_drew():
    """A random value of a branch is saved for the gradient (set by that branch, left unset
    by the other), never drawn again."""
    x = tf.placeholder(tf.float32, [6], name="x")
    training = tf.placeholder(tf.bool, [], name="training")
    y = tf.cond(training, lambda: tf.nn.dropout(x, 0.5, seed=3), lambda: x * 1.0)
    (g,) = tf.gradients(tf.reduce_sum(y * y), x)
    xv = np.arange(1, 7, dtype=np.float32)
    with tf.Session() as sess:
        yv, gv = sess.run([y, g], {x: xv, training: True})
        assert 0 < np.count_nonzero(yv) < 6
        np.testing.assert_allclose(gv, 4 * yv)  # d(y^2)/dx = 2 y * 2 where kept, 0 elsewhere
        np.testing.assert_allclose(sess.run(g, {x: xv, training: False}), 2 * xv)
