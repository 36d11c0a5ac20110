"""The CUDA target's view of kernel specs: thread indexing and kernel forms for its templates.

A C kernel walks its loop nest in memory order; a CUDA kernel gives each thread (or block) one
output and recovers the loop variables from its index. `kernel_template(kernel)` names the
template of templates/cuda/kernels that renders a kernel and the data it interpolates, derived
here from the kernel's typed spec (ops/kernels.py): the coordinates of a thread's point, the
grid, and the form of a kernel where the CUDA target has several (a reduction by one thread or
by a block per output; a convolution as an implicit GEMM or a direct kernel, its pixel sum in
one chunk or several). It reuses the C spellings CUDA shares (tfc/codegen/c.py: literals, the
batched GEMM call, the window geometry). A kind with no template here (None) runs its C
kernel on one GPU thread (Target.fallback_template).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tfc.codegen import c, fusion
from tfc.codegen.loops import (
    BLOCK_REDUCE_MIN,
    BLOCKS_WANTED,
    MAX_BLOCKS,
    REDUCE_THREADS,
    blocks,
    grid,
    index_expr,
    loop_statements,
    unravel,
)
from tfc.ops.conv_algo import operand_sizes
from tfc.ops.kernels import (
    BFLOAT16_PRODUCTS,
    BandSpec,
    ConvSpec,
    Geometry,
    Kernel,
    LoopSpec,
    MatrixSpec,
    NdIndexSpec,
    ReduceSpec,
    ScanSpec,
    WindowSpec,
    c_string,
)

KernelTemplate = tuple[str, dict]


def kernel_template(kernel: Kernel) -> KernelTemplate | None:
    """The CUDA template of `kernel` and its data; None where the target has none of its own."""
    return _kernel_template(kernel, tf32=False)


def kernel_template_tf32(kernel: Kernel) -> KernelTemplate | None:
    """`kernel_template` with TF32 allowed (CompileOptions(allow_tf32=True)): the float32
    convolutions' implicit GEMMs on tensor cores (`tensor_cores`)."""
    return _kernel_template(kernel, tf32=True)


def _kernel_template(kernel: Kernel, tf32: bool) -> KernelTemplate | None:
    if kernel.template == "conv2d":
        return conv_kernel(kernel, tf32)
    render = _KINDS.get(kernel.template)
    if render is None and isinstance(kernel.spec, WindowSpec):
        render = window_kernel  # a window op of its own kind: a thread per element
    return None if render is None else render(kernel)


# -- loops and reductions -------------------------------------------------------------------------
def loop_kernel(kernel: Kernel) -> KernelTemplate:
    """Thread t runs the statements at point t of the loop nest."""
    spec: LoopSpec = kernel.spec
    names = [f"i{k}" for k in range(len(spec.bounds))]
    statements, guard = loop_statements(kernel, names)
    body = unravel("t", spec.bounds, names)
    if guard is not None:
        body += [
            f"if ({guard}) {{",
            f"    tfc_cuda_fail(TFC_ERR_INVALID_ARGUMENT, tfc_site, {c_string(spec.message)});",
            "    return;",
            "}",
        ]
    return "loop", {"body": body + statements, **grid(math.prod(spec.bounds))}


def reduce_kernel(kernel: Kernel) -> KernelTemplate:
    """One thread per output folding its elements in order, or (for many elements per output)
    blocks of threads over chunks of them, merged in shared memory in a fixed tree and the
    chunks combined in order by a second kernel."""
    spec: ReduceSpec = kernel.spec
    kept = [d for d in spec.dims if not d.reduced]
    reduced = [d for d in spec.dims if d.reduced]
    kept_names = [f"i{k}" for k in range(len(kept))]
    red_names = [f"j{k}" for k in range(len(reduced))]
    inner = index_expr([d.x_stride for d in reduced], red_names)
    element = f"x0[base + {inner}]" if inner != "0" else "x0[base]"
    count = math.prod(d.size for d in reduced)
    out_count = spec.out_count
    stores = ["y[o] = acc;"]
    if spec.finalize is not None:
        stores.append(f"y[o] = {spec.finalize.format(a='y[o]')};")
    data = {
        "acc_ctype": spec.acc.c_type,
        "init": f"({kernel.params[0].ctype})({spec.init})",
        "out_unravel": unravel("o", [d.size for d in kept], kept_names),
        "base": index_expr([d.x_stride for d in kept], kept_names),
        "count": count,
        "red_unravel": unravel("r", [d.size for d in reduced], red_names),
        "update": "acc = " + spec.combine.format(a="acc", b=element) + ";",
        "stores": stores,
    }
    if count < BLOCK_REDUCE_MIN:
        return "reduce", data | grid(out_count)
    # enough blocks to fill the GPU: few outputs with many elements each split into chunks
    chunks = max(1, min(-(-count // (REDUCE_THREADS * 8)), BLOCKS_WANTED // out_count))
    return "reduce_block", data | {
        "chunks": chunks,
        "per_chunk": -(-count // chunks),
        "parts": out_count * chunks,
        "merge": "sh[threadIdx.x] = "
        + spec.combine.format(a="sh[threadIdx.x]", b="sh[threadIdx.x + s]")
        + ";",
        "finish_merge": "acc = " + spec.combine.format(a="acc", b="b") + ";",
        "finish_blocks": blocks(out_count, 256),
        "total": out_count,
        "threads": REDUCE_THREADS,
        "blocks": max(1, min(out_count * chunks, 65535)),
    }


def matmul_kernel(kernel: Kernel) -> KernelTemplate:
    """The GEMM on the stream (cuBLAS, or the tiled kernel; under mixed precision the
    tensor-core one of bfloat16 operands); batches loop on the host."""
    spec = kernel.spec
    return "matmul", {"body": c.gemm_lines(spec, c.gemm_function(spec, "tfc_cuda_gemm"))}


def rows_kernel(kernel: Kernel) -> KernelTemplate:
    """softmax, sparse_xent, top_k, in_top_k: a thread per row, over the C kernel's data."""
    _, data = c.kernel_template(kernel)
    return kernel.template, data | grid(kernel.spec.rows, 128)


# -- windows: a thread per element of the image the spec names --------------------------------
def window_kernel(kernel: Kernel) -> KernelTemplate:
    spec: WindowSpec = kernel.spec
    g = spec.geometry
    if spec.over == "output":
        bounds, names = [g.batch, g.out_h, g.out_w, g.out_c], ["n", "oh", "ow", "c"]
    elif spec.over == "filter":  # a filter per channel: [k_h, k_w, channels]
        bounds, names = [g.k_h, g.k_w, g.out_c], ["kh", "kw", "c"]
    else:
        bounds, names = [g.batch, g.in_h, g.in_w, g.in_c], ["n", "ih", "iw", "c"]
    data = c.window_data(spec)
    return kernel.template, data | {
        "unravel": unravel("t", bounds, names),
        **grid(math.prod(bounds)),
    }


# -- convolutions ---------------------------------------------------------------------------------
CONV_THREADS_WANTED = 1 << 16  # backprop filter: split the pixel sum until this many threads
CONV_MIN_PIXELS = 16  # ... but give each thread at least this many pixels
CONV_PART_CAP = 1 << 22  # ... and keep its partial sums (static device memory) this small
# a conv whose GEMM has n >= CONV_GEMM_MIN_N columns (channels it computes) and m, k >=
# CONV_GEMM_MIN_K: the implicit GEMM (conv2d_gemm.cu.j2) with tiles of (bm rows, bn channels,
# bk reduced), each thread (tm rows, tn channels)
CONV_GEMM_MIN_N = 32
CONV_GEMM_MIN_K = 64
CONV_GEMM_TILE = (64, 64, 16, 4, 4)
CONV_GEMM_BLOCKS_WANTED = 256  # backprop filter: split the pixel sum until this many blocks
CONV_FILTER_CHANNEL_BLOCKS = (16, 8, 4, 2, 1)  # backprop filter: the same, gradient channels
CONV_CHANNEL_BLOCKS = (4, 2, 1)  # forward, backprop input: channels per thread, the first dividing


@dataclass(frozen=True)
class ConvForm:
    """How the CUDA target computes one convolution: as an implicit GEMM of (m, n, k) or a
    direct kernel, its sum split into `chunks` (added in order by a second kernel)."""

    gemm: bool
    chunks: int
    m: int = 0
    n: int = 0
    k: int = 0
    chunk_k: int = 0  # the GEMM's k per chunk, a multiple of its tile's
    phases: int = 1  # a strided input gradient: one GEMM per stride phase (`phase_rows`)

    def describe(self) -> str:
        """The form in words, as `tfc inspect` shows it."""
        if not self.gemm:
            return "direct" + (f", {self.chunks} chunks" if self.chunks > 1 else "")
        text = f"implicit GEMM m={self.m} n={self.n} k={self.k}"
        if self.phases > 1:
            text += f", {self.phases} stride phases"
        return text + (f", {self.chunks} chunks of k" if self.chunks > 1 else "")


def conv_forms(steps: list, allow_tf32: bool = False) -> list[tuple[str, str, str]]:
    """(node, op, the form in words) of every convolution among lowered `steps`: how the CUDA
    target computes each (chosen per shape at compile time), on tensor cores where
    `allow_tf32` lets `tensor_cores` put it there."""
    forms = []
    for step in steps:
        for bound in step.kernels:
            spec = bound.kernel.spec
            if isinstance(spec, ConvSpec):
                form = conv_form(spec)
                if spec.precision == BFLOAT16_PRODUCTS:
                    cores = ", bf16 tensor cores" if bf16_cores(spec, form) else ", bf16 operands"
                elif tensor_cores(spec, form, allow_tf32):
                    cores = ", TF32 tensor cores"
                else:
                    cores = ""
                forms.append((step.node, step.op, form.describe() + cores))
    return forms


def phase_rows(g: Geometry) -> tuple[int, int, int]:
    """A strided input gradient's stride phases: the input pixels (ih, iw) whose (ih + pad_top)
    % s_h and (iw + pad_left) % s_w are equal read the output gradient through the same taps
    (kh = that remainder + i * s_h, kw likewise), so each phase is a dense GEMM over its own
    taps (no tap that hits between output pixels). (rows of one phase's grid, ceil(in_h / s_h)
    x ceil(in_w / s_w) x batch; its columns' count; those rows rounded up to whole tiles, so
    that a tile never mixes phases)."""
    rows_h, rows_w = -(-g.in_h // g.s_h), -(-g.in_w // g.s_w)
    rows = g.batch * rows_h * rows_w
    bm = CONV_GEMM_TILE[0]
    return rows, rows_w, -(-rows // bm) * bm


def conv_form(spec: ConvSpec) -> ConvForm:
    """The implicit GEMM where the shape fills its tiles (a strided input gradient as a GEMM per
    stride phase, undilated), else the direct kernel of the op kind."""
    g = spec.geometry
    taps = g.k_h * g.k_w
    pixels = g.batch * g.out_h * g.out_w
    gemm, phases = True, 1
    if spec.kind == "forward":  # (output pixels, output channels, taps x input channels)
        m, n, k = pixels, g.out_c, taps * g.in_c
    elif spec.kind == "input":  # (input pixels, input channels, taps x output channels)
        m, n, k = g.batch * g.in_h * g.in_w, g.in_c, taps * g.out_c
        if g.s_h > 1 or g.s_w > 1:  # a GEMM per stride phase, over its taps (at most k)
            gemm = g.d_h == 1 and g.d_w == 1
            phases = g.s_h * g.s_w
            m = phases * phase_rows(g)[2]
            k = -(-g.k_h // g.s_h) * -(-g.k_w // g.s_w) * g.out_c
    else:  # (taps x input channels, output channels, output pixels)
        m, n, k = taps * g.in_c, g.out_c, pixels
    if not gemm or n < CONV_GEMM_MIN_N or min(m, k) < CONV_GEMM_MIN_K:
        return ConvForm(False, _direct_filter_split(g)[2] if spec.kind == "filter" else 1)
    bm, bn, bk, _, _ = CONV_GEMM_TILE
    tiles = -(-m // bm) * -(-n // bn)
    chunks = 1
    if spec.kind == "filter":  # the long pixel sum: split it until there are enough blocks
        chunks = min(-(-CONV_GEMM_BLOCKS_WANTED // tiles), -(-k // (4 * bk)))
        chunks = max(1, min(chunks, CONV_PART_CAP // (m * n)))
    per_chunk = -(-k // chunks)
    chunk_k = -(-per_chunk // bk) * bk  # a multiple of bk
    return ConvForm(True, -(-k // chunk_k), m, n, k, chunk_k, phases)  # no empty chunk


def _direct_filter_split(g: Geometry) -> tuple[int, int, int, int]:
    """The direct filter gradient's (channel block, groups, chunks, pixels per chunk): a
    thread sums a chunk of the pixels for `cb` consecutive filter elements."""
    total = g.k_h * g.k_w * g.in_c * g.out_c
    count = g.batch * g.out_h * g.out_w
    cb = next(b for b in CONV_FILTER_CHANNEL_BLOCKS if g.out_c % b == 0)
    groups = total // cb
    chunks = min(
        -(-CONV_THREADS_WANTED // groups),
        -(-count // CONV_MIN_PIXELS),
        max(1, CONV_PART_CAP // total),
    )
    per_chunk = -(-count // max(1, chunks))
    return cb, groups, -(-count // per_chunk), per_chunk  # no empty chunk


def tensor_cores(spec: ConvSpec, form: ConvForm, allow_tf32: bool) -> bool:
    """Whether the convolution's GEMM runs on tensor cores (wmma, TF32 operands, fp32 sums):
    only where the user allows TF32, for float32 GEMMs in one chunk (a chunked filter gradient
    keeps its fp32 partial sums)."""
    return allow_tf32 and form.gemm and form.chunks == 1 and spec.dtype.name == "float32"


def bf16_cores(spec: ConvSpec, form: ConvForm) -> bool:
    """Whether a mixed-precision convolution's GEMM runs on tensor cores (wmma m16n16k16,
    bfloat16 operands converted as they are staged, fp32 sums): as `tensor_cores` allows TF32.
    The other forms multiply copies of the operands rounded to bfloat16 (`conv_kernel`)."""
    return spec.precision == BFLOAT16_PRODUCTS and tensor_cores(spec, form, True)


def conv_kernel(kernel: Kernel, tf32: bool = False) -> KernelTemplate:
    """The template of the form `conv_form` picks, with the geometry's sizes; with `tf32`,
    the tensor-core GEMM where `tensor_cores` allows it; under mixed precision the bfloat16
    one where `bf16_cores` does, else the form's kernel on the operands rounded first into the
    scratch regions of the plan (ConvPlan.rounded)."""
    template, data = _conv_kernel(kernel, tf32)
    spec: ConvSpec = kernel.spec
    data["rounding"] = []
    if spec.plan.rounded is not None and template != "conv2d_gemm_wmma_bf16":
        copies = [f"s + {offset}" for offset in spec.plan.rounded]
        sizes = operand_sizes(spec.kind, spec.geometry)
        data["rounding"] = [
            f"tfc_cuda_round_bf16_f32(x{i}, {copy}, {size});"
            for i, (copy, size) in enumerate(zip(copies, sizes))
        ]
        for launch in data["launches"]:
            launch["args"] = launch["args"].replace(", x0, x1", f", {copies[0]}, {copies[1]}")
    return template, data


def _conv_kernel(kernel: Kernel, tf32: bool) -> KernelTemplate:
    spec: ConvSpec = kernel.spec
    g = spec.geometry
    form = conv_form(spec)
    data: dict = dict(g.__dict__, T=spec.dtype.c_type)
    data["unused"] = [p.name for p in kernel.params[3:]]  # the C kernel's scratch
    if form.gemm and bf16_cores(spec, form):
        _, data = _conv_gemm(spec, form, data, True)
        # bfloat16 tiles: rows of multiples of 8 values (wmma's ldm for 16-bit operands)
        return "conv2d_gemm_wmma_bf16", data | {
            "h_a_rows": data["bm"] + 8,
            "h_b_cols": data["bn"] + 8,
        }
    if form.gemm:
        return _conv_gemm(spec, form, data, tensor_cores(spec, form, tf32))
    if spec.kind == "filter":
        cb, groups, chunks, per_chunk = _direct_filter_split(g)
        total = g.k_h * g.k_w * g.in_c * g.out_c
        launch = grid(groups * chunks)
        data.update(
            unravel=unravel("f", [g.k_h, g.k_w, g.in_c, g.out_c // cb], ["kh", "kw", "ci", "cj"]),
            count=g.batch * g.out_h * g.out_w,
            out_pixels=g.out_h * g.out_w,
            cb=cb,
            groups=groups,
            chunks=chunks,
            per_chunk=per_chunk,
            filter_size=total,
            total=launch["total"],
            launches=[_launch("_g", launch, "y, x0, x1")],
        )
        if chunks == 1:
            return "conv2d_filter", data
        data.update(sum_parts="part", sum_chunks=chunks, sum_size=total, parts=total * chunks)
        data["launches"].append(_launch("_sum_g", grid(total), "y"))
        return "conv2d_filter_chunked", data
    # a thread computes `cb` consecutive channels of one pixel: each value it loads from the
    # image (the gradient) is used cb times
    channels = g.out_c if spec.kind == "forward" else g.in_c
    cb = next(b for b in CONV_CHANNEL_BLOCKS if channels % b == 0)
    if spec.kind == "forward":
        bounds, names = [g.batch, g.out_h, g.out_w, channels // cb], ["n", "oh", "ow", "cj"]
    else:
        bounds, names = [g.batch, g.in_h, g.in_w, channels // cb], ["n", "ih", "iw", "cj"]
    launch = grid(math.prod(bounds))
    data.update(
        cb=cb,
        unravel=unravel("t", bounds, names),
        tap_size=g.in_c * g.out_c,
        total=launch["total"],
        launches=[_launch("_g", launch, "y, x0, x1")],
    )
    return f"conv2d_{spec.kind}", data


def _launch(kernel: str, launch: dict, args: str) -> dict:
    return {"kernel": kernel, "args": f"{launch['blocks']}, {launch['threads']}, {args}"}


def _conv_gemm(spec: ConvSpec, form: ConvForm, data: dict, wmma: bool) -> KernelTemplate:
    """The implicit GEMM (conv2d_gemm.cu.j2): A's element of each op kind read in place from
    the image (or the gradient), B as the filter (or the gradient) lies, or the filter
    transposed for the input gradient."""
    g = spec.geometry
    m, n, k = form.m, form.n, form.k
    bm, bn, bk, tm, tn = CONV_GEMM_TILE
    tiles_n = -(-n // bn)
    tiles = -(-m // bm) * tiles_n
    threads = (bm // tm) * (bn // tn)
    window = (
        f"x0[n, oh*{g.s_h} + kh*{g.d_h} - {g.pad_top}, ow*{g.s_w} + kw*{g.d_w} - {g.pad_left}, ci]"
    )
    image = f"x0[((n * {g.in_h} + ih) * {g.in_w} + iw) * {g.in_c} + ci]"
    in_image = f"if (ih >= 0 && ih < {g.in_h} && iw >= 0 && iw < {g.in_w})"
    taps_from_k = f"kw = k / {g.in_c} % {g.k_w}, kh = k / {g.in_c * g.k_w}"
    pixel = (  # the output pixel of flat index {0}
        f"ow = {{0}} % {g.out_w}, oh = {{0}} / {g.out_w} % {g.out_h}, "
        f"n = {{0}} / {g.out_h * g.out_w}"
    )
    image_at = [
        f"const int64_t ih = oh * {g.s_h} + kh * {g.d_h} - {g.pad_top};",
        f"const int64_t iw = ow * {g.s_w} + kw * {g.d_w} - {g.pad_left};",
        in_image,
        f"    v = {image};",
    ]
    b_as_it_lies = [
        f"/* B as it lies: rows of {g.out_c} channels (the filter; for its gradient, the output "
        "gradient) */",
        f"for (int e = tid; e < {bk * bn}; e += {threads}) {{",
        f"    const int kk = e / {bn}, c = e % {bn};",
        "    const int64_t k = k0 + kk, co = n0 + c;",
        f"    sh->b[kk][c] = k < {k} && co < {g.out_c} ? x1[k * {g.out_c} + co] : ({data['T']})0;",
        "}",
    ]
    by_taps = f"const int r = e / {bk}, kk = e % {bk}; /* consecutive threads: consecutive taps */"
    if spec.kind == "forward":
        comment = [
            "/* Conv2D as an implicit GEMM: y[p, co] = sum over k of A[p, k] * x1[k, co], where "
            "p = (n,oh,ow)",
            f" * is an output pixel ({m}), k = (kh,kw,ci) a tap ({k}) and A[p, k] the image value",
            f" * {window} (0 outside the image), read in place",
            " * (no column matrix). */",
        ]
        a_order = by_taps
        a_load = [
            f"const int64_t {pixel.format('m')};",
            f"const int64_t ci = k % {g.in_c}, {taps_from_k};",
            *image_at,
        ]
        b_load = b_as_it_lies
    elif spec.kind == "filter":
        comment = [
            "/* Conv2DBackpropFilter as an implicit GEMM: y[t, co] = sum over the pixels p of "
            "A[t, p] * x1[p, co],",
            f" * where t = (kh,kw,ci) is a filter row ({m}), p = (n,oh,ow) an output pixel ({k}) "
            "and A[t, p]",
            f" * the image value {window} (0 outside the image). The",
            f" * pixels are split into {form.chunks} chunk(s) of {form.chunk_k}, a block per "
            "(tile, chunk); the chunks' partial",
            " * sums are added in chunk order by a second kernel, so every run gives the same "
            "bits. */",
        ]
        a_order = (
            f"const int r = e % {bm}, kk = e / {bm}; /* consecutive threads: consecutive ci */"
        )
        a_load = [
            f"const int64_t ci = m % {g.in_c}, kw = m / {g.in_c} % {g.k_w}, "
            f"kh = m / {g.in_c * g.k_w};",
            f"const int64_t {pixel.format('k')};",
            *image_at,
        ]
        b_load = b_as_it_lies
    elif form.phases > 1:
        comment, a_order, a_load, b_load, store_row, k_end_lines = _input_by_phase(g, form, data)
    else:
        comment = [
            "/* Conv2DBackpropInput (stride 1) as an implicit GEMM: y[p, ci] = sum over k of "
            "A[p, k] * B[k, ci],",
            f" * where p = (n,ih,iw) is an input pixel ({m}), k = (kh,kw,co) ({k}), A[p, k] the "
            "gradient",
            f" * x1[n, ih + {g.pad_top} - kh*{g.d_h}, iw + {g.pad_left} - kw*{g.d_w}, co] (0 "
            "outside it) and B[k, ci] = x0[kh,kw,ci,co], both",
            " * read in place. */",
        ]
        a_order = by_taps
        a_load = [
            f"const int64_t iw = m % {g.in_w}, ih = m / {g.in_w} % {g.in_h}, "
            f"n = m / {g.in_h * g.in_w};",
            f"const int64_t co = k % {g.out_c}, kw = k / {g.out_c} % {g.k_w}, "
            f"kh = k / {g.out_c * g.k_w};",
            f"const int64_t oh = ih + {g.pad_top} - kh * {g.d_h};",
            f"const int64_t ow = iw + {g.pad_left} - kw * {g.d_w};",
            f"if (oh >= 0 && oh < {g.out_h} && ow >= 0 && ow < {g.out_w})",
            f"    v = x1[((n * {g.out_h} + oh) * {g.out_w} + ow) * {g.out_c} + co];",
        ]
        b_load = [
            "/* B[k, ci] = x0[kh,kw,ci,co]: consecutive threads read consecutive co (k) */",
            f"for (int e = tid; e < {bk * bn}; e += {threads}) {{",
            f"    const int kk = e % {bk}, c = e / {bk};",
            "    const int64_t k = k0 + kk, ci = n0 + c;",
            f"    {data['T']} v = 0;",
            f"    if (k < {k} && ci < {g.in_c}) {{",
            f"        const int64_t co = k % {g.out_c}, tap = k / {g.out_c};",
            f"        v = x0[(tap * {g.in_c} + ci) * {g.out_c} + co];",
            "    }",
            "    sh->b[kk][c] = v;",
            "}",
        ]
    if form.phases == 1:
        store_row, k_end_lines = ["const int64_t row = m;"], []
    data.update(
        comment=comment, a_order=a_order, a_load=a_load, b_load=b_load, store_row=store_row,
        k_end_lines=k_end_lines,
        gemm_m=m, gemm_n=n, gemm_k=k, bm=bm, bn=bn, bk=bk, tm=tm, tn=tn,
        a_rows=bm + 1, b_cols=bn + 1, a_tile=bm * bk, tx_count=bn // tn, ty_count=bm // tm,
        acc_count=tm * tn, tiles_n=tiles_n, gemm_blocks=tiles, gemm_threads=threads,
        chunk_k=form.chunk_k, block_count=tiles * form.chunks, sum_size=m * n,
    )  # fmt: skip
    launch = {"blocks": min(tiles * form.chunks, MAX_BLOCKS), "threads": threads}
    data["launches"] = [_launch("_g", launch, "y, x0, x1")]
    if wmma:  # rows of the staged tiles a multiple of 4 floats: wmma's ldm, 32-byte pieces
        warps = threads // 32
        frags = bm * bn // (16 * 16 * warps)
        data.update(
            a_rows=bm + 4, b_cols=bn + 4, c_cols=bn + 4, warps=warps, frags=frags,
            warp_cols=bn // (16 * frags), warp_width=16 * frags, tile_size=bm * bn,
        )  # fmt: skip
        return "conv2d_gemm_wmma", data
    if form.chunks == 1:
        return "conv2d_gemm", data
    data.update(sum_parts="parts", sum_chunks=form.chunks, parts=form.chunks * m * n)
    data["launches"].append(_launch("_sum_g", grid(m * n), "y"))
    return "conv2d_gemm_chunked", data


def _input_by_phase(
    g: Geometry, form: ConvForm, data: dict
) -> tuple[list, str, list, list, list, list]:
    """The strided input gradient's GEMM per stride phase (`phase_rows`): (comment, A's order,
    A's load, B's load, the input pixel a row stores to, each tile's k range cut to its
    phase's taps). Row m is (phase p, n, jh, jw): the input pixel (bh + jh*s_h, bw + jw*s_w),
    where bh is the first row of the phase; k is (i, j, co) over the phase's th x tw taps."""
    rows, rows_w, padded = phase_rows(g)
    rows_h = rows // (g.batch * rows_w)
    bm, bk, bn = CONV_GEMM_TILE[0], CONV_GEMM_TILE[2], CONV_GEMM_TILE[1]
    threads = (bm // CONV_GEMM_TILE[3]) * (bn // CONV_GEMM_TILE[4])
    sh, sw, ph, pw = g.s_h, g.s_w, g.pad_top, g.pad_left

    def phase(row: str) -> list[str]:  # the phase of a GEMM row and its taps' counts
        return [
            f"const int64_t p = {row} / {padded}, qh = p / {sw}, qw = p % {sw};",
            f"const int64_t th = ({g.k_h} - qh + {sh - 1}) / {sh}, "
            f"tw = ({g.k_w} - qw + {sw - 1}) / {sw};",
        ]

    first = [  # the phase's first input row and column, and the output pixel they start at
        f"const int64_t bh = ((qh - {ph}) % {sh} + {sh}) % {sh}, "
        f"bw = ((qw - {pw}) % {sw} + {sw}) % {sw};",
    ]
    comment = [
        f"/* Conv2DBackpropInput at strides ({sh}, {sw}) as {form.phases} implicit GEMMs, one per "
        "stride phase (qh, qw): the input",
        f" * pixels ih = bh + jh*{sh}, iw = bw + jw*{sw} with (ih + {ph}) % {sh} == qh and "
        f"(iw + {pw}) % {sw} == qw read the gradient",
        f" * only through the taps kh = qh + i*{sh}, kw = qw + j*{sw}, at oh = (ih + {ph} - kh) / "
        f"{sh}: y[p, ci] = sum over k = (i,j,co) of",
        " * x1[n, oh, ow, co] * x0[kh,kw,ci,co], no tap between output pixels. A phase's rows "
        f"fill whole tiles ({padded} of them,",
        f" * {rows} used); a tile's k stops at its phase's taps x {g.out_c}. */",
    ]
    a_order = f"const int r = e / {bk}, kk = e % {bk}; /* consecutive threads: consecutive taps */"
    a_load = [
        *phase("m"),
        f"const int64_t pr = m % {padded}, co = k % {g.out_c}, tap = k / {g.out_c};",
        f"if (pr < {rows} && tap < th * tw) {{",
        "    const int64_t i = tap / tw, j = tap % tw;",
        f"    const int64_t jw = pr % {rows_w}, jh = pr / {rows_w} % {rows_h}, "
        f"n = pr / {rows_h * rows_w};",
        *(f"    {line}" for line in first),
        f"    const int64_t oh = (bh + {ph} - qh) / {sh} + jh - i;",
        f"    const int64_t ow = (bw + {pw} - qw) / {sw} + jw - j;",
        f"    if (oh >= 0 && oh < {g.out_h} && ow >= 0 && ow < {g.out_w})",
        f"        v = x1[((n * {g.out_h} + oh) * {g.out_w} + ow) * {g.out_c} + co];",
        "}",
    ]
    b_load = [
        "/* B[k, ci] = x0[kh,kw,ci,co] for the tile's phase: consecutive threads read "
        "consecutive co */",
        *phase("m0"),
        f"for (int e = tid; e < {bk * bn}; e += {threads}) {{",
        f"    const int kk = e % {bk}, c = e / {bk};",
        f"    const int64_t k = k0 + kk, ci = n0 + c, co = k % {g.out_c}, tap = k / {g.out_c};",
        f"    {data['T']} v = 0;",
        f"    if (ci < {g.in_c} && tap < th * tw) {{",
        f"        const int64_t kh = qh + tap / tw * {sh}, kw = qw + tap % tw * {sw};",
        f"        v = x0[((kh * {g.k_w} + kw) * {g.in_c} + ci) * {g.out_c} + co];",
        "    }",
        "    sh->b[kk][c] = v;",
        "}",
    ]
    store_row = [
        f"const int64_t p = m / {padded}, pr = m % {padded}, qh = p / {sw}, qw = p % {sw};",
        f"if (pr >= {rows}) continue;",
        *first,
        f"const int64_t ih = bh + pr / {rows_w} % {rows_h} * {sh}, iw = bw + pr % {rows_w} * {sw};",
        f"if (ih >= {g.in_h} || iw >= {g.in_w}) continue;",
        f"const int64_t row = (pr / {rows_h * rows_w} * {g.in_h} + ih) * {g.in_w} + iw;",
    ]
    k_end_lines = [
        *phase(f"(*tile / {-(-form.n // bn)} * {bm})"),
        f"if (th * tw * {g.out_c} < *k_end) *k_end = th * tw * {g.out_c};",
    ]
    return comment, a_order, a_load, b_load, store_row, k_end_lines


# -- indexing, searching, sampling: a thread per independent output ----------------------------
def gather_nd_kernel(kernel: Kernel) -> KernelTemplate | None:
    """A thread per output element, the C kernel's sizes and message. With nothing to copy
    (inner slices of 0 values) only the tuples are checked: the C kernel's serial check."""
    spec: NdIndexSpec = kernel.spec
    if spec.inner == 0:
        return None
    _, data = c.nd_index_kernel(kernel)
    message = {
        "lead": c.c_list(spec.lead),
        "lead_len": max(len(spec.lead), 1),
        "lead_rank": len(spec.lead),
        "shape": c.c_list(spec.shape),
        "shape_len": max(len(spec.shape), 1),
        "rank": len(spec.shape),
        "what": c_string(spec.shape_what),
    }
    return "gather_nd", data | message | grid(spec.batch * spec.count * spec.inner)


def reverse_sequence_kernel(kernel: Kernel) -> KernelTemplate:
    _, data = c.reverse_sequence_kernel(kernel)
    return "reverse_sequence", data | grid(kernel.spec.total)


def search_sorted_kernel(kernel: Kernel) -> KernelTemplate:
    _, data = c.order_kernel(kernel)
    return "search_sorted", data | grid(kernel.spec.rows * kernel.spec.m)


def per_output_sample_kernel(kernel: Kernel) -> KernelTemplate:
    """RandomGamma, RandomPoissonV2: each output's stream starts 256 blocks past the previous
    output's, so every output is a thread of its own."""
    spec: ScanSpec = kernel.spec
    _, data = c.sampling_kernel(kernel)
    data["what"] = {"random_gamma": "RandomGamma", "random_poisson": "RandomPoisson"}[
        kernel.template
    ]
    return "per_output_sample", data | grid(spec.count)


# -- linear algebra: a thread per matrix ----------------------------------------------------------
# threads per block of the linalg kernels: each thread factors a whole matrix, so small blocks
# spread a batch over more multiprocessors
LINALG_THREADS = 32


def linalg_kernel(kernel: Kernel) -> KernelTemplate:
    """Thread t runs the tfc_linalg.h routine (TFC_HD) on matrix t of the batch, as the C
    kernel's loop does; a failing one reports the spec's message for the kernel's site."""
    spec: MatrixSpec = kernel.spec
    names = [f"b{k}" for k in range(len(spec.batch))]
    body = unravel("t", spec.batch, names)
    call = c.linalg_call(kernel, names)
    if spec.message is None:
        body.append(f"{call};")
    else:
        body += [
            f"if ({call} != 0) {{",
            f"    tfc_cuda_fail(TFC_ERR_INVALID_ARGUMENT, tfc_site, {c_string(spec.message)});",
            "    return;",
            "}",
        ]
    return "loop", {"body": body, **grid(math.prod(spec.batch), LINALG_THREADS)}


def band_part_kernel(kernel: Kernel) -> KernelTemplate:
    """A thread per element: its value where it lies in the band, else 0."""
    spec: BandSpec = kernel.spec
    lo, hi = c.band_bounds(spec)
    if spec.lower < 0 and spec.upper < 0:  # the whole matrix: a copy
        body = ["y[t] = x0[t];"]
    else:
        body = [
            f"const int64_t j = t % {spec.cols}, i = t / {spec.cols} % {spec.rows};",
            f"y[t] = j >= {lo} && j < {hi} ? x0[t] : ({spec.dtype.c_type})0;",
        ]
    return "loop", {"body": body, **grid(spec.batch * spec.rows * spec.cols)}


# -- the program -------------------------------------------------------------------------------
def program_parts(data: dict) -> dict:
    """program.cu.j2's parts that depend on the program: the upload of its constants, the
    copies between host buffers and their staging after the arena (none for an empty tensor),
    the run_mixed entry point of a staged Session's stage, the state it copies back."""
    consts, feeds, fetches = data["consts"], data["staged_feeds"], data["staged_fetches"]
    copy_in = (
        "tfc_cuda_note(cudaMemcpyAsync(arena + {o}, inputs[{i}], {n}, cudaMemcpyHostToDevice, "
        "tfc_cuda_stream));"
    )
    copy_out = (
        "tfc_cuda_note(cudaMemcpyAsync(outputs[{i}], arena + {o}, {n}, cudaMemcpyDeviceToHost, "
        "tfc_cuda_stream));"
    )
    stage_in, mixed_in, stage_out, mixed_out = [], [], [], []
    for i, f in enumerate(feeds):
        o, n = f["offset"], f["bytes"]
        stage_in.append(f"dinputs[{i}] = arena + {o};")
        mixed_in.append(f"dinputs[{i}] = feed_on_host[{i}] ? arena + {o} : inputs[{i}];")
        if n:
            stage_in.append(copy_in.format(i=i, o=o, n=n))
            mixed_in += [f"if (feed_on_host[{i}])", "    " + copy_in.format(i=i, o=o, n=n)]
    for i, f in enumerate(fetches):
        o, n = f["offset"], f["bytes"]
        stage_in.append(f"doutputs[{i}] = arena + {o};")
        mixed_in.append(f"doutputs[{i}] = fetch_on_host[{i}] ? arena + {o} : outputs[{i}];")
        if n:
            stage_out.append(copy_out.format(i=i, o=o, n=n))
            mixed_out += [f"if (fetch_on_host[{i}] == 1)", "    " + copy_out.format(i=i, o=o, n=n)]
    external = data["external_bytes"]
    state = data["state_bytes"]
    return {
        "constant_upload": ["cuda/upload_constants.cu.j2"] if consts else [],
        "const_count": len(consts),
        "begin_lines": (
            ["if (rc == TFC_OK && !tfc_dconst_ready) rc = tfc_upload_constants(err);"]
            if consts
            else []
        ),
        "site_slots": max(len(data["sites"]), 1),  # C has no empty arrays
        "sites": ", ".join(data["sites"] or ["NULL"]),
        "feed_slots": max(len(feeds), 1),
        "fetch_slots": max(len(fetches), 1),
        "stage_in": stage_in,
        "stage_out": stage_out,
        "mixed_entry": ["cuda/run_mixed.cu.j2"] if data["mixed_io"] else [],
        "mixed_stage_in": mixed_in,
        "mixed_stage_out": mixed_out,
        "state_slots": max(len(state), 1),
        "external_slots": max(len(external), 1),
        "external_decls": (
            [f"static const void *tfc_dev_consts_from[{len(external)}];"] if external else []
        ),
        "state_bytes": [dict(s, alloc=max(s["bytes"], 1)) for s in state],
        "state_out": [
            f"tfc_cuda_memcpy(state[{i}], tfc_dev_state[{i}], {s['bytes']});"
            for i, s in enumerate(state)
            if s["written"]
        ],
    }


# -- running folds, ranges: a thread per line, per element ----------------------------------------
def cumulative_kernel(kernel: Kernel) -> KernelTemplate:
    """A thread per line of the fold (the C kernel's order along it)."""
    spec = kernel.spec
    return "cumulative", c.cumulative_data(spec) | grid(spec.outer * spec.inner)


def range_kernel(kernel: Kernel) -> KernelTemplate:
    spec = kernel.spec
    return "loop", {"body": [f"y[t] = {c.range_value(spec, 't')};"], **grid(spec.count)}


_KINDS: dict[str, Callable[[Kernel], KernelTemplate]] = {
    "loop": loop_kernel,
    "reduce": reduce_kernel,
    "matmul": matmul_kernel,
    "softmax": rows_kernel,
    "int8_softmax": rows_kernel,
    "int8_mean": rows_kernel,
    "sparse_xent": rows_kernel,
    "top_k": rows_kernel,
    "in_top_k": rows_kernel,
    "conv2d": conv_kernel,
    "fused": fusion.cuda_fused,
    "gather_nd": gather_nd_kernel,
    "reverse_sequence": reverse_sequence_kernel,
    "search_sorted": search_sorted_kernel,
    "random_gamma": per_output_sample_kernel,
    "random_poisson": per_output_sample_kernel,
    "cumulative": cumulative_kernel,
    "range": range_kernel,
    "linalg": linalg_kernel,
    "band_part": band_part_kernel,
}
