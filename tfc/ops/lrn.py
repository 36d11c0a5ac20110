"""Local response normalization: LRN and its gradient LRNGrad, over the channels of NHWC images.

    sqr_sum[n, h, w, d] = sum of input[n, h, w, d']^2 over d' in [d - r, d + r] (inside the image)
    output = input / (bias + alpha * sqr_sum) ** beta

LRNGrad(dy, x, y) gives dx[i] = dy[i] * N_i^-beta - 2 alpha beta x[i] * sum over the j whose
window holds i of dy[j] y[j] / N_j, with N_j = bias + alpha * sqr_sum[j], as TF's CPU kernel
computes it from the output y. Both are kernels over rows of C contiguous channels; the C one
of LRNGrad keeps each row's dy y / N in the node's scratch memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import num_elements
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv import attrs_of, check_rank4
from tfc.ops.flops import elements
from tfc.ops.kernels import Geometry, Kernel, Param, WindowSpec, c_literal, math_suffix
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, check_same_dtypes, register

__all__ = ["local_response_normalization", "lrn"]

FLOATS = (_dt.float32, _dt.float64)
ATTRS = ("depth_radius", "bias", "alpha", "beta")
DEFAULTS = {"depth_radius": 5, "bias": 1.0, "alpha": 1.0, "beta": 0.5}


def _attrs(ctx: OpContext) -> tuple[int, float, float, float]:
    r, bias, alpha, beta = (ctx.attrs.get(k, DEFAULTS[k]) for k in ATTRS)
    if int(r) < 0:
        raise ctx.error(f"depth_radius = {r} must be non-negative")
    return int(r), float(bias), float(alpha), float(beta)


def _window_sums(x: np.ndarray, r: int) -> np.ndarray:
    """sum of x[..., d']^2 over d' in [d - r, d + r], in float64."""
    sq = np.square(np.asarray(x, np.float64))
    c = sq.shape[-1]
    cumulative = np.concatenate([np.zeros((*sq.shape[:-1], 1)), np.cumsum(sq, axis=-1)], axis=-1)
    hi = np.minimum(np.arange(c) + r + 1, c)
    lo = np.maximum(np.arange(c) - r, 0)
    return cumulative[..., hi] - cumulative[..., lo]


def _geometry(shape: Any) -> Geometry:
    """The rows of channels as a window geometry: every pixel's C channels, a 1x1 window."""
    n, h, w, c = shape
    return Geometry(n, h, w, c, h, w, c, 1, 1, 1, 1, 1, 1, 0, 0)


def _sizes(ctx: OpContext, dtype: _dt.DType) -> dict:
    """The kernels' constants: the radius, and bias, alpha, -beta and the power function as
    C literals and names of the element type."""
    r, bias, alpha, beta = _attrs(ctx)
    return {
        "radius": r,
        "bias": c_literal(bias, dtype),
        "alpha": c_literal(alpha, dtype),
        "neg_beta": c_literal(-beta, dtype),
        "two_alpha_beta": c_literal(2 * alpha * beta, dtype),
        "pow": "pow" + math_suffix(dtype),
    }


def _row_flops(ctx: OpContext, shape: Any) -> int:
    r = _attrs(ctx)[0]
    return elements(shape) * (2 * (2 * r + 1) + 4)


# -- LRN(input) -----------------------------------------------------------------------------------
def _lrn_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, FLOATS, "input")
    _attrs(ctx)
    return [(ctx.in_dtypes[0], check_rank4(ctx, 0))]


def _lrn_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    r, bias, alpha, beta = _attrs(ctx)
    norm = bias + alpha * _window_sums(x, r)
    return (np.asarray(x, np.float64) * norm**-beta).astype(x.dtype)


def _lrn_lower(ctx: OpContext) -> list:
    shape, dtype = tuple(ctx.in_shapes[0]), ctx.out_dtypes[0]
    if num_elements(shape) == 0:
        return []
    params = [Param("y", dtype.c_type, False, "out0"), Param("x0", dtype.c_type, True, "in0")]
    return [
        Kernel("lrn", params, WindowSpec(_geometry(shape), dtype, "output", _sizes(ctx, dtype)))
    ]


def _lrn_grad(op: Any, dy: Tensor) -> list:
    x, y = op.inputs[0], op.outputs[0]
    return [apply_op("LRNGrad", [dy, x, y], attrs_of(op, ATTRS), "LRNGrad").outputs[0]]


register(
    OpDef(
        "LRN",
        infer=_lrn_infer,
        reference=_lrn_reference,
        lower=_lrn_lower,
        grad=_lrn_grad,
        flops=lambda ctx: _row_flops(ctx, ctx.out_shapes[0]),
        input_names=("input",),
    )
)


# -- LRNGrad(input_grads, input_image, output_image) -> d input -----------------------------------
def _grad_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("input_grads", "input_image", "output_image"))
    check_dtype(ctx, 0, FLOATS, "input_grads")
    _attrs(ctx)
    shapes = [check_rank4(ctx, i) for i in range(3)]
    merged = []
    for dims in zip(*shapes):
        known = {d for d in dims if d is not None}
        if len(known) > 1:
            raise ctx.error("input_grads, input_image and output_image must have the same shape")
        merged.append(known.pop() if known else None)
    return [(ctx.in_dtypes[0], tuple(merged))]


def _grad_reference(ctx: OpContext, dy: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r, bias, alpha, beta = _attrs(ctx)
    x64, y64, dy64 = (np.asarray(a, np.float64) for a in (x, y, dy))
    norm = bias + alpha * _window_sums(x64, r)
    t = dy64 * y64 / norm  # summed over the windows holding each channel: the same windows
    c = t.shape[-1]
    cumulative = np.concatenate([np.zeros((*t.shape[:-1], 1)), np.cumsum(t, axis=-1)], axis=-1)
    window = cumulative[..., np.minimum(np.arange(c) + r + 1, c)]
    window = window - cumulative[..., np.maximum(np.arange(c) - r, 0)]
    dx = dy64 * norm**-beta - 2 * alpha * beta * x64 * window
    return dx.astype(dy.dtype)


def _grad_lower(ctx: OpContext) -> list:
    shape, dtype = tuple(ctx.out_shapes[0]), ctx.out_dtypes[0]
    if num_elements(shape) == 0:
        return []
    ct = dtype.c_type
    params = [Param("y", ct, False, "out0"), Param("x0", ct, True, "in0")]
    params += [Param("x1", ct, True, "in1"), Param("x2", ct, True, "in2")]
    params.append(Param("s", ct, False, "scratch"))
    spec = WindowSpec(_geometry(shape), dtype, "output", _sizes(ctx, dtype))
    return [Kernel("lrn_grad", params, spec)]


register(
    OpDef(
        "LRNGrad",
        infer=_grad_infer,
        reference=_grad_reference,
        lower=_grad_lower,
        differentiable=False,  # as in TensorFlow, which registers no gradient for it
        flops=lambda ctx: _row_flops(ctx, ctx.out_shapes[0]) * 2,
        input_names=("input_grads", "input_image", "output_image"),
        scratch=lambda ctx: ctx.out_shapes[0][3] * ctx.out_dtypes[0].size,
    )
)


def local_response_normalization(
    input: Any,  # noqa: A002 (TF's argument names)
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.local_response_normalization` (`tf.nn.lrn`): each channel of an NHWC image
    divided by (bias + alpha * the sum of squares of the 2 depth_radius + 1 channels around
    it) ** beta."""
    attrs = {
        "depth_radius": int(depth_radius),
        "bias": float(bias),
        "alpha": float(alpha),
        "beta": float(beta),
    }
    with name_scope(name, "LRN", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return apply_op("LRN", [x], attrs, name=scope).outputs[0]


lrn = local_response_normalization
