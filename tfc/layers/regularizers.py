"""Weight regularizers as TF1 programs use them (`tf.contrib.layers.l2_regularizer`, ...): a
regularizer maps a weight tensor to a scalar loss (or None); a layer's kernel_regularizer adds
that loss to tf.GraphKeys.REGULARIZATION_LOSSES, which tf.losses.get_regularization_loss sums."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

from tfc.ir.graph import GraphKeys, Tensor, get_collection, get_default_graph, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.math import abs as abs_value
from tfc.ops.math import add_n, multiply
from tfc.ops.nn_loss import l2_loss
from tfc.ops.reduce import reduce_sum

__all__ = [
    "l1_regularizer",
    "l2_regularizer",
    "l1_l2_regularizer",
    "sum_regularizer",
    "apply_regularization",
]

Regularizer = Callable[[Tensor], Tensor | None]


def _check_scale(scale: Any, what: str = "scale") -> bool:
    """TF's checks of a regularizer's scale; False when it is 0 (the regularizer is off)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"{what} cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}.")
        if scale == 0.0:
            return False
    return True


def l1_regularizer(scale: float, scope: str | None = None) -> Regularizer:
    """`tf.contrib.layers.l1_regularizer`: weights -> scale * sum(|weights|)."""
    if not _check_scale(scale):
        return lambda _: None

    def l1(weights: Tensor) -> Tensor:
        with name_scope(scope, "l1_regularizer", [weights]) as name:
            factor = convert_to_tensor(scale, dtype=weights.dtype, name="scale")
            return multiply(factor, reduce_sum(abs_value(weights)), name=name)

    return l1


def l2_regularizer(scale: float, scope: str | None = None) -> Regularizer:
    """`tf.contrib.layers.l2_regularizer`: weights -> scale * sum(weights ** 2) / 2."""
    if not _check_scale(scale):
        return lambda _: None

    def l2(weights: Tensor) -> Tensor:
        with name_scope(scope, "l2_regularizer", [weights]) as name:
            factor = convert_to_tensor(scale, dtype=weights.dtype, name="scale")
            return multiply(factor, l2_loss(weights), name=name)

    return l2


def sum_regularizer(regularizer_list: Sequence[Any], scope: str | None = None) -> Any:
    """`tf.contrib.layers.sum_regularizer`: the sum of the regularizers' losses (None when
    none is given)."""
    regularizers = [r for r in regularizer_list if r is not None]
    if not regularizers:
        return None

    def sum_reg(weights: Tensor) -> Tensor | None:
        with name_scope(scope, "sum_regularizer", [weights]) as name:
            losses = [t for t in (r(weights) for r in regularizers) if t is not None]
            return add_n(losses, name=name) if losses else None

    return sum_reg


def l1_l2_regularizer(
    scale_l1: float = 1.0, scale_l2: float = 1.0, scope: str | None = None
) -> Regularizer:
    """`tf.contrib.layers.l1_l2_regularizer`: the sum of the L1 and L2 regularizers."""
    _check_scale(scale_l1, "scale_l1")
    _check_scale(scale_l2, "scale_l2")
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer: Regularizer, weights_list: Any = None) -> Tensor:
    """`tf.contrib.layers.apply_regularization`: the summed penalty of the regularizer over
    `weights_list` (default: tf.GraphKeys.WEIGHTS), added to REGULARIZATION_LOSSES."""
    weights_list = list(weights_list or get_collection(GraphKeys.WEIGHTS))
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else constant(0.0) for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError(
                    "regularizer must return a scalar Tensor instead of a Tensor with rank "
                    f"{p.shape.ndims}."
                )
        total = add_n(penalties, name=scope)
    get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total
