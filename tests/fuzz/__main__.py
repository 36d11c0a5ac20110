"""The fuzzer's long mode: `python -m tests.fuzz --minutes 30` (from the repository root).

Generates batches of random graphs from a seed, runs each batch under the interpreter and every
configuration, shrinks each new kind of failure and writes it as a regression file (by default
into tests/fuzz/regressions/, which tests/test_fuzz.py replays). Prints the throughput and a
line per finding; exits 1 when something was found.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections import Counter
from pathlib import Path

from .case import write_regression
from .check import Report, check_cases, check_rotating
from .graphs import generate
from .ops import unlisted_ops
from .run import configs
from .shrink import shrink

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--minutes", type=float, default=10.0, help="stop after this long")
    p.add_argument("--graphs", type=int, default=None, help="stop after this many graphs")
    p.add_argument("--batch", type=int, default=300, help="graphs per compiled program")
    p.add_argument("--configs", default=None, help="comma-separated names (default: all)")
    p.add_argument("--opt", default=None, help="C optimization level of the pass variants")
    p.add_argument("--out", type=Path, default=REGRESSIONS, help="where regressions go")
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--start", type=int, default=0, help="index of the first graph")
    p.add_argument(
        "--rotate", action="store_true",
        help="every graph under all optimizations and one other configuration in turn (the "
        "suite's form, about four times the graphs per second) instead of under every one",
    )  # fmt: skip
    args = p.parse_args(argv)

    chosen = configs(args.opt)
    if args.configs:
        names = args.configs.split(",")
        chosen = [c for c in chosen if c.name in names]
    missing = unlisted_ops()
    if missing:
        print(f"ops without a row (not fuzzed): {', '.join(missing)}")
    deadline = time.monotonic() + args.minutes * 60
    report, rejected = Report(), Counter()
    seen: dict[str, int] = {}
    index, start, cpu_start = args.start, time.monotonic(), sum(os.times()[:4])
    while time.monotonic() < deadline and (args.graphs is None or index < args.graphs):
        count = args.batch if args.graphs is None else min(args.batch, args.graphs - index)
        cases = [generate(args.seed, i, rejected) for i in range(index, index + count)]
        before = len(report.findings)
        if args.rotate:
            base = next(c for c in chosen if c.name == "all")
            check_rotating(cases, base, [c for c in chosen if c is not base], report)
        else:
            check_cases(cases, chosen, report)
        index += count
        elapsed = time.monotonic() - start
        cpu = sum(os.times()[:4]) - cpu_start  # this process and the C compilers it ran
        print(
            f"seed {args.seed}: {report.graphs} graphs in {elapsed:.0f} s "
            f"({report.graphs / elapsed:.2f} graphs/s; {cpu:.0f} s of CPU, "
            f"{report.graphs / max(cpu, 1e-9):.2f} graphs per CPU second), "
            f"{len(report.findings)} findings",
            flush=True,
        )
        for finding in report.findings[before:]:
            key = f"{finding.config_name}|{finding.signature()}"
            seen[key] = seen.get(key, 0) + 1
            print("  " + finding.summary(), flush=True)
            if seen[key] > 1 or args.no_shrink:
                continue
            case = shrink(finding, log=lambda s: print("    " + s, flush=True))
            name = hashlib.sha1(key.encode()).hexdigest()[:8]
            path = args.out / f"{finding.config_name}_{finding.kind}_{name}.py"
            args.out.mkdir(parents=True, exist_ok=True)
            title = f"Found by the fuzzer ({finding.case.origin}), under '{finding.config_name}'."
            write_regression(case, path, title, f"{finding.kind}: {finding.headline()}")
            print(f"    wrote {path}", flush=True)
    print("seconds by stage:", {k: round(v, 1) for k, v in sorted(report.seconds.items())})
    if rejected:
        print("rows refused by the frontend (most often):", rejected.most_common(12))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
