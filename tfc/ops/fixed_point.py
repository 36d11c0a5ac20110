"""TFLite's integer arithmetic in NumPy: fixed-point multipliers, rounding shifts, gemmlowp's exp.

The int8 ops of tfc/ops/quantized.py compute as TensorFlow Lite's reference kernels do, bit for
bit; this module is that arithmetic, written from the documented behaviour of TFLite's
`quantization_util` and `common.h` and of gemmlowp's `fixedpoint.h`, and it is the
specification the C helpers of runtime/include/tfc_quant.h follow. Values are NumPy int64
arrays holding int32 values: where the C++ code wraps around (int32 sums and products whose
overflow is undefined but wraps on every compiler TFLite is built with), `wrap32` does so too.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def wrap32(x: np.ndarray) -> np.ndarray:
    """int64 values reduced to int32 two's complement, as int32 arithmetic wraps."""
    x = np.asarray(x, np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def round_half_away(x: float) -> float:
    """TfLiteRound (std::round): halves away from zero."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


# -- multipliers ---------------------------------------------------------------------------------
def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: `real` as (q, shift), q a Q0.31 significand in [2^30, 2^31)
    and real ~= q * 2^(shift - 31); multipliers below 2^-31 flush to (0, 0)."""
    if real == 0.0:
        return 0, 0
    significand, shift = math.frexp(real)
    q = int(round_half_away(significand * (1 << 31)))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def calculate_input_radius(integer_bits: int, left_shift: int, total_bits: int = 31) -> int:
    """CalculateInputRadius: the largest input difference whose rescaled value still fits."""
    rescaled = (
        1.0 * ((1 << integer_bits) - 1) * (1 << (total_bits - integer_bits)) / (1 << left_shift)
    )
    return int(math.floor(rescaled))


# -- gemmlowp's scalar operations, element-wise ----------------------------------------------------
def saturating_rounding_doubling_high_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high 32 bits of 2*a*b, rounded to nearest (ARM's VQRDMULH); INT32_MIN squared
    saturates to INT32_MAX."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    # C++ integer division truncates toward zero
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def rounding_divide_by_pot(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """x / 2^exponent rounded to nearest, halves away from zero (a rounding right shift)."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(
    x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int
) -> np.ndarray:
    """MultiplyByQuantizedMultiplier (double rounding): x * q * 2^(shift - 31)."""
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = wrap32(np.asarray(x, np.int64) * (np.int64(1) << left))
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right)


def saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """x * 2^exponent: a saturating left shift, or a rounding right shift."""
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    shifted = x << exponent
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def _fixed_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return saturating_rounding_doubling_high_mul(a, b)


def _one(integer_bits: int) -> int:
    """FixedPoint<int32, integer_bits>::One() (Q0.31 has no 1: its largest value)."""
    return INT32_MAX if integer_bits == 0 else 1 << (31 - integer_bits)


def _rescale(x: np.ndarray, src_bits: int, dst_bits: int) -> np.ndarray:
    return saturating_rounding_multiply_by_pot(x, src_bits - dst_bits)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    constant_term = 1895147668  # exp(-1/8) in Q0.31
    constant_1_over_3 = 715827883
    x = wrap32(a + (1 << 28))  # a + 1/8
    x2 = _fixed_mul(x, x)
    x3 = _fixed_mul(x2, x)
    x4 = _fixed_mul(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2)
    poly = saturating_rounding_multiply_by_pot(
        wrap32(_fixed_mul(wrap32(x4_over_4 + x3), constant_1_over_3) + x2), -1
    )
    return wrap32(constant_term + _fixed_mul(constant_term, wrap32(x + poly)))


# exp(-2^k) in Q0.31 for k = -2 .. 4, applied for each bit of the input's integer part
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))  # fmt: skip


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp's exp(a) for a <= 0 in Q(integer_bits), as Q0.31."""
    a = np.asarray(a, np.int64)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = wrap32((a & mask) - one_quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        _rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0)
    )
    remainder = wrap32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = 1 << (fractional_bits + exponent)
            result = np.where(remainder & bit, _fixed_mul(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))  # -32
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, _one(0), result)


def _newton_reciprocal_steps(half_denominator: np.ndarray) -> np.ndarray:
    """x ~= 1 / half_denominator in Q2.29 after three Newton-Raphson steps."""
    constant_48_over_17 = 1515870810
    constant_neg_32_over_17 = -1010580540
    x = wrap32(constant_48_over_17 + _fixed_mul(half_denominator, constant_neg_32_over_17))
    one_q2 = _one(2)
    for _ in range(3):
        half_denominator_times_x = _rescale(_fixed_mul(half_denominator, x), 2, 2)
        one_minus = wrap32(one_q2 - half_denominator_times_x)
        x = wrap32(x + _rescale(_fixed_mul(x, one_minus), 4, 2))
    return x


def _rounding_half_sum(a: np.ndarray, b: int) -> np.ndarray:
    total = np.asarray(a, np.int64) + b
    sign = np.where(total >= 0, 1, -1)
    summed = total + sign
    return np.where(summed >= 0, summed // 2, -((-summed) // 2))


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) for a Q0.31 value a in [0, 1), as Q0.31."""
    half_denominator = _rounding_half_sum(a, _one(0))
    x = _newton_reciprocal_steps(half_denominator)
    return _rescale(x, 1, 0)  # ExactMulByPot<-1> makes it Q1.30; Rescale<0>


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """(1 - a) / (1 + a) for a Q0.31 value a in [0, 1), as Q0.31."""
    half_denominator = _rounding_half_sum(a, _one(0))
    x = _newton_reciprocal_steps(half_denominator)
    return _rescale(wrap32(x - _one(2)), 2, 0)


def fixed_logistic(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp::logistic of a Q(integer_bits) value, as Q0.31."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap32(-a))
    result_if_positive = one_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(wrap32(-abs_input), integer_bits)
    )
    result_if_negative = wrap32(_one(0) - result_if_positive)
    result = np.where(positive, result_if_positive, result_if_negative)
    return np.where(a == 0, 1 << 30, result)


def fixed_tanh(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp::tanh of a Q(integer_bits) value, as Q0.31."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))
    # exp of 2n: the same raw value read with one more integer bit (ExactMulByPot<1>)
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap32(-t), t))


def count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """The leading zero bits of x as a uint32 (32 for 0)."""
    u = np.asarray(x, np.int64) & 0xFFFFFFFF
    bits = np.zeros(u.shape, np.int64)
    for k in range(32):
        bits = np.where(u >= (np.int64(1) << k), k + 1, bits)
    return 32 - bits


def get_reciprocal(x: np.ndarray, integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal: 1/x of a positive Q(integer_digits) value as (Q0.31 scale,
    the bits the value had over 1)."""
    x = np.asarray(x, np.int64)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = integer_digits - headroom_plus_one
    shifted = ((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    return one_over_one_plus_x_for_x_in_0_1(wrap32(shifted)), num_bits_over_unit
