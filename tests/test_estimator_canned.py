"""The canned estimators (DNNClassifier, DNNRegressor, LinearClassifier, LinearRegressor),
feature columns, tf.layers.dense and tf.metrics."""

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


# -- canned estimators ---------------------------------------------------------------------------
def _linear_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    return x, (x @ np.array([2.0, -3.0]) + 0.5).astype(np.float32)


def test_dnn_regressor_fits_and_names_variables(tmp_path):
    x, y = _linear_data()
    columns = [tf.feature_column.numeric_column("x", shape=2)]
    model = tf.estimator.DNNRegressor(
        [16], columns, model_dir=str(tmp_path), optimizer=tf.train.AdamOptimizer(0.05)
    )
    train = tf.estimator.inputs.numpy_input_fn(
        {"x": x}, y, batch_size=40, num_epochs=None, shuffle=True
    )
    model.train(train, steps=300)
    names = [n for n in model.get_variable_names() if "Adam" not in n and "power" not in n]
    assert names == [
        "dnn/hiddenlayer_0/bias",
        "dnn/hiddenlayer_0/kernel",
        "dnn/logits/bias",
        "dnn/logits/kernel",
        "global_step",
    ]
    evaluate = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=100, shuffle=False)
    result = model.evaluate(evaluate)
    assert set(result) == {"average_loss", "label/mean", "prediction/mean", "loss", "global_step"}
    assert result["average_loss"] < 0.05 * y.var()
    assert result["label/mean"] == pytest.approx(y.mean(), rel=1e-5)
    assert result["loss"] == pytest.approx(100 * result["average_loss"], rel=1e-4)  # summed
    predict = tf.estimator.inputs.numpy_input_fn({"x": x}, batch_size=100, shuffle=False)
    got = np.array([p["predictions"] for p in model.predict(predict)])
    assert got.shape == (400, 1)
    assert np.mean((got[:, 0] - y) ** 2) == pytest.approx(result["average_loss"], rel=1e-4)


def test_linear_regressor_recovers_the_coefficients(tmp_path):
    x, y = _linear_data()
    weights = np.where(np.arange(400) % 2 == 0, 1.0, 3.0).astype(np.float32)
    columns = [tf.feature_column.numeric_column("x", shape=2)]
    model = tf.estimator.LinearRegressor(
        columns,
        str(tmp_path),
        weight_column="w",
        optimizer=tf.train.GradientDescentOptimizer(0.002),
    )
    model.train(
        tf.estimator.inputs.numpy_input_fn(
            {"x": x, "w": weights}, y, batch_size=50, num_epochs=None, shuffle=True
        ),
        steps=400,
    )
    assert sorted(model.get_variable_names()) == [
        "global_step",
        "linear/linear_model/bias_weights",
        "linear/linear_model/x/weights",
    ]
    np.testing.assert_allclose(
        model.get_variable_value("linear/linear_model/x/weights")[:, 0], [2.0, -3.0], atol=1e-3
    )
    np.testing.assert_allclose(
        model.get_variable_value("linear/linear_model/bias_weights"), [0.5], atol=1e-3
    )


def test_linear_classifier_binary_and_multiclass(tmp_path):
    x, y = _linear_data()
    labels = (y > 0.5).astype(np.int64)
    columns = [tf.feature_column.numeric_column("x", shape=2)]
    binary = tf.estimator.LinearClassifier(
        columns, str(tmp_path / "binary"), optimizer="Adagrad", label_vocabulary=["no", "yes"]
    )
    binary.train(
        tf.estimator.inputs.numpy_input_fn(
            {"x": x}, labels, batch_size=50, num_epochs=None, shuffle=True
        ),
        steps=200,
    )
    assert binary.get_variable_value("linear/linear_model/x/weights").shape == (2, 1)  # one logit
    result = binary.evaluate(
        tf.estimator.inputs.numpy_input_fn({"x": x}, labels, batch_size=100, shuffle=False)
    )
    assert set(result) == {
        "accuracy",
        "accuracy_baseline",
        "average_loss",
        "label/mean",
        "prediction/mean",
        "precision",
        "recall",
        "loss",
        "global_step",
    }
    assert result["accuracy"] > 0.97
    assert result["label/mean"] == pytest.approx(labels.mean())
    assert result["accuracy_baseline"] == pytest.approx(max(labels.mean(), 1 - labels.mean()))
    predicted = [
        p
        for p in binary.predict(
            tf.estimator.inputs.numpy_input_fn({"x": x}, batch_size=100, shuffle=False)
        )
    ]
    ids = np.array([p["class_ids"][0] for p in predicted])
    logistic = np.array([p["logistic"][0] for p in predicted])
    np.testing.assert_array_equal(ids, (logistic > 0.5).astype(int))
    np.testing.assert_allclose([p["probabilities"][1] for p in predicted], logistic, rtol=1e-5)
    tp = np.sum((ids == 1) & (labels == 1))
    assert result["precision"] == pytest.approx(tp / np.sum(ids == 1))
    assert result["recall"] == pytest.approx(tp / np.sum(labels == 1))
    assert {p["classes"][0] for p in predicted} == {b"no", b"yes"}

    (train_x, train_y), (test_x, test_y) = _iris("iris_training.csv"), _iris("iris_test.csv")
    iris = tf.estimator.LinearClassifier(
        [tf.feature_column.numeric_column(k) for k in NAMES],
        str(tmp_path / "iris"),
        n_classes=3,
        optimizer=tf.train.AdamOptimizer(0.05),
    )
    iris.train(_train_fn(train_x, train_y), steps=400)
    assert iris.get_variable_value("linear/linear_model/PetalLength/weights").shape == (1, 3)
    assert iris.evaluate(_eval_fn(test_x, test_y))["accuracy"] >= 0.9


def test_linear_estimators_default_to_ftrl(tmp_path):
    x, y = _linear_data(40)
    model = tf.estimator.LinearRegressor(
        [tf.feature_column.numeric_column("x", shape=2)], str(tmp_path)
    )
    fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=40, shuffle=False)
    model.train(fn, steps=1)
    assert model.get_variable_value("global_step") == 1
    assert {"linear/linear_model/x/weights/Ftrl", "linear/linear_model/x/weights/Ftrl_1"} <= set(
        model.get_variable_names()
    )
    # FTRL's first step from zero weights, accumulators at 0.1, rate min(0.2, 1/sqrt(1)):
    # linear = g - (sqrt(0.1 + g^2) - sqrt(0.1)) / 0.2 * 0 = g, w = -g / (sqrt(0.1 + g^2) / 0.2)
    g = -2.0 * (x.T @ y).ravel()  # the summed squared error's gradient at w = 0, b = 0
    want = -g / (np.sqrt(0.1 + g * g) / 0.2)
    np.testing.assert_allclose(
        model.get_variable_value("linear/linear_model/x/weights").ravel(), want, rtol=1e-5
    )

    (train_x, train_y), (test_x, test_y) = _iris("iris_training.csv"), _iris("iris_test.csv")
    iris = tf.estimator.LinearClassifier(
        [tf.feature_column.numeric_column(k) for k in NAMES], str(tmp_path / "iris"), n_classes=3
    )
    iris.train(_train_fn(train_x, train_y), steps=300)
    assert iris.evaluate(_eval_fn(test_x, test_y))["accuracy"] >= 0.9
    with pytest.raises(ValueError, match="Unsupported optimizer name: Lbfgs"):
        tf.estimator.LinearRegressor(
            [tf.feature_column.numeric_column("x", shape=2)], str(tmp_path), optimizer="Lbfgs"
        ).train(fn, steps=1)
