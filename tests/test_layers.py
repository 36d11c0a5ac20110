"""tf.layers: TF1's variable names and scopes, the Layer base class, regularization, batch
normalization's moving averages, each layer's numbers; the layers CNN sample trained in a
session and natively; and, where TensorFlow is importable, the same model in both."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.layers import regularizers
from tfc.tools.cli import main as tfc_main

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
RNG = np.random.default_rng(16)


def _names(variables) -> list[str]:
    return [v.op.name for v in variables]


# -- names, scopes, reuse ---------------------------------------------------------------------
def test_variable_names_follow_tf1():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    y = tf.layers.conv2d(x, 4, 3)
    y = tf.layers.batch_normalization(y, training=True)
    y = tf.layers.conv2d(y, 4, 3, padding="same")
    y = tf.layers.conv2d_transpose(y, 2, 3, strides=2)
    y = tf.layers.max_pooling2d(y, 2, 2)
    y = tf.layers.dense(tf.layers.flatten(tf.layers.dropout(y)), 3)
    with tf.variable_scope("seq"):
        tf.layers.conv1d(tf.placeholder(tf.float32, [None, 9, 2]), 5, 3, name="c")
        tf.layers.dense(tf.placeholder(tf.float32, [None, 2]), 1, use_bias=False)
    assert _names(tf.global_variables()) == [
        "conv2d/kernel", "conv2d/bias",
        "batch_normalization/gamma", "batch_normalization/beta",
        "batch_normalization/moving_mean", "batch_normalization/moving_variance",
        "conv2d_1/kernel", "conv2d_1/bias",
        "conv2d_transpose/kernel", "conv2d_transpose/bias",
        "dense/kernel", "dense/bias",
        "seq/c/kernel", "seq/c/bias", "seq/dense/kernel",
    ]  # fmt: skip
    trainable = _names(tf.trainable_variables())
    assert "batch_normalization/moving_mean" not in trainable and "conv2d/kernel" in trainable
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("conv2d/Conv2D").type == "Conv2D"
    assert graph.get_operation_by_name("conv2d/BiasAdd").type == "BiasAdd"
    assert graph.get_operation_by_name("max_pooling2d/MaxPool").type == "MaxPool"
    assert graph.get_operation_by_name("dense/MatMul").type == "MatMul"
    assert graph.get_tensor_by_name("conv2d_transpose/kernel:0").shape.as_list() == [3, 3, 2, 4]
    assert graph.get_tensor_by_name("seq/c/kernel:0").shape.as_list() == [3, 2, 5]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [u.op.name for u in updates] == [
        "batch_normalization/AssignMovingAvg",
        "batch_normalization/AssignMovingAvg_1",
    ]


def test_reuse_shares_variables_and_names_must_be_new_otherwise():
    x = tf.placeholder(tf.float32, [None, 4])
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        a = tf.layers.dense(x, 3, name="fc")
        b = tf.layers.dense(x, 3, name="fc")
    c = tf.layers.dense(x, 3, name="model/fc", reuse=True)
    assert _names(tf.global_variables()) == ["model/fc/kernel", "model/fc/bias"]
    assert a.op.name == "model/fc/BiasAdd" and b.op.name == "model/fc_1/BiasAdd"
    with pytest.raises(ValueError, match="Variable model/fc/kernel already exists"):
        with tf.variable_scope("model"):
            tf.layers.dense(x, 3, name="fc")
    with pytest.raises(ValueError, match="Variable nothing/kernel does not exist"):
        tf.layers.dense(x, 3, name="nothing", reuse=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb, vc = sess.run([a, b, c], {x: np.ones((2, 4), np.float32)})
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(va, vc)


def test_a_model_function_called_again_with_reuse_names_its_layers_as_before():
    # TF1's scope store: entering a scope starts its sub-scope counts afresh, so the second
    # call's unnamed layers are dense, dense_1 again and find the first call's variables
    def net(x, reuse):
        with tf.variable_scope("net", reuse=reuse):
            return tf.layers.dense(tf.layers.dense(x, 3), 2)

    x = tf.placeholder(tf.float32, [None, 4])
    train, test = net(x, False), net(x, True)
    assert _names(tf.global_variables()) == [
        "net/dense/kernel",
        "net/dense/bias",
        "net/dense_1/kernel",
        "net/dense_1/bias",
    ]
    assert test.op.name == "net_1/dense_1/BiasAdd"
    # an opened scope counts, so a default name made after it avoids it (TF's names)
    with tf.variable_scope("dense"):
        pass
    assert tf.layers.dense(x, 1).op.name == "dense_1/BiasAdd"
    scopes = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="s") as vs:
            scopes.append(vs.name)
    assert scopes == ["s", "s_1", "s_2"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([train, test], {x: np.ones((2, 4), np.float32)})
    np.testing.assert_array_equal(a, b)


class Scale(tf.layers.Layer):
    """A layer of the user's own: y = x * w + c, w per feature, c a non-trainable count."""

    def build(self, input_shape):
        self.w = self.add_weight(
            "w",
            [input_shape[-1].value],
            initializer=tf.ones_initializer(),
            regularizer=regularizers.l2_regularizer(0.5),
        )
        self.c = self.add_weight("c", [], initializer=tf.zeros_initializer(), trainable=False)
        super().build(input_shape)

    def call(self, inputs):
        self.add_update(tf.assign_add(self.c, 1.0))
        return inputs * self.w + self.c


def test_a_layer_of_ones_own_builds_once_and_is_called_twice():
    layer = Scale(name="scale", activity_regularizer=regularizers.l1_regularizer(0.1))
    with pytest.raises(ValueError, match="has not been used yet"):
        _ = layer.scope_name
    x = tf.placeholder(tf.float32, [None, 3])
    first = layer(x)
    second = layer.apply(first)
    assert layer.built and layer.scope_name == "scale" and layer.name == "scale"
    assert _names(layer.trainable_weights) == ["scale/w"]
    assert _names(layer.non_trainable_variables) == ["scale/c"]
    assert _names(layer.variables) == ["scale/w", "scale/c"] and layer.count_params() == 4
    assert first.op.name.startswith("scale/") and second.op.name.startswith("scale/")
    # one weight loss (the variable is created once), one activity loss per call
    assert len(layer.losses) == 3 and len(layer.updates) == 2
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == layer.losses
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == layer.updates
    value = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, total = sess.run([second, tf.losses.get_regularization_loss()], {x: value})
    np.testing.assert_allclose(out, value)  # w = 1, c = 0
    # 0.5 * sum(w^2) / 2 + 0.1 * sum|x| / batch + 0.1 * sum|first| / batch
    np.testing.assert_allclose(total, 0.75 + 2 * 0.1 * np.abs(value).sum() / 2, rtol=1e-6)
    frozen = Scale(trainable=False, name="frozen")
    frozen(x)
    assert frozen.trainable_weights == [] and _names(frozen.weights) == ["frozen/w", "frozen/c"]
    assert "frozen/w" not in _names(tf.trainable_variables())


def test_input_specs_and_unsupported_options_fail_clearly():
    with pytest.raises(
        ValueError,
        match=r"Input 0 of layer conv2d is incompatible with the layer: "
        r"expected ndim=4, found ndim=2",
    ):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5]), 2, 3)
    with pytest.raises(ValueError, match="The last dimension of the inputs to `Dense` should be"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)
    layer = tf.layers.Dense(2)
    layer(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        layer(tf.placeholder(tf.float32, [None, 4]))
    with pytest.raises(NotImplementedError, match="weight constraints are not supported"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, 3]), 2, kernel_constraint=lambda w: w)
    with pytest.raises(NotImplementedError, match="renorm is not supported"):
        tf.layers.BatchNormalization(renorm=True)
    with pytest.raises(ValueError, match="strides > 1 not supported in conjunction with"):
        tf.layers.Conv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="`kernel_size` argument must be a tuple of 2 integers"):
        tf.layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="The `padding` argument must be one of"):
        tf.layers.Conv2D(2, 3, padding="causal")
    with pytest.raises(TypeError, match="Keyword argument not understood: kernel"):
        tf.layers.Dense(2, kernel=3)
    with pytest.raises(ValueError, match="`kernel_size` argument must be a tuple of 3 integers"):
        tf.layers.Conv3D(2, (3, 3))
    with pytest.raises(ValueError, match="Expected a strictly positive value. Received depth_"):
        tf.layers.SeparableConv2D(2, 3, depth_multiplier=0)
    with pytest.raises(TypeError, match="training must be a Python bool or a scalar bool tensor"):
        tf.layers.dropout(np.zeros((2, 2), np.float32), training=tf.constant(1.0))


# -- numbers ------------------------------------------------------------------------------------
def np_conv(x, k, stride=1, padding="VALID"):
    """NHWC convolution of x with an HWIO kernel, by loops."""
    n, h, w, _ = x.shape
    kh, kw, _, co = k.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
        ph = max((oh - 1) * stride + kh - h, 0)
        pw = max((ow - 1) * stride + kw - w, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    y = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw]
            y[:, i, j] = np.tensordot(patch, k, axes=3)
    return y


def test_layers_compute_what_numpy_computes():
    x4 = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    x3 = RNG.standard_normal((2, 9, 3)).astype(np.float32)
    kernel_init = tf.random_normal_initializer(seed=3)
    bias_init = tf.random_normal_initializer(seed=4)
    inits = {"kernel_initializer": kernel_init, "bias_initializer": bias_init}
    conv = tf.layers.Conv2D(4, (3, 2), strides=2, padding="same", activation=tf.nn.relu, **inits)
    first = tf.layers.Conv2D(4, 3, data_format="channels_first", name="nchw", **inits)
    causal = tf.layers.Conv1D(2, 3, padding="causal", dilation_rate=2, **inits)
    dense3 = tf.layers.Dense(5, bias_initializer=bias_init)
    outputs = {
        "conv": conv(x4),
        "nchw": first(np.transpose(x4, [0, 3, 1, 2])),
        "causal": causal(x3),
        "dense3": dense3(x3),
        "maxpool1d": tf.layers.max_pooling1d(x3, 3, 2, padding="same"),
        "avgpool2d-nchw": tf.layers.average_pooling2d(
            np.transpose(x4, [0, 3, 1, 2]), 2, 2, data_format="channels_first"
        ),
        "flatten": tf.layers.flatten(x4),
        "flatten-nchw": tf.layers.flatten(
            np.transpose(x4, [0, 3, 1, 2]), data_format="channels_first"
        ),
        "transpose-valid": tf.layers.conv2d_transpose(x4, 2, 3, strides=2, name="tv"),
    }
    assert outputs["transpose-valid"].shape.as_list() == [2, 15, 13, 2]
    assert outputs["flatten"].shape.as_list() == [2, 126]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(outputs)
        weights = sess.run(
            {
                "conv": [conv.kernel, conv.bias],
                "nchw": [first.kernel, first.bias],
                "causal": [causal.kernel, causal.bias],
                "dense3": [dense3.kernel, dense3.bias],
            }
        )
    k, b = weights["conv"]
    np.testing.assert_allclose(got["conv"], np.maximum(np_conv(x4, k, 2, "SAME") + b, 0), atol=1e-5)
    k, b = weights["nchw"]
    want = (np_conv(x4, k) + b).transpose([0, 3, 1, 2])
    np.testing.assert_allclose(got["nchw"], want, atol=1e-5)
    k, b = weights["causal"]  # output t sees inputs t - 4, t - 2, t
    padded = np.pad(x3, [(0, 0), (4, 0), (0, 0)])
    want = sum(padded[:, 2 * j : 2 * j + 9] @ k[j] for j in range(3)) + b
    np.testing.assert_allclose(got["causal"], want, atol=1e-5)
    k, b = weights["dense3"]
    np.testing.assert_allclose(got["dense3"], x3 @ k + b, atol=1e-5)
    windows = np.pad(x3, [(0, 0), (1, 1), (0, 0)], constant_values=-np.inf)  # SAME: 1 each side
    want = np.stack([windows[:, 2 * i : 2 * i + 3].max(axis=1) for i in range(5)], axis=1)
    np.testing.assert_array_equal(got["maxpool1d"], want)
    want = x4[:, :6].reshape(2, 3, 2, 3, 2, 3).mean(axis=(2, 4)).transpose([0, 3, 1, 2])
    np.testing.assert_allclose(got["avgpool2d-nchw"], want, atol=1e-6)
    np.testing.assert_array_equal(got["flatten"], x4.reshape(2, -1))
    np.testing.assert_array_equal(got["flatten-nchw"], x4.reshape(2, -1))


def test_dropout_follows_a_training_tensor():
    x = np.abs(RNG.standard_normal((200, 100))).astype(np.float32) + 0.5
    training = tf.placeholder_with_default(False, [])
    layer = tf.layers.Dropout(rate=0.25, seed=7)
    out = layer(x, training=training)
    assert out.op.type == "SelectV2"
    assert tf.layers.dropout(x, training=False).op.type == "Identity"
    assert tf.layers.dropout(x, 0.5, training=tf.constant(True)).op.type != "SelectV2"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out), x)
        dropped = sess.run(out, {training: True})
    kept = dropped != 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(dropped[kept], x[kept] / 0.75, rtol=1e-6)


@pytest.mark.parametrize("fused", [None, False])
def test_batch_norm_moving_averages_follow_training(fused):
    """Training normalizes with the batch's moments and moves the averages toward them by
    1 - momentum (the unbiased variance in the fused form, as TF's kernel computes it);
    inference uses the moving averages; a bool tensor picks at run time, and the update ops
    change nothing when it is false."""
    x = tf.placeholder(tf.float32, [None, 3, 3, 2])
    training = tf.placeholder_with_default(False, [])
    layer = tf.layers.BatchNormalization(
        momentum=0.75,
        epsilon=0.01,
        fused=fused,
        gamma_initializer=tf.constant_initializer(2.0),
        beta_initializer=tf.constant_initializer(0.5),
    )
    y = layer(x, training=training)
    assert layer.fused is (fused is None)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    value = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32) * 3 + 1
    mean, var = value.mean((0, 1, 2)), value.var((0, 1, 2))
    moved_var = var * 36 / 35 if fused is None else var
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        inferred, _ = sess.run([y, updates], {x: value})  # not training: no change
        np.testing.assert_allclose(inferred, 2 * value / np.sqrt(1.01) + 0.5, rtol=1e-5)
        np.testing.assert_array_equal(sess.run(layer.moving_mean), np.zeros(2, np.float32))
        trained, _ = sess.run([y, updates], {x: value, training: True})
        want = 2 * (value - mean) / np.sqrt(var + 0.01) + 0.5
        np.testing.assert_allclose(trained, want, rtol=1e-4, atol=1e-5)
        moving_mean, moving_var = sess.run([layer.moving_mean, layer.moving_variance])
        np.testing.assert_allclose(moving_mean, 0.25 * mean, rtol=1e-5)
        np.testing.assert_allclose(moving_var, 0.75 + 0.25 * moved_var, rtol=1e-5)
        inferred = sess.run(y, {x: value})
        want = 2 * (value - moving_mean) / np.sqrt(moving_var + 0.01) + 0.5
        np.testing.assert_allclose(inferred, want, rtol=1e-4, atol=1e-5)


def test_batch_norm_over_features_and_channels_first():
    x2 = RNG.standard_normal((6, 4)).astype(np.float32)
    x4 = RNG.standard_normal((3, 2, 4, 5)).astype(np.float32)
    dense_bn = tf.layers.batch_normalization(x2, training=True, center=False, scale=False)
    nchw_bn = tf.layers.batch_normalization(x4, axis=1, training=True)
    assert [v.shape.as_list() for v in tf.global_variables()][-1] == [2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got2, got4 = sess.run([dense_bn, nchw_bn])
    np.testing.assert_allclose(got2, (x2 - x2.mean(0)) / np.sqrt(x2.var(0) + 1e-3), atol=1e-5)
    m, v = x4.mean((0, 2, 3), keepdims=True), x4.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(got4, (x4 - m) / np.sqrt(v + 1e-3), atol=1e-5)


# -- regularizers ---------------------------------------------------------------------------------
def test_regularizers():
    w = tf.constant([[1.0, -2.0], [0.5, 0.0]])
    values = {
        "l1": regularizers.l1_regularizer(0.5)(w),
        "l2": regularizers.l2_regularizer(0.25)(w),
        "l1_l2": regularizers.l1_l2_regularizer(0.5, 0.25)(w),
        "sum": regularizers.sum_regularizer([regularizers.l1_regularizer(1.0), None])(w),
    }
    assert (
        values["l1"].op.name == "l1_regularizer" and values["l1_l2"].op.name == "l1_l2_regularizer"
    )
    assert regularizers.l2_regularizer(0.0)(w) is None
    assert regularizers.sum_regularizer([None]) is None
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        regularizers.l2_regularizer(1)
    with pytest.raises(ValueError, match="Setting a scale less than 0 on a regularizer: -0.5"):
        regularizers.l1_regularizer(-0.5)
    tf.add_to_collection(tf.GraphKeys.WEIGHTS, w)
    penalty = regularizers.apply_regularization(regularizers.l1_regularizer(2.0))
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [penalty]
    with tf.Session() as sess:
        got = sess.run(values)
        assert sess.run(penalty) == pytest.approx(7.0)
    assert got["l1"] == pytest.approx(1.75) and got["l2"] == pytest.approx(0.25 * 5.25 / 2)
    assert got["l1_l2"] == pytest.approx(1.75 + 0.25 * 5.25 / 2) and got["sum"] == pytest.approx(
        3.5
    )


def test_layer_regularizers_reach_the_total_loss():
    x = tf.placeholder(tf.float32, [None, 3])
    h = tf.layers.dense(
        x,
        2,
        kernel_initializer=tf.ones_initializer(),
        kernel_regularizer=regularizers.l2_regularizer(0.1),
        bias_regularizer=regularizers.l1_regularizer(1.0),
        bias_initializer=tf.constant_initializer(-1.0),
    )
    losses = tf.losses.get_regularization_losses()
    assert [t.op.name for t in losses] == [
        "dense/kernel/Regularizer/l2_regularizer",
        "dense/bias/Regularizer/l1_regularizer",
    ]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        total = sess.run(tf.losses.get_regularization_loss())
    assert total == pytest.approx(0.1 * 6 / 2 + 2.0)
    assert h.shape.as_list() == [None, 2]


# -- the layers CNN sample, in a session and natively ---------------------------------------------
def _accuracy(output: str) -> float:
    return float(output.strip().splitlines()[-1].split()[-1])


def test_layers_cnn_sample_trains_to_lenets_accuracy():
    """300 steps of the tf.layers CNN and of the raw-op LeNet sample: both reach 95%, the
    layers model LeNet's test accuracy."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = {}
    for script in ("layers_cnn.py", "lenet.py"):
        proc = subprocess.run(
            [sys.executable, str(SAMPLES / script), "--steps", "300"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        out[script] = proc.stdout
    losses = [float(v) for v in re.findall(r"^step +\d+  loss (\S+)", out["layers_cnn.py"], re.M)]
    assert len(losses) == 3 and losses[-1] < losses[0]
    accuracy = _accuracy(out["layers_cnn.py"])
    assert accuracy >= 0.95 and accuracy >= _accuracy(out["lenet.py"]) - 0.02
    # the LeNet sample itself (its default run of 500 steps: test_lenet.py's benchmark)
    lines = out["lenet.py"].splitlines()
    progress = [ln for ln in lines if ln.startswith("step ")]
    assert len(progress) == 3
    assert re.fullmatch(r"step +100  loss \d+\.\d{4}  [\d,]+ examples/s", progress[0])
    first, last = (float(ln.split()[3]) for ln in (progress[0], progress[-1]))
    assert last < first  # it learns
    assert lines[-1].startswith("test accuracy ") and _accuracy(out["lenet.py"]) >= 0.95


def _import_samples():
    sys.path.insert(0, str(SAMPLES))
    try:
        import layers_cnn_model
        import lenet
    finally:
        sys.path.remove(str(SAMPLES))
    return layers_cnn_model, lenet


def _run(*args):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_layers_cnn_compiles_to_native_train_and_predict(tmp_path, safetensors):
    """The native step equals the session's (batch norm's moving averages included), native
    predictions equal the session's predicting copy, and 300 native steps reach 95%."""
    model, lenet = _import_samples()
    batch = 32
    assert (
        tfc_main(
            [
                "compile",
                str(SAMPLES / "layers_cnn_model.py"),
                "-o",
                str(tmp_path / "build"),
                "--batch",
                str(batch),
            ]
        )
        == 0
    )
    train, test = lenet.load_digits()
    (x, y) = train
    lenet.save_data(tmp_path / "first", (x[:batch], y[:batch]), (x[:5], y[:5]))
    lenet.save_data(tmp_path / "data", train, test)
    exe = tmp_path / "build"
    out = _run(
        exe / "train",
        "--data",
        tmp_path / "first" / "train.npy",
        "--steps",
        1,
        "--checkpoint-dir",
        tmp_path / "one",
        "--no-shuffle",
        "--log-every",
        1,
    )
    native_loss = float(re.search(r"^step 1  loss (\S+)", out, re.M).group(1))
    _run(
        exe / "predict",
        "--checkpoint",
        tmp_path / "one",
        "--data",
        tmp_path / "first" / "test.npy",
        "--output",
        tmp_path / "p.npy",
    )

    sigs = model.signatures()
    inputs = sigs["train"]["inputs"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {inputs["features"]: x[:batch], inputs["labels"]: y[:batch]}
        loss, _ = sess.run([sigs["train"]["loss"], sigs["train"]["train_op"]], feed)
        probabilities = sigs["predict"]["outputs"]["probabilities"]
        expected_p = sess.run(probabilities, {sigs["predict"]["inputs"]["features"]: x[:5]})
        expected = {v.op.name: sess.read_variable(v.op.name) for v in tf.global_variables()}
    assert abs(native_loss - loss) <= 1e-5
    saved = safetensors.numpy.load_file(str(tmp_path / "one" / "model.ckpt-1.safetensors"))
    assert set(saved) == set(expected)
    assert saved["cnn/bn1/moving_mean"].shape == (8,) and saved["cnn/conv1/kernel"].shape == (
        5,
        5,
        1,
        8,
    )
    assert np.abs(saved["cnn/bn1/moving_mean"]).max() > 0  # the update ops ran
    for name, value in expected.items():
        np.testing.assert_allclose(saved[name], value, rtol=0, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), expected_p, rtol=0, atol=1e-5)

    _run(
        exe / "train",
        "--data",
        tmp_path / "data" / "train.npy",
        "--steps",
        300,
        "--checkpoint-dir",
        tmp_path / "ckpt",
    )
    out = _run(
        exe / "predict", "--checkpoint", tmp_path / "ckpt", "--data", tmp_path / "data" / "test.npy"
    )
    accuracy = float(re.search(r"^accuracy (\S+) \(\d+ of 360\)$", out, re.M).group(1))
    assert accuracy >= 0.95


# -- against TensorFlow ---------------------------------------------------------------------------
def _tf_model(tf_mod, training):
    """The same network in either framework: every layer kind, both forms of batch norm."""
    x = tf_mod.placeholder(tf_mod.float32, [None, 6, 6, 3], name="x")
    seq = tf_mod.placeholder(tf_mod.float32, [None, 8, 2], name="seq")
    h = tf_mod.layers.conv2d(x, 5, 3, padding="same", activation=tf_mod.nn.relu)
    h = tf_mod.layers.batch_normalization(h, training=training, momentum=0.9)
    up = tf_mod.layers.conv2d_transpose(h, 2, 3, strides=2, padding="same")
    h = tf_mod.layers.max_pooling2d(h, 2, 2)
    h = tf_mod.layers.average_pooling2d(h, 2, 1, padding="same")
    h = tf_mod.layers.dropout(h, 0.5, training=False)
    h = tf_mod.layers.dense(tf_mod.layers.flatten(h), 7, activation=tf_mod.nn.tanh)
    h = tf_mod.layers.batch_normalization(h, training=training, momentum=0.8, epsilon=0.01)
    s = tf_mod.layers.conv1d(seq, 4, 3, strides=2, padding="same")
    s = tf_mod.layers.max_pooling1d(s, 2, 2)
    loss = tf_mod.reduce_sum(h * h) + tf_mod.reduce_sum(tf_mod.sin(up)) + tf_mod.reduce_sum(s * s)
    return [x, seq], [h, up, s, loss]


def _run_model(tf_mod, kind: str) -> tuple:
    graph = tf_mod.Graph()
    with graph.as_default():
        training = {"true": True, "false": False}.get(kind)
        if training is None:
            training = tf_mod.placeholder_with_default(False, [])
        inputs, outputs = _tf_model(tf_mod, training)
        variables = tf_mod.global_variables()
        grads = tf_mod.gradients(outputs[-1], inputs + tf_mod.trainable_variables())
        updates = tf_mod.get_collection(tf_mod.GraphKeys.UPDATE_OPS)
        rng = np.random.default_rng(2)
        assigns = []
        for v in variables:  # the same weights in both
            value = rng.standard_normal(v.shape.as_list()).astype(np.float32) * 0.4
            if "moving_variance" in v.op.name:
                value = np.abs(value) + 0.5
            assigns.append(tf_mod.assign(v, value))
        data = np.random.default_rng(3)
        feed = {
            inputs[0]: data.standard_normal((4, 6, 6, 3)).astype(np.float32),
            inputs[1]: data.standard_normal((4, 8, 2)).astype(np.float32),
        }
        if kind.startswith("tensor-"):
            feed[training] = kind == "tensor-true"
        with tf_mod.Session() as sess:
            sess.run(tf_mod.global_variables_initializer())
            sess.run(assigns)
            values = sess.run(outputs + grads, feed)
            sess.run(updates, feed)
            after = sess.run(variables)
    return [v.op.name for v in variables], values, after


@pytest.mark.parametrize("kind", ["true", "false", "tensor-true", "tensor-false"])
def test_layers_match_tensorflow(kind):
    real = pytest.importorskip("tensorflow")
    v1 = real.compat.v1
    v1.disable_eager_execution()
    tf_names, tf_values, tf_after = _run_model(v1, kind)
    names, values, after = _run_model(tf, kind)
    assert names == tf_names
    for k, (got, want) in enumerate(zip(values, tf_values)):
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=f"value {k}")
    for name, got, want in zip(names, after, tf_after):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
