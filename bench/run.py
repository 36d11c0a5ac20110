"""Benchmark tfc against PyTorch, JAX, TensorFlow and ONNX Runtime on the workloads of issue 5.

    python bench/run.py            # everything, 1 and 2 threads: writes bench/RESULTS.md,
                                   # bench/out/results.json (not committed) and the table
                                   # in docs/performance.md (about 10 minutes on 2 cores)
    python bench/run.py --quick    # short rounds, 1 thread, no torch.compile: prints the
                                   # report (under a minute); --markdown/--json to keep it

Each framework runs in its own process with its thread settings; a peer that is not installed
(`pip install -e '.[bench]'`) is reported as missing. See bench/suite/ for what each part does.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import data, marked_block, orchestrate, peak, report, workloads  # noqa: E402
from suite.measure import LoadProbe, Plan  # noqa: E402

BENCH = Path(__file__).resolve().parent
PERFORMANCE_PAGE = BENCH.parent / "docs" / "performance.md"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="short rounds, 1 thread, no torch.compile, files only when asked",
    )
    p.add_argument(
        "--frameworks", help="comma-separated subset of: " + ",".join(orchestrate.FRAMEWORKS)
    )
    p.add_argument("--workloads", help="comma-separated workload names (default: all)")
    p.add_argument("--tiny", action="store_true", help="a tiny MLP instead (for tests)")
    p.add_argument("--threads", help="comma-separated thread counts (default 1,2; quick: 1)")
    p.add_argument(
        "--markdown", help="where to write the report (default bench/RESULTS.md; quick: none)"
    )
    p.add_argument(
        "--json",
        help="where to write the results document (default bench/out/results.json; quick: none)",
    )
    p.add_argument(
        "--no-docs",
        action="store_true",
        help="leave docs/performance.md alone (a full run updates its results table)",
    )
    p.add_argument(
        "--render",
        metavar="RESULTS_JSON",
        help="measure nothing: write the report (and docs table) of a saved run",
    )
    p.add_argument("--timeout", type=float, default=300, help="seconds per worker process")
    p.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="FRAMEWORK=INTERPRETER",
        help="run that framework's workers with another Python (a venv holding a peer that "
        "cannot share this one's packages, e.g. tf=venvs/tf/bin/python); repeatable",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=600,
        help="seconds for the whole run: workers not started by then are skipped",
    )
    return p.parse_args(argv)


def parse_interpreters(pairs: list[str]) -> dict[str, str]:
    """--python's FRAMEWORK=INTERPRETER pairs as {framework: interpreter}."""
    out = {}
    for pair in pairs:
        framework, sep, python = pair.partition("=")
        if not sep or framework not in orchestrate.FRAMEWORKS or not python:
            sys.exit(
                f"--python {pair!r}: expected FRAMEWORK=INTERPRETER with FRAMEWORK one of "
                + ", ".join(orchestrate.FRAMEWORKS)
            )
        if not Path(python).exists():
            sys.exit(f"--python {pair!r}: no interpreter at {python}")
        out[framework] = python
    return out


def _without_interpreter_paths(argv: list[str]) -> list[str]:
    """argv with each --python's interpreter path replaced by a placeholder: the report is
    committed, and a path of the measuring machine means nothing elsewhere."""
    out, after_flag = [], False
    for a in argv:
        if after_flag or a.startswith("--python="):
            prefix = "--python=" if a.startswith("--python=") else ""
            framework = a.removeprefix(prefix).partition("=")[0]
            a = f"{prefix}{framework}=PYTHON"
        after_flag = a == "--python"
        out.append(a)
    return out


def machine(versions: list[str]) -> dict:
    cpu = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
        fields = dict(line.split(":", 1) for line in info[:30] if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        flags = set(fields.get("flags", "").split())
        cpu = (
            f"{fields.get('model name', cpu)} (family {fields.get('cpu family', '?')}, "
            f"model {fields.get('model', '?')})"
        )
    except OSError:
        pass
    isa = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    return {
        "cpu": cpu + (f" [{' '.join(isa)}]" if isa else ""),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "versions": versions,
    }


def select(args: argparse.Namespace) -> tuple[list[dict], list[str], list[int]]:
    ws = workloads.tiny() if args.tiny else workloads.full()
    if args.workloads:
        names = args.workloads.split(",")
        unknown = set(names) - {w["name"] for w in ws}
        if unknown:
            sys.exit(
                f"unknown workload(s): {', '.join(sorted(unknown))}; known: "
                + ", ".join(w["name"] for w in ws)
            )
        ws = [w for w in ws if w["name"] in names]
    frameworks = list(orchestrate.FRAMEWORKS)
    if args.quick:
        frameworks.remove("torch_compile")  # half a minute of compiling per model
    if args.frameworks:
        frameworks = args.frameworks.split(",")
        unknown = set(frameworks) - set(orchestrate.FRAMEWORKS)
        if unknown:
            sys.exit(
                f"unknown framework(s): {', '.join(sorted(unknown))}; known: "
                + ", ".join(orchestrate.FRAMEWORKS)
            )
    threads = [int(t) for t in (args.threads or ("1" if args.quick else "1,2")).split(",")]
    return ws, frameworks, threads


def run(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    ws, frameworks, threads = select(args)
    interpreters = parse_interpreters(args.python)
    plan = Plan.quick() if args.quick else Plan()
    print("FMA peak ...", file=sys.stderr, flush=True)
    with LoadProbe() as probe:
        fma = peak.measure(runs=2 if args.quick else 5)
    fma["load"] = probe.other_cpus
    print(f"  {fma.get('gflops') or 0:.1f} GFLOP/s per core", file=sys.stderr)
    results = []
    with tempfile.TemporaryDirectory(prefix="tfc-bench-data-") as tmp:
        for w in ws:
            d = data.make(w)
            w["flops"] = workloads.flops(w)
            w["reference_loss"] = data.reference_loss(d, w)
            w["data"] = str(data.write(w, Path(tmp)))
        for t in threads:
            for fw in frameworks:
                mine = [
                    w for w in ws if orchestrate.applies(fw, w) and not (t > 1 and w.get("native"))
                ]
                if not mine:
                    continue
                print(f"{fw}, {t} thread(s): {len(mine)} workload(s)", file=sys.stderr, flush=True)
                left = args.budget - (time.perf_counter() - start)
                if left <= 0:
                    reason = f"the run's {args.budget:.0f} s budget was spent (--budget)"
                    results += [
                        {
                            "framework": fw,
                            "threads": t,
                            "workload": w["name"],
                            "status": "skipped",
                            "reason": reason,
                        }
                        for w in mine
                    ]
                    continue
                timeout = min(args.timeout, max(60.0, left + 60))
                rows = orchestrate.run_worker(
                    fw, t, mine, plan, timeout, python=interpreters.get(fw)
                )
                for r in rows:
                    if "reason" in r:
                        r["reason"] = r["reason"].replace(tmp, "<tmp>")
                results += rows
    for w in ws:
        del w["data"]
    versions = sorted({r["version"] for r in results if r.get("status") == "ok"})
    argv = sys.argv[1:] if args.argv is None else args.argv
    cmd = "python bench/run.py" + "".join(f" {a}" for a in _without_interpreter_paths(argv))
    return {
        "command": cmd,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "elapsed_s": time.perf_counter() - start,
        "quick": bool(args.quick),
        "threads": threads,
        "machine": machine(versions),
        "peak": fma,
        "plan": vars(plan) if hasattr(plan, "__dict__") else {},
        "workloads": ws,
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.argv = argv
    if args.render:
        doc = json.loads(Path(args.render).read_text())
        args.quick = doc.get("quick", False)
    else:
        doc = run(args)
    text = report.render(doc, workloads.SCALING_TARGET if not args.tiny else None)
    markdown = args.markdown or (None if args.quick else str(BENCH / "RESULTS.md"))
    json_path = args.json or (
        None if args.quick or args.render else str(BENCH / "out" / "results.json")
    )
    # an existing report with markers keeps what is written around them (RESULTS.md's history)
    if markdown and not (Path(markdown).exists() and marked_block.update(Path(markdown), text)):
        Path(markdown).write_text(text + "\n")
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(doc, indent=1) + "\n")
    full = (
        not any(
            flag in doc.get("command", "")
            for flag in ("--quick", "--tiny", "--workloads", "--frameworks", "--threads")
        )
        if args.render
        else not (args.quick or args.tiny or args.workloads or args.frameworks or args.threads)
    )
    if full and not args.no_docs:
        block = report.summary(doc, workloads.SCALING_TARGET)
        if marked_block.update(PERFORMANCE_PAGE, block):
            print(
                f"updated the table in {PERFORMANCE_PAGE.relative_to(BENCH.parent)}",
                file=sys.stderr,
            )
    print(text)
    print(
        f"\n{doc['elapsed_s']:.0f} s"
        + (f"; wrote {markdown}" if markdown else "")
        + (f" and {json_path}" if json_path else ""),
        file=sys.stderr,
    )
    mismatches = report.loss_mismatches(doc)
    if mismatches:
        print("STEP-1 LOSS MISMATCH: " + "; ".join(mismatches), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
