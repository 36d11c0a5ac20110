"""MobileNet-like depthwise convolutions on the CPU: tfc's kernels vs TensorFlow's.

Layers (NHWC, float32, a 3x3 filter per channel, SAME): 1x56x56x128 at stride 1 and 2,
1x28x28x256 at stride 1, 1x14x14x512 at stride 1, and 8x56x56x64 at stride 1; each forward
(DepthwiseConv2dNative) and, with --grads, the two gradient ops. Each framework runs a graph of
COPIES independent ops on COPIES inputs held in variables (no feeds; the run fetches one value
of each result, so that no framework prunes an op and no copy of a result is timed): a run's
fixed cost is spread over many kernels. tfc's runs are timed by a loop in C
(tfc.tools.profile.time_runs), TensorFlow's by session.run in Python.
Both use the same number of threads (--threads, default 1). Each figure is the median time per
op over rounds, the frameworks' rounds interleaved so a change of the machine's load hits them
alike; the 1-minute load average is printed before and after. Outputs are compared first.

Run with the TensorFlow environment (it has tfc's dependencies):
    PYTHONPATH=. python bench/depthwise.py [--rounds 7] [--threads 1] [--grads]
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
from tfc.tools.profile import time_runs  # noqa: E402

COPIES = 8
# (name, input shape, stride)
LAYERS = [
    ("56x56x128 s1", (1, 56, 56, 128), 1),
    ("56x56x128 s2", (1, 56, 56, 128), 2),
    ("28x28x256 s1", (1, 28, 28, 256), 1),
    ("14x14x512 s1", (1, 14, 14, 512), 1),
    ("8x56x56x64 s1", (8, 56, 56, 64), 1),
]
OPS = ("forward", "input", "filter")


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "n/a"


def out_shape(shape: tuple, stride: int) -> tuple:
    n, h, w, c = shape
    return (n, -(-h // stride), -(-w // stride), c)


def operands(shape: tuple, stride: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    f = rng.standard_normal((3, 3, shape[3], 1)).astype(np.float32)
    dy = rng.standard_normal(out_shape(shape, stride)).astype(np.float32)
    return x, f, dy


def build(ns, shape: tuple, stride: int, op: str, variable) -> list:
    """COPIES ops of kind `op` with framework namespace `ns` (tf.compat.v1 or tfc)."""
    attrs = {"strides": [1, stride, stride, 1], "padding": "SAME"}
    outs = []
    for k in range(COPIES):
        x, f, dy = (variable(v) for v in operands(shape, stride, k))
        if op == "forward":
            outs.append(ns.nn.depthwise_conv2d_native(x, f, **attrs))
        elif op == "input":
            sizes = ns.constant(list(shape), ns.int32)
            outs.append(ns.nn.depthwise_conv2d_native_backprop_input(sizes, f, dy, **attrs))
        else:
            sizes = ns.constant([3, 3, shape[3], 1], ns.int32)
            outs.append(ns.nn.depthwise_conv2d_native_backprop_filter(x, sizes, dy, **attrs))
    return outs


class Tfc:
    def __init__(self, shape: tuple, stride: int, op: str, threads: int) -> None:
        self.graph = tfc.Graph()
        with self.graph.as_default():
            self.outs = build(tfc, shape, stride, op, tfc.Variable)
            self.probes = tfc.stack([y[0, 0, 0, 0] for y in self.outs])
            config = tfc.ConfigProto(intra_op_parallelism_threads=threads)
            self.sess = tfc.Session(graph=self.graph, config=config)
            self.sess.run(tfc.global_variables_initializer())

    def values(self) -> list:
        return self.sess.run(self.outs)

    def seconds(self, runs: int) -> float:
        return time_runs(self.sess, self.probes, None, runs)


class TensorFlow:
    def __init__(self, tf, shape: tuple, stride: int, op: str, threads: int) -> None:
        v1 = tf.compat.v1
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.outs = build(v1, shape, stride, op, lambda v: v1.Variable(v, use_resource=True))
            self.probes = v1.stack([y[0, 0, 0, 0] for y in self.outs])
            config = v1.ConfigProto(
                intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1
            )
            self.sess = v1.Session(graph=self.graph, config=config)
            self.sess.run(v1.global_variables_initializer())

    def values(self) -> list:
        return self.sess.run(self.outs)

    def seconds(self, runs: int) -> float:
        start = time.perf_counter()
        for _ in range(runs):
            self.sess.run(self.probes)
        return (time.perf_counter() - start) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--grads", action="store_true", help="also the two gradient ops")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError:
        sys.exit("TensorFlow is not installed: run this with the TensorFlow environment's python")
    tf.compat.v1.disable_eager_execution()
    print(f"load average {loadavg()}; {args.threads} thread(s); {COPIES} ops per run; "
          f"median of {args.rounds} rounds, ms per op")  # fmt: skip
    print(f"{'layer':16} {'op':8} {'tfc':>8} {'TF':>8} {'TF/tfc':>7}")
    for name, shape, stride in LAYERS:
        for op in OPS if args.grads else OPS[:1]:
            ours = Tfc(shape, stride, op, args.threads)
            theirs = TensorFlow(tf, shape, stride, op, args.threads)
            for a, b in zip(ours.values(), theirs.values()):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())
            once = max(ours.seconds(1), theirs.seconds(1), 1e-5)
            runs = max(3, int(0.2 / once))  # about 0.2 s per round and framework
            t_ours, t_theirs = [], []
            for _ in range(args.rounds):
                t_ours.append(ours.seconds(runs) / COPIES)
                t_theirs.append(theirs.seconds(runs) / COPIES)
            a, b = statistics.median(t_ours) * 1e3, statistics.median(t_theirs) * 1e3
            print(f"{name:16} {op:8} {a:8.3f} {b:8.3f} {b / a:7.2f}")
    print(f"load average {loadavg()}")


if __name__ == "__main__":
    main()
