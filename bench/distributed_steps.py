"""Steps/s of compiled distributed training on loopback, against one process and PyTorch DDP.

    python bench/distributed_steps.py [--steps N] [--repeats R]

Two models: the digits MLP of samples/digits_model.py (64-128-64-10, Adam, batch 32 per
worker) and an MLP 784-1024-1024-10 (SGD, batch 128 per worker, random data). For each: one
process (tfc compile, `train`), 1 ps + 2 workers synchronous and asynchronous (tfc compile
--cluster, tfc launch), and, when torch is installed, DistributedDataParallel with the gloo
backend in 2 processes on the same model and per-worker batch. Wall time of N steps from
process start to exit, median of R runs; a synchronous step trains on twice the examples of a
one-process step. All measured in the same run, on this machine (every task shares its cores).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples"))

import digits_model  # noqa: E402

import tfc as tf  # noqa: E402
from tfc.aot import compile as tfc_compile  # noqa: E402
from tfc.aot.launch import Launcher, free_ports  # noqa: E402


def mlp1024():
    tf.set_random_seed(2)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    net = x
    for i in (1, 2):
        net = tf.layers.dense(net, 1024, activation=tf.nn.relu, name=f"fc{i}")
    logits = tf.layers.dense(net, 10, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    return {"train": {"inputs": {"features": x, "labels": y}, "loss": loss, "train_op": train}}


def _median(fn, repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


def _have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _torch_ddp(layers: list[int], batch: int, steps: int, data: Path, adam: bool) -> float:
    """Steps/s of the second half of the run (after start-up and warm-up)."""
    script = f"""
import sys, time, numpy as np, torch, torch.distributed as dist, torch.nn as nn
rank = int(sys.argv[1]); torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{free_ports(1)[0]}",
                        rank=rank, world_size=2)
rows = np.load({str(data)!r}); x = torch.tensor(rows[:, :-1]); y = torch.tensor(rows[:, -1]).long()
sizes = {layers!r}; mods = []
for a, b in zip(sizes[:-1], sizes[1:]): mods += [nn.Linear(a, b), nn.ReLU()]
model = nn.parallel.DistributedDataParallel(nn.Sequential(*mods[:-1]))
opt = (torch.optim.Adam if {adam} else torch.optim.SGD)(model.parameters(), lr=0.01)
n = len(rows); B = {batch}
half = {steps} // 2
for s in range({steps}):
    if s == half: t0 = time.perf_counter()
    i = (s * 2 * B + rank * B) % (n - B)
    opt.zero_grad(); loss = nn.functional.cross_entropy(model(x[i:i + B]), y[i:i + B])
    loss.backward(); opt.step()
if rank == 0: print("steps/s", ({steps} - half) / (time.perf_counter() - t0))
dist.destroy_process_group()
"""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        procs = [subprocess.Popen([sys.executable, f.name, str(r)], stdout=subprocess.PIPE,
                                  text=True) for r in range(2)]  # fmt: skip
        outs = [p.communicate(timeout=600)[0] for p in procs]
        if any(p.returncode != 0 for p in procs):
            raise RuntimeError("the PyTorch DDP run failed")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        os.unlink(f.name)
    return float(outs[0].split()[-1])


def bench(name, model, layers, batch, rows, steps, repeats, adam, tmp: Path) -> list[str]:
    """Steps/s of the second half of each run: start-up, connection set-up and warm-up left
    out of every contender alike."""
    data = tmp / f"{name}.npy"
    np.save(data, rows)
    cluster = tmp / "cluster.json"
    cluster.write_text(json.dumps({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"] * 2}))
    single = tfc_compile(model, tmp / f"{name}_1", batch=batch, name=name)
    dist = tfc_compile(model, tmp / f"{name}_d", batch=batch, name=name, cluster=cluster)
    half = steps // 2
    common = ["--data", str(data), "--steps", str(steps), "--log-every", str(half),
              "--save-every", "0"]  # fmt: skip

    def one() -> float:  # `train` logs the examples/s of each interval
        ck = tempfile.mkdtemp(dir=tmp)
        out = subprocess.run([str(single.train), *common, "--checkpoint-dir", ck], check=True,
                             capture_output=True, text=True, timeout=600).stdout  # fmt: skip
        rates = re.findall(r"step \d+\s+loss \S+\s+(\S+) examples/s", out)
        return float(rates[-1]) / batch

    def cluster_run(mode: str):
        def run() -> float:  # the ps logs steps/s since its start: t(S) = S / rate(S)
            ck = tempfile.mkdtemp(dir=tmp)
            launcher = Launcher(dist.outdir, 1, 2, [mode, *common, "--checkpoint-dir", ck],
                                timeout=600, out=open(os.devnull, "w"))  # fmt: skip
            if launcher.run() != 0:
                raise RuntimeError("\n".join(launcher.lines[-20:]))
            at = {int(m.group(1)): float(m.group(2)) for line in launcher.lines
                  if (m := re.search(r"global_step (\d+)\s+(\S+) steps/s", line))}  # fmt: skip
            return (steps - half) / (steps / at[steps] - half / at[half])

        return run

    results = {
        "1 process": (_median(one, repeats), 1),
        "1 ps + 2 workers sync": (_median(cluster_run("--sync"), repeats), 2),
        "1 ps + 2 workers async": (_median(cluster_run("--async"), repeats), 1),
    }
    if _have_torch():
        ddp = _median(lambda: _torch_ddp(layers, batch, steps, data, adam), repeats)
        results["PyTorch DDP gloo, 2 processes"] = (ddp, 2)
    base = results["1 process"][0]
    lines = [f"{name}: batch {batch} per worker, {steps} steps, rate of the second half "
             f"(median of {repeats})"]  # fmt: skip
    for label, (rate, replicas) in results.items():
        lines.append(
            f"  {label:32} {rate:8.1f} steps/s  {rate * batch * replicas:9.0f} examples/s  "
            f"{rate / base:5.2f}x one process's steps/s"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    big = np.column_stack([rng.random((4096, 784)), rng.integers(0, 10, 4096)]).astype(np.float32)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out += bench(
            "digits",
            str(ROOT / "samples" / "digits_model.py"),
            [64, 128, 64, 10],
            32,
            digits_model.training_rows(),
            args.steps,
            args.repeats,
            True,
            tmp,
        )
        out += bench("mlp1024", mlp1024, [784, 1024, 1024, 10], 128, big,
                     max(20, args.steps // 10), args.repeats, False, tmp)  # fmt: skip
    print("\n".join(out))


if __name__ == "__main__":
    main()
