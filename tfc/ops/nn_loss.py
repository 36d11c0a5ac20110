"""`tf.nn` losses: softmax, sparse softmax, sigmoid and weighted cross-entropy, l2_loss,
log_poisson_loss, and the averaging helpers compute_average_loss, scale_regularization_loss."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ir.tensor_shape import TensorShape, merge_shapes, num_elements, shape_str
from tfc.ops.constant import convert_to_tensor, is_tensor_like
from tfc.ops.flops import per_input_element
from tfc.ops.kernels import Kernel, Param, RowSpec, c_literal, format_expr
from tfc.ops.logic import greater_equal, less_equal, logical_and, where
from tfc.ops.math import abs as abs_value
from tfc.ops.math import (
    add,
    cast,
    exp,
    log,
    log1p,
    maximum,
    multiply,
    negative,
    square,
    subtract,
)
from tfc.ops.nn import log_softmax
from tfc.ops.reduce import reduce_sum
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    constant_value,
    register,
)

__all__ = [
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "sigmoid_cross_entropy_with_logits",
    "l2_loss",
    "weighted_cross_entropy_with_logits",
    "log_poisson_loss",
    "compute_average_loss",
    "scale_regularization_loss",
]

_FLOATS = _dt.FLOATS  # the 16-bit floats run in float32 (OpDef.computes_in)
_LABEL_DTYPES = (_dt.int32, _dt.int64)
_LABELS_SHOWN = 10  # label values listed in the out-of-range error, then "..."


def _ensure_xent_args(name: str, sentinel: Any, labels: Any, logits: Any) -> None:
    """TF1's guard: these functions take labels and logits by keyword only."""
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _float_logits(logits: Any, op_type: str) -> Tensor:
    logits = convert_to_tensor(logits, name="logits")
    if logits.dtype not in _FLOATS:
        raise TypeError(
            f"Value passed to parameter 'features' has DataType {logits.dtype.name} not in list "
            f"of allowed values: float32, float64 (op of type {op_type})"
        )
    return logits


def _labels_like(labels: Any, logits: Tensor) -> Tensor:
    """Labels in the logits' dtype: Python values convert to it, tensors are cast (as TF does)."""
    if not is_tensor_like(labels):
        return convert_to_tensor(labels, dtype=logits.dtype, name="labels")
    return cast(convert_to_tensor(labels, name="labels"), logits.dtype)


# -- softmax cross-entropy ------------------------------------------------------------------------
def _broadcast_or_raise(logits: Tensor, labels: Tensor, node: str) -> None:
    """TF's shape-function error when labels cannot broadcast against logits."""
    a, b = logits._shape_tuple, labels._shape_tuple
    if a is None or b is None:
        return
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    for x, y in zip(pa, pb):
        if x is not None and y is not None and x != y and x != 1 and y != 1:
            raise ValueError(
                f"Dimensions must be equal, but are {x} and {y} for '{node}' (op: "
                f"'SoftmaxCrossEntropyWithLogits') with input shapes: {shape_str(a)}, "
                f"{shape_str(b)}."
            )


def softmax_cross_entropy_with_logits_v2(
    labels: Any,
    logits: Any,
    axis: int | None = None,
    name: str | None = None,
    dim: int | None = None,
) -> Tensor:
    """`tf.nn.softmax_cross_entropy_with_logits_v2`: -sum(labels * log_softmax(logits), axis).

    Each slice of `labels` along `axis` is a probability distribution; gradients flow into
    both logits and labels. Built from LogSoftmax (stable for any finite logits), Mul, Sum
    and Neg, so its gradients are theirs. The result has the logits' shape without `axis`.
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = -1 if axis is None and dim is None else int(dim if axis is None else axis)
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = _float_logits(logits, "SoftmaxCrossEntropyWithLogits")
        labels = _labels_like(labels, logits)
        _broadcast_or_raise(logits, labels, scope.rstrip("/"))
        log_probs = log_softmax(logits, axis=axis)
        return negative(reduce_sum(multiply(labels, log_probs), axis=axis), name=scope)


def softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: Any = None,
    logits: Any = None,
    dim: int = -1,
    name: str | None = None,
    axis: int | None = None,
) -> Tensor:
    """`tf.nn.softmax_cross_entropy_with_logits`, with the v2 semantics: gradients also flow
    into `labels` (wrap them in tf.stop_gradient for TF1's v1 behaviour)."""
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    if axis is not None and dim not in (None, -1):
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    return softmax_cross_entropy_with_logits_v2(
        labels=labels, logits=logits, axis=dim if axis is None else axis, name=name
    )


# -- SparseSoftmaxCrossEntropyWithLogits: one fused kernel ----------------------------------------
# Fused because it validates the labels as TF's CPU kernel does (a label outside [0, classes)
# fails the run) and reads each logit row once, never materializing a one-hot matrix.
def _sparse_xent_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _FLOATS, "features")
    check_dtype(ctx, 1, _LABEL_DTYPES, "labels")
    features, labels = ctx.in_shapes
    if features is not None and len(features) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    if features is None or labels is None:
        rows = None if labels is None else labels
        return [(ctx.in_dtypes[0], rows), (ctx.in_dtypes[0], features)]
    if len(labels) != len(features) - 1:
        raise ctx.error(f"Shape must be rank {len(features) - 1} but is rank {len(labels)}")
    rows = merge_shapes(tuple(features[:-1]), tuple(labels))
    if rows is False:
        raise ctx.error(
            f"Dimensions must be equal, but are {shape_str(features[:-1])} and {shape_str(labels)}"
        )
    return [(ctx.in_dtypes[0], rows), (ctx.in_dtypes[0], tuple(rows) + (features[-1],))]


def label_range_message(labels: np.ndarray, classes: int) -> str | None:
    """TF's error for labels outside [0, classes) (the lowest if negative, else the highest)."""
    flat = np.ravel(labels)
    if flat.size == 0:
        return None
    low, high = int(flat.min()), int(flat.max())
    if low >= 0 and high < classes:
        return None
    shown = " ".join(str(int(v)) for v in flat[:_LABELS_SHOWN])
    more = " ..." if flat.size > _LABELS_SHOWN else ""
    return (
        f"Received a label value of {low if low < 0 else high} which is outside the valid range "
        f"of [0, {classes}).  Label values: {shown}{more}"
    )


def _sparse_xent_reference(ctx: OpContext, features: np.ndarray, labels: np.ndarray) -> list:
    message = label_range_message(labels, features.shape[-1])
    if message is not None:
        raise errors.InvalidArgumentError(None, None, message)
    if labels.size == 0:
        return [np.zeros(labels.shape, features.dtype), np.zeros(features.shape, features.dtype)]
    with np.errstate(all="ignore"):
        shifted = features - features.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        total = e.sum(axis=-1, keepdims=True)
        picked = np.take_along_axis(shifted, labels[..., None].astype(np.int64), axis=-1)
        loss = (np.log(total) - picked)[..., 0]
        hot = np.arange(features.shape[-1]) == labels[..., None]
        backprop = e / total - hot.astype(features.dtype)
    return [loss.astype(features.dtype), backprop.astype(features.dtype)]


def _sparse_xent_lower(ctx: OpContext) -> list:
    dtype = ctx.in_dtypes[0]
    rows, classes = num_elements(ctx.in_shapes[1]), ctx.in_shapes[0][-1]
    if rows == 0:
        return []
    label_ctype = ctx.in_dtypes[1].c_type
    params = [
        Param("loss", dtype.c_type, False, "out0"),
        Param("backprop", dtype.c_type, False, "out1"),
        Param("x0", dtype.c_type, True, "in0"),
        Param("labels", label_ctype, True, "in1"),
    ]
    exprs = {
        "shown": min(rows, _LABELS_SHOWN),  # labels the error message lists, then `more`
        "more": " ..." if rows > _LABELS_SHOWN else "",
        "max": format_expr("tfc_max_{tag}(m, xr[j])", dtype),
        "exp": format_expr("exp{sfx}(xr[j] - m)", dtype),
        "log": format_expr("log{sfx}(s)", dtype),
        "one": c_literal(1, dtype),
    }
    spec = RowSpec(dtype, rows, classes, exprs)
    return [Kernel("sparse_xent", params, spec, can_fail=True)]


_SECOND_DERIVATIVE = (
    "Gradient explicitly disabled. Reason: Currently there is no way to take the second "
    "derivative of sparse_softmax_cross_entropy_with_logits due to the fused implementation's "
    "interaction with tf.gradients()"
)


def _is_zeros(t: Tensor) -> bool:
    """Whether `t` is the zeros tf.gradients hands a rule for an output nothing flowed into."""
    if t.op.type == "ZerosLike":
        return True
    if t.op.type != "Fill":
        return False
    value = t.op.inputs[1]
    known = constant_value(value.graph, (value.op.name, value.value_index))
    return known is not None and not np.any(known)


def _sparse_xent_grad(op: Operation, dloss: Tensor | None, dbackprop: Tensor | None) -> list:
    """d loss / d logits is the backprop output (softmax - one_hot); labels get none.

    A gradient flowing into the backprop output means a second derivative, which the fused
    op does not give: it fails as in TF rather than being silently dropped.
    """
    if dbackprop is not None and not _is_zeros(dbackprop):
        raise LookupError(_SECOND_DERIVATIVE)
    if dloss is None:
        return [None, None]
    return [multiply(_array.expand_dims(dloss, -1), op.outputs[1]), None]


register(
    OpDef(
        "SparseSoftmaxCrossEntropyWithLogits",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_sparse_xent_infer,
        reference=_sparse_xent_reference,
        lower=_sparse_xent_lower,
        flops=per_input_element(6),  # softmax, then its difference with the labels
        grad=_sparse_xent_grad,
        input_names=("features", "labels"),
    )
)


def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: Any = None,
    logits: Any = None,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.sparse_softmax_cross_entropy_with_logits`: -log_softmax(logits)[..., labels].

    `labels` are int32/int64 class ids in [0, classes) (others fail the run), of the logits'
    shape without the last dimension, which is also the result's shape.
    """
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        labels_shape, logits_shape = labels.get_shape(), logits.get_shape()
        if logits_shape.ndims == 0:
            raise ValueError(f"Logits cannot be scalars - received shape {logits_shape}.")
        if (
            logits_shape.ndims is not None
            and labels_shape.ndims is not None
            and labels_shape.ndims != logits_shape.ndims - 1
        ):
            raise ValueError(
                f"Rank mismatch: Rank of labels (received {labels_shape.ndims}) should equal "
                f"rank of logits minus 1 (received {logits_shape.ndims})."
            )
        outer = TensorShape(None if logits_shape.ndims is None else logits_shape.as_list()[:-1])
        if (
            labels_shape.is_fully_defined()
            and outer.is_fully_defined()
            and labels_shape.as_tuple() != outer.as_tuple()
        ):
            raise ValueError(
                f"Shape mismatch: The shape of labels (received {labels_shape}) should equal "
                f"the shape of logits except for the last dimension (received {logits_shape})."
            )
        op = apply_op(
            "SparseSoftmaxCrossEntropyWithLogits",
            [logits, labels],
            name=name or "SparseSoftmaxCrossEntropyWithLogits",
        )
        return op.outputs[0]


# -- sigmoid cross-entropy, l2_loss --------------------------------------------------------------
def sigmoid_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: Any = None,
    logits: Any = None,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.sigmoid_cross_entropy_with_logits`: max(x, 0) - x * z + log(1 + exp(-|x|)).

    Written with `where` on x >= 0 as TF does, so the gradient at x = 0 is sigmoid(0) - z.
    """
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = (
            convert_to_tensor(labels, name="labels")
            if is_tensor_like(labels)
            else convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        )
        if merge_shapes(labels._shape_tuple, logits._shape_tuple) is False:
            raise ValueError(
                f"logits and labels must have the same shape ({logits.get_shape()} vs "
                f"{labels.get_shape()})"
            )
        zeros = _array.zeros_like(logits, dtype=logits.dtype)
        cond = greater_equal(logits, zeros)
        relu_logits = where(cond, logits, zeros)
        neg_abs_logits = where(cond, negative(logits), logits)
        return add(
            subtract(relu_logits, multiply(logits, labels)),
            log1p(exp(neg_abs_logits)),
            name=scope,
        )


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """`tf.nn.l2_loss`: sum(t ** 2) / 2, a scalar of t's dtype."""
    with name_scope(name, "L2Loss", [t]) as scope:
        t = convert_to_tensor(t, name="t")
        if t.dtype not in _FLOATS:
            raise TypeError(
                f"Value passed to parameter 't' has DataType {t.dtype.name} not in list of "
                "allowed values: float32, float64 (op of type L2Loss)"
            )
        half = convert_to_tensor(0.5, dtype=t.dtype)
        return multiply(reduce_sum(square(t)), half, name=scope)


# -- weighted cross-entropy, Poisson loss ---------------------------------------------------------
def weighted_cross_entropy_with_logits(
    labels: Any = None,
    logits: Any = None,
    pos_weight: Any = None,
    name: str | None = None,
    targets: Any = None,
) -> Tensor:
    """`tf.nn.weighted_cross_entropy_with_logits`: sigmoid cross-entropy with the positive term
    weighted by pos_weight, as TF writes it without overflow:
    (1 - z) x + (1 + (q - 1) z) (log(1 + exp(-|x|)) + max(-x, 0)). `targets` is TF1's name of
    `labels`."""
    if labels is not None and targets is not None:
        raise ValueError("Cannot specify both 'labels' and 'targets'.")
    labels = targets if labels is None else labels
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs labels, logits and pos_weight")
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        if merge_shapes(labels._shape_tuple, logits._shape_tuple) is False:
            raise ValueError(
                f"logits and labels must have the same shape ({logits.get_shape()} vs "
                f"{labels.get_shape()})"
            )
        pos_weight = convert_to_tensor(pos_weight, dtype=logits.dtype, name="pos_weight")
        log_weight = 1 + (pos_weight - 1) * labels
        zeros = _array.zeros_like(logits, dtype=logits.dtype)
        softplus_neg = log1p(exp(negative(abs_value(logits)))) + maximum(negative(logits), zeros)
        return add((1 - labels) * logits, log_weight * softplus_neg, name=scope)


def log_poisson_loss(
    targets: Any, log_input: Any, compute_full_loss: bool = False, name: str | None = None
) -> Tensor:
    """`tf.nn.log_poisson_loss`: exp(log_input) - log_input * targets, plus Stirling's
    approximation of log(targets!) where targets > 1 when `compute_full_loss`."""
    with name_scope(name, "log_poisson_loss", [log_input, targets]) as scope:
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        if merge_shapes(targets._shape_tuple, log_input._shape_tuple) is False:
            raise ValueError(
                f"log_input and targets must have the same shape ({log_input.get_shape()} vs "
                f"{targets.get_shape()})"
            )
        result = subtract(exp(log_input), multiply(log_input, targets))
        if not compute_full_loss:
            return _array.identity(result, name=scope)
        point_five = convert_to_tensor(0.5, dtype=targets.dtype)
        two_pi = convert_to_tensor(2 * math.pi, dtype=targets.dtype)
        stirling = targets * log(targets) - targets + point_five * log(two_pi * targets)
        zeros = _array.zeros_like(targets, dtype=targets.dtype)
        ones = _array.ones_like(targets, dtype=targets.dtype)
        small = logical_and(greater_equal(targets, zeros), less_equal(targets, ones))
        return add(result, where(small, zeros, stirling), name=scope)


# -- averaging a per-example loss -------------------------------------------------------------
def compute_average_loss(
    per_example_loss: Any, sample_weight: Any = None, global_batch_size: Any = None
) -> Tensor:
    """`tf.nn.compute_average_loss`: sum(per_example_loss * sample_weight) / global_batch_size,
    the batch size defaulting to the loss's first dimension (one replica: tfc has no
    distribution strategies)."""
    per_example_loss = convert_to_tensor(per_example_loss)
    dtype = per_example_loss.dtype
    rank = per_example_loss.shape.ndims
    if rank is not None and rank < 1:
        raise ValueError(
            "Invalid value passed for `per_example_loss`. Expected a tensor with at least "
            f"rank 1. Received: {per_example_loss}"
        )
    if sample_weight is not None:
        weight = convert_to_tensor(sample_weight, dtype=dtype)
        weight_rank = weight.shape.ndims
        if rank is not None and weight_rank is not None and 0 < weight_rank != rank:
            if weight_rank == rank + 1 and weight.shape[-1].value == 1:
                weight = _array.squeeze(weight, [-1])
            elif rank == weight_rank + 1 and per_example_loss.shape[-1].value == 1:
                weight = _array.expand_dims(weight, -1)
        per_example_loss = multiply(per_example_loss, weight)
    if global_batch_size is None:
        batch = _array.shape(per_example_loss)[0]
    else:
        if isinstance(global_batch_size, float) or (
            is_tensor_like(global_batch_size)
            and not convert_to_tensor(global_batch_size).dtype.is_integer
        ):
            raise TypeError("global_batch_size must be an integer.")
        if not is_tensor_like(global_batch_size) and int(global_batch_size) <= 0:
            raise ValueError("global_batch_size must be positive.")
        batch = convert_to_tensor(global_batch_size)
        if batch.shape.ndims not in (None, 0):
            raise ValueError("global_batch_size must be scalar.")
    return reduce_sum(per_example_loss) / cast(batch, dtype)


def scale_regularization_loss(regularization_loss: Any) -> Tensor:
    """`tf.nn.scale_regularization_loss`: the summed loss divided by the number of replicas,
    which is one in tfc (it has no distribution strategies)."""
    loss = reduce_sum(convert_to_tensor(regularization_loss))
    return loss / convert_to_tensor(1, dtype=loss.dtype)
