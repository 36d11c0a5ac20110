"""`tf.layers` pooling: MaxPooling1D/2D/3D, AveragePooling1D/2D/3D and their functions.

1-D pooling runs as TF's does: the [batch, width, channels] input seen as one-pixel-wide images
[batch, width, 1, channels], pooled with (pool_size, 1) windows, and squeezed back.
"""

from __future__ import annotations

from typing import Any

import tfc.ops.array as _array
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import TensorShape
from tfc.layers.base import InputSpec, Layer, normalize_data_format
from tfc.layers.convolutional import (
    normalize_padding,
    normalize_tuple,
    output_length,
    to_channels_first,
    to_channels_last,
)
from tfc.ops.conv import avg_pool, max_pool
from tfc.ops.conv3d import avg_pool3d, max_pool3d

__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "average_pooling1d",
    "average_pooling2d",
    "average_pooling3d",
    "max_pooling1d",
    "max_pooling2d",
    "max_pooling3d",
]


class Pooling(Layer):
    """The pooling layers' shared part: `pool` is tf.nn.max_pool or tf.nn.avg_pool."""

    rank = 2
    pool = staticmethod(max_pool)

    def __init__(
        self,
        pool_size: Any,
        strides: Any,
        padding: str = "valid",
        data_format: str = "channels_last",
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        n = self.rank
        self.pool_size = normalize_tuple(pool_size, n, "pool_size")
        self.strides = normalize_tuple(self.pool_size if strides is None else strides, n, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=n + 2)

    def call(self, inputs: Tensor) -> Tensor:
        x = to_channels_last(inputs, self.data_format)
        window, strides = list(self.pool_size), list(self.strides)
        if self.rank == 1:
            x = _array.expand_dims(x, 2)
            window, strides = window + [1], strides + [1]
        y = self.pool(x, [1, *window, 1], [1, *strides, 1], self.padding.upper())
        if self.rank == 1:
            y = _array.squeeze(y, [2])
        return to_channels_first(y, self.data_format)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        if self.data_format == "channels_first":
            dims = [dims[0], *dims[2:], dims[1]]
        spatial = [
            output_length(d, k, self.padding, s, 1)
            for d, k, s in zip(dims[1:-1], self.pool_size, self.strides)
        ]
        out = [dims[0], *spatial, dims[-1]]
        if self.data_format == "channels_first":
            out = [out[0], out[-1], *out[1:-1]]
        return TensorShape(out)


class MaxPooling1D(Pooling):
    """`tf.layers.MaxPooling1D`: the maximum of each window of [batch, width, channels]."""

    rank = 1
    pool = staticmethod(max_pool)


class AveragePooling1D(Pooling):
    """`tf.layers.AveragePooling1D`: the mean of each window (SAME: of the pixels it covers)."""

    rank = 1
    pool = staticmethod(avg_pool)


class MaxPooling2D(Pooling):
    """`tf.layers.MaxPooling2D`: the maximum of each window of [batch, h, w, channels]."""

    rank = 2
    pool = staticmethod(max_pool)


class AveragePooling2D(Pooling):
    """`tf.layers.AveragePooling2D`: the mean of each window (SAME: of the pixels it covers)."""

    rank = 2
    pool = staticmethod(avg_pool)


class MaxPooling3D(Pooling):
    """`tf.layers.MaxPooling3D`: the maximum of each window of [batch, d, h, w, channels]."""

    rank = 3
    pool = staticmethod(max_pool3d)


class AveragePooling3D(Pooling):
    """`tf.layers.AveragePooling3D`: the mean of each 3-D window (SAME: of the voxels it
    covers)."""

    rank = 3
    pool = staticmethod(avg_pool3d)


def _pooled(
    layer_class: type,
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str,
    data_format: str,
    name: str | None,
) -> Tensor:
    layer = layer_class(pool_size, strides, padding=padding, data_format=data_format, name=name)
    return layer.apply(inputs)


def max_pooling1d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """`tf.layers.max_pooling1d`."""
    return _pooled(MaxPooling1D, inputs, pool_size, strides, padding, data_format, name)


def average_pooling1d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """`tf.layers.average_pooling1d`."""
    return _pooled(AveragePooling1D, inputs, pool_size, strides, padding, data_format, name)


def max_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """`tf.layers.max_pooling2d`."""
    return _pooled(MaxPooling2D, inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """`tf.layers.average_pooling2d`."""
    return _pooled(AveragePooling2D, inputs, pool_size, strides, padding, data_format, name)


def max_pooling3d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """`tf.layers.max_pooling3d`."""
    return _pooled(MaxPooling3D, inputs, pool_size, strides, padding, data_format, name)


def average_pooling3d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """`tf.layers.average_pooling3d`."""
    return _pooled(AveragePooling3D, inputs, pool_size, strides, padding, data_format, name)
