"""The LSTM digits classifier (samples/lstm_digits_model.py) compiled by `tfc compile`: its
native train executable follows the Session's loss curve step for step, and predict then
gives the Session's probabilities."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import tfc as tf
from tfc.tools.cli import main as tfc_main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MODEL = SAMPLES / "lstm_digits_model.py"
BATCH, STEPS = 32, 25


def _model():
    sys.path.insert(0, str(SAMPLES))
    try:
        import lstm_digits_model
    finally:
        sys.path.remove(str(SAMPLES))
    return lstm_digits_model


def test_native_train_follows_the_sessions_loss_curve(tmp_path):
    model = _model()
    rows = model.training_rows()[: BATCH * STEPS]
    data = tmp_path / "digits.npy"
    np.save(data, rows)
    out = tmp_path / "build"
    assert tfc_main(["compile", str(MODEL), "-o", str(out), "--batch", str(BATCH)]) == 0
    run = subprocess.run(
        [str(out / "train"), "--data", str(data), "--steps", str(STEPS), "--checkpoint-dir",
         str(tmp_path / "ckpt"), "--batch", str(BATCH), "--no-shuffle", "--log-every", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    native = [float(v) for v in re.findall(r"^step \d+  loss (\S+)", run.stdout, re.M)]
    assert len(native) == STEPS

    sig = model.signatures()
    feeds = sig["train"]["inputs"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = []
        for k in range(STEPS):
            batch = rows[k * BATCH : (k + 1) * BATCH]
            feed = {feeds["features"]: batch[:, :-1], feeds["labels"]: batch[:, -1]}
            losses.append(sess.run([sig["train"]["loss"], sig["train"]["train_op"]], feed)[0])
        probabilities = sess.run(
            sig["predict"]["outputs"]["probabilities"], {feeds["features"]: rows[:BATCH, :-1]}
        )
    np.testing.assert_allclose(native, losses, rtol=1e-4)
    assert losses[-1] < 0.8 * losses[0]  # it learns
    np.save(tmp_path / "x.npy", rows[:BATCH, :-1])
    pred = subprocess.run(
        [str(out / "predict"), "--checkpoint", str(tmp_path / "ckpt"), "--data",
         str(tmp_path / "x.npy"), "--output", str(tmp_path / "p.npy")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert pred.returncode == 0, pred.stderr
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), probabilities, rtol=1e-4, atol=1e-6)
