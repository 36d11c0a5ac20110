"""Inference against ONNX Runtime in thread CPU time, for a machine other processes keep busy.

    python bench/inference_cpu.py [--workloads lenet_infer_b1,mlp_infer_b1,mlp_infer_b64]
                                  [--rounds 11] [--round-ms 100]
    python bench/inference_cpu.py --tiny     # a 12-16-5 MLP, short rounds (for tests)

bench/run.py's inference workloads (same graphs, weights and batches, one thread), three ways
in interleaved rounds: `sess.make_callable(probabilities, [features])`, the compiled program
called through cffi (`call_contiguous`, as Session.run does once it has a plan), and ONNX
Runtime's `sess.run` (intra_op_num_threads=1, sequential, all graph optimizations; skipped
where onnxruntime is not installed). ONNX Runtime with one intra-op thread computes on the
calling thread, as tfc does, so the calling thread's CPU time (time.thread_time) is each way's
whole cost, without the time other processes held the core; cache sharing still counts. Each
round's figure is the mean over as many calls as fill --round-ms; the table gives medians over
rounds, the ratio to ONNX Runtime's, and the wall-clock median beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
os.environ["TFC_NUM_THREADS"] = "1"

from suite import data as bench_data  # noqa: E402
from suite import models_tfc, workloads  # noqa: E402
from suite.runners import layouts  # noqa: E402

from tfc.client.request import RunRequest  # noqa: E402

DEFAULT = "lenet_infer_b1,mlp_infer_b1,mlp_infer_b64"


def tfc_ways(w: dict, d: dict, xs: list[np.ndarray]) -> tuple[dict, np.ndarray]:
    """{way: step(i)} for tfc's two ways, and the probabilities of batch 0."""
    graph, sess, sigs = models_tfc.loaded_session(w, d["weights"])
    with graph.as_default():
        features = sigs["train"]["inputs"]["features"]
        probabilities = sigs["predict"]["outputs"]["probabilities"]
        call = sess.make_callable(probabilities, [features])
        first = call(xs[0])
        request = RunRequest(graph, probabilities, {features: xs[0]}, sess._iterators)
        program = sess._program(request)
    feeds = [[x] for x in xs]
    n = len(xs)
    return {
        "tfc Session.run (make_callable)": lambda i: call(xs[i % n]),
        "tfc program (cffi call)": lambda i: program.call_contiguous(feeds[i % n]),
    }, first


def ort_way(w: dict, d: dict, xs: list[np.ndarray], want: np.ndarray):
    """ONNX Runtime's step(i), checked against tfc's probabilities; None without it."""
    try:
        import onnxruntime as ort
        from suite.runners import ort_runner
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = ort_runner.build_model(w, d["weights"])
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    images = [layouts.images_nchw(x) if w["model"] == "lenet" else x for x in xs]
    got = sess.run(None, {"x": images[0]})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    n = len(images)
    return lambda i: sess.run(None, {"x": images[i % n]})


def measure(w: dict, rounds: int, round_s: float) -> dict:
    """{way: (median CPU us per call, median wall us per call)} over interleaved rounds."""
    d = bench_data.make(w)
    xs = [np.ascontiguousarray(bench_data.batch(d, w, i)[0]) for i in range(bench_data.N_BATCHES)]
    ways, first = tfc_ways(w, d, xs)
    ort_step = ort_way(w, d, xs, first)
    if ort_step is not None:
        ways["ONNX Runtime"] = ort_step
    calls = {}
    for name, step in ways.items():
        t, n = time.perf_counter(), 0
        while n < 5 or time.perf_counter() - t < min(round_s, 0.1):
            step(n)
            n += 1
        calls[name] = max(3, int(round_s / ((time.perf_counter() - t) / n)))
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, step in ways.items():
            c0, w0 = time.thread_time(), time.perf_counter()
            for i in range(calls[name]):
                step(i)
            cpu[name].append((time.thread_time() - c0) / calls[name] * 1e6)
            wall[name].append((time.perf_counter() - w0) / calls[name] * 1e6)
    return {name: (statistics.median(cpu[name]), statistics.median(wall[name])) for name in ways}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default=DEFAULT, help=f"comma-separated (default {DEFAULT})")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--round-ms", type=float, default=100.0)
    parser.add_argument("--tiny", action="store_true", help="the tiny MLP, short rounds")
    args = parser.parse_args(argv)
    pool = workloads.tiny() if args.tiny else workloads.full()
    names = ["tiny_infer_b4"] if args.tiny else args.workloads.split(",")
    chosen = [w for w in pool if w["name"] in names and w["mode"] == "infer"]
    if len(chosen) != len(names):
        known = ", ".join(w["name"] for w in pool if w["mode"] == "infer")
        parser.error(f"unknown inference workloads in {names}; known: {known}")
    rounds, round_s = (2, 0.01) if args.tiny else (args.rounds, args.round_ms / 1000)
    before = os.getloadavg()
    print("| workload | way | CPU us per call | vs ORT (CPU) | wall us per call | vs ORT (wall) |")
    print("|---|---|---:|---:|---:|---:|")
    for w in chosen:
        result = measure(w, rounds, round_s)
        ref = result.get("ONNX Runtime")
        for name, (cpu, wall) in result.items():
            ratios = [f"{cpu / ref[0]:.3f}x", f"{wall / ref[1]:.3f}x"] if ref else ["", ""]
            print(f"| {w['title']} | {name} | {cpu:.2f} | {ratios[0]} | {wall:.2f} | {ratios[1]} |")
    after = os.getloadavg()
    print(f"\nload average before/after: {before[0]:.2f} / {after[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
