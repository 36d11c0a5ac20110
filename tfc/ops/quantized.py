"""Element-wise int8 ops with TensorFlow Lite's quantized arithmetic (what tfc.tflite imports).

An int8 tensor of a TFLite model stands for the real values scale * (q - zero_point). Each op
here holds the quantization parameters of its inputs and output as TFLite's flatbuffer gives
them (float32 scales, integer zero points) and derives its fixed-point multipliers from them
exactly as TFLite's kernels do when they are prepared; its NumPy reference then computes as the
interpreter's reference kernels do (tfc/ops/fixed_point.py), bit for bit, and its C expression
calls the same arithmetic in runtime/include/tfc_quant.h (shared by the C and CUDA targets and
the embeddable library). Fused activations (RELU, RELU6, RELU_N1_TO_1) are clamps of the
output to the quantized range of the activation. The ops are not differentiable.

- Int8Quantize (float32 -> int8), Int8Dequantize (int8 -> float32): TFLite's QUANTIZE and
  DEQUANTIZE; Int8Requantize (int8 -> int8): QUANTIZE between two quantizations.
- Int8Relu: RELU, RELU6 and RELU_N1_TO_1 on int8, which may change the quantization.
- Int8Add, Int8Mul: ADD and MUL with NumPy broadcasting.
- Int8Lookup: a 256-entry table indexed by the int8 value: LOGISTIC and TANH, which TFLite's
  interpreter computes from such a table (LUTPopulate: the float function of each dequantized
  value, quantized), so tfc builds the same table when the op is made (`lookup_table`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ops.elementwise import register_elementwise
from tfc.ops.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
    wrap32,
)
from tfc.ops.kernels import c_literal
from tfc.ops.registry import apply_op

__all__: list[str] = []

ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")
INT8_MIN, INT8_MAX = -128, 127


# -- quantization parameters -----------------------------------------------------------------------
def f32(value: float) -> float:
    """`value` rounded to float32 (every scale of a TFLite model is one), as a Python float."""
    return float(np.float32(value))


def check_quantization(scale: Any, zero_point: Any, what: str) -> tuple[float, int]:
    """(scale, zero point) of an int8 tensor, checked: a positive finite float32 scale and a
    zero point inside int8 (TFLite's converter never makes others)."""
    scale = f32(scale)
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"{what}: the scale of an int8 tensor must be positive, got {scale}")
    if int(zero_point) != zero_point or not INT8_MIN <= int(zero_point) <= INT8_MAX:
        raise ValueError(
            f"{what}: the zero point of an int8 tensor must lie in [-128, 127], got {zero_point}"
        )
    return scale, int(zero_point)


def quantize_value(scale: float, zero_point: int, value: float) -> int:
    """The quantized value of `value` as TFLite prepares activation bounds: round(value /
    scale) in float32, plus the zero point."""
    return zero_point + int(round_half_away(f32(np.float32(value) / np.float32(scale))))


def activation_range(activation: str, scale: float, zero_point: int) -> tuple[int, int]:
    """The int8 bounds of a fused activation (CalculateActivationRangeQuantized)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown fused activation {activation!r}; tfc knows {ACTIVATIONS}")
    lo, hi = INT8_MIN, INT8_MAX
    if activation == "RELU":
        lo = max(lo, quantize_value(scale, zero_point, 0.0))
    elif activation == "RELU6":
        lo = max(lo, quantize_value(scale, zero_point, 0.0))
        hi = min(hi, quantize_value(scale, zero_point, 6.0))
    elif activation == "RELU_N1_TO_1":
        lo = max(lo, quantize_value(scale, zero_point, -1.0))
        hi = min(hi, quantize_value(scale, zero_point, 1.0))
    return lo, hi


def _quantization_attrs(attrs: dict, prefix: str = "") -> tuple[float, int]:
    return f32(attrs[f"{prefix}scale"]), int(attrs[f"{prefix}zero_point"])


def _clamp8(values: np.ndarray, lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    return np.clip(values, lo, hi).astype(np.int8)


# -- Int8Quantize(float32) -> int8 -----------------------------------------------------------------
def _quantize_reference(attrs: dict, x: np.ndarray) -> np.ndarray:
    scale, zero_point = _quantization_attrs(attrs)
    with np.errstate(all="ignore"):
        v = (x.astype(np.float32) / np.float32(scale)).astype(np.float64)
    rounded = np.where(v >= 0, np.floor(np.abs(v) + 0.5), -np.floor(np.abs(v) + 0.5))
    # NaN and values beyond int32 convert to INT32_MIN, as x86's conversion does in TFLite
    inside = np.isfinite(rounded) & (rounded >= -(2.0**31)) & (rounded < 2.0**31)
    q = np.where(inside, np.nan_to_num(rounded), -(2.0**31)).astype(np.int64)
    return _clamp8(wrap32(q + zero_point))


register_elementwise(
    "Int8Quantize",
    _quantize_reference,
    {"float32": "tfc_q8_quantize({0}, {scale}, {zero_point})"},
    out=_dt.int8,
    params=lambda attrs, dtype: {
        "scale": c_literal(_quantization_attrs(attrs)[0], _dt.float32),
        "zero_point": str(_quantization_attrs(attrs)[1]),
    },
    differentiable=False,
)


# -- Int8Dequantize(int8) -> float32 ---------------------------------------------------------------
def _dequantize_reference(attrs: dict, q: np.ndarray) -> np.ndarray:
    scale, zero_point = _quantization_attrs(attrs)
    return (np.float64(scale) * (q.astype(np.int64) - zero_point)).astype(np.float32)


register_elementwise(
    "Int8Dequantize",
    _dequantize_reference,
    {"int8": "tfc_q8_dequantize({0}, {scale}, {zero_point})"},
    out=_dt.float32,
    params=lambda attrs, dtype: {
        "scale": c_literal(_quantization_attrs(attrs)[0], _dt.float32),
        "zero_point": str(_quantization_attrs(attrs)[1]),
    },
    differentiable=False,
)


# -- Int8Requantize(int8) -> int8, Int8Relu(int8) -> int8 ------------------------------------------
def requantize_params(attrs: dict, relu: bool) -> dict:
    """The multiplier, shift and bounds of an int8 -> int8 op. QUANTIZE divides the scales in
    double; RELU-like ops divide them in float32 and clamp to their activation's range, their
    bounds rounded from float32 quotients as TFLite's QuantizedReluX does."""
    in_scale, in_zero = _quantization_attrs(attrs, "input_")
    out_scale, out_zero = _quantization_attrs(attrs, "output_")
    if relu:
        multiplier, shift = quantize_multiplier(f32(np.float32(in_scale) / np.float32(out_scale)))
        bounds = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
        low, high = bounds[attrs["activation"]]
        lo = max(INT8_MIN, quantize_value(out_scale, out_zero, low))
        hi = INT8_MAX if high is None else min(INT8_MAX, quantize_value(out_scale, out_zero, high))
    else:
        multiplier, shift = quantize_multiplier(in_scale / out_scale)
        lo, hi = INT8_MIN, INT8_MAX
    return {
        "in_zero": in_zero,
        "multiplier": multiplier,
        "shift": shift,
        "out_zero": out_zero,
        "lo": lo,
        "hi": hi,
    }


def _requantize_reference(relu: bool) -> Callable[..., np.ndarray]:
    def reference(attrs: dict, x: np.ndarray) -> np.ndarray:
        p = requantize_params(attrs, relu)
        scaled = multiply_by_quantized_multiplier(
            x.astype(np.int64) - p["in_zero"], p["multiplier"], p["shift"]
        )
        return _clamp8(scaled + p["out_zero"], p["lo"], p["hi"])

    return reference


_REQUANTIZE = "tfc_q8_requantize({0}, {in_zero}, {multiplier}, {shift}, {out_zero}, {lo}, {hi})"
for _op_type, _relu in (("Int8Requantize", False), ("Int8Relu", True)):
    register_elementwise(
        _op_type,
        _requantize_reference(_relu),
        {"int8": _REQUANTIZE},
        params=lambda attrs, dtype, relu=_relu: {
            k: str(v) for k, v in requantize_params(attrs, relu).items()
        },
        differentiable=False,
    )


# -- Int8Add(int8, int8), Int8Mul(int8, int8) ------------------------------------------------------
def add_params(attrs: dict) -> dict:
    """ADD's multipliers: each input rescaled to twice the larger input scale with 20 bits of
    headroom, the sum rescaled to the output (TFLite's PrepareGeneralSubOp/Add)."""
    (scale_a, scale_b), (zero_a, zero_b) = attrs["input_scales"], attrs["input_zero_points"]
    scale_a, scale_b = f32(scale_a), f32(scale_b)
    out_scale, out_zero = _quantization_attrs(attrs, "output_")
    twice_max = 2 * max(scale_a, scale_b)
    m_a, s_a = quantize_multiplier(scale_a / twice_max)
    m_b, s_b = quantize_multiplier(scale_b / twice_max)
    m_out, s_out = quantize_multiplier(twice_max / ((1 << 20) * out_scale))
    lo, hi = activation_range(attrs.get("activation", "NONE"), out_scale, out_zero)
    return {
        "zero_a": int(zero_a),
        "m_a": m_a,
        "s_a": s_a,
        "zero_b": int(zero_b),
        "m_b": m_b,
        "s_b": s_b,
        "m_out": m_out,
        "s_out": s_out,
        "out_zero": out_zero,
        "lo": lo,
        "hi": hi,
    }


def _add_reference(attrs: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    p = add_params(attrs)
    sa = multiply_by_quantized_multiplier(
        (a.astype(np.int64) - p["zero_a"]) << 20, p["m_a"], p["s_a"]
    )
    sb = multiply_by_quantized_multiplier(
        (b.astype(np.int64) - p["zero_b"]) << 20, p["m_b"], p["s_b"]
    )
    out = multiply_by_quantized_multiplier(wrap32(sa + sb), p["m_out"], p["s_out"])
    return _clamp8(out + p["out_zero"], p["lo"], p["hi"])


register_elementwise(
    "Int8Add",
    _add_reference,
    {
        "int8": "tfc_q8_add({0}, {1}, {zero_a}, {m_a}, {s_a}, {zero_b}, {m_b}, {s_b}, {m_out}, "
        "{s_out}, {out_zero}, {lo}, {hi})"
    },  # fmt: skip
    params=lambda attrs, dtype: {k: str(v) for k, v in add_params(attrs).items()},
    differentiable=False,
)


def mul_params(attrs: dict) -> dict:
    """MUL's multiplier: the product of the input scales over the output's, in double."""
    (scale_a, scale_b), (zero_a, zero_b) = attrs["input_scales"], attrs["input_zero_points"]
    out_scale, out_zero = _quantization_attrs(attrs, "output_")
    multiplier, shift = quantize_multiplier(f32(scale_a) * f32(scale_b) / out_scale)
    lo, hi = activation_range(attrs.get("activation", "NONE"), out_scale, out_zero)
    return {
        "zero_a": int(zero_a),
        "zero_b": int(zero_b),
        "multiplier": multiplier,
        "shift": shift,
        "out_zero": out_zero,
        "lo": lo,
        "hi": hi,
    }


def _mul_reference(attrs: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    p = mul_params(attrs)
    product = (a.astype(np.int64) - p["zero_a"]) * (b.astype(np.int64) - p["zero_b"])
    out = multiply_by_quantized_multiplier(product, p["multiplier"], p["shift"])
    return _clamp8(out + p["out_zero"], p["lo"], p["hi"])


register_elementwise(
    "Int8Mul",
    _mul_reference,
    {
        "int8": "tfc_q8_mul({0}, {1}, {zero_a}, {zero_b}, {multiplier}, {shift}, {out_zero}, "
        "{lo}, {hi})"
    },  # fmt: skip
    params=lambda attrs, dtype: {k: str(v) for k, v in mul_params(attrs).items()},
    differentiable=False,
)


# -- Int8Lookup(int8) -> int8: a table of 256 values -----------------------------------------------
def _table_literal(attrs: dict, dtype: _dt.DType) -> dict:
    """The table as a C string literal of octal escapes (each exactly three digits, so no
    escape runs into the next), indexed by the value's byte: the one table the C and CUDA
    expressions and every fused loop holding the op read, with no buffer of its own."""
    table = np.asarray(attrs["table"], np.int64)
    by_byte = np.concatenate([table[128:], table[:128]])  # byte b is the value (int8_t)b
    escapes = "".join(f"\\{int(v) & 0xFF:03o}" for v in by_byte)
    return {"table": f'"{escapes}"'}


def _lookup_reference(attrs: dict, x: np.ndarray) -> np.ndarray:
    table = np.asarray(attrs["table"], np.int64)
    return table[x.astype(np.int64) + 128].astype(np.int8)


register_elementwise(
    "Int8Lookup",
    _lookup_reference,
    {"int8": "((int8_t)({table})[(uint8_t)({0})])"},
    params=_table_literal,
    differentiable=False,
)


def _libm_function(name: str) -> Callable[[float], float] | None:
    """The C library's float function `name` (expf, tanhf), which TFLite's interpreter calls
    when it fills its tables; None where no C library can be loaded."""
    path = ctypes.util.find_library("m") or ctypes.util.find_library("c")
    if path is None:
        return None
    try:
        function = getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_float, [ctypes.c_float]
    return function


_EXPF = _libm_function("expf")
_TANHF = _libm_function("tanhf")


def _expf(x: np.float32) -> np.float32:
    # without a C library, the correctly rounded value (what glibc's expf gives but in rare
    # ties of its last bit)
    return np.float32(_EXPF(float(x)) if _EXPF else math.exp(float(x)))


def _tanhf(x: np.float32) -> np.float32:
    return np.float32(_TANHF(float(x)) if _TANHF else math.tanh(float(x)))


def _sigmoid(x: np.float32) -> np.float32:
    return np.float32(np.float32(1.0) / (np.float32(1.0) + _expf(np.float32(-x))))


LOOKUP_FUNCTIONS: dict[str, Callable[[np.float32], np.float32]] = {
    "LOGISTIC": _sigmoid,
    "TANH": _tanhf,
}


def lookup_table(
    function: str,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> list[int]:
    """TFLite's LUTPopulate for int8: for each value q, `function` of the dequantized value in
    float32, divided by the output scale (as a product with its float32 reciprocal), rounded
    and offset by the output zero point, clamped. Entry q + 128 holds q's."""
    fn = LOOKUP_FUNCTIONS[function]
    inverse = np.float32(1.0) / np.float32(output_scale)
    table = []
    with np.errstate(all="ignore"):
        for q in range(INT8_MIN, INT8_MAX + 1):
            dequantized = np.float32(input_scale) * np.float32(q - input_zero_point)
            rescaled = round_half_away(float(np.float32(fn(dequantized) * inverse)))
            value = int(rescaled) + output_zero_point if math.isfinite(rescaled) else INT8_MIN
            table.append(min(max(value, INT8_MIN), INT8_MAX))
    return table


# -- frontends (tfc.tflite builds these) ----------------------------------------------------------
def _quantization(scale: float, zero_point: int, prefix: str) -> dict:
    scale, zero_point = check_quantization(scale, zero_point, f"{prefix or 'the'} tensor")
    return {f"{prefix}scale": scale, f"{prefix}zero_point": zero_point}


def int8_quantize(x: Tensor, scale: float, zero_point: int, name: str | None = None) -> Tensor:
    """float32 `x` quantized to int8 (TFLite's QUANTIZE)."""
    attrs = _quantization(scale, zero_point, "")
    return apply_op("Int8Quantize", [x], attrs, name=name or "Int8Quantize").outputs[0]


def int8_dequantize(q: Tensor, scale: float, zero_point: int, name: str | None = None) -> Tensor:
    """int8 `q` as float32 values (TFLite's DEQUANTIZE)."""
    attrs = _quantization(scale, zero_point, "")
    return apply_op("Int8Dequantize", [q], attrs, name=name or "Int8Dequantize").outputs[0]


def int8_requantize(
    q: Tensor, input_quantization: Sequence, output_quantization: Sequence, name: str | None = None
) -> Tensor:
    """int8 `q` of (scale, zero point) `input_quantization` in `output_quantization`."""
    attrs = _quantization(*input_quantization, "input_") | _quantization(
        *output_quantization, "output_"
    )
    return apply_op("Int8Requantize", [q], attrs, name=name or "Int8Requantize").outputs[0]


def int8_relu(
    q: Tensor,
    activation: str,
    input_quantization: Sequence,
    output_quantization: Sequence,
    name: str | None = None,
) -> Tensor:
    """RELU, RELU6 or RELU_N1_TO_1 of int8 `q` (`activation`), requantized."""
    if activation not in ACTIVATIONS[1:]:
        raise ValueError(
            f"Int8Relu: activation must be one of {ACTIVATIONS[1:]}, got {activation!r}"
        )
    attrs = _quantization(*input_quantization, "input_") | _quantization(
        *output_quantization, "output_"
    )
    attrs["activation"] = activation
    return apply_op("Int8Relu", [q], attrs, name=name or "Int8Relu").outputs[0]


def _binary_attrs(quantizations: Sequence[Sequence], output: Sequence, activation: str) -> dict:
    (sa, za), (sb, zb) = (check_quantization(*q, "an input") for q in quantizations)
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown fused activation {activation!r}; tfc knows {ACTIVATIONS}")
    attrs = {"input_scales": [sa, sb], "input_zero_points": [za, zb], "activation": activation}
    return attrs | _quantization(*output, "output_")


def int8_add(
    a: Tensor,
    b: Tensor,
    input_quantizations: Sequence[Sequence],
    output_quantization: Sequence,
    activation: str = "NONE",
    name: str | None = None,
) -> Tensor:
    """a + b of int8 tensors (TFLite's ADD), broadcast as NumPy does."""
    attrs = _binary_attrs(input_quantizations, output_quantization, activation)
    return apply_op("Int8Add", [a, b], attrs, name=name or "Int8Add").outputs[0]


def int8_mul(
    a: Tensor,
    b: Tensor,
    input_quantizations: Sequence[Sequence],
    output_quantization: Sequence,
    activation: str = "NONE",
    name: str | None = None,
) -> Tensor:
    """a * b of int8 tensors (TFLite's MUL), broadcast as NumPy does."""
    attrs = _binary_attrs(input_quantizations, output_quantization, activation)
    return apply_op("Int8Mul", [a, b], attrs, name=name or "Int8Mul").outputs[0]


def int8_lookup(
    q: Tensor,
    function: str,
    input_quantization: Sequence,
    output_quantization: Sequence,
    name: str | None = None,
) -> Tensor:
    """LOGISTIC or TANH (`function`) of int8 `q`, through TFLite's table of 256 values."""
    if function not in LOOKUP_FUNCTIONS:
        raise ValueError(
            f"Int8Lookup: function must be one of {sorted(LOOKUP_FUNCTIONS)}, got {function!r}"
        )
    in_scale, in_zero = check_quantization(*input_quantization, "the input")
    out_scale, out_zero = check_quantization(*output_quantization, "the output")
    table = lookup_table(function, in_scale, in_zero, out_scale, out_zero)
    attrs = {"table": table, "function": function}
    return apply_op("Int8Lookup", [q], attrs, name=name or function.title()).outputs[0]
