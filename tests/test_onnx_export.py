"""tfc.onnx.export: a tfc model written as ONNX gives the Session's outputs in ONNX Runtime and
when imported back into tfc; what has no ONNX equivalent is refused by name. Skips where the
onnx package (and, for the ONNX Runtime comparison, onnxruntime) is not installed."""

import numpy as np
import pytest

import tfc as tf
from tfc.ops.registry import apply_op

onnx = pytest.importorskip("onnx")
import tfc.onnx  # noqa: E402
from tfc.onnx.export import OnnxExportError  # noqa: E402

BATCH = 3


def _model():
    """A small CNN through the exporter's main families: a convolution (SAME, with variables),
    bias and ReLU, a max pool with explicit padding, an average pool, a reshape, a product with
    a transposed operand, element-wise math, a concatenation, softmax and a reduction."""
    graph = tf.Graph()
    rng = np.random.default_rng(3)
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 10, 10, 3], name="image")
        f = tf.Variable(rng.normal(0, 0.3, (3, 3, 3, 8)).astype(np.float32), name="filter")
        b = tf.Variable(rng.normal(0, 0.1, (8,)).astype(np.float32), name="bias")
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"), b))
        pool = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1])
        pads = [0, 0, 1, 0, 2, 1, 0, 0]  # uneven: a swapped before/after or row/column shows
        h = apply_op("MaxPool", [h], dict(pool, padding="EXPLICIT", explicit_paddings=pads))
        h = h.outputs[0]  # 5x6
        h = tf.nn.avg_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")  # 3x3, uneven windows
        flat = tf.reshape(h, [-1, 3 * 3 * 8])
        w = tf.Variable(rng.normal(0, 0.2, (10, 72)).astype(np.float32), name="dense")
        logits = tf.matmul(flat, w, transpose_b=True)
        extra = tf.concat([tf.tanh(logits[:, :4]), tf.sigmoid(logits[:, 4:]) * 2.0 - 1.0], 1)
        probs = tf.nn.softmax(logits + 0.5 * extra)
        mean = tf.reduce_mean(tf.square(logits), axis=1)
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
    image = rng.normal(size=(BATCH, 10, 10, 3)).astype(np.float32)
    return graph, sess, x, [probs, mean], image


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    graph, sess, x, outputs, image = _model()
    path = tmp_path_factory.mktemp("export") / "model.onnx"
    model = tfc.onnx.export(graph, [x], outputs, path, session=sess)
    want = sess.run(outputs, {x: image})
    sess.close()
    return path, model, image, want


def test_exported_model_runs_in_onnx_runtime_as_in_the_session(exported):
    ort = pytest.importorskip("onnxruntime")
    path, model, image, want = exported
    run = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in run.get_inputs()] == [model.graph.input[0].name]
    got = run.run(None, {run.get_inputs()[0].name: image})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_exported_model_imports_back_into_tfc(exported):
    path, _, image, want = exported
    graph, (x,), outputs = tfc.onnx.import_model(str(path))
    assert x.shape.as_list() == [None, 10, 10, 3]  # the batch stays symbolic
    with tf.Session(graph=graph) as sess:
        got = sess.run(outputs, {x: image})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_an_op_without_an_onnx_equivalent_is_refused_by_name():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        y = tf.linalg.cholesky(x, name="chol")
    with pytest.raises(OnnxExportError, match=r"'chol'.*Cholesky"):
        tfc.onnx.export(graph, [x], [y])


def test_variables_without_a_session_are_refused():
    graph, sess, x, outputs, _ = _model()
    sess.close()
    with pytest.raises(OnnxExportError, match="filter"):
        tfc.onnx.export(graph, [x], outputs)
