"""Array ops, the family's public face; the ops are declared by concept in array_*.py.

    array_shape  the same elements in another shape: Identity, Reshape, ExpandDims, Squeeze;
                 and the shape as a value: Shape, Size, Rank
    array_fill   a shape filled with one value: Fill, ZerosLike, OnesLike (zeros, ones)
    array_index  elements taken by index: Slice, StridedSlice (`t[...]`), GatherV2, OneHot
    array_join   elements copied into a new arrangement: Transpose, ConcatV2, Pack/Unpack,
                 Split/SplitV, Tile, Pad/PadV2/MirrorPad
    array_nd_index  slices addressed by index tuples: GatherNd, ScatterNd, TensorScatter*
    array_order  elements reordered: ReverseV2, ReverseSequence, Roll, Sort, searches,
                 InvertPermutation, UnravelIndex, BroadcastTo, BroadcastArgs
    array_compose  functions composed of the ops above: meshgrid, repeat, tf.tuple...

Each may use the ones listed before it, never one after it; all use array_common (shape and
index arguments, strided copies). Modules above the array family import this module.
"""

from tfc.ops.array_compose import *  # noqa: F403
from tfc.ops.array_compose import __all__ as _compose_names
from tfc.ops.array_fill import fill, ones, ones_like, zeros, zeros_like
from tfc.ops.array_index import gather, one_hot, slice, slice_helper, strided_slice
from tfc.ops.array_join import concat, pad, split, stack, tile, transpose, unstack
from tfc.ops.array_nd_index import *  # noqa: F403
from tfc.ops.array_nd_index import __all__ as _nd_index_names
from tfc.ops.array_order import *  # noqa: F403
from tfc.ops.array_order import __all__ as _order_names
from tfc.ops.array_shape import (
    ensure_shape,
    expand_dims,
    identity,
    identity_n,
    rank,
    reshape,
    shape,
    size,
    squeeze,
    stop_gradient,
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
__all__ += ["ensure_shape", "identity_n", *_nd_index_names, *_order_names, *_compose_names]
