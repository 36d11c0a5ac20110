"""Where a compiled program's time goes: per-kernel wall times, and a timing loop run in C.

`profile(sess, fetches, feed_dict, runs=100)` (or `sess.profile(...)`) compiles the profile
build of the program `sess.run(fetches, feed_dict)` runs (compile_program(profile=True): every
step timed with CLOCK_MONOTONIC into a table in the library), runs it `runs` times on the
session's variables, and returns a `Profile`: per graph node its op types, seconds per run,
share and GFLOP/s (FLOPs by tfc's estimate, tfc/program_stats.py). `profile_model` does the
same for one signature of a model file (`tfc inspect MODEL.py --profile`).

`time_runs(sess, fetches, feed_dict, runs)` times the default build: a loop in C calls the
program `runs` times with the same feeds, so no Python runs between steps (what a benchmark of
a small model wants). Both run the program for real: a training step trains.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import cffi
import numpy as np

from tfc.backend.cc import build_shared_library
from tfc.client.config import session_threads
from tfc.client.request import RunRequest
from tfc.client.session import CompiledProgram, Session, program_name
from tfc.codegen.lower import LoweredProgram
from tfc.compiler import compile_program
from tfc.ir.graph import Graph
from tfc.ir.program import make_program_graph
from tfc.ops.fusion import is_fusion
from tfc.tools.program_stats import node_flops

__all__ = ["KernelTime", "Profile", "profile", "profile_model", "time_runs"]


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


@dataclass
class _Profiled:
    graph: Graph
    lowered: LoweredProgram
    program: CompiledProgram
    ffi: cffi.FFI
    lib: Any


# the profile builds a session compiled, by run signature (they bind the session's buffers)
_profiled: weakref.WeakKeyDictionary[Session, dict[tuple, _Profiled]] = weakref.WeakKeyDictionary()


def _profiled_program(sess: Session, request: RunRequest) -> _Profiled:
    cache = _profiled.setdefault(sess, {})
    key = (request.signature(), sess.graph.version)
    entry = cache.get(key)
    if entry is None:
        graph = make_program_graph(sess.graph, request.fetch_keys, request.targets, request.feeds)
        name = program_name(request.fetch_keys, request.targets)
        compiled = compile_program(
            graph, sess._passes, name=name, profile=True, verify=sess._verify
        )
        graph, lowered, source = compiled.graph, compiled.lowered, compiled.source
        program = CompiledProgram(sess, lowered, source)
        # the same cached library CompiledProgram loaded: dlopen hands back the same handle
        path = build_shared_library(source, name=lowered.name)
        ffi = cffi.FFI()
        ffi.cdef(_PROFILE_CDEF.format(p=lowered.prefix))
        entry = cache[key] = _Profiled(graph, lowered, program, ffi, ffi.dlopen(str(path)))
    return entry


def _op_types(graph: Graph, node: str) -> str:
    attrs = graph.node(node)
    if not is_fusion(attrs["op"]):
        return attrs["op"]
    ops = [m.op for m in attrs["attrs"]["members"]]
    update = attrs["attrs"].get("update")
    if update is not None:
        ops.append(update.op)
    return f"{attrs['op']}({'+'.join(dict.fromkeys(ops))})"


def profile(
    sess: Session, fetches: Any, feed_dict: Any = None, runs: int = 100, warmup: int = 2
) -> Profile:
    """Run the profile build of `sess.run(fetches, feed_dict)`'s program `warmup` + `runs`
    times with the same feeds (iterators are read once) and time each of its kernels."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if sess.closed:
        raise RuntimeError("Attempted to use a closed Session.")
    request = RunRequest(sess.graph, fetches, feed_dict, sess._iterators)
    with sess._lock:
        entry = _profiled_program(sess, request)
        lowered, program, p = entry.lowered, entry.program, entry.lowered.prefix
        sess._check_initialized(lowered)
        lib = entry.lib
        for i in range(warmup + runs):
            if i == warmup:
                getattr(lib, f"{p}profile_reset")()
            rc, _ = program(request.feed_values)
            if rc != 0:
                raise program.error(rc, sess.graph)
            sess._initialized.update(lowered.vars_written)
        steps = getattr(lib, f"{p}profile_steps")()
        ns = entry.ffi.new("int64_t[]", steps + 1)
        counted = getattr(lib, f"{p}profile_read")(ns)
    timed = [step for step in lowered.steps if step.kernels or step.copies]
    if len(timed) != steps or counted != runs:
        raise RuntimeError(
            f"the profile table of {lowered.name} has {steps} steps and {counted} runs, "
            f"expected {len(timed)} and {runs}"
        )
    kernels = [
        KernelTime(
            step.node,
            _op_types(entry.graph, step.node),
            ns[i] / runs * 1e-9,
            node_flops(entry.graph, step.node) if step.kernels else 0,
        )
        for i, step in enumerate(timed)
    ]
    return Profile(lowered.name, runs, ns[steps] / runs * 1e-9, kernels)


def profile_model(
    model: Any,
    signature: str | None = None,
    batch: int = 32,
    options: Any = None,
    runs: int = 100,
    seed: int = 0,
) -> Profile:
    """Profile one signature of a model file (see `pydoc tfc.aot`) at `batch`: its variables
    initialized, its features standard normal (seeded), its labels 0."""
    from tfc.aot.signatures import build_signatures, load_signatures_function
    from tfc.variables import global_variables_initializer

    name, fn = load_signatures_function(model)
    sigs = build_signatures(name, fn)
    with sigs.graph.as_default():
        init = global_variables_initializer()
    signature = signature or ("train" if sigs.train is not None else "predict")
    sig = getattr(sigs, signature)
    if sig is None:
        raise ValueError(f"model {name} has no '{signature}' signature")
    rng = np.random.default_rng(seed)

    def value(tensor: Any) -> np.ndarray:
        shape = (batch, *tensor.shape.as_list()[1:])
        dtype = tensor.dtype.np
        if np.issubdtype(dtype, np.floating):
            return rng.standard_normal(shape).astype(dtype)
        return np.zeros(shape, dtype)  # class 0: a valid label for any number of classes

    feeds = {sig.features: value(sig.features)}
    if signature == "train":
        if sig.labels is not None:
            feeds[sig.labels] = value(sig.labels)
        fetches: Any = [sig.loss, sig.train_op]
    else:
        fetches = list(sig.outputs.values())
    with Session(graph=sigs.graph, config=options) as sess:
        sess.run(init)
        return profile(sess, fetches, feeds, runs=runs)


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


def _loop_library() -> tuple[cffi.FFI, Any]:
    if not _loop:
        ffi = cffi.FFI()
        ffi.cdef(_LOOP_CDEF)
        _loop.append((ffi, ffi.dlopen(str(build_shared_library(_LOOP_SOURCE, "time_runs")))))
    return _loop[0]


def time_runs(sess: Session, fetches: Any, feed_dict: Any = None, runs: int = 100) -> float:
    """Seconds per run of `sess.run(fetches, feed_dict)`'s program (the default build), run
    `runs` times by a loop in C with the same feeds; the fetched values are not returned."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if sess.closed:
        raise RuntimeError("Attempted to use a closed Session.")
    request = RunRequest(sess.graph, fetches, feed_dict, sess._iterators)
    loop_ffi, loop = _loop_library()
    with sess._lock:
        program = sess._program(request)
        sess._check_initialized(program.lowered)
        ffi = program.ffi
        held = []  # the feeds' and fetches' buffers, alive until the loop returns
        for i, value in enumerate(request.feed_values):
            held.append(ffi.from_buffer(value))
            program.inputs[i] = held[-1]
        for j, fetch in enumerate(program.lowered.fetches):
            held.append(ffi.from_buffer(np.empty(fetch.shape, fetch.dtype.np)))
            program.outputs[j] = held[-1]
        program.err.node = ffi.NULL
        program._set_threads(session_threads(program._config))

        def address(cdata: Any) -> int:
            return int(ffi.cast("uintptr_t", cdata))

        ns = loop_ffi.new("int64_t *")
        rc = loop.tfc_time_runs(
            address(program._run),
            address(program.state),
            address(program.inputs),
            address(program.outputs),
            address(program.consts),
            address(program.arena_ptr),
            address(program.err),
            runs,
            ns,
        )
        if rc != 0:
            raise program.error(rc, sess.graph)
        sess._initialized.update(program.lowered.vars_written)
    return ns[0] / runs * 1e-9
