"""MaxPoolWithArgmax: max pooling that also returns where each maximum came from.

argmax[n, i, j, c] is the flat index of the chosen input element within its image,
(h * W + w) * C + c, plus n * H * W * C when include_batch_in_index. As TF's CPU kernel
chooses: the window's pixels are taken in row-major order, the first one first, and a later one
replaces the choice only when it is strictly greater (so a NaN wins only as the first pixel).
The gradient adds dy at those indices (an UnsortedSegmentSum over the whole batch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_index import unsorted_segment_sum
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv import (
    FLOATS,
    check_rank4,
    check_window_attrs,
    concrete,
    empty_output,
    pool_attrs,
    pool_geometry,
    window_flops,
    windows,
)
from tfc.ops.conv_args import check_data_format, check_padding, window_sequence
from tfc.ops.kernels import Kernel, Param, WindowSpec
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register

__all__ = ["max_pool_with_argmax"]

_INDEX_TYPES = (_dt.int32, _dt.int64)


def _index_dtype(ctx: OpContext) -> _dt.DType:
    dtype = _dt.as_dtype(ctx.attrs.get("Targmax", _dt.int64))
    if dtype not in _INDEX_TYPES:
        raise TypeError(
            f"Value passed to parameter 'Targmax' has DataType {dtype.name} not in list of "
            f"allowed values: int32, int64 (op '{ctx.name}' of type {ctx.type})"
        )
    return dtype


def _infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, FLOATS, "input")
    x = check_rank4(ctx, 0)
    check_window_attrs(ctx, pool=True)
    g = pool_geometry(ctx, x)
    shape = (g.batch, g.out_h, g.out_w, g.out_c)
    return [(ctx.in_dtypes[0], shape), (_index_dtype(ctx), shape)]


def _reference(ctx: OpContext, x: np.ndarray) -> tuple:
    g = pool_geometry(ctx, x.shape)
    index_dtype = _index_dtype(ctx).np
    if empty_output(g):
        return np.zeros(g.out_shape, x.dtype), np.zeros(g.out_shape, index_dtype)
    values = windows(x, g, fill=np.nan).reshape(*g.out_shape, -1)
    inside = windows(np.ones((1, g.in_h, g.in_w, 1)), g).reshape(1, g.out_h, g.out_w, 1, -1) > 0
    first = np.broadcast_to(inside.argmax(axis=-1), g.out_shape)  # every window has a pixel
    best = np.take_along_axis(values, first[..., None], axis=-1)[..., 0]
    tap = first.copy()
    for k in range(values.shape[-1]):  # row-major: a strictly greater value replaces the choice
        better = inside[..., k] & (values[..., k] > best)
        best = np.where(better, values[..., k], best)
        tap = np.where(better, k, tap)
    kh, kw = np.divmod(tap, g.k_w)
    h = np.arange(g.out_h)[None, :, None, None] * g.s_h - g.pad_top + kh
    w = np.arange(g.out_w)[None, None, :, None] * g.s_w - g.pad_left + kw
    c = np.arange(g.out_c)[None, None, None, :]
    index = (h * g.in_w + w) * g.in_c + c
    if ctx.attrs.get("include_batch_in_index", False):
        index = index + np.arange(g.batch)[:, None, None, None] * g.in_h * g.in_w * g.in_c
    return best.astype(x.dtype), index.astype(index_dtype)


def _lower(ctx: OpContext) -> list:
    g = pool_geometry(ctx, concrete(ctx, 0))
    if empty_output(g):
        return []
    dtype, index_dtype = ctx.out_dtypes
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("a", index_dtype.c_type, False, "out1"),
        Param("x0", dtype.c_type, True, "in0"),
    ]
    image = g.in_h * g.in_w * g.in_c
    batch_stride = image if ctx.attrs.get("include_batch_in_index", False) else 0
    spec = WindowSpec(g, dtype, "output", {"batch_stride": batch_stride})
    return [Kernel("max_pool_argmax", params, spec)]


def _grad(op: Any, dy: Tensor, _: Any) -> list:
    """dy added at the chosen elements of the whole batch (indices with the batch in them)."""
    x = op.inputs[0]
    attrs = pool_attrs(op)
    if op.get_attr("include_batch_in_index"):
        index = op.outputs[1]
    else:
        attrs.update(include_batch_in_index=True, Targmax=_dt.int64)
        index = apply_op("MaxPoolWithArgmax", [x], attrs, "MaxPoolWithArgmax").outputs[1]
    flat = unsorted_segment_sum(
        _array.reshape(dy, [-1]), _array.reshape(index, [-1]), _array.size(x)
    )
    return [_array.reshape(flat, _array.shape(x))]


register(
    OpDef(
        "MaxPoolWithArgmax",
        infer=_infer,
        reference=_reference,
        lower=_lower,
        grad=_grad,
        flops=lambda ctx: window_flops(ctx, ctx.out_shapes[0]),
        input_names=("input",),
    )
)


def max_pool_with_argmax(
    input: Any,  # noqa: A002 (TF's argument names)
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    Targmax: Any = None,  # noqa: N803
    name: str | None = None,
    output_dtype: Any = None,
    include_batch_in_index: bool = False,
) -> tuple[Tensor, Tensor]:
    """`tf.nn.max_pool_with_argmax`: (max_pool of the NHWC input, the flat index of each
    maximum: (h * W + w) * C + c, plus n * H * W * C when include_batch_in_index)."""
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise ValueError("Cannot specify both 'Targmax' and 'output_dtype'.")
    index_dtype = _dt.as_dtype(Targmax or output_dtype or _dt.int64)
    if data_format != "NHWC":
        check_data_format(data_format, ("NHWC",))
    attrs = {
        "ksize": window_sequence(ksize, "ksize"),
        "strides": window_sequence(strides, "strides"),
        "padding": check_padding(padding),
        "Targmax": index_dtype,
        "include_batch_in_index": bool(include_batch_in_index),
    }
    with name_scope(name, "MaxPoolWithArgmax", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        op = apply_op("MaxPoolWithArgmax", [x], attrs, name=scope)
        return op.outputs[0], op.outputs[1]
