"""The CUDA target's view of kernel specs: thread indexing prepared as strings for its templates.

A C kernel walks its loop nest in memory order; a CUDA kernel gives each thread (or block) one
output and recovers the loop variables from its index. The strings here are that recovery,
computed once in Python so the templates in templates/cuda/kernels only interpolate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tfc.kernels import Kernel, index_expr

THREADS = 256  # threads per block of the element-wise kernels
MAX_BLOCKS = 8192  # a grid-stride loop covers the rest
REDUCE_THREADS = 128  # threads per output of a block reduction
BLOCK_REDUCE_MIN = 64  # reduce this many elements or more per output with a block
FILTER_TILE = 16  # output channels a filter-gradient thread sums at once
BLOCKS_WANTED = 1024  # a reduction or a filter gradient splits its work into about this many


def unravel(index: str, bounds: Sequence[int], names: Sequence[str]) -> list[str]:
    """Statements declaring `names` (int64) as the row-major coordinates of `index` in `bounds`.
    The divisions run in 32 bits when the whole range fits (they are the costly part)."""
    if not bounds:
        return []
    if len(bounds) == 1:
        return [f"const int64_t {names[0]} = {index};"]
    small = math.prod(bounds) < 2**31
    rtype, suffix = ("unsigned", "u") if small else ("uint64_t", "ull")
    lines = [f"{rtype} rest = ({rtype}){index};"]
    for k in reversed(range(1, len(bounds))):
        lines.append(f"const int64_t {names[k]} = (int64_t)(rest % {bounds[k]}{suffix});")
        lines.append(f"rest /= {bounds[k]}{suffix};")
    lines.append(f"const int64_t {names[0]} = (int64_t)rest;")
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


def _sizes(kernel: Kernel, *names: str) -> list[int]:
    return [int(kernel.data[n]) for n in names]


def _over(kernel: Kernel, dims: Sequence[str], names: Sequence[str]) -> dict:
    """One thread per element of a tensor of the geometry sizes `dims`, coordinates `names`."""
    bounds = _sizes(kernel, *dims)
    return {"unravel": unravel("t", bounds, names), **_grid(math.prod(bounds), THREADS)}


def _conv2d(kernel: Kernel) -> dict:
    return _over(kernel, ["batch", "out_h", "out_w", "out_c"], ["n", "oh", "ow", "co"])


def _conv2d_backprop_input(kernel: Kernel) -> dict:
    return _over(kernel, ["batch", "in_h", "in_w", "in_c"], ["n", "ih", "iw", "ci"])


def _pool(kernel: Kernel) -> dict:
    return _over(kernel, ["batch", "out_h", "out_w", "in_c"], ["n", "oh", "ow", "c"])


def _conv2d_backprop_filter(kernel: Kernel) -> dict:
    k_h, k_w, in_c, out_c = _sizes(kernel, "k_h", "k_w", "in_c", "out_c")
    tile = min(out_c, FILTER_TILE)
    tiles = -(-out_c // tile)
    groups = k_h * k_w * in_c * tiles
    count = math.prod(_sizes(kernel, "batch", "out_h", "out_w"))
    chunks = max(1, min(-(-count // (THREADS * 8)), BLOCKS_WANTED // groups))
    return {
        "unravel": unravel("g", [k_h, k_w, in_c, tiles], ["kh", "kw", "ci", "tile"]),
        "total": k_h * k_w * in_c * out_c,
        "groups": groups,
        "tile": tile,
        "tiles": tiles,
        "count": count,
        "chunks": chunks,
        "per_chunk": -(-count // chunks),
        "index_t": "unsigned" if count < 2**31 else "uint64_t",
        "threads": THREADS,
        "blocks": max(1, min(groups * chunks, 65535)),
        "finish_blocks": max(1, min(-(-(k_h * k_w * in_c * out_c) // 256), MAX_BLOCKS)),
    }


_ADAPTERS = {
    "conv2d": _conv2d,
    "conv2d_backprop_input": _conv2d_backprop_input,
    "conv2d_backprop_filter": _conv2d_backprop_filter,
    "max_pool": _pool,
    "max_pool_grad": _pool,
    "loop": _loop,
    "reduce": _reduce,
    "matmul": _matmul,
    "softmax": _rows,
    "sparse_xent": _rows,
}


def cuda_kernel_data(kernel: Kernel) -> dict:
    """Extra template data the CUDA kernel template of `kernel` needs ({} when none)."""
    adapter = _ADAPTERS.get(kernel.template)
    return adapter(kernel) if adapter else {}
