"""One of ONNX's `light` models through two tfc trees, kernel by kernel: which kernels moved.

A change of a few percent in a whole network is below what a shared machine's wall times can
show (the same tree's SqueezeNet at batch 32 ran 300-680 ms per call within minutes at load
4). Here each tree runs in its own processes, the trees alternating process by process
(--rounds each); a process profiles the program --runs times (Session.profile, one run each)
and keeps each kernel's fastest run, and times the whole program --runs times through its C
loop (Session.time_runs) by the calling thread's CPU time. The table gives, per kernel, the
median over a tree's processes of those minima, new over old, and in how many rounds the new
tree's process was the slower of the pair; the outputs of the two trees are compared.

The model is bench/onnx_models.py's (seeded random weights, the batch set on the input), made
once by this process and written to a file that each tree's process imports. 1 thread.

Run with a python that has onnx, each tree a checkout of tfc (e.g. `git worktree add --detach
../old REV`):
    python bench/onnx_ab.py OLD_TREE NEW_TREE [--model squeezenet] [--batch 32] [--rounds 6]
        [--runs 5] [--cpu 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()


def worker(model_path: str, runs: int, out_path: str) -> None:
    """In a tree's process (PYTHONPATH): the kernels' and the program's fastest times as JSON on
    stdout, the output into `out_path`."""
    import onnx

    import tfc

    model = onnx.load(model_path)
    graph, inputs, outputs = tfc.onnx.import_model(model)
    config = tfc.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    sess = tfc.Session(graph=graph, config=config)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feed = {inputs[0]: np.random.default_rng(1).random(shape, np.float32)}
    np.save(out_path, sess.run(outputs[0], feed))
    kernels: dict[str, list] = {}
    for i in range(runs):
        profile = sess.profile(outputs[0], feed, runs=1, warmup=0 if i else 1)
        for k in profile.kernels:
            best = kernels.get(k.node, [k.ops, k.seconds])[1]
            kernels[k.node] = [k.ops, min(best, k.seconds)]
    cpu = []
    for _ in range(runs):
        start = time.thread_time()
        sess.time_runs(outputs[0], feed, runs=1)
        cpu.append(time.thread_time() - start)
    sess.close()
    print(json.dumps({"tfc": tfc.__file__, "kernels": kernels, "loop_cpu": min(cpu)}))


def run_tree(tree: Path, model_path: str, runs: int, out_path: str, cpu: str | None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(HERE), "--worker", model_path, "--runs", str(runs)]
    command += ["--out", out_path]
    if cpu is not None:
        command = ["taskset", "-c", cpu, *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["tfc"].startswith(str(tree)):
        raise RuntimeError(f"{tree}'s process imported tfc from {result['tfc']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", nargs="?", type=Path)
    parser.add_argument("new", nargs="?", type=Path)
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runs", type=int, default=5, help="profiled runs per process")
    parser.add_argument("--cpu", help="taskset -c for every tree's process")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.runs, args.out)
        return
    if args.old is None or args.new is None:
        parser.error("give the old and the new tree")
    sys.path.insert(0, str(HERE.parent))
    import onnx
    from onnx_models import with_random_weights

    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    results: dict[str, list[dict]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, f"{args.model}.onnx")
        onnx.save(with_random_weights(args.model, args.batch), model_path)
        loads = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            for tag, tree in trees.items():
                out = os.path.join(tmp, f"{tag}.npy")
                results[tag].append(run_tree(tree, model_path, args.runs, out, args.cpu))
                loads.append(os.getloadavg()[0])
        old_y, new_y = np.load(os.path.join(tmp, "old.npy")), np.load(os.path.join(tmp, "new.npy"))
    diff = float(np.abs(new_y - old_y).max() / max(np.abs(old_y).max(), 1e-30))
    print(
        f"{args.model} batch {args.batch}, 1 thread: {args.rounds} processes per tree, the "
        f"fastest of {args.runs} runs each; load average {min(loads):.2f}-{max(loads):.2f}; "
        f"outputs' max difference {diff:.1e} of the largest"
    )
    rows: dict[str, list[list[float]]] = {}
    for tag in ("old", "new"):
        for result in results[tag]:
            per = {node: s for node, (_, s) in result["kernels"].items()}
            per["(kernels summed)"] = sum(per.values())
            per["(program, thread CPU time)"] = result["loop_cpu"]
            for node, s in per.items():
                rows.setdefault(node, [[], []])[tag == "new"].append(s)
    ops = {n: o for n, (o, _) in results["new"][0]["kernels"].items()}
    print(f"{'old ms':>9} {'new ms':>9} {'new/old':>7} {'slower':>6}  kernel")
    medians = {n: [statistics.median(v) if v else float("nan") for v in t] for n, t in rows.items()}
    for node in sorted(rows, key=lambda n: -medians[n][0] if rows[n][0] else 0):
        (old, new), (a, b) = rows[node], medians[node]
        slower = sum(y > x for x, y in zip(old, new, strict=False))
        label = f"{node}: {ops[node]}" if node in ops else node
        print(f"{a * 1e3:9.3f} {b * 1e3:9.3f} {b / a:7.3f} {slower:3d}/{len(new)}  {label}")


if __name__ == "__main__":
    main()
