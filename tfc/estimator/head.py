"""The canned estimators' heads: from logits to predictions, loss, metrics and train_op, as TF1's
multi-class, binary and regression heads compute them."""

from __future__ import annotations

from typing import Any

from tfc.estimator.export_output import ClassificationOutput, PredictOutput, RegressionOutput
from tfc.estimator.model_fn import DEFAULT_SERVING_SIGNATURE_DEF_KEY, EstimatorSpec, ModeKeys
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, control_dependencies, get_default_graph, name_scope
from tfc.losses import Reduction, compute_weighted_loss
from tfc.metrics import accuracy, mean
from tfc.ops.argminmax import argmax
from tfc.ops.array import concat, expand_dims, reshape, zeros_like
from tfc.ops.constant import convert_to_tensor
from tfc.ops.math import cast, maximum, sigmoid, squared_difference, subtract
from tfc.ops.nn import softmax
from tfc.ops.nn_loss import (
    sigmoid_cross_entropy_with_logits,
    sparse_softmax_cross_entropy_with_logits,
)
from tfc.train.optimizer import Optimizer
from tfc.train.training_util import get_global_step

__all__ = ["Head", "BinaryClassHead", "MultiClassHead", "RegressionHead", "classification_head"]


class Head:
    """Turns a model's logits into an EstimatorSpec for one mode.

    The training loss is the per-example loss reduced by `loss_reduction` (TF1's canned
    estimators sum it over the batch); `weight_column` (a feature name or a numeric column)
    weighs each example's loss and metrics.
    """

    logits_dimension: int

    def __init__(self, weight_column: Any = None, loss_reduction: str = Reduction.SUM) -> None:
        if loss_reduction not in Reduction.all() or loss_reduction == Reduction.NONE:
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        self._weight_key = getattr(weight_column, "key", weight_column)
        self._loss_reduction = loss_reduction

    def _weights(self, features: Any) -> Tensor | float:
        if self._weight_key is None:
            return 1.0
        if not isinstance(features, dict) or self._weight_key not in features:
            raise KeyError(f"the weight column '{self._weight_key}' is not among the features")
        return reshape(cast(features[self._weight_key], _dt.float32), [-1, 1])

    def create_estimator_spec(
        self, features: Any, mode: str, logits: Tensor, labels: Any, optimizer: Optimizer
    ) -> EstimatorSpec:
        predictions = self._predictions(logits)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(
                mode, predictions=predictions, export_outputs=self._export_outputs(predictions)
            )
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None.")
        weights = self._weights(features)
        labels, unreduced = self._labels_and_loss(logits, labels)
        loss = compute_weighted_loss(unreduced, weights, reduction=self._loss_reduction)
        if mode == ModeKeys.EVAL:
            with name_scope("metrics"):
                metrics = self._metrics(predictions, labels, unreduced, weights)
            return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=metrics)
        # batch normalization's moving averages update with each step, as in TF1's heads
        with control_dependencies(get_default_graph().get_collection(GraphKeys.UPDATE_OPS)):
            train_op = optimizer.minimize(loss, global_step=get_global_step())
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        raise NotImplementedError

    def _labels_and_loss(self, logits: Tensor, labels: Any) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def _metrics(self, predictions: dict, labels: Tensor, unreduced: Tensor, weights: Any) -> dict:
        raise NotImplementedError

    def _export_outputs(self, predictions: dict) -> dict:
        raise NotImplementedError


def _example_weights(weights: Any) -> Any:
    """Weights per example, [batch], for metrics of per-example values."""
    return None if isinstance(weights, float) else reshape(weights, [-1])


def _metric_weights(weights: Any) -> Any:
    return None if isinstance(weights, float) else weights


class MultiClassHead(Head):
    """Softmax over n_classes logits; labels are class ids in [0, n_classes)."""

    def __init__(self, n_classes: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.logits_dimension = n_classes

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        with name_scope("predictions"):
            return {
                "logits": logits,
                "probabilities": softmax(logits, name="probabilities"),
                "class_ids": expand_dims(argmax(logits, axis=1), -1, name="class_ids"),
            }

    def _labels_and_loss(self, logits: Tensor, labels: Any) -> tuple[Tensor, Tensor]:
        labels = cast(reshape(convert_to_tensor(labels), [-1]), _dt.int64)
        loss = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return labels, expand_dims(loss, -1)

    def _metrics(self, predictions: dict, labels: Tensor, unreduced: Tensor, weights: Any) -> dict:
        class_ids = reshape(predictions["class_ids"], [-1])
        return {
            "accuracy": accuracy(labels, class_ids, _example_weights(weights), name="accuracy"),
            "average_loss": mean(unreduced, _metric_weights(weights), name="average_loss"),
        }

    def _export_outputs(self, predictions: dict) -> dict:
        scores = ClassificationOutput(scores=predictions["probabilities"])
        return {
            DEFAULT_SERVING_SIGNATURE_DEF_KEY: scores,
            "classification": scores,
            "predict": PredictOutput(predictions),
        }


class BinaryClassHead(Head):
    """One logit per example, the log-odds of class 1; labels are 0 or 1."""

    logits_dimension = 1

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        with name_scope("predictions"):
            two_class_logits = concat([zeros_like(logits), logits], axis=-1)
            return {
                "logits": logits,
                "logistic": sigmoid(logits, name="logistic"),
                "probabilities": softmax(two_class_logits, name="probabilities"),
                "class_ids": expand_dims(argmax(two_class_logits, axis=-1), -1, name="class_ids"),
            }

    def _labels_and_loss(self, logits: Tensor, labels: Any) -> tuple[Tensor, Tensor]:
        labels = cast(reshape(convert_to_tensor(labels), [-1, 1]), _dt.float32)
        return labels, sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def _metrics(self, predictions: dict, labels: Tensor, unreduced: Tensor, weights: Any) -> dict:
        flat_labels = reshape(labels, [-1])
        predicted = cast(reshape(predictions["class_ids"], [-1]), _dt.float32)
        per_example = _example_weights(weights)
        label_mean = mean(labels, _metric_weights(weights), name="label/mean")
        baseline = maximum(label_mean[0], subtract(1.0, label_mean[0]), name="accuracy_baseline")
        hits_where_predicted = predicted if per_example is None else predicted * per_example
        hits_where_labeled = flat_labels if per_example is None else flat_labels * per_example
        return {
            "accuracy": accuracy(flat_labels, predicted, per_example, name="accuracy"),
            "accuracy_baseline": (baseline, label_mean[1]),
            "average_loss": mean(unreduced, _metric_weights(weights), name="average_loss"),
            "label/mean": label_mean,
            "prediction/mean": mean(
                predictions["logistic"], _metric_weights(weights), name="prediction/mean"
            ),
            # precision: the labels' mean over predicted positives; recall: the predictions'
            # mean over labeled positives
            "precision": mean(flat_labels, hits_where_predicted, name="precision"),
            "recall": mean(predicted, hits_where_labeled, name="recall"),
        }

    def _export_outputs(self, predictions: dict) -> dict:
        scores = ClassificationOutput(scores=predictions["probabilities"])
        return {
            DEFAULT_SERVING_SIGNATURE_DEF_KEY: scores,
            "classification": scores,
            "regression": RegressionOutput(predictions["logistic"]),
            "predict": PredictOutput(predictions),
        }


class RegressionHead(Head):
    """label_dimension real values per example, with the squared error as the loss."""

    def __init__(self, label_dimension: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        self.logits_dimension = label_dimension

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        return {"predictions": logits}

    def _labels_and_loss(self, logits: Tensor, labels: Any) -> tuple[Tensor, Tensor]:
        labels = cast(reshape(convert_to_tensor(labels), [-1, self.logits_dimension]), _dt.float32)
        return labels, squared_difference(logits, labels)

    def _metrics(self, predictions: dict, labels: Tensor, unreduced: Tensor, weights: Any) -> dict:
        w = _metric_weights(weights)
        return {
            "average_loss": mean(unreduced, w, name="average_loss"),
            "label/mean": mean(labels, w, name="label/mean"),
            "prediction/mean": mean(predictions["predictions"], w, name="prediction/mean"),
        }

    def _export_outputs(self, predictions: dict) -> dict:
        value = RegressionOutput(predictions["predictions"])
        return {
            DEFAULT_SERVING_SIGNATURE_DEF_KEY: value,
            "regression": value,
            "predict": PredictOutput(predictions),
        }


def classification_head(n_classes: int, **kwargs: Any) -> Head:
    """TF1's choice: a binary head (one logit) for two classes, softmax for more."""
    if n_classes < 2:
        raise ValueError(f"n_classes must be > 1 for classification: {n_classes}")
    return BinaryClassHead(**kwargs) if n_classes == 2 else MultiClassHead(n_classes, **kwargs)
