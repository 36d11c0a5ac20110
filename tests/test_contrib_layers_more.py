"""tf.contrib.layers' conv2d, pools, flatten, dropout, batch_norm, one_hot_encoding and
regularizers: contrib's variable names, NCHW data_format, and the numbers against NumPy."""

import numpy as np
import pytest

import tfc as tf

layers = tf.contrib.layers
windows = np.lib.stride_tricks.sliding_window_view
RNG = np.random.default_rng(12)
X = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def run():
    tf.reset_default_graph()
    x = tf.constant(X)
    x_nchw = tf.constant(X.transpose(0, 3, 1, 2))
    out = {
        "conv": layers.conv2d(x, 4, 3),
        "conv_nchw": layers.conv2d(x_nchw, 4, 3, data_format="NCHW", scope="Conv", reuse=True),
        "atrous": layers.convolution2d(x, 2, 3, rate=2, padding="VALID", activation_fn=None),
        "strided": layers.conv2d(x, 2, [3, 1], stride=2, biases_initializer=None),
        "seq": layers.convolution(tf.constant(X[:, 0]), 2, 3, scope="seq"),
        "max": layers.max_pool2d(x, 2),
        "avg_nchw": layers.avg_pool2d(x_nchw, [3, 2], stride=[1, 2], data_format="NCHW"),
        "flat": layers.flatten(x),
        "kept": layers.dropout(x, keep_prob=0.5, is_training=False),
        "dropped": layers.dropout(x, keep_prob=0.5, seed=3),
        "onehot": layers.one_hot_encoding([0, 2, 1], 3, on_value=5.0),
        "l2": layers.l2_regularizer(0.5)(x),
        "l1_l2": layers.l1_l2_regularizer(0.5, 0.25)(x),
    }
    with tf.variable_scope("bn"):
        out["bn"] = layers.batch_norm(x, updates_collections=None, scale=True)
    out["bn_nchw"] = layers.batch_norm(x_nchw, data_format="NCHW", is_training=False)
    out["bn_collected"] = layers.batch_norm(x, scope="collected")
    variables = tf.global_variables()
    updates = [u.name for u in tf.get_collection(tf.GraphKeys.UPDATE_OPS)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values, weights = sess.run([out, {v.op.name: v for v in variables}])
        after = sess.run({v.op.name: v for v in variables})
    return values, weights, after, updates


def test_variable_names_follow_contrib(run):
    _, weights, _, updates = run
    shapes = {name: list(w.shape) for name, w in weights.items()}
    assert shapes == {
        "Conv/weights": [3, 3, 3, 4], "Conv/biases": [4],
        "Conv_1/weights": [3, 3, 3, 2], "Conv_1/biases": [2],
        "Conv_2/weights": [3, 1, 3, 2],
        "seq/weights": [3, 3, 2], "seq/biases": [2],
        "bn/BatchNorm/beta": [3], "bn/BatchNorm/gamma": [3],
        "bn/BatchNorm/moving_mean": [3], "bn/BatchNorm/moving_variance": [3],
        "BatchNorm/beta": [3], "BatchNorm/moving_mean": [3], "BatchNorm/moving_variance": [3],
        "collected/beta": [3], "collected/moving_mean": [3], "collected/moving_variance": [3],
    }  # fmt: skip
    # only the default layer's updates wait in UPDATE_OPS: bn's ran in place, NCHW's is frozen
    assert len(updates) == 2 and all(u.startswith("collected/") for u in updates)


def _np_conv(x, k, rate=1, stride=1, padding="SAME"):
    kh, kw = (k.shape[0] - 1) * rate + 1, (k.shape[1] - 1) * rate + 1
    if padding == "SAME":  # TF's: the total padding that makes ceil(size / stride) outputs
        ph, pw = (max((-(-n // stride) - 1) * stride + k - n, 0)
                  for n, k in zip(x.shape[1:3], (kh, kw)))  # fmt: skip
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    win = windows(x, (kh, kw), axis=(1, 2))[:, ::stride, ::stride, :, ::rate, ::rate]
    return np.einsum("bhwcxy,xycf->bhwf", win, k)


def test_numbers_match_numpy(run):
    v, w, _, _ = run
    conv = np.maximum(_np_conv(X, w["Conv/weights"]) + w["Conv/biases"], 0)
    np.testing.assert_allclose(v["conv"], conv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v["conv_nchw"], conv.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)
    atrous = _np_conv(X, w["Conv_1/weights"], rate=2, padding="VALID") + w["Conv_1/biases"]
    np.testing.assert_allclose(v["atrous"], atrous, rtol=1e-5, atol=1e-5)
    strided = np.maximum(_np_conv(X, w["Conv_2/weights"], stride=2), 0)
    np.testing.assert_allclose(v["strided"], strided, rtol=1e-5, atol=1e-5)
    assert v["seq"].shape == (2, 6, 2)
    np.testing.assert_allclose(
        v["max"], windows(X, (2, 2), axis=(1, 2))[:, ::2, ::2].max(axis=(4, 5))
    )
    avg = windows(X, (3, 2), axis=(1, 2))[:, :, ::2].mean(axis=(4, 5))
    np.testing.assert_allclose(v["avg_nchw"], avg.transpose(0, 3, 1, 2), rtol=1e-6)
    np.testing.assert_array_equal(v["flat"], X.reshape(2, -1))
    np.testing.assert_array_equal(v["kept"], X)
    dropped = v["dropped"]
    assert np.all((dropped == 0) | np.isclose(dropped, 2 * X)) and 0.3 < np.mean(dropped == 0) < 0.7
    np.testing.assert_array_equal(v["onehot"], [[5, 0, 0], [0, 0, 5], [0, 5, 0]])
    assert v["l2"] == pytest.approx(0.5 * np.sum(X**2) / 2, rel=1e-5)
    assert v["l1_l2"] == pytest.approx(0.5 * np.abs(X).sum() + 0.25 * np.sum(X**2) / 2, rel=1e-5)


def test_batch_norm_normalizes_and_updates_in_place(run):
    v, w, after, _ = run
    mean, var = X.mean(axis=(0, 1, 2)), X.var(axis=(0, 1, 2))
    np.testing.assert_allclose(v["bn"], (X - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-4)
    # updates_collections=None: the moving averages moved (decay 0.999) when bn ran
    np.testing.assert_allclose(after["bn/BatchNorm/moving_mean"], 0.001 * mean, rtol=1e-4)
    np.testing.assert_allclose(v["bn_nchw"], X.transpose(0, 3, 1, 2) / np.sqrt(1 + 1e-3),
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_array_equal(after["BatchNorm/moving_mean"], np.zeros(3))
    np.testing.assert_array_equal(after["collected/moving_mean"], np.zeros(3))  # not run


def test_bad_arguments():
    with pytest.raises(ValueError, match="data_format has to be NHWC-style or NCHW-style"):
        layers.conv2d(X, 2, 3, data_format="HWCN")
    with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC"):
        layers.max_pool2d(X, 2, data_format="NWHC")
    with pytest.raises(ValueError, match="Inputs must have a least 2 dimensions"):
        layers.flatten([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="batch_weights"):
        layers.batch_norm(X, batch_weights=[1.0, 1.0])


def test_arg_scope_sets_defaults_of_the_decorated_functions():
    framework = tf.contrib.framework
    ones = tf.ones_initializer()
    x = tf.constant(X)
    with framework.arg_scope([layers.conv2d, layers.fully_connected], weights_initializer=ones,
                             activation_fn=None) as outer:  # fmt: skip
        with framework.arg_scope([layers.conv2d], padding="VALID"):
            valid = layers.conv2d(x, 2, 3)
            explicit = layers.conv2d(x, 2, 3, padding="SAME", activation_fn=tf.nn.relu)
        dense = layers.fully_connected(layers.flatten(x), 2)
    with framework.arg_scope(outer):
        again = layers.conv2d(x, 2, 1)
    plain = layers.conv2d(x, 2, 1)  # no scope: xavier weights and relu again
    assert framework.current_arg_scope() == {}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        v, e, d, a, p = sess.run([valid, explicit, dense, again, plain])
    box = windows(X, (3, 3), axis=(1, 2)).sum(axis=(3, 4, 5))  # all-ones kernel: window sums
    np.testing.assert_allclose(v, np.repeat(box[..., None], 2, axis=3), rtol=1e-5)
    assert e.shape == (2, 6, 6, 2) and e.min() >= 0
    np.testing.assert_allclose(d, np.repeat(X.reshape(2, -1).sum(1, keepdims=True), 2, 1),
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_allclose(a, np.repeat(X.sum(axis=3, keepdims=True), 2, axis=3), rtol=1e-5)
    assert p.min() >= 0 and not np.allclose(p, a)
    with pytest.raises(ValueError, match="is not decorated with @add_arg_scope"):
        with framework.arg_scope([tf.nn.relu], name="r"):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with framework.arg_scope(outer, padding="SAME"):
            pass
