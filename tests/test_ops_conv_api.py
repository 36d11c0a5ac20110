"""tf.nn's other convolution and pooling entry points, and the space/depth/batch moves: compiled
C vs the NumPy reference vs definitional loops; TF's errors.

The expectations are written from the definitions (windows over padded images, blocks moved
index by index), independent of the compositions of ops the functions build.
"""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(2024)


def out_and_pad(size, k, stride, dilation, padding):
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def windows(x_shape, k, strides, padding, dilations=(1, 1)):
    """{(i, j): [(r, q, a, b)]}: the input pixels (and taps) inside each output pixel's window."""
    (h, w), (kh, kw), (sh, sw), (dh, dw) = x_shape[1:3], k, strides, dilations
    oh, top = out_and_pad(h, kh, sh, dh, padding)
    ow, left = out_and_pad(w, kw, sw, dw, padding)
    found = {}
    for i in range(oh):
        for j in range(ow):
            found[(i, j)] = [
                (i * sh + a * dh - top, j * sw + b * dw - left, a, b)
                for a in range(kh)
                for b in range(kw)
                if 0 <= i * sh + a * dh - top < h and 0 <= j * sw + b * dw - left < w
            ]
    return found, (x_shape[0], oh, ow)


def pool_np(x, k, strides, padding, kind, dilations=(1, 1)):
    found, (n, oh, ow) = windows(x.shape, k, strides, padding, dilations)
    y = np.zeros((n, oh, ow, x.shape[3]))
    for (i, j), pixels in found.items():
        values = np.stack([x[:, r, q].astype(np.float64) for r, q, _, _ in pixels])
        y[:, i, j] = values.max(axis=0) if kind == "MAX" else values.mean(axis=0)
    return y.astype(x.dtype)


def conv_np(x, f, strides, padding, dilations=(1, 1)):
    found, (n, oh, ow) = windows(x.shape, f.shape[:2], strides, padding, dilations)
    y = np.zeros((n, oh, ow, f.shape[3]))
    for (i, j), pixels in found.items():
        for r, q, a, b in pixels:
            y[:, i, j] += x[:, r, q].astype(np.float64) @ f[a, b].astype(np.float64)
    return y.astype(x.dtype)


def conv_input_grad_np(x_shape, f, dy, strides, padding, dilations=(1, 1)):
    found, _ = windows(x_shape, f.shape[:2], strides, padding, dilations)
    dx = np.zeros(x_shape)
    for (i, j), pixels in found.items():
        for r, q, a, b in pixels:
            dx[:, r, q] += dy[:, i, j].astype(np.float64) @ f[a, b].astype(np.float64).T
    return dx.astype(f.dtype)


def conv_filter_grad_np(x, f_shape, dy, strides, padding):
    found, _ = windows(x.shape, f_shape[:2], strides, padding)
    df = np.zeros(f_shape)
    for (i, j), pixels in found.items():
        for r, q, a, b in pixels:
            df[a, b] += x[:, r, q].astype(np.float64).T @ dy[:, i, j].astype(np.float64)
    return df.astype(x.dtype)


def nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def space_to_depth_np(x, b):
    n, h, w, c = x.shape
    y = np.zeros((n, h // b, w // b, b * b * c), x.dtype)
    for i in range(h):
        for j in range(w):
            y[:, i // b, j // b, ((i % b) * b + j % b) * c : ((i % b) * b + j % b + 1) * c] = x[
                :, i, j
            ]
    return y


def space_to_batch_np(x, block, pads):
    """TF's definition: pad dims 1..M, then batch (o_1*...*b_M + ...)*N + n holds the pixels at
    block offset (o_1, ..., o_M)."""
    padded = np.pad(x, [(0, 0), *pads] + [(0, 0)] * (x.ndim - 1 - len(block)))
    n, m = x.shape[0], len(block)
    out_spatial = [padded.shape[1 + k] // block[k] for k in range(m)]
    y = np.zeros((n * int(np.prod(block)), *out_spatial, *x.shape[1 + m :]), x.dtype)
    for offset in np.ndindex(*block):
        flat = int(np.ravel_multi_index(offset, block))
        index = tuple(slice(o, None, b) for o, b in zip(offset, block))
        y[flat * n : (flat + 1) * n] = padded[(slice(None), *index)]
    return y


CASES = {
    # name: (function of the fed x, x's shape, NumPy expectation of x)
    "max_pool2d-NCHW": (
        lambda x: tf.nn.max_pool2d(x, [3, 2], [2, 1], "SAME", data_format="NCHW"),
        (2, 3, 9, 8),
        lambda x: nchw(pool_np(x.transpose(0, 2, 3, 1), (3, 2), (2, 1), "SAME", "MAX")),
    ),
    "avg_pool2d": (
        lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"),
        (2, 9, 8, 3),
        lambda x: pool_np(x, (3, 3), (2, 2), "SAME", "AVG"),
    ),
    "max_pool_v2-1d": (
        lambda x: tf.nn.max_pool_v2(x, [3], [2], "SAME"),
        (2, 9, 3),
        lambda x: pool_np(x[:, None], (1, 3), (1, 2), "SAME", "MAX")[:, 0],
    ),
    "avg_pool1d-NCW": (
        lambda x: tf.nn.avg_pool1d(x, 2, 1, "VALID", data_format="NCW"),
        (2, 3, 9),
        lambda x: pool_np(x.transpose(0, 2, 1)[:, None], (1, 2), (1, 1), "VALID", "AVG")[
            :, 0
        ].transpose(0, 2, 1),
    ),
    "avg_pool_v2-NCHW": (
        lambda x: tf.nn.avg_pool_v2(x, 2, 2, "VALID", data_format="NCHW"),
        (1, 2, 6, 7),
        lambda x: nchw(pool_np(x.transpose(0, 2, 3, 1), (2, 2), (2, 2), "VALID", "AVG")),
    ),
    "max_pool1d": (
        lambda x: tf.nn.max_pool1d(x, 3, 3, "SAME"),
        (2, 10, 2),
        lambda x: pool_np(x[:, None], (1, 3), (1, 3), "SAME", "MAX")[:, 0],
    ),
    "pool-max-dilated": (
        lambda x: tf.nn.pool(x, [3, 2], "MAX", "VALID", dilation_rate=[2, 3]),
        (2, 9, 10, 3),
        lambda x: pool_np(x, (3, 2), (1, 1), "VALID", "MAX", (2, 3)),
    ),
    "pool-avg-dilated-NCHW": (
        lambda x: tf.nn.pool(x, [2, 2], "AVG", "VALID", dilations=[2, 2], data_format="NCHW"),
        (1, 2, 7, 8),
        lambda x: nchw(pool_np(x.transpose(0, 2, 3, 1), (2, 2), (1, 1), "VALID", "AVG", (2, 2))),
    ),
    "pool-avg-same-strided": (
        lambda x: tf.nn.pool(x, [3, 3], "AVG", "SAME", strides=[2, 1]),
        (2, 9, 8, 3),
        lambda x: pool_np(x, (3, 3), (2, 1), "SAME", "AVG"),
    ),
    "pool-max-1d-dilated": (
        lambda x: tf.nn.pool(x, [2], "MAX", "VALID", dilation_rate=[3]),
        (2, 11, 3),
        lambda x: pool_np(x[:, None], (1, 2), (1, 1), "VALID", "MAX", (1, 3))[:, 0],
    ),
    "space_to_depth": (
        lambda x: tf.space_to_depth(x, 2),
        (2, 6, 4, 3),
        lambda x: space_to_depth_np(x, 2),
    ),
    "space_to_depth-NCHW": (
        lambda x: tf.nn.space_to_depth(x, 3, data_format="NCHW"),
        (1, 2, 6, 3),
        lambda x: nchw(space_to_depth_np(x.transpose(0, 2, 3, 1), 3)),
    ),
    "depth_to_space": (
        lambda x: tf.depth_to_space(tf.space_to_depth(x, 2), 2),
        (2, 6, 4, 3),
        lambda x: x,
    ),
    "depth_to_space-blocks": (
        lambda x: tf.nn.depth_to_space(x, 2),
        (1, 2, 3, 8),
        lambda x: np.array(
            [
                [
                    [x[0, i // 2, j // 2, ((i % 2) * 2 + j % 2) * 2 + c] for c in range(2)]
                    for j in range(6)
                ]
                for i in range(4)
            ]
        )[None],
    ),
    "space_to_batch_nd": (
        lambda x: tf.space_to_batch_nd(x, [2, 3], [[1, 0], [2, 2]]),
        (2, 5, 8, 3),
        lambda x: space_to_batch_np(x, (2, 3), [(1, 0), (2, 2)]),
    ),
    "space_to_batch_nd-1d-batch-free": (
        lambda x: tf.space_to_batch_nd(x, [3], [[1, 1]]),
        (2, 7, 4, 3),
        lambda x: space_to_batch_np(x, (3,), [(1, 1)]),
    ),
    "batch_to_space_nd-inverse": (
        lambda x: tf.batch_to_space_nd(
            tf.space_to_batch_nd(x, [2, 3], [[1, 0], [2, 2]]), [2, 3], [[1, 0], [2, 2]]
        ),
        (2, 5, 8, 3),
        lambda x: x,
    ),
    "space_to_batch": (
        lambda x: tf.space_to_batch(x, [[1, 1], [0, 2]], block_size=2),
        (1, 4, 4, 2),
        lambda x: space_to_batch_np(x, (2, 2), [(1, 1), (0, 2)]),
    ),
    "batch_to_space": (
        lambda x: tf.batch_to_space(x, [[0, 1], [1, 0]], block_size=2),
        (8, 2, 3, 2),
        lambda x: batch_to_space_np(x),
    ),
}


def batch_to_space_np(x):
    """batch_to_space(x, crops [[0, 1], [1, 0]], 2) by its definition: x's batch b = (o1*2 +
    o2)*N + n holds pixel (i*2 + o1, j*2 + o2) of image n; then the crops are cut."""
    n = x.shape[0] // 4
    full = np.zeros((n, x.shape[1] * 2, x.shape[2] * 2, x.shape[3]), x.dtype)
    for o1 in range(2):
        for o2 in range(2):
            full[:, o1::2, o2::2] = x[(o1 * 2 + o2) * n : (o1 * 2 + o2 + 1) * n]
    return full[:, 0:-1, 1:]


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for k, (name, (fn, shape, want)) in enumerate(CASES.items()):
            x = RNG.standard_normal(shape).astype("float32")
            xt = b.feed(x, [None, *shape[1:]] if k % 2 else "same")
            b.add(name, fn(xt), want(x), 1e-5, 1e-6)
        for dtype in ("float32", "float64"):
            x = RNG.standard_normal((2, 9, 8, 3)).astype(dtype)
            f = RNG.standard_normal((3, 3, 3, 4)).astype(dtype)
            xt = b.feed(x)
            rtol, atol = (1e-5, 1e-5) if dtype == "float32" else (1e-12, 1e-12)
            b.add(
                f"convolution-dilated-{dtype}",
                tf.nn.convolution(xt, f, "SAME", dilation_rate=[2, 2]),
                conv_np(x, f, (1, 1), "SAME", (2, 2)),
                rtol,
                atol,
            )
            b.add(
                f"convolution-NCHW-strided-{dtype}",
                tf.nn.convolution(b.feed(nchw(x)), f, "VALID", strides=[2, 1], data_format="NCHW"),
                nchw(conv_np(x, f, (2, 1), "VALID")),
                rtol,
                atol,
            )
            x1 = x[:, 0]  # [N, W, C]
            want = conv_np(x1[:, None], f[1:2], (1, 2), "SAME")[:, 0]
            b.add(
                f"convolution-1d-{dtype}",
                tf.nn.convolution(b.feed(x1), f[1], "SAME", strides=[2]),
                want,
                rtol,
                atol,
            )
            want = conv_np(x1[:, None], f[1:2], (1, 1), "VALID", (1, 2))[:, 0]
            b.add(
                f"convolution-1d-NCW-dilated-{dtype}",
                tf.nn.convolution(
                    b.feed(np.ascontiguousarray(x1.transpose(0, 2, 1))),
                    f[1],
                    "VALID",
                    dilations=[2],
                    data_format="NCW",
                ),  # fmt: skip
                np.ascontiguousarray(want.transpose(0, 2, 1)),
                rtol,
                atol,
            )
            b.add(
                f"atrous_conv2d-{dtype}",
                tf.nn.atrous_conv2d(xt, f, 3, "SAME"),
                conv_np(x, f, (1, 1), "SAME", (3, 3)),
                rtol,
                atol,
            )
            dy = RNG.standard_normal((2, 9, 8, 4)).astype(dtype)
            b.add(
                f"atrous_conv2d_transpose-{dtype}",
                tf.nn.atrous_conv2d_transpose(b.feed(dy), f, [2, 9, 8, 3], 2, "SAME"),
                conv_input_grad_np(x.shape, f, dy, (1, 1), "SAME", (2, 2)),
                rtol,
                atol,
            )
            dy = RNG.standard_normal((2, 5, 4, 4)).astype(dtype)
            b.add(
                f"conv2d_backprop_input-NCHW-{dtype}",
                tf.nn.conv2d_backprop_input(
                    [2, 3, 9, 8], f, b.feed(nchw(dy)), [1, 1, 2, 2], "SAME", data_format="NCHW"
                ),
                nchw(conv_input_grad_np(x.shape, f, dy, (2, 2), "SAME")),
                rtol,
                atol,
            )
            b.add(
                f"conv2d_backprop_filter-NCHW-{dtype}",
                tf.nn.conv2d_backprop_filter(
                    b.feed(nchw(x)),
                    [3, 3, 3, 4],
                    b.feed(nchw(dy)),
                    [1, 1, 2, 2],
                    "SAME",
                    data_format="NCHW",
                ),  # fmt: skip
                conv_filter_grad_np(x, (3, 3, 3, 4), dy, (2, 2), "SAME"),
                rtol,
                atol * 10,
            )
            # the V2 ops' wrappers take the tensors whose shapes the gradients have (TF 2.21
            # declares the ops but has no kernel for them)
            b.add(
                f"conv2d_backprop_input_v2-NCHW-{dtype}",
                tf.conv2d_backprop_input_v2(
                    b.feed(nchw(x)), f, b.feed(nchw(dy)), [1, 1, 2, 2], "SAME", data_format="NCHW"
                ),
                nchw(conv_input_grad_np(x.shape, f, dy, (2, 2), "SAME")),
                rtol,
                atol,
            )
            b.add(
                f"conv2d_backprop_filter_v2-{dtype}",
                tf.conv2d_backprop_filter_v2(xt, f, b.feed(dy), [1, 2, 2, 1], "SAME"),
                conv_filter_grad_np(x, (3, 3, 3, 4), dy, (2, 2), "SAME"),
                rtol,
                atol * 10,
            )
            b.add(
                f"conv2d_backprop_input-{dtype}",
                tf.nn.conv2d_backprop_input([2, 9, 8, 3], f, b.feed(dy), 2, "SAME"),
                conv_input_grad_np(x.shape, f, dy, (2, 2), "SAME"),
                rtol,
                atol,
            )
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_conv_api(case):
    BATCH.check(case)


def test_required_space_to_batch_paddings_and_with_space_to_batch():
    paddings, crops = tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [2, 2]])
    with tf.Session() as sess:
        p, c = sess.run([paddings, crops])
    np.testing.assert_array_equal(p, [[1, 0], [2, 3]])  # 5 + 1 = 6 fits 2; 7 + 4 = 11 needs 1
    np.testing.assert_array_equal(c, [[0, 0], [0, 1]])
    x = RNG.standard_normal((2, 9, 8, 3)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
    y = tf.nn.with_space_to_batch(
        tf.constant(x), [2, 2], "SAME",
        lambda t, n, pad: tf.nn.conv2d(t, f, [1, 1, 1, 1], pad), filter_shape=[3, 3],
    )  # fmt: skip
    assert y.op.type == "Slice" and y.shape.as_list() == [2, 9, 8, 2]
    with tf.Session() as sess:
        got = sess.run(y)
    np.testing.assert_allclose(got, conv_np(x, f, (1, 1), "SAME", (2, 2)), rtol=1e-5, atol=1e-5)


def test_shapes_and_gradients_flow():
    x = tf.placeholder(tf.float32, [None, 8, 6, 4])
    s = tf.space_to_depth(x, 2)
    assert s.shape.as_list() == [None, 4, 3, 16]
    b = tf.space_to_batch_nd(x, [2, 2], [[0, 0], [1, 1]])
    assert b.shape.as_list() == [None, 4, 4, 4]
    assert tf.nn.max_pool1d(tf.placeholder(tf.float32, [3, 9, 2]), 2, 2, "VALID").shape == (3, 4, 2)
    p = tf.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[2, 2])
    assert p.shape.as_list() == [None, 6, 4, 4]
    for y in (s, b, p):
        (g,) = tf.gradients(tf.reduce_sum(y), x)
        assert g.shape.as_list() == [None, 8, 6, 4]
    xv = RNG.standard_normal((2, 8, 6, 4)).astype(np.float32)
    (g,) = tf.gradients(tf.reduce_sum(s * s), x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: xv}), 2 * xv, rtol=1e-6)


def test_errors_read_as_tensorflow_s():
    x = tf.placeholder(tf.float32, [1, 5, 5, 3])
    with pytest.raises(ValueError, match="Image height 5 and width 5 should be divisible by"):
        tf.space_to_depth(x, 2)
    with pytest.raises(ValueError, match="Value for attr 'block_size' of 1 must be at least"):
        tf.space_to_depth(x, 1)
    with pytest.raises(ValueError, match="Dimension size must be evenly divisible by 4 but is 3"):
        tf.depth_to_space(x, 2)
    with pytest.raises(ValueError, match=r"padded_shape\[1\]=5 is not divisible by block_shape"):
        tf.space_to_batch_nd(x, [1, 2], [[0, 0], [0, 0]])
    with pytest.raises(
        ValueError, match=r"paddings should have shape \[2, 2\] instead of \[1, 2\]"
    ):
        tf.space_to_batch_nd(x, [1, 2], [[0, 0]])
    with pytest.raises(ValueError, match="Dimension size must be evenly divisible by 4 but is 1"):
        tf.batch_to_space_nd(x, [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="every dimension of .* but the batch known"):
        tf.space_to_depth(tf.placeholder(tf.float32, [1, None, 4, 3]), 2)
    with pytest.raises(ValueError, match="pooling with 'SAME' padding is not implemented for"):
        tf.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2])
    with pytest.raises(ValueError, match="strides > 1 not supported in conjunction with"):
        tf.nn.pool(x, [2, 2], "AVG", "VALID", dilation_rate=[2, 2], strides=[2, 2])
    with pytest.raises(ValueError, match="Invalid pooling_type: MIN"):
        tf.nn.pool(x, [2, 2], "MIN", "VALID")
    with pytest.raises(ValueError, match="Input tensor must be of rank 3, 4 or 5 but was 6"):
        tf.nn.max_pool_v2(tf.placeholder(tf.float32, [1, 4, 4, 4, 4, 1]), 2, 2, "VALID")
    with pytest.raises(ValueError, match="rate 0 cannot be less than one"):
        tf.nn.atrous_conv2d(x, tf.zeros([3, 3, 3, 1]), 0, "SAME")
    with pytest.raises(ValueError, match="data_format must be 'NWC' or 'NCW'"):
        tf.nn.max_pool1d(tf.placeholder(tf.float32, [1, 5, 3]), 2, 2, "VALID", data_format="NHWC")
    with pytest.raises(ValueError, match="ksize should be of length 1, 2 or 4 but was 3"):
        tf.nn.max_pool2d(x, [1, 2, 2], 2, "VALID")
