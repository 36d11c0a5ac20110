"""Python overhead of Session.run and of make_callable's callable over the compiled program.

    python bench/session_overhead.py [--repeats 20000] [--rounds 7] [--profile]

Two programs, each with one feed and one fetch, compiled once and called with the same
shapes: the MNIST MLP 784-512-512-10 (softmax) at batch 1, and a tiny one (x * 2 + 1 on 4
floats). For each, the median time per call of `sess.run(y, {x: v})`, of
`sess.make_callable(y, [x])(v)`, of the compiled C entry point called directly through cffi
with its pointer tables filled in once (what Python cannot go below) and of the C timing loop
(`sess.time_runs`, the program's own time, no Python at all). Overheads are per call, in
microseconds, above the direct cffi call. The machine's load average is printed with the
table: on a shared machine the medians of many rounds are what to compare.
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


def per_call(fn, repeats: int, rounds: int) -> float:
    """Median over `rounds` of the mean seconds per call of `fn` over `repeats` calls."""
    samples = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        for _ in range(repeats):
            fn()
        samples.append((time.perf_counter_ns() - t) / repeats)
    return statistics.median(samples) * 1e-3  # microseconds


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
    row = {"program": name}
    row["c_loop"] = sess.time_runs(y, {x: value}, runs=repeats * rounds) * 1e6
    row["cffi"] = per_call(direct, repeats, rounds)
    row["callable"] = per_call(lambda: call(value), repeats, rounds)
    row["run"] = per_call(lambda: sess.run(y, {x: value}), repeats, rounds)
    sess.close()
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20000, help="calls per round")
    p.add_argument("--rounds", type=int, default=7, help="rounds (the median is reported)")
    p.add_argument("--profile", action="store_true", help="print a cProfile of Session.run")
    args = p.parse_args(argv)
    tf.set_num_threads(1)
    rows = [
        measure("tiny x*2+1, [4]", tiny_program, args.repeats, args.rounds, args.profile),
        measure("MLP 784-512-512-10, b=1", mlp_program, args.repeats // 10, args.rounds, False),
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
            f"{r['run']:.2f} | {r['callable'] - r['cffi']:.2f} | {r['run'] - r['cffi']:.2f} |"
        )


if __name__ == "__main__":
    main()
