"""GraphDefs between TensorFlow and tfc, checked against TensorFlow itself (skipped without it).

A small CNN and an MLP are trained in TensorFlow (graph mode), frozen with TF's own
convert_variables_to_constants and written as .pb; tfc imports them, runs them, and compiles
them with `tfc compile` to predict executables, whose outputs must equal TensorFlow's to 1e-5.
The other way, graphs built in tfc are written as GraphDefs that TensorFlow imports and runs to
the same numbers, and the bytes and text of the messages are compared with protobuf's.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

import tfc  # noqa: E402
from tfc.graphdef import graph_util, read_graph_def  # noqa: E402
from tfc.io.graph_pb import GraphDef  # noqa: E402
from tfc.io.text_format import parse  # noqa: E402
from tfc.tools.cli import main as tfc_main  # noqa: E402

RNG = np.random.default_rng(17)


def _train_and_freeze(build, x_train, y_train, steps=20):
    """Build a model with `build(x) -> logits` in a TF graph, train it a few steps with SGD,
    and freeze it: (the frozen GraphDef's bytes, TF's probabilities of `x_test`)."""
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(3)
        x = v1.placeholder(tf.float32, [None, *x_train.shape[1:]], name="x")
        y = v1.placeholder(tf.int32, [None], name="y")
        logits = build(x)
        probs = tf.nn.softmax(logits, name="probs")
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        loss = tf.reduce_mean(xent)
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train, {x: x_train, y: y_train})
            frozen = v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["probs"]
            )
            expected = sess.run(probs, {x: x_train[:7]})
    return frozen.SerializeToString(), expected


def _cnn(x):
    init = v1.glorot_uniform_initializer(seed=1)
    k1 = v1.get_variable("k1", [3, 3, 3, 6], initializer=init)
    b1 = v1.get_variable("b1", [6], initializer=v1.zeros_initializer())
    h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME"), b1))
    gamma = v1.get_variable("gamma", [6], initializer=v1.ones_initializer())
    beta = v1.get_variable("beta", [6], initializer=v1.zeros_initializer())
    mean = tf.constant(RNG.normal(0, 0.1, 6).astype(np.float32))
    var = tf.constant(RNG.uniform(0.5, 1.5, 6).astype(np.float32))
    h, _, _ = v1.nn.fused_batch_norm(h, gamma, beta, mean, var, epsilon=1e-3, is_training=False)
    h = tf.nn.max_pool2d(h, 2, 2, "VALID")
    k2 = v1.get_variable("k2", [3, 3, 6, 1], initializer=init)
    h = tf.nn.leaky_relu(tf.nn.depthwise_conv2d(h, k2, [1, 1, 1, 1], "SAME"), alpha=0.2)
    h = tf.nn.avg_pool2d(h, 2, 2, "SAME")
    flat = tf.reshape(h, [-1, 2 * 2 * 6])
    w = v1.get_variable("w", [24, 3], initializer=init)
    b = v1.get_variable("b", [3], initializer=v1.zeros_initializer())
    return tf.matmul(flat, w) + b


def _mlp(x):
    init = v1.glorot_uniform_initializer(seed=2)
    w1 = v1.get_variable("w1", [5, 16], initializer=init)
    b1 = v1.get_variable("b1", [16], initializer=v1.zeros_initializer())
    h = tf.tanh(tf.matmul(x, w1) + b1)
    h = tf.concat([h, tf.nn.relu6(h) * 0.5], axis=1)
    w2 = v1.get_variable("w2", [32, 4], initializer=init)
    return tf.matmul(h, w2)


@pytest.fixture(scope="module")
def frozen_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("frozen")
    images = RNG.normal(size=(32, 8, 8, 3)).astype(np.float32)
    features = RNG.normal(size=(40, 5)).astype(np.float32)
    models = {}
    for name, build, x, classes in (("cnn", _cnn, images, 3), ("mlp", _mlp, features, 4)):
        y = RNG.integers(0, classes, len(x)).astype(np.int32)
        data, expected = _train_and_freeze(build, x, y)
        path = root / f"{name}.pb"
        path.write_bytes(data)
        models[name] = (path, x, expected)
    return models


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_a_graph_frozen_by_tensorflow_runs_in_tfc_as_in_tensorflow(frozen_models, name):
    path, x, expected = frozen_models[name]
    graph_def = read_graph_def(path)
    assert "FusedBatchNormV3" in {n.op for n in graph_def.node} or name == "mlp"
    with tfc.Graph().as_default():
        (probs,) = tfc.import_graph_def(graph_def, return_elements=["probs:0"], name="frozen")
        with tfc.Session() as sess:
            got = sess.run(probs, {"frozen/x:0": x[:7]})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_tfc_compile_builds_a_predict_executable_from_a_frozen_graph(frozen_models, name, tmp_path):
    path, x, expected = frozen_models[name]
    outdir = tmp_path / "build"
    assert tfc_main(["compile", str(path), "-o", str(outdir), "--batch", "4",
                     "--outputs", "probs:0"]) == 0  # fmt: skip
    data = tmp_path / "x.npy"
    np.save(data, x[:7].reshape(7, -1))
    proc = subprocess.run(
        [str(outdir / "predict"), "--data", str(data), "--output", str(tmp_path / "p.npy")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = np.load(tmp_path / "p.npy")
    np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-5, atol=1e-5)


def test_tfc_compile_refuses_a_graph_def_without_outputs(frozen_models, tmp_path, capsys):
    path, _, _ = frozen_models["mlp"]
    assert tfc_main(["compile", str(path), "-o", str(tmp_path / "b")]) == 1
    assert "--outputs" in capsys.readouterr().err


def _tfc_model():
    """A tfc graph of the common layers, with trained-looking weights as variables."""
    x = tfc.placeholder(tfc.float32, [None, 6, 6, 2], name="x")
    k = tfc.Variable(RNG.normal(size=(3, 3, 2, 4)).astype(np.float32), name="k")
    h = tfc.nn.relu(tfc.nn.conv2d(x, k, [1, 1, 1, 1], "SAME"))
    h = tfc.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    h = tfc.reshape(h, [-1, 36])
    w = tfc.Variable(RNG.normal(size=(36, 5)).astype(np.float32), name="w")
    logits = tfc.nn.bias_add(tfc.matmul(h, w), tfc.constant(np.arange(5, dtype=np.float32)))
    probs = tfc.nn.softmax(logits, name="probs")
    tfc.reduce_mean(probs, axis=1, keepdims=True, name="mean")
    tfc.argmax(probs, 1, name="top")
    return x


def test_tensorflow_imports_and_runs_a_graph_frozen_in_tfc():
    x_value = RNG.normal(size=(3, 6, 6, 2)).astype(np.float32)
    with tfc.Graph().as_default() as g:
        x = _tfc_model()
        with tfc.Session() as sess:
            sess.run(tfc.global_variables_initializer())
            expected = sess.run(["probs:0", "mean:0", "top:0"], {x: x_value})
            frozen = graph_util.convert_variables_to_constants(
                sess, g.as_graph_def(), ["probs", "mean", "top"]
            )
    tf_graph_def = v1.GraphDef.FromString(frozen.SerializeToString())
    with tf.Graph().as_default():
        outs = v1.import_graph_def(tf_graph_def, return_elements=["probs:0", "mean:0", "top:0"])
        with v1.Session() as sess:
            got = sess.run(outs, {"import/x:0": x_value})
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_tfc_and_protobuf_agree_on_bytes_and_text():
    with tfc.Graph().as_default() as g:
        _tfc_model()
        ours = g.as_graph_def(add_shapes=True)
    theirs = v1.GraphDef.FromString(ours.SerializeToString())
    # map entries may come in any order on the wire: compare what each side reads back
    assert GraphDef.FromString(theirs.SerializeToString()) == ours
    assert len(theirs.SerializeToString()) == len(ours.SerializeToString())
    from google.protobuf import text_format

    assert text_format.MessageToString(theirs) == str(ours)
    assert parse(text_format.MessageToString(theirs), GraphDef()) == ours


def test_text_and_binary_graphs_written_by_tensorflow_read_the_same(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        y = tf.identity(tf.reduce_sum(x * [[1.0, 2.0, 3.0]], axis=1) - 0.5, name="y")
        v1.train.write_graph(graph, str(tmp_path), "g.pbtxt", as_text=True)
        v1.train.write_graph(graph, str(tmp_path), "g.pb", as_text=False)
        with v1.Session() as sess:
            expected = sess.run(y, {x: [[1.0, 1.0, 1.0], [0.0, 2.0, -1.0]]})
    text, binary = read_graph_def(tmp_path / "g.pbtxt"), read_graph_def(tmp_path / "g.pb")
    assert text == binary
    with tfc.Graph().as_default():
        (y,) = tfc.import_graph_def(binary, return_elements=["y:0"], name="")
        with tfc.Session() as sess:
            got = sess.run(y, {"x:0": [[1.0, 1.0, 1.0], [0.0, 2.0, -1.0]]})
    np.testing.assert_allclose(got, expected, rtol=1e-6)
