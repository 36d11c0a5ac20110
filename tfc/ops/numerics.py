"""`tf.check_numerics`: a run fails, naming the node, when a tensor holds NaN or Inf values."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, control_dependencies, get_default_graph, name_scope
from tfc.ir.tensor_shape import num_elements
from tfc.ops.constant import convert_to_tensor
from tfc.ops.control import group
from tfc.ops.flops import per_input_element
from tfc.ops.kernels import Kernel, Param, ScanSpec
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    get_opdef,
    register,
)

__all__ = [
    "check_numerics",
    "verify_tensor_all_finite",
    "assert_all_finite",
    "add_check_numerics_ops",
]

_FLOATS = _dt.FLOATS  # the 16-bit floats run in float32 (OpDef.computes_in)
_GRADIENT_PREFIX = "Not a number (NaN) or infinity (Inf) values detected in gradient. "


def numerics_message(message: str, has_nan: bool, has_inf: bool) -> str:
    """TF's wording: '<message> : Tensor had NaN values' (Inf, or 'Inf and NaN' for both)."""
    found = "Inf and NaN" if has_nan and has_inf else "NaN" if has_nan else "Inf"
    return f"{message} : Tensor had {found} values"


def _check_numerics_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _FLOATS, "tensor")
    return [(ctx.in_dtypes[0], ctx.in_shapes[0])]


def _check_numerics_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    has_nan, has_inf = bool(np.isnan(x).any()), bool(np.isinf(x).any())
    if has_nan or has_inf:
        graph = ctx.graph
        op = graph.get_operation_by_name(ctx.name) if graph is not None else None
        message = numerics_message(ctx.attrs["message"], has_nan, has_inf)
        raise errors.InvalidArgumentError(None, op, message)
    return x


def _check_numerics_lower(ctx: OpContext) -> list:
    """A read-only scan: the output shares the input's buffer, so nothing is copied."""
    count = num_elements(ctx.in_shapes[0])
    if count == 0:
        return []
    message = ctx.attrs["message"]
    messages = {
        "nan": numerics_message(message, True, False),
        "inf": numerics_message(message, False, True),
        "both": numerics_message(message, True, True),
    }
    params = [Param("x0", ctx.in_dtypes[0].c_type, True, "in0")]
    spec = ScanSpec(ctx.in_dtypes[0], count, messages)
    return [Kernel("check_numerics", params, spec, can_fail=True)]


def _check_numerics_grad(op: Operation, dy: Tensor | None) -> list:
    """The incoming gradient, checked the same way (as TF does)."""
    if dy is None:
        return [None]
    return [check_numerics(dy, _GRADIENT_PREFIX + op.get_attr("message"))]


register(
    OpDef(
        "CheckNumerics",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_check_numerics_infer,
        reference=_check_numerics_reference,
        lower=_check_numerics_lower,
        flops=per_input_element(1),
        grad=_check_numerics_grad,
        # stateful: its failure is an effect; never folded at graph build time or merged
        stateful=True,
        alias=0,
        input_names=("tensor",),
    )
)


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tf.check_numerics`: `tensor`'s values; the run fails (InvalidArgumentError) when any
    element is NaN or Inf, with "`message` : Tensor had NaN values" and the node's name."""
    if not isinstance(message, str):
        raise TypeError(f"Expected string for argument 'message' not {message!r}.")
    tensor = convert_to_tensor(tensor, name="tensor")
    attrs = {"message": message}
    return apply_op("CheckNumerics", [tensor], attrs, name=name or "CheckNumerics").outputs[0]


def verify_tensor_all_finite(
    t: Any = None,
    msg: str | None = None,
    name: str | None = None,
    x: Any = None,
    message: str | None = None,
) -> Tensor:
    """`tf.verify_tensor_all_finite` (`tf.debugging.assert_all_finite`): check_numerics of t."""
    if x is not None and t is not None:
        raise ValueError("Cannot specify both 'x' and 't'")
    if message is not None and msg is not None:
        raise ValueError("Cannot specify both 'message' and 'msg'")
    x = t if x is None else x
    message = msg if message is None else message
    with name_scope(name, "VerifyFinite", [x]):
        return check_numerics(convert_to_tensor(x, name="x"), message=message)


assert_all_finite = verify_tensor_all_finite


def add_check_numerics_ops() -> Operation:
    """`tf.add_check_numerics_ops`: a check_numerics for every float tensor of the default
    graph, chained by control dependencies; returns the op grouping them (run it with the
    step). Variables and the outputs of ops updating them (TF's ref tensors) are not checked."""
    graph = get_default_graph()
    checks: list[Tensor] = []
    for op in graph.get_operations():
        opdef = get_opdef(op.type)
        if op.type == "VariableV2" or opdef.ref_inputs:
            continue
        for output in op.outputs:
            if output.dtype in _FLOATS:
                with control_dependencies([c.op for c in checks]):
                    checks = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return group(*checks)
