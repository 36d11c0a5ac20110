"""Array ops that take elements by index: Slice, StridedSlice and `t[...]`, GatherV2, OneHot.

Slice and StridedSlice take a block whose bounds are known when compiling; GatherV2 and OneHot
read an index tensor at run time. StridedSliceGrad and UnsortedSegmentSum, the ops the
gradients of a strided slice and of a gather build, follow the op whose gradient they are.
"""

from __future__ import annotations

import builtins
import math
import sys
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import Dimension, is_fully_defined, shape_str
from tfc.ops.array_common import (
    INDEX_DTYPES,
    check_rank,
    contiguous,
    index_tensor,
    int_list,
    min_rank_for_axis,
    shape_value,
    strided_copy,
)
from tfc.ops.array_fill import ones_like
from tfc.ops.array_shape import shape
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.flops import no_flops, per_input_element
from tfc.ops.grad_ops import reshape_to, select, shape_tensor
from tfc.ops.indexed_slices import IndexedSlices
from tfc.ops.kernels import (
    IndexSpec,
    Kernel,
    Operand,
    Param,
    c_literal,
    contiguous_strides,
    loop_kernel,
)
from tfc.ops.math import cast
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    constant_value,
    register,
)


# -- Slice ---------------------------------------------------------------------------------------
def _slice_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "begin")
    check_dtype(ctx, 2, INDEX_DTYPES, "size")
    check_rank(ctx, 1, 1)
    check_rank(ctx, 2, 1)
    in_shape = ctx.in_shapes[0]
    n = next((s[0] for s in ctx.in_shapes[1:] if s is not None and s[0] is not None), None)
    if in_shape is not None and n is not None and n != len(in_shape):
        raise ctx.error(f"Shape must be rank {n} but is rank {len(in_shape)}")
    rank = len(in_shape) if in_shape is not None else n
    begin, size = ctx.const(1), ctx.const(2)
    if rank is None:
        return [(ctx.in_dtypes[0], None)]
    if size is None:
        return [(ctx.in_dtypes[0], (None,) * rank)]
    dims = in_shape if in_shape is not None else (None,) * rank
    begin = int_list(begin) if begin is not None else [None] * rank
    out = []
    for k, (d, b, s) in enumerate(zip(dims, begin, int_list(size))):
        if s < -1:
            raise ctx.error(f"Expected size[{k}] to be >= -1 (-1 means to the end), but got {s}")
        if d is not None and b is not None:
            if not 0 <= b <= d:
                raise ctx.error(f"Expected begin[{k}] in [0, {d}], but got {b}")
            if s == -1:
                s = d - b
            elif s > d - b:
                raise ctx.error(f"Expected size[{k}] in [0, {d - b}], but got {s}")
        out.append(None if s == -1 else s)
    return [(ctx.in_dtypes[0], tuple(out))]


def _slice_bounds(in_shape: tuple, begin: Any, size: Any) -> list[tuple[int, int]]:
    return [
        (b, d - b if s == -1 else s) for d, b, s in zip(in_shape, int_list(begin), int_list(size))
    ]


def _slice_reference(ctx: OpContext, x: np.ndarray, begin: Any, size: Any) -> np.ndarray:
    bounds = _slice_bounds(x.shape, begin, size)
    return np.array(x[tuple(builtins.slice(b, b + s) for b, s in bounds)])


def _slice_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    bounds = _slice_bounds(in_shape, ctx.require_const(1, "begin"), ctx.require_const(2, "size"))
    strides = contiguous_strides(in_shape)
    offset = sum(b * s for (b, _), s in zip(bounds, strides))
    out_shape = ctx.out_shapes[0]
    src = Operand("in0", dtype, strides, offset)
    return strided_copy(out_shape, contiguous("out0", dtype, out_shape), src)


def _slice_grad(op, dy):
    """dy padded back into x: begin before, the rest after."""
    x, begin, _ = op.inputs
    b = constant_value(op.graph, (begin.op.name, begin.value_index))
    if b is not None and is_fully_defined(x._shape_tuple) and is_fully_defined(dy._shape_tuple):
        sizes = zip(int_list(b), x._shape_tuple, dy._shape_tuple)
        pads = [[p, d - p - s] for p, d, s in sizes]
        paddings = constant(np.array(pads, np.int32).reshape(-1, 2))
    else:
        after = shape(x, out_type=begin.dtype) - shape(dy, out_type=begin.dtype) - begin
        paddings = apply_op("Pack", [begin, after], {"axis": 1, "N": 2}, name="stack").outputs[0]
    return [reshape_to(apply_op("Pad", [dy, paddings]).outputs[0], x), None, None]


register(
    OpDef(
        "Slice",
        dtypes=_dt.STORABLE,
        infer=_slice_infer,
        reference=_slice_reference,
        lower=_slice_lower,
        flops=no_flops,
        const_inputs=(1, 2),
        grad=_slice_grad,
    )
)


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """`tf.slice`: the block of `size` starting at `begin`; a size of -1 runs to the end."""
    with name_scope(name, "Slice", [input_]) as scope:
        x = convert_to_tensor(input_)
        begin_t, size_t = index_tensor(begin, "begin"), index_tensor(size, "size")
        return apply_op("Slice", [x, begin_t, size_t], name=scope).outputs[0]


# -- StridedSlice --------------------------------------------------------------------------------
_NEW_AXIS, _SHRINK = -1, -2
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _dense_spec(ctx: OpContext, rank: int, n: int) -> tuple[list, list]:
    """TF's BuildDenseSpec: for each input dim, (sparse index or None inside the ellipsis,
    begin masked, end masked, shrink); and where each output dim comes from."""
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = (
        int(ctx.attrs.get(m, 0)) for m in _MASKS
    )
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ctx.error("Multiple ellipses in slice spec not allowed")
    seen, new_after = False, 0
    for i in range(n):
        if seen and new_axis_mask >> i & 1:
            new_after += 1
        if ellipsis_mask >> i & 1:
            seen = True
    sparse_dims = n
    if not seen:  # an implicit ellipsis at the end keeps the remaining dims whole
        ellipsis_mask |= 1 << n
        sparse_dims += 1
    dense: list = [None] * rank
    gather: list[int] = []
    full = 0
    for i in range(sparse_dims):
        if ellipsis_mask >> i & 1:
            stop = min(rank - (sparse_dims - i) + 1 + new_after, rank)
            while full < stop:
                dense[full] = (None, True, True, False)
                gather.append(full)
                full += 1
        elif new_axis_mask >> i & 1:
            gather.append(_NEW_AXIS)
        else:
            if full == rank:
                raise ctx.error(
                    f"Index out of range using input dim {full}; input has only {rank} dims"
                )
            shrink = bool(shrink_mask >> i & 1)
            dense[full] = (i, bool(begin_mask >> i & 1), bool(end_mask >> i & 1), shrink)
            gather.append(_SHRINK if shrink else full)
            full += 1
    return dense, gather


def _canonical(x: int, masked: bool, is_end: bool, dim: int, stride: int) -> int:
    """A begin or end bound in [0, dim] (stride > 0) or [-1, dim - 1] (stride < 0): masked
    bounds take the far end in the direction of travel, others are clamped."""
    low, high = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return high if (stride > 0) == is_end else low
    x = x + dim if x < 0 else x
    return min(max(x, low), high)


def _strided_slice_plan(
    ctx: OpContext, in_shape: tuple, begin: list | None, end: list | None, strides: list
) -> tuple[tuple, list]:
    """TF's ValidateStridedSliceOp: the output shape, and per input dim (begin, size, stride)
    with begin None where unknown. Out-of-range bounds are clamped; indices are not."""
    n = len(strides)
    dense, gather = _dense_spec(ctx, len(in_shape), n)
    known = begin is not None and end is not None
    processing, plan = [], []
    for k, (i, begin_masked, end_masked, shrink) in enumerate(dense):
        b, e, s = (
            (0, 0, 1)
            if i is None
            else (begin[i] if known else 0, end[i] if known else 0, strides[i])
        )
        dim = in_shape[k]
        if s == 0:
            raise ctx.error(f"strides[{k}] must be non-zero")
        if dim is None:
            processing.append(1 if shrink else None)
            plan.append((None, processing[-1], s))
            continue
        if shrink and s <= 0:
            raise ctx.error("only stride 1 allowed on non-range indexing.")
        length = None
        if known and shrink:
            fwd = b + dim if b < 0 else b
            if not 0 <= fwd < dim:
                raise ctx.error(f"slice index {fwd} of dimension {k} out of bounds.")
            b, length = fwd, 1
        elif known:
            b = _canonical(b, begin_masked, False, dim, s)
            length = _canonical(e, end_masked, True, dim, s) - b
        elif shrink:
            length = 1
        elif begin_masked and end_masked:
            length = -dim if s < 0 else dim
        if length is None:
            processing.append(None)
            plan.append((None, None, s))
            continue
        size = 0 if length == 0 or (length < 0) != (s < 0) else -(-abs(length) // abs(s))
        processing.append(size)
        plan.append((b, size, s))
    final = tuple(1 if g == _NEW_AXIS else processing[g] for g in gather if g != _SHRINK)
    return final, plan


def _strided_slice_infer(ctx: OpContext) -> list:
    for i, what in ((1, "begin"), (2, "end"), (3, "strides")):
        check_dtype(ctx, i, INDEX_DTYPES, what)
        check_rank(ctx, i, 1)
    lengths = [s[0] if s is not None else None for s in ctx.in_shapes[1:]]
    if None not in lengths and len(set(lengths)) != 1:
        a, b, c = (shape_str(s) for s in ctx.in_shapes[1:])
        raise ctx.error(
            "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
            f"{a}, {b}, and {c} instead."
        )
    in_shape, strides = ctx.in_shapes[0], ctx.const(3)
    if in_shape is None or strides is None:
        return [(ctx.in_dtypes[0], None)]
    begin, end = ctx.const(1), ctx.const(2)
    final, _ = _strided_slice_plan(
        ctx,
        tuple(in_shape),
        None if begin is None else int_list(begin),
        None if end is None else int_list(end),
        int_list(strides),
    )
    return [(ctx.in_dtypes[0], final)]


def _concrete_plan(ctx: OpContext, in_shape: tuple, begin: Any, end: Any, strides: Any) -> tuple:
    return _strided_slice_plan(ctx, in_shape, int_list(begin), int_list(end), int_list(strides))


def _strided_slice_reference(ctx, x, begin, end, strides) -> np.ndarray:
    final, plan = _concrete_plan(ctx, x.shape, begin, end, strides)
    index = np.ix_(*[b + s * np.arange(size) for b, size, s in plan])
    return np.array(x[index].reshape(final))


def _strided_slice_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    values = [ctx.require_const(i, what) for i, what in ((1, "begin"), (2, "end"), (3, "strides"))]
    _, plan = _concrete_plan(ctx, in_shape, *values)
    in_strides = contiguous_strides(in_shape)
    sizes = [size for _, size, _ in plan]
    src = Operand(
        "in0",
        dtype,
        tuple(s * st for (_, _, s), st in zip(plan, in_strides)),
        sum(b * st for (b, _, _), st in zip(plan, in_strides)),
    )
    # the output holds the elements in the order the loop visits them: new and shrunk axes
    # are size-1 dims, which do not change that order
    return strided_copy(sizes, contiguous("out0", dtype, sizes), src)


def _strided_slice_grad(op, dy):
    """dy written back where the slice read it, zeros elsewhere: StridedSliceGrad, below."""
    x, begin, end, strides = op.inputs
    attrs = {m: op.get_attr(m) for m in _MASKS}
    inputs = [shape_tensor(x), begin, end, strides, dy]
    return [apply_op("StridedSliceGrad", inputs, attrs).outputs[0], None, None, None]


register(
    OpDef(
        "StridedSlice",
        dtypes=_dt.STORABLE,
        infer=_strided_slice_infer,
        reference=_strided_slice_reference,
        lower=_strided_slice_lower,
        flops=no_flops,
        const_inputs=(1, 2, 3),
        grad=_strided_slice_grad,
    )
)


# -- StridedSliceGrad(shape, begin, end, strides, dy) --------------------------------------------
# A strided slice's gradient, as TensorFlow names it: dy scattered into zeros where the slice
# read. It is linear in dy, so its own gradient is the forward slice of the incoming gradient.
def _strided_slice_grad_infer(ctx: OpContext) -> list:
    for i, what in ((0, "shape"), (1, "begin"), (2, "end"), (3, "strides")):
        check_dtype(ctx, i, INDEX_DTYPES, what)
        check_rank(ctx, i, 1)
    return [(ctx.in_dtypes[4], shape_value(ctx, 0))]


def _strided_slice_grad_plan(ctx: OpContext, shape: tuple, begin, end, strides) -> list:
    """The forward slice's plan, checked against the gradient's shape."""
    final, plan = _strided_slice_plan(ctx, shape, int_list(begin), int_list(end), int_list(strides))
    dy = ctx.in_shapes[4]
    if dy is not None and None not in dy and tuple(dy) != final:
        raise ctx.error(
            f"The gradient has shape {shape_str(dy)}, but the slice of a tensor of shape "
            f"{shape_str(shape)} has shape {shape_str(final)}"
        )
    return plan


def _strided_slice_grad_reference(ctx, shape, begin, end, strides, dy) -> np.ndarray:
    shape = tuple(int_list(shape))
    plan = _strided_slice_grad_plan(ctx, shape, begin, end, strides)
    out = np.zeros(shape, dy.dtype)
    out[np.ix_(*[b + s * np.arange(size) for b, size, s in plan])] = dy.reshape(
        [size for _, size, _ in plan]
    )
    return out


def _strided_slice_grad_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    values = [ctx.require_const(i, what) for i, what in ((1, "begin"), (2, "end"), (3, "strides"))]
    plan = _strided_slice_grad_plan(ctx, shape, *values)
    strides = contiguous_strides(shape)
    sizes = [size for _, size, _ in plan]
    target = Operand(
        "out0",
        dtype,
        tuple(s * st for (_, _, s), st in zip(plan, strides)),
        sum(b * st for (b, _, _), st in zip(plan, strides) if b is not None),
    )
    zeros = loop_kernel(shape, contiguous("out0", dtype, shape), [], c_literal(0, dtype))
    return zeros + strided_copy(sizes, target, contiguous("in4", dtype, sizes))


def _strided_slice_grad_grad(op, g) -> list:
    attrs = {m: op.get_attr(m) for m in _MASKS}
    sliced = apply_op("StridedSlice", [g, *op.inputs[1:4]], attrs).outputs[0]
    return [None, None, None, None, sliced]


register(
    OpDef(
        "StridedSliceGrad",
        dtypes=_dt.STORABLE,
        infer=_strided_slice_grad_infer,
        reference=_strided_slice_grad_reference,
        lower=_strided_slice_grad_lower,
        flops=no_flops,
        grad=_strided_slice_grad_grad,
        const_inputs=(0, 1, 2, 3),
        input_names=("shape", "begin", "end", "strides", "dy"),
    )
)


def strided_slice(
    input_: Any,
    begin: Any,
    end: Any,
    strides: Any = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    var: Any = None,
    name: str | None = None,
) -> Tensor:
    """`tf.strided_slice`, with TensorFlow's masks, negative strides and clamping of bounds."""
    with name_scope(name, "StridedSlice", [input_]) as scope:
        x = convert_to_tensor(input_)
        if strides is None:
            if is_tensor_like(begin):
                strides = ones_like(begin)
            else:
                strides = [1] * len(begin)
        ints = [
            index_tensor(v, what)
            for v, what in ((begin, "begin"), (end, "end"), (strides, "strides"))
        ]
        masks = (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
        attrs = {m: int(v) for m, v in zip(_MASKS, masks)}
        return apply_op("StridedSlice", [x, *ints], attrs, name=scope).outputs[0]


def _check_index(index: Any) -> None:
    if isinstance(index, (int, np.integer, Dimension)):
        return
    if is_tensor_like(index):
        dtype = convert_to_tensor(index).dtype
        if dtype in INDEX_DTYPES:
            return
    raise TypeError(
        "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
        f"tf.int32/tf.int64 tensors are valid indices, got {index!r}"
    )


def _bound(value: Any) -> Any:
    """A slice bound as TF1 reads it: Python spells `a[:]` with sys.maxsize on some paths."""
    if value is None or (not is_tensor_like(value) and value == sys.maxsize):
        return None
    _check_index(value)
    return value


def slice_helper(tensor: Any, key: Any) -> Tensor:
    """`tensor[key]`: NumPy basic indexing as one StridedSlice op named "strided_slice", as TF1.

    Ints (negative from the end), slices with any step, `...` and `tf.newaxis` (None); a scalar
    int tensor index works when its value is known when compiling.
    """
    tensor = convert_to_tensor(tensor)
    spec = key if isinstance(key, tuple) else (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for index, s in enumerate(spec):
        bit = 1 << index
        if isinstance(s, builtins.slice):
            start, stop, step = _bound(s.start), _bound(s.stop), s.step
            begin.append(0 if start is None else start)
            end.append(0 if stop is None else stop)
            masks["begin_mask"] |= bit if start is None else 0
            masks["end_mask"] |= bit if stop is None else 0
            if step is not None:
                _check_index(step)
            strides.append(1 if step is None else step)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    with name_scope(None, "strided_slice", [tensor]) as scope:
        if begin:
            packed = [_pack_indices(v) for v in (begin, end, strides)]
        else:
            packed = [constant([], dtype=_dt.int32)] * 3
        if any(p.dtype == _dt.int64 for p in packed):
            packed = [cast(p, _dt.int64) for p in packed]
        return apply_op("StridedSlice", [tensor, *packed], masks, name=scope).outputs[0]


def _pack_indices(values: list) -> Tensor:
    values = [int(v) if isinstance(v, (np.integer, Dimension)) else v for v in values]
    if any(is_tensor_like(v) for v in values):
        return convert_to_tensor(values, name="stack")
    return index_tensor(values, "stack")


# -- GatherV2 ------------------------------------------------------------------------------------
def _gather_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "indices")
    check_dtype(ctx, 2, INDEX_DTYPES, "axis")
    if ctx.attrs.get("batch_dims", 0) != 0:
        raise ctx.error("tfc's GatherV2 supports batch_dims=0 only")
    check_rank(ctx, 2, 0)
    params, indices = ctx.in_shapes[0], ctx.in_shapes[1]
    if params is not None and len(params) == 0:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    axis = ctx.const(2)
    if params is None or indices is None:
        return [(ctx.in_dtypes[0], None)]
    if axis is None:
        return [(ctx.in_dtypes[0], (None,) * (len(params) + len(indices) - 1))]
    axis = int(axis)
    if len(params) < min_rank_for_axis(axis):
        raise ctx.error(
            f"Shape must be at least rank {min_rank_for_axis(axis)} but is rank {len(params)}"
        )
    axis %= len(params)
    return [(ctx.in_dtypes[0], tuple(params[:axis]) + tuple(indices) + tuple(params[axis + 1 :]))]


def out_of_range(what: str, values: np.ndarray, limit: int) -> None:
    """The reference's twin of tfc_error_index: the first index outside [0, limit) fails the run."""
    flat = np.ravel(values)
    bad = np.flatnonzero((flat < 0) | (flat >= limit))
    if bad.size:
        pos = int(bad[0])
        raise errors.InvalidArgumentError(
            None, None, f"{what}[{pos}] = {int(flat[pos])} is not in [0, {limit})"
        )


def _gather_reference(ctx, params, indices, axis) -> np.ndarray:
    axis = int(axis) % params.ndim
    out_of_range("indices", indices, params.shape[axis])
    return np.take(params, indices, axis=axis)


def _gather_lower(ctx: OpContext) -> list:
    params = ctx.in_shapes[0]
    axis = int(ctx.require_const(2, "axis")) % len(params)
    count = math.prod(ctx.in_shapes[1])
    if count == 0:
        return []
    dtype = ctx.in_dtypes[0]
    spec = IndexSpec(
        dtype,
        ctx.in_dtypes[1],
        outer=math.prod(params[:axis]),
        count=count,
        limit=params[axis],
        inner=math.prod(params[axis + 1 :]),
        # an empty output reads nothing: skip the copy so no pointer is offset from NULL
        copy=math.prod(ctx.out_shapes[0]) > 0,
    )
    params_ = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    return [Kernel("gather", params_, spec, can_fail=True)]


def _gather_grad(op, dy: Tensor) -> list:
    """dy's slices added back at their indices: an UnsortedSegmentSum over the axis, which
    is moved to the front and back when it is not the first."""
    params, indices, axis = op.inputs
    value = constant_value(op.graph, (axis.op.name, axis.value_index))
    if value is None or params._shape_tuple is None or indices._shape_tuple is None:
        raise ValueError(
            f"The gradient of '{op.name}' (GatherV2) needs its axis and the ranks of its "
            "params and indices when the graph is built"
        )
    rank_p, rank_i = len(params._shape_tuple), len(indices._shape_tuple)
    a = int(value) % rank_p
    if a == 0:  # the rows read, as TF gives them: the table is updated where it was read
        return [_rows_gradient(params, indices, dy), None, None]
    n = params._shape_tuple[a]
    if n is None:
        n = shape_tensor(params)[a]
    if a:
        front = [*range(a, a + rank_i), *range(a), *range(a + rank_i, rank_p + rank_i - 1)]
        dy = apply_op("Transpose", [dy, constant(np.array(front, np.int32))]).outputs[0]
    summed = unsorted_segment_sum(dy, indices, n)
    if a:
        back = [*range(1, a + 1), 0, *range(a + 1, rank_p)]
        summed = apply_op("Transpose", [summed, constant(np.array(back, np.int32))]).outputs[0]
    return [reshape_to(summed, params), None, None]


def _rows_gradient(params: Tensor, indices: Tensor, dy: Tensor) -> IndexedSlices:
    """dy as IndexedSlices of params: one row per index (indices flattened)."""
    count = math.prod(indices._shape_tuple) if is_fully_defined(indices._shape_tuple) else -1
    flat = apply_op("Reshape", [indices, constant(np.array([count], np.int32))]).outputs[0]
    row_shape = params._shape_tuple[1:]
    if is_fully_defined(row_shape):
        values_shape = constant(np.array([count, *row_shape], np.int32))
    else:
        rest = apply_op("Slice", [shape_tensor(params), constant(np.array([1], np.int32)),
                                  constant(np.array([-1], np.int32))]).outputs[0]  # fmt: skip
        values_shape = apply_op(
            "ConcatV2", [constant(np.array([count], np.int32)), rest, constant(0)], {"N": 2}
        ).outputs[0]
    values = apply_op("Reshape", [dy, values_shape]).outputs[0]
    return IndexedSlices(values, flat, shape_tensor(params))


register(
    OpDef(
        "GatherV2",
        dtypes=_dt.STORABLE,
        infer=_gather_infer,
        reference=_gather_reference,
        lower=_gather_lower,
        flops=no_flops,
        const_inputs=(2,),
        grad=_gather_grad,
    )
)


# -- UnsortedSegmentSum (gradient-only: how a gather's gradient is scattered back) ---------------
def _segment_sum_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _dt.NUMERIC, "data")
    check_dtype(ctx, 1, INDEX_DTYPES, "segment_ids")
    check_dtype(ctx, 2, INDEX_DTYPES, "num_segments")
    check_rank(ctx, 2, 0)
    data, ids, num = ctx.in_shapes[0], ctx.in_shapes[1], ctx.const(2)
    if data is None or ids is None:
        return [(ctx.in_dtypes[0], None)]
    lead = data[: len(ids)]
    if len(lead) < len(ids) or any(
        a is not None and b is not None and a != b for a, b in zip(lead, ids)
    ):
        raise ctx.error("segment_ids.shape must be a prefix of data.shape")
    return [(ctx.in_dtypes[0], (None if num is None else int(num), *data[len(ids) :]))]


def _segment_sum_reference(ctx, data, ids, num) -> np.ndarray:
    num = int(num)
    flat = ids.reshape(-1).astype(np.int64)
    bad = np.flatnonzero(flat >= num)
    if bad.size:
        pos = int(bad[0])
        raise errors.InvalidArgumentError(
            None, None, f"segment_ids[{pos}] = {int(flat[pos])} is not in [0, {num})"
        )
    rows = data.reshape((flat.size, -1))
    out = np.zeros((num, rows.shape[1]), data.dtype)
    keep = flat >= 0  # negative ids are dropped, as in TensorFlow
    np.add.at(out, flat[keep], rows[keep])
    return out.reshape(ctx.out_shapes[0])


def _segment_sum_lower(ctx: OpContext) -> list:
    data, ids, out = ctx.in_shapes[0], ctx.in_shapes[1], ctx.out_shapes[0]
    dtype = ctx.in_dtypes[0]
    inner = math.prod(data[len(ids) :])
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    spec = IndexSpec(
        dtype,
        ctx.in_dtypes[1],
        outer=1,
        count=math.prod(ids),
        limit=out[0],
        inner=inner,
        copy=inner > 0 and math.prod(out) > 0,
        total=math.prod(out),
    )
    return [Kernel("segment_sum", params, spec, can_fail=True)]


def _segment_sum_grad(op, dy: Tensor) -> list:
    """Each id's row of dy; dropped (negative) ids get zeros."""
    data, ids = op.inputs[:2]
    safe = apply_op("Maximum", [ids, constant(0, dtype=ids.dtype)]).outputs[0]
    picked = gather(dy, safe)
    valid = apply_op("GreaterEqual", [ids, constant(0, dtype=ids.dtype)]).outputs[0]
    extra = len(data._shape_tuple) - len(ids._shape_tuple)
    if extra:
        ones = constant(np.ones(extra, np.int32))
        shape = apply_op("ConcatV2", [shape_tensor(ids), ones, constant(0)], {"N": 2})
        valid = apply_op("Reshape", [valid, shape.outputs[0]]).outputs[0]
    return [select(valid, picked, 0), None, None]


register(
    OpDef(
        "UnsortedSegmentSum",
        dtypes=_dt.NUMERIC,
        computes_in=HALVES_IN_FLOAT32,
        infer=_segment_sum_infer,
        reference=_segment_sum_reference,
        lower=_segment_sum_lower,
        flops=per_input_element(1),
        grad=_segment_sum_grad,
        const_inputs=(2,),
        input_names=("data", "segment_ids", "num_segments"),
    )
)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any) -> Tensor:
    """out[k] = sum of data[i] over the i with segment_ids[i] == k (negative ids dropped)."""
    inputs = [convert_to_tensor(data), convert_to_tensor(segment_ids)]
    num = index_tensor(num_segments, "num_segments")
    return apply_op("UnsortedSegmentSum", [*inputs, num]).outputs[0]


def gather(
    params: Any,
    indices: Any,
    validate_indices: Any = None,
    name: str | None = None,
    axis: Any = None,
    batch_dims: int = 0,
) -> Tensor:
    """`tf.gather`: slices of `params` along `axis` at `indices`; an index outside the axis
    fails the run with InvalidArgumentError, as in TensorFlow on CPU."""
    if batch_dims != 0:
        raise NotImplementedError("tfc's tf.gather supports batch_dims=0 only")
    with name_scope(name, "GatherV2", [params, indices]) as scope:
        params = convert_to_tensor(params)
        indices = convert_to_tensor(indices)
        axis_t = index_tensor(0 if axis is None else axis, "axis")
        return apply_op(
            "GatherV2", [params, indices, axis_t], {"batch_dims": 0}, name=scope
        ).outputs[0]


# -- OneHot --------------------------------------------------------------------------------------
def _one_hot_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "indices")
    check_dtype(ctx, 1, (_dt.int32,), "depth")
    on, off = ctx.in_dtypes[2], ctx.in_dtypes[3]
    if on != off:
        raise TypeError(
            f"Input 'off_value' of 'OneHot' Op has type {off.name} that does not match type "
            f"{on.name} of argument 'on_value'."
        )
    axis = int(ctx.attrs["axis"])
    if axis < -1:
        raise ctx.error("axis must be >= -1")
    for i in (1, 2, 3):
        shape = ctx.in_shapes[i]
        if shape is not None and len(shape) != 0:
            raise ctx.error(f"Input must be scalar but has rank {len(shape)}")
    depth = ctx.const(1)
    if depth is not None and int(depth) < 0:
        raise ctx.error(f"depth must be non-negative, got: {int(depth)}")
    indices = ctx.in_shapes[0]
    if indices is None:
        return [(on, None)]
    if axis > len(indices):
        raise ctx.error(
            f"Expected axis to be -1 or between [0, {len(indices)}].  But received: {axis}"
        )
    axis = len(indices) if axis == -1 else axis
    dim = None if depth is None else int(depth)
    return [(on, tuple(indices[:axis]) + (dim,) + tuple(indices[axis:]))]


def _one_hot_reference(ctx, indices, depth, on, off) -> np.ndarray:
    axis = int(ctx.attrs["axis"])
    axis = indices.ndim if axis == -1 else axis
    depth = int(depth)
    positions = np.arange(depth).reshape(
        [depth if k == axis else 1 for k in range(indices.ndim + 1)]
    )
    hot = np.expand_dims(indices.astype(np.int64), axis) == positions
    return np.where(hot, on, off).astype(on.dtype)


def _one_hot_lower(ctx: OpContext) -> list:
    out_shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
    if math.prod(out_shape) == 0:
        return []
    axis = int(ctx.attrs["axis"])
    indices = ctx.in_shapes[0]
    axis = len(indices) if axis == -1 else axis
    # the ids' range is not checked: an id outside [0, depth) selects no position (all off)
    spec = IndexSpec(
        dtype,
        ctx.in_dtypes[0],
        outer=math.prod(indices[:axis]),
        count=math.prod(indices),
        limit=out_shape[axis],
        inner=math.prod(indices[axis:]),
    )
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("idx", ctx.in_dtypes[0].c_type, True, "in0"),
        Param("on_value", dtype.c_type, True, "in2"),
        Param("off_value", dtype.c_type, True, "in3"),
    ]
    return [Kernel("one_hot", params, spec)]


register(
    OpDef(
        "OneHot",
        dtypes=_dt.STORABLE,
        infer=_one_hot_infer,
        reference=_one_hot_reference,
        lower=_one_hot_lower,
        flops=no_flops,
        const_inputs=(1,),
        differentiable=False,
    )
)


def one_hot(
    indices: Any,
    depth: Any,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """`tf.one_hot`: `on_value` where the index matches, `off_value` elsewhere; an index outside
    [0, depth) gives a row of `off_value`, as in TensorFlow."""
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        indices = convert_to_tensor(indices)
        dtype = None if dtype is None else _dt.as_dtype(dtype)
        given = [v for v in (on_value, off_value) if v is not None]
        if dtype is None:
            dtype = convert_to_tensor(given[0]).dtype if given else _dt.float32
        values = []
        for value, default, what in ((on_value, 1, "on_value"), (off_value, 0, "off_value")):
            if value is None:
                value = default
            elif is_tensor_like(value) and convert_to_tensor(value).dtype != dtype:
                raise TypeError(
                    f"dtype {convert_to_tensor(value).dtype.name} of {what} does not match "
                    f"dtype parameter {dtype.name}"
                )
            values.append(convert_to_tensor(value, dtype=dtype, name=what))
        depth_t = convert_to_tensor(depth, dtype=_dt.int32, name="depth")
        attrs = {"axis": -1 if axis is None else int(axis), "T": dtype}
        return apply_op("OneHot", [indices, depth_t, *values], attrs, name=scope).outputs[0]
