"""tf.estimator.Estimator with a custom model_fn: train, evaluate, predict, resume, hooks,
numpy_input_fn, RunConfig, train_and_evaluate and warm starts."""

from pathlib import Path

import numpy as np
import pytest

import tfc as tf

DIGITS = Path(__file__).resolve().parent.parent / "samples" / "data" / "digits.npz"
# gcc at -O1 (conftest.quick_builds): the Estimator's loop, checkpoints and hooks are under test
# here, not the generated code; -O1 gives -O3's numbers and builds in a third of the time
pytestmark = pytest.mark.usefixtures("quick_builds")


def _digits():
    data = np.load(DIGITS)
    x = (data["images"].reshape(-1, 64) / 16.0).astype(np.float32)
    y = data["labels"].astype(np.int64)
    return (x[:1400], y[:1400]), (x[1400:], y[1400:])


def _mlp_model_fn(features, labels, mode, params):
    net = tf.layers.dense(features["pixels"], params["hidden"], tf.nn.relu, name="hidden")
    logits = tf.layers.dense(net, 10, name="logits")
    classes = tf.argmax(logits, axis=1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {"class": classes, "probabilities": tf.nn.softmax(logits)}
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        metrics = {"accuracy": tf.metrics.accuracy(labels, classes)}
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = tf.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _digits_estimator(model_dir, **config):
    config = tf.estimator.RunConfig(save_checkpoints_steps=100, **config)
    params = {"hidden": 32, "learning_rate": 0.005}
    return tf.estimator.Estimator(_mlp_model_fn, str(model_dir), config=config, params=params)


def _numpy_fn(x, y=None, **kwargs):
    kwargs.setdefault("shuffle", False)
    return tf.estimator.inputs.numpy_input_fn({"pixels": x}, y, **kwargs)


def test_custom_model_fn_trains_evaluates_predicts_and_resumes(tmp_path):
    (x, y), (test_x, test_y) = _digits()
    model = _digits_estimator(tmp_path)
    model.train(_numpy_fn(x, y, batch_size=64, num_epochs=None, shuffle=True), steps=300)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [Path(p).name for p in state.all_model_checkpoint_paths] == [
        f"model.ckpt-{s}" for s in (0, 100, 200, 300)
    ]
    result = model.evaluate(_numpy_fn(test_x, test_y, batch_size=100))
    assert set(result) == {"accuracy", "loss", "global_step"}
    assert result["global_step"] == 300 and result["accuracy"] > 0.85

    predictions = list(model.predict(_numpy_fn(test_x, batch_size=100)))
    assert len(predictions) == len(test_x) and set(predictions[0]) == {"class", "probabilities"}
    classes = np.array([p["class"] for p in predictions])
    assert (classes == test_y).mean() == pytest.approx(result["accuracy"])
    # the predictions are the network of the checkpoint's weights
    w = {n: model.get_variable_value(n) for n in model.get_variable_names() if "Adam" not in n}
    hidden = np.maximum(test_x @ w["hidden/kernel"] + w["hidden/bias"], 0)
    logits = hidden @ w["logits/kernel"] + w["logits/bias"]
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    got = np.stack([p["probabilities"] for p in predictions])
    np.testing.assert_allclose(got, probs, rtol=1e-4, atol=1e-6)
    batches = list(model.predict(_numpy_fn(test_x, batch_size=100), yield_single_examples=False))
    assert [len(b["class"]) for b in batches] == [100, 100, 100, 97]
    only = next(model.predict(_numpy_fn(test_x, batch_size=100), predict_keys="class"))
    assert set(only) == {"class"}

    # a new Estimator on the model_dir resumes: max_steps is a global step, steps a count
    again = _digits_estimator(tmp_path)
    again.train(_numpy_fn(x, y, batch_size=64, num_epochs=None, shuffle=True), max_steps=350)
    assert again.evaluate(_numpy_fn(test_x, test_y, batch_size=100), steps=1)["global_step"] == 350
    # one epoch of 1400 rows in batches of 500: the input ends after 3 steps
    again.train(_numpy_fn(x, y, batch_size=500), steps=10)
    assert Path(again.latest_checkpoint()).name == "model.ckpt-353"


def test_model_fn_gets_only_the_arguments_it_takes(tmp_path):
    x = np.arange(8, dtype=np.float32).reshape(8, 1)
    seen = []

    def model_fn(features, labels, config):  # no mode, no params
        seen.append(config)
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features * w - labels))
        train_op = tf.train.GradientDescentOptimizer(0.01).minimize(
            loss, global_step=tf.train.get_global_step()
        )
        return tf.estimator.EstimatorSpec("train", loss=loss, train_op=train_op)

    model = tf.estimator.Estimator(model_fn, str(tmp_path))
    model.train(lambda: (tf.constant(x), tf.constant(2 * x)), steps=2)
    assert seen and seen[0].model_dir == str(tmp_path)
    assert model.get_variable_value("global_step") == 2
    w = model.get_variable_value("w")
    # two steps of gradient descent on mean((x w - 2x)^2) from w = 0
    mean_square = np.mean(x**2)
    w_one = 0.01 * 4 * mean_square
    np.testing.assert_allclose(w, w_one + 0.01 * 2 * mean_square * (2 - w_one), rtol=1e-5)

    def predicts_a_tensor(features):  # features only: PREDICT is its one mode
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        return tf.estimator.EstimatorSpec("infer", predictions=features * w)

    values = list(
        tf.estimator.Estimator(predicts_a_tensor, str(tmp_path)).predict(
            lambda: tf.data.Dataset.from_tensor_slices(x).batch(3)
        )
    )
    assert len(values) == 8 and all(isinstance(v, np.ndarray) for v in values)  # not dicts
    np.testing.assert_allclose(np.concatenate(values), x[:, 0] * w, rtol=1e-6)

    def needs_params(features, labels, mode, params):
        pass

    def no_params(features, labels, mode):
        pass

    with pytest.raises(ValueError, match="does not include params argument"):
        tf.estimator.Estimator(no_params, params={"a": 1})
    with pytest.raises(ValueError, match="must include features argument"):
        tf.estimator.Estimator(lambda inputs, labels: None)
    with pytest.raises(ValueError, match=r"not expected args: \['extra'\]"):
        tf.estimator.Estimator(lambda features, labels, extra: None)
    model = tf.estimator.Estimator(lambda features, mode: None, str(tmp_path / "b"))
    with pytest.raises(ValueError, match="model_fn does not take labels"):
        model.train(lambda: (tf.constant(x), tf.constant(x)), steps=1)
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        model.train(lambda: tf.constant(x), steps=1)
    with pytest.raises(ValueError, match="set both in constructor and `RunConfig`"):
        tf.estimator.Estimator(needs_params, "a", tf.estimator.RunConfig(model_dir="b"), {})


def test_estimator_spec_checks_what_each_mode_needs():
    loss = tf.constant(1.0)
    op = tf.no_op()
    with pytest.raises(ValueError, match="Missing train_op"):
        tf.estimator.EstimatorSpec("train", loss=loss)
    with pytest.raises(ValueError, match="Missing loss"):
        tf.estimator.EstimatorSpec("eval")
    with pytest.raises(ValueError, match="Missing predictions"):
        tf.estimator.EstimatorSpec("infer")
    with pytest.raises(ValueError, match="Loss must be scalar"):
        tf.estimator.EstimatorSpec("eval", loss=tf.constant([1.0, 2.0]))
    with pytest.raises(TypeError, match="train_op must be Tensor or Operation"):
        tf.estimator.EstimatorSpec("train", loss=loss, train_op="nope")
    with pytest.raises(TypeError, match=r"\(metric_value, update_op\) tuples"):
        tf.estimator.EstimatorSpec("eval", loss=loss, eval_metric_ops={"m": loss})
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
        tf.estimator.EstimatorSpec("train", loss=loss, train_op=op, training_hooks=[object()])
    with pytest.raises(NotImplementedError, match="Scaffold"):
        tf.estimator.EstimatorSpec("train", loss=loss, train_op=op, scaffold=object())
    with pytest.raises(ValueError, match="mode=fit unrecognized"):
        tf.estimator.EstimatorSpec("fit")
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(2.0)
    with pytest.raises(ValueError, match="must be from the default graph"):
        tf.estimator.EstimatorSpec("eval", loss=foreign)
    spec = tf.estimator.EstimatorSpec("eval", loss=tf.constant([3.0]))
    assert spec.loss.shape.as_list() == [] and spec.predictions == {}
    spec = tf.estimator.EstimatorSpec("infer", predictions={"y": loss})
    assert isinstance(spec.export_outputs["serving_default"], tf.estimator.export.PredictOutput)
    assert spec.export_outputs["serving_default"].outputs == {"y": loss}
    assert spec._replace(loss=None).loss is None  # a namedtuple, as TF1's


def test_numpy_input_fn_batches_epochs_and_shuffles():
    x = {"b": np.arange(10, dtype=np.float32), "a": np.arange(10, 20, dtype=np.int64)}
    y = np.arange(100, 110, dtype=np.int32)
    features, labels = tf.estimator.inputs.numpy_input_fn(x, y, batch_size=4, shuffle=False)()
    assert sorted(features) == ["a", "b"] and features["a"].dtype == tf.int64
    with tf.Session() as sess:
        got = []
        while True:
            try:
                got.append(sess.run((features, labels)))
            except tf.errors.OutOfRangeError:
                break
    assert [len(lab) for _, lab in got] == [4, 4, 2]  # one epoch, the last batch partial
    np.testing.assert_array_equal(np.concatenate([f["b"] for f, _ in got]), x["b"])
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in got]), y)

    tf.set_random_seed(3)
    fn = tf.estimator.inputs.numpy_input_fn(
        np.arange(10.0), None, batch_size=5, num_epochs=2, shuffle=True, queue_capacity=10
    )
    only_features = fn()
    assert isinstance(only_features, tf.Tensor)  # an array x gives a tensor, no labels
    with tf.Session() as sess:
        rows = [sess.run(only_features) for _ in range(4)]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(only_features)
    first, second = np.concatenate(rows[:2]), np.concatenate(rows[2:])
    assert sorted(first) == sorted(second) == list(range(10))  # every row once per epoch
    assert list(first) != list(range(10)) and list(first) != list(second)

    forever = tf.estimator.inputs.numpy_input_fn(
        {"x": np.arange(3)}, {"t": np.arange(3)}, batch_size=2, num_epochs=None, shuffle=False
    )
    feats, targets = forever()
    with tf.Session() as sess:
        values = [sess.run(targets)["t"] for _ in range(3)]
    assert [list(v) for v in values] == [[0, 1], [2, 0], [1, 2]]  # full batches across epochs


def test_numpy_input_fn_errors():
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as boolean"):
        tf.estimator.inputs.numpy_input_fn(np.zeros(3))
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        tf.estimator.inputs.numpy_input_fn({"a": np.zeros(3)}, np.zeros(4), shuffle=False)()
    with pytest.raises(ValueError, match="1 duplicate keys are found in both x and y"):
        tf.estimator.inputs.numpy_input_fn({"a": np.zeros(3)}, {"a": np.zeros(3)}, shuffle=False)()
    with pytest.raises(TypeError, match="x must be a dict or array; got list"):
        tf.estimator.inputs.numpy_input_fn([1, 2], shuffle=False)()
    with pytest.raises(ValueError, match="x cannot be an empty dict"):
        tf.estimator.inputs.numpy_input_fn({}, shuffle=False)()


def test_run_config_defaults_and_replace():
    config = tf.estimator.RunConfig()
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (600, None)
    assert config.keep_checkpoint_max == 5 and config.is_chief and config.num_worker_replicas == 1
    steps = config.replace(save_checkpoints_steps=10)
    assert (steps.save_checkpoints_secs, steps.save_checkpoints_steps) == (None, 10)
    assert steps.replace(keep_checkpoint_max=2).save_checkpoints_steps == 10
    never = tf.estimator.RunConfig(save_checkpoints_steps=None)  # TF1: no checkpoints at all
    assert (never.save_checkpoints_secs, never.save_checkpoints_steps) == (None, None)
    with pytest.raises(ValueError, match="cannot be both set"):
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ValueError, match=r"Replacing \['bogus'\] is not supported"):
        config.replace(bogus=1)
    with pytest.raises(NotImplementedError, match="train_distribute"):
        tf.estimator.RunConfig(train_distribute=object())
    with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
        tf.estimator.Estimator(_mlp_model_fn, config={"model_dir": "x"}, params={})


# -- hooks, listeners, train_and_evaluate, warm starts -------------------------------------------
class CountingHook(tf.train.SessionRunHook):
    def __init__(self):
        self.runs = 0
        self.ended = False

    def after_run(self, run_context, run_values):
        self.runs += 1

    def end(self, session):
        self.ended = True


def test_train_runs_hooks_and_saving_listeners(tmp_path):
    (x, y), _ = _digits()
    spec_hook = CountingHook()

    def model_fn(features, labels, mode, params):
        spec = _mlp_model_fn(features, labels, mode, params)
        return spec._replace(training_hooks=(spec_hook,), evaluation_hooks=(spec_hook,))

    saved = []

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            saved.append(global_step_value)

    config = tf.estimator.RunConfig(save_checkpoints_steps=20)
    model = tf.estimator.Estimator(
        model_fn, str(tmp_path), config, params={"hidden": 8, "learning_rate": 0.01}
    )
    user_hook = CountingHook()
    stop = tf.train.StopAtStepHook(last_step=30)
    train = _numpy_fn(x, y, batch_size=64, num_epochs=None, shuffle=True)
    model.train(train, hooks=[user_hook, stop], saving_listeners=[Listener()])
    assert user_hook.runs == spec_hook.runs == 30 and user_hook.ended and spec_hook.ended
    assert saved == [0, 20, 30]
    model.evaluate(_numpy_fn(x[:100], y[:100], batch_size=50), hooks=[user_hook])
    assert user_hook.runs == 32 and spec_hook.runs == 32
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
        model.train(train, hooks=[object()], steps=1)
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook"):
        tf.estimator.Estimator(
            _mlp_model_fn,
            str(tmp_path),
            tf.estimator.RunConfig(save_checkpoints_steps=None),
            params={"hidden": 8, "learning_rate": 0.01},
        ).train(train, steps=1, saving_listeners=[Listener()])


def test_training_failures_are_clear(tmp_path):
    x = np.ones((8, 1), np.float32)

    def diverges(features, labels, mode):
        w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
        loss = tf.reduce_sum(tf.log(features * w - 2.0))  # NaN from the start
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step()
        )
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def stuck(features, labels, mode):
        w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
        loss = tf.reduce_sum(tf.square(features * w))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)  # no global_step
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    with pytest.raises(tf.train.NanLossDuringTrainingError):
        tf.estimator.Estimator(diverges, str(tmp_path / "nan")).train(
            lambda: (tf.constant(x), tf.constant(x)), steps=5
        )
    with pytest.raises(RuntimeError, match="does not advance the global step"):
        tf.estimator.Estimator(stuck, str(tmp_path / "stuck")).train(
            lambda: (tf.constant(x), tf.constant(x)), steps=5
        )


def test_train_and_evaluate_evaluates_each_checkpoint_and_exports(tmp_path):
    (x, y), (test_x, test_y) = _digits()
    model = _digits_estimator(tmp_path, log_step_count_steps=None)
    evaluations = CountingHook()

    def serving():
        pixels = tf.placeholder(tf.float32, [None, 64], name="pixels")
        return tf.estimator.export.ServingInputReceiver({"pixels": pixels}, pixels)

    train_spec = tf.estimator.TrainSpec(
        _numpy_fn(x, y, batch_size=64, num_epochs=None, shuffle=True), max_steps=250
    )
    eval_spec = tf.estimator.EvalSpec(
        _numpy_fn(test_x, test_y, batch_size=100, num_epochs=None),
        steps=2,
        hooks=[evaluations],
        exporters=[
            tf.estimator.FinalExporter("final", serving),
            tf.estimator.LatestExporter("latest", serving, exports_to_keep=1),
        ],
        throttle_secs=0,
    )
    metrics, exports = tf.estimator.train_and_evaluate(model, train_spec, eval_spec)
    # checkpoints at 0 (not evaluated: nothing trained), 100, 200 and the last step, 250
    assert evaluations.runs == 3 * 2
    assert metrics["global_step"] == 250 and metrics["accuracy"] > 0.8
    final, latest = (p.decode() for p in exports)
    assert Path(final).parent == tmp_path / "export" / "final"
    assert len(list((tmp_path / "export" / "latest").iterdir())) == 1  # one kept
    assert Path(latest).parent.name == "latest"
    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        tf.estimator.TrainSpec(train_spec.input_fn, max_steps=0)
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        tf.estimator.EvalSpec("data")
    with pytest.raises(ValueError, match="`exporters` must have unique names"):
        tf.estimator.EvalSpec(
            eval_spec.input_fn,
            exporters=[tf.estimator.FinalExporter("a", serving)] * 2,
        )
    # trained to max_steps already: nothing to train, nothing evaluated
    assert tf.estimator.train_and_evaluate(model, train_spec, eval_spec) == (None, [])


def test_warm_start_reads_the_chosen_variables(tmp_path):
    (x, y), _ = _digits()
    source = _digits_estimator(tmp_path / "source")
    source.train(_numpy_fn(x, y, batch_size=64, num_epochs=None, shuffle=True), steps=20)
    settings = tf.estimator.WarmStartSettings(str(tmp_path / "source"), vars_to_warm_start="hidden")
    warm = tf.estimator.Estimator(
        _mlp_model_fn,
        str(tmp_path / "warm"),
        tf.estimator.RunConfig(save_checkpoints_steps=100, tf_random_seed=7),
        params={"hidden": 32, "learning_rate": 0.0},
        warm_start_from=settings,
    )
    warm.train(_numpy_fn(x, y, batch_size=64), steps=1)
    for name in ("hidden/kernel", "hidden/bias"):
        np.testing.assert_array_equal(
            warm.get_variable_value(name), source.get_variable_value(name)
        )
    assert not np.array_equal(
        warm.get_variable_value("logits/kernel"), source.get_variable_value("logits/kernel")
    )
    assert warm.get_variable_value("global_step") == 1  # the global step is not warm-started

    # a list of expressions chooses among all global variables, under their previous names
    renamed = tf.estimator.WarmStartSettings(
        str(tmp_path / "source"),
        vars_to_warm_start=["logits/kernel$", "global_step"],
        var_name_to_prev_var_name={"logits/kernel": "hidden/bias"},
    )

    def wide_logits(features, labels, mode, params):  # logits/kernel has hidden/bias's shape
        w = tf.get_variable("logits/kernel", [32])
        loss = tf.reduce_sum(w) + 0.0 * tf.reduce_sum(features["pixels"])
        step = tf.assign_add(tf.train.get_global_step(), 1)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)

    other = tf.estimator.Estimator(
        wide_logits, str(tmp_path / "renamed"), params={}, warm_start_from=renamed
    )
    other.train(_numpy_fn(x, y, batch_size=64), steps=1)
    np.testing.assert_array_equal(
        other.get_variable_value("logits/kernel"), source.get_variable_value("hidden/bias")
    )
    assert other.get_variable_value("global_step") == 21  # 20 warm-started, then one step
