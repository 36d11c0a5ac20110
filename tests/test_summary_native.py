"""`train --logdir`: the native train executable writes TensorBoard event files from C, with
the loss, the rates, the learning rate and the model's tf.summary.scalar values, read back here
with tfc's event reader (TensorFlow's and TensorBoard's read the same format:
tests/test_tf_compat_summary.py)."""

import re
import subprocess
from pathlib import Path

import pytest

from tfc.io.event_file import summary_iterator
from tfc.tools.cli import main as tfc_main

ROOT = Path(__file__).resolve().parent.parent
TRAIN_CSV = ROOT / "samples" / "data" / "iris_training.csv"

MODEL = """
import tfc as tf


def signatures():
    tf.set_random_seed(1)
    features = tf.placeholder(tf.float32, [None, 4], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    lr = tf.placeholder_with_default(0.1, [], name="learning_rate")
    logits = tf.layers.dense(features, 3, name="logits")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
    with tf.name_scope("stats"):
        tf.summary.scalar("doubled_loss", loss * 2.0)
        tf.summary.scalar("mean_feature", tf.reduce_mean(features))
    tf.summary.scalar("unfed", tf.placeholder(tf.float32, [], name="other"))  # not computable
    tf.summary.histogram("weights", tf.trainable_variables()[0])  # not a scalar
    return {
        "train": {"inputs": {"features": features, "labels": labels}, "loss": loss,
                  "train_op": train_op, "hyperparameters": {"learning_rate": lr}},
    }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    (root / "model.py").write_text(MODEL)
    outdir = root / "build"
    assert tfc_main(["compile", str(root / "model.py"), "-o", str(outdir), "--batch", "8"]) == 0
    return outdir, root


def test_train_writes_the_loss_rates_learning_rate_and_scalar_summaries(built):
    outdir, root = built
    logdir = root / "logs"
    proc = subprocess.run(
        [str(outdir / "train"), "--data", str(TRAIN_CSV), "--steps", "6", "--log-every", "2",
         "--checkpoint-dir", str(root / "ckpt"), "--lr", "0.05", "--logdir", str(logdir)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    printed = {int(s): float(v) for s, v in re.findall(r"^step (\d+)  loss (\S+)", proc.stdout,
                                                        re.M)}  # fmt: skip
    (path,) = logdir.glob("events.out.tfevents.*")
    events = list(summary_iterator(path))
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 0
    by_step = {e.step: {v.tag: v.simple_value for v in e.summary.value} for e in events[1:]}
    assert sorted(by_step) == sorted(printed) == [2, 4, 6]
    for step, values in by_step.items():
        assert set(values) == {"loss", "examples/sec", "global_step/sec", "learning_rate",
                               "stats/doubled_loss", "stats/mean_feature"}  # fmt: skip
        assert values["loss"] == pytest.approx(printed[step], rel=1e-5)  # printed with %.6g
        assert values["stats/doubled_loss"] == 2 * values["loss"]  # the same run computed both
        assert values["learning_rate"] == pytest.approx(0.05)
        assert values["examples/sec"] == pytest.approx(8 * values["global_step/sec"], rel=1e-5)
    assert 0 < by_step[6]["stats/mean_feature"] < 10  # the mean of an Iris batch


def test_without_logdir_no_event_file_is_written(built):
    outdir, root = built
    proc = subprocess.run(
        [str(outdir / "train"), "--data", str(TRAIN_CSV), "--steps", "2",
         "--checkpoint-dir", str(root / "ckpt2")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not list(root.rglob("events.out.tfevents.*")) or all(
        "logs" in p.parts for p in root.rglob("events.out.tfevents.*")
    )
    assert "--logdir L" in subprocess.run([str(outdir / "train"), "--help"], capture_output=True,
                                          text=True).stdout  # fmt: skip
