"""`tf.estimator.export`: what a serving input function returns, and the export outputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from tfc.estimator.export_output import (
    ClassificationOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
)
from tfc.ir.graph import Tensor
from tfc.ops.constant import placeholder

__all__ = [
    "ClassificationOutput",
    "ExportOutput",
    "PredictOutput",
    "RegressionOutput",
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_raw_serving_input_receiver_fn",
]

_SINGLE_FEATURE_KEY = "feature"
_SINGLE_RECEIVER_KEY = "input"


def _as_tensor_dict(value: Any, default_key: str, what: str) -> dict[str, Tensor]:
    if isinstance(value, Tensor):
        value = {default_key: value}
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{what} must be a Tensor or a non-empty dict of Tensors, got {value!r}")
    for key, tensor in value.items():
        if not isinstance(key, str):
            raise ValueError(f"{what} keys must be strings: {key!r}.")
        if not isinstance(tensor, Tensor):
            raise ValueError(f"{what} {key!r} must be a Tensor, got {tensor!r}")
    return dict(value)


class ServingInputReceiver(
    NamedTuple(
        "ServingInputReceiver",
        [("features", Any), ("receiver_tensors", dict), ("receiver_tensors_alternatives", Any)],
    )
):
    """The serving graph's inputs: `receiver_tensors` (placeholders the server feeds) and the
    `features` the model_fn gets from them (a tensor or a dict of tensors)."""

    def __new__(
        cls,
        features: Any,
        receiver_tensors: Any,
        receiver_tensors_alternatives: Any = None,
    ) -> ServingInputReceiver:
        if features is None:
            raise ValueError("features must be defined.")
        if not isinstance(features, Tensor):
            features = _as_tensor_dict(features, _SINGLE_FEATURE_KEY, "feature")
        receiver_tensors = _as_tensor_dict(
            receiver_tensors, _SINGLE_RECEIVER_KEY, "receiver_tensor"
        )
        if receiver_tensors_alternatives is not None:
            raise NotImplementedError(
                "receiver_tensors_alternatives: a tfc export has one serving signature"
            )
        return super().__new__(cls, features, receiver_tensors, None)


class TensorServingInputReceiver(ServingInputReceiver):
    """A receiver whose features are one tensor (passed to the model_fn as that tensor)."""

    def __new__(
        cls,
        features: Tensor,
        receiver_tensors: Any,
        receiver_tensors_alternatives: Any = None,
    ) -> TensorServingInputReceiver:
        if not isinstance(features, Tensor):
            raise ValueError(f"features must be a Tensor, got {features!r}")
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


def build_raw_serving_input_receiver_fn(
    features: Any, default_batch_size: int | None = None
) -> Callable[[], ServingInputReceiver]:
    """A serving input function that feeds `features` as they are: one placeholder per feature,
    of the feature's dtype and shape (batch dimension `default_batch_size`)."""
    if isinstance(features, Tensor):
        features = {_SINGLE_FEATURE_KEY: features}

    def serving_input_receiver_fn() -> ServingInputReceiver:
        receivers = {}
        for name, t in features.items():
            dims = t.shape.as_list() if t.shape.ndims is not None else None
            shape = None if dims is None else [default_batch_size, *dims[1:]]
            receivers[name] = placeholder(t.dtype, shape, name=name)
        return ServingInputReceiver(receivers, receivers)

    return serving_input_receiver_fn
