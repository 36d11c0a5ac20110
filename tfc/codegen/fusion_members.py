"""One member of a fusion at one point, the same for the C and CUDA lowerings: its expression
(from the ops' shared expression table), its operands' dtypes, which members a loop reads, a
reduce member's accumulation, and a fused optimizer update's statements on one element."""

from __future__ import annotations

from tfc.ir import dtypes as _dt
from tfc.ops.fusion import UPDATES, Member, value_args
from tfc.ops.kernels import Param, c_literal, format_expr, math_suffix
from tfc.ops.linalg import matrix_strides
from tfc.ops.math import cast_expr
from tfc.ops.reduce import REDUCTIONS, Reduction
from tfc.ops.registry import OpContext, get_opdef

_SUM_TO_SHAPE = Reduction({"f": "{a} + {b}"}, lambda d: 0, None, wide_float32=True)
_FORWARD = ("Fill", "Tile", "SumToShape")  # members whose value is one of their inputs' values


def member_expr(m: Member, operands: list[str], dtypes: list[_dt.DType]) -> str | None:
    """The C expression of a map member over its operands' names; None when the member's
    value is one of its operands' (views, broadcasts, Fill)."""
    if m.kind == "view" or m.op in _FORWARD:
        return None
    if m.op in ("ZerosLike", "OnesLike"):
        return c_literal(0 if m.op == "ZerosLike" else 1, m.dtype)
    if m.op == "Cast":
        return cast_expr(dtypes[0], m.dtype).format(*operands)
    if m.op == "SelectV2":
        return f"{operands[0]} ? {operands[1]} : {operands[2]}"
    if m.op in ("AddN", "BiasAdd"):
        add = get_opdef("Add").expr.expr_for(m.dtype)
        expr = operands[0]
        for operand in operands[1:]:
            expr = format_expr(add, m.dtype, expr, operand)
        return expr
    table = get_opdef(m.op).expr
    extra = table.params(m.attrs, dtypes[0]) if table.params else {}
    return format_expr(table.expr_for(dtypes[0]), dtypes[0], *operands, **extra)


def phase_reads(plan, members: list[Member], phase: int) -> set[int]:
    """The members whose values the members computed in loop `phase` read."""
    return {members[c].args[p][1] for c in range(len(members))
            if plan.needed[c] and plan.phase[c] == phase
            for p in value_args(members[c]) if members[c].args[p][0] == "m"}  # fmt: skip


def map_member(
    ctx: OpContext, plan, members: list[Member], j: int, names: dict, load_names: dict
) -> list[str]:
    """Element-wise member j at one point, from its operands' names (members computed before
    it, or loaded inputs): `const T v<j> = expr;`, or nothing when it is a free view of its
    operand. Records the name of its value in `names` (C and CUDA lower members alike)."""
    m = members[j]
    operands = [
        names[m.args[p][1]] if m.args[p][0] == "m"
        else load_names[(m.args[p][1], plan.arg_dims[j][p])]
        for p in value_args(m)
    ]  # fmt: skip
    expr = member_expr(m, operands, [arg_dtype(ctx, members, a) for a in m.args])
    if expr is None:
        names[j] = operands[-1]
        return []
    names[j] = f"v{j}"
    return [f"const {m.dtype.c_type} v{j} = {expr};"]


def member_reduction(m: Member) -> Reduction:
    """The accumulation of a reduce member (the gradient pass's SumToShape is a wide sum)."""
    return _SUM_TO_SHAPE if m.op == "SumToShape" else REDUCTIONS[m.op]


def arg_dtype(ctx: OpContext, members: list[Member], arg: tuple) -> _dt.DType:
    """The dtype of a member's argument: a fusion input, an earlier member or a constant."""
    if arg[0] == "in":
        return ctx.in_dtypes[arg[1]]
    if arg[0] == "m":
        return members[arg[1]].dtype
    return _dt.as_dtype(arg[2].dtype)


def update_lines(
    ctx: OpContext, update, grad: str, ref_index: str, params: list, used_inputs: set
) -> list[str]:
    """The optimizer's statements (training_ops' own) on one element: the gradient `grad`,
    variable and slots at `ref_index`, scalar hyper-parameters."""
    rule = UPDATES[update.op]
    dtype = ctx.in_dtypes[0]
    names, lines, refs = {}, [], 0
    node_index = 0
    for name, kind in rule.inputs:
        if kind == "dense":
            lines.append(f"const {dtype.c_type} {name} = {grad};")
            names[name] = name
            continue
        if kind == "ref":
            params.append(Param(f"r{refs}", dtype.c_type, False, f"in{node_index}"))
            names[name] = f"r{refs}[{ref_index}]"
            refs += 1
        else:  # a scalar hyper-parameter, read broadcast
            used_inputs.add(node_index)
            lines.append(f"const {dtype.c_type} {name} = x{node_index}[0];")
            names[name] = name
        node_index += 1
    fmt = {"T": dtype.c_type, "one": c_literal(1, dtype), "sfx": math_suffix(dtype)}
    attrs = {**rule.defaults, **update.attrs}
    return lines + [s.format(**names, **fmt) for s in rule.statements(attrs, dtype)]


def member_gemm(ctx: OpContext, m: Member) -> tuple[int, int, int, int, int, int, int]:
    """(a, b, k, sam, sak, sbk, sbn) of a MatMul member: its operands' fusion inputs, the inner
    size and the stored matrices' strides (C's row-block GEMMs and CUDA's one GEMM alike)."""
    (_, a), (_, b) = m.args
    a_shape, b_shape = ctx.in_shapes[a], ctx.in_shapes[b]
    ta, tb = bool(m.attrs.get("transpose_a")), bool(m.attrs.get("transpose_b"))
    k = a_shape[0] if ta else a_shape[1]
    return (a, b, k, *matrix_strides(a_shape, b_shape, ta, tb))
