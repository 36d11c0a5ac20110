"""tfc's control flow against TensorFlow's own (tf.compat.v1, graph mode): the same cond, case,
while_loop, TensorArray, map_fn and scan graphs built by both, their values and gradients
compared. Skipped where TensorFlow is not installed (tfc never needs it)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tfc

tf_real = pytest.importorskip("tensorflow")
v1 = tf_real.compat.v1
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RNG = np.random.default_rng(2024)
X = RNG.normal(size=(5, 3, 4))
W = RNG.normal(size=(4 + 6, 6)) * 0.5


def build(tf, x, w, p):
    """The same model in TF1's API (tf is tensorflow.compat.v1 or tfc): an RNN over x's first
    dimension in a while_loop with TensorArrays, a cond on p, a case, a map_fn and a scan."""
    steps = 5
    inputs = tf.TensorArray(tf.float64, size=steps).unstack(x)
    outputs = tf.TensorArray(tf.float64, size=steps)

    def body(t, h, out):
        h = tf.tanh(tf.matmul(tf.concat([inputs.read(t), h], 1), w))
        return t + 1, h, out.write(t, h)

    _, h, out = tf.while_loop(
        lambda t, h, o: t < steps, body, (tf.constant(0), tf.zeros([3, 6], tf.float64), outputs)
    )
    seq = out.stack()
    picked = tf.cond(p, lambda: tf.reduce_sum(seq, 0) * 2.0, lambda: h - 1.0)
    ranked = tf.case(
        [(tf.reduce_sum(h) > 10.0, lambda: h * 3.0), (tf.reduce_sum(h) > -10.0, lambda: h + 1.0)],
        default=lambda: h,
    )
    mapped = tf.map_fn(lambda r: tf.reduce_sum(r * r), tf.reshape(seq, [15, 6]))
    scanned = tf.scan(lambda a, r: a * 0.5 + tf.sin(r), seq[:, 0, :])
    loss = (
        tf.reduce_sum(picked * picked) + tf.reduce_sum(ranked) + tf.reduce_sum(mapped)
        + tf.reduce_sum(scanned * scanned)
    )  # fmt: skip
    grads = tf.gradients(loss, [x, w])
    return [seq, picked, ranked, mapped, scanned, loss, *grads]


def run_tf(pv):
    v1.disable_eager_execution()
    v1.disable_control_flow_v2()
    graph = v1.Graph()
    with graph.as_default():
        x = v1.placeholder(v1.float64, [5, 3, 4])
        w = v1.placeholder(v1.float64, W.shape)
        p = v1.placeholder(v1.bool, [])
        fetches = build(v1, x, w, p)
        with v1.Session() as sess:
            return sess.run(fetches, {x: X, w: W, p: pv})


def run_tfc(pv):
    x = tfc.placeholder(tfc.float64, [5, 3, 4])
    w = tfc.placeholder(tfc.float64, W.shape)
    p = tfc.placeholder(tfc.bool, [])
    fetches = build(tfc, x, w, p)
    with tfc.Session() as sess:
        return sess.run(fetches, {x: X, w: W, p: pv})


@pytest.mark.parametrize("pv", [True, False])
def test_values_and_gradients_equal_tensorflow(pv):
    want, got = run_tf(pv), run_tfc(pv)
    names = ["seq", "cond", "case", "map_fn", "scan", "loss", "d/dx", "d/dw"]
    for name, g, w_ in zip(names, got, want):
        np.testing.assert_allclose(g, w_, rtol=1e-10, atol=1e-12, err_msg=name)


def test_errors_match_tensorflow():
    """The same bad loop fails with the same kind of error and message in both."""

    def messages(tf):
        found = []
        for bad in (
            lambda: tf.cond(True, lambda: 1.0, lambda: 2.0),
            lambda: tf.while_loop(
                lambda a: tf.size(a) < 4, lambda a: tf.concat([a, a], 0), [tf.constant([1.0])]
            ),
        ):
            try:
                bad()
            except (TypeError, ValueError) as e:
                found.append((type(e).__name__, str(e).splitlines()[0][:60]))
        return found

    v1.disable_eager_execution()
    v1.disable_control_flow_v2()
    with v1.Graph().as_default():
        want = messages(v1)
    assert messages(tfc) == want
