"""ONNX array operators: shapes as values (Shape, Size, ConstantOfShape, Range), reshapes, joins
and splits, slices and gathers, padding, tiling and broadcasting, resizing. Index arithmetic on
values known when the model is imported is done in NumPy, so shape-computing subgraphs become
constants (and what depends on a run's shapes is folded when the program is compiled)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tfc.onnx.types as _types
import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, channels_last_perm, converter
from tfc.ops.constant import constant
from tfc.ops.reduce import reduce_prod, reduce_sum

_INT32 = np.iinfo(np.int32)


def _static(x: Tensor) -> tuple | None:
    """x's shape when every dim is known."""
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        return None
    return tuple(int(d) for d in shape)


def _axes_input(ctx: NodeContext, attr_until: int, index: int) -> list[int] | None:
    """An axes list: the `axes` attribute before opset `attr_until`, the input after."""
    if ctx.opset < attr_until:
        axes = ctx.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    if not ctx.has_input(index):
        return None
    return [int(a) for a in np.asarray(ctx.require_const(index, "axes")).reshape(-1)]


def _normalize(ctx: NodeContext, axes: Sequence[int], rank: int) -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(f"axis {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    return out


def _int64(values: Sequence[int] | np.ndarray) -> Tensor:
    return constant(np.asarray(values, dtype=np.int64), dtype=_dt.int64)


# -- shapes as values ----------------------------------------------------------------------------
@converter("Shape")
def _shape(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    start = ctx.attr("start", 0)
    end = ctx.attr("end", rank)
    start, end = (max(0, min(rank, v + rank if v < 0 else v)) for v in (start, end))
    shape = x._shape_tuple
    if all(d is not None for d in shape[start:end]):
        return [_int64([int(d) for d in shape[start:end]])]
    full = _array.shape(x, out_type=_dt.int64)
    if (start, end) == (0, rank):
        return [full]
    return [_array.strided_slice(full, [start], [end])]


@converter("Size")
def _size(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape = _static(x)
    if shape is not None:
        return [constant(np.int64(np.prod(shape, dtype=np.int64)), dtype=_dt.int64)]
    return [_array.size(x, out_type=_dt.int64)]


def _shape_argument(ctx: NodeContext, i: int) -> list[int]:
    return [int(v) for v in np.asarray(ctx.require_const(i, "shape")).reshape(-1)]


@converter("ConstantOfShape")
def _constant_of_shape(ctx: NodeContext) -> list:
    value = ctx.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    elem = ctx.output_types[0]
    if elem is None:
        elem = _types.onnx_type(_dt.as_dtype(value.dtype))
    dtype = ctx.compute_dtype(elem, "the constant")
    dims = _shape_argument(ctx, 0)
    fill_value = constant(value.astype(dtype.np)[0], dtype=dtype)
    if not dims:
        return [_array.identity(fill_value)]
    return [_array.fill(dims, fill_value)]


@converter("Range")
def _range_op(ctx: NodeContext) -> list:
    # its length is its shape: the bounds must be known when the graph is built
    start = ctx.input(0)
    s, lim, d = (
        np.asarray(ctx.require_const(i, w)).reshape(())
        for i, w in ((0, "start"), (1, "limit"), (2, "delta"))
    )
    n = max(int(np.ceil((lim - s) / d)), 0)
    result = s + np.arange(n, dtype=np.float64 if start.dtype.is_floating else np.int64) * d
    return [constant(result.astype(start.dtype.np), dtype=start.dtype)]


# -- reshapes ------------------------------------------------------------------------------------
@converter("Reshape")
def _reshape(ctx: NodeContext) -> list:
    x = ctx.input(0)
    if ctx.opset < 5:
        target = np.asarray(ctx.attr("shape"), dtype=np.int64)
    elif ctx.needs_const(1):
        target = ctx.require_const(1, "shape")
    else:
        target = ctx.const(1)
    allowzero = bool(ctx.attr("allowzero", 0))
    shape = x._shape_tuple
    if target is not None:
        dims = [int(d) for d in np.asarray(target).reshape(-1)]
        if not allowzero and 0 in dims:
            resolved = []
            for i, d in enumerate(dims):
                if d != 0:
                    resolved.append(d)
                elif shape is not None and i < len(shape) and shape[i] is not None:
                    resolved.append(int(shape[i]))
                else:
                    resolved = None
                    break
            if resolved is None:
                copied = _array.shape(x, out_type=_dt.int64)[: len(dims)]
                zeros = constant(np.asarray(dims, np.int64) == 0)
                return [_array.reshape(x, _logic.where(zeros, copied, _int64(dims)))]
            dims = resolved
        return [_array.reshape(x, dims)]
    shape_t = _math.cast(ctx.input(1), _dt.int64)
    if not allowzero:
        rank = ctx.shape(1)
        if rank is None or rank[0] is None:
            raise ctx.error("the length of the new shape must be known when it is imported")
        copied = _array.shape(x, out_type=_dt.int64)[: rank[0]]
        shape_t = _logic.where(_logic.equal(shape_t, _int64(0)), copied, shape_t)
    return [_array.reshape(x, shape_t)]


@converter("Flatten")
def _flatten(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 1)
    axis = axis + rank if axis < 0 else axis
    shape = x._shape_tuple
    lead, tail = shape[:axis], shape[axis:]
    if all(d is not None for d in lead):
        return [_array.reshape(x, [int(np.prod(lead, dtype=np.int64)), -1])]
    if all(d is not None for d in tail):
        return [_array.reshape(x, [-1, int(np.prod(tail, dtype=np.int64))])]
    dims = _array.shape(x, out_type=_dt.int64)
    lead_t = _array.reshape(reduce_prod(dims[:axis]), [1])
    return [_array.reshape(x, _array.concat([lead_t, _int64([-1])], 0))]


@converter("Squeeze")
def _squeeze(ctx: NodeContext) -> list:
    x = ctx.input(0)
    axes = _axes_input(ctx, 13, 1)
    if axes is None:
        shape = x._shape_tuple
        if shape is None or any(d is None for d in shape):
            raise ctx.error("squeezing every 1 needs the input's shape when it is imported")
        axes = [i for i, d in enumerate(shape) if d == 1]
    return [_array.squeeze(x, _normalize(ctx, axes, ctx.rank(0)))]


@converter("Unsqueeze")
def _unsqueeze(ctx: NodeContext) -> list:
    x = ctx.input(0)
    axes = _axes_input(ctx, 13, 1)
    if axes is None:
        raise ctx.error("the axes are missing")
    rank = ctx.rank(0) + len(axes)
    axes = sorted(_normalize(ctx, axes, rank))
    shape = _static(x)
    if shape is not None:
        out = list(shape)
        for a in axes:
            out.insert(a, 1)
        return [_array.reshape(x, out)]
    y = x
    for a in axes:
        y = _array.expand_dims(y, a)
    return [y]


@converter("Transpose")
def _transpose(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    perm = ctx.attr("perm") or list(reversed(range(rank)))
    twin = ctx.twin(x)
    if twin is not None and list(perm) == channels_last_perm(rank):
        return [_array.identity(twin)]
    return [_array.transpose(x, list(perm))]


@converter("DepthToSpace", "SpaceToDepth")
def _depth_space(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape = _static(x)
    if shape is None or len(shape) != 4:
        raise ctx.error("needs a 4-D input of known shape when the model is imported")
    n, c, h, w = shape
    b = int(ctx.attr("blocksize"))
    if ctx.op_type == "SpaceToDepth":
        y = _array.reshape(x, [n, c, h // b, b, w // b, b])
        # DCR: the block offset is the outer part of the output channel; CRD: the inner one
        perm = [0, 3, 5, 1, 2, 4] if ctx.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
        y = _array.transpose(y, perm)
        return [_array.reshape(y, [n, c * b * b, h // b, w // b])]
    if ctx.attr("mode", "DCR") == "DCR":
        y = _array.reshape(x, [n, b, b, c // (b * b), h, w])
        y = _array.transpose(y, [0, 3, 4, 1, 5, 2])
    else:
        y = _array.reshape(x, [n, c // (b * b), b, b, h, w])
        y = _array.transpose(y, [0, 1, 4, 2, 5, 3])
    return [_array.reshape(y, [n, c // (b * b), h * b, w * b])]


# -- joins and splits ----------------------------------------------------------------------------
@converter("Concat")
def _concat(ctx: NodeContext) -> list:
    xs = [ctx.input(i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    rank = ctx.rank(0)
    axis = ctx.attr("axis")
    if axis is None:
        raise ctx.error("the axis is missing")
    axis = axis + rank if axis < 0 else axis
    twins = [ctx.twin(x) for x in xs]
    if axis == 1 and rank > 2 and all(t is not None for t in twins):
        return [ctx.channels_first(_array.concat(twins, -1))]
    return [_array.concat(xs, axis)]


@converter("Split")
def _split(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    n = ctx.n_outputs
    if ctx.opset < 13:
        sizes = ctx.attr("split")
    else:
        sizes = ctx.require_const(1, "split sizes") if ctx.has_input(1) else None
    dim = x._shape_tuple[axis]
    if sizes is None:
        count = ctx.attr("num_outputs", n)
        if dim is None:
            raise ctx.error("splitting needs the size of the split axis")
        if dim % count:
            chunk = -(-dim // count)  # opset 18: the last part is smaller
            sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
        else:
            sizes = [dim // count] * count
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    twin = ctx.twin(x)
    if twin is not None and axis == 1 and rank > 2:
        parts = _array.split(twin, sizes, axis=-1)
        return [ctx.channels_first(p) for p in parts]
    return list(_array.split(x, sizes, axis=axis))


# -- slices and gathers --------------------------------------------------------------------------
@converter("Slice")
def _slice(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    shape = x._shape_tuple
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes, steps = ctx.attr("axes"), None
    else:
        if ctx.const(1) is None and not ctx.needs_const(1) and ctx.output_shapes[0]:
            return [_dynamic_slice(ctx, x, ctx.output_shapes[0])]
        starts = ctx.require_const(1, "starts")
        ends = ctx.require_const(2, "ends")
        axes = ctx.const(3) if ctx.has_input(3) else None
        if ctx.has_input(3) and axes is None:
            axes = ctx.require_const(3, "axes")
        steps = ctx.const(4) if ctx.has_input(4) else None
        if ctx.has_input(4) and steps is None:
            steps = ctx.require_const(4, "steps")
    starts = [int(v) for v in np.asarray(starts).reshape(-1)]
    ends = [int(v) for v in np.asarray(ends).reshape(-1)]
    axes = list(range(len(starts))) if axes is None else [int(a) for a in np.asarray(axes)]
    steps = [1] * len(starts) if steps is None else [int(s) for s in np.asarray(steps)]
    axes = _normalize(ctx, axes, rank)
    begin, end, stride = [0] * rank, [0] * rank, [1] * rank
    begin_mask = end_mask = (1 << rank) - 1
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise ctx.error("a step of 0")
        d = shape[a]
        bound = d + 1 if d is not None else _INT32.max
        begin[a] = max(-bound, min(bound, s))
        end[a] = max(-bound, min(bound, e))
        stride[a] = st
        begin_mask &= ~(1 << a)
        end_mask &= ~(1 << a)
    return [_array.strided_slice(x, begin, end, stride, begin_mask=begin_mask, end_mask=end_mask)]


def _dynamic_slice(ctx: NodeContext, x: Tensor, out_shape: tuple) -> Tensor:
    """A Slice whose starts are run-time values (a loop counter) but whose output shape ONNX's
    shape inference knows: per sliced axis, a gather of start + k * step for k < the size."""
    shape = x._shape_tuple
    rank = len(shape)
    axes = ctx.require_const(3, "axes") if ctx.has_input(3) else None
    n = ctx.shape(1)[0] if ctx.shape(1) else None
    if n is None:
        raise ctx.error("the number of sliced axes must be known when the model is imported")
    axes = list(range(n)) if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    steps = ctx.require_const(4, "steps") if ctx.has_input(4) else np.ones(n, np.int64)
    axes = _normalize(ctx, axes, rank)
    starts = _math.cast(ctx.input(1), _dt.int64)
    y = x
    for k, (a, step) in enumerate(zip(axes, np.asarray(steps).reshape(-1))):
        d = shape[a]
        if d is None:
            raise ctx.error("a slice with run-time starts needs the sliced axes' sizes")
        start = _array.gather(starts, k)
        start = _logic.where(_logic.less(start, _int64(0)), _math.add(start, _int64(d)), start)
        start = _math.minimum(_math.maximum(start, _int64(0)), _int64(d - 1))
        index = _math.add(start, _int64(np.arange(out_shape[a], dtype=np.int64) * int(step)))
        y = _array.gather(y, index, axis=a)
    return y


def _positive_indices(ctx: NodeContext, i: int, dim: int | None) -> Tensor:
    """Index input `i` with negative indices counted from the end of a dim of size `dim`."""
    indices = ctx.input(i)
    value = ctx.const(i)
    if value is not None and dim is not None:
        fixed = np.where(value < 0, value + dim, value).astype(np.int64)
        return constant(fixed, dtype=_dt.int64)
    indices = _math.cast(indices, _dt.int64)
    if dim is None:
        raise ctx.error("negative indices need the size of the indexed axis")
    negative = _logic.less(indices, _int64(0))
    return _logic.where(negative, _math.add(indices, _int64(dim)), indices)


@converter("Gather")
def _gather(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    indices = _positive_indices(ctx, 1, x._shape_tuple[axis])
    return [_array.gather(x, indices, axis=axis)]


def _flat_strides(shape: Sequence[int]) -> np.ndarray:
    return np.cumprod([1, *shape[::-1]])[:-1][::-1].astype(np.int64)


@converter("GatherElements")
def _gather_elements(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape, ishape = _static(x), _static(ctx.input(1))
    if shape is None or ishape is None:
        raise ctx.error("needs the shapes of its inputs when the model is imported")
    rank = len(shape)
    axis = ctx.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    indices = _positive_indices(ctx, 1, shape[axis])
    strides = _flat_strides(shape)
    grids = np.indices(ishape, dtype=np.int64)
    fixed = sum(grids[d] * strides[d] for d in range(rank) if d != axis)
    flat = _math.add(_math.multiply(indices, _int64(strides[axis])), _int64(fixed))
    return [_array.gather(_array.reshape(x, [-1]), flat)]


@converter("GatherND")
def _gather_nd(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape, ishape = _static(x), _static(ctx.input(1))
    if shape is None or ishape is None:
        raise ctx.error("needs the shapes of its inputs when the model is imported")
    b = int(ctx.attr("batch_dims", 0))
    m = ishape[-1]
    indices = _math.cast(ctx.input(1), _dt.int64)
    # negative indices count from the end of their dim
    dims = np.asarray(shape[b : b + m], np.int64)
    indices = _logic.where(
        _logic.less(indices, _int64(0)), _math.add(indices, _int64(dims)), indices
    )
    inner = _flat_strides(shape[b : b + m])
    batch = int(np.prod(shape[:b], dtype=np.int64))
    flat = reduce_sum(_math.multiply(indices, _int64(inner)), [-1])  # ishape[:-1]
    rows = int(np.prod(shape[b : b + m], dtype=np.int64))
    if b:
        offsets = np.arange(batch, dtype=np.int64).reshape(shape[:b]) * rows
        offsets = offsets.reshape(shape[:b] + (1,) * (len(ishape) - 1 - b))
        flat = _math.add(flat, _int64(offsets))
    table = _array.reshape(x, [batch * rows, *shape[b + m :]])
    return [_array.gather(table, flat)]


# -- padding, tiling, broadcasting ---------------------------------------------------------------
@converter("Pad")
def _pad(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads = ctx.attr("pads") or ctx.attr("paddings")
        value = ctx.attr("value", 0.0)
        axes = list(range(rank))
    else:
        pads = [int(p) for p in np.asarray(ctx.require_const(1, "pads")).reshape(-1)]
        value = ctx.require_const(2, "padding value") if ctx.has_input(2) else 0
        axes = list(range(rank))
        if ctx.has_input(3):
            axes = _normalize(ctx, [int(a) for a in ctx.require_const(3, "axes")], rank)
    n = len(axes)
    if len(pads) != 2 * n:
        raise ctx.error(f"{len(pads)} pads for {n} axes")
    full = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        full[a] = [int(pads[k]), int(pads[k + n])]
    value = np.asarray(value).reshape(-1)[0] if np.size(value) else 0
    # negative pads crop
    if any(b < 0 or e < 0 for b, e in full):
        shape = x._shape_tuple
        begin = [max(-b, 0) for b, _ in full]
        size = [-1 if e >= 0 else shape[i] - begin[i] + e for i, (_, e) in enumerate(full)]
        x = _array.slice(x, begin, size)
        full = [[max(b, 0), max(e, 0)] for b, e in full]
    if not any(b or e for b, e in full):
        return [_array.identity(x)]
    if mode == "constant":
        return [_array.pad(x, full, constant_values=constant(value, dtype=x.dtype))]
    if mode == "reflect":
        return [_array.pad(x, full, mode="REFLECT")]
    if mode in ("edge", "wrap"):
        shape = _static(x)
        if shape is None:
            raise ctx.error(f"mode {mode!r} needs the input's shape when the model is imported")
        y = x
        for a, (b, e) in enumerate(full):
            if b or e:
                index = np.arange(-b, shape[a] + e)
                index = np.clip(index, 0, shape[a] - 1) if mode == "edge" else index % shape[a]
                y = _array.gather(y, constant(index.astype(np.int64)), axis=a)
        return [y]
    raise ctx.error(f"unknown mode {mode!r}")


@converter("Tile")
def _tile(ctx: NodeContext) -> list:
    repeats = [int(r) for r in np.asarray(ctx.require_const(1, "repeats")).reshape(-1)]
    return [_array.tile(ctx.input(0), repeats)]


@converter("Expand")
def _expand(ctx: NodeContext) -> list:
    x = ctx.input(0)
    target = [int(d) for d in np.asarray(ctx.require_const(1, "shape")).reshape(-1)]
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("needs the input's shape when the model is imported")
    rank = max(len(shape), len(target))
    aligned = [1] * (rank - len(shape)) + list(shape)
    target = [1] * (rank - len(target)) + target
    try:
        out = list(np.broadcast_shapes(tuple(aligned), tuple(target)))
    except ValueError:
        raise ctx.error(f"shape {tuple(shape)} does not broadcast to {tuple(target)}") from None
    y = _array.reshape(x, aligned) if len(aligned) != len(shape) else x
    multiples = [o // a for o, a in zip(out, aligned)]
    if any(m != 1 for m in multiples):
        y = _array.tile(y, multiples)
    elif y is x:
        y = _array.identity(x)
    return [y]


# -- more index arithmetic ----------------------------------------------------------------------
@converter("EyeLike")
def _eye_like(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape = _static(x)
    if shape is None or len(shape) != 2:
        raise ctx.error("needs a 2-D input of known shape when the model is imported")
    elem = ctx.attr("dtype")
    dtype = x.dtype if elem is None else ctx.compute_dtype(elem, "the output type")
    eye = np.eye(shape[0], shape[1], k=int(ctx.attr("k", 0)))
    return [constant(eye.astype(dtype.np), dtype=dtype)]


@converter("OneHot")
def _one_hot(ctx: NodeContext) -> list:
    indices = ctx.input(0)
    depth = int(np.asarray(ctx.require_const(1, "depth")).reshape(-1)[0])
    values = ctx.input(2)
    axis = ctx.attr("axis", -1)
    if axis < 0:  # counted in the output's rank, one more than the indices'
        axis += len(ctx.shape(0)) + 1
    if indices.dtype.is_floating:
        indices = _math.cast(indices, _dt.int64)
    indices = _math.cast(indices, _dt.int64)
    indices = _logic.where(
        _logic.less(indices, _int64(0)), _math.add(indices, _int64(depth)), indices
    )
    off = _array.gather(values, 0)
    on = _array.gather(values, 1)
    return [_array.one_hot(indices, depth, on_value=on, off_value=off, axis=axis)]


@converter("Trilu")
def _trilu(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape = x._shape_tuple
    if shape is None or len(shape) < 2 or shape[-1] is None or shape[-2] is None:
        raise ctx.error("needs the sizes of the last two dims when the model is imported")
    k = int(np.asarray(ctx.require_const(1, "k")).reshape(())) if ctx.has_input(1) else 0
    rows, cols = shape[-2], shape[-1]
    upper = bool(ctx.attr("upper", 1))
    mask = (
        np.triu(np.ones((rows, cols), bool), k)
        if upper
        else np.tril(np.ones((rows, cols), bool), k)
    )
    return [_logic.where(constant(mask), x, _array.zeros_like(x))]


@converter("ReverseSequence")
def _reverse_sequence(ctx: NodeContext) -> list:
    x = ctx.input(0)
    shape = _static(x)
    if shape is None:
        raise ctx.error("needs the input's shape when the model is imported")
    lengths = ctx.require_const(1, "sequence_lens")
    time_axis, batch_axis = ctx.attr("time_axis", 0), ctx.attr("batch_axis", 1)
    index = np.indices(shape)
    t = index[time_axis]
    b = index[batch_axis]
    lens = np.asarray(lengths).reshape(-1)[b]
    source_t = np.where(t < lens, lens - 1 - t, t)
    index[time_axis] = source_t
    flat = np.ravel_multi_index(tuple(index), shape).astype(np.int64)
    return [_array.reshape(_array.gather(_array.reshape(x, [-1]), constant(flat)), list(shape))]
