"""`tf.layers` convolutions: Conv1D, Conv2D, Conv3D, Conv2DTranspose, Conv3DTranspose and their
functions, with TF1's variable names ("conv2d/kernel", "conv2d/bias") and arguments.

Convolutions run channels last (NHWC); a channels_first layer moves its input's channels last
and its output's back, so its weights and results are those of TF's NCHW layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.init_ops as init_ops
import tfc.ops.array as _array
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import TensorShape
from tfc.layers.base import InputSpec, Layer, normalize_data_format
from tfc.ops.conv import conv2d as nn_conv2d
from tfc.ops.conv3d import conv3d as nn_conv3d
from tfc.ops.conv3d import conv3d_transpose as nn_conv3d_transpose
from tfc.ops.conv_composite import conv1d as nn_conv1d
from tfc.ops.conv_composite import conv2d_transpose as nn_conv2d_transpose
from tfc.ops.nn import bias_add

__all__ = [
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
]


def normalize_tuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    """An int or n ints as a tuple of n ints (Keras's conv_utils.normalize_tuple)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    try:
        values = tuple(value)
    except TypeError:
        values = ()
    if len(values) != n or not all(isinstance(v, (int, np.integer)) for v in values):
        raise ValueError(
            f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
        )
    return tuple(int(v) for v in values)


def normalize_padding(value: Any, allowed: tuple[str, ...] = ("valid", "same")) -> str:
    padding = str(value).lower()
    if padding not in allowed:
        raise ValueError(
            f"The `padding` argument must be one of {', '.join(map(repr, allowed))}. "
            f"Received: {value}"
        )
    return padding


def to_channels_last(x: Tensor, data_format: str) -> Tensor:
    rank = x.shape.ndims
    return x if data_format == "channels_last" else _array.transpose(x, [0, *range(2, rank), 1])


def to_channels_first(x: Tensor, data_format: str) -> Tensor:
    rank = x.shape.ndims
    if data_format == "channels_last":
        return x
    return _array.transpose(x, [0, rank - 1, *range(1, rank - 1)])


def output_length(size: int | None, k: int, padding: str, stride: int, dilation: int) -> int | None:
    """The output length of a convolution along one axis (Keras's conv_output_length)."""
    if size is None:
        return None
    span = (k - 1) * dilation + 1
    if padding == "same" or padding == "causal":
        out = size
    else:
        out = size - span + 1
    return (out + stride - 1) // stride


class Conv(Layer):
    """The convolution layers' shared part: arguments, weights, bias and activation."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: Any = 1,
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
        n = self.rank
        self.filters = int(filters)
        if self.filters <= 0:
            raise ValueError(
                f"Invalid value for argument `filters`. Expected a strictly positive value. "
                f"Received filters={filters}."
            )
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size")
        self.strides = normalize_tuple(strides, n, "strides")
        allowed = ("valid", "same", "causal") if n == 1 else ("valid", "same")
        self.padding = normalize_padding(padding, allowed)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or init_ops.zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(ndim=n + 2)
        self.kernel: Any = None
        self.bias: Any = None

    @property
    def channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def kernel_shape(self, input_dim: int) -> list[int]:
        return [*self.kernel_size, input_dim, self.filters]

    def build(self, input_shape: Any) -> None:
        input_shape = TensorShape(input_shape)
        input_dim = input_shape[self.channel_axis].value
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self.channel_axis: input_dim})
        self.kernel = self.add_weight(
            "kernel",
            shape=self.kernel_shape(input_dim),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
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
        """The convolution of channels-last inputs with the kernel."""
        padding = self.padding
        if padding == "causal":  # left-pad so output t sees inputs up to t, then VALID
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            inputs = _array.pad(inputs, [[0, 0], [left, 0], [0, 0]])
            padding = "valid"
        if self.rank == 1:
            return nn_conv1d(
                inputs,
                self.kernel,
                self.strides[0],
                padding.upper(),
                dilations=self.dilation_rate[0],
            )
        conv = nn_conv3d if self.rank == 3 else nn_conv2d
        return conv(
            inputs,
            self.kernel,
            strides=[1, *self.strides, 1],
            padding=padding.upper(),
            dilations=[1, *self.dilation_rate, 1],
        )

    def call(self, inputs: Tensor) -> Tensor:
        outputs = self.convolve(to_channels_last(inputs, self.data_format))
        if self.use_bias:
            outputs = bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return to_channels_first(outputs, self.data_format)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        if self.data_format == "channels_first":
            dims = [dims[0], *dims[2:], dims[1]]
        spatial = [
            output_length(d, k, self.padding, s, r)
            for d, k, s, r in zip(dims[1:-1], self.kernel_size, self.strides, self.dilation_rate)
        ]
        out = [dims[0], *spatial, self.filters]
        if self.data_format == "channels_first":
            out = [out[0], out[-1], *out[1:-1]]
        return TensorShape(out)


class Conv1D(Conv):
    """`tf.layers.Conv1D`: a convolution over [batch, width, channels] (padding "valid",
    "same" or "causal"); kernel [kernel_size, in, filters]."""

    rank = 1


class Conv2D(Conv):
    """`tf.layers.Conv2D`: a convolution over [batch, height, width, channels]; kernel
    [kh, kw, in, filters]."""

    rank = 2


class Conv3D(Conv):
    """`tf.layers.Conv3D`: a convolution over [batch, depth, height, width, channels]; kernel
    [kd, kh, kw, in, filters]."""

    rank = 3


class Conv2DTranspose(Conv2D):
    """`tf.layers.Conv2DTranspose`: the transpose of a Conv2D (a "deconvolution"): kernel
    [kh, kw, filters, in]; each spatial size becomes size * stride (SAME) or
    size * stride + max(k - stride, 0) (VALID)."""

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str = "channels_last",
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
            filters,
            kernel_size,
            strides=strides,
            padding=padding,
            data_format=data_format,
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
            **kwargs,
        )

    def kernel_shape(self, input_dim: int) -> list[int]:
        return [*self.kernel_size, self.filters, input_dim]

    def transposed_length(self, size: Any, axis: int) -> Any:
        k, s = self.kernel_size[axis], self.strides[axis]
        if self.padding == "same":
            return size * s
        return size * s + max(k - s, 0)

    def convolve(self, inputs: Tensor) -> Tensor:
        dims = inputs.shape.as_list()
        dynamic = _array.shape(inputs)
        spatial = [
            self.transposed_length(d if d is not None else dynamic[k + 1], k)
            for k, d in enumerate(dims[1 : 1 + self.rank])
        ]
        output_shape = _array.stack([dynamic[0], *spatial, self.filters])
        transpose = nn_conv3d_transpose if self.rank == 3 else nn_conv2d_transpose
        outputs = transpose(
            inputs,
            self.kernel,
            output_shape,
            strides=[1, *self.strides, 1],
            padding=self.padding.upper(),
        )
        static = [
            None if d is None else self.transposed_length(d, k)
            for k, d in enumerate(dims[1 : 1 + self.rank])
        ]
        outputs.set_shape([dims[0], *static, self.filters])
        return outputs

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        if self.data_format == "channels_first":
            dims = [dims[0], *dims[2:], dims[1]]
        spatial = [
            None if d is None else self.transposed_length(d, k)
            for k, d in enumerate(dims[1 : 1 + self.rank])
        ]
        out = [dims[0], *spatial, self.filters]
        if self.data_format == "channels_first":
            out = [out[0], out[-1], *out[1:-1]]
        return TensorShape(out)


class Conv3DTranspose(Conv2DTranspose):
    """`tf.layers.Conv3DTranspose`: the transpose of a Conv3D: kernel [kd, kh, kw, filters, in],
    each spatial size grown as Conv2DTranspose grows it."""

    rank = 3


def _apply(layer_class: type, inputs: Any, name: str | None, reuse: Any, **kwargs: Any) -> Tensor:
    layer = layer_class(name=name, _scope=name, _reuse=reuse, **kwargs)
    return layer.apply(inputs)


def conv1d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = 1,
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
    """`tf.layers.conv1d`: a Conv1D layer applied once."""
    return _apply(
        Conv1D, inputs, name, reuse, filters=filters, kernel_size=kernel_size, strides=strides,
        padding=padding, data_format=data_format, dilation_rate=dilation_rate,
        activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip


def conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
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
    """`tf.layers.conv2d`: a Conv2D layer applied once; variables "<name>/kernel", "/bias"."""
    return _apply(
        Conv2D, inputs, name, reuse, filters=filters, kernel_size=kernel_size, strides=strides,
        padding=padding, data_format=data_format, dilation_rate=dilation_rate,
        activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip


def conv2d_transpose(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
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
    """`tf.layers.conv2d_transpose`: a Conv2DTranspose layer applied once."""
    return _apply(
        Conv2DTranspose, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
        strides=strides, padding=padding, data_format=data_format, activation=activation,
        use_bias=use_bias, kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip


def conv3d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1, 1),
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
    """`tf.layers.conv3d`: a Conv3D layer applied once; variables "<name>/kernel", "/bias"."""
    return _apply(
        Conv3D, inputs, name, reuse, filters=filters, kernel_size=kernel_size, strides=strides,
        padding=padding, data_format=data_format, dilation_rate=dilation_rate,
        activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip


def conv3d_transpose(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
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
    """`tf.layers.conv3d_transpose`: a Conv3DTranspose layer applied once."""
    return _apply(
        Conv3DTranspose, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
        strides=strides, padding=padding, data_format=data_format, activation=activation,
        use_bias=use_bias, kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable,
    )  # fmt: skip
