"""bf16 mixed precision on the CPU: the MNIST MLP training step, tfc against PyTorch's autocast.

The MLP 784-512-512-10 (ReLU, mean sparse softmax cross entropy, SGD) at batch 64 and 256, one
thread, four ways measured in the same rounds (alternating): tfc in fp32 and with
CompileOptions(mixed_precision="bfloat16") (the products' operands rounded to bfloat16 by
runtime/include/tfc_gemm_bf16.h, fp32 sums), PyTorch eager in fp32 and under
torch.autocast("cpu", dtype=torch.bfloat16) (oneDNN's bf16 kernels where the CPU has
AVX512_BF16/AMX). tfc's steps are timed by Session.time_runs (a loop in C), PyTorch's by a
Python loop. Medians over rounds; ratios are the first's time / the second's (< 1: faster).
The load average is printed with the results (the machine may be shared).

Run: python bench/cpu_mixed_precision.py [--rounds 7] [--steps 50] [--batches 64,256]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import tfc as tf  # noqa: E402

SIZES = (784, 512, 512, 10)
LR = 0.01


def tfc_step(batch: int, mixed: str | None, weights: list[np.ndarray]):
    """A () -> seconds per step timer of tfc's training step, and its step-1 loss."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, SIZES[0])).astype("float32")
    y = rng.integers(0, 10, batch).astype("int64")
    graph = tf.Graph()
    with graph.as_default():
        xt, yt = tf.placeholder(tf.float32, x.shape), tf.placeholder(tf.int64, y.shape)
        net = xt
        for i, (w, b) in enumerate(zip(weights[::2], weights[1::2])):
            net = tf.matmul(net, tf.Variable(w)) + tf.Variable(b)
            net = tf.nn.relu(net) if i < 2 else net
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yt, logits=net))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        init = tf.global_variables_initializer()
    options = tf.CompileOptions(mixed_precision=mixed)
    sess = tf.Session(graph=graph, config=tf.ConfigProto(
        intra_op_parallelism_threads=1, compile_options=options))  # fmt: skip
    sess.run(init)
    feeds = {xt: x, yt: y}
    first = sess.run([loss, train], feeds)[0]
    return (lambda steps: sess.time_runs(train, feeds, runs=steps)), float(first)


def torch_step(batch: int, bf16: bool, weights: list[np.ndarray]):
    import torch
    from torch import nn

    torch.set_num_threads(1)
    layers = [nn.Linear(a, b) for a, b in zip(SIZES, SIZES[1:])]
    with torch.no_grad():
        for layer, w, b in zip(layers, weights[::2], weights[1::2]):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
    net = nn.Sequential(layers[0], nn.ReLU(), layers[1], nn.ReLU(), layers[2])
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((batch, SIZES[0])).astype("float32"))
    y = torch.from_numpy(rng.integers(0, 10, batch).astype("int64"))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    first = step()

    def timer(steps: int) -> float:
        t = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - t) / steps

    return timer, first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batches", default="64,256")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weights = []
    for a, b in zip(SIZES, SIZES[1:]):
        weights += [
            (rng.standard_normal((a, b)) / np.sqrt(a)).astype("float32"),
            np.zeros(b, "float32"),
        ]
    names = ("tfc fp32", "tfc bf16", "torch fp32", "torch bf16")
    print(f"MLP {'-'.join(map(str, SIZES))} SGD step, 1 thread, medians of {args.rounds} rounds "
          f"of {args.steps} steps (ms); load before: {os.getloadavg()[0]:.2f}")  # fmt: skip
    losses = "step-1 losses (tfc, torch bf16)"
    print(f"{'batch':>6}" + "".join(f"{n:>12}" for n in names)
          + f"{'bf16/fp32':>11}{'tfc/torch bf16':>16}{losses:>34}")  # fmt: skip
    for batch in map(int, args.batches.split(",")):
        runs = [tfc_step(batch, None, weights), tfc_step(batch, "bfloat16", weights),
                torch_step(batch, False, weights), torch_step(batch, True, weights)]  # fmt: skip
        times = [[] for _ in runs]
        for _ in range(args.rounds):
            for (timer, _), t in zip(runs, times):
                t.append(timer(args.steps) * 1e3)
        med = [statistics.median(t) for t in times]
        losses = f"{runs[1][1]:.5f}, {runs[3][1]:.5f}"
        print(f"{batch:6d}" + "".join(f"{m:12.3f}" for m in med)
              + f"{med[1] / med[0]:11.2f}{med[1] / med[3]:16.2f}{losses:>34}")  # fmt: skip
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
