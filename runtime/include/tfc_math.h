/* Scalar helpers used by the element-wise expression table (the c_expr entries of tfc/ops).
 * Integer arithmetic wraps (two's complement, as TensorFlow behaves) instead of being
 * undefined behaviour; float-to-int casts saturate to the x86 result for out-of-range values. */
#ifndef TFC_MATH_H
#define TFC_MATH_H

#include "tfc_dtypes.h"
#include "tfc_hd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The accumulator of float32 sums: double, the precision of the NumPy reference; float in an
 * embedded build for a target without double-precision hardware (a Cortex-M4's FPU is single
 * precision: every double operation would call libgcc, and link its soft double). Define
 * TFC_SUM_F32 to choose. */
#ifndef TFC_SUM_F32
#if defined(TFC_EMBED) && (defined(__SOFTFP__) || (defined(__ARM_FP) && !(__ARM_FP & 8)) || \
                           (defined(__riscv) && (!defined(__riscv_flen) || __riscv_flen < 64)))
#define TFC_SUM_F32 float
#else
#define TFC_SUM_F32 double
#endif
#endif
typedef TFC_SUM_F32 tfc_sum_f32;

#define TFC_INT_HELPERS(tag, T, U, TMIN)                                                    \
    static inline TFC_HD T tfc_add_##tag(T a, T b) { return (T)((U)a + (U)b); }                   \
    static inline TFC_HD T tfc_sub_##tag(T a, T b) { return (T)((U)a - (U)b); }                   \
    static inline TFC_HD T tfc_mul_##tag(T a, T b) { return (T)((U)a * (U)b); }                   \
    static inline TFC_HD T tfc_neg_##tag(T a) { return (T)(0u - (U)a); }                          \
    static inline TFC_HD T tfc_abs_##tag(T a) { return a < 0 ? tfc_neg_##tag(a) : a; }            \
    static inline TFC_HD T tfc_square_##tag(T a) { return tfc_mul_##tag(a, a); }                  \
    /* floor division: rounds toward -inf, like Python's // and tf.math.floordiv */         \
    static inline TFC_HD T tfc_floordiv_##tag(T a, T b) {                                          \
        if (b == -1) return tfc_neg_##tag(a);                                               \
        T q = (T)(a / b);                                                                   \
        return (q * b != a && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;                       \
    }                                                                                       \
    /* floor modulo: the result has the sign of the divisor, like Python's % */             \
    static inline TFC_HD T tfc_floormod_##tag(T a, T b) {                                          \
        if (b == -1) return 0;                                                              \
        T r = (T)(a % b);                                                                   \
        return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;                           \
    }                                                                                       \
    static inline TFC_HD T tfc_truncdiv_##tag(T a, T b) { return b == -1 ? tfc_neg_##tag(a) : (T)(a / b); } \
    /* C's %: the sign of the dividend, like tf.truncatemod (INT_MIN % -1 would trap) */     \
    static inline TFC_HD T tfc_truncmod_##tag(T a, T b) { return b == -1 ? 0 : (T)(a % b); }     \
    static inline TFC_HD T tfc_pow_##tag(T base, T e) {                                            \
        U result = 1, b = (U)base;                                                          \
        while (e > 0) {                                                                     \
            if (e & 1) result *= b;                                                         \
            b *= b;                                                                         \
            e >>= 1;                                                                        \
        }                                                                                   \
        return (T)result;                                                                   \
    }                                                                                       \
    static inline TFC_HD T tfc_sign_##tag(T a) { return (T)((a > 0) - (a < 0)); }              \
    /* tf.bitwise's shifts: the amount clamped to [0, bits - 1], as TF's kernels do */       \
    static inline TFC_HD T tfc_shl_##tag(T a, T n) {                                               \
        const int bits = (int)(8 * sizeof(T)), k = n < 0 ? 0 : (n >= bits ? bits - 1 : (int)n); \
        return (T)((U)a << k);                                                              \
    }                                                                                       \
    static inline TFC_HD T tfc_shr_##tag(T a, T n) {                                               \
        const int bits = (int)(8 * sizeof(T)), k = n < 0 ? 0 : (n >= bits ? bits - 1 : (int)n); \
        return (T)(a >> k);                                                                 \
    }

TFC_INT_HELPERS(i32, int32_t, uint32_t, INT32_MIN)
TFC_INT_HELPERS(i64, int64_t, uint64_t, INT64_MIN)
/* the narrow ones compute in uint32_t: C promotes them to int, where a product can overflow */
TFC_INT_HELPERS(i8, int8_t, uint32_t, INT8_MIN)
TFC_INT_HELPERS(i16, int16_t, uint32_t, INT16_MIN)

/* unsigned integers: division rounds toward zero = toward -inf; W holds a product */
#define TFC_UINT_HELPERS(tag, T, W)                                                         \
    static inline TFC_HD T tfc_add_##tag(T a, T b) { return (T)((W)a + (W)b); }                   \
    static inline TFC_HD T tfc_sub_##tag(T a, T b) { return (T)((W)a - (W)b); }                   \
    static inline TFC_HD T tfc_mul_##tag(T a, T b) { return (T)((W)a * (W)b); }                   \
    static inline TFC_HD T tfc_neg_##tag(T a) { return (T)(0u - (W)a); }                          \
    static inline TFC_HD T tfc_abs_##tag(T a) { return a; }                                       \
    static inline TFC_HD T tfc_square_##tag(T a) { return tfc_mul_##tag(a, a); }                  \
    static inline TFC_HD T tfc_floordiv_##tag(T a, T b) { return (T)(a / b); }                    \
    static inline TFC_HD T tfc_floormod_##tag(T a, T b) { return (T)(a % b); }                    \
    static inline TFC_HD T tfc_truncdiv_##tag(T a, T b) { return (T)(a / b); }                    \
    static inline TFC_HD T tfc_truncmod_##tag(T a, T b) { return (T)(a % b); }                    \
    static inline TFC_HD T tfc_pow_##tag(T base, T e) {                                            \
        W result = 1, b = (W)base;                                                          \
        while (e > 0) {                                                                     \
            if (e & 1) result *= b;                                                         \
            b *= b;                                                                         \
            e >>= 1;                                                                        \
        }                                                                                   \
        return (T)result;                                                                   \
    }                                                                                       \
    static inline TFC_HD T tfc_sign_##tag(T a) { return (T)(a > 0); }                           \
    static inline TFC_HD T tfc_shl_##tag(T a, T n) {                                               \
        const int bits = (int)(8 * sizeof(T));                                              \
        return (T)((W)a << (n >= (T)bits ? bits - 1 : (int)n));                             \
    }                                                                                       \
    static inline TFC_HD T tfc_shr_##tag(T a, T n) {                                               \
        const int bits = (int)(8 * sizeof(T));                                              \
        return (T)(a >> (n >= (T)bits ? bits - 1 : (int)n));                                \
    }

TFC_UINT_HELPERS(u8, uint8_t, uint32_t)
TFC_UINT_HELPERS(u16, uint16_t, uint32_t)
TFC_UINT_HELPERS(u32, uint32_t, uint32_t)
TFC_UINT_HELPERS(u64, uint64_t, uint64_t)

/* float -> int: in range truncates toward zero; NaN and out of range give the minimum, which
 * is what x86's cvtt instructions (and NumPy on x86) produce. */
static inline TFC_HD int32_t tfc_f2i32(double x) {
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
static inline TFC_HD int64_t tfc_f2i64(double x) {
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}
/* The other integers as TensorFlow's vectorized CPU kernels convert (C++ leaves out-of-range
 * values undefined; TF's Eigen loops give these for every element but a loop's last few): the
 * 8 and 16-bit types clamp the int32 conversion to their range (so NaN and values beyond
 * int32 give their minimum); the unsigned 32 and 64-bit ones convert x >= 2^31 (2^63) as
 * x - 2^31 (2^63) with the top bit set, NaN and values out of range giving the top bit. */
static inline TFC_HD int32_t tfc_clamp_i32(int32_t v, int32_t low, int32_t high) {
    return v < low ? low : (v > high ? high : v);
}
static inline TFC_HD int8_t tfc_f2i8(double x) { return (int8_t)tfc_clamp_i32(tfc_f2i32(x), -128, 127); }
static inline TFC_HD int16_t tfc_f2i16(double x) {
    return (int16_t)tfc_clamp_i32(tfc_f2i32(x), -32768, 32767);
}
static inline TFC_HD uint8_t tfc_f2u8(double x) { return (uint8_t)tfc_clamp_i32(tfc_f2i32(x), 0, 255); }
static inline TFC_HD uint16_t tfc_f2u16(double x) {
    return (uint16_t)tfc_clamp_i32(tfc_f2i32(x), 0, 65535);
}
static inline TFC_HD uint32_t tfc_f2u32(double x) {
    const int32_t low = tfc_f2i32(x);
    return low < 0 ? (uint32_t)low | (uint32_t)tfc_f2i32(x - 2147483648.0) : (uint32_t)low;
}
static inline TFC_HD uint64_t tfc_f2u64(double x) {
    const int64_t low = tfc_f2i64(x);
    return low < 0 ? (uint64_t)low | (uint64_t)tfc_f2i64(x - 9223372036854775808.0) : (uint64_t)low;
}

#define TFC_FLOAT_HELPERS(tag, T, sfx)                                                      \
    static inline TFC_HD T tfc_softplus_##tag(T x) {                                               \
        return x > 0 ? x + log1p##sfx(exp##sfx(-x)) : log1p##sfx(exp##sfx(x));              \
    }                                                                                       \
    static inline TFC_HD T tfc_floormod_##tag(T a, T b) {                                          \
        T r = fmod##sfx(a, b);                                                              \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                                \
    }                                                                                       \
    static inline TFC_HD T tfc_floordiv_##tag(T a, T b) { return floor##sfx(a / b); }              \
    static inline TFC_HD T tfc_sign_##tag(T x) { return x > 0 ? (T)1 : (x < 0 ? (T)-1 : x); }     \
    static inline TFC_HD T tfc_max_##tag(T a, T b) { return (a > b || a != a) ? a : b; }          \
    static inline TFC_HD T tfc_min_##tag(T a, T b) { return (a < b || a != a) ? a : b; }          \
    /* round half to even, as tf.round and numpy.round do */                                \
    static inline TFC_HD T tfc_round_##tag(T x) { return nearbyint##sfx(x); }

TFC_FLOAT_HELPERS(f32, float, f)
TFC_FLOAT_HELPERS(f64, double, )

static inline TFC_HD double tfc_sigmoid_f64(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    const double e = exp(x);
    return e / (1.0 + e);
}

/* 2^n for -126 <= n <= 127, from its bits */
static inline TFC_HD float tfc_pow2i_f32(int32_t n) {
    const uint32_t bits = (uint32_t)(n + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The logistic function of a float from e = exp(-|x|): 1 / (1 + e), or e / (1 + e) below 0.
 * exp is Cephes' expf (a degree-5 polynomial on x - n ln2, scaled by 2^n in two steps, so that
 * results down to the subnormals keep their bits), inline and branch-free: within 2.9 ulp of
 * the logistic function (libm's expf gives 2.5), and loops of it vectorize, where three expf
 * calls an element took a tenth of an LSTM step. */
static inline TFC_HD float tfc_sigmoid_f32(float x) {
    float t = x > 0 ? -x : x;
    t = t >= -104.0f ? t : -104.0f; /* sigmoid(-104) rounds to 0; NaN: the result is x */
    const float n = (t * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(t/ln2) */
    float r = t - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t whole = (int32_t)n, half = whole >> 1;
    const float e = p * tfc_pow2i_f32(half) * tfc_pow2i_f32(whole - half);
    const float s = 1.0f / (1.0f + e);
    const float y = x >= 0 ? s : e * s;
    return x != x ? x : y;
}

/* tanh of a float as Eigen (so TensorFlow's CPU kernels) computes it: a 13/6 rational function
 * on x clamped to [-7.9053, 7.9053] (where it reaches +-1), x itself below 4e-4 in magnitude
 * (and for NaN). Within 2.9e-7 relative (5 ulp) of tanh over every float; branch-free, so loops
 * of it vectorize, where libm's tanhf (through expm1f) costs ~9 ns an element: in an LSTM step
 * it took a fifth of the time. */
static inline TFC_HD float tfc_tanh_f32(float x) {
    const float bound = 7.90531110763549805f;
    const float c = x > bound ? bound : (x < -bound ? -bound : x);
    const float c2 = c * c;
    float p = -2.76076847742355e-16f;
    p = p * c2 + 2.00018790482477e-13f;
    p = p * c2 + -8.60467152213735e-11f;
    p = p * c2 + 5.12229709037114e-08f;
    p = p * c2 + 1.48572235717979e-05f;
    p = p * c2 + 6.37261928875436e-04f;
    p = p * c2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * c2 + 1.18534705686654e-04f;
    q = q * c2 + 2.26843463243900e-03f;
    q = q * c2 + 4.89352518554385e-03f;
    return (x > 0.0004f || x < -0.0004f) ? c * p / q : x;
}
static inline TFC_HD double tfc_tanh_f64(double x) { return tanh(x); }

/* Special functions libm lacks, in double (the float versions round the double result), as
 * TensorFlow defines them (Eigen's special functions): NaN at digamma's poles, Hurwitz zeta for
 * s > 1 (and q < 0 only for integer s), polygamma for integer orders n >= 0. */
#define TFC_PI_D 3.14159265358979323846

/* digamma: the recurrence up to x >= 10, then the asymptotic series (error < 1e-16 there);
 * x <= 0 by reflection, digamma(1 - x) - pi / tan(pi x) */
static inline TFC_HD double tfc_digamma_d(double x) {
    if (x != x) return x;
    double result = 0.0;
    if (x <= 0.0) {
        if (x == floor(x)) return NAN;
        result = -TFC_PI_D / tan(TFC_PI_D * (x - floor(x))); /* tan has period pi */
        x = 1.0 - x;
    }
    while (x < 10.0) {
        result -= 1.0 / x;
        x += 1.0;
    }
    const double inv2 = 1.0 / (x * x);
    const double series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240
        - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12))))));
    return result + log(x) - 0.5 / x - series;
}

/* Hurwitz zeta(s, q) = sum over k >= 0 of (q + k)^-s: Euler-Maclaurin summation, the terms up
 * to q + n >= 9 summed, the rest as the integral and 12 Bernoulli corrections */
static inline TFC_HD double tfc_zeta_d(double s, double q) {
    /* B(2j) / (2j)! for j = 1..12 */
    const double bernoulli[12] = {
        8.3333333333333333333e-02, -1.3888888888888888889e-03, 3.3068783068783068783e-05,
        -8.2671957671957671958e-07, 2.0876756987868098979e-08, -5.2841901386874931848e-10,
        1.3382536530684678833e-11, -3.3896802963225828668e-13, 8.5860620562778445641e-15,
        -2.1748686985580618730e-16, 5.5090028283602295152e-18, -1.3954464685812523341e-19};
    if (s != s || q != q) return s + q;
    if (s == 1.0) return INFINITY;
    if (s < 1.0) return NAN;
    if (q <= 0.0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s)) return NAN; /* (q + k)^-s of a negative base */
    }
    double sum = pow(q, -s), a = q, b = 0.0;
    int k = 0;
    while (k < 9 || a <= 9.0) {
        ++k;
        a += 1.0;
        b = pow(a, -s);
        sum += b;
        if (fabs(b / sum) < 1e-17) return sum;
    }
    sum += b * a / (s - 1.0) - 0.5 * b; /* the tail's integral, half the first tail term */
    double rising = 1.0, power = b, factor = s; /* s (s + 1) ... (s + 2j - 2), a^(-s - 2j + 1) */
    for (int j = 0; j < 12; ++j) {
        rising *= factor;
        power /= a;
        const double term = bernoulli[j] * rising * power;
        sum += term;
        if (fabs(term / sum) < 1e-17) break;
        rising *= factor + 1.0;
        power /= a;
        factor += 2.0;
    }
    return sum;
}

/* polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x); NaN unless n is a
 * non-negative integer */
static inline TFC_HD double tfc_polygamma_d(double n, double x) {
    if (n != n || x != x) return n + x;
    if (n < 0.0 || n != floor(n)) return NAN;
    if (n == 0.0) return tfc_digamma_d(x);
    double factorial = 1.0;
    for (double k = 2.0; k <= n && factorial < INFINITY; k += 1.0) factorial *= k;
    const double sign = fmod(n, 2.0) == 0.0 ? -1.0 : 1.0;
    return sign * factorial * tfc_zeta_d(n + 1.0, x);
}

static inline TFC_HD double tfc_digamma_f64(double x) { return tfc_digamma_d(x); }
static inline TFC_HD float tfc_digamma_f32(float x) { return (float)tfc_digamma_d(x); }
static inline TFC_HD double tfc_zeta_f64(double s, double q) { return tfc_zeta_d(s, q); }
static inline TFC_HD float tfc_zeta_f32(float s, float q) { return (float)tfc_zeta_d(s, q); }
static inline TFC_HD double tfc_polygamma_f64(double n, double x) { return tfc_polygamma_d(n, x); }
static inline TFC_HD float tfc_polygamma_f32(float n, float x) { return (float)tfc_polygamma_d(n, x); }

#endif /* TFC_MATH_H */
