"""Estimator.export_saved_model: a serving model directory that tfc compile takes, whose
predictions are the Estimator's."""

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.aot.signatures import build_signatures, load_signatures_function

DATA = Path(__file__).resolve().parent.parent / "samples" / "data"
NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth"]


def _iris(name):
    with open(DATA / name) as f:
        rows = np.array([[float(v) for v in r] for r in list(csv.reader(f))[1:]])
    return {k: rows[:, i].astype(np.float32) for i, k in enumerate(NAMES)}, rows[:, 4].astype(
        np.int32
    )


def _model_fn(features, labels, mode):
    net = tf.layers.dense(features["x"], 8, activation=tf.nn.tanh, name="hidden")
    logits = tf.layers.dense(net, 3, name="logits")
    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {"probabilities": tf.nn.softmax(logits), "class": tf.argmax(logits, 1)}
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A custom model and a DNNClassifier trained on Iris, with the test rows."""
    root = tmp_path_factory.mktemp("models")
    (train_x, train_y), (test_x, test_y) = _iris("iris_training.csv"), _iris("iris_test.csv")
    matrix = np.stack([train_x[k] for k in NAMES], 1)
    custom = tf.estimator.Estimator(_model_fn, str(root / "custom"))
    custom.train(
        tf.estimator.inputs.numpy_input_fn(
            {"x": matrix}, train_y, batch_size=40, num_epochs=None, shuffle=True
        ),
        steps=100,
    )
    columns = [tf.feature_column.numeric_column(k) for k in NAMES]
    canned = tf.estimator.DNNClassifier([8], columns, str(root / "dnn"), n_classes=3)
    canned.train(
        tf.estimator.inputs.numpy_input_fn(
            train_x, train_y, batch_size=40, num_epochs=None, shuffle=True
        ),
        steps=100,
    )
    return custom, canned, test_x, test_y, root


def _serve_matrix():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def _run_signature(export_dir, rows):
    """The exported predict signature's outputs for `rows`, run in a Session on the export's
    own checkpoint."""
    sigs = build_signatures(*load_signatures_function(export_dir))
    predict = sigs.predict
    with sigs.graph.as_default(), tf.Session(graph=sigs.graph) as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(f"{export_dir}/variables"))
        return sess.run(predict.outputs, {predict.features: rows}), sigs


def test_exported_custom_model_predicts_what_the_estimator_does(trained, tmp_path, monkeypatch):
    custom, _, test_x, test_y, _ = trained
    # Python's default, whatever PYTHONDONTWRITEBYTECODE says here: checking the export's
    # model.py must not leave its bytecode (__pycache__) in the directory
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    matrix = np.stack([test_x[k] for k in NAMES], 1)
    export_dir = custom.export_saved_model(str(tmp_path), _serve_matrix)
    assert isinstance(export_dir, bytes)  # as TF1 returns it
    export_dir = export_dir.decode()
    assert Path(export_dir).parent == tmp_path and Path(export_dir).name.isdigit()
    assert sorted(p.name for p in Path(export_dir).iterdir()) == [
        "graph.json",
        "model.py",
        "variables",
    ]
    assert not any(p.name.startswith("temp-") for p in tmp_path.iterdir())
    outputs, sigs = _run_signature(export_dir, matrix)
    assert sigs.train is None and set(sigs.predict.outputs) == {"probabilities", "class"}
    expected = list(
        custom.predict(tf.estimator.inputs.numpy_input_fn({"x": matrix}, shuffle=False))
    )
    np.testing.assert_allclose(
        outputs["probabilities"], np.stack([p["probabilities"] for p in expected]), rtol=1e-6
    )
    np.testing.assert_array_equal(outputs["class"], [p["class"] for p in expected])
    # only the serving graph's variables, under their names
    saved = {n for n, _ in tf.train.list_variables(f"{export_dir}/variables")}
    assert saved == {"global_step", "hidden/kernel", "hidden/bias", "logits/kernel", "logits/bias"}

    # tfc compile takes the directory; its predict executable gives the same probabilities
    build = tmp_path / "build"
    tf.compile(export_dir, build, batch=8)
    data = tmp_path / "rows.csv"
    np.savetxt(data, np.c_[matrix, test_y], delimiter=",", fmt="%.9g")
    out = subprocess.run(
        [build / "predict", "--checkpoint", f"{export_dir}/variables", "--data", data]
        + ["--output", tmp_path / "out.npy"],
        capture_output=True,
        text=True,
        check=True,
    )
    native = np.load(tmp_path / "out_probabilities.npy")
    np.testing.assert_allclose(native, outputs["probabilities"], rtol=1e-5, atol=1e-6)
    accuracy = np.mean(outputs["probabilities"].argmax(1) == test_y)
    assert out.stdout.strip().splitlines()[-1].startswith(f"accuracy {accuracy:.4f}")


def test_exported_canned_classifier_packs_its_features(trained, tmp_path):
    _, canned, test_x, _, _ = trained
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {k: tf.placeholder(tf.float32, [None]) for k in NAMES}
    )
    export_dir = canned.export_savedmodel(str(tmp_path), receiver_fn).decode()  # TF1's old name
    model_py = Path(export_dir, "model.py").read_text()
    assert "SepalLength [] (column 0), SepalWidth [] (column 1)" in model_py
    matrix = np.stack([test_x[k] for k in NAMES], 1)  # the receiver's order
    outputs, sigs = _run_signature(export_dir, matrix)
    assert sigs.predict.features.shape.as_list() == [None, 4]
    assert sigs.predict.label_output == "scores" and sigs.predict.argmax
    expected = list(
        canned.predict(tf.estimator.inputs.numpy_input_fn(test_x, batch_size=30, shuffle=False))
    )
    np.testing.assert_allclose(
        outputs["scores"], np.stack([p["probabilities"] for p in expected]), rtol=1e-6
    )


def test_export_errors(trained, tmp_path):
    custom, canned, *_ = trained
    fresh = tf.estimator.Estimator(_model_fn, str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="Couldn't find trained model"):
        fresh.export_saved_model(str(tmp_path), _serve_matrix)
    with pytest.raises(TypeError, match="must return a ServingInputReceiver"):
        custom.export_saved_model(str(tmp_path), lambda: tf.placeholder(tf.float32, [None, 4]))

    def unknown_width():
        x = tf.placeholder(tf.float32, [None, None])
        return tf.estimator.export.ServingInputReceiver({"x": tf.reshape(x, [-1, 4])}, x)

    with pytest.raises(ValueError, match="every dimension but the first known"):
        custom.export_saved_model(str(tmp_path), unknown_width)
    mixed = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {k: tf.placeholder(tf.float64 if k == "SepalWidth" else tf.float32, [None]) for k in NAMES}
    )
    with pytest.raises(ValueError, match="must share one dtype"):
        canned.export_saved_model(str(tmp_path), mixed)
    with pytest.raises(NotImplementedError, match="PREDICT graph only"):
        custom.export_saved_model(str(tmp_path), _serve_matrix, experimental_mode="train")
    assert list(tmp_path.iterdir()) == []  # nothing half-written
    with pytest.raises(ValueError, match="Prediction output value must be a Tensor"):
        tf.estimator.export.PredictOutput({"a": 1.0})
    with pytest.raises(ValueError, match="Classification classes must be a string Tensor"):
        tf.estimator.export.ClassificationOutput(classes=tf.constant([1]))
