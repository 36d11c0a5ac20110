"""Grayscale morphology: tf.nn.dilation2d and erosion2d, composed from ExtractImagePatches.

    dilation2d: out[n, i, j, c] = max over taps (a, b) inside the image of
                input[n, i*s_h + a*r_h - pad_top, j*s_w + b*r_w - pad_left, c] + filter[a, b, c]
    erosion2d:  -dilation2d(-value, kernel flipped in both spatial dims)

Each window's values come from ExtractImagePatches, the taps outside the image are excluded by
a mask of the same patches of an image of ones, and ReduceMax takes the maximum, so the
gradients are those ops' own (they split a tie between equal maxima, where TF's
Dilation2DBackprop kernels give all to the first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.grad_ops import select
from tfc.ops.logic import greater
from tfc.ops.math import negative
from tfc.ops.patches import extract_image_patches
from tfc.ops.reduce import reduce_max

__all__ = ["dilation2d", "erosion2d"]


def _dilation(x: Tensor, f: Tensor, strides: Any, rates: Any, padding: Any) -> Tensor:
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"input must be 4-D, got shape {x.shape}")
    if f.shape.ndims != 3 or None in f.shape.as_list():
        raise ValueError(f"filter must be 3-D [height, width, depth] and known, got {f.shape}")
    k_h, k_w, depth = f.shape.as_list()
    channels = x.shape.as_list()[3] if x.shape.ndims == 4 else None
    if channels is not None and channels != depth:
        raise ValueError(f"input and filter must have the same depth: {channels} vs {depth}")
    for what, values in (("strides", strides), ("rates", rates)):
        if len(values) != 4 or values[0] != 1 or values[3] != 1:
            raise ValueError(f"{what} must be [1, {what[0]}_height, {what[0]}_width, 1]")
    ksizes = [1, k_h, k_w, 1]
    patches = extract_image_patches(x, ksizes, strides, rates, padding)
    # which taps of each window lie inside the image
    ones = _array.ones_like(_array.slice(x, [0, 0, 0, 0], [1, -1, -1, 1]))
    inside = greater(
        extract_image_patches(_array.stop_gradient(ones), ksizes, strides, rates, padding), 0
    )
    pixels = _array.slice(_array.shape(patches), [0], [3])
    values = _array.reshape(patches, _array.concat([pixels, [k_h * k_w, depth]], 0))
    values = values + _array.reshape(f, [k_h * k_w, depth])
    inside = _array.expand_dims(inside, -1)
    lowest = np.array(-np.inf, x.dtype.as_numpy_dtype)
    return reduce_max(select(inside, values, lowest), axis=3)


def dilation2d(
    input: Any,  # noqa: A002 (TF's argument names)
    filter: Any = None,  # noqa: A002
    strides: Any = None,
    rates: Any = None,
    padding: Any = None,
    name: str | None = None,
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.dilation2d`: the grayscale dilation of an NHWC image by a [k_h, k_w, C] filter:
    the maximum over each window of input + filter (taps `rates` apart)."""
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filter' and 'filters'.")
    if rates is not None and dilations is not None:
        raise ValueError("Cannot specify both 'rates' and 'dilations'.")
    filter = filters if filter is None else filter  # noqa: A001
    rates = dilations if rates is None else rates
    with name_scope(name, "dilation2d", [input, filter]):
        x = convert_to_tensor(input, name="input")
        f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
        return _dilation(x, f, list(strides), list(rates), padding)


def erosion2d(
    value: Any, kernel: Any, strides: Any, rates: Any, padding: Any, name: str | None = None
) -> Tensor:
    """`tf.nn.erosion2d`: the grayscale erosion of an NHWC image by a [k_h, k_w, C] kernel:
    the minimum over each window of value - kernel (flipped), -dilation2d(-value, flipped)."""
    with name_scope(name, "erosion2d", [value, kernel]):
        x = convert_to_tensor(value, name="value")
        k = convert_to_tensor(kernel, dtype=x.dtype, name="kernel")
        if k.shape.ndims != 3:
            raise ValueError(f"kernel must be 3-D [height, width, depth], got {k.shape}")
        flipped = _array.slice_helper(k, (slice(None, None, -1), slice(None, None, -1)))
        return negative(_dilation(negative(x), flipped, list(strides), list(rates), padding))
