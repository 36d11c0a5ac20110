/* Scalar helpers used by the element-wise expression table (the c_expr entries of tfc/ops).
 * Integer arithmetic wraps (two's complement, as TensorFlow behaves) instead of being
 * undefined behaviour; float-to-int casts saturate to the x86 result for out-of-range values. */
#ifndef TFC_MATH_H
#define TFC_MATH_H

#include "tfc_hd.h"

#include <math.h>
#include <stdint.h>

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
    static inline TFC_HD T tfc_pow_##tag(T base, T e) {                                            \
        U result = 1, b = (U)base;                                                          \
        while (e > 0) {                                                                     \
            if (e & 1) result *= b;                                                         \
            b *= b;                                                                         \
            e >>= 1;                                                                        \
        }                                                                                   \
        return (T)result;                                                                   \
    }                                                                                       \
    static inline TFC_HD T tfc_sign_##tag(T a) { return (T)((a > 0) - (a < 0)); }

TFC_INT_HELPERS(i32, int32_t, uint32_t, INT32_MIN)
TFC_INT_HELPERS(i64, int64_t, uint64_t, INT64_MIN)

/* float -> int: in range truncates toward zero; NaN and out of range give the minimum, which
 * is what x86's cvtt instructions (and NumPy on x86) produce. */
static inline TFC_HD int32_t tfc_f2i32(double x) {
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
static inline TFC_HD int64_t tfc_f2i64(double x) {
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}

#define TFC_FLOAT_HELPERS(tag, T, sfx)                                                      \
    static inline TFC_HD T tfc_sigmoid_##tag(T x) {                                                \
        if (x >= 0) return (T)1 / ((T)1 + exp##sfx(-x));                                    \
        T e = exp##sfx(x);                                                                  \
        return e / ((T)1 + e);                                                              \
    }                                                                                       \
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

#endif /* TFC_MATH_H */
