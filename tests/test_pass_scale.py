"""fold_channel_scales: a constant per-channel scale after a conv or MatMul joins its filter."""

import numpy as np
from passcheck import feed, front, program, run

import tfc as tf
from tfc.passes.scale import fold_channel_scales

RNG = np.random.default_rng(0)


def _fold(fetches, feeds):
    return run(fold_channel_scales, front(program(fetches, feeds)))


def _ops(graph):
    return sorted(graph.op_type(n) for n in graph.node_names())


def _const_input(graph, name, index):
    src, _ = graph.input_edges(name)[index]
    assert graph.op_type(src) == "Const"
    return graph.node(src)["attrs"]["value"]


def _conv(x, channels=4, name="conv"):
    f = RNG.standard_normal((3, 3, 2, channels)).astype(np.float32)
    return tf.nn.conv2d(x, tf.constant(f), [1, 1, 1, 1], "SAME", name=name), f


def test_batch_norm_after_a_conv_becomes_its_filter_and_a_bias():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    y, f = _conv(x)
    scale = RNG.uniform(0.5, 1.5, 4).astype(np.float32)
    shift = RNG.standard_normal(4).astype(np.float32)
    tf.nn.relu(tf.add(tf.multiply(y, scale, name="bn"), shift), name="out")
    g = _fold([("out", 0)], [feed("x", (1, 5, 5, 2))])
    assert _ops(g) == ["Add", "Const", "Const", "Conv2D", "Feed", "Relu"]
    np.testing.assert_array_equal(_const_input(g, "conv", 1), f * scale)
    assert g.input_edges("out")[0][0] == g.consumers("conv")[0][0]  # Add(conv, shift)


def test_a_bias_between_conv_and_scale_is_scaled_too():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    y, f = _conv(x)
    bias = RNG.standard_normal(4).astype(np.float32)
    scale = RNG.uniform(0.5, 1.5, (1, 1, 1, 4)).astype(np.float32)
    biased = tf.nn.bias_add(y, bias, name="biased")
    tf.multiply(scale, biased, name="bn")  # the constant first
    g = _fold([("bn", 0)], [feed("x", (1, 5, 5, 2))])
    assert _ops(g) == ["BiasAdd", "Const", "Const", "Conv2D", "Feed"]
    assert g.graph_attrs["fetches"] == [("biased", 0)]
    np.testing.assert_array_equal(_const_input(g, "conv", 1), f * scale.reshape(4))
    np.testing.assert_array_equal(_const_input(g, "biased", 1), bias * scale.reshape(4))


def test_depthwise_and_matmul_filters_take_the_scale_along_their_output_channels():
    x = tf.placeholder(tf.float32, [1, 5, 5, 3], name="x")
    v = tf.placeholder(tf.float32, [2, 5], name="v")
    fd = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)  # channel c*2 + m
    w = RNG.standard_normal((4, 5)).astype(np.float32)
    s6, s4 = (RNG.uniform(0.5, 1.5, n).astype(np.float32) for n in (6, 4))
    depth = tf.nn.depthwise_conv2d(x, tf.constant(fd), [1, 1, 1, 1], "SAME", name="depth")
    tf.multiply(depth, s6, name="a")
    tf.multiply(tf.matmul(v, tf.constant(w), transpose_b=True, name="mm"), s4, name="b")
    feeds = [feed("x", (1, 5, 5, 3)), feed("v", (2, 5))]
    g = _fold([("a", 0), ("b", 0)], feeds)
    assert "Mul" not in _ops(g)
    (depthwise,) = [n for n in g.node_names() if g.op_type(n) == "DepthwiseConv2dNative"]
    np.testing.assert_array_equal(_const_input(g, depthwise, 1), fd * s6.reshape(3, 2))
    np.testing.assert_array_equal(_const_input(g, "mm", 1), w * s4[:, None])


def test_what_is_not_a_per_channel_constant_scale_stays():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    s = tf.placeholder(tf.float32, [4], name="s")
    rows = RNG.standard_normal((1, 5, 1, 1)).astype(np.float32)
    y1, _ = _conv(x, name="c1")
    tf.multiply(y1, rows, name="by_rows")  # varies along the height, not the channels
    y2, _ = _conv(x, name="c2")
    tf.multiply(y2, s, name="fed_scale")
    y3, _ = _conv(x, name="c3")
    tf.multiply(y3, np.float32(2.0), name="fetched_too")  # and c3 itself is fetched
    w = tf.placeholder(tf.float32, [3, 3, 2, 4], name="w")
    y4 = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="c4")
    tf.multiply(y4, np.ones(4, np.float32), name="fed_filter")
    y5, _ = _conv(x, name="c5")
    tf.multiply(y5, np.ones((2, 1, 1, 4), np.float32), name="broadcasts")  # to 2 images
    fetches = [("by_rows", 0), ("fed_scale", 0), ("fetched_too", 0), ("c3", 0)]
    fetches += [("fed_filter", 0), ("broadcasts", 0)]
    feeds = [feed("x", (1, 5, 5, 2)), feed("s", (4,)), feed("w", (3, 3, 2, 4))]
    g = _fold(fetches, feeds)
    assert _ops(g).count("Mul") == 5


def test_folded_programs_compute_what_unfolded_ones_do():
    """Conv2D, depthwise, MatMul (plain and transpose_b) each followed by a batch norm, in one
    program compiled with and without the pass, against NumPy in float64."""
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    v = RNG.standard_normal((2, 5)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    fd = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
    w = RNG.standard_normal((5, 3)).astype(np.float32)
    scales = [RNG.uniform(0.5, 1.5, n).astype(np.float32) for n in (4, 6, 3, 3)]
    shifts = [RNG.standard_normal(n).astype(np.float32) for n in (4, 6, 3, 3)]
    with tf.Graph().as_default():
        xt, vt = tf.placeholder(tf.float32, x.shape), tf.placeholder(tf.float32, v.shape)
        raw = [
            tf.nn.conv2d(xt, tf.constant(f), [1, 1, 1, 1], "SAME"),
            tf.nn.depthwise_conv2d(xt, tf.constant(fd), [1, 1, 1, 1], "VALID"),
            tf.matmul(vt, tf.constant(w)),
            tf.matmul(vt, tf.constant(w.T.copy()), transpose_b=True),
        ]
        outs = [tf.nn.relu(r * s + b) for r, s, b in zip(raw, scales, shifts)]
        results = {}
        for label, options in (("on", tf.CompileOptions()), ("off", None)):
            options = options or tf.CompileOptions(disable=["scale"])
            with tf.Session(config=options) as sess:
                results[label] = sess.run(outs, {xt: x, vt: v})
    x64, v64 = x.astype(np.float64), v.astype(np.float64)
    conv = tf.nn.conv2d(x64, f.astype(np.float64), [1, 1, 1, 1], "SAME")
    with tf.Session() as sess:
        conv, depth = sess.run(
            [conv, tf.nn.depthwise_conv2d(x64, fd.astype(np.float64), [1, 1, 1, 1], "VALID")]
        )
    expected = [conv, depth, v64 @ w, v64 @ w]
    for got_on, got_off, raw64, s, b in zip(
        results["on"], results["off"], expected, scales, shifts
    ):
        want = np.maximum(raw64 * s + b, 0)
        np.testing.assert_allclose(got_on, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got_on, got_off, rtol=1e-5, atol=1e-5)
