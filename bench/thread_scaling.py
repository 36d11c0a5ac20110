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
count; the serial time is what limits the speedup on an idle machine. `--profile` adds the
per-kernel profile at 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
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


def serial_time(name: str, runs: int) -> dict:
    """In this (child) process: the 2-thread step of the TFC_THREADS_STATS build, timed; the
    parent reads the calls and their time from the program's exit report on stderr."""
    with tf.Graph().as_default():
        train, feed = _step(_workload(name))
        with _session(2) as sess:
            sess.run(tf.global_variables_initializer())
            seconds = sess.time_runs(train, feed, runs=runs)
    return {"step_s": seconds, "runs": runs}


def measure_serial(name: str, runs: int) -> dict:
    env = dict(os.environ, TFC_CFLAGS=(os.environ.get("TFC_CFLAGS", "") + " -DTFC_THREADS_STATS"))
    env["PYTHONPATH"] = str(BENCH.parent)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", name, "--runs", str(runs)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # one report per loaded program: the training step's is the one with the most calls
    reports = [line.split() for line in proc.stderr.splitlines() if line.startswith("tfc threads:")]
    calls, seconds = max((int(r[2]), float(r[5])) for r in reports)
    step = result["step_s"]
    parallel = seconds / runs  # the training program ran only in time_runs' loop
    return {
        "step2_ms": step * 1e3,
        "parallel2_ms": parallel * 1e3,
        "serial_ms": max(step - parallel, 0.0) * 1e3,
        "calls_per_step": calls / runs,
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


def print_profiles(name: str) -> None:
    with tf.Graph().as_default():
        train, feed = _step(_workload(name))
        for n in (1, 2):
            with _session(n) as sess:
                sess.run(tf.global_variables_initializer())
                print(f"\n{name}, {n} thread{'s' if n > 1 else ''}:")
                print(sess.profile(train, feed, runs=100).table())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="mlp_train_b256,mlp_train_b64")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(serial_time(args.child, args.runs)))
        return 0
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(
        "| workload | 1 thread ms | 2 threads ms | speedup | serial ms | calls/step "
        "| predicted speedup on idle cores |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.workloads.split(","):
        m = measure_threads(name, args.rounds, max(args.runs // 4, 10))
        s = measure_serial(name, args.runs)
        predicted = m[1] / (s["serial_ms"] + (m[1] - s["serial_ms"]) / 2)
        print(
            f"| {name} | {m[1]:.3f} | {m[2]:.3f} | {m[1] / m[2]:.2f}x | {s['serial_ms']:.3f} "
            f"| {s['calls_per_step']:.0f} | {predicted:.2f}x |",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.profile:
        for name in args.workloads.split(","):
            print_profiles(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
