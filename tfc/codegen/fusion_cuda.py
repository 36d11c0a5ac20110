"""CUDA lowering of the Fusion op: the members' expressions (the C target's table) per thread.

The C kernel of a Fusion is one loop nest walking memory order; a GPU wants the points of the
iteration space spread over threads. Without reductions, thread t computes point t of the
space: its loads, its members, its outputs and the fused update of its element
(templates/cuda/per_element.cu.j2). With reductions, the space splits into the dims they keep
(one output o each) and the dims they run over (r): `<name>_span` computes the element-wise
producers at the points (o, r) of a range of r and folds them into one accumulator per
reduction; `<name>_finish` stores the outputs of o and runs what reads reduced values (means
finished, element-wise members after the reductions, an update of a reduced gradient). The
kernels of templates/cuda/kernels/fused.cu.j2 give each output one thread (short reductions)
or split its range over the threads of blocks merged in a fixed tree, finishing in a second
kernel (long ones, and any with a fused update): the same order of summation on every run.

A MatMul member is one GEMM (cuBLAS) launched before the kernel, writing the whole product
into the output that holds its rows; the kernel then reads it there as its epilogue (bias,
activation, gradients). The C kernel keeps only a block of rows in scratch memory where no
output holds the product: the CUDA target asks the fuse pass for no such group
(Target.fuse_row_scratch).
"""

from __future__ import annotations

import math
import re

from tfc.codegen.cuda import (
    BLOCK_REDUCE_MIN,
    BLOCKS_WANTED,
    MAX_BLOCKS,
    REDUCE_THREADS,
    THREADS,
    unravel,
)
from tfc.codegen.fusion_members import (
    map_member,
    member_gemm,
    member_reduction,
    phase_reads,
    update_lines,
)
from tfc.ir import dtypes as _dt
from tfc.ops.fusion import arg_shape, loads_of, plan_fusion, reduce_axes
from tfc.ops.kernels import (
    Kernel,
    c_literal,
    collapse_levels,
    contiguous_strides,
    format_expr,
    index_expr,
    type_tag,
)
from tfc.ops.reduce import mean_finalize
from tfc.ops.registry import OpContext


def fusion_kernel_data(kernel: Kernel) -> dict:
    """The CUDA template data of a Fusion's kernel (its "fusion" data: the node's context)."""
    return _CudaFusion(kernel.data["fusion"], [p.name for p in kernel.params]).data()


class _CudaFusion:
    """One Fusion node as per-thread C statements over the iteration space's coordinates."""

    def __init__(self, ctx: OpContext, param_names: list[str]) -> None:
        self.ctx = ctx
        self.param_names = param_names
        self.members = list(ctx.attrs["members"])
        self.outputs = list(ctx.attrs["outputs"])
        self.update = ctx.attrs.get("update")
        grad = self.update.grad if self.update is not None else None
        self.plan = plan_fusion(self.members, self.outputs, list(ctx.in_shapes), grad)
        if self.plan.matmul is not None and ctx.attrs.get("row_scratch") is not None:
            raise NotImplementedError(
                f"Fusion '{ctx.name}' keeps its product's rows in scratch memory: the CUDA "
                "target's fuse pass forms no such group (Target.fuse_row_scratch)"
            )
        self.reduces = [j for j, m in enumerate(self.members) if m.kind == "reduce"]
        self._index_space()
        self.names: dict[int, str] = {}

    # -- the space's coordinates -------------------------------------------------------------
    def _index_space(self) -> None:
        """Every operand's strides over the space, collapsed where all walk it contiguously
        (a kept dim never merges with a reduced one); kept levels come from the output index
        o, reduced ones from r."""
        plan, members = self.plan, self.members
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
            (p, n): operand(tuple(self.ctx.in_shapes[k]), dims)
            for p in (0, 1) for n, (k, dims) in enumerate(self.loads[p])
        }  # fmt: skip
        self.out_at = {j: operand(members[j].shape, plan.out_dims[j]) for j in self.outputs}
        if self.update is not None:
            g = self.update.grad
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
    def data(self) -> dict:
        launch = {"launch_before": self._gemm()}
        if not self.reduces:
            body = self._phase(0, [])
            total = math.prod(self.kept)
            return launch | {
                "reduce": False,
                "at_body": _coordinates("t", self.kept, self.kept_vars, "rest") + body,
                "at_unused": self._unused(body),
                "total": total,
                "threads": THREADS,
                "blocks": max(1, min(-(-total // THREADS), MAX_BLOCKS)),
            }
        return launch | self._reduce_data()

    def _gemm(self) -> list[str]:
        """The GEMM of a MatMul member, launched before the kernel: the whole product into the
        output that holds its rows (the MatMul's own, or one post-processing it in place)."""
        if self.plan.matmul is None:
            return []
        m = self.members[self.plan.matmul]
        a, b, k, sam, sak, sbk, sbn = member_gemm(self.ctx, m)
        rows, n = m.shape
        out = f"y{self.plan.row_buffer}"
        return [
            f"tfc_cuda_gemm_{type_tag(m.dtype)}({rows}, {n}, {k}, x{a}, {sam}, {sak}, x{b}, "
            f"{sbk}, {sbn}, {out});"
        ]

    def _reduce_data(self) -> dict:
        accs = []
        for j in self.reduces:
            m, k = self.members[j], len(accs)
            spec = member_reduction(m)
            wide = spec.wide_float32 and m.dtype is _dt.float32
            combine = format_expr(spec.combine[m.dtype.kind], m.dtype, a="{a}", b="{b}")
            accs.append({
                "ctype": "double" if wide else m.dtype.c_type,
                "name": f"acc{k}",
                "init": f"({m.dtype.c_type})({c_literal(spec.identity(m.dtype), m.dtype)})",
                "merge": _merge(combine, k),
                "combine": combine,
            })  # fmt: skip
        span = self._phase(0, accs)
        finish = self._phase(1, accs)
        out_count, count = math.prod(self.kept), math.prod(self.reduced)
        # a fused update after the reductions writes variables that other outputs' threads
        # may still read before them (a variable read along a reduced dim): the separate
        # finishing kernel of the block form runs after every read
        block = count >= BLOCK_REDUCE_MIN or self.update is not None
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
        return {
            "reduce": True,
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
            "block": block,
            "chunks": chunks,
            "per_chunk": per_chunk,
            "parts": out_count * chunks,
            "threads": threads,
            "blocks": max(1, min(out_count * chunks, 65535))
            if block else max(1, min(-(-out_count // threads), MAX_BLOCKS)),
            "finish_blocks": max(1, min(-(-out_count // 256), MAX_BLOCKS)),
        }  # fmt: skip

    def _unused(self, lines: list[str]) -> list[str]:
        """The parameters a helper's statements never name: (void) them (-Wunused-parameter)."""
        text = "\n".join(lines)
        return [p for p in self.param_names if not re.search(rf"\b{p}\b", text)]

    def _phase(self, phase: int, accs: list[dict]) -> list[str]:
        """Phase 0: the statements at one point (loads, members, accumulation into *acc<k>,
        the outputs of element-wise members); phase 1: at one kept point after the reductions
        (their outputs from acc<k>, members reading them, a reduced gradient's update)."""
        ctx, plan, members = self.ctx, self.plan, self.members
        body: list[str] = []
        load_names = {}
        for n, (k, dims) in enumerate(self.loads[phase]):
            name = f"{'ab'[phase]}{n}"
            load_names[(k, dims)] = name
            at = self.index(self.load_at[(phase, n)])
            body.append(f"const {ctx.in_dtypes[k].c_type} {name} = x{k}[{at}];")
        grad = self.update.grad if self.update is not None else None
        update_here = grad is not None and phase == int(bool(self.reduces))
        read = phase_reads(plan, members, phase)
        if update_here:
            read.add(grad)
        for j, m in enumerate(members):
            if m.kind == "reduce":
                k = self.reduces.index(j)
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
                    row = self.outputs[plan.row_buffer]
                    at = self.index(self.out_at[row])
                    body.append(f"const {m.dtype.c_type} v{j} = y{plan.row_buffer}[{at}];")
                    self.names[j] = f"v{j}"
                continue
            body += map_member(ctx, plan, members, j, self.names, load_names)
        for o, j in enumerate(self.outputs):
            if members[j].kind == "map" and plan.phase[j] == phase:
                body.append(f"y{o}[{self.index(self.out_at[j])}] = {self.names[j]};")
        if update_here:
            params, used = [], set()
            body += update_lines(ctx, self.update, self.names[grad],
                                  self.index(self.ref_at), params, used)  # fmt: skip
        return body

    def _reduced_value(self, j: int, k: int, read: bool) -> list[str]:
        """A reduction's output at one kept point: its accumulator stored (a mean finished),
        and loaded into v<j> when later members read it."""
        m = self.members[j]
        out = f"y{self.outputs.index(j)}[{self.index(self.out_at[j])}]"
        lines = [f"{out} = ({m.dtype.c_type})acc{k};"]
        x_shape = arg_shape(self.members, list(self.ctx.in_shapes), m.args[0])
        count = math.prod(x_shape[a] for a in reduce_axes(m, x_shape))
        finalize = mean_finalize(m.dtype, count) if m.op == "Mean" else None
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
