"""What a second thread can give a training step: its serial time measured, its 2-thread speedup
predicted from it, and measured.

    python bench/thread_scaling.py [--workloads mlp_train_b256,mlp_train_b64] [--runs 200]
                                   [--rounds 5] [--profile]

For each workload of bench/suite (the MLP's training step with Adam, random data), the default
build's 1- and 2-thread steps alternate for `--rounds` rounds (the C timing loop, the minimum of
each). Then a child process builds the program with TFC_THREADS_STATS (tfc_threads.h counts the
calls that split into several tasks and the wall time spent in them) and runs `--runs` steps on
two threads: the step time outside those calls runs on one thread whatever the thread count
("serial"), so on two idle cores a step takes at least serial + (1-thread step - serial) / 2
(the prediction: the parallel calls split evenly and cost nothing to start; the dispatches per
step say how many wake-ups that hides). On a shared machine a measured 2-thread figure means
something only while the load average, printed before and after, stays well below the core
count; the serial time is what limits the speedup on an idle machine.

CPU times, which other processes inflate far less than wall times, give a second prediction:
the 1-thread step's CPU time less the serial time ("work 1t") against the CPU time each thread
spends in tasks at 2 threads (the pool's second report line). Their ratio ("split cost": the
sum over the threads over the 1-thread work) is what splitting adds (A or B packed twice,
caches refilled), and the 1-thread step's CPU time over serial + the busier thread's work
predicts the speedup on idle cores with the splits as they are ("predicted from work"; it
leaves out the wake-ups and the two cores' contention for memory). `--profile` adds each
kernel's time at 1 and 2 threads side by side.

On a shared Linux machine, `chrt -f 10 python bench/thread_scaling.py --profile` (root or
CAP_SYS_NICE) runs the program's threads ahead of other processes (the kernel still leaves
them 5% of each second): the two threads then measure as on idle cores, while the 1-thread
figures keep other processes' memory traffic beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from suite import models_tfc, workloads  # noqa: E402

import tfc as tf  # noqa: E402


def _workload(name: str) -> dict:
    found = [w for w in workloads.full() if w["name"] == name]
    if not found or found[0]["mode"] != "train":
        raise SystemExit(f"unknown training workload {name!r}")
    return found[0]


def _step(w: dict):
    """The workload's graph in the default graph: (train op, feed dict)."""
    sigs = models_tfc.build(w)
    t = sigs["train"]
    rng = np.random.default_rng(0)
    b, shape = w["batch"], workloads.input_shape(w)
    feed = {
        t["inputs"]["features"]: rng.standard_normal((b, *shape)).astype(np.float32),
        t["inputs"]["labels"]: rng.integers(0, 10, b).astype(np.int32),
    }
    return t["train_op"], feed


def _session(threads: int) -> tf.Session:
    return tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=threads))


def serial_time(name: str, runs: int, threads: int = 2) -> dict:
    """In this (child) process: the step of the TFC_THREADS_STATS build on `threads` threads,
    timed; the parent reads the calls and their times from the program's exit report on
    stderr."""
    with tf.Graph().as_default():
        train, feed = _step(_workload(name))
        with _session(threads) as sess:
            sess.run(tf.global_variables_initializer())
            cpu = time.thread_time()  # the C timing loop runs on this thread
            seconds = sess.time_runs(train, feed, runs=runs)
            cpu = (time.thread_time() - cpu) / runs
    return {"step_s": seconds, "cpu_s": cpu, "runs": runs}


def _stats_child(name: str, runs: int, threads: int) -> tuple[dict, list[str], list[str]]:
    """The child's result and the training program's exit report (the program with the most
    calls): its 'tfc threads:' line and its 'tfc threads cpu:' line, split into words."""
    env = dict(os.environ, TFC_CFLAGS=(os.environ.get("TFC_CFLAGS", "") + " -DTFC_THREADS_STATS"))
    env["PYTHONPATH"] = str(BENCH.parent)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", name, "--runs", str(runs), "--threads", str(threads)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = proc.stderr.splitlines()
    # each program prints its two lines together at exit
    pairs = [
        (line.split(), lines[k + 1].split())
        for k, line in enumerate(lines[:-1])
        if line.startswith("tfc threads:") and lines[k + 1].startswith("tfc threads cpu:")
    ]
    calls, cpu = max(pairs, key=lambda pair: int(pair[0][2]), default=(None, None))
    return result, calls, cpu


def measure_serial(name: str, runs: int) -> dict:
    """Serial time, calls per step and the CPU times of the calls (ms per step)."""
    result, calls, cpu = _stats_child(name, runs, 2)
    step = result["step_s"]
    parallel = float(calls[5]) / runs  # the training program ran only in time_runs' loop
    tasks = [float(v) / runs * 1e3 for v in cpu[cpu.index("thread:") + 1 :]]
    one, _, _ = _stats_child(name, runs, 1)
    return {
        "step2_ms": step * 1e3,
        "parallel2_ms": parallel * 1e3,
        "serial_ms": max(step - parallel, 0.0) * 1e3,
        "calls_per_step": int(calls[2]) / runs,
        "step1_cpu_ms": one["cpu_s"] * 1e3,
        "tasks2_ms": tasks,
    }


def measure_threads(name: str, rounds: int, runs: int) -> dict[int, float]:
    """The default build's step at 1 and 2 threads, alternating; the minimum of each (ms)."""
    best = {1: float("inf"), 2: float("inf")}
    with tf.Graph().as_default():
        train, feed = _step(_workload(name))
        sessions = {n: _session(n) for n in best}
        init = tf.global_variables_initializer()
        for sess in sessions.values():
            sess.run(init)
            sess.run(train, feed)
        for _ in range(rounds):
            for n, sess in sessions.items():
                best[n] = min(best[n], sess.time_runs(train, feed, runs=runs) * 1e3)
        for sess in sessions.values():
            sess.close()
    return best


def print_profiles(name: str, rounds: int) -> None:
    """Each kernel's time at 1 and 2 threads side by side: the medians of `rounds` profiles
    (Session.profile, 100 runs each at b=64, 30 otherwise) taken in turn at each count."""
    times: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    totals: dict[int, list[float]] = {1: [], 2: []}
    with tf.Graph().as_default():
        train, feed = _step(_workload(name))
        sessions = {n: _session(n) for n in times}
        for sess in sessions.values():
            sess.run(tf.global_variables_initializer())
            sess.profile(train, feed, runs=5)
        runs = 100 if _workload(name)["batch"] <= 64 else 30
        for _ in range(rounds):
            for n, sess in sessions.items():
                profile = sess.profile(train, feed, runs=runs)
                totals[n].append(profile.total_seconds)
                for k in profile.kernels:
                    times[n].setdefault(f"{k.node}: {k.ops}", []).append(k.seconds)
        for sess in sessions.values():
            sess.close()
    one, two = (float(np.median(totals[n])) * 1e6 for n in (1, 2))
    print(f"\n{name}: per kernel, medians of {rounds} profiles at each count (us per step)")
    print(f"{'1 thread':>10} {'2 threads':>10} {'speedup':>8}  kernel")
    print(f"{one:>10.1f} {two:>10.1f} {one / two:>7.2f}x  the whole step")
    kernels = {key: float(np.median(v)) * 1e6 for key, v in times[1].items()}
    for key in sorted(kernels, key=kernels.get, reverse=True):
        a, b = kernels[key], float(np.median(times[2][key])) * 1e6
        if a >= 1.0:
            print(f"{a:>10.1f} {b:>10.1f} {a / b:>7.2f}x  {key}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="mlp_train_b256,mlp_train_b64")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(serial_time(args.child, args.runs, args.threads)))
        return 0
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(
        "| workload | 1 thread ms | 2 threads ms | speedup | serial ms | calls/step "
        "| predicted speedup on idle cores | work 1t ms | tasks 2t ms by thread | split cost "
        "| predicted from work |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.workloads.split(","):
        m = measure_threads(name, args.rounds, max(args.runs // 4, 10))
        s = measure_serial(name, args.runs)
        predicted = m[1] / (s["serial_ms"] + (m[1] - s["serial_ms"]) / 2)
        tasks, step1 = s["tasks2_ms"], s["step1_cpu_ms"]
        work1 = step1 - s["serial_ms"]
        from_work = step1 / (s["serial_ms"] + max(tasks))
        print(
            f"| {name} | {m[1]:.3f} | {m[2]:.3f} | {m[1] / m[2]:.2f}x | {s['serial_ms']:.3f} "
            f"| {s['calls_per_step']:.0f} | {predicted:.2f}x | {work1:.3f} "
            f"| {' / '.join(f'{t:.3f}' for t in tasks)} | {sum(tasks) / work1:.3f} "
            f"| {from_work:.2f}x |",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.profile:
        for name in args.workloads.split(","):
            print_profiles(name, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
