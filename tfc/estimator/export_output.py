"""`tf.estimator.export.PredictOutput` and its kin: the tensors a serving signature returns."""

from __future__ import annotations

from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor

__all__ = ["ExportOutput", "PredictOutput", "ClassificationOutput", "RegressionOutput"]


class ExportOutput:
    """One serving signature's outputs: `outputs` maps output names to tensors."""

    @property
    def outputs(self) -> dict[str, Tensor]:
        raise NotImplementedError


class PredictOutput(ExportOutput):
    """Any tensors, by name (a single tensor is named "output")."""

    def __init__(self, outputs: Any) -> None:
        if isinstance(outputs, Tensor):
            outputs = {"output": outputs}
        if not isinstance(outputs, dict):
            raise ValueError(f"Prediction outputs must be a dict or a Tensor; got {outputs}.")
        for key, value in outputs.items():
            if not isinstance(key, str):
                raise ValueError(f"Prediction output key must be a string; got {key}.")
            if not isinstance(value, Tensor):
                raise ValueError(f"Prediction output value must be a Tensor; got {value}.")
        self._outputs = dict(outputs)

    @property
    def outputs(self) -> dict[str, Tensor]:
        return self._outputs


class ClassificationOutput(ExportOutput):
    """Class scores ([batch, classes] float32) and/or class names (strings, which tfc's
    graphs cannot hold yet)."""

    def __init__(self, scores: Tensor | None = None, classes: Tensor | None = None) -> None:
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        if scores is not None and not (isinstance(scores, Tensor) and scores.dtype == _dt.float32):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None:
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        self.scores, self.classes = scores, classes

    @property
    def outputs(self) -> dict[str, Tensor]:
        return {"scores": self.scores}


class RegressionOutput(ExportOutput):
    """One float32 regression value per example."""

    def __init__(self, value: Tensor) -> None:
        if not (isinstance(value, Tensor) and value.dtype == _dt.float32):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = value

    @property
    def outputs(self) -> dict[str, Tensor]:
        return {"outputs": self.value}
