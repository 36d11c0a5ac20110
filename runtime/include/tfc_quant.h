/* TFLite's int8 arithmetic: fixed-point multipliers, rounding shifts, gemmlowp's exp, requantizing.
 *
 * The int8 kernels of tfc/ops/quantized.py and quantized_nn.py compute as TensorFlow Lite's
 * interpreter does, bit for bit; tfc/ops/fixed_point.py is the same arithmetic in NumPy (the
 * specification these follow). int32 sums and products that wrap in TFLite's C++ wrap here too,
 * through uint32_t, so no signed overflow is left undefined. No libm: everything is integer,
 * but for the float quantize/dequantize steps and the double product of fully connected layers. */
#ifndef TFC_QUANT_H
#define TFC_QUANT_H

#include <stdint.h>

#include "tfc_hd.h"

static inline TFC_HD int32_t tfc_q_add32(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline TFC_HD int32_t tfc_q_sub32(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

static inline TFC_HD int32_t tfc_q_clamp(int32_t v, int32_t lo, int32_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* gemmlowp's SaturatingRoundingDoublingHighMul: the high 32 bits of 2ab, rounded */
static inline TFC_HD int32_t tfc_q_srdhm(int32_t a, int32_t b) {
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudged = ab + (ab >= 0 ? (INT64_C(1) << 30) : 1 - (INT64_C(1) << 30));
    return (int32_t)(nudged / (INT64_C(1) << 31)); /* C division truncates, as C++'s */
}

/* gemmlowp's RoundingDivideByPOT: x / 2^e rounded to nearest, halves away from zero */
static inline TFC_HD int32_t tfc_q_rdbpot(int32_t x, int e) {
    const int32_t mask = (int32_t)((INT64_C(1) << e) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (remainder > threshold ? 1 : 0);
}

/* TFLite's MultiplyByQuantizedMultiplier (double rounding): x * m * 2^(shift - 31) */
static inline TFC_HD int32_t tfc_q_mul_by_multiplier(int32_t x, int32_t m, int shift) {
    const int left = shift > 0 ? shift : 0;
    const int right = shift > 0 ? 0 : -shift;
    return tfc_q_rdbpot(tfc_q_srdhm((int32_t)((uint32_t)x << left), m), right);
}

/* an int32 accumulator scaled back to int8: TFLite's requantizing epilogue */
static inline TFC_HD int8_t tfc_q8_requantize_acc(int32_t acc, int32_t m, int shift, int32_t zp,
                                                   int32_t lo, int32_t hi) {
    return (int8_t)tfc_q_clamp(tfc_q_add32(tfc_q_mul_by_multiplier(acc, m, shift), zp), lo, hi);
}

/* round(v) for |v| < 2^52 (halves away from zero, C's round) without libm */
static inline TFC_HD int64_t tfc_q_round_away(double v) {
    int64_t t = (int64_t)v;
    const double frac = v - (double)t; /* exact: |v - t| < 1 */
    if (frac >= 0.5) t += 1;
    else if (frac <= -0.5) t -= 1;
    return t;
}

/* a fully connected layer's accumulator as TFLite's reference kernel scales it: rounded in
 * double, not by a fixed-point multiplier */
static inline TFC_HD int8_t tfc_q8_scale_acc(int32_t acc, double scale, int32_t zp, int32_t lo,
                                              int32_t hi) {
    const int32_t scaled = (int32_t)tfc_q_round_away((double)acc * scale);
    return (int8_t)tfc_q_clamp(tfc_q_add32(scaled, zp), lo, hi);
}

/* QUANTIZE float -> int8: round(x / scale) + zp, clamped; NaN and values beyond int32 convert
 * as x86's cvtss2si does (INT32_MIN), which is what TFLite's interpreter gives there */
static inline TFC_HD int8_t tfc_q8_quantize(float x, float scale, int32_t zp) {
    const float v = x / scale;
    int32_t q = INT32_MIN;
    if (v > -2147483648.0f && v < 2147483648.0f) {
        int64_t t = (int64_t)v;
        const float frac = v - (float)t; /* exact: |v| < 2^31 */
        if (frac >= 0.5f) t += 1;
        else if (frac <= -0.5f) t -= 1;
        if (t >= INT32_MIN && t <= INT32_MAX) q = (int32_t)t;
    }
    return (int8_t)tfc_q_clamp(tfc_q_add32(q, zp), -128, 127);
}

/* DEQUANTIZE int8 -> float: scale * (q - zp), one rounding */
static inline TFC_HD float tfc_q8_dequantize(int8_t q, float scale, int32_t zp) {
    return scale * (float)((int32_t)q - zp);
}

/* int8 -> int8 with another scale and zero point (QUANTIZE of int8, RELU, RELU6) */
static inline TFC_HD int8_t tfc_q8_requantize(int8_t x, int32_t in_zp, int32_t m, int shift,
                                               int32_t out_zp, int32_t lo, int32_t hi) {
    return tfc_q8_requantize_acc((int32_t)x - in_zp, m, shift, out_zp, lo, hi);
}

/* ADD: both operands brought to a common scale with 20 bits of headroom, summed, rescaled */
static inline TFC_HD int8_t tfc_q8_add(int8_t a, int8_t b, int32_t zp_a, int32_t m_a, int s_a,
                                        int32_t zp_b, int32_t m_b, int s_b, int32_t m_out,
                                        int s_out, int32_t zp_out, int32_t lo, int32_t hi) {
    const int32_t sa = tfc_q_mul_by_multiplier(((int32_t)a - zp_a) * (1 << 20), m_a, s_a);
    const int32_t sb = tfc_q_mul_by_multiplier(((int32_t)b - zp_b) * (1 << 20), m_b, s_b);
    return tfc_q8_requantize_acc(tfc_q_add32(sa, sb), m_out, s_out, zp_out, lo, hi);
}

/* MUL: the product of the zero-point-shifted operands, rescaled */
static inline TFC_HD int8_t tfc_q8_mul(int8_t a, int8_t b, int32_t zp_a, int32_t zp_b, int32_t m,
                                        int s, int32_t zp_out, int32_t lo, int32_t hi) {
    return tfc_q8_requantize_acc(((int32_t)a - zp_a) * ((int32_t)b - zp_b), m, s, zp_out, lo, hi);
}

/* -- gemmlowp's fixed-point exp and reciprocal (the int8 softmax) ------------------------------ */
/* x * 2^e with e > 0 saturating, e < 0 rounding */
static inline TFC_HD int32_t tfc_q_mul_pot(int32_t x, int e) {
    if (e == 0) return x;
    if (e < 0) return tfc_q_rdbpot(x, -e);
    const int32_t threshold = (int32_t)((INT64_C(1) << (31 - e)) - 1);
    if (x > threshold) return INT32_MAX;
    if (x < -threshold) return INT32_MIN;
    return (int32_t)((uint32_t)x << e);
}

/* exp(a) for a in [-1/4, 0), Q0.31 in and out */
static inline TFC_HD int32_t tfc_q_exp_quarter(int32_t a) {
    const int32_t constant_term = 1895147668; /* exp(-1/8) */
    const int32_t one_third = 715827883;
    const int32_t x = tfc_q_add32(a, 1 << 28);
    const int32_t x2 = tfc_q_srdhm(x, x);
    const int32_t x3 = tfc_q_srdhm(x2, x);
    const int32_t x4 = tfc_q_srdhm(x2, x2);
    const int32_t x4_over_4 = tfc_q_mul_pot(x4, -2);
    const int32_t poly =
        tfc_q_mul_pot(tfc_q_add32(tfc_q_srdhm(tfc_q_add32(x4_over_4, x3), one_third), x2), -1);
    return tfc_q_add32(constant_term, tfc_q_srdhm(constant_term, tfc_q_add32(x, poly)));
}

/* exp(a) for a <= 0 of `integer_bits` integer bits (at most 6), as Q0.31 */
static inline TFC_HD int32_t tfc_q_exp_negative(int32_t a, int integer_bits) {
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308,
                                      39332535,   720401,     242};
    const int fractional_bits = 31 - integer_bits;
    const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    const int32_t mask = one_quarter - 1;
    const int32_t a_mod = tfc_q_sub32(a & mask, one_quarter);
    int32_t result = tfc_q_exp_quarter(tfc_q_mul_pot(a_mod, integer_bits));
    const int32_t remainder = tfc_q_sub32(a_mod, a);
    for (int k = 0; k < 7; ++k) {
        const int exponent = k - 2;
        if (integer_bits > exponent &&
            (remainder & (int32_t)((uint32_t)1 << (fractional_bits + exponent))))
            result = tfc_q_srdhm(result, barrel[k]);
    }
    if (integer_bits > 5 && a < -((int32_t)1 << (36 - integer_bits))) result = 0;
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + a) for a Q0.31 value a in [0, 1), as Q0.31 (Newton-Raphson, three steps) */
static inline TFC_HD int32_t tfc_q_one_over_one_plus(int32_t a) {
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int64_t halved = (sum + (sum >= 0 ? 1 : -1)) / 2;
    const int32_t half_denominator = (int32_t)halved;
    int32_t x = tfc_q_add32(1515870810, tfc_q_srdhm(half_denominator, -1010580540));
    for (int i = 0; i < 3; ++i) {
        const int32_t one_minus = tfc_q_sub32((int32_t)1 << 29, tfc_q_srdhm(half_denominator, x));
        x = tfc_q_add32(x, tfc_q_mul_pot(tfc_q_srdhm(x, one_minus), 2));
    }
    return tfc_q_mul_pot(x, 1);
}

/* one row of TFLite's int8 softmax (output scale 1/256, zero point -128) */
static inline TFC_HD void tfc_q8_softmax_row(const int8_t *x, int8_t *y, int64_t n, int32_t m,
                                              int shift, int32_t diff_min) {
    int32_t max = -128;
    for (int64_t c = 0; c < n; ++c) max = x[c] > max ? x[c] : max;
    int32_t sum = 0; /* Q12.19 */
    for (int64_t c = 0; c < n; ++c) {
        const int32_t diff = (int32_t)x[c] - max;
        if (diff >= diff_min)
            sum = tfc_q_add32(sum, tfc_q_mul_pot(tfc_q_exp_negative(
                                                     tfc_q_mul_by_multiplier(diff, m, shift), 5),
                                                 -12));
    }
    uint32_t u = (uint32_t)sum;
    int headroom_plus_one = 0;
    while (headroom_plus_one < 32 && !(u & 0x80000000u)) {
        u <<= 1;
        ++headroom_plus_one;
    }
    const int32_t shifted_scale = tfc_q_one_over_one_plus((int32_t)(u - 0x80000000u));
    const int exponent = (12 - headroom_plus_one) + 31 - 8;
    for (int64_t c = 0; c < n; ++c) {
        const int32_t diff = (int32_t)x[c] - max;
        if (diff >= diff_min) {
            const int32_t e = tfc_q_exp_negative(tfc_q_mul_by_multiplier(diff, m, shift), 5);
            const int32_t v = tfc_q_rdbpot(tfc_q_srdhm(shifted_scale, e), exponent) - 128;
            y[c] = (int8_t)tfc_q_clamp(v, -128, 127);
        } else {
            y[c] = -128;
        }
    }
}

/* one row of TFLite's int8 mean: the int32 sum less the zero points, times the multiplier with
 * 1/n folded in */
static inline TFC_HD int8_t tfc_q8_mean_row(const int8_t *x, int64_t n, int32_t in_zero,
                                             int32_t m, int shift, int32_t out_zero) {
    uint32_t sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (uint32_t)(int32_t)x[i];
    const int32_t centred = tfc_q_sub32((int32_t)sum, (int32_t)((uint32_t)in_zero * (uint32_t)n));
    return tfc_q8_requantize_acc(centred, m, shift, out_zero, -128, 127);
}

#endif /* TFC_QUANT_H */
