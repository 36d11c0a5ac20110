"""tf.nn's window arguments as TF accepts them: strides, ksize and dilations in every spelling,
padding, data formats; and channels-first images computed by channels-last ops in between two
transposes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir.graph import Tensor

# channels-first formats by rank, and the channels-last one each stands for
CHANNELS_FIRST = {"NCW": "NWC", "NCHW": "NHWC", "NCDHW": "NDHWC"}


def channels_last(data_format: str) -> bool:
    return not data_format.startswith("NC")


def window_sequence(value: Any, what: str, data_format: str = "NHWC", spatial: int = 2) -> list:
    """An int, `spatial` values or `spatial` + 2 values (TF's _get_sequence) as spatial + 2
    ints: 1 for the batch and channel dims where the spatial values were given alone."""
    if value is None:
        raise ValueError(f"{what} must be given")
    if isinstance(value, (int, np.integer)):
        value = [value]
    values = [int(v) for v in value]
    if len(values) == spatial + 2:
        return values
    if len(values) == 1:
        values = values * spatial
    elif len(values) != spatial:
        raise ValueError(
            f"{what} should be of length 1, {spatial} or {spatial + 2} but was {len(values)}"
        )
    return [1, *values, 1] if channels_last(data_format) else [1, 1, *values]


def spatial_values(value: Any, what: str, spatial: int = 2) -> list:
    """A rate or dilation_rate: an int or `spatial` values (no batch or channel entries)."""
    if value is None:
        return [1] * spatial
    if isinstance(value, (int, np.integer)):
        return [int(value)] * spatial
    values = [int(v) for v in value]
    if len(values) == 1:
        return values * spatial
    if len(values) != spatial:
        raise ValueError(f"{what} must be of length {spatial} but was {len(values)}")
    return values


def check_padding(padding: Any) -> str:
    """'SAME' or 'VALID' in any case; explicit paddings are not computed by tfc."""
    if isinstance(padding, (list, tuple)):
        raise NotImplementedError(
            f"explicit paddings {list(padding)}: tfc computes 'SAME' and 'VALID' windows only; "
            "pad the input with tf.pad and use 'VALID'"
        )
    upper = padding.upper() if isinstance(padding, str) else padding
    if upper not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    return upper


def check_data_format(data_format: str | None, allowed: tuple[str, ...]) -> str:
    """The data format (allowed[0] when None), one of `allowed`."""
    if data_format is None:
        return allowed[0]
    if data_format not in allowed:
        names = " or ".join(repr(f) for f in allowed)
        raise ValueError(f"data_format must be {names}, got {data_format!r}")
    return data_format


def channels_first_via_last(
    x: Tensor, data_format: str, compute: Callable[[Tensor], Tensor]
) -> Tensor:
    """compute(x) for a channels-last op on a channels-first x: x transposed to channels last,
    the result back (TF's CPU kernels do the same transposes; the values are equal)."""
    if channels_last(data_format):
        return compute(x)
    rank = len(data_format)
    to_last = [0, *range(2, rank), 1]
    to_first = [0, rank - 1, *range(1, rank - 1)]
    return _array.transpose(compute(_array.transpose(x, to_last)), to_first)
