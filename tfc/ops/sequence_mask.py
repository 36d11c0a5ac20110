"""`tf.sequence_mask`: a mask of the first lengths[i] positions of each row."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.logic import less
from tfc.ops.math import cast
from tfc.ops.registry import constant_value

__all__ = ["sequence_mask"]


def _known(t: Tensor) -> np.ndarray | None:
    return constant_value(t.graph, (t.op.name, t.value_index))


def sequence_mask(
    lengths: Any, maxlen: Any = None, dtype: Any = _dt.bool_, name: str | None = None
) -> Tensor:
    """`tf.sequence_mask`: mask[i..., j] = j < lengths[i...] for j in [0, maxlen), shape
    lengths.shape + [maxlen]; maxlen defaults to max(lengths).

    The mask's last dimension must be known when the program is compiled: a maxlen given, or
    lengths known then (a mask as wide as the longest of run-time lengths has a shape that
    depends on the data).
    """
    with name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert_to_tensor(lengths, name="lengths")
        if not lengths.dtype.is_integer:
            raise TypeError(f"lengths must be integers, got {lengths.dtype.name}")
        if maxlen is None:
            known = _known(lengths)
            if known is None:
                raise ValueError(
                    "sequence_mask without maxlen is as wide as the largest of the lengths, a "
                    "shape that depends on run-time values; tfc compiles static shapes, so "
                    "pass maxlen (a Python int or a constant tensor)"
                )
            width = max(int(np.max(known, initial=0)), 0)
            maxlen_dtype = lengths.dtype
        else:
            maxlen = convert_to_tensor(maxlen, name="maxlen")
            if maxlen.shape.ndims not in (None, 0):
                raise ValueError("maxlen must be scalar for sequence_mask")
            known = _known(maxlen)
            if known is None:
                raise ValueError(
                    "sequence_mask's maxlen must be known when the program is compiled (a "
                    "Python int or a tensor computed from constants): it is the mask's width"
                )
            width = int(known)
            maxlen_dtype = maxlen.dtype
        if width < 0:
            raise ValueError(f"maxlen must be non-negative, got {width}")
        positions = constant(np.arange(width), dtype=maxlen_dtype, name="Range")
        limits = cast(_array.expand_dims(lengths, -1), maxlen_dtype)
        result = less(positions, limits)
        dtype = _dt.as_dtype(dtype)
        return result if dtype == _dt.bool_ else cast(result, dtype)
