"""C lowering of the Fusion op: the members' C expressions composed into one loop nest.

The body of the nest loads each input once per point (one local per input and broadcast
pattern), computes each needed member into a typed local (so float32 results round as they
do when stored between unfused kernels: the same operations in the same order give the same
bits), accumulates the reductions and writes the exported members. The reductions walk their
input in memory order with the accumulators of the Sum/Mean/Max... kernels (double for
float32 sums over a trailing reduced suffix), so they too give the unfused bits. A MatMul
member is computed GEMM_ROWS rows at a time (one tfc_gemm_<t>_ex call: packed panels, all
threads) into an output's buffer, or into the node's scratch memory when no output keeps the
product; the body then post-processes those rows while they are in cache. A dense head
(MatMul [+ bias] [+ Relu], only the last exported) is one GEMM call with that epilogue. A fused
optimizer update runs in the body (its gradient is element-wise) or in a loop after the nest
(its gradient is a reduction). An element-wise nest over rows of a few values (a bias over
6 channels) runs several rows per inner loop, so that loop fills whole vectors.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tfc.codegen.fusion_members import (
    map_member,
    member_gemm,
    member_reduction,
    phase_reads,
    update_lines,
)
from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import num_elements
from tfc.ops.fusion import (
    Member,
    arg_shape,
    gemm_block_rows,
    loads_of,
    plan_fusion,
    reduce_axes,
)
from tfc.ops.kernels import (
    Param,
    c_literal,
    collapse_levels,
    contiguous_strides,
    format_expr,
    fused_kernel,
    index_expr,
    nest_lines,
    type_tag,
)
from tfc.ops.reduce import mean_finalize
from tfc.ops.registry import OpContext


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


def lower_fusion(ctx: OpContext) -> list:
    return _Lowering(ctx).kernels()


class _Lowering:
    """The C of one Fusion node: the nest over the space (phase 0), then, when there are
    reductions, a loop over the dims they keep (phase 1: finishing means, element-wise ops on
    reduced values, a fused update of a reduced gradient)."""

    def __init__(self, ctx: OpContext) -> None:
        self.ctx = ctx
        self.members: list[Member] = list(ctx.attrs["members"])
        self.outputs: list[int] = list(ctx.attrs["outputs"])
        self.update = ctx.attrs.get("update")
        grad = self.update.grad if self.update is not None else None
        self.plan = plan_fusion(self.members, self.outputs, list(ctx.in_shapes), grad)
        self.params = [
            Param(f"y{o}", self.members[j].dtype.c_type, False, f"out{o}")
            for o, j in enumerate(self.outputs)
        ]
        self.used_inputs: set[int] = set()
        self.names: dict[int, str] = {}

    def kernels(self) -> list:
        members = self.members
        head = self._dense_head()
        if head is not None:
            return head
        reduces = [j for j, m in enumerate(members) if m.kind == "reduce"]
        prologue = []
        for j in reduces:
            spec = member_reduction(members[j])
            init = c_literal(spec.identity(members[j].dtype), members[j].dtype)
            o, count = self.outputs.index(j), num_elements(members[j].shape)
            loop = f"for (int64_t o = 0; o < {count}; ++o) " if count > 1 else ""
            prologue.append(f"{loop}y{o}[{'o' if count > 1 else 0}] = {init};")
        nests = self._phase(0)
        scratch = self.ctx.attrs.get("row_scratch")
        if scratch is not None:  # the scratch output holds the product's last row
            m, o = members[scratch], self.outputs.index(scratch)
            rows, n = m.shape
            last = (rows - 1) % gemm_block_rows(m) * n
            nests.append(f"    memcpy(y{o}, s + {last}, {n} * sizeof({m.dtype.c_type}));")
        if reduces:
            nests += self._phase(1)
        params = self.params + [
            Param(f"x{k}", self.ctx.in_dtypes[k].c_type, True, f"in{k}")
            for k in sorted(self.used_inputs)
        ]
        return fused_kernel(params, prologue, nests, _node_only(self.ctx))

    def _dense_head(self) -> list | None:
        """MatMul [+ bias over columns] [+ Relu] with only the last exported: one GEMM call whose
        epilogue adds the bias and applies the ReLU before the tile leaves the registers (the
        same float operations as the separate loop: the same bits)."""
        members, ctx = self.members, self.ctx
        if self.update is not None or len(self.outputs) != 1 or members[0].kind != "matmul":
            return None
        mm = members[0]
        if mm.dtype not in (_dt.float32, _dt.float64) or self.outputs[0] != len(members) - 1:
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
                shape = tuple(ctx.in_shapes[k])
                if shape not in ((mm.shape[1],), (1, mm.shape[1])) or ctx.in_dtypes[k] != mm.dtype:
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
        a, b, k, sam, sak, sbk, sbn = member_gemm(ctx, mm)
        m_rows, n = mm.shape
        one, zero = c_literal(1, mm.dtype), c_literal(0, mm.dtype)
        inputs = sorted({a, b} | ({bias} if bias is not None else set()))
        params = self.params + [
            Param(f"x{i}", ctx.in_dtypes[i].c_type, True, f"in{i}") for i in inputs
        ]
        call = (
            f"tfc_gemm_{type_tag(mm.dtype)}_ex({m_rows}, {n}, {k}, x{a}, {sam}, {sak}, x{b}, "
            f"{sbk}, {sbn}, y0, {n}, {one}, {zero}, {'NULL' if bias is None else f'x{bias}'}, "
            f"{int(relu)});"
        )
        return fused_kernel(params, [call], [], _node_only(ctx))

    def _phase(self, phase: int) -> list[str]:
        plan, members, outputs = self.plan, self.members, self.outputs
        space = plan.space
        if phase == 0:
            kinds = [k in plan.reduced for k in range(len(space))]
            nest = _Nest(space, kinds, "i", merge=plan.matmul is None)
        else:  # the reduced dims drop out
            kept = tuple(1 if k in plan.reduced else d for k, d in enumerate(space))
            nest = _Nest(kept, [False] * len(space), "e")
        loads = loads_of(members, plan, phase)
        load_at = [nest.operand(tuple(self.ctx.in_shapes[k]), dims) for k, dims in loads]
        out_at = {j: nest.operand(members[j].shape, plan.out_dims[j]) for j in outputs}
        scratch = self.ctx.attrs.get("row_scratch")
        if scratch is not None and phase == 0:  # one row, the same for every i0
            out_at[scratch] = nest.operand(space[1:], plan.out_dims[scratch][1:])
        grad = self.update.grad if self.update is not None else None
        # after reductions, the update runs in the loop over what they keep
        reduces = any(m.kind == "reduce" for m in members)
        update_here = grad is not None and phase == int(reduces)
        if update_here:
            ref_at = nest.operand(members[grad].shape, plan.out_dims[grad])
        nest.close()
        body: list[str] = []
        before: dict[int, list[str]] = {}
        after: dict[int, list[str]] = {}
        # an element-wise nest over rows of a few values: several rows per inner loop (the same
        # operations per element: the same bits)
        simple = phase == 0 and grad is None and scratch is None and plan.matmul is None
        simple = simple and not reduces and nest.merge
        repeated = nest.widen_rows(set(load_at)) if simple else {}
        prefix = "ab"[phase]  # distinct names: with no loops both phases share one scope
        load_names = {}
        for n, ((k, dims), at) in enumerate(zip(loads, load_at)):
            self.used_inputs.add(k)
            load_names[(k, dims)] = f"{prefix}{n}"
            ct, source = self.ctx.in_dtypes[k].c_type, f"x{k}[{nest.index(at)}]"
            if at in repeated:
                (width, cols), row = repeated[at], f"r{prefix}{n}"
                before.setdefault(0, []).extend([
                    f"{ct} {row}[{width}];",
                    f"for (int64_t j = 0; j < {width}; ++j) {row}[j] = x{k}[j % {cols}];",
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
                row = self.outputs[plan.row_buffer]
                outer, inner = _gemm_rows(self.ctx, m, plan.row_buffer, scratch == j, j in read)
                before.setdefault(0, []).extend(outer)
                before.setdefault(1, []).extend(inner)
                self.used_inputs.update(a[1] for a in m.args)
                if scratch == j:
                    self.params.append(Param("s", m.dtype.c_type, False, "scratch"))
                if j in read:
                    index = nest.index(out_at[row])
                    source = "s_row" if scratch == j else f"y{plan.row_buffer}"
                    body.append(f"const {m.dtype.c_type} v{j} = {source}[{index}];")
                    self.names[j] = f"v{j}"
                continue
            body += map_member(self.ctx, plan, members, j, self.names, load_names)
        for o, j in enumerate(outputs):
            if members[j].kind == "map" and plan.phase[j] == phase:
                body.append(f"y{o}[{nest.index(out_at[j])}] = {self.names[j]};")
        if update_here:
            body += update_lines(self.ctx, self.update, self.names[grad],
                                  nest.index(ref_at), self.params, self.used_inputs)  # fmt: skip
        if phase == 1 and not body:
            return []
        return nest_lines(nest.bounds, nest.vars, body, before, after)

    def _reduce(self, j, nest, at, value, phase, body, before, after, read) -> None:
        """Phase 0: accumulate into the output (or a local over a trailing reduced run);
        phase 1: finish a mean, and load the value when later members read it."""
        m = self.members[j]
        o = self.outputs.index(j)
        spec = member_reduction(m)
        if phase == 1:
            out = f"y{o}[{nest.index(at)}]"
            x_shape = arg_shape(self.members, list(self.ctx.in_shapes), m.args[0])
            count = math.prod(x_shape[a] for a in reduce_axes(m, x_shape))
            finalize = mean_finalize(m.dtype, count) if m.op == "Mean" else None
            if finalize is not None:
                body.append(f"{out} = {finalize.format(a=out)};")
            if j in read:
                body.append(f"const {m.dtype.c_type} v{j} = {out};")
                self.names[j] = f"v{j}"
            return
        combine = format_expr(spec.combine[m.dtype.kind], m.dtype, a="{a}", b="{b}")
        if nest.suffix < len(nest.bounds):
            acc = "double" if spec.wide_float32 and m.dtype is _dt.float32 else m.dtype.c_type
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


# reductions to at most this many values accumulate in a local array (on the stack)
_LOCAL_ACCUMULATORS = 64


def _node_only(ctx: OpContext) -> OpContext:
    """The node's own context, without the program graph (what a kernel may keep)."""
    return replace(ctx, graph=None, inputs=(), state=None, ref_names=())


def _gemm_rows(
    ctx: OpContext, m: Member, row_buffer: int, scratch: bool, read: bool
) -> tuple[list[str], list[str]]:
    """The statements before the row loop and at its top: at every GEMM_ROWS-th row i0 (or
    once before the loop when one block holds all rows), the next block of rows of the
    product, into output `row_buffer`'s rows or into the scratch rows, with s_row pointing at
    row i0's (the same operations per element as the whole product: the same bits)."""
    a, b, k, sam, sak, sbk, sbn = member_gemm(ctx, m)
    rows, n = m.shape
    block = gemm_block_rows(m)
    one, zero = c_literal(1, m.dtype), c_literal(0, m.dtype)
    a_rows = f"x{a} + {index_expr([sam], ['i0'])}"
    c_rows = "s" if scratch else f"y{row_buffer} + {index_expr([n], ['i0'])}"
    if block == rows:
        a_rows, c_rows = f"x{a}", "s" if scratch else f"y{row_buffer}"
    count = f"({rows} - i0 < {block} ? {rows} - i0 : {block})" if rows % block else str(block)
    call = (
        f"tfc_gemm_{type_tag(m.dtype)}_ex({count}, {n}, {k}, {a_rows}, {sam}, {sak}, x{b}, "
        f"{sbk}, {sbn}, {c_rows}, {n}, {one}, {zero}, NULL, 0);"
    )
    outer, inner = ([call], []) if block == rows else ([], [f"if (i0 % {block} == 0) {call}"])
    if scratch and read:
        offset = "0" if rows == 1 else f"(i0 % {block}) * {n}" if block < rows else f"i0 * {n}"
        inner.append(f"const {m.dtype.c_type} *restrict s_row = s + {offset};")
    return outer, inner
