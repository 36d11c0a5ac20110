"""Batch-1 inference of the MNIST MLP and LeNet-5: tfc's four ways in against ONNX Runtime.

    python bench/inference_b1.py [--rounds 15] [--round-ms 200] [--models mlp,lenet]
    python bench/inference_b1.py --tiny      # a 12-16-5 MLP, short rounds (for tests)

The models and weights are bench/run.py's (bench/suite/models_tfc.py, graph seed 7). Per
model, at batch 1 and one thread, the median time per inference of:

  Session.run      `sess.make_callable(probabilities, [features])(x)`
  cffi call        the compiled program of that call, called directly through cffi
  C loop           that program run by the Session's C timing loop (`Session.time_runs`)
  embedded C       `tfc compile --target embed --inference-only` (model.c, -O3 -march=native,
                   64-byte arena), its `predict` called in a loop by a small C driver this
                   script compiles, timed with clock_gettime(CLOCK_MONOTONIC): no Python
  ONNX Runtime     the same model in ONNX (bench/suite/runners/ort_runner.py),
                   intra_op_num_threads=1, sequential, all graph optimizations, `sess.run`

The rounds are interleaved (each round runs every way once, the embedded driver as one process
per round, its process start outside the timed loop), so a drifting load weighs on all alike;
each round's time is the mean over as many calls as fill --round-ms, and the table gives the
median over rounds and its ratio to ONNX Runtime against issue 20's 0.5x target. Every way's
probabilities are checked against the Session's first. The native `predict` executable is not
timed: it has no timing mode (it reads a CSV or .npy file and prints a line per example, so
its wall time is parsing and printing); the embedded library runs the same generated program.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
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
from suite.runners import layouts  # noqa: E402

TARGET = 0.5  # issue 20: tfc's time per batch-1 inference <= 0.5x ONNX Runtime's
PREFIX = "b1_"

DRIVER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "model.h"

/* argv: features file (raw float32), calls per round, rounds. Prints the outputs, then one
 * line per round: nanoseconds per call. */
static union { double align; _Alignas(64) unsigned char b[B1_ARENA_BYTES + 1]; } arena;
static float features[B1_PREDICT_IN_FEATURES_COUNT];
static float out[B1_PREDICT_OUT_PROBABILITIES_COUNT];

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(features, sizeof features, 1, f) != 1) return 3;
    fclose(f);
    long calls = atol(argv[2]), rounds = atol(argv[3]);
    for (long i = 0; i < calls; i++) /* warm-up: caches, page faults, branch predictors */
        if (b1_predict(1, features, out, arena.b, sizeof arena.b) != TFC_OK) return 4;
    for (int i = 0; i < B1_PREDICT_OUT_PROBABILITIES_COUNT; i++) printf("%.9g\n", out[i]);
    for (long r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < calls; i++) b1_predict(1, features, out, arena.b, sizeof arena.b);
        printf("round %.1f\n", (now_ns() - t0) / (double)calls);
    }
    return 0;
}
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--round-ms", type=float, default=200.0, help="milliseconds per way a round")
    p.add_argument("--models", default="mlp,lenet", help="comma-separated: mlp, lenet")
    p.add_argument("--tiny", action="store_true", help="a 12-16-5 MLP and short rounds (tests)")
    p.add_argument("--cc", default=os.environ.get("CC", "cc"), help="the C compiler")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.round_ms <= 0:
        p.error("--rounds must be >= 1 and --round-ms > 0")
    return args


def select(args: argparse.Namespace) -> list[dict]:
    if args.tiny:
        tiny = [w for w in workloads.tiny() if w["mode"] == "infer"][0]
        return [dict(tiny, name="tiny_infer_b1", title="tiny MLP 12-16-5 inference", batch=1)]
    by_model = {w["model"]: w for w in workloads.full() if w["mode"] == "infer" and w["batch"] == 1}
    wanted = args.models.split(",")
    unknown = set(wanted) - set(by_model)
    if unknown:
        sys.exit(f"unknown model(s): {', '.join(sorted(unknown))}; known: mlp, lenet")
    return [by_model[m] for m in wanted]


class Embedded:
    """The embedded library's predict in a C timing loop: one driver process per round."""

    def __init__(self, w: dict, x: np.ndarray, tmp: Path, cc: str):
        from tfc.aot import TARGET_FLAGS
        from tfc.aot.embed import EMBED_CFLAGS, compile_embed

        out = tmp / f"embed_{w['name']}"
        compile_embed(
            models_tfc.signatures_function(w),
            out,
            1,
            prefix=PREFIX,
            inference_only=True,
            arena_align=64,
        )
        (out / "driver.c").write_text(DRIVER)
        # C11 for _Alignas in the driver; model.c itself is C99
        flags = [f for f in EMBED_CFLAGS if f != "-std=c99"] + ["-std=c11"]
        self.cflags = [*TARGET_FLAGS["host"]]
        cmd = [cc, *flags, *self.cflags, "driver.c", "model.c", "-lm", "-o", "driver"]
        subprocess.run(cmd, cwd=out, check=True, capture_output=True, text=True)
        self.exe = out / "driver"
        self.features = out / "features.bin"
        np.ascontiguousarray(x, dtype=np.float32).tofile(self.features)
        self.calls = 1

    def run(self, calls: int, rounds: int = 1) -> tuple[np.ndarray, list[float]]:
        """The outputs and the seconds per call of each round."""
        text = subprocess.run(
            [str(self.exe), str(self.features), str(calls), str(rounds)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split("\n")
        values = [float(v) for v in text if v and not v.startswith("round")]
        times = [float(v.split()[1]) * 1e-9 for v in text if v.startswith("round")]
        return np.array(values, dtype=np.float32), times

    def calibrate(self, round_s: float) -> None:
        per_call = self.run(20)[1][0]
        self.calls = max(1, int(round_s / max(per_call, 1e-9)))

    def round(self) -> float:
        return self.run(self.calls)[1][0]


class PyWay:
    """A Python callable timed in rounds of as many calls as fill the round."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 1

    def calibrate(self, round_s: float) -> None:
        t = time.perf_counter()
        n = 0
        while n < 5 or time.perf_counter() - t < min(round_s, 0.1):
            self.fn()
            n += 1
        self.calls = max(1, int(round_s / ((time.perf_counter() - t) / n)))

    def round(self) -> float:
        fn, calls = self.fn, self.calls
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t) / calls


class SessionLoop:
    """The Session's own program run by its C timing loop (`Session.time_runs`): the program's
    time without Python, to set against the cffi call (the call path's cost) and against the
    embedded library (the same model generated for embedding)."""

    def __init__(self, sess, fetch, feed: dict):
        self.sess, self.fetch, self.feed, self.calls = sess, fetch, feed, 1

    def calibrate(self, round_s: float) -> None:
        per_call = self.sess.time_runs(self.fetch, self.feed, runs=20)
        self.calls = max(1, int(round_s / max(per_call, 1e-9)))

    def round(self) -> float:
        return self.sess.time_runs(self.fetch, self.feed, runs=self.calls)


def tfc_ways(w: dict, x: np.ndarray, weights: list) -> tuple[dict, np.ndarray, object]:
    from tfc.client.request import RunRequest

    graph, sess, sigs = models_tfc.loaded_session(w, weights)
    with graph.as_default():
        features = sigs["predict"]["inputs"]["features"]
        probs = sigs["predict"]["outputs"]["probabilities"]
        call = sess.make_callable(probs, [features])
        expected = np.asarray(call(x))
        # the program Session.run calls, called directly: what Python cannot go below
        program = sess._program(RunRequest(graph, probs, {features: x}, sess._iterators))
        values = RunRequest(graph, probs, {features: x}, sess._iterators).feed_values

        def direct():
            rc = program(values)[0]
            if rc != 0:
                raise program.error(rc, graph)

        direct()
    ways = {
        "Session.run (make_callable)": PyWay(lambda: call(x)),
        "cffi call": PyWay(direct),
        "Session's program, C loop": SessionLoop(sess, probs, {features: x}),
    }
    return ways, expected, sess


def ort_way(w: dict, x: np.ndarray, weights: list) -> tuple[PyWay, np.ndarray, str]:
    import onnxruntime as ort
    from suite.runners.ort_runner import build_model

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(build_model(w, weights), opts, providers=["CPUExecutionProvider"])
    xo = layouts.images_nchw(x) if w["model"] == "lenet" else np.ascontiguousarray(x)
    feed = {"x": xo}
    out = sess.run(None, feed)[0]
    return PyWay(lambda: sess.run(None, feed)), out, f"ONNX Runtime {ort.__version__}"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def measure(w: dict, args: argparse.Namespace, tmp: Path) -> dict:
    weights = models_tfc.initial_weights(w)
    x = np.random.default_rng(0).random((1, *workloads.input_shape(w)), dtype=np.float32)
    ways, expected, sess = tfc_ways(w, x, weights)
    embedded = Embedded(w, x, tmp, args.cc)
    got = embedded.run(1)[0]
    np.testing.assert_allclose(got, expected.ravel(), rtol=1e-4, atol=1e-6)
    ways["embedded C (predict loop)"] = embedded
    peer = None
    try:
        ort_w, ort_out, peer = ort_way(w, x, weights)
    except ImportError as e:
        print(f"ONNX Runtime not measured: {e}", file=sys.stderr)
    else:
        np.testing.assert_allclose(ort_out, expected, rtol=1e-4, atol=1e-6)
        ways[peer] = ort_w
    round_s = args.round_ms * 1e-3
    for way in ways.values():
        way.calibrate(round_s)
    samples: dict[str, list[float]] = {name: [] for name in ways}
    loads = []
    for _ in range(args.rounds):
        with LoadProbe() as probe:
            for name, way in ways.items():
                samples[name].append(way.round())
        loads.append(probe.other_cpus)
    sess.close()
    medians = {name: statistics.median(s) for name, s in samples.items()}
    return {
        "workload": w,
        "medians": medians,
        "spread": {n: (min(s), max(s)) for n, s in samples.items()},
        "peer": peer,
        "other_load": statistics.mean(v for v in loads if v is not None) if any(loads) else None,
        "cflags": " ".join(embedded.cflags),
    }


def table(results: list[dict]) -> str:
    lines = [
        f"| model | way | us per inference (min-max of rounds) | vs ONNX Runtime | <= {TARGET}x |",
        "|---|---|---:|---:|---|",
    ]
    for r in results:
        peer = r["peer"]
        ref = r["medians"].get(peer) if peer else None
        for name, t in r["medians"].items():
            lo, hi = r["spread"][name]
            ratio = f"{t / ref:.2f}x" if ref and name != peer else ""
            verdict = ("met" if t / ref <= TARGET else "not met") if ratio else ""
            lines.append(
                f"| {r['workload']['title']} | {name} | {t * 1e6:.1f} "
                f"({lo * 1e6:.1f}-{hi * 1e6:.1f}) | {ratio} | {verdict} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.tiny:
        args.rounds, args.round_ms = min(args.rounds, 3), min(args.round_ms, 10.0)
    if shutil.which(args.cc) is None:
        sys.exit(f"no C compiler {args.cc!r} for the embedded library's driver (--cc)")
    before = loadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="tfc-b1-") as tmp:
        for w in select(args):
            print(f"{w['title']} ...", file=sys.stderr, flush=True)
            results.append(measure(w, args, Path(tmp)))
    print(
        f"batch-1 inference, 1 thread, median of {args.rounds} interleaved rounds of "
        f"~{args.round_ms:.0f} ms per way; embedded C built with {results[0]['cflags']}"
    )
    print()
    print(table(results))
    print()
    others = [r["other_load"] for r in results if r["other_load"] is not None]
    print(
        f"load average before/after: {before} / {loadavg()} ({os.cpu_count()} CPUs); other "
        "processes' load during the rounds: "
        + (f"{statistics.mean(others):.2f} CPUs" if others else "n/a")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
