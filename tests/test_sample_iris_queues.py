"""samples/iris_queues.py: TF1's CSV input through string_input_producer, TextLineReader,
decode_csv and shuffle_batch, trained by MonitoredTrainingSession with a StopAtStepHook.

Both tests compile the sample's programs (about 10 s cold), so they are benchmarks; in the
default run tests/test_readers.py's queue pipeline into a MonitoredTrainingSession stands in."""

import importlib.util
import logging
from pathlib import Path

import pytest

import tfc as tf

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "iris_queues.py"


@pytest.fixture(scope="module")
def iris_queues():
    spec = importlib.util.spec_from_file_location("iris_queues", SAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _losses(logdir):
    events = [e for f in sorted(Path(logdir).glob("events.out.tfevents.*"))
              for e in tf.train.summary_iterator(str(f))]  # fmt: skip
    return [(e.step, v.simple_value) for e in events for v in e.summary.value if v.tag == "loss"]


@pytest.mark.benchmark
def test_a_short_run_checkpoints_summarizes_and_scores_the_whole_test_set(
    iris_queues, tmp_path, caplog
):
    caplog.set_level(logging.ERROR)
    accuracy = iris_queues.train_and_evaluate(40, str(tmp_path))
    assert 0.0 <= accuracy <= 1.0
    assert (tmp_path / "model.ckpt-40.safetensors").exists()
    losses = _losses(tmp_path)
    assert losses and all(0 < v < 5 for _, v in losses)


@pytest.mark.benchmark
def test_trains_iris_to_the_issues_accuracy(iris_queues, tmp_path):
    assert iris_queues.train_and_evaluate(600, str(tmp_path)) >= 0.93
    losses = _losses(tmp_path)
    assert losses[-1][1] < losses[0][1] / 3
