"""Gradient-only `tf.nn` ops: TF's ReluGrad, Relu6Grad, EluGrad, SeluGrad, LeakyReluGrad,
SoftplusGrad, SoftsignGrad, and fused SoftmaxGrad / LogSoftmaxGrad (one pass per row instead
of four kernels).

Each computes dy * f'(x) in one kernel. Their own rules give second derivatives; where f' is
piecewise constant its derivative is zero almost everywhere and the rule returns None.
"""

from __future__ import annotations

import numpy as np

import tfc.ops.math as _math
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import num_elements, shapes_compatible
from tfc.ops.constant import constant
from tfc.ops.elementwise import register_elementwise
from tfc.ops.flops import per_output_element
from tfc.ops.grad_ops import select
from tfc.ops.kernels import Kernel, Param, RowSpec, c_literal, format_expr
from tfc.ops.math import numpy_sigmoid
from tfc.ops.nn import SELU_SCALE, SELU_SCALE_ALPHA, selu_constants
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    check_same_dtypes,
    register,
)


def _grad_op(op_type: str, *inputs: Tensor, **attrs: float) -> Tensor:
    return apply_op(op_type, list(inputs), attrs, name=op_type).outputs[0]


# -- element-wise: (dy, features) or (dy, outputs) as TF orders them ------------------------------
register_elementwise(
    "ReluGrad",
    lambda dy, x: np.where(x > 0, dy, 0),
    {"f": "({1} > 0 ? {0} : ({T})0)"},
    grad=lambda op, g: [_grad_op("ReluGrad", g, op.inputs[1]), None],
)
register_elementwise(
    "Relu6Grad",
    lambda dy, x: np.where((x > 0) & (x < 6), dy, 0),
    {"f": "({1} > 0 && {1} < 6 ? {0} : ({T})0)"},
    grad=lambda op, g: [_grad_op("Relu6Grad", g, op.inputs[1]), None],
)
register_elementwise(
    "EluGrad",
    lambda dy, y: np.where(y < 0, dy * (y + 1), dy),
    {"f": "({1} < 0 ? {0} * ({1} + ({T})1) : {0})"},
    grad=lambda op, g: [
        _grad_op("EluGrad", g, op.inputs[1]),
        select(op.inputs[1] < 0, g * op.inputs[0], 0),
    ],
)
register_elementwise(
    "SeluGrad",
    lambda attrs, dy, y: np.where(
        y < 0, dy * (y + y.dtype.type(SELU_SCALE_ALPHA)), dy * dy.dtype.type(SELU_SCALE)
    ),
    {"f": "({1} < 0 ? {0} * ({1} + {scale_alpha}) : {0} * {scale})"},
    params=lambda attrs, dtype: selu_constants(dtype),
    grad=lambda op, g: [
        _grad_op("SeluGrad", g, op.inputs[1]),
        select(op.inputs[1] < 0, g * op.inputs[0], 0),
    ],
)
register_elementwise(
    "LeakyReluGrad",
    lambda attrs, dy, x: np.where(x > 0, dy, dy * dy.dtype.type(attrs["alpha"])),
    {"f": "({1} > 0 ? {0} : {0} * ({alpha}))"},
    params=lambda attrs, dtype: {"alpha": c_literal(attrs["alpha"], dtype)},
    grad=lambda op, g: [
        _grad_op("LeakyReluGrad", g, op.inputs[1], alpha=op.get_attr("alpha")),
        None,
    ],
)
register_elementwise(
    "SoftplusGrad",
    lambda dy, x: dy * numpy_sigmoid(x),
    {"f": "{0} * tfc_sigmoid_{tag}({1})"},
    grad=lambda op, g: [
        _grad_op("SoftplusGrad", g, op.inputs[1]),
        _grad_op("SigmoidGrad", _grad_op("Sigmoid", op.inputs[1]), g * op.inputs[0]),
    ],
)

register_elementwise(
    "SoftsignGrad",
    lambda dy, x: dy / np.square(1 + np.abs(x)),
    {"f": "{0} / ((({T})1 + fabs{sfx}({1})) * (({T})1 + fabs{sfx}({1})))"},
    # d/dx of dy / (1 + |x|)^2 is -2 dy sign(x) / (1 + |x|)^3
    grad=lambda op, g: [
        _grad_op("SoftsignGrad", g, op.inputs[1]),
        -2.0
        * _grad_op("SoftsignGrad", g * op.inputs[0], op.inputs[1])
        * _math.sign(op.inputs[1])
        / (1.0 + _math.abs(op.inputs[1])),
    ],
)

# -- SoftmaxGrad(y, dy), LogSoftmaxGrad(y, dy): rows along the last axis -------------------------
_FLOATS = _dt.FLOATS  # the 16-bit floats run in float32 (OpDef.computes_in)


def _softmax_grad_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("softmax", "grad_softmax"))
    check_dtype(ctx, 0, _FLOATS, "softmax")
    y, dy = ctx.in_shapes
    if not shapes_compatible(y, dy):
        raise ctx.error("The softmax and its gradient must have the same shape")
    return [(ctx.in_dtypes[0], y if y is not None else dy)]


def _softmax_grad_reference(ctx: OpContext, y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    if ctx.type == "SoftmaxGrad":
        s = np.sum(dy * y, axis=-1, keepdims=True, dtype=np.float64)
        return ((dy - s) * y).astype(y.dtype)
    s = np.sum(dy, axis=-1, keepdims=True, dtype=np.float64)
    return (dy - np.exp(y) * s).astype(y.dtype)


# (term summed over the row, the result per element), from y = x0 row yr, dy = x1 row gr
_ROW_FORMULAS = {
    "SoftmaxGrad": ("gr[j] * yr[j]", "(gr[j] - t) * yr[j]"),
    "LogSoftmaxGrad": ("gr[j]", "gr[j] - exp{sfx}(yr[j]) * t"),
}


def _softmax_grad_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    if num_elements(shape) == 0:
        return []
    term, finish = _ROW_FORMULAS[ctx.type]
    # softmax_grad.c.j2 sums each row in double, also for float32: one rounding at the end
    exprs = {"term": term, "finish": format_expr(finish, dtype)}
    spec = RowSpec(dtype, num_elements(shape[:-1]), shape[-1], exprs)
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x0", dtype.c_type, True, "in0"),
        Param("x1", dtype.c_type, True, "in1"),
    ]
    return [Kernel("softmax_grad", params, spec)]


def _softmax_grad_grad(op, g: Tensor) -> list:
    y, dy = op.inputs
    s = _row_sum(g * y)
    return [g * (dy - _row_sum(dy * y)) - dy * s, _grad_op("SoftmaxGrad", y, g)]


def _log_softmax_grad_grad(op, g: Tensor) -> list:
    y, dy = op.inputs
    p = _grad_op("Exp", y)
    return [-g * p * _row_sum(dy), g - _row_sum(g * p)]


def _row_sum(x: Tensor) -> Tensor:
    axis = constant([-1], dtype=_dt.int32, name="axis")
    return apply_op("Sum", [x, axis], {"keep_dims": True}, name="Sum").outputs[0]


for _type, _rule in [
    ("SoftmaxGrad", _softmax_grad_grad),
    ("LogSoftmaxGrad", _log_softmax_grad_grad),
]:
    register(
        OpDef(
            _type,
            infer=_softmax_grad_infer,
            reference=_softmax_grad_reference,
            lower=_softmax_grad_lower,
            flops=per_output_element(4),
            grad=_rule,
            input_names=("softmax", "grad_softmax"),
            dtypes=(_dt.float16, _dt.bfloat16),
            computes_in=HALVES_IN_FLOAT32,
        )
    )
