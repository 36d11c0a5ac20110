"""The embeddable library's C API: model.h's text and each entry point's checks and body.

model.h holds the sizes, the memory a caller passes and the declarations. Every entry point
checks its arguments before it reads anything: NULL pointers, each memory block's alignment
and size (the arena's against <P>ARENA_BYTES), the count of examples its buffers hold, and a
train step's hyperparameters for NaN and infinity; a train step compiled with the guard
(tfc/passes/guard.py) returns TFC_ERR_NON_FINITE when one of its checks fails, with the random
streams it advanced put back. model.h lists under each function the codes it returns
(tfc_status.h) and why.
"""

from __future__ import annotations

import numpy as np

from tfc.aot.embed_model import EmbeddedModel
from tfc.aot.programs import Program
from tfc.aot.signatures import ModelError, ModelSignatures
from tfc.ir import dtypes as _dt
from tfc.ops.kernels import c_initializer, type_tag
from tfc.passes.guard import GUARD_SCOPE

__all__ = ["declarations", "defines", "entry_points", "init_head", "io_macros", "memory_doc",
           "save_checks", "shape_doc"]  # fmt: skip


def entry_points(m: EmbeddedModel, sigs: ModelSignatures, state, rng_offsets: dict) -> list[dict]:
    """The template data of each entry point (train_step, predict): its signature, doc,
    checks and body."""
    P, M = m.prefix, m.macro
    rng = [s for s in state if s.kind == "rng"]
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
        checks = Checks(M)
        if role == "train":
            params += ["void *state", "size_t state_bytes"]
            doc.append(f"state: the {M}STATE_BYTES-byte block {P}init set, 8-byte aligned")
            checks.block("state", f"{M}STATE_BYTES", "8")
        elif m.stateful:
            params += ["const void *state", "size_t state_bytes"]
            after = f"{P}init or {P}train_step" if m.trainable else f"{P}init"
            doc.append(f"state: the {M}STATE_BYTES-byte block as {after} left it (read only)")
            checks.block("state", f"{M}STATE_BYTES", "8")
        elif m.external_weights:
            params += ["const void *weights", "size_t weights_bytes"]
            doc.append(f"weights: the {M}WEIGHTS_BYTES-byte blob (weights.bin), 8-byte aligned")
            checks.block("weights", f"{M}WEIGHTS_BYTES", "8")
        rows = role == "predict" and m.max_batch is not None
        params.append("int64_t n")
        if rows:
            doc.append(f"n: the examples in the inputs and outputs, 0 <= n <= {M}MAX_BATCH")
            checks.count(f"n < 0 || n > {M}MAX_BATCH", f"n is not in [0, {M}MAX_BATCH]")
        else:
            doc.append(f"n: the examples in the inputs and outputs: {M}BATCH, the compiled batch")
            checks.count(f"n != {M}BATCH", f"n is not {M}BATCH")
        for name, spec in [*zip(p.input_names, low.feeds), *zip(p.output_names, low.fetches)]:
            if spec.dtype.kind in "hc":  # model.h needs nothing but stdint.h and stdbool.h
                raise ModelError(
                    f"{role} tensor {name} has dtype {spec.dtype.name}, which C has no type "
                    "for: the library's functions take the standard C types (cast it in the "
                    "graph: tf.cast)"
                )
        for name, spec in zip(p.input_names, low.feeds):
            if spec.shape:
                params.append(f"const {spec.dtype.c_type} *{name}")
                doc.append(f"{name}: {shape_doc(spec.dtype, spec.shape)} (input)")
                inputs.append(name)
                checks.pointer(name)
            else:
                params.append(f"{spec.dtype.c_type} {name}")
                doc.append(f"{name}: {spec.dtype.c_type} scalar (hyperparameter)")
                inputs.append(f"&{name}")
                if spec.dtype.is_floating and m.check_finite:
                    checks.finite(name, type_tag(spec.dtype))
        for name, spec in zip(p.output_names, low.fetches):
            params.append(f"{spec.dtype.c_type} *{name}")
            if role == "train":
                doc.append(f"{name}: {shape_doc(spec.dtype, spec.shape)} (output; may be NULL)")
                locals_.append(f"{spec.dtype.c_type} {name}_unused;")
                locals_.append(f"if ({name} == NULL) {name} = &{name}_unused;")
            else:
                doc.append(f"{name}: {shape_doc(spec.dtype, spec.shape)} (output)")
                checks.pointer(name)
            outputs.append(name)
        params += ["void *arena", "size_t arena_bytes"]
        doc.append(f"arena: at least {M}ARENA_BYTES bytes, {M}ARENA_ALIGN-byte aligned (scratch)")
        checks.arena()
        if role == "train":
            base_decl = "unsigned char *base = (unsigned char *)state;"
        elif m.stateful:
            base_decl = "const unsigned char *base = (const unsigned char *)state;"
        elif m.external_weights:
            base_decl = "const unsigned char *base = (const unsigned char *)weights;"
        else:
            base_decl = f"const unsigned char *base = (const unsigned char *)&{P}weights;"
        if rows:
            doc = [d.replace("[1]", "[n]", 1) for d in doc]
        guard = role == "train" and m.check_finite
        if guard:
            checks.non_finite()
        streams = (m.vars_bytes, 24 * len(rng)) if guard and rng else None
        consts = [f"{P}{role}_x{i}" for i in range(len(low.external_consts))]
        entries.append(
            {
                "role": role,
                "function": f"{P}train_step" if role == "train" else f"{P}predict",
                "run": f"{low.prefix}run",
                "arena_function": f"{low.prefix}arena_bytes",
                "params": ", ".join(params),
                "doc": doc,
                "status": checks.doc,
                "checks": checks.lines,
                "guard": guard,
                "streams": streams,
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
        e["body"] = _entry_body(e)
    return entries


def shape_doc(dtype: _dt.DType, shape) -> str:
    return f"{dtype.c_type}[{']['.join(str(d) for d in shape)}]" if shape else dtype.c_type


def _count(spec) -> int:
    return int(np.prod(spec.shape, dtype=np.int64))


class Checks:
    """An entry point's checks of its arguments: the C statements, in the order they run, and
    model.h's list of the status codes they return and why."""

    def __init__(self, M: str) -> None:
        self.M = M
        self.nulls: list[str] = []
        self.aligned: list[tuple[str, str]] = []
        self.sized: list[tuple[str, str, str]] = []
        self.counts: list[tuple[str, str]] = []
        self.finites: list[tuple[str, str]] = []
        self.has_arena = self.guarded = False

    def block(self, name: str, macro: str, align: str) -> None:
        self.nulls.append(name)
        self.aligned.append((name, align))
        self.sized.append((name, f"{name}_bytes", macro))

    def pointer(self, name: str) -> None:
        self.nulls.append(name)

    def count(self, condition: str, why: str) -> None:
        self.counts.append((condition, why))

    def finite(self, name: str, tag: str) -> None:
        self.finites.append((name, tag))

    def arena(self) -> None:
        self.has_arena = True

    def non_finite(self) -> None:
        self.guarded = True

    @property
    def lines(self) -> list[str]:
        M, out = self.M, []
        out += [f"if ({n} == NULL) return TFC_ERR_NULL_POINTER;" for n in self.nulls]
        if self.has_arena:
            out.append(f"if (arena == NULL && {M}ARENA_BYTES > 0) return TFC_ERR_NULL_POINTER;")
        for name, align in self.aligned:
            out.append(f"if ((uintptr_t){name} % {align} != 0) return TFC_ERR_ALIGNMENT;")
        if self.has_arena:
            out.append(f"if ((uintptr_t)arena % {M}ARENA_ALIGN != 0) return TFC_ERR_ALIGNMENT;")
        for _, size, macro in self.sized:
            out.append(f"if ({size} < {macro}) return TFC_ERR_BUFFER_TOO_SMALL;")
        if self.has_arena:
            out.append(f"if (arena_bytes < {M}ARENA_BYTES) return TFC_ERR_ARENA_TOO_SMALL;")
        out += [f"if ({c}) return TFC_ERR_INVALID_ARGUMENT;" for c, _ in self.counts]
        for name, tag in self.finites:
            out.append(f"if (!tfc_embed_finite_{tag}({name})) return TFC_ERR_NON_FINITE;")
        return out

    @property
    def doc(self) -> list[str]:
        """`code: why` per status code, TFC_OK first."""
        M, out = self.M, ["TFC_OK: done"]
        nulls = self.nulls + (["arena"] if self.has_arena else [])
        if nulls:
            out.append(f"TFC_ERR_NULL_POINTER: {_or(nulls)} is NULL")
        aligned = [f"{n} is not {a}-byte aligned" for n, a in self.aligned]
        if self.has_arena:
            aligned.append(f"arena is not {M}ARENA_ALIGN-byte aligned")
        if aligned:
            out.append(f"TFC_ERR_ALIGNMENT: {_or(aligned)}")
        if self.sized:
            out.append(f"TFC_ERR_BUFFER_TOO_SMALL: {_or([f'{s} < {m}' for _, s, m in self.sized])}")
        if self.has_arena:
            out.append(f"TFC_ERR_ARENA_TOO_SMALL: arena_bytes < {M}ARENA_BYTES")
        if self.counts:
            out.append(f"TFC_ERR_INVALID_ARGUMENT: {_or([w for _, w in self.counts])}")
        if self.guarded or self.finites:
            what = ["the loss", "a gradient"] if self.guarded else []
            what += [name for name, _ in self.finites]
            out.append(
                f"TFC_ERR_NON_FINITE: {_or(what)} is NaN or infinite; the state is unchanged"
            )
        return out


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def memory_doc(m: EmbeddedModel) -> list[str]:
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
        f" *   stack  at most {M}STACK_BYTES bytes below the caller's frame during a call.",
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


def defines(m: EmbeddedModel) -> list[str]:
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
        "/* the most stack a call needs (targets with SIMD vectors of at most 16 bytes: MCUs, ARM,",
        " * wasm32, x86 without AVX; GCC's measure is below it at -O1, -Os and -O2) */",
        f"#define {M}STACK_BYTES {m.stack_bytes}",
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


def _init_checks(m: EmbeddedModel) -> Checks:
    checks = Checks(m.macro)
    checks.block("state", f"{m.macro}STATE_BYTES", "8")
    if m.external_weights:
        checks.block("weights", f"{m.macro}WEIGHTS_BYTES", "8")
    return checks


def save_checks(m: EmbeddedModel) -> Checks:
    checks = Checks(m.macro)
    checks.nulls += ["state", "variables"]
    checks.sized += [
        ("state", "state_bytes", f"{m.macro}STATE_BYTES"),
        ("variables", "variables_bytes", f"{m.macro}SAVE_BYTES"),
    ]
    return checks


def init_head(m: EmbeddedModel) -> list[str]:
    """The first lines of init: its signature, its checks, and where the weights are."""
    P = m.prefix
    checks = [f"    {line}" for line in _init_checks(m).lines]
    if m.external_weights:
        head = f"int {P}init(void *state, size_t state_bytes, const void *weights, size_t "
        return [head + "weights_bytes) {", *checks]
    weights = f"&{P}weights" if m.variables else "NULL"
    return [
        f"int {P}init(void *state, size_t state_bytes) {{",
        *checks,
        f"    const void *weights = {weights};",
    ]


def _returns(checks: Checks) -> list[str]:
    return [" * Returns", *(f" *   {line}" for line in checks.doc)]


def declarations(m: EmbeddedModel) -> list[str]:
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
            f" * the random streams to their seeds. Call it once before {before}{P}predict.",
            f" *   state: at least {M}STATE_BYTES bytes, 8-byte aligned",
        ]
        if m.external_weights:
            lines.append(
                f" *   weights: the {M}WEIGHTS_BYTES-byte blob (weights.bin), 8-byte aligned"
            )
        lines += [*_returns(_init_checks(m)), " */"]
        lines.append(
            f"int {P}init(void *state, size_t state_bytes, const void *weights, "
            "size_t weights_bytes);"
            if m.external_weights
            else f"int {P}init(void *state, size_t state_bytes);"
        )
    if m.trainable:
        returns = _returns(save_checks(m))
        lines += [
            "",
            f"/* Copy the variables out of the state block into {M}SAVE_BYTES bytes of",
            f" * `variables` (save them to flash; {P}restore resumes from them).",
            *returns,
            " */",
            f"int {P}save(const void *state, size_t state_bytes, void *variables, "
            "size_t variables_bytes);",
            "",
            f"/* Copy the variables {P}save wrote back into the state block.",
            *returns,
            " */",
            f"int {P}restore(void *state, size_t state_bytes, const void *variables, "
            "size_t variables_bytes);",
        ]
    return lines


def _entry_doc(m: EmbeddedModel, e: dict, sigs: ModelSignatures) -> list[str]:
    """The comment of an entry point in model.h: what it computes, its parameters, the status
    codes it returns."""
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
    lines.append(" * Returns")
    lines += [f" *   {line}" for line in e["status"]]
    lines.append(" *   or an op's error (tfc_status.h), such as TFC_ERR_INVALID_ARGUMENT for a")
    lines.append(" *   label out of range or a NaN found by tf.check_numerics.")
    return [*lines, " */"]


def _entry_body(e: dict) -> list[str]:
    """The statements of an entry point: its checks, slots and constants, then the program's
    run (per example for a predict over n rows; with the guard's failure as
    TFC_ERR_NON_FINITE, the random streams restored, for a guarded train step)."""
    lines = [*e["checks"], *e["locals"]]
    if e["base"]:
        lines += [e["base"], f"void *const slots[] = {{ {e['slots']} }};"]
    if e["consts"]:
        lines.append(f"const void *const consts[] = {{ {e['consts']} }};")
    slots = "slots" if e["base"] else "NULL"
    consts = "consts" if e["consts"] else "NULL"
    if e["rows"]:
        return lines + [
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
    lines.append(f"void *const outputs[] = {{ {e['outputs']} }};")
    if not e["guard"]:
        return lines + [f"return {e['run']}({slots}, {inputs}, outputs, {consts}, arena, NULL);"]
    # the checks of the guard (tfc/passes/guard.py) fail before any variable is written; the
    # random streams the forward pass advanced are put back
    lines.append("tfc_error err = { NULL, 0, NULL };")
    restore = []
    if e["streams"]:
        at, nbytes = e["streams"]
        lines += [
            f"unsigned char streams[{nbytes}];",
            f"memcpy(streams, base + {at}, {nbytes});",
        ]
        restore = [f"    memcpy(base + {at}, streams, {nbytes});"]
    return lines + [
        f"int rc = {e['run']}({slots}, {inputs}, outputs, {consts}, arena, &err);",
        f'if (rc != TFC_OK && tfc_embed_in_scope(err.node, "{GUARD_SCOPE}")) {{',
        *restore,
        "    return TFC_ERR_NON_FINITE;",
        "}",
        "return rc;",
    ]


def io_macros(m: EmbeddedModel) -> list[dict]:
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
