"""`tf.contrib.layers`: fully_connected, conv2d, the pools, flatten, dropout, batch_norm,
one_hot_encoding, contrib's initializers and regularizers, with contrib's variable names
(`fully_connected/weights`, `Conv/biases`, `BatchNorm/moving_mean`) and formulas.

The convolution and pooling functions take TF's "NHWC"/"NCHW"-style data_format: NCHW input
is moved channels last, computed there and moved back, so the weights are the same either way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.init_ops as init_ops
import tfc.ops.array as _array
from tfc.contrib.framework import add_arg_scope
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, control_dependencies, get_default_graph, name_scope
from tfc.layers.core import Dropout
from tfc.layers.normalization import BatchNormalization
from tfc.layers.regularizers import (
    apply_regularization,
    l1_l2_regularizer,
    l1_regularizer,
    l2_regularizer,
    sum_regularizer,
)
from tfc.ops.array import reshape
from tfc.ops.array_index import one_hot
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv import avg_pool, max_pool
from tfc.ops.conv import conv2d as nn_conv2d
from tfc.ops.conv3d import conv3d as nn_conv3d
from tfc.ops.conv_composite import conv1d as nn_conv1d
from tfc.ops.linalg import matmul
from tfc.ops.nn import bias_add
from tfc.ops.nn import relu as nn_relu
from tfc.ops.random import random_uniform, truncated_normal
from tfc.variables import get_variable, variable_scope

__all__ = [
    "apply_regularization",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "convolution",
    "convolution2d",
    "dropout",
    "flatten",
    "fully_connected",
    "l1_l2_regularizer",
    "l1_regularizer",
    "l2_regularizer",
    "linear",
    "max_pool2d",
    "one_hot_encoding",
    "relu",
    "sum_regularizer",
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


@add_arg_scope
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


def _channels_last(x: Tensor, data_format: str | None, what: str) -> bool:
    """Whether `x` (of data_format "NHWC"-style, or "NCHW"-style: "NCW", "NCDHW") has its
    channels first; other formats are errors."""
    if data_format is None:
        return False
    if data_format not in ("NWC", "NHWC", "NDHWC", "NCW", "NCHW", "NCDHW"):
        raise ValueError(f"{what}: data_format has to be NHWC-style or NCHW-style, got "
                         f"{data_format!r}")  # fmt: skip
    return data_format.startswith("NC")


def _to_last(x: Tensor) -> Tensor:
    return _array.transpose(x, [0, *range(2, x.shape.ndims), 1])


def _to_first(x: Tensor) -> Tensor:
    return _array.transpose(x, [0, x.shape.ndims - 1, *range(1, x.shape.ndims - 1)])


def _spatial(value: Any, n: int, what: str) -> list[int]:
    values = [int(value)] * n if isinstance(value, int) else [int(v) for v in value]
    if len(values) != n:
        raise ValueError(f"{what} must be an int or {n} ints, got {value!r}")
    return values


@add_arg_scope
def convolution(
    inputs: Any,
    num_outputs: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: str = "SAME",
    data_format: str | None = None,
    rate: Any = 1,
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
    """`tf.contrib.layers.convolution`: an N-D convolution (N = 1, 2 or 3 from the rank of
    inputs) with `<scope>/weights` [*kernel_size, in, num_outputs] and `<scope>/biases`,
    then normalizer_fn and activation_fn; the scope defaults to "Conv", made unique."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims not in (3, 4, 5):
        raise ValueError(f"Convolution expects input with rank 3, 4 or 5, got {x.shape}")
    n = x.shape.ndims - 2
    first = _channels_last(x, data_format, "convolution")
    if weights_initializer is None:
        weights_initializer = xavier_initializer()
    if isinstance(biases_initializer, str):
        biases_initializer = init_ops.zeros_initializer()
    kernel = _spatial(kernel_size, n, "kernel_size")
    strides, rates = _spatial(stride, n, "stride"), _spatial(rate, n, "rate")
    collections = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    with variable_scope(scope, default_name="Conv", values=[x], reuse=reuse):
        x = _to_last(x) if first else x
        channels = x.shape.as_list()[-1]
        if channels is None:
            raise ValueError(f"convolution needs the channels of its input known, got {x.shape}")
        weights = get_variable(
            "weights", [*kernel, channels, num_outputs], dtype=x.dtype,
            initializer=weights_initializer, regularizer=weights_regularizer,
            trainable=trainable, collections=collections,
        )  # fmt: skip
        _add_to_collections(weights, variables_collections, "weights")
        padding = padding.upper()
        if n == 1:
            y = nn_conv1d(x, weights, strides[0], padding, dilations=rates[0])
        else:
            conv = nn_conv2d if n == 2 else nn_conv3d
            y = conv(x, weights, [1, *strides, 1], padding, dilations=[1, *rates, 1])
        if biases_initializer is not None and normalizer_fn is None:
            biases = get_variable(
                "biases", [num_outputs], dtype=x.dtype, initializer=biases_initializer,
                regularizer=biases_regularizer, trainable=trainable, collections=collections,
            )  # fmt: skip
            _add_to_collections(biases, variables_collections, "biases")
            y = bias_add(y, biases)
        y = _to_first(y) if first else y
        if normalizer_fn is not None:
            y = normalizer_fn(y, **(normalizer_params or {}))
        if activation_fn is not None:
            y = activation_fn(y)
        _add_to_collections(y, outputs_collections, "outputs")
        return y


convolution2d = convolution
conv2d = convolution


def _pool2d(
    pool: Callable[..., Tensor],
    default_name: str,
    inputs: Any,
    kernel_size: Any,
    stride: Any,
    padding: str,
    data_format: str,
    outputs_collections: Any,
    scope: str | None,
) -> Tensor:
    x = convert_to_tensor(inputs)
    if x.shape.ndims != 4:
        raise ValueError(f"{default_name} expects input of rank 4, got {x.shape}")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    window, strides = _spatial(kernel_size, 2, "kernel_size"), _spatial(stride, 2, "stride")
    with name_scope(scope, default_name, [x]):
        first = data_format == "NCHW"
        y = pool(_to_last(x) if first else x, [1, *window, 1], [1, *strides, 1], padding.upper())
        y = _to_first(y) if first else y
        _add_to_collections(y, outputs_collections, "outputs")
        return y


@add_arg_scope
def max_pool2d(
    inputs: Any,
    kernel_size: Any,
    stride: Any = 2,
    padding: str = "VALID",
    data_format: str = "NHWC",
    outputs_collections: Any = None,
    scope: str | None = None,
) -> Tensor:
    """`tf.contrib.layers.max_pool2d`: the maximum of each kernel_size window."""
    return _pool2d(max_pool, "MaxPool2D", inputs, kernel_size, stride, padding, data_format,
                   outputs_collections, scope)  # fmt: skip


@add_arg_scope
def avg_pool2d(
    inputs: Any,
    kernel_size: Any,
    stride: Any = 2,
    padding: str = "VALID",
    data_format: str = "NHWC",
    outputs_collections: Any = None,
    scope: str | None = None,
) -> Tensor:
    """`tf.contrib.layers.avg_pool2d`: the mean of each kernel_size window."""
    return _pool2d(avg_pool, "AvgPool2D", inputs, kernel_size, stride, padding, data_format,
                   outputs_collections, scope)  # fmt: skip


@add_arg_scope
def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> Tensor:
    """`tf.contrib.layers.flatten`: [batch, ...] reshaped to [batch, product of the rest]."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims is None or x.shape.ndims < 2:
        raise ValueError(f"Inputs must have a least 2 dimensions, got {x.shape}")
    with name_scope(scope, "Flatten", [x]):
        dims = x.shape.as_list()
        if None not in dims[1:]:
            shape: Any = [-1, int(np.prod(dims[1:]))]
        elif dims[0] is not None:
            shape = [dims[0], -1]
        else:  # neither known when the graph is built: the batch size read at run time
            shape = _array.stack([_array.shape(x)[0], -1])
        y = reshape(x, shape)
        _add_to_collections(y, outputs_collections, "outputs")
        return y


@add_arg_scope
def dropout(
    inputs: Any,
    keep_prob: float = 0.5,
    noise_shape: Any = None,
    is_training: Any = True,
    outputs_collections: Any = None,
    scope: str | None = None,
    seed: int | None = None,
) -> Tensor:
    """`tf.contrib.layers.dropout`: keeps each entry with probability keep_prob, scaled by
    1 / keep_prob, while is_training (a bool or a bool tensor); the inputs otherwise."""
    with name_scope(scope, "Dropout", [inputs]) as name:
        layer = Dropout(1 - keep_prob, noise_shape=noise_shape, seed=seed, name=name)
        y = layer.apply(inputs, training=is_training)
        _add_to_collections(y, outputs_collections, "outputs")
        return y


@add_arg_scope
def batch_norm(
    inputs: Any,
    decay: float = 0.999,
    center: bool = True,
    scale: bool = False,
    epsilon: float = 0.001,
    activation_fn: Callable[[Tensor], Tensor] | None = None,
    param_initializers: dict | None = None,
    param_regularizers: dict | None = None,
    updates_collections: Any = GraphKeys.UPDATE_OPS,
    is_training: Any = True,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    batch_weights: Any = None,
    fused: bool | None = None,
    data_format: str = "NHWC",
    zero_debias_moving_mean: bool = False,
    scope: str | None = None,
    renorm: bool = False,
    renorm_clipping: Any = None,
    renorm_decay: float = 0.99,
    adjustment: Any = None,
) -> Tensor:
    """`tf.contrib.layers.batch_norm`: tf.layers.batch_normalization with contrib's defaults
    (decay 0.999, no gamma unless scale=True) and names (`BatchNorm/beta`,
    `BatchNorm/moving_mean`), over the last axis (NHWC) or axis 1 (NCHW). The moving averages'
    updates join `updates_collections`, or, when it is None, run with the output."""
    if batch_weights is not None or zero_debias_moving_mean:
        raise NotImplementedError(
            "tf.contrib.layers.batch_norm: batch_weights and zero_debias_moving_mean are not "
            "supported by tfc"
        )
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    x = convert_to_tensor(inputs)
    if x.shape.ndims is None:
        raise ValueError(f"Inputs {x.name} has undefined rank.")
    initializers = param_initializers or {}
    regularizers = param_regularizers or {}
    with variable_scope(scope, default_name="BatchNorm", values=[x], reuse=reuse) as sc:
        layer = BatchNormalization(
            axis=1 if data_format == "NCHW" and x.shape.ndims > 2 else -1, momentum=decay,
            epsilon=epsilon, center=center, scale=scale,
            beta_initializer=initializers.get("beta"), gamma_initializer=initializers.get("gamma"),
            moving_mean_initializer=initializers.get("moving_mean"),
            moving_variance_initializer=initializers.get("moving_variance"),
            beta_regularizer=regularizers.get("beta"), gamma_regularizer=regularizers.get("gamma"),
            renorm=renorm, renorm_clipping=renorm_clipping, renorm_momentum=renorm_decay,
            adjustment=adjustment, fused=fused, trainable=trainable, name=sc.name, _scope=sc,
            _reuse=reuse,
        )  # fmt: skip
        graph = get_default_graph()
        before = list(graph.get_collection(GraphKeys.UPDATE_OPS))
        y = layer.apply(x, training=is_training)
        updates = [u for u in graph.get_collection(GraphKeys.UPDATE_OPS) if u not in before]
        if updates_collections != GraphKeys.UPDATE_OPS and updates:
            collection = graph.get_collection_ref(GraphKeys.UPDATE_OPS)
            collection[:] = [u for u in collection if u not in updates]
            if updates_collections is None:  # contrib's "force in-place updates"
                with control_dependencies(updates):
                    y = _array.identity(y)
            else:
                _add_to_collections_list(updates, updates_collections)
        for name in ("beta", "gamma", "moving_mean", "moving_variance"):
            variable = getattr(layer, name, None)
            if variable is not None:
                _add_to_collections(variable, variables_collections, name)
        if activation_fn is not None:
            y = activation_fn(y)
        _add_to_collections(y, outputs_collections, "outputs")
        return y


def _add_to_collections_list(values: list, collections: Any) -> None:
    names = [collections] if isinstance(collections, str) else list(collections)
    for value in values:
        get_default_graph().add_to_collections(names, value)


@add_arg_scope
def one_hot_encoding(
    labels: Any,
    num_classes: int,
    on_value: float = 1.0,
    off_value: float = 0.0,
    outputs_collections: Any = None,
    scope: str | None = None,
) -> Tensor:
    """`tf.contrib.layers.one_hot_encoding`: labels as one-hot float rows of num_classes."""
    with name_scope(scope, "OneHotEncoding", [labels]):
        y = one_hot(labels, num_classes, on_value=on_value, off_value=off_value)
        _add_to_collections(y, outputs_collections, "outputs")
        return y


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.layers.{name} is not part of tfc: it provides {', '.join(__all__)}"
    )
