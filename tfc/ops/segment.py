"""Segment reductions, bincount and histograms: rows folded into the slots their ids name.

The unsorted ops (UnsortedSegmentMax/Min/Prod beside tfc.ops.array_index's UnsortedSegmentSum)
take `num_segments`, the output's size, as a compile-time input; their ids are read at run time
(out of range: the run fails; negative: the row is dropped, as in TF). The sorted ops
(SegmentSum/Mean/Max/Min/Prod) have as many segments as their last id plus one: an output size
the data decides, so their ids must be known when the graph is compiled (then they are checked
there too). bincount's output size is its largest value plus one, unless minlength and
maxlength fix it: the same rule. A segment with no rows holds TF's value: 0 for the sorted
ops (1 for SegmentProd), the identity of the fold (the lowest or highest finite value for max
and min) for the unsorted ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ops.array_common import INDEX_DTYPES, check_rank, index_tensor
from tfc.ops.array_index import gather
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import per_input_element
from tfc.ops.grad_ops import select
from tfc.ops.kernels import (
    Kernel,
    Param,
    SegmentSpec,
    c_literal,
    format_expr,
    loop_kernel,
    table_entry,
    view,
)
from tfc.ops.logic import equal, greater, greater_equal, logical_and
from tfc.ops.math import cast, maximum, sqrt, truediv
from tfc.ops.reduce import REDUCTIONS
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = [
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_prod",
    "unsorted_segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_mean",
    "unsorted_segment_sqrt_n",
    "bincount",
    "histogram_fixed_width",
    "histogram_fixed_width_bins",
    "confusion_matrix",
]

_NUMERIC = _dt.NUMERIC
_REDUCTION_OF = {"Sum": "Sum", "Mean": "Sum", "Max": "Max", "Min": "Min", "Prod": "Prod"}


def _lowest(dtype: _dt.DType) -> Any:
    return np.finfo(dtype.np).min if dtype.is_floating else dtype.min


def _highest(dtype: _dt.DType) -> Any:
    return np.finfo(dtype.np).max if dtype.is_floating else dtype.max


# the value of a segment no row falls in: for the unsorted ops the fold's identity (the lowest
# or highest finite value for max and min), for the sorted ones 0 (1 for a product)
_UNSORTED_EMPTY = {"Sum": lambda d: 0, "Prod": lambda d: 1, "Max": _lowest, "Min": _highest}
_SORTED_EMPTY = {"Sum": 0, "Mean": 0, "Max": 0, "Min": 0, "Prod": 1}
# NaN wins a max or a min, as in tfc_max / tfc_min
_NUMPY_FOLD = {"Sum": np.add, "Prod": np.multiply, "Max": np.maximum, "Min": np.minimum}


def _combine(kind: str, dtype: _dt.DType) -> str:
    return format_expr(
        table_entry(REDUCTIONS[_REDUCTION_OF[kind]].combine, dtype), dtype, a="{a}", b="{b}"
    )


def _rows_shape(ctx: OpContext, num: int | None) -> tuple | None:
    """(num, data's dims after the ids'), checking that the ids' shape is a prefix of data's."""
    data, ids = ctx.in_shapes[0], ctx.in_shapes[1]
    if data is None or ids is None:
        return None
    lead = data[: len(ids)]
    if len(lead) < len(ids) or any(
        a is not None and b is not None and a != b for a, b in zip(lead, ids)
    ):
        raise ctx.error("segment_ids.shape must be a prefix of data.shape")
    return (num, *data[len(ids) :])


def _fold_rows(kind: str, data: np.ndarray, ids: np.ndarray, num: int, empty: Any) -> tuple:
    """The reference fold, in row order as the kernels fold: each segment from its first row
    on (negative ids dropped); `empty` where no row falls. Returns it and the rows per segment."""
    flat = ids.reshape(-1).astype(np.int64)
    rows = data.reshape((flat.size, math.prod(data.shape[ids.ndim :])))
    out = np.full((num, rows.shape[1]), empty, dtype=data.dtype)
    started = np.zeros(num, bool)
    fold = _NUMPY_FOLD[kind]
    with np.errstate(over="ignore", invalid="ignore"):
        for i, k in enumerate(flat.tolist()):
            if k >= 0:
                out[k] = fold(out[k], rows[i]) if started[k] else rows[i]
                started[k] = True
    return out, np.bincount(flat[flat >= 0], minlength=num)[:num]


# -- UnsortedSegmentMax, Min, Prod ----------------------------------------------------------------
def _unsorted_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _NUMERIC, "data")
    check_dtype(ctx, 1, INDEX_DTYPES, "segment_ids")
    check_dtype(ctx, 2, INDEX_DTYPES, "num_segments")
    check_rank(ctx, 2, 0)
    num = ctx.const(2)
    shape = _rows_shape(ctx, None if num is None else int(num))
    return [(ctx.in_dtypes[0], shape)]


def _unsorted_reference(ctx: OpContext, data, ids, num) -> np.ndarray:
    num = int(num)
    flat = ids.reshape(-1)
    bad = np.flatnonzero(flat >= num)
    if bad.size:
        pos = int(bad[0])
        raise errors.InvalidArgumentError(
            None, None, f"segment_ids[{pos}] = {int(flat[pos])} is not in [0, {num})"
        )
    kind = ctx.type[len("UnsortedSegment") :]
    dtype = ctx.in_dtypes[0]
    out, _ = _fold_rows(kind, data, ids, num, _UNSORTED_EMPTY[kind](dtype))
    return out.reshape(ctx.out_shapes[0])


def _unsorted_lower(ctx: OpContext) -> list[Kernel]:
    kind = ctx.type[len("UnsortedSegment") :]
    dtype, out = ctx.in_dtypes[0], ctx.out_shapes[0]
    if math.prod(out) == 0 and math.prod(ctx.in_shapes[1]) == 0:
        return []
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    spec = SegmentSpec(
        dtype,
        ctx.in_dtypes[1],
        count=math.prod(ctx.in_shapes[1]),
        limit=out[0],
        inner=math.prod(out[1:]),
        total=math.prod(out),
        combine=_combine(kind, dtype),
        empty=c_literal(_UNSORTED_EMPTY[kind](dtype), dtype),
    )
    return [Kernel("segment_reduce", params, spec, can_fail=True)]


def _gather_rows(params: Tensor, ids: Tensor, rank: int) -> tuple[Tensor, Tensor]:
    """params' rows at ids, zero where an id is negative (TF's _GatherDropNegatives); and
    the mask of valid ids, shaped to broadcast over the rows' values."""
    zero = constant(0, dtype=ids.dtype)
    picked = gather(params, maximum(ids, zero))
    valid = greater_equal(ids, zero)
    extra = rank - len(ids._shape_tuple)
    if extra:
        valid = _array.reshape(valid, _array.concat([_array.shape(ids), [1] * extra], 0))
    return select(valid, picked, 0), valid


def _data_rank(op: Operation) -> int:
    data, ids = op.inputs[:2]
    if data._shape_tuple is None or ids._shape_tuple is None:
        raise ValueError(f"The gradient of '{op.name}' ({op.type}) needs the ranks of its inputs")
    return len(data._shape_tuple)


def _unsorted_extremum_grad(op: Operation, dy: Tensor) -> list:
    """dy shared by the rows equal to their segment's extreme (TF's rule for ties)."""
    data, ids, num = op.inputs
    rank = _data_rank(op)
    extreme, valid = _gather_rows(op.outputs[0], ids, rank)
    chosen = logical_and(equal(data, extreme), valid)
    counts = unsorted_segment_sum(cast(chosen, dy.dtype), ids, num)
    shared, _ = _gather_rows(dy / counts, ids, rank)
    return [select(chosen, shared, 0), None, None]


def _unsorted_prod_grad(op: Operation, dy: Tensor) -> list:
    """The product of the other rows: y / x, or where x is 0, the product of the non-zero
    others when it is the segment's only zero (TF's rule)."""
    data, ids, num = op.inputs
    rank = _data_rank(op)
    zero = equal(data, constant(0, dtype=data.dtype))
    zeros = unsorted_segment_sum(cast(zero, _dt.int32), ids, num)
    dy = select(greater(zeros, 1), 0, dy)
    nonzero_data = select(zero, 1, data)
    nonzero_prod = unsorted_segment_prod(nonzero_data, ids, num)
    prod_at, _ = _gather_rows(op.outputs[0], ids, rank)
    nonzero_prod_at, _ = _gather_rows(nonzero_prod, ids, rank)
    others = select(zero, nonzero_prod_at, prod_at / nonzero_data)
    dy_at, _ = _gather_rows(dy, ids, rank)
    return [dy_at * others, None, None]


for _kind, _grad in (
    ("Max", _unsorted_extremum_grad),
    ("Min", _unsorted_extremum_grad),
    ("Prod", _unsorted_prod_grad),
):
    register(
        OpDef(
            f"UnsortedSegment{_kind}",
            infer=_unsorted_infer,
            reference=_unsorted_reference,
            lower=_unsorted_lower,
            flops=per_input_element(1),
            grad=_grad,
            const_inputs=(2,),
            input_names=("data", "segment_ids", "num_segments"),
            dtypes=_dt.NUMERIC,
            computes_in=HALVES_IN_FLOAT32,
        )
    )


# -- SegmentSum, Mean, Max, Min, Prod (sorted ids, known when compiling) ---------------------------
def sorted_segment_count(ctx: OpContext, ids: np.ndarray) -> int:
    """The number of segments of sorted ids (the last plus one), with TF's errors."""
    flat = np.asarray(ids).reshape(-1).astype(np.int64)
    if flat.size and flat.min() < 0:
        raise ctx.error(f"segment ids must be >= 0, got {int(flat.min())}")
    if flat.size > 1 and (np.diff(flat) < 0).any():
        raise ctx.error("segment ids are not increasing")
    return int(flat[-1]) + 1 if flat.size else 0


def _sorted_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _NUMERIC, "data")
    check_dtype(ctx, 1, INDEX_DTYPES, "segment_ids")
    check_rank(ctx, 1, 1)
    ids = ctx.const(1)
    num = None if ids is None else sorted_segment_count(ctx, ids)
    return [(ctx.in_dtypes[0], _rows_shape(ctx, num))]


def _sorted_reference(ctx: OpContext, data, ids) -> np.ndarray:
    num = sorted_segment_count(ctx, ids)
    kind = ctx.type[len("Segment") :]
    out, counts = _fold_rows(_REDUCTION_OF[kind], data, ids, num, _SORTED_EMPTY[kind])
    if kind == "Mean":
        with np.errstate(all="ignore"):
            mean = out / np.maximum(counts, 1)[:, None]
        out = mean.astype(data.dtype) if data.dtype.kind == "f" else _c_division(out, counts)
    return out.reshape(ctx.out_shapes[0])


def _c_division(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """C's integer division (toward zero) of each segment's sum by its row count."""
    n = np.maximum(counts, 1)[:, None].astype(total.dtype)
    q = np.abs(total) // n
    return np.where(total < 0, -q, q).astype(total.dtype)


def _sorted_lower(ctx: OpContext) -> list[Kernel]:
    kind = ctx.type[len("Segment") :]
    dtype, out = ctx.in_dtypes[0], ctx.out_shapes[0]
    ctx.require_const(1, "segment_ids")  # the output size; the kernel reads the ids themselves
    count, inner, total = ctx.in_shapes[1][0], math.prod(out[1:]), math.prod(out)
    if total == 0:
        return []
    if count == 0:  # no rows: every segment is empty (and data may be a NULL buffer)
        return loop_kernel(out, view("out0", dtype, out), [], c_literal(_SORTED_EMPTY[kind], dtype))
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    finalize = None
    if kind == "Mean":
        finalize = f"{{a}} / ({dtype.c_type}){{n}}"
    spec = SegmentSpec(
        dtype,
        ctx.in_dtypes[1],
        count=count,
        limit=out[0],
        inner=inner,
        total=total,
        combine=_combine(kind, dtype),
        empty=c_literal(_SORTED_EMPTY[kind], dtype),
        finalize=finalize,
    )
    return [Kernel("segment_sorted", params, spec)]


def _rows_of(op: Operation, values: Tensor) -> Tensor:
    """values (one per segment) gathered at each row's id."""
    return gather(values, op.inputs[1])


def _segment_counts(op: Operation, dtype: _dt.DType) -> Tensor:
    """The rows in each segment, shaped [segments, 1, ...] against the output."""
    ids = op.inputs[1]
    ones = _array.ones_like(ids, dtype=dtype)
    counts = apply_op("SegmentSum", [ones, ids]).outputs[0]
    extra = _data_rank(op) - 1
    return _array.reshape(counts, [-1] + [1] * extra) if extra else counts


def _segment_sum_grad(op: Operation, dy: Tensor) -> list:
    return [_rows_of(op, dy), None]


def _segment_mean_grad(op: Operation, dy: Tensor) -> list:
    return [_rows_of(op, dy / _segment_counts(op, dy.dtype)), None]


def _segment_extremum_grad(op: Operation, dy: Tensor) -> list:
    data = op.inputs[0]
    chosen = equal(data, _rows_of(op, op.outputs[0]))
    counts = apply_op("SegmentSum", [cast(chosen, dy.dtype), op.inputs[1]]).outputs[0]
    return [select(chosen, _rows_of(op, dy / counts), 0), None]


def _segment_prod_grad(op: Operation, dy: Tensor) -> list:
    data, ids = op.inputs
    zero = equal(data, constant(0, dtype=data.dtype))
    zeros = apply_op("SegmentSum", [cast(zero, _dt.int32), ids]).outputs[0]
    dy = select(greater(zeros, 1), 0, dy)
    nonzero_data = select(zero, 1, data)
    nonzero_prod = apply_op("SegmentProd", [nonzero_data, ids]).outputs[0]
    others = select(zero, _rows_of(op, nonzero_prod), _rows_of(op, op.outputs[0]) / nonzero_data)
    return [_rows_of(op, dy) * others, None]


for _kind, _grad in (
    ("Sum", _segment_sum_grad),
    ("Mean", _segment_mean_grad),
    ("Max", _segment_extremum_grad),
    ("Min", _segment_extremum_grad),
    ("Prod", _segment_prod_grad),
):
    register(
        OpDef(
            f"Segment{_kind}",
            infer=_sorted_infer,
            reference=_sorted_reference,
            lower=_sorted_lower,
            flops=per_input_element(1),
            grad=_grad,
            const_inputs=(1,),
            input_names=("data", "segment_ids"),
            dtypes=_dt.NUMERIC,
            computes_in=HALVES_IN_FLOAT32,
        )
    )


# -- frontends ------------------------------------------------------------------------------------
def _sorted_frontend(kind: str) -> Callable[..., Tensor]:
    op_type = f"Segment{kind}"

    def fn(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
        with name_scope(name, op_type) as scope:
            inputs = [convert_to_tensor(data), convert_to_tensor(segment_ids)]
            return apply_op(op_type, inputs, name=scope).outputs[0]

    fn.__name__ = fn.__qualname__ = f"segment_{kind.lower()}"
    fn.__doc__ = (
        f"`tf.segment_{kind.lower()}`: the {kind.lower()} of data's rows with each sorted id; "
        "as many segments as the last id plus one (empty ones are 0, 1 for a product). The ids "
        "must be known when the graph is compiled: they decide the output's shape."
    )
    return fn


def _unsorted_frontend(kind: str) -> Callable[..., Tensor]:
    op_type = f"UnsortedSegment{kind}"

    def fn(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
        with name_scope(name, op_type) as scope:
            inputs = [convert_to_tensor(data), convert_to_tensor(segment_ids)]
            num = index_tensor(num_segments, "num_segments")
            return apply_op(op_type, [*inputs, num], name=scope).outputs[0]

    fn.__name__ = fn.__qualname__ = f"unsorted_segment_{kind.lower()}"
    fn.__doc__ = (
        f"`tf.unsorted_segment_{kind.lower()}`: the {kind.lower()} of data's rows with each id "
        "in [0, num_segments) (rows with negative ids dropped); num_segments must be known "
        "when compiling."
    )
    return fn


segment_sum = _sorted_frontend("Sum")
segment_mean = _sorted_frontend("Mean")
segment_max = _sorted_frontend("Max")
segment_min = _sorted_frontend("Min")
segment_prod = _sorted_frontend("Prod")
unsorted_segment_sum = _unsorted_frontend("Sum")
unsorted_segment_max = _unsorted_frontend("Max")
unsorted_segment_min = _unsorted_frontend("Min")
unsorted_segment_prod = _unsorted_frontend("Prod")


def _rows_per_segment(data: Tensor, ids: Tensor, num: Any) -> Tensor:
    """max(rows in each segment, 1), shaped [num, 1, ...] to divide the segments' values."""
    if data._shape_tuple is None or ids._shape_tuple is None:
        raise ValueError("unsorted_segment_mean/sqrt_n need the ranks of data and segment_ids")
    counts = unsorted_segment_sum(_array.ones_like(ids, dtype=data.dtype), ids, num)
    extra = len(data._shape_tuple) - len(ids._shape_tuple)
    if extra:
        counts = _array.reshape(counts, [-1] + [1] * extra)
    return maximum(counts, constant(1, dtype=data.dtype))


def unsorted_segment_mean(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """`tf.unsorted_segment_mean`: the mean of each segment's rows (0 for an empty one); float64
    for integer data, as TF's `/` gives."""
    with name_scope(name, "UnsortedSegmentMean") as scope:
        data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
        summed = unsorted_segment_sum(data, ids, num_segments)
        # TF divides with `/`: integer data gives a float64 mean
        return truediv(summed, _rows_per_segment(data, ids, num_segments), name=scope)


def unsorted_segment_sqrt_n(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """`tf.unsorted_segment_sqrt_n`: each segment's sum divided by the square root of its row
    count (0 for an empty one)."""
    with name_scope(name, "UnsortedSegmentSqrtN") as scope:
        data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
        if not data.dtype.is_floating:
            raise TypeError(f"unsorted_segment_sqrt_n needs float data, got {data.dtype.name}")
        summed = unsorted_segment_sum(data, ids, num_segments)
        return truediv(summed, sqrt(_rows_per_segment(data, ids, num_segments)), name=scope)


def _largest(flat: Tensor) -> Tensor:
    """The largest element of a vector (the lowest int32 when it is empty)."""
    axis = constant(np.zeros(1, np.int32))
    return apply_op("Max", [flat, axis], {"keep_dims": False}).outputs[0]


# -- Bincount -------------------------------------------------------------------------------------
def _bincount_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, (_dt.int32,), "arr")
    check_dtype(ctx, 1, (_dt.int32,), "size")
    check_dtype(ctx, 2, _NUMERIC, "weights")
    check_rank(ctx, 1, 0)
    arr, weights = ctx.in_shapes[0], ctx.in_shapes[2]
    if weights is not None and weights != (0,) and arr is not None and len(weights) != len(arr):
        raise ctx.error("weights must be empty or have the shape of arr")
    size = ctx.const(1)
    if size is not None and int(size) < 0:
        raise ctx.error(f"size ({int(size)}) must be non-negative")
    return [(ctx.in_dtypes[2], (None if size is None else int(size),))]


def _bincount_reference(ctx: OpContext, arr, size, weights) -> np.ndarray:
    flat = arr.reshape(-1).astype(np.int64)
    if (flat < 0).any():
        raise errors.InvalidArgumentError(None, None, "Input arr must be non-negative!")
    size = int(size)
    keep = flat < size
    w = weights.reshape(-1)[keep] if weights.size else None
    return np.bincount(flat[keep], weights=w, minlength=size)[:size].astype(weights.dtype)


def _bincount_lower(ctx: OpContext) -> list[Kernel]:
    dtype, size = ctx.out_dtypes[0], ctx.out_shapes[0][0]
    weighted = math.prod(ctx.in_shapes[2]) > 0
    count = math.prod(ctx.in_shapes[0])
    if size == 0 and count == 0:
        return []
    add = table_entry(REDUCTIONS["Sum"].combine, dtype)
    increment = format_expr(add, dtype, a="{a}", b="{b}" if weighted else c_literal(1, dtype))
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("idx", ctx.in_dtypes[0].c_type, True, "in0"),
        Param("w", dtype.c_type, True, "in2"),
    ]
    spec = SegmentSpec(
        dtype,
        ctx.in_dtypes[0],
        count=count,
        limit=size,
        inner=1,
        total=size,
        combine=increment,
        empty=c_literal(0, dtype),
    )
    return [Kernel("bincount", params, spec, can_fail=True)]


register(
    OpDef(
        "Bincount",
        infer=_bincount_infer,
        reference=_bincount_reference,
        lower=_bincount_lower,
        flops=per_input_element(1),
        const_inputs=(1,),
        input_names=("arr", "size", "weights"),
        differentiable=False,
        dtypes=_dt.NUMERIC,
        computes_in=HALVES_IN_FLOAT32,
    )
)


def bincount(
    arr: Any,
    weights: Any = None,
    minlength: Any = None,
    maxlength: Any = None,
    dtype: Any = _dt.int32,
) -> Tensor:
    """`tf.bincount`: how often each value of the non-negative int32 `arr` occurs (or the sum
    of its `weights`), in max(arr) + 1 bins, at least `minlength`, at most `maxlength` (larger
    values are not counted). The number of bins is the output's shape: it must be known when
    compiling, from constant values of arr or from minlength == maxlength."""
    with name_scope(None, "bincount") as scope:
        arr = convert_to_tensor(arr, dtype=_dt.int32, name="arr")
        fixed = (
            isinstance(minlength, (int, np.integer))
            and isinstance(maxlength, (int, np.integer))
            and minlength >= maxlength
        )
        if fixed:  # min(maxlength, max(minlength, anything)) is maxlength
            size = constant(int(maxlength), dtype=_dt.int32)
        else:  # TF's formula; known when compiling only if arr's values are
            nonempty = cast(greater(_array.size(arr), 0), _dt.int32)
            flat = _array.reshape(arr, [-1])
            largest = _largest(flat)
            size = nonempty * (largest + 1)
            if minlength is not None:
                size = maximum(convert_to_tensor(minlength, dtype=_dt.int32), size)
            if maxlength is not None:
                limit = convert_to_tensor(maxlength, dtype=_dt.int32)
                size = apply_op("Minimum", [limit, size]).outputs[0]
        if weights is None:
            weights = constant(np.zeros(0, _dt.as_dtype(dtype).np))
        else:
            weights = convert_to_tensor(weights, name="weights")
        return apply_op("Bincount", [arr, size, weights], name=scope).outputs[0]


# -- histograms -----------------------------------------------------------------------------------
def histogram_fixed_width_bins(
    values: Any, value_range: Any, nbins: int = 100, dtype: Any = _dt.int32, name: str | None = None
) -> Tensor:
    """`tf.histogram_fixed_width_bins`: the bin of each value among `nbins` equal bins over
    value_range = [lo, hi] (values outside go to the first or last bin), TF's formula:
    floor(nbins * (v - lo) / (hi - lo)) clipped to [0, nbins - 1]."""
    with name_scope(name, "histogram_fixed_width_bins") as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        nbins_float = constant(float(nbins), dtype=values.dtype)
        lo, hi = value_range[0], value_range[1]
        scaled = (values - lo) / (hi - lo)
        indices = apply_op("Floor", [nbins_float * scaled]).outputs[0]
        clipped = apply_op("Maximum", [indices, constant(0.0, dtype=values.dtype)]).outputs[0]
        clipped = apply_op("Minimum", [clipped, nbins_float - 1]).outputs[0]
        return cast(clipped, dtype, name=scope)


def histogram_fixed_width(
    values: Any, value_range: Any, nbins: int = 100, dtype: Any = _dt.int32, name: str | None = None
) -> Tensor:
    """`tf.histogram_fixed_width`: how many values fall in each of `nbins` equal bins over
    value_range = [lo, hi]; values below lo count in the first bin, values from hi on in the
    last. The bin of v is (max(v, lo) - lo) / ((hi - lo) / nbins) in double, truncated and
    capped at nbins - 1 (TF's kernel)."""
    if not isinstance(nbins, (int, np.integer)):
        raise TypeError("histogram_fixed_width's nbins must be a Python int here: it is the shape")
    if nbins <= 0:
        raise ValueError(f"nbins should be a positive number, but got '{nbins}'")
    with name_scope(name, "histogram_fixed_width") as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        lo, hi = value_range[0], value_range[1]
        step = cast(hi - lo, _dt.float64) / constant(float(nbins), dtype=_dt.float64)
        offset = cast(maximum(values, lo) - lo, _dt.float64) / step
        capped = apply_op("Minimum", [offset, constant(float(nbins - 1), _dt.float64)]).outputs[0]
        bins = _array.reshape(cast(capped, _dt.int32), [-1])
        empty = constant(np.zeros(0, _dt.as_dtype(dtype).np))
        size = constant(nbins, dtype=_dt.int32)
        return apply_op("Bincount", [bins, size, empty], name=scope).outputs[0]


# -- confusion matrix -----------------------------------------------------------------------------
def confusion_matrix(
    labels: Any,
    predictions: Any,
    num_classes: Any = None,
    weights: Any = None,
    dtype: Any = _dt.int32,
    name: str | None = None,
) -> Tensor:
    """`tf.confusion_matrix`: counts (or summed weights) of each (label, prediction) pair in
    a [num_classes, num_classes] matrix, labels along the rows. num_classes defaults to the
    largest label or prediction plus one, which then must be known when compiling. A label or
    prediction outside [0, num_classes) fails the run (TF's assertions)."""
    with name_scope(name, "confusion_matrix") as scope:
        labels = cast(convert_to_tensor(labels, name="labels"), _dt.int32)
        predictions = cast(convert_to_tensor(predictions, name="predictions"), _dt.int32)
        if num_classes is None:
            flat = [_array.reshape(t, [-1]) for t in (labels, predictions)]
            n = maximum(_largest(flat[0]), _largest(flat[1])) + 1
        else:
            n = cast(convert_to_tensor(num_classes), _dt.int32)
        zero = constant(0, dtype=_dt.int32)
        inside = logical_and(
            logical_and(greater_equal(labels, zero), greater(n, labels)),
            logical_and(greater_equal(predictions, zero), greater(n, predictions)),
        )
        # a pair outside the matrix gets the id n * n, which the segment sum refuses
        cells = select(inside, labels * n + predictions, n * n)
        if weights is None:
            values = _array.ones_like(predictions, dtype=dtype)
        else:
            values = cast(convert_to_tensor(weights, name="weights"), dtype)
        counts = unsorted_segment_sum(values, cells, n * n)
        return _array.reshape(counts, _array.stack([n, n]), name=scope)
