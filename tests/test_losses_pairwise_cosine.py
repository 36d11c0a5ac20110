"""tf.losses.cosine_distance and tf.losses.mean_pairwise_squared_error: against NumPy, their
gradients by finite differences, and, where TensorFlow is importable, against tf.compat.v1."""

import itertools

import numpy as np
import pytest

import tfc as tf

RNG = np.random.default_rng(21)
LABELS = RNG.standard_normal((3, 4, 2))
PREDICTIONS = RNG.standard_normal((3, 4, 2))
UNIT_L = LABELS / np.linalg.norm(LABELS, axis=2, keepdims=True)
UNIT_P = PREDICTIONS / np.linalg.norm(PREDICTIONS, axis=2, keepdims=True)
# per-example weights (a zero drops an example), and per-element weights with zeros
WEIGHTS = [1.0, np.array([[[2.0]], [[0.0]], [[0.5]]]), (RNG.random((3, 4, 2)) > 0.3) * 1.5]


def _losses(tf_mod, dtype):
    labels = tf_mod.constant(LABELS, dtype)
    predictions = tf_mod.constant(PREDICTIONS, dtype)
    out = []
    for w in WEIGHTS:
        w = tf_mod.constant(w, dtype) if isinstance(w, np.ndarray) else w
        out.append(tf_mod.losses.mean_pairwise_squared_error(labels, predictions, weights=w))
    unit_l, unit_p = tf_mod.constant(UNIT_L, dtype), tf_mod.constant(UNIT_P, dtype)
    out.append(tf_mod.losses.cosine_distance(unit_l, unit_p, axis=2))
    out.append(tf_mod.losses.cosine_distance(unit_l, unit_p, dim=2, weights=WEIGHTS[1]))
    out.append(
        tf_mod.losses.cosine_distance(
            unit_l, unit_p, axis=1, reduction=tf_mod.losses.Reduction.NONE
        )
    )
    return out


def _np_pairwise(weights):
    d = PREDICTIONS - LABELS
    w = np.broadcast_to(weights, d.shape)
    total = 0.0
    for b in range(d.shape[0]):
        flat, present = d[b].ravel(), w[b].ravel() != 0
        pairs = [
            (flat[i] - flat[j]) ** 2 for i, j in itertools.combinations(np.flatnonzero(present), 2)
        ]
        if pairs:  # each example's mean over its pairs, times the example's weight
            total += np.mean(pairs) * np.broadcast_to(weights, (d.shape[0], 1, 1))[b, 0, 0]
    return total


def test_losses_match_numpy():
    tf.reset_default_graph()
    with tf.Session() as sess:
        values = sess.run(_losses(tf, tf.float64))
    # the per-example weight is used as is; per-element weights only decide which count
    np.testing.assert_allclose(values[0], _np_pairwise(1.0), rtol=1e-10)
    np.testing.assert_allclose(values[1], _np_pairwise(WEIGHTS[1]), rtol=1e-10)
    cos = 1 - (UNIT_L * UNIT_P).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(values[3], cos.mean(), rtol=1e-10)
    w = np.broadcast_to(WEIGHTS[1], cos.shape)
    np.testing.assert_allclose(values[4], (cos * w).sum() / np.count_nonzero(w), rtol=1e-10)
    np.testing.assert_allclose(values[5], 1 - (UNIT_L * UNIT_P).sum(axis=1, keepdims=True))
    assert len(tf.get_collection(tf.GraphKeys.LOSSES)) == 6


def test_gradients_match_finite_differences():
    tf.reset_default_graph()
    p = tf.placeholder(tf.float64, [3, 4, 2])
    loss = tf.losses.mean_pairwise_squared_error(LABELS, p, weights=WEIGHTS[1])
    loss += tf.losses.cosine_distance(UNIT_L, p, axis=2)
    (grad,) = tf.gradients(loss, p)
    with tf.Session() as sess:
        g = sess.run(grad, {p: PREDICTIONS})
        eps, numeric = 1e-6, np.zeros_like(PREDICTIONS)
        for k in range(PREDICTIONS.size):
            step = np.zeros(PREDICTIONS.size)
            step[k] = eps
            up, down = (PREDICTIONS + s.reshape(PREDICTIONS.shape) for s in (step, -step))
            numeric.flat[k] = (sess.run(loss, {p: up}) - sess.run(loss, {p: down})) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_bad_arguments():
    with pytest.raises(ValueError, match="You must specify 'axis'"):
        tf.losses.cosine_distance(UNIT_L, UNIT_P)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        tf.losses.cosine_distance(UNIT_L, UNIT_P, axis=1, dim=1)


def test_match_tensorflow():
    real = pytest.importorskip("tensorflow")
    v1 = real.compat.v1
    v1.disable_eager_execution()
    with v1.Graph().as_default(), v1.Session() as sess:
        want = sess.run(_losses(v1, v1.float32))
    tf.reset_default_graph()
    with tf.Session() as sess:
        got = sess.run(_losses(tf, tf.float32))
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"loss {k}")
