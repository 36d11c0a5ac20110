"""int8 convolutions, fully connected layers, pools, softmax and mean as TFLite computes them.

The int8 twins of TFLite's CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D,
MAX_POOL_2D, SOFTMAX and MEAN (tfc/ops/quantized.py has the element-wise ones and says how the
ops hold their quantization). Tensors are NHWC as TFLite's; filters keep TFLite's layouts
(convolution [out, kh, kw, in], depthwise [1, kh, kw, channels * multiplier], fully connected
[out, in]) and biases are int32. The fixed-point parameters come from the scales as TFLite's
kernels prepare them:

- convolutions: per output channel, the multiplier of input scale * filter scale / output scale
  (in double, per channel or the one per-tensor scale), applied to the int32 sum of
  filter * (input - input zero point) plus the bias;
- fully connected: the same sum, scaled by that double product and rounded in double (what
  TFLite's reference kernel does, unlike its convolutions);
- average pool: the sum of the window's values inside the image over their count, rounded
  half away from zero; max pool: the largest; both keep the input's quantization;
- softmax: gemmlowp's fixed-point exp of the differences to the row's maximum scaled by
  beta * input scale, output scale 1/256 and zero point -128;
- mean: the int32 sum minus the zero points, times the multiplier of input over output scale
  with 1/count folded in.

Windows lower to WindowSpec kernels (templates/*/kernels/int8_*.j2, one CUDA thread per
output); softmax and mean to row kernels (a CUDA thread per row), a mean over axes that are not
the last ones first moving them there through scratch memory.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import num_elements
from tfc.ops.conv import check_window_attrs, conv_geometry, pool_geometry, valid_counts, windows
from tfc.ops.fixed_point import (
    calculate_input_radius,
    exp_on_negative_values,
    get_reciprocal,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot,
    wrap32,
)
from tfc.ops.kernels import (
    Geometry,
    Kernel,
    Operand,
    Param,
    RowSpec,
    WindowSpec,
    c_literal,
    contiguous_strides,
    loop_kernel,
    view,
)
from tfc.ops.quantized import ACTIVATIONS, activation_range, check_quantization, f32
from tfc.ops.registry import OpContext, OpDef, apply_op, register

__all__: list[str] = []

_I8, _I32 = _dt.int8, _dt.int32


# -- shared rules ---------------------------------------------------------------------------------
def _check_inputs(ctx: OpContext, expected: Sequence[tuple[str, _dt.DType, int | None]]) -> None:
    """Each input's dtype and rank: (name, dtype, rank or None)."""
    for i, (name, dtype, rank) in enumerate(expected):
        if ctx.in_dtypes[i] is not dtype:
            raise TypeError(
                f"{ctx.type} (op '{ctx.name}'): {name} must be {dtype.name}, got "
                f"{ctx.in_dtypes[i].name}"
            )
        shape = ctx.in_shapes[i]
        if rank is not None and shape is not None and len(shape) != rank:
            raise ctx.error(f"{name} must be rank {rank}, got rank {len(shape)}")


def _output_quantization(ctx: OpContext) -> tuple[float, int, int, int]:
    """(output scale, zero point, activation low, activation high) of the node."""
    scale, zero = f32(ctx.attrs["output_scale"]), int(ctx.attrs["output_zero_point"])
    lo, hi = activation_range(ctx.attrs.get("activation", "NONE"), scale, zero)
    return scale, zero, lo, hi


def channel_multipliers(ctx: OpContext, channels: int) -> tuple[list[int], list[int]]:
    """The convolutions' fixed-point multiplier and shift of each output channel
    (PopulateConvolutionQuantizationParams: input scale * filter scale / output scale in
    double, the per-tensor filter scale broadcast)."""
    scales = _filter_scales(ctx, channels)
    in_scale, out_scale = f32(ctx.attrs["input_scale"]), f32(ctx.attrs["output_scale"])
    pairs = [quantize_multiplier(in_scale * s / out_scale) for s in scales]
    return [m for m, _ in pairs], [s for _, s in pairs]


def _filter_scales(ctx: OpContext, channels: int) -> list[float]:
    scales = [f32(s) for s in ctx.attrs["filter_scales"]]
    if len(scales) == 1:
        return scales * channels
    if len(scales) != channels:
        raise ctx.error(f"the filter has {len(scales)} scales for {channels} output channels")
    return scales


def _requantize(
    acc: np.ndarray, multipliers: Sequence[int], shifts: Sequence[int], zero: int, lo: int, hi: int
) -> np.ndarray:
    """int32 accumulators [..., channels] requantized per channel, clamped to [lo, hi]."""
    scaled = multiply_by_quantized_multiplier(
        wrap32(acc), np.asarray(multipliers, np.int64), np.asarray(shifts, np.int64)
    )
    return np.clip(scaled + zero, lo, hi).astype(np.int8)


def _initializer(values: Sequence[Any], dtype: _dt.DType) -> str:
    return ", ".join(c_literal(v, dtype) for v in values)


def _window_kernel(kind: str, g: Geometry, n_inputs: int, sizes: dict) -> list[Kernel]:
    params = [Param("y", "int8_t", False, "out0")]
    ctypes = ("int8_t", "int8_t", "int32_t")
    params += [Param(f"x{k}", ctypes[k], True, f"in{k}") for k in range(n_inputs)]
    return [Kernel(kind, params, WindowSpec(g, _I8, sizes=sizes))]


def _quantization_sizes(ctx: OpContext, lo: int, hi: int, zero: int) -> dict:
    return {"in_zero": int(ctx.attrs["input_zero_point"]), "out_zero": zero, "lo": lo, "hi": hi}


def _check_attrs_quantization(ctx: OpContext) -> None:
    check_quantization(ctx.attrs["input_scale"], ctx.attrs["input_zero_point"], ctx.name)
    check_quantization(ctx.attrs["output_scale"], ctx.attrs["output_zero_point"], ctx.name)
    if ctx.attrs.get("activation", "NONE") not in ACTIVATIONS:
        raise ctx.error(f"unknown fused activation {ctx.attrs['activation']!r}")


# -- Int8Conv2D(input [N,H,W,C], filter [O,KH,KW,C], bias [O]) -------------------------------------
def _hwio(f: Sequence) -> tuple:
    """A TFLite convolution filter's shape [O, KH, KW, I] as TF's [KH, KW, I, O]."""
    return (f[1], f[2], f[3], f[0])


def _conv_infer(ctx: OpContext) -> list:
    _check_inputs(ctx, (("input", _I8, 4), ("filter", _I8, 4), ("bias", _I32, 1)))
    check_window_attrs(ctx, pool=False)
    _check_attrs_quantization(ctx)
    x, f, b = ctx.in_shapes
    if x[3] is not None and f[3] is not None and x[3] != f[3]:
        raise ctx.error(
            f"input depth {x[3]} must equal the filter's {f[3]} (tfc has no "
            "grouped int8 convolution)"
        )
    if b[0] is not None and f[0] is not None and b[0] != f[0]:
        raise ctx.error(f"bias has {b[0]} values for {f[0]} output channels")
    g = conv_geometry(ctx, x, _hwio(f))
    return [(_I8, (g.batch, g.out_h, g.out_w, g.out_c))]


def _conv_reference(ctx: OpContext, x: np.ndarray, f: np.ndarray, b: np.ndarray) -> np.ndarray:
    g = conv_geometry(ctx, x.shape, _hwio(f.shape))
    win = windows(x.astype(np.int64) - int(ctx.attrs["input_zero_point"]), g)  # padding adds 0
    acc = np.einsum("nhwcij,oijc->nhwo", win, f.astype(np.int64)) + b.astype(np.int64)
    multipliers, shifts = channel_multipliers(ctx, g.out_c)
    _, zero, lo, hi = _output_quantization(ctx)
    return _requantize(acc, multipliers, shifts, zero, lo, hi)


def _conv_lower(ctx: OpContext) -> list:
    g = conv_geometry(ctx, ctx.in_shapes[0], _hwio(ctx.in_shapes[1]))
    if num_elements(g.out_shape) == 0:
        return []
    multipliers, shifts = channel_multipliers(ctx, g.out_c)
    _, zero, lo, hi = _output_quantization(ctx)
    sizes = _quantization_sizes(ctx, lo, hi, zero) | {
        "multipliers": _initializer(multipliers, _I32),
        "shifts": _initializer(shifts, _I32),
    }
    return _window_kernel("int8_conv2d", g, 3, sizes)


register(
    OpDef(
        "Int8Conv2D",
        infer=_conv_infer,
        reference=_conv_reference,
        lower=_conv_lower,
        differentiable=False,
        input_names=("input", "filter", "bias"),
        dtypes=(_I8,),
    )
)


# -- Int8DepthwiseConv2D(input [N,H,W,C], filter [1,KH,KW,C*M], bias [C*M]) ------------------------
def _depthwise_geometry(ctx: OpContext, x: Sequence, f: Sequence) -> Geometry:
    multiplier = int(ctx.attrs["depth_multiplier"])
    g = conv_geometry(ctx, x, (f[1], f[2], x[3], multiplier))
    return dataclasses.replace(g, out_c=None if x[3] is None else x[3] * multiplier)


def _depthwise_infer(ctx: OpContext) -> list:
    _check_inputs(ctx, (("input", _I8, 4), ("filter", _I8, 4), ("bias", _I32, 1)))
    check_window_attrs(ctx, pool=False)
    _check_attrs_quantization(ctx)
    x, f, b = ctx.in_shapes
    multiplier = int(ctx.attrs["depth_multiplier"])
    if multiplier < 1:
        raise ctx.error(f"depth_multiplier must be positive, got {multiplier}")
    if f[0] is not None and f[0] != 1:
        raise ctx.error(f"a depthwise filter is [1, kh, kw, channels], got first dimension {f[0]}")
    if x[3] is not None and f[3] is not None and x[3] * multiplier != f[3]:
        raise ctx.error(
            f"the filter has {f[3]} channels for {x[3]} input channels times the "
            f"depth multiplier {multiplier}"
        )
    if b[0] is not None and f[3] is not None and b[0] != f[3]:
        raise ctx.error(f"bias has {b[0]} values for {f[3]} output channels")
    g = _depthwise_geometry(ctx, x, f)
    return [(_I8, (g.batch, g.out_h, g.out_w, g.out_c))]


def _depthwise_reference(ctx: OpContext, x: np.ndarray, f: np.ndarray, b: np.ndarray):
    g = _depthwise_geometry(ctx, x.shape, f.shape)
    multiplier = int(ctx.attrs["depth_multiplier"])
    base = dataclasses.replace(g, out_c=g.in_c)
    win = windows(x.astype(np.int64) - int(ctx.attrs["input_zero_point"]), base)
    win = np.repeat(win, multiplier, axis=3)  # output channel c*M + m reads input channel c
    acc = np.einsum("nhwcij,ijc->nhwc", win, f[0].astype(np.int64)) + b.astype(np.int64)
    multipliers, shifts = channel_multipliers(ctx, g.out_c)
    _, zero, lo, hi = _output_quantization(ctx)
    return _requantize(acc, multipliers, shifts, zero, lo, hi)


def _depthwise_lower(ctx: OpContext) -> list:
    g = _depthwise_geometry(ctx, ctx.in_shapes[0], ctx.in_shapes[1])
    if num_elements(g.out_shape) == 0:
        return []
    multipliers, shifts = channel_multipliers(ctx, g.out_c)
    _, zero, lo, hi = _output_quantization(ctx)
    sizes = _quantization_sizes(ctx, lo, hi, zero) | {
        "multipliers": _initializer(multipliers, _I32),
        "shifts": _initializer(shifts, _I32),
        "depth_multiplier": int(ctx.attrs["depth_multiplier"]),
    }
    return _window_kernel("int8_depthwise_conv2d", g, 3, sizes)


register(
    OpDef(
        "Int8DepthwiseConv2D",
        infer=_depthwise_infer,
        reference=_depthwise_reference,
        lower=_depthwise_lower,
        differentiable=False,
        input_names=("input", "filter", "bias"),
        dtypes=(_I8,),
    )
)


# -- Int8FullyConnected(input [..., K], filter [O, K], bias [O]) -----------------------------------
def _fc_sizes(ctx: OpContext) -> tuple[int | None, int | None, int | None]:
    """(batches, depth, outputs): the input read as [batches, depth] rows."""
    x, f = ctx.in_shapes[0], ctx.in_shapes[1]
    depth, outputs = f[1], f[0]
    size = num_elements(x) if x is not None and all(d is not None for d in x) else None
    batches = None if size is None or not depth else size // depth
    return batches, depth, outputs


def _fc_infer(ctx: OpContext) -> list:
    _check_inputs(ctx, (("input", _I8, None), ("filter", _I8, 2), ("bias", _I32, 1)))
    _check_attrs_quantization(ctx)
    x, f, b = ctx.in_shapes
    batches, depth, outputs = _fc_sizes(ctx)
    if x is not None and all(d is not None for d in x) and depth is not None:
        if depth == 0 or num_elements(x) % depth:
            raise ctx.error(
                f"the input's {num_elements(x)} values are not rows of the filter's depth {depth}"
            )
    if b[0] is not None and outputs is not None and b[0] != outputs:
        raise ctx.error(f"bias has {b[0]} values for {outputs} outputs")
    if ctx.attrs.get("keep_num_dims"):
        if x is None:
            return [(_I8, None)]
        if x[-1] is not None and depth is not None and x[-1] != depth:
            raise ctx.error(
                f"with keep_num_dims the input's last dimension {x[-1]} must be "
                f"the filter's depth {depth}"
            )
        return [(_I8, (*x[:-1], outputs))]
    if x is not None and x[0] is None and len(x) == 2:
        return [(_I8, (None, outputs))]
    return [(_I8, (batches, outputs))]


def fully_connected_scales(ctx: OpContext, outputs: int) -> list[float]:
    """What each output channel's int32 sum is multiplied by, in double: input scale * filter
    scale / output scale, as TFLite's reference kernel scales it (then rounds)."""
    in_scale, out_scale = f32(ctx.attrs["input_scale"]), f32(ctx.attrs["output_scale"])
    return [in_scale * s / out_scale for s in _filter_scales(ctx, outputs)]


def _fc_reference(ctx: OpContext, x: np.ndarray, f: np.ndarray, b: np.ndarray) -> np.ndarray:
    depth, outputs = f.shape[1], f.shape[0]
    rows = x.reshape(-1, depth).astype(np.int64) - int(ctx.attrs["input_zero_point"])
    acc = wrap32(rows @ f.T.astype(np.int64) + b.astype(np.int64))
    scaled = acc * np.asarray(fully_connected_scales(ctx, outputs))
    rounded = np.where(scaled >= 0, np.floor(scaled + 0.5), -np.floor(0.5 - scaled))
    _, zero, lo, hi = _output_quantization(ctx)
    out = np.clip(rounded.astype(np.int64) + zero, lo, hi).astype(np.int8)
    return out.reshape(*x.shape[:-1], outputs) if ctx.attrs.get("keep_num_dims") else out


def _fc_lower(ctx: OpContext) -> list:
    batches, depth, outputs = _fc_sizes(ctx)
    if not batches or not outputs:
        return []
    # a fully connected layer is a 1x1 convolution of `batches` one-pixel images
    g = Geometry(batches, 1, 1, depth, 1, 1, outputs, 1, 1, 1, 1, 1, 1, 0, 0)
    _, zero, lo, hi = _output_quantization(ctx)
    sizes = _quantization_sizes(ctx, lo, hi, zero) | {
        "scales": _initializer(fully_connected_scales(ctx, outputs), _dt.float64)
    }
    return _window_kernel("int8_fully_connected", g, 3, sizes)


register(
    OpDef(
        "Int8FullyConnected",
        infer=_fc_infer,
        reference=_fc_reference,
        lower=_fc_lower,
        differentiable=False,
        input_names=("input", "filter", "bias"),
        dtypes=(_I8,),
    )
)


# -- Int8AvgPool, Int8MaxPool(input [N,H,W,C]) ----------------------------------------------------
def _pool_infer(ctx: OpContext) -> list:
    _check_inputs(ctx, (("input", _I8, 4),))
    check_window_attrs(ctx, pool=True)
    check_quantization(ctx.attrs["scale"], ctx.attrs["zero_point"], ctx.name)
    g = pool_geometry(ctx, ctx.in_shapes[0])
    return [(_I8, g.out_shape)]


def _pool_bounds(ctx: OpContext) -> tuple[int, int]:
    return activation_range(
        ctx.attrs.get("activation", "NONE"), f32(ctx.attrs["scale"]), int(ctx.attrs["zero_point"])
    )


def _avg_pool_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    g = pool_geometry(ctx, x.shape)
    total = windows(x.astype(np.int64), g).sum(axis=(4, 5))
    count = valid_counts(g).astype(np.int64)[None, :, :, None]
    half = count // 2
    numerator = np.where(total > 0, total + half, total - half)
    mean = np.sign(numerator) * (np.abs(numerator) // count)  # C's division truncates
    lo, hi = _pool_bounds(ctx)
    return np.clip(mean, lo, hi).astype(np.int8)


def _max_pool_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    g = pool_geometry(ctx, x.shape)
    top = windows(x.astype(np.int64), g, fill=-128).max(axis=(4, 5))
    lo, hi = _pool_bounds(ctx)
    return np.clip(top, lo, hi).astype(np.int8)


def _pool_lower(kind: str):
    def lower(ctx: OpContext) -> list:
        g = pool_geometry(ctx, ctx.in_shapes[0])
        if num_elements(g.out_shape) == 0:
            return []
        lo, hi = _pool_bounds(ctx)
        return _window_kernel(kind, g, 1, {"lo": lo, "hi": hi})

    return lower


for _op_type, _reference, _kind in (
    ("Int8AvgPool", _avg_pool_reference, "int8_avg_pool"),
    ("Int8MaxPool", _max_pool_reference, "int8_max_pool"),
):
    register(
        OpDef(
            _op_type,
            infer=_pool_infer,
            reference=_reference,
            lower=_pool_lower(_kind),
            differentiable=False,
            dtypes=(_I8,),
        )
    )


# -- Int8Softmax(input [..., D]) ------------------------------------------------------------------
SOFTMAX_OUTPUT = (1.0 / 256, -128)  # the only output quantization TFLite allows


def softmax_params(ctx: OpContext) -> tuple[int, int, int]:
    """(multiplier, shift, smallest difference to the maximum that counts): beta * input
    scale as a Q5.26 multiplier (PreprocessSoftmaxScaling), capped below 2^31."""
    real = min(
        float(f32(ctx.attrs["beta"])) * f32(ctx.attrs["input_scale"]) * (1 << 26), (1 << 31) - 1.0
    )
    multiplier, shift = quantize_multiplier(real)
    return multiplier, shift, -calculate_input_radius(5, shift, 31)


def _softmax_infer(ctx: OpContext) -> list:
    _check_inputs(ctx, (("logits", _I8, None),))
    check_quantization(ctx.attrs["input_scale"], 0, ctx.name)
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) < 1:
        raise ctx.error("logits must have at least one dimension")
    return [(_I8, shape)]


def _softmax_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    multiplier, shift, diff_min = softmax_params(ctx)
    diff = x.astype(np.int64) - x.astype(np.int64).max(axis=-1, keepdims=True)
    counted = diff >= diff_min
    exps = exp_on_negative_values(multiply_by_quantized_multiplier(diff, multiplier, shift), 5)
    total = wrap32(
        np.where(counted, saturating_rounding_multiply_by_pot(exps, -12), 0).sum(
            axis=-1, keepdims=True
        )
    )
    reciprocal, bits_over_unit = get_reciprocal(total, 12)
    out = rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(reciprocal, exps), bits_over_unit + 31 - 8
    )
    return np.where(counted, np.clip(out - 128, -128, 127), -128).astype(np.int8)


def _rows(shape: Sequence[int]) -> tuple[int, int]:
    cols = shape[-1] if shape else 1
    return (num_elements(shape) // cols if cols else 0), cols


def _softmax_lower(ctx: OpContext) -> list:
    rows, cols = _rows(ctx.in_shapes[0])
    if rows == 0 or cols == 0:
        return []
    multiplier, shift, diff_min = softmax_params(ctx)
    exprs = {"multiplier": str(multiplier), "shift": str(shift), "diff_min": str(diff_min)}
    params = [Param("y", "int8_t", False, "out0"), Param("x0", "int8_t", True, "in0")]
    return [Kernel("int8_softmax", params, RowSpec(_I8, rows, cols, exprs))]


register(
    OpDef(
        "Int8Softmax",
        infer=_softmax_infer,
        reference=_softmax_reference,
        lower=_softmax_lower,
        differentiable=False,
        dtypes=(_I8,),
    )
)


# -- Int8Mean(input; axes, keep_dims) ------------------------------------------------------------
def _mean_axes(ctx: OpContext, rank: int) -> list[int]:
    axes = []
    for a in ctx.attrs["axes"]:
        if not -rank <= int(a) < rank:
            raise ctx.error(f"axis {a} is out of range for a tensor of rank {rank}")
        axes.append(int(a) % rank)
    return sorted(set(axes))


def _mean_infer(ctx: OpContext) -> list:
    _check_inputs(ctx, (("input", _I8, None),))
    _check_attrs_quantization(ctx)
    shape = ctx.in_shapes[0]
    if shape is None:
        return [(_I8, None)]
    axes = _mean_axes(ctx, len(shape))
    if ctx.attrs.get("keep_dims"):
        return [(_I8, tuple(1 if k in axes else d for k, d in enumerate(shape)))]
    return [(_I8, tuple(d for k, d in enumerate(shape) if k not in axes))]


def mean_params(ctx: OpContext, count: int) -> tuple[int, int]:
    """The multiplier and shift of input scale / output scale with 1 / count folded into the
    multiplier (TFLite's QuantizedMeanOrSum): as many bits of count as the shift allows."""
    multiplier, shift = quantize_multiplier(
        f32(ctx.attrs["input_scale"]) / f32(ctx.attrs["output_scale"])
    )
    bits = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << bits) // count, shift - bits


def _mean_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    axes = _mean_axes(ctx, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    keep = bool(ctx.attrs.get("keep_dims"))
    total = x.astype(np.int64).sum(axis=tuple(axes), keepdims=keep)
    if count == 0:
        return np.zeros(total.shape, np.int8)
    multiplier, shift = mean_params(ctx, count)
    zero_in, zero_out = int(ctx.attrs["input_zero_point"]), int(ctx.attrs["output_zero_point"])
    out = multiply_by_quantized_multiplier(wrap32(total - zero_in * count), multiplier, shift)
    return np.clip(out + zero_out, -128, 127).astype(np.int8)


def _mean_transposed(shape: Sequence[int], axes: Sequence[int]) -> tuple[list[int], list[int]]:
    """The kept dims then the reduced ones: the permutation and the permuted shape."""
    order = [k for k in range(len(shape)) if k not in axes] + list(axes)
    return order, [shape[k] for k in order]


def _mean_scratch(ctx: OpContext) -> int:
    shape = ctx.in_shapes[0]
    axes = _mean_axes(ctx, len(shape))
    order, _ = _mean_transposed(shape, axes)
    moved = [k for k in order if shape[k] != 1] != [k for k in range(len(shape)) if shape[k] != 1]
    return num_elements(shape) if moved else 0


def _mean_lower(ctx: OpContext) -> list:
    shape = tuple(ctx.in_shapes[0])
    axes = _mean_axes(ctx, len(shape))
    count = math.prod(shape[a] for a in axes)
    rows = num_elements(shape) // count if count else 0
    if rows == 0:
        return []
    if count == 0:
        return loop_kernel([rows], view("out0", _I8, [rows]), [], "0")
    kernels: list[Kernel] = []
    source = "in0"
    if _mean_scratch(ctx):
        order, permuted = _mean_transposed(shape, axes)
        strides = contiguous_strides(shape)
        src = Operand("in0", _I8, tuple(strides[k] for k in order))
        kernels += loop_kernel(permuted, view("scratch", _I8, permuted), [src], "{0}")
        source = "scratch"
    multiplier, shift = mean_params(ctx, count)
    exprs = {
        "in_zero": str(int(ctx.attrs["input_zero_point"])),
        "count": str(count),
        "multiplier": str(multiplier),
        "shift": str(shift),
        "out_zero": str(int(ctx.attrs["output_zero_point"])),
    }
    params = [Param("y", "int8_t", False, "out0"), Param("x0", "int8_t", True, source)]
    return kernels + [Kernel("int8_mean", params, RowSpec(_I8, rows, count, exprs))]


register(
    OpDef(
        "Int8Mean",
        infer=_mean_infer,
        reference=_mean_reference,
        lower=_mean_lower,
        scratch=_mean_scratch,
        differentiable=False,
        dtypes=(_I8,),
    )
)


# -- frontends (tfc.tflite builds these) ----------------------------------------------------------
def _conv_attrs(
    input_q: Sequence,
    filter_scales: Sequence[float],
    output_q: Sequence,
    strides: Sequence[int],
    padding: str,
    dilations: Sequence[int],
    activation: str,
) -> dict:
    in_scale, in_zero = check_quantization(*input_q, "the input")
    out_scale, out_zero = check_quantization(*output_q, "the output")
    return {
        "input_scale": in_scale,
        "input_zero_point": in_zero,
        "filter_scales": [f32(s) for s in filter_scales],
        "output_scale": out_scale,
        "output_zero_point": out_zero,
        "activation": activation,
        "strides": [1, *strides, 1],
        "dilations": [1, *dilations, 1],
        "padding": padding,
    }


def int8_conv2d(
    x: Tensor,
    filters: Tensor,
    bias: Tensor,
    input_quantization: Sequence,
    filter_scales: Sequence[float],
    output_quantization: Sequence,
    strides: Sequence[int] = (1, 1),
    padding: str = "VALID",
    dilations: Sequence[int] = (1, 1),
    activation: str = "NONE",
    name: str | None = None,
) -> Tensor:
    """TFLite's int8 CONV_2D of NHWC `x` with `filters` [out, kh, kw, in] and int32 `bias`."""
    attrs = _conv_attrs(
        input_quantization,
        filter_scales,
        output_quantization,
        strides,
        padding,
        dilations,
        activation,
    )
    return apply_op("Int8Conv2D", [x, filters, bias], attrs, name=name or "Int8Conv2D").outputs[0]


def int8_depthwise_conv2d(
    x: Tensor,
    filters: Tensor,
    bias: Tensor,
    input_quantization: Sequence,
    filter_scales: Sequence[float],
    output_quantization: Sequence,
    depth_multiplier: int = 1,
    strides: Sequence[int] = (1, 1),
    padding: str = "VALID",
    dilations: Sequence[int] = (1, 1),
    activation: str = "NONE",
    name: str | None = None,
) -> Tensor:
    """TFLite's int8 DEPTHWISE_CONV_2D: `filters` [1, kh, kw, channels * depth_multiplier]."""
    attrs = _conv_attrs(
        input_quantization,
        filter_scales,
        output_quantization,
        strides,
        padding,
        dilations,
        activation,
    )
    attrs["depth_multiplier"] = int(depth_multiplier)
    return apply_op(
        "Int8DepthwiseConv2D", [x, filters, bias], attrs, name=name or "Int8DepthwiseConv2D"
    ).outputs[0]


def int8_fully_connected(
    x: Tensor,
    weights: Tensor,
    bias: Tensor,
    input_quantization: Sequence,
    filter_scales: Sequence[float],
    output_quantization: Sequence,
    activation: str = "NONE",
    keep_num_dims: bool = False,
    name: str | None = None,
) -> Tensor:
    """TFLite's int8 FULLY_CONNECTED: `x` read as rows of `weights`' depth ([out, depth])."""
    attrs = _conv_attrs(
        input_quantization, filter_scales, output_quantization, (1, 1), "VALID", (1, 1), activation
    )
    for unused in ("strides", "dilations", "padding"):
        del attrs[unused]
    attrs["keep_num_dims"] = bool(keep_num_dims)
    return apply_op(
        "Int8FullyConnected", [x, weights, bias], attrs, name=name or "Int8FullyConnected"
    ).outputs[0]


def int8_pool(
    kind: str,
    x: Tensor,
    quantization: Sequence,
    ksize: Sequence[int],
    strides: Sequence[int],
    padding: str,
    activation: str = "NONE",
    name: str | None = None,
) -> Tensor:
    """TFLite's int8 AVERAGE_POOL_2D (`kind` "avg") or MAX_POOL_2D ("max"); the output keeps
    the input's quantization."""
    scale, zero = check_quantization(*quantization, "the input")
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown fused activation {activation!r}; tfc knows {ACTIVATIONS}")
    attrs = {
        "scale": scale,
        "zero_point": zero,
        "activation": activation,
        "ksize": [1, *ksize, 1],
        "strides": [1, *strides, 1],
        "padding": padding,
    }
    op_type = {"avg": "Int8AvgPool", "max": "Int8MaxPool"}[kind]
    return apply_op(op_type, [x], attrs, name=name or op_type).outputs[0]


def int8_softmax(
    x: Tensor, input_scale: float, beta: float = 1.0, name: str | None = None
) -> Tensor:
    """TFLite's int8 SOFTMAX over the last axis; the output's scale is 1/256, zero point -128."""
    attrs = {"input_scale": check_quantization(input_scale, 0, "the input")[0], "beta": f32(beta)}
    return apply_op("Int8Softmax", [x], attrs, name=name or "Int8Softmax").outputs[0]


def int8_mean(
    x: Tensor,
    axes: Sequence[int],
    keep_dims: bool,
    input_quantization: Sequence,
    output_quantization: Sequence,
    name: str | None = None,
) -> Tensor:
    """TFLite's int8 MEAN over `axes`."""
    in_scale, in_zero = check_quantization(*input_quantization, "the input")
    out_scale, out_zero = check_quantization(*output_quantization, "the output")
    attrs = {
        "axes": [int(a) for a in axes],
        "keep_dims": bool(keep_dims),
        "input_scale": in_scale,
        "input_zero_point": in_zero,
        "output_scale": out_scale,
        "output_zero_point": out_zero,
    }
    return apply_op("Int8Mean", [x], attrs, name=name or "Int8Mean").outputs[0]
