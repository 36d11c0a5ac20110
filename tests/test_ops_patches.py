"""ExtractImagePatches: compiled C vs the NumPy reference vs a definitional loop; its
gradient; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(404)


def out_and_pad(size, k, stride, rate, padding):
    span = (k - 1) * rate + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def patches_np(x, k, strides, rates, padding):
    n, h, w, c = x.shape
    oh, top = out_and_pad(h, k[0], strides[0], rates[0], padding)
    ow, left = out_and_pad(w, k[1], strides[1], rates[1], padding)
    y = np.zeros((n, oh, ow, k[0] * k[1] * c), x.dtype)
    for i, j, a, b in np.ndindex(oh, ow, k[0], k[1]):
        r, q = i * strides[0] + a * rates[0] - top, j * strides[1] + b * rates[1] - left
        if 0 <= r < h and 0 <= q < w:
            y[:, i, j, (a * k[1] + b) * c : (a * k[1] + b + 1) * c] = x[:, r, q]
    return y


# (x shape, ksizes, strides, rates, padding)
CASES = {
    "k3-same": ((2, 7, 6, 3), (3, 3), (1, 1), (1, 1), "SAME"),
    "k2x3-strided-rates-valid": ((2, 7, 6, 3), (2, 3), (2, 1), (2, 1), "VALID"),
    "k3x2-s3x2-rates-same": ((1, 8, 9, 2), (3, 2), (3, 2), (1, 2), "SAME"),
    "k1": ((2, 3, 4, 5), (1, 1), (2, 2), (1, 1), "VALID"),
    "kernel-over-input": ((1, 2, 3, 4), (4, 4), (1, 1), (1, 1), "SAME"),
}


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64", "int32"):
            for k, (name, (xs, ks, st, rt, pad)) in enumerate(CASES.items()):
                x = (RNG.standard_normal(xs) * 10).astype(dtype)
                spec = [None, *xs[1:]] if k % 2 else "same"
                xt = b.feed(x, spec)
                y = tf.extract_image_patches(xt, [1, *ks, 1], [1, *st, 1], [1, *rt, 1], pad)
                want = patches_np(x, ks, st, rt, pad)
                b.add(f"{dtype}-{name}", y, want)
                if dtype == "int32":
                    continue
                # the gradient: every patch value's dy goes back to the pixel it was copied from
                dy = RNG.standard_normal(want.shape).astype(dtype)
                (dx,) = tf.gradients(y, xt, grad_ys=b.feed(dy, [None, *dy.shape[1:]]))
                ids = patches_np(np.arange(1, x.size + 1).reshape(xs), ks, st, rt, pad)
                grad = np.zeros(x.size + 1)
                np.add.at(grad, ids.ravel(), dy.astype(np.float64).ravel())
                b.add(f"gradient-{dtype}-{name}", dx, grad[1:].reshape(xs).astype(dtype))
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_extract_image_patches(case):
    BATCH.check(case)


def test_shapes_names_and_errors():
    x = tf.placeholder(tf.float32, [None, 10, 10, 3])
    y = tf.extract_image_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID", name="p")
    assert y.op.type == "ExtractImagePatches" and y.op.name == "p"
    assert y.shape.as_list() == [None, 4, 4, 27]
    with pytest.raises(ValueError, match="Only support ksizes across space"):
        tf.extract_image_patches(x, [2, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="Only support rates across space"):
        tf.extract_image_patches(x, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 2], "VALID")
    with pytest.raises(ValueError, match="Cannot specify both 'ksizes' and 'sizes'"):
        tf.extract_image_patches(x, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID",
                                 sizes=[1, 3, 3, 1])  # fmt: skip
    with pytest.raises(ValueError, match=r"Computed output size would be negative"):
        tf.extract_image_patches(x, [1, 7, 7, 1], [1, 1, 1, 1], [1, 2, 2, 1], "VALID")
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 3"):
        tf.extract_image_patches(tf.zeros([3, 3, 3]), [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1],
                                 "VALID")  # fmt: skip
