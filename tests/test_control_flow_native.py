"""A model with a tf.while_loop over TensorArrays (tests/models/rnn_model.py) everywhere code is
generated: `tfc compile`'s train and predict executables, the embeddable library (warning-free
C99, under ASan/UBSan, its loop bounded), `tfc inspect`'s report of the loop, and the
distributed placement that keeps a loop on one device."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from embed_support import build, compile_with_harness, parse_stdout, reference_words, split_words

import tfc as tf
from tfc.aot.signatures import ModelError
from tfc.ir.program import FeedSpec
from tfc.passes.place import PlacementError
from tfc.reference.interp import partition_program
from tfc.tools.cli import main as tfc_main

MODEL = Path(__file__).resolve().parent / "models" / "rnn_model.py"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
BATCH = 8


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 12)).astype(np.float32)
    y = (x[:, :4].sum(1) > 0).astype(np.int32) + (x[:, 8:].sum(1) > 1).astype(np.int32)
    return x, y


def _csv(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    rows = [",".join([*(f"{v:.9g}" for v in r), str(int(c))]) for r, c in zip(x, y)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _signatures():
    sys.path.insert(0, str(MODEL.parent))
    try:
        import rnn_model
    finally:
        sys.path.remove(str(MODEL.parent))
    return rnn_model.signatures()


def test_native_training_step_and_predict_equal_the_session(tmp_path):
    out = tmp_path / "build"
    assert tfc_main(["compile", str(MODEL), "-o", str(out), "--batch", str(BATCH)]) == 0
    x, y = _data(BATCH)
    data = _csv(tmp_path / "train.csv", x, y)
    run = subprocess.run(
        [str(out / "train"), "--data", str(data), "--steps", "3", "--checkpoint-dir",
         str(tmp_path / "ckpt"), "--batch", str(BATCH), "--no-shuffle", "--log-every", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    native = [float(v) for v in re.findall(r"^step \d+  loss (\S+)", run.stdout, re.M)]
    sig = _signatures()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {sig["train"]["inputs"]["features"]: x, sig["train"]["inputs"]["labels"]: y}
        losses = [sess.run([sig["train"]["loss"], sig["train"]["train_op"]], feed)[0]
                  for _ in range(3)]  # fmt: skip
        probabilities = sess.run(sig["predict"]["outputs"]["probabilities"], feed)
    np.testing.assert_allclose(native, losses, rtol=1e-5)
    pred = subprocess.run(
        [str(out / "predict"), "--checkpoint", str(tmp_path / "ckpt"), "--data", str(data),
         "--output", str(tmp_path / "p.npy")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert pred.returncode == 0, pred.stderr
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), probabilities, rtol=1e-5, atol=1e-6)


def test_embedded_library_runs_the_loop_like_the_session(tmp_path):
    """The embeddable library: training steps and predictions equal the session's, built
    warning-free as C99 under ASan and UBSan."""
    x, y = _data(4, seed=1)
    compile_with_harness(str(MODEL), tmp_path, 4, x, y, prefix="rnn_")
    exe = build(["cc"], tmp_path, ["-O1", *SANITIZE, "-DHARNESS_STDIO"], "harness", ["-lm"])
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = reference_words(str(MODEL), 4, x, y)
    got = split_words(parse_stdout(proc.stdout), [len(e) for e in expected])
    for i, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-6, err_msg=f"result {i}")


def test_the_embedded_library_refuses_an_unbounded_loop(tmp_path):
    model = tmp_path / "unbounded.py"
    model.write_text(
        "import tfc as tf\n\n\n"
        "def signatures():\n"
        "    x = tf.placeholder(tf.float32, [None, 2], name='features')\n"
        "    _, y = tf.while_loop(lambda i, v: tf.reduce_sum(v) < 100.0,\n"
        "                         lambda i, v: (i + 1, v * 2.0 + 1.0), (0, x), name='grow')\n"
        "    return {'predict': {'inputs': {'features': x}, 'outputs': {'y': y}}}\n"
    )
    from tfc.aot.embed import compile_embed

    with pytest.raises(ModelError, match="while_loop 'grow' has no bound"):
        compile_embed(model, tmp_path / "out", 2, inference_only=True)


def test_inspect_reports_the_loop_and_its_carried_buffers(capsys):
    assert tfc_main(["inspect", str(MODEL), "--signature", "train", "--batch", "4"]) == 0
    report = capsys.readouterr().out
    loops = re.findall(r"loop '([^']+)': at most (\d+) iterations; (\d+) loop variables", report)
    assert ("while", "3", "5") in loops  # t, h, the output array (buffer, flags), input flags
    assert any(name.startswith("gradients/") for name, _, _ in loops)
    assert "accumulators" in report


def test_a_loop_is_placed_on_one_device_or_refused_naming_both():
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/job:worker/task:0"):

        def body(i, h):
            with tf.device("/job:ps/task:0"):
                h = h * 2.0
            return i + 1, h

        tf.while_loop(lambda i, h: i < 2, body, (0, x), name="loop")
    feeds = [FeedSpec(("x", 0), tf.float32, (3,))]
    with pytest.raises(PlacementError, match="while_loop 'loop' runs on one device.*ps.*"):
        partition_program(
            tf.get_default_graph(), [("loop", 1)], feeds=feeds, cluster={"worker": 1, "ps": 1},
            default_device="/job:worker/task:0",
        )  # fmt: skip
