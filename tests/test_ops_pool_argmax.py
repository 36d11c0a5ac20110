"""MaxPoolWithArgmax: compiled C vs the NumPy reference vs a definitional loop; its gradient.

The expectation scans each window's pixels in row-major order, as TF's CPU kernel does: the
first pixel is chosen first, a later one only when strictly greater.
"""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(99)


def out_and_pad(size, k, stride, padding):
    if padding == "VALID":
        return (size - k) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + k - size, 0) // 2


def argmax_np(x, k, strides, padding, with_batch):
    n, h, w, c = x.shape
    oh, top = out_and_pad(h, k[0], strides[0], padding)
    ow, left = out_and_pad(w, k[1], strides[1], padding)
    y, a = np.zeros((n, oh, ow, c), x.dtype), np.zeros((n, oh, ow, c), np.int64)
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        best = None
        for r in range(i * strides[0] - top, i * strides[0] - top + k[0]):
            for q in range(j * strides[1] - left, j * strides[1] - left + k[1]):
                if 0 <= r < h and 0 <= q < w and (best is None or x[b, r, q, ch] > y[b, i, j, ch]):
                    best = (r * w + q) * c + ch + (b * h * w * c if with_batch else 0)
                    y[b, i, j, ch] = x[b, r, q, ch]
        a[b, i, j, ch] = best
    return y, a


# (x shape, ksize, strides, padding)
CASES = {
    "k3x2-s2-same": ((2, 7, 6, 3), (3, 2), (2, 2), "SAME"),
    "k2-s2-valid": ((2, 6, 7, 2), (2, 2), (2, 2), "VALID"),
    "k3-s1-same-17-channels": ((1, 5, 6, 17), (3, 3), (1, 1), "SAME"),
    "k1": ((2, 3, 3, 4), (1, 1), (1, 1), "VALID"),
}


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            for k, (name, (xs, ks, st, pad)) in enumerate(CASES.items()):
                # few distinct values: ties, where the first pixel must win; and NaNs
                x = RNG.integers(-2, 3, xs).astype(dtype)
                x.flat[RNG.choice(x.size, 3, replace=False)] = np.nan
                xt = b.feed(x, [None, *xs[1:]] if k % 2 else "same")
                for with_batch, index in ((False, tf.int64), (True, tf.int32)):
                    y, a = tf.nn.max_pool_with_argmax(
                        xt, [1, *ks, 1], [1, *st, 1], pad, Targmax=index,
                        include_batch_in_index=with_batch,
                    )  # fmt: skip
                    want_y, want_a = argmax_np(x, ks, st, pad, with_batch)
                    tag = f"{dtype}-{name}-{'batch' if with_batch else 'image'}"
                    b.add(f"values-{tag}", y, want_y)
                    b.add(f"argmax-{tag}", a, want_a.astype(index.as_numpy_dtype))
        # the gradient goes to the chosen elements: dx[n].flat[argmax] += dy
        x = RNG.integers(-2, 3, (2, 6, 5, 3)).astype("float32")
        dy = RNG.standard_normal((2, 3, 3, 3)).astype("float32")
        xt = b.feed(x, [None, 6, 5, 3])
        y, _ = tf.nn.max_pool_with_argmax(xt, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        (dx,) = tf.gradients(y, xt, grad_ys=b.feed(dy))
        _, a = argmax_np(x, (2, 2), (2, 2), "SAME", True)
        want = np.zeros(x.size)
        np.add.at(want, a.ravel(), dy.ravel())
        b.add("gradient", dx, want.reshape(x.shape).astype("float32"))
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_max_pool_with_argmax(case):
    BATCH.check(case)


def test_shapes_names_and_errors():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    y, a = tf.nn.max_pool_with_argmax(x, 2, 2, "VALID", name="pool")
    assert y.op is a.op and y.op.name == "pool" and y.op.type == "MaxPoolWithArgmax"
    assert y.shape.as_list() == a.shape.as_list() == [None, 4, 4, 3] and a.dtype == tf.int64
    (g,) = tf.gradients(tf.reduce_sum(y), x)
    assert g.shape.as_list() == [None, 8, 8, 3]
    with pytest.raises(TypeError, match="'Targmax' has DataType float32 not in list"):
        tf.nn.max_pool_with_argmax(x, 2, 2, "VALID", Targmax=tf.float32)
    with pytest.raises(ValueError, match="Pooling is not yet supported on the batch dimension"):
        tf.nn.max_pool_with_argmax(x, [2, 2, 2, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="data_format must be 'NHWC'"):
        tf.nn.max_pool_with_argmax(x, 2, 2, "VALID", data_format="NCHW")
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 3"):
        tf.nn.max_pool_with_argmax(tf.zeros([4, 4, 3]), 2, 2, "VALID")
