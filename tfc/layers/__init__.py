"""`tf.layers`: TF1's layers, as classes and as functions, built from get_variable so that
variable names match TF1's ("conv2d/kernel", "batch_normalization/moving_mean")."""

from __future__ import annotations

from tfc.layers.base import InputSpec, Layer
from tfc.layers.convolutional import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    conv1d,
    conv2d,
    conv2d_transpose,
)
from tfc.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from tfc.layers.normalization import BatchNormalization, batch_normalization
from tfc.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    MaxPooling1D,
    MaxPooling2D,
    average_pooling1d,
    average_pooling2d,
    max_pooling1d,
    max_pooling2d,
)

__all__ = [
    "AveragePooling1D", "AveragePooling2D", "BatchNormalization", "Conv1D", "Conv2D",
    "Conv2DTranspose", "Dense", "Dropout", "Flatten", "InputSpec", "Layer", "MaxPooling1D",
    "MaxPooling2D", "average_pooling1d", "average_pooling2d", "batch_normalization", "conv1d",
    "conv2d", "conv2d_transpose", "dense", "dropout", "flatten", "max_pooling1d", "max_pooling2d",
]  # fmt: skip

# TF1's layers that tfc lacks, and why: asking for one says so instead of a bare AttributeError
_MISSING = {
    **dict.fromkeys(
        ["Conv3D", "Conv3DTranspose", "conv3d", "conv3d_transpose", "MaxPooling3D",
         "AveragePooling3D", "max_pooling3d", "average_pooling3d"],
        "tfc has no 3-D convolution or pooling ops (Conv3D, MaxPool3D, AvgPool3D)",
    ),
    **dict.fromkeys(
        ["SeparableConv1D", "SeparableConv2D", "separable_conv1d", "separable_conv2d"],
        "tfc has no depthwise convolution op yet (tf.nn.separable_conv2d)",
    ),
}  # fmt: skip


def __getattr__(name: str) -> object:
    if name in _MISSING:
        raise AttributeError(f"tf.layers.{name} is not available in tfc: {_MISSING[name]}")
    raise AttributeError(f"module 'tfc.layers' has no attribute '{name}'")
