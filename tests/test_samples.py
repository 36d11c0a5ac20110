"""The samples run as users run them, and print what their comments promise."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

BASICS_EXPECTED = """\
Tensor("Add:0", shape=(), dtype=int32)
8
7.5
[3. 7.]
22.5
[0.         0.3        0.6        0.90000004]
23.66
0.0
Tensor("Relu:0", shape=(?, 100), dtype=float32) (32, 100) float32
matches NumPy: True
"""


def test_basics_sample_prints_the_tf1_outputs():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, str(REPO / "samples" / "basics.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "\n".join(lines[:10]) + "\n" == BASICS_EXPECTED
    assert lines[10].startswith("generated C: ") and lines[10].endswith(" for 32 examples per run")
    assert lines[11] == "figure 1: (784, 100) max True"


def _run_sample(name, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, str(REPO / "samples" / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_iris_tutorial_sample(tmp_path):
    out, err = _run_sample("iris_dnn.py", "--model_dir", str(tmp_path))
    lines = [ln for ln in out.splitlines() if ln]
    accuracy = float(lines[0].split(": ")[1])
    assert lines[0].startswith("Test set accuracy: ") and accuracy >= 0.93
    for line, species in zip(lines[1:], ["Setosa", "Versicolor", "Virginica"]):
        assert line.startswith(f'Prediction is "{species}" (') and line.endswith(
            f'%), expected "{species}"'
        )
    # progress while training, as TF1's Estimator logs it
    assert "INFO:tfc:loss = " in err and "INFO:tfc:global_step/sec: " in err


def test_digits_mlp_sample_reaches_95_percent():
    out, _ = _run_sample("digits_mlp.py")
    lines = out.splitlines()
    progress = [ln for ln in lines if ln.startswith("step ")]
    assert len(progress) == 15 and "loss" in progress[0] and progress[0].endswith("examples/s")
    assert float(lines[-1].split()[-1]) >= 0.95 and lines[-1].startswith("test accuracy")


def test_lstm_digits_sample_learns_in_a_few_steps():
    """The default run's stand-in: 150 steps already classify most test digits."""
    out, _ = _run_sample("lstm_digits.py", "--steps", "150")
    lines = out.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("step ")] == ["100", "150"]
    assert lines[-1].startswith("test accuracy") and float(lines[-1].split()[-1]) >= 0.75


@pytest.mark.benchmark
def test_lstm_digits_sample_reaches_the_accuracy_of_tensorflow():
    """TensorFlow 1 runs the same program (--framework tensorflow) to 0.978 test accuracy."""
    out, _ = _run_sample("lstm_digits.py")
    lines = out.splitlines()
    progress = [ln for ln in lines if ln.startswith("step ")]
    assert len(progress) == 12 and progress[-1].startswith("step  1200  loss")
    assert float(progress[-1].split()[3]) < 0.05
    assert lines[-1].startswith("test accuracy") and float(lines[-1].split()[-1]) >= 0.96


def _topic_share(out: str) -> float:
    last = out.splitlines()[-1]
    assert last.startswith("nearest neighbour in the same topic")
    return float(last.split()[-1])


def test_word2vec_sample_groups_the_words_of_a_topic():
    """A short run (1000 steps on a smaller corpus): most topic words already have a nearest
    neighbour of their topic (1 in 10 by chance)."""
    out, _ = _run_sample("word2vec.py", "--steps", "1000", "--sentences", "1000",
                         "--learning_rate", "2")  # fmt: skip
    assert out.startswith("corpus of 12000 words, 210 in the vocabulary")
    assert "nearest to " in out
    assert _topic_share(out) >= 0.6


@pytest.mark.benchmark
def test_word2vec_sample_reaches_the_topic_share_of_tensorflow():
    """TensorFlow 1 runs the same program (--framework tensorflow) to 0.975 (loss 3.004)."""
    out, _ = _run_sample("word2vec.py")
    losses = [float(ln.split()[4]) for ln in out.splitlines() if ln.startswith("step ")]
    assert len(losses) == 6 and losses[-1] < 3.1
    assert _topic_share(out) >= 0.9
