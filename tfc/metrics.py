"""`tf.metrics`: streaming metrics as TF1 builds them: local variables, an update op, a value."""

from __future__ import annotations

from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, name_scope
from tfc.ops.array import reshape, size
from tfc.ops.constant import convert_to_tensor
from tfc.ops.control import group
from tfc.ops.logic import equal
from tfc.ops.math import cast, maximum, truediv
from tfc.ops.reduce import reduce_sum
from tfc.ops.state import assign_add
from tfc.variables import Variable

__all__ = ["mean", "accuracy"]


def _local(name: str) -> Variable:
    """A float64 accumulator that starts at zero and is reset by local_variables_initializer."""
    return Variable(
        0.0,
        dtype=_dt.float64,
        trainable=False,
        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
        name=name,
    )


def mean(
    values: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Any]:
    """The running mean of `values` (weighted): returns (value, update_op)."""
    with name_scope(name, "mean"):
        values = cast(convert_to_tensor(values), _dt.float64)
        total, count = _local("total"), _local("count")
        if weights is None:
            batch_total, batch_count = reduce_sum(values), cast(size(values), _dt.float64)
        else:
            w = cast(convert_to_tensor(weights), _dt.float64) * (values * 0.0 + 1.0)
            batch_total, batch_count = reduce_sum(values * w), reduce_sum(w)
        update_total = assign_add(total, batch_total)
        update_count = assign_add(count, batch_count)
        value = truediv(total.value(), maximum(count.value(), 1e-300), name="value")
        update_op = group(update_total, update_count, name="update_op")
        return value, update_op


def accuracy(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Any]:
    """The running fraction of `predictions` equal to `labels`: returns (value, update_op)."""
    with name_scope(name, "accuracy"):
        labels = convert_to_tensor(labels)
        predictions = cast(convert_to_tensor(predictions), labels.dtype)
        hits = cast(equal(reshape(predictions, [-1]), reshape(labels, [-1])), _dt.float64)
        return mean(hits, weights, name="mean")
