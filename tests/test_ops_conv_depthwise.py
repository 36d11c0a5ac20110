"""Depthwise convolution: compiled C vs the NumPy reference vs definitional loops; TF's errors.

The expectations are the ops' definitions as plain loops over output pixels and filter taps in
float64 (TF's padding arithmetic spelled out again here), independent of the references'
sliding windows and of the kernels' loop order, in NHWC and NCHW, with channel multipliers.
"""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.ops.registry import apply_op

RNG = np.random.default_rng(1618)
F = ["float32", "float64"]


def out_and_pad(size, k, stride, dilation, padding):
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def taps(x_shape, f_shape, strides, padding, dilations):
    """(i, j, a, b, r, q): output pixel (i, j) reads input pixel (r, q) through tap (a, b)."""
    (h, w), (kh, kw) = x_shape[1:3], f_shape[:2]
    oh, top = out_and_pad(h, kh, strides[0], dilations[0], padding)
    ow, left = out_and_pad(w, kw, strides[1], dilations[1], padding)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r = i * strides[0] + a * dilations[0] - top
                    q = j * strides[1] + b * dilations[1] - left
                    if 0 <= r < h and 0 <= q < w:
                        yield i, j, a, b, r, q


def y_shape(x_shape, f_shape, strides, padding, dilations):
    oh, _ = out_and_pad(x_shape[1], f_shape[0], strides[0], dilations[0], padding)
    ow, _ = out_and_pad(x_shape[2], f_shape[1], strides[1], dilations[1], padding)
    return (x_shape[0], oh, ow, f_shape[2] * f_shape[3])


def forward_np(x, f, strides, padding, dilations):
    n, oh, ow, _ = y_shape(x.shape, f.shape, strides, padding, dilations)
    y = np.zeros((n, oh, ow, *f.shape[2:]))  # [N, OH, OW, C, M]
    for i, j, a, b, r, q in taps(x.shape, f.shape, strides, padding, dilations):
        y[:, i, j] += x[:, r, q, :, None].astype(np.float64) * f[a, b].astype(np.float64)
    return y.reshape(n, oh, ow, -1).astype(x.dtype)


def input_grad_np(x_shape, f, dy, strides, padding, dilations):
    dx = np.zeros(x_shape)
    dy5 = dy.reshape(*dy.shape[:3], f.shape[2], f.shape[3]).astype(np.float64)
    for i, j, a, b, r, q in taps(x_shape, f.shape, strides, padding, dilations):
        dx[:, r, q] += (dy5[:, i, j] * f[a, b].astype(np.float64)).sum(axis=-1)
    return dx.astype(f.dtype)


def filter_grad_np(x, f_shape, dy, strides, padding, dilations):
    df = np.zeros(f_shape)
    dy5 = dy.reshape(*dy.shape[:3], f_shape[2], f_shape[3]).astype(np.float64)
    for i, j, a, b, r, q in taps(x.shape, f_shape, strides, padding, dilations):
        df[a, b] += (x[:, r, q, :, None].astype(np.float64) * dy5[:, i, j]).sum(axis=0)
    return df.astype(x.dtype)


def tol(dtype, terms):
    """(rtol, atol) for sums of `terms` products of unit-sized values, summed in any order."""
    if dtype == "float32":
        return 1e-5, 3e-7 * terms
    return 1e-12, 1e-14 * terms


def nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


# (x shape NHWC, filter shape, strides, padding, dilations): the C kernels' tiles of 4 pixels x
# whole vectors meet borders, leftover vectors and single channels; multipliers > 1 go
# through the lowering's channel repeat and sum
CASES = {
    "c3-same": ((2, 7, 7, 3), (3, 3, 3, 1), (1, 1), "SAME", (1, 1)),
    "c40-same": ((1, 9, 11, 40), (3, 3, 40, 1), (1, 1), "SAME", (1, 1)),
    "c35-m2-s2": ((2, 9, 10, 35), (3, 3, 35, 2), (2, 2), "SAME", (1, 1)),
    "k5-valid-c17": ((1, 8, 8, 17), (5, 5, 17, 1), (1, 1), "VALID", (1, 1)),
    "dilated-rect-strides": ((1, 10, 12, 16), (3, 3, 16, 1), (1, 2), "SAME", (2, 2)),
    "kernel-over-input-m3": ((1, 3, 3, 4), (5, 5, 4, 3), (1, 1), "SAME", (1, 1)),
    "c64-s2": ((2, 12, 13, 64), (3, 3, 64, 1), (2, 2), "SAME", (1, 1)),
    "c70-k2x3-s3x2-dilated": ((1, 6, 7, 70), (2, 3, 70, 1), (3, 2), "VALID", (1, 2)),
    "c1-m4-wide": ((2, 5, 19, 1), (3, 3, 1, 4), (1, 1), "SAME", (1, 1)),
    "c130-k4-s3-valid": ((1, 11, 10, 130), (4, 4, 130, 1), (3, 3), "VALID", (1, 1)),
    "c33-k1": ((2, 4, 5, 33), (1, 1, 33, 2), (1, 1), "VALID", (1, 1)),
    "c128-13taps": ((1, 9, 9, 128), (1, 13, 128, 1), (1, 1), "SAME", (1, 1)),
}


def _cases(b, dtype, fmt):
    for k, (name, (xs, fs, st, pad, dil)) in enumerate(CASES.items()):
        x = RNG.standard_normal(xs).astype(dtype)
        f = RNG.standard_normal(fs).astype(dtype)
        dy = RNG.standard_normal(y_shape(xs, fs, st, pad, dil)).astype(dtype)
        y, dx = forward_np(x, f, st, pad, dil), input_grad_np(xs, f, dy, st, pad, dil)
        df = filter_grad_np(x, fs, dy, st, pad, dil)
        if fmt == "NCHW":
            x, dy, y, dx = nchw(x), nchw(dy), nchw(y), nchw(dx)
            strides, dilations = [1, 1, *st], [1, 1, *dil]
        else:
            strides, dilations = [1, *st, 1], [1, *dil, 1]
        attrs = {"strides": strides, "padding": pad, "data_format": fmt, "dilations": dilations}
        # a None batch dim in every other case: the shapes are known when compiling only
        xt = b.feed(x, [None, *x.shape[1:]] if k % 2 else "same")
        ft, dyt = b.feed(f), b.feed(dy, [None, *dy.shape[1:]] if k % 2 else "same")
        tag = f"{dtype}-{fmt}-{name}"
        yt = tf.nn.depthwise_conv2d_native(xt, ft, **attrs)
        b.add(f"forward-{tag}", yt, y, *tol(dtype, fs[0] * fs[1]))
        dxt = tf.nn.depthwise_conv2d_native_backprop_input(tf.shape(xt), ft, dyt, **attrs)
        b.add(f"input-{tag}", dxt, dx, *tol(dtype, fs[0] * fs[1] * fs[3]))
        dft = tf.nn.depthwise_conv2d_native_backprop_filter(xt, fs, dyt, **attrs)
        b.add(f"filter-{tag}", dft, df, *tol(dtype, dy.size // (fs[2] * fs[3])))


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in F:
            for fmt in ("NHWC", "NCHW"):
                _cases(b, dtype, fmt)
        # tf.nn.depthwise_conv2d's rate is the op's dilation; separable_conv2d adds a 1x1 conv
        x = RNG.standard_normal((2, 9, 8, 6)).astype("float32")
        f = RNG.standard_normal((3, 3, 6, 2)).astype("float32")
        p = RNG.standard_normal((1, 1, 12, 5)).astype("float32")
        y = forward_np(x, f, (1, 1), "SAME", (2, 3))
        xt = b.feed(x)
        b.add(
            "depthwise_conv2d-rate",
            tf.nn.depthwise_conv2d(xt, f, [1, 1, 1, 1], "same", rate=[2, 3]),
            y,
            *tol("float32", 9),
        )
        pointwise = np.einsum("nhwc,co->nhwo", y.astype(np.float64), p[0, 0].astype(np.float64))
        b.add(
            "separable_conv2d-rate",
            tf.nn.separable_conv2d(xt, f, p, [1, 1, 1, 1], "SAME", rate=[2, 3]),
            pointwise.astype("float32"),
            *tol("float32", 9 * 12),
        )
        y2 = forward_np(x, f, (2, 2), "VALID", (1, 1))
        pointwise = np.einsum("nhwc,co->nhwo", y2.astype(np.float64), p[0, 0].astype(np.float64))
        b.add(
            "separable_conv2d-NCHW",
            tf.nn.separable_conv2d(
                b.feed(nchw(x)), f, p, [1, 1, 2, 2], "VALID", data_format="NCHW"
            ),
            nchw(pointwise.astype("float32")),
            *tol("float32", 9 * 12),
        )
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_depthwise_ops(case):
    BATCH.check(case)


# -- graph construction ---------------------------------------------------------------------------
def test_shapes_names_and_gradient_ops_follow_tf1():
    x = tf.placeholder(tf.float32, [None, 28, 28, 8], name="x")
    w = tf.placeholder(tf.float32, [3, 3, 8, 2], name="w")
    y = tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME")
    assert y.op.type == "DepthwiseConv2dNative" and y.op.name == "depthwise"
    assert y.shape.as_list() == [None, 14, 14, 16]
    assert y.op.get_attr("strides") == [1, 2, 2, 1] and y.op.get_attr("padding") == "SAME"
    gx, gw = tf.gradients(tf.reduce_sum(y), [x, w])
    assert gx.op.type == "DepthwiseConv2dNativeBackpropInput"
    assert gw.op.type == "DepthwiseConv2dNativeBackpropFilter"
    assert gx.shape.as_list() == [None, 28, 28, 8] and gw.shape.as_list() == [3, 3, 8, 2]
    n = tf.nn.depthwise_conv2d_native(
        tf.placeholder(tf.float32, [1, 8, 10, 12]), w[:, :, :, :1], [1, 1, 1, 1], "VALID",
        data_format="NCHW",
    )  # fmt: skip
    assert n.shape.as_list() == [1, 8, 8, 10]
    s = tf.nn.separable_conv2d(x, w, tf.zeros([1, 1, 16, 4]), [1, 1, 1, 1], "VALID", name="sep")
    assert s.op.type == "Conv2D" and s.op.name == "sep" and s.shape.as_list() == [None, 26, 26, 4]
    assert s.op.inputs[0].op.name == "sep/depthwise"
    assert tf.nn.depthwise_conv2d_backprop_input is tf.nn.depthwise_conv2d_native_backprop_input
    unknown = tf.nn.depthwise_conv2d_native(tf.placeholder(tf.float32), w, [1, 1, 1, 1], "SAME")
    assert unknown.shape.as_list() == [None, None, None, None]


def test_errors_read_as_tensorflow_s():
    x, w = tf.placeholder(tf.float32, [1, 7, 7, 3]), tf.zeros([3, 3, 3, 2])
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 2 for 'Dep"):
        tf.nn.depthwise_conv2d_native(x, tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"^Shape must be rank 4 but is rank 3 for 'Depthwise"):
        tf.nn.depthwise_conv2d_native(tf.zeros([7, 7, 3]), w, [1, 1, 1, 1], "SAME")
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.nn.depthwise_conv2d_native(tf.zeros([1, 3, 3, 1], tf.int32), tf.zeros([1, 1, 1, 1],
                                      tf.int32), [1, 1, 1, 1], "SAME")  # fmt: skip
    with pytest.raises(ValueError, match="strides in the batch and depth dimensions"):
        tf.nn.depthwise_conv2d_native(x, w, [2, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"Computed output size would be negative: -1 \[input_"):
        tf.nn.depthwise_conv2d_native(tf.zeros([1, 1, 7, 3]), w, [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="filter must not have zero elements"):
        tf.nn.depthwise_conv2d_native(x, tf.zeros([0, 3, 3, 1]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="strides > 1 not supported in conjunction with"):
        tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME", rate=2)
    with pytest.raises(ValueError, match="rate and dilations cannot both be specified"):
        tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=2, dilations=2)
    with pytest.raises(NotImplementedError, match="explicit paddings"):
        tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], [[0, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
        tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "SAME", data_format="NCW")
    with pytest.raises(ValueError, match=r"Value for attr 'data_format' of \"NDHWC\""):
        apply_op("DepthwiseConv2dNative", [x, w],
                 {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NDHWC"})  # fmt: skip
    with pytest.raises(ValueError, match=r"Dimension must be 1 but is 2 \(pointwise_filter\)"):
        tf.nn.separable_conv2d(x, w, tf.zeros([2, 1, 6, 4]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"Depth of input \(6\) is not a multiple of input depth"):
        tf.nn.separable_conv2d(x, w, tf.zeros([1, 1, 5, 4]), [1, 1, 1, 1], "SAME")
    with pytest.raises(
        ValueError,
        match=r"DepthwiseConv2dNativeBackpropInput: Size of out_backprop doesn't match computed: "
        r"actual = 4, computed = 3 spatial_dim: 1 input: 7 filter: 3 output: 4 stride: 2",
    ):
        tf.nn.depthwise_conv2d_native_backprop_input(
            [1, 7, 7, 3], w, tf.zeros([1, 4, 3, 6]), [1, 2, 2, 1], "VALID"
        )
    with pytest.raises(ValueError, match="filter and out_backprop must have the same out_depth"):
        tf.nn.depthwise_conv2d_native_backprop_filter(
            x, [3, 3, 3, 2], tf.zeros([1, 5, 5, 4]), [1, 1, 1, 1], "VALID"
        )


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_threads_give_the_same_bits(fmt):
    """Each op at 1, 2 and 3 threads: the row parts of forward and input and the channel parts
    of the filter gradient each compute their own outputs in a fixed order. Large enough to be
    split (9 x 40 x 40 x 64 x 9 multiply-adds)."""
    xs, fs = (9, 40, 40, 64), (3, 3, 64, 1)
    x = RNG.standard_normal(xs).astype(np.float32)
    f = RNG.standard_normal(fs).astype(np.float32)
    dy = RNG.standard_normal(xs).astype(np.float32)
    if fmt == "NCHW":
        x, dy = nchw(x), nchw(dy)
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": fmt}
    xt, ft, dyt = (tf.placeholder(tf.float32, v.shape) for v in (x, f, dy))
    fetches = [
        tf.nn.depthwise_conv2d_native(xt, ft, **attrs),
        tf.nn.depthwise_conv2d_native_backprop_input(tf.shape(xt), ft, dyt, **attrs),
        tf.nn.depthwise_conv2d_native_backprop_filter(xt, fs, dyt, **attrs),
    ]
    results = []
    for threads in (1, 2, 3):
        config = tf.ConfigProto(
            intra_op_parallelism_threads=threads, compile_options=tf.CompileOptions(passes=[])
        )
        with tf.Session(config=config) as sess:
            results.append(sess.run(fetches, {xt: x, ft: f, dyt: dy}))
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    x_nhwc = x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)
    dy_nhwc = dy if fmt == "NHWC" else dy.transpose(0, 2, 3, 1)
    want = filter_grad_np(x_nhwc, fs, dy_nhwc, (1, 1), "SAME", (1, 1))
    np.testing.assert_allclose(results[0][2], want, *tol("float32", 9 * 40 * 40))


def test_empty_batch_gives_empty_output_and_zero_filter_gradient():
    x = tf.placeholder(tf.float32, [None, 5, 5, 2])
    f = tf.constant(RNG.standard_normal((3, 3, 2, 2)).astype(np.float32))
    y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME")
    (df,) = tf.gradients(tf.reduce_sum(y), [f])
    with tf.Session() as sess:
        out, grad = sess.run([y, df], {x: np.zeros((0, 5, 5, 2), np.float32)})
    assert out.shape == (0, 5, 5, 4)
    np.testing.assert_array_equal(grad, np.zeros((3, 3, 2, 2), np.float32))
