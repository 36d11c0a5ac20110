"""Where a compiled program's time goes: the profile build's per-kernel times, and a loop in C.

`Session.profile(fetches, feed_dict, runs=100)` compiles the profile build of the program that
`run(fetches, feed_dict)` runs (compile_program(profile=True): every step timed with
CLOCK_MONOTONIC into a table in the library), runs it on the session's variables and returns a
`Profile`: per graph node its op types, seconds per run, share and GFLOP/s (FLOPs by tfc's
estimate, tfc/codegen/program_stats.py). `Session.time_runs` times the default build: a loop in
C calls the program `runs` times with the same feeds, so no Python runs between steps (what a
benchmark of a small model wants). This module holds what both read and report; the session
runs the programs, on its own state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cffi

from tfc.backend.cc import build_shared_library
from tfc.codegen.lower import LoweredProgram
from tfc.codegen.program_stats import node_flops
from tfc.ir.graph import Graph
from tfc.ops.fusion import is_fusion

__all__ = ["KernelTime", "Profile", "ProfileBuild", "loop_library"]


@dataclass(frozen=True)
class KernelTime:
    node: str  # the graph node the step computes (a fused node names its own)
    ops: str  # its op type; a fusion's lists the ops it computes: "Fusion(MatMul+Add+Relu)"
    seconds: float  # per run
    flops: int | None  # per run, by the op's FLOPs rule; None when it has none

    @property
    def gflops(self) -> float | None:
        if self.flops is None or self.seconds <= 0:
            return None
        return self.flops / self.seconds * 1e-9


@dataclass
class Profile:
    program: str
    runs: int
    total_seconds: float  # per run, from the entry of the program to its return, in C
    kernels: list[KernelTime]  # in schedule order: every step that runs a kernel or a copy

    @property
    def kernel_seconds(self) -> float:
        return sum(k.seconds for k in self.kernels)

    @property
    def flops(self) -> int:
        return sum(k.flops or 0 for k in self.kernels)

    def table(self, limit: int | None = None) -> str:
        """The kernels by time, slowest first (the first `limit` of them), and the totals."""
        total = self.total_seconds
        rows = sorted(self.kernels, key=lambda k: -k.seconds)
        lines = [
            f"profile of program {self.program}: {self.runs} runs, {total * 1e3:.4f} ms per run"
            f", {self.flops / total * 1e-9 if total > 0 else 0.0:.1f} GFLOP/s",
            f"  {'ms/run':>10} {'share':>6} {'GFLOP/s':>8}  node: op(s)",
        ]
        for k in rows[:limit]:
            share = 100 * k.seconds / total if total > 0 else 0.0
            rate = "" if k.gflops is None else f"{k.gflops:.1f}"
            lines.append(f"  {k.seconds * 1e3:>10.5f} {share:>5.1f}% {rate:>8}  {k.node}: {k.ops}")
        if limit is not None and len(rows) > limit:
            rest = sum(k.seconds for k in rows[limit:])
            share = 100 * rest / total if total > 0 else 0.0
            lines.append(
                f"  {rest * 1e3:>10.5f} {share:>5.1f}% {'':>8}  ({len(rows) - limit} more)"
            )
        outside = total - self.kernel_seconds
        lines.append(
            f"  {outside * 1e3:>10.5f} {100 * outside / total if total > 0 else 0.0:>5.1f}%"
            f" {'':>8}  outside the kernels (entry, exit, the timers)"
        )
        return "\n".join(lines) + "\n"


# -- the profile build --------------------------------------------------------------------------
_PROFILE_CDEF = """
int64_t {p}profile_steps(void);
const char *{p}profile_label(int64_t i);
int64_t {p}profile_read(int64_t *ns);
void {p}profile_reset(void);
"""


class ProfileBuild:
    """The profile build of one run signature: its planned graph and lowering, `program` (the
    session's loaded program of that build, run like any other) and the library's table of
    step times."""

    def __init__(self, graph: Graph, lowered: LoweredProgram, program: Any) -> None:
        self.graph = graph
        self.lowered = lowered
        self.program = program
        # the same cached library the program loaded: dlopen hands back the same handle
        path = build_shared_library(program.source, name=lowered.name)
        self._ffi = cffi.FFI()
        self._ffi.cdef(_PROFILE_CDEF.format(p=lowered.prefix))
        self._lib = self._ffi.dlopen(str(path))

    def _entry(self, name: str) -> Any:
        return getattr(self._lib, f"{self.lowered.prefix}{name}")

    def reset(self) -> None:
        """Zero the table: the runs after this one are the ones counted."""
        self._entry("profile_reset")()

    def profile(self, runs: int) -> Profile:
        """The table read after `runs` counted runs, as a Profile."""
        steps = self._entry("profile_steps")()
        ns = self._ffi.new("int64_t[]", steps + 1)
        counted = self._entry("profile_read")(ns)
        timed = [
            step
            for step in self.lowered.steps
            if step.kernels or step.copies or step.control is not None  # a loop: all of it
        ]
        if len(timed) != steps or counted != runs:
            raise RuntimeError(
                f"the profile table of {self.lowered.name} has {steps} steps and {counted} "
                f"runs, expected {len(timed)} and {runs}"
            )
        kernels = [
            KernelTime(
                step.node,
                _op_types(self.graph, step.node),
                ns[i] / runs * 1e-9,
                node_flops(self.graph, step.node) if step.kernels else 0,
            )
            for i, step in enumerate(timed)
        ]
        return Profile(self.lowered.name, runs, ns[steps] / runs * 1e-9, kernels)


def _op_types(graph: Graph, node: str) -> str:
    attrs = graph.node(node)
    if not is_fusion(attrs["op"]):
        return attrs["op"]
    ops = [m.op for m in attrs["attrs"]["members"]]
    update = attrs["attrs"].get("update")
    if update is not None:
        ops.append(update.op)
    return f"{attrs['op']}({'+'.join(dict.fromkeys(ops))})"


# -- a timing loop in C over the default build --------------------------------------------------
_LOOP_SOURCE = """\
/* tfc's timing loop: calls a compiled program's run entry `runs` times, timed in C. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <time.h>

typedef struct { char *msg; int64_t cap; const char *node; } tfc_error;
typedef int (*tfc_run_fn)(void *const *, const void *const *, void *const *,
                          const void *const *, void *, tfc_error *);

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

int tfc_time_runs(uintptr_t run, uintptr_t state, uintptr_t inputs, uintptr_t outputs,
                  uintptr_t consts, uintptr_t arena, uintptr_t err, int64_t runs, int64_t *ns) {
    tfc_run_fn fn = (tfc_run_fn)run;
    int64_t start = now_ns();
    for (int64_t i = 0; i < runs; ++i) {
        int rc = fn((void *const *)state, (const void *const *)inputs, (void *const *)outputs,
                    (const void *const *)consts, (void *)arena, (tfc_error *)err);
        if (rc != 0) return rc;
    }
    *ns = now_ns() - start;
    return 0;
}
"""
_LOOP_CDEF = """
int tfc_time_runs(uintptr_t run, uintptr_t state, uintptr_t inputs, uintptr_t outputs,
                  uintptr_t consts, uintptr_t arena, uintptr_t err, int64_t runs, int64_t *ns);
"""
_loop: list[tuple[cffi.FFI, Any]] = []


def loop_library() -> tuple[cffi.FFI, Any]:
    """(ffi, library) of the timing loop: tfc_time_runs(run entry, its six arguments as
    addresses, runs, &ns) calls the entry `runs` times and writes the nanoseconds they took."""
    if not _loop:
        ffi = cffi.FFI()
        ffi.cdef(_LOOP_CDEF)
        _loop.append((ffi, ffi.dlopen(str(build_shared_library(_LOOP_SOURCE, "time_runs")))))
    return _loop[0]
