"""`tfc compile --target embed`: a model file becomes a dependency-free C99 library to embed.

What OUTDIR holds
-----------------
``model.h`` (every entry point with its shapes and dtypes and the status codes it returns, and
the sizes an embedder needs: ``<P>ARENA_BYTES``, ``<P>STACK_BYTES``, ``<P>STATE_BYTES``,
``<P>WEIGHTS_BYTES``, with ``<P>`` the upper-cased prefix), ``model.c`` (the programs, the
weights, the entry points), ``runtime/include/`` (the runtime headers model.c includes, found
by following its includes, nothing else),
``runtime/freestanding/`` (string.h and math.h for a target without a C library, e.g. wasm32),
``weights.bin`` (the weights blob, for ``--weights external``) and a ``Makefile``.

model.c allocates nothing, prints nothing and starts no thread: it is compiled with
``-DTFC_EMBED -DTFC_NO_THREADS``; the caller passes the arena (scratch memory of a call) and
the state block (the variables a training step updates) with their sizes, and the number of
examples its buffers hold. Every entry point checks its pointers, the blocks' sizes and
alignment and the count before it reads anything (tfc_status.h's codes); the train step also
refuses a NaN or infinite hyperparameter and, through the guard pass (tfc/passes/guard.py), a
non-finite loss or gradient, before anything in the state changes. It needs
``memcpy``/``memset`` and the libm functions the model's ops use, nothing else.

The weights blob is every variable's value, each at an offset model.h names, ordered by
element size (8-byte types first), so its layout is the same on every ABI. Its values are the
variables' initial values, as a tfc.Session with the model's seed computes them (tfc's NumPy
interpreter computes them: generating the library needs no C compiler), or those of a
checkpoint (``--checkpoint``). A model with a train signature keeps the variables in the state
block (``init`` copies the blob there and zeroes the variables the blob leaves out, those
whose initial value is all zeros; ``train_step`` updates them, ``save``/``restore`` copy them
out and back); with ``--inference-only`` ``predict`` reads the weights in place, from flash
when they are ``const``.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from tfc.aot.build import sync_dir, write_if_changed
from tfc.aot.embed_api import (
    declarations,
    defines,
    entry_points,
    init_head,
    io_macros,
    memory_doc,
    save_checks,
    shape_doc,
)
from tfc.aot.embed_model import EmbeddedModel, Stored, Variable
from tfc.aot.embed_stack import stack_bound
from tfc.aot.programs import (
    Program,
    StateEntry,
    batch_feed,
    layout_state,
    signature_graph,
    train_feeds,
)
from tfc.aot.signatures import (
    EMBED_DTYPES,
    ModelError,
    ModelSignatures,
    build_signatures,
    load_signatures_function,
)
from tfc.backend.cc import runtime_dir
from tfc.codegen.render import get_template
from tfc.codegen.targets import C
from tfc.compiler import CompileOptions, compile_program, guarded
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, GraphKeys
from tfc.ops.kernels import c_initializer
from tfc.version import __version__

__all__ = ["compile_embed", "EmbeddedModel", "EMBED_CFLAGS"]

# what every build of model.c needs (the Makefile's, the tests', tfc inspect's)
EMBED_CFLAGS = ["-std=c99", "-DTFC_EMBED", "-DTFC_NO_THREADS", "-Iruntime/include", "-I."]
WEIGHTS_ALIGN = 8  # the blob's and the state block's alignment: int64 and double variables
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_FREESTANDING = ("math.h", "string.h", "tfc_freestanding.c")
# runtime/src files the library needs, by name (never a glob: the other sources need stdio,
# malloc, sockets or threads). model.c includes header-only runtime code today.
EMBED_RUNTIME_SOURCES: tuple[str, ...] = ()


def compile_embed(
    model: Any,
    outdir: str | os.PathLike,
    batch: int = 1,
    *,
    prefix: str = "model_",
    inference_only: bool = False,
    weights: str = "const",
    arena_align: int = 8,
    checkpoint: str | os.PathLike | None = None,
    options: CompileOptions | None = None,
    max_batch: int | None = None,
    weights_dtype: str = "float32",
    check_finite: bool = True,
) -> EmbeddedModel:
    """Write the embeddable library of `model` (a model file, module or signatures function)
    into OUTDIR: see the module docstring. `prefix` starts every C symbol and (upper-cased)
    every macro; `weights` is "const" (compiled into model.c) or "external" (the caller passes
    the blob, OUTDIR/weights.bin); `checkpoint` (a safetensors file or prefix) gives the
    weights' values instead of the initializers'. With `max_batch`, predict takes the number
    of examples n <= max_batch at run time and runs the one-example program on each (the
    outputs of one example must not depend on the others: checked with the interpreter), in
    the arena of one example; the train step keeps the compiled `batch`. `weights_dtype`
    float16, bfloat16 or int8 (per-channel scales over the last axis) stores the float32
    variables predict reads in fewer bytes; `init` expands them into the state block, and every
    computation stays float32. With `check_finite` (the default) the train step checks its
    loss, the gradients and the hyperparameters before it updates the state, and fails leaving
    it unchanged when one is NaN or infinite; without it the step is faster and its arena
    smaller (the gradients need not all be alive at once)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise ModelError(f"--prefix {prefix!r} must be a C identifier (letters, digits, _)")
    if weights not in ("const", "external"):
        raise ModelError(f"--weights must be const or external, got {weights!r}")
    if arena_align < WEIGHTS_ALIGN or arena_align & (arena_align - 1):
        raise ModelError(f"--arena-align must be a power of two >= 8, got {arena_align}")
    if batch < 1:
        raise ModelError(f"batch must be at least 1, got {batch}")
    if weights_dtype not in STORAGE:
        raise ModelError(
            f"--weights-dtype must be one of {', '.join(STORAGE)}, got {weights_dtype!r}"
        )
    if max_batch is not None and max_batch < 1:
        raise ModelError(f"--max-batch must be at least 1, got {max_batch}")
    _, fn = load_signatures_function(model, batch)
    sigs = build_signatures(prefix.rstrip("_") or "model", fn, EMBED_DTYPES)
    passes = (options or CompileOptions()).pipeline()
    trainable = sigs.train is not None and not inference_only
    if sigs.predict is None and not trainable:
        raise ModelError("the model has no predict signature: --inference-only has nothing to do")

    programs: dict[str, Program] = {}
    lower_bounds: list[int] = []
    if trainable:
        tr = sigs.train
        feeds, names = train_feeds(tr, batch)
        programs["train"] = _compile_program(
            sigs, prefix, "train", [tr.loss], [tr.train_op], feeds, (names, ["loss"]),
            guarded(passes) if check_finite else passes, arena_align, lower_bounds,
        )  # fmt: skip
    if sigs.predict is not None:
        pr = sigs.predict
        if max_batch is not None:
            _check_rows_independent(sigs)
        programs["predict"] = _compile_program(
            sigs, prefix, "predict", list(pr.outputs.values()), [],
            [batch_feed(pr.features, 1 if max_batch else batch)], (["features"], list(pr.outputs)),
            passes, arena_align, lower_bounds,
        )  # fmt: skip
    state = layout_state(sigs, programs)
    if not trainable:
        _check_read_only(programs["predict"], state)

    variables = _layout_variables(state)
    values = _initial_values(sigs, variables, checkpoint)
    vars_bytes = _round_up(variables[-1].offset + variables[-1].nbytes) if variables else 0
    compressed = set()
    if weights_dtype != "float32" and "predict" in programs:
        read = {state[i].name for i in programs["predict"].slots if state[i].kind == "var"}
        compressed = {v.name for v in variables if v.name in read and v.dtype == _dt.float32}
    stateful = trainable or bool(compressed)
    stored, weights_bytes = _layout_stored(variables, values, weights_dtype, compressed, stateful)
    rng = [s for s in state if s.kind == "rng"]
    state_bytes = vars_bytes + 24 * len(rng) if stateful else 0
    embedded = EmbeddedModel(
        outdir=Path(outdir),
        prefix=prefix,
        batch=batch,
        max_batch=max_batch,
        trainable=trainable,
        external_weights=weights == "external",
        arena_bytes=max(p.lowered.arena_bytes for p in programs.values()),
        arena_lower_bound=max(lower_bounds),
        stack_bytes=stack_bound(programs.values()),
        check_finite=check_finite and trainable,
        state_bytes=state_bytes,
        weights_bytes=weights_bytes,
        variables=variables,
        arena_align=arena_align,
        vars_bytes=vars_bytes,
        stateful=stateful,
        weights_dtype=weights_dtype,
        stored=stored,
        programs=programs,
    )
    files = _render(embedded, sigs, state, rng)
    out = Path(outdir)
    for name, text in files.items():
        write_if_changed(out / name, text)
    blob = _weights_blob(stored, weights_bytes)
    if not (out / "weights.bin").exists() or (out / "weights.bin").read_bytes() != blob:
        (out / "weights.bin").write_bytes(blob)
    copy_embed_runtime(out, files["model.c"])
    return embedded


def _compile_program(
    sigs: ModelSignatures, prefix, role, fetches, targets, feeds, names, passes, align, bounds
) -> Program:
    graph = signature_graph(sigs, fetches, targets, feeds)
    graph.graph_attrs["arena_align"] = align
    # model.c runs on the caller's thread (TFC_NO_THREADS): kernels split no work for threads
    graph.graph_attrs["threads"] = 1
    symbols = f"{prefix}{role}_"
    compiled = compile_program(
        graph, passes, C, name=f"{sigs.name}:{role}", prefix=symbols, local_prefix=symbols,
        profile=False, linkage="static inline ",
    )  # fmt: skip
    bounds.append(int(compiled.graph.graph_attrs["arena_lower_bound"]))
    _check_bounded_loops(compiled.graph, role)
    _check_index_range(compiled.graph, role)
    return Program(role, compiled.lowered, compiled.source, *map(list, names))


def _check_bounded_loops(graph: Any, role: str) -> None:
    """An embedded program runs loops only when their iterations are bounded when compiling
    (maximum_iterations, or a counting loop): a device must not loop without limit."""
    for name in graph.node_names():
        node = graph.node(name)
        if node["op"] == "While" and node["attrs"].get("bound") is None:
            raise ModelError(
                f"{role}: while_loop '{name}' has no bound on its iterations known when "
                "compiling, and --target embed runs only bounded loops: pass maximum_iterations "
                "to tf.while_loop (or count with a loop variable from a constant to a constant)"
            )
        for key in ("cond", "body", "then_branch", "else_branch"):
            if key in node["attrs"] and hasattr(node["attrs"][key], "nx"):
                _check_bounded_loops(node["attrs"][key], role)


def _check_index_range(graph: Graph, role: str) -> None:
    """The runtime divides indices in 32 bits under TFC_EMBED (runtime/include/tfc_index.h):
    every tensor must have fewer than 2^31 elements."""
    for name in graph.node_names():
        for shape in graph.node(name)["shapes"]:
            if shape is not None and math.prod(shape) >= 2**31:
                raise ModelError(
                    f"{role}: tensor {name} of shape {list(shape)} has 2^31 elements or more; "
                    "the embeddable library indexes tensors in 32 bits"
                )


def _check_rows_independent(sigs: ModelSignatures) -> None:
    """--max-batch runs predict one example at a time: fine only if an example's outputs do
    not depend on the other examples of its batch (no reduction or normalization across it)."""
    from tfc.reference.interp import Interpreter
    from tfc.variables import variables_initializer

    pr, graph = sigs.predict, sigs.graph
    if pr.features.shape.as_list()[0] is not None:
        raise ModelError(
            f"--max-batch: predict input {pr.features.name} has a fixed batch "
            f"{pr.features.shape.as_list()[0]}; give it the shape [None, ...]"
        )
    with graph.as_default():
        init = variables_initializer(
            graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            + graph.get_collection(GraphKeys.LOCAL_VARIABLES)
        )
    interp = Interpreter(graph)
    interp.run(init)
    rng = np.random.default_rng(0)
    shape = (3, *pr.features.shape.as_list()[1:])
    x = rng.normal(size=shape) if pr.features.dtype.is_floating else rng.integers(0, 3, shape)
    x = x.astype(pr.features.dtype.np)
    outputs = list(pr.outputs.values())
    whole = interp.run(outputs, {pr.features: x})
    for i in range(shape[0]):
        row = interp.run(outputs, {pr.features: x[i : i + 1]})
        for name, w, r in zip(pr.outputs, whole, row):
            if not np.allclose(np.asarray(w)[i : i + 1], r, rtol=1e-5, atol=1e-6):
                raise ModelError(
                    f"--max-batch: predict output '{name}' of an example depends on the other "
                    "examples of its batch, so predict cannot run one example at a time; "
                    "compile with --batch N instead"
                )


def _check_read_only(predict: Program, state: list[StateEntry]) -> None:
    for i in predict.slots:
        s = state[i]
        if s.kind == "rng":
            raise ModelError(
                f"predict draws random numbers (op {s.name}): an --inference-only build has no "
                "state block to keep their stream in; compile without --inference-only"
            )
    if predict.lowered.vars_written:
        raise ModelError(
            f"predict writes variable {predict.lowered.vars_written[0]}: an --inference-only "
            "build reads its weights from constant memory; compile without --inference-only"
        )


def _round_up(n: int, align: int = WEIGHTS_ALIGN) -> int:
    return (n + align - 1) // align * align


def _layout_variables(state: list[StateEntry]) -> list[Variable]:
    """The variables by descending element size (then in state order): no padding between
    them on any ABI, so model.h's offsets hold everywhere."""
    order = sorted(
        (i for i, s in enumerate(state) if s.kind == "var"), key=lambda i: (-state[i].dtype.size, i)
    )
    out, offset, idents = [], 0, set()
    for i in order:
        s = state[i]
        ident = re.sub(r"[^A-Za-z0-9_]", "_", s.name).upper()
        while ident in idents:
            ident += "_"
        idents.add(ident)
        nbytes = s.dtype.size * int(np.prod(s.shape, dtype=np.int64))
        out.append(Variable(s.name, ident, s.dtype, s.shape, offset, nbytes))
        offset += nbytes
    return out


def _initial_values(
    sigs: ModelSignatures, variables: list[Variable], checkpoint: str | os.PathLike | None
) -> dict[str, np.ndarray]:
    """Each variable's value: its initializer's, computed by tfc's NumPy interpreter (the same
    Philox streams as a tfc.Session, so the same numbers, and no C compiler needed), or the
    checkpoint's."""
    from tfc.reference.interp import Interpreter
    from tfc.variables import variables_initializer

    if not variables:
        return {}
    graph = sigs.graph
    with graph.as_default():
        init = variables_initializer(
            graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            + graph.get_collection(GraphKeys.LOCAL_VARIABLES),
            name="tfc_embed_init",
        )
    interp = Interpreter(graph)
    interp.run(init)
    fetched = interp.run([graph.get_tensor_by_name(f"{v.name}:0") for v in variables])
    values = {v.name: np.asarray(x) for v, x in zip(variables, fetched)}
    if checkpoint is not None:
        from tfc.io.checkpoint import read_safetensors

        path = str(checkpoint)
        if not path.endswith(".safetensors") and not os.path.exists(path):
            path += ".safetensors"
        tensors, _ = read_safetensors(path)
        for v in variables:
            if v.name in tensors:
                t = np.asarray(tensors[v.name])
                if t.shape != v.shape or _dt.as_dtype(t.dtype) != v.dtype:
                    raise ModelError(
                        f"checkpoint {path}: variable {v.name} is {t.dtype}{list(t.shape)}, the "
                        f"model's is {v.dtype.name}{list(v.shape)}"
                    )
                values[v.name] = t
            else:
                raise ModelError(f"checkpoint {path} has no variable {v.name}")
    return values


STORAGE = ("float32", "float16", "bfloat16", "int8")


def _compress(value: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(stored data, int8 scales or None, the float32 values init expands them to)."""
    v = np.ascontiguousarray(value, dtype=np.float32)
    if kind == "float16":
        half = v.astype(np.float16)
        return half.view(np.uint16), None, half.astype(np.float32)
    if kind == "bfloat16":
        top = _dt.bfloat16_bits(v)
        return top, None, _dt.bfloat16_from_bits(top)
    channels = v.shape[-1] if v.ndim >= 2 else 1
    rows = v.reshape(-1, channels)
    amax = np.abs(rows).max(axis=0)
    scales = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(rows / scales), -127, 127).astype(np.int8)
    return q.reshape(v.shape), scales, (q.astype(np.float32) * scales).reshape(v.shape)


def _layout_stored(
    variables: list[Variable], values: dict, kind: str, compressed: set[str], stateful: bool
) -> tuple[list[Stored], int]:
    """The weights blob. A build that reads its weights in place (no state block) stores every
    variable exactly as the offsets of model.h say. One with a state block, which init fills,
    stores the variables whose initial value is not all zero bits (init zeroes the others: an
    optimizer's slots), the `compressed` ones in `kind`, each 8-byte aligned."""
    items = []
    if not stateful:
        for v in variables:
            data = np.ascontiguousarray(values[v.name], dtype=v.dtype.np)
            items.append(Stored(v, v.offset, "raw", data))
        end = variables[-1].offset + variables[-1].nbytes if variables else 0
        return items, _round_up(end)
    offset = 0
    for v in variables:
        value = np.ascontiguousarray(values[v.name], v.dtype.np)
        if not value.view(np.uint8).any():
            continue
        if v.name in compressed:
            data, scales, expanded = _compress(value, kind)
            item = Stored(v, offset, kind, data, scales, expanded)
        else:
            item = Stored(v, offset, "raw", value)
        items.append(item)
        offset = _round_up(offset + item.nbytes)
    return items, offset


def _weights_blob(stored: list[Stored], nbytes: int) -> bytes:
    blob = bytearray(nbytes)
    for item in stored:
        parts = [] if item.scales is None else [item.scales]
        at = item.offset
        for part in [*parts, item.data]:
            raw = part.astype(part.dtype.newbyteorder("<"), copy=False).tobytes()
            blob[at : at + len(raw)] = raw
            at += len(raw)
    return bytes(blob)


def _render(m: EmbeddedModel, sigs: ModelSignatures, state, rng) -> dict[str, str]:
    P, M = m.prefix, m.macro
    rng_offsets = {s.name: m.vars_bytes + 24 * k for k, s in enumerate(rng)}
    entries = entry_points(m, sigs, state, rng_offsets)
    weights_members, init_lines, at = [], [], 0
    for k, item in enumerate(m.stored):
        if item.offset > at:
            weights_members.append(
                {"decl": f"unsigned char pad{k}[{item.offset - at}]", "value": "{ 0 }"}
            )
        dst = f"(float *)(void *)(s + {item.var.offset})"
        src = f"w + {item.offset}"
        count = item.data.size
        if item.scales is not None:
            weights_members.append(_member(f"s{k}", "raw", item.scales, _dt.float32))
            src = f"w + {item.offset + item.scales.nbytes}"
        weights_members.append(_member(f"v{k}", item.kind, item.data, item.var.dtype))
        if item.kind == "raw":
            init_lines.append(f"memcpy(s + {item.var.offset}, {src}, {item.var.nbytes});")
        elif item.kind == "int8":
            init_lines.append(
                f"tfc_embed_expand_i8({dst}, (const int8_t *)(const void *)({src}), "
                f"(const float *)(const void *)(w + {item.offset}), {count}, "
                f"{item.scales.size});"
            )
        else:
            fn = "f16" if item.kind == "float16" else "bf16"
            init_lines.append(
                f"tfc_embed_expand_{fn}({dst}, (const uint16_t *)(const void *)({src}), {count});"
            )
        at = item.offset + item.nbytes
    pad = m.weights_bytes - at
    if pad:
        weights_members.append({"decl": f"unsigned char pad[{pad}]", "value": "{0}"})
    if m.stateful:
        init_lines = _zero_lines(m) + init_lines
    common = {
        "version": __version__,
        "P": P,
        "M": M,
        "name": sigs.name,
        "memory_doc": memory_doc(m),
        "defines": defines(m),
        "io": io_macros(m),
        "variables_in": (
            (
                "state block and in the weights blob"
                if m.weights_dtype == "float32"
                else "state block"
            )
            if m.stateful
            else "weights blob"
        ),  # fmt: skip
        "variables": [
            {
                "ident": v.ident,
                "name": v.name,
                "offset": v.offset,
                "doc": shape_doc(v.dtype, v.shape),
            }
            for v in m.variables
        ],
        "declarations": declarations(m),
        "entries": entries,
    }
    sections = []  # model.c's definitions besides the entry points, each after a blank line
    if m.variables and not m.external_weights:
        blob = {"P": P, "weights_members": weights_members, "weights_bytes": m.weights_bytes}
        sections.append(get_template("c/embed/weights.c.j2").render(**blob))
    if m.stateful:
        init = {
            "P": P,
            "init_head": init_head(m),
            "init_lines": init_lines,
            "rng": [
                {"offset": rng_offsets[s.name], "seed": s.seed, "seed2": s.seed2, "name": s.name}
                for s in rng
            ],
        }
        sections.append(get_template("c/embed/init.c.j2").render(**init))
    if m.trainable:
        checks = [f"    {line}" for line in save_checks(m).lines]
        sections.append(get_template("c/embed/save.c.j2").render(P=P, M=M, checks=checks))
    return {
        "model.h": get_template("c/embed/model.h.j2").render(**common),
        "model.c": get_template("c/embed/model.c.j2").render(
            **common, sections=[text.removesuffix("\n") for text in sections]
        ),
        "Makefile": get_template("c/embed/Makefile.j2").render(
            version=__version__,
            cflags=" ".join(EMBED_CFLAGS),
            sources=" ".join(["model.c", *library_sources()]),
        ),
    }


def _zero_lines(m: EmbeddedModel) -> list[str]:
    """init's memsets of the state's variables the blob leaves out (all zeros), adjacent ones
    (and the padding between them) merged into one."""
    kept = {item.var.name for item in m.stored}
    runs: list[list[int]] = []
    for v in m.variables:
        if v.name in kept or not v.nbytes:
            continue
        if runs and _round_up(runs[-1][1]) >= v.offset:
            runs[-1][1] = v.offset + v.nbytes
        else:
            runs.append([v.offset, v.offset + v.nbytes])
    return [f"memset(s + {a}, 0, {b - a}); /* zero-initialized variables */" for a, b in runs]


def _member(name: str, kind: str, values: np.ndarray, dtype: _dt.DType) -> dict:
    """A member of the weights struct (C has no empty arrays: an empty one takes 1 element)."""
    if kind in ("float16", "bfloat16", "int8"):
        ctype = "int8_t" if kind == "int8" else "uint16_t"
        init = ",".join(str(int(x)) for x in values.ravel().tolist())
    else:
        ctype, init = dtype.c_type, c_initializer(values, dtype) if values.size else ""
    return {"decl": f"{ctype} {name}[{max(1, values.size)}]", "value": f"{{ {init or '0'} }}"}


def library_sources() -> list[str]:
    """The C files of the library besides model.c, relative to OUTDIR."""
    return [f"runtime/src/{n}" for n in EMBED_RUNTIME_SOURCES]


def copy_embed_runtime(outdir: Path, model_c: str) -> None:
    """OUTDIR/runtime: the runtime headers `model_c` includes, transitively (followed, never
    globbed), the listed runtime sources, and the freestanding shims; stale files removed."""
    root = runtime_dir()
    wanted: dict[str, Path] = {}
    todo = ["tfc_runtime.h", *_INCLUDE.findall(model_c)]
    while todo:
        name = todo.pop()
        if name in wanted or not (root / "include" / name).is_file():
            continue
        wanted[name] = root / "include" / name
        todo.extend(_INCLUDE.findall(wanted[name].read_text()))
    sync_dir(outdir / "runtime" / "include", wanted)
    sources = {n: root / "src" / n for n in EMBED_RUNTIME_SOURCES}
    if sources or (outdir / "runtime" / "src").exists():
        sync_dir(outdir / "runtime" / "src", sources)
    sync_dir(
        outdir / "runtime" / "freestanding",
        {n: root / "freestanding" / n for n in _FREESTANDING},
    )
