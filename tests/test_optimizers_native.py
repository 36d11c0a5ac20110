"""The optimizers' slots in the native `train` executables: one model file trains a linear
Iris classifier per optimizer, `tfc compile` builds it, and after some steps each optimizer's
variable and slots in the native checkpoint equal a Python session's on the same batches.
"""

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.tools.cli import main as tfc_main

ROOT = Path(__file__).resolve().parent.parent
TRAIN_CSV = ROOT / "samples" / "data" / "iris_training.csv"
BATCH = 16
STEPS = 12

# each optimizer trains its own copy of the model: one compile serves them all
MODEL = textwrap.dedent(
    """
    import tfc as tf

    OPTIMIZERS = {
        "adadelta": lambda step: tf.train.AdadeltaOptimizer(2.0, rho=0.9),
        "ftrl": lambda step: tf.train.FtrlOptimizer(
            0.3, l1_regularization_strength=0.001, l2_regularization_strength=0.01
        ),
        "ftrl_shrinkage": lambda step: tf.train.FtrlOptimizer(
            0.3, learning_rate_power=-0.4, l2_shrinkage_regularization_strength=0.01
        ),
        "proximal_sgd": lambda step: tf.train.ProximalGradientDescentOptimizer(
            0.1, l1_regularization_strength=0.001, l2_regularization_strength=0.01
        ),
        "proximal_adagrad": lambda step: tf.train.ProximalAdagradOptimizer(
            0.3, l1_regularization_strength=0.001
        ),
        "adagrad_da": lambda step: tf.train.AdagradDAOptimizer(
            0.3, step, l2_regularization_strength=0.01
        ),
        "rmsprop_centered": lambda step: tf.train.RMSPropOptimizer(
            0.01, momentum=0.5, centered=True
        ),
    }


    def signatures():
        tf.set_random_seed(7)
        features = tf.placeholder(tf.float32, [None, 4], name="features")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        step = tf.train.get_or_create_global_step()
        losses, updates = [], []
        for name, make in OPTIMIZERS.items():
            logits = tf.layers.dense(features, 3, name=name)
            loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
            losses.append(loss)
            updates.append(make(step).minimize(loss))
        with tf.control_dependencies(updates):
            train_op = tf.assign_add(step, 1)
        return {
            "train": {
                "inputs": {"features": features, "labels": labels},
                "loss": tf.add_n(losses),
                "train_op": train_op,
            }
        }
    """
)
SLOTS_PER_VARIABLE = {
    "adadelta": 2,
    "ftrl": 2,
    "ftrl_shrinkage": 2,
    "proximal_sgd": 0,
    "proximal_adagrad": 1,
    "adagrad_da": 2,
    "rmsprop_centered": 3,
}


def _model_namespace() -> dict:
    namespace: dict = {}
    exec(compile(MODEL, "optimizers_model.py", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(the native checkpoint, the session's variables) after STEPS steps on the same batches,
    and the session's initial values."""
    tmp = tmp_path_factory.mktemp("optimizers")
    (tmp / "optimizers_model.py").write_text(MODEL)
    build = tmp / "build"
    assert tfc_main(["compile", str(tmp / "optimizers_model.py"), "-o", str(build),
                     "--batch", str(BATCH)]) == 0  # fmt: skip
    proc = subprocess.run(
        [str(build / "train"), "--data", str(TRAIN_CSV), "--steps", str(STEPS),
         "--checkpoint-dir", str(tmp / "ckpt"), "--batch", str(BATCH), "--no-shuffle"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    native = tf.train.load_checkpoint(str(tmp / "ckpt"))

    table = np.loadtxt(TRAIN_CSV, delimiter=",", skiprows=1)
    x, y = table[:, :4].astype(np.float32), table[:, 4].astype(np.int32)
    rows = np.arange(STEPS * BATCH) % len(x)
    graph = tf.Graph()
    with graph.as_default():
        sig = _model_namespace()["signatures"]()["train"]
        inputs = sig["inputs"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            initial = {v.op.name: sess.read_variable(v.op.name) for v in tf.global_variables()}
            for k in range(STEPS):
                batch = rows[k * BATCH : (k + 1) * BATCH]
                sess.run(
                    sig["train_op"], {inputs["features"]: x[batch], inputs["labels"]: y[batch]}
                )
            expected = {v.op.name: sess.read_variable(v.op.name) for v in tf.global_variables()}
    return native, expected, initial


@pytest.mark.parametrize("name", sorted(SLOTS_PER_VARIABLE))
def test_native_training_updates_variables_and_slots_as_the_session(trained, name):
    native, expected, initial = trained
    names = [n for n in expected if n.startswith(name + "/")]
    slots = [n for n in names if not n.endswith(("/kernel", "/bias"))]
    # a slot per variable and slot name (none for the proximal gradient descent)
    assert len(slots) == SLOTS_PER_VARIABLE[name] * 2, slots
    assert native.get_tensor("global_step") == STEPS
    for n in names:
        want, got = expected[n], native.get_tensor(n)
        assert got.shape == want.shape and got.dtype == want.dtype, n
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=n)
        assert not np.array_equal(want, initial[n]), f"{n} did not change"
