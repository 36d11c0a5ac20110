"""tf.norm, global_norm and the clip_by_*norm functions: compiled C vs the interpreter vs NumPy,
and the gradient-clipping idiom of TF1 training loops."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(11)


def build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            x = RNG.standard_normal((3, 4, 5)).astype(dtype)
            m = RNG.standard_normal((4, 6)).astype(dtype)
            t, tm = b.feed(x), b.feed(m, [None, 6])
            x64, m64 = x.astype(np.float64), m.astype(np.float64)

            def add(case, tensor, want, **tol):
                b.add(f"{case}-{dtype}", tensor, np.asarray(want).astype(dtype), **tol)  # noqa: B023

            add("norm", tf.norm(t), np.linalg.norm(x64.ravel()))
            add("norm-axis", tf.norm(t, axis=1), np.linalg.norm(x64, axis=1))
            add("norm-axis-keepdims", tf.norm(t, axis=-1, keepdims=True),
                np.linalg.norm(x64, axis=-1, keepdims=True))  # fmt: skip
            add("norm-1", tf.norm(t, ord=1, axis=0), np.abs(x64).sum(0))
            add("norm-inf", tf.norm(t, ord=np.inf, axis=2), np.abs(x64).max(2))
            add("norm-inf-all", tf.norm(t, ord=np.inf), np.abs(x64).max())
            add("norm-p3", tf.norm(t, ord=3, axis=1), np.linalg.norm(x64, 3, axis=1))
            add("norm-p0.5", tf.norm(tm, ord=0.5, axis=0), np.linalg.norm(m64, 0.5, axis=0),
                rtol=1e-4 if dtype == "float32" else 1e-11)  # fmt: skip
            add("norm-fro", tf.norm(tm, ord="fro", axis=[0, 1]), np.linalg.norm(m64, "fro"))
            add("norm-matrix-1", tf.norm(tm, ord=1, axis=[0, 1]), np.linalg.norm(m64, 1))
            add("norm-matrix-inf", tf.norm(tm, ord=np.inf, axis=(0, 1)),
                np.linalg.norm(m64, np.inf))  # fmt: skip
            add("norm-matrix-batched", tf.norm(t, ord=1, axis=[2, 1]),
                [np.linalg.norm(a.T, 1) for a in x64])  # fmt: skip
            add("reduce_euclidean_norm", tf.math.reduce_euclidean_norm(t, [0, 2]),
                np.sqrt((x64**2).sum((0, 2))))  # fmt: skip

            add("global_norm", tf.global_norm([t, None, tm]),
                np.sqrt((x64**2).sum() + (m64**2).sum()))  # fmt: skip
            norm = np.linalg.norm(x64)
            add("clip_by_norm-clips", tf.clip_by_norm(t, 2.0), x64 * 2.0 / norm)
            add("clip_by_norm-keeps", tf.clip_by_norm(t, norm * 2), x64)
            per_row = np.sqrt((x64**2).sum(2, keepdims=True))
            add("clip_by_norm-axes", tf.clip_by_norm(t, 1.5, axes=[2]),
                x64 * 1.5 / np.maximum(per_row, 1.5))  # fmt: skip
            add("clip_by_norm-zero", tf.clip_by_norm(tf.zeros([3], dtype), 1.0), np.zeros(3))
            both = np.sqrt((x64**2).sum() + (m64**2).sum())
            clipped, used = tf.clip_by_global_norm([t, tm], 3.0)
            add("clip_by_global_norm-0", clipped[0], x64 * 3.0 / both)
            add("clip_by_global_norm-1", clipped[1], m64 * 3.0 / both)
            add("clip_by_global_norm-norm", used, both)
            (kept,), _ = tf.clip_by_global_norm([tm], 100.0)
            add("clip_by_global_norm-under", kept, m64)
            (given,), _ = tf.clip_by_global_norm([tm], 1.0, use_norm=tf.constant(2.0, dtype))
            add("clip_by_global_norm-use_norm", given, m64 / 2.0)
            (nan,), _ = tf.clip_by_global_norm([tm], 1.0, use_norm=tf.constant(np.inf, dtype))
            add("clip_by_global_norm-inf-norm", nan, np.full_like(m64, np.nan))
        x = RNG.standard_normal((4, 5)).astype(np.float32)
        average = np.linalg.norm(x.astype(np.float64)) / x.size
        for clip in (0.01, 10.0):
            want = x * clip / max(average, clip)
            b.add(f"clip_by_average_norm-{clip}", tf.clip_by_average_norm(b.feed(x), clip),
                  want.astype(np.float32))  # fmt: skip
    return b


NORMS = build()


@pytest.mark.parametrize("case", NORMS.ids())
def test_norms(case):
    NORMS.check(case)


def test_norm_errors():
    x = tf.placeholder(tf.float32, [3, 4])
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm, got fro"):
        tf.norm(x, ord="fro")
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm, got -1"):
        tf.norm(x, ord=-1, axis=0)
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
        tf.norm(x, ord=3, axis=[0, 1])
    with pytest.raises(ValueError, match="tuple of 2 unique integers"):
        tf.norm(x, axis=[1, 1])
    with pytest.raises(NotImplementedError, match="largest singular value"):
        tf.norm(x, ord=2, axis=[0, 1])
    with pytest.raises(TypeError, match="sequence of tensors"):
        tf.global_norm(x)
    with pytest.raises(TypeError, match="sequence of tensors"):
        tf.clip_by_global_norm(x, 1.0)


def test_gradient_clipping_with_apply_gradients():
    """The TF1 idiom: gradients clipped by their global norm, then applied."""
    rng = np.random.default_rng(3)
    x_value = rng.standard_normal((8, 3)).astype(np.float32)
    w0 = rng.standard_normal((3, 2)).astype(np.float32) * 5
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(w0)
    b = tf.Variable(np.zeros(2, np.float32))
    loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b - 1.0))
    opt = tf.train.GradientDescentOptimizer(0.1)
    grads, variables = zip(*opt.compute_gradients(loss))
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    train = opt.apply_gradients(zip(clipped, variables))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _, norm_value = sess.run([train, norm], {x: x_value})
        w1, b1 = sess.run([w, b])
    # the same step in NumPy
    residual = x_value @ w0 - 1.0
    gw, gb = 2 * x_value.T @ residual, 2 * residual.sum(0)
    total = np.sqrt((gw.astype(np.float64) ** 2).sum() + (gb.astype(np.float64) ** 2).sum())
    assert norm_value == pytest.approx(total, rel=1e-5)
    assert total > 1.0  # the clip is active
    np.testing.assert_allclose(w1, w0 - 0.1 * gw / total, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, -0.1 * gb / total, rtol=1e-5, atol=1e-6)
