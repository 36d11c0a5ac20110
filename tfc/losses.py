"""`tf.losses`: weighted, reduced losses added to the LOSSES collection, as in TF1."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.math as _math
import tfc.ops.nn_loss as nn_loss
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, get_collection, get_default_graph, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.logic import equal, greater, where
from tfc.ops.math import (
    add_n,
    cast,
    divide,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    square,
    squared_difference,
    subtract,
)
from tfc.ops.nn import relu
from tfc.ops.reduce import reduce_sum
from tfc.ops.registry import constant_value

__all__ = [
    "Reduction",
    "compute_weighted_loss",
    "mean_squared_error",
    "absolute_difference",
    "huber_loss",
    "log_loss",
    "hinge_loss",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
    "sigmoid_cross_entropy",
    "cosine_distance",
    "mean_pairwise_squared_error",
    "add_loss",
    "get_losses",
    "get_regularization_losses",
    "get_regularization_loss",
    "get_total_loss",
]


class Reduction:
    """How a weighted loss tensor becomes the returned loss."""

    NONE = "none"  # the weighted losses, unreduced
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"  # divided by the number of elements
    MEAN = "weighted_mean"  # divided by the sum of the weights
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"  # by the count of nonzero weights
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (
            cls.NONE,
            cls.SUM,
            cls.MEAN,
            cls.SUM_OVER_BATCH_SIZE,
            cls.SUM_OVER_NONZERO_WEIGHTS,
            cls.SUM_BY_NONZERO_WEIGHTS,
        )

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# -- weights ------------------------------------------------------------------------------------
_BROADCAST_ERROR = "weights can not be broadcast to values."


def _assert_broadcastable(weights: Tensor, values: Tensor) -> None:
    """TF's static check: weights are a scalar, or of the values' rank with each dim 1 or equal."""
    w, v = weights._shape_tuple, values._shape_tuple
    if w is None or v is None or len(w) == 0:
        return
    if len(w) != len(v):
        raise ValueError(
            f"{_BROADCAST_ERROR} values.rank={len(v)}. weights.rank={len(w)}. "
            f"values.shape={values.get_shape()}. weights.shape={weights.get_shape()}."
        )
    for k, (wd, vd) in enumerate(zip(w, v)):
        if wd is not None and vd is not None and wd not in (1, vd):
            raise ValueError(
                f"{_BROADCAST_ERROR} Mismatch at dim {k}. values.shape={values.get_shape()} "
                f"weights.shape={weights.get_shape()}."
            )


def _known(t: Tensor) -> np.ndarray | None:
    return constant_value(t.graph, (t.op.name, t.value_index))


def _div_no_nan(total: Tensor, count: Tensor, name: str) -> Tensor:
    """total / count, and 0 where count is 0 (TF's div_no_nan); a plain division when count
    is known to be nonzero when the graph is built, which is the common case."""
    known = _known(count)
    if known is not None and np.all(known != 0):
        return divide(total, count, name=name)
    zero = equal(count, _array.zeros_like(count))
    safe = where(zero, _array.ones_like(count), count)
    return where(zero, _array.zeros_like(total), divide(total, safe), name=name)


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope(None, "num_elements", [losses]) as scope:
        return cast(_array.size(losses, name=scope), losses.dtype)


def _num_present(losses: Tensor, weights: Any) -> Tensor:
    """The number of losses whose (broadcast) weight is nonzero."""
    if isinstance(weights, (int, float)) and not isinstance(weights, bool) and weights != 0:
        return _num_elements(losses)
    with name_scope(None, "num_present", [losses, weights]) as scope:
        weights = cast(weights, losses.dtype)
        present = where(
            equal(weights, _array.zeros_like(weights)),
            _array.zeros_like(weights),
            _array.ones_like(weights),
        )
        present = multiply(present, _array.ones_like(losses))
        return reduce_sum(present, name=scope)


def _float_dtype(t: Tensor) -> _dt.DType:
    """The dtype losses are computed in: the tensor's own float type, float32 otherwise."""
    return t.dtype if t.dtype.is_floating else _dt.float32


def compute_weighted_loss(
    losses: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.compute_weighted_loss`: losses * weights reduced as `reduction` says, in
    the losses' dtype, added to `loss_collection`.

    Unlike TF1, which computes in float32 and casts back, float64 losses stay float64
    throughout, so their gradients are accurate enough to check by finite differences.
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", [losses, weights]):
        raw_weights = weights
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = cast(losses, _float_dtype(losses))
        weights = cast(convert_to_tensor(weights), losses.dtype)
        _assert_broadcastable(weights, losses)
        weighted = multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                count = reduce_sum(multiply(_array.ones_like(losses), weights))
                loss = _div_no_nan(loss, count, "value")
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _div_no_nan(loss, _num_present(losses, raw_weights), "value")
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _div_no_nan(loss, _num_elements(losses), "value")
        loss = cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _check_not_none(**values: Any) -> None:
    for key, value in values.items():
        if value is None:
            raise ValueError(f"{key} must not be None.")


def _assert_compatible(a: Tensor, b: Tensor) -> None:
    a.get_shape().assert_is_compatible_with(b.get_shape())


def _predictions_and_labels(labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    """Both in the predictions' float dtype (TF1 uses float32 for every input)."""
    predictions = convert_to_tensor(predictions)
    dtype = _float_dtype(predictions)
    predictions = cast(predictions, dtype)
    labels = cast(convert_to_tensor(labels), dtype)
    _assert_compatible(predictions, labels)
    return predictions, labels


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.mean_squared_error`: weighted (predictions - labels)^2, reduced."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "mean_squared_error", [predictions, labels, weights]) as scope:
        predictions, labels = _predictions_and_labels(labels, predictions)
        losses = squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def absolute_difference(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.absolute_difference`: weighted |predictions - labels|, reduced."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "absolute_difference", [predictions, labels, weights]) as scope:
        predictions, labels = _predictions_and_labels(labels, predictions)
        losses = _math.abs(subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.huber_loss`: 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta)."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "huber_loss", [predictions, labels, weights]) as scope:
        predictions, labels = _predictions_and_labels(labels, predictions)
        abs_error = _math.abs(subtract(predictions, labels))
        delta = convert_to_tensor(delta, dtype=predictions.dtype)
        quadratic = minimum(abs_error, delta)
        # |e| - quadratic, not max(|e| - delta, 0): the same value, with a gradient at |e| = delta
        linear = subtract(abs_error, quadratic)
        half = convert_to_tensor(0.5, dtype=predictions.dtype)
        losses = multiply(half, square(quadratic)) + multiply(delta, linear)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    epsilon: float = 1e-7,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.log_loss`: -y log(p + eps) - (1 - y) log(1 - p + eps) for probabilities p."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "log_loss", [predictions, labels, weights]) as scope:
        predictions, labels = _predictions_and_labels(labels, predictions)
        eps = convert_to_tensor(epsilon, dtype=predictions.dtype)
        one = convert_to_tensor(1.0, dtype=predictions.dtype)
        losses = subtract(
            negative(multiply(labels, log(predictions + eps))),
            multiply(one - labels, log(one - predictions + eps)),
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def hinge_loss(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.hinge_loss`: max(0, 1 - (2 y - 1) * logits) for labels y in {0, 1}."""
    _check_not_none(labels=labels, logits=logits)
    with name_scope(scope, "hinge_loss", [logits, labels, weights]) as scope:
        logits, labels = _predictions_and_labels(labels, logits)
        one = convert_to_tensor(1.0, dtype=logits.dtype)
        signs = subtract(multiply(convert_to_tensor(2.0, dtype=logits.dtype), labels), one)
        losses = relu(subtract(one, multiply(signs, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.softmax_cross_entropy`: softmax cross-entropy per example, weighted and
    reduced; labels are smoothed toward 1/classes by `label_smoothing` and get no gradient."""
    _check_not_none(onehot_labels=onehot_labels, logits=logits)
    with name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as scope:
        logits = convert_to_tensor(logits)
        onehot_labels = cast(convert_to_tensor(onehot_labels), logits.dtype)
        _assert_compatible(logits, onehot_labels)
        if label_smoothing > 0:
            classes = cast(_array.shape(onehot_labels)[-1], logits.dtype)
            positives = convert_to_tensor(1.0 - label_smoothing, dtype=logits.dtype)
            negatives = divide(convert_to_tensor(label_smoothing, dtype=logits.dtype), classes)
            onehot_labels = multiply(onehot_labels, positives) + negatives
        onehot_labels = _array.stop_gradient(onehot_labels, name="labels_stop_gradient")
        losses = nn_loss.softmax_cross_entropy_with_logits_v2(
            labels=onehot_labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _squeeze_last(t: Tensor) -> Tensor:
    return _array.squeeze(t, [-1])


def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.sparse_softmax_cross_entropy`: class-id labels; labels (and weights) with a
    trailing dimension of 1 are squeezed, as TF1 does."""
    _check_not_none(labels=labels, logits=logits)
    values = [logits, labels, weights]
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", values) as scope:
        labels, logits = convert_to_tensor(labels), convert_to_tensor(logits)
        weights = convert_to_tensor(weights)
        label_rank, logit_rank = labels.get_shape().ndims, logits.get_shape().ndims
        if label_rank is not None and logit_rank is not None:
            last = labels.get_shape().as_list()[-1] if label_rank else None
            if logit_rank == label_rank and last in (1, None):
                labels = _squeeze_last(labels)
                label_rank -= 1
            weight_rank = weights.get_shape().ndims
            if weight_rank is not None and weight_rank - label_rank == 1:
                weights = _squeeze_last(weights)
        losses = nn_loss.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(
    multi_class_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`tf.losses.sigmoid_cross_entropy`: element-wise sigmoid cross-entropy, weighted and
    reduced; labels are smoothed toward 1/2 by `label_smoothing`."""
    _check_not_none(multi_class_labels=multi_class_labels, logits=logits)
    with name_scope(
        scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels, weights]
    ) as scope:
        logits = convert_to_tensor(logits)
        labels = cast(convert_to_tensor(multi_class_labels), logits.dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            keep = convert_to_tensor(1.0 - label_smoothing, dtype=logits.dtype)
            shift = convert_to_tensor(0.5 * label_smoothing, dtype=logits.dtype)
            labels = multiply(labels, keep) + shift
        losses = nn_loss.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def cosine_distance(
    labels: Any,
    predictions: Any,
    axis: int | None = None,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
    dim: int | None = None,
) -> Tensor:
    """`tf.losses.cosine_distance`: 1 - sum(labels * predictions) along `axis`, for labels and
    predictions already unit-normalized along it (the sum kept as a dimension of 1)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as scope:
        predictions, labels = _predictions_and_labels(labels, predictions)
        one = convert_to_tensor(1.0, dtype=predictions.dtype)
        agreement = reduce_sum(multiply(predictions, labels), axis=(axis,), keepdims=True)
        losses = subtract(one, agreement)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _per_example(t: Tensor, what: str) -> list[int]:
    """The axes of `t` after the first (each example's own), which need its rank known."""
    if t.shape.ndims is None:
        raise ValueError(f"{what} needs the rank of its inputs known when the graph is built")
    return list(range(1, t.shape.ndims))


def mean_pairwise_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
) -> Tensor:
    """`tf.losses.mean_pairwise_squared_error`: per example, the mean over pairs of its
    elements (i, j) of ((p_i - p_j) - (l_i - l_j))^2, computed as TF does from the sums of d
    and d^2 (d = p - l): 2 sum(d^2) / (n - 1) - 2 sum(d)^2 / (n (n - 1)), n the elements of
    nonzero weight; the weighted sum of those over the batch (0 when no element counts)."""
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        predictions, labels = _predictions_and_labels(labels, predictions)
        dtype = predictions.dtype
        weights = cast(convert_to_tensor(weights), dtype)
        diffs = subtract(predictions, labels)
        axes = _per_example(diffs, "mean_pairwise_squared_error")
        present = where(
            equal(weights, _array.zeros_like(weights)),
            _array.zeros_like(weights),
            _array.ones_like(weights),
        )
        present = multiply(present, _array.ones_like(diffs))
        count = reduce_sum(present, axis=axes, keepdims=True, name="num_present")
        zero = _array.zeros_like(count)
        one, two = constant(1.0, dtype), constant(2.0, dtype)
        pairs_minus = maximum(subtract(count, one), zero)
        sum_squares = reduce_sum(square(diffs), axis=axes, keepdims=True)
        term1 = multiply(two, _div_no_nan(sum_squares, pairs_minus, "value"))
        sum_diff = reduce_sum(diffs, axis=axes, keepdims=True)
        pairs = maximum(multiply(count, subtract(count, one)), zero)
        term2 = multiply(two, _div_no_nan(square(sum_diff), pairs, "value"))
        loss = reduce_sum(multiply(subtract(term1, term2), weights))
        counted = greater(reduce_sum(count), constant(0.0, dtype))
        mean_loss = where(counted, loss, _array.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


# -- collections --------------------------------------------------------------------------------
def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Add `loss` to `loss_collection` (nothing when it is None or empty)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list:
    """The losses in `loss_collection` whose names start with `scope`."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list:
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Tensor:
    """The sum of the regularization losses, or a scalar 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Tensor:
    """The sum of get_losses() (and of the regularization losses, by default)."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return add_n(losses, name=name)
