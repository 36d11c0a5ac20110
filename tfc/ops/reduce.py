"""Reductions over compile-time axes: Sum, Mean, Max, Min, Prod, All, Any, ArgMax, ArgMin."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ops.array_common import axis_tensor, pick_argument
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import per_input_element
from tfc.ops.grad_ops import broadcast_to, kept_dims_shape, select, static_shape
from tfc.ops.kernels import (
    Kernel,
    c_literal,
    format_expr,
    loop_kernel,
    reduce_kernel,
    table_entry,
    view,
)
from tfc.ops.registry import HALVES_IN_FLOAT32, OpContext, OpDef, apply_op, check_dtype, register

__all__ = [
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_all",
    "reduce_any",
    "count_nonzero",
    "reduce_logsumexp",
    "is_non_decreasing",
    "is_strictly_increasing",
]

_NUMERIC = _dt.NUMERIC
_INDEX = (_dt.int32, _dt.int64)


# -- shape rule shared by every reduction -------------------------------------------------------
def reduction_axes(ctx: OpContext, value: np.ndarray, rank: int) -> list[int]:
    """The axes of `value` in [0, rank), in the order given; TF's errors for bad ones."""
    axes = []
    for raw in np.asarray(value).reshape(-1).tolist():
        if not -rank <= raw < rank:
            raise ctx.error(f"Invalid reduction dimension {raw} for input with {rank} dimensions.")
        axis = raw + rank if raw < 0 else raw
        if axis in axes:
            raise ctx.error(
                f"Invalid reduction arguments: Axes contains duplicate dimension: {axis}"
            )
        axes.append(axis)
    return axes


def _reduce_infer(allowed: tuple[_dt.DType, ...]) -> Callable[[OpContext], list]:
    def infer(ctx: OpContext) -> list:
        check_dtype(ctx, 0, allowed, "input")
        check_dtype(ctx, 1, _INDEX, "reduction_indices")
        dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
        axes_shape = ctx.in_shapes[1]
        if axes_shape is not None and len(axes_shape) > 1:
            raise ctx.error(f"Shape must be at most rank 1 but is rank {len(axes_shape)}")
        keep = ctx.attrs.get("keep_dims", False)
        value = ctx.const(1)
        if value is None:
            if axes_shape == (0,):
                return [(dtype, shape)]  # no axes: the identity, whatever they turn out to be
            if keep and shape is not None:
                return [(dtype, (None,) * len(shape))]
            return [(dtype, None)]
        if shape is None:
            return [(dtype, None)]
        axes = reduction_axes(ctx, value, len(shape))
        if keep:
            return [(dtype, tuple(1 if k in axes else d for k, d in enumerate(shape)))]
        return [(dtype, tuple(d for k, d in enumerate(shape) if k not in axes))]

    return infer


def _axes_of(ctx: OpContext) -> list[int]:
    value = ctx.require_const(1, "reduction axes")
    return reduction_axes(ctx, value, len(ctx.in_shapes[0]))


def _reduced_count(ctx: OpContext, axes: list[int]) -> int:
    return math.prod(ctx.in_shapes[0][k] for k in axes)


# -- the reductions as data: C combine/init/finalize and the NumPy definition --------------------
@dataclass(frozen=True)
class Reduction:
    """One reduction: its C accumulation per dtype kind and its NumPy reference.

    `combine` maps a dtype kind to a format_expr template of {a} (accumulator) and {b} (element);
    `identity(dtype)` is the value of an empty reduction before `finalize`.
    """

    combine: dict
    identity: Callable[[_dt.DType], Any]
    numpy: Callable[[np.ndarray, tuple, bool], np.ndarray]
    allowed: tuple[_dt.DType, ...] = _NUMERIC
    wide_float32: bool = False  # float32 sums accumulate in double when the loop allows it
    empty: Callable[[_dt.DType], Any] | None = None  # an empty reduction, when not the identity


def _lowest(dtype: _dt.DType) -> Any:
    return -np.inf if dtype.is_floating else dtype.min


def _highest(dtype: _dt.DType) -> Any:
    return np.inf if dtype.is_floating else dtype.max


def _np_sum(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
    # float32 is summed in double, the precision the kernel's accumulator has; ints wrap
    acc = np.float64 if x.dtype == np.float32 else x.dtype
    return np.sum(x, axis=axes, dtype=acc, keepdims=keep).astype(x.dtype)


def _np_mean(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
    count = math.prod(x.shape[k] for k in axes)
    wide = _mean_computes_in(_dt.as_dtype(x.dtype))
    if wide.size > x.dtype.itemsize:  # TF sums integers of up to 32 bits in 64 bits
        return _np_mean(x.astype(wide.np), axes, keep).astype(x.dtype)
    if x.dtype.kind == "f":
        acc = np.float64 if x.dtype == np.float32 else x.dtype
        total = np.sum(x, axis=axes, dtype=acc, keepdims=keep)
        return (total / count if count else np.full_like(total, np.nan)).astype(x.dtype)
    total = _np_sum(x, axes, keep)
    if count == 0:
        return np.zeros_like(total)  # TF's identity of an empty integer mean
    # C division truncates toward zero; floor division then a step back up for negatives
    floor = total // count
    return np.where((floor * count != total) & (total < 0), floor + 1, floor).astype(x.dtype)


def _np_extreme(fn: Callable, identity: Callable) -> Callable:
    def reference(x: np.ndarray, axes: tuple, keep: bool) -> np.ndarray:
        if math.prod(x.shape[k] for k in axes) == 0:
            shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape))
            full = np.full(shape, identity(_dt.as_dtype(x.dtype)), dtype=x.dtype)
            return (
                full if keep else full.reshape([d for k, d in enumerate(x.shape) if k not in axes])
            )
        return fn(x, axis=axes, keepdims=keep)

    return reference


def _mean_computes_in(dtype: _dt.DType) -> _dt.DType:
    """Mean sums integers of up to 32 bits in 64 bits (as TF does: their mean cannot
    overflow), the 16-bit floats in float32."""
    if dtype.is_integer and dtype.size <= 4:
        return _dt.uint64 if dtype.is_unsigned else _dt.int64
    return dtype.compute


_ADD = {"f": "{a} + {b}", "i": "tfc_add_{tag}({a}, {b})", "c": "tfc_add_{tag}({a}, {b})"}
REDUCTIONS = {
    "Sum": Reduction(
        _ADD, lambda d: 0, _np_sum, allowed=(*_NUMERIC, *_dt.COMPLEX), wide_float32=True
    ),
    # a mean of nothing is 0/0: NaN for floats; TF gives 0 for integers
    "Mean": Reduction(
        _ADD,
        lambda d: 0,
        _np_mean,
        wide_float32=True,
        empty=lambda d: np.nan if d.is_floating else 0,
    ),
    "Prod": Reduction(
        {"f": "{a} * {b}", "i": "tfc_mul_{tag}({a}, {b})"},
        lambda d: 1,
        lambda x, axes, keep: np.prod(x, axis=axes, dtype=x.dtype, keepdims=keep),
    ),
    # float max/min propagate NaN, as NumPy and tfc's Maximum/Minimum do
    "Max": Reduction(
        {"f": "tfc_max_{tag}({a}, {b})", "i": "({a} > {b} ? {a} : {b})"},
        _lowest,
        _np_extreme(np.max, _lowest),
    ),
    "Min": Reduction(
        {"f": "tfc_min_{tag}({a}, {b})", "i": "({a} < {b} ? {a} : {b})"},
        _highest,
        _np_extreme(np.min, _highest),
    ),
    "All": Reduction(
        {"b": "({a} && {b})"},
        lambda d: True,
        lambda x, axes, keep: np.all(x, axis=axes, keepdims=keep),
        allowed=(_dt.bool_,),
    ),
    "Any": Reduction(
        {"b": "({a} || {b})"},
        lambda d: False,
        lambda x, axes, keep: np.any(x, axis=axes, keepdims=keep),
        allowed=(_dt.bool_,),
    ),
}


def _reduce_reference(ctx: OpContext, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    axes_tuple = tuple(reduction_axes(ctx, axes, x.ndim))
    keep = ctx.attrs.get("keep_dims", False)
    with np.errstate(all="ignore"):
        result = REDUCTIONS[ctx.type].numpy(x, axes_tuple, keep)
    return np.asarray(result, dtype=x.dtype)


def mean_finalize(dtype: _dt.DType, count: int) -> str | None:
    """The C expression of {a} turning a sum of `count` values into their mean (None for 1)."""
    if count == 1:
        return None
    if dtype.is_floating:
        return f"{{a}} / {c_literal(count, dtype)}"
    return f"({dtype.c_type})({{a}} / {c_literal(count, dtype)})"  # count > 0: cannot overflow


def _reduce_lower(ctx: OpContext) -> list[Kernel]:
    spec = REDUCTIONS[ctx.type]
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    axes = _axes_of(ctx)
    out = view("out0", dtype, ctx.out_shapes[0])
    count = _reduced_count(ctx, axes)
    if count == 0:
        # nothing to read (the input may be an empty, NULL buffer): every output is the identity
        value = spec.empty(dtype) if spec.empty else spec.identity(dtype)
        return loop_kernel(ctx.out_shapes[0], out, [], c_literal(value, dtype))
    combine = format_expr(table_entry(spec.combine, dtype), dtype, a="{a}", b="{b}")
    finalize = mean_finalize(dtype, count) if ctx.type == "Mean" else None
    acc = _dt.float64 if spec.wide_float32 and dtype is _dt.float32 else None
    return reduce_kernel(
        shape,
        axes,
        view("in0", dtype, shape),
        out,
        combine,
        c_literal(spec.identity(dtype), dtype),
        finalize,
        acc,
    )


# -- gradients: dy back at the reduced elements -------------------------------------------------
def _kept(op: Operation, t: Tensor) -> Tensor:
    """The reduction's output (or its gradient) t with the reduced dims back, as size 1."""
    if op.get_attr("keep_dims"):
        return t
    return apply_op("Reshape", [t, kept_dims_shape(*op.inputs)], name="Reshape").outputs[0]


def _sum_grad(op: Operation, dy: Tensor) -> list:
    return [broadcast_to(_kept(op, dy), op.inputs[0]), None]


def _mean_grad(op: Operation, dy: Tensor) -> list:
    x, y = op.inputs[0], op.outputs[0]
    size_x, size_y = (_size(t) for t in (x, y))
    # TF's safe division: an empty output divides by 1
    size_y = max(size_y, 1) if isinstance(size_y, int) else _math.maximum(size_y, 1)
    count = size_x // size_y
    if isinstance(count, int):
        count = constant(count, dtype=dy.dtype)
    else:
        count = _math.cast(count, dy.dtype)
    return [broadcast_to(_kept(op, dy / count), x), None]


def _size(t: Tensor) -> Any:
    """t's number of elements: an int when static, else a Size op (a Const once compiled)."""
    shape = static_shape(t)
    if shape is not None:
        return math.prod(shape)
    return apply_op("Size", [t], {"out_type": _dt.int32}).outputs[0]


def _extremum_grad(op: Operation, dy: Tensor) -> list:
    """Max/Min: dy shared equally by the elements equal to the extreme (TF's rule for ties)."""
    x, axes = op.inputs
    chosen = _math.cast(_logic.equal(_kept(op, op.outputs[0]), x), dy.dtype)
    count = apply_op("Sum", [chosen, axes], {"keep_dims": True}).outputs[0]
    return [chosen / count * _kept(op, dy), None]


def _prod_grad(op: Operation, dy: Tensor) -> list:
    """d prod / dx_i is the product of the others: y / x_i, or where x_i is 0, the product of
    the non-zero others when x_i is the only zero (else 0). Exact with zeros, no cumprod."""
    x, axes = op.inputs
    zero = _logic.equal(x, constant(0, dtype=x.dtype))
    safe = select(zero, constant(1, dtype=x.dtype), x)
    keep = {"keep_dims": True}
    others_nonzero = apply_op("Prod", [safe, axes], keep).outputs[0]
    zeros = apply_op("Sum", [_math.cast(zero, x.dtype), axes], keep).outputs[0]
    lone = select(_logic.equal(zeros, constant(1, dtype=x.dtype)), others_nonzero, 0)
    others = select(zero, lone, _kept(op, op.outputs[0]) / safe)
    return [_kept(op, dy) * others, None]


_GRADS = {
    "Sum": _sum_grad,
    "Mean": _mean_grad,
    "Prod": _prod_grad,
    "Max": _extremum_grad,
    "Min": _extremum_grad,
}
for _type, _spec in REDUCTIONS.items():
    register(
        OpDef(
            _type,
            infer=_reduce_infer(_spec.allowed),
            reference=_reduce_reference,
            lower=_reduce_lower,
            flops=per_input_element(1),
            grad=_GRADS.get(_type),
            const_inputs=(1,),
            input_names=("input", "reduction_indices"),
            differentiable=_type in _GRADS,  # All and Any work on bools
            dtypes=tuple(d for d in _spec.allowed if d not in _dt.CORE),
            computes_in=_mean_computes_in if _type == "Mean" else HALVES_IN_FLOAT32,
        )
    )


# -- frontends ----------------------------------------------------------------------------------
def _reduce(
    op_type: str,
    input_tensor: Any,
    axis: Any,
    keepdims: Any,
    name: str | None,
    reduction_indices: Any,
    keep_dims: Any,
) -> Tensor:
    axis = pick_argument(axis, "axis", reduction_indices, "reduction_indices")
    keep = bool(pick_argument(keepdims, "keepdims", keep_dims, "keep_dims") or False)
    x = convert_to_tensor(input_tensor)
    if axis is None and x._shape_tuple is None:
        return _reduce_unknown_rank(op_type, x, keep, name)
    if axis is None:
        axes = constant(np.arange(len(x._shape_tuple), dtype=np.int32))
    else:
        axes = axis_tensor(axis)
    return apply_op(op_type, [x, axes], {"keep_dims": keep}, name=name or op_type).outputs[0]


def _reduce_unknown_rank(op_type: str, x: Tensor, keep: bool, name: str | None) -> Tensor:
    """axis=None on a tensor whose rank is not known yet. TF1 reduces over range(rank(x));
    reducing the flattened tensor over its one axis visits the same elements in the same
    order, and needs no Range op. keepdims restores rank(x) ones once the rank is known."""
    flat = _array.reshape(x, [-1])
    axes = constant(np.zeros(1, dtype=np.int32))
    attrs = {"keep_dims": False}
    if not keep:
        return apply_op(op_type, [flat, axes], attrs, name=name or op_type).outputs[0]
    total = apply_op(op_type, [flat, axes], attrs).outputs[0]
    return _array.reshape(total, _array.ones_like(_array.shape(x)), name=name)


def _reduction_frontend(op_type: str, fn_name: str, what: str) -> Callable[..., Tensor]:
    def fn(
        input_tensor: Any,
        axis: Any = None,
        keepdims: bool | None = None,
        name: str | None = None,
        reduction_indices: Any = None,
        keep_dims: bool | None = None,
    ) -> Tensor:
        return _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)

    fn.__name__ = fn.__qualname__ = fn_name
    fn.__doc__ = (
        f"`tf.{fn_name}`: the {what} of the elements along `axis` (all axes when None); "
        "the reduced dims are dropped, or kept with size 1 when `keepdims`."
    )
    return fn


reduce_sum = _reduction_frontend("Sum", "reduce_sum", "sum (integers wrap)")
reduce_mean = _reduction_frontend(
    "Mean", "reduce_mean", "mean (integers: the sum divided by the count, truncated toward zero)"
)
reduce_max = _reduction_frontend("Max", "reduce_max", "maximum (-inf or the lowest when empty)")
reduce_min = _reduction_frontend("Min", "reduce_min", "minimum (+inf or the highest when empty)")
reduce_prod = _reduction_frontend("Prod", "reduce_prod", "product (integers wrap)")
reduce_all = _reduction_frontend("All", "reduce_all", "logical and")
reduce_any = _reduction_frontend("Any", "reduce_any", "logical or")


def count_nonzero(
    input_tensor: Any = None,
    axis: Any = None,
    keepdims: bool | None = None,
    dtype: Any = _dt.int64,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
    input: Any = None,  # noqa: A002  (TF1 later renamed input_tensor to input)
) -> Tensor:
    """`tf.count_nonzero`: how many elements along `axis` are not zero (not False)."""
    input_tensor = pick_argument(input_tensor, "input_tensor", input, "input")
    with name_scope(name, "count_nonzero"):
        x = convert_to_tensor(input_tensor)
        nonzero = _logic.not_equal(x, constant(0, dtype=x.dtype))
        counts = _reduce(
            "Sum",
            _math.cast(nonzero, _dt.int64),
            axis,
            keepdims,
            None,
            reduction_indices,
            keep_dims,
        )
        return _math.cast(counts, dtype)


def reduce_logsumexp(
    input_tensor: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """`tf.reduce_logsumexp`: log(sum(exp(x))) along `axis`, computed stably as TF does: the
    maximum (0 where it is not finite, and held constant for the gradient) is taken out
    before exp and added back after log."""
    axis = pick_argument(axis, "axis", reduction_indices, "reduction_indices")
    keep = bool(pick_argument(keepdims, "keepdims", keep_dims, "keep_dims") or False)
    with name_scope(name, "ReduceLogSumExp") as scope:
        x = convert_to_tensor(input_tensor)
        raw_max = _reduce("Max", x, axis, True, None, None, None)
        finite = apply_op("IsFinite", [raw_max]).outputs[0]
        shift = _array.stop_gradient(select(finite, raw_max, 0))
        summed = _reduce("Sum", _math.exp(x - shift), axis, keep, None, None, None)
        if not keep:
            shift = _array.reshape(shift, _array.shape(summed))
        return _math.add(_math.log(summed), shift, name=scope)


def reduce_euclidean_norm(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """`tf.math.reduce_euclidean_norm`: sqrt(sum(x ** 2)) along `axis` (integers: the root
    truncated, in x's dtype)."""
    with name_scope(name, "EuclideanNorm") as scope:
        x = convert_to_tensor(input_tensor)
        squares = _reduce("Sum", _math.square(x), axis, keepdims, None, None, None)
        if x.dtype.is_floating:
            return _math.sqrt(squares, name=scope)
        return _math.cast(_math.sqrt(_math.cast(squares, _dt.float64)), x.dtype, name=scope)


def _moments_deviation(x: Tensor, axis: Any) -> Tensor:
    """(x - mean(x, axis)) ** 2, the mean kept broadcastable."""
    mean = _reduce("Mean", x, axis, True, None, None, None)
    return _math.square(x - mean)


def reduce_variance(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """`tf.math.reduce_variance`: the mean of the squared deviations from the mean along
    `axis` (floats only)."""
    with name_scope(name, "reduce_variance") as scope:
        x = convert_to_tensor(input_tensor)
        if not x.dtype.is_floating:
            raise TypeError(f"reduce_variance needs a float tensor, got {x.dtype.name}")
        return _reduce("Mean", _moments_deviation(x, axis), axis, keepdims, scope, None, None)


def reduce_std(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """`tf.math.reduce_std`: the square root of reduce_variance."""
    with name_scope(name, "reduce_std") as scope:
        return _math.sqrt(reduce_variance(input_tensor, axis, keepdims), name=scope)


def _monotone(x: Any, op_type: str, name: str | None, default: str) -> Tensor:
    with name_scope(name, default) as scope:
        flat = _array.reshape(convert_to_tensor(x), [-1])
        if not (flat.dtype.is_floating or flat.dtype.is_integer):
            raise TypeError(f"Expected a numeric tensor, got {flat.dtype.name}")
        pairs = apply_op(op_type, [flat[1:], flat[:-1]]).outputs[0]
        return _reduce("All", pairs, None, False, scope, None, None)


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """`tf.is_non_decreasing`: whether x (flattened) never decreases; True for < 2 elements."""
    return _monotone(x, "GreaterEqual", name, "is_non_decreasing")


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """`tf.is_strictly_increasing`: whether x (flattened) always increases; True for < 2
    elements."""
    return _monotone(x, "Greater", name, "is_strictly_increasing")
