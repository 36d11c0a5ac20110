"""Kernel specs: what an op lowers to, as typed data every target renders as an equal.

An op's `lower` rule returns a list of `Kernel`s. Each names its kind (the stem of the template
each target renders it with: templates/<target>/kernels/<kind>.*.j2), its pointer parameters
(each bound to a logical buffer of the node: "in0", "out0", "state", "scratch"), and a spec: a
frozen dataclass of integers, shapes, strides, dtypes and element-wise expressions of the ops'
C-syntax table (the one table the C and CUDA targets share). A spec holds no loop nest, no
function name, no thread index: each target derives those from it in Python
(tfc/codegen/c.py, tfc/codegen/cuda.py). Most ops are a strided loop nest (element-wise maps
with broadcasting, transposes, slices, tiles, pads, concats) or a reduction; the builders here
collapse dimensions so loops are as few and as contiguous as possible, which is what lets the
C compiler vectorize them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt

# CompileOptions(mixed_precision="bfloat16"): the program graph's attribute MIXED_PRECISION holds
# BFLOAT16_PRODUCTS, and its float32 matrix products and convolutions round their operands to
# bfloat16 (to nearest, even) and sum in fp32 (GemmSpec.precision, ConvSpec.precision)
MIXED_PRECISION = "mixed_precision"
BFLOAT16_PRODUCTS = "bfloat16"


def product_precision(ctx: Any) -> str | None:
    """The precision of the operands of the product (MatMul, a convolution) whose lowering
    sees context `ctx`: BFLOAT16_PRODUCTS under mixed precision where the graph holds it as
    float32, else None (its dtype's own). A 16-bit float product that runs in float32
    (OpDef.computes_in) keeps its precision."""
    graph = ctx.graph
    if graph is None or graph.graph_attrs.get(MIXED_PRECISION) is None:
        return None
    if ctx.name in graph.nx and graph.node(ctx.name)["dtypes"][0] is not _dt.float32:
        return None
    return graph.graph_attrs[MIXED_PRECISION] if ctx.out_dtypes[0] is _dt.float32 else None


def product_operands(ctx: Any, *operands: np.ndarray) -> tuple[np.ndarray, ...]:
    """A product's operands as its kernels multiply them: rounded to bfloat16 (as float32
    values) where `product_precision(ctx)` says so, else as they are. The ops' NumPy references
    call it, so that folding a product of constants gives what its kernel would."""
    if product_precision(ctx) is None:
        return operands
    return tuple(
        _dt.to_float32(_dt.as_numpy(np.asarray(v, np.float32), _dt.bfloat16), _dt.bfloat16)
        for v in operands
    )


@dataclass(frozen=True)
class Param:
    """One pointer parameter of a kernel function, bound at the call site to a node's buffer."""

    name: str
    ctype: str  # the element type as C and CUDA spell it
    const: bool
    buf: str  # "in0", "out1", "state", "scratch"
    offset: int = 0  # in elements, added to the buffer's pointer at the call site


@dataclass
class Kernel:
    """One kernel of a node: its kind (the template stem), its parameters and its spec."""

    template: str
    params: list[Param]
    spec: Any  # one of the spec dataclasses below
    can_fail: bool = False


# -- specs ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoopSpec:
    """Statements run at every point of a loop nest (kind "loop").

    `bounds` are the collapsed loop extents and `strides[k]` walks param k over them. The
    statements and the guard are expressions of the C table over element names: `{<name>}` is
    the element of written param <name> (the first `written` params: "y", or the refs "r0",
    "r1"...), `{0}`, `{1}`... the elements of the read-only params after them. When `guard`
    holds for an element, the kernel stops and the run fails with `message`.
    """

    bounds: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    statements: tuple[str, ...]
    written: int = 1
    guard: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class ReduceDim:
    """One collapsed dim of a reduction's input: its size, the input's and the output's stride
    along it (0 where reduced), and whether it is reduced."""

    size: int
    x_stride: int
    y_stride: int
    reduced: bool


@dataclass(frozen=True)
class ReduceSpec:
    """y[o] = combine over the reduced elements of x (kind "reduce"), in the input's memory
    order. `combine` is an expression of {a} (accumulator) and {b} (element), `init` the
    identity, `finalize` an expression of {a} applied to each result (a mean's division);
    `acc` the accumulator's dtype over a trailing run of reduced dims."""

    dims: tuple[ReduceDim, ...]
    out_count: int
    in_count: int  # 0: an empty dimension is reduced, nothing is read
    combine: str
    init: str
    finalize: str | None
    acc: _dt.DType


@dataclass(frozen=True)
class GemmSpec:
    """A (batched) matrix product C = A B (kind "matmul"): the runtime GEMM of `dtype` over
    the stored matrices' strides, once per point of the collapsed batch dims, each operand
    offset by its batch strides (c, a, b)."""

    dtype: _dt.DType
    m: int
    n: int
    k: int
    sam: int
    sak: int
    sbk: int
    sbn: int
    batch: tuple[int, ...]
    batch_strides: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    precision: str | None = None  # BFLOAT16_PRODUCTS: operands rounded to bfloat16, fp32 sums
    # B (a variable the program only reads) stays in the GEMM's panel layout between calls: the
    # kernel has the params pk and ep of the packed copy and the state epoch (tfc_gemm_packed.h)
    packed_b: bool = False


@dataclass(frozen=True)
class RowSpec:
    """A kernel over `rows` rows of `cols` values (softmax, its gradient, sparse cross-entropy):
    the expressions of its formula per element, by the names the kernel kind's templates
    give the row values (xr, yr, gr, m, s, t)."""

    dtype: _dt.DType
    rows: int
    cols: int
    exprs: dict[str, Any]  # name -> an expression, or a tuple of statements


@dataclass(frozen=True)
class Geometry:
    """Every size of one NHWC convolution or pool, concrete: what references and kernels read."""

    batch: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    k_h: int
    k_w: int
    s_h: int
    s_w: int
    d_h: int
    d_w: int
    pad_top: int
    pad_left: int

    @property
    def in_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.in_h, self.in_w, self.in_c)

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.out_h, self.out_w, self.out_c)

    def padded_size(self) -> tuple[int, int]:
        """The (height, width) of the input padded so that every window lies inside it."""
        need_h = (self.out_h - 1) * self.s_h + (self.k_h - 1) * self.d_h + 1
        need_w = (self.out_w - 1) * self.s_w + (self.k_w - 1) * self.d_w + 1
        return max(need_h, self.pad_top + self.in_h), max(need_w, self.pad_left + self.in_w)


@dataclass(frozen=True)
class WindowSpec:
    """A window op over NHWC images with every size in `geometry` (pools, conv-like ops): one
    template per kind and target, which every target renders from the geometry alone (no
    renderer code per kind). `over` names the image whose elements are independent outputs
    (a target spreading work over threads gives each one): "output", "input" for the
    gradients that gather into the input image, or "filter" for the gradient of a filter per
    channel ([k_h, k_w, out_c]: the depthwise convolution's). `sizes` are further integers the
    kind's templates read (a depth multiplier, say), or C spellings of its constants and
    functions for the element type (LRN's alpha, powf): templates do no arithmetic."""

    geometry: Geometry
    dtype: _dt.DType
    over: str = "output"
    sizes: dict[str, int | str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConvPlan:
    """How runtime/include/tfc_conv.h computes one convolution (ops/conv_algo.py makes it)."""

    algorithm: str  # "direct", "im2col" or "columns"
    kernel: str  # the tfc_conv.h function's variant: "direct", "rows", "im2col" or "columns"
    fields: dict[str, int]  # every field of tfc_conv_plan, by name
    regions: tuple[int | None, ...]  # element offset of each scratch buffer in the scratch
    scratch_elements: int
    # mixed precision: the element offsets in the scratch of x0's and x1's copies rounded to
    # bfloat16, which the kernel reads instead of x0 and x1 (after `regions`)
    rounded: tuple[int, int] | None = None


@dataclass(frozen=True)
class ConvSpec:
    """A convolution (kind "conv2d"): the op kind ("forward", "input" or "filter"), its
    geometry, and the plan of runtime/include/tfc_conv.h's kernels that the C target calls
    (its variant, register blocking and scratch regions: ops/conv_algo.py)."""

    kind: str
    geometry: Geometry
    plan: ConvPlan
    dtype: _dt.DType
    precision: str | None = None  # BFLOAT16_PRODUCTS: operands rounded to bfloat16, fp32 sums


@dataclass(frozen=True)
class IndexSpec:
    """A kernel indexing rows of `inner` values by ids (gather, segment_sum, one_hot): the
    ids' count, the range they must lie in, the outer and inner sizes, and whether values are
    copied at all (an empty output only checks the ids)."""

    dtype: _dt.DType
    index_dtype: _dt.DType
    outer: int
    count: int
    limit: int
    inner: int
    copy: bool = True
    total: int = 0  # elements of the output, when the kernel first clears it


@dataclass(frozen=True)
class ScanSpec:
    """A kernel over `count` elements of `dtype` (check_numerics, the random draws): its
    parameters by name (a distribution, error messages as plain text)."""

    dtype: _dt.DType
    count: int
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ArgReduceSpec:
    """ArgMax/ArgMin over the middle dim of [outer, n, inner] (kind "argreduce"): `better` is
    the condition of value v beating best (the ops' table), the output holds `index_dtype`."""

    dtype: _dt.DType
    index_dtype: _dt.DType
    outer: int
    n: int
    inner: int
    better: str


@dataclass(frozen=True)
class NdIndexSpec:
    """A kernel addressing slices of `inner` values by index tuples (kinds "gather_nd",
    "scatter_nd"): `batch` leading entries shared by the index tuples and the tensor (each
    `batch_stride` values of the tensor apart), `count` tuples per batch entry (laid out as
    `lead`, for messages), each of len(dims) coordinates into `dims`. A scatter starts its
    output from `init` ("zeros", "input": input 0 copied, None: updated in place, a
    variable) and combines each target element {a} with its update {b} by `update` (an
    expression of the ops' C table), failing with `update_guard` = (condition on {b},
    message) where set (integer division by zero); `scalar_updates` reads one update for every
    element. `shape_what` names the indexed shape in the out-of-range message ("param shape",
    "shape"), and `flat_index` gives the 1-D scatters' message (`indices[i] = v is not in
    [0, n)`)."""

    dtype: _dt.DType
    index_dtype: _dt.DType
    batch: int
    batch_stride: int
    count: int
    lead: tuple[int, ...]
    dims: tuple[int, ...]
    inner: int
    shape: tuple[int, ...]  # the indexed tensor's shape, for messages
    shape_what: str = "shape"
    init: str | None = None
    update: str = "{b}"
    update_guard: tuple[str, str] | None = None
    scalar_updates: bool = False
    flat_index: bool = False
    total: int = 0  # elements of the output


@dataclass(frozen=True)
class OrderSpec:
    """A kernel over `rows` rows of `n` values of `dtype` that orders or searches them (kinds
    "sort": each row stably sorted, its values and their positions written; "search_sorted":
    for each of `m` values per row, the position in the sorted row where it belongs). `before`
    is the condition of value {u} coming strictly before value {v} (sort), or of a row value
    {u} lying before the position of a searched value {v} (search)."""

    dtype: _dt.DType
    index_dtype: _dt.DType
    rows: int
    n: int
    before: str
    m: int = 0


@dataclass(frozen=True)
class SequenceSpec:
    """Reverse the first `lengths[b]` elements along the sequence dim of every batch entry b
    (kind "reverse_sequence"): the shape as (`total` elements, the batch dim's size and
    stride, the sequence dim's size and stride), and the sequence dim's index for messages."""

    dtype: _dt.DType
    length_dtype: _dt.DType
    total: int
    batch_size: int
    batch_stride: int
    seq_size: int
    seq_stride: int
    seq_dim: int


@dataclass(frozen=True)
class CumulativeSpec:
    """A running sum or product along the middle dim of [outer, n, inner] (kind "cumulative"):
    each line of n values is folded in order by `combine` ({a} the running value, {b} the
    element), starting from the first element (or from `init` when `exclusive`: each output
    then leaves its own element out); `reverse` runs each line from its end."""

    dtype: _dt.DType
    outer: int
    n: int
    inner: int
    combine: str
    init: str
    exclusive: bool
    reverse: bool


@dataclass(frozen=True)
class RangeSpec:
    """y[i] = start + i * delta for i < count (kind "range"): start and delta as C literals."""

    dtype: _dt.DType
    count: int
    start: str
    delta: str


@dataclass(frozen=True)
class SegmentSpec:
    """Rows of `inner` values folded into the segments their ids name (kinds "segment_reduce",
    "segment_sorted", "bincount"): `count` ids below `limit`, `total` output elements, each
    segment starting from `empty`; `combine` folds element {b} into {a}; `finalize` ({a} the
    folded value, {n} the rows in its segment) finishes a sorted segment (a mean)."""

    dtype: _dt.DType
    index_dtype: _dt.DType
    count: int
    limit: int
    inner: int
    total: int
    combine: str
    empty: str
    finalize: str | None = None


@dataclass(frozen=True)
class MatrixSpec:
    """One routine of runtime/include/tfc_linalg.h called for every matrix of a batch (kind
    "linalg"): tfc_linalg_<routine>_<tag>(*sizes, *params), param k offset by strides[k] along
    the collapsed batch dims `batch`. The C target loops over the batch; CUDA gives each
    matrix a thread. When `message` is set, a routine returning nonzero fails the run with it
    (InvalidArgumentError)."""

    dtype: _dt.DType
    routine: str
    sizes: tuple[int, ...]
    batch: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    message: str | None = None


@dataclass(frozen=True)
class BandSpec:
    """MatrixBandPart (kind "band_part"): y = x inside the band of `lower` diagonals below the
    main one and `upper` above it (-1: all of them), 0 outside, over `batch` contiguous
    rows x cols matrices."""

    dtype: _dt.DType
    batch: int
    rows: int
    cols: int
    lower: int
    upper: int


@dataclass(frozen=True)
class TextPart:
    """A piece of the text of a print or assert kernel: `text` as it is, or (with `param`) the
    values of the input that param points at, of `dtype` and `shape`, summarized."""

    text: str = ""
    param: str = ""
    dtype: _dt.DType | None = None
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class TextSpec:
    """The text tf.Print, tf.print and tf.Assert write (kinds "print", "assert"; runtime
    tfc_text.h): its parts in order, the values each tensor shows (`summarize`, < 0: all) in
    TF's `style` ("v1": the first ones, "v2": the first and last of each dimension), the
    stream printed to (1 stdout, 2 stderr), and how many runs print (`first_n`, < 0: all)."""

    parts: tuple[TextPart, ...]
    summarize: int
    style: str = "v1"
    stream: int = 2
    first_n: int = -1


@dataclass(frozen=True)
class RowsSpec:
    """Rows of a [rows, width] buffer addressed by `count` run-time indices (the TensorArray
    kernels): the element and index dtypes, the sizes, and `values`, further data of the kind
    (an update's mode, error messages as the parts of C string literals around the index)."""

    dtype: _dt.DType
    index_dtype: _dt.DType
    rows: int
    width: int
    count: int
    values: dict[str, Any] = field(default_factory=dict)


# -- building specs -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Operand:
    """A strided view of a buffer: element (i0, i1, ...) is at offset + sum(i_k * strides[k])."""

    buf: str
    dtype: _dt.DType
    strides: tuple[int, ...]
    offset: int = 0


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def broadcast_strides(in_shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """Strides reading a contiguous `in_shape` tensor broadcast to `out_shape` (0 on broadcast)."""
    pad = len(out_shape) - len(in_shape)
    padded = (1,) * pad + tuple(in_shape)
    strides = contiguous_strides(padded)
    return tuple(0 if d == 1 and o != 1 else s for d, s, o in zip(padded, strides, out_shape))


def view(
    buf: str,
    dtype: _dt.DType,
    shape: Sequence[int],
    out_shape: Sequence[int] | None = None,
    offset: int = 0,
) -> Operand:
    """A contiguous buffer of `shape`, read broadcast to `out_shape` when given."""
    strides = (
        contiguous_strides(shape) if out_shape is None else broadcast_strides(shape, out_shape)
    )
    return Operand(buf, dtype, strides, offset)


def collapse(shape: Sequence[int], operands: Sequence[Sequence[int]]) -> tuple[list, list]:
    """Drop size-1 dims and merge neighbours that every operand walks contiguously."""
    dims = [(d, [s[k] for s in operands]) for k, d in enumerate(shape) if d != 1]
    merged: list = []
    for d, strides in dims:
        if merged:
            pd, pstrides = merged[-1]
            if all(ps == s * d for ps, s in zip(pstrides, strides)):
                merged[-1] = (pd * d, strides)
                continue
        merged.append((d, strides))
    new_shape = [d for d, _ in merged]
    new_strides = [[strides[i] for _, strides in merged] for i in range(len(operands))]
    return new_shape, new_strides


def collapse_levels(
    shape: Sequence[int], operands: Sequence[Sequence[int]], kinds: Sequence[object]
) -> tuple[list[int], list[list[int]], list]:
    """`collapse` that merges only neighbours of the same kind (a reduced dim never merges with
    a kept one). Returns the loop bounds, each operand's strides over them, and their kinds."""
    dims = [(d, [s[k] for s in operands], kinds[k]) for k, d in enumerate(shape) if d != 1]
    merged: list = []
    for d, strides, kind in dims:
        if merged:
            pd, pstrides, pkind = merged[-1]
            if pkind == kind and all(ps == s * d for ps, s in zip(pstrides, strides)):
                merged[-1] = (pd * d, strides, kind)
                continue
        merged.append((d, strides, kind))
    new_strides = [[strides[i] for _, strides, _ in merged] for i in range(len(operands))]
    return [d for d, _, _ in merged], new_strides, [kind for _, _, kind in merged]


def loop_kernel(
    shape: Sequence[int],
    out: Operand,
    ins: Sequence[Operand],
    expr: str,
    guard: tuple[str, str] | None = None,
) -> list[Kernel]:
    """out[i] = expr(ins[0][i], ins[1][i], ...) over `shape`, every operand strided.

    `expr` refers to operand k as {k} and to the current output value as {out} (in-place
    updates such as AssignAdd). `guard` is (condition on the operands, error message): when
    it holds for any element the kernel stops and the run fails with that message.
    """
    if any(d == 0 for d in shape):
        return []
    operands = [out, *ins]
    bounds, strides = collapse(shape, [o.strides for o in operands])
    params = [Param("y", out.dtype.c_type, False, out.buf, out.offset)] + [
        Param(f"x{k}", op.dtype.c_type, True, op.buf, op.offset) for k, op in enumerate(ins)
    ]
    statement = "{y} = " + expr.replace("{out}", "{y}") + ";"
    spec = LoopSpec(
        tuple(bounds),
        tuple(tuple(s) for s in strides),
        (statement,),
        guard=None if guard is None else guard[0],
        message=None if guard is None else guard[1],
    )
    return [Kernel("loop", params, spec, can_fail=guard is not None)]


def update_kernel(
    shape: Sequence[int],
    refs: Sequence[Operand],
    ins: Sequence[Operand],
    statements: Sequence[str],
) -> list[Kernel]:
    """Update several buffers in place, element by element (an optimizer's variable and slots).

    Each statement refers to ref k (read and written) as {r0}, {r1}..., to input k (read only)
    as {0}, {1}...; statements may declare locals ("const float g = {0};"). Refs must be
    distinct buffers; inputs may broadcast (stride 0), refs may not.
    """
    if any(d == 0 for d in shape):
        return []
    operands = [*refs, *ins]
    bounds, strides = collapse(shape, [o.strides for o in operands])
    params = [Param(f"r{k}", r.dtype.c_type, False, r.buf, r.offset) for k, r in enumerate(refs)]
    params += [Param(f"x{k}", op.dtype.c_type, True, op.buf, op.offset) for k, op in enumerate(ins)]
    spec = LoopSpec(
        tuple(bounds), tuple(tuple(s) for s in strides), tuple(statements), written=len(refs)
    )
    return [Kernel("loop", params, spec)]


def reduce_kernel(
    in_shape: Sequence[int],
    axes: Sequence[int],
    x: Operand,
    out: Operand,
    combine: str,
    init: str,
    finalize: str | None = None,
    acc: _dt.DType | None = None,
) -> list[Kernel]:
    """Reduce contiguous `x` over `axes` into contiguous `out` (the kept dims, in order).

    `combine` is an expression of {a} (accumulator) and {b} (element); `init` the identity;
    `finalize` an expression of {a} applied to each result (e.g. the division of a mean).
    The input is walked in memory order; when the innermost dims are all reduced an
    accumulator of dtype `acc` (default: the output's) carries the inner loop.
    """
    out_count = math.prod(d for k, d in enumerate(in_shape) if k not in axes)
    if out_count == 0:
        return []
    out_strides_kept = iter(
        contiguous_strides([d for k, d in enumerate(in_shape) if k not in axes])
    )
    out_strides = [0 if k in axes else next(out_strides_kept) for k in range(len(in_shape))]
    reduced = [k in axes for k in range(len(in_shape))]
    # collapse only neighbours of the same kind: a merged dim must be wholly kept or reduced
    dims = [(d, x.strides[k], out_strides[k], reduced[k]) for k, d in enumerate(in_shape) if d != 1]
    merged: list = []
    for d, xs, os_, r in dims:
        if merged:
            pd, pxs, pos, pr = merged[-1]
            if pr == r and pxs == xs * d and pos == os_ * d:
                merged[-1] = (pd * d, xs, os_, r)
                continue
        merged.append((d, xs, os_, r))
    params = [
        Param("y", out.dtype.c_type, False, out.buf, out.offset),
        Param("x0", x.dtype.c_type, True, x.buf, x.offset),
    ]
    spec = ReduceSpec(
        dims=tuple(ReduceDim(*m) for m in merged),
        out_count=out_count,
        in_count=math.prod(in_shape),
        combine=combine,
        init=init,
        finalize=finalize,
        acc=acc or out.dtype,
    )
    return [Kernel("reduce", params, spec)]


def matrix_kernel(
    routine: str,
    dtype: _dt.DType,
    sizes: Sequence[int],
    batch: Sequence[int],
    operands: Sequence[tuple[Param, Sequence[int], int]],
    workspace: int = 0,
    message: str | None = None,
) -> list[Kernel]:
    """The kernel calling tfc_linalg_<routine> for every matrix of `batch` (MatrixSpec).

    Each operand is (its param, its own batch dims, elements per matrix): a contiguous tensor
    read broadcast to `batch`. `workspace` elements of scratch per matrix follow as the last
    param; `message` makes the kernel one that can fail."""
    if any(d == 0 for d in batch):
        return []
    params = [param for param, _, _ in operands]
    strides = [tuple(s * per for s in broadcast_strides(own, batch)) for _, own, per in operands]
    if workspace:
        params.append(Param("work", dtype.c_type, False, "scratch"))
        strides.append(tuple(s * workspace for s in contiguous_strides(batch)))
    bounds, collapsed = collapse(batch, strides)
    spec = MatrixSpec(
        dtype, routine, tuple(sizes), tuple(bounds), tuple(tuple(s) for s in collapsed), message
    )
    return [Kernel("linalg", params, spec, can_fail=message is not None)]


# -- C spelling of values -----------------------------------------------------------------------
def c_string(text: str) -> str:
    """A C string literal holding `text`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def c_literal(value: object, dtype: _dt.DType) -> str:
    """A C literal of `dtype` for one scalar, exact (float32 values round-trip)."""
    if dtype.kind == "b":
        return "1" if bool(value) else "0"
    if dtype.kind == "i":
        v = int(value)
        if v == int(dtype.min) and dtype.size >= 4:
            return "INT64_MIN" if dtype.size == 8 else "INT32_MIN"
        return f"INT64_C({v})" if dtype.size == 8 else str(v)
    if dtype.kind == "u":
        v = int(value)
        return f"UINT64_C({v})" if dtype.size == 8 else f"{v}u"
    if dtype.kind == "h":
        bits = int(_dt.as_numpy(value, dtype).reshape(()).view(np.uint16))
        return f"tfc_{type_tag(dtype)}_of(0x{bits:04x})"
    if dtype.kind == "c":
        z = complex(np.asarray(value, dtype=dtype.np))
        part = dtype.real_dtype
        return f"tfc_{type_tag(dtype)}_of({c_literal(z.real, part)}, {c_literal(z.imag, part)})"
    v = float(np.asarray(value, dtype=dtype.np))
    suffix = "f" if dtype is _dt.float32 else ""
    if math.isnan(v):
        return "NAN" if suffix else "((double)NAN)"
    if math.isinf(v):
        text = "INFINITY" if suffix else "((double)INFINITY)"
        return text if v > 0 else f"(-{text})"
    text = f"{v:.9g}" if suffix else f"{v:.17g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text + suffix


def c_initializer(values: np.ndarray, dtype: _dt.DType) -> str:
    """The comma-separated body of a C array initializer for `values` (flattened)."""
    flat = _dt.as_numpy(values, dtype).ravel()
    if dtype.kind == "f":
        if np.isfinite(flat).all():
            fmt = "%.9g" if dtype is _dt.float32 else "%.17g"
            # "-0" would be the integer 0 (+0.0 in a float array): keep the sign of zero
            return ",".join("-0.0" if t == "-0" else t for t in (fmt % v for v in flat.tolist()))
        return ",".join(c_literal(v, dtype) for v in flat.tolist())
    if dtype.kind == "b":
        return ",".join("1" if v else "0" for v in flat.tolist())
    if dtype.kind == "h":  # the struct's bits
        return ",".join(f"{{0x{b:04x}}}" for b in flat.view(np.uint16).tolist())
    if dtype.kind == "c":
        part = dtype.real_dtype
        return ",".join(
            f"{{{c_literal(z.real, part)},{c_literal(z.imag, part)}}}" for z in flat.tolist()
        )
    if dtype.kind == "u":  # u: a decimal beyond long long's range would be signed (an error)
        return ",".join(f"{v}u" for v in flat.tolist())
    low = int(dtype.min)
    return ",".join(c_literal(v, dtype) if v == low else str(v) for v in flat.tolist())


def math_suffix(dtype: _dt.DType) -> str:
    """The libm suffix for `dtype`'s computations: expf for float32 (and the 16-bit floats,
    computed in float32), exp for float64."""
    return "f" if dtype.compute is _dt.float32 else ""


def unsigned_ctype(dtype: _dt.DType) -> str:
    return {2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}.get(dtype.size, "uint8_t")


_TAGS = {
    "float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "b",
    "int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16", "uint32": "u32",
    "uint64": "u64", "float16": "f16", "bfloat16": "bf16", "complex64": "c64",
    "complex128": "c128",
}  # fmt: skip


def type_tag(dtype: _dt.DType) -> str:
    """The suffix of runtime helpers for `dtype`: f32, f64, i32, i64, b, u8, f16, c64..."""
    return _TAGS[dtype.name]


def table_entry(table: dict, dtype: _dt.DType) -> Any:
    """An op table's entry for `dtype`: by its name, else by its kind. Unsigned integers use
    the signed ones' entry ("i") unless the table has a "u" one (None: not supported); the
    16-bit floats use float32's (they compute in float32: see `elementwise_expr`) unless it
    has an "h" one."""
    if dtype.name in table:
        return table[dtype.name]
    if dtype.kind in table:
        return table[dtype.kind]
    if dtype.kind == "u":
        return table.get("i")
    if dtype.kind == "h":
        return table.get(_dt.float32.name, table.get("f"))
    return None


def load_expr(value: str, dtype: _dt.DType) -> str:
    """C reading `value` of `dtype` as the type kernels compute with (16-bit floats: float)."""
    return f"tfc_{type_tag(dtype)}_to_f32({value})" if dtype.kind == "h" else value


def store_expr(value: str, dtype: _dt.DType) -> str:
    """C turning a computed `value` into `dtype` (a float rounded to a 16-bit float)."""
    return f"tfc_f32_to_{type_tag(dtype)}({value})" if dtype.kind == "h" else value


def elementwise_expr(
    template: str,
    dtype: _dt.DType,
    operands: Sequence[str],
    out: _dt.DType | None = None,
    **extra: str,
) -> str:
    """`template` (an op table's entry for `dtype`) over `operands`, a value of `out` (default
    `dtype`). 16-bit floats compute in float32 within the one expression: each operand loads
    into a float, the float32 template computes, a 16-bit result rounds back (so each op
    rounds once, as TensorFlow's kernels do, in the loop that computes it: no extra pass)."""
    if dtype.kind != "h":
        return format_expr(template, dtype, *operands, **extra)
    loaded = [load_expr(o, dtype) for o in operands]
    expr = format_expr(template, _dt.float32, *loaded, **extra)
    expr = expr.replace("{out}", load_expr("{out}", dtype))
    return store_expr(expr, out or dtype)


def cast_expr(src: _dt.DType, dst: _dt.DType) -> str:
    """The C expression converting {0} from `src` to `dst` (a Cast kernel, a fused Cast), with
    TensorFlow's rules on x86: float to integer truncates toward zero (NaN and out of range as
    TF's vectorized kernels: tfc_math.h's tfc_f2<int>), integers narrow by wrapping, anything
    to bool is `!= 0`, the 16-bit floats convert through float (so float64 rounds twice, as in
    TF), complex to real keeps the real part."""
    if src is dst:
        return "{0}"
    if src.kind == "c":
        if dst.kind == "b":
            return "(({0}).re != 0 || ({0}).im != 0)"
        if dst.kind == "c":
            part = dst.real_dtype.c_type
            return f"tfc_{type_tag(dst)}_of(({part})({{0}}).re, ({part})({{0}}).im)"
        return cast_expr(src.real_dtype, dst).replace("{0}", "({0}).re")
    if dst.kind == "c":
        real = cast_expr(src, dst.real_dtype)
        return f"tfc_{type_tag(dst)}_of({real}, 0)"
    value = load_expr("{0}", src)
    if dst.kind == "b":
        return f"({value} != 0)"
    if dst.kind == "h":
        return store_expr(f"(float)({value})", dst)
    if src.is_floating and dst.is_integer:
        return f"tfc_f2{type_tag(dst)}({value})"
    return f"({dst.c_type})({value})"


@dataclass(frozen=True)
class ExprTable:
    """An element-wise op's C expression per dtype: the one table the C and CUDA targets share.

    `exprs` maps a dtype name ("float32") or kind ("f", "i", "b") to a format_expr template;
    `guards` maps a kind to (condition, message) checked per element (integer division by
    zero); `out` fixes the output dtype (bool for comparisons); `params` gives extra
    placeholders from the op's attributes (the alpha of LeakyRelu).
    """

    exprs: dict
    guards: dict = field(default_factory=dict)
    out: _dt.DType | None = None
    params: Callable[[dict, _dt.DType], dict] | None = None

    def expr_for(self, dtype: _dt.DType) -> str | None:
        return table_entry(self.exprs, dtype)

    def guard_for(self, dtype: _dt.DType) -> tuple[str, str] | None:
        return table_entry(self.guards, dtype)

    def supported(self) -> list[_dt.DType]:
        return [d for d in _dt.ALL if self.expr_for(d) is not None]


def format_expr(template: str, dtype: _dt.DType, *operands: str, **extra: str) -> str:
    """Fill an element-wise expression template of the op table for `dtype`.

    Placeholders: {0}, {1}... operands; {T} the C type; {U} its unsigned twin; {sfx} the libm
    suffix; {tag} the runtime helper suffix (f32, i64...). {out} is left for loop_kernel.
    """
    return template.format(
        *operands,
        out="{out}",
        T=dtype.c_type,
        U=unsigned_ctype(dtype),
        sfx=math_suffix(dtype),
        tag=type_tag(dtype),
        **extra,
    )
