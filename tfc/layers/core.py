"""`tf.layers` core layers: Dense, Dropout, Flatten, and their functions (dense, dropout,
flatten), with TF1's variable names ("dense/kernel", "dense/bias") and op names."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import tfc.init_ops as init_ops
import tfc.ops.array as _array
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import TensorShape
from tfc.layers.base import InputSpec, Layer, normalize_data_format, static_training
from tfc.ops.linalg import matmul
from tfc.ops.logic import where
from tfc.ops.nn import bias_add
from tfc.ops.nn import dropout as nn_dropout

__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]


class Dense(Layer):
    """`tf.layers.Dense`: activation(inputs @ kernel + bias) over the last axis of the inputs.

    The kernel defaults to glorot uniform and the bias to zeros, as in TF1; inputs of rank
    above 2 are multiplied along their last axis (TF's tensordot), keeping the others.
    """

    def __init__(
        self,
        units: int,
        activation: Callable[[Tensor], Tensor] | None = None,
        use_bias: bool = True,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        kernel_regularizer: Callable | None = None,
        bias_regularizer: Callable | None = None,
        activity_regularizer: Callable | None = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs
        )
        self.units = int(units)
        if self.units <= 0:
            raise ValueError(
                f"Received an invalid value for `units`, expected a positive integer, got {units}."
            )
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or init_ops.zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(min_ndim=2)
        self.kernel: Any = None
        self.bias: Any = None

    def build(self, input_shape: Any) -> None:
        input_shape = TensorShape(input_shape)
        last = input_shape[-1].value if input_shape.ndims else None
        if last is None:
            raise ValueError(
                "The last dimension of the inputs to `Dense` should be defined. Found `None`."
            )
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight(
            "kernel",
            shape=[last, self.units],
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                shape=[self.units],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def call(self, inputs: Tensor) -> Tensor:
        rank = inputs.shape.ndims
        if rank is None or rank == 2:
            outputs = matmul(inputs, self.kernel)
        else:
            # the last axis against the kernel, the others kept: [-1, in] @ kernel, reshaped back
            flat = _array.reshape(inputs, [-1, self.kernel.shape[0].value])
            product = matmul(flat, self.kernel)
            leading = _array.shape(inputs)[:-1]
            outputs = _array.reshape(product, _array.concat([leading, [self.units]], 0))
            outputs.set_shape(inputs.shape.as_list()[:-1] + [self.units])
        if self.use_bias:
            outputs = bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(TensorShape(input_shape).as_list()[:-1] + [self.units])


def dense(
    inputs: Any,
    units: int,
    activation: Callable[[Tensor], Tensor] | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    kernel_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """`tf.layers.dense`: a Dense layer applied once; variables "<name>/kernel", "<name>/bias"."""
    layer = Dense(
        units,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint,
        bias_constraint=bias_constraint,
        trainable=trainable,
        name=name,
        _scope=name,
        _reuse=reuse,
    )
    return layer.apply(inputs)


class Dropout(Layer):
    """`tf.layers.Dropout`: tf.nn.dropout(inputs, rate) when training, the inputs otherwise;
    `training` may be a bool tensor, which selects between the two at run time."""

    def __init__(
        self,
        rate: float = 0.5,
        noise_shape: Any = None,
        seed: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(
                f"Invalid value {rate} received for `rate`, expected a value between 0 and 1."
            )
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        training = static_training(training)
        if training is False:
            return _array.identity(inputs)
        if isinstance(self.rate, (int, float)) and self.rate == 1:
            dropped = _array.zeros_like(inputs)  # everything dropped (tf.nn.dropout refuses 1)
        else:
            dropped = nn_dropout(
                inputs, noise_shape=self.noise_shape, seed=self.seed, rate=self.rate
            )
        return dropped if training is True else where(training, dropped, inputs)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)


def dropout(
    inputs: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: int | None = None,
    training: Any = False,
    name: str | None = None,
) -> Tensor:
    """`tf.layers.dropout`: inputs with a fraction `rate` of entries zeroed and the rest scaled
    by 1 / (1 - rate), when `training` (a bool or a bool tensor); the inputs otherwise."""
    layer = Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)
    return layer.apply(inputs, training=training)


class Flatten(Layer):
    """`tf.layers.Flatten`: [batch, ...] to [batch, product of the rest] (channels_first
    inputs are first moved to channels last, so both flatten alike)."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs: Tensor) -> Tensor:
        shape = inputs.shape
        rank = shape.ndims
        if rank is None:
            raise ValueError(f"{self.name}: Flatten needs the rank of its inputs")
        if self.data_format == "channels_first" and rank > 2:
            inputs = _array.transpose(inputs, [0, *range(2, rank), 1])
            shape = inputs.shape
        if rank == 1:
            return _array.expand_dims(inputs, 1)
        rest = shape.as_list()[1:]
        if all(d is not None for d in rest):
            return _array.reshape(inputs, [-1, functools.reduce(operator.mul, rest, 1)])
        if shape[0].value is not None:
            return _array.reshape(inputs, [shape[0].value, -1])
        return _array.reshape(inputs, _array.stack([_array.shape(inputs)[0], -1]))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        rest = dims[1:]
        total = None if any(d is None for d in rest) else functools.reduce(operator.mul, rest, 1)
        return TensorShape([dims[0], total])


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """`tf.layers.flatten`: [batch, ...] reshaped to [batch, product of the rest]."""
    return Flatten(name=name, data_format=data_format).apply(inputs)
