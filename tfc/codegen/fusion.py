"""Lowering of Fusion nodes: their kernel spec, and the C and CUDA kernels rendered from it.

The program lowering (codegen/lower.py) sends every Fusion and Fused<Op> node here:
`lower_fusion` plans the node (ops/fusion.py's plan_fusion) and returns one "fused" kernel whose
spec, a FusedSpec, holds the members, the plan and the node's input dtypes and shapes; its
parameters are the outputs, then the scratch of a row-block product, the update's refs, then
the inputs some member, GEMM or update reads. Each target renders the spec as it walks the
iteration space; both compose the same member expressions (`map_member`: the ops' shared
expression table) and an update's statements (training_ops' own).

C (`c_fused_body`): one loop nest walking memory order. Its body loads each input once per
point (one local per input and broadcast pattern), computes each needed member into a typed
local (so float32 results round as they do when stored between unfused kernels: the same
operations in the same order give the same bits), accumulates the reductions and writes the
exported members. The reductions walk their input in memory order with the accumulators of
the Sum/Mean/Max... kernels (double for float32 sums over a trailing reduced suffix), so they
too give the unfused bits. A MatMul member is computed GEMM_ROWS rows at a time (one
tfc_gemm_<t>_ex call: packed panels, all threads) into an output's buffer, or into the node's
scratch memory when no output keeps the product; the body then post-processes those rows while
they are in cache. A dense head (MatMul [+ bias] [+ Relu], only the last exported) is one GEMM
call with that epilogue. A fused optimizer update runs in the body (its gradient is
element-wise) or in a loop after the nest (its gradient is a reduction). Where a product's
rows are post-processed without a reduction (`c_fused_rows`: a weight gradient's update), each
block's rows are split between the threads after the block's GEMM. An element-wise nest
over rows of a few values (a bias over 6 channels) runs several rows per inner loop, so that
loop fills whole vectors.

CUDA (`cuda_fused`): the points of the space spread over threads. Without reductions, thread t
computes point t of the space: its loads, its members, its outputs and the fused update of its
element (templates/cuda/kernels/fused.cu.j2). With reductions, the space splits into the dims
they keep (one output o each) and the dims they run over (r): `<name>_span` computes the
element-wise producers at the points (o, r) of a range of r and folds them into one
accumulator per reduction; `<name>_finish` stores the outputs of o and runs what reads reduced
values (means finished, element-wise members after the reductions, an update of a reduced
gradient). fused_reduce.cu.j2 gives each output one thread (short reductions);
fused_reduce_block.cu.j2 splits its range over the threads of blocks merged in a fixed tree,
finishing in a second kernel (long ones, and any with a fused update): the same order of
summation on every run. A MatMul member is one GEMM (cuBLAS) launched before the kernel,
writing the whole product into the output that holds its rows; the kernel then reads it there
as its epilogue (bias, activation, gradients). The C kernel keeps only a block of rows in
scratch memory where no output holds the product: the CUDA target asks the fuse pass for no
such group (Target.fuse_row_scratch).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tfc.codegen.loops import (
    BLOCK_REDUCE_MIN,
    BLOCKS_WANTED,
    REDUCE_THREADS,
    THREADS,
    blocks,
    index_expr,
    nest_lines,
    unravel,
)
from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import num_elements
from tfc.ops.fusion import (
    UPDATES,
    FusedUpdate,
    Member,
    Plan,
    arg_shape,
    gemm_block_rows,
    loads_of,
    plan_fusion,
    reduce_axes,
    value_args,
)
from tfc.ops.kernels import (
    BFLOAT16_PRODUCTS,
    MIXED_PRECISION,
    Kernel,
    Param,
    c_literal,
    cast_expr,
    collapse_levels,
    contiguous_strides,
    elementwise_expr,
    format_expr,
    math_suffix,
    table_entry,
    type_tag,
)
from tfc.ops.linalg import matrix_strides
from tfc.ops.reduce import REDUCTIONS, Reduction, mean_finalize
from tfc.ops.registry import OpContext, get_opdef


@dataclass(frozen=True, eq=False)
class FusedSpec:
    """A Fusion node as its kernels need it: the members, what leaves the node, the update it
    runs, the node's inputs, and the plan mapping all onto one iteration space."""

    name: str
    members: tuple[Member, ...]
    outputs: tuple[int, ...]
    update: FusedUpdate | None
    row_scratch: int | None
    accumulate: int | None  # the input the product is added into in place (GEMM beta = 1)
    in_dtypes: tuple[_dt.DType, ...]
    in_shapes: tuple[tuple[int, ...], ...]
    plan: Plan
    # the program's mixed precision (kernels.MIXED_PRECISION): a float32 MatMul member's GEMM
    # rounds its operands to bfloat16 (tfc_gemm_bf16_f32_ex, tfc_cuda_gemm_bf16_f32)
    precision: str | None = None
    # the dense head's weights (its product's B, a variable the program only reads) stay in the
    # GEMM's panel layout between calls: its kernel has the params pk and ep of the packed copy
    # and the state epoch (tfc_gemm_packed.h)
    packed_b: bool = False

    @property
    def reduces(self) -> list[int]:
        return [j for j, m in enumerate(self.members) if m.kind == "reduce"]


def lower_fusion(ctx: OpContext) -> list[Kernel]:
    """The one kernel of a Fusion (or Fused<Op>) node."""
    members, outputs = tuple(ctx.attrs["members"]), tuple(ctx.attrs["outputs"])
    update = ctx.attrs.get("update")
    grad = update.grad if update is not None else None
    in_shapes = tuple(tuple(s) for s in ctx.in_shapes)
    plan = plan_fusion(list(members), list(outputs), list(in_shapes), grad)
    precision = ctx.graph.graph_attrs.get(MIXED_PRECISION) if ctx.graph is not None else None
    spec = FusedSpec(
        ctx.name, members, outputs, update, ctx.attrs.get("row_scratch"),
        ctx.attrs.get("accumulate"), tuple(ctx.in_dtypes), in_shapes, plan, precision,
    )  # fmt: skip
    return [Kernel("fused", _params(spec), spec)]


def gemm_function(spec: FusedSpec, m: Member, prefix: str) -> str:
    """The runtime GEMM of MatMul member `m` named `prefix` + its tag (tfc_gemm_f32, ...), or
    its bfloat16-operand form under mixed precision for a float32 product."""
    tag = type_tag(m.dtype)
    if spec.precision == BFLOAT16_PRODUCTS and m.dtype is _dt.float32:
        return f"{prefix}_bf16_{tag}"
    return f"{prefix}_{tag}"


def _params(spec: FusedSpec) -> list[Param]:
    """y<o> per output, s (the scratch of a row-block product), r<k> per ref of the update,
    then x<k> per input read: by a loop (either phase), the GEMM, or the update's scalars."""
    members, plan = spec.members, spec.plan
    params = [
        Param(f"y{o}", members[j].dtype.c_type, False, f"out{o}")
        for o, j in enumerate(spec.outputs)
    ]
    used = {k for k, _ in loads_of(list(members), plan, 0)}
    if spec.reduces:
        used |= {k for k, _ in loads_of(list(members), plan, 1)}
    if plan.matmul is not None and plan.needed[plan.matmul]:
        m = members[plan.matmul]
        used |= {a[1] for a in m.args}
        if spec.row_scratch == plan.matmul:
            params.append(Param("s", m.dtype.c_type, False, "scratch"))
    if spec.update is not None:
        dtype, refs, node_index = spec.in_dtypes[0], 0, 0
        for _, kind in UPDATES[spec.update.op].inputs:
            if kind == "ref":
                params.append(Param(f"r{refs}", dtype.c_type, False, f"in{node_index}"))
                refs += 1
            elif kind in ("scalar", "step"):
                used.add(node_index)
            node_index += kind != "dense"
    params += [Param(f"x{k}", spec.in_dtypes[k].c_type, True, f"in{k}") for k in sorted(used)]
    return params


# -- one member at one point: the same for C and CUDA -------------------------------------------
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
            expr = elementwise_expr(add, m.dtype, [expr, operand])
        return expr
    table = get_opdef(m.op).expr
    extra = table.params(m.attrs, dtypes[0].compute) if table.params else {}
    return elementwise_expr(table.expr_for(dtypes[0]), dtypes[0], operands, m.dtype, **extra)


def phase_reads(plan: Plan, members: tuple[Member, ...], phase: int) -> set[int]:
    """The members whose values the members computed in loop `phase` read."""
    return {members[c].args[p][1] for c in range(len(members))
            if plan.needed[c] and plan.phase[c] == phase
            for p in value_args(members[c]) if members[c].args[p][0] == "m"}  # fmt: skip


def map_member(spec: FusedSpec, j: int, names: dict, load_names: dict) -> list[str]:
    """Element-wise member j at one point, from its operands' names (members computed before
    it, or loaded inputs): `const T v<j> = expr;`, or nothing when it is a free view of its
    operand. Records the name of its value in `names` (C and CUDA lower members alike)."""
    m = spec.members[j]
    operands = [
        names[m.args[p][1]] if m.args[p][0] == "m"
        else load_names[(m.args[p][1], spec.plan.arg_dims[j][p])]
        for p in value_args(m)
    ]  # fmt: skip
    expr = member_expr(m, operands, [arg_dtype(spec, a) for a in m.args])
    if expr is None:
        names[j] = operands[-1]
        return []
    names[j] = f"v{j}"
    return [f"const {m.dtype.c_type} v{j} = {expr};"]


def member_reduction(m: Member) -> Reduction:
    """The accumulation of a reduce member (the gradient pass's SumToShape is a wide sum)."""
    return _SUM_TO_SHAPE if m.op == "SumToShape" else REDUCTIONS[m.op]


def arg_dtype(spec: FusedSpec, arg: tuple) -> _dt.DType:
    """The dtype of a member's argument: a fusion input, an earlier member or a constant."""
    if arg[0] == "in":
        return spec.in_dtypes[arg[1]]
    if arg[0] == "m":
        return spec.members[arg[1]].dtype
    return _dt.as_dtype(arg[2].dtype)


def mean_of(spec: FusedSpec, j: int) -> str | None:
    """The expression of {a} finishing reduce member j when it is a Mean (None otherwise)."""
    m = spec.members[j]
    if m.op != "Mean":
        return None
    x_shape = arg_shape(list(spec.members), list(spec.in_shapes), m.args[0])
    return mean_finalize(m.dtype, math.prod(x_shape[a] for a in reduce_axes(m, x_shape)))


def update_lines(spec: FusedSpec, grad: str, ref_index: str) -> list[str]:
    """The optimizer's statements (training_ops' own) on one element: the gradient `grad`,
    variable and slots at `ref_index` (params r0, r1...), scalar hyper-parameters (x<k>[0])."""
    update = spec.update
    rule = UPDATES[update.op]
    dtype = spec.in_dtypes[0]
    names, lines, refs = {}, [], 0
    node_index = 0
    for name, kind in rule.inputs:
        if kind == "dense":
            lines.append(f"const {dtype.c_type} {name} = {grad};")
            names[name] = name
            continue
        if kind == "ref":
            names[name] = f"r{refs}[{ref_index}]"
            refs += 1
        else:  # a scalar hyper-parameter, read broadcast
            lines.append(f"const {dtype.c_type} {name} = x{node_index}[0];")
            names[name] = name
        node_index += 1
    fmt = {"T": dtype.c_type, "one": c_literal(1, dtype), "sfx": math_suffix(dtype)}
    attrs = {**rule.defaults, **update.attrs}
    return lines + [s.format(**names, **fmt) for s in rule.statements(attrs, dtype)]


def member_gemm(spec: FusedSpec, m: Member) -> tuple[int, int, int, int, int, int, int]:
    """(a, b, k, sam, sak, sbk, sbn) of a MatMul member: its operands' fusion inputs, the inner
    size and the stored matrices' strides (C's row-block GEMMs and CUDA's one GEMM alike)."""
    (_, a), (_, b) = m.args
    a_shape, b_shape = spec.in_shapes[a], spec.in_shapes[b]
    ta, tb = bool(m.attrs.get("transpose_a")), bool(m.attrs.get("transpose_b"))
    k = a_shape[0] if ta else a_shape[1]
    return (a, b, k, *matrix_strides(a_shape, b_shape, ta, tb))


# -- C: one loop nest ------------------------------------------------------------------------------
class _Nest:
    """One loop nest over `shape`: its operands' strides are gathered first, then the loops
    are collapsed (dims of the same kind that every operand walks contiguously merge)."""

    def __init__(self, shape: tuple, kinds: list, prefix: str, merge: bool = True) -> None:
        self.shape, self.kinds, self.prefix, self.merge = shape, kinds, prefix, merge
        self.vectors: list[list[int]] = []

    def operand(self, shape: tuple, dims: tuple) -> int:
        vector = [0] * len(self.shape)
        for d, stride in zip(dims, contiguous_strides(shape)):
            if d is not None:
                vector[d] = stride
        self.vectors.append(vector)
        return len(self.vectors) - 1

    def close(self) -> None:
        if self.merge:
            self.bounds, self.strides, kinds = collapse_levels(self.shape, self.vectors, self.kinds)
        else:  # one loop per GEMM row, one per column
            self.bounds, self.strides, kinds = list(self.shape), self.vectors, list(self.kinds)
        self.vars = [f"{self.prefix}{k}" for k in range(len(self.bounds))]
        self.suffix = len(self.bounds)  # where the trailing run of reduced loops starts
        while self.suffix > 0 and kinds[self.suffix - 1]:
            self.suffix -= 1

    def widen_rows(self, loads: set[int], lanes: int = 16) -> dict[int, tuple[int, int]]:
        """Rows of a few values ([R, C], C < lanes: LeNet's 6 channels fill part of a vector)
        become rows of P*C, P consecutive rows in one loop the compiler vectorizes. Operands
        walking [R, C] contiguously keep their offsets; the loads repeating one row (a bias)
        are returned, {operand: (P*C, C)}: they read a local copy of the row repeated P times.
        No change (and {}) unless every operand is one of those or a scalar."""
        if len(self.bounds) != 2 or self.bounds[1] >= lanes:
            return {}
        rows, cols = self.bounds
        p = math.lcm(cols, lanes) // cols
        repeated = {k for k, v in enumerate(self.strides) if v == [0, 1]}
        walks = {tuple(v) for v in self.strides}
        if rows % p or rows == p or not repeated <= loads or walks - {(cols, 1), (0, 1), (0, 0)}:
            return {}
        self.bounds = [rows // p, p * cols]
        self.strides = [[p * cols, 1] if v == [cols, 1] else v for v in self.strides]
        return {k: (p * cols, cols) for k in repeated}

    def index(self, operand: int, levels: int | None = None) -> str:
        levels = len(self.bounds) if levels is None else levels
        return index_expr(self.strides[operand][:levels], self.vars[:levels])


# reductions to at most this many values accumulate in a local array (on the stack)
_LOCAL_ACCUMULATORS = 64


def c_fused_body(kernel: Kernel) -> list[str]:
    """The lines of the C kernel of a Fusion node: a dense head's GEMM call, or the initial
    values of its reductions, the nest over the space (phase 0), then, when there are
    reductions, a loop over the dims they keep (phase 1: finishing means, element-wise ops on
    reduced values, a fused update of a reduced gradient)."""
    spec: FusedSpec = kernel.spec
    if spec.accumulate is not None:
        return _gemm_accumulate(spec)
    head = _dense_head(spec)
    if head is not None:
        return ["    " + head]
    lowering = _CLowering(spec)
    members = spec.members
    lines = []
    for j in spec.reduces:
        reduction = member_reduction(members[j])
        init = c_literal(reduction.identity(members[j].dtype), members[j].dtype)
        o, count = spec.outputs.index(j), num_elements(members[j].shape)
        loop = f"for (int64_t o = 0; o < {count}; ++o) " if count > 1 else ""
        lines.append(f"    {loop}y{o}[{'o' if count > 1 else 0}] = {init};")
    lines += lowering.phase(0)
    scratch = spec.row_scratch
    if scratch is not None:  # the scratch output holds the product's last row
        m, o = members[scratch], spec.outputs.index(scratch)
        rows, n = m.shape
        last = (rows - 1) % gemm_block_rows(m) * n
        lines.append(f"    memcpy(y{o}, s + {last}, {n} * sizeof({m.dtype.c_type}));")
    if spec.reduces:
        lines += lowering.phase(1)
    return lines


def _gemm_accumulate(spec: FusedSpec) -> list[str]:
    """MatMul + Add of a whole input: the addend is copied into the output unless the memory
    plan gave them one buffer (a loop's gradient accumulator updated in place), then one GEMM
    adds the product to it (beta = 1). No pass over a separate product: the product's rows
    never leave the micro-kernel's registers. The sum starts from the addend (`acc + a0 b0 +
    a1 b1 ...`) where the unfused ops round `acc + (a0 b0 + a1 b1 ...)`."""
    mm, k = spec.members[0], spec.accumulate
    a, b, depth, sam, sak, sbk, sbn = member_gemm(spec, mm)
    rows, n = mm.shape
    one = c_literal(1, mm.dtype)
    return [
        f"    if (y0 != x{k}) memcpy(y0, x{k}, {rows * n} * sizeof({mm.dtype.c_type}));",
        f"    {gemm_function(spec, mm, 'tfc_gemm')}_ex({rows}, {n}, {depth}, x{a}, {sam}, {sak}, "
        f"x{b}, "
        f"{sbk}, {sbn}, y0, {n}, {one}, {one}, NULL, 0);",
    ]


def _dense_head(spec: FusedSpec) -> str | None:
    """MatMul [+ bias over columns] [+ Relu] with only the last exported: one GEMM call whose
    epilogue adds the bias and applies the ReLU before the tile leaves the registers (the
    same float operations as the separate loop: the same bits)."""
    members = spec.members
    if spec.update is not None or len(spec.outputs) != 1 or members[0].kind != "matmul":
        return None
    mm = members[0]
    if mm.dtype not in (_dt.float32, _dt.float64) or spec.outputs[0] != len(members) - 1:
        return None
    bias, relu, last = None, False, 0
    for j, m in enumerate(members[1:], start=1):
        args = [a for a in m.args if a[0] in ("m", "in")]
        if m.op in ("Add", "AddV2", "BiasAdd") and bias is None and not relu:
            chained = [a for a in args if a == ("m", last)]
            others = [a for a in args if a != ("m", last)]
            if len(chained) != 1 or len(others) != 1 or others[0][0] != "in":
                return None
            k = others[0][1]
            if m.op == "BiasAdd" and m.attrs.get("data_format", "NHWC") != "NHWC":
                return None
            shape = tuple(spec.in_shapes[k])
            if shape not in ((mm.shape[1],), (1, mm.shape[1])) or spec.in_dtypes[k] != mm.dtype:
                return None
            bias = k
        elif m.op == "Relu" and not relu and args == [("m", last)]:
            relu = True
        else:
            return None
        if m.shape != mm.shape or m.dtype != mm.dtype or len(args) != len(m.args):
            return None
        last = j
    if bias is None and not relu:
        return None
    a, b, k, sam, sak, sbk, sbn = member_gemm(spec, mm)
    m_rows, n = mm.shape
    one, zero = c_literal(1, mm.dtype), c_literal(0, mm.dtype)
    function, packed = f"{gemm_function(spec, mm, 'tfc_gemm')}_ex", ""
    if spec.packed_b:
        function, packed = f"{function}_packed", "pk, tfc_gemm_packed_epoch(ep), "
    return (
        f"{function}({m_rows}, {n}, {k}, x{a}, {sam}, {sak}, x{b}, {sbk}, {sbn}, {packed}y0, {n}, "
        f"{one}, {zero}, {'NULL' if bias is None else f'x{bias}'}, {int(relu)});"
    )


def dense_head_weights(spec: FusedSpec) -> tuple[int, tuple[int, int, int, int]] | None:
    """(the input of a dense head (one GEMM call, see _dense_head) that is its product's B,
    (M, N, K, B's column stride)) when its GEMM can read B pre-packed (float32 or float64
    operands as they are: not under mixed precision, whose GEMM rounds them); None for any
    other Fusion."""
    if spec.accumulate is not None or spec.precision is not None or _dense_head(spec) is None:
        return None
    mm = spec.members[0]
    _, b, k, _, _, _, sbn = member_gemm(spec, mm)
    return b, (mm.shape[0], mm.shape[1], k, sbn)


class _CLowering:
    """The loops of one Fusion node's C kernel, phase by phase."""

    def __init__(self, spec: FusedSpec) -> None:
        self.spec = spec
        self.names: dict[int, str] = {}

    def phase(
        self,
        phase: int,
        row_range: tuple[str, str] | None = None,
        col_range: tuple[str, str] | None = None,
        part_rows: tuple[str, str, str] | None = None,
    ) -> list[str]:
        """The loop nest of `phase`; with `row_range` (phase 0 of a product's post-processing,
        c_fused_rows), only the rows [begin, end) named by it, their GEMM blocks computed by
        the caller; with `col_range` (c_fused_cols: a part of the product's columns on one
        thread), only the columns [begin, end) named by it, in both phases, GEMM blocks
        included; with `part_rows` (begin, end, block: c_fused_row_parts, a part of the rows on
        one thread), only the rows [begin, end), their GEMM computed in blocks of `block` rows
        from `begin` into the part's scratch."""
        spec = self.spec
        plan, members, outputs = spec.plan, spec.members, spec.outputs
        space = plan.space
        if phase == 0:
            kinds = [k in plan.reduced for k in range(len(space))]
            nest = _Nest(space, kinds, "i", merge=plan.matmul is None)
        else:  # the reduced dims drop out
            kept = tuple(1 if k in plan.reduced else d for k, d in enumerate(space))
            nest = _Nest(kept, [False] * len(space), "e")
        loads = loads_of(list(members), plan, phase)
        load_at = [nest.operand(spec.in_shapes[k], dims) for k, dims in loads]
        out_at = {j: nest.operand(members[j].shape, plan.out_dims[j]) for j in outputs}
        scratch = spec.row_scratch
        if scratch is not None and phase == 0:  # one row, the same for every i0
            out_at[scratch] = nest.operand(space[1:], plan.out_dims[scratch][1:])
        grad = spec.update.grad if spec.update is not None else None
        # after reductions, the update runs in the loop over what they keep
        update_here = grad is not None and phase == int(bool(spec.reduces))
        if update_here:
            ref_at = nest.operand(members[grad].shape, plan.out_dims[grad])
        nest.close()
        body: list[str] = []
        before: dict[int, list[str]] = {}
        after: dict[int, list[str]] = {}
        # an element-wise nest over rows of a few values: several rows per inner loop (the same
        # operations per element: the same bits)
        simple = phase == 0 and grad is None and scratch is None and plan.matmul is None
        simple = simple and not spec.reduces and nest.merge
        repeated = nest.widen_rows(set(load_at)) if simple else {}
        prefix = "ab"[phase]  # distinct names: with no loops both phases share one scope
        load_names = {}
        for n, ((k, dims), at) in enumerate(zip(loads, load_at)):
            load_names[(k, dims)] = f"{prefix}{n}"
            ct, source = spec.in_dtypes[k].c_type, f"x{k}[{nest.index(at)}]"
            if at in repeated:
                (width, cols), row = repeated[at], f"r{prefix}{n}"
                before.setdefault(0, []).extend([
                    f"{ct} {row}[{width}];",
                    f"for (int64_t j = 0; j < {width}; ++j) "
                    f"{row}[j] = x{k}[TFC_IMOD(j, {cols})];",
                ])  # fmt: skip
                source = f"{row}[{nest.vars[1]}]"
            body.append(f"const {ct} {prefix}{n} = {source};")
        # the members whose values are read in this loop (by members of the phase, the update)
        read = phase_reads(plan, members, phase)
        if update_here:
            read.add(grad)
        for j, m in enumerate(members):
            if m.kind == "reduce":
                value = (
                    self.names.get(m.args[0][1]) if m.args[0][0] == "m"
                    else load_names.get((m.args[0][1], plan.arg_dims[j][0]))
                )  # fmt: skip
                self._reduce(j, nest, out_at[j], value, phase, body, before, after, read)
                continue
            if not plan.needed[j] or plan.phase[j] != phase:
                continue
            if m.kind == "matmul":  # its rows land in an output or the scratch; the loop reads them
                row = outputs[plan.row_buffer]
                outer, inner = _gemm_rows(
                    spec, m, plan.row_buffer, scratch == j, j in read, row_range is None,
                    col_range, part_rows,
                )  # fmt: skip
                before.setdefault(0, []).extend(outer)
                before.setdefault(1, []).extend(inner)
                if j in read:
                    index = nest.index(out_at[row])
                    source = "s_row" if scratch == j else f"y{plan.row_buffer}"
                    body.append(f"const {m.dtype.c_type} v{j} = {source}[{index}];")
                    self.names[j] = f"v{j}"
                continue
            body += map_member(spec, j, self.names, load_names)
        for o, j in enumerate(outputs):
            if members[j].kind == "map" and plan.phase[j] == phase:
                body.append(f"y{o}[{nest.index(out_at[j])}] = {self.names[j]};")
        if update_here:
            body += update_lines(spec, self.names[grad], nest.index(ref_at))
        if phase == 1 and not body:
            return []
        ranges = {}
        if col_range is not None:  # phase 0: rows x columns; phase 1: the kept columns
            if len(nest.bounds) != 2 - phase or nest.bounds[-1] != space[-1]:
                raise ValueError(f"no column range in a nest over {nest.bounds}")
            ranges[len(nest.bounds) - 1] = col_range
        first = part_rows[:2] if part_rows is not None else row_range
        return nest_lines(nest.bounds, nest.vars, body, before, after, first, ranges)

    def _reduce(self, j, nest, at, value, phase, body, before, after, read) -> None:
        """Phase 0: accumulate into the output (or a local over a trailing reduced run);
        phase 1: finish a mean, and load the value when later members read it."""
        m = self.spec.members[j]
        o = self.spec.outputs.index(j)
        reduction = member_reduction(m)
        if phase == 1:
            out = f"y{o}[{nest.index(at)}]"
            finalize = mean_of(self.spec, j)
            if finalize is not None:
                body.append(f"{out} = {finalize.format(a=out)};")
            if j in read:
                body.append(f"const {m.dtype.c_type} v{j} = {out};")
                self.names[j] = f"v{j}"
            return
        combine = format_expr(table_entry(reduction.combine, m.dtype), m.dtype, a="{a}", b="{b}")
        if nest.suffix < len(nest.bounds):
            # tfc_sum_f32: double, or float on a target without double hardware (tfc_math.h)
            wide = reduction.wide_float32 and m.dtype is _dt.float32
            acc = "tfc_sum_f32" if wide else m.dtype.c_type
            out = f"y{o}[{nest.index(at, nest.suffix)}]"
            before.setdefault(nest.suffix, []).append(f"{acc} acc{o} = {out};")
            body.append(f"acc{o} = " + combine.format(a=f"acc{o}", b=value) + ";")
            after.setdefault(nest.suffix, []).append(f"{out} = acc{o};")
        elif num_elements(m.shape) <= _LOCAL_ACCUMULATORS:
            # a few outputs (a bias gradient's channels): accumulate them in a local array, in
            # the same order and precision as in y, so the compiler, which cannot tell y from
            # the other outputs (one may be written in place of an input), keeps them in registers
            count, ct = num_elements(m.shape), m.dtype.c_type
            before.setdefault(0, []).extend([
                f"{ct} acc{o}[{count}];",
                f"for (int64_t o = 0; o < {count}; ++o) acc{o}[o] = y{o}[o];",
            ])  # fmt: skip
            acc = f"acc{o}[{nest.index(at)}]"
            body.append(f"{acc} = " + combine.format(a=acc, b=value) + ";")
            after.setdefault(0, []).insert(
                0, f"for (int64_t o = 0; o < {count}; ++o) y{o}[o] = acc{o}[o];"
            )
        else:
            out = f"y{o}[{nest.index(at)}]"
            body.append(f"{out} = " + combine.format(a=out, b=value) + ";")


def _gemm_call(
    spec: FusedSpec,
    m: Member,
    row_buffer: int,
    scratch: bool,
    row: str,
    cols: tuple[str, str] | None = None,
    part_end: tuple[str, str] | None = None,
) -> str:
    """The GEMM call of the block of rows starting at row `row` (a multiple of the block) of
    MatMul member `m`: into output `row_buffer`'s rows, or into the scratch rows; with `cols`
    (begin, end), only those columns of them (each element the same chain of multiply-adds
    as in the whole product: the same bits); with `part_end` (end, block), a block of at most
    `block` rows of a part that ends at row `end`."""
    a, b, k, sam, sak, sbk, sbn = member_gemm(spec, m)
    rows, n = m.shape
    block = gemm_block_rows(m)
    one, zero = c_literal(1, m.dtype), c_literal(0, m.dtype)
    a_rows = f"x{a} + {index_expr([sam], [row])}"
    c_rows = "s" if scratch else f"y{row_buffer} + {index_expr([n], [row])}"
    last, size = (str(rows), str(block)) if part_end is None else part_end
    count = f"({last} - {row} < {size} ? {last} - {row} : {size})"
    if part_end is None and rows % block == 0:
        count = str(block)
    if part_end is None and block == rows:
        a_rows, c_rows = f"x{a}", "s" if scratch else f"y{row_buffer}"
    b_cols, width = f"x{b}", str(n)
    if cols is not None:
        if not m.dtype.is_floating:
            raise ValueError("a column range of an integer product (no strided output)")
        begin, end = cols
        b_cols, c_rows, width = f"x{b} + {begin} * {sbn}", f"{c_rows} + {begin}", f"{end} - {begin}"
    if m.dtype.is_floating:
        return (
            f"{gemm_function(spec, m, 'tfc_gemm')}_ex({count}, {width}, {k}, {a_rows}, {sam}, "
            f"{sak}, {b_cols}, "
            f"{sbk}, {sbn}, {c_rows}, {n}, {one}, {zero}, NULL, 0);"
        )
    # integer products have no _ex form (nor its alpha, beta, bias): rows of n values
    return (
        f"tfc_gemm_{type_tag(m.dtype)}({count}, {n}, {k}, {a_rows}, {sam}, {sak}, x{b}, "
        f"{sbk}, {sbn}, {c_rows});"
    )


def _gemm_rows(
    spec: FusedSpec,
    m: Member,
    row_buffer: int,
    scratch: bool,
    read: bool,
    call: bool = True,
    cols: tuple[str, str] | None = None,
    part_rows: tuple[str, str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """The statements before the row loop and at its top: at every GEMM_ROWS-th row i0 (or
    once before the loop when one block holds all rows), the next block of rows of the
    product (only columns `cols` of it, when given), into output `row_buffer`'s rows or into
    the scratch rows, with s_row pointing at row i0's (the same operations per element as the
    whole product: the same bits). Without `call`, only s_row: the caller computes the
    blocks. With `part_rows` (begin, end, block), the blocks of a part's rows [begin, end)."""
    rows, n = m.shape
    block = gemm_block_rows(m)
    in_block = f"TFC_IMOD(i0, {block})"
    outer: list[str] = []
    inner: list[str] = []
    if part_rows is not None:
        begin, end, block_rows = part_rows
        in_block = f"TFC_IMOD(i0 - {begin}, {block_rows})"
        gemm = _gemm_call(spec, m, row_buffer, scratch, "i0", cols, (end, block_rows))
        inner.append(f"if ({in_block} == 0) {gemm}")
        if scratch and read:
            inner.append(f"const {m.dtype.c_type} *restrict s_row = s + {in_block} * {n};")
        return outer, inner
    if call:
        gemm = _gemm_call(spec, m, row_buffer, scratch, "i0", cols)
        outer, inner = ([gemm], []) if block == rows else ([], [f"if ({in_block} == 0) {gemm}"])
    if scratch and read:
        offset = "0" if rows == 1 else f"{in_block} * {n}" if block < rows else f"i0 * {n}"
        inner.append(f"const {m.dtype.c_type} *restrict s_row = s + {offset};")
    return outer, inner


def _row_split_product(kernel: Kernel):
    """The MatMul member of a Fusion kernel that a row split can run (its product over the
    kernel's whole 2-D space, post-processed element by element: no accumulation, reduction or
    failure), else None."""
    spec: FusedSpec = kernel.spec
    plan = spec.plan
    if spec.accumulate is not None or spec.reduces or kernel.can_fail:
        return None
    if plan.matmul is None or not plan.needed[plan.matmul] or _dense_head(spec) is not None:
        return None
    m = spec.members[plan.matmul]
    if len(plan.space) != 2 or tuple(plan.space) != tuple(m.shape):
        return None
    return m


def c_fused_rows(kernel: Kernel) -> dict | None:
    """The C kernel of a Fusion node whose MatMul member is post-processed element by element
    (no reduction: a fused optimizer update of a weight gradient, a ReluGrad), as the data of
    templates/c/kernels/fused_rows.c.j2: block by block, the GEMM (itself split between the
    threads) and then that block's rows split between the threads, each part running the
    element-wise loop over its rows. Every element is computed by the same statements as in
    the one-thread loop, whatever the part that runs it: the same bits. None for any other
    Fusion."""
    spec: FusedSpec = kernel.spec
    plan = spec.plan
    m = _row_split_product(kernel)
    if m is None:
        return None
    rows, n = m.shape
    scratch = spec.row_scratch == plan.matmul
    # the GEMM's operands and the outputs written after the loop are parameters it never reads
    unused = ", ".join(f"(void){p.name}" for p in kernel.params)
    lines = [f"    {unused};", *_CLowering(spec).phase(0, row_range=("begin", "end"))]
    after = _last_row_copy(spec)
    return {
        "fields": [f"{'const ' if p.const else ''}{p.ctype} *{p.name}" for p in kernel.params],
        "unpacked": ", ".join(f"c->{p.name}" for p in kernel.params),
        "rows_body": lines,
        "rows": rows,
        "cols": n,
        "block": gemm_block_rows(m),
        "gemm": _gemm_call(spec, m, plan.row_buffer, scratch, "b0"),
        "after": after,
    }


def _last_row_copy(spec: FusedSpec) -> list[str]:
    """The statement after a split kernel's parts: where the scratch output holds the
    product's last row, its copy from the last block's buffer (none otherwise)."""
    if spec.row_scratch is None:
        return []
    kept, o = spec.members[spec.row_scratch], spec.outputs.index(spec.row_scratch)
    last = (kept.shape[0] - 1) % gemm_block_rows(kept) * kept.shape[1]
    return [f"memcpy(y{o}, s + {last}, {kept.shape[1]} * sizeof({kept.dtype.c_type}));"]


# c_fused_row_parts' parts and GEMM blocks come in multiples of this many rows (tfc_gemm.h's
# MR: no part's product ends in a partial tile that the whole product has not); a part has at
# least _PART_TILES of them
_ROW_TILE = 6
_PART_TILES = 4


def c_fused_row_parts(kernel: Kernel) -> dict | None:
    """The C kernel of a Fusion node whose MatMul member is post-processed element by element
    with no reduction (a weight gradient's optimizer update), as the data of
    templates/c/kernels/fused_row_parts.c.j2: the rows split between the threads, each part
    running the whole kernel on its rows, its GEMM in blocks of its own (the scratch block's
    rows divided between the parts). A split by rows packs each row of A on one thread only
    and streams each thread's contiguous share of the variables and slots it updates, where a
    split by columns packs all of A on every thread and walks half of every row. Each element
    is the same chain of multiply-adds and the same update statements whatever the part: the
    same bits at any thread count. None for any other Fusion, for fewer than two parts' rows
    and for products of fewer than two column blocks (c_fused_rows splits those)."""
    spec: FusedSpec = kernel.spec
    plan = spec.plan
    m = _row_split_product(kernel)
    if m is None or not m.dtype.is_floating:
        return None
    rows, n = m.shape
    block = gemm_block_rows(m)
    if n < 2 * _COLUMN_BLOCK or rows < 2 * _PART_TILES * _ROW_TILE or block < _ROW_TILE:
        return None
    if spec.row_scratch not in (None, plan.matmul):
        return None
    lines = ["    " + ", ".join(f"(void){p.name}" for p in kernel.params) + ";"]
    lines += _CLowering(spec).phase(0, part_rows=("begin", "end", "block"))
    if spec.row_scratch is not None:  # the part holding the last row keeps it in its output
        o = spec.outputs.index(spec.row_scratch)
        lines += [
            f"    if (end == {rows} && end > begin)",
            f"        memcpy(y{o}, s + TFC_IMOD(end - 1 - begin, block) * {n}, "
            f"{n} * sizeof({m.dtype.c_type}));",
        ]
    # each part computes its blocks into its own rows of the scratch block
    unpacked = [
        f"c->s + part * c->block * {n}" if p.name == "s" else f"c->{p.name}" for p in kernel.params
    ]
    return {
        "fields": [f"{'const ' if p.const else ''}{p.ctype} *{p.name}" for p in kernel.params],
        "unpacked": ", ".join(unpacked),
        "rows_body": lines,
        "rows": rows,
        "cols": n,
        "block": block,
        "tile": _ROW_TILE,
        "max_parts": min(block // _ROW_TILE, rows // (_PART_TILES * _ROW_TILE)),
        "depth": member_gemm(spec, m)[2],
    }


# the columns of c_fused_cols' parts come in multiples of this: every target's NR panel width
# (AVX-512: 64 floats), so no part's GEMM ends in a partial panel that a whole product has not
_COLUMN_BLOCK = 64


def c_fused_cols(kernel: Kernel) -> dict | None:
    """The C kernel of a Fusion node whose MatMul member is post-processed element by element
    (a weight gradient's update that c_fused_row_parts does not split: too few rows) or
    reduced over its rows (a bias gradient: dX = dY W^T,
    ReluGrad, the column Sum, its Adam update), as the data of
    templates/c/kernels/fused_cols.c.j2: the columns split between the threads, each part
    running the whole kernel on its columns, the GEMM blocks of those columns included, so a
    thread post-processes the values it has just computed, in its own cache, and the kernel
    is one parallel call. Each column's sum still runs over the rows in order and each product
    element is the same chain of multiply-adds: the same bits whatever the thread count. None
    for any other Fusion and for products of fewer than two blocks of columns (c_fused_rows
    splits the rows of those)."""
    spec: FusedSpec = kernel.spec
    plan = spec.plan
    if spec.accumulate is not None or kernel.can_fail:
        return None
    if plan.matmul is None or not plan.needed[plan.matmul] or _dense_head(spec) is not None:
        return None
    m = spec.members[plan.matmul]
    if not m.dtype.is_floating or len(plan.space) != 2 or tuple(plan.space) != tuple(m.shape):
        return None
    rows, n = m.shape
    if n < 2 * _COLUMN_BLOCK or (spec.reduces and set(plan.reduced) != {0}):
        return None
    if any(num_elements(spec.members[j].shape) != n for j in spec.reduces):
        return None
    lowering = _CLowering(spec)
    cols = ("c0", "c1")
    # the part reads only its columns of each parameter, some of them in none of its loops
    lines = ["    " + ", ".join(f"(void){p.name}" for p in kernel.params) + ";"]
    for j in spec.reduces:
        reduction = member_reduction(spec.members[j])
        init = c_literal(reduction.identity(spec.members[j].dtype), spec.members[j].dtype)
        lines.append(f"    for (int64_t o = c0; o < c1; ++o) y{spec.outputs.index(j)}[o] = {init};")
    lines += lowering.phase(0, col_range=cols)
    if spec.reduces:
        lines += lowering.phase(1, col_range=cols)
    after = _last_row_copy(spec)
    return {
        "fields": [f"{'const ' if p.const else ''}{p.ctype} *{p.name}" for p in kernel.params],
        "unpacked": ", ".join(f"c->{p.name}" for p in kernel.params),
        "cols_body": lines,
        "rows": rows,
        "cols": n,
        "depth": member_gemm(spec, m)[2],
        "column_block": _COLUMN_BLOCK,
        "after": after,
    }


# -- CUDA: the space's points over threads -----------------------------------------------------
def cuda_fused(kernel: Kernel) -> tuple[str, dict]:
    """The CUDA template of a Fusion's kernel and its data."""
    return _CudaFusion(kernel.spec, [p.name for p in kernel.params]).template()


class _CudaFusion:
    """One Fusion node as per-thread C statements over the iteration space's coordinates."""

    def __init__(self, spec: FusedSpec, param_names: list[str]) -> None:
        self.spec = spec
        self.param_names = param_names
        if spec.plan.matmul is not None and spec.row_scratch is not None:
            raise NotImplementedError(
                f"Fusion '{spec.name}' keeps its product's rows in scratch memory: the CUDA "
                "target's fuse pass forms no such group (Target.fuse_row_scratch)"
            )
        self._index_space()
        self.names: dict[int, str] = {}

    # -- the space's coordinates -------------------------------------------------------------
    def _index_space(self) -> None:
        """Every operand's strides over the space, collapsed where all walk it contiguously
        (a kept dim never merges with a reduced one); kept levels come from the output index
        o, reduced ones from r."""
        spec = self.spec
        plan, members = spec.plan, list(spec.members)
        space = plan.space
        vectors: list[list[int]] = []

        def operand(shape: tuple, dims: tuple) -> int:
            vector = [0] * len(space)
            for d, stride in zip(dims, contiguous_strides(shape)):
                if d is not None:
                    vector[d] = stride
            vectors.append(vector)
            return len(vectors) - 1

        self.loads = {p: loads_of(members, plan, p) for p in (0, 1)}
        self.load_at = {
            (p, n): operand(spec.in_shapes[k], dims)
            for p in (0, 1) for n, (k, dims) in enumerate(self.loads[p])
        }  # fmt: skip
        self.out_at = {j: operand(members[j].shape, plan.out_dims[j]) for j in spec.outputs}
        if spec.update is not None:
            g = spec.update.grad
            self.ref_at = operand(members[g].shape, plan.out_dims[g])
        kinds = [k in plan.reduced for k in range(len(space))]
        bounds, self.strides, levels = collapse_levels(space, vectors, kinds)
        self.vars = [f"i{k}" for k in range(len(bounds))]
        self.kept = [b for b, r in zip(bounds, levels) if not r]
        self.reduced = [b for b, r in zip(bounds, levels) if r]
        self.kept_vars = [v for v, r in zip(self.vars, levels) if not r]
        self.reduced_vars = [v for v, r in zip(self.vars, levels) if r]

    def index(self, operand: int) -> str:
        return index_expr(self.strides[operand], self.vars)

    # -- statements ----------------------------------------------------------------------------
    def template(self) -> tuple[str, dict]:
        launch = {"launch_before": self._gemm()}
        if not self.spec.reduces:
            body = self._phase(0, [])
            total = math.prod(self.kept)
            return "fused", launch | {
                "at_body": _coordinates("t", self.kept, self.kept_vars, "rest") + body,
                "at_unused": self._unused(body),
                "total": total,
                "threads": THREADS,
                "blocks": blocks(total, THREADS),
            }
        return self._reduce_template(launch)

    def _gemm(self) -> list[str]:
        """The GEMM of a MatMul member, launched before the kernel: the whole product into the
        output that holds its rows (the MatMul's own, or one post-processing it in place)."""
        plan = self.spec.plan
        if plan.matmul is None:
            return []
        m = self.spec.members[plan.matmul]
        a, b, k, sam, sak, sbk, sbn = member_gemm(self.spec, m)
        rows, n = m.shape
        out = f"y{plan.row_buffer}"
        return [
            f"{gemm_function(self.spec, m, 'tfc_cuda_gemm')}({rows}, {n}, {k}, x{a}, {sam}, {sak}, "
            f"x{b}, "
            f"{sbk}, {sbn}, {out});"
        ]

    def _reduce_template(self, launch: dict) -> tuple[str, dict]:
        accs = []
        for j in self.spec.reduces:
            m = self.spec.members[j]
            reduction = member_reduction(m)
            wide = reduction.wide_float32 and m.dtype is _dt.float32
            combine = table_entry(reduction.combine, m.dtype)
            combine = format_expr(combine, m.dtype, a="{a}", b="{b}")
            accs.append({
                "ctype": "double" if wide else m.dtype.c_type,
                "name": f"acc{len(accs)}",
                "init": f"({m.dtype.c_type})({c_literal(reduction.identity(m.dtype), m.dtype)})",
                "merge": _merge(combine, len(accs)),
                "combine": combine,
            })  # fmt: skip
        span = self._phase(0, accs)
        finish = self._phase(1, accs)
        out_count, count = math.prod(self.kept), math.prod(self.reduced)
        # a fused update after the reductions writes variables that other outputs' threads
        # may still read before them (a variable read along a reduced dim): the separate
        # finishing kernel of the block form runs after every read
        block = count >= BLOCK_REDUCE_MIN or self.spec.update is not None
        # enough blocks to fill the GPU: few outputs with many elements each split into chunks
        chunks = max(1, min(-(-count // (REDUCE_THREADS * 8)), BLOCKS_WANTED // out_count))
        per_chunk = -(-count // chunks)
        threads = REDUCE_THREADS if block else THREADS
        for k, acc in enumerate(accs):
            part = f"part{k}[o * {chunks} + chunk]"
            acc["finish_merge"] = f"{acc['name']} = " + acc["combine"].format(
                a=acc["name"], b=part
            ) + ";"  # fmt: skip
        o_lines = _coordinates("o", self.kept, self.kept_vars, "rest_o")
        r_lines = _coordinates("r", self.reduced, self.reduced_vars, "rest_r")
        data = {
            "accs": accs,
            "acc_params": ", ".join(f"{a['ctype']} *{a['name']}" for a in accs),
            "acc_args": ", ".join(a["name"] for a in accs),
            "acc_refs": ", ".join(f"&{a['name']}" for a in accs),
            "acc_values": ", ".join(f"{a['ctype']} {a['name']}" for a in accs),
            "span_outer": o_lines,
            "span_body": r_lines + span,
            "span_unused": self._unused(o_lines + r_lines + span),
            "finish_body": o_lines + finish,
            "finish_unused": self._unused(o_lines + finish),
            "total": out_count,
            "count": count,
            "chunks": chunks,
            "per_chunk": per_chunk,
            "parts": out_count * chunks,
            "threads": threads,
            "blocks": max(1, min(out_count * chunks, 65535))
            if block
            else blocks(out_count, threads),
            "finish_blocks": blocks(out_count, 256),
        }
        return ("fused_reduce_block" if block else "fused_reduce"), launch | data

    def _unused(self, lines: list[str]) -> list[str]:
        """The parameters a helper's statements never name: (void) them (-Wunused-parameter)."""
        text = "\n".join(lines)
        return [p for p in self.param_names if not re.search(rf"\b{p}\b", text)]

    def _phase(self, phase: int, accs: list[dict]) -> list[str]:
        """Phase 0: the statements at one point (loads, members, accumulation into *acc<k>,
        the outputs of element-wise members); phase 1: at one kept point after the reductions
        (their outputs from acc<k>, members reading them, a reduced gradient's update)."""
        spec = self.spec
        plan, members = spec.plan, spec.members
        body: list[str] = []
        load_names = {}
        for n, (k, dims) in enumerate(self.loads[phase]):
            name = f"{'ab'[phase]}{n}"
            load_names[(k, dims)] = name
            at = self.index(self.load_at[(phase, n)])
            body.append(f"const {spec.in_dtypes[k].c_type} {name} = x{k}[{at}];")
        grad = spec.update.grad if spec.update is not None else None
        update_here = grad is not None and phase == int(bool(spec.reduces))
        read = phase_reads(plan, members, phase)
        if update_here:
            read.add(grad)
        for j, m in enumerate(members):
            if m.kind == "reduce":
                k = spec.reduces.index(j)
                if phase == 0:
                    a = m.args[0]
                    value = (self.names[a[1]] if a[0] == "m"
                             else load_names[(a[1], plan.arg_dims[j][0])])  # fmt: skip
                    acc = f"*acc{k}"
                    body.append(f"{acc} = " + accs[k]["combine"].format(a=acc, b=value) + ";")
                else:
                    body += self._reduced_value(j, k, j in read)
                continue
            if not plan.needed[j] or plan.phase[j] != phase:
                continue
            if m.kind == "matmul":  # the GEMM launched before the kernel wrote it there
                if j in read:
                    row = spec.outputs[plan.row_buffer]
                    at = self.index(self.out_at[row])
                    body.append(f"const {m.dtype.c_type} v{j} = y{plan.row_buffer}[{at}];")
                    self.names[j] = f"v{j}"
                continue
            body += map_member(spec, j, self.names, load_names)
        for o, j in enumerate(spec.outputs):
            if members[j].kind == "map" and plan.phase[j] == phase:
                body.append(f"y{o}[{self.index(self.out_at[j])}] = {self.names[j]};")
        if update_here:
            body += update_lines(spec, self.names[grad], self.index(self.ref_at))
        return body

    def _reduced_value(self, j: int, k: int, read: bool) -> list[str]:
        """A reduction's output at one kept point: its accumulator stored (a mean finished),
        and loaded into v<j> when later members read it."""
        m = self.spec.members[j]
        out = f"y{self.spec.outputs.index(j)}[{self.index(self.out_at[j])}]"
        lines = [f"{out} = ({m.dtype.c_type})acc{k};"]
        finalize = mean_of(self.spec, j)
        if finalize is not None:
            lines.append(f"{out} = {finalize.format(a=out)};")
        if read:
            lines.append(f"const {m.dtype.c_type} v{j} = {out};")
            self.names[j] = f"v{j}"
        return lines


def _coordinates(index: str, bounds: list[int], names: list[str], rest: str) -> list[str]:
    """The coordinates of `index` (each voided: a point may not read all of them)."""
    return [
        *unravel(index, bounds, names, rest),
        f"(void){index};",
        *(f"(void){v};" for v in names),
    ]


def _merge(combine: str, k: int) -> str:
    """A step of the shared-memory tree: the thread folds in its partner's partial."""
    return (
        f"sh{k}[threadIdx.x] = "
        + combine.format(a=f"sh{k}[threadIdx.x]", b=f"sh{k}[threadIdx.x + s]")
        + ";"
    )
