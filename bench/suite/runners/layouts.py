"""The canonical weights (tfc's layout: dense kernels [in, out], conv kernels HWIO, images NHWC,
flattening in HWC order) converted to the NCHW layout of PyTorch and ONNX."""

from __future__ import annotations

import numpy as np


def conv_oihw(kernel: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(kernel.transpose(3, 2, 0, 1))


def images_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def fc_after_chw_flatten(kernel: np.ndarray, h: int = 5, w: int = 5, c: int = 16) -> np.ndarray:
    """The first dense kernel's rows reordered from HWC to CHW flattening, so an NCHW model
    computes the same function with the same weights."""
    out = kernel.shape[1]
    return np.ascontiguousarray(kernel.reshape(h, w, c, out).transpose(2, 0, 1, 3).reshape(-1, out))
