"""`tf.layers`: TF1's layers, as classes and as functions, built from get_variable so that
variable names match TF1's ("conv2d/kernel", "batch_normalization/moving_mean")."""

from __future__ import annotations

from tfc.layers.base import InputSpec, Layer
from tfc.layers.convolutional import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    conv1d,
    conv2d,
    conv2d_transpose,
    conv3d,
    conv3d_transpose,
)
from tfc.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from tfc.layers.normalization import BatchNormalization, batch_normalization
from tfc.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
    average_pooling1d,
    average_pooling2d,
    average_pooling3d,
    max_pooling1d,
    max_pooling2d,
    max_pooling3d,
)
from tfc.layers.separable import (
    SeparableConv1D,
    SeparableConv2D,
    separable_conv1d,
    separable_conv2d,
)

__all__ = [
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "BatchNormalization", "Conv1D",
    "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "Dense", "Dropout", "Flatten",
    "InputSpec", "Layer", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "SeparableConv1D",
    "SeparableConv2D", "average_pooling1d", "average_pooling2d", "average_pooling3d",
    "batch_normalization", "conv1d", "conv2d", "conv2d_transpose", "conv3d", "conv3d_transpose",
    "dense", "dropout", "flatten", "max_pooling1d", "max_pooling2d", "max_pooling3d",
    "separable_conv1d", "separable_conv2d",
]  # fmt: skip
