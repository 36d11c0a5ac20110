"""`tfc compile --target embed`: a model file becomes a dependency-free C99 library to embed.

What OUTDIR holds
-----------------
``model.h`` (every entry point with its shapes and dtypes, and the sizes an embedder needs:
``<P>ARENA_BYTES``, ``<P>STATE_BYTES``, ``<P>WEIGHTS_BYTES``, with ``<P>`` the upper-cased
prefix), ``model.c`` (the programs, the weights, the entry points), ``runtime/include/`` (the
runtime headers model.c includes, found by following its includes, nothing else),
``runtime/freestanding/`` (string.h and math.h for a target without a C library, e.g. wasm32),
``weights.bin`` (the weights blob, for ``--weights external``) and a ``Makefile``.

model.c allocates nothing, prints nothing and starts no thread: it is compiled with
``-DTFC_EMBED -DTFC_NO_THREADS``; the caller passes the arena (scratch memory of a call) and
the state block (the variables a training step updates). It needs ``memcpy``/``memset`` and
the libm functions the model's ops use, nothing else.

The weights blob is every variable's value, each at an offset model.h names, ordered by
element size (8-byte types first), so its layout is the same on every ABI. Its values are the
variables' initial values, as a tfc.Session with the model's seed computes them (tfc's NumPy
interpreter computes them: generating the library needs no C compiler), or those of a
checkpoint (``--checkpoint``). A model with a train signature keeps the variables in the state
block (``init`` copies the blob there, ``train_step`` updates them, ``save``/``restore`` copy
them out and back); with ``--inference-only`` ``predict`` reads the weights in place, from
flash when they are ``const``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfc.aot.build import sync_dir, write_if_changed
from tfc.aot.programs import (
    Program,
    StateEntry,
    batch_feed,
    layout_state,
    signature_graph,
    train_feeds,
)
from tfc.aot.signatures import (
    ModelError,
    ModelSignatures,
    build_signatures,
    load_signatures_function,
)
from tfc.backend.cc import runtime_dir
from tfc.codegen.render import get_template
from tfc.codegen.targets import C
from tfc.compiler import CompileOptions, compile_program
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys
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


@dataclass
class Variable:
    """A variable of the weights blob (and of the state block, for a trainable build)."""

    name: str  # its op name
    ident: str  # a C identifier made of the name
    dtype: _dt.DType
    shape: tuple[int, ...]
    offset: int
    nbytes: int


@dataclass
class EmbeddedModel:
    """What `compile_embed` made: the directory and the numbers model.h defines."""

    outdir: Path
    prefix: str
    batch: int
    max_batch: int | None  # predict takes 1..max_batch examples at run time
    trainable: bool
    external_weights: bool
    arena_bytes: int
    arena_lower_bound: int
    state_bytes: int
    weights_bytes: int
    variables: list[Variable]
    arena_align: int = 8
    vars_bytes: int = 0  # the variables' float32 bytes in the state block (save/restore)
    stateful: bool = False  # init fills a state block (training, or weights to expand)
    weights_dtype: str = "float32"
    stored: list = field(default_factory=list)  # the weights blob's items
    programs: dict[str, Program] = field(default_factory=dict)

    @property
    def macro(self) -> str:
        return self.prefix.upper()


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
    computation stays float32."""
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
    sigs = build_signatures(prefix.rstrip("_") or "model", fn)
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
            passes, arena_align, lower_bounds,
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
    stored, weights_bytes = _layout_stored(variables, values, weights_dtype, compressed)
    rng = [s for s in state if s.kind == "rng"]
    stateful = trainable or bool(compressed)
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
    symbols = f"{prefix}{role}_"
    compiled = compile_program(
        graph, passes, C, name=f"{sigs.name}:{role}", prefix=symbols, local_prefix=symbols,
        profile=False, linkage="static inline ",
    )  # fmt: skip
    bounds.append(int(compiled.graph.graph_attrs["arena_lower_bound"]))
    _check_bounded_loops(compiled.graph, role)
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


@dataclass
class Stored:
    """A variable in the weights blob: as it is, or compressed (and expanded by init)."""

    var: Variable
    offset: int
    kind: str  # "raw", "float16", "bfloat16", "int8"
    data: np.ndarray  # what the blob holds (int8: the quantized values)
    scales: np.ndarray | None = None  # int8: float32 per channel, stored before the data
    expanded: np.ndarray | None = None  # the float32 values init writes (tests compare them)

    @property
    def nbytes(self) -> int:
        return self.data.nbytes + (0 if self.scales is None else self.scales.nbytes)


def _compress(value: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(stored data, int8 scales or None, the float32 values init expands them to)."""
    v = np.ascontiguousarray(value, dtype=np.float32)
    if kind == "float16":
        half = v.astype(np.float16)
        return half.view(np.uint16), None, half.astype(np.float32)
    if kind == "bfloat16":
        bits = v.view(np.uint32).astype(np.uint64)
        top = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # nearest, even
        return top, None, (top.astype(np.uint32) << 16).view(np.float32)
    channels = v.shape[-1] if v.ndim >= 2 else 1
    rows = v.reshape(-1, channels)
    amax = np.abs(rows).max(axis=0)
    scales = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(rows / scales), -127, 127).astype(np.int8)
    return q.reshape(v.shape), scales, (q.astype(np.float32) * scales).reshape(v.shape)


def _layout_stored(
    variables: list[Variable], values: dict, kind: str, compressed: set[str]
) -> tuple[list[Stored], int]:
    """The weights blob: with float32 weights, the variables exactly as in the state block;
    otherwise the compressed ones in `kind` and the others as they are, each 8-byte aligned."""
    items = []
    if not compressed:
        for v in variables:
            data = np.ascontiguousarray(values[v.name], dtype=v.dtype.np)
            items.append(Stored(v, v.offset, "raw", data))
        end = variables[-1].offset + variables[-1].nbytes if variables else 0
        return items, _round_up(end)
    offset = 0
    for v in variables:
        if v.name in compressed:
            data, scales, expanded = _compress(values[v.name], kind)
            item = Stored(v, offset, kind, data, scales, expanded)
        else:
            item = Stored(v, offset, "raw", np.ascontiguousarray(values[v.name], v.dtype.np))
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


def _shape_doc(dtype: _dt.DType, shape) -> str:
    return f"{dtype.c_type}[{']['.join(str(d) for d in shape)}]" if shape else dtype.c_type


def _render(m: EmbeddedModel, sigs: ModelSignatures, state, rng) -> dict[str, str]:
    P, M = m.prefix, m.macro
    rng_offsets = {s.name: m.vars_bytes + 24 * k for k, s in enumerate(rng)}
    var_offsets = {v.name: v.offset for v in m.variables}

    def slots(p: Program) -> str:
        items = []
        for i in p.slots:
            s = state[i]
            off = var_offsets[s.name] if s.kind == "var" else rng_offsets[s.name]
            items.append(f"(void *)(base + {off})")
        return ", ".join(items)

    entries = []
    for role, p in m.programs.items():
        low = p.lowered
        params, doc, inputs, outputs, locals_ = [], [], [], [], []
        if role == "train":
            params.append("void *state")
            doc.append(f"state: {M}STATE_BYTES bytes, 8-byte aligned, set by {P}init")
        elif m.stateful:
            params.append("const void *state")
            after = f"{P}init or {P}train_step" if m.trainable else f"{P}init"
            doc.append(f"state: as {after} left it (read only)")
        elif m.external_weights:
            params.append("const void *weights")
            doc.append(f"weights: the {M}WEIGHTS_BYTES-byte blob (weights.bin), 8-byte aligned")
        for name, spec in zip(p.input_names, low.feeds):
            if spec.shape:
                params.append(f"const {spec.dtype.c_type} *{name}")
                doc.append(f"{name}: {_shape_doc(spec.dtype, spec.shape)} (input)")
                inputs.append(name)
            else:
                params.append(f"{spec.dtype.c_type} {name}")
                doc.append(f"{name}: {spec.dtype.c_type} scalar (hyperparameter)")
                inputs.append(f"&{name}")
        for name, spec in zip(p.output_names, low.fetches):
            params.append(f"{spec.dtype.c_type} *{name}")
            if role == "train":
                doc.append(f"{name}: {_shape_doc(spec.dtype, spec.shape)} (output; may be NULL)")
                locals_.append(f"{spec.dtype.c_type} {name}_unused;")
                locals_.append(f"if ({name} == NULL) {name} = &{name}_unused;")
            else:
                doc.append(f"{name}: {_shape_doc(spec.dtype, spec.shape)} (output)")
            outputs.append(name)
        params.append("void *arena")
        doc.append(f"arena: {M}ARENA_BYTES bytes, {M}ARENA_ALIGN-byte aligned (scratch)")
        if role == "train":
            base_decl = "unsigned char *base = (unsigned char *)state;"
        elif m.stateful:
            base_decl = "const unsigned char *base = (const unsigned char *)state;"
        elif m.external_weights:
            base_decl = "const unsigned char *base = (const unsigned char *)weights;"
        else:
            base_decl = f"const unsigned char *base = (const unsigned char *)&{P}weights;"
        rows = role == "predict" and m.max_batch is not None
        if rows:
            at = 1 if m.stateful or m.external_weights else 0
            params.insert(at, "int64_t n")
            doc.insert(at, f"n: the number of examples, 0 <= n <= {M}MAX_BATCH")
            doc = [d.replace("[1]", "[n]", 1) for d in doc]
        consts = [f"{P}{role}_x{i}" for i in range(len(low.external_consts))]
        entries.append(
            {
                "role": role,
                "function": f"{P}train_step" if role == "train" else f"{P}predict",
                "run": f"{low.prefix}run",
                "arena_function": f"{low.prefix}arena_bytes",
                "params": ", ".join(params),
                "doc": doc,
                "base": base_decl if p.slots else "",
                "slots": slots(p),
                "inputs": ", ".join(
                    f"(const void *)({x} + i * {_count(spec)})" if rows else f"(const void *){x}"
                    for x, spec in zip(inputs, low.feeds)
                ),
                "outputs": ", ".join(
                    f"(void *)({x} + i * {_count(spec)})" if rows else f"(void *){x}"
                    for x, spec in zip(outputs, low.fetches)
                ),
                "rows": rows,
                "locals": locals_,
                "consts": ", ".join(f"(const void *){c}" for c in consts),
                "const_arrays": [
                    {
                        "name": c,
                        "ctype": _dt.as_dtype(x.dtype).c_type,
                        "count": x.size,
                        "init": c_initializer(x, _dt.as_dtype(x.dtype)),
                    }
                    for c, x in zip(consts, low.external_consts)
                ],
                "source": p.source,
                "arena_bytes": low.arena_bytes,
            }
        )
    for e in entries:
        e["doc"] = _entry_doc(m, e, sigs)
        e["body"] = _entry_body(e, M)
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
    if not m.stored or m.weights_dtype == "float32":  # the blob is the state's variables
        init_lines = [f"memcpy(s, w, {m.vars_bytes});"] if m.vars_bytes else []
    common = {
        "version": __version__,
        "P": P,
        "M": M,
        "name": sigs.name,
        "memory_doc": _memory_doc(m),
        "defines": _defines(m),
        "io": _io_macros(m),
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
                "doc": _shape_doc(v.dtype, v.shape),
            }
            for v in m.variables
        ],
        "declarations": _declarations(m),
        "entries": entries,
    }
    sections = []  # model.c's definitions besides the entry points, each after a blank line
    if m.variables and not m.external_weights:
        blob = {"P": P, "weights_members": weights_members, "weights_bytes": m.weights_bytes}
        sections.append(get_template("c/embed/weights.c.j2").render(**blob))
    if m.stateful:
        init = {
            "P": P,
            "init_head": _init_head(m),
            "init_lines": init_lines,
            "rng": [
                {"offset": rng_offsets[s.name], "seed": s.seed, "seed2": s.seed2, "name": s.name}
                for s in rng
            ],
        }
        sections.append(get_template("c/embed/init.c.j2").render(**init))
    if m.trainable:
        sections.append(get_template("c/embed/save.c.j2").render(P=P, M=M))
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


def _memory_doc(m: EmbeddedModel) -> list[str]:
    """model.h's lines on the memory a caller passes: the state block (when there is one), the
    arena, the weights blob, and how the weights are stored."""
    P, M = m.prefix, m.macro
    lines = []
    if m.stateful:
        use = (
            f" and the random streams; {P}init sets it, {P}train_step updates it"
            if m.trainable
            else f"; {P}init expands the weights into it"
        )
        lines += [
            f" *   state  {M}STATE_BYTES bytes, 8-byte aligned: the variables as float32 (at the "
            "offsets",
            f" *          below){use}.",
        ]
    lines += [
        f" *   arena  {M}ARENA_BYTES bytes, {M}ARENA_ALIGN-byte aligned: the scratch memory of one",
        " *          call; several models may share one arena when they do not run at the same "
        "time.",
    ]
    if m.external_weights:
        lines.append(
            f" *   weights  the {M}WEIGHTS_BYTES-byte blob weights.bin (little-endian), 8-byte "
            "aligned."
        )
    else:
        lines.append(
            f" *   weights  compiled into model.c as const data ({M}WEIGHTS_BYTES bytes, flash on "
            "an MCU)."
        )
    if m.weights_dtype != "float32":
        scales = " (per-channel float scales)" if m.weights_dtype == "int8" else ""
        lines += [
            f" *            The weights predict reads are stored as {m.weights_dtype}{scales};",
            f" *            {P}init expands them to float32, and every computation is float32.",
        ]
    return lines


def _defines(m: EmbeddedModel) -> list[str]:
    """model.h's sizes: the batch, the memory blocks' bytes."""
    M = m.macro
    lines = [
        "/* the batch every entry point is compiled for: the first dimension of its tensors */",
        f"#define {M}BATCH {m.batch}",
    ]
    if m.max_batch:
        lines += [
            f"/* predict takes n <= {M}MAX_BATCH examples (its counts below are per example) */",
            f"#define {M}MAX_BATCH {m.max_batch}",
        ]
    lines += [
        f"#define {M}ARENA_BYTES {m.arena_bytes}",
        f"#define {M}ARENA_ALIGN {m.arena_align}",
        f"#define {M}STATE_BYTES {m.state_bytes}",
        f"#define {M}WEIGHTS_BYTES {m.weights_bytes}",
    ]
    if m.trainable:
        lines += [
            "/* the variables' bytes that save writes and restore reads (at the state's offsets "
            "below) */",
            f"#define {M}SAVE_BYTES {m.vars_bytes}",
        ]
    return lines


def _init_head(m: EmbeddedModel) -> list[str]:
    """The first lines of init: its signature, and where the weights are."""
    P = m.prefix
    if m.external_weights:
        return [f"int {P}init(void *state, const void *weights) {{"]
    weights = f"&{P}weights" if m.variables else "NULL"
    return [f"int {P}init(void *state) {{", f"    const void *weights = {weights};"]


def _declarations(m: EmbeddedModel) -> list[str]:
    """model.h's declarations of init (a state block to fill) and save/restore (training)."""
    P, M = m.prefix, m.macro
    lines = []
    if m.stateful:
        source = "" if m.external_weights else " compiled into model.c"
        expanded = ", expanded to float32" if m.weights_dtype != "float32" else ""
        before = f"{P}train_step or " if m.trainable else ""
        lines += [
            "",
            f"/* Set the state block: the variables from the weights blob{source}{expanded},",
            f" * the random streams to their seeds. Call it once before {before}{P}predict. */",
            f"int {P}init(void *state, const void *weights);"
            if m.external_weights
            else f"int {P}init(void *state);",
        ]
    if m.trainable:
        lines += [
            "",
            f"/* Copy the variables out of the state block into {M}SAVE_BYTES bytes (save them to",
            f" * flash; {P}restore resumes from them). */",
            f"void {P}save(const void *state, void *variables);",
            "",
            f"/* Copy variables {P}save wrote back into the state block. */",
            f"void {P}restore(void *state, const void *variables);",
        ]
    return lines


def _entry_doc(m: EmbeddedModel, e: dict, sigs: ModelSignatures) -> list[str]:
    """The comment of an entry point in model.h: what it computes, then its parameters."""
    if e["role"] == "train":
        summary = [
            "/* One training step: the forward pass, the gradients and the optimizer's update of "
            "the",
            " * variables in the state block.",
        ]
    elif e["rows"]:
        summary = ["/* Predictions for n examples, one at a time."]
    else:
        summary = [f"/* Predictions for {m.macro}BATCH examples."]
    lines = [*summary, *(f" *   {line}" for line in e["doc"])]
    if e["role"] == "train" and m.trainable and sigs.train.defaults:
        defaults = "".join(f" {k} = {v!r}" for k, v in sigs.train.defaults.items())
        lines.append(f" * Hyperparameter defaults:{defaults}.")
    return [*lines, " */"]


def _entry_body(e: dict, M: str) -> list[str]:
    """The statements of an entry point: its slots and constants, then the program's run (per
    example for a predict over n rows)."""
    lines = list(e["locals"])
    if e["base"]:
        lines += [e["base"], f"void *const slots[] = {{ {e['slots']} }};"]
    if e["consts"]:
        lines.append(f"const void *const consts[] = {{ {e['consts']} }};")
    slots = "slots" if e["base"] else "NULL"
    consts = "consts" if e["consts"] else "NULL"
    if e["rows"]:
        return lines + [
            f"if (n < 0 || n > {M}MAX_BATCH) return TFC_ERR_INVALID_ARGUMENT;",
            "for (int64_t i = 0; i < n; ++i) { /* one example at a time, in one example's arena */",
            f"    const void *const inputs[] = {{ {e['inputs']} }};",
            f"    void *const outputs[] = {{ {e['outputs']} }};",
            f"    int rc = {e['run']}({slots}, inputs, outputs, {consts}, arena, NULL);",
            "    if (rc != TFC_OK) return rc;",
            "}",
            "return TFC_OK;",
        ]
    if e["inputs"]:
        lines.append(f"const void *const inputs[] = {{ {e['inputs']} }};")
    inputs = "inputs" if e["inputs"] else "NULL"
    return lines + [
        f"void *const outputs[] = {{ {e['outputs']} }};",
        f"return {e['run']}({slots}, {inputs}, outputs, {consts}, arena, NULL);",
    ]


def _member(name: str, kind: str, values: np.ndarray, dtype: _dt.DType) -> dict:
    """A member of the weights struct (C has no empty arrays: an empty one takes 1 element)."""
    if kind in ("float16", "bfloat16", "int8"):
        ctype = "int8_t" if kind == "int8" else "uint16_t"
        init = ",".join(str(int(x)) for x in values.ravel().tolist())
    else:
        ctype, init = dtype.c_type, c_initializer(values, dtype) if values.size else ""
    return {"decl": f"{ctype} {name}[{max(1, values.size)}]", "value": f"{{ {init or '0'} }}"}


def _count(spec) -> int:
    return int(np.prod(spec.shape, dtype=np.int64))


def _io_macros(m: EmbeddedModel) -> list[dict]:
    out = []
    for role, p in m.programs.items():
        low = p.lowered
        for kind, names, specs in (
            ("IN", p.input_names, low.feeds),
            ("OUT", p.output_names, low.fetches),
        ):
            for name, spec in zip(names, specs):
                if spec.shape:
                    out.append(
                        {
                            "name": f"{m.macro}{role.upper()}_{kind}_{name.upper()}_COUNT",
                            "value": int(np.prod(spec.shape, dtype=np.int64)),
                        }
                    )
    return out


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
