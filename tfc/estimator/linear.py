"""`tf.estimator.LinearClassifier` and `LinearRegressor`: linear models over feature columns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tfc.estimator.dnn import add_class_names
from tfc.estimator.estimator import Estimator
from tfc.estimator.head import Head, RegressionHead, classification_head
from tfc.estimator.model_fn import EstimatorSpec, ModeKeys
from tfc.estimator.optimizers import get_optimizer_instance
from tfc.estimator.run_config import RunConfig
from tfc.feature_column import linear_model
from tfc.losses import Reduction
from tfc.variables import variable_scope

__all__ = ["LinearClassifier", "LinearRegressor"]

_LEARNING_RATE = 0.2  # TF1's canned linear estimators: min(0.2, 1 / sqrt(number of columns))


def _linear_model_fn(features: Any, labels: Any, mode: str, params: dict) -> EstimatorSpec:
    """Logits linear/linear_model (one weight vector per column and a bias), then the head."""
    head: Head = params["head"]
    columns = params["feature_columns"]
    with variable_scope("linear"):
        logits = linear_model(
            features, columns, units=head.logits_dimension, sparse_combiner=params["combiner"]
        )
    optimizer = None
    if mode == ModeKeys.TRAIN:
        learning_rate = min(_LEARNING_RATE, 1.0 / math.sqrt(len(columns)))
        optimizer = get_optimizer_instance(params["optimizer"], learning_rate)
    return head.create_estimator_spec(features, mode, logits, labels, optimizer)


def _check_linear_args(feature_columns: Any, unsupported: dict[str, Any], name: str) -> None:
    if not feature_columns:
        raise ValueError("feature_columns must not be empty")
    for arg, value in unsupported.items():
        if value is not None:
            raise NotImplementedError(f"{name}({arg}=...) is not supported")


class LinearClassifier(Estimator):
    """A linear classifier: logistic regression for 2 classes (one logit), softmax regression
    for more; the loss summed over the batch, minimized with Ftrl (learning rate
    min(0.2, 1/sqrt(number of columns))) by default, as TF1.

    Variables: linear/linear_model/<column>/weights, linear/linear_model/bias_weights.
    """

    def __init__(
        self,
        feature_columns: Sequence[Any],
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Ftrl",
        config: RunConfig | None = None,
        partitioner: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = Reduction.SUM,
        sparse_combiner: str = "sum",
    ) -> None:
        if n_classes < 2:
            raise ValueError(f"n_classes must be > 1, got {n_classes}")
        _check_linear_args(feature_columns, {"partitioner": partitioner}, "LinearClassifier")
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(
                f"label_vocabulary has {len(label_vocabulary)} names for {n_classes} classes"
            )
        self._label_vocabulary = list(label_vocabulary) if label_vocabulary else None
        self._n_classes = int(n_classes)
        head = classification_head(
            self._n_classes, weight_column=weight_column, loss_reduction=loss_reduction
        )
        params = {
            "head": head,
            "feature_columns": list(feature_columns),
            "optimizer": optimizer,
            "combiner": sparse_combiner,
        }
        super().__init__(
            _linear_model_fn,
            model_dir=model_dir,
            config=config,
            params=params,
            warm_start_from=warm_start_from,
        )

    def _postprocess(self, batch: dict) -> dict:
        return add_class_names(batch, self._label_vocabulary, self._n_classes)


class LinearRegressor(Estimator):
    """Linear regression of `label_dimension` values on the squared error summed over the
    batch, with Ftrl (learning rate min(0.2, 1/sqrt(number of columns))) by default.

    Variables: linear/linear_model/<column>/weights, linear/linear_model/bias_weights.
    """

    def __init__(
        self,
        feature_columns: Sequence[Any],
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: RunConfig | None = None,
        partitioner: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = Reduction.SUM,
        sparse_combiner: str = "sum",
    ) -> None:
        _check_linear_args(feature_columns, {"partitioner": partitioner}, "LinearRegressor")
        head = RegressionHead(
            int(label_dimension), weight_column=weight_column, loss_reduction=loss_reduction
        )
        params = {
            "head": head,
            "feature_columns": list(feature_columns),
            "optimizer": optimizer,
            "combiner": sparse_combiner,
        }
        super().__init__(
            _linear_model_fn,
            model_dir=model_dir,
            config=config,
            params=params,
            warm_start_from=warm_start_from,
        )
