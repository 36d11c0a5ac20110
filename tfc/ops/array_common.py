"""Shared by the ops of tfc.ops: shape, axis and index arguments, and strided copies.

Arguments become tensors (`index_tensor`, `axis_tensor`), their values known at graph-build
time are read (`shape_value`), ranks are checked; `strided_copy` is the kernel most array ops
lower to.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import Dimension, Shape, TensorShape, shape_str
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.kernels import Kernel, Operand, contiguous_strides, loop_kernel
from tfc.ops.registry import OpContext, check_dtype, constant_value

INDEX_DTYPES = (_dt.int32, _dt.int64)


# -- arguments -------------------------------------------------------------------------------------
def index_tensor(value: Any, name: str) -> Tensor:
    """A shape, axis or index argument as a tensor: Python ints become int32 (int64 when they do
    not fit), lists mixing ints and scalar tensors are packed, tensors pass through."""
    if is_tensor_like(value):
        return convert_to_tensor(value)
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
        value = value.as_list()
    if isinstance(value, (list, tuple)):
        value = [int(v) if isinstance(v, Dimension) else v for v in value]
        if any(is_tensor_like(v) for v in value):
            return convert_to_tensor(value, name=name)
    if isinstance(value, (np.ndarray, np.generic)):
        return constant(value, name=name)
    try:
        return constant(value, dtype=_dt.int32, name=name)
    except TypeError as e:
        try:
            return constant(value, dtype=_dt.int64, name=name)
        except TypeError:
            raise e from None  # not an int too large for int32: report it as int32's error


def pick_argument(new: Any, new_name: str, old: Any, old_name: str) -> Any:
    """TF1's deprecated-argument lookup: one of two spellings of an argument, not both."""
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


def axis_tensor(axis: Any) -> Tensor:
    """The axis argument of a reduction as a tensor: int32 unless given as int64 values."""
    if is_tensor_like(axis):
        return convert_to_tensor(axis)
    if isinstance(axis, (np.ndarray, np.generic)) and axis.dtype == np.int64:
        return constant(axis)
    return convert_to_tensor(axis, dtype=_dt.int32)  # TF's default Tidx, also for []


def int_list(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.ravel(value)]


def shape_value(ctx: OpContext, i: int) -> Shape:
    """What is known at graph-build time of the value of shape-like input `i`: a tuple of ints
    (None where unknown), or None when even its length is unknown (TF's
    constant_value_as_shape). `reshape(x, tf.shape(y))` learns y's partial shape this way."""
    value = ctx.const(i)
    if value is not None:
        return tuple(int_list(value))
    if ctx.graph is not None and i < len(ctx.inputs):
        graph = ctx.graph
        src = ctx.inputs[i]
        node = graph.node(src[0])
        if node["op"] == "Shape":
            s_src, s_out = graph.input_edges(src[0])[0]
            return graph.node(s_src)["shapes"][s_out]
        if node["op"] == "Pack" and node["attrs"].get("axis", 0) == 0:
            edges = graph.input_edges(src[0])
            if all(graph.node(s)["shapes"][o] == () for s, o in edges):
                return tuple(_scalar_value(graph, e) for e in edges)
    known = ctx.in_shapes[i]
    if known is not None and len(known) == 1 and known[0] is not None:
        return (None,) * known[0]
    return None


def _scalar_value(graph: Any, edge: tuple[str, int]) -> int | None:
    """A scalar known at graph-build time: a constant, or `tf.shape(x)[k]` of a known dim k."""
    value = constant_value(graph, edge)
    if value is not None:
        return int(value)
    node = graph.node(edge[0])
    attrs = node["attrs"]
    plain = not attrs.get("ellipsis_mask") and not attrs.get("new_axis_mask")
    if node["op"] == "StridedSlice" and attrs.get("shrink_axis_mask") == 1 and plain:
        edges = graph.input_edges(edge[0])
        shape_node = graph.node(edges[0][0])
        begin = constant_value(graph, edges[1])
        if shape_node["op"] == "Shape" and begin is not None and begin.size == 1:
            s_src, s_out = graph.input_edges(edges[0][0])[0]
            dims = graph.node(s_src)["shapes"][s_out]
            k = int(begin.ravel()[0])
            if dims is not None and -len(dims) <= k < len(dims):
                return dims[k]
    return None


def check_rank(ctx: OpContext, i: int, rank: int) -> None:
    """TF's WithRank: input `i` must have rank `rank` when its rank is known."""
    shape = ctx.in_shapes[i]
    if shape is not None and len(shape) != rank:
        raise ctx.error(f"Shape must be rank {rank} but is rank {len(shape)}")


def per_dim_argument(ctx: OpContext, i: int, what: str) -> int | None:
    """Check input `i`, a vector with one entry per dimension of input 0 (Tile's multiples,
    Transpose's perm); returns the rank, or None when neither tells it."""
    check_dtype(ctx, i, INDEX_DTYPES, what)
    check_rank(ctx, i, 1)
    in_shape = ctx.in_shapes[0]
    n = ctx.in_shapes[i][0] if ctx.in_shapes[i] is not None else None
    if in_shape is not None and n is not None and n != len(in_shape):
        raise ctx.error(f"Dimension must be {len(in_shape)} but is {n}")
    return len(in_shape) if in_shape is not None else n


def min_rank_for_axis(axis: int) -> int:
    """The least rank for which `axis` (negative counting from the end) is valid."""
    return -axis if axis < 0 else axis + 1


def merge_or_raise(ctx: OpContext, a: Shape, b: Shape, context: str = "") -> Shape:
    """TF's Merge of two partial shapes, with its error wording."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ctx.error(f"Shapes must be equal rank, but are {len(a)} and {len(b)}{context}")
    out = []
    for k, (x, y) in enumerate(zip(a, b)):
        if x is not None and y is not None and x != y:
            raise ctx.error(
                f"Dimension {k} in both shapes must be equal, but are {x} and {y}. Shapes are "
                f"{shape_str(a)} and {shape_str(b)}.{context}"
            )
        out.append(x if x is not None else y)
    return tuple(out)


def strided_copy(shape: Any, out: Operand, src: Operand) -> list[Kernel]:
    """out[i] = src[i] over `shape`, both strided views (transposes, slices, tiles, pieces)."""
    return loop_kernel(shape, out, [src], "{0}")


def contiguous(buf: str, dtype: _dt.DType, shape: Any, offset: int = 0) -> Operand:
    return Operand(buf, dtype, contiguous_strides(shape), offset)
