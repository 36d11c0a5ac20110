"""The optimizers the canned estimators take: by name ("Adagrad", "Adam", "Ftrl", "RMSProp",
"SGD"), as an Optimizer, or as a callable returning one."""

from __future__ import annotations

from typing import Any

import tfc.train as train
from tfc.train.optimizer import Optimizer

__all__ = ["get_optimizer_instance"]

_CLASS_NAMES = {
    "Adagrad": "AdagradOptimizer",
    "Adam": "AdamOptimizer",
    "Ftrl": "FtrlOptimizer",
    "RMSProp": "RMSPropOptimizer",
    "SGD": "GradientDescentOptimizer",
}


def get_optimizer_instance(spec: Any, learning_rate: float | None = None) -> Optimizer:
    """An Optimizer from a canned estimator's `optimizer` argument; names get `learning_rate`."""
    if isinstance(spec, str):
        if spec not in _CLASS_NAMES:
            raise ValueError(
                f"Unsupported optimizer name: {spec}. Supported names are: {sorted(_CLASS_NAMES)}"
            )
        if learning_rate is None:
            raise ValueError(f"learning_rate must be specified when opt is string: {spec}")
        return getattr(train, _CLASS_NAMES[spec])(learning_rate=learning_rate)
    if callable(spec) and not isinstance(spec, Optimizer):
        spec = spec()
    if not isinstance(spec, Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {spec!r}")
    return spec
