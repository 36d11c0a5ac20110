"""How each convolution is computed: direct or im2col+GEMM, its register blocking, its scratch.

The kernels are runtime/include/tfc_conv.h; this module picks one per op and shape at compile
time and lays out the temporary buffers (the op's arena scratch) it needs. The op owns this
plan (rather than the C target) because the memory pass, which runs before code generation,
sizes the scratch from it (OpDef.scratch); the C target only spells it (tfc/codegen/c.py:
the tfc_conv_plan initializer and the function names), and the CUDA target, which needs no
scratch, chooses its own kernels from the geometry (tfc/codegen/cuda.py). The attribute
`_algorithm` ("direct", "im2col" or "columns") forces a choice (tests run each on every shape;
"columns" runs only where `columns_fit` holds, direct elsewhere).

columns (the forward pass, for few input and output channels at stride 1 along the width:
LeNet's conv1, 1 -> 6 channels) vectorizes over consecutive output columns, one accumulator
per output channel, instead of over the output channels, so every lane is useful where the
channel tiles use 6 of 8 or 16, and one input load serves every output channel.

Measured (bench/lenet_kernels.py --kernels: f32, 1 thread, the 2-core AVX-512 host, the plain
loop GEMM tfc_gemm.h had at the time): the direct kernels run LeNet's shapes (1->6 and 6->16
channels, 5x5) at 55-130 GFLOP/s where im2col+GEMM runs at 4-13; both gradients lead at 32,
64 and 128 channels with 3x3 taps too (55-120 GFLOP/s vs 1-60). The forward pass at 32 and
64 channels was a toss-up on the shared machine (load 4-9): one run had im2col ahead (54 vs
32, 86 vs 54 GFLOP/s), another direct (52 vs 9); at 128 channels direct led (93 vs 30). So
im2col is chosen only past the measured range, for GEMMs long on both sides (K =
k_h*k_w*in_c >= IM2COL_MIN_K and >= IM2COL_MIN_N output channels), where a packed,
cache-blocked GEMM is what pays; re-measure the crossover with `--kernels` when tfc_gemm.h
changes.

The forward pass no longer takes im2col on its own (2026-11-28, ResNet-50's deep layers, f32,
1 thread, load 6-9): with the filter read in channel blocks (`blocked`), direct ran
3x3 256->256 on 14x14 at batch 1 in 3.0 ms against im2col's 21.5, and at batch 32 3x3
256->256 (14x14), 3x3 512->512 (7x7) and 1x1 2048->512 (7x7) at 42-62 GFLOP/s against
im2col's 10-12; the gradients keep the rule above.

With the packed GEMM of tfc_gemm.h (2026-11-28, ResNet-50 at batch 1 and 32, f32, 1 thread,
load 3-7, each layer both ways in one process, `tfc profile`), im2col wins the forward pass
only where the GEMM has few rows (batch * out_h * out_w <= IM2COL_FORWARD_MAX_ROWS) and a long
reduction (k_h*k_w*in_c >= IM2COL_FORWARD_MIN_K): a 7-pixel output row is one 6-pixel tile and
a 1-pixel one in the direct kernel. At batch 1, 3x3 512->512 on 7x7 took 2.8-3.3 ms against
direct's 6-9, 1x1 512->2048 and 2048->512 on 7x7 1.3-1.7 against 2.0-5.1, 1x1 stride-2
1024->2048 (to 7x7) 3.0 against 6.2; at 14x14 (196 rows) and at batch 32 direct led or tied
(3x3 256->256 on 14x14 at batch 32: 52 ms against 83-88). A 1x1 convolution at stride 1
without padding (`pointwise`) taking im2col reads x as its column matrix: no copy, no scratch.

A constant filter of a fused convolution comes packed (tfc/passes/conv_pack.py: blocks of the
direct tile's output channels, each contiguous, `packed_filter`), and such a convolution always
runs direct: no per-call copy of the filter into blocks, and a row narrower than a tile is one
tile of its width (`_row_tile`: 7 pixels x 2 vectors at 7x7). ResNet-50's 7x7 layers at batch 1
(f32, 1 thread, load 2.7-4, each layer both ways in one process, the best of 5-7 runs) then run
1.1-1.4x as fast as through im2col: 3x3 512->512 56 against 51 GFLOP/s, 1x1 512->2048 76
against 54, 2048->512 62 against 52 (the loaded machine halved every figure); its 1x1 layers at
batch 1 on 56x56 to 14x14 1.05-1.2x as fast as with the filter copied.
"""

from __future__ import annotations

from dataclasses import replace

from tfc.ir import dtypes as _dt
from tfc.ops.kernels import ConvPlan, Geometry, product_precision
from tfc.ops.registry import OpContext

ALGORITHMS = ("direct", "im2col", "columns")
VECTOR_BYTES = 32  # the widest SIMD vector tfc_conv.h tiles with (AVX); narrower ones divide it
IM2COL_MIN_K = 2048
IM2COL_MIN_N = 256
IM2COL_FORWARD_MAX_ROWS = 64
IM2COL_FORWARD_MIN_K = 512
IM2COL_COLUMN_BYTES = 4 << 20  # images per GEMM: as many as keep the column matrix this small
ROWS_MAX_VECTORS = 4  # backprop input by row scatters: k_w*in_c up to 4 vectors (12 registers)
# tfc_conv.h tiles with 64-byte vectors (built with AVX-512) where a tile's channels fill whole
# ones; with 32 registers, such a tile takes more pixels (`pix_wide`): about this many accumulators
WIDE_VECTOR_BYTES = 64
WIDE_ACCUMULATORS = 24
WIDE_REGISTERS = 32
MAX_TILE_PIXELS = 16  # TFC_CONV_MAX_P
NARROW_ROW_PIXELS = 7  # a forward row this narrow is one tile (TFC_CONV_NARROW_ACC = 2 * 7)
# the forward tile takes this many channel blocks where the output channels are a multiple of
# them: 12 pixels x 2 64-byte vectors (AVX-512; 3 x 4 32-byte ones with AVX) load 14 values per
# 24 multiply-adds where 16 x 1 loads 17 per 16, which bounded the deep layers by the load ports
# (ResNet-50 at batch 1, f32, 1 thread, both builds alternating in one process, load 2.5-3:
# 3x3 256->256 on 14x14 0.80-0.90x the time, 1x1 at 14x14 0.83-0.88x, the network 0.89x)
FORWARD_WIDE_BLOCKS = 2
# the blocked direct kernel runs groups of output rows whose outputs and input rows take at most
# this many bytes through all channel blocks (half the 2 MB L2 of the AVX-512 host: the rest
# holds a block of the filter and the next one, prefetched)
L2_GROUP_BYTES = 1 << 20
# a forward 1x1 convolution at stride 1 takes im2col (its GEMM on x as it lies, the epilogue in
# the GEMM or from blocks of rows in L2: tfc_conv_forward_pointwise) from this many output
# pixels, with at most this many input channels. ResNet-50's 56x56 layers (f32, 1 thread, the
# program's thread CPU time through its C loop, both alternating in one process, the minimum of
# 4-15, load 5.3-8.7): with a residual, 64->256 0.88-0.91x direct's time at batch 32, 0.92x at
# batch 8 (25088 pixels), 1.00-1.02x at batch 2 (6272); without, 64->256 0.91-0.93x and 64->64
# 0.85-0.86x at batch 32, where 256->64 took 1.05-1.09x; at batch 32 128->512 on 28x28 with a
# residual 1.025-1.03x, 256->1024 on 14x14 0.97-0.99x. So the GEMM pays where the reduction is
# short (few products per stored output) and the output outgrows the caches; but not shorter
# still: SqueezeNet at batch 32, whose expansions of 16 and 32 channels to 64 and 128 on 55x55
# and 27x27 (into a concatenation) took it, ran 1.02-1.06x its time (whole program, thread
# CPU time, both alternating). Nor where the output channels leave the GEMM's panels part empty
# (NR = 64 floats with AVX-512, 16 with AVX): SqueezeNet's 64->16 squeeze on 55x55 at batch 32,
# which still took it, and 64 -> 32, 48, 80 and 96 there (f32, 1 thread, thread CPU time of each
# kernel, both programs' profiles alternating in one process, the minimum of 12-15, load 3-4)
# ran 1.0-1.5x direct's time at 16 channels, 2.2-2.6x at the others; so out_c fills whole panels
# (there 64 ran 0.93-1.09x, 256 0.89x; 128, which no measured network has, 0.95-1.13x). And only
# for a filter that does not come packed: since the direct kernel prefetches the output slices it
# writes next, it runs ResNet-50's 56x56 1x1 layers of 64 input channels on their packed filters
# at batch 32 in 0.76x (64->256) and 0.77x (64->64) the GEMM's time (f32, 1 thread, both builds
# alternating in one process, minima of 6 profiles, load 3, the same bits)
POINTWISE_GEMM_MIN_ROWS = 16384
POINTWISE_GEMM_MIN_IN_C = 64
POINTWISE_GEMM_MAX_IN_C = 64
POINTWISE_GEMM_OUT_BYTES = 256  # out_c a multiple of this many bytes: the AVX-512 build's NR
# a 1x1 convolution with a residual through im2col (its GEMM on x as it lies) runs its rows in
# blocks of about this many bytes of output, each block's epilogue reading the block in L2 (half
# of it: the rest holds the filter's packed panels and the block's rows of x)
POINTWISE_BLOCK_BYTES = 192 << 10
POINTWISE_MIN_ROWS = 96
ALIGN_ELEMENTS = 16  # scratch regions start on 64-byte boundaries (for floats)
# the direct kernels split the batch into this many parts (of `chunk` images) that threads take
# (tfc_conv_run_parts): a fixed split, so that the filter gradient, a sum of one partial sum per
# part, has the same bits whatever the thread count; 16 parts balance 2 or 3 threads. A program
# built to run on one thread (graph_attrs["threads"] == 1: the embeddable library) takes the
# batch as one part: no partial sums, one image's planes of scratch.
BATCH_PARTS = 16
# the columns kernel copies each image into bordered channel planes (its arena scratch, one set
# per part) and reads them once per tap: at most this many bytes, so they stay in cache
COLUMNS_PLANES_BYTES = 40960
COLUMNS_MAX_IN_C = 4
COLUMNS_MAX_OUT_C = 8


def check_algorithm(ctx: OpContext) -> None:
    algorithm = ctx.attrs.get("_algorithm")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise ValueError(
            f"'{ctx.name}' ({ctx.type}): attribute _algorithm is {algorithm!r}; it must be one "
            f"of {', '.join(map(repr, ALGORITHMS))}"
        )


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _layout(sizes: list[int]) -> tuple[tuple[int | None, ...], int]:
    """Offsets of buffers of `sizes` elements (None for an empty one), aligned, and the total."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total if size else None)
        total += _round_up(size, ALIGN_ELEMENTS)
    return tuple(offsets), total


def _columns_width(g: Geometry, dtype: _dt.DType) -> int:
    """The bordered planes' width for the columns kernel: out_w rounded up to whole 64-byte
    vectors, then the taps' reach."""
    lanes = WIDE_VECTOR_BYTES // dtype.size
    return _round_up(g.out_w, lanes) + (g.k_w - 1) * g.d_w


def columns_fit(kind: str, g: Geometry, dtype: _dt.DType) -> bool:
    """Whether the columns kernel runs op `kind` of `g`: the forward pass at stride 1 along
    the width, few channels, one image's planes within the stack allowance."""
    if kind != "forward" or g.s_w != 1:
        return False
    if g.in_c > COLUMNS_MAX_IN_C or g.out_c > COLUMNS_MAX_OUT_C:
        return False
    return _columns_planes(g, dtype) * dtype.size <= COLUMNS_PLANES_BYTES


def _columns_planes(g: Geometry, dtype: _dt.DType) -> int:
    """Elements of one image's bordered channel planes in the columns kernel."""
    hp, _ = g.padded_size()
    return g.in_c * hp * _columns_width(g, dtype)


def pointwise(g: Geometry) -> bool:
    """Whether `g` is a 1x1 convolution at stride 1 without padding: each output pixel is its
    input pixel's channels times the filter, so the image is the GEMM's left matrix as it is."""
    unit = (g.k_h, g.k_w, g.s_h, g.s_w) == (1, 1, 1, 1)
    return unit and (g.out_h, g.out_w) == (g.in_h, g.in_w)


def _adds_residual(ctx: OpContext) -> bool:
    """Whether the op is a _FusedConv2D whose epilogue adds a residual (fused_ops BiasAdd, Add,
    ...: tfc.ops.conv.fused_conv_epilogue checks them)."""
    ops = [o.decode() if isinstance(o, bytes) else str(o) for o in ctx.attrs.get("fused_ops", ())]
    return len(ops) > 1 and ops[1] == "Add"


def pointwise_block_rows(g: Geometry, dtype: _dt.DType) -> int:
    """Rows of a pointwise product per block whose residual epilogue runs from a scratch block
    (tfc_conv_forward_pointwise): about POINTWISE_BLOCK_BYTES of it, at least POINTWISE_MIN_ROWS
    (each block's GEMM packs the filter again), whole micro-kernel tiles of 6 rows."""
    rows = max(POINTWISE_MIN_ROWS, POINTWISE_BLOCK_BYTES // (g.out_c * dtype.size))
    rows = _round_up(rows, 6)
    return min(rows, g.batch * g.out_h * g.out_w)


def _batch_parts(ctx: OpContext) -> int:
    """The parts the batch is split into: BATCH_PARTS, or 1 in a single-threaded program."""
    threads = ctx.graph.graph_attrs.get("threads") if ctx.graph is not None else None
    return 1 if threads == 1 else BATCH_PARTS


def packed_filter(ctx: OpContext) -> bool:
    """Whether the op's filter comes packed in blocks of its direct tiles' channels (the
    attribute `packed_filter` that tfc/passes/conv_pack.py sets on _FusedConv2D)."""
    return bool(ctx.attrs.get("packed_filter"))


def forward_filter_block(out_c: int, dtype: _dt.DType) -> int:
    """The output channels of a direct forward tile (co_block): one or two vectors, two blocks
    of them where out_c is a multiple of that. A packed filter is laid out in blocks of it."""
    cb = _channel_block(out_c, dtype)
    return cb * FORWARD_WIDE_BLOCKS if out_c % (FORWARD_WIDE_BLOCKS * cb) == 0 else cb


def _choose(ctx: OpContext, kind: str, g: Geometry, dtype: _dt.DType) -> str:
    if kind == "forward" and packed_filter(ctx):
        return "direct"  # the other kernels read the filter as [taps, out_c]
    forced = ctx.attrs.get("_algorithm")
    if forced == "columns":
        return "columns" if columns_fit(kind, g, dtype) else "direct"
    if forced is not None:
        return forced
    return default_algorithm(kind, g, dtype)


def default_algorithm(kind: str, g: Geometry, dtype: _dt.DType, packed: bool = False) -> str:
    """The algorithm of op `kind` of `g` when no `_algorithm` attribute forces one; `packed`:
    for a forward filter that can come packed in blocks (a constant: tfc/passes/conv_pack.py),
    which the direct kernel reads where it lies."""
    if g.in_c <= 3 and columns_fit(kind, g, dtype):
        return "columns"
    k = g.k_h * g.k_w * g.in_c
    if kind == "forward":
        rows = g.batch * g.out_h * g.out_w
        short = POINTWISE_GEMM_MIN_IN_C <= g.in_c <= POINTWISE_GEMM_MAX_IN_C
        panels = g.out_c * dtype.size % POINTWISE_GEMM_OUT_BYTES == 0
        gemm = pointwise(g) and short and panels and not packed
        if gemm and rows >= POINTWISE_GEMM_MIN_ROWS:
            return "im2col"
        short = rows <= IM2COL_FORWARD_MAX_ROWS and k >= IM2COL_FORWARD_MIN_K
        return "im2col" if short and not packed else "direct"
    wide = k >= IM2COL_MIN_K and g.out_c >= IM2COL_MIN_N
    return "im2col" if wide else "direct"


def describe_plan(kind: str, plan: ConvPlan) -> str:
    """How tfc_conv.h computes a convolution of `kind` with `plan`, in words (tfc inspect)."""
    f = plan.fields
    if plan.kernel == "im2col" and kind == "forward" and f["k_h"] == f["k_w"] == 1:
        unit = (f["s_h"], f["s_w"], f["in_h"], f["in_w"]) == (1, 1, f["out_h"], f["out_w"])
        if unit:
            if f["residual"]:
                return f"1x1 GEMM on the image, blocks of {f['pix_block']} rows, residual epilogue"
            return "1x1 GEMM on the image, epilogue in the GEMM"
    words = {"direct": "direct", "rows": "direct (row scatter)", "im2col": "im2col + GEMM"}
    text = words.get(plan.kernel, plan.kernel)
    if plan.kernel == "direct" and kind == "forward":
        bordered = (f["hp"], f["wp"]) != (f["in_h"], f["in_w"])
        text += ", on a zero-bordered copy" if bordered else ""
        text += ", packed filter" if f["packed"] else ""
        text += f", filter blocks outermost ({f['blocked']} rows a group)" if f["blocked"] else ""
    return text


def _channel_block(channels: int, dtype: _dt.DType) -> int:
    """Lanes of one tile row: one vector for few channels, two (a wider tile) for more."""
    lanes = VECTOR_BYTES // dtype.size
    return lanes if channels <= lanes else 2 * lanes


def _wide_vectors(channels: int, dtype: _dt.DType) -> int:
    """64-byte vectors in a tile of `channels` (a channel block or padded row), 0 if not whole."""
    size = channels * dtype.size
    return size // WIDE_VECTOR_BYTES if size % WIDE_VECTOR_BYTES == 0 else 0


def _wide_pixels(channels: int, dtype: _dt.DType, pix: int) -> int:
    """pix_wide: the pixels of a tile of `channels` in 64-byte vectors (`pix` when not whole)."""
    vectors = _wide_vectors(channels, dtype)
    if not vectors:
        return pix
    return max(1, min(MAX_TILE_PIXELS, WIDE_ACCUMULATORS // vectors))


def _row_tile(width: int, pix: int, most: int) -> int:
    """Pixels per tile of a `width`-pixel output row for tiles of about `pix`: the whole row
    where it is narrower, so that its one tile is of a constant size to the compiler; else a
    size from `most` down to pix / 2 that divides the row, where one does, so that no tile of
    pixels left over (whose sums stay in memory) ends each row. ResNet-50's 14-, 28- and
    56-pixel rows take 14-pixel tiles of 2 64-byte vectors (28 of the 32 AVX-512 registers)
    instead of 12 and 2, 4 or 8 left over: kernels 2115-2173 -> 1984-2011 ms at batch 32 and
    57.7-59.8 -> 53.0-54.7 ms at batch 1 (minima, both alternating, load 3.2-3.5)."""
    if width > pix:
        for p in range(most, pix // 2 - 1, -1):
            if width % p == 0:
                return p
    return min(width, pix)


def _narrow_row_pixels(width: int, pix: int) -> int:
    """Pixels per forward tile of vectors narrower than 64 bytes: `pix`, or a whole row of up to
    NARROW_ROW_PIXELS. A 7-pixel row as one tile of 7 x 2 vectors (14 accumulators,
    tfc_conv_narrow_part) rather than 6 and 1: 3x3 512->512 on 7x7 at batch 1 75 -> 87 GFLOP/s,
    1x1 2048->512 37 -> 50 (AVX2, Zen 3, f32, 1 thread, both builds alternating in one process,
    minima of 40 runs). Wider rows keep 6-pixel tiles: 7 ran 3x3 256->256 on 14x14 at 62
    GFLOP/s against 84."""
    return width if pix < width <= NARROW_ROW_PIXELS else min(width, pix)


def _wide_row_pixels(channels: int, dtype: _dt.DType, pix_wide: int) -> int:
    """The most pixels of a forward tile of 64-byte vectors: its accumulators, filter vectors
    and broadcast in the 32 AVX-512 registers (pix_wide where the channels do not fill them)."""
    vectors = _wide_vectors(channels, dtype)
    if not vectors:
        return pix_wide
    return max(pix_wide, min(MAX_TILE_PIXELS, (WIDE_REGISTERS - 1 - vectors) // vectors))


def plan_conv(ctx: OpContext, kind: str, g: Geometry, dtype: _dt.DType) -> ConvPlan:
    """The plan of op `kind` ("forward", "input" or "filter") of convolution `g`; under mixed
    precision (kernels.product_precision), with room for its operands rounded to bfloat16."""
    plan = _plan_algorithm(ctx, kind, g, dtype)
    if product_precision(ctx) is None:
        return plan
    return with_rounded_operands(plan, kind, g)


def operand_sizes(kind: str, g: Geometry) -> tuple[int, int]:
    """Elements of a convolution kernel's operands x0 and x1: (image, filter) forward,
    (filter, output gradient) for the input gradient, (image, output gradient) for the filter's."""
    image = g.batch * g.in_h * g.in_w * g.in_c
    kernel = g.k_h * g.k_w * g.in_c * g.out_c
    gradient = g.batch * g.out_h * g.out_w * g.out_c
    return {"forward": (image, kernel), "input": (kernel, gradient), "filter": (image, gradient)}[
        kind
    ]


def with_rounded_operands(plan: ConvPlan, kind: str, g: Geometry) -> ConvPlan:
    """`plan` with two more scratch regions after its own: x0 and x1 rounded to bfloat16 (the
    kernels of every variant then multiply them as they are, summing in fp32)."""
    start = _round_up(plan.scratch_elements, ALIGN_ELEMENTS)
    offsets, total = _layout(list(operand_sizes(kind, g)))
    first, second = (start + (o or 0) for o in offsets)
    return replace(plan, rounded=(first, second), scratch_elements=start + total)


# whether the forward direct kernel reads a zero-bordered copy of a padded image rather than
# the image itself, whose tiles at an edge then run on a copy of their windows with zeros
# outside it (tfc_conv_strip): the copy is 1.7-3.4 MB per part in ResNet-50's 3x3 layers at
# batch 32, a strip 12-92 KB
FORWARD_BORDERED = False


def bordered_input(kind: str, g: Geometry, blocked: bool = False) -> bool:
    """Whether the direct kernel of op `kind` reads its image (the gradient for backprop filter)
    from a zero-bordered copy: plan fields hp, wp are then the copy's size, else the image's.
    `blocked`: a forward kernel's filter blocks go outermost, so each row's tiles at an edge would
    copy their strips once per block (ResNet-50's 7x7 layers, one tile a row: 1.24-1.27x the
    bordered kernel's time at batch 32, where the 56x56 layers took 0.87-0.92x)."""
    padded = g.padded_size() != (g.in_h, g.in_w)
    return padded and (kind != "forward" or blocked or FORWARD_BORDERED)


# the forward direct kernel's output rows prefetch the input rows the next one reads first only
# where a pixel's input channels take more than a cache line: there a tile's pixels read lines a
# pixel apart at once, which the hardware's prefetchers do not follow (ResNet-50's layers, 64+
# channels), while a few channels' rows are read as one run of lines, which they follow, and the
# prefetches only cost. SqueezeNet at batch 1 (f32, 1 thread, bench/onnx_ab.py, 5 processes per
# build, load 0.8-1.1, the same bits): conv1 (3 channels, 3x3 stride 2) took 1.12x 4ec231f's
# time with them, 0.90-0.92x the prefetching build's without; its expansions of 16 channels
# (64 bytes) 0.985-0.99x without, of 32 (128 bytes) 1.02x. Backprop input keeps them (not
# measured there).
PREFETCH_ROWS_MIN_BYTES = 65


def prefetch_input_rows(kind: str, g: Geometry, dtype: _dt.DType) -> bool:
    """Whether the direct kernel of op `kind` prefetches, from each output row's tiles, the input
    rows the next row reads first (plan field prefetch_rows)."""
    if kind == "filter":
        return False  # its kernel reads the image along the taps, not by output rows
    return kind == "input" or g.in_c * dtype.size >= PREFETCH_ROWS_MIN_BYTES


def group_rows(g: Geometry, chunk: int, wp: int, dtype: _dt.DType) -> int:
    """The output rows of a part that the blocked direct kernel runs through every channel block
    before the next rows: the part's rows in as few groups as fit L2_GROUP_BYTES with the input
    rows they read, of equal size. Each group reads the whole filter, so the count of groups
    sets its traffic; equal groups then keep the largest one small. The largest that fit had
    left a group of a few rows: 13 + 1 for 3x3 stride-2 512->512 into 7x7, 12 + 12 + 4 for 1x1
    1024->512 on 14x14 at batch 32 (chunk 2), the latter 0.90-0.94x the time as 10 + 9 + 9
    (f32, 1 thread, pinned, min of 6 profiles, load 1.5-2 with another engineer's benchmark)."""
    per_row = (g.out_w * g.out_c + g.s_h * wp * g.in_c) * dtype.size
    rows = chunk * g.out_h
    most = max(1, min(rows, L2_GROUP_BYTES // max(per_row, 1)))
    groups = -(-rows // most)
    return -(-rows // groups)


def _plan_algorithm(ctx: OpContext, kind: str, g: Geometry, dtype: _dt.DType) -> ConvPlan:
    fields = dict(g.__dict__)
    fields.update(pix_block=1, pix_wide=1, co_block=1, blocked=0, packed=0, prefetch_rows=0)
    fields.update(bias=0, residual=0, act=0)
    fields.update(ldy=g.out_c, y_off=0)
    fields.update(hp=g.in_h, wp=g.in_w, cp=g.out_c, chunk=g.batch)
    algorithm = _choose(ctx, kind, g, dtype)
    taps = g.k_h * g.k_w * g.in_c
    if algorithm == "columns":
        hp, wp = g.padded_size()
        fields.update(hp=hp, wp=wp, cp=_columns_width(g, dtype))
        chunk = max(1, -(-g.batch // _batch_parts(ctx)))  # images are independent
        fields["chunk"] = chunk
        # the planes of one image per part (the parts may run on different threads)
        regions, total = _layout([-(-g.batch // chunk) * _columns_planes(g, dtype)])
        return ConvPlan(algorithm, "columns", fields, regions, total)
    if algorithm == "im2col":
        pixels = g.out_h * g.out_w
        per_image = max(pixels * taps * dtype.size, 1)
        chunk = max(1, min(g.batch, IM2COL_COLUMN_BYTES // per_image))
        sizes = [chunk * pixels * taps]
        if kind == "forward" and pointwise(g):
            chunk = g.batch  # x is the column matrix: one GEMM, no copy
            # with a residual, the product's rows in blocks that stay in L2 (pix_block)
            rows = pointwise_block_rows(g, dtype) if _adds_residual(ctx) else 0
            fields["pix_block"] = max(rows, 1)
            sizes = [rows * g.out_c]
        fields["chunk"] = chunk
        if kind == "filter":
            sizes.append(taps * g.out_c if chunk < g.batch else 0)
        regions, total = _layout(sizes)
        return ConvPlan(algorithm, "im2col", fields, regions, total)

    fields["chunk"] = max(1, -(-g.batch // _batch_parts(ctx)))
    parts = -(-g.batch // fields["chunk"])
    lanes = VECTOR_BYTES // dtype.size
    segment = g.k_w * g.in_c
    if kind == "input" and g.d_w == 1 and segment <= ROWS_MAX_VECTORS * lanes:
        # scatter form: a kh's k_w*in_c filter values are contiguous in f and in dx, so each dy
        # row times them is one run of vectors added to dx (no zeros multiplied, unlike the
        # forward kernel on the stride-spread gradient, which for LeNet's conv2 multiplies
        # 2.6x the products: 0.57 -> 0.3 ms)
        lp = _round_up(segment, lanes)
        hp, wp = g.padded_size()
        pix = max(1, 12 // (lp // lanes))
        fields.update(pix_block=pix, pix_wide=_wide_pixels(lp, dtype, pix), cp=lp, hp=hp, wp=wp)
        # each image's bordered gradient then slack for its last segments' padding
        sizes = [g.batch * (hp * wp * g.in_c + lp - segment), g.k_h * g.out_c * lp]
        regions, total = _layout(sizes)
        return ConvPlan(algorithm, "rows", fields, regions, total)

    # direct: the channels of the tile are the output's (the image's for backprop input)
    channels = g.in_c if kind == "input" else g.out_c
    cb = (
        forward_filter_block(channels, dtype)
        if kind == "forward"
        else _channel_block(channels, dtype)
    )
    cp = _round_up(channels, cb)
    wide = cb > VECTOR_BYTES // dtype.size
    if kind == "filter":
        limit = 6 if wide else 12  # accumulators: 12 of the 16 AVX registers
        passes = -(-taps // limit)
        pix = -(-taps // passes)
        # the same split of the taps for the 64-byte tiles
        wide_limit = _wide_pixels(cb, dtype, limit)
        pix_wide = -(-taps // -(-taps // wide_limit))
    else:
        vectors = cb // (VECTOR_BYTES // dtype.size)
        # 8 or 12 of the 16 AVX registers; a tile of more than two vectors runs in parts of
        # two (tfc_conv_narrow_part), each 6 pixels x 2 vectors
        pix = 8 if vectors == 1 else 6
        pix_wide = _wide_pixels(cb, dtype, pix)
        if kind == "forward":
            # the AVX tiles (16 registers) keep the row's leftover pixels: not measured here
            most = _wide_row_pixels(cb, dtype, pix_wide)
            pix, pix_wide = _narrow_row_pixels(g.out_w, pix), _row_tile(g.out_w, pix_wide, most)
    fields.update(pix_block=pix, pix_wide=pix_wide, co_block=cb, cp=cp)
    fields["prefetch_rows"] = int(prefetch_input_rows(kind, g, dtype))
    if kind == "input":
        hp, wp = g.in_h + (g.k_h - 1) * g.d_h, g.in_w + (g.k_w - 1) * g.d_w
        fields.update(hp=hp, wp=wp)
        sizes = [g.batch * hp * wp * g.out_c, g.k_h * g.k_w * g.out_c * cp]
    else:
        hp, wp = g.padded_size()
        blocked = False
        if kind == "forward":
            # the channel blocks outermost, each copied into a buffer of the part first
            # (tfc_conv_direct_core), where the filter has more values than a part's images:
            # read once per part rather than once per output row. Not in the embeddable library
            # (one part): on a cacheless MCU the buffer would only grow the arena.
            blocked = _batch_parts(ctx) > 1 and taps * cp > fields["chunk"] * hp * wp * g.in_c
            group = group_rows(g, fields["chunk"], wp, dtype) if blocked else 0
            fields.update(blocked=group, packed=int(packed_filter(ctx)))
        bordered = bordered_input(kind, g, blocked)
        if bordered:
            fields.update(hp=hp, wp=wp)
        border = g.batch * hp * wp * g.in_c if bordered else 0
        if kind == "forward" and not bordered and (hp, wp) != (g.in_h, g.in_w):
            # each part's strip: the windows of one tile at an edge, zeros outside the image
            # (tfc_conv_strip_size of the larger tile)
            most = max(fields["pix_block"], fields["pix_wide"])
            border = parts * g.k_h * ((most - 1) * g.s_w + (g.k_w - 1) * g.d_w + 1) * g.in_c
        if kind == "forward":
            if fields["packed"]:
                sizes = [border, 0]  # the blocks are read where they lie
            elif blocked:
                sizes = [border, parts * taps * cb]
            else:
                sizes = [border, taps * cp if cp != g.out_c else 0]
        else:
            sizes = [border, g.batch * g.out_h * g.out_w * cp if cp != g.out_c else 0]
            sizes.append((parts - 1) * taps * g.out_c)  # the partial sums of parts 1, 2, ...
    regions, total = _layout(sizes)
    return ConvPlan(algorithm, "direct", fields, regions, total)
