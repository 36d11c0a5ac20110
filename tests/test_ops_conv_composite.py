"""conv1d, conv2d_transpose, conv1d_transpose: compiled vs reference vs direct NumPy loops."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(31)


def _pads(size_in: int, size_out: int, k: int, stride: int, dilation: int, padding: str):
    """(before, output size) of the forward convolution along one axis, TF's SAME split."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return 0, (size_in - span) // stride + 1
    out = -(-size_in // stride)
    total = max((out - 1) * stride + span - size_in, 0)
    return total // 2, out


def np_conv2d(x, f, stride, dilation, padding):
    n, h, w, _ = x.shape
    kh, kw, _, co = f.shape
    top, oh = _pads(h, 0, kh, stride[0], dilation[0], padding)
    left, ow = _pads(w, 0, kw, stride[1], dilation[1], padding)
    y = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r = i * stride[0] + a * dilation[0] - top
                    c = j * stride[1] + b * dilation[1] - left
                    if 0 <= r < h and 0 <= c < w:
                        y[:, i, j] += x[:, r, c].astype(np.float64) @ f[a, b]
    return y.astype(x.dtype)


def np_conv2d_transpose(v, f, out_shape, stride, dilation, padding):
    """The adjoint of np_conv2d: each input pixel spreads v . f[tap]^T where the tap read it."""
    n, h, w, co = out_shape
    kh, kw = f.shape[:2]
    top, _ = _pads(h, 0, kh, stride[0], dilation[0], padding)
    left, _ = _pads(w, 0, kw, stride[1], dilation[1], padding)
    y = np.zeros(out_shape)
    for i in range(v.shape[1]):
        for j in range(v.shape[2]):
            for a in range(kh):
                for b in range(kw):
                    r = i * stride[0] + a * dilation[0] - top
                    c = j * stride[1] + b * dilation[1] - left
                    if 0 <= r < h and 0 <= c < w:
                        y[:, r, c] += v[:, i, j].astype(np.float64) @ f[a, b].T
    return y.astype(v.dtype)


CONV1D = [  # (width, k, in, out, stride, dilation, padding)
    (9, 3, 2, 4, 1, 1, "SAME"),
    (9, 3, 2, 4, 2, 1, "VALID"),
    (10, 4, 3, 2, 3, 1, "SAME"),
    (12, 3, 1, 2, 1, 2, "SAME"),
]
TRANSPOSE = [  # (output [n, h, w, c], filter [kh, kw, out, in], stride, dilation, padding)
    ((2, 8, 8, 3), (3, 3, 3, 4), (2, 2), (1, 1), "SAME"),
    ((1, 7, 9, 2), (3, 2, 2, 3), (2, 3), (1, 1), "SAME"),
    ((2, 9, 7, 2), (3, 3, 2, 2), (2, 2), (1, 1), "VALID"),
    ((1, 6, 6, 1), (2, 2, 1, 3), (1, 1), (2, 2), "SAME"),
]


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ["float32", "float64"]:
            for k, (width, kw, ci, co, s, d, padding) in enumerate(CONV1D):
                x = RNG.standard_normal((2, width, ci)).astype(dtype)
                f = RNG.standard_normal((kw, ci, co)).astype(dtype)
                want = np_conv2d(x[:, None], f[None], (1, s), (1, d), padding)[:, 0]
                y = tf.nn.conv1d(b.feed(x), f, s, padding, dilations=d)
                b.add(f"conv1d-{dtype}-{k}", y, want)
            for k, (out, fshape, s, d, padding) in enumerate(TRANSPOSE):
                f = RNG.standard_normal(fshape).astype(dtype)
                _, h = _pads(out[1], 0, fshape[0], s[0], d[0], padding)
                _, w = _pads(out[2], 0, fshape[1], s[1], d[1], padding)
                v = RNG.standard_normal((out[0], h, w, fshape[3])).astype(dtype)
                want = np_conv2d_transpose(v, f, out, s, d, padding)
                y = tf.nn.conv2d_transpose(
                    b.feed(v), f, list(out), [1, *s, 1], padding, dilations=[1, *d, 1]
                )
                b.add(f"conv2d_transpose-{dtype}-{k}", y, want)
            v = RNG.standard_normal((2, 5, 3)).astype(dtype)
            f = RNG.standard_normal((3, 2, 3)).astype(dtype)
            want = np_conv2d_transpose(v[:, None], f[None], (2, 1, 10, 2), (1, 2), (1, 1), "SAME")
            b.add(
                f"conv1d_transpose-{dtype}",
                tf.nn.conv1d_transpose(b.feed(v), f, [2, 10, 2], 2),
                want[:, 0],
            )
        # the batch size from the input's run-time shape, as models build output_shape
        v = RNG.standard_normal((3, 4, 4, 2)).astype(np.float32)
        f = RNG.standard_normal((3, 3, 5, 2)).astype(np.float32)
        ph = b.feed(v, [None, 4, 4, 2])
        out = tf.stack([tf.shape(ph)[0], 8, 8, 5])
        b.add(
            "conv2d_transpose-run-time-batch",
            tf.nn.conv2d_transpose(ph, f, out, 2),
            np_conv2d_transpose(v, f, (3, 8, 8, 5), (2, 2), (1, 1), "SAME"),
        )
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_conv_composites(case):
    BATCH.check(case)


def test_graph_names_and_static_shapes():
    x = tf.placeholder(tf.float32, [None, 20, 3])
    y = tf.nn.conv1d(x, np.zeros((5, 3, 4), np.float32), 2, "VALID")
    assert y.shape.as_list() == [None, 8, 4] and y.op.name == "conv1d/Squeeze"
    assert y.op.inputs[0].op.type == "Conv2D"
    v = tf.placeholder(tf.float32, [None, 4, 4, 2])
    t = tf.nn.conv2d_transpose(v, np.zeros((3, 3, 5, 2), np.float32), [7, 8, 8, 5], [1, 2, 2, 1])
    assert t.op.type == "Conv2DBackpropInput" and t.op.name == "conv2d_transpose"
    assert t.shape.as_list() == [7, 8, 8, 5]


def test_conv2d_transpose_gradients_match_the_conv2d_adjoint():
    """d/dv <conv2d_transpose(v, f), w> = conv2d(w, f), d/df by finite differences of a
    bilinear form (exact in float64)."""
    v = tf.placeholder(tf.float64, [2, 3, 3, 2])
    f = tf.placeholder(tf.float64, [3, 3, 4, 2])
    w = RNG.standard_normal((2, 6, 6, 4))
    t = tf.nn.conv2d_transpose(v, f, [2, 6, 6, 4], 2)
    loss = tf.reduce_sum(t * w)
    dv, df = tf.gradients(loss, [v, f])
    values = {v: RNG.standard_normal((2, 3, 3, 2)), f: RNG.standard_normal((3, 3, 4, 2))}
    with tf.Session() as sess:
        got_dv, got_df, base = sess.run([dv, df, loss], values)
        np.testing.assert_allclose(got_dv, np_conv2d(w, values[f], (2, 2), (1, 1), "SAME"))
        bumped = dict(values)
        bumped[f] = values[f].copy()
        bumped[f][1, 2, 3, 0] += 1.0  # the loss is linear in f: a unit step gives the derivative
        np.testing.assert_allclose(sess.run(loss, bumped) - base, got_df[1, 2, 3, 0], rtol=1e-9)


def test_errors():
    x = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(ValueError, match="input channels does not match filter's input channels"):
        tf.nn.conv2d_transpose(x, np.zeros((3, 3, 5, 3), np.float32), [1, 8, 8, 5], 2)
    with pytest.raises(ValueError, match="output_shape does not match filter's output channels"):
        tf.nn.conv2d_transpose(x, np.zeros((3, 3, 5, 2), np.float32), [1, 8, 8, 4], 2)
    with pytest.raises(ValueError, match=r"output_shape must have shape \(4,\)"):
        tf.nn.conv2d_transpose(x, np.zeros((3, 3, 5, 2), np.float32), [8, 8, 5], 2)
    with pytest.raises(NotImplementedError, match="channels last"):
        tf.nn.conv1d(
            np.zeros((1, 3, 4), np.float32), np.zeros((1, 3, 2)), 1, "SAME", data_format="NCW"
        )
    with pytest.raises(ValueError, match="stride should be of length 1 or 3"):
        tf.nn.conv1d(np.zeros((1, 4, 3), np.float32), np.zeros((1, 3, 2)), [1, 1], "SAME")
