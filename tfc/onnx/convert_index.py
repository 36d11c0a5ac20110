"""ONNX operators that write or read at computed positions: the scatters (ScatterElements,
ScatterND, TensorScatter, MaxUnpool) as segment reductions over flat indices, selections whose
output size is the count of a known mask (Compress, NonZero), and the sampling of images at
coordinates (GridSample, AffineGrid)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.segment as _segment
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.constant import constant
from tfc.ops.linalg import matmul


def _static(ctx: NodeContext, x: Tensor, what: str) -> tuple[int, ...]:
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error(f"the shape of {what} must be known when the model is imported")
    return tuple(int(d) for d in shape)


def _int64(values) -> Tensor:
    return constant(np.asarray(values, dtype=np.int64), dtype=_dt.int64)


def _strides(shape: Sequence[int]) -> np.ndarray:
    return np.cumprod([1, *shape[::-1]])[:-1][::-1].astype(np.int64)


def _wrapped(index: Tensor, dim: int) -> Tensor:
    """Indices in [-dim, dim) as [0, dim)."""
    index = _math.cast(index, _dt.int64)
    return _logic.where(_logic.less(index, _int64(0)), _math.add(index, _int64(dim)), index)


def scatter_rows(
    ctx: NodeContext, data: Tensor, rows: Tensor, updates: Tensor, reduction: str
) -> Tensor:
    """`data` (rows, ...) with `updates` (n, ...) written to (or combined with) the rows
    `rows` (n,) names: segment reductions of the updates over the data's rows."""
    count = _static(ctx, data, "the data")[0]
    work_dtype = data.dtype
    if data.dtype == _dt.bool_:
        data, updates = _math.cast(data, _dt.int32), _math.cast(updates, _dt.int32)
    if reduction == "none":
        hits = _segment.unsorted_segment_sum(
            _array.ones_like(updates, dtype=_dt.int32), rows, count
        )
        written = _segment.unsorted_segment_max(updates, rows, count)
        result = _logic.where(_logic.greater(hits, constant(0, dtype=_dt.int32)), written, data)
    elif reduction == "add":
        result = _math.add(data, _segment.unsorted_segment_sum(updates, rows, count))
    elif reduction == "mul":
        result = _math.multiply(data, _segment.unsorted_segment_prod(updates, rows, count))
    elif reduction == "max":
        result = _math.maximum(data, _segment.unsorted_segment_max(updates, rows, count))
    elif reduction == "min":
        result = _math.minimum(data, _segment.unsorted_segment_min(updates, rows, count))
    else:
        raise ctx.error(f"unknown reduction {reduction!r}")
    return _math.cast(result, work_dtype) if result.dtype != work_dtype else result


@converter("ScatterElements", "Scatter")
def _scatter_elements(ctx: NodeContext) -> list:
    data, updates = ctx.input(0), ctx.input(2)
    shape = _static(ctx, data, "the data")
    ishape = _static(ctx, ctx.input(1), "the indices")
    axis = ctx.attr("axis", 0)
    axis = axis + len(shape) if axis < 0 else axis
    strides = _strides(shape)
    index = _wrapped(ctx.input(1), shape[axis])
    grids = np.indices(ishape, dtype=np.int64)
    fixed = sum(grids[d] * strides[d] for d in range(len(shape)) if d != axis)
    flat = _math.add(_math.multiply(index, _int64(strides[axis])), _int64(fixed))
    result = scatter_rows(
        ctx,
        _array.reshape(data, [-1]),
        _array.reshape(flat, [-1]),
        _array.reshape(updates, [-1]),
        ctx.attr("reduction", "none"),
    )
    return [_array.reshape(result, list(shape))]


@converter("ScatterND")
def _scatter_nd(ctx: NodeContext) -> list:
    data, updates = ctx.input(0), ctx.input(2)
    shape = _static(ctx, data, "the data")
    ishape = _static(ctx, ctx.input(1), "the indices")
    m = ishape[-1]
    columns = []
    for k in range(m):
        col = _array.strided_slice(
            ctx.input(1),
            [0] * (len(ishape) - 1) + [k],
            [0] * (len(ishape) - 1) + [k + 1],
            [1] * len(ishape),
            begin_mask=(1 << (len(ishape) - 1)) - 1,
            end_mask=(1 << (len(ishape) - 1)) - 1,
            shrink_axis_mask=1 << (len(ishape) - 1),
        )
        columns.append(_wrapped(col, shape[k]))
    strides = _strides(shape[:m])
    rows = _math.multiply(columns[0], _int64(strides[0]))
    for k in range(1, m):
        rows = _math.add(rows, _math.multiply(columns[k], _int64(strides[k])))
    count = int(np.prod(ishape[:-1], dtype=np.int64))
    table = _array.reshape(data, [int(np.prod(shape[:m], dtype=np.int64)), *shape[m:]])
    result = scatter_rows(
        ctx,
        table,
        _array.reshape(rows, [-1]),
        _array.reshape(updates, [count, *shape[m:]]),
        ctx.attr("reduction", "none"),
    )
    return [_array.reshape(result, list(shape))]


@converter("TensorScatter")
def _tensor_scatter(ctx: NodeContext) -> list:
    cache, update = ctx.input(0), ctx.input(1)
    shape = _static(ctx, cache, "the cache")
    ushape = _static(ctx, update, "the update")
    axis = ctx.attr("axis", -2) % len(shape)
    mode = ctx.attr("mode", "linear")
    if ctx.has_input(2):
        starts = _math.cast(ctx.input(2), _dt.int64)
    else:
        starts = _int64(np.zeros(shape[0], np.int64))
    grids = np.indices(ushape, dtype=np.int64)
    position = _math.add(_array.reshape(starts, [-1] + [1] * (len(shape) - 1)), _int64(grids[axis]))
    if mode == "circular":
        position = _math.floormod(position, _int64(shape[axis]))
    elif mode != "linear":
        raise ctx.error(f"unknown mode {mode!r}")
    strides = _strides(shape)
    fixed = sum(grids[d] * strides[d] for d in range(len(shape)) if d != axis)
    flat = _math.add(_math.multiply(position, _int64(strides[axis])), _int64(fixed))
    result = scatter_rows(
        ctx,
        _array.reshape(cache, [-1]),
        _array.reshape(flat, [-1]),
        _array.reshape(update, [-1]),
        "none",
    )
    return [_array.reshape(result, list(shape))]


@converter("MaxUnpool")
def _max_unpool(ctx: NodeContext) -> list:
    x, indices = ctx.input(0), ctx.input(1)
    shape = _static(ctx, x, "the input")
    kernel = ctx.attr("kernel_shape")
    n = len(kernel)
    strides = ctx.attr("strides") or [1] * n
    pads = ctx.attr("pads") or [0] * (2 * n)
    inferred = [
        shape[0],
        shape[1],
        *[(shape[d + 2] - 1) * strides[d] - (pads[d] + pads[n + d]) + kernel[d] for d in range(n)],
    ]
    total = int(np.prod(inferred, dtype=np.int64))
    zeros = _array.zeros([total], dtype=x.dtype)
    y = scatter_rows(
        ctx,
        zeros,
        _array.reshape(_math.cast(indices, _dt.int64), [-1]),
        _array.reshape(x, [-1]),
        "none",
    )
    y = _array.reshape(y, inferred)
    if ctx.has_input(2):
        out = [int(v) for v in ctx.require_const(2, "output_shape").reshape(-1)]
        y = _array.pad(y, [[0, o - i] for o, i in zip(out, inferred)])
    return [y]


# -- outputs sized by a known mask ---------------------------------------------------------------
@converter("Compress")
def _compress(ctx: NodeContext) -> list:
    x = ctx.input(0)
    condition = np.asarray(ctx.require_const(1, "condition")).astype(bool).reshape(-1)
    axis = ctx.attr("axis")
    if axis is None:
        x, axis = _array.reshape(x, [-1]), 0
    dim = _static(ctx, x, "the input")[axis if axis >= 0 else axis + len(x.shape)]
    picks = np.nonzero(condition[:dim])[0].astype(np.int64)
    return [_array.gather(x, constant(picks), axis=axis)]


@converter("NonZero")
def _non_zero(ctx: NodeContext) -> list:
    value = np.asarray(ctx.require_const(0, "input (its nonzero count is the output's size)"))
    return [constant(np.array(np.nonzero(value), dtype=np.int64).reshape(value.ndim, -1))]


# -- sampling at coordinates ---------------------------------------------------------------------
@converter("AffineGrid")
def _affine_grid(ctx: NodeContext) -> list:
    theta = ctx.input(0)
    size = [int(v) for v in ctx.require_const(1, "size").reshape(-1)]
    align = bool(ctx.attr("align_corners", 0))
    spatial = size[2:]

    def axis_points(n: int) -> np.ndarray:
        if align:
            return np.linspace(-1, 1, n) if n > 1 else np.zeros(1)
        return (np.arange(n) * 2 + 1) / n - 1

    axes = [axis_points(n) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W order
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x, y(, z) first
    base = np.stack([*coords, np.ones_like(coords[0])], axis=0)  # (n+1, points)
    base = constant(base.astype(theta.dtype.np), dtype=theta.dtype)
    grid = _array.transpose(matmul(theta, base), [0, 2, 1])  # (N, points, n)
    return [_array.reshape(grid, [size[0], *spatial, len(spatial)])]


def _reflect(x: Tensor, low: float, high: float) -> Tensor:
    """x reflected at the borders [low, high] until it is inside (GridSample's reflection)."""
    span = high - low
    if span <= 0:
        return _array.zeros_like(x) + low
    shifted = _math.subtract(x, constant(low, dtype=x.dtype))
    period = _math.floormod(shifted, constant(2 * span, dtype=x.dtype))
    folded = _logic.where(
        _logic.greater(period, constant(span, dtype=x.dtype)),
        _math.subtract(constant(2 * span, dtype=x.dtype), period),
        period,
    )
    return _math.add(folded, constant(low, dtype=x.dtype))


@converter("GridSample")
def _grid_sample(ctx: NodeContext) -> list:
    x, grid = ctx.input(0), ctx.input(1)
    shape = _static(ctx, x, "the input")
    gshape = _static(ctx, grid, "the grid")
    n_sp = len(shape) - 2
    mode = ctx.attr("mode", "linear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = ctx.attr("padding_mode", "zeros")
    align = bool(ctx.attr("align_corners", 0))
    sizes = shape[2:]  # D, H, W; the grid's last axis holds x (W) first
    dtype = x.dtype
    points = int(np.prod(gshape[1:-1], dtype=np.int64))
    coords = []
    for k in range(n_sp):
        size = sizes[n_sp - 1 - k]
        g = _array.reshape(
            _array.strided_slice(
                grid,
                [0] * (len(gshape) - 1) + [k],
                [0] * (len(gshape) - 1) + [k + 1],
                [1] * len(gshape),
                begin_mask=(1 << (len(gshape) - 1)) - 1,
                end_mask=(1 << (len(gshape) - 1)) - 1,
            ),
            [gshape[0], points],
        )
        one = constant(1.0, dtype=dtype)
        if align:
            c = _math.multiply(_math.add(g, one), constant((size - 1) / 2, dtype=dtype))
        else:
            c = _math.multiply(
                _math.subtract(_math.multiply(_math.add(g, one), constant(size, dtype=dtype)), one),
                constant(0.5, dtype=dtype),
            )
        if padding == "border":
            c = _math.minimum(
                _math.maximum(c, constant(0.0, dtype=dtype)), constant(size - 1, dtype=dtype)
            )
        elif padding == "reflection":
            c = _reflect(c, 0.0, size - 1.0) if align else _reflect(c, -0.5, size - 0.5)
            if not align:
                c = _math.minimum(
                    _math.maximum(c, constant(0.0, dtype=dtype)), constant(size - 1, dtype=dtype)
                )
        coords.append((c, size))
    coords = coords[::-1]  # D, H, W order, as the image's axes
    if mode == "nearest":
        taps = [[(_math.rint(c), None)] for c, _ in coords]
    elif mode == "linear":
        taps = []
        for c, _ in coords:
            base = _math.floor(c)
            t = _math.subtract(c, base)
            one = constant(1.0, dtype=dtype)
            taps.append([(base, _math.subtract(one, t)), (_math.add(base, one), t)])
    elif mode == "cubic":
        taps = []
        a = -0.75
        for c, _ in coords:
            base = _math.floor(c)
            t = _math.subtract(c, base)
            row = []
            for offset in (-1, 0, 1, 2):
                d = _math.abs(_math.subtract(t, constant(float(offset), dtype=dtype)))
                near = _math.add(
                    _math.multiply(
                        _math.multiply(
                            _math.subtract(
                                _math.multiply(constant(a + 2, dtype=dtype), d),
                                constant(a + 3, dtype=dtype),
                            ),
                            d,
                        ),
                        d,
                    ),
                    constant(1.0, dtype=dtype),
                )
                far = _math.subtract(
                    _math.multiply(
                        _math.add(
                            _math.multiply(
                                _math.subtract(
                                    _math.multiply(constant(a, dtype=dtype), d),
                                    constant(5 * a, dtype=dtype),
                                ),
                                d,
                            ),
                            constant(8 * a, dtype=dtype),
                        ),
                        d,
                    ),
                    constant(4 * a, dtype=dtype),
                )
                w = _logic.where(_logic.less_equal(d, constant(1.0, dtype=dtype)), near, far)
                row.append((_math.add(base, constant(float(offset), dtype=dtype)), w))
            taps.append(row)
    else:
        raise ctx.error(f"unknown mode {mode!r}")
    channels = shape[1]
    # the image as rows of channels: row (n * prod(sizes) + flat position) holds C values
    table = _array.reshape(_array.transpose(x, [0, *range(2, 2 + n_sp), 1]), [-1, channels])
    per_image = int(np.prod(sizes, dtype=np.int64))
    batch_base = constant((np.arange(shape[0]) * per_image).reshape(-1, 1).astype(np.int64))
    strides = _strides(sizes)
    result = None
    for combo in np.ndindex(*[len(t) for t in taps]):
        flat, weight, inside = batch_base, None, None
        for axis, choice in enumerate(combo):
            pos, w = taps[axis][choice]
            size = sizes[axis]
            ok = _logic.logical_and(
                _logic.greater_equal(pos, constant(0.0, dtype=dtype)),
                _logic.less_equal(pos, constant(size - 1.0, dtype=dtype)),
            )
            clamped = _math.cast(
                _math.minimum(
                    _math.maximum(pos, constant(0.0, dtype=dtype)),
                    constant(size - 1.0, dtype=dtype),
                ),
                _dt.int64,
            )
            flat = _math.add(flat, _math.multiply(clamped, _int64(strides[axis])))
            inside = ok if inside is None else _logic.logical_and(inside, ok)
            weight = w if weight is None else (weight if w is None else _math.multiply(weight, w))
        values = _array.reshape(
            _array.gather(table, _array.reshape(flat, [-1])), [shape[0], points, channels]
        )
        if padding == "zeros" or mode == "cubic":
            if padding == "zeros":
                values = _math.multiply(values, _array.expand_dims(_math.cast(inside, dtype), -1))
        if weight is not None:
            values = _math.multiply(values, _array.expand_dims(weight, -1))
        result = values if result is None else _math.add(result, values)
    out = _array.reshape(result, [shape[0], *gshape[1:-1], channels])
    return [_array.transpose(out, [0, n_sp + 1, *range(1, n_sp + 1)])]
