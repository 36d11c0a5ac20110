/* The embeddable library's platform (-DTFC_EMBED): error messages formatted without stdio, and
 * the expansion of compressed weights.
 *
 * tfc_embed_format understands what tfc_runtime.h's error helpers write (%s, %lld and %%),
 * always NUL-terminates within `cap`, and needs only the freestanding <stdarg.h>. */
#ifndef TFC_EMBED_H
#define TFC_EMBED_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tfc_dtypes.h"

static inline void tfc_embed_put(char *buf, size_t cap, size_t *n, char c) {
    if (*n + 1 < cap) buf[*n] = c;
    ++*n;
}

static const unsigned long long tfc_embed_pow10[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

static inline int tfc_embed_format(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    size_t n = 0;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; ++p) {
        if (*p != '%') {
            tfc_embed_put(buf, cap, &n, *p);
        } else if (p[1] == 's') {
            for (const char *s = va_arg(ap, const char *); *s; ++s) tfc_embed_put(buf, cap, &n, *s);
            p += 1;
        } else if (p[1] == 'l' && p[2] == 'l' && p[3] == 'd') {
            long long v = va_arg(ap, long long);
            unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            int k = 19;
            if (v < 0) tfc_embed_put(buf, cap, &n, '-');
            while (k > 0 && u < tfc_embed_pow10[k]) --k;
            for (; k >= 0; --k) { /* digits by subtraction: no 64-bit division on 32-bit targets */
                char digit = '0';
                while (u >= tfc_embed_pow10[k]) {
                    u -= tfc_embed_pow10[k];
                    ++digit;
                }
                tfc_embed_put(buf, cap, &n, digit);
            }
            p += 3;
        } else {
            tfc_embed_put(buf, cap, &n, '%');
            if (p[1] == '%') ++p;
        }
    }
    va_end(ap);
    if (cap > 0) buf[n < cap ? n : cap - 1] = '\0';
    return (int)n;
}

#ifndef TFC_SNPRINTF
#define TFC_SNPRINTF tfc_embed_format
#define TFC_EMBED_SNPRINTF 1 /* tfc_text.h: no %g, so floats are not written */
#endif

/* The entry points' checks (model.h): whether x is finite, by its bits (so that -ffast-math,
 * which may assume no NaN, cannot fold the test away) */
static inline int tfc_embed_finite_f32(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & 0x7f800000u) != 0x7f800000u;
}

static inline int tfc_embed_finite_f64(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & UINT64_C(0x7ff0000000000000)) != UINT64_C(0x7ff0000000000000);
}

/* whether the node a run failed at (tfc_error.node) is one of a scope's ("tfc_finite/...") */
static inline int tfc_embed_in_scope(const char *node, const char *scope) {
    if (node == NULL) return 0;
    while (*scope != '\0')
        if (*node++ != *scope++) return 0;
    return *node == '/';
}

/* Weights stored in fewer bytes (tfc compile --weights-dtype), expanded to float32 by init. */
static inline void tfc_embed_expand_f16(float *dst, const uint16_t *src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = tfc_half_bits_to_f32(src[i]);
}

static inline void tfc_embed_expand_bf16(float *dst, const uint16_t *src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = tfc_bfloat16_bits_to_f32(src[i]);
}

/* int8 with one scale per channel (the last axis): dst[i] = src[i] * scales[i % channels] */
static inline void tfc_embed_expand_i8(float *dst, const int8_t *src, const float *scales,
                                       int64_t n, int64_t channels) {
    for (int64_t i = 0; i < n; ++i) dst[i] = (float)src[i] * scales[i % channels];
}

#endif /* TFC_EMBED_H */
