"""`tf.layers`: TF1's functional layers, built from get_variable so names match TF1's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tfc.init_ops as init_ops
from tfc.ir.graph import Tensor
from tfc.ops.constant import convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.nn import bias_add
from tfc.variables import get_variable, variable_scope

__all__ = ["dense"]


def dense(
    inputs: Any,
    units: int,
    activation: Callable[[Tensor], Tensor] | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    kernel_regularizer: Any = None,
    bias_regularizer: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """activation(inputs @ kernel + bias); variables "<name>/kernel" and "<name>/bias".

    The kernel defaults to glorot uniform and the bias to zeros, as in TF1. Inputs of rank
    2 only (TF applies the layer to the last axis of higher ranks; reshape first).
    """
    x = convert_to_tensor(inputs)
    shape = x.shape
    if shape.ndims != 2 or shape[1].value is None:
        raise ValueError(
            f"tf.layers.dense needs inputs of shape [batch, features] with the features known, "
            f"got {shape} for {x.name}"
        )
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable(
            "kernel",
            [shape[1].value, units],
            dtype=x.dtype,
            initializer=kernel_initializer or init_ops.glorot_uniform_initializer(),
            regularizer=kernel_regularizer,
            trainable=trainable,
        )
        y = matmul(x, kernel)
        if use_bias:
            bias = get_variable(
                "bias",
                [units],
                dtype=x.dtype,
                initializer=bias_initializer or init_ops.zeros_initializer(),
                regularizer=bias_regularizer,
                trainable=trainable,
            )
            y = bias_add(y, bias)
        return activation(y) if activation is not None else y
