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

static inline void tfc_embed_put(char *buf, size_t cap, size_t *n, char c) {
    if (*n + 1 < cap) buf[*n] = c;
    ++*n;
}

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
            char digits[24];
            int k = 0;
            do {
                digits[k++] = (char)('0' + (int)(u % 10u));
                u /= 10u;
            } while (u != 0);
            if (v < 0) tfc_embed_put(buf, cap, &n, '-');
            while (k > 0) tfc_embed_put(buf, cap, &n, digits[--k]);
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

/* Weights stored in fewer bytes (tfc compile --weights-dtype), expanded to float32 by init. */
static inline void tfc_embed_expand_f16(float *dst, const uint16_t *src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint32_t h = src[i], sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        uint32_t bits;
        if (e == 31) {
            bits = sign | 0x7f800000u | (m << 13); /* inf, nan */
        } else if (e != 0) {
            bits = sign | ((e + 112u) << 23) | (m << 13);
        } else if (m == 0) {
            bits = sign;
        } else { /* subnormal: normalize the mantissa */
            e = 113;
            while (!(m & 0x400u)) {
                m <<= 1;
                --e;
            }
            bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
        }
        memcpy(&dst[i], &bits, sizeof bits);
    }
}

static inline void tfc_embed_expand_bf16(float *dst, const uint16_t *src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint32_t bits = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &bits, sizeof bits);
    }
}

/* int8 with one scale per channel (the last axis): dst[i] = src[i] * scales[i % channels] */
static inline void tfc_embed_expand_i8(float *dst, const int8_t *src, const float *scales,
                                       int64_t n, int64_t channels) {
    for (int64_t i = 0; i < n; ++i) dst[i] = (float)src[i] * scales[i % channels];
}

#endif /* TFC_EMBED_H */
