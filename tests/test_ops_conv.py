"""Convolution and pooling: compiled C vs the NumPy reference vs definitional loops; TF's errors.

The expectations below are the ops' definitions written as plain loops over output pixels and
kernel taps in float64 (TF's padding arithmetic spelled out again here), independent of the
references' sliding windows and of the kernels' loop order.
"""

import dataclasses

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.ops.registry import apply_op

RNG = np.random.default_rng(2718)
F = ["float32", "float64"]


# -- definitions ----------------------------------------------------------------------------------
def out_and_pad(size, k, stride, dilation, padding):
    """TF's output size and padding before (SAME puts the odd pixel after)."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def taps(shape_in, k, strides, padding, dilations=(1, 1)):
    """(i, j, a, b, r, q): output pixel (i, j) reads input pixel (r, q) through tap (a, b)."""
    (h, w), (kh, kw), (sh, sw), (dh, dw) = shape_in, k, strides, dilations
    oh, top = out_and_pad(h, kh, sh, dh, padding)
    ow, left = out_and_pad(w, kw, sw, dw, padding)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r, q = i * sh + a * dh - top, j * sw + b * dw - left
                    if 0 <= r < h and 0 <= q < w:
                        yield i, j, a, b, r, q


def out_shape(x_shape, k, strides, padding, channels, dilations=(1, 1)):
    oh, _ = out_and_pad(x_shape[1], k[0], strides[0], dilations[0], padding)
    ow, _ = out_and_pad(x_shape[2], k[1], strides[1], dilations[1], padding)
    return (x_shape[0], oh, ow, channels)


def conv2d_np(x, f, strides, padding, dilations=(1, 1)):
    y = np.zeros(out_shape(x.shape, f.shape[:2], strides, padding, f.shape[3], dilations))
    for i, j, a, b, r, q in taps(x.shape[1:3], f.shape[:2], strides, padding, dilations):
        y[:, i, j] += x[:, r, q].astype(np.float64) @ f[a, b].astype(np.float64)
    return y.astype(x.dtype)


def conv2d_input_grad_np(x_shape, f, dy, strides, padding, dilations=(1, 1)):
    dx = np.zeros(x_shape)
    for i, j, a, b, r, q in taps(x_shape[1:3], f.shape[:2], strides, padding, dilations):
        dx[:, r, q] += dy[:, i, j].astype(np.float64) @ f[a, b].astype(np.float64).T
    return dx.astype(f.dtype)


def conv2d_filter_grad_np(x, f_shape, dy, strides, padding, dilations=(1, 1)):
    df = np.zeros(f_shape)
    for i, j, a, b, r, q in taps(x.shape[1:3], f_shape[:2], strides, padding, dilations):
        df[a, b] += x[:, r, q].astype(np.float64).T @ dy[:, i, j].astype(np.float64)
    return df.astype(x.dtype)


CONV_TRIO = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")


def conv_trio(rng, xs, fs, st, pad, dil) -> tuple[dict, list, tuple, list[int]]:
    """Conv2D and both its gradients at one shape, on float32 placeholders in the default graph:
    (feeds, the three tensors, the fed (x, f, dy), the number of terms in each op's sums)."""
    x = rng.standard_normal(xs).astype("float32")
    f = rng.standard_normal(fs).astype("float32")
    dy = rng.standard_normal(out_shape(xs, fs[:2], st, pad, fs[3], dil)).astype("float32")
    attrs = {"strides": [1, *st, 1], "padding": pad, "dilations": [1, *dil, 1]}
    xt, ft, dyt = (tf.placeholder(tf.float32, v.shape) for v in (x, f, dy))
    sizes = [tf.constant(list(xs)), tf.constant(list(fs))]
    tensors = [
        apply_op("Conv2D", [xt, ft], attrs).outputs[0],
        apply_op("Conv2DBackpropInput", [sizes[0], ft, dyt], attrs).outputs[0],
        apply_op("Conv2DBackpropFilter", [xt, sizes[1], dyt], attrs).outputs[0],
    ]
    terms = [fs[0] * fs[1] * fs[2], fs[0] * fs[1] * fs[3], dy.size // fs[3]]
    return {xt: x, ft: f, dyt: dy}, tensors, (x, f, dy), terms


def conv_trio_np(x, f, dy, st, pad, dil) -> list[np.ndarray]:
    """NumPy's results of conv_trio's three ops."""
    return [
        conv2d_np(x, f, st, pad, dil),
        conv2d_input_grad_np(x.shape, f, dy, st, pad, dil),
        conv2d_filter_grad_np(x, f.shape, dy, st, pad, dil),
    ]


def windows_np(x_shape, k, strides, padding):
    """{output pixel: its input pixels in row-major order}."""
    found = {}
    for i, j, _, _, r, q in taps(x_shape[1:3], k, strides, padding):
        found.setdefault((i, j), []).append((r, q))
    return found


def max_pool_np(x, k, strides, padding):
    y = np.zeros(out_shape(x.shape, k, strides, padding, x.shape[3]), x.dtype)
    for (i, j), pixels in windows_np(x.shape, k, strides, padding).items():
        y[:, i, j] = np.max([x[:, r, q] for r, q in pixels], axis=0)
    return y


def avg_pool_np(x, k, strides, padding):
    y = np.zeros(out_shape(x.shape, k, strides, padding, x.shape[3]))
    for (i, j), pixels in windows_np(x.shape, k, strides, padding).items():
        y[:, i, j] = np.mean([x[:, r, q].astype(np.float64) for r, q in pixels], axis=0)
    return y.astype(x.dtype)


def first_max(x, pixels, n, c):
    """The first pixel of the window holding its maximum (its first NaN when it holds one),
    scanning in row-major order."""
    nans = [(r, q) for r, q in pixels if np.isnan(x[n, r, q, c])]
    if nans:
        return nans[0]
    best = pixels[0]
    for r, q in pixels[1:]:
        if x[n, r, q, c] > x[n, best[0], best[1], c]:
            best = (r, q)
    return best


def max_pool_grad_np(x, dy, k, strides, padding):
    dx = np.zeros(x.shape)
    for (i, j), pixels in windows_np(x.shape, k, strides, padding).items():
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                r, q = first_max(x, pixels, n, c)
                dx[n, r, q, c] += dy[n, i, j, c]
    return dx.astype(x.dtype)


def max_pool_grad_grad_np(x, g, k, strides, padding):
    out = np.zeros(out_shape(x.shape, k, strides, padding, x.shape[3]), x.dtype)
    for (i, j), pixels in windows_np(x.shape, k, strides, padding).items():
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                r, q = first_max(x, pixels, n, c)
                out[n, i, j, c] = g[n, r, q, c]
    return out


def avg_pool_grad_np(x_shape, dy, k, strides, padding):
    dx = np.zeros(x_shape)
    for (i, j), pixels in windows_np(x_shape, k, strides, padding).items():
        for r, q in pixels:
            dx[:, r, q] += dy[:, i, j].astype(np.float64) / len(pixels)
    return dx.astype(dy.dtype)


def grad_op(op_type, inputs, attrs):
    """A gradient-only op (no frontend), built directly."""
    return apply_op(op_type, inputs, attrs).outputs[0]


# -- cases ----------------------------------------------------------------------------------------
def tol(dtype, terms):
    """(rtol, atol) for sums of `terms` products of unit-sized values, summed in any order."""
    if dtype == "float32":
        return 1e-5, 3e-7 * terms
    return 1e-12, 1e-14 * terms


# (x shape, filter shape, strides, padding, dilations)
CONVS = {
    "odd-same": ((2, 7, 7, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    "odd-valid-s2": ((2, 7, 7, 3), (3, 3, 3, 4), (2, 2), "VALID", (1, 1)),
    "k5-s2-same-split": ((1, 8, 6, 2), (5, 5, 2, 3), (2, 2), "SAME", (1, 1)),
    "k4-s3-valid": ((2, 9, 10, 2), (4, 4, 2, 2), (3, 3), "VALID", (1, 1)),
    "1x1-valid": ((2, 5, 5, 4), (1, 1, 4, 3), (1, 1), "VALID", (1, 1)),
    "1x1-same-s2": ((2, 5, 5, 4), (1, 1, 4, 3), (2, 2), "SAME", (1, 1)),
    "rect-kernel-strides": ((2, 6, 9, 2), (2, 3, 2, 5), (1, 2), "SAME", (1, 1)),
    "kernel-over-input": ((1, 3, 3, 1), (5, 5, 1, 2), (1, 1), "SAME", (1, 1)),
    "dilated-same": ((1, 7, 7, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),
    "dilated-valid": ((2, 8, 7, 2), (2, 3, 2, 3), (1, 1), "VALID", (3, 2)),
    "wide-channels-s2": ((3, 9, 8, 20), (3, 3, 20, 33), (2, 2), "SAME", (1, 1)),
    "kernel-is-input": ((2, 4, 5, 3), (4, 5, 3, 7), (1, 1), "VALID", (1, 1)),
    "batch1-k5-s2-valid": ((1, 11, 13, 5), (5, 5, 5, 9), (2, 2), "VALID", (1, 1)),
    # few channels at stride 1 along the width: the columns kernel (conv_algo.columns_fit)
    "cols-c1-odd-width": ((3, 9, 19, 1), (3, 5, 1, 6), (1, 1), "SAME", (1, 1)),
    "cols-c2-valid-s2-rows": ((1, 11, 21, 2), (4, 3, 2, 5), (2, 1), "VALID", (1, 1)),
    "cols-c3-dilated": ((2, 10, 17, 3), (3, 3, 3, 8), (1, 1), "SAME", (2, 3)),
    "cols-c1-one-channel-out": ((2, 7, 35, 1), (5, 5, 1, 1), (3, 1), "SAME", (1, 1)),
    "lenet-c1": ((2, 28, 28, 1), (5, 5, 1, 6), (1, 1), "SAME", (1, 1)),
    "lenet-c3": ((2, 14, 14, 6), (5, 5, 6, 16), (1, 1), "VALID", (1, 1)),
}
SMALL = [k for k in CONVS if not k.startswith("lenet")]  # the gradients' loops are slower
# (x shape, ksize, strides, padding)
POOLS = {
    "k2-s2-same-odd": ((2, 7, 7, 3), (2, 2), (2, 2), "SAME"),
    "k2-s2-valid-odd": ((2, 7, 7, 3), (2, 2), (2, 2), "VALID"),
    "k3-s2-same": ((1, 8, 8, 2), (3, 3), (2, 2), "SAME"),
    "k3-s2-valid": ((1, 8, 9, 2), (3, 3), (2, 2), "VALID"),
    "k3-s1-same": ((2, 5, 6, 3), (3, 3), (1, 1), "SAME"),
    "k2x3-s1x2": ((2, 6, 7, 2), (2, 3), (1, 2), "SAME"),
    "k1": ((2, 4, 4, 3), (1, 1), (1, 1), "VALID"),
    "k5-edges": ((1, 5, 5, 1), (5, 5), (1, 1), "SAME"),
    "k3-s2-same-16-channels": ((2, 7, 6, 16), (3, 3), (2, 2), "SAME"),
    "lenet-s2": ((2, 28, 28, 6), (2, 2), (2, 2), "VALID"),
    # 2x2 windows tiling the input exactly: MaxPoolGrad's branch-free kernel (max_pool_grad.c.j2)
    "k2-s2-tiled": ((2, 6, 8, 3), (2, 2), (2, 2), "VALID"),
    "k2-s2-same-tiled-6-channels": ((1, 4, 4, 6), (2, 2), (2, 2), "SAME"),
}


def _feed_none_batch(b, value, k):
    """A placeholder fed with `value` (a constant would be folded: the kernels must run), with
    a None batch dim in every other case."""
    return b.feed(value, [None, *value.shape[1:]] if k % 2 else "same")


def _conv_cases(b, dtype, algorithm=None):
    """Every conv op on every shape; `algorithm` forces the kernels' (None: tfc's choice)."""
    for k, (name, (xs, fs, st, pad, dil)) in enumerate(CONVS.items()):
        x = RNG.standard_normal(xs).astype(dtype)
        f = RNG.standard_normal(fs).astype(dtype)
        strides, dilations = [1, *st, 1], [1, *dil, 1]
        attrs = {"strides": strides, "padding": pad, "dilations": dilations}
        if algorithm is not None:
            attrs["_algorithm"] = algorithm
        tag = f"{dtype}-{algorithm or 'auto'}-{name}"
        xt = _feed_none_batch(b, x, k)
        if algorithm is None:
            y = tf.nn.conv2d(xt, f, strides, pad, dilations=dilations)
        else:
            y = grad_op("Conv2D", [xt, b.feed(f)], attrs)
        rtol, atol = tol(dtype, fs[0] * fs[1] * fs[2])
        b.add(f"conv2d-{tag}", y, conv2d_np(x, f, st, pad, dil), rtol, atol)
        if name not in SMALL:
            continue
        dy = RNG.standard_normal(out_shape(xs, fs[:2], st, pad, fs[3], dil)).astype(dtype)
        dyt = _feed_none_batch(b, dy, k)
        dx = grad_op("Conv2DBackpropInput", [tf.shape(xt), tf.constant(f), dyt], attrs)
        rtol, atol = tol(dtype, fs[0] * fs[1] * fs[3])
        want = conv2d_input_grad_np(xs, f, dy, st, pad, dil)
        b.add(f"conv2d_backprop_input-{tag}", dx, want, rtol, atol)
        df = grad_op("Conv2DBackpropFilter", [xt, tf.constant(fs), dyt], attrs)
        rtol, atol = tol(dtype, dy.size // fs[3])
        want = conv2d_filter_grad_np(x, fs, dy, st, pad, dil)
        b.add(f"conv2d_backprop_filter-{tag}", df, want, rtol, atol)


def _pool_cases(b, dtype):
    for k, (name, (xs, ks, st, pad)) in enumerate(POOLS.items()):
        x = RNG.standard_normal(xs).astype(dtype)
        ksize, strides = [1, *ks, 1], [1, *st, 1]
        xt = _feed_none_batch(b, x, k)
        b.add(
            f"max_pool-{dtype}-{name}",
            tf.nn.max_pool(xt, ksize, strides, pad),
            max_pool_np(x, ks, st, pad),
        )
        rtol, atol = tol(dtype, ks[0] * ks[1])
        b.add(
            f"avg_pool-{dtype}-{name}",
            tf.nn.avg_pool(xt, ksize, strides, pad),
            avg_pool_np(x, ks, st, pad),
            rtol,
            atol,
        )
        if name.startswith("lenet"):
            continue
        # ties: few distinct values, so windows hold equal maxima and the first one must win
        ties = RNG.integers(-2, 3, xs).astype(dtype)
        tt = _feed_none_batch(b, ties, k)
        dy = RNG.standard_normal(out_shape(xs, ks, st, pad, xs[3])).astype(dtype)
        dyt = _feed_none_batch(b, dy, k)
        pooled = tf.nn.max_pool(tt, ksize, strides, pad)
        (dx,) = tf.gradients(pooled, tt, grad_ys=dyt)
        assert dx.op.type == "MaxPoolGrad"
        want = max_pool_grad_np(ties, dy, ks, st, pad)
        b.add(f"max_pool_grad-{dtype}-{name}", dx, want, *tol(dtype, 4))
        g = RNG.standard_normal(xs).astype(dtype)
        attrs = {"ksize": ksize, "strides": strides, "padding": pad}
        gg = grad_op("MaxPoolGradGrad", [tt, pooled, tf.constant(g)], attrs)
        b.add(f"max_pool_grad_grad-{dtype}-{name}", gg, max_pool_grad_grad_np(ties, g, ks, st, pad))
        xt2 = _feed_none_batch(b, x, k)
        (da,) = tf.gradients(tf.nn.avg_pool(xt2, ksize, strides, pad), xt2, grad_ys=dyt)
        assert da.op.type == "AvgPoolGrad"
        want = avg_pool_grad_np(xs, dy, ks, st, pad)
        b.add(f"avg_pool_grad-{dtype}-{name}", da, want, *tol(dtype, ks[0] * ks[1]))


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in F:
            for algorithm in (None, "direct", "im2col", "columns"):
                _conv_cases(b, dtype, algorithm)
            _pool_cases(b, dtype)
            # NaN is the maximum of the windows it is in (both forms of the channel loop)
            for channels in (2, 16):
                x = RNG.standard_normal((1, 4, 4, channels)).astype(dtype)
                x[0, 1, 2, 0] = x[0, 0, 0, 1] = x[0, 3, 3, 1] = np.nan
                b.add(
                    f"max_pool-{dtype}-nan-{channels}",
                    tf.nn.max_pool(b.feed(x), 2, 2, "SAME"),
                    max_pool_np(x, (2, 2), (2, 2), "SAME"),
                )
        # the gradient goes to the first NaN of a window holding one, else to its first maximum
        x = np.array([[[[1, 3], [5, 3]], [[np.nan, 2], [np.nan, 1]]]], np.float32)
        dy = np.array([[[[7, 8]]]], np.float32)
        xt = b.feed(x)
        (dx,) = tf.gradients(tf.nn.max_pool(xt, 2, 2, "VALID"), xt, grad_ys=b.feed(dy))
        want = np.zeros_like(x)
        want[0, 1, 0, 0], want[0, 0, 0, 1] = 7, 8
        b.add("max_pool_grad-float32-nan", dx, want)
        g = np.arange(8, dtype=np.float32).reshape(x.shape)
        attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
        pooled = tf.nn.max_pool(xt, 2, 2, "VALID")
        gg = grad_op("MaxPoolGradGrad", [xt, pooled, b.feed(g)], attrs)
        b.add("max_pool_grad_grad-float32-nan", gg, np.array([[[[4, 1]]]], np.float32))
        # the same over several tiled windows: NaNs in each column and row of a window, two in one
        x = RNG.integers(-2, 3, (2, 4, 6, 3)).astype(np.float32)
        x[0, 0, 1, 0] = x[0, 1, 0, 0] = x[0, 1, 3, 1] = x[1, 3, 5, 2] = x[1, 2, 4, 0] = np.nan
        dy = RNG.standard_normal((2, 2, 3, 3)).astype(np.float32)
        xt = b.feed(x)
        (dx,) = tf.gradients(tf.nn.max_pool(xt, 2, 2, "VALID"), xt, grad_ys=b.feed(dy))
        want = max_pool_grad_np(x, dy, (2, 2), (2, 2), "VALID")
        b.add("max_pool_grad-float32-nan-tiled", dx, want)
        # the argument forms TF accepts: an int or two spatial values, `filters`, lower case
        x = RNG.standard_normal((2, 6, 6, 2)).astype("float32")
        f = RNG.standard_normal((3, 3, 2, 2)).astype("float32")
        want = conv2d_np(x, f, (2, 2), "SAME")
        b.add(
            "conv2d-int-strides",
            tf.nn.conv2d(b.feed(x), filters=f, strides=2, padding="same"),
            want,
            *tol("float32", 18),
        )
        b.add(
            "max_pool-pair-args",
            tf.nn.max_pool(b.feed(x), [3, 2], [2, 1], "VALID"),
            max_pool_np(x, (3, 2), (2, 1), "VALID"),
        )
        _explicit_pool_cases(b)
    return b


def _explicit_pool_cases(b):
    """MaxPool and its gradients with explicit padding (ONNX's pads): as the VALID pool of the
    image padded with -inf, ResNet-50's stem (3x3 at stride 2, 1 on each side) and an uneven
    split; ties, so that the first maximum must win."""
    for name, (xs, ks, st, pads) in {
        "resnet-stem": ((2, 8, 8, 3), (3, 3), (2, 2), ((1, 1), (1, 1))),
        "uneven": ((1, 7, 6, 2), (3, 2), (2, 1), ((0, 2), (1, 0))),
    }.items():
        x = RNG.integers(-2, 3, xs).astype("float32")
        padded = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=-np.inf)
        attrs = {
            "ksize": [1, *ks, 1], "strides": [1, *st, 1], "padding": "EXPLICIT",
            "explicit_paddings": [0, 0, *pads[0], *pads[1], 0, 0],
        }  # fmt: skip
        xt = b.feed(x)
        pooled = apply_op("MaxPool", [xt], attrs).outputs[0]
        b.add(f"max_pool-explicit-{name}", pooled, max_pool_np(padded, ks, st, "VALID"))
        dy = RNG.standard_normal(out_shape(padded.shape, ks, st, "VALID", xs[3]))
        (dx,) = tf.gradients(pooled, xt, grad_ys=b.feed(dy.astype("float32")))
        want = max_pool_grad_np(padded, dy.astype("float32"), ks, st, "VALID")
        inside = (slice(None), slice(pads[0][0], pads[0][0] + xs[1]))
        inside += (slice(pads[1][0], pads[1][0] + xs[2]),)
        b.add(f"max_pool_grad-explicit-{name}", dx, want[inside], *tol("float32", 4))
        g = RNG.standard_normal(xs).astype("float32")
        gg = grad_op("MaxPoolGradGrad", [xt, pooled, tf.constant(g)], attrs)
        g_padded = np.pad(g, [(0, 0), *pads, (0, 0)])
        want = max_pool_grad_grad_np(padded, g_padded, ks, st, "VALID")
        b.add(f"max_pool_grad_grad-explicit-{name}", gg, want)


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_conv_ops(case):
    BATCH.check(case)


# -- graph construction ---------------------------------------------------------------------------
def test_shapes_names_and_gradient_ops_follow_tf1():
    x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
    w = tf.placeholder(tf.float32, [5, 5, 1, 6], name="w")
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    p = tf.nn.max_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    a = tf.nn.avg_pool(p, [1, 3, 3, 1], [1, 2, 2, 1], "SAME", name="avg")
    assert (y.op.name, p.op.name, a.op.name) == ("Conv2D", "MaxPool", "avg")
    assert y.shape.as_list() == [None, 28, 28, 6]
    assert p.shape.as_list() == [None, 14, 14, 6] and a.shape.as_list() == [None, 7, 7, 6]
    assert y.op.get_attr("strides") == [1, 1, 1, 1] and y.op.get_attr("padding") == "SAME"
    assert p.op.get_attr("ksize") == [1, 2, 2, 1]
    gx, gw = tf.gradients(tf.reduce_sum(a), [x, w])
    assert gx.shape.as_list() == [None, 28, 28, 1] and gw.shape.as_list() == [5, 5, 1, 6]
    assert gx.op.name == "gradients/Conv2D_grad/Conv2DBackpropInput"
    assert gw.op.name == "gradients/Conv2D_grad/Conv2DBackpropFilter"
    unknown = tf.nn.conv2d(tf.placeholder(tf.float32), w, 2, "VALID")
    assert unknown.shape.as_list() == [None, None, None, 6]


def _conv(x_shape, f_shape, strides=(1, 1, 1, 1), padding="VALID", **kw):
    x = tf.placeholder(tf.float32, x_shape)
    return tf.nn.conv2d(x, tf.zeros(f_shape), list(strides), padding, **kw)


def test_shape_errors_read_as_tensorflow_s():
    with pytest.raises(
        ValueError,
        match=r"^Shape must be rank 4 but is rank 3 for 'Conv2D' \(op: 'Conv2D'\) with input "
        r"shapes: \[2,3,4\], \[3,3,4,2\]\.$",
    ):
        _conv([2, 3, 4], [3, 3, 4, 2])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2 for 'Conv2D"):
        _conv([1, 5, 5, 3], [3, 3, 2, 4])
    with pytest.raises(
        ValueError,
        match=r"Computed output size would be negative: -1 \[input_size: 3, "
        r"effective_filter_size: 5, stride: 1\]",
    ):
        _conv([1, 3, 3, 1], [5, 5, 1, 1])
    with pytest.raises(ValueError, match="effective_filter_size: 5, stride: 1"):
        _conv([1, 3, 3, 1], [3, 3, 1, 1], dilations=[1, 2, 2, 1])
    with pytest.raises(ValueError, match="strides in the batch and depth dimensions"):
        _conv([1, 5, 5, 1], [3, 3, 1, 1], strides=[2, 1, 1, 1])
    with pytest.raises(ValueError, match="strides should be of length 1, 2 or 4 but was 3"):
        _conv([1, 5, 5, 1], [3, 3, 1, 1], strides=[1, 1, 1])
    with pytest.raises(ValueError, match=r"Value for attr 'padding' of \"FULL\" is not in the"):
        apply_op(
            "Conv2D",
            [tf.zeros([1, 3, 3, 1]), tf.zeros([1, 1, 1, 1])],
            {"strides": [1, 1, 1, 1], "padding": "FULL"},
        )
    with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'"):
        _conv([1, 5, 5, 1], [3, 3, 1, 1], padding="FULL")
    with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
        _conv([1, 1, 5, 5], [3, 3, 1, 1], data_format="NCWH")
    with pytest.raises(ValueError, match="cannot both be specified"):
        tf.nn.conv2d(
            tf.zeros([1, 3, 3, 1]),
            tf.zeros([1, 1, 1, 1]),
            1,
            "SAME",
            filters=tf.zeros([1, 1, 1, 1]),
        )
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.nn.conv2d(tf.zeros([1, 3, 3, 1], tf.int32), tf.zeros([1, 1, 1, 1], tf.int32), 1, "SAME")
    with pytest.raises(ValueError, match="Pooling is not yet supported on the batch dimension"):
        tf.nn.max_pool(tf.zeros([2, 4, 4, 1]), [2, 2, 2, 1], [1, 1, 1, 1], "VALID")
    explicit = {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "EXPLICIT"}
    with pytest.raises(ValueError, match=r"smaller than its window \[2, 2\]: a window of padding"):
        pads = [0, 0, 0, 2, 0, 0, 0, 0]
        apply_op("MaxPool", [tf.zeros([1, 4, 4, 1])], dict(explicit, explicit_paddings=pads), "mp")
    with pytest.raises(ValueError, match="allowed values"):  # TF's AvgPool has no EXPLICIT
        apply_op(
            "AvgPool", [tf.zeros([1, 4, 4, 1])], dict(explicit, explicit_paddings=[0] * 8), "ap"
        )
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 2 for 'AvgPool'"):
        tf.nn.avg_pool(tf.zeros([4, 4]), 2, 2, "VALID")
    with pytest.raises(
        ValueError,
        match=r"Conv2DBackpropInput: Size of out_backprop doesn't match computed: actual = 4, "
        r"computed = 3 spatial_dim: 1 input: 7 filter: 3 output: 4 stride: 2 dilation: 1",
    ):
        sizes = tf.constant([1, 7, 7, 1])
        grad_op(
            "Conv2DBackpropInput",
            [sizes, tf.zeros([3, 3, 1, 2]), tf.zeros([1, 4, 3, 2])],
            {"strides": [1, 2, 2, 1], "padding": "VALID"},
        )
    with pytest.raises(ValueError, match="filter and out_backprop must have the same out_depth"):
        sizes = tf.constant([3, 3, 1, 2])
        grad_op(
            "Conv2DBackpropFilter",
            [tf.zeros([1, 5, 5, 1]), sizes, tf.zeros([1, 3, 3, 4])],
            {"strides": [1, 1, 1, 1], "padding": "VALID"},
        )


def test_fed_shapes_that_do_not_fit_fail_at_run_time():
    x = tf.placeholder(tf.float32, [None, None, None, 1])
    y = tf.nn.conv2d(x, tf.zeros([3, 3, 1, 1]), 1, "VALID")
    with tf.Session() as sess:
        np.testing.assert_array_equal(
            sess.run(y, {x: np.ones((1, 4, 4, 1))}), np.zeros((1, 2, 2, 1))
        )
        with pytest.raises(tf.errors.InvalidArgumentError, match="output size would be negative"):
            sess.run(y, {x: np.ones((1, 1, 5, 1))})


def test_empty_batches_give_empty_results_and_zero_filter_gradients():
    x = tf.placeholder(tf.float32, [None, 5, 5, 2])
    f = tf.constant(RNG.standard_normal((3, 3, 2, 4)).astype(np.float32))
    y = tf.nn.conv2d(x, f, 1, "SAME")
    pooled = tf.nn.max_pool(y, 2, 2, "SAME") + tf.nn.avg_pool(y, 2, 2, "SAME")
    (df,) = tf.gradients(tf.reduce_sum(pooled), [f])
    with tf.Session() as sess:
        out, grad = sess.run([pooled, df], {x: np.zeros((0, 5, 5, 2), np.float32)})
    assert out.shape == (0, 3, 3, 4)
    np.testing.assert_array_equal(grad, np.zeros((3, 3, 2, 4), np.float32))


def test_im2col_in_chunks_of_images_matches(monkeypatch):
    """A column matrix smaller than the batch's: the GEMMs run per image and the filter
    gradient adds up their products (a budget of one image's columns forces it)."""
    from tfc.ops import conv_algo

    xs, fs, st = (3, 6, 7, 4), (3, 3, 4, 5), (1, 1)
    monkeypatch.setattr(conv_algo, "IM2COL_COLUMN_BYTES", 6 * 7 * 36 * 4)
    x = RNG.standard_normal(xs).astype(np.float32)
    f = RNG.standard_normal(fs).astype(np.float32)
    dy = RNG.standard_normal(out_shape(xs, fs[:2], st, "SAME", fs[3])).astype(np.float32)
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME", "_algorithm": "im2col"}
    xt, ft, dyt = (tf.placeholder(tf.float32, v.shape) for v in (x, f, dy))
    y = grad_op("Conv2D", [xt, ft], attrs)
    dx = grad_op("Conv2DBackpropInput", [tf.constant(list(xs)), ft, dyt], attrs)
    df = grad_op("Conv2DBackpropFilter", [xt, tf.constant(list(fs)), dyt], attrs)
    with tf.Session(config=tf.CompileOptions(passes=[])) as sess:
        got = sess.run([y, dx, df], {xt: x, ft: f, dyt: dy})
    rtol, atol = tol("float32", 3 * 3 * 5 * 3)
    np.testing.assert_allclose(got[0], conv2d_np(x, f, st, "SAME"), rtol, atol)
    np.testing.assert_allclose(got[1], conv2d_input_grad_np(xs, f, dy, st, "SAME"), rtol, atol)
    np.testing.assert_allclose(got[2], conv2d_filter_grad_np(x, fs, dy, st, "SAME"), rtol, atol)


def test_an_unknown_algorithm_is_named():
    with pytest.raises(ValueError, match=r"'c' \(Conv2D\): attribute _algorithm is 'fft'"):
        apply_op(
            "Conv2D",
            [tf.zeros([1, 3, 3, 1]), tf.zeros([1, 1, 1, 1])],
            {"strides": [1, 1, 1, 1], "padding": "SAME", "_algorithm": "fft"},
            name="c",
        )


@pytest.mark.parametrize("algorithm", ["direct", "im2col", "columns"])
@pytest.mark.parametrize("dilations", [(1, 1), (1, 2)])
def test_threads_give_the_same_bits(algorithm, dilations):
    """Each op at 1, 2 and 3 threads: the direct kernels split the batch into fixed parts (the
    filter gradient sums one partial sum per part, in part order), so the bits do not depend on
    the thread count. 37 images: parts of 3, the last of 1; enough work to be split (dilated
    widths take backprop input's direct kernel, the others its row scatters)."""
    xs, fs, st = (37, 13, 12, 4), (3, 3, 4, 8), (1, 1)
    x = RNG.standard_normal(xs).astype(np.float32)
    f = RNG.standard_normal(fs).astype(np.float32)
    dy = RNG.standard_normal(out_shape(xs, fs[:2], st, "SAME", fs[3], dilations))
    dy = dy.astype(np.float32)
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME", "_algorithm": algorithm,
             "dilations": [1, *dilations, 1]}  # fmt: skip
    xt, ft, dyt = (tf.placeholder(tf.float32, v.shape) for v in (x, f, dy))
    y = grad_op("Conv2D", [xt, ft], attrs)
    dx = grad_op("Conv2DBackpropInput", [tf.constant(list(xs)), ft, dyt], attrs)
    df = grad_op("Conv2DBackpropFilter", [xt, tf.constant(list(fs)), dyt], attrs)
    results = []
    for threads in (1, 2, 3):
        config = tf.ConfigProto(
            intra_op_parallelism_threads=threads, compile_options=tf.CompileOptions(passes=[])
        )
        with tf.Session(config=config) as sess:
            results.append(sess.run([y, dx, df], {xt: x, ft: f, dyt: dy}))
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    rtol, atol = tol("float32", 3 * 3 * 8 * 37)
    np.testing.assert_allclose(results[0][0], conv2d_np(x, f, st, "SAME", dilations), rtol, atol)
    np.testing.assert_allclose(
        results[0][1], conv2d_input_grad_np(xs, f, dy, st, "SAME", dilations), rtol, atol
    )
    np.testing.assert_allclose(
        results[0][2], conv2d_filter_grad_np(x, fs, dy, st, "SAME", dilations), rtol, atol
    )


def test_forward_takes_im2col_for_few_output_pixels_and_a_long_reduction():
    from tfc import dtypes
    from tfc.ops.conv import Geometry
    from tfc.ops.conv_algo import default_algorithm

    f32 = dtypes.as_dtype("float32")
    # ResNet-50's last 3x3 layer at batch 1: 49 GEMM rows, 4608 products each
    deep = Geometry(1, 7, 7, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1)
    assert default_algorithm("forward", deep, f32) == "im2col"
    # the same layer at batch 32, and at 14x14: enough rows for the direct kernel's tiles
    assert default_algorithm("forward", dataclasses.replace(deep, batch=32), f32) == "direct"
    wider = dataclasses.replace(deep, in_h=14, in_w=14, out_h=14, out_w=14)
    assert default_algorithm("forward", wider, f32) == "direct"
    # a short reduction (64 input channels, 1x1) stays direct at any size
    short = dataclasses.replace(deep, in_c=64, k_h=1, k_w=1, pad_top=0, pad_left=0)
    assert default_algorithm("forward", short, f32) == "direct"
    # the gradients keep their own rule: the filter gradient of the deep layer is long both ways
    assert default_algorithm("filter", deep, f32) == "im2col"
    assert default_algorithm("input", short, f32) == "direct"


def test_columns_runs_where_it_fits():
    from tfc import dtypes
    from tfc.ops.conv import Geometry
    from tfc.ops.conv_algo import columns_fit

    f32, f64 = dtypes.as_dtype("float32"), dtypes.as_dtype("float64")
    lenet_c1 = Geometry(64, 28, 28, 1, 28, 28, 6, 5, 5, 1, 1, 1, 1, 2, 2)
    assert columns_fit("forward", lenet_c1, f32) and columns_fit("forward", lenet_c1, f64)
    # the gradients, stride 2 along the width, 16 output channels, 5 input ones: direct
    assert not columns_fit("filter", lenet_c1, f32)
    assert not columns_fit("input", lenet_c1, f32)
    s_w2 = Geometry(1, 28, 28, 1, 14, 14, 6, 5, 5, 1, 2, 1, 1, 2, 2)
    assert not columns_fit("forward", s_w2, f32)
    c16 = Geometry(1, 28, 28, 1, 28, 28, 16, 5, 5, 1, 1, 1, 1, 2, 2)
    assert not columns_fit("forward", c16, f32)
    c5 = Geometry(1, 28, 28, 5, 28, 28, 6, 5, 5, 1, 1, 1, 1, 2, 2)
    assert not columns_fit("forward", c5, f32)
    # an image whose planes would not fit the stack allowance
    big = Geometry(1, 200, 200, 1, 200, 200, 6, 5, 5, 1, 1, 1, 1, 2, 2)
    assert not columns_fit("forward", big, f32)
