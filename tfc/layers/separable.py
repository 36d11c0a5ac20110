"""`tf.layers` depthwise-separable convolutions: SeparableConv1D, SeparableConv2D and their
functions, with TF1's variable names ("separable_conv2d/depthwise_kernel", "/pointwise_kernel",
"/bias").

Each is tf.nn.separable_conv2d: a depthwise convolution (depth_multiplier outputs per input
channel) and a 1x1 convolution mixing them into `filters` channels. The 1-D layer runs as
TF's does, on its input seen as one-pixel-high images [batch, 1, width, channels].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tfc.ops.array as _array
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import TensorShape
from tfc.layers.base import InputSpec
from tfc.layers.convolutional import Conv
from tfc.ops.conv_depthwise import separable_conv2d as nn_separable_conv2d

__all__ = ["SeparableConv1D", "SeparableConv2D", "separable_conv1d", "separable_conv2d"]


class SeparableConv(Conv):
    """The separable layers' shared part: the depthwise and pointwise kernels."""

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: Any = 1,
        depth_multiplier: int = 1,
        activation: Callable[[Tensor], Tensor] | None = None,
        use_bias: bool = True,
        depthwise_initializer: Any = None,
        pointwise_initializer: Any = None,
        bias_initializer: Any = None,
        depthwise_regularizer: Callable | None = None,
        pointwise_regularizer: Callable | None = None,
        bias_regularizer: Callable | None = None,
        activity_regularizer: Callable | None = None,
        depthwise_constraint: Any = None,
        pointwise_constraint: Any = None,
        bias_constraint: Any = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
            dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
            bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer, bias_constraint=bias_constraint,
            trainable=trainable, name=name, **kwargs,
        )  # fmt: skip
        if int(depth_multiplier) <= 0:
            raise ValueError(
                f"Invalid value for argument `depth_multiplier`. Expected a strictly positive "
                f"value. Received depth_multiplier={depth_multiplier}."
            )
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.depthwise_kernel: Any = None
        self.pointwise_kernel: Any = None

    def build(self, input_shape: Any) -> None:
        input_shape = TensorShape(input_shape)
        input_dim = input_shape[self.channel_axis].value
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self.channel_axis: input_dim})
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            shape=[*self.kernel_size, input_dim, self.depth_multiplier],
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
        )
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            shape=[1] * self.rank + [input_dim * self.depth_multiplier, self.filters],
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                shape=[self.filters],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def convolve(self, inputs: Tensor) -> Tensor:
        """The separable convolution of channels-last inputs."""
        depthwise, pointwise = self.depthwise_kernel, self.pointwise_kernel
        strides, rate, padding = list(self.strides), list(self.dilation_rate), self.padding
        if self.rank == 1:
            if padding == "causal":  # left-pad so output t sees inputs up to t, then VALID
                left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
                inputs = _array.pad(inputs, [[0, 0], [left, 0], [0, 0]])
                padding = "valid"
            inputs = _array.expand_dims(inputs, 1)
            depthwise = _array.expand_dims(depthwise, 0)
            pointwise = _array.expand_dims(pointwise, 0)
            strides, rate = [1, *strides], [1, *rate]
        outputs = nn_separable_conv2d(
            inputs, depthwise, pointwise, [1, *strides, 1], padding.upper(), rate=rate
        )
        return _array.squeeze(outputs, [1]) if self.rank == 1 else outputs


class SeparableConv1D(SeparableConv):
    """`tf.layers.SeparableConv1D`: over [batch, width, channels] (padding "valid", "same" or
    "causal"); depthwise_kernel [k, in, depth_multiplier], pointwise_kernel
    [1, in * depth_multiplier, filters]."""

    rank = 1


class SeparableConv2D(SeparableConv):
    """`tf.layers.SeparableConv2D`: over [batch, height, width, channels]; depthwise_kernel
    [kh, kw, in, depth_multiplier], pointwise_kernel [1, 1, in * depth_multiplier, filters]."""

    rank = 2


def _apply(layer_class: type, inputs: Any, name: str | None, reuse: Any, **kwargs: Any) -> Tensor:
    layer = layer_class(name=name, _scope=name, _reuse=reuse, **kwargs)
    return layer.apply(inputs)


def separable_conv1d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = 1,
    depth_multiplier: int = 1,
    activation: Callable[[Tensor], Tensor] | None = None,
    use_bias: bool = True,
    depthwise_initializer: Any = None,
    pointwise_initializer: Any = None,
    bias_initializer: Any = None,
    depthwise_regularizer: Callable | None = None,
    pointwise_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    depthwise_constraint: Any = None,
    pointwise_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """`tf.layers.separable_conv1d`: a SeparableConv1D layer applied once."""
    return _apply(
        SeparableConv1D, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
        strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate,
        depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
        depthwise_initializer=depthwise_initializer, pointwise_initializer=pointwise_initializer,
        bias_initializer=bias_initializer, depthwise_regularizer=depthwise_regularizer,
        pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
        pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip


def separable_conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
    depth_multiplier: int = 1,
    activation: Callable[[Tensor], Tensor] | None = None,
    use_bias: bool = True,
    depthwise_initializer: Any = None,
    pointwise_initializer: Any = None,
    bias_initializer: Any = None,
    depthwise_regularizer: Callable | None = None,
    pointwise_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    depthwise_constraint: Any = None,
    pointwise_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """`tf.layers.separable_conv2d`: a SeparableConv2D layer applied once; variables
    "<name>/depthwise_kernel", "/pointwise_kernel", "/bias"."""
    return _apply(
        SeparableConv2D, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
        strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate,
        depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
        depthwise_initializer=depthwise_initializer, pointwise_initializer=pointwise_initializer,
        bias_initializer=bias_initializer, depthwise_regularizer=depthwise_regularizer,
        pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
        pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip
