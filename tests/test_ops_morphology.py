"""tf.nn.dilation2d and erosion2d: compiled C vs the NumPy references vs definitional loops,
and their gradients (to each window's maximum)."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(8)


def out_and_pad(size, k, stride, rate, padding):
    span = (k - 1) * rate + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def dilation_np(x, f, strides, rates, padding):
    """(values, {output element: the input element of its maximum})."""
    n, h, w, c = x.shape
    kh, kw, _ = f.shape
    oh, top = out_and_pad(h, kh, strides[0], rates[0], padding)
    ow, left = out_and_pad(w, kw, strides[1], rates[1], padding)
    y = np.full((n, oh, ow, c), -np.inf)
    source = {}
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        for a, d in np.ndindex(kh, kw):
            r, q = i * strides[0] + a * rates[0] - top, j * strides[1] + d * rates[1] - left
            if 0 <= r < h and 0 <= q < w and x[b, r, q, ch] + f[a, d, ch] > y[b, i, j, ch]:
                y[b, i, j, ch] = x[b, r, q, ch] + f[a, d, ch]
                source[(b, i, j, ch)] = (b, r, q, ch)
    return y.astype(x.dtype), source


# (x shape, filter shape, strides, rates, padding)
CASES = {
    "k3x2-same": ((2, 7, 6, 3), (3, 2, 3), (1, 1), (1, 1), "SAME"),
    "strided-rates-valid": ((2, 9, 8, 2), (2, 3, 2), (2, 1), (1, 2), "VALID"),
    "s2-same-rates": ((1, 8, 7, 2), (2, 2, 2), (2, 2), (2, 1), "SAME"),
}


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            for k, (name, (xs, fs, st, rt, pad)) in enumerate(CASES.items()):
                # distinct sums: one maximum per window, where all of the gradient goes
                x = (RNG.permutation(int(np.prod(xs))).reshape(xs) * 0.25).astype(dtype)
                f = (RNG.permutation(int(np.prod(fs))).reshape(fs) * 0.01).astype(dtype)
                spec = [None, *xs[1:]] if k % 2 else "same"
                xt = b.feed(x, spec)
                y = tf.nn.dilation2d(xt, f, [1, *st, 1], [1, *rt, 1], pad)
                want, source = dilation_np(x, f, st, rt, pad)
                b.add(f"dilation2d-{dtype}-{name}", y, want)
                dy = RNG.standard_normal(want.shape).astype(dtype)
                (dx,) = tf.gradients(y, xt, grad_ys=b.feed(dy, [None, *dy.shape[1:]]))
                grad = np.zeros(xs)
                for out, src in source.items():
                    grad[src] += dy[out]
                b.add(f"dilation2d-gradient-{dtype}-{name}", dx, grad.astype(dtype))
                # erosion: -dilation of -x by the flipped kernel
                e = tf.nn.erosion2d(xt, f, [1, *st, 1], [1, *rt, 1], pad)
                want, _ = dilation_np(-x, f[::-1, ::-1], st, rt, pad)
                b.add(f"erosion2d-{dtype}-{name}", e, -want)
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_morphology(case):
    BATCH.check(case)


def test_shapes_and_errors():
    x = tf.placeholder(tf.float32, [None, 9, 9, 3])
    y = tf.nn.dilation2d(x, tf.zeros([3, 3, 3]), [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    assert y.shape.as_list() == [None, 4, 4, 3]
    with pytest.raises(ValueError, match="same depth: 3 vs 2"):
        tf.nn.dilation2d(x, tf.zeros([3, 3, 2]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"strides must be \[1, s_height, s_width, 1\]"):
        tf.nn.dilation2d(x, tf.zeros([3, 3, 3]), [2, 1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="filter must be 3-D"):
        tf.nn.dilation2d(x, tf.zeros([3, 3, 3, 1]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
