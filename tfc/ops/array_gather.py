"""Array ops that pick elements by index tensors: GatherV2 and OneHot."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_common import INDEX_DTYPES, check_rank, index_tensor, min_rank_for_axis
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.flops import no_flops, per_input_element
from tfc.ops.grad_ops import reshape_to, select, shape_tensor
from tfc.ops.kernels import IndexSpec, Kernel, Param
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, constant_value, register


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


register(
    OpDef(
        "GatherV2",
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
