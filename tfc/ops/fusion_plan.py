"""Planning a fusion: which ops can be members, and how their values map onto one iteration space.

Every value of a fusion is indexed by one iteration space: each dim of size > 1 of a member
or an input runs along one dim of the space, so one loop nest computes each member once per
point, reads each input through its own broadcast strides and writes each exported member
once per element. A reduction ends a chain: it walks its input (which spans the space) and
keeps some dims; element-wise members reading reduced values run in a second loop over the
kept dims ("phase 1").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import num_elements
from tfc.ops.grad_ops import _summed_axes
from tfc.ops.reduce import REDUCTIONS
from tfc.ops.registry import get_opdef

VIEW_OPS = ("Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze")
# element-wise ops without an ExprTable; their C expressions are in fusion_lower.py
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
    if op in VIEW_OPS:
        return "view" if _non_unit(in_shapes[0]) == _non_unit(out_shape) else None
    if op == "MatMul":
        return "matmul" if in_dtypes[0] in GEMM_DTYPES else None
    if op in REDUCTIONS:
        return "reduce"
    if op == "SumToShape":
        return "reduce" if _summed_axes(in_shapes[0], out_shape) else "map"
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
        return _summed_axes(in_shape, member.shape)
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
        space = members[max(j for j in range(len(members)) if sizes[j] == max(sizes))].shape
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
