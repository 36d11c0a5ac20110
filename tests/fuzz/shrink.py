"""Shrinking a failing case: delta debugging over its statements, fetches and feed shapes.

Each step proposes a smaller case and keeps it when it still fails the same way under the same
configuration (the same kind of failure; for a crash, the same first line of the error):
- fetch only one of the values (the one that differs, when one does), then the earliest
  computed value that still fails;
- drop the statements nothing fetched reads, any statement (its values become feeds holding
  what the interpreter computed for them), chunks of statements at once, then one by one;
- shrink each feed's dims (to 1, halved) while the statements still build;
- make the feeds' values small integers where that keeps the failure.
Every proposal compiles a program, so the budget of proposals is bounded.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import numpy as np

from .case import Case, Stmt
from .check import Finding, check_one
from .run import Config, build_batch, interpret


class Shrinker:
    def __init__(self, finding: Finding, budget: int = 250, seconds: float = 600.0) -> None:
        self.finding = finding
        self.config = finding.config
        self.signature = finding.signature()
        self.budget = budget
        self.deadline = time.monotonic() + seconds
        self.tries = 0

    def fails(self, case: Case) -> bool:
        if self.tries >= self.budget or time.monotonic() > self.deadline:
            return False
        self.tries += 1
        try:
            found = _check(case, self.config, self.finding)
        except Exception:  # noqa: BLE001 - a proposal that does not even build
            return False
        return found is not None and found.signature() == self.signature

    def shrink(self) -> Case:
        case = self.finding.case.copy()
        case = self._one_fetch(case)
        case = _dead_code(case)
        case = self._earliest_fetch(case)
        for step in (self._chunks, self._statements, self._shapes, self._values, self._chunks):
            case = step(case)
            case = _dead_code(case)
        return case

    # -- steps -------------------------------------------------------------------------------------
    def _one_fetch(self, case: Case) -> Case:
        named = re.match(r"fetch (\w+):", self.finding.message)
        order = ([named.group(1)] if named else []) + [n for n in case.fetch]
        for name in dict.fromkeys(order):
            trial = _dead_code(case.copy(fetch=[name]))
            if self.fails(trial):
                return trial
        return case

    def _earliest_fetch(self, case: Case) -> Case:
        """Fetch the first computed value that still fails instead: what read the wrong value
        goes (a mismatch in Sub shows in every op after it)."""
        if len(case.fetch) != 1:
            return case
        for stmt in case.stmts:
            if stmt.kind == "feed":
                continue
            for name in stmt.out:
                if name in case.fetch:
                    return case
                trial = _dead_code(case.copy(fetch=[name]))
                if self.fails(trial):
                    return trial
        return case

    def _chunks(self, case: Case) -> Case:
        """Cut runs of statements at once, halving the run length (ddmin's coarse steps)."""
        size = max(1, len(case.stmts) // 2)
        while size >= 2:
            i = 0
            while i < len(case.stmts):
                trial = _without(case, range(i, min(i + size, len(case.stmts))))
                if trial is not None and self.fails(trial):
                    case = trial
                else:
                    i += size
            size //= 2
        return case

    def _statements(self, case: Case) -> Case:
        i = len(case.stmts) - 1
        while i >= 0:
            if i < len(case.stmts) and case.stmts[i].kind not in ("feed", "var"):
                trial = _without(case, [i])
                if trial is not None and self.fails(trial):
                    case = _dead_code(trial)
                    i = min(i, len(case.stmts))
            i -= 1
        return case

    def _shapes(self, case: Case) -> Case:
        # a size that several feeds share (a product's inner dim) shrinks in all of them at once
        sizes = sorted({d for v in case.values.values() for d in v.shape if d > 1}, reverse=True)
        for size in sizes:
            for n in (1, (size + 1) // 2):
                values = {k: _cut_dims(v, size, n) for k, v in case.values.items()}
                trial = case.copy(values=values)
                if n < size and self.fails(trial):
                    case = trial
                    break
        for name in list(case.values):
            for axis in range(case.values[name].ndim):
                for size in (1, None):
                    value = case.values[name]
                    if axis >= value.ndim or value.shape[axis] <= 1:
                        break
                    n = 1 if size == 1 else (value.shape[axis] + 1) // 2
                    trial = case.copy(values={**case.values, name: np.take(value, range(n), axis)})
                    if self.fails(trial):
                        case = trial
        return case

    def _values(self, case: Case) -> Case:
        for name, value in list(case.values.items()):
            if value.dtype.kind != "f":
                continue
            for simpler in (np.ones_like(value), np.round(value)):
                if np.array_equal(simpler, value):
                    continue
                trial = case.copy(values={**case.values, name: simpler.astype(value.dtype)})
                if self.fails(trial):
                    case = trial
                    break
        return case


def _cut_dims(value: np.ndarray, size: int, n: int) -> np.ndarray:
    """`value` with every dim of `size` cut to its first `n` entries."""
    for axis, d in enumerate(value.shape):
        if d == size:
            value = np.take(value, range(n), axis)
    return value


def _check(case: Case, config: Config | None, finding: Finding) -> Finding | None:
    if config is None:  # the interpreter's own failure
        from .check import Report, check_cases

        report = Report()
        check_cases([case], [], report)
        return report.findings[0] if report.findings else None
    return check_one(case, config)


def _dead_code(case: Case) -> Case:
    """Without the statements no fetch and no target reads (feeds and variables included)."""
    needed = set(case.fetch) | set(case.targets)
    keep = []
    for stmt in reversed(case.stmts):
        if needed & set(stmt.out) or stmt.kind == "train":
            keep.append(stmt)
            needed |= stmt.reads()
            needed |= _string_names(stmt)
    keep.reverse()
    names = {n for s in keep for n in s.out}
    values = {k: v for k, v in case.values.items() if k in names}
    return case.copy(stmts=keep, values=values, fetch=[f for f in case.fetch if f in names])


def _string_names(stmt: Stmt) -> set[str]:
    """feed("v1") and var("v1") name their value in a string."""
    return set(re.findall(r'(?:feed|var)\("(\w+)"\)', stmt.expr))


def _without(case: Case, indices) -> Case | None:
    """The case without the statements at `indices`: the values they made, where later
    statements read them, become feeds holding what the interpreter computes for them."""
    indices = set(indices)
    removed = [case.stmts[i] for i in indices if case.stmts[i].kind not in ("feed", "var")]
    if not removed:
        return None
    outs = [n for s in removed for n in s.out]
    read_later = set().union(
        *(s.reads() for j, s in enumerate(case.stmts) if j not in indices), set(case.fetch)
    )
    wanted = [n for n in outs if n in read_later]
    values = _values_of(case, wanted) if wanted else {}
    if values is None:
        return None
    stmts = []
    for j, s in enumerate(case.stmts):
        if j in indices:
            if s.kind in ("feed", "var"):
                stmts.append(s)
            else:
                stmts += [Stmt((n,), f'feed("{n}")', "feed") for n in s.out if n in values]
        else:
            stmts.append(s)
    fetch = [f for f in case.fetch if f not in outs or f in values]
    if not fetch and not any(s.kind == "train" for s in stmts):
        return None
    return case.copy(stmts=stmts, values={**case.values, **values}, fetch=fetch)


def _values_of(case: Case, names: list[str]) -> dict[str, np.ndarray] | None:
    """What the interpreter computes for `names` (None when one is not a tensor)."""
    probe = case.copy(fetch=list(names), stmts=[s for s in case.stmts if s.kind != "train"])
    try:
        batch = build_batch([_dead_code(probe)])
        out, _ = interpret(batch)
    except Exception:  # noqa: BLE001 - not a value the interpreter gives
        return None
    if out.error is not None:
        return None
    got = {name: value for (_, name, _), value in zip(batch.fetches, out.values)}
    return got if set(got) == set(names) else None


def shrink(finding: Finding, log: Callable[[str], None] = lambda s: None, **kw) -> Case:
    shrinker = Shrinker(finding, **kw)
    case = shrinker.shrink()
    before = len(finding.case.stmts)
    log(f"shrunk {before} -> {len(case.stmts)} statements in {shrinker.tries} tries")
    return case
