"""Complex numbers' parts: Complex, Real, Imag, Conj, ComplexAbs, Angle (tf.complex, tf.real...).

A complex tensor is a struct of two floats per element in C (runtime tfc_dtypes.h). Beside
these ops, complex values are moved by every data-movement op, cast (tf.cast), added,
subtracted, multiplied, divided, negated, compared for equality and summed (the ops' tables
hold their "c" entries); the other ops refuse them by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.elementwise import convert_operands
from tfc.ops.flops import per_output_element
from tfc.ops.kernels import loop_kernel, math_suffix, type_tag, view
from tfc.ops.logic import less
from tfc.ops.registry import OpContext, OpDef, apply_op, broadcast_shape, register

__all__ = ["complex", "real", "imag", "conj", "angle"]

_PARTS = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128}


# -- Complex(real, imag) ------------------------------------------------------------------------
def _complex_infer(ctx: OpContext) -> list:
    re, im = ctx.in_dtypes
    if re is not im or re not in _PARTS:
        raise ctx.type_error(
            f"The real and imaginary parts of a complex number must both be float32 or both "
            f"float64, got {re.name} and {im.name}"
        )
    out = ctx.attrs.get("Tout", _PARTS[re])
    if out is not _PARTS[re]:
        raise ctx.type_error(f"Tout must be {_PARTS[re].name} for {re.name} parts")
    return [(out, broadcast_shape(ctx, ctx.in_shapes[0], ctx.in_shapes[1]))]


def _complex_lower(ctx: OpContext) -> list:
    out, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    parts = zip(ctx.in_dtypes, ctx.in_shapes)
    ins = [view(f"in{i}", d, s, shape) for i, (d, s) in enumerate(parts)]
    expr = f"tfc_{type_tag(out)}_of({{0}}, {{1}})"
    return loop_kernel(shape, view("out0", out, shape), ins, expr)


register(
    OpDef(
        "Complex",
        infer=_complex_infer,
        reference=lambda ctx, re, im: (re + 1j * im).astype(ctx.out_dtypes[0].np),
        lower=_complex_lower,
        flops=per_output_element(0),
        grad=lambda op, dy: [real(dy), imag(dy)],
        input_names=("real", "imag"),
        dtypes=_dt.COMPLEX,
    )
)


# -- one complex input: Real, Imag, Conj, ComplexAbs, Angle --------------------------------------
def _complex_input_infer(keeps_complex: bool) -> Callable[[OpContext], list]:
    def infer(ctx: OpContext) -> list:
        dtype = ctx.in_dtypes[0]
        if not dtype.is_complex:
            raise ctx.type_error(f"{ctx.type} takes complex64 or complex128, got {dtype.name}")
        return [(dtype if keeps_complex else dtype.real_dtype, ctx.in_shapes[0])]

    return infer


def _register_part(
    op_type: str, expr: str, reference: Callable, grad: Callable | None, keeps_complex=False
) -> None:
    """An op of one complex input; `expr` is C over {0} (the element), {tag} the input's helper
    suffix and {sfx} the libm suffix of its parts."""

    def lower(ctx: OpContext) -> list:
        dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
        c = expr.format("{0}", tag=type_tag(dtype), sfx=math_suffix(dtype.real_dtype))
        out = view("out0", ctx.out_dtypes[0], shape)
        return loop_kernel(shape, out, [view("in0", dtype, shape)], c)

    register(
        OpDef(
            op_type,
            infer=_complex_input_infer(keeps_complex),
            reference=lambda ctx, x: np.asarray(reference(x)).astype(ctx.out_dtypes[0].np),
            lower=lower,
            flops=per_output_element(1),
            grad=grad,
            differentiable=grad is not None,
            input_names=("input",),
            dtypes=_dt.COMPLEX,
        )
    )


def _zeros(t: Tensor) -> Tensor:
    return apply_op("ZerosLike", [t]).outputs[0]


_register_part("Real", "({0}).re", np.real, lambda op, dy: [complex(dy, _zeros(dy))])
_register_part("Imag", "({0}).im", np.imag, lambda op, dy: [complex(_zeros(dy), dy)])
_register_part(
    "Conj", "tfc_conj_{tag}({0})", np.conj, lambda op, dy: [conj(dy)], keeps_complex=True
)
_register_part("ComplexAbs", "hypot{sfx}(({0}).re, ({0}).im)", np.abs, None)
_register_part("Angle", "atan2{sfx}(({0}).im, ({0}).re)", np.angle, None)


# -- frontends ----------------------------------------------------------------------------------
def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001  TF's name
    """`tf.complex`: real + imag * 1j, both float32 (complex64) or both float64 (complex128)."""
    with name_scope(name, "Complex") as scope:
        re, im = convert_operands(real, imag)
        out = _PARTS.get(re.dtype)
        return apply_op("Complex", [re, im], {"Tout": out}, name=scope).outputs[0]


def _part(op_type: str, input: Any, name: str | None, otherwise: Callable) -> Tensor:  # noqa: A002
    x = convert_to_tensor(input)
    if not x.dtype.is_complex:
        return otherwise(x)
    attrs = {"Tout": x.dtype.real_dtype} if op_type not in ("Conj",) else {}
    return apply_op(op_type, [x], attrs, name=name or op_type).outputs[0]


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.real`: the real parts of a complex tensor; a real tensor as it is."""
    return _part("Real", input, name, lambda x: x)


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.imag`: the imaginary parts of a complex tensor; zeros for a real one."""
    return _part("Imag", input, name, _zeros)


def conj(x: Any, name: str | None = None) -> Tensor:
    """`tf.conj`: the complex conjugate; a real tensor as it is."""
    return _part("Conj", x, name, lambda t: t)


def angle(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.angle`: the argument atan2(imag, real) of each complex element; for real elements
    pi where negative, else 0 (as TF gives)."""

    def of_real(x: Tensor) -> Tensor:
        pi = convert_to_tensor(np.pi, dtype=x.dtype)
        zero = convert_to_tensor(0, dtype=x.dtype)
        negative = less(x, zero)
        return apply_op("SelectV2", [negative, pi, zero], name=name or "Angle").outputs[0]

    return _part("Angle", input, name, of_real)


def complex_abs(x: Tensor, name: str | None = None) -> Tensor:
    """|x| of a complex tensor (what tf.abs gives for one), as its parts' dtype."""
    return _part("ComplexAbs", x, name, lambda t: t)
