"""Pre-packed weights: a Session's inference program with its products' weights kept packed
between calls (the default since issue 20) against the same program packing them on every call.

    python bench/prepack.py [--workloads mlp_infer_b64,...] [--rounds 15] [--round-ms 200]
    python bench/prepack.py --tiny      # a 12-48-24-5 MLP at b=4 and b=1, short rounds (tests)

Per workload of bench/run.py (its models and weights: bench/suite/models_tfc.py), at one
thread: the Session's program of `probabilities` (weights packed once, tfc_gemm_packed.h) and
the same graph compiled without `prepack_weights` (tfc_gemm_<t>_ex packs B on every call),
bound to the same session state and feeds, each run by the Session's C timing loop. Rounds are
interleaved (each round times both), so a drifting load weighs on both; the table gives the
median per call and the ratio packed / unpacked, in wall time and in this thread's CPU time
(which a shared machine's other processes inflate less: time spent descheduled is not in it),
with the other processes' load. The two programs' probabilities are checked to be the same
bits.
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
os.environ.setdefault("TFC_NUM_THREADS", "1")

from suite import models_tfc, workloads  # noqa: E402
from suite.measure import LoadProbe  # noqa: E402

DEFAULT = "mlp_infer_b64,lenet_infer_b64"


def _programs(w: dict):
    """(the session, its packed program, the unpacked one, the feed) of workload `w`, or None
    where the Session's program packs no weights."""
    import tfc as tf
    from tfc.client.request import RunRequest
    from tfc.client.session import CompiledProgram
    from tfc.codegen.targets import C
    from tfc.compiler import compile_program
    from tfc.ir.program import make_program_graph

    graph = tf.Graph()
    with graph.as_default():
        sigs = models_tfc.build(w)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    features = sigs["predict"]["inputs"]["features"]
    probs = sigs["predict"]["outputs"]["probabilities"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((w["batch"], *workloads.input_shape(w))).astype(np.float32)
    want = sess.run(probs, {features: x})
    request = RunRequest(graph, probs, {features: x}, sess._feed_sources)
    packed = sess._program(request)
    if not any(slot.kind == "pack" for slot in packed.lowered.slots):
        return None  # every product on a path that reads B in place (a threaded row, say)
    program_graph = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    compiled = compile_program(program_graph, sess._passes, C, name="unpacked", lock_updates=True)
    unpacked = CompiledProgram(sess, compiled.lowered, compiled.source)
    rc, (got,) = unpacked([x])
    if rc != 0 or not np.array_equal(got, want):
        raise SystemExit(f"{w['name']}: the unpacked program's probabilities differ")
    return sess, packed, unpacked, x


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--round-ms", type=float, default=200.0)
    parser.add_argument("--tiny", action="store_true", help="a tiny MLP, 3 short rounds")
    args = parser.parse_args(argv)
    if args.tiny:
        # wide enough that its hidden layers pack (more than one vector of columns)
        tiny = next(w for w in workloads.tiny() if w["mode"] == "infer")
        chosen = [
            dict(tiny, sizes=[12, 48, 24, 5], batch=batch, title=f"tiny MLP 12-48-24-5, b={batch}")
            for batch in (4, 1)
        ]
        args.rounds, args.round_ms = 3, 5.0
    else:
        chosen = workloads.by_names(args.workloads)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        "| workload | packed (ms) | unpacked (ms) | packed / unpacked | CPU time: packed / "
        "unpacked | other load (CPUs) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for w in chosen:
        programs = _programs(w)
        if programs is None:
            print(f"| {w['title']} | packs no weights | | | | |")
            continue
        sess, packed, unpacked, x = programs
        _, once = unpacked.time_loop([x], 3)
        runs = max(3, int(args.round_ms * 1e-3 / max(once, 1e-7)))
        times: dict[str, list[float]] = {"packed": [], "unpacked": []}
        cpu: dict[str, list[float]] = {"packed": [], "unpacked": []}
        loads = []
        for program in (packed, unpacked):  # warm-up
            program.time_loop([x], runs)
        for _ in range(args.rounds):
            with LoadProbe() as probe:
                for name, program in (("packed", packed), ("unpacked", unpacked)):
                    start = time.thread_time()
                    rc, seconds = program.time_loop([x], runs)
                    cpu[name].append((time.thread_time() - start) / runs)
                    if rc != 0:
                        raise SystemExit(f"{w['name']}: {name} failed with status {rc}")
                    times[name].append(seconds)
            loads.append(probe.other_cpus or 0.0)
        sess.close()
        p, u = statistics.median(times["packed"]), statistics.median(times["unpacked"])
        cpu_ratio = statistics.median(cpu["packed"]) / statistics.median(cpu["unpacked"])
        print(
            f"| {w['title']} | {p * 1e3:.4f} | {u * 1e3:.4f} | {p / u:.3f}x | {cpu_ratio:.3f}x "
            f"| {statistics.mean(loads):.2f} |"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
