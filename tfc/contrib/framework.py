"""`tf.contrib.framework`: its global-step functions, which moved to `tf.train` in TF1."""

from __future__ import annotations

from tfc.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)

__all__ = [
    "assert_global_step",
    "create_global_step",
    "get_global_step",
    "get_or_create_global_step",
]


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.framework.{name} is not part of tfc: it provides {', '.join(__all__)}"
    )
