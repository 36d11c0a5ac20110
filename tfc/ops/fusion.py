"""The Fusion op: a small dataflow of element-wise ops run as one kernel, and the fused updates.

A Fusion node holds, in attrs["members"], the ops it replaced (`Member`s, in topological
order), each reading fusion inputs ("in", k), earlier members ("m", j) or compile-time values
("const", node, value); attrs["outputs"] lists the members whose values leave the node, one
output each. Members are element-wise maps with NumPy broadcasting, free views that only
insert or drop size-1 dims, reductions at the end of a chain (what reads a reduced value runs
in a loop after them), and at most one rank-2 MatMul whose rows the other members post-process
(bias-add + activation); attrs["row_scratch"] names a MatMul output that only holds the row
being post-processed (one row). How it all maps onto one loop nest: tfc/ops/fusion_plan.py;
its C: tfc/ops/fusion_lower.py.

A Fused<Op> node (FusedApplyAdam, FusedAssign...) is a Fusion that also runs an update op (an
optimizer's Apply, an assignment) on a member's value, element by element where the gradient
is computed (or in the loop after the reductions, for a reduced one): its leading inputs are
the update's own (variable, slots, hyper-parameters, in TF's order, without the gradient),
attrs["update"] says which member is the gradient. It is stateful, with the update's ref
inputs; its outputs are the exported members only (the pass folds only updates whose own
output nothing reads).

The NumPy reference evaluates the members with their own references, then the update's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ops.flops import elementwise_flops
from tfc.ops.fusion_plan import arg_shape, loads_of, plan_fusion
from tfc.ops.kernels import format_expr
from tfc.ops.registry import OpContext, OpDef, as_output_list, get_opdef, register
from tfc.ops.training_ops import _SPECS as _TRAINING_SPECS


@dataclass(frozen=True)
class UpdateRule:
    """An op that updates variables in place, as a fused update runs it: its inputs in order,
    each "ref" (updated), "scalar" (read broadcast) or "dense" (the one value the fusion
    computes: the gradient), and its C statements for one element, over {ref} names and the
    other inputs' names ({T}, {one}, {sfx} for the dtype)."""

    inputs: tuple[tuple[str, str], ...]
    statements: Callable[[dict, _dt.DType], list[str]]
    defaults: dict


def _assignment(op: str | None) -> UpdateRule:
    """Assign (op None), AssignAdd (Add), AssignSub (Sub): the statement of their kernels."""

    def statements(attrs: dict, dtype: _dt.DType) -> list[str]:
        if op is None:
            return ["{ref} = value;"]
        expr = format_expr(get_opdef(op).expr.expr_for(dtype), dtype, "{ref}", "value")
        return ["{ref} = " + expr + ";"]

    return UpdateRule((("ref", "ref"), ("value", "dense")), statements, {})


# training_ops' own statements for the optimizers: the fused update computes what they do
UPDATES: dict[str, UpdateRule] = {
    op: UpdateRule(inputs, lambda attrs, dtype, st=st: st(attrs), defaults)
    for op, (inputs, _, st, defaults) in _TRAINING_SPECS.items()
}
UPDATES.update(Assign=_assignment(None), AssignAdd=_assignment("Add"), AssignSub=_assignment("Sub"))


@dataclass(frozen=True, eq=False)
class FusedUpdate:
    """The update (an optimizer's Apply op, an assignment) a Fused<op> node runs on member
    `grad`'s value."""

    name: str  # the node it was
    op: str  # "ApplyAdam", "Assign", ...
    attrs: dict
    grad: int  # the member holding the gradient (the assigned value)
    inputs: int  # the node's leading inputs that are the update's (its inputs but the gradient)

    @property
    def grad_position(self) -> int:
        return update_grad_position(self.op)

    def __repr__(self) -> str:
        return f"{self.name} ({self.op} of member {self.grad})"


def update_grad_position(op: str) -> int:
    """The position of an update op's gradient (assigned value) among its inputs."""
    return next(i for i, (_, kind) in enumerate(UPDATES[op].inputs) if kind == "dense")


# -- the op: shape rule, NumPy reference, FLOPs --------------------------------------------------
def member_context(members: list, in_dtypes: list, in_shapes: list, j: int) -> OpContext:
    m = members[j]
    dtypes, shapes = [], []
    for a in m.args:
        if a[0] == "in":
            dtypes.append(in_dtypes[a[1]])
        elif a[0] == "m":
            dtypes.append(members[a[1]].dtype)
        else:
            dtypes.append(_dt.as_dtype(np.asarray(a[2]).dtype))
        shapes.append(arg_shape(members, in_shapes, a))
    return OpContext(m.name, m.op, m.attrs, dtypes, shapes, [m.dtype], [m.shape])


def member_outputs(attrs: dict) -> list[tuple[_dt.DType, tuple]]:
    """The (dtype, shape) of the exported members. A MatMul whose value nothing outside
    reads (its rows feed an update, a reduction) keeps only one row: attrs["row_scratch"]."""
    members = attrs["members"]
    return [
        (
            members[j].dtype,
            members[j].shape[-1:] if j == attrs.get("row_scratch") else members[j].shape,
        )
        for j in attrs["outputs"]
    ]


def _infer(ctx: OpContext) -> list:
    return member_outputs(ctx.attrs)


def _reference(ctx: OpContext, *xs: np.ndarray) -> list:
    members, update = ctx.attrs["members"], ctx.attrs.get("update")
    values: list = []
    for j, m in enumerate(members):
        args = [xs[a[1]] if a[0] == "in" else values[a[1]] if a[0] == "m" else a[2]
                for a in m.args]  # fmt: skip
        mctx = member_context(members, ctx.in_dtypes, ctx.in_shapes, j)
        values.append(as_output_list(get_opdef(m.op).reference(mctx, *args))[0])
    scratch = ctx.attrs.get("row_scratch")
    outs = [values[j][-1] if j == scratch else values[j] for j in ctx.attrs["outputs"]]
    if update is None:
        return outs
    args = list(xs[: update.inputs])
    args.insert(update.grad_position, values[update.grad])
    dtypes = list(ctx.in_dtypes[: update.inputs])
    dtypes.insert(update.grad_position, members[update.grad].dtype)
    uctx = OpContext(
        ctx.name, update.op, update.attrs, dtypes, [np.shape(a) for a in args],
        out_dtypes=dtypes[:1], out_shapes=[np.shape(args[0])],
        state=ctx.state, ref_names=ctx.ref_names,
    )  # fmt: skip
    get_opdef(update.op).reference(uctx, *args)  # writes the variables in the state
    return outs


def _flops(ctx: OpContext) -> int:
    members, update = ctx.attrs["members"], ctx.attrs.get("update")
    total = 0
    for j, m in enumerate(members):
        opdef = get_opdef(m.op)
        mctx = member_context(members, ctx.in_dtypes, ctx.in_shapes, j)
        if opdef.flops is not None:
            total += opdef.flops(mctx)
        elif opdef.expr is not None:
            total += elementwise_flops(mctx)
    if update is not None and get_opdef(update.op).flops is not None:
        shape = tuple(ctx.in_shapes[0])
        uctx = OpContext(ctx.name, update.op, update.attrs, [], [], [ctx.in_dtypes[0]], [shape])
        total += get_opdef(update.op).flops(uctx)
    return total


def inplace_inputs(
    members: list, outputs: list, in_shapes: list, in_dtypes: list, update: FusedUpdate | None
) -> tuple:
    """Inputs output 0 may overwrite: read in the main loop along exactly its dims, never
    after it, nor by a GEMM (which reads whole rows), nor by the update (after the writes)."""
    if not outputs:
        return ()
    plan = plan_fusion(members, outputs, in_shapes)
    first = outputs[0]
    if plan.matmul is not None or members[first].kind != "map" or plan.phase[first]:
        return ()
    loads, later = loads_of(members, plan, 0), loads_of(members, plan, 1)
    return tuple(
        k
        for k in sorted({k for k, _ in loads} - {k for k, _ in later})
        if update is None or k >= update.inputs
        if all(dims == plan.out_dims[first] for kk, dims in loads if kk == k)
        and tuple(in_shapes[k]) == members[first].shape
        and in_dtypes[k].size == members[first].dtype.size
    )


def _inplace(ctx: OpContext) -> tuple[int, ...]:
    members, outputs = list(ctx.attrs["members"]), list(ctx.attrs["outputs"])
    update = ctx.attrs.get("update")
    return inplace_inputs(members, outputs, list(ctx.in_shapes), list(ctx.in_dtypes), update)


def _scratch(ctx: OpContext) -> int:
    from tfc.codegen.fusion_lower import fusion_scratch_bytes

    return fusion_scratch_bytes(ctx)


def _lower(ctx: OpContext) -> list:
    from tfc.codegen.fusion_lower import lower_fusion

    return lower_fusion(ctx)


def fused_update_type(update_op: str) -> str:
    """The op type of a fusion ending in `update_op` (e.g. ApplyAdam -> FusedApplyAdam)."""
    return "Fused" + update_op


def is_fusion(op_type: str) -> bool:
    return op_type == "Fusion" or op_type in FUSED_UPDATE_TYPES


def describe_members(attrs: dict, in_names: list[str]) -> list[str]:
    """One line per member, as the C comment of an unfused node reads: `name (Op): (inputs)`."""
    members = attrs["members"]
    lines = []
    for m in members:
        ins = []
        for a in m.args:
            if a[0] == "in":
                ins.append(in_names[a[1]])
            elif a[0] == "m":
                ins.append(f"{members[a[1]].name}:0")
            else:
                ins.append(f"{a[1]}:0")
        shape = ",".join(str(d) for d in m.shape)
        lines.append(f"{m.name} ({m.op}): ({', '.join(ins)}) -> {m.dtype.name}[{shape}]")
    update = attrs.get("update")
    if update is not None:
        ins = in_names[: update.inputs]
        ins.insert(update.grad_position, f"{members[update.grad].name}:0")
        lines.append(f"{update.name} ({update.op}): ({', '.join(ins)})")
    return lines


register(
    OpDef(
        "Fusion",
        infer=_infer,
        reference=_reference,
        lower=_lower,
        differentiable=False,
        inplace=_inplace,
        scratch=_scratch,
        flops=_flops,
    )
)
FUSED_UPDATE_TYPES: dict[str, str] = {}  # fused type -> update type
for _type, _rule in UPDATES.items():
    FUSED_UPDATE_TYPES[fused_update_type(_type)] = _type
    register(
        OpDef(
            fused_update_type(_type),
            infer=_infer,
            reference=_reference,
            lower=_lower,
            differentiable=False,
            stateful=True,
            # the refs precede the gradient in every update op: their positions do not move
            ref_inputs=tuple(i for i, (_, kind) in enumerate(_rule.inputs) if kind == "ref"),
            reads_ref=get_opdef(_type).reads_ref,
            inplace=_inplace,
            scratch=_scratch,
            flops=_flops,
        )
    )
