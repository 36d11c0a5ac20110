"""Batch normalization on the CPU: tfc's fused_batch_norm (a composition of reductions and
element-wise ops, which the fusion pass merges) against TensorFlow's FusedBatchNormV3 kernel
and its gradient, one thread each, at the shapes of the layers CNN sample and larger ones.

What it decides: whether tfc needs a FusedBatchNormV3 kernel of its own. Each row times one
training step of the normalization alone (forward, and the gradients with respect to x, scale
and offset of sum(y * w)) and one inference pass, as medians over rounds of many runs, the
rounds of both frameworks interleaved. TensorFlow runs in a TF1 graph session with one intra-
and inter-op thread, timed by a Python loop less the time of a run that only feeds (tfc's runs
are looped in C). The outputs of both are compared first (they agree to float32 rounding).

Run: python bench/batch_norm.py [--rounds 7]   (TensorFlow is needed for the peer column)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tfc  # noqa: E402

SHAPES = [(32, 28, 28, 8), (64, 28, 28, 8), (64, 14, 14, 32), (32, 8, 8, 256)]
EPSILON = 1e-3


def build(tf, shape, training: bool):
    """(x, fetches, feed) of one normalization: its gradients when training, else y."""
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, shape)
    channels = shape[-1]
    scale = tf.constant(rng.uniform(0.5, 1.5, channels).astype(np.float32))
    offset = tf.constant(rng.standard_normal(channels).astype(np.float32))
    if training:
        y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, epsilon=EPSILON)
        w = tf.constant(rng.standard_normal(shape).astype(np.float32))
        fetches = tf.gradients(tf.reduce_sum(y * w), [x, scale, offset])
    else:
        mean = tf.constant(rng.standard_normal(channels).astype(np.float32))
        var = tf.constant(rng.uniform(0.5, 2, channels).astype(np.float32))
        y, _, _ = tf.nn.fused_batch_norm(
            x, scale, offset, mean, var, epsilon=EPSILON, is_training=False
        )
        fetches = [y]
    feed = {x: rng.standard_normal(shape).astype(np.float32)}
    return fetches, feed


class Tfc:
    def __init__(self, shape, training: bool) -> None:
        self.graph = tfc.Graph()
        with self.graph.as_default():
            self.fetches, self.feed = build(tfc, shape, training)
        config = tfc.ConfigProto(intra_op_parallelism_threads=1)
        self.sess = tfc.Session(graph=self.graph, config=config)

    def values(self) -> list:
        return self.sess.run(self.fetches, self.feed)

    def seconds(self, runs: int) -> float:
        return self.sess.time_runs(self.fetches, self.feed, runs=runs)


class TensorFlow:
    def __init__(self, shape, training: bool) -> None:
        import tensorflow.compat.v1 as tf

        tf.disable_eager_execution()
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.fetches, self.feed = build(tf, shape, training)
            # a run of nothing but the feed: Session.run's own cost, taken off the times
            (x,) = self.feed
            self.empty = tf.reduce_sum(x[:1, :1, :1, :1])
        config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        self.sess = tf.Session(graph=self.graph, config=config)

    def values(self) -> list:
        return self.sess.run(self.fetches, self.feed)

    def seconds(self, runs: int) -> float:
        return self._loop(self.fetches, runs) - self._loop(self.empty, runs)

    def _loop(self, fetches, runs: int) -> float:
        start = time.perf_counter()
        for _ in range(runs):
            self.sess.run(fetches, self.feed)
        return (time.perf_counter() - start) / runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow  # noqa: F401

        peer = True
    except ImportError:
        peer = False
    print("| shape | pass | tfc ms | TF FusedBatchNormV3 ms | tfc / TF |")
    print("|---|---|---:|---:|---:|")
    for shape in SHAPES:
        for training in (True, False):
            runners = {"tfc": Tfc(shape, training)}
            if peer:
                runners["tf"] = TensorFlow(shape, training)
                for a, b in zip(runners["tfc"].values(), runners["tf"].values()):
                    np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * np.abs(b).max())
            times: dict[str, list[float]] = {k: [] for k in runners}
            for _ in range(args.rounds):
                for name, runner in runners.items():
                    times[name].append(runner.seconds(args.runs))
            ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            what = "train (fwd+grad)" if training else "inference"
            tf_ms = f"{ms['tf']:.3f}" if peer else "n/a"
            ratio = f"{ms['tfc'] / ms['tf']:.2f}x" if peer else "n/a"
            print(f"| {shape} | {what} | {ms['tfc']:.3f} | {tf_ms} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
