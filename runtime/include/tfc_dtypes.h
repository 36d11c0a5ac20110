/* The element types C lacks: the 16-bit floats and complex numbers, and their conversions.
 *
 * tfc_f16 (IEEE half) and tfc_bf16 (bfloat16) hold the bits in a struct, so no kernel can do
 * arithmetic on them by accident: kernels load them into float, compute, and round the result
 * back (to nearest, ties to even), as TensorFlow's CPU kernels do. The conversions are
 * Eigen's (what TensorFlow uses), so values round alike: a NaN becomes a quiet NaN of its
 * sign, a float beyond the 16-bit range infinity (half) or the nearest bfloat16 (which has
 * float's range). Complex numbers are a struct of two floats, their parts.
 *
 * Also the one implementation of the expansion of weights the embeddable library stores in
 * 16 bits (tfc compile --weights-dtype, tfc_embed.h). */
#ifndef TFC_DTYPES_H
#define TFC_DTYPES_H

#include "tfc_hd.h"

#include <stdint.h>
#include <string.h>

typedef struct {
    uint16_t bits;
} tfc_f16;

typedef struct {
    uint16_t bits;
} tfc_bf16;

typedef struct {
    float re, im;
} tfc_c64;

typedef struct {
    double re, im;
} tfc_c128;

static inline TFC_HD uint32_t tfc_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline TFC_HD float tfc_f32_of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* half bits -> float, exact (subnormals renormalized by one float subtraction) */
static inline TFC_HD float tfc_half_bits_to_f32(uint16_t h) {
    const uint32_t shifted_exp = 0x7c00u << 13;
    uint32_t u = ((uint32_t)h & 0x7fffu) << 13;
    const uint32_t exp = shifted_exp & u;
    u += (uint32_t)(127 - 15) << 23;
    if (exp == shifted_exp) { /* inf, nan */
        u += (uint32_t)(128 - 16) << 23;
    } else if (exp == 0) { /* zero, subnormal */
        u += 1u << 23;
        u = tfc_f32_bits(tfc_f32_of_bits(u) - tfc_f32_of_bits(113u << 23));
    }
    return tfc_f32_of_bits(u | (((uint32_t)h & 0x8000u) << 16));
}

/* float -> half bits, to nearest, ties to even (a subnormal result by one float addition) */
static inline TFC_HD uint16_t tfc_f32_to_half_bits(float f) {
    uint32_t u = tfc_f32_bits(f);
    const uint32_t sign = u & 0x80000000u;
    uint16_t h;
    u ^= sign;
    if (u >= (uint32_t)(127 + 16) << 23) { /* 2^16 and up, inf, nan */
        h = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 113u << 23) { /* a subnormal half or zero */
        const uint32_t magic = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23;
        u = tfc_f32_bits(tfc_f32_of_bits(u) + tfc_f32_of_bits(magic));
        h = (uint16_t)(u - magic);
    } else {
        const uint32_t odd = (u >> 13) & 1u;
        u += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        h = (uint16_t)(u >> 13);
    }
    return (uint16_t)(h | (sign >> 16));
}

static inline TFC_HD float tfc_bfloat16_bits_to_f32(uint16_t b) {
    return tfc_f32_of_bits((uint32_t)b << 16);
}

static inline TFC_HD uint16_t tfc_f32_to_bfloat16_bits(float f) {
    const uint32_t u = tfc_f32_bits(f);
    if (f != f) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline TFC_HD tfc_f16 tfc_f16_of(uint16_t bits) {
    tfc_f16 h;
    h.bits = bits;
    return h;
}

static inline TFC_HD tfc_bf16 tfc_bf16_of(uint16_t bits) {
    tfc_bf16 b;
    b.bits = bits;
    return b;
}

static inline TFC_HD float tfc_f16_to_f32(tfc_f16 h) { return tfc_half_bits_to_f32(h.bits); }
static inline TFC_HD tfc_f16 tfc_f32_to_f16(float f) { return tfc_f16_of(tfc_f32_to_half_bits(f)); }
static inline TFC_HD float tfc_bf16_to_f32(tfc_bf16 b) { return tfc_bfloat16_bits_to_f32(b.bits); }
static inline TFC_HD tfc_bf16 tfc_f32_to_bf16(float f) {
    return tfc_bf16_of(tfc_f32_to_bfloat16_bits(f));
}

static inline TFC_HD tfc_c64 tfc_c64_of(float re, float im) {
    tfc_c64 z;
    z.re = re;
    z.im = im;
    return z;
}

static inline TFC_HD tfc_c128 tfc_c128_of(double re, double im) {
    tfc_c128 z;
    z.re = re;
    z.im = im;
    return z;
}

#define TFC_COMPLEX_HELPERS(tag, T, R)                                                       \
    static inline TFC_HD int tfc_eq_##tag(T a, T b) { return a.re == b.re && a.im == b.im; } \
    static inline TFC_HD T tfc_add_##tag(T a, T b) { return tfc_##tag##_of(a.re + b.re, a.im + b.im); } \
    static inline TFC_HD T tfc_sub_##tag(T a, T b) { return tfc_##tag##_of(a.re - b.re, a.im - b.im); } \
    static inline TFC_HD T tfc_mul_##tag(T a, T b) {                                          \
        return tfc_##tag##_of(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);          \
    }                                                                                        \
    static inline TFC_HD T tfc_neg_##tag(T a) { return tfc_##tag##_of(-a.re, -a.im); }        \
    static inline TFC_HD T tfc_conj_##tag(T a) { return tfc_##tag##_of(a.re, -a.im); }       \
    /* a / b as a * conj(b) / |b|^2 (what std::complex gives for finite values) */           \
    static inline TFC_HD T tfc_div_##tag(T a, T b) {                                          \
        const R d = b.re * b.re + b.im * b.im;                                               \
        return tfc_##tag##_of((a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d); \
    }

TFC_COMPLEX_HELPERS(c64, tfc_c64, float)
TFC_COMPLEX_HELPERS(c128, tfc_c128, double)

#endif /* TFC_DTYPES_H */
