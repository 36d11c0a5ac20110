"""`tf.contrib.layers`: fully_connected and contrib's initializers, with contrib's variable names
(`fully_connected/weights`, `fully_connected/biases`) and formulas."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import tfc.init_ops as init_ops
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, get_default_graph
from tfc.ops.array import reshape
from tfc.ops.constant import convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.nn import bias_add
from tfc.ops.nn import relu as nn_relu
from tfc.ops.random import random_uniform, truncated_normal
from tfc.variables import get_variable, variable_scope

__all__ = [
    "fully_connected",
    "linear",
    "relu",
    "variance_scaling_initializer",
    "xavier_initializer",
    "xavier_initializer_conv2d",
]

_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def variance_scaling_initializer(
    factor: float = 2.0,
    mode: str = "FAN_IN",
    uniform: bool = False,
    seed: int | None = None,
    dtype: Any = _dt.float32,
) -> Callable[..., Tensor]:
    """contrib's He initializer: variance factor / n, n the fan in, out or their mean.

    Uniform in [-sqrt(3 factor / n), +sqrt(3 factor / n)], or a normal truncated at two
    standard deviations with stddev sqrt(1.3 factor / n) (contrib's formula; the core
    tf.variance_scaling_initializer corrects the truncation differently).
    """
    dtype = _dt.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def initializer(shape: Any, dtype: Any = dtype, partition_info: Any = None) -> Tensor:
        dtype = _dt.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        shape = [int(d) for d in shape]
        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1]) if shape else 1.0
        fan_out = float(shape[-1]) if shape else 1.0
        for dim in shape[:-2]:  # convolution kernels: the receptive field counts in both fans
            fan_in *= dim
            fan_out *= dim
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_uniform(shape, -limit, limit, dtype, seed=seed)
        return truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype, seed=seed)

    return initializer


def xavier_initializer(
    uniform: bool = True, seed: int | None = None, dtype: Any = _dt.float32
) -> Callable[..., Tensor]:
    """Glorot & Bengio's initializer: variance_scaling_initializer(1.0, "FAN_AVG", uniform)."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


def _add_to_collections(value: Any, collections: Any, key: str) -> None:
    """`collections` is a list of collection names or a dict key -> list of names."""
    if isinstance(collections, dict):
        collections = collections.get(key)
    if collections:
        get_default_graph().add_to_collections(list(collections), value)


def fully_connected(
    inputs: Any,
    num_outputs: int,
    activation_fn: Callable[[Tensor], Tensor] | None = nn_relu,
    normalizer_fn: Callable[..., Tensor] | None = None,
    normalizer_params: dict | None = None,
    weights_initializer: Any = None,
    weights_regularizer: Any = None,
    biases_initializer: Any = "zeros",
    biases_regularizer: Any = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: str | None = None,
) -> Tensor:
    """activation_fn(normalizer_fn(inputs @ weights [+ biases])) over the last axis of inputs.

    Variables `<scope>/weights` (xavier uniform by default) and `<scope>/biases` (zeros; none
    when biases_initializer is None or a normalizer_fn is given), in the model variables, as
    contrib creates them; the scope defaults to "fully_connected", made unique.
    """
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of [int], got {type(num_outputs)}.")
    if weights_initializer is None:
        weights_initializer = xavier_initializer()
    if isinstance(biases_initializer, str):  # the default: a fresh zeros initializer per call
        biases_initializer = init_ops.zeros_initializer()
    collections = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    with variable_scope(scope, default_name="fully_connected", reuse=reuse):
        x = convert_to_tensor(inputs)
        dims = x.shape.as_list() if x.shape.ndims is not None else None
        if not dims or len(dims) < 2 or dims[-1] is None:
            raise ValueError(
                f"fully_connected needs inputs of rank >= 2 with the last dimension known, got "
                f"{x.shape} for {x.name}"
            )
        if len(dims) > 2 and any(d is None for d in dims[1:-1]):
            raise ValueError(
                f"fully_connected: inputs of rank {len(dims)} need every dimension but the "
                f"first known, got {x.shape}"
            )
        weights = get_variable(
            "weights",
            [dims[-1], num_outputs],
            dtype=x.dtype,
            initializer=weights_initializer,
            regularizer=weights_regularizer,
            trainable=trainable,
            collections=collections,
        )
        _add_to_collections(weights, variables_collections, "weights")
        flat = reshape(x, [-1, dims[-1]]) if len(dims) > 2 else x
        y = matmul(flat, weights)
        if biases_initializer is not None and normalizer_fn is None:
            biases = get_variable(
                "biases",
                [num_outputs],
                dtype=x.dtype,
                initializer=biases_initializer,
                regularizer=biases_regularizer,
                trainable=trainable,
                collections=collections,
            )
            _add_to_collections(biases, variables_collections, "biases")
            y = bias_add(y, biases)
        if len(dims) > 2:
            y = reshape(y, [-1, *dims[1:-1], num_outputs])
        if normalizer_fn is not None:
            y = normalizer_fn(y, **(normalizer_params or {}))
        if activation_fn is not None:
            y = activation_fn(y)
        _add_to_collections(y, outputs_collections, "outputs")
        return y


linear = functools.partial(fully_connected, activation_fn=None)
relu = functools.partial(fully_connected, activation_fn=nn_relu)


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.layers.{name} is not part of tfc: it provides {', '.join(__all__)}"
    )
