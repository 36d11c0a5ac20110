"""Convolution and pooling over NHWC images: Conv2D, MaxPool, AvgPool (gradients: conv_grad.py).

Shared with conv_grad.py: TF's window arithmetic (output sizes, the SAME padding split with
the odd pixel at the bottom/right), the attribute checks with TF's messages, the windows the
NumPy references read, and the geometry (ops/kernels.Geometry) the kernels are instantiated
with. A convolution lowers to a ConvSpec: its geometry and the plan of the hand-written kernels
of runtime/include/tfc_conv.h (direct register tiles or im2col+GEMM, chosen per shape by
conv_algo.py, temporary buffers in the op's arena scratch); a pool lowers to a WindowSpec
rendered by one template per kind and target (templates/c/kernels/*pool*.c.j2, with every size
a literal and the innermost loop over contiguous channels, which the C compiler vectorizes;
templates/cuda/kernels/*pool*.cu.j2, a thread per element of the image the spec names).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import Shape, num_elements
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv_algo import check_algorithm, forward_filter_block, plan_conv, pointwise
from tfc.ops.conv_args import channels_first_via_last
from tfc.ops.flops import elements
from tfc.ops.grad_ops import shape_tensor
from tfc.ops.kernels import (
    ConvSpec,
    Geometry,
    Kernel,
    Param,
    WindowSpec,
    loop_kernel,
    product_operands,
    product_precision,
    view,
)
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    check_same_dtypes,
    register,
)

__all__ = ["conv2d", "max_pool", "avg_pool"]

FLOATS = _dt.FLOATS  # the 16-bit floats run in float32 (OpDef.computes_in)
_PADDINGS = ("SAME", "VALID")
# the ops that also take padding "EXPLICIT" (explicit_paddings: before and after of each NHWC
# dimension, TF's attribute): the fused convolution, into which the epilogue pass folds a Pad,
# and the max pool and its gradients, which ONNX's MaxPool with pads imports to (no -inf Pad)
EXPLICIT_PADDING_OPS = ("_FusedConv2D", "MaxPool", "MaxPoolGrad", "MaxPoolGradGrad")


# -- attributes ---------------------------------------------------------------------------------
def check_window_attrs(ctx: OpContext, pool: bool) -> None:
    """TF's checks of strides, dilations / ksize, padding and data_format, with its messages."""
    names = ("strides", "ksize") if pool else ("strides", "dilations")
    for attr in names:
        values = ctx.attrs.get(attr, [1, 1, 1, 1])
        if len(values) != 4:
            what = {"strides": "stride", "dilations": "dilation", "ksize": "ksize"}[attr]
            raise ctx.error(
                f"{ctx.type} requires the {what} attribute to contain 4 values, but got: "
                f"{len(values)}"
            )
    strides = ctx.attrs.get("strides", [1, 1, 1, 1])
    padding = ctx.attrs.get("padding")
    if padding == "EXPLICIT" and ctx.type in EXPLICIT_PADDING_OPS:
        _check_explicit_paddings(ctx, ctx.attrs["ksize"] if pool else None)
    elif padding not in _PADDINGS:
        raise ValueError(
            f"Value for attr 'padding' of \"{padding}\" is not in the list of allowed values: "
            f'"SAME", "VALID" (op \'{ctx.name}\' of type {ctx.type})'
        )
    data_format = ctx.attrs.get("data_format", "NHWC")
    if data_format != "NHWC":
        raise NotImplementedError(
            f"'{ctx.name}' ({ctx.type}) has data_format {data_format!r}; tfc computes "
            "convolutions and pools in NHWC only: transpose NCHW tensors with "
            "tf.transpose(x, [0, 2, 3, 1])"
        )
    if pool:
        ksize = ctx.attrs["ksize"]
        if ksize[0] != 1 or strides[0] != 1:
            raise ctx.error("Pooling is not yet supported on the batch dimension.")
        if ksize[3] != 1 or strides[3] != 1:
            raise ctx.error(
                "tfc does not pool over the depth dimension: ksize[3] and strides[3] must be 1"
            )
        if min(ksize) < 1:
            raise ctx.error(f"Sliding window ksize must be positive, got {list(ksize)}")
    else:
        dilations = ctx.attrs.get("dilations", [1, 1, 1, 1])
        if strides[0] != 1 or strides[3] != 1:
            raise ctx.error(
                "Current implementation does not yet support strides in the batch and depth "
                "dimensions."
            )
        if dilations[0] != 1 or dilations[3] != 1:
            raise ctx.error(
                "Current implementation does not yet support dilations in the batch and depth "
                "dimensions."
            )
        if min(dilations) < 1:
            raise ctx.error("Dilated rates should be larger than 0.")
    if min(strides) < 1:
        raise ctx.error("Row and column strides should be larger than 0.")


def _check_explicit_paddings(ctx: OpContext, ksize: Sequence[int] | None) -> None:
    """TF's checks of explicit_paddings; for a pool (`ksize`), also each padding below the
    window's size, so that every window holds a pixel of the image (the pool kernels take the
    maximum of those; padding never wins)."""
    pads = list(ctx.attrs.get("explicit_paddings", ()))
    if len(pads) != 8 or min(pads) < 0 or pads[:2] != [0, 0] or pads[6:] != [0, 0]:
        raise ctx.error(
            f"explicit_paddings {pads} must be 8 values, (before, after) for N, H, W and C, "
            f"none negative and 0 for N and C"
        )
    if ksize is not None and any(p >= ksize[1 + i // 2] for i, p in enumerate(pads[2:6])):
        raise ctx.error(
            f"explicit_paddings {pads} of a pool must be smaller than its window "
            f"{list(ksize[1:3])}: a window of padding alone has no pixel to pool"
        )


def check_rank4(ctx: OpContext, i: int) -> Shape:
    """Input `i` as a rank-4 shape ((None,) * 4 when its rank is unknown); TF's WithRank."""
    shape = ctx.in_shapes[i]
    if shape is None:
        return (None,) * 4
    if len(shape) != 4:
        raise ctx.error(f"Shape must be rank 4 but is rank {len(shape)}")
    return tuple(shape)


# -- window arithmetic --------------------------------------------------------------------------
def windowed_size(
    ctx: OpContext, size: int | None, k: int | None, stride: int, dilation: int, dim: int
) -> tuple[int | None, int | None]:
    """(output size, padding before) of spatial dimension `dim` (1 or 2 of NHWC): TF's
    GetWindowedOutputSizeVerboseV2."""
    if size is None or k is None:
        return None, None
    effective = (k - 1) * dilation + 1
    if ctx.attrs["padding"] in ("VALID", "EXPLICIT"):
        before, after = (
            ctx.attrs["explicit_paddings"][2 * dim : 2 * dim + 2]
            if ctx.attrs["padding"] == "EXPLICIT"
            else (0, 0)
        )
        size += before + after
        numerator = size - effective + stride
        out = numerator // stride if numerator >= 0 else -(-numerator // stride)  # C's division
        pad = before
    else:
        out = (size + stride - 1) // stride
        pad = max((out - 1) * stride + effective - size, 0) // 2  # the odd one goes after
    if out < 0:
        raise ctx.error(
            f"Computed output size would be negative: {out} [input_size: {size}, "
            f"effective_filter_size: {effective}, stride: {stride}]"
        )
    return out, pad


def conv_geometry(ctx: OpContext, x: Sequence[int], f: Sequence[int]) -> Geometry:
    """The geometry of a convolution of input shape `x` with filter shape `f` (HWIO)."""
    _, s_h, s_w, _ = ctx.attrs["strides"]
    _, d_h, d_w, _ = ctx.attrs.get("dilations", [1, 1, 1, 1])
    out_h, pad_top = windowed_size(ctx, x[1], f[0], s_h, d_h, 1)
    out_w, pad_left = windowed_size(ctx, x[2], f[1], s_w, d_w, 2)
    return Geometry(*x, out_h, out_w, f[3], f[0], f[1], s_h, s_w, d_h, d_w, pad_top, pad_left)


def pool_geometry(ctx: OpContext, x: Sequence[int]) -> Geometry:
    _, k_h, k_w, _ = ctx.attrs["ksize"]
    _, s_h, s_w, _ = ctx.attrs["strides"]
    out_h, pad_top = windowed_size(ctx, x[1], k_h, s_h, 1, 1)
    out_w, pad_left = windowed_size(ctx, x[2], k_w, s_w, 1, 2)
    return Geometry(*x, out_h, out_w, x[3], k_h, k_w, s_h, s_w, 1, 1, pad_top, pad_left)


def windows(x: np.ndarray, g: Geometry, fill: float = 0.0) -> np.ndarray:
    """The window of every output pixel: [N, OH, OW, C, KH, KW], padding read as `fill`."""
    hp, wp = g.padded_size()
    pads = [(0, 0), (g.pad_top, hp - g.pad_top - g.in_h), (g.pad_left, wp - g.pad_left - g.in_w)]
    padded = np.pad(x, pads + [(0, 0)], constant_values=fill)
    span = ((g.k_h - 1) * g.d_h + 1, (g.k_w - 1) * g.d_w + 1)
    views = sliding_window_view(padded, span, axis=(1, 2))
    views = views[:, : (g.out_h - 1) * g.s_h + 1 : g.s_h, : (g.out_w - 1) * g.s_w + 1 : g.s_w]
    return views[..., :: g.d_h, :: g.d_w]


def valid_counts(g: Geometry) -> np.ndarray:
    """How many input pixels each output pixel's window covers: [OH, OW] (SAME pads are not)."""
    ones = np.ones((1, g.in_h, g.in_w, 1))
    return windows(ones, g).sum(axis=(3, 4, 5))[0]


def empty_output(g: Geometry) -> bool:
    return num_elements(g.out_shape) == 0


def empty_sum(g: Geometry) -> bool:
    """Whether each output is a sum of nothing (no input channels, or an empty filter)."""
    return g.in_c == 0 or g.k_h == 0 or g.k_w == 0


def zeros_kernel(dtype: _dt.DType, shape: Sequence[int]) -> list[Kernel]:
    """A kernel filling output 0 with zeros (a gradient nothing flows into)."""
    return loop_kernel(shape, view("out0", dtype, shape), [], "0")


def window_kernel(
    kind: str, g: Geometry, dtype: _dt.DType, bufs: Sequence[str], over: str = "output"
) -> Kernel:
    """A kernel of kind `kind` over geometry `g`: y writes `bufs[0]`, x0, x1 read the rest;
    `over`: the image whose elements are independent outputs (WindowSpec)."""
    params = [Param("y", dtype.c_type, False, bufs[0])]
    params += [Param(f"x{k}", dtype.c_type, True, b) for k, b in enumerate(bufs[1:])]
    return Kernel(kind, params, WindowSpec(g, dtype, over))


def conv_kernel(
    ctx: OpContext,
    kind: str,
    g: Geometry,
    dtype: _dt.DType,
    ins: Sequence[str],
    epilogue: Epilogue | None = None,
    channels: tuple[int, int] | None = None,
) -> Kernel:
    """A conv2d kernel of `kind` ("forward", "input" or "filter") with the plan conv_algo.py
    makes for `g`: y, x0, x1 (`ins`: the buffers of the image and the filter, then those of
    the forward `epilogue`'s bias x2 and residual x3), and the scratch when the plan needs
    some. `channels` (a forward convolution's elements per output pixel, and its first
    channel there): the slice of a wider output it writes."""
    plan = plan_conv(ctx, kind, g, dtype)
    ct = dtype.c_type
    params = [Param("y", ct, False, "out0")]
    params += [Param(f"x{k}", ct, True, buf) for k, buf in enumerate(ins)]
    if epilogue is not None:
        plan.fields.update(bias=1, residual=int(epilogue.residual), act=epilogue.act)
    if channels is not None:
        plan.fields.update(ldy=channels[0], y_off=channels[1])
    if plan.scratch_elements:
        params.append(Param("s", ct, False, "scratch"))
    precision = product_precision(ctx)
    return Kernel("conv2d", params, ConvSpec(kind, g, plan, dtype, precision))


def conv_scratch(ctx: OpContext, kind: str, g: Geometry | None) -> int:
    """Bytes of scratch the kernel of `kind` needs (0 when no kernel of tfc_conv.h runs)."""
    if g is None:
        return 0
    dtype = ctx.out_dtypes[0]
    return plan_conv(ctx, kind, g, dtype).scratch_elements * dtype.size


def concrete(ctx: OpContext, i: int) -> tuple[int, ...]:
    return tuple(ctx.in_shapes[i])


def as_float64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# -- Conv2D(input [N,H,W,Cin], filter [KH,KW,Cin,Cout]) -------------------------------------------
def _conv2d_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("input", "filter"))
    check_dtype(ctx, 0, FLOATS, "input")
    x, f = check_rank4(ctx, 0), check_rank4(ctx, 1)
    check_window_attrs(ctx, pool=False)
    check_algorithm(ctx)
    if x[3] is not None and f[2] is not None and x[3] != f[2]:
        raise ctx.error(f"Dimensions must be equal, but are {x[3]} and {f[2]}")
    g = conv_geometry(ctx, x, f)
    return [(ctx.in_dtypes[0], (g.batch, g.out_h, g.out_w, g.out_c))]


def _conv2d_reference(ctx: OpContext, x: np.ndarray, f: np.ndarray) -> np.ndarray:
    x, f = product_operands(ctx, x, f)
    g = conv_geometry(ctx, x.shape, f.shape)
    if empty_output(g) or empty_sum(g):
        return np.zeros(g.out_shape, x.dtype)
    # every window times the filter, summed in float64 and rounded once
    y = np.einsum("nhwcij,ijco->nhwo", as_float64(windows(x, g)), as_float64(f))
    return y.astype(x.dtype)


def _conv2d_geometry(ctx: OpContext) -> Geometry | None:
    """The geometry of a Conv2D that runs a kernel of tfc_conv.h (None when it does not)."""
    g = conv_geometry(ctx, concrete(ctx, 0), concrete(ctx, 1))
    return None if empty_output(g) or empty_sum(g) else g


def _conv2d_lower(ctx: OpContext) -> list:
    g = conv_geometry(ctx, concrete(ctx, 0), concrete(ctx, 1))
    dtype = ctx.out_dtypes[0]
    if empty_output(g):
        return []
    if empty_sum(g):
        return zeros_kernel(dtype, g.out_shape)  # an empty sum
    return [conv_kernel(ctx, "forward", g, dtype, ("in0", "in1"))]


def attrs_of(op: Any, names: Sequence[str]) -> dict:
    """The attributes of `op` among `names` that it has (ops built directly may lack some)."""
    attrs = {}
    for k in names:
        try:
            attrs[k] = op.get_attr(k)
        except ValueError:
            continue
    return attrs


def conv_attrs(op: Any) -> dict:
    return attrs_of(op, ("strides", "padding", "data_format", "dilations", "use_cudnn_on_gpu"))


def _conv2d_grad(op: Any, dy: Tensor) -> list:
    x, f = op.inputs
    attrs = conv_attrs(op)
    dx = apply_op("Conv2DBackpropInput", [shape_tensor(x), f, dy], attrs, "Conv2DBackpropInput")
    df = apply_op("Conv2DBackpropFilter", [x, shape_tensor(f), dy], attrs, "Conv2DBackpropFilter")
    return [dx.outputs[0], df.outputs[0]]


def conv_flops(dy_shape: Any, filter_shape: Any) -> int:
    """2 * KH*KW*CI multiply-adds per element of the convolution's output (or its gradient)."""
    kh, kw, ci, _ = filter_shape
    return 2 * elements(dy_shape) * kh * kw * ci


def window_flops(ctx: OpContext, shape: Any) -> int:
    """One operation per element of each pooling window, per element of `shape`."""
    _, kh, kw, _ = ctx.attrs["ksize"]
    return elements(shape) * kh * kw


register(
    OpDef(
        "Conv2D",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_conv2d_infer,
        reference=_conv2d_reference,
        lower=_conv2d_lower,
        grad=_conv2d_grad,
        flops=lambda ctx: conv_flops(ctx.out_shapes[0], ctx.in_shapes[1]),
        input_names=("input", "filter"),
        scratch=lambda ctx: conv_scratch(ctx, "forward", _conv2d_geometry(ctx)),
    )
)


# -- _FusedConv2D(input, filter, bias [C], [residual]): Conv2D with its epilogue ------------------
# TensorFlow's grappler op of that name: `fused_ops` names what follows the convolution, in order:
# "BiasAdd" (input 2, one value per output channel), "Add" (input 3, of the output's shape: a
# residual), then "Relu" or "Relu6"; `num_args` counts the inputs after the filter. The
# conv_epilogue pass makes it in C programs (tfc/passes/conv_epilogue.py); tfc_conv.h applies the
# epilogue to each register tile before storing it (the im2col and columns kernels to the rows
# they just wrote), so the output is written once instead of re-read by an element-wise kernel.
# Each step rounds as the separate ops do: the result has the bits of the unfused graph's.
FUSED_ACTIVATIONS = {"Relu": 1, "Relu6": 2}  # runtime/include/tfc_conv.h's TFC_CONV_ACT_*


@dataclass(frozen=True)
class Epilogue:
    """A _FusedConv2D's epilogue: whether a residual is added, and the activation's code."""

    residual: bool
    act: int


def fused_conv_epilogue(ctx: OpContext) -> Epilogue:
    """The epilogue `fused_ops` and `num_args` name, checked against the node's inputs."""
    ops = [o.decode() if isinstance(o, bytes) else str(o) for o in ctx.attrs.get("fused_ops", [])]
    residual = len(ops) > 1 and ops[1] == "Add"
    rest = ops[2:] if residual else ops[1:]
    act = FUSED_ACTIVATIONS.get(rest[0]) if len(rest) == 1 else 0 if not rest else None
    if not ops or ops[0] != "BiasAdd" or act is None:
        raise ctx.error(
            f"fused_ops {ops} is not supported: it must be BiasAdd, then optionally Add (a "
            f"residual), then optionally one of {', '.join(FUSED_ACTIVATIONS)}"
        )
    args = 1 + residual
    if ctx.attrs.get("num_args", args) != args or len(ctx.in_shapes) != 2 + args:
        raise ctx.error(
            f"fused_ops {ops} takes {args} argument(s) after the filter; num_args is "
            f"{ctx.attrs.get('num_args')} and the op has {len(ctx.in_shapes) - 2}"
        )
    return Epilogue(residual, act or 0)


def pack_filter(f: np.ndarray, block: int) -> np.ndarray:
    """HWIO filter `f` in blocks of `block` output channels, zeros past its last:
    [ceil(out_c / block), k_h*k_w*in_c, block], as a _FusedConv2D with `packed_filter` reads it."""
    taps, out_c = int(np.prod(f.shape[:3])), f.shape[3]
    blocks = -(-out_c // block)
    padded = np.zeros((taps, blocks * block), f.dtype)
    padded[:, :out_c] = f.reshape(taps, out_c)
    return np.ascontiguousarray(padded.reshape(taps, blocks, block).transpose(1, 0, 2))


def _unpack_filter(packed: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The HWIO filter of `shape` that pack_filter made `packed` of."""
    blocks, taps, block = packed.shape
    return packed.transpose(1, 0, 2).reshape(taps, blocks * block)[:, : shape[3]].reshape(shape)


def _unpacked(ctx: OpContext) -> OpContext:
    """`ctx` as if its filter were HWIO: with the `packed_filter` attribute (the filter's HWIO
    shape), input 1 holds it in blocks of the direct tiles' channels (pack_filter), which this
    checks."""
    shape = ctx.attrs.get("packed_filter")
    if not shape:
        return ctx
    shape = tuple(int(d) for d in shape)
    got = tuple(ctx.in_shapes[1] or ())
    if len(shape) != 4 or ctx.in_dtypes[0] not in (_dt.float32, _dt.float64):
        raise ctx.error(f"packed_filter {list(shape)} must be an HWIO shape of a float filter")
    block = forward_filter_block(shape[3], ctx.in_dtypes[0])
    want = (-(-shape[3] // block), shape[0] * shape[1] * shape[2], block)
    if got != want:
        raise ctx.error(
            f"a filter packed from {list(shape)} must have shape {list(want)}, not {list(got)}"
        )
    in_shapes = list(ctx.in_shapes)
    in_shapes[1] = shape
    return replace(ctx, in_shapes=in_shapes)


def _fused_conv2d_infer(ctx: OpContext) -> list:
    if ctx.attrs.get("data_format", "NHWC") not in ("NHWC", b"NHWC"):
        raise ctx.error(f"data_format {ctx.attrs['data_format']!r} is not supported (NHWC only)")
    epilogue = fused_conv_epilogue(ctx)
    ctx = _unpacked(ctx)
    ((dtype, shape),) = _conv2d_infer(ctx)
    operands = [("bias", 2, (shape[3],))] + ([("residual", 3, shape)] if epilogue.residual else [])
    for name, i, want in operands:
        if ctx.in_dtypes[i] != dtype:
            raise ctx.error(f"{name} is {ctx.in_dtypes[i].name}, the convolution {dtype.name}")
        got = ctx.in_shapes[i]
        if (
            got is None
            or len(got) != len(want)
            or any(a is not None and b is not None and a != b for a, b in zip(got, want))
        ):
            raise ctx.error(f"{name} must have shape {list(want)}, not {got}")
    return [(dtype, shape)]


def _fused_conv2d_reference(ctx: OpContext, x, f, bias, *residual) -> np.ndarray:
    epilogue = fused_conv_epilogue(ctx)
    if ctx.attrs.get("packed_filter"):
        f = _unpack_filter(f, _unpacked(ctx).in_shapes[1])
    y = _conv2d_reference(ctx, x, f) + bias  # each step in the dtype, as the unfused ops
    if residual:
        y = y + residual[0]
    if epilogue.act:
        y = np.where(y < 0, 0, y)
    if epilogue.act == FUSED_ACTIVATIONS["Relu6"]:
        y = np.where(y > 6, 6, y)
    return y.astype(x.dtype)


def _fused_conv2d_lower(ctx: OpContext) -> list:
    ctx = _unpacked(ctx)
    g = conv_geometry(ctx, concrete(ctx, 0), concrete(ctx, 1))
    if empty_output(g):
        return []
    if empty_sum(g):
        raise ctx.error("a filter with no taps or input channels has no fused kernel")
    epilogue = fused_conv_epilogue(ctx)
    ins = [f"in{k}" for k in range(len(ctx.in_shapes))]
    return [conv_kernel(ctx, "forward", g, ctx.out_dtypes[0], ins, epilogue)]


def _fused_conv2d_inplace(ctx: OpContext) -> tuple[int, ...]:
    """The residual, where the direct kernel computes the convolution: each register tile reads
    its residual elements just before it writes the same output elements, so the output may take
    over a residual that dies here (at a large batch that saves the output's read from memory
    before it is written: ResNet-50's 1x1 expansions at batch 32); so does a 1x1 convolution's
    GEMM, whose blocks of rows go through a scratch block before their epilogue. The other
    kernels write the products first, then add the residual to them."""
    if not fused_conv_epilogue(ctx).residual:
        return ()
    g = _conv2d_geometry(_unpacked(ctx))
    if g is None:
        return ()
    plan = plan_conv(ctx, "forward", g, ctx.out_dtypes[0])
    in_place = plan.kernel == "direct" or (plan.kernel == "im2col" and pointwise(g))
    return (3,) if in_place else ()


def _fused_conv2d_flops(ctx: OpContext) -> int:
    """The convolution's, then one operation per output element and epilogue step."""
    epilogue = fused_conv_epilogue(ctx)
    steps = 1 + epilogue.residual + (epilogue.act != 0)
    f = _unpacked(ctx).in_shapes[1]
    return conv_flops(ctx.out_shapes[0], f) + elements(ctx.out_shapes[0]) * steps


register(
    OpDef(
        "_FusedConv2D",
        infer=_fused_conv2d_infer,
        reference=_fused_conv2d_reference,
        lower=_fused_conv2d_lower,
        differentiable=False,  # made after differentiation, by a compile pass
        # tfc_conv.h is its only kernel: a GPU program keeps Conv2D and its element-wise ops
        # (the pass runs only for targets that ask for it), and a _FusedConv2D placed on a GPU
        # by name runs on the host
        host_only=True,
        flops=_fused_conv2d_flops,
        input_names=("input", "filter", "bias", "residual"),
        scratch=lambda ctx: conv_scratch(ctx, "forward", _conv2d_geometry(_unpacked(ctx))),
        inplace=_fused_conv2d_inplace,
    )
)


# -- _FusedConv2DConcat(x0, f0, b0, x1, f1, b1, ...): _FusedConv2Ds joined along the channels ---
# A ConcatV2 of _FusedConv2D outputs along the last axis (SqueezeNet's fire modules: a 1x1 and a
# 3x3 expansion of one image), each member read by it alone: every member's kernel writes its
# channels of the output directly (tfc_conv_plan's ldy and y_off), so the join copies nothing.
# `members` holds each member's attributes (strides, padding, dilations, fused_ops, num_args);
# its inputs are each member's image, filter and bias in order. The conv_epilogue pass makes it.
def member_contexts(ctx: OpContext) -> list[OpContext]:
    """One _FusedConv2D context per member, with its three inputs."""
    members = ctx.attrs.get("members", ())
    if len(members) < 1 or len(ctx.in_shapes) != 3 * len(members):
        raise ctx.error(
            f"{len(members)} members take {3 * len(members)} inputs (image, filter, bias "
            f"each); the op has {len(ctx.in_shapes)}"
        )
    contexts = []
    for i, attrs in enumerate(members):
        sub = slice(3 * i, 3 * i + 3)
        contexts.append(
            OpContext(
                name=f"{ctx.name}:{i}", type="_FusedConv2D", attrs=dict(attrs),
                in_dtypes=list(ctx.in_dtypes[sub]), in_shapes=list(ctx.in_shapes[sub]),
                out_dtypes=list(ctx.out_dtypes), graph=ctx.graph, inputs=ctx.inputs[sub],
            )
        )  # fmt: skip
        contexts[-1].out_shapes = [shape for _, shape in _fused_conv2d_infer(contexts[-1])]
    return contexts


def _concat_infer(ctx: OpContext) -> list:
    outputs = []
    for sub in member_contexts(ctx):
        if fused_conv_epilogue(sub).residual:
            raise ctx.error("a member with a residual is not supported")
        outputs.append((sub.in_dtypes[0], sub.out_shapes[0]))
    (dtype, first), channels = outputs[0], 0
    for d, shape in outputs:
        if d != dtype or shape[:3] != first[:3]:
            raise ctx.error(
                f"members must agree in dtype and in batch, height and width; they give "
                f"{', '.join(f'{d.name} {list(s)}' for d, s in outputs)}"
            )
        channels = None if channels is None or shape[3] is None else channels + shape[3]
    return [(dtype, (*first[:3], channels))]


def _concat_reference(ctx: OpContext, *xs: np.ndarray) -> np.ndarray:
    parts = [
        _fused_conv2d_reference(sub, *xs[3 * i : 3 * i + 3])
        for i, sub in enumerate(member_contexts(ctx))
    ]
    return np.concatenate(parts, axis=-1)


def _concat_lower(ctx: OpContext) -> list:
    kernels, offset = [], 0
    total = ctx.out_shapes[0][3]
    for i, sub in enumerate(member_contexts(ctx)):
        g = conv_geometry(sub, concrete(sub, 0), concrete(sub, 1))
        if empty_output(g):
            return []
        if empty_sum(g):
            raise ctx.error("a filter with no taps or input channels has no fused kernel")
        ins = [f"in{3 * i + k}" for k in range(3)]
        epilogue = fused_conv_epilogue(sub)
        dtype = ctx.out_dtypes[0]
        kernels.append(conv_kernel(sub, "forward", g, dtype, ins, epilogue, (total, offset)))
        offset += g.out_c
    return kernels


def _concat_scratch(ctx: OpContext) -> int:
    """The largest member's: the members' kernels run one after another."""
    subs = member_contexts(ctx)
    return max(conv_scratch(sub, "forward", _conv2d_geometry(sub)) for sub in subs)


register(
    OpDef(
        "_FusedConv2DConcat",
        infer=_concat_infer,
        reference=_concat_reference,
        lower=_concat_lower,
        differentiable=False,  # made after differentiation, by a compile pass
        host_only=True,  # as _FusedConv2D: tfc_conv.h is its only kernel
        flops=lambda ctx: sum(_fused_conv2d_flops(sub) for sub in member_contexts(ctx)),
        scratch=_concat_scratch,
    )
)


# -- MaxPool, AvgPool(value [N,H,W,C]) ----------------------------------------------------------
def _pool_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, FLOATS, "input")
    x = check_rank4(ctx, 0)
    check_window_attrs(ctx, pool=True)
    g = pool_geometry(ctx, x)
    return [(ctx.in_dtypes[0], (g.batch, g.out_h, g.out_w, g.out_c))]


def _max_pool_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    g = pool_geometry(ctx, x.shape)
    if empty_output(g):
        return np.zeros(g.out_shape, x.dtype)
    # padding never wins: every window holds at least one input pixel; NaN propagates
    return windows(x, g, fill=-np.inf).max(axis=(4, 5))


def _avg_pool_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    g = pool_geometry(ctx, x.shape)
    if empty_output(g):
        return np.zeros(g.out_shape, x.dtype)
    sums = windows(as_float64(x), g).sum(axis=(4, 5))
    return (sums / valid_counts(g)[None, :, :, None]).astype(x.dtype)


def _pool_lower(template: str):
    def lower(ctx: OpContext) -> list:
        g = pool_geometry(ctx, concrete(ctx, 0))
        if empty_output(g):
            return []
        return [window_kernel(template, g, ctx.out_dtypes[0], ("out0", "in0"))]

    return lower


def pool_attrs(op: Any) -> dict:
    names = ("ksize", "strides", "padding", "data_format")
    explicit = op.get_attr("padding") == "EXPLICIT"
    return attrs_of(op, names + ("explicit_paddings",) if explicit else names)


def _max_pool_grad(op: Any, dy: Tensor) -> list:
    x, y = op.inputs[0], op.outputs[0]
    return [apply_op("MaxPoolGrad", [x, y, dy], pool_attrs(op), "MaxPoolGrad").outputs[0]]


def _avg_pool_grad(op: Any, dy: Tensor) -> list:
    inputs = [shape_tensor(op.inputs[0]), dy]
    return [apply_op("AvgPoolGrad", inputs, pool_attrs(op), "AvgPoolGrad").outputs[0]]


for _type, _reference, _template, _rule in [
    ("MaxPool", _max_pool_reference, "max_pool", _max_pool_grad),
    ("AvgPool", _avg_pool_reference, "avg_pool", _avg_pool_grad),
]:
    register(
        OpDef(
            _type,
            infer=_pool_infer,
            reference=_reference,
            lower=_pool_lower(_template),
            grad=_rule,
            flops=lambda ctx: window_flops(ctx, ctx.out_shapes[0]),
            input_names=("value",),
            dtypes=(_dt.float16, _dt.bfloat16),
            computes_in=HALVES_IN_FLOAT32,
        )
    )


# -- frontends ----------------------------------------------------------------------------------
def _sequence(value: Any, what: str) -> list[int]:
    """An NHWC strides/ksize/dilations argument as 4 ints: an int or 1 or 2 values give the
    spatial dims (TF 1.15's _get_sequence), 4 values are taken as they are."""
    if isinstance(value, (int, np.integer)):
        value = [value]
    values = [int(v) for v in value]
    if len(values) == 1:
        return [1, values[0], values[0], 1]
    if len(values) == 2:
        return [1, values[0], values[1], 1]
    if len(values) == 4:
        return values
    raise ValueError(f"{what} should be of length 1, 2 or 4 but was {len(values)}")


def _nhwc_sequence(value: Any, what: str, data_format: str) -> list[int]:
    """_sequence's 4 ints in NHWC order; 4 values given for NCHW are in NCHW order."""
    values = _sequence(value, what)
    if data_format == "NCHW" and not isinstance(value, (int, np.integer)) and len(value) == 4:
        return [values[0], values[2], values[3], values[1]]
    return values


def _window_attrs(strides: Any, padding: Any, data_format: str | None) -> dict:
    """The NHWC op's attrs: NCHW frontends compute channels last between two transposes."""
    if strides is None:
        raise ValueError("strides must be given (e.g. [1, 1, 1, 1])")
    data_format = data_format or "NHWC"
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding not in _PADDINGS:
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    strides = _nhwc_sequence(strides, "strides", data_format)
    return {"strides": strides, "padding": padding, "data_format": "NHWC"}


def conv2d(
    input: Any,  # noqa: A002 (TF's argument name)
    filter: Any = None,  # noqa: A002
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """`tf.nn.conv2d`: out[n,i,j,o] = sum over (di, dj, c) of
    input[n, i*sh + di*dh - pad_top, j*sw + dj*dw - pad_left, c] * filter[di, dj, c, o], NHWC
    input and HWIO filter; SAME pads with zeros (the odd pixel at the bottom/right), VALID not.
    `filters` is TF 1.14's alias of `filter`. NCHW input (and NCHW-ordered strides and
    dilations) is computed channels last between two transposes, as TF's CPU kernels do."""
    if filter is not None and filters is not None:
        raise ValueError("filter and filters arguments cannot both be specified")
    filter = filters if filter is None else filter  # noqa: A001
    if filter is None:
        raise ValueError("conv2d needs a filter")
    attrs = _window_attrs(strides, padding, data_format)
    attrs["dilations"] = _nhwc_sequence(dilations, "dilations", data_format or "NHWC")
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    with name_scope(name, "Conv2D", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
        return channels_first_via_last(
            x,
            data_format or "NHWC",
            lambda t: apply_op("Conv2D", [t, f], attrs, name=scope).outputs[0],
        )


def _pool(
    op_type: str,
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: Any,
    name: str | None,
) -> Tensor:
    attrs = _window_attrs(strides, padding, data_format)
    attrs["ksize"] = _nhwc_sequence(ksize, "ksize", data_format or "NHWC")
    with name_scope(name, op_type, [value]) as scope:
        x = convert_to_tensor(value, name="input")
        return channels_first_via_last(
            x, data_format or "NHWC", lambda t: apply_op(op_type, [t], attrs, name=scope).outputs[0]
        )


def max_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.max_pool`: the maximum of each ksize window (NaN wins); SAME padding never does."""
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.avg_pool`: the mean of each ksize window; with SAME padding, the mean of the input
    pixels the window covers (padding is not counted), as TensorFlow computes it."""
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)
