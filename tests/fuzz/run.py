"""Running a batch of cases: the NumPy interpreter, and compiled programs under each
configuration (the optimizations all on, each off in turn, the generic and the embed build).

Many cases are built into one graph and compiled as one program per configuration: a C
compiler run costs about a second, whatever the program's size. Every variable of the batch
(the cases' own and the optimizers' slots) starts from the values the interpreter's
initializers give; a run fetches every case's fetches, runs every case's optimizer step, then
the variables are read.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

import tfc as tf
from tfc.backend import cc
from tfc.client.session import aligned_zeros
from tfc.codegen.targets import C
from tfc.compiler import compile_program, interpreter_program, pipeline
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops.registry import REGISTRY
from tfc.reference.interp import Interpreter, InterpState, evaluate

from .case import Case, build


@dataclass(frozen=True)
class Config:
    """A way to compile: the optimization passes, the C flags, the embed build."""

    name: str
    passes: tuple[str, ...] | None  # the optimizations enabled (None: all)
    flags: tuple[str, ...]  # after COMMON_FLAGS
    embed: bool = False

    def pipeline(self) -> list:
        return pipeline(self.passes)


OPTIMIZATIONS = ("fold", "simplify", "cse", "fuse")


def _without(name: str) -> tuple[str, ...]:
    return tuple(n for n in OPTIMIZATIONS if n != name)


def configs(opt: str | None = None) -> list[Config]:
    """Every configuration; `opt` (e.g. "-O1") replaces the optimization level of the builds
    of the pass variants (their point is the passes' output, not the C compiler's)."""
    host = tuple(cc.HOST_FLAGS)
    variant = (opt,) if opt else host
    return [
        Config("all", None, host),
        *(Config(f"no-{p}", _without(p), variant) for p in OPTIMIZATIONS),
        Config("none", (), variant),
        Config("generic", None, tuple(cc.GENERIC_FLAGS)),
        Config("embed", None, ("-O2",), embed=True),
    ]


CONFIGS = {c.name: c for c in configs()}


# -- a batch: cases in one graph ------------------------------------------------------------------
@dataclass
class Batch:
    cases: list[Case]
    graph: Any
    feeds: list[tuple[Any, np.ndarray]]
    fetches: list[tuple[int, str, Any]]  # (case, name, tensor)
    targets: list[Any]
    variables: dict[str, np.ndarray]  # variable op name -> value before the step
    owner: dict[str, int]  # variable op name -> case

    def feed_specs(self) -> list[FeedSpec]:
        return [FeedSpec((t.op.name, t.value_index), t.dtype, v.shape) for t, v in self.feeds]

    def fetch_keys(self) -> list[tuple[str, int]]:
        return [(t.op.name, t.value_index) for _, _, t in self.fetches]

    def target_names(self) -> list[str]:
        return [t.name for t in self.targets]

    def program(self) -> Any:
        return make_program_graph(
            self.graph, self.fetch_keys(), self.target_names(), self.feed_specs()
        )


def build_batch(cases: list[Case]) -> Batch:
    graph = tf.Graph()
    feeds, fetches, targets, owner = [], [], [], {}
    with graph.as_default():
        for i, case in enumerate(cases):
            built = build(case, scope=f"c{i}")
            feeds += [(t, case.values[n]) for n, t in built.feeds.items()]
            for name in case.fetch:
                t = built.names.get(name)
                if isinstance(t, tf.Tensor):
                    fetches.append((i, name, t))
            for t in case.targets:  # an Operation, or a Tensor (a scatter's variable) made by one
                target = built.names[t]
                targets.append(target.op if isinstance(target, tf.Tensor) else target)
            for v in built.variables.values():
                owner[v.op.name] = i
        init = tf.global_variables_initializer()
    interp = Interpreter(graph)
    interp.run(init)
    variables = {k: np.array(v) for k, v in interp.state.vars.items()}
    for name in variables:
        owner.setdefault(name, _case_of(name))
    return Batch(cases, graph, feeds, fetches, targets, variables, owner)


def _case_of(op_name: str) -> int:
    return int(op_name.split("/", 1)[0][1:])


# -- outcomes ------------------------------------------------------------------------------------
@dataclass
class Outcome:
    values: list[np.ndarray] = field(default_factory=list)  # per batch fetch
    variables: dict[str, np.ndarray] = field(default_factory=dict)  # after the step
    error: BaseException | None = None
    trace: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def interpret(batch: Batch) -> tuple[Outcome, dict[int, Scale]]:
    """The reference: (the outcome, per batch fetch the largest magnitude among the values it
    is computed from, which scales the error allowed in it)."""
    t0 = time.perf_counter()
    keys = batch.fetch_keys()
    extra = _ancestor_tensors(batch, keys)
    program = make_program_graph(
        batch.graph, keys + extra, batch.target_names(), batch.feed_specs()
    )
    state = InterpState()
    state.vars = {k: np.array(v) for k, v in batch.variables.items()}
    try:
        values = evaluate(interpreter_program(program), [v for _, v in batch.feeds], state)
    except Exception as e:  # noqa: BLE001 - reported as the interpreter's failure
        return Outcome(error=e, trace=traceback.format_exc()), {}
    out = Outcome(values[: len(keys)], {k: np.array(v) for k, v in state.vars.items()})
    magnitude = {key: _magnitude(v) for key, v in zip(keys + extra, values)}
    scales = {}
    ancestors = _ancestor_map(batch)
    for j, key in enumerate(keys):
        behind = [*ancestors.get(key, ()), key]
        scale = max(magnitude.get(a, 0.0) for a in behind)
        scales[j] = Scale(scale, _coarsest(batch.graph, behind))
    out.seconds["interpret"] = time.perf_counter() - t0
    return out, scales


@dataclass(frozen=True)
class Scale:
    """What the error allowed in a fetched value depends on: the largest magnitude among the
    values it is computed from, and the least precise float type among them (a float64 value
    computed from float32 ones carries float32's rounding)."""

    magnitude: float
    precision: str | None  # "float32", "float64" or None (no float behind it)


def _coarsest(graph: Any, tensors: list[tuple[str, int]]) -> str | None:
    found = {graph.node(n)["dtypes"][i].name for n, i in tensors}
    for name in ("float16", "bfloat16", "float32", "float64"):
        if name in found:
            return "float32" if name in ("float16", "bfloat16") else name
    return None


def case_precision(batch: Batch, i: int) -> str | None:
    """The least precise float type among case i's values."""
    cache = batch.__dict__.setdefault("_precision", {})
    if not cache:
        by_case: dict[int, list] = {}
        for n in batch.graph.nx.nodes:
            case = n.split("/", 1)[0]
            if case[:1] == "c" and case[1:].isdigit():
                by_case.setdefault(int(case[1:]), []).extend(
                    (n, k) for k in range(len(batch.graph.node(n)["dtypes"]))
                )
        cache.update({k: _coarsest(batch.graph, v) for k, v in by_case.items()})
    return cache.get(i)


def _magnitude(v: np.ndarray) -> float:
    v = np.asarray(v)
    if v.dtype.kind not in "fiu" or v.size == 0:
        return 0.0
    finite = np.abs(v[np.isfinite(v)]) if v.dtype.kind == "f" else np.abs(v)
    return float(finite.max()) if finite.size else 0.0


def _ancestor_map(batch: Batch) -> dict[tuple[str, int], list[tuple[str, int]]]:
    cache = getattr(batch, "_ancestors", None)
    if cache is not None:
        return cache
    g = batch.graph
    result = {}
    for key in batch.fetch_keys():
        names = nx.ancestors(g.nx, key[0])
        result[key] = [
            (n, i) for n in sorted(names) if _comparable_node(g, n)
            for i in range(len(g.node(n)["dtypes"]))
        ]  # fmt: skip
    batch._ancestors = result  # type: ignore[attr-defined]
    return result


def _comparable_node(g: Any, name: str) -> bool:
    opdef = REGISTRY[g.node(name)["op"]]
    return not opdef.stateful and g.node(name)["op"] not in ("NoOp",)


def _ancestor_tensors(batch: Batch, keys: list) -> list[tuple[str, int]]:
    seen = set(keys)
    extra = []
    for key in keys:
        for a in _ancestor_map(batch)[key]:
            if a not in seen:
                seen.add(a)
                extra.append(a)
    return extra


def run_compiled(batch: Batch, config: Config, verify: bool = True) -> Outcome:
    """The batch's program compiled under `config` and run once."""
    out = Outcome()
    t0 = time.perf_counter()
    try:
        program = batch.program()
        linkage = "static inline " if config.embed else ""
        compiled = compile_program(
            program, config.pipeline(), C, name=f"fuzz-{config.name}", prefix="fuzz_",
            profile=False, linkage=linkage, verify=verify,
        )  # fmt: skip
        lowered = compiled.lowered
        source = compiled.source
        t1 = time.perf_counter()
        ffi, run = _load(source, config)
        t2 = time.perf_counter()
        state_buffers = [_slot_buffer(batch, slot) for slot in lowered.slots]
        state = ffi.new("void *[]", [ffi.from_buffer(b) for b in state_buffers] or 1)
        consts = ffi.new("void *[]", [ffi.from_buffer(c) for c in lowered.external_consts] or 1)
        arena = aligned_zeros((max(lowered.arena_bytes, 1),), np.uint8)
        inputs = ffi.new("void *[]", max(len(lowered.feeds), 1))
        outputs = ffi.new("void *[]", max(len(lowered.fetches), 1))
        errbuf = ffi.new("char[]", 1024)
        err = ffi.new("tfc_error *")
        err.msg, err.cap = errbuf, 1024
        held, results = cc.bind_io(
            ffi, inputs, outputs, [v for _, v in batch.feeds], lowered.fetches
        )
        rc = run(state, inputs, outputs, consts, ffi.from_buffer(arena), err)
        del held
        if rc != 0:
            raise cc.program_error(ffi, errbuf, err, rc, batch.graph)
        out.values = results
        out.variables = {
            slot.name: np.array(b) for slot, b in zip(lowered.slots, state_buffers)
            if slot.kind == "var"
        }  # fmt: skip
        out.seconds = {"compile": t1 - t0, "cc": t2 - t1, "run": time.perf_counter() - t2}
    except Exception as e:  # noqa: BLE001 - a failure of the compiler under test
        out.error, out.trace = e, traceback.format_exc()
    return out


_EMBED_CDEF = """
typedef struct {{ char *msg; int64_t cap; const char *node; }} tfc_error;
int {p}embed_run(void *const *state, const void *const *inputs, void *const *outputs,
                 const void *const *consts, void *arena_base, tfc_error *err);
"""
_EMBED_WRAPPER = """
/* the fuzzer's entry into the file-local program of the embed build */
int fuzz_embed_run(void *const *state, const void *const *inputs, void *const *outputs,
                   const void *const *consts, void *arena_base, tfc_error *err);
int fuzz_embed_run(void *const *state, const void *const *inputs, void *const *outputs,
                   const void *const *consts, void *arena_base, tfc_error *err) {
    return fuzz_run(state, inputs, outputs, consts, arena_base, err);
}
"""
EMBED_FLAGS = ("-std=c99", "-DTFC_EMBED", "-DTFC_NO_THREADS", "-pedantic")


def _load(source: str, config: Config) -> tuple[Any, Callable]:
    compiler = cc.compiler()
    include = str(cc.runtime_dir() / "include")
    if config.embed:
        source += _EMBED_WRAPPER
        flags = [f for f in cc.COMMON_FLAGS if not f.startswith("-std")]
        flags += [*EMBED_FLAGS, *config.flags]
    else:
        flags = [*cc.COMMON_FLAGS, *config.flags]
    path = cc.cached_build(
        source, f"fuzz-{config.name}", cc.cache_key(source, flags, compiler), ".c", ".so",
        compiler,
        lambda src, out: [compiler, *flags, "-I", include, "-o", str(out), str(src), "-lm",
                          "-pthread"],
    )  # fmt: skip
    if config.embed:
        ffi, lib = cc.load_library(path, "fuzz_", _EMBED_CDEF)
        return ffi, lib.fuzz_embed_run
    ffi, lib = cc.load_library(path, "fuzz_")
    lib.fuzz_set_num_threads(1)
    return ffi, lib.fuzz_run


def _slot_buffer(batch: Batch, slot: Any) -> np.ndarray:
    if slot.kind == "var":
        value = batch.variables[slot.name]
        buf = aligned_zeros(value.shape, value.dtype)
        buf[...] = value
        return buf
    attrs = batch.graph.node(slot.name)["attrs"]
    return np.array([int(attrs.get("seed", 0)), int(attrs.get("seed2", 0)), 0], dtype=np.uint64)
