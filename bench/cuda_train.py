"""Training steps on the GPU: tfc's CUDA backend vs PyTorch eager and torch.compile, same GPU,
same run.

Run: python bench/cuda_train.py [--steps 200] [--only mlp64,lenet64] [--no-compile]
Models: the MNIST MLP 784-512-512-10 (batch 64, 256, 4096) and LeNet-5 as in
samples/lenet_model.py (batch 64, 1024); plain SGD on the mean sparse softmax cross entropy.
Every step of every contender does the same work: the batch is copied from host memory to the
GPU, one SGD step runs, and the loss comes back to the host (so each step ends synchronized).
Prints per-step medians (ms) over `--steps` steps after warm-up, and the ratios
tfc/eager and tfc/compile (below 1: tfc is faster).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import tfc as tf  # noqa: E402

LR = 0.01
CONFIGS = {
    "mlp64": ("mlp", 64),
    "mlp256": ("mlp", 256),
    "mlp4096": ("mlp", 4096),
    "lenet64": ("lenet", 64),
    "lenet1024": ("lenet", 1024),
}


def batches(model: str, batch: int, count: int = 8) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    shape = (batch, 784) if model == "mlp" else (batch, 28, 28, 1)
    return [
        (rng.random(shape, np.float32), rng.integers(0, 10, batch).astype(np.int64))
        for _ in range(count)
    ]


def timed(step, data, steps: int, warmup: int = 10) -> float:
    for i in range(warmup):
        step(*data[i % len(data)])
    times = []
    for i in range(steps):
        t = time.perf_counter()
        step(*data[i % len(data)])
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


# -- tfc --------------------------------------------------------------------------------------
def tfc_step(model: str, batch: int):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        tf.set_random_seed(1)
        if model == "mlp":
            x = tf.placeholder(tf.float32, [None, 784])
            net = tf.layers.dense(x, 512, activation=tf.nn.relu)
            net = tf.layers.dense(net, 512, activation=tf.nn.relu)
            logits = tf.layers.dense(net, 10)
        else:
            sys.path.insert(0, str(REPO / "samples"))
            from lenet_model import lenet

            x = tf.placeholder(tf.float32, [None, 28, 28, 1])
            logits = lenet(x)
        y = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)

    def step(xb, yb):
        return sess.run([loss, train], {x: xb, y: yb})[0]

    return step, sess


# -- PyTorch ----------------------------------------------------------------------------------
def torch_step(model: str, batch: int, compiled: bool, mode: str = "default"):
    import torch
    from torch import nn

    torch.manual_seed(1)
    dev = torch.device("cuda")
    if model == "mlp":
        net = nn.Sequential(
            nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
        )
    else:
        net = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
        )  # fmt: skip
    net = net.to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    forward = torch.compile(net, mode=mode) if compiled else net
    loss_fn = nn.CrossEntropyLoss()

    def step(xb, yb):
        x = torch.from_numpy(xb).to(dev)
        if model == "lenet":
            x = x.permute(0, 3, 1, 2)  # NHWC as fed -> NCHW
        y = torch.from_numpy(yb).to(dev)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--only", default=",".join(CONFIGS))
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument(
        "--compile-mode",
        default="default",
        help="torch.compile's mode (default, reduce-overhead: CUDA graphs, max-autotune...)",
    )
    args = parser.parse_args()
    try:
        import torch

        have_torch = torch.cuda.is_available()
        gpu = torch.cuda.get_device_name() if have_torch else "?"
    except ImportError:
        have_torch, gpu = False, "?"
    print(f"GPU: {gpu}; torch: {torch.__version__ if have_torch else 'not available'}; "
          f"torch.compile mode: {args.compile_mode}")  # fmt: skip
    rows = []
    for name in args.only.split(","):
        model, batch = CONFIGS[name]
        data = batches(model, batch)
        t0 = time.perf_counter()
        step, sess = tfc_step(model, batch)
        step(*data[0])
        build = time.perf_counter() - t0
        ours = timed(step, data, args.steps)
        sess.close()
        eager = timed(torch_step(model, batch, False), data, args.steps) if have_torch else None
        comp = None
        if have_torch and not args.no_compile:
            comp = timed(torch_step(model, batch, True, args.compile_mode), data, args.steps)
        rows.append((name, ours, eager, comp, build))
        print(f"{name}: tfc {ours:.3f} ms (first run incl. build {build:.1f} s), "
              f"eager {eager}, compile {comp}", flush=True)  # fmt: skip
    print(f"\n{'config':<11}{'tfc ms':>9}{'eager ms':>10}{'compile ms':>12}"
          f"{'tfc/eager':>11}{'tfc/compile':>13}")  # fmt: skip
    for name, ours, eager, comp, _ in rows:
        e = f"{eager:10.3f}{ours / eager:>11.2f}" if eager else f"{'-':>10}{'-':>11}"
        c = f"{comp:12.3f}{ours / comp:>13.2f}" if comp else f"{'-':>12}{'-':>13}"
        print(f"{name:<11}{ours:9.3f}{e[:10]}{c[:12]}{e[10:]}{c[12:]}")


if __name__ == "__main__":
    main()
