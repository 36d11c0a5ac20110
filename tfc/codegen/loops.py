"""Index arithmetic in C syntax, shared by the C and CUDA renderers.

A C kernel walks a loop nest in memory order (`loop_lines`, `nest_lines`); a CUDA kernel gives
each thread one point and recovers the loop variables from its flat index (`unravel`), over a
grid of blocks (`grid`). Both address an operand by the same expression of the loop variables
(`index_expr`) and run the same element statements of a LoopSpec (`loop_statements`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tfc.ops.kernels import Kernel, LoopSpec

THREADS = 256  # threads per block of the element-wise kernels
MAX_BLOCKS = 8192  # a grid-stride loop covers the rest
REDUCE_THREADS = 128  # threads per output of a block reduction
BLOCK_REDUCE_MIN = 64  # reduce this many elements or more per output with a block
BLOCKS_WANTED = 1024  # a reduction splits its work into about this many blocks


def index_expr(strides: Sequence[int], loop_vars: Sequence[str]) -> str:
    """The C expression of sum(loop_var * stride) ("0" when every stride is 0)."""
    terms = []
    for s, v in zip(strides, loop_vars):
        if s == 0:
            continue
        terms.append(v if s == 1 else f"{v} * {s}" if s > 0 else f"{v} * ({s})")
    return " + ".join(terms) if terms else "0"


def loop_lines(bounds: Sequence[int], names: Sequence[str], base_indent: int = 1) -> tuple:
    """Opening lines of a loop nest, the indent of its body, and its closing braces."""
    opens = [
        "    " * (base_indent + k) + f"for (int64_t {v} = 0; {v} < {b}; ++{v}) {{"
        for k, (v, b) in enumerate(zip(names, bounds))
    ]
    closes = ["    " * (base_indent + k) + "}" for k in reversed(range(len(bounds)))]
    return opens, "    " * (base_indent + len(bounds)), closes


def nest_lines(
    bounds: Sequence[int],
    names: Sequence[str],
    body: Sequence[str],
    before: dict[int, list[str]] | None = None,
    after: dict[int, list[str]] | None = None,
    first_range: tuple[str, str] | None = None,
    ranges: dict[int, tuple[str, str]] | None = None,
) -> list[str]:
    """The lines of a loop nest with `body` innermost; before[k] / after[k] are statements run
    just before loop k opens and just after it closes (inside loop k - 1): per-row work such
    as a GEMM row or an accumulator that spans the inner loops. k = len(bounds) is the body's
    own level. `first_range` (begin, end): the outermost loop runs over [begin, end) only;
    `ranges` {k: (begin, end)}: loop k does."""
    before, after = before or {}, after or {}
    opens, indent, closes = loop_lines(bounds, names)
    ranges = dict(ranges or {})
    if first_range is not None:
        ranges[0] = first_range
    for k, (begin, end) in ranges.items():
        pad = "    " * (1 + k)
        opens[k] = f"{pad}for (int64_t {names[k]} = {begin}; {names[k]} < {end}; ++{names[k]}) {{"
    lines: list[str] = []
    for k in range(len(bounds) + 1):
        pad = "    " * (1 + k)
        lines.extend(pad + s for s in before.get(k, []))
        if k < len(bounds):
            lines.append(opens[k])
    lines.extend(indent + s for s in body)
    for k in reversed(range(len(bounds) + 1)):
        if k < len(bounds):
            lines.append(closes[len(bounds) - 1 - k])
        pad = "    " * (1 + k)
        lines.extend(pad + s for s in after.get(k, []))
    return lines


def loop_statements(kernel: Kernel, names: Sequence[str]) -> tuple[list[str], str | None]:
    """A LoopSpec's statements and guard at the point `names` (its loop variables): each
    param's element addressed through its strides."""
    spec: LoopSpec = kernel.spec
    elements = [f"{p.name}[{index_expr(s, names)}]" for p, s in zip(kernel.params, spec.strides)]
    written = {p.name: e for p, e in zip(kernel.params[: spec.written], elements)}
    reads = elements[spec.written :]
    statements = [st.format(*reads, **written) for st in spec.statements]
    guard = None if spec.guard is None else spec.guard.format(*reads)
    return statements, guard


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


def blocks(total: int, threads: int, cap: int = MAX_BLOCKS) -> int:
    """Blocks of `threads` covering `total` items (at least one, at most `cap`: a grid-stride
    loop covers the rest)."""
    return max(1, min(-(-total // threads), cap))


def grid(total: int, threads: int = THREADS) -> dict:
    """The launch of a kernel with one thread per item: its item count, block size and blocks."""
    return {"total": total, "threads": threads, "blocks": blocks(total, threads)}
