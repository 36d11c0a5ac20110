"""Gradient-only math ops: TF's fused SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad.

Each takes (y, dy), y being the forward op's output, and computes dy * f'(x) from y in one
element-wise pass instead of a chain of kernels. Their own rules give second derivatives.
"""

from __future__ import annotations

from tfc.ir.graph import Tensor
from tfc.ops.elementwise import register_elementwise
from tfc.ops.registry import apply_op


def grad_op(op_type: str, y: Tensor, dy: Tensor) -> Tensor:
    """`op_type(y, dy)`: the fused gradient of the op whose output is y."""
    return apply_op(op_type, [y, dy], name=op_type).outputs[0]


register_elementwise(
    "SigmoidGrad",
    lambda y, dy: dy * y * (1 - y),
    {"f": "{1} * {0} * (({T})1 - {0})"},
    grad=lambda op, g: [
        g * op.inputs[1] * (1 - 2 * op.inputs[0]),
        grad_op("SigmoidGrad", op.inputs[0], g),
    ],
)
register_elementwise(
    "TanhGrad",
    lambda y, dy: dy * (1 - y * y),
    {"f": "{1} * (({T})1 - {0} * {0})"},
    grad=lambda op, g: [-2 * g * op.inputs[1] * op.inputs[0], grad_op("TanhGrad", op.inputs[0], g)],
)
register_elementwise(
    "SqrtGrad",
    lambda y, dy: dy * 0.5 / y,
    {"f": "{1} * ({T})0.5 / {0}"},
    grad=lambda op, g: [-g * op.outputs[0] / op.inputs[0], grad_op("SqrtGrad", op.inputs[0], g)],
)
register_elementwise(
    "RsqrtGrad",
    lambda y, dy: -0.5 * dy * y * y * y,
    {"f": "({T})-0.5 * {1} * {0} * {0} * {0}"},
    grad=lambda op, g: [
        -1.5 * g * op.inputs[1] * op.inputs[0] * op.inputs[0],
        grad_op("RsqrtGrad", op.inputs[0], g),
    ],
)
register_elementwise(
    "ReciprocalGrad",
    lambda y, dy: -dy * y * y,
    {"f": "-{1} * {0} * {0}"},
    grad=lambda op, g: [
        -2 * g * op.inputs[1] * op.inputs[0],
        grad_op("ReciprocalGrad", op.inputs[0], g),
    ],
)
