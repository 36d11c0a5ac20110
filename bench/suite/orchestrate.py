"""Runs each framework in its own worker process with its thread settings, and collects the
results; a worker that crashes or runs past its time limit is reported, not fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from suite.measure import Plan

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent

# which workloads each framework runs: peers without training APIs skip training, etc.
TRAINING = ("tfc", "torch", "torch_compile", "jax", "tf", "tf_xla")
INFERENCE = ("tfc", "onnxruntime", "torch", "jax")
FRAMEWORKS = ("tfc", "torch", "torch_compile", "jax", "tf", "tf_xla", "onnxruntime")


def applies(framework: str, w: dict) -> bool:
    if w["mode"] == "infer":
        return framework in INFERENCE
    if framework == "torch_compile" and w.get("native"):
        return False  # a 120-FLOP model: compile time for nothing the issue asks
    return framework in TRAINING


def thread_env(threads: int) -> dict:
    """Environment variables that set thread counts before a framework is imported."""
    n = str(threads)
    multi = "true" if threads > 1 else "false"
    return {
        "TFC_NUM_THREADS": n,
        "OMP_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
        "OPENBLAS_NUM_THREADS": n,
        "NPROC": n,
        "XLA_FLAGS": f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={n}",
        "TF_NUM_INTRAOP_THREADS": n,
        "TF_NUM_INTEROP_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def run_worker(
    framework: str,
    threads: int,
    workloads: list[dict],
    plan: Plan,
    timeout_s: float,
    extra_env: dict | None = None,
    python: str | None = None,
) -> list[dict]:
    """Run one framework's worker on `workloads` (each with its "data" file), with `python`
    (default: this interpreter)."""
    base = {"framework": framework, "threads": threads}
    env = dict(os.environ)
    env.update(thread_env(threads))
    env.update(extra_env or {})
    path = [str(BENCH), str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(path)
    with tempfile.TemporaryDirectory(prefix="tfc-bench-job-") as tmp:
        job, out = Path(tmp) / "job.json", Path(tmp) / "out.json"
        job.write_text(
            json.dumps(
                {
                    "framework": framework,
                    "threads": threads,
                    "workloads": workloads,
                    "plan": asdict(plan),
                }
            )
        )
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [python or sys.executable, "-m", "suite.worker", str(job), str(out)],
                env=env,
                cwd=str(BENCH),
                timeout=timeout_s,
                capture_output=True,
                text=True,
            )
        except subprocess.TimeoutExpired:
            reason = f"worker ran past its {timeout_s:.0f} s limit"
            return [
                dict(base, workload=w["name"], status="error", reason=reason) for w in workloads
            ]
        elapsed = time.perf_counter() - start
        sys.stderr.write(_progress_lines(proc.stderr))
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            reason = f"worker exited with status {proc.returncode}: {tail}"
            return [
                dict(base, workload=w["name"], status="error", reason=reason) for w in workloads
            ]
        results = json.loads(out.read_text())
    for r in results:
        r["worker_s"] = round(elapsed, 1)
    return results


def _progress_lines(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("  ")]
    return "".join(line + "\n" for line in lines)
