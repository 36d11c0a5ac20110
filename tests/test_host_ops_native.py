"""tf.Print and tf.Assert in native executables (`tfc compile`): the predict program writes TF's
text and fails with TF's message; a model with an op only Python runs is refused by name."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tfc.ops.tensor_text import summarize_v1
from tfc.tools.cli import main as tfc_main

ROOT = Path(__file__).resolve().parent.parent
TRAIN_CSV = ROOT / "samples" / "data" / "iris_training.csv"
TEST_CSV = ROOT / "samples" / "data" / "iris_test.csv"
BATCH = 8

MODEL = """
import tfc as tf


def signatures():
    tf.set_random_seed(1)
    features = tf.placeholder(tf.float32, [None, 4], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    logits = tf.layers.dense(features, 3, name="logits")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    check = tf.assert_non_negative(features, message="measurements")
    with tf.control_dependencies([check]):
        probabilities = tf.nn.softmax(logits)
    probabilities = tf.Print(probabilities, [features[0], tf.shape(features)],
                             message="first row: ", summarize=4)
    return {
        "train": {"inputs": {"features": features, "labels": labels}, "loss": loss,
                  "train_op": train_op},
        "predict": {"inputs": {"features": features},
                    "outputs": {"probabilities": probabilities}},
    }
"""


def _run(*args, check=True):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The model compiled by `tfc compile`, trained for one step (a checkpoint to predict
    with)."""
    root = tmp_path_factory.mktemp("host_ops")
    (root / "model.py").write_text(MODEL)
    outdir = root / "build"
    assert (
        tfc_main(["compile", str(root / "model.py"), "-o", str(outdir), "--batch", str(BATCH)]) == 0
    )
    ckpt = root / "ckpt"
    _run(outdir / "train", "--data", TRAIN_CSV, "--steps", 1, "--checkpoint-dir", ckpt)
    return outdir, ckpt, root


def _table(path):
    return np.loadtxt(path, delimiter=",", skiprows=1)[:, :4].astype(np.float32)


def test_print_writes_tfs_text_from_the_native_predict_program(built):
    outdir, ckpt, _ = built
    proc = _run(outdir / "predict", "--checkpoint", ckpt, "--data", TEST_CSV)
    rows = _table(TEST_CSV)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("first row: ")]
    expected = [
        f"first row: [{summarize_v1(rows[i], 4)}][{summarize_v1(np.array([BATCH, 4]), 4)}]"
        for i in range(0, len(rows) - len(rows) % BATCH, BATCH)
    ]
    assert lines[: len(expected)] == expected


def test_assert_stops_the_native_program_with_tfs_message(built):
    outdir, ckpt, root = built
    rows = _table(TEST_CSV)[:BATCH]
    rows[0, 2] = -1.5
    data = root / "negative.csv"
    header = f"{BATCH},4,setosa,versicolor,virginica"
    np.savetxt(data, np.c_[rows, np.zeros(BATCH)], delimiter=",", header=header, comments="",
               fmt="%g")  # fmt: skip
    proc = _run(outdir / "predict", "--checkpoint", ckpt, "--data", data, check=False)
    assert proc.returncode != 0
    message = (
        "assertion failed: [measurements.  ] [Condition x >= 0 did not hold element-wise:] "
        f"[x (features:0) = ] [{summarize_v1(rows, 3)}]"
    )
    assert message == "assertion failed: [measurements.  ] [Condition x >= 0 did not hold " \
        "element-wise:] [x (features:0) = ] [[4.9 2.4 -1.5...]...]"  # fmt: skip
    assert message in proc.stderr


@pytest.mark.parametrize("target", ["host", "embed"])
def test_a_model_with_a_python_op_is_refused_naming_it(tmp_path, capsys, target):
    model = tmp_path / "pyfunc_model.py"
    model.write_text(
        MODEL.replace(
            "probabilities = tf.nn.softmax(logits)",
            "probabilities = tf.py_func(lambda a: a, [tf.nn.softmax(logits)], tf.float32, "
            'name="in_python")',
        )
    )
    code = tfc_main(["compile", str(model), "-o", str(tmp_path / "out"), "--target", target,
                     "--no-build"])  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "Op 'in_python' (type PyFunc) cannot be compiled into a native program: it calls a " \
           "Python function" in err  # fmt: skip
