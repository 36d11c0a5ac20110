"""Convolutions on the GPU: tfc's CUDA kernels (templates/cuda/kernels/conv2d.cu.j2) vs PyTorch
(cuDNN), same GPU, same run.

Run: python bench/cuda_conv.py [--runs 50] [--only lenet-c1,lenet-c3,res64]
Dry run without a GPU (bench/gpu_check.sh --dry-run): TFC_CUDA=emulate, `--batch 1 --runs 1
--warmup 0` (emulated, tfc alone: PyTorch is not imported).
For each shape, Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter each run as one session call
that computes the op on random float32 tensors held on the GPU (tfc variables, torch tensors)
and brings back the sum of its result (so each call ends synchronized, in both). Prints the
median ms per call over `--runs` calls after warm-up, and tfc/torch (below 1: tfc is faster).
Both compute in fp32 (PyTorch's cudnn.allow_tf32, True by default, is switched off; figures
before this option compared tfc's fp32 with cuDNN's TF32); `--tf32` lets both use TF32.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import tfc as tf  # noqa: E402
from tfc.backend.cuda_emu import emulating  # noqa: E402

# name: (input NHWC, filter HWIO, stride, padding)
SHAPES = {
    "lenet-c1": ((64, 28, 28, 1), (5, 5, 1, 6), 1, "SAME"),
    "lenet-c3": ((64, 14, 14, 6), (5, 5, 6, 16), 1, "VALID"),
    "res64": ((32, 32, 32, 64), (3, 3, 64, 64), 1, "SAME"),
    "res128-s2": ((32, 32, 32, 64), (3, 3, 64, 128), 2, "SAME"),
}
OPS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")


def timed(call, runs: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def tfc_calls(xs, fs, stride, padding, tf32: bool = False):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        x = tf.Variable(tf.random_normal(xs, seed=1))
        f = tf.Variable(tf.random_normal(fs, seed=2))
        y = tf.nn.conv2d(x, f, stride, padding)
        dy = tf.Variable(tf.random_normal(y.shape.as_list(), seed=3))
        dx, df = tf.gradients(y, [x, f], grad_ys=dy)
        sums = [tf.reduce_sum(t) for t in (y, dx, df)]
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph, config=tf.CompileOptions(allow_tf32=tf32))
    sess.run(init)
    return [lambda s=s: sess.run(s) for s in sums]


def torch_calls(xs, fs, stride, padding, tf32: bool = False, device="cuda"):
    import torch

    torch.backends.cudnn.allow_tf32 = tf32  # PyTorch's default is True: TF32 convolutions
    import torch.nn.functional as F
    from torch.nn.grad import conv2d_input, conv2d_weight

    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(xs[0], xs[3], xs[1], xs[2], device=device, generator=g)
    w = torch.randn(fs[3], fs[2], fs[0], fs[1], device=device, generator=g)
    # the same output size as TF's SAME for these odd kernels (the gradient functions take no
    # "same" string)
    pad = (fs[0] - 1) // 2 if padding == "SAME" else 0
    y = F.conv2d(x, w, stride=stride, padding=pad)
    dy = torch.randn(y.shape, device=device, generator=g)
    return [
        lambda: F.conv2d(x, w, stride=stride, padding=pad).sum().item(),
        lambda: conv2d_input(x.shape, w, dy, stride=stride, padding=pad).sum().item(),
        lambda: conv2d_weight(x, w.shape, dy, stride=stride, padding=pad).sum().item(),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--only", default=",".join(SHAPES))
    parser.add_argument("--batch", type=int, help="every shape at this batch (dry runs)")
    parser.add_argument(
        "--tf32", action="store_true", help="TF32 in both: CompileOptions(allow_tf32=True)"
    )
    args = parser.parse_args()
    have_torch = False
    if not emulating():  # emulated tfc against PyTorch's GPU would compare nothing: no import
        try:
            import torch

            have_torch = torch.cuda.is_available()
        except ImportError:
            pass
    print("fp32 and TF32 (tensor cores) in both" if args.tf32 else "fp32 in both (no TF32)")
    print(f"{'shape':10} {'op':22} {'tfc ms':>8} {'torch ms':>9} {'tfc/torch':>9}")
    for name in args.only.split(","):
        xs, fs, stride, padding = SHAPES[name]
        xs = (args.batch or xs[0], *xs[1:])
        calls = tfc_calls(xs, fs, stride, padding, args.tf32)
        ours = [timed(c, args.runs, args.warmup) for c in calls]
        theirs = [None] * 3
        if have_torch:
            calls = torch_calls(xs, fs, stride, padding, args.tf32)
            theirs = [timed(c, args.runs, args.warmup) for c in calls]
        for op, a, b in zip(OPS, ours, theirs):
            ratio = f"{a / b:9.2f}" if b else "        -"
            other = f"{b:9.3f}" if b else "        -"
            print(f"{name:10} {op:22} {a:8.3f} {other} {ratio}", flush=True)


if __name__ == "__main__":
    main()
