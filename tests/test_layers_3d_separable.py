"""tf.layers' 3-D and depthwise-separable layers: Conv3D, Conv3DTranspose, MaxPooling3D,
AveragePooling3D, SeparableConv1D/2D (classes and functions): TF1's variable names, the numbers
against NumPy, channels_first, and, where TensorFlow is importable, the same model in both."""

import numpy as np
import pytest

import tfc as tf

windows = np.lib.stride_tricks.sliding_window_view


def _model(tf_mod):
    """The layers under test in one graph, for tfc and for TF alike."""
    vol = tf_mod.placeholder(tf_mod.float32, [2, 5, 6, 4, 3], name="vol")
    img = tf_mod.placeholder(tf_mod.float32, [2, 7, 6, 3], name="img")
    seq = tf_mod.placeholder(tf_mod.float32, [2, 9, 3], name="seq")
    layers = tf_mod.layers
    outputs = {
        "conv3d": layers.conv3d(vol, 4, (2, 3, 2), activation=tf_mod.nn.relu),
        "conv3d_same": layers.Conv3D(2, 3, strides=2, padding="same", use_bias=False)(vol),
        "conv3d_t": layers.conv3d_transpose(vol, 2, (2, 2, 3), strides=(2, 1, 2)),
        "conv3d_t_same": layers.Conv3DTranspose(2, 3, strides=2, padding="same")(vol),
        "max3d": layers.max_pooling3d(vol, 2, 2),
        "avg3d": layers.AveragePooling3D((2, 3, 2), (1, 2, 2), padding="same")(vol),
        "sep2d": layers.separable_conv2d(img, 5, 3, depth_multiplier=2),
        "sep2d_dilated": layers.SeparableConv2D(4, (2, 3), padding="same", dilation_rate=2)(img),
        "sep2d_strided": layers.separable_conv2d(img, 2, 3, strides=2, padding="same"),
        "sep1d": layers.separable_conv1d(seq, 4, 3, depth_multiplier=2, strides=2),
        "sep1d_causal": layers.SeparableConv1D(3, 3, padding="causal", dilation_rate=2)(seq),
    }
    return (vol, img, seq), outputs


def _weights_and_feed(tf_mod, variables, inputs):
    rng = np.random.default_rng(5)
    assigns = [
        tf_mod.assign(v, (rng.standard_normal(v.shape.as_list()) * 0.5).astype(np.float32))
        for v in variables
    ]
    data = np.random.default_rng(6)
    feed = {t: data.standard_normal(t.shape.as_list()).astype(np.float32) for t in inputs}
    return assigns, feed


def _run(tf_mod):
    graph = tf_mod.Graph()
    with graph.as_default():
        inputs, outputs = _model(tf_mod)
        variables = tf_mod.global_variables()
        assigns, feed = _weights_and_feed(tf_mod, variables, inputs)
        loss = tf_mod.add_n([tf_mod.reduce_sum(tf_mod.sin(y)) for y in outputs.values()])
        grads = tf_mod.gradients(loss, list(inputs) + variables)
        with tf_mod.Session() as sess:
            sess.run(assigns)
            values, weights, grad_values = sess.run([outputs, variables, grads], feed)
    names = [v.op.name for v in variables]
    feeds = {t.op.name: value for t, value in feed.items()}
    return names, dict(zip(names, weights)), feeds, values, grad_values


@pytest.fixture(scope="module")
def tfc_run():
    return _run(tf)


def test_variable_names_and_shapes_follow_tf1(tfc_run):
    names, weights, _, values, _ = tfc_run
    shapes = {name: list(w.shape) for name, w in weights.items()}
    assert shapes == {
        "conv3d/kernel": [2, 3, 2, 3, 4], "conv3d/bias": [4],
        "conv3d_1/kernel": [3, 3, 3, 3, 2],
        "conv3d_transpose/kernel": [2, 2, 3, 2, 3], "conv3d_transpose/bias": [2],
        "conv3d_transpose_1/kernel": [3, 3, 3, 2, 3], "conv3d_transpose_1/bias": [2],
        "separable_conv2d/depthwise_kernel": [3, 3, 3, 2],
        "separable_conv2d/pointwise_kernel": [1, 1, 6, 5], "separable_conv2d/bias": [5],
        "separable_conv2d_1/depthwise_kernel": [2, 3, 3, 1],
        "separable_conv2d_1/pointwise_kernel": [1, 1, 3, 4], "separable_conv2d_1/bias": [4],
        "separable_conv2d_2/depthwise_kernel": [3, 3, 3, 1],
        "separable_conv2d_2/pointwise_kernel": [1, 1, 3, 2], "separable_conv2d_2/bias": [2],
        "separable_conv1d/depthwise_kernel": [3, 3, 2],
        "separable_conv1d/pointwise_kernel": [1, 6, 4], "separable_conv1d/bias": [4],
        "separable_conv1d_1/depthwise_kernel": [3, 3, 1],
        "separable_conv1d_1/pointwise_kernel": [1, 3, 3], "separable_conv1d_1/bias": [3],
    }  # fmt: skip
    assert values["conv3d_t"].shape == (2, 10, 7, 9, 2)  # size * stride + max(k - stride, 0)
    assert values["conv3d_t_same"].shape == (2, 10, 12, 8, 2)
    assert values["conv3d_same"].shape == (2, 3, 3, 2, 2)
    assert values["sep1d"].shape == (2, 4, 4) and values["sep1d_causal"].shape == (2, 9, 3)


def _np_conv3d(x, k):
    win = windows(x, k.shape[:3], axis=(1, 2, 3))  # [b, d, h, w, c, kd, kh, kw]
    return np.einsum("bdhwcxyz,xyzcf->bdhwf", win, k)


def _np_separable2d(x, depthwise, pointwise):
    win = windows(x, depthwise.shape[:2], axis=(1, 2))  # [b, h, w, c, kh, kw]
    mid = np.einsum("bhwcxy,xycm->bhwcm", win, depthwise)
    return mid.reshape(*mid.shape[:3], -1) @ pointwise[0, 0]


def test_layers_compute_what_numpy_computes(tfc_run):
    _, w, feed, values, _ = tfc_run
    vol, img, seq = feed["vol"], feed["img"], feed["seq"]
    conv = _np_conv3d(vol, w["conv3d/kernel"]) + w["conv3d/bias"]
    np.testing.assert_allclose(values["conv3d"], np.maximum(conv, 0), rtol=1e-5, atol=1e-5)
    pooled = windows(vol[:, :4, :6, :4], (2, 2, 2), axis=(1, 2, 3))[:, ::2, ::2, ::2]
    np.testing.assert_allclose(values["max3d"], pooled.max(axis=(5, 6, 7)))
    sep = _np_separable2d(
        img, w["separable_conv2d/depthwise_kernel"], w["separable_conv2d/pointwise_kernel"]
    )
    np.testing.assert_allclose(
        values["sep2d"], sep + w["separable_conv2d/bias"], rtol=1e-5, atol=1e-5
    )
    # 1-D: the 2-D layer's numbers on [batch, 1, width, channels], every second output
    as_2d = _np_separable2d(
        seq[:, None],
        w["separable_conv1d/depthwise_kernel"][None],
        w["separable_conv1d/pointwise_kernel"][None],
    )[:, 0, ::2]
    np.testing.assert_allclose(
        values["sep1d"], as_2d + w["separable_conv1d/bias"], rtol=1e-5, atol=1e-5
    )
    # causal: left-padded by (k - 1) * rate, so output t sees inputs t, t - 2, t - 4
    d, p = w["separable_conv1d_1/depthwise_kernel"], w["separable_conv1d_1/pointwise_kernel"]
    padded = np.pad(seq, [(0, 0), (4, 0), (0, 0)])
    mid = sum(padded[:, 2 * j : 2 * j + 9] * d[j, :, 0] for j in range(3))
    np.testing.assert_allclose(
        values["sep1d_causal"], mid @ p[0] + w["separable_conv1d_1/bias"], rtol=1e-5, atol=1e-5
    )


def test_channels_first_moves_the_channels_and_keeps_the_weights():
    tf.reset_default_graph()
    rng = np.random.default_rng(8)
    vol = rng.standard_normal((1, 3, 4, 5, 2)).astype(np.float32)
    img = rng.standard_normal((1, 6, 5, 3)).astype(np.float32)
    last = [
        tf.layers.conv3d(vol, 3, 2, name="c"),
        tf.layers.max_pooling3d(vol, 2, 1),
        tf.layers.separable_conv2d(img, 2, 3, name="s"),
    ]
    first = [
        tf.layers.conv3d(vol.transpose(0, 4, 1, 2, 3), 3, 2, data_format="channels_first",
                         name="c", reuse=True),
        tf.layers.max_pooling3d(vol.transpose(0, 4, 1, 2, 3), 2, 1, data_format="channels_first"),
        tf.layers.separable_conv2d(img.transpose(0, 3, 1, 2), 2, 3, data_format="channels_first",
                                   name="s", reuse=True),
    ]  # fmt: skip
    assert len(tf.global_variables()) == 5
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([last, first])
    np.testing.assert_allclose(b[0], a[0].transpose(0, 4, 1, 2, 3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b[1], a[1].transpose(0, 4, 1, 2, 3))
    np.testing.assert_allclose(b[2], a[2].transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)


def test_match_tensorflow(tfc_run):
    real = pytest.importorskip("tensorflow")
    v1 = real.compat.v1
    v1.disable_eager_execution()
    names, weights, _, values, grads = tfc_run
    tf_names, _, _, tf_values, tf_grads = _run(v1)
    assert names == tf_names
    for key, want in tf_values.items():
        np.testing.assert_allclose(values[key], want, rtol=1e-4, atol=1e-4, err_msg=key)
    for name, got, want in zip(["vol", "img", "seq", *names], grads, tf_grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=name)
