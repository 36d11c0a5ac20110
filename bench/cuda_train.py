"""Training steps on the GPU: tfc's CUDA backend vs PyTorch eager and torch.compile, same GPU,
same run.

Run: python bench/cuda_train.py [--steps 200] [--only mlp64,lenet64] [--no-compile]
Models: the MNIST MLP 784-512-512-10 (batch 64, 256, 4096), LeNet-5 as in
samples/lenet_model.py (batch 64, 1024) and the ResNet-20 of samples/resnet_cifar.py on
3x32x32 images with batch norm (batch 128, 512); plain SGD on the mean sparse softmax cross
entropy. PyTorch's TF32 is switched off (tfc computes in fp32): fp32 against fp32; `--tf32`
lets both use TF32 (tfc: CompileOptions(allow_tf32=True), its convolutions on tensor cores).
`--precision bf16` (or `both`: each config's fp32 row, then its `-bf16` row) runs bf16 mixed
precision on both sides: tfc CompileOptions(mixed_precision="bfloat16") (bfloat16 operands of
the products and convolutions on tensor cores, fp32 sums, fp32 weights and updates) against
PyTorch's forward and loss under torch.autocast(dtype=torch.bfloat16) (fp32 weights; its
products also return bfloat16 activations, tfc's stay fp32, so the loss check allows 3e-2).
For the MLP and the ResNet, PyTorch starts from tfc's initial weights and the first step's
losses are compared (`loss check`: relative difference, fails above 1e-3).
Dry runs without a GPU (bench/gpu_check.sh --dry-run): TFC_CUDA=emulate, `--batch 2
--resnet-blocks 1 --steps 1 --warmup 0 --torch-device cpu`.
Every step of every contender does the same work: the batch is copied from host memory to the
GPU, one SGD step runs, and the loss comes back to the host (so each step ends synchronized).
Prints per-step medians (ms) over `--steps` steps after warm-up, and the ratios
tfc/eager and tfc/compile (below 1: tfc is faster).
"""

from __future__ import annotations

import argparse
import os
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
    "resnet128": ("resnet", 128),
    "resnet512": ("resnet", 512),
}
INPUT_SHAPES = {"mlp": (784,), "lenet": (28, 28, 1), "resnet": (32, 32, 3)}
LOSS_RTOL = 1e-3
LOSS_RTOL_TF32 = 1e-2  # both sides round the convolutions' operands to 10 mantissa bits
LOSS_RTOL_BF16 = 3e-2  # 7 mantissa bits, and autocast's bfloat16 activations


def batches(model: str, batch: int, count: int = 8) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [
        (
            rng.random((batch, *INPUT_SHAPES[model]), np.float32),
            rng.integers(0, 10, batch).astype(np.int64),
        )
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
def tfc_step(model: str, blocks: int, tf32: bool = False, bf16: bool = False):
    """(step, session, initial weights): one SGD step of `model` on /gpu:0; the weights are the
    trainable variables' values in creation order (samples/resnet_cifar.py's TORCH_ORDER)."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, *INPUT_SHAPES[model]])
        y = tf.placeholder(tf.int64, [None])
        if model == "resnet":
            sys.path.insert(0, str(REPO / "samples"))
            from resnet_cifar import training_step

            loss, train = training_step(x, y, blocks, LR)
        else:
            if model == "mlp":
                net = tf.layers.dense(x, 512, activation=tf.nn.relu)
                net = tf.layers.dense(net, 512, activation=tf.nn.relu)
                logits = tf.layers.dense(net, 10)
            else:
                sys.path.insert(0, str(REPO / "samples"))
                from lenet_model import lenet

                logits = lenet(x)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
            train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        init = tf.global_variables_initializer()
        weights = tf.trainable_variables()
    mixed = "bfloat16" if bf16 else None
    sess = tf.Session(graph=graph, config=tf.CompileOptions(allow_tf32=tf32, mixed_precision=mixed))
    sess.run(init)
    initial = sess.run(weights)

    def step(xb, yb):
        return sess.run([loss, train], {x: xb, y: yb})[0]

    return step, sess, initial


# -- PyTorch ----------------------------------------------------------------------------------
def torch_resnet(blocks: int):
    """samples/resnet_cifar.py in PyTorch, its parameters registered in TORCH_ORDER. TF's SAME
    padding of a stride-2 3x3 convolution of an even image pads only the bottom and the right."""
    import torch
    from torch import nn

    def conv_bn(ci: int, co: int, k: int, stride: int) -> list:
        if stride == 2 and k == 3:
            conv = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), nn.Conv2d(ci, co, 3, 2, bias=False))
        else:
            conv = nn.Conv2d(ci, co, k, stride, padding=k // 2, bias=False)
        return [conv, nn.BatchNorm2d(co, eps=1e-5, momentum=0.1)]

    class Block(nn.Module):
        def __init__(self, ci: int, co: int, stride: int):
            super().__init__()
            self.conv1, self.bn1 = conv_bn(ci, co, 3, stride)
            self.conv2, self.bn2 = conv_bn(co, co, 3, 1)
            self.shortcut = nn.Identity()
            if stride != 1 or ci != co:
                self.shortcut = nn.Sequential(*conv_bn(ci, co, 1, stride))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))

    layers = [*conv_bn(3, 16, 3, 1), nn.ReLU()]
    channels = 16
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(blocks):
            layers.append(Block(channels, filters, 2 if stage > 0 and block == 0 else 1))
            channels = filters
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def torch_step(
    model: str, blocks: int, device: str, compiled: bool, initial=None, mode="default", tf32=False,
    bf16=False,
):  # fmt: skip
    """One SGD step in PyTorch; with `initial` (tfc's weights, in order) for the MLP and the
    ResNet, the same initial weights as tfc; with `bf16`, the forward pass and the loss under
    torch.autocast to bfloat16 (the backward pass follows its casts)."""
    import torch
    from torch import nn

    torch.backends.cuda.matmul.allow_tf32 = tf32  # fp32, as tfc computes by default
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(1)
    dev = torch.device(device)
    if model == "mlp":
        net = nn.Sequential(
            nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
        )
    elif model == "lenet":
        net = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
        )  # fmt: skip
        initial = None  # its flatten order (NCHW) is not tfc's (NHWC)
    else:
        net = torch_resnet(blocks)
    if initial is not None:
        params = list(net.parameters())
        if len(params) != len(initial):
            raise SystemExit(f"{model}: {len(params)} torch parameters, {len(initial)} tfc's")
        with torch.no_grad():
            for param, value in zip(params, initial):
                if value.ndim == 4:
                    value = value.transpose(3, 2, 0, 1)  # HWIO -> OIHW
                elif value.ndim == 2:
                    value = value.T  # (in, out) -> (out, in)
                if tuple(param.shape) != value.shape:
                    raise SystemExit(f"{model}: torch {tuple(param.shape)} vs tfc {value.shape}")
                param.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    net = net.to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    forward = torch.compile(net, mode=mode) if compiled else net
    loss_fn = nn.CrossEntropyLoss()

    def step(xb, yb):
        x = torch.from_numpy(xb).to(dev)
        if model != "mlp":
            x = x.permute(0, 3, 1, 2)  # NHWC as fed -> NCHW
        y = torch.from_numpy(yb).to(dev)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step, initial is not None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--only", default=",".join(CONFIGS))
    parser.add_argument("--batch", type=int, help="every config at this batch (dry runs)")
    parser.add_argument("--resnet-blocks", type=int, default=3, help="3: ResNet-20")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--tfc-only", action="store_true", help="no PyTorch (compute-sanitizer)")
    parser.add_argument(
        "--tf32", action="store_true", help="TF32 in both: CompileOptions(allow_tf32=True)"
    )
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "both"),
        default="fp32",
        help="bf16: tfc mixed_precision='bfloat16' vs torch.autocast bfloat16; both: fp32 rows "
        "and -bf16 rows",
    )
    parser.add_argument(
        "--torch-device", default="cuda", help="cpu: PyTorch on the CPU (dry runs: loss check)"
    )
    parser.add_argument(
        "--compile-mode",
        default="default",
        help="torch.compile's mode (default, reduce-overhead: CUDA graphs, max-autotune...)",
    )
    args = parser.parse_args()
    have_torch, gpu, version = False, "?", "not available"
    if not args.tfc_only:
        try:
            import torch

            version = torch.__version__
            have_torch = args.torch_device != "cuda" or torch.cuda.is_available()
            gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "?"
        except ImportError:
            pass
    where = args.torch_device if have_torch else "-"
    precision = "TF32" if args.tf32 else "fp32"
    if args.precision != "fp32":
        precision += {"bf16": "; bf16 mixed precision", "both": "; fp32 and bf16 rows"}[
            args.precision
        ]
    print(f"GPU: {gpu}; torch: {version} on {where}; torch.compile mode: {args.compile_mode}; "
          f"TFC_CUDA={os.environ.get('TFC_CUDA', '')}; {precision}")  # fmt: skip
    rows, failed = [], []
    modes = {"fp32": [False], "bf16": [True], "both": [False, True]}[args.precision]
    for config, bf16 in [(c, b) for c in args.only.split(",") for b in modes]:
        model, batch = CONFIGS[config]
        name = f"{config}-bf16" if bf16 else config
        batch = args.batch or batch
        data = batches(model, batch)
        t0 = time.perf_counter()
        step, sess, initial = tfc_step(model, args.resnet_blocks, args.tf32, bf16)
        first = float(step(*data[0]))
        build = time.perf_counter() - t0
        ours = timed(step, data, args.steps, args.warmup)
        sess.close()
        eager = comp = None
        check = "-"
        if have_torch:
            theirs, same_weights = torch_step(
                model, args.resnet_blocks, args.torch_device, False, initial, tf32=args.tf32,
                bf16=bf16,
            )  # fmt: skip
            if same_weights:
                other = theirs(*data[0])
                diff = abs(first - other) / max(abs(other), 1e-12)
                limit = LOSS_RTOL_BF16 if bf16 else LOSS_RTOL_TF32 if args.tf32 else LOSS_RTOL
                check = f"{diff:.1e}" + (" FAIL" if diff > limit else "")
                if diff > limit:
                    failed.append(f"{name}: step-1 loss tfc {first:.6f}, torch {other:.6f}")
            eager = timed(theirs, data, args.steps, args.warmup)
            if not args.no_compile:
                theirs, _ = torch_step(
                    model, args.resnet_blocks, args.torch_device, True, initial,
                    args.compile_mode, args.tf32, bf16,
                )  # fmt: skip
                comp = timed(theirs, data, args.steps, args.warmup)
        rows.append((name, batch, ours, eager, comp, check))
        print(f"{name} (batch {batch}): tfc {ours:.3f} ms (first run incl. build {build:.1f} s, "
              f"loss {first:.5f}), eager {eager}, compile {comp}, loss check {check}",
              flush=True)  # fmt: skip
    print(f"\n{'config':<15}{'batch':>6}{'tfc ms':>10}{'eager ms':>10}{'compile ms':>12}"
          f"{'tfc/eager':>11}{'tfc/compile':>13}{'loss check':>12}")  # fmt: skip
    for name, batch, ours, eager, comp, check in rows:
        e = f"{eager:10.3f}{ours / eager:>11.2f}" if eager else f"{'-':>10}{'-':>11}"
        c = f"{comp:12.3f}{ours / comp:>13.2f}" if comp else f"{'-':>12}{'-':>13}"
        print(f"{name:<15}{batch:6d}{ours:10.3f}{e[:10]}{c[:12]}{e[10:]}{c[12:]}{check:>12}")
    if failed:
        raise SystemExit("loss check failed: " + "; ".join(failed))


if __name__ == "__main__":
    main()
