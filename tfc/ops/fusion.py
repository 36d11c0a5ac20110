"""The Fusion op: a small dataflow of element-wise ops run as one kernel, and the fused updates.

A Fusion node holds, in attrs["members"], the ops it replaced (`Member`s, in topological
order), each reading fusion inputs ("in", k), earlier members ("m", j) or compile-time values
("const", node, value); attrs["outputs"] lists the members whose values leave the node, one
output each. Members are element-wise maps with NumPy broadcasting, free views that only
insert or drop size-1 dims, reductions at the end of a chain (what reads a reduced value runs
in a loop after them), and at most one rank-2 MatMul whose rows the other members post-process
(bias-add + activation); attrs["row_scratch"] names a MatMul output that only holds the row
being post-processed (one row); attrs["accumulate"] names the input a MatMul + Add group adds
its product to in place (`accumulate_input`: the GEMM accumulates into that buffer).

This module is the plan side: which ops can be members (what the fuse pass asks), how their
values map onto one iteration space (`plan_fusion`), the op's shape rule, NumPy reference,
FLOPs, in-place inputs and scratch. The kernels of a Fusion node (C and CUDA) are lowered by
tfc/codegen/fusion.py, which the program lowering sends Fusion nodes to.

Every value of a fusion is indexed by one iteration space: each dim of size > 1 of a member
or an input runs along one dim of the space, so one loop nest computes each member once per
point, reads each input through its own broadcast strides and writes each exported member
once per element. A reduction ends a chain: it walks its input (which spans the space) and
keeps some dims; element-wise members reading reduced values run in a second loop over the
kept dims ("phase 1").

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
from dataclasses import dataclass, field

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import num_elements
from tfc.ops.flops import elementwise_flops
from tfc.ops.grad_ops import summed_axes
from tfc.ops.kernels import format_expr
from tfc.ops.reduce import REDUCTIONS
from tfc.ops.registry import OpContext, OpDef, as_output_list, get_opdef, register
from tfc.ops.training_ops import UPDATE_SPECS

VIEW_OPS = ("Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze")
# element-wise ops without an ExprTable; their expressions are in tfc/codegen/fusion.py
MAP_OPS = ("Cast", "AddN", "SelectV2", "BiasAdd", "ZerosLike", "OnesLike", "Fill", "Tile")
GEMM_DTYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)

Arg = tuple  # ("in", k) | ("m", j) | ("const", node name, value)


@dataclass(frozen=True, eq=False)
class Member:
    """One op inside a fusion: the node it was, and where its inputs come from."""

    name: str
    op: str
    kind: str  # "map", "view", "reduce" or "matmul"
    attrs: dict
    args: tuple[Arg, ...]
    dtype: _dt.DType
    shape: tuple[int, ...]

    def __repr__(self) -> str:  # one line per member in graph dumps
        args = ", ".join(f"{a[0]}{a[1]}" if a[0] != "const" else a[1] for a in self.args)
        return f"{self.name} ({self.op}: {args})"


class Unfusable(ValueError):
    """A set of ops that cannot run as one loop nest (the message says why)."""


# -- which ops can be members --------------------------------------------------------------------
def member_kind(
    op: str, attrs: dict, in_dtypes: list, in_shapes: list, out_shape: tuple, consts: dict
) -> str | None:
    """The member kind of an op with these (concrete) inputs, or None when it cannot be one.
    `consts` holds the values of its compile-time inputs (axes, shapes, multiples)."""
    opdef = get_opdef(op)
    if opdef.stateful or opdef.random:
        return None
    if opdef.computes_in is not None and any(opdef.computes_in(d) is not d for d in in_dtypes):
        return None  # its kernels run in a wider dtype, through copies in scratch memory
    if op in VIEW_OPS:
        return "view" if _non_unit(in_shapes[0]) == _non_unit(out_shape) else None
    if op == "MatMul":
        return "matmul" if in_dtypes[0] in GEMM_DTYPES else None
    if op in REDUCTIONS:
        return "reduce"
    if op == "SumToShape":
        return "reduce" if summed_axes(in_shapes[0], out_shape) else "map"
    if op == "Tile":
        multiples = consts.get(1)
        if multiples is None:
            return None
        pairs = zip(in_shapes[0], np.ravel(multiples).tolist())
        return "map" if all(d == 1 or m == 1 for d, m in pairs) else None
    if op in ("AddN", "BiasAdd"):  # sums spelled as Add's expression
        return "map" if get_opdef("Add").expr.expr_for(in_dtypes[0]) is not None else None
    if op in MAP_OPS:
        return "map"
    table = opdef.expr
    if table is None or not in_dtypes or table.expr_for(in_dtypes[0]) is None:
        return None
    # ops that can fail (integer division by zero) keep their own kernel, which names them
    return None if table.guard_for(in_dtypes[0]) is not None else "map"


def reduce_axes(member: Member, in_shape: tuple) -> list[int]:
    """The axes of its input that a reduce member sums (or maxes...) over."""
    if member.op == "SumToShape":
        return summed_axes(in_shape, member.shape)
    axes = np.ravel(member.args[1][2]).tolist()
    return sorted({int(a) % len(in_shape) for a in axes}) if in_shape else []


def value_args(member: Member) -> list[int]:
    """The positions of the args whose elements the member reads (not only their shape)."""
    if member.op in ("ZerosLike", "OnesLike") or member.kind == "matmul":
        return []
    if member.op == "Fill":
        return [1]
    return [i for i, a in enumerate(member.args) if a[0] != "const"]


def _non_unit(shape: tuple) -> tuple:
    return tuple(d for d in shape if d != 1)


# -- the iteration space -------------------------------------------------------------------------
@dataclass
class Plan:
    """How a fusion's values map onto its iteration space.

    `dims` of a tensor: for each of its dims, the space dim it runs along (None for size 1).
    Phase 0 members are computed in the loop nest over the space; phase 1 members (element-wise
    ops on reduced values) in a loop over the kept dims after it.
    """

    space: tuple[int, ...]
    out_dims: list  # per member
    arg_dims: list  # per member, per arg: dims, or None (a const arg, a GEMM operand, unread)
    reduced: frozenset  # the space dims the reductions run over
    phase: list  # per member: 0 or 1
    matmul: int | None  # the MatMul member
    row_buffer: int | None  # the output whose buffer receives the GEMM's rows
    needed: list  # per member: whether the kernel computes its value


def arg_shape(members: list, in_shapes: list, arg: Arg) -> tuple:
    if arg[0] == "in":
        return tuple(in_shapes[arg[1]])
    if arg[0] == "m":
        return members[arg[1]].shape
    return tuple(np.shape(arg[2]))


def is_full(dims: tuple, space: tuple, within: frozenset = frozenset()) -> bool:
    """Whether a tensor with `dims` has one element per point of the space (but its dims
    `within`, when it lives after the reductions over them)."""
    return sum(d is not None for d in dims) == sum(
        s != 1 and k not in within for k, s in enumerate(space)
    )


def plan_fusion(members: list, outputs: list, in_shapes: list, grad: int | None = None) -> Plan:
    """Map every member and input onto one iteration space; raises Unfusable when impossible.

    The space is the MatMul's output, else the first reduction's input, else the largest
    member. Dims are derived from consumers back to producers, by each op's broadcasting
    rule; a value that two consumers would read along different space dims is refused.
    Members reading a reduced value run after the reductions, over the dims they keep.
    """
    matmuls = [j for j, m in enumerate(members) if m.kind == "matmul"]
    reduces = [j for j, m in enumerate(members) if m.kind == "reduce"]
    if len(matmuls) > 1:
        raise Unfusable("more than one MatMul")
    consumers: list[list] = [[] for _ in members]
    phase = [0] * len(members)
    for c, m in enumerate(members):
        for pos in value_args(m):
            if m.args[pos][0] == "m":
                i = m.args[pos][1]
                consumers[i].append((c, pos))
                phase[c] = max(phase[c], phase[i], int(members[i].kind == "reduce"))
        if m.kind == "matmul" and any(a[0] != "in" for a in m.args):
            raise Unfusable(f"MatMul '{m.name}' reads a value computed in the fusion")
        if phase[c] and m.kind in ("reduce", "matmul"):
            raise Unfusable(f"'{m.name}' reads a reduced value")
    exported = set(outputs)
    for j in reversed(range(len(members))):  # what only phase 1 reads is computed there
        if members[j].kind in ("map", "view") and consumers[j] and j not in exported:
            phase[j] = max(phase[j], min(phase[c] for c, _ in consumers[j]))
    for c, m in enumerate(members):
        for pos in value_args(m):
            i = m.args[pos][1] if m.args[pos][0] == "m" else None
            if phase[c] and i is not None and not phase[i] and members[i].kind != "reduce":
                raise Unfusable(f"'{members[i].name}' is needed before and after a reduction")
    if matmuls:
        space = members[matmuls[0]].shape
    elif reduces:
        space = arg_shape(members, in_shapes, members[reduces[0]].args[0])
    else:
        sizes = [num_elements(m.shape) for m in members]
        largest = max(sizes)  # the last member of the largest size spans the space
        space = members[max(j for j, size in enumerate(sizes) if size == largest)].shape
    ident = tuple(k if d != 1 else None for k, d in enumerate(space))

    out_dims: list = [None] * len(members)
    arg_dims: list = [[None] * len(m.args) for m in members]
    reduced_sets = set()
    for j in reduces:  # a reduction's input spans the space; its output keeps the other dims
        m = members[j]
        x_shape = arg_shape(members, in_shapes, m.args[0])
        x_dims = _aligned(x_shape, space, ident)
        if x_dims is None or not is_full(x_dims, space):
            raise Unfusable(f"the input of '{m.name}' does not span the iteration space")
        axes = reduce_axes(m, x_shape)
        arg_dims[j][0] = x_dims
        reduced_sets.add(frozenset(x_dims[a] for a in axes if x_dims[a] is not None))
        kept = [d for a, d in enumerate(x_dims) if a not in axes and d is not None]
        out_dims[j] = _assign_in_order(m.shape, kept)
    if len(reduced_sets) > 1:
        raise Unfusable("reductions over different dims")
    reduced = next(iter(reduced_sets)) if reduced_sets else frozenset()
    after = (members[reduces[0]].shape, out_dims[reduces[0]]) if reduces else None
    for j in reversed(range(len(members))):
        m = members[j]
        wanted = [arg_dims[c][pos] for c, pos in consumers[j]]
        if j == grad and not reduces:
            wanted.append(_aligned(m.shape, space, ident))
        if not wanted and m.kind != "reduce":  # a sink: aligned with its phase's space
            if m.kind == "matmul":
                wanted = [ident]
            else:
                wanted = [
                    _aligned(m.shape, *after) if phase[j] else _aligned(m.shape, space, ident)
                ]
        if m.kind == "reduce":
            wanted.append(out_dims[j])
        if any(w is None or w != wanted[0] for w in wanted):
            raise Unfusable(f"'{m.name}' would be read along different dims")
        out_dims[j] = wanted[0]
        if m.kind == "matmul" and wanted[0] != ident:
            raise Unfusable(f"MatMul '{m.name}' is not the iteration space")
        if m.kind in ("matmul", "reduce"):
            continue
        for pos in value_args(m):
            shape = arg_shape(members, in_shapes, m.args[pos])
            dims = _arg_dims(m, out_dims[j], pos, shape)
            if dims is None or (phase[j] and any(d in reduced for d in dims)):
                raise Unfusable(f"input {pos} of '{m.name}' does not map onto the space")
            arg_dims[j][pos] = dims
    for j in [*outputs, *([grad] if grad is not None else [])]:
        m = members[j]
        if m.kind == "view" and j != grad:
            raise Unfusable(f"view '{m.name}' cannot be an output")
        if m.kind != "reduce" and not is_full(out_dims[j], space, reduced if phase[j] else ()):
            raise Unfusable(f"output '{m.name}' is smaller than its loop")
    if grad is not None and reduces and not (phase[grad] or members[grad].kind == "reduce"):
        raise Unfusable("the gradient of a fused update after a reduction must be reduced")
    row_buffer = None
    if matmuls:
        mm = members[matmuls[0]]
        # the MatMul's own output when it is exported, else one of its dtype post-processing it
        rows = [k for k, j in enumerate(outputs) if j == matmuls[0]] + [
            k for k, j in enumerate(outputs)
            if members[j].kind == "map" and not phase[j] and members[j].dtype == mm.dtype
        ]  # fmt: skip
        row_buffer = rows[0] if rows else None
        if row_buffer is None:
            raise Unfusable(f"no output of MatMul '{mm.name}''s shape and dtype holds its rows")
    needed = [False] * len(members)
    stack = list(outputs) + ([grad] if grad is not None else [])
    while stack:
        j = stack.pop()
        if not needed[j]:
            needed[j] = True
            stack.extend(members[j].args[p][1] for p in value_args(members[j])
                         if members[j].args[p][0] == "m")  # fmt: skip
    mm_index = matmuls[0] if matmuls else None
    return Plan(space, out_dims, arg_dims, reduced, phase, mm_index, row_buffer, needed)


def _aligned(shape: tuple, out_shape: tuple, out_dims: tuple) -> tuple | None:
    """NumPy broadcasting: `shape` right-aligned against `out_shape`."""
    lead = len(out_shape) - len(shape)
    if lead < 0:
        return None
    dims = []
    for k, d in enumerate(shape):
        if d == 1:
            dims.append(None)
        elif d == out_shape[k + lead]:
            dims.append(out_dims[k + lead])
        else:
            return None
    return tuple(dims)


def _assign_in_order(shape: tuple, dims: list) -> tuple | None:
    """The size > 1 dims of `shape` take `dims` in order (views, reduction outputs)."""
    if sum(d != 1 for d in shape) != len(dims):
        return None
    it = iter(dims)
    return tuple(None if d == 1 else next(it) for d in shape)


def _arg_dims(m: Member, out_dims: tuple, pos: int, shape: tuple) -> tuple | None:
    if m.kind == "view":
        return _assign_in_order(shape, [d for d in out_dims if d is not None])
    if m.op == "BiasAdd" and pos == 1:
        axis = 1 if m.attrs.get("data_format") == "NCHW" else len(m.shape) - 1
        return (None,) if shape[0] == 1 else (out_dims[axis],)
    if m.op == "Tile":
        return tuple(o if d != 1 else None for d, o in zip(shape, out_dims))
    if m.op == "Fill":
        return ()
    return _aligned(shape, m.shape, out_dims)


def loads_of(members: list[Member], plan: Plan, phase: int) -> list[tuple[int, tuple]]:
    """The distinct (input, dims) reads of a phase's loop body, in order of first use."""
    loads: list[tuple[int, tuple]] = []
    for j, m in enumerate(members):
        if plan.needed[j] and plan.phase[j] == phase:
            for pos in value_args(m):
                a = m.args[pos]
                if a[0] == "in" and (a[1], plan.arg_dims[j][pos]) not in loads:
                    loads.append((a[1], plan.arg_dims[j][pos]))
    return loads


# -- fused updates ------------------------------------------------------------------------------
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
    for op, (inputs, _, st, defaults) in UPDATE_SPECS.items()
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
    consts = {p: a[2] for p, a in enumerate(m.args) if a[0] == "const"}
    return _MemberContext(
        m.name, m.op, m.attrs, dtypes, shapes, [m.dtype], [m.shape], consts=consts
    )


@dataclass
class _MemberContext(OpContext):
    """A member's context: its compile-time operands are in its args, not in a graph."""

    consts: dict = field(default_factory=dict)

    def const(self, i: int) -> np.ndarray | None:
        return self.consts.get(i)


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
    """The exported members' dtypes and shapes, once every member's own shape rule agrees,
    on the node's inputs, with the dtype and shape the member records (a pass that rewires a
    fusion's input to a tensor of another shape fails here, under verification)."""
    members = ctx.attrs["members"]
    if len(ctx.in_shapes) < _input_count(members):
        raise ctx.error(f"Fusion has {len(ctx.in_shapes)} inputs; its members read more")
    for j, m in enumerate(members):
        mctx = member_context(members, ctx.in_dtypes, ctx.in_shapes, j)
        if any(s is None for s in mctx.in_shapes):
            continue  # a shape not known yet (before specialization): nothing to check
        (dtype, shape), *_ = get_opdef(m.op).infer(mctx)
        if dtype != m.dtype or (shape is not None and tuple(shape) != m.shape):
            raise ctx.error(
                f"member '{m.name}' ({m.op}) computes {dtype.name}{list(shape or ())} from "
                f"its inputs, but the fusion records {m.dtype.name}{list(m.shape)}"
            )
    return member_outputs(ctx.attrs)


def _input_count(members: list) -> int:
    return 1 + max((a[1] for m in members for a in m.args if a[0] == "in"), default=-1)


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


def accumulate_input(
    members: list, outputs: list, in_shapes: list, in_dtypes: list, update: FusedUpdate | None
) -> int | None:
    """The input a MatMul + Add group may accumulate its product into (a GEMM with beta = 1
    writing over that input): the group is a float MatMul and an Add of it and a whole input of
    its shape and dtype, only the sum leaves it, and there is no update. A gradient summed over
    a loop's iterations (a weight's, `acc + matmul(x_t, dz_t, transpose_a=True)`) is one."""
    if update is not None or len(members) != 2 or list(outputs) != [1]:
        return None
    mm, add = members
    if mm.kind != "matmul" or mm.dtype not in (_dt.float32, _dt.float64):
        return None
    if add.op not in ("Add", "AddV2") or add.shape != mm.shape or add.dtype != mm.dtype:
        return None
    others = [a for a in add.args if a != ("m", 0)]
    if len(add.args) != 2 or len(others) != 1 or others[0][0] != "in":
        return None
    k = others[0][1]
    if tuple(in_shapes[k]) != mm.shape or in_dtypes[k] != mm.dtype:
        return None
    return k


def _inplace(ctx: OpContext) -> tuple[int, ...]:
    members, outputs = list(ctx.attrs["members"]), list(ctx.attrs["outputs"])
    update = ctx.attrs.get("update")
    if ctx.attrs.get("accumulate") is not None:  # the GEMM adds its product to that input
        return (ctx.attrs["accumulate"],)
    return inplace_inputs(members, outputs, list(ctx.in_shapes), list(ctx.in_dtypes), update)


GEMM_ROWS = 144  # rows of a fused product per GEMM call of the C kernel: one MC block of tfc_gemm.h


def gemm_block_rows(m: Member) -> int:
    """Rows of a fused MatMul computed per GEMM call (and held by its scratch)."""
    return min(GEMM_ROWS, m.shape[0])


def _scratch(ctx: OpContext) -> int:
    """A fused MatMul whose product no output keeps computes its rows into scratch memory."""
    j = ctx.attrs.get("row_scratch")
    if j is None:
        return 0
    m = ctx.attrs["members"][j]
    return gemm_block_rows(m) * m.shape[1] * m.dtype.size


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
