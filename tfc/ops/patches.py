"""ExtractImagePatches: each output pixel holds the window of the NHWC image it covers.

    out[n, i, j, (a * k_w + b) * C + c] = images[n, i*s_h + a*r_h - pad_top,
                                                  j*s_w + b*r_w - pad_left, c]  (0 outside)

with TF's window arithmetic (conv.py's, the rates as dilations). The gradient is the adjoint
of that copy: a depthwise convolution's input gradient with a filter that picks tap (a, b) for
channel multiplier index a * k_w + b, after moving dy's channels into that order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.conv import (
    check_rank4,
    concrete,
    conv_geometry,
    empty_output,
    windows,
)
from tfc.ops.conv_args import check_padding, window_sequence
from tfc.ops.grad_ops import shape_tensor
from tfc.ops.kernels import Geometry, Kernel, Param, WindowSpec
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register

__all__ = ["extract_image_patches"]

_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)  # a copy: any element type


def _check_attrs(ctx: OpContext) -> None:
    for attr, what in (("ksizes", "ksizes"), ("strides", "strides"), ("rates", "rates")):
        values = ctx.attrs.get(attr, [1, 1, 1, 1])
        if len(values) != 4:
            raise ctx.error(
                f"ExtractImagePatches requires the {what} attribute to contain 4 "
                f"values, but got: {len(values)}"
            )
        if values[0] != 1 or values[3] != 1:
            raise ctx.error(f"Only support {what} across space.")
        if min(values) < 1:
            raise ctx.error(f"{what} must be positive, got {list(values)}")
    if ctx.attrs.get("padding") not in ("SAME", "VALID"):
        raise ValueError(
            f"Value for attr 'padding' of \"{ctx.attrs.get('padding')}\" is not in the list of "
            f'allowed values: "SAME", "VALID" (op \'{ctx.name}\' of type {ctx.type})'
        )


def _geometry(ctx: OpContext, x: Any) -> Geometry:
    """The window geometry: the rates as dilations, k_h * k_w * C output channels."""
    _, k_h, k_w, _ = ctx.attrs["ksizes"]
    conv_ctx = OpContext(
        ctx.name,
        ctx.type,
        {
            "strides": ctx.attrs["strides"],
            "dilations": ctx.attrs["rates"],
            "padding": ctx.attrs["padding"],
        },
        ctx.in_dtypes,
        ctx.in_shapes,
    )
    g = conv_geometry(conv_ctx, x, (k_h, k_w, x[3], None))
    out_c = None if x[3] is None else k_h * k_w * x[3]
    return Geometry(**{**g.__dict__, "out_c": out_c})


def _infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _TYPES, "images")
    x = check_rank4(ctx, 0)
    _check_attrs(ctx)
    g = _geometry(ctx, x)
    return [(ctx.in_dtypes[0], (g.batch, g.out_h, g.out_w, g.out_c))]


def _reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    g = _geometry(ctx, x.shape)
    if empty_output(g):
        return np.zeros(g.out_shape, x.dtype)
    patches = windows(x, g)  # [N, OH, OW, C, k_h, k_w]
    return np.ascontiguousarray(patches.transpose(0, 1, 2, 4, 5, 3)).reshape(g.out_shape)


def _lower(ctx: OpContext) -> list:
    g = _geometry(ctx, concrete(ctx, 0))
    if empty_output(g):
        return []
    ct = ctx.out_dtypes[0].c_type
    params = [Param("y", ct, False, "out0"), Param("x0", ct, True, "in0")]
    return [Kernel("extract_patches", params, WindowSpec(g, ctx.out_dtypes[0]))]


def _grad(op: Any, dy: Tensor) -> list:
    x = op.inputs[0]
    _, k_h, k_w, _ = op.get_attr("ksizes")
    channels = x.shape.as_list()[3] if x.shape.ndims == 4 else None
    if channels is None:
        raise ValueError(
            f"the gradient of ExtractImagePatches '{op.name}' needs the number of channels of "
            f"its input {x.name}, which is unknown"
        )
    taps = k_h * k_w
    picks = np.zeros((k_h, k_w, channels, taps), x.dtype.as_numpy_dtype)
    for a in range(k_h):
        for b in range(k_w):
            picks[a, b, :, a * k_w + b] = 1
    # dy's channels (tap, c) in the depthwise order (c, tap)
    pixels = _array.slice(_array.shape(dy), [0], [3])
    split = _array.reshape(dy, _array.concat([pixels, [taps, channels]], 0))
    moved = _array.transpose(split, [0, 1, 2, 4, 3])
    flat = _array.reshape(moved, _array.concat([pixels, [channels * taps]], 0))
    attrs = {
        "strides": op.get_attr("strides"),
        "padding": op.get_attr("padding"),
        "dilations": op.get_attr("rates"),
        "data_format": "NHWC",
    }
    dx = apply_op(
        "DepthwiseConv2dNativeBackpropInput",
        [shape_tensor(x), constant(picks), flat],
        attrs,
        "DepthwiseConv2dNativeBackpropInput",
    )
    return [dx.outputs[0]]


register(
    OpDef(
        "ExtractImagePatches",
        infer=_infer,
        reference=_reference,
        lower=_lower,
        grad=_grad,
        input_names=("images",),
    )
)


def extract_image_patches(
    images: Any,
    ksizes: Any = None,
    strides: Any = None,
    rates: Any = None,
    padding: Any = None,
    name: str | None = None,
    sizes: Any = None,
) -> Tensor:
    """`tf.extract_image_patches`: the ksizes window of every output pixel of an NHWC image,
    its taps rates apart, flattened in (row, column, channel) order into the channels."""
    if ksizes is not None and sizes is not None:
        raise ValueError("Cannot specify both 'ksizes' and 'sizes'.")
    attrs = {
        "ksizes": window_sequence(sizes if ksizes is None else ksizes, "ksizes"),
        "strides": window_sequence(strides, "strides"),
        "rates": window_sequence(rates, "rates"),
        "padding": check_padding(padding),
    }
    with name_scope(name, "ExtractImagePatches", [images]) as scope:
        x = convert_to_tensor(images, name="images")
        return apply_op("ExtractImagePatches", [x], attrs, name=scope).outputs[0]
