"""The CUDA target's view of kernel specs: thread indexing prepared as strings for its templates.

A C kernel walks its loop nest in memory order; a CUDA kernel gives each thread (or block) one
output and recovers the loop variables from its index. The strings here are that recovery,
computed once in Python so the templates in templates/cuda/kernels only interpolate.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Sequence

from tfc.ops.kernels import Kernel, index_expr

THREADS = 256  # threads per block of the element-wise kernels
MAX_BLOCKS = 8192  # a grid-stride loop covers the rest
REDUCE_THREADS = 128  # threads per output of a block reduction
BLOCK_REDUCE_MIN = 64  # reduce this many elements or more per output with a block
BLOCKS_WANTED = 1024  # a reduction splits its work into about this many blocks


def unravel(
    index: str, bounds: Sequence[int], names: Sequence[str], rest: str = "rest"
) -> list[str]:
    """Statements declaring `names` (int64) as the row-major coordinates of `index` in `bounds`
    (`rest`: the name of the remainder, distinct where two unravel in one scope).
    The divisions run in 32 bits when the whole range fits (they are the costly part)."""
    if not bounds:
        return []
    if len(bounds) == 1:
        return [f"const int64_t {names[0]} = {index};"]
    small = math.prod(bounds) < 2**31
    rtype, suffix = ("unsigned", "u") if small else ("uint64_t", "ull")
    lines = [f"{rtype} {rest} = ({rtype}){index};"]
    for k in reversed(range(1, len(bounds))):
        lines.append(f"const int64_t {names[k]} = (int64_t)({rest} % {bounds[k]}{suffix});")
        lines.append(f"{rest} /= {bounds[k]}{suffix};")
    lines.append(f"const int64_t {names[0]} = (int64_t){rest};")
    return lines


def _grid(total: int, threads: int) -> dict:
    return {
        "total": total,
        "threads": threads,
        "blocks": max(1, min(-(-total // threads), MAX_BLOCKS)),
    }


def _loop(kernel: Kernel) -> dict:
    bounds = list(kernel.data["bounds"])
    names = [f"i{k}" for k in range(len(bounds))]
    return {"unravel": unravel("t", bounds, names), **_grid(math.prod(bounds), THREADS)}


def _reduce(kernel: Kernel) -> dict:
    dims = kernel.data["dims"]
    kept = [d for d in dims if not d[3]]
    reduced = [d for d in dims if d[3]]
    kept_names = [f"i{k}" for k in range(len(kept))]
    red_names = [f"j{k}" for k in range(len(reduced))]
    base = index_expr([d[1] for d in kept], kept_names)
    count = math.prod(d[0] for d in reduced)
    inner = index_expr([d[1] for d in reduced], red_names)
    element = f"x0[base + {inner}]" if inner != "0" else "x0[base]"
    combine = kernel.data["combine"]
    out_count = kernel.data["out_count"]
    block = count >= BLOCK_REDUCE_MIN
    # enough blocks to fill the GPU: few outputs with many elements each split into chunks
    chunks = max(1, min(-(-count // (REDUCE_THREADS * 8)), BLOCKS_WANTED // out_count))
    per_chunk = -(-count // chunks)
    return {
        "block": block,
        "chunks": chunks,
        "per_chunk": per_chunk,
        "out_unravel": unravel("o", [d[0] for d in kept], kept_names),
        "base": base,
        "count": count,
        "red_unravel": unravel("r", [d[0] for d in reduced], red_names),
        "ctype_init": kernel.params[0].ctype,
        "update": "acc = " + combine.format(a="acc", b=element) + ";",
        "merge": "sh[threadIdx.x] = "
        + combine.format(a="sh[threadIdx.x]", b="sh[threadIdx.x + s]")
        + ";",
        "finish_merge": "acc = " + combine.format(a="acc", b="b") + ";",
        "finish_blocks": max(1, min(-(-out_count // 256), MAX_BLOCKS)),
        **_grid(out_count, REDUCE_THREADS if block else THREADS),
        **({"blocks": max(1, min(out_count * chunks, 65535))} if block else {}),
    }


def _rows(kernel: Kernel) -> dict:
    return _grid(int(re.findall(r"\d+", kernel.data["rows"])[-1]), 128)  # "INT64_C(64)"


def _matmul(kernel: Kernel) -> dict:
    return {"cuda_gemm": "tfc_cuda_" + kernel.data["gemm"].removeprefix("tfc_")}


# -- convolutions (ops/conv.py's "conv2d" kernels: a tfc_conv.h function and its plan) --------
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


def _conv2d(kernel: Kernel) -> dict:
    """The sizes of the plan as template data, the op kind ("forward", "input", "filter") from
    the tfc_conv.h function the C kernel calls, and the thread grid of that kind."""
    from tfc.ops.conv import _CONV_FUNCTIONS
    from tfc.ops.conv_algo import PLAN_FIELDS

    values = [int(v) for v in kernel.data["plan"].split(",")]
    g = dict(zip(PLAN_FIELDS, values, strict=True))
    function = kernel.data["function"]
    kind = next(k for k, f in _CONV_FUNCTIONS.items() if function.startswith(f + "_"))
    data: dict = dict(g)
    data.update(kind=kind, ctype=kernel.params[0].ctype, gemm=False)
    data["unused"] = [p.name for p in kernel.params[3:]]  # the C kernel's scratch
    gemm = _conv_gemm(kind, g)
    if gemm:
        data.update(gemm)
        return data
    if kind == "filter":
        total = g["k_h"] * g["k_w"] * g["in_c"] * g["out_c"]
        count = g["batch"] * g["out_h"] * g["out_w"]
        cb = next(b for b in CONV_FILTER_CHANNEL_BLOCKS if g["out_c"] % b == 0)
        groups = total // cb
        chunks = min(
            -(-CONV_THREADS_WANTED // groups),
            -(-count // CONV_MIN_PIXELS),
            max(1, CONV_PART_CAP // total),
        )
        chunks = max(1, chunks)
        per_chunk = -(-count // chunks)
        chunks = -(-count // per_chunk)  # no empty chunk
        taps = [g["k_h"], g["k_w"], g["in_c"], g["out_c"] // cb]
        data.update(
            unravel=unravel("f", taps, ["kh", "kw", "ci", "cj"]),
            count=count,
            cb=cb,
            groups=groups,
            chunks=chunks,
            per_chunk=per_chunk,
            filter_size=total,
            finish=_grid(total, THREADS),
            **_grid(groups * chunks, THREADS),
        )
        return data
    # a thread computes `cb` consecutive channels of one pixel: each value it loads from the
    # image (the gradient) is used cb times
    channels = g["out_c"] if kind == "forward" else g["in_c"]
    cb = next(b for b in CONV_CHANNEL_BLOCKS if channels % b == 0)
    pixels = ["out_h", "out_w"] if kind == "forward" else ["in_h", "in_w"]
    bounds = [g["batch"], *(g[k] for k in pixels), channels // cb]
    names = ["n", "oh", "ow", "cj"] if kind == "forward" else ["n", "ih", "iw", "cj"]
    data.update(cb=cb, unravel=unravel("t", bounds, names), **_grid(math.prod(bounds), THREADS))
    return data


def _conv_gemm(kind: str, g: dict) -> dict:
    """The template data of the implicit GEMM of conv2d_gemm.cu.j2 for this conv, or {} where
    the shape is too narrow for its tiles (or a strided input gradient, which skips pixels)."""
    taps = g["k_h"] * g["k_w"]
    pixels = g["batch"] * g["out_h"] * g["out_w"]
    if kind == "forward":  # (output pixels, output channels, taps x input channels)
        m, n, k = pixels, g["out_c"], taps * g["in_c"]
    elif kind == "input":  # (input pixels, input channels, taps x output channels)
        if g["s_h"] != 1 or g["s_w"] != 1:
            return {}
        m, n, k = g["batch"] * g["in_h"] * g["in_w"], g["in_c"], taps * g["out_c"]
    else:  # (taps x input channels, output channels, output pixels)
        m, n, k = taps * g["in_c"], g["out_c"], pixels
    if n < CONV_GEMM_MIN_N or min(m, k) < CONV_GEMM_MIN_K:
        return {}
    bm, bn, bk, tm, tn = CONV_GEMM_TILE
    tiles = -(-m // bm) * -(-n // bn)
    chunks = 1
    if kind == "filter":  # the long pixel sum: split it until there are enough blocks
        chunks = min(-(-CONV_GEMM_BLOCKS_WANTED // tiles), -(-k // (4 * bk)))
        chunks = max(1, min(chunks, CONV_PART_CAP // (m * n)))
    per_chunk = -(-k // chunks)
    chunk_k = -(-per_chunk // bk) * bk  # a multiple of bk
    chunks = -(-k // chunk_k)  # no empty chunk
    return {
        "gemm": True, "gemm_m": m, "gemm_n": n, "gemm_k": k, "bm": bm, "bn": bn, "bk": bk,
        "tm": tm, "tn": tn, "tiles_n": -(-n // bn), "gemm_blocks": tiles,
        "gemm_threads": (bm // tm) * (bn // tn), "gemm_chunks": chunks, "chunk_k": chunk_k,
        "blocks": min(tiles * chunks, MAX_BLOCKS), "finish": _grid(m * n, THREADS),
    }  # fmt: skip


# -- pooling kernels (ops/conv.py's window_kernel: every geometry size as a string) ------------
def _window_over(dims: Sequence[str], names: Sequence[str]):
    def adapter(kernel: Kernel) -> dict:
        bounds = [int(kernel.data[d]) for d in dims]
        return {"unravel": unravel("t", bounds, names), **_grid(math.prod(bounds), THREADS)}

    return adapter


_POOLED = _window_over(["batch", "out_h", "out_w", "in_c"], ["n", "oh", "ow", "c"])
_POOL_INPUT = _window_over(["batch", "in_h", "in_w", "in_c"], ["n", "ih", "iw", "c"])


_ADAPTERS = {
    "loop": _loop,
    "reduce": _reduce,
    "matmul": _matmul,
    "softmax": _rows,
    "sparse_xent": _rows,
    "conv2d": _conv2d,
    "max_pool": _POOLED,
    "max_pool_grad": _POOL_INPUT,
    "avg_pool": _POOLED,
    "avg_pool_grad": _POOL_INPUT,
    "max_pool_grad_grad": _POOLED,
    "fused": "tfc.codegen.fusion_cuda:fusion_kernel_data",  # imported when used: it imports the ops
}


def cuda_kernel_data(kernel: Kernel) -> dict:
    """Extra template data the CUDA kernel template of `kernel` needs ({} when none)."""
    adapter = _ADAPTERS.get(kernel.template)
    if isinstance(adapter, str):
        module, function = adapter.split(":")
        adapter = getattr(importlib.import_module(module), function)
    return adapter(kernel) if adapter else {}
