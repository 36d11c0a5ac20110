"""Initializers for tf.get_variable: callables (shape, dtype) -> Tensor, as TF1's init_ops."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ops.array import expand_dims, fill, ones, reshape, zeros
from tfc.ops.constant import constant
from tfc.ops.linalg_decomp import qr
from tfc.ops.linalg_structure import eye, matrix_diag_part, matrix_transpose
from tfc.ops.math import multiply, sign
from tfc.ops.random import random_normal, random_uniform, truncated_normal

__all__ = [
    "Initializer",
    "zeros_initializer",
    "ones_initializer",
    "constant_initializer",
    "random_uniform_initializer",
    "random_normal_initializer",
    "truncated_normal_initializer",
    "variance_scaling_initializer",
    "glorot_uniform_initializer",
    "glorot_normal_initializer",
    "orthogonal_initializer",
    "uniform_unit_scaling_initializer",
]


class Initializer:
    dtype: _dt.DType = _dt.float32

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def _dtype(self, dtype: Any) -> _dt.DType:
        return _dt.as_dtype(dtype) if dtype is not None else self.dtype


class zeros_initializer(Initializer):  # noqa: N801  TF1 spells these in lower case
    def __init__(self, dtype: Any = _dt.float32) -> None:
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return zeros(shape, self._dtype(dtype))


class ones_initializer(Initializer):  # noqa: N801
    def __init__(self, dtype: Any = _dt.float32) -> None:
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return ones(shape, self._dtype(dtype))


class constant_initializer(Initializer):  # noqa: N801
    """A scalar fills the shape; a list or array must have the shape's number of elements."""

    def __init__(
        self, value: Any = 0, dtype: Any = _dt.float32, verify_shape: bool = False
    ) -> None:
        self.value = value
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        if np.ndim(self.value) == 0:
            return fill(shape, constant(self.value, dtype))
        return constant(self.value, dtype=dtype, shape=shape)


class random_uniform_initializer(Initializer):  # noqa: N801
    def __init__(
        self, minval: Any = 0, maxval: Any = None, seed: Any = None, dtype: Any = _dt.float32
    ) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        maxval = 1 if self.maxval is None else self.maxval
        return random_uniform(shape, self.minval, maxval, self._dtype(dtype), seed=self.seed)


class random_normal_initializer(Initializer):  # noqa: N801
    def __init__(
        self, mean: Any = 0.0, stddev: Any = 1.0, seed: Any = None, dtype: Any = _dt.float32
    ) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_normal(shape, self.mean, self.stddev, self._dtype(dtype), seed=self.seed)


class truncated_normal_initializer(Initializer):  # noqa: N801
    def __init__(
        self, mean: Any = 0.0, stddev: Any = 1.0, seed: Any = None, dtype: Any = _dt.float32
    ) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return truncated_normal(shape, self.mean, self.stddev, self._dtype(dtype), seed=self.seed)


def _fans(shape: list[int]) -> tuple[float, float]:
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))  # convolution kernels: [h, w, in, out]
    return shape[-2] * receptive, shape[-1] * receptive


class variance_scaling_initializer(Initializer):  # noqa: N801
    """Samples with variance scale / n, n being fan_in, fan_out or their mean (TF1 semantics)."""

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: Any = None,
        dtype: Any = _dt.float32,
    ) -> None:
        if scale <= 0.0:
            raise ValueError("`scale` must be a positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode}")
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        shape = list(shape)
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(scale) / 0.87962566103423978  # std of a unit normal cut at 2
            return truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_uniform(shape, -limit, limit, dtype, seed=self.seed)


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801
    """Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)): get_variable's default."""

    def __init__(self, seed: Any = None, dtype: Any = _dt.float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801
    def __init__(self, seed: Any = None, dtype: Any = _dt.float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


def _float_dtype(dtype: Any) -> _dt.DType:
    dtype = _dt.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


class orthogonal_initializer(Initializer):  # noqa: N801
    """An orthogonal matrix times `gain` (Saxe et al., 2014), as TF1 makes it: a normal
    sample of [max(rows, cols), min(rows, cols)] (rows: the product of all dims but the last),
    its QR decomposition, Q's columns signed by diag(R) so the distribution is uniform,
    transposed when rows < cols, reshaped to the shape."""

    def __init__(self, gain: float = 1.0, seed: Any = None, dtype: Any = _dt.float32) -> None:
        self.gain, self.seed = gain, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(self._dtype(dtype))
        shape = [int(d) for d in shape]
        if len(shape) < 2:
            raise ValueError(
                "The tensor to initialize must be at least two-dimensional. Received: "
                f"shape={shape} of rank {len(shape)}."
            )
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        a = random_normal(flat, dtype=dtype, seed=self.seed)
        q, r = qr(a, full_matrices=False)
        q = multiply(q, expand_dims(sign(matrix_diag_part(r)), 0))
        if rows < cols:
            q = matrix_transpose(q)
        return multiply(constant(self.gain, dtype), reshape(q, shape))


class uniform_unit_scaling_initializer(Initializer):  # noqa: N801
    """Uniform in [-m, m], m = factor * sqrt(3 / input size), the input size being the
    product of all dims but the last (TF1's estimate for matmuls and convolutions), so the
    scale of the inputs is kept through a linear layer."""

    def __init__(self, factor: float = 1.0, seed: Any = None, dtype: Any = _dt.float32) -> None:
        self.factor, self.seed = factor, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        scale_shape = shape if partition_info is None else partition_info.full_shape
        input_size = 1.0
        for dim in list(scale_shape)[:-1]:
            input_size *= float(dim)
        input_size = max(input_size, 1.0)  # zero-size tensors
        limit = math.sqrt(3 / input_size) * self.factor
        return random_uniform(shape, -limit, limit, dtype, seed=self.seed)


class identity_initializer(Initializer):  # noqa: N801
    """`tf.initializers.identity`: `gain` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0, dtype: Any = _dt.float32) -> None:
        self.gain = gain
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        full_shape = list(shape if partition_info is None else partition_info.full_shape)
        if len(full_shape) != 2:
            raise ValueError(
                "The tensor to initialize, specified by argument `shape` must be at least "
                f"two-dimensional. Received shape={shape}"
            )
        return multiply(constant(self.gain, dtype), eye(*[int(d) for d in full_shape], dtype=dtype))


def he_normal(seed: Any = None) -> variance_scaling_initializer:
    """He et al.'s initializer: a truncated normal of variance 2 / fan_in."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: Any = None) -> variance_scaling_initializer:
    """He et al.'s uniform initializer: variance 2 / fan_in."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: Any = None) -> variance_scaling_initializer:
    """LeCun's initializer: a truncated normal of variance 1 / fan_in."""
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: Any = None) -> variance_scaling_initializer:
    """LeCun's uniform initializer: variance 1 / fan_in."""
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)
