"""`tf.estimator.DNNClassifier`: a feed-forward classifier over feature columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tfc.init_ops as init_ops
from tfc.estimator.estimator import Estimator, EstimatorSpec, ModeKeys, RunConfig
from tfc.feature_column import input_layer
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.layers import dense
from tfc.metrics import accuracy, mean
from tfc.ops.argminmax import argmax
from tfc.ops.array import expand_dims, reshape
from tfc.ops.math import cast
from tfc.ops.nn import dropout as nn_dropout
from tfc.ops.nn import relu, softmax
from tfc.ops.nn_loss import sparse_softmax_cross_entropy_with_logits
from tfc.ops.reduce import reduce_sum
from tfc.train import optimizers as _optimizers
from tfc.train.optimizer import Optimizer
from tfc.train.training_util import get_global_step
from tfc.variables import variable_scope

__all__ = ["DNNClassifier"]

_OPTIMIZERS = {
    "Adagrad": lambda lr: _optimizers.AdagradOptimizer(lr),
    "Adam": lambda lr: _optimizers.AdamOptimizer(lr),
    "RMSProp": lambda lr: _optimizers.RMSPropOptimizer(lr),
    "SGD": lambda lr: _optimizers.GradientDescentOptimizer(lr),
}
_DEFAULT_LEARNING_RATE = 0.05  # TF1's canned estimators' default


def _optimizer(spec: Any) -> Optimizer:
    if isinstance(spec, Optimizer):
        return spec
    if isinstance(spec, str):
        if spec not in _OPTIMIZERS:
            raise ValueError(
                f"Unsupported optimizer name: {spec}. Supported: {sorted(_OPTIMIZERS)}"
            )
        return _OPTIMIZERS[spec](_DEFAULT_LEARNING_RATE)
    if callable(spec):
        return spec()
    raise ValueError(f"optimizer must be a name, an Optimizer or a callable, got {spec!r}")


def _dnn_model_fn(features: Any, labels: Any, mode: str, params: dict) -> EstimatorSpec:
    training = mode == ModeKeys.TRAIN
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
            if params["dropout"] is not None and training:
                net = nn_dropout(net, rate=params["dropout"])
        logits = dense(net, params["n_classes"], name="logits")
    class_ids = argmax(logits, axis=1)
    predictions = {
        "logits": logits,
        "probabilities": softmax(logits),
        "class_ids": expand_dims(class_ids, -1),
    }
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions=predictions)
    labels = cast(reshape(labels, [-1]), _dt.int64)
    per_example = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss = reduce_sum(per_example, name="loss")  # TF1 canned estimators sum over the batch
    if mode == ModeKeys.EVAL:
        metrics = {
            "accuracy": accuracy(labels, class_ids, name="accuracy"),
            "average_loss": mean(per_example, name="average_loss"),
        }
        return EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    train_op = params["optimizer"]().minimize(loss, global_step=get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


class DNNClassifier(Estimator):
    """Hidden layers of `hidden_units` (ReLU by default), softmax over `n_classes` classes.

    Trained with the summed sparse softmax cross entropy and Adagrad (learning rate 0.05) by
    default, as TF1's DNNClassifier. Variables: dnn/hiddenlayer_<i>/{kernel,bias},
    dnn/logits/{kernel,bias}.
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
        loss_reduction: Any = None,
        batch_norm: bool = False,
    ) -> None:
        if n_classes < 2:
            raise ValueError(f"n_classes must be > 1, got {n_classes}")
        if not hidden_units or any(int(u) <= 0 for u in hidden_units):
            raise ValueError(f"hidden_units must be positive integers, got {hidden_units}")
        if not feature_columns:
            raise ValueError("feature_columns must not be empty")
        for unsupported, value in [
            ("weight_column", weight_column),
            ("warm_start_from", warm_start_from),
        ]:
            if value is not None:
                raise NotImplementedError(f"DNNClassifier({unsupported}=...) is not supported")
        if batch_norm:
            raise NotImplementedError("DNNClassifier(batch_norm=True) is not supported")
        self._label_vocabulary = list(label_vocabulary) if label_vocabulary else None
        params = {
            "hidden_units": [int(u) for u in hidden_units],
            "feature_columns": list(feature_columns),
            "n_classes": int(n_classes),
            "activation_fn": activation_fn,
            "dropout": dropout,
            "optimizer": lambda: _optimizer(optimizer),
        }
        super().__init__(_dnn_model_fn, model_dir=model_dir, config=config, params=params)

    def _postprocess(self, batch: dict) -> dict:
        """Add TF's string predictions: 'classes' (the label) and 'all_classes'."""
        if "class_ids" in batch:
            names = self._label_vocabulary or [str(i) for i in range(self.params["n_classes"])]
            ids = batch["class_ids"]
            batch["classes"] = np.array([[names[i].encode()] for i in ids[:, 0]], dtype=object)
        return batch
