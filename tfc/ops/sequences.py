"""Evenly spaced sequences: Range (`tf.range`) and `tf.linspace` built on it.

A sequence's length is its shape, so its bounds must be known when the graph is compiled
(Python values, or tensors computed from constants and static shapes): Range takes them as
compile-time inputs, and linspace's `num` as well.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.flops import no_flops
from tfc.ops.kernels import Kernel, Param, RangeSpec, c_literal
from tfc.ops.math import cast
from tfc.ops.registry import HALVES_IN_FLOAT32, OpContext, OpDef, apply_op, constant_value, register

__all__ = ["range", "linspace", "lin_space"]

_RANGE_DTYPES = (_dt.int32, _dt.int64, _dt.float32, _dt.float64)  # widening order


# -- Range ----------------------------------------------------------------------------------------
def range_length(ctx: OpContext, start: Any, limit: Any, delta: Any) -> int:
    """The number of elements of range(start, limit, delta), with TF's errors; for floats
    ceil(|limit - start| / |delta|) computed in the dtype, as TF's kernel does."""
    dtype = ctx.in_dtypes[0]
    start, limit, delta = (np.asarray(v, dtype.np).reshape(())[()] for v in (start, limit, delta))
    if dtype.is_integer:
        start, limit, delta = int(start), int(limit), int(delta)
    if delta == 0:
        raise ctx.error("Requires delta != 0: 0")
    if delta > 0 and start > limit:
        raise ctx.error(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ctx.error(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if dtype.is_integer:
        return (abs(limit - start) + abs(delta) - 1) // abs(delta)
    return math.ceil(abs((limit - start) / delta))


def _range_infer(ctx: OpContext) -> list:
    dtype = ctx.in_dtypes[0]
    if dtype not in _RANGE_DTYPES:
        raise ctx.type_error(f"Range does not support {dtype.name}")
    for i, what in enumerate(("start", "limit", "delta")):
        if ctx.in_dtypes[i] != dtype:
            raise ctx.type_error(f"'{what}' has dtype {ctx.in_dtypes[i].name}, not {dtype.name}")
        shape = ctx.in_shapes[i]
        if shape is not None and len(shape) != 0:
            raise ctx.error(f"{what} must be a scalar, not shape {list(shape)}")
    values = [ctx.const(i) for i in (0, 1, 2)]
    if any(v is None for v in values):
        return [(dtype, (None,))]
    return [(dtype, (range_length(ctx, *values),))]


def _range_reference(ctx: OpContext, start, limit, delta) -> np.ndarray:
    n = range_length(ctx, start, limit, delta)
    dtype = ctx.in_dtypes[0].np
    return (start.astype(dtype) + np.arange(n).astype(dtype) * delta.astype(dtype)).astype(dtype)


def _range_lower(ctx: OpContext) -> list[Kernel]:
    dtype = ctx.out_dtypes[0]
    start, _, delta = (
        ctx.require_const(i, what) for i, what in enumerate(("start", "limit", "delta"))
    )
    count = ctx.out_shapes[0][0]
    if count == 0:
        return []
    spec = RangeSpec(dtype, count, c_literal(start, dtype), c_literal(delta, dtype))
    return [Kernel("range", [Param("y", dtype.c_type, False, "out0")], spec)]


register(
    OpDef(
        "Range",
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
        infer=_range_infer,
        reference=_range_reference,
        lower=_range_lower,
        flops=no_flops,
        const_inputs=(0, 1, 2),
        input_names=("start", "limit", "delta"),
        differentiable=False,
    )
)


def _inferred_dtype(value: Any) -> _dt.DType:
    """The dtype TF1 gives a range bound: a tensor's own, else that of the Python value."""
    if is_tensor_like(value):
        return convert_to_tensor(value).dtype
    if isinstance(value, (np.ndarray, np.generic)):
        return _dt.as_dtype(value.dtype)
    if isinstance(value, float):
        return _dt.float32
    return _dt.int32 if -(2**31) <= int(value) < 2**31 else _dt.int64


def range(  # noqa: A001  tf.range
    start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None, name: str = "range"
) -> Tensor:
    """`tf.range`: start, start + delta, ... up to (not including) limit; `range(n)` counts
    from 0. The dtype is the widest of the arguments' (int32 < int64 < float32 < float64)
    unless given. Its length is its shape: the bounds must be known when compiling."""
    if limit is None:
        start, limit = 0, start
    with name_scope(name, "Range") as scope:
        if dtype is not None:
            dtype = _dt.as_dtype(dtype)
        else:
            widths = [_RANGE_DTYPES.index(_inferred_dtype(v)) for v in (start, limit, delta)]
            dtype = _RANGE_DTYPES[max(widths)]
        bounds = []
        for value, what in ((start, "start"), (limit, "limit"), (delta, "delta")):
            t = convert_to_tensor(value, name=what) if is_tensor_like(value) else None
            if t is None:
                t = constant(value, dtype=dtype, name=what)
            bounds.append(cast(t, dtype))
        return apply_op("Range", bounds, {"Tidx": dtype}, name=scope).outputs[0]


# -- linspace -------------------------------------------------------------------------------------
def linspace(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0) -> Tensor:
    """`tf.linspace`: `num` values from start to stop inclusive, evenly spaced: start and stop
    exactly at the ends, start + i * (stop - start) / (num - 1) between (TF's formula). start
    and stop may be tensors of one shape (run-time values); the values then lie along `axis`.
    `num` must be known when the graph is built."""
    with name_scope(name, "LinSpace") as scope:
        start = convert_to_tensor(start, name="start")
        stop = convert_to_tensor(stop, name="stop", dtype=start.dtype)
        if not start.dtype.is_floating:
            raise TypeError(f"linspace needs float start and stop, got {start.dtype.name}")
        num_value = num if not is_tensor_like(num) else _static_num(num)
        num_value = int(num_value)
        if num_value < 0:
            raise ValueError(f"Requires num >= 0: {num_value}")
        rank = start._shape_tuple
        if rank is None:
            raise ValueError("linspace needs the rank of start and stop when the graph is built")
        axis = axis + len(rank) + 1 if axis < 0 else axis
        first = _array.expand_dims(start, axis)
        last = _array.expand_dims(stop, axis)
        if num_value <= 1:
            return _array.slice(first, [0] * (len(rank) + 1), _sizes(rank, axis, num_value), scope)
        steps = constant(np.arange(1, num_value - 1).astype(start.dtype.np))
        steps = _array.reshape(steps, [1] * axis + [-1] + [1] * (len(rank) - axis))
        delta = (last - first) / constant(num_value - 1, dtype=start.dtype)
        middle = first + delta * steps
        return _array.concat([first, middle, last], axis, name=scope)


def _sizes(rank: tuple, axis: int, num: int) -> list[int]:
    return [-1] * axis + [num] + [-1] * (len(rank) - axis)


def _static_num(num: Any) -> int:
    t = convert_to_tensor(num)
    value = constant_value(t.graph, (t.op.name, t.value_index))
    if value is None:
        raise ValueError(
            f"linspace's num ({t.name}) must be known when the graph is built: it is the length "
            "of the result, and tfc compiles static shapes ahead of time"
        )
    return int(np.asarray(value).reshape(()))


lin_space = linspace
