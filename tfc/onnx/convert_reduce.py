"""ONNX reductions and what is computed along an axis: Reduce*, ArgMax/ArgMin, TopK, CumSum, the
determinant, and the loss operators (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.nn as _nn
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, channels_last_perm, converter
from tfc.ops.argminmax import argmax, argmin
from tfc.ops.constant import constant
from tfc.ops.linalg_solve import matrix_determinant
from tfc.ops.scan import cumprod, cumsum
from tfc.ops.topk import top_k


def _reduction_axes(ctx: NodeContext, attr_until: int) -> list[int] | None:
    """The axes to reduce (None: all), from the attribute before opset `attr_until` and the
    optional second input after it."""
    if ctx.opset < attr_until:
        axes = ctx.attr("axes")
    elif ctx.has_input(1):
        axes = ctx.require_const(1, "axes")
    else:
        axes = None
    if axes is None:
        return None
    return [int(a) for a in np.asarray(axes).reshape(-1)]


def _reduce_op(
    fn: Callable[[Tensor, list[int], bool], Tensor], attr_until: int
) -> Callable[[NodeContext], list]:
    def convert(ctx: NodeContext) -> list:
        x = ctx.input(0)
        rank = ctx.rank(0)
        keep = bool(ctx.attr("keepdims", 1))
        axes = _reduction_axes(ctx, attr_until)
        if not axes:
            if axes is not None and ctx.attr("noop_with_empty_axes", 0):
                return [_array.identity(x)]
            if ctx.attr("noop_with_empty_axes", 0) and axes is None:
                return [_array.identity(x)]
            axes = list(range(rank))
        axes = sorted({a + rank if a < 0 else a for a in axes})
        if x.dtype == _dt.bool_:  # ReduceMax/Min of booleans: any/all, computed on 0 and 1
            ints = fn(_math.cast(x, _dt.int32), axes, keep)
            # > 0, not a cast: an empty max is int32's lowest, which must read False
            return [_logic.greater(ints, constant(np.int32(0)))]
        twin = ctx.twin(x)
        if twin is not None and keep:
            perm = channels_last_perm(rank)
            return [ctx.channels_first(fn(twin, [perm.index(a) for a in axes], True))]
        return [fn(x, axes, keep)]

    return convert


def _sum(x: Tensor, axes: list[int], keep: bool) -> Tensor:
    return _reduce.reduce_sum(x, axes, keepdims=keep)


def _log_sum_exp(x: Tensor, axes: list[int], keep: bool) -> Tensor:
    # the maximum keeps exp() finite; an all -inf slice gives -inf, as ONNX's reference does
    top = _reduce.reduce_max(x, axes, keepdims=True)
    finite = _logic.where(_logic.is_finite(top), top, _array.zeros_like(top))
    total = _reduce.reduce_sum(_math.exp(_math.subtract(x, finite)), axes, keepdims=True)
    result = _math.add(_math.log(total), finite)
    return result if keep else _array.squeeze(result, axes)


for _op, _fn, _until in [
    ("ReduceSum", _sum, 13),
    ("ReduceMean", lambda x, a, k: _reduce.reduce_mean(x, a, keepdims=k), 18),
    ("ReduceMax", lambda x, a, k: _reduce.reduce_max(x, a, keepdims=k), 18),
    ("ReduceMin", lambda x, a, k: _reduce.reduce_min(x, a, keepdims=k), 18),
    ("ReduceProd", lambda x, a, k: _reduce.reduce_prod(x, a, keepdims=k), 18),
    ("ReduceL1", lambda x, a, k: _sum(_math.abs(x), a, k), 18),
    ("ReduceL2", lambda x, a, k: _math.sqrt(_sum(_math.square(x), a, k)), 18),
    ("ReduceSumSquare", lambda x, a, k: _sum(_math.square(x), a, k), 18),
    ("ReduceLogSum", lambda x, a, k: _math.log(_sum(x, a, k)), 18),
    ("ReduceLogSumExp", _log_sum_exp, 18),
]:
    converter(_op)(_reduce_op(_fn, _until))


# -- arg max / min -------------------------------------------------------------------------------
def _arg(fn: Callable[..., Tensor]) -> Callable[[NodeContext], list]:
    def convert(ctx: NodeContext) -> list:
        x = ctx.input(0)
        rank = ctx.rank(0)
        axis = ctx.attr("axis", 0)
        axis = axis + rank if axis < 0 else axis
        if ctx.attr("select_last_index", 0):
            dim = x._shape_tuple[axis]
            if dim is None:
                raise ctx.error("select_last_index needs the size of the axis")
            flipped = _array.gather(
                x, constant(np.arange(dim - 1, -1, -1, dtype=np.int64)), axis=axis
            )
            index = _math.subtract(constant(dim - 1, dtype=_dt.int64), fn(flipped, axis=axis))
        else:
            index = fn(x, axis=axis)
        if ctx.attr("keepdims", 1):
            index = _array.expand_dims(index, axis)
        return [index]

    return convert


converter("ArgMax")(_arg(argmax))
converter("ArgMin")(_arg(argmin))


# -- TopK ----------------------------------------------------------------------------------------
@converter("TopK")
def _top_k(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    if ctx.opset < 10:
        k = int(ctx.attr("k"))
    else:
        k = int(np.asarray(ctx.require_const(1, "K")).reshape(-1)[0])
    axis = ctx.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    largest = bool(ctx.attr("largest", 1))
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = x if axis == rank - 1 else _array.transpose(x, perm)
    if not largest:
        if not x.dtype.is_floating:
            raise ctx.error("tfc finds the smallest k of float tensors only")
        moved = _math.negative(moved)
    values, indices = top_k(moved, k, sorted=True)
    if not largest:
        values = _math.negative(values)
    indices = _math.cast(indices, _dt.int64)
    if axis != rank - 1:
        values, indices = _array.transpose(values, perm), _array.transpose(indices, perm)
    return [values, indices]


# -- CumSum, Det ---------------------------------------------------------------------------------
@converter("CumSum", "CumProd")
def _cumulative(ctx: NodeContext) -> list:
    x = ctx.input(0)
    axis = int(np.asarray(ctx.require_const(1, "axis")).reshape(-1)[0])
    fn = cumsum if ctx.op_type == "CumSum" else cumprod
    return [
        fn(x, axis, exclusive=bool(ctx.attr("exclusive", 0)), reverse=bool(ctx.attr("reverse", 0)))
    ]


@converter("Det")
def _det(ctx: NodeContext) -> list:
    return [matrix_determinant(ctx.input(0))]


# -- losses --------------------------------------------------------------------------------------
def _nll(ctx: NodeContext, log_prob: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
    """ONNX's NegativeLogLikelihoodLoss of log-probabilities (N, C, d...) and targets (N, d...)."""
    shape = log_prob._shape_tuple
    if shape is None or shape[1] is None:
        raise ctx.error("the number of classes must be known when the model is imported")
    classes = shape[1]
    reduction = ctx.attr("reduction", "mean")
    ignore = ctx.attr("ignore_index")
    target = _math.cast(target, _dt.int64)
    keep = None
    if ignore is not None:
        keep = _logic.not_equal(target, constant(ignore, dtype=_dt.int64))
        target = _logic.where(keep, target, _array.zeros_like(target))
    # pick log_prob[n, target[n, d...], d...]: a one-hot over the class axis
    chosen = _array.one_hot(target, classes, axis=1, dtype=log_prob.dtype)
    loss = _math.negative(_reduce.reduce_sum(_math.multiply(log_prob, chosen), [1]))
    w = None
    if weight is not None:
        w = _array.gather(weight, target)
    if keep is not None:
        mask = _math.cast(keep, log_prob.dtype)
        w = mask if w is None else _math.multiply(w, mask)
    if w is not None:
        loss = _math.multiply(loss, w)
    if reduction == "none":
        return loss
    total = _reduce.reduce_sum(loss)
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise ctx.error(f"unknown reduction {reduction!r}")
    if w is None:
        return _reduce.reduce_mean(loss)
    return _math.truediv(total, _reduce.reduce_sum(w))


@converter("NegativeLogLikelihoodLoss")
def _negative_log_likelihood_loss(ctx: NodeContext) -> list:
    return [_nll(ctx, ctx.input(0), ctx.input(1), ctx.optional(2))]


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy_loss(ctx: NodeContext) -> list:
    scores = ctx.input(0)
    log_prob = _nn.log_softmax(scores, axis=1)
    loss = _nll(ctx, log_prob, ctx.input(1), ctx.optional(2))
    return [loss, log_prob]
