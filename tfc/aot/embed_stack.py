"""The stack a call of the embeddable library needs: model.h's bound, and GCC's measure of it.

The arena holds every tensor and every scratch buffer tfc plans; what stays on the stack is the
call frames and a few fixed-size buffers of the runtime's kernels under TFC_EMBED: the packed
GEMM's panels (tfc_gemm.h: (MC + NR) * KC elements), the row GEMM's accumulators, the
convolutions' register tiles (tfc_conv_tiles.h) and the tiled pools' rows. `stack_bound` is
the largest of those a program's kernels use plus an allowance for the frames; `STACK_BYTES` in
model.h is the bound over the library's programs. The bound is for targets whose SIMD vectors
are at most 16 bytes (every MCU, ARM, wasm32, x86 without AVX): an AVX build's tiles are wider.

`measure_stack` asks GCC: it compiles model.c with -fcallgraph-info=su (the frame of every
function and the calls between them) and takes the deepest path from each entry point; an
indirect call (a kernel's parts run through a function pointer) may reach any static function
of the file, and a library function (memcpy, expf) counts LIBRARY_CALL_BYTES.
"""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from tfc.codegen.c import tiles_2x2
from tfc.codegen.fusion import FusedSpec
from tfc.ops.kernels import ConvSpec, GemmSpec, WindowSpec

__all__ = ["FRAME_BYTES", "LIBRARY_CALL_BYTES", "measure_stack", "stack_bound", "worst_paths"]

# the frames of a call besides the kernels' buffers: the entry point, the program's run
# function, a kernel and the runtime functions it calls, their locals and spilled registers
# (up to 2.2 KB measured with GCC 12 for a Cortex-M4 and x86-64 at -O1, -Os and -O2)
FRAME_BYTES = 3072
# what a call of memcpy, memset or a libm function may add below its caller's frame
LIBRARY_CALL_BYTES = 128
VECTOR_BYTES = 16  # TFC_GEMM_VBYTES and TFC_CONV_VBYTES without AVX
# tfc_gemm.h under TFC_EMBED
GEMM_KC, GEMM_MC, GEMM_MR, GEMM_ROW_COLS, GEMM_ROWS_MAX = 64, 24, 6, 256, 2
# tfc_conv.h: the direct kernels' register tile, the columns kernel's accumulators
CONV_MAX_P, CONV_MAX_NV, CONV_COLS_ACC = 16, 8, 12


def _gemm_bytes(size: int, rows: int | None = None, row_major_b: bool = True) -> int:
    """A GEMM's stack: the row GEMM's accumulators (tfc_gemm_row: a product of at most
    TFC_GEMM_ROWS_MAX rows with row-major B), else the packed GEMM's panels, edge tiles and
    micro-kernel accumulators (tfc_gemm_columns). `rows` None: either."""
    lanes = VECTOR_BYTES // size
    nr, kc = 2 * lanes, GEMM_KC if size == 4 else GEMM_KC // 2
    apack = math.ceil(GEMM_MC / GEMM_MR) * GEMM_MR * kc
    packed = (apack + kc * nr + GEMM_MR * nr + nr) * size + GEMM_MR * 2 * VECTOR_BYTES
    row = GEMM_ROW_COLS * size + VECTOR_BYTES
    if rows is not None and rows <= GEMM_ROWS_MAX and row_major_b:
        return row
    return packed if rows is not None else max(packed, row)


def _kernel_buffers(kernel) -> tuple[str, int]:
    """The family of one kernel's fixed-size stack buffers (kernels of one family run one at a
    time) and their bytes; ("", 0) for a kernel with only scalar locals."""
    spec = kernel.spec
    if isinstance(spec, GemmSpec):
        return "gemm", _gemm_bytes(spec.dtype.size, spec.m, spec.sbn == 1)
    if isinstance(spec, FusedSpec):
        if spec.plan.matmul is not None:
            mm = spec.members[spec.plan.matmul]
            rows = math.prod(mm.shape[:-1])
            row_major_b = not mm.attrs.get("transpose_b", False)
            return "gemm", _gemm_bytes(mm.dtype.size, rows, row_major_b)
        if spec.update is not None:  # a gradient computed by a GEMM into the update
            return "gemm", _gemm_bytes(max(d.size for d in spec.in_dtypes))
        return "", 0
    if isinstance(spec, ConvSpec):
        size = spec.dtype.size
        if spec.plan.kernel == "im2col":
            return "gemm", _gemm_bytes(size, None)
        if spec.plan.kernel == "columns":
            lanes = VECTOR_BYTES // size
            return "conv columns", (CONV_COLS_ACC * VECTOR_BYTES + CONV_COLS_ACC * lanes * size)
        return "conv tile", CONV_MAX_P * CONV_MAX_NV * VECTOR_BYTES + CONV_MAX_P * 8
    if isinstance(spec, WindowSpec) and tiles_2x2(spec.geometry):
        g, size = spec.geometry, max(spec.dtype.size, 4)
        row = g.in_w * g.in_c
        if kernel.template == "max_pool":
            return "pool rows", row * size
        return "pool rows", (4 * row + 4 * g.in_c) * size  # the gradient's four rows
    return "", 0


def stack_bound(programs: Iterable) -> int:
    """Bytes of stack a call of any of `programs` (aot.programs.Program) needs at most: the
    frames, and the largest buffers of each family its kernels use. The families add up, since
    a compiler that inlines kernels into one function may keep their buffers apart."""
    largest: dict[str, int] = {}
    for program in programs:
        for step in program.lowered.steps:
            for bound in step.kernels:
                family, nbytes = _kernel_buffers(bound.kernel)
                if family:
                    largest[family] = max(largest.get(family, 0), nbytes)
    return FRAME_BYTES + sum(largest.values())


_NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"]*)"')
_EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
_FRAME = re.compile(r"\\n(\d+) bytes \(([^)]*)\)")


def worst_paths(callgraph: str, entries: Sequence[str]) -> dict[str, int]:
    """The deepest stack below each entry point of a GCC call graph (-fcallgraph-info=su):
    its frame plus its deepest callee's, recursively. Raises ValueError on recursion, a frame
    of dynamic size, or an entry point or static callee the graph does not define."""
    frames: dict[str, int] = {}
    for title, label in _NODE.findall(callgraph):
        found = _FRAME.search(label)
        if found is None:
            continue  # a library function: its body is not in this file
        if found.group(2) not in ("static", "dynamic,bounded"):  # bounded: the bound is given
            raise ValueError(f"{title} has a stack frame of {found.group(2)} size")
        frames[title] = int(found.group(1))
    calls: dict[str, set[str]] = {}
    for source, target in _EDGE.findall(callgraph):
        calls.setdefault(source, set()).add(target)
    local = [name for name in frames if ":" in name]  # static functions: "file.c:name"

    def depth(name: str, path: tuple[str, ...], guessed: bool) -> int:
        """`guessed`: the path went through an indirect call, whose targets are any function,
        so a cycle it closes is the guess's, not the program's."""
        below = 0
        for callee in calls.get(name, ()):
            if callee == "__indirect_call":
                targets, via = local, True
            elif callee in frames:
                targets, via = [callee], guessed
            elif ":" in callee:
                raise ValueError(f"{name} calls {callee}, which the call graph does not define")
            else:
                below = max(below, LIBRARY_CALL_BYTES)
                continue
            for target in targets:
                if target in path or target == name:
                    if via:
                        continue
                    raise ValueError(f"recursion: {' -> '.join((*path, name, target))}")
                below = max(below, depth(target, (*path, name), via))
        return frames[name] + below

    missing = [e for e in entries if e not in frames]
    if missing:
        raise ValueError(f"the call graph has no entry point {', '.join(missing)}")
    return {e: depth(e, (), False) for e in entries}


def measure_stack(
    outdir: Path, cc: Sequence[str], flags: Sequence[str], entries: Sequence[str]
) -> dict[str, int]:
    """GCC's measure of the stack below each of `entries` in OUTDIR/model.c compiled by `cc`
    with `flags` (EMBED_CFLAGS among them; no identical-code folding, which would hide merged
    functions from the graph)."""
    tag = re.sub(r"[^A-Za-z0-9]", "_", "-".join([*cc, *flags]))[-60:]
    obj = f"stack-{tag}.o"
    cmd = [*cc, *flags, "-fno-ipa-icf", "-fcallgraph-info=su", "-c", "model.c"]
    proc = subprocess.run([*cmd, "-o", obj], cwd=outdir, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
    graph = (outdir / obj).with_suffix(".ci").read_text()
    return worst_paths(graph, entries)
