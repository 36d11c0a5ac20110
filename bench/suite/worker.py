"""One framework in its own process: `python -m suite.worker JOB.json OUT.json`.

The job names the framework, the thread count, the workloads with their data files and the
measuring plan. The thread settings that must precede imports (environment variables) are
set by the parent; the runner applies its framework's own calls. Writes one result per
(workload, row): ok ones with timings, or status "missing" (the framework is not installed),
"error" (it failed on that workload: the message says why) or "skipped".
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback

from suite import data as bench_data
from suite.measure import Plan

MODULES = {
    "tfc": "tfc_runner",
    "torch": "torch_runner",
    "torch_compile": "torch_runner",
    "jax": "jax_runner",
    "tf": "tf_runner",
    "tf_xla": "tf_runner",
    "onnxruntime": "ort_runner",
}


def run_job(job: dict) -> list[dict]:
    framework, threads = job["framework"], job["threads"]
    plan = Plan(**job["plan"])
    base = {"framework": framework, "threads": threads}
    try:
        module = importlib.import_module(f"suite.runners.{MODULES[framework]}")
    except ImportError as e:
        return [
            dict(base, workload=w["name"], status="missing", reason=str(e))
            for w in job["workloads"]
        ]
    runner = module.RUNNERS[framework]
    results = []
    for w in job["workloads"]:
        entry = dict(base, workload=w["name"])
        try:
            rows = runner(w, bench_data.read(w["data"]), threads, plan)
        except Exception as e:  # one failing workload must not hide the others
            traceback.print_exc()
            results.append(dict(entry, status="error", reason=f"{type(e).__name__}: {e}"))
            continue
        results.extend(dict(entry, **row) for row in rows)
        for row in rows:
            print(
                f"  {framework:<13} {threads}t {w['name']:<16} {row['label']:<22} "
                f"{row['ms']:9.4f} ms  loss1 {row['loss1']:.6f}",
                file=sys.stderr,
                flush=True,
            )
    return results


def main(argv: list[str]) -> int:
    job_path, out_path = argv
    with open(job_path) as f:
        job = json.load(f)
    results = run_job(job)
    with open(out_path, "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
