"""Depthwise convolution: DepthwiseConv2dNative and its two gradient ops, in NHWC or NCHW.

Each input channel c has its own filters f[:, :, c, m] (m < the channel multiplier M); output
channel c*M + m is channel c convolved with filter m of c. TF's window arithmetic, attribute
checks and windows are conv.py's. The kernels (runtime/include/tfc_depthwise.h for C, a thread
per element for CUDA) convolve each channel with one filter (M = 1, channels == out channels),
so lowering puts small loop kernels around them, handing tensors over in the node's scratch
memory: for M > 1 the input is first repeated M times per channel (and the input gradient summed
over m afterwards), for NCHW the image is transposed to NHWC and the result back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import Shape, num_elements
from tfc.ops.array_common import INDEX_DTYPES, check_rank, int_list, shape_value
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv import (
    FLOATS,
    as_float64,
    attrs_of,
    check_rank4,
    check_window_attrs,
    concrete,
    conv_geometry,
    windows,
)
from tfc.ops.conv_args import (
    channels_first_via_last,
    check_data_format,
    check_padding,
    spatial_values,
    window_sequence,
)
from tfc.ops.flops import elements
from tfc.ops.grad_ops import shape_tensor
from tfc.ops.kernels import (
    Geometry,
    Kernel,
    Operand,
    Param,
    WindowSpec,
    contiguous_strides,
    loop_kernel,
    reduce_kernel,
    view,
)
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, check_same_dtypes, register

__all__ = [
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_input",
    "depthwise_conv2d_native_backprop_filter",
    "separable_conv2d",
    "depthwise_conv2d_backprop_input",
    "depthwise_conv2d_backprop_filter",
]

_FORMATS = ("NHWC", "NCHW")
_TO_NHWC = (0, 2, 3, 1)  # NCHW dims in NHWC order
_TO_NCHW = (0, 3, 1, 2)


# -- data formats ---------------------------------------------------------------------------------
def data_format(ctx: OpContext) -> str:
    fmt = ctx.attrs.get("data_format", "NHWC")
    if fmt not in _FORMATS:
        raise ValueError(
            f"Value for attr 'data_format' of \"{fmt}\" is not in the list of allowed values: "
            f'"NHWC", "NCHW" (op \'{ctx.name}\' of type {ctx.type})'
        )
    return fmt


def nhwc_context(ctx: OpContext) -> OpContext:
    """`ctx` with its strides and dilations in NHWC order and data_format NHWC: what conv.py's
    checks and window arithmetic read (its inputs' shapes stay as given, for the messages)."""
    if data_format(ctx) == "NHWC":
        return ctx
    attrs = dict(ctx.attrs, data_format="NHWC")
    for name in ("strides", "dilations"):
        values = ctx.attrs.get(name)
        if values is not None and len(values) == 4:
            attrs[name] = [values[k] for k in _TO_NHWC]
    return dataclasses.replace(ctx, attrs=attrs)


def to_nhwc(ctx: OpContext, shape: Sequence) -> tuple:
    """An image shape of the op's data format, in NHWC order."""
    return tuple(shape) if data_format(ctx) == "NHWC" else tuple(shape[k] for k in _TO_NHWC)


def from_nhwc(ctx: OpContext, shape: Sequence) -> tuple:
    return tuple(shape) if data_format(ctx) == "NHWC" else tuple(shape[k] for k in _TO_NCHW)


def array_to_nhwc(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    return x if data_format(ctx) == "NHWC" else x.transpose(_TO_NHWC)


def array_from_nhwc(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    return x if data_format(ctx) == "NHWC" else np.ascontiguousarray(x.transpose(_TO_NCHW))


# -- geometry --------------------------------------------------------------------------------------
def depthwise_geometry(ctx: OpContext, x: Sequence, f: Sequence) -> Geometry:
    """The geometry of an NHWC image `x` convolved with filters `f` [k_h, k_w, C, M]: out_c is
    C*M (None where unknown)."""
    g = conv_geometry(nhwc_context(ctx), x, f)
    out_c = None if x[3] is None or f[3] is None else x[3] * f[3]
    return dataclasses.replace(g, out_c=out_c)


def _check_filter(ctx: OpContext, f: Shape) -> None:
    """TF's kernels refuse an empty filter (at run time; tfc when it knows the shape)."""
    if all(d is not None for d in f) and 0 in f:
        raise ctx.error("filter must not have zero elements (i.e. all dimensions must be non-zero)")


def _check_attrs(ctx: OpContext, i: int, what: str) -> None:
    """Input i (named `what`) is a float; the data format, strides, dilations and padding."""
    check_dtype(ctx, i, FLOATS, what)
    data_format(ctx)
    check_window_attrs(nhwc_context(ctx), pool=False)


# -- the kernels: one filter per channel, between loop kernels through scratch ---------------------
ALIGN = 16  # elements: each scratch region starts on a 64-byte boundary for float32


class KernelChain:
    """The kernels of one node, in order, handing NHWC tensors to each other through regions
    of the node's scratch memory."""

    def __init__(self, dtype: _dt.DType) -> None:
        self.dtype = dtype
        self.kernels: list[Kernel] = []
        self.scratch = 0  # elements used

    def region(self, shape: Sequence[int]) -> Operand:
        """A fresh contiguous scratch region of `shape`."""
        operand = view("scratch", self.dtype, shape, offset=self.scratch)
        self.scratch += -(-math.prod(shape) // ALIGN) * ALIGN
        return operand

    def image_in(self, ctx: OpContext, buf: str, nhwc: Sequence[int]) -> Operand:
        """Input buffer `buf` (an image of the op's format) as an NHWC operand."""
        if data_format(ctx) == "NHWC":
            return view(buf, self.dtype, nhwc)
        n, h, w, c = nhwc
        src = Operand(buf, self.dtype, (c * h * w, w, 1, h * w))  # NCHW memory in NHWC order
        dst = self.region(nhwc)
        self.kernels += loop_kernel(nhwc, dst, [src], "{0}")
        return dst

    def image_out(self, ctx: OpContext, nhwc: Sequence[int]) -> Operand:
        """Where the NHWC result goes: output 0, or a region image_done transposes from."""
        if data_format(ctx) == "NHWC":
            return view("out0", self.dtype, nhwc)
        return self.region(nhwc)

    def image_done(self, ctx: OpContext, result: Operand, nhwc: Sequence[int]) -> None:
        if data_format(ctx) == "NHWC":
            return
        n, h, w, c = nhwc
        dst = Operand("out0", self.dtype, (c * h * w, w, 1, h * w))  # NCHW memory, NHWC order
        self.kernels += loop_kernel(nhwc, dst, [result], "{0}")

    def repeat_channels(self, x: Operand, nhwc: Sequence[int], m: int) -> Operand:
        """x [N, H, W, C] with every channel repeated m times: [N, H, W, C*m] (x when m is 1)."""
        if m == 1:
            return x
        shape = (*nhwc, m)
        dst = self.region(shape)
        src = Operand(x.buf, self.dtype, (*x.strides, 0), x.offset)
        self.kernels += loop_kernel(shape, dst, [src], "{0}")
        return dst  # [N, H, W, C, m] is [N, H, W, C*m]

    def sum_channels(self, src: Operand, nhwc: Sequence[int], m: int, dst: Operand) -> None:
        """dst [N, H, W, C] = src [N, H, W, C*m] summed over each channel's m values."""
        shape = (*nhwc, m)
        src5 = Operand(src.buf, self.dtype, contiguous_strides(shape), src.offset)
        self.kernels += reduce_kernel(shape, [4], src5, dst, "{a} + {b}", "0")

    def window(self, kind: str, g: Geometry, y: Operand, ins: Sequence[Operand], over: str) -> None:
        """The per-channel kernel `kind` over geometry g (in_c == out_c)."""
        ct = self.dtype.c_type
        params = [Param("y", ct, False, y.buf, y.offset)]
        params += [Param(f"x{k}", ct, True, o.buf, o.offset) for k, o in enumerate(ins)]
        self.kernels.append(Kernel(kind, params, WindowSpec(g, self.dtype, over)))

    def zeros(self, out: Operand, shape: Sequence[int]) -> None:
        self.kernels += loop_kernel(shape, out, [], "0")


def per_channel(g: Geometry) -> Geometry:
    """g with every output channel its own input channel: the kernels' geometry."""
    return dataclasses.replace(g, in_c=g.out_c)


def empty_taps(g: Geometry) -> bool:
    return g.k_h == 0 or g.k_w == 0


# -- DepthwiseConv2dNative(input, filter [k_h, k_w, C, M]) -----------------------------------------
def _forward_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("input", "filter"))
    _check_attrs(ctx, 0, "input")
    x, f = to_nhwc(ctx, check_rank4(ctx, 0)), check_rank4(ctx, 1)
    if x[3] is not None and f[2] is not None and x[3] != f[2]:
        raise ctx.error(f"Dimensions must be equal, but are {x[3]} and {f[2]}")
    _check_filter(ctx, f)
    g = depthwise_geometry(ctx, x, f)
    return [(ctx.in_dtypes[0], from_nhwc(ctx, (g.batch, g.out_h, g.out_w, g.out_c)))]


def _forward_reference(ctx: OpContext, x: np.ndarray, f: np.ndarray) -> np.ndarray:
    x = array_to_nhwc(ctx, x)
    g = depthwise_geometry(ctx, x.shape, f.shape)
    if num_elements(g.out_shape) == 0 or empty_taps(g):
        return array_from_nhwc(ctx, np.zeros(g.out_shape, x.dtype))
    # each window times its channel's filters, summed in float64 and rounded once
    y = np.einsum("nhwcij,ijcm->nhwcm", as_float64(windows(x, g)), as_float64(f))
    return array_from_nhwc(ctx, y.reshape(g.out_shape).astype(x.dtype))


def _forward_chain(ctx: OpContext) -> KernelChain:
    x_shape, f_shape = to_nhwc(ctx, concrete(ctx, 0)), concrete(ctx, 1)
    g = depthwise_geometry(ctx, x_shape, f_shape)
    chain = KernelChain(ctx.out_dtypes[0])
    if num_elements(g.out_shape) == 0:
        return chain
    y = chain.image_out(ctx, g.out_shape)
    if empty_taps(g):
        chain.zeros(y, g.out_shape)
    else:
        x = chain.repeat_channels(chain.image_in(ctx, "in0", x_shape), x_shape, f_shape[3])
        chain.window(
            "depthwise_conv2d", per_channel(g), y, [x, view("in1", chain.dtype, f_shape)], "output"
        )
    chain.image_done(ctx, y, g.out_shape)
    return chain


def depthwise_attrs(op: Any) -> dict:
    return attrs_of(op, ("strides", "padding", "data_format", "dilations"))


def _forward_grad(op: Any, dy: Tensor) -> list:
    x, f = op.inputs
    attrs = depthwise_attrs(op)
    dx = apply_op(
        "DepthwiseConv2dNativeBackpropInput",
        [shape_tensor(x), f, dy],
        attrs,
        "DepthwiseConv2dNativeBackpropInput",
    )
    df = apply_op(
        "DepthwiseConv2dNativeBackpropFilter",
        [x, shape_tensor(f), dy],
        attrs,
        "DepthwiseConv2dNativeBackpropFilter",
    )
    return [dx.outputs[0], df.outputs[0]]


def depthwise_flops(out_shape: Any, filter_shape: Any) -> int:
    """2 * k_h*k_w multiply-adds per element of the output (or of its gradient)."""
    return 2 * elements(out_shape) * filter_shape[0] * filter_shape[1]


register(
    OpDef(
        "DepthwiseConv2dNative",
        infer=_forward_infer,
        reference=_forward_reference,
        lower=lambda ctx: _forward_chain(ctx).kernels,
        grad=_forward_grad,
        flops=lambda ctx: depthwise_flops(ctx.out_shapes[0], ctx.in_shapes[1]),
        input_names=("input", "filter"),
        scratch=lambda ctx: _forward_chain(ctx).scratch * ctx.out_dtypes[0].size,
    )
)


# -- the gradient ops: shapes ----------------------------------------------------------------------
def _sizes(ctx: OpContext, i: int, what: str) -> tuple:
    """Shape input `i` (input_sizes, filter_sizes): 4 dims, None where unknown."""
    check_dtype(ctx, i, INDEX_DTYPES, what)
    check_rank(ctx, i, 1)
    sizes = shape_value(ctx, i)
    if sizes is None:
        return (None,) * 4
    if len(sizes) != 4:
        raise ctx.error(f"Shape must be rank 4 but is rank {len(sizes)}")
    return tuple(sizes)


def _pick(a: int | None, b: int | None) -> int | None:
    return a if a is not None else b


def _differ(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a != b


def _check_backprop(ctx: OpContext, x: Shape, f: Shape, dy: Shape) -> None:
    """TF's ConvBackpropComputeDimensions for a depthwise convolution (NHWC shapes)."""
    if _differ(x[0], dy[0]):
        raise ctx.error("input and out_backprop must have the same batch size")
    if _differ(x[3], f[2]):
        raise ctx.error("input and filter must have the same depth")
    out_c = None if f[2] is None or f[3] is None else f[2] * f[3]
    if _differ(out_c, dy[3]):
        raise ctx.error("filter and out_backprop must have the same out_depth")
    g = depthwise_geometry(ctx, x, f)
    for k, computed in ((1, g.out_h), (2, g.out_w)):
        if _differ(dy[k], computed):
            nctx = nhwc_context(ctx)
            stride = nctx.attrs["strides"][k]
            dilation = nctx.attrs.get("dilations", [1] * 4)[k]
            raise ctx.error(
                f"{ctx.type}: Size of out_backprop doesn't match computed: actual = {dy[k]}, "
                f"computed = {computed} spatial_dim: {k} input: {x[k]} filter: {f[k - 1]} "
                f"output: {dy[k]} stride: {stride} dilation: {dilation}"
            )


def _check_float_pair(ctx: OpContext, i: int, j: int, names: tuple[str, str]) -> None:
    if ctx.in_dtypes[j] != ctx.in_dtypes[i]:
        raise TypeError(
            f"Input '{names[1]}' of '{ctx.type}' Op has type {ctx.in_dtypes[j].name} that does "
            f"not match type {ctx.in_dtypes[i].name} of argument '{names[0]}'."
        )


# -- DepthwiseConv2dNativeBackpropInput(input_sizes, filter, out_backprop) -> d input --------------
def _input_infer(ctx: OpContext) -> list:
    _check_attrs(ctx, 1, "filter")
    _check_float_pair(ctx, 1, 2, ("filter", "out_backprop"))
    sizes = to_nhwc(ctx, _sizes(ctx, 0, "input_sizes"))
    f, dy = check_rank4(ctx, 1), to_nhwc(ctx, check_rank4(ctx, 2))
    x = (_pick(sizes[0], dy[0]), sizes[1], sizes[2], _pick(sizes[3], f[2]))
    _check_filter(ctx, f)
    _check_backprop(ctx, x, f, dy)
    return [(ctx.in_dtypes[1], from_nhwc(ctx, x))]


def _taps(g: Geometry):
    """(kh, kw, rows, cols): each filter tap and the padded-input pixels it reads, as slices."""
    for kh in range(g.k_h):
        for kw in range(g.k_w):
            rows = slice(kh * g.d_h, kh * g.d_h + (g.out_h - 1) * g.s_h + 1, g.s_h)
            cols = slice(kw * g.d_w, kw * g.d_w + (g.out_w - 1) * g.s_w + 1, g.s_w)
            yield kh, kw, rows, cols


def _input_reference(ctx: OpContext, sizes: np.ndarray, f: np.ndarray, dy: np.ndarray):
    x_shape = to_nhwc(ctx, int_list(sizes))
    dy = array_to_nhwc(ctx, dy)
    g = depthwise_geometry(ctx, x_shape, f.shape)
    if num_elements(g.out_shape) == 0 or num_elements(x_shape) == 0 or empty_taps(g):
        return array_from_nhwc(ctx, np.zeros(x_shape, f.dtype))
    # the adjoint: every tap spreads dy times its channels' filters over the pixels it read
    n, oh, ow, c = g.out_shape[0], g.out_h, g.out_w, g.in_c
    dy5 = as_float64(dy).reshape(n, oh, ow, c, -1)
    padded = np.zeros((g.batch, *g.padded_size(), g.in_c))
    for kh, kw, rows, cols in _taps(g):
        padded[:, rows, cols, :] += (dy5 * as_float64(f[kh, kw])).sum(axis=-1)
    top, left = g.pad_top, g.pad_left
    dx = padded[:, top : top + g.in_h, left : left + g.in_w]
    return array_from_nhwc(ctx, dx.astype(f.dtype))


def _input_chain(ctx: OpContext) -> KernelChain:
    x_shape, f_shape = to_nhwc(ctx, ctx.out_shapes[0]), concrete(ctx, 1)
    g = depthwise_geometry(ctx, x_shape, f_shape)
    chain = KernelChain(ctx.out_dtypes[0])
    if num_elements(x_shape) == 0:
        return chain
    dx = chain.image_out(ctx, x_shape)
    if num_elements(g.out_shape) == 0 or empty_taps(g):
        chain.zeros(dx, x_shape)
    else:
        m = f_shape[3]
        dy = chain.image_in(ctx, "in2", g.out_shape)
        spread = (*x_shape[:3], g.out_c)  # d input per output channel (c*M + m)
        target = dx if m == 1 else chain.region(spread)
        chain.window(
            "depthwise_conv2d_input",
            per_channel(g),
            target,
            [view("in1", chain.dtype, f_shape), dy],
            "input",
        )
        if m > 1:
            chain.sum_channels(target, x_shape, m, dx)
    chain.image_done(ctx, dx, x_shape)
    return chain


def _input_grad(op: Any, grad: Tensor) -> list:
    _, f, dy = op.inputs
    attrs = depthwise_attrs(op)
    df = apply_op(
        "DepthwiseConv2dNativeBackpropFilter",
        [grad, shape_tensor(f), dy],
        attrs,
        "DepthwiseConv2dNativeBackpropFilter",
    )
    y = apply_op("DepthwiseConv2dNative", [grad, f], attrs, "DepthwiseConv2dNative")
    return [None, df.outputs[0], y.outputs[0]]


register(
    OpDef(
        "DepthwiseConv2dNativeBackpropInput",
        infer=_input_infer,
        reference=_input_reference,
        lower=lambda ctx: _input_chain(ctx).kernels,
        grad=_input_grad,
        flops=lambda ctx: depthwise_flops(ctx.in_shapes[2], ctx.in_shapes[1]),
        const_inputs=(0,),
        input_names=("input_sizes", "filter", "out_backprop"),
        scratch=lambda ctx: _input_chain(ctx).scratch * ctx.out_dtypes[0].size,
    )
)


# -- DepthwiseConv2dNativeBackpropFilter(input, filter_sizes, out_backprop) -> d filter ------------
def _filter_infer(ctx: OpContext) -> list:
    _check_attrs(ctx, 0, "input")
    _check_float_pair(ctx, 0, 2, ("input", "out_backprop"))
    sizes = _sizes(ctx, 1, "filter_sizes")
    x, dy = to_nhwc(ctx, check_rank4(ctx, 0)), to_nhwc(ctx, check_rank4(ctx, 2))
    f = (sizes[0], sizes[1], _pick(sizes[2], x[3]), sizes[3])
    _check_filter(ctx, f)
    _check_backprop(ctx, x, f, dy)
    return [(ctx.in_dtypes[0], f)]


def _filter_reference(ctx: OpContext, x: np.ndarray, sizes: np.ndarray, dy: np.ndarray):
    x, dy = array_to_nhwc(ctx, x), array_to_nhwc(ctx, dy)
    f_shape = tuple(int_list(sizes))
    g = depthwise_geometry(ctx, x.shape, f_shape)
    if num_elements(g.out_shape) == 0 or num_elements(x.shape) == 0:
        return np.zeros(f_shape, x.dtype)
    dy5 = as_float64(dy).reshape(*g.out_shape[:3], g.in_c, f_shape[3])
    df = np.einsum("nhwcij,nhwcm->ijcm", as_float64(windows(x, g)), dy5)
    return df.astype(x.dtype)


def _filter_chain(ctx: OpContext) -> KernelChain:
    x_shape, f_shape = to_nhwc(ctx, concrete(ctx, 0)), ctx.out_shapes[0]
    g = depthwise_geometry(ctx, x_shape, f_shape)
    chain = KernelChain(ctx.out_dtypes[0])
    if num_elements(f_shape) == 0:
        return chain
    df = view("out0", chain.dtype, f_shape)
    if num_elements(g.out_shape) == 0 or num_elements(x_shape) == 0:
        chain.zeros(df, f_shape)
    else:
        x = chain.repeat_channels(chain.image_in(ctx, "in0", x_shape), x_shape, f_shape[3])
        dy = chain.image_in(ctx, "in2", g.out_shape)
        chain.window("depthwise_conv2d_filter", per_channel(g), df, [x, dy], "filter")
    return chain


def _filter_grad(op: Any, grad: Tensor) -> list:
    x, _, dy = op.inputs
    attrs = depthwise_attrs(op)
    dx = apply_op(
        "DepthwiseConv2dNativeBackpropInput",
        [shape_tensor(x), grad, dy],
        attrs,
        "DepthwiseConv2dNativeBackpropInput",
    )
    y = apply_op("DepthwiseConv2dNative", [x, grad], attrs, "DepthwiseConv2dNative")
    return [dx.outputs[0], None, y.outputs[0]]


register(
    OpDef(
        "DepthwiseConv2dNativeBackpropFilter",
        infer=_filter_infer,
        reference=_filter_reference,
        lower=lambda ctx: _filter_chain(ctx).kernels,
        grad=_filter_grad,
        flops=lambda ctx: depthwise_flops(ctx.in_shapes[2], ctx.out_shapes[0]),
        const_inputs=(1,),
        input_names=("input", "filter_sizes", "out_backprop"),
        scratch=lambda ctx: _filter_chain(ctx).scratch * ctx.out_dtypes[0].size,
    )
)


# -- frontends ------------------------------------------------------------------------------------
def _native_attrs(strides: Any, padding: Any, data_format: str | None, dilations: Any) -> dict:
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    return {
        "strides": window_sequence(strides, "strides", fmt),
        "padding": check_padding(padding),
        "data_format": fmt,
        "dilations": window_sequence(1 if dilations is None else dilations, "dilations", fmt),
    }


def depthwise_conv2d_native(
    input: Any,  # noqa: A002 (TF's argument names)
    filter: Any,  # noqa: A002
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.nn.depthwise_conv2d_native`: out[n, i, j, c*M + m] = sum over (di, dj) of
    input[n, i*sh + di*dh - pad_top, j*sw + dj*dw - pad_left, c] * filter[di, dj, c, m] for a
    filter [k_h, k_w, C, M] (NHWC; NCHW puts the channels second)."""
    attrs = _native_attrs(strides, padding, data_format, dilations)
    with name_scope(name, "DepthwiseConv2dNative", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
        return apply_op("DepthwiseConv2dNative", [x, f], attrs, name=scope).outputs[0]


def depthwise_conv2d_native_backprop_input(
    input_sizes: Any,
    filter: Any,  # noqa: A002
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.nn.depthwise_conv2d_native_backprop_input`: the gradient of
    depthwise_conv2d_native by its input, of shape `input_sizes`."""
    attrs = _native_attrs(strides, padding, data_format, dilations)
    op_type = "DepthwiseConv2dNativeBackpropInput"
    with name_scope(name, op_type, [input_sizes, filter, out_backprop]) as scope:
        sizes = convert_to_tensor(input_sizes, dtype=_dt.int32, name="input_sizes")
        f = convert_to_tensor(filter, name="filter")
        dy = convert_to_tensor(out_backprop, dtype=f.dtype, name="out_backprop")
        return apply_op(op_type, [sizes, f, dy], attrs, name=scope).outputs[0]


def depthwise_conv2d_native_backprop_filter(
    input: Any,  # noqa: A002
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.nn.depthwise_conv2d_native_backprop_filter`: the gradient of
    depthwise_conv2d_native by its filter, of shape `filter_sizes`."""
    attrs = _native_attrs(strides, padding, data_format, dilations)
    op_type = "DepthwiseConv2dNativeBackpropFilter"
    with name_scope(name, op_type, [input, filter_sizes, out_backprop]) as scope:
        x = convert_to_tensor(input, name="input")
        sizes = convert_to_tensor(filter_sizes, dtype=_dt.int32, name="filter_sizes")
        dy = convert_to_tensor(out_backprop, dtype=x.dtype, name="out_backprop")
        return apply_op(op_type, [x, sizes, dy], attrs, name=scope).outputs[0]


def _rate_attrs(
    strides: Any, padding: Any, rate: Any, data_format: str | None, dilations: Any
) -> dict:
    """tf.nn.depthwise_conv2d's and separable_conv2d's arguments as the native op's attrs: the
    rate (or its alias dilations) as the op's dilations (TF builds SpaceToBatchND around the op
    instead; the values are the same)."""
    if rate is not None and dilations is not None:
        raise ValueError("rate and dilations cannot both be specified")
    rate = spatial_values(rate if rate is not None else dilations, "rate")
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    stride_list = window_sequence(strides, "strides", fmt)
    if any(r > 1 for r in rate) and any(s > 1 for s in stride_list):
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
    return _native_attrs(stride_list, padding, fmt, rate)


def depthwise_conv2d(
    input: Any,  # noqa: A002
    filter: Any,  # noqa: A002
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.depthwise_conv2d`: depthwise_conv2d_native with an optional dilation `rate`
    ([rate_h, rate_w]; strides must then be 1)."""
    attrs = _rate_attrs(strides, padding, rate, data_format, dilations)
    with name_scope(name, "depthwise", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
        if f.shape.ndims is not None and f.shape.ndims != 4:
            raise ValueError(f"Shape must be rank 4 but is rank {f.shape.ndims} (filter)")
        return apply_op("DepthwiseConv2dNative", [x, f], attrs, name=scope).outputs[0]


def separable_conv2d(
    input: Any,  # noqa: A002
    depthwise_filter: Any,
    pointwise_filter: Any,
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.separable_conv2d`: depthwise_conv2d with `depthwise_filter` [k_h, k_w, C, M],
    then a 1x1 convolution mixing its C*M channels with `pointwise_filter` [1, 1, C*M, out]."""
    attrs = _rate_attrs(strides, padding, rate, data_format, dilations)
    fmt = attrs["data_format"]
    with name_scope(name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]) as scope:
        x = convert_to_tensor(input, name="input")
        df = convert_to_tensor(depthwise_filter, dtype=x.dtype, name="depthwise_filter")
        pf = convert_to_tensor(pointwise_filter, dtype=x.dtype, name="pointwise_filter")
        for what, f in (("depthwise_filter", df), ("pointwise_filter", pf)):
            if f.shape.ndims is not None and f.shape.ndims != 4:
                raise ValueError(f"Shape must be rank 4 but is rank {f.shape.ndims} ({what})")
        p = pf.shape.as_list() if pf.shape.ndims is not None else [None] * 4
        for k in (0, 1):
            if p[k] is not None and p[k] != 1:
                raise ValueError(f"Dimension must be 1 but is {p[k]} (pointwise_filter)")
        d = df.shape.as_list() if df.shape.ndims is not None else [None] * 4
        if None not in (d[2], d[3], p[2]) and p[2] != d[2] * d[3]:
            raise ValueError(
                f"Depth of input ({d[2] * d[3]}) is not a multiple of input depth of filter "
                f"({p[2]}) (separable_conv2d)"
            )
        depthwise = apply_op("DepthwiseConv2dNative", [x, df], attrs, name="depthwise").outputs[0]

        def pointwise(t: Tensor) -> Tensor:
            conv = {"strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NHWC"}
            return apply_op("Conv2D", [t, pf], conv, name=scope).outputs[0]

        return channels_first_via_last(depthwise, fmt, pointwise)


# TF1's tf.nn has these names too
depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter
