"""The GEMM's paths linked from one archive (the default) against compiled into each program
(TFC_GEMM_INLINE=1): what the Session's programs lose at run time, and what they save in gcc.

    python bench/gemm_linked.py [--workloads mlp_train_b64,...] [--rounds 9] [--round-ms 200]

Per workload of bench/run.py (its models and weights: bench/suite/models_tfc.py), at one
thread: the program of the training step (`train_op`) or of the inference (`probabilities`),
compiled both ways in this one process and bound to the same session state and feeds, each run
by the Session's C timing loop (tfc.tools.profile.time_runs). Rounds are interleaved (each
round times both, in alternating order) so a drifting load weighs on both; the table gives the
medians per call, the ratio linked / inline (< 1: linking is faster) of the medians and of the
best rounds, and the other processes' load. The two inference programs' probabilities (the
training programs' losses) are checked to be the same bits. Then each program's compile time
both ways: a new cache, with the runtime header precompiled and the archive built first (as
they are once a few programs were built with the same flags).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
os.environ.setdefault("TFC_NUM_THREADS", "1")

from suite import models_tfc, workloads  # noqa: E402
from suite.measure import LoadProbe  # noqa: E402

import tfc as tf  # noqa: E402
from tfc.backend import cc  # noqa: E402
from tfc.tools.profile import time_runs  # noqa: E402

DEFAULT = "mlp_train_b64,mlp_train_b256,mlp_infer_b1,mlp_infer_b64,iris_train_b32,lenet_train_b64"
MODES = {"linked": "0", "inline": "1"}  # TFC_GEMM_INLINE


def title(w: dict) -> str:
    return w["title"].split(" (tfc:")[0]  # here every workload runs in the Session


def set_mode(mode: str) -> None:
    os.environ["TFC_GEMM_INLINE"] = MODES[mode]


def workload_graph(w: dict):
    """(graph, what to run, what must have the same bits, its initializer, a feed) of `w`."""
    graph = tf.Graph()
    with graph.as_default():
        sigs = models_tfc.build(w)
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    features = sigs["train"]["inputs"]["features"]
    labels = sigs["train"]["inputs"]["labels"]
    feed = {
        features: rng.standard_normal((w["batch"], *workloads.input_shape(w))).astype(np.float32),
        labels: rng.integers(0, workloads.n_classes(w), w["batch"]).astype(np.int32),
    }
    if w["mode"] == "train":
        return graph, sigs["train"]["train_op"], sigs["train"]["loss"], init, feed
    probs = sigs["predict"]["outputs"]["probabilities"]
    return graph, probs, probs, init, {features: feed[features]}


def run_times(chosen: list[dict], rounds: int, round_ms: float) -> None:
    print("| workload | linked (ms) | inline (ms) | linked / inline | best rounds | other load |")
    print("|---|---:|---:|---:|---:|---:|")
    for w in chosen:
        graph, op, checked, init, feed = workload_graph(w)
        sessions, values = {}, {}
        for mode in MODES:  # each session compiles its programs with its mode
            set_mode(mode)
            sess = sessions[mode] = tf.Session(graph=graph)
            sess.run(init)
            values[mode] = sess.run(checked, feed)  # before any step: the same state both ways
            sess.run(op, feed)
        assert values["linked"].tobytes() == values["inline"].tobytes(), w["name"]
        once = time_runs(sessions["linked"], op, feed, runs=3)
        runs = max(3, int(round_ms * 1e-3 / max(once, 1e-7)))
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        with LoadProbe() as probe:
            for r in range(rounds):
                for mode in list(MODES)[:: 1 if r % 2 else -1]:
                    set_mode(mode)
                    times[mode].append(time_runs(sessions[mode], op, feed, runs=runs))
        med = {mode: statistics.median(t) for mode, t in times.items()}
        load = "-" if probe.other_cpus is None else f"{probe.other_cpus:.2f}"
        print(
            f"| {title(w)} | {med['linked'] * 1e3:.4f} | {med['inline'] * 1e3:.4f} | "
            f"{med['linked'] / med['inline']:.3f} | "
            f"{min(times['linked']) / min(times['inline']):.3f} | {load} |",
            flush=True,
        )


def compile_times(chosen: list[dict]) -> None:
    print("\n| program, new to the cache | linked (s) | inline (s) |\n|---|---:|---:|")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TFC_CACHE_DIR"] = cache
        cc.PCH_AFTER = 0
        for mode in MODES:
            set_mode(mode)
            flags = cc.program_flags()
            cc.precompiled_header_dir(cc.compiler(), flags, '#include "tfc_runtime.h"')
            if cc.GEMM_LINKED in flags:
                start = time.perf_counter()
                cc.gemm_paths_archive(cc.compiler(), flags)
                print(f"| the archive of the paths, once per flag set | "
                      f"{time.perf_counter() - start:.2f} | - |")  # fmt: skip
        for w in chosen:
            graph, op, _, init, feed = workload_graph(w)
            seconds = {}
            for mode in MODES:
                set_mode(mode)
                sess = tf.Session(graph=graph)
                sess.run(init)
                start = time.perf_counter()
                sess.run(op, feed)
                seconds[mode] = time.perf_counter() - start
            print(f"| {title(w)} | {seconds['linked']:.2f} | {seconds['inline']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--round-ms", type=float, default=200.0)
    args = parser.parse_args(argv)
    chosen = workloads.by_names(args.workloads)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    run_times(chosen, args.rounds, args.round_ms)
    compile_times(chosen)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
