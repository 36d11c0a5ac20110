"""FLOP estimates per run of one node: the rules op registrations give as `OpDef(flops=...)`.

A rule sees the node's OpContext with concrete shapes and returns an int. Conventions: one
arithmetic operation (+ - * /, a comparison, a libm call such as exp or sqrt) on one element is
one FLOP; a matrix product is 2*M*N*K per batch; a reduction is one per input element; data
movement (copies, views, transposes, gathers, fills, pads) is zero FLOPs (it shows in the
bytes a kernel moves instead). Element-wise ops count the operations of their C expression.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tfc.ir.tensor_shape import Shape
from tfc.ops.registry import get_opdef

FlopsRule = Callable[..., int]


def elements(shape: Shape) -> int:
    """Number of elements of a concrete shape; 0 for an unknown one (nothing to count yet)."""
    if shape is None or any(d is None for d in shape):
        return 0
    n = 1
    for d in shape:
        n *= int(d)
    return n


def no_flops(ctx) -> int:
    """Data movement: the op computes nothing."""
    return 0


def per_output_element(n: int = 1, output: int = 0) -> FlopsRule:
    """`n` FLOPs per element of output `output`."""
    return lambda ctx: n * elements(ctx.out_shapes[output])


def per_input_element(n: int = 1, input_index: int = 0) -> FlopsRule:
    """`n` FLOPs per element of input `input_index` (reductions, row-wise kernels)."""
    return lambda ctx: n * elements(ctx.in_shapes[input_index])


# C operators that cost one operation each; `?:` only selects, so it is free
_OPERATOR = re.compile(r"\+=|-=|\*=|/=|&&|\|\||==|!=|<=|>=|[-+*/<>!]")
_CALL = re.compile(r"[A-Za-z_]\w*\s*\(")
_PLACEHOLDER = re.compile(r"\{\w*\}")
# the sign of a literal after a cast or an opening parenthesis, as in `(float)-0.5`
_LITERAL_SIGN = re.compile(r"(^|[(,=]|\))\s*-(?=[\d.])")


def expression_ops(text: str | Sequence[str]) -> int:
    """Operations in C expression/statement templates (format placeholders allowed): one per
    arithmetic, comparison or logical operator and one per function call; at least 1."""
    lines = [text] if isinstance(text, str) else list(text)
    count = 0
    for line in lines:
        line = _PLACEHOLDER.sub("v", line)  # `sqrt{sfx}(` is a call, `{0}` an operand
        line = _LITERAL_SIGN.sub(r"\1", line)
        count += len(_OPERATOR.findall(line)) + len(_CALL.findall(line))
    return max(count, 1)


def elementwise_flops(ctx) -> int:
    """An element-wise op (one with an ExprTable): its C expression's operations per output
    element. It is the rule of every op registered by `register_elementwise`."""
    table = get_opdef(ctx.type).expr
    text = table.expr_for(ctx.in_dtypes[0]) if table is not None and ctx.in_dtypes else None
    return (expression_ops(text) if text else 1) * elements(ctx.out_shapes[0])


def matmul_flops(ctx, contracted: int) -> int:
    """2*M*N*K per matrix of the (batched) product: a multiply and an add per term."""
    return 2 * elements(ctx.out_shapes[0]) * int(contracted)
