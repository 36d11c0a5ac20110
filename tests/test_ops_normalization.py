"""Moments and normalization (tf.nn.moments, batch_normalization, fused_batch_norm, ...):
compiled vs reference vs NumPy formulas in float64; gradients against finite differences."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(8)
F = ["float32", "float64"]


def np_moments(x, axes, keep=False):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=tuple(axes), keepdims=keep)
    var = x64.var(axis=tuple(axes), keepdims=keep)
    return mean.astype(x.dtype), var.astype(x.dtype)


def np_batch_norm(x, mean, var, offset, scale, eps):
    x64 = x.astype(np.float64)
    return ((x64 - mean) / np.sqrt(var + eps) * scale + offset).astype(x.dtype)


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in F:
            x = (RNG.standard_normal((4, 3, 5, 2)) * 2 + 1).astype(dtype)
            for axes, keep in [([0, 1, 2], False), ([0], True), ([1, 3], False), ([-1], True)]:
                mean, var = tf.nn.moments(b.feed(x), axes, keep_dims=keep)
                want_m, want_v = np_moments(x, [a % 4 for a in axes], keep)
                tag = f"{dtype}-{axes}-{keep}"
                b.add(f"moments-mean-{tag}", mean, want_m)
                b.add(f"moments-variance-{tag}", var, want_v)
            w = RNG.uniform(0.5, 2.0, (4, 1, 5, 1)).astype(dtype)
            mean, var = tf.nn.weighted_moments(b.feed(x), [0, 2], w, keepdims=True)
            wb = np.broadcast_to(w, x.shape).astype(np.float64)
            want_m = (wb * x).sum((0, 2), keepdims=True) / wb.sum((0, 2), keepdims=True)
            want_v = (wb * (x - want_m) ** 2).sum((0, 2), keepdims=True) / wb.sum(
                (0, 2), keepdims=True
            )
            b.add(f"weighted_moments-mean-{dtype}", mean, want_m.astype(dtype))
            b.add(f"weighted_moments-variance-{dtype}", var, want_v.astype(dtype))
            shift = np.asarray(0.75, dtype)
            for fed, tag in [(b.feed(x), "static"), (b.feed(x, [None, 3, None, 2]), "dynamic")]:
                counts, m_ss, v_ss, _ = tf.nn.sufficient_statistics(fed, [0, 2], shift=shift)
                b.add(f"ss-counts-{dtype}-{tag}", counts, np.asarray(20, dtype))
                b.add(f"ss-mean-{dtype}-{tag}", m_ss, (x - shift).sum((0, 2)).astype(dtype))
                want = ((x.astype(np.float64) - shift) ** 2).sum((0, 2)).astype(dtype)
                b.add(
                    f"ss-var-{dtype}-{tag}", v_ss, want, rtol=1e-5 if dtype == "float32" else None
                )
                mean, var = tf.nn.normalize_moments(counts, m_ss, v_ss, shift)
                want_m, want_v = np_moments(x, [0, 2])
                tol = 1e-5 if dtype == "float32" else 1e-11
                b.add(f"normalize-mean-{dtype}-{tag}", mean, want_m, rtol=tol, atol=tol)
                b.add(f"normalize-var-{dtype}-{tag}", var, want_v, rtol=tol, atol=tol)

            scale = RNG.uniform(0.5, 1.5, 2).astype(dtype)
            offset = RNG.standard_normal(2).astype(dtype)
            mean, var = RNG.standard_normal(2).astype(dtype), RNG.uniform(0.5, 2, 2).astype(dtype)
            y = tf.nn.batch_normalization(b.feed(x), mean, var, offset, scale, 1e-3)
            b.add(f"batch_norm-{dtype}", y, np_batch_norm(x, mean, var, offset, scale, 1e-3))
            y = tf.nn.batch_normalization(x, mean, var, None, None, 0.1)
            b.add(f"batch_norm-no-affine-{dtype}", y, np_batch_norm(x, mean, var, 0, 1, 0.1))

            bm, bv = np_moments(x, [0, 1, 2])
            n = 4 * 3 * 5
            y, m, v = tf.nn.fused_batch_norm(b.feed(x), scale, offset, epsilon=1e-3)
            b.add(f"fused-train-y-{dtype}", y, np_batch_norm(x, bm, bv, offset, scale, 1e-3))
            b.add(f"fused-train-mean-{dtype}", m, bm)
            b.add(
                f"fused-train-var-{dtype}", v, (bv.astype(np.float64) * n / (n - 1)).astype(dtype)
            )
            y, m, v = tf.nn.fused_batch_norm(
                x, scale, offset, mean, var, epsilon=1e-6, exponential_avg_factor=0.25
            )
            # epsilon is raised to cuDNN's minimum, 1.001e-5, as TF does
            b.add(f"fused-avg-y-{dtype}", y, np_batch_norm(x, bm, bv, offset, scale, 1.001e-5))
            b.add(
                f"fused-avg-mean-{dtype}",
                m,
                (0.75 * mean + 0.25 * bm.astype(np.float64)).astype(dtype),
            )
            unbiased = bv.astype(np.float64) * n / (n - 1)
            b.add(f"fused-avg-var-{dtype}", v, (0.75 * var + 0.25 * unbiased).astype(dtype))
            y, m, v = tf.nn.fused_batch_norm(
                b.feed(x), scale, offset, mean, var, epsilon=0.01, is_training=False
            )
            b.add(f"fused-infer-y-{dtype}", y, np_batch_norm(x, mean, var, offset, scale, 0.01))
            b.add(f"fused-infer-mean-{dtype}", m, mean)
            nchw = np.ascontiguousarray(np.transpose(x, [0, 3, 1, 2]))
            y, m, _ = tf.nn.fused_batch_norm(b.feed(nchw), scale, offset, data_format="NCHW")
            want = np_batch_norm(x, bm, bv, offset, scale, 1e-3).transpose([0, 3, 1, 2])
            b.add(f"fused-nchw-y-{dtype}", y, want)
            b.add(f"fused-nchw-mean-{dtype}", m, bm)

            v = RNG.standard_normal((3, 4)).astype(dtype)
            v[1] = 0
            norm = np.sqrt(np.maximum((v.astype(np.float64) ** 2).sum(1, keepdims=True), 1e-12))
            b.add(
                f"l2_normalize-{dtype}", tf.nn.l2_normalize(b.feed(v), 1), (v / norm).astype(dtype)
            )
            norm = np.sqrt((v.astype(np.float64) ** 2).sum())
            b.add(f"l2_normalize-all-{dtype}", tf.nn.l2_normalize(v), (v / norm).astype(dtype))
            norm = np.sqrt(np.maximum((v.astype(np.float64) ** 2).sum(0, keepdims=True), 0.5))
            b.add(
                f"l2_normalize-eps-dim-{dtype}",
                tf.nn.l2_normalize(v, dim=0, epsilon=0.5),
                (v / norm).astype(dtype),
            )
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_normalization(case):
    BATCH.check(case)


def _finite_difference(sess, loss, x, value, feed):
    grad = np.zeros_like(value)
    h = 1e-5
    for i in np.ndindex(value.shape):
        up, down = value.copy(), value.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (sess.run(loss, {**feed, x: up}) - sess.run(loss, {**feed, x: down})) / (2 * h)
    return grad


@pytest.mark.parametrize("training", [True, False])
def test_fused_batch_norm_gradients(training):
    """Through the batch's moments in training, through the given ones in inference."""
    x = tf.placeholder(tf.float64, [3, 2, 2, 2])
    scale = tf.placeholder(tf.float64, [2])
    offset = tf.placeholder(tf.float64, [2])
    stats = {} if training else {"mean": [0.3, -0.2], "variance": [1.5, 0.7]}
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, is_training=training, **stats)
    w = RNG.standard_normal((3, 2, 2, 2))
    loss = tf.reduce_sum(y * y * w)
    grads = tf.gradients(loss, [x, scale, offset])
    values = {
        x: RNG.standard_normal((3, 2, 2, 2)),
        scale: np.array([1.2, 0.8]),
        offset: np.array([0.1, -0.3]),
    }
    with tf.Session() as sess:
        got = sess.run(grads, values)
        for t, g in zip([x, scale, offset], got):
            want = _finite_difference(sess, loss, t, values[t], values)
            np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


def test_moments_are_built_as_tf1_builds_them():
    x = tf.placeholder(tf.float32, [None, 4])
    mean, var = tf.nn.moments(x, [0])
    assert mean.op.name == "moments/Squeeze" and var.op.name == "moments/Squeeze_1"
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("moments/mean").type == "Mean"
    assert graph.get_operation_by_name("moments/variance").type == "Mean"
    assert mean.shape.as_list() == [4]
    counts, m_ss, v_ss, shift = tf.nn.sufficient_statistics(x, [0])
    assert counts.op.type == "Prod" and shift is None  # the batch is unknown: counted at run time


def test_fused_batch_norm_argument_errors():
    x = np.zeros((2, 2, 2, 3), np.float32)
    s = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="must be None when is_training is True"):
        tf.nn.fused_batch_norm(x, s, s, mean=s, variance=s)
    with pytest.raises(ValueError, match="must be a Tensor when is_training is False"):
        tf.nn.fused_batch_norm(x, s, s, is_training=False)
    with pytest.raises(ValueError, match="input must be 4-dimensional"):
        tf.nn.fused_batch_norm(np.zeros((2, 3), np.float32), s, s)
    with pytest.raises(ValueError, match="data_format 'NHWC' or 'NCHW'"):
        tf.nn.fused_batch_norm(x, s, s, data_format="NDHWC")
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        tf.nn.l2_normalize(x, axis=1, dim=1)
