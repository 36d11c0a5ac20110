"""Gradient ops of convolution and pooling: Conv2DBackpropInput, Conv2DBackpropFilter,
MaxPoolGrad, MaxPoolGradGrad (the gradient of MaxPoolGrad) and AvgPoolGrad, as TF names them.

Their NumPy references are the adjoints written as scatters over the kernel taps, separately
from the C kernels (which gather per input pixel or accumulate per output pixel). Max
pooling's gradient goes to the first maximum of each window in row-major order, as TF's CPU
kernel sends it (to the first NaN when the window holds one, since NaN is then the maximum).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import Shape, num_elements, shape_str
from tfc.ops.array_common import INDEX_DTYPES, check_rank, int_list, shape_value
from tfc.ops.conv import (
    FLOATS,
    as_float64,
    check_rank4,
    check_window_attrs,
    concrete,
    conv_attrs,
    conv_flops,
    conv_geometry,
    conv_kernel,
    conv_scratch,
    empty_output,
    empty_sum,
    pool_attrs,
    pool_geometry,
    valid_counts,
    window_flops,
    window_kernel,
    windows,
    zeros_kernel,
)
from tfc.ops.conv_algo import check_algorithm
from tfc.ops.flops import elements
from tfc.ops.grad_ops import shape_tensor
from tfc.ops.kernels import Geometry, product_operands
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    check_same_dtypes,
    register,
)


def _sizes(ctx: OpContext, i: int, what: str) -> tuple:
    """Shape input `i` (input_sizes, filter_sizes, orig_input_shape): 4 dims, None if unknown."""
    check_dtype(ctx, i, INDEX_DTYPES, what)
    check_rank(ctx, i, 1)
    sizes = shape_value(ctx, i)
    if sizes is None:
        return (None,) * 4
    if len(sizes) != 4:
        raise ctx.error(f"Shape must be rank 4 but is rank {len(sizes)}")
    return tuple(sizes)


def _check_floats(ctx: OpContext, i: int, j: int, names: tuple[str, str]) -> None:
    """Inputs i and j: the same float type (TF's message for a mismatch)."""
    check_dtype(ctx, i, FLOATS, names[0])
    if ctx.in_dtypes[j] != ctx.in_dtypes[i]:
        raise TypeError(
            f"Input '{names[1]}' of '{ctx.type}' Op has type {ctx.in_dtypes[j].name} that does "
            f"not match type {ctx.in_dtypes[i].name} of argument '{names[0]}'."
        )


def _pick(a: int | None, b: int | None) -> int | None:
    return a if a is not None else b


def _differ(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a != b


def _check_backprop(ctx: OpContext, x: Shape, f: Shape, dy: Shape) -> None:
    """TF's ConvBackpropComputeDimensions: input, filter and out_backprop must fit together."""
    if _differ(x[0], dy[0]):
        raise ctx.error("input and out_backprop must have the same batch size")
    if _differ(x[3], f[2]):
        raise ctx.error("input and filter must have the same depth")
    if _differ(f[3], dy[3]):
        raise ctx.error("filter and out_backprop must have the same out_depth")
    g = conv_geometry(ctx, x, f)
    for k, computed in ((1, g.out_h), (2, g.out_w)):
        if _differ(dy[k], computed):
            stride, dilation = ctx.attrs["strides"][k], ctx.attrs.get("dilations", [1] * 4)[k]
            raise ctx.error(
                f"{ctx.type}: Size of out_backprop doesn't match computed: actual = {dy[k]}, "
                f"computed = {computed} spatial_dim: {k} input: {x[k]} filter: {f[k - 1]} "
                f"output: {dy[k]} stride: {stride} dilation: {dilation}"
            )


def _taps(g: Geometry):
    """(kh, kw, rows, cols): each kernel tap and the padded-input pixels it reads, as slices."""
    for kh in range(g.k_h):
        for kw in range(g.k_w):
            rows = slice(kh * g.d_h, kh * g.d_h + (g.out_h - 1) * g.s_h + 1, g.s_h)
            cols = slice(kw * g.d_w, kw * g.d_w + (g.out_w - 1) * g.s_w + 1, g.s_w)
            yield kh, kw, rows, cols


def _crop(padded: np.ndarray, g: Geometry, dtype: Any) -> np.ndarray:
    top, left = g.pad_top, g.pad_left
    return padded[:, top : top + g.in_h, left : left + g.in_w].astype(dtype)


# -- Conv2DBackpropInput(input_sizes, filter, out_backprop) -> d input -----------------------------
def _backprop_input_infer(ctx: OpContext) -> list:
    _check_floats(ctx, 1, 2, ("filter", "out_backprop"))
    sizes = _sizes(ctx, 0, "input_sizes")
    f, dy = check_rank4(ctx, 1), check_rank4(ctx, 2)
    check_window_attrs(ctx, pool=False)
    check_algorithm(ctx)
    x = (_pick(sizes[0], dy[0]), sizes[1], sizes[2], _pick(sizes[3], f[2]))
    _check_backprop(ctx, x, f, dy)
    return [(ctx.in_dtypes[1], x)]


def _backprop_input_reference(
    ctx: OpContext, sizes: np.ndarray, f: np.ndarray, dy: np.ndarray
) -> np.ndarray:
    f, dy = product_operands(ctx, f, dy)
    g = conv_geometry(ctx, int_list(sizes), f.shape)
    if empty_output(g) or empty_sum(g) or num_elements(g.in_shape) == 0:
        return np.zeros(g.in_shape, f.dtype)
    # the adjoint of the convolution: every tap spreads dy . filter[tap]^T over the pixels it read
    padded = np.zeros((g.batch, *g.padded_size(), g.in_c))
    for kh, kw, rows, cols in _taps(g):
        padded[:, rows, cols, :] += as_float64(dy) @ as_float64(f[kh, kw]).T
    return _crop(padded, g, f.dtype)


def _backprop_input_geometry(ctx: OpContext) -> Geometry | None:
    """The geometry of a Conv2DBackpropInput that runs a kernel of tfc_conv.h, or None."""
    g = conv_geometry(ctx, ctx.out_shapes[0], concrete(ctx, 1))
    if num_elements(g.in_shape) == 0 or empty_output(g) or empty_sum(g):
        return None
    return g


def _backprop_input_lower(ctx: OpContext) -> list:
    g = conv_geometry(ctx, ctx.out_shapes[0], concrete(ctx, 1))
    dtype = ctx.out_dtypes[0]
    if num_elements(g.in_shape) == 0:
        return []
    if empty_output(g) or empty_sum(g):
        return zeros_kernel(dtype, g.in_shape)
    return [conv_kernel(ctx, "input", g, dtype, ("in1", "in2"))]


def _backprop_input_grad(op: Any, grad: Tensor) -> list:
    _, f, dy = op.inputs
    attrs = conv_attrs(op)
    df = apply_op(
        "Conv2DBackpropFilter", [grad, shape_tensor(f), dy], attrs, "Conv2DBackpropFilter"
    )
    return [None, df.outputs[0], apply_op("Conv2D", [grad, f], attrs, "Conv2D").outputs[0]]


register(
    OpDef(
        "Conv2DBackpropInput",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_backprop_input_infer,
        reference=_backprop_input_reference,
        lower=_backprop_input_lower,
        grad=_backprop_input_grad,
        flops=lambda ctx: conv_flops(ctx.in_shapes[2], ctx.in_shapes[1]),
        const_inputs=(0,),
        input_names=("input_sizes", "filter", "out_backprop"),
        scratch=lambda ctx: conv_scratch(ctx, "input", _backprop_input_geometry(ctx)),
    )
)


# -- Conv2DBackpropFilter(input, filter_sizes, out_backprop) -> d filter ---------------------------
def _backprop_filter_infer(ctx: OpContext) -> list:
    _check_floats(ctx, 0, 2, ("input", "out_backprop"))
    sizes = _sizes(ctx, 1, "filter_sizes")
    x, dy = check_rank4(ctx, 0), check_rank4(ctx, 2)
    check_window_attrs(ctx, pool=False)
    check_algorithm(ctx)
    f = (sizes[0], sizes[1], _pick(sizes[2], x[3]), _pick(sizes[3], dy[3]))
    _check_backprop(ctx, x, f, dy)
    return [(ctx.in_dtypes[0], f)]


def _backprop_filter_reference(
    ctx: OpContext, x: np.ndarray, sizes: np.ndarray, dy: np.ndarray
) -> np.ndarray:
    x, dy = product_operands(ctx, x, dy)
    f_shape = tuple(int_list(sizes))
    g = conv_geometry(ctx, x.shape, f_shape)
    if empty_output(g) or empty_sum(g) or num_elements(g.in_shape) == 0:
        return np.zeros(f_shape, x.dtype)
    df = np.einsum("nhwcij,nhwo->ijco", as_float64(windows(x, g)), as_float64(dy))
    return df.astype(x.dtype)


def _backprop_filter_geometry(ctx: OpContext) -> Geometry | None:
    """The geometry of a Conv2DBackpropFilter that runs a kernel of tfc_conv.h, or None."""
    f_shape = ctx.out_shapes[0]
    g = conv_geometry(ctx, concrete(ctx, 0), f_shape)
    if num_elements(f_shape) == 0 or empty_output(g) or num_elements(g.in_shape) == 0:
        return None
    return g


def _backprop_filter_lower(ctx: OpContext) -> list:
    f_shape = ctx.out_shapes[0]
    g = conv_geometry(ctx, concrete(ctx, 0), f_shape)
    dtype = ctx.out_dtypes[0]
    if num_elements(f_shape) == 0:
        return []
    if empty_output(g) or num_elements(g.in_shape) == 0:
        return zeros_kernel(dtype, f_shape)
    return [conv_kernel(ctx, "filter", g, dtype, ("in0", "in2"))]


def _backprop_filter_grad(op: Any, grad: Tensor) -> list:
    x, _, dy = op.inputs
    attrs = conv_attrs(op)
    dx = apply_op("Conv2DBackpropInput", [shape_tensor(x), grad, dy], attrs, "Conv2DBackpropInput")
    return [dx.outputs[0], None, apply_op("Conv2D", [x, grad], attrs, "Conv2D").outputs[0]]


register(
    OpDef(
        "Conv2DBackpropFilter",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_backprop_filter_infer,
        reference=_backprop_filter_reference,
        lower=_backprop_filter_lower,
        grad=_backprop_filter_grad,
        flops=lambda ctx: conv_flops(ctx.in_shapes[2], ctx.out_shapes[0]),
        const_inputs=(1,),
        input_names=("input", "filter_sizes", "out_backprop"),
        scratch=lambda ctx: conv_scratch(ctx, "filter", _backprop_filter_geometry(ctx)),
    )
)


# -- MaxPoolGrad(orig_input, orig_output, grad), MaxPoolGradGrad(same) -----------------------------
def _check_pooled(ctx: OpContext, i: int, expected: Shape, what: str) -> None:
    got = check_rank4(ctx, i)
    if any(_differ(a, b) for a, b in zip(got, expected)):
        raise ctx.error(
            f"Expected {what} shape to be {shape_str(expected)}, but got {shape_str(got)}"
        )


def _max_pool_grad_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("orig_input", "orig_output", "grad"))
    check_dtype(ctx, 0, FLOATS, "orig_input")
    x = check_rank4(ctx, 0)
    check_window_attrs(ctx, pool=True)
    g = pool_geometry(ctx, x)
    _check_pooled(ctx, 1, g.out_shape, "orig_output")
    if ctx.type == "MaxPoolGrad":
        _check_pooled(ctx, 2, g.out_shape, "grad")
        return [(ctx.in_dtypes[0], x)]
    _check_pooled(ctx, 2, x, "grad")
    return [(ctx.in_dtypes[0], g.out_shape)]


def _argmax_pixels(x: np.ndarray, g: Geometry) -> tuple:
    """Index arrays (n, row, col, channel), each [N, OH, OW, C], of every window's first max."""
    flat = windows(x, g, fill=-np.inf).reshape(*g.out_shape, -1)
    inside = windows(np.ones((1, g.in_h, g.in_w, 1)), g).reshape(1, g.out_h, g.out_w, 1, -1) > 0
    top = flat.max(axis=-1, keepdims=True)
    hit = ((flat == top) | (np.isnan(flat) & np.isnan(top))) & inside
    kh, kw = np.divmod(hit.argmax(axis=-1), g.k_w)  # argmax: the first True, in raster order
    rows = np.arange(g.out_h)[:, None, None] * g.s_h - g.pad_top + kh
    cols = np.arange(g.out_w)[None, :, None] * g.s_w - g.pad_left + kw
    n = np.arange(g.batch)[:, None, None, None]
    c = np.arange(g.out_c)[None, None, None, :]
    return np.broadcast_arrays(n, rows, cols, c)


def _max_pool_grad_reference(
    ctx: OpContext, x: np.ndarray, y: np.ndarray, dy: np.ndarray
) -> np.ndarray:
    g = pool_geometry(ctx, x.shape)
    dx = np.zeros(x.shape)
    if not empty_output(g):
        np.add.at(dx, _argmax_pixels(x, g), as_float64(dy))
    return dx.astype(x.dtype)


def _max_pool_grad_grad_reference(
    ctx: OpContext, x: np.ndarray, y: np.ndarray, grad: np.ndarray
) -> np.ndarray:
    g = pool_geometry(ctx, x.shape)
    if empty_output(g):
        return np.zeros(g.out_shape, x.dtype)
    return grad[_argmax_pixels(x, g)]


def _max_pool_grad_lower(ctx: OpContext) -> list:
    g = pool_geometry(ctx, concrete(ctx, 0))
    dtype = ctx.out_dtypes[0]
    if num_elements(ctx.out_shapes[0]) == 0:
        return []
    if ctx.type == "MaxPoolGrad" and empty_output(g):
        return zeros_kernel(dtype, g.in_shape)
    # orig_output is not read: the kernel finds each window's maximum in orig_input again
    if ctx.type == "MaxPoolGrad":  # a gather into the input image
        return [window_kernel("max_pool_grad", g, dtype, ("out0", "in0", "in2"), over="input")]
    return [window_kernel("max_pool_grad_grad", g, dtype, ("out0", "in0", "in2"))]


def _max_pool_grad_grad(op: Any, grad: Tensor) -> list:
    x, y, _ = op.inputs
    other = "MaxPoolGradGrad" if op.type == "MaxPoolGrad" else "MaxPoolGrad"
    return [None, None, apply_op(other, [x, y, grad], pool_attrs(op), other).outputs[0]]


for _type, _reference in [
    ("MaxPoolGrad", _max_pool_grad_reference),
    ("MaxPoolGradGrad", _max_pool_grad_grad_reference),
]:
    register(
        OpDef(
            _type,
            infer=_max_pool_grad_infer,
            reference=_reference,
            lower=_max_pool_grad_lower,
            grad=_max_pool_grad_grad,  # the selection is piecewise constant in orig_input
            flops=lambda ctx: window_flops(ctx, ctx.in_shapes[2]) + elements(ctx.in_shapes[2]),
            input_names=("orig_input", "orig_output", "grad"),
            dtypes=(_dt.float16, _dt.bfloat16),
            computes_in=HALVES_IN_FLOAT32,
        )
    )


# -- AvgPoolGrad(orig_input_shape, grad) ----------------------------------------------------------
def _avg_pool_grad_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, FLOATS, "grad")
    sizes = _sizes(ctx, 0, "orig_input_shape")
    dy = check_rank4(ctx, 1)
    check_window_attrs(ctx, pool=True)
    x = (_pick(sizes[0], dy[0]), sizes[1], sizes[2], _pick(sizes[3], dy[3]))
    _check_pooled(ctx, 1, pool_geometry(ctx, x).out_shape, "grad")
    return [(ctx.in_dtypes[1], x)]


def _avg_pool_grad_reference(ctx: OpContext, sizes: np.ndarray, dy: np.ndarray) -> np.ndarray:
    g = pool_geometry(ctx, int_list(sizes))
    if empty_output(g):
        return np.zeros(g.in_shape, dy.dtype)
    share = as_float64(dy) / valid_counts(g)[None, :, :, None]
    padded = np.zeros((g.batch, *g.padded_size(), g.in_c))
    for _, _, rows, cols in _taps(g):
        padded[:, rows, cols, :] += share
    return _crop(padded, g, dy.dtype)


def _avg_pool_grad_lower(ctx: OpContext) -> list:
    g = pool_geometry(ctx, ctx.out_shapes[0])
    dtype = ctx.out_dtypes[0]
    if num_elements(g.in_shape) == 0:
        return []
    if empty_output(g):
        return zeros_kernel(dtype, g.in_shape)
    return [window_kernel("avg_pool_grad", g, dtype, ("out0", "in1"), over="input")]


def _avg_pool_grad_grad(op: Any, grad: Tensor) -> list:
    return [None, apply_op("AvgPool", [grad], pool_attrs(op), "AvgPool").outputs[0]]


register(
    OpDef(
        "AvgPoolGrad",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_avg_pool_grad_infer,
        reference=_avg_pool_grad_reference,
        lower=_avg_pool_grad_lower,
        grad=_avg_pool_grad_grad,
        flops=lambda ctx: window_flops(ctx, ctx.in_shapes[1]),
        const_inputs=(0,),
        input_names=("orig_input_shape", "grad"),
    )
)
