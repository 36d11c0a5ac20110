"""Steps/s of the Iris training step: tfc's native `train` executable vs a plain PyTorch loop.

Both train the same model (4 features, two hidden layers of 10 ReLU units, 3 classes, mean
sparse softmax cross entropy, Adam with learning rate 0.01) at the same batch on the same 120
rows, shuffled each epoch; both loops include assembling each batch. The native rate is the one
`train` measures over its loop (its progress line: examples/s / batch), so process start, data
loading and the checkpoint write are left out, as they are for PyTorch. PyTorch runs on the CPU
with one thread (the native step is single-threaded). Medians over repeats, in one run.

Run: pip install -e '.[bench]' && python bench/iris_native.py [--repeats 5]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tfc

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "samples" / "iris_model.py"
TRAIN_CSV = ROOT / "samples" / "data" / "iris_training.csv"


def native_steps_per_second(exe: Path, steps: int, batch: int, tmp: Path, repeat: int) -> float:
    ckpt = tmp / f"ckpt{repeat}"
    out = subprocess.run(
        [
            str(exe),
            "--data",
            str(TRAIN_CSV),
            "--steps",
            str(steps),
            "--batch",
            str(batch),
            "--log-every",
            str(steps),
            "--checkpoint-dir",
            str(ckpt),
            "--seed",
            str(repeat),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rate = float(re.search(rf"^step {steps}  loss \S+  (\d+) examples/s$", out, re.M).group(1))
    return rate / batch


def torch_steps_per_second(steps: int, batch: int, repeat: int) -> float:
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(repeat)
    table = np.loadtxt(TRAIN_CSV, delimiter=",", skiprows=1)
    x = torch.tensor(table[:, :4], dtype=torch.float32)
    y = torch.tensor(table[:, 4], dtype=torch.int64)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 10),
        torch.nn.ReLU(),
        torch.nn.Linear(10, 10),
        torch.nn.ReLU(),
        torch.nn.Linear(10, 3),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    n = x.shape[0]
    epochs = steps * batch // n + 2
    order = torch.cat([torch.randperm(n) for _ in range(epochs)])

    def step(i: int) -> None:
        rows = order[i * batch : (i + 1) * batch]
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x[rows]), y[rows])
        loss.backward()
        optimizer.step()

    for i in range(min(50, steps)):  # warm-up: allocator and dispatcher caches
        step(i)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    return steps / (time.perf_counter() - start)


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    # the tutorial's length of training for both: much longer runs drive Adam's beta powers
    # and some probabilities into subnormal floats, which slow any CPU code down
    parser.add_argument("--steps", type=int, default=2_000)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("PyTorch is needed for the comparison: pip install -e '.[bench]'")

    load_before = loadavg()
    with tempfile.TemporaryDirectory(prefix="tfc-bench-") as tmp:
        compiled = tfc.compile(MODEL, Path(tmp) / "iris", batch=args.batch)
        sizes = {name: path.stat().st_size for name, path in compiled.executables.items()}
        native, torch_rates = [], []
        for r in range(args.repeats):  # interleaved, so a load change hits both alike
            native.append(
                native_steps_per_second(compiled.train, args.steps, args.batch, Path(tmp), r)
            )
            torch_rates.append(torch_steps_per_second(args.steps, args.batch, r))
    load_after = loadavg()
    native_median, torch_median = statistics.median(native), statistics.median(torch_rates)

    print(
        f"Iris training step (4-10-10-3 MLP, Adam), batch {args.batch}, {args.steps} steps, "
        f"median of {args.repeats} repeats, CPU"
    )
    print()
    print("| implementation | steps/s | vs PyTorch |")
    print("|---|---:|---:|")
    print(
        f"| tfc native `train` (-O3 -march=native) | {native_median:,.0f} | "
        f"{native_median / torch_median:.1f}x |"
    )
    print(f"| PyTorch {torch.__version__} eager, 1 thread | {torch_median:,.0f} | 1.0x |")
    print()
    print("executables: " + ", ".join(f"{k} {v:,} bytes" for k, v in sizes.items()))
    print(f"native steps/s per repeat: {', '.join(f'{v:,.0f}' for v in native)}")
    print(f"PyTorch steps/s per repeat: {', '.join(f'{v:,.0f}' for v in torch_rates)}")
    print(
        f"1-minute load average before/after: {load_before} / {load_after} "
        f"({os.cpu_count()} CPUs; this process counts for about 1)"
    )


if __name__ == "__main__":
    main()
