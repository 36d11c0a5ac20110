"""Variables' ops: VariableV2, the Assign family that writes it, IsVariableInitialized, and
CountUpTo (the counter of tf.train.limit_epochs)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Graph, Tensor, name_scope
from tfc.ir.tensor_shape import merge_shapes, shape_str
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import no_flops, per_output_element
from tfc.ops.kernels import (
    Kernel,
    Param,
    ScanSpec,
    elementwise_expr,
    loop_kernel,
    table_entry,
    view,
)
from tfc.ops.registry import OpContext, OpDef, apply_op, register

__all__ = ["assign", "assign_add", "assign_sub", "is_variable_initialized", "count_up_to"]

# -- VariableV2 ----------------------------------------------------------------------------------
register(
    OpDef(
        "VariableV2",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: [(ctx.attrs["dtype"], ctx.attrs["shape"])],
        reference=lambda ctx: ctx.state.variable(ctx.name),  # None until first assigned
        lower=lambda ctx: [],  # its output is the session-owned buffer itself
        stateful=True,
        differentiable=False,
    )
)


# -- Assign, AssignAdd, AssignSub ---------------------------------------------------------------
def _assign_infer(ctx: OpContext) -> list:
    ref_dtype, value_dtype = ctx.in_dtypes
    if ctx.type != "Assign" and not (ref_dtype.is_floating or ref_dtype.is_integer):
        raise ctx.type_error(f"{ctx.type} takes numeric variables, not {ref_dtype.name}")
    if ref_dtype != value_dtype:
        raise TypeError(
            f"Input 'value' of '{ctx.type}' Op has type {value_dtype.name} that does not match "
            f"type {ref_dtype.name} of argument 'ref'."
        )
    ref_shape, value_shape = ctx.in_shapes
    if ctx.attrs.get("validate_shape", True) and merge_shapes(ref_shape, value_shape) is False:
        raise ctx.error(
            f"Shapes must be equal: the variable has shape {shape_str(ref_shape)} and the "
            f"value {shape_str(value_shape)}"
        )
    return [(ref_dtype, ref_shape)]


def _assign_lower(expr: str | None):
    """Lowering of Assign (expr None: copy) or an in-place update `{out} op {0}`."""

    def lower(ctx: OpContext) -> list:
        dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
        if tuple(ctx.in_shapes[1]) != tuple(shape):
            raise ValueError(
                f"'{ctx.name}' ({ctx.type}) writes a value of shape {shape_str(ctx.in_shapes[1])} "
                f"into a variable of shape {shape_str(shape)}; tfc variables keep the shape "
                "they were created with"
            )
        body = "{0}" if expr is None else elementwise_expr(table_entry(expr, dtype), dtype, ["{0}"])
        return loop_kernel(shape, view("out0", dtype, shape), [view("in1", dtype, shape)], body)

    return lower


def _assign_reference(ctx: OpContext, ref: Any, value: np.ndarray) -> np.ndarray:
    return ctx.state.assign(ctx.ref_names[0], value)


def _update_reference(fn):
    def reference(ctx: OpContext, ref: np.ndarray, value: np.ndarray) -> np.ndarray:
        dtype = ctx.in_dtypes[0]
        with np.errstate(all="ignore"):
            if dtype.kind == "h":  # computed in float32, as the kernel does
                wide = fn(_dt.to_float32(ref, dtype), _dt.to_float32(value, dtype))
                return ctx.state.assign(ctx.ref_names[0], _dt.as_numpy(wide, dtype))
            return ctx.state.assign(ctx.ref_names[0], fn(ref, value).astype(ref.dtype))

    return reference


_STATE = dict(stateful=True, ref_inputs=(0,), alias=0, differentiable=False)
register(
    OpDef(
        "Assign",
        dtypes=_dt.STORABLE,
        infer=_assign_infer,
        reference=_assign_reference,
        lower=_assign_lower(None),
        flops=no_flops,
        **_STATE,
    )
)
register(
    OpDef(
        "AssignAdd",
        infer=_assign_infer,
        dtypes=_dt.NUMERIC,
        reference=_update_reference(np.add),
        lower=_assign_lower({"f": "{out} + {0}", "i": "tfc_add_{tag}({out}, {0})"}),
        reads_ref=True,
        flops=per_output_element(),
        **_STATE,
    )
)
register(
    OpDef(
        "AssignSub",
        infer=_assign_infer,
        dtypes=_dt.NUMERIC,
        reference=_update_reference(np.subtract),
        lower=_assign_lower({"f": "{out} - {0}", "i": "tfc_sub_{tag}({out}, {0})"}),
        reads_ref=True,
        flops=per_output_element(),
        **_STATE,
    )
)


def variable_ref(ref: Any, op_type: str) -> Tensor:
    """The VariableV2 output an assignment writes: from a Variable or that tensor itself."""
    tensor = getattr(ref, "_variable", ref)
    if not isinstance(tensor, Tensor) or tensor.op.type != "VariableV2":
        raise TypeError(
            f"{op_type} needs a variable to update (a tf.Variable, or the output of a VariableV2 "
            f"op), got {ref!r}"
        )
    return tensor


def _assign_op(
    op_type: str, ref: Any, value: Any, name: str | None, attrs: dict, use_locking: Any = None
) -> Tensor:
    var = variable_ref(ref, op_type)
    if use_locking:  # a Session's concurrent programs then hold the variable's update lock
        attrs = {**attrs, "use_locking": True}
    value = convert_to_tensor(value, dtype=var.dtype)
    return apply_op(op_type, [var, value], attrs, name=name or op_type).outputs[0]


def assign(
    ref: Any,
    value: Any,
    validate_shape: bool | None = None,
    use_locking: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.assign`: write `value` into the variable; the result is the variable's new value."""
    attrs = {"validate_shape": True if validate_shape is None else bool(validate_shape)}
    return _assign_op("Assign", ref, value, name, attrs, use_locking)


def assign_add(
    ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None
) -> Tensor:
    """`tf.assign_add`: ref += value, in place."""
    return _assign_op("AssignAdd", ref, value, name, {}, use_locking)


def assign_sub(
    ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None
) -> Tensor:
    """`tf.assign_sub`: ref -= value, in place."""
    return _assign_op("AssignSub", ref, value, name, {}, use_locking)


# -- IsVariableInitialized ------------------------------------------------------------------------
# Whether a variable holds a value is known to the session that owns it, not to a compiled
# program: the Session feeds each IsVariableInitialized output a run needs (tfc/client/
# session.py), from its flags at the start of the run; the interpreter reads its own state.
GRAPHS_WITH_INIT_FLAGS: weakref.WeakSet[Graph] = weakref.WeakSet()


def _no_kernel(ctx: OpContext) -> list:
    raise ValueError(
        f"'{ctx.name}' (IsVariableInitialized) is answered by the Session that owns the variable "
        "(it feeds the op's value); a program compiled on its own (tfc compile) has no such flag"
    )


register(
    OpDef(
        "IsVariableInitialized",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: [(_dt.bool_, ())],
        reference=lambda ctx, ref: np.array(ref is not None),
        lower=_no_kernel,
        stateful=True,
        ref_inputs=(0,),  # the variable is named, not read: it may hold no value yet
        differentiable=False,
        host_only=True,
    )
)


def is_variable_initialized(variable: Any) -> Tensor:
    """`tf.is_variable_initialized`: a bool scalar, whether the variable has a value in the
    session that runs it (as at the start of the run)."""
    var = variable_ref(variable, "IsVariableInitialized")
    GRAPHS_WITH_INIT_FLAGS.add(var.graph)
    with name_scope(None, "IsVariableInitialized", [var]) as scope:
        return apply_op("IsVariableInitialized", [var], {"dtype": var.dtype}, name=scope).outputs[0]


# -- CountUpTo -------------------------------------------------------------------------------------
def _count_up_to_infer(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    if dtype not in (_dt.int32, _dt.int64):
        raise ctx.type_error(
            f"Value passed to parameter 'ref' has DataType {dtype.name} not in list of allowed "
            "values: int32, int64"
        )
    if shape is not None and tuple(shape) != ():
        raise ctx.error(f"Shape must be rank 0 but is rank {len(shape)}")
    return [(dtype, ())]


def _count_up_to_message(limit: int) -> str:
    return f"Reached limit of {limit}"


def _count_up_to_reference(ctx: OpContext, ref: np.ndarray) -> np.ndarray:
    limit = ctx.attrs["limit"]
    if ref >= limit:
        raise errors.OutOfRangeError(None, None, _count_up_to_message(limit))
    old = np.array(ref, copy=True)
    ctx.state.assign(ctx.ref_names[0], (ref + 1).astype(ref.dtype))
    return old


def _count_up_to_lower(ctx: OpContext) -> list:
    dtype = ctx.in_dtypes[0]
    params = [Param("y", dtype.c_type, False, "out0"), Param("r0", dtype.c_type, False, "in0")]
    limit = ctx.attrs["limit"]
    spec = ScanSpec(dtype, 1, {"limit": str(limit), "message": _count_up_to_message(limit)})
    return [Kernel("count_up_to", params, spec, can_fail=True)]


register(
    OpDef(
        "CountUpTo",
        infer=_count_up_to_infer,
        reference=_count_up_to_reference,
        lower=_count_up_to_lower,
        stateful=True,
        ref_inputs=(0,),
        reads_ref=True,
        differentiable=False,
        flops=no_flops,
        host_only=True,  # a scalar counter: its kernel is host C, no GPU kernel is worth it
    )
)


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Tensor:
    """`tf.count_up_to`: ref's value, incrementing it; OutOfRangeError once it has reached
    `limit`. Atomic: concurrent steps of a Session count each value once (it holds the
    variable's update lock, as TF's kernel holds the variable's mutex)."""
    var = variable_ref(ref, "CountUpTo")
    attrs = {"limit": int(limit), "use_locking": True}
    return apply_op("CountUpTo", [var], attrs, name=name or "CountUpTo").outputs[0]
