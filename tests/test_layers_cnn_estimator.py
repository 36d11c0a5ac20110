"""The tf.layers CNN as a custom Estimator model_fn (samples/layers_cnn_estimator.py): trained
with numpy_input_fn, evaluated, exported, and compiled to a native predict that agrees with
Estimator.predict."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc as tf

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"


def _import_samples():
    sys.path.insert(0, str(SAMPLES))
    try:
        import layers_cnn_estimator
        import lenet
    finally:
        sys.path.remove(str(SAMPLES))
    return layers_cnn_estimator, lenet


def test_estimator_cnn_trains_evaluates_and_exports_to_native_predict(tmp_path, capsys):
    sample, lenet = _import_samples()
    (x_train, y_train), (x_test, y_test) = lenet.load_digits()
    batch, steps = 8, 4
    estimator = sample.make_estimator(str(tmp_path / "model"), batch, log_every=2)
    estimator.train(
        tf.estimator.inputs.numpy_input_fn(
            {sample.FEATURE: x_train}, y_train, batch_size=batch, num_epochs=None, shuffle=True
        ),
        steps=steps,
    )
    losses = re.findall(r"^step +(\d+)  loss (\S+)", capsys.readouterr().out, re.M)
    assert [int(s) for s, _ in losses] == [2, 4]
    assert estimator.get_variable_value("global_step") == steps
    # batch normalization's moving averages moved: the train_op ran UPDATE_OPS
    assert np.abs(estimator.get_variable_value("cnn/bn1/moving_mean")).max() > 0
    assert np.all(estimator.get_variable_value("cnn/bn1/moving_variance") != 1)

    rows = x_test[:16]
    labels = y_test[:16]
    result = estimator.evaluate(
        tf.estimator.inputs.numpy_input_fn(
            {sample.FEATURE: rows}, labels, batch_size=16, shuffle=False
        )
    )
    predicted = list(
        estimator.predict(
            tf.estimator.inputs.numpy_input_fn({sample.FEATURE: rows}, batch_size=16, shuffle=False)
        )
    )
    probabilities = np.stack([p["probabilities"] for p in predicted])
    classes = np.array([p["classes"] for p in predicted])
    np.testing.assert_array_equal(classes, probabilities.argmax(1))
    assert result["global_step"] == steps
    assert result["accuracy"] == pytest.approx(np.mean(classes == labels))

    export_dir = estimator.export_saved_model(
        str(tmp_path / "export"), sample.serving_input_receiver_fn
    ).decode()
    build = tmp_path / "build"
    # -O0: what is checked here is that the export compiles to the Estimator's predictions, and
    # it builds 4x faster than -O3 (test_layers.py runs this network's C at the default flags)
    tf.compile(export_dir, build, batch=8, cflags=["-O0"])
    data = tmp_path / "rows.npy"
    np.save(data, rows.reshape(len(rows), -1))
    subprocess.run(
        [build / "predict", "--checkpoint", f"{export_dir}/variables", "--data", data]
        + ["--output", tmp_path / "out.npy"],
        capture_output=True,
        text=True,
        check=True,
    )
    np.testing.assert_allclose(
        np.load(tmp_path / "out_probabilities.npy"), probabilities, rtol=0, atol=1e-5
    )
    np.testing.assert_array_equal(np.load(tmp_path / "out_classes.npy"), classes)


@pytest.mark.benchmark
def test_estimator_cnn_sample_trains_to_lenets_accuracy(tmp_path):
    """300 steps of the CNN through the Estimator and of the raw-op LeNet sample through a
    session: the Estimator reaches LeNet's test accuracy (and 95%)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = {}
    for script, extra in (
        ("layers_cnn_estimator.py", ["--model_dir", str(tmp_path / "model")]),
        ("lenet.py", []),
    ):
        proc = subprocess.run(
            [sys.executable, str(SAMPLES / script), "--steps", "300", *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        out[script] = proc.stdout
    text = out["layers_cnn_estimator.py"]
    losses = [float(v) for v in re.findall(r"^step +\d+  loss (\S+)", text, re.M)]
    assert len(losses) == 3 and losses[-1] < losses[0]

    def accuracy(output):
        return float(output.strip().splitlines()[-1].split()[-1])

    assert accuracy(text) >= 0.95 and accuracy(text) >= accuracy(out["lenet.py"]) - 0.02
