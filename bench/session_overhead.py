"""Python overhead of Session.run and of make_callable's callable over the compiled program.

    python bench/session_overhead.py [--repeats 20000] [--rounds 15] [--profile]

Two programs, each with one feed and one fetch, compiled once and called with the same
shapes: the MNIST MLP 784-512-512-10 (softmax) at batch 1, and a tiny one (x * 2 + 1 on 4
floats). For each, the median time per call of `sess.run(y, {x: v})`, of
`sess.make_callable(y, [x])(v)`, of the compiled C entry point called directly through cffi
with its pointer tables filled in once (what Python cannot go below) and of the C timing loop
(`sess.time_runs`, the program's own time, no Python at all). Overheads are per call, in
microseconds, above the direct cffi call: the median of the differences of pairs of calls, a
direct call then the measured one (on a shared machine the MLP's time drifts by tens of
microseconds between rounds). The machine's load average is printed with the table.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tfc as tf  # noqa: E402


def mlp_program() -> tuple:
    tf.set_random_seed(7)
    x = tf.placeholder(tf.float32, [None, 784], name="features")
    net = x
    for i, units in enumerate([512, 512]):
        net = tf.layers.dense(net, units, activation=tf.nn.relu, name=f"dense{i}")
    y = tf.nn.softmax(tf.layers.dense(net, 10, name="logits"), name="probabilities")
    value = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    return x, y, value


def tiny_program() -> tuple:
    x = tf.placeholder(tf.float32, [4], name="x")
    y = x * 2.0 + 1.0
    return x, y, np.arange(4, dtype=np.float32)


def per_call(fns: dict, repeats: int, rounds: int) -> dict:
    """For each of `fns`, the mean microseconds per call over `repeats` calls, one sample per
    round; the functions take turns within each round, so that the load of a shared machine,
    which drifts, weighs on them alike."""
    samples: dict = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = time.perf_counter_ns()
            for _ in range(repeats):
                fn()
            samples[name].append((time.perf_counter_ns() - t) / repeats * 1e-3)
    return samples


def overhead(direct, fn, calls: int) -> float:
    """The median over `calls` pairs of the microseconds a call of `fn` takes above the direct
    cffi call made just before it: pairing call by call keeps the drifting load of a shared
    machine (tens of microseconds on the MLP) out of a difference of a few."""
    clock = time.perf_counter_ns
    differences = []
    for _ in range(calls):
        t0 = clock()
        direct()
        t1 = clock()
        fn()
        t2 = clock()
        differences.append((t2 - t1) - (t1 - t0))
    return statistics.median(differences) * 1e-3


def measure(name: str, build, repeats: int, rounds: int, profile: bool) -> dict:
    graph = tf.Graph()
    with graph.as_default():
        x, y, value = build()
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    expected = sess.run(y, {x: value})
    call = sess.make_callable(y, [x])
    np.testing.assert_array_equal(call(value), expected)
    direct, direct_results = call.program.bind([value])
    assert direct() == 0
    np.testing.assert_array_equal(direct_results[0], expected)
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(repeats):
            sess.run(y, {x: value})
        prof.disable()
        print(f"--- cProfile of {repeats} Session.run calls, {name}")
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    fns = {"cffi": direct, "callable": lambda: call(value), "run": lambda: sess.run(y, {x: value})}
    samples = per_call(fns, repeats, rounds)
    row = {name: statistics.median(s) for name, s in samples.items()}
    row["callable_over"] = overhead(direct, fns["callable"], repeats * rounds)
    row["run_over"] = overhead(direct, fns["run"], repeats * rounds)
    row["c_loop"] = statistics.median(
        sess.time_runs(y, {x: value}, runs=repeats) * 1e6 for _ in range(rounds)
    )
    row["program"] = name
    sess.close()
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20000, help="calls per round")
    p.add_argument("--rounds", type=int, default=15, help="rounds (the median is reported)")
    p.add_argument("--profile", action="store_true", help="print a cProfile of Session.run")
    args = p.parse_args(argv)
    tf.set_num_threads(1)
    rows = [
        measure("tiny x*2+1, [4]", tiny_program, args.repeats, args.rounds, args.profile),
        measure("MLP 784-512-512-10, b=1", mlp_program, args.repeats // 20, args.rounds * 3, False),
    ]
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    head = (
        "| program | C loop us | cffi call us | callable us | run us | "
        "callable overhead us | run overhead us |"
    )
    print(head)
    print("|---" * 7 + "|")
    for r in rows:
        print(
            f"| {r['program']} | {r['c_loop']:.2f} | {r['cffi']:.2f} | {r['callable']:.2f} | "
            f"{r['run']:.2f} | {r['callable_over']:.2f} | {r['run_over']:.2f} |"
        )


if __name__ == "__main__":
    main()
