"""LRN and LRNGrad: compiled C vs the NumPy reference vs definitional loops; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.ops.registry import apply_op

RNG = np.random.default_rng(7)


def norms(x, r, bias, alpha):
    """N[..., d] = bias + alpha * sum of x[..., j]^2 over |j - d| <= r, one channel at a time."""
    x = x.astype(np.float64)
    n = np.zeros(x.shape)
    c = x.shape[-1]
    for d in range(c):
        for j in range(max(0, d - r), min(c, d + r + 1)):
            n[..., d] += x[..., j] ** 2
    return bias + alpha * n


def lrn_np(x, r, bias, alpha, beta):
    return (x.astype(np.float64) / norms(x, r, bias, alpha) ** beta).astype(x.dtype)


def lrn_grad_np(dy, x, r, bias, alpha, beta):
    """d/dx of sum(dy * lrn(x)), term by term: dy_i N_i^-beta, and through every N_j whose
    window holds i: dy_j x_j (-beta) N_j^(-beta-1) alpha 2 x_i."""
    n = norms(x, r, bias, alpha)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    dx = dy64 * n**-beta
    c = x.shape[-1]
    for i in range(c):
        for j in range(max(0, i - r), min(c, i + r + 1)):
            dx[..., i] -= (
                dy64[..., j]
                * x64[..., j]
                * beta
                * n[..., j] ** (-beta - 1)
                * alpha
                * 2
                * x64[..., i]
            )
    return dx.astype(x.dtype)


# (shape, depth_radius, bias, alpha, beta)
CASES = {
    "defaults": ((2, 3, 4, 13), 5, 1.0, 1.0, 0.5),
    "alexnet": ((1, 5, 5, 32), 2, 2.0, 1e-4, 0.75),
    "radius-0-beta-1": ((2, 2, 3, 5), 0, 1.0, 0.5, 1.0),
    "radius-over-channels": ((1, 2, 3, 6), 9, 0.5, 0.3, 0.3),
    "one-channel": ((3, 2, 2, 1), 3, 1.5, 0.7, 0.6),
}


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            for k, (name, (shape, r, bias, alpha, beta)) in enumerate(CASES.items()):
                x = RNG.standard_normal(shape).astype(dtype)
                dy = RNG.standard_normal(shape).astype(dtype)
                spec = [None, *shape[1:]] if k % 2 else "same"
                xt = b.feed(x, spec)
                y = tf.nn.local_response_normalization(xt, r, bias, alpha, beta)
                b.add(f"lrn-{dtype}-{name}", y, lrn_np(x, r, bias, alpha, beta))
                (dx,) = tf.gradients(y, xt, grad_ys=b.feed(dy, spec))
                assert dx.op.type == "LRNGrad"
                want = lrn_grad_np(dy, x, r, bias, alpha, beta)
                b.add(f"lrn_grad-{dtype}-{name}", dx, want)
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_lrn(case):
    BATCH.check(case)


def test_names_shapes_and_errors():
    x = tf.placeholder(tf.float32, [None, 4, 4, 8])
    y = tf.nn.lrn(x, depth_radius=2, name="norm")
    assert y.op.type == "LRN" and y.op.name == "norm" and y.shape.as_list() == [None, 4, 4, 8]
    assert y.op.get_attr("depth_radius") == 2 and y.op.get_attr("beta") == 0.5
    assert tf.nn.lrn is tf.nn.local_response_normalization
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 3 for 'LRN"):
        tf.nn.lrn(tf.zeros([4, 4, 8]))
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.nn.lrn(tf.zeros([1, 4, 4, 8], tf.int32))
    with pytest.raises(ValueError, match="depth_radius = -1 must be non-negative"):
        tf.nn.lrn(x, depth_radius=-1)
    with pytest.raises(ValueError, match="must have the same shape"):
        apply_op(
            "LRNGrad", [tf.zeros([1, 2, 2, 3]), tf.zeros([1, 2, 2, 4]), tf.zeros([1, 2, 2, 3])]
        )
