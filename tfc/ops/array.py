"""Array ops, the family's public face: its ops are declared by sub-family in array_*.py."""

from tfc.ops.array_fill import fill, ones, ones_like, zeros, zeros_like
from tfc.ops.array_gather import gather, one_hot
from tfc.ops.array_index import slice, slice_helper, strided_slice
from tfc.ops.array_join import concat, split, stack, tile, unstack
from tfc.ops.array_pad import pad
from tfc.ops.array_shape import (
    expand_dims,
    identity,
    rank,
    reshape,
    shape,
    size,
    squeeze,
    stop_gradient,
    transpose,
)

__all__ = [
    "identity",
    "stop_gradient",
    "reshape",
    "shape",
    "size",
    "rank",
    "expand_dims",
    "squeeze",
    "transpose",
    "concat",
    "stack",
    "unstack",
    "split",
    "slice",
    "strided_slice",
    "slice_helper",
    "tile",
    "pad",
    "gather",
    "one_hot",
    "fill",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
]
