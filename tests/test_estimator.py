"""tf.estimator.DNNClassifier, feature columns, tf.layers.dense and tf.metrics."""

import csv
from pathlib import Path

import numpy as np
import pytest

import tfc as tf

DATA = Path(__file__).resolve().parent.parent / "samples" / "data"
NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth"]


def _iris(name):
    with open(DATA / name) as f:
        rows = np.array([[float(v) for v in r] for r in list(csv.reader(f))[1:]])
    return {k: rows[:, i].astype(np.float32) for i, k in enumerate(NAMES)}, rows[:, 4].astype(
        np.int32
    )


def _train_fn(x, y, batch=32):
    return lambda: tf.data.Dataset.from_tensor_slices((x, y)).shuffle(200).repeat().batch(batch)


def _eval_fn(x, y=None, batch=32):
    return lambda: tf.data.Dataset.from_tensor_slices(x if y is None else (x, y)).batch(batch)


def test_dnn_classifier_trains_evaluates_predicts_and_resumes(tmp_path):
    (train_x, train_y), (test_x, test_y) = _iris("iris_training.csv"), _iris("iris_test.csv")
    columns = [tf.feature_column.numeric_column(k) for k in NAMES]
    model = tf.estimator.DNNClassifier(
        hidden_units=[10, 10], feature_columns=columns, n_classes=3, model_dir=str(tmp_path)
    )
    model.train(_train_fn(train_x, train_y), steps=600)
    assert Path(tf.train.latest_checkpoint(str(tmp_path))).name == "model.ckpt-600"
    result = model.evaluate(_eval_fn(test_x, test_y))
    assert set(result) == {"accuracy", "average_loss", "loss", "global_step"}
    assert result["global_step"] == 600 and result["accuracy"] >= 0.93
    assert 0 < result["average_loss"] < 0.5

    predictions = list(model.predict(_eval_fn(test_x)))
    assert len(predictions) == 30
    probs = np.stack([p["probabilities"] for p in predictions])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    ids = np.array([p["class_ids"][0] for p in predictions])
    np.testing.assert_array_equal(ids, probs.argmax(axis=1))
    assert (ids == test_y).mean() == pytest.approx(result["accuracy"])
    assert predictions[0]["classes"][0] == str(ids[0]).encode()

    # a new estimator on the same model_dir resumes from the checkpoint
    again = tf.estimator.DNNClassifier(
        hidden_units=[10, 10], feature_columns=columns, n_classes=3, model_dir=str(tmp_path)
    )
    again.train(_train_fn(train_x, train_y), steps=50)
    assert again.evaluate(_eval_fn(test_x, test_y))["global_step"] == 650
    again.train(_train_fn(train_x, train_y), max_steps=650)  # already there: no step taken
    assert Path(again.latest_checkpoint()).name == "model.ckpt-650"


def test_estimator_errors(tmp_path):
    columns = [tf.feature_column.numeric_column("a")]
    model = tf.estimator.DNNClassifier([4], columns, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Could not find trained model"):
        model.evaluate(_eval_fn({"a": np.zeros(3, np.float32)}, np.zeros(3, np.int32)))
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.DNNClassifier([4], columns, n_classes=1)
    with pytest.raises(ValueError, match="Unsupported optimizer"):
        bad = tf.estimator.DNNClassifier([4], columns, optimizer="Nope", model_dir=str(tmp_path))
        bad.train(_train_fn({"a": np.zeros(8, np.float32)}, np.zeros(8, np.int32)), steps=1)


def test_input_layer_orders_columns_by_name_and_flattens():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.array([7, 8, 9], dtype=np.int64)
    columns = [tf.feature_column.numeric_column("b"), tf.feature_column.numeric_column("a", (2,))]
    layer = tf.feature_column.input_layer({"a": a, "b": b}, columns)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(layer), np.c_[a, b.astype(np.float32)])
    with pytest.raises(KeyError, match="'missing' has no input"):
        tf.feature_column.input_layer({"a": a}, [tf.feature_column.numeric_column("missing")])


def test_dense_layer_matches_numpy_and_names_variables():
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    y = tf.layers.dense(x, 4, activation=tf.nn.relu, name="fc")
    assert [v.name for v in tf.global_variables()] == ["fc/kernel:0", "fc/bias:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, out = sess.run([tf.global_variables()[0], y])
    np.testing.assert_allclose(out, np.maximum(x @ kernel, 0), rtol=1e-5, atol=1e-6)
    limit = np.sqrt(6 / 7)  # glorot uniform for a 3x4 kernel
    assert np.abs(kernel).max() <= limit


def test_streaming_metrics_accumulate_over_runs():
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.int64, [None])
    values = tf.placeholder(tf.float32, [None])
    acc, acc_update = tf.metrics.accuracy(labels, preds)
    avg, avg_update = tf.metrics.mean(values)
    batches = [([1, 2, 3], [1, 0, 3], [1.0, 2.0, 3.0]), ([0, 0], [0, 1], [10.0, 20.0])]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for lab, pred, val in batches:
            sess.run([acc_update, avg_update], {labels: lab, preds: pred, values: val})
        assert sess.run(acc) == pytest.approx(3 / 5)
        assert sess.run(avg) == pytest.approx(36.0 / 5)
        sess.run(tf.local_variables_initializer())  # reset
        sess.run(acc_update, {labels: [1], preds: [1]})
        assert sess.run(acc) == 1.0
