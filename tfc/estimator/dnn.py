"""`tf.estimator.DNNClassifier` and `DNNRegressor`: feed-forward networks over feature columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tfc.init_ops as init_ops
from tfc.estimator.estimator import Estimator
from tfc.estimator.head import Head, RegressionHead, classification_head
from tfc.estimator.model_fn import EstimatorSpec, ModeKeys
from tfc.estimator.optimizers import get_optimizer_instance
from tfc.estimator.run_config import RunConfig
from tfc.feature_column import input_layer
from tfc.ir.graph import Tensor
from tfc.layers import dense
from tfc.losses import Reduction
from tfc.ops.nn import dropout as nn_dropout
from tfc.ops.nn import relu
from tfc.variables import variable_scope

__all__ = ["DNNClassifier", "DNNRegressor"]

_LEARNING_RATE = 0.05  # TF1's canned DNN estimators' default


def _dnn_model_fn(features: Any, labels: Any, mode: str, params: dict) -> EstimatorSpec:
    """Hidden layers dnn/hiddenlayer_<i>, logits dnn/logits, then the head's spec."""
    head: Head = params["head"]
    with variable_scope("dnn"):
        net = input_layer(features, params["feature_columns"])
        for i, units in enumerate(params["hidden_units"]):
            net = dense(
                net,
                units,
                activation=params["activation_fn"],
                kernel_initializer=init_ops.glorot_uniform_initializer(),
                name=f"hiddenlayer_{i}",
            )
            if params["dropout"] is not None and mode == ModeKeys.TRAIN:
                net = nn_dropout(net, rate=params["dropout"])
        logits = dense(net, head.logits_dimension, name="logits")
    optimizer = None
    if mode == ModeKeys.TRAIN:
        optimizer = get_optimizer_instance(params["optimizer"], _LEARNING_RATE)
    return head.create_estimator_spec(features, mode, logits, labels, optimizer)


def _check_dnn_args(
    hidden_units: Sequence[int], feature_columns: Any, unsupported: dict[str, Any], name: str
) -> None:
    if not hidden_units or any(int(u) <= 0 for u in hidden_units):
        raise ValueError(f"hidden_units must be positive integers, got {hidden_units}")
    if not feature_columns:
        raise ValueError("feature_columns must not be empty")
    for arg, value in unsupported.items():
        if value not in (None, False):
            raise NotImplementedError(f"{name}({arg}=...) is not supported")


class DNNClassifier(Estimator):
    """Hidden layers of `hidden_units` (ReLU by default), then a classification head: softmax
    over n_classes logits, or one logistic logit when n_classes is 2 (as TF1).

    Trained on the loss summed over the batch with Adagrad (learning rate 0.05) by default.
    Variables: dnn/hiddenlayer_<i>/{kernel,bias}, dnn/logits/{kernel,bias}. Labels are class
    ids; `label_vocabulary` names the classes in the "classes" predictions.
    """

    def __init__(
        self,
        hidden_units: Sequence[int],
        feature_columns: Sequence[Any],
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable[[Tensor], Tensor] = relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: RunConfig | None = None,
        warm_start_from: Any = None,
        loss_reduction: str = Reduction.SUM,
        batch_norm: bool = False,
    ) -> None:
        if n_classes < 2:
            raise ValueError(f"n_classes must be > 1, got {n_classes}")
        _check_dnn_args(
            hidden_units,
            feature_columns,
            {"input_layer_partitioner": input_layer_partitioner, "batch_norm": batch_norm},
            "DNNClassifier",
        )
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
            "hidden_units": [int(u) for u in hidden_units],
            "feature_columns": list(feature_columns),
            "activation_fn": activation_fn,
            "dropout": dropout,
            "optimizer": optimizer,
        }
        super().__init__(
            _dnn_model_fn,
            model_dir=model_dir,
            config=config,
            params=params,
            warm_start_from=warm_start_from,
        )

    def _postprocess(self, batch: dict) -> dict:
        return add_class_names(batch, self._label_vocabulary, self._n_classes)


def add_class_names(batch: dict, vocabulary: list[str] | None, n_classes: int) -> dict:
    """Add TF's string prediction "classes" (the class names, [batch, 1] bytes) to a batch."""
    if "class_ids" in batch:
        names = vocabulary or [str(i) for i in range(n_classes)]
        ids = np.asarray(batch["class_ids"]).reshape(-1)
        batch["classes"] = np.array([[names[i].encode()] for i in ids], dtype=object)
    return batch


class DNNRegressor(Estimator):
    """Hidden layers of `hidden_units` (ReLU by default), then `label_dimension` outputs trained
    on the squared error summed over the batch, with Adagrad (learning rate 0.05) by default.

    Variables: dnn/hiddenlayer_<i>/{kernel,bias}, dnn/logits/{kernel,bias}. Predictions:
    {"predictions": [batch, label_dimension]}.
    """

    def __init__(
        self,
        hidden_units: Sequence[int],
        feature_columns: Sequence[Any],
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable[[Tensor], Tensor] = relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: RunConfig | None = None,
        warm_start_from: Any = None,
        loss_reduction: str = Reduction.SUM,
        batch_norm: bool = False,
    ) -> None:
        _check_dnn_args(
            hidden_units,
            feature_columns,
            {"input_layer_partitioner": input_layer_partitioner, "batch_norm": batch_norm},
            "DNNRegressor",
        )
        head = RegressionHead(
            int(label_dimension), weight_column=weight_column, loss_reduction=loss_reduction
        )
        params = {
            "head": head,
            "hidden_units": [int(u) for u in hidden_units],
            "feature_columns": list(feature_columns),
            "activation_fn": activation_fn,
            "dropout": dropout,
            "optimizer": optimizer,
        }
        super().__init__(
            _dnn_model_fn,
            model_dir=model_dir,
            config=config,
            params=params,
            warm_start_from=warm_start_from,
        )
