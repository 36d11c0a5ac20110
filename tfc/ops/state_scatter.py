"""Variables updated at indices: ScatterUpdate/Add/Sub/Mul/Div/Min/Max, ScatterNdUpdate/Add/Sub.

Like Assign (tfc/ops/state.py), each writes the variable it is given in place and outputs the
variable. The Scatter ops address rows (the first dim) by an index tensor of any shape, and
take an update per index or one scalar for all; the ScatterNd ops address slices by index tuples
(tfc/ops/array_nd_index.py). Every index is checked before anything is written, so a failing
run (InvalidArgumentError with TensorFlow's message) leaves the variable as it was; repeated
indices apply their updates in order (the last wins for the Update ops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_common import INDEX_DTYPES, merge_or_raise
from tfc.ops.array_nd_index import (
    NUMERIC_DTYPES,
    SCATTER_RULES,
    as_updates,
    check_scatter_shapes,
    scatter_kernel,
    scatter_reference,
)
from tfc.ops.array_shape import expand_dims
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import no_flops, per_input_element
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register
from tfc.ops.state import variable_ref

__all__ = [
    "scatter_update",
    "scatter_add",
    "scatter_sub",
    "scatter_mul",
    "scatter_div",
    "scatter_min",
    "scatter_max",
    "scatter_nd_update",
    "scatter_nd_add",
    "scatter_nd_sub",
    "batch_scatter_update",
]

_STATE = dict(stateful=True, ref_inputs=(0,), reads_ref=True, alias=0, differentiable=False)


def _check_types(ctx: OpContext, rule: str) -> None:
    check_dtype(ctx, 1, INDEX_DTYPES, "indices")
    if rule != "update":
        check_dtype(ctx, 0, NUMERIC_DTYPES, "ref")
    if ctx.in_dtypes[2] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input 'updates' of '{ctx.type}' Op has type {ctx.in_dtypes[2].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument 'ref'."
        )


# -- ScatterUpdate and kin: rows by index ---------------------------------------------------------
def _scatter_infer(rule: str) -> Callable:
    def infer(ctx: OpContext) -> list:
        _check_types(ctx, rule)
        ref, indices, updates = ctx.in_shapes
        if ref is not None and len(ref) == 0:
            raise ctx.error("Shape must be at least rank 1 but is rank 0")
        if updates is not None and len(updates) == 0:
            return [(ctx.in_dtypes[0], ref)]  # one scalar for every element of the rows
        if ref is not None and indices is not None:
            merge_or_raise(ctx, updates, tuple(indices) + tuple(ref[1:]))
        return [(ctx.in_dtypes[0], ref)]

    return infer


def _scatter_reference(rule: str) -> Callable:
    def reference(ctx: OpContext, ref: np.ndarray, indices: np.ndarray, updates: np.ndarray):
        target = np.array(ref, copy=True)
        tuples = indices.reshape(indices.shape + (1,))
        scatter_reference(target, tuples, updates, SCATTER_RULES[rule], flat=True)
        return ctx.state.assign(ctx.ref_names[0], target)

    return reference


def _scatter_lower(rule: str) -> Callable:
    def lower(ctx: OpContext) -> list:
        tuples = tuple(ctx.in_shapes[1]) + (1,)
        return scatter_kernel(ctx, ctx.out_shapes[0], tuples, "in1", "in2", rule, None, flat=True)

    return lower


for _rule in ("update", "add", "sub", "mul", "div", "min", "max"):
    register(
        OpDef(
            f"Scatter{_rule.capitalize()}",
            infer=_scatter_infer(_rule),
            reference=_scatter_reference(_rule),
            lower=_scatter_lower(_rule),
            flops=no_flops if _rule == "update" else per_input_element(1, 2),
            input_names=("ref", "indices", "updates"),
            dtypes=_dt.STORABLE if _rule == "update" else _dt.INTEGERS,
            **_STATE,
        )
    )


# -- ScatterNdUpdate, -Add, -Sub: slices by index tuple -------------------------------------------
def _scatter_nd_infer(rule: str) -> Callable:
    def infer(ctx: OpContext) -> list:
        _check_types(ctx, rule)
        ref, indices, updates = ctx.in_shapes
        if indices is not None and len(indices) == 0:
            raise ctx.error("Shape must be at least rank 1 but is rank 0")
        b = int(ctx.attrs.get("batch_dims", 0))
        if b and indices is not None and ref is not None:
            if b >= len(indices) or b >= len(ref):
                raise ctx.error(
                    f"batch_dims ({b}) must be less than the ranks of indices ({len(indices)}) "
                    f"and of the variable ({len(ref)})"
                )
            merge_or_raise(ctx, tuple(ref[:b]), tuple(indices[:b]), " (the batch dims)")
        check_scatter_shapes(ctx, indices, updates, ref, b)
        return [(ctx.in_dtypes[0], ref)]

    return infer


def _scatter_nd_reference(rule: str) -> Callable:
    def reference(ctx: OpContext, ref: np.ndarray, indices: np.ndarray, updates: np.ndarray):
        b = int(ctx.attrs.get("batch_dims", 0))
        target = scatter_reference(
            np.array(ref, copy=True), indices, updates, SCATTER_RULES[rule], b
        )
        return ctx.state.assign(ctx.ref_names[0], target)

    return reference


def _scatter_nd_lower(rule: str) -> Callable:
    def lower(ctx: OpContext) -> list:
        b = int(ctx.attrs.get("batch_dims", 0))
        return scatter_kernel(
            ctx, ctx.out_shapes[0], ctx.in_shapes[1], "in1", "in2", rule, None, batch_dims=b
        )

    return lower


for _rule in ("update", "add", "sub"):
    register(
        OpDef(
            f"ScatterNd{_rule.capitalize()}",
            infer=_scatter_nd_infer(_rule),
            reference=_scatter_nd_reference(_rule),
            lower=_scatter_nd_lower(_rule),
            flops=no_flops if _rule == "update" else per_input_element(1, 2),
            input_names=("ref", "indices", "updates"),
            dtypes=_dt.STORABLE if _rule == "update" else _dt.INTEGERS,
            **_STATE,
        )
    )


# -- frontends ------------------------------------------------------------------------------------
def _scatter_op(
    op_type: str, ref: Any, indices: Any, updates: Any, use_locking: Any, name: Any, **attrs: Any
) -> Tensor:
    var = variable_ref(ref, op_type)
    with name_scope(name, op_type, [var, indices, updates]) as scope:
        indices = convert_to_tensor(indices, name="indices")
        updates = as_updates(updates, var.dtype)
        attrs["use_locking"] = bool(use_locking)
        return apply_op(op_type, [var, indices, updates], attrs, name=scope).outputs[0]


def scatter_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """`tf.scatter_update`: ref[indices[i], ...] = updates[i, ...] (or one scalar for all);
    returns the variable."""
    return _scatter_op("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_add`: ref[indices[i], ...] += updates[i, ...]; repeated indices add up."""
    return _scatter_op("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_sub`: ref[indices[i], ...] -= updates[i, ...]."""
    return _scatter_op("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_mul(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_mul`: ref[indices[i], ...] *= updates[i, ...]."""
    return _scatter_op("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_div`: ref[indices[i], ...] /= updates[i, ...] (integers: truncating; a zero
    divisor fails the run)."""
    return _scatter_op("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_min(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_min`: ref[indices[i], ...] = min(ref[indices[i], ...], updates[i, ...])."""
    return _scatter_op("ScatterMin", ref, indices, updates, use_locking, name)


def scatter_max(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_max`: ref[indices[i], ...] = max(ref[indices[i], ...], updates[i, ...])."""
    return _scatter_op("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_nd_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """`tf.scatter_nd_update`: the variable's slices at the index tuples set to `updates`."""
    return _scatter_op("ScatterNdUpdate", ref, indices, updates, use_locking, name, batch_dims=0)


def scatter_nd_add(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_nd_add`: `updates` added to the variable's slices at the index tuples."""
    return _scatter_op("ScatterNdAdd", ref, indices, updates, use_locking, name, batch_dims=0)


def scatter_nd_sub(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`tf.scatter_nd_sub`: `updates` subtracted from the variable's slices at the tuples."""
    return _scatter_op("ScatterNdSub", ref, indices, updates, use_locking, name, batch_dims=0)


def batch_scatter_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """`tf.batch_scatter_update` (TF1): ref[b..., indices[b..., i], ...] = updates[b..., i, ...]
    for the batch dims b (every dim of indices but its last)."""
    var = variable_ref(ref, "ScatterNdUpdate")
    with name_scope(name, "BatchScatterUpdate", [var, indices, updates]):
        indices = convert_to_tensor(indices, name="indices")
        shape = indices._shape_tuple
        if shape is None:
            raise ValueError("batch_scatter_update does not allow indices with unknown shape.")
        if len(shape) == 0:
            raise ValueError("batch_scatter_update needs indices of rank 1 or more, got a scalar.")
        return _scatter_op(
            "ScatterNdUpdate", var, expand_dims(indices, -1), updates, use_locking, None,
            batch_dims=len(shape) - 1,
        )  # fmt: skip
