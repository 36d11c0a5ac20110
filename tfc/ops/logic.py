"""Comparisons, logical ops and Select (`tf.where`): element-wise ops on or giving booleans."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.elementwise import (
    binary_frontend,
    convert_operands,
    register_elementwise,
    unary_frontend,
)
from tfc.ops.flops import per_output_element
from tfc.ops.grad_ops import select
from tfc.ops.kernels import loop_kernel, view
from tfc.ops.registry import (
    VALUE_DEPENDENT_REASON,
    OpContext,
    OpDef,
    apply_op,
    broadcast_shape,
    register,
)

__all__ = [
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "is_finite",
    "is_inf",
    "is_nan",
    "where",
    "where_v2",
]

_CMP = _dt.bool_

# -- comparisons and logic -----------------------------------------------------------------------
for _type, _fn, _sym in [
    ("Greater", np.greater, ">"),
    ("GreaterEqual", np.greater_equal, ">="),
    ("Less", np.less, "<"),
    ("LessEqual", np.less_equal, "<="),
]:
    register_elementwise(
        _type,
        _fn,
        {"f": f"{{0}} {_sym} {{1}}", "i": f"{{0}} {_sym} {{1}}"},
        out=_CMP,
        differentiable=False,
    )
for _type, _fn, _sym, _c in [
    ("Equal", np.equal, "==", "tfc_eq_{tag}({0}, {1})"),
    ("NotEqual", np.not_equal, "!=", "!tfc_eq_{tag}({0}, {1})"),
]:
    exprs = {k: f"{{0}} {_sym} {{1}}" for k in "fib"} | {"c": _c}
    register_elementwise(_type, _fn, exprs, out=_CMP, differentiable=False)
register_elementwise("LogicalAnd", np.logical_and, {"b": "{0} && {1}"}, differentiable=False)
register_elementwise("LogicalOr", np.logical_or, {"b": "{0} || {1}"}, differentiable=False)
register_elementwise("LogicalNot", np.logical_not, {"b": "!{0}"}, differentiable=False)
# float classification; fabs(NaN) compares false with everything
for _type, _fn, _c in [
    ("IsFinite", np.isfinite, "fabs{sfx}({0}) < ({T})INFINITY"),
    ("IsInf", np.isinf, "fabs{sfx}({0}) == ({T})INFINITY"),
    ("IsNan", np.isnan, "{0} != {0}"),
]:
    register_elementwise(_type, _fn, {"f": _c}, out=_CMP, differentiable=False)


greater = binary_frontend("Greater", "Greater")
greater_equal = binary_frontend("GreaterEqual", "GreaterEqual")
less = binary_frontend("Less", "Less")
less_equal = binary_frontend("LessEqual", "LessEqual")
equal = binary_frontend("Equal", "Equal")
not_equal = binary_frontend("NotEqual", "NotEqual")
logical_and = binary_frontend("LogicalAnd", "LogicalAnd")
logical_or = binary_frontend("LogicalOr", "LogicalOr")
logical_not = unary_frontend("LogicalNot")
is_finite = unary_frontend("IsFinite")
is_inf = unary_frontend("IsInf")
is_nan = unary_frontend("IsNan")


def logical_xor(x: Any, y: Any, name: str = "LogicalXor") -> Tensor:
    """`tf.logical_xor`: x or y but not both, composed as TF composes it."""
    with name_scope(name) as scope:
        x, y = convert_operands(x, y)
        either = logical_or(x, y)
        return logical_and(either, logical_not(logical_and(x, y)), name=scope)


# -- Select (where) -----------------------------------------------------------------------------
def _select_infer(ctx):
    if ctx.in_dtypes[0] != _dt.bool_:
        raise TypeError(
            f"Input 'condition' of 'SelectV2' Op has type {ctx.in_dtypes[0].name} that does "
            "not match expected type of bool."
        )
    if ctx.in_dtypes[1] != ctx.in_dtypes[2]:
        raise TypeError(
            f"Input 'e' of 'SelectV2' Op has type {ctx.in_dtypes[2].name} that does not match "
            f"type {ctx.in_dtypes[1].name} of argument 't'."
        )
    shape = broadcast_shape(ctx, ctx.in_shapes[0], ctx.in_shapes[1])
    return [(ctx.in_dtypes[1], broadcast_shape(ctx, shape, ctx.in_shapes[2]))]


def _select_lower(ctx):
    shape = ctx.out_shapes[0]
    ins = [view(f"in{i}", ctx.in_dtypes[i], ctx.in_shapes[i], shape) for i in range(3)]
    return loop_kernel(shape, view("out0", ctx.out_dtypes[0], shape), ins, "{0} ? {1} : {2}")


def _select_grad(op, dy):
    cond = op.inputs[0]
    return [None, select(cond, dy, 0), select(cond, 0, dy)]


register(
    OpDef(
        "SelectV2",
        dtypes=_dt.STORABLE,
        infer=_select_infer,
        reference=lambda ctx, c, x, y: np.where(c, x, y),
        lower=_select_lower,
        flops=per_output_element(1),
        grad=_select_grad,
    )
)


# -- Where (one argument): the coordinates of the true (non-zero) elements ----------------------
def _where_infer(ctx: OpContext) -> list:
    shape = ctx.in_shapes[0]
    if ctx.in_dtypes[0].is_string:
        raise ctx.type_error("Where takes a bool or numeric condition, not a string")
    return [(_dt.int64, None if shape is None else (None, len(shape)))]


register(
    OpDef(
        "Where",
        dtypes=_dt.STORABLE,
        infer=_where_infer,
        reference=lambda ctx, x: np.argwhere(x).astype(np.int64).reshape(-1, x.ndim),
        differentiable=False,
        in_python=VALUE_DEPENDENT_REASON,
        input_names=("input",),
    )
)


def where_indices(condition: Any, name: str | None = None) -> Tensor:
    """`tf.where(condition)`: the coordinates of condition's true elements, int64 [n, rank],
    in row-major order."""
    condition = convert_to_tensor(condition, name="condition")
    return apply_op("Where", [condition], name=name or "Where").outputs[0]


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`tf.where(cond, x, y)`: elements of x where cond holds, else of y (broadcasting).

    TF1's form with a vector condition selecting rows of x and y is supported. The one-argument
    form gives the coordinates of the true elements (int64 [n, rank]): its shape depends on
    the values, so it runs in a Session's Python stage (tfc/ops/array_dynamic.py).
    """
    if x is None and y is None:
        return where_indices(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    cond = convert_to_tensor(condition)
    x, y = convert_operands(x, y)
    cond_shape, x_shape = cond._shape_tuple, x._shape_tuple
    if cond_shape is not None and x_shape is not None and len(cond_shape) == 1 < len(x_shape):
        cond = _array.reshape(cond, [-1] + [1] * (len(x_shape) - 1))
    return apply_op("SelectV2", [cond, x, y], name=name or "Select").outputs[0]


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`tf.where_v2`: elements of x where condition holds, else of y, all three broadcast
    together (NumPy's rules, unlike TF1's tf.where); with one argument, tf.where(condition)."""
    if x is None and y is None:
        return where_indices(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    cond = convert_to_tensor(condition)
    x, y = convert_operands(x, y)
    return apply_op("SelectV2", [cond, x, y], name=name or "SelectV2").outputs[0]
