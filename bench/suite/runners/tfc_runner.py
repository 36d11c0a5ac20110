"""tfc: the compiled program called from Python (the C entry point through cffi, what
Session.run calls after resolving its feeds), Session.run itself, and for `native` workloads
the `train` executable of `tfc compile`, timed by its own progress lines."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import tfc as tf
from suite import data as bench_data
from suite import models_tfc
from suite.measure import LoadProbe, Timing, time_steps
from suite.runners import cross_entropy, result
from tfc.aot import TARGET_FLAGS
from tfc.client.request import RunRequest

VERSION = f"tfc {getattr(tf, '__version__', '')}".strip()


def run_session(w: dict, d: dict, threads: int, plan) -> list[dict]:
    graph, sess, sigs = models_tfc.loaded_session(w, d["weights"])
    with graph.as_default():
        train = sigs["train"]
        features, labels = train["inputs"]["features"], train["inputs"]["labels"]
        if w["mode"] == "train":
            fetches = [train["loss"], train["train_op"]]
        else:
            fetches = sigs["predict"]["outputs"]["probabilities"]
        feeds = []
        for i in range(bench_data.N_BATCHES):
            x, y = bench_data.batch(d, w, i)
            feeds.append({features: x, labels: y} if w["mode"] == "train" else {features: x})
        first = sess.run(fetches, feeds[0])  # compiles; step 1
        y0 = bench_data.batch(d, w, 0)[1]
        loss1 = first[0] if w["mode"] == "train" else cross_entropy(first, y0)
        n = len(feeds)
        run = time_steps(lambda i: sess.run(fetches, feeds[i % n]), lambda out: None, plan)
        try:
            call_step = _program_call(graph, sess, fetches, feeds)
        except Exception as e:  # Session internals changed: Session.run is tfc's row then
            rows = [result("tfc", run, loss1, VERSION, f"Session.run (program call: {e})")]
        else:
            call = time_steps(call_step, lambda out: None, plan)
            rows = [
                result("tfc", call, loss1, VERSION, "compiled program called through cffi"),
                result("tfc Session.run", run, loss1, VERSION),
            ]
        if plan.profile_s > 0:
            rows[0]["profile"] = _profile(sess, fetches, feeds[0], rows[0]["ms"], plan)
        sess.close()
    return rows


def _program_call(graph, sess, fetches, feeds):
    """A step that calls the compiled program of `sess.run(fetches, feed)` directly (and
    raises the program's error, as Session.run would)."""
    requests = [RunRequest(graph, fetches, f, sess._iterators) for f in feeds]
    program = sess._program(requests[0])
    values = [r.feed_values for r in requests]
    n = len(values)

    def step(i):
        rc = program(values[i % n])[0]
        if rc != 0:
            raise program.error(rc, graph)

    return step


def _profile(sess, fetches, feed, ms: float, plan) -> str:
    """The per-kernel table of Session.profile (the program's profile build), slowest first."""
    runs = max(3, min(500, int(plan.profile_s / max(ms * 1e-3, 1e-6))))
    try:
        return sess.profile(fetches, feed, runs=runs).table(limit=12)
    except Exception as e:  # the profile is an extra: its failure must not lose the timing
        return f"no profile: {type(e).__name__}: {e}"


STEP_LINE = re.compile(r"^step (\d+)  loss (\S+)  (\d+) examples/s$", re.M)


def _train(exe: Path, data: Path, ckpt: Path, steps: int, log_every: int) -> list[tuple]:
    out = subprocess.run(
        [
            str(exe),
            "--data",
            str(data),
            "--steps",
            str(steps),
            "--log-every",
            str(log_every),
            "--no-shuffle",
            "--save-every",
            "0",
            "--checkpoint-dir",
            str(ckpt),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [(int(s), float(loss), float(rate)) for s, loss, rate in STEP_LINE.findall(out)]


# native runs stay short: after ~80k Adam steps beta2**t is a subnormal float, which slows
# any CPU code down; each round is a fresh process instead
MAX_WINDOW_STEPS = 20_000


def run_native(w: dict, d: dict, threads: int, plan) -> list[dict]:
    b = w["batch"]
    with tempfile.TemporaryDirectory(prefix="tfc-bench-") as tmp:
        tmp = Path(tmp)
        compiled = tf.compile(
            models_tfc.signatures_function(w), tmp / "model", batch=b, name="bench"
        )
        rows = np.column_stack([d["x"].reshape(len(d["x"]), -1), d["y"]]).astype(np.float32)
        np.save(tmp / "data.npy", rows)
        runs = iter(range(10**6))

        def train(steps, log_every):
            return _train(
                compiled.train, tmp / "data.npy", tmp / f"ckpt{next(runs)}", steps, log_every
            )

        loss1 = train(1, 1)[0][1]
        probe_steps = 200
        rate = train(probe_steps, probe_steps)[-1][2]
        k = int(min(MAX_WINDOW_STEPS, max(10, plan.round_s * rate / b)))
        timing = Timing()
        for _ in range(plan.rounds):
            with LoadProbe() as probe:
                lines = train(2 * k, k)  # the first window warms up, the second is timed
            timing.add(b / lines[-1][2], probe)
    cflags = " ".join(TARGET_FLAGS["host"])
    return [
        result(
            "tfc native",
            timing,
            loss1,
            VERSION,
            f"`train` executable, {k} steps per timed window ({cflags})",
        )
    ]


def run(w: dict, d: dict, threads: int, plan) -> list[dict]:
    os.environ["TFC_NUM_THREADS"] = str(threads)
    rows = run_native(w, d, threads, plan) if w.get("native") else []
    return rows + run_session(w, d, threads, plan)


RUNNERS = {"tfc": run}
