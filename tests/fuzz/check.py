"""Comparing a batch's runs with the interpreter's, and finding which case a failure belongs to.

Values are compared in their dtype: bools and ints exactly; floats where the interpreter has a
NaN must have a NaN, an infinity the same infinity, and the rest agree within a tolerance that
grows with the case's depth (the inexact operations behind a value) and scales with the largest
magnitude among the values it is computed from (sums and products lose bits in proportion to
their terms, not to their result). A wrong index or a wrong broadcast misses by the values'
own size; rounding misses by a few parts in 10^4 of it at most.

A batch whose program fails to compile or to run is split in halves until the failing cases
are alone (a failure that needs two cases together is kept as the pair).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .case import Case
from .run import (
    Batch,
    Config,
    Outcome,
    Scale,
    build_batch,
    case_precision,
    interpret,
    run_compiled,
)

# allowed error per unit of depth, as a fraction of the magnitude of the values involved
TOLERANCE = {"float32": 2e-4, "float64": 1e-9}


@dataclass
class Finding:
    """One case that a configuration gets wrong (or the interpreter fails on)."""

    config: Config | None  # None: the interpreter's failure
    kind: str  # "crash" (compiling or running failed), "mismatch", "interp" (reference failed)
    message: str
    case: Case
    cases: list[Case] = field(default_factory=list)  # a failure needing several cases together

    def headline(self) -> str:
        """The message's telling line: a C compiler's first error, else the first line."""
        lines = self.message.splitlines()
        errors = [line.split("error:", 1)[1].strip() for line in lines if "error:" in line]
        return f"{lines[0].split(':')[0]}: {errors[0]}" if errors else lines[0]

    def signature(self) -> str:
        """What must stay the same while the case is shrunk: the kind, and for a failure its
        headline without numbers (sizes and names change as the case shrinks)."""
        if self.kind == "mismatch":
            return "mismatch"
        words = re.sub(r"'[^']*'|\d+", "_", self.headline())
        return f"{self.kind}:{words[:80]}"

    @property
    def config_name(self) -> str:
        return self.config.name if self.config is not None else "interpreter"

    def summary(self) -> str:
        return f"[{self.config_name}] {self.kind}: {self.headline()[:200]} ({self.case.origin})"


def mismatch(
    ref: np.ndarray, got: np.ndarray, depth: int, scale: float, precision: str | None = None
) -> str | None:
    """Why `got` is not `ref` (None: it is, within the tolerance of `precision`, the least
    precise float type the value is computed from, by default its own)."""
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.dtype != got.dtype:
        return f"dtype {got.dtype}, expected {ref.dtype}"
    if ref.shape != got.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    if ref.dtype.kind != "f":
        bad = ref != got
        if np.any(bad):
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            return f"{int(bad.sum())} of {ref.size} differ; at {i}: {got[i]!r}, expected {ref[i]!r}"
        return None
    ref, got = np.atleast_1d(ref), np.atleast_1d(got)
    nan_r, nan_g = np.isnan(ref), np.isnan(got)
    if np.any(nan_r != nan_g):
        i = tuple(int(k) for k in np.argwhere(nan_r != nan_g)[0])
        return f"NaN differs at {i}: {got[i]!r}, expected {ref[i]!r}"
    inf_r, inf_g = np.isinf(ref), np.isinf(got)
    if np.any(inf_r != inf_g) or np.any(ref[inf_r] != got[inf_r]):
        i = tuple(int(k) for k in np.argwhere((inf_r != inf_g) | (inf_r & (ref != got)))[0])
        return f"infinity differs at {i}: {got[i]!r}, expected {ref[i]!r}"
    finite = ~(nan_r | inf_r)
    if not np.any(finite):
        return None
    tol = TOLERANCE[precision or ref.dtype.name] * (1 + depth) * max(scale, 1e-30)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(finite, np.abs(got.astype(np.float64) - ref.astype(np.float64)), 0.0)
    if np.any(err > tol):
        i = tuple(int(k) for k in np.unravel_index(np.argmax(err), err.shape))
        return (
            f"{int((err > tol).sum())} of {ref.size} differ beyond {tol:.3g}; at {i}: "
            f"{got[i]!r}, expected {ref[i]!r}"
        )
    return None


def compare(batch: Batch, ref: Outcome, scales: dict[int, Scale], got: Outcome) -> dict[int, str]:
    """Per case, the first difference of `got` from `ref`."""
    wrong: dict[int, str] = {}
    for j, (i, name, _) in enumerate(batch.fetches):
        case = batch.cases[i]
        scale = scales.get(j, Scale(1.0, None))
        depth = case.depth.get(name, case.max_depth())
        why = mismatch(ref.values[j], got.values[j], depth, scale.magnitude, scale.precision)
        if why is not None and i not in wrong:
            wrong[i] = f"fetch {name}: {why}"
    for var, after in ref.variables.items():
        i = batch.owner.get(var)
        if i is None or i in wrong or var not in got.variables:
            continue
        case = batch.cases[i]
        scale = max(_magnitude(batch.variables[var]), _magnitude(after), 1.0)
        depth = 2 * case.max_depth() + 4
        why = mismatch(after, got.variables[var], depth, scale, case_precision(batch, i))
        if why is not None:
            wrong[i] = f"variable {var.split('/', 1)[1]} after the step: {why}"
    return wrong


def _magnitude(v: np.ndarray) -> float:
    v = np.asarray(v, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.abs(v).max()) if v.size else 0.0


# -- a batch through every configuration ---------------------------------------------------------
@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    graphs: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def add_time(self, key: str, seconds: float) -> None:
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds


def check_cases(cases: Sequence[Case], configs: Sequence[Config], report: Report) -> None:
    """Run `cases` as one batch under the interpreter and every configuration; findings go
    into `report` (cases the interpreter fails on are findings of kind "interp" and are left
    out of the comparison)."""
    cases = list(cases)
    report.graphs += len(cases)
    try:
        batch = build_batch(cases)
        ref, scales = interpret(batch)
    except Exception:  # noqa: BLE001 - a case that no longer builds: found below
        ref = None
    if ref is None or ref.error is not None:
        ok = _interpretable(cases, report)
        if not ok:
            return
        batch = build_batch(ok)
        ref, scales = interpret(batch)
    report.add_time("interpret", ref.seconds.get("interpret", 0.0))
    for config in configs:
        _check_config(batch, ref, scales, config, report)


def _interpretable(cases: list[Case], report: Report) -> list[Case]:
    try:
        batch = build_batch(cases)
    except Exception as e:  # noqa: BLE001 - a case that no longer builds
        if len(cases) == 1:
            report.findings.append(Finding(None, "interp", f"{type(e).__name__}: {e}", cases[0]))
            return []
        half = len(cases) // 2
        return _interpretable(cases[:half], report) + _interpretable(cases[half:], report)
    ref, _ = interpret(batch)
    if ref.error is None:
        return cases
    if len(cases) == 1:
        message = f"{type(ref.error).__name__}: {ref.error}"
        report.findings.append(Finding(None, "interp", message, cases[0]))
        return []
    half = len(cases) // 2
    return _interpretable(cases[:half], report) + _interpretable(cases[half:], report)


def _check_config(batch: Batch, ref: Outcome, scales, config: Config, report: Report) -> None:
    got = run_compiled(batch, config)
    for key, seconds in got.seconds.items():
        report.add_time(f"{config.name}:{key}", seconds)
    if got.error is not None:
        for cases, error, trace in _isolate(batch.cases, config):
            message = f"{type(error).__name__}: {error}\n{trace}"
            report.findings.append(Finding(config, "crash", message, cases[0], cases))
        return
    for i, why in compare(batch, ref, scales, got).items():
        report.findings.append(Finding(config, "mismatch", why, batch.cases[i]))


def _isolate(cases: list[Case], config: Config) -> list[tuple[list[Case], BaseException, str]]:
    """The smallest groups of `cases` whose program fails under `config`."""
    if len(cases) == 1:
        got = run_compiled(build_batch(cases), config)
        return [(cases, got.error, got.trace)] if got.error is not None else []
    half = len(cases) // 2
    found = []
    for part in (cases[:half], cases[half:]):
        got = run_compiled(build_batch(part), config)
        if got.error is not None:
            found += _isolate(part, config)
    if not found:  # only together
        got = run_compiled(build_batch(cases), config)
        return [(cases, got.error, got.trace)]
    return found


def check_one(case: Case, config: Config) -> Finding | None:
    """The finding of one case under one configuration (None: it agrees)."""
    report = Report()
    check_cases([case], [config], report)
    return report.findings[0] if report.findings else None


def check_rotating(
    cases: Sequence[Case], base: Config, others: Sequence[Config], report: Report
) -> None:
    """Every case under `base`; each of `others` on its share of the cases (one slice each):
    the suite's bounded form of the full matrix that the long mode runs."""
    cases = list(cases)
    n = len(others)
    for k, config in enumerate(others):
        part = cases[k * len(cases) // n : (k + 1) * len(cases) // n]
        check_cases(part, [base, config], report)
