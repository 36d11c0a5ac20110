"""Running sums and products along one axis: Cumsum and Cumprod (exclusive, reverse)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ops.array_common import INDEX_DTYPES, index_tensor
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import per_input_element
from tfc.ops.kernels import CumulativeSpec, Kernel, Param, c_literal, format_expr, table_entry
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = ["cumsum", "cumprod"]

_NUMERIC = _dt.NUMERIC
# the fold of each op per dtype kind and its identity (what an exclusive scan starts from)
_FOLDS = {
    "Cumsum": ({"f": "{a} + {b}", "i": "tfc_add_{tag}({a}, {b})"}, 0, np.add),
    "Cumprod": ({"f": "{a} * {b}", "i": "tfc_mul_{tag}({a}, {b})"}, 1, np.multiply),
}


def _axis(ctx: OpContext, value: Any, rank: int) -> int:
    raw = int(np.asarray(value).reshape(()))
    if not -rank <= raw < rank:
        raise ctx.error(f"axis {raw} is out of range [{-rank}, {rank})")
    return raw + rank if raw < 0 else raw


def _cumulative_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _NUMERIC, "x")
    check_dtype(ctx, 1, INDEX_DTYPES, "axis")
    axis_shape = ctx.in_shapes[1]
    if axis_shape is not None and len(axis_shape) != 0:
        raise ctx.error(f"axis must be a scalar, but has shape {list(axis_shape)}")
    shape, value = ctx.in_shapes[0], ctx.const(1)
    if shape is not None and value is not None:
        _axis(ctx, value, len(shape))
    return [(ctx.in_dtypes[0], shape)]


def _cumulative_reference(ctx: OpContext, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    k = _axis(ctx, axis, x.ndim)
    _, identity, ufunc = _FOLDS[ctx.type]
    if ctx.attrs.get("reverse", False):
        x = np.flip(x, k)
    with np.errstate(over="ignore"):
        out = ufunc.accumulate(x, axis=k, dtype=x.dtype)
    if ctx.attrs.get("exclusive", False) and x.shape[k]:
        out = np.roll(out, 1, axis=k)  # each output leaves its own element out
        first = [slice(None)] * x.ndim
        first[k] = 0
        out[tuple(first)] = identity
    if ctx.attrs.get("reverse", False):
        out = np.flip(out, k)
    return np.ascontiguousarray(out)


def _cumulative_lower(ctx: OpContext) -> list[Kernel]:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    combine, identity, _ = _FOLDS[ctx.type]
    axis = _axis(ctx, ctx.require_const(1, "axis"), len(shape))
    outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    if outer * n * inner == 0:
        return []
    spec = CumulativeSpec(
        dtype,
        outer,
        n,
        inner,
        format_expr(table_entry(combine, dtype), dtype, a="{a}", b="{b}"),
        c_literal(identity, dtype),
        bool(ctx.attrs.get("exclusive", False)),
        bool(ctx.attrs.get("reverse", False)),
    )
    params = [Param("y", dtype.c_type, False, "out0"), Param("x0", dtype.c_type, True, "in0")]
    return [Kernel("cumulative", params, spec)]


def _cumsum_grad(op: Operation, dy: Tensor) -> list:
    """Each element adds to the outputs after it (before it, in reverse): the running sum of
    dy the other way."""
    attrs = {"exclusive": op.get_attr("exclusive"), "reverse": not op.get_attr("reverse")}
    return [apply_op("Cumsum", [dy, op.inputs[1]], attrs).outputs[0], None]


def _cumprod_grad(op: Operation, dy: Tensor) -> list:
    """TF's rule: the running sum (the other way) of y * dy, divided by x (0 where x is 0, as
    TF's div_no_nan gives: like TF's, the rule is wrong there)."""
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    attrs = {"exclusive": exclusive, "reverse": not reverse}
    summed = apply_op("Cumsum", [op.outputs[0] * dy, axis], attrs).outputs[0]
    return [apply_op("DivNoNan", [summed, x]).outputs[0], None]


for _type, _grad in (("Cumsum", _cumsum_grad), ("Cumprod", _cumprod_grad)):
    register(
        OpDef(
            _type,
            infer=_cumulative_infer,
            reference=_cumulative_reference,
            lower=_cumulative_lower,
            flops=per_input_element(1),
            grad=_grad,
            const_inputs=(1,),
            input_names=("x", "axis"),
            dtypes=_dt.NUMERIC,
            computes_in=HALVES_IN_FLOAT32,
        )
    )


def _cumulative(
    op_type: str, x: Any, axis: Any, exclusive: bool, reverse: bool, name: str | None
) -> Tensor:
    with name_scope(name, op_type) as scope:
        x = convert_to_tensor(x)
        attrs = {"exclusive": bool(exclusive), "reverse": bool(reverse)}
        axis_t = index_tensor(axis, "axis")
        return apply_op(op_type, [x, axis_t], attrs, name=scope).outputs[0]


def cumsum(
    x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Tensor:
    """`tf.cumsum`: the running sum along `axis`; `exclusive` leaves each element out of its
    own output (so the first is 0), `reverse` sums from the end."""
    return _cumulative("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(
    x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Tensor:
    """`tf.cumprod`: the running product along `axis`; `exclusive` leaves each element out of
    its own output (so the first is 1), `reverse` multiplies from the end."""
    return _cumulative("Cumprod", x, axis, exclusive, reverse, name)
