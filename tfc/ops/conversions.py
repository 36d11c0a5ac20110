"""Converting between dtypes beyond tf.cast: saturate_cast, bitcast, the to_<dtype> functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import shape_str
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import no_flops
from tfc.ops.math import cast, maximum, minimum
from tfc.ops.registry import OpContext, OpDef, apply_op, register

__all__ = ["saturate_cast", "bitcast", "to_bfloat16", "to_complex64", "to_complex128"]


# -- saturate_cast ------------------------------------------------------------------------------
def _exact(value: Any, dtype: _dt.DType) -> float | int:
    """`value` as `dtype` holds it, as an exact Python number."""
    held = _dt.as_numpy(value, dtype)
    if dtype.kind == "h":
        return float(_dt.to_float32(held, dtype))
    return held.item()


def _toward_zero(value: float, dtype: _dt.DType) -> float:
    """The `dtype` value next to `value` (a value of it) toward zero."""
    if dtype is _dt.bfloat16:  # one step of bfloat16 is one step of the top 16 bits
        bits = np.array(value, np.float32).view(np.uint32) - np.uint32(1 << 16)
        return float(bits.view(np.float32))
    return float(np.nextafter(dtype.np.type(value), dtype.np.type(0)))


def _limit(in_dtype: _dt.DType, out_dtype: _dt.DType, end: str) -> float | int:
    """The bound saturate_cast clamps to (TF's rule): the tighter of the two dtypes' bounds,
    as a value of `in_dtype` that still lies inside `out_dtype`'s range (float32 cannot hold
    int32's maximum: its largest float32 below it is taken)."""
    pick = max if end == "min" else min
    bound = pick(getattr(in_dtype, end), getattr(out_dtype, end))
    value = _exact(float(bound) if in_dtype.is_floating else int(bound), in_dtype)
    outside = value < out_dtype.min if end == "min" else value > out_dtype.max
    if outside and in_dtype.is_floating:
        value = _toward_zero(value, in_dtype)
    return value


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """`tf.saturate_cast`: `value` clamped to the range of `dtype`, then cast (TF's rule: each
    bound the nearest value of the input's dtype inside the output's range). A complex value
    keeps its real part when cast to a real dtype."""
    with name_scope(name, "saturate_cast") as scope:
        x = convert_to_tensor(value, name="value")
        dtype = _dt.as_dtype(dtype)
        if x.dtype.is_complex:
            if dtype.is_complex:
                return cast(x, dtype, name=scope)
            x = apply_op("Real", [x], {"Tout": x.dtype.real_dtype}).outputs[0]
        in_dtype, out_real = x.dtype, dtype.real_dtype
        if not (in_dtype.is_floating or in_dtype.is_integer) or not (
            out_real.is_floating or out_real.is_integer
        ):
            raise TypeError(f"saturate_cast from {in_dtype.name} to {dtype.name} has no range")
        low = constant(_limit(in_dtype, out_real, "min"), dtype=in_dtype, name="min")
        high = constant(_limit(in_dtype, out_real, "max"), dtype=in_dtype, name="max")
        clamped = maximum(minimum(x, high), low, name="clamp")
        return cast(clamped, dtype, name=scope)


# -- Bitcast ------------------------------------------------------------------------------------
def _bitcast_infer(ctx: OpContext) -> list:
    src, dst = ctx.in_dtypes[0], ctx.attrs["type"]
    for dtype in (src, dst):
        if not (dtype.is_floating or dtype.is_integer or dtype.is_complex):
            raise ctx.type_error(f"Bitcast does not support {dtype.name}")
    shape = ctx.in_shapes[0]
    if shape is None or src.size == dst.size:
        return [(dst, shape)]
    if src.size > dst.size:  # one value becomes several: a new last dim
        return [(dst, (*shape, src.size // dst.size))]
    ratio = dst.size // src.size
    if not shape or (shape[-1] is not None and shape[-1] != ratio):
        raise ctx.error(
            f"Cannot bitcast from {src.tf_name} to {dst.tf_name}: shape {shape_str(shape)}"
        )
    return [(dst, shape[:-1])]


def _bitcast_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    # the bytes as the source dtype holds them (the reference sees 16-bit floats as float32)
    held = np.ascontiguousarray(_dt.as_numpy(x, ctx.attrs["T"]))
    return held.view(ctx.attrs["type"].np).reshape(ctx.out_shapes[0])


register(
    OpDef(
        "Bitcast",
        infer=_bitcast_infer,
        reference=_bitcast_reference,
        lower=lambda ctx: [],  # the same bytes: the output shares the input's buffer
        alias=0,
        flops=no_flops,
        differentiable=False,
        dtypes=(*_dt.NUMERIC, *_dt.COMPLEX),
    )
)


def bitcast(input: Any, type: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.bitcast`: the bytes of `input` seen as `type`, without copying. A wider type takes
    the last dim's values together (it must equal the size ratio); a narrower one splits each
    value into a new last dim."""
    x = convert_to_tensor(input)
    dtype = _dt.as_dtype(type)
    if x.dtype is dtype:
        return x
    attrs = {"T": x.dtype, "type": dtype}
    return apply_op("Bitcast", [x], attrs, name=name or "Bitcast").outputs[0]


# -- to_<dtype> ----------------------------------------------------------------------------------
def to_bfloat16(x: Any, name: str = "ToBFloat16") -> Tensor:
    """`tf.to_bfloat16`: tf.cast to bfloat16."""
    return cast(x, _dt.bfloat16, name=name)


def to_complex64(x: Any, name: str = "ToComplex64") -> Tensor:
    """`tf.to_complex64`: tf.cast to complex64."""
    return cast(x, _dt.complex64, name=name)


def to_complex128(x: Any, name: str = "ToComplex128") -> Tensor:
    """`tf.to_complex128`: tf.cast to complex128."""
    return cast(x, _dt.complex128, name=name)
