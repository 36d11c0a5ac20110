"""The machinery every element-wise op shares: broadcasting shape rule, loop lowering, frontends.

An element-wise op is declared by one `register_elementwise` call in its family module, giving
its NumPy reference and its `ExprTable` (the C expression per dtype).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor
from tfc.ops.constant import convert_to_tensor, is_tensor_like
from tfc.ops.kernels import ExprTable, elementwise_expr, loop_kernel, view
from tfc.ops.registry import (
    OpContext,
    OpDef,
    apply_op,
    broadcast_shape,
    check_same_dtypes,
    get_opdef,
    register,
)

_ARG_NAMES = ("x", "y", "z")


def elementwise_infer(ctx: OpContext) -> list:
    table = get_opdef(ctx.type).expr
    check_same_dtypes(ctx, _ARG_NAMES)
    dtype = ctx.in_dtypes[0]
    if table.expr_for(dtype) is None:
        allowed = ", ".join(d.name for d in table.supported())
        raise TypeError(
            f"Value passed to parameter 'x' has DataType {dtype.name} not in list of allowed "
            f"values: {allowed} (op '{ctx.name}' of type {ctx.type})"
        )
    shape = ctx.in_shapes[0]
    for other in ctx.in_shapes[1:]:
        shape = broadcast_shape(ctx, shape, other)
    return [(table.out or dtype, shape)]


def lower_elementwise(ctx: OpContext) -> list:
    table = get_opdef(ctx.type).expr
    dtype = ctx.in_dtypes[0]
    extra = table.params(ctx.attrs, dtype.compute) if table.params else {}
    placeholders = [f"{{{i}}}" for i in range(len(ctx.in_dtypes))]
    out = ctx.out_dtypes[0]
    expr = elementwise_expr(table.expr_for(dtype), dtype, placeholders, out, **extra)
    guard = table.guard_for(dtype)
    if guard is not None:
        guard = (elementwise_expr(guard[0], dtype, placeholders, _dt.bool_, **extra), guard[1])
    shape = ctx.out_shapes[0]
    ins = [
        view(f"in{i}", d, s, shape) for i, (d, s) in enumerate(zip(ctx.in_dtypes, ctx.in_shapes))
    ]
    return loop_kernel(shape, view("out0", ctx.out_dtypes[0], shape), ins, expr, guard)


def register_elementwise(
    op_type: str,
    reference: Callable[..., Any],
    exprs: dict,
    *,
    guards: dict | None = None,
    out: Any = None,
    params: Callable | None = None,
    grad: Callable | None = None,
    differentiable: bool = True,
) -> OpDef:
    """Declare an element-wise op: NumPy reference and C `exprs` per dtype.

    The reference is called as `reference(*inputs)`, or `reference(attrs, *inputs)` for ops
    whose expression takes `params` from attributes.
    """
    table = ExprTable(exprs, guards or {}, out, params)

    def ref(ctx: OpContext, *xs: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            result = reference(*xs) if table.params is None else reference(ctx.attrs, *xs)
        out_dtype = ctx.out_dtypes[0].np if ctx.out_dtypes else result.dtype
        return np.asarray(result).astype(out_dtype, copy=False)

    return register(
        OpDef(
            op_type,
            infer=elementwise_infer,
            reference=ref,
            lower=lower_elementwise,
            expr=table,
            grad=grad,
            differentiable=differentiable,
            inplace=elementwise_inplace,
        )
    )


def elementwise_inplace(ctx: OpContext) -> tuple[int, ...]:
    """The inputs whose buffer an element-wise kernel may write its output over: those with the
    output's shape (not broadcast) and element size. The loop reads element k of every input
    before it writes element k of the output, and reads no element of them afterwards.

    Any op whose kernel has that property (a fused element-wise loop writing one output) can
    use this as its OpDef.inplace; the memory planner adds the liveness conditions.
    """
    out_shape, out_size = tuple(ctx.out_shapes[0]), ctx.out_dtypes[0].size
    return tuple(
        i
        for i, (dtype, shape) in enumerate(zip(ctx.in_dtypes, ctx.in_shapes))
        if shape is not None and tuple(shape) == out_shape and dtype.size == out_size
    )


def integer_division_check(*xs: np.ndarray) -> None:
    """The reference's twin of the C guard: TF fails a run that divides integers by zero."""
    y = xs[1]
    if np.issubdtype(y.dtype, np.integer) and (y == 0).any():
        raise errors.InvalidArgumentError(None, None, "Integer division by zero")


# -- frontends ----------------------------------------------------------------------------------
def convert_operands(*values: Any) -> list[Tensor]:
    """Convert operands TF1's way: Python values take the dtype of the first tensor among them."""
    dtype = next((convert_to_tensor(v).dtype for v in values if is_tensor_like(v)), None)
    if dtype is None:
        first = convert_to_tensor(values[0])
        return [first] + [convert_to_tensor(v, dtype=first.dtype) for v in values[1:]]
    return [
        convert_to_tensor(v) if is_tensor_like(v) else convert_to_tensor(v, dtype=dtype)
        for v in values
    ]


def apply_elementwise(
    op_type: str, *values: Any, name: str | None = None, attrs: dict | None = None
) -> Tensor:
    tensors = convert_operands(*values)
    return apply_op(op_type, tensors, attrs, name=name).outputs[0]


def binary_frontend(op_type: str, default_name: str) -> Callable[..., Tensor]:
    """The TF1 function of a binary element-wise op, e.g. `tf.add(x, y, name=None)`."""

    def fn(x: Any, y: Any, name: str | None = None) -> Tensor:
        return apply_elementwise(op_type, x, y, name=name or default_name)

    fn.__name__ = default_name
    fn.__doc__ = f"Element-wise {op_type} with NumPy broadcasting."
    return fn


def unary_frontend(op_type: str) -> Callable[..., Tensor]:
    """The TF1 function of a unary element-wise op, e.g. `tf.exp(x, name=None)`."""

    def fn(x: Any, name: str | None = None) -> Tensor:
        return apply_elementwise(op_type, x, name=name or op_type)

    fn.__name__ = op_type.lower()
    fn.__doc__ = f"Element-wise {op_type}."
    return fn
