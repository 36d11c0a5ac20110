"""Kernel specs: what an op lowers to, as ready strings and integers for the kernel templates.

An op's `lower` rule returns a list of `Kernel`s. Each names its template (templates/c/kernels/
<template>.c.j2), its pointer parameters (each bound to a logical buffer of the node: "in0",
"out0", "state"), and the prepared data the template interpolates. Most ops are a strided loop
nest (element-wise maps with broadcasting, transposes, slices, tiles, pads, concats) or a
reduction; the builders here collapse dimensions so loops are as few and as contiguous as
possible, which is what lets the C compiler vectorize them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tfc.ir import dtypes as _dt


@dataclass(frozen=True)
class Param:
    """One pointer parameter of a kernel function, bound at the call site to a node's buffer."""

    name: str
    ctype: str
    const: bool
    buf: str  # "in0", "out1", "state"
    offset: int = 0  # in elements, added to the buffer's pointer at the call site


@dataclass
class Kernel:
    template: str
    params: list[Param]
    data: dict = field(default_factory=dict)
    can_fail: bool = False


@dataclass(frozen=True)
class Operand:
    """A strided view of a buffer: element (i0, i1, ...) is at offset + sum(i_k * strides[k])."""

    buf: str
    dtype: _dt.DType
    strides: tuple[int, ...]
    offset: int = 0


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def broadcast_strides(in_shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """Strides reading a contiguous `in_shape` tensor broadcast to `out_shape` (0 on broadcast)."""
    pad = len(out_shape) - len(in_shape)
    padded = (1,) * pad + tuple(in_shape)
    strides = contiguous_strides(padded)
    return tuple(0 if d == 1 and o != 1 else s for d, s, o in zip(padded, strides, out_shape))


def view(
    buf: str,
    dtype: _dt.DType,
    shape: Sequence[int],
    out_shape: Sequence[int] | None = None,
    offset: int = 0,
) -> Operand:
    """A contiguous buffer of `shape`, read broadcast to `out_shape` when given."""
    strides = (
        contiguous_strides(shape) if out_shape is None else broadcast_strides(shape, out_shape)
    )
    return Operand(buf, dtype, strides, offset)


def collapse(shape: Sequence[int], operands: Sequence[Sequence[int]]) -> tuple[list, list]:
    """Drop size-1 dims and merge neighbours that every operand walks contiguously."""
    dims = [(d, [s[k] for s in operands]) for k, d in enumerate(shape) if d != 1]
    merged: list = []
    for d, strides in dims:
        if merged:
            pd, pstrides = merged[-1]
            if all(ps == s * d for ps, s in zip(pstrides, strides)):
                merged[-1] = (pd * d, strides)
                continue
        merged.append((d, strides))
    new_shape = [d for d, _ in merged]
    new_strides = [[strides[i] for _, strides in merged] for i in range(len(operands))]
    return new_shape, new_strides


def index_expr(strides: Sequence[int], loop_vars: Sequence[str]) -> str:
    """The C expression of sum(loop_var * stride) ("0" when every stride is 0)."""
    terms = []
    for s, v in zip(strides, loop_vars):
        if s == 0:
            continue
        terms.append(v if s == 1 else f"{v} * {s}" if s > 0 else f"{v} * ({s})")
    return " + ".join(terms) if terms else "0"


def loop_lines(bounds: Sequence[int], loop_vars: Sequence[str], base_indent: int = 1) -> tuple:
    """Opening lines of a loop nest, the indent of its body, and its closing braces."""
    opens = [
        "    " * (base_indent + k) + f"for (int64_t {v} = 0; {v} < {b}; ++{v}) {{"
        for k, (v, b) in enumerate(zip(loop_vars, bounds))
    ]
    closes = ["    " * (base_indent + k) + "}" for k in reversed(range(len(bounds)))]
    return opens, "    " * (base_indent + len(bounds)), closes


def loop_kernel(
    shape: Sequence[int],
    out: Operand,
    ins: Sequence[Operand],
    expr: str,
    guard: tuple[str, str] | None = None,
) -> list[Kernel]:
    """out[i] = expr(ins[0][i], ins[1][i], ...) over `shape`, every operand strided.

    `expr` refers to operand k as {k} and to the current output value as {out} (in-place
    updates such as AssignAdd). `guard` is (C condition on the operands, error message): when
    it holds for any element the kernel stops and the run fails with that message.
    """
    if any(d == 0 for d in shape):
        return []
    operands = [out, *ins]
    new_shape, strides = collapse(shape, [o.strides for o in operands])
    loop_vars = [f"i{k}" for k in range(len(new_shape))]
    out_idx = index_expr(strides[0], loop_vars)
    loads = [f"x{k}[{index_expr(strides[k + 1], loop_vars)}]" for k in range(len(ins))]
    statement = f"y[{out_idx}] = " + expr.format(*loads, out=f"y[{out_idx}]") + ";"
    opens, indent, closes = loop_lines(new_shape, loop_vars)
    params = [Param("y", out.dtype.c_type, False, out.buf, out.offset)] + [
        Param(f"x{k}", op.dtype.c_type, True, op.buf, op.offset) for k, op in enumerate(ins)
    ]
    data = {"opens": opens, "indent": indent, "closes": closes, "statements": [statement]}
    data["bounds"] = new_shape  # the loop variables i0, i1... over these (the CUDA target's grid)
    if guard is not None:
        data["guard"] = guard[0].format(*loads)
        data["message"] = c_string(guard[1])
    return [Kernel("loop", params, data, can_fail=guard is not None)]


def update_kernel(
    shape: Sequence[int],
    refs: Sequence[Operand],
    ins: Sequence[Operand],
    statements: Sequence[str],
) -> list[Kernel]:
    """Update several buffers in place, element by element (an optimizer's variable and slots).

    Each statement refers to ref k (read and written) as {r0}, {r1}..., to input k (read only)
    as {0}, {1}...; statements may declare locals ("const float g = {0};"). Refs must be
    distinct buffers; inputs may broadcast (stride 0), refs may not.
    """
    if any(d == 0 for d in shape):
        return []
    operands = [*refs, *ins]
    new_shape, strides = collapse(shape, [o.strides for o in operands])
    loop_vars = [f"i{k}" for k in range(len(new_shape))]
    names = {f"r{k}": f"r{k}[{index_expr(strides[k], loop_vars)}]" for k in range(len(refs))}
    loads = [f"x{k}[{index_expr(strides[len(refs) + k], loop_vars)}]" for k in range(len(ins))]
    opens, indent, closes = loop_lines(new_shape, loop_vars)
    params = [Param(f"r{k}", r.dtype.c_type, False, r.buf, r.offset) for k, r in enumerate(refs)]
    params += [Param(f"x{k}", op.dtype.c_type, True, op.buf, op.offset) for k, op in enumerate(ins)]
    body = [st.format(*loads, **names) for st in statements]
    data = {"opens": opens, "indent": indent, "closes": closes, "statements": body}
    data["bounds"] = new_shape  # the loop variables i0, i1... over these (the CUDA target's grid)
    return [Kernel("loop", params, data)]


def reduce_kernel(
    in_shape: Sequence[int],
    axes: Sequence[int],
    x: Operand,
    out: Operand,
    combine: str,
    init: str,
    finalize: str | None = None,
    acc_ctype: str | None = None,
) -> list[Kernel]:
    """Reduce contiguous `x` over `axes` into contiguous `out` (the kept dims, in order).

    `combine` is a C expression of {a} (accumulator) and {b} (element); `init` the identity;
    `finalize` an expression of {a} applied to each result (e.g. the division of a mean).
    The input is walked in memory order; when the innermost dims are all reduced a scalar
    accumulator of type `acc_ctype` carries the inner loop.
    """
    out_count = math.prod(d for k, d in enumerate(in_shape) if k not in axes)
    if out_count == 0:
        return []
    out_strides_kept = iter(
        contiguous_strides([d for k, d in enumerate(in_shape) if k not in axes])
    )
    out_strides = [0 if k in axes else next(out_strides_kept) for k in range(len(in_shape))]
    reduced = [k in axes for k in range(len(in_shape))]
    # collapse only neighbours of the same kind: a merged dim must be wholly kept or reduced
    dims = [(d, x.strides[k], out_strides[k], reduced[k]) for k, d in enumerate(in_shape) if d != 1]
    merged: list = []
    for d, xs, os_, r in dims:
        if merged:
            pd, pxs, pos, pr = merged[-1]
            if pr == r and pxs == xs * d and pos == os_ * d:
                merged[-1] = (pd * d, xs, os_, r)
                continue
        merged.append((d, xs, os_, r))
    acc_ctype = acc_ctype or out.dtype.c_type
    params = [
        Param("y", out.dtype.c_type, False, out.buf, out.offset),
        Param("x0", x.dtype.c_type, True, x.buf, x.offset),
    ]
    total = math.prod(in_shape)
    suffix = 0
    while suffix < len(merged) and merged[len(merged) - 1 - suffix][3]:
        suffix += 1
    outer, inner = merged[: len(merged) - suffix], merged[len(merged) - suffix :]
    ov = [f"i{k}" for k in range(len(outer))]
    iv = [f"j{k}" for k in range(len(inner))]
    out_idx = index_expr([m[2] for m in outer], ov)
    x_idx = index_expr([m[1] for m in outer] + [m[1] for m in inner], ov + iv)
    opens, indent, closes = loop_lines([m[0] for m in outer], ov)
    if inner:
        inner_opens, inner_indent, inner_closes = loop_lines(
            [m[0] for m in inner], iv, base_indent=len(outer) + 1
        )
        acc_update = "acc = " + combine.format(a="acc", b=f"x0[{x_idx}]") + ";"
    else:
        inner_opens, inner_indent, inner_closes = [], indent, []
        acc_update = f"y[{out_idx}] = " + combine.format(a=f"y[{out_idx}]", b=f"x0[{x_idx}]") + ";"
    data = {
        "out_count": out_count,
        "init": init,
        "has_input": total > 0,
        "use_acc": bool(inner),
        "acc_ctype": acc_ctype,
        "out_idx": out_idx,
        "opens": opens,
        "indent": indent,
        "closes": closes,
        "inner_opens": inner_opens,
        "inner_indent": inner_indent,
        "inner_closes": inner_closes,
        "acc_update": acc_update,
        "finalize": None if finalize is None else finalize.format(a="y[o]"),
        # the merged dims (size, x stride, y stride, reduced?) and the combine template: what a
        # target that does not walk memory order (CUDA: one output per thread) builds from
        "dims": merged,
        "combine": combine,
    }
    return [Kernel("reduce", params, data)]


def collapse_levels(
    shape: Sequence[int], operands: Sequence[Sequence[int]], kinds: Sequence[object]
) -> tuple[list[int], list[list[int]], list]:
    """`collapse` that merges only neighbours of the same kind (a reduced dim never merges with
    a kept one). Returns the loop bounds, each operand's strides over them, and their kinds."""
    dims = [(d, [s[k] for s in operands], kinds[k]) for k, d in enumerate(shape) if d != 1]
    merged: list = []
    for d, strides, kind in dims:
        if merged:
            pd, pstrides, pkind = merged[-1]
            if pkind == kind and all(ps == s * d for ps, s in zip(pstrides, strides)):
                merged[-1] = (pd * d, strides, kind)
                continue
        merged.append((d, strides, kind))
    new_strides = [[strides[i] for _, strides, _ in merged] for i in range(len(operands))]
    return [d for d, _, _ in merged], new_strides, [kind for _, _, kind in merged]


def nest_lines(
    bounds: Sequence[int],
    loop_vars: Sequence[str],
    body: Sequence[str],
    before: dict[int, list[str]] | None = None,
    after: dict[int, list[str]] | None = None,
) -> list[str]:
    """The lines of a loop nest with `body` innermost; before[k] / after[k] are statements run
    just before loop k opens and just after it closes (inside loop k - 1): per-row work such
    as a GEMM row or an accumulator that spans the inner loops. k = len(bounds) is the body's
    own level."""
    before, after = before or {}, after or {}
    opens, indent, closes = loop_lines(bounds, loop_vars)
    lines: list[str] = []
    for k in range(len(bounds) + 1):
        pad = "    " * (1 + k)
        lines.extend(pad + s for s in before.get(k, []))
        if k < len(bounds):
            lines.append(opens[k])
    lines.extend(indent + s for s in body)
    for k in reversed(range(len(bounds) + 1)):
        if k < len(bounds):
            lines.append(closes[len(bounds) - 1 - k])
        pad = "    " * (1 + k)
        lines.extend(pad + s for s in after.get(k, []))
    return lines


def fused_kernel(
    params: Sequence[Param], prologue: Sequence[str], nests: Sequence[str], fusion: object = None
) -> list[Kernel]:
    """One kernel running `prologue` (statements, e.g. the initial values of reductions), then
    `nests` (indented lines from `nest_lines`: a loop nest, and maybe one after it finishing
    reduced values). `fusion` (the node's OpContext) is what a target that does not run the C
    loop nest lowers the same node from (CUDA: tfc/ops/fusion_cuda.py)."""
    data = {"prologue": list(prologue), "nests": list(nests), "fusion": fusion}
    return [Kernel("fused", list(params), data)]


# -- C spelling of values -----------------------------------------------------------------------
def c_string(text: str) -> str:
    """A C string literal holding `text`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def c_literal(value: object, dtype: _dt.DType) -> str:
    """A C literal of `dtype` for one scalar, exact (float32 values round-trip)."""
    if dtype.kind == "b":
        return "1" if bool(value) else "0"
    if dtype.kind == "i":
        v = int(value)
        if v == int(dtype.min):
            return "INT64_MIN" if dtype.size == 8 else "INT32_MIN"
        return f"INT64_C({v})" if dtype.size == 8 else str(v)
    v = float(np.asarray(value, dtype=dtype.np))
    suffix = "f" if dtype is _dt.float32 else ""
    if math.isnan(v):
        return "NAN" if suffix else "((double)NAN)"
    if math.isinf(v):
        text = "INFINITY" if suffix else "((double)INFINITY)"
        return text if v > 0 else f"(-{text})"
    text = f"{v:.9g}" if suffix else f"{v:.17g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text + suffix


def c_initializer(values: np.ndarray, dtype: _dt.DType) -> str:
    """The comma-separated body of a C array initializer for `values` (flattened)."""
    flat = np.asarray(values, dtype=dtype.np).ravel()
    if dtype.kind == "f":
        if np.isfinite(flat).all():
            fmt = "%.9g" if dtype is _dt.float32 else "%.17g"
            # "-0" would be the integer 0 (+0.0 in a float array): keep the sign of zero
            return ",".join("-0.0" if t == "-0" else t for t in (fmt % v for v in flat.tolist()))
        return ",".join(c_literal(v, dtype) for v in flat.tolist())
    if dtype.kind == "b":
        return ",".join("1" if v else "0" for v in flat.tolist())
    low = int(dtype.min)
    return ",".join(c_literal(v, dtype) if v == low else str(v) for v in flat.tolist())


def math_suffix(dtype: _dt.DType) -> str:
    """The libm suffix for `dtype`: expf for float32, exp for float64."""
    return "f" if dtype is _dt.float32 else ""


def unsigned_ctype(dtype: _dt.DType) -> str:
    return {4: "uint32_t", 8: "uint64_t"}.get(dtype.size, "uint8_t")


def type_tag(dtype: _dt.DType) -> str:
    """The suffix of runtime helpers for `dtype`: f32, f64, i32, i64, b."""
    return {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "b"}[
        dtype.name
    ]


@dataclass(frozen=True)
class ExprTable:
    """An element-wise op's C expression per dtype: the one table the C and CUDA targets share.

    `exprs` maps a dtype name ("float32") or kind ("f", "i", "b") to a format_expr template;
    `guards` maps a kind to (condition, message) checked per element (integer division by
    zero); `out` fixes the output dtype (bool for comparisons); `params` gives extra
    placeholders from the op's attributes (the alpha of LeakyRelu).
    """

    exprs: dict
    guards: dict = field(default_factory=dict)
    out: _dt.DType | None = None
    params: Callable[[dict, _dt.DType], dict] | None = None

    def expr_for(self, dtype: _dt.DType) -> str | None:
        return self.exprs.get(dtype.name, self.exprs.get(dtype.kind))

    def guard_for(self, dtype: _dt.DType) -> tuple[str, str] | None:
        return self.guards.get(dtype.name, self.guards.get(dtype.kind))

    def supported(self) -> list[_dt.DType]:
        return [d for d in _dt.ALL if self.expr_for(d) is not None]


def format_expr(template: str, dtype: _dt.DType, *operands: str, **extra: str) -> str:
    """Fill an element-wise expression template of the op table for `dtype`.

    Placeholders: {0}, {1}... operands; {T} the C type; {U} its unsigned twin; {sfx} the libm
    suffix; {tag} the runtime helper suffix (f32, i64...). {out} is left for loop_kernel.
    """
    return template.format(
        *operands,
        out="{out}",
        T=dtype.c_type,
        U=unsigned_ctype(dtype),
        sfx=math_suffix(dtype),
        tag=type_tag(dtype),
        **extra,
    )
