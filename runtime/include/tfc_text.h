/* Tensor values as text, as TensorFlow writes them (Tensor::SummarizeValue): what the kernels
 * of tf.Print, tf.print and tf.Assert write. tfc/ops/tensor_text.py is the reference.
 *
 * A tfc_text collects text in a caller's buffer: kept there (stream 0: an error message,
 * truncated to the buffer, always NUL-terminated), or written to stream 1 (stdout) or 2
 * (stderr) through TFC_PRINT whenever the buffer fills and at tfc_text_flush. Style v1 (Print,
 * Assert): the first `summarize` values in row-major order, nested brackets, "..." where it
 * stops. Style v2 (print): the first and last `summarize` entries of every dimension, rows on
 * lines of their own. Floats as "%.6g" ("%.15g" for doubles), with 9 (17) digits when fewer do
 * not read back as the same number. The embeddable library's own formatter has no %g: there a
 * float is written as "?" unless the embedder supplies TFC_SNPRINTF (and TFC_PRINT to see
 * anything printed). */
#ifndef TFC_TEXT_H
#define TFC_TEXT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tfc_dtypes.h"
#include "tfc_platform.h"

#if !defined(TFC_EMBED_SNPRINTF)
#include <stdlib.h>
#endif

typedef struct {
    char *buf;
    int64_t cap;
    int64_t len;
    int stream; /* 0: keep the text; 1: stdout, 2: stderr */
} tfc_text;

static inline void tfc_text_flush(tfc_text *t) {
    if (t->stream != 0 && t->len > 0) {
        TFC_PRINT(t->stream, t->buf, t->len);
        t->len = 0;
    }
    if (t->stream == 0 && t->cap > 0) t->buf[t->len] = '\0';
}

static inline void tfc_text_put(tfc_text *t, const char *s, int64_t n) {
    if (t->cap <= 1) return;
    for (int64_t i = 0; i < n; ++i) {
        if (t->len + 1 >= t->cap) {
            if (t->stream == 0) break; /* a kept text ends where its buffer does */
            tfc_text_flush(t);
        }
        t->buf[t->len++] = s[i];
    }
    if (t->stream == 0) t->buf[t->len] = '\0';
}

static inline void tfc_text_puts(tfc_text *t, const char *s) {
    tfc_text_put(t, s, (int64_t)strlen(s));
}

static inline void tfc_text_uint(tfc_text *t, uint64_t u) {
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u != 0);
    while (k > 0) tfc_text_put(t, &digits[--k], 1);
}

static inline void tfc_text_int(tfc_text *t, int64_t v) {
    if (v < 0) tfc_text_put(t, "-", 1);
    tfc_text_uint(t, v < 0 ? 0u - (uint64_t)v : (uint64_t)v);
}

/* StrCat of a float (`single`) or a double: FloatToBuffer / DoubleToBuffer */
static inline void tfc_text_float(tfc_text *t, double v, int single) {
    if (v != v) {
        tfc_text_puts(t, signbit(v) ? "-nan" : "nan");
        return;
    }
#if defined(TFC_EMBED_SNPRINTF)
    (void)single;
    tfc_text_puts(t, "?");
#else
    char b[48];
    TFC_SNPRINTF(b, sizeof b, "%.*g", single ? 6 : 15, v);
    int same = single ? strtof(b, NULL) == (float)v : strtod(b, NULL) == v;
    if (!same) TFC_SNPRINTF(b, sizeof b, "%.*g", single ? 9 : 17, v);
    tfc_text_puts(t, b);
#endif
}

/* element i of a tensor's data */
typedef void (*tfc_text_element)(tfc_text *t, const void *data, int64_t i);

static inline void tfc_text_f32(tfc_text *t, const void *data, int64_t i) {
    tfc_text_float(t, ((const float *)data)[i], 1);
}
static inline void tfc_text_f64(tfc_text *t, const void *data, int64_t i) {
    tfc_text_float(t, ((const double *)data)[i], 0);
}
static inline void tfc_text_i32(tfc_text *t, const void *data, int64_t i) {
    tfc_text_int(t, ((const int32_t *)data)[i]);
}
static inline void tfc_text_i64(tfc_text *t, const void *data, int64_t i) {
    tfc_text_int(t, ((const int64_t *)data)[i]);
}
/* the other integers, and the 16-bit floats written as the floats they widen to (as TF) */
#define TFC_TEXT_INTEGER(tag, T, write)                                                      \
    static inline void tfc_text_##tag(tfc_text *t, const void *data, int64_t i) {           \
        write(t, ((const T *)data)[i]);                                                      \
    }
TFC_TEXT_INTEGER(i8, int8_t, tfc_text_int)
TFC_TEXT_INTEGER(i16, int16_t, tfc_text_int)
TFC_TEXT_INTEGER(u8, uint8_t, tfc_text_uint)
TFC_TEXT_INTEGER(u16, uint16_t, tfc_text_uint)
TFC_TEXT_INTEGER(u32, uint32_t, tfc_text_uint)
TFC_TEXT_INTEGER(u64, uint64_t, tfc_text_uint)
static inline void tfc_text_f16(tfc_text *t, const void *data, int64_t i) {
    tfc_text_float(t, tfc_f16_to_f32(((const tfc_f16 *)data)[i]), 1);
}
static inline void tfc_text_bf16(tfc_text *t, const void *data, int64_t i) {
    tfc_text_float(t, tfc_bf16_to_f32(((const tfc_bf16 *)data)[i]), 1);
}
static inline void tfc_text_bool(tfc_text *t, const void *data, int64_t i) {
    tfc_text_puts(t, ((const bool *)data)[i] ? "1" : "0");
}

static inline void tfc_text_v1_dim(tfc_text *t, const void *data, tfc_text_element element,
                                   const int64_t *shape, int rank, int d, int64_t limit,
                                   int64_t *pos) {
    if (*pos >= limit) return;
    if (d == rank - 1) {
        for (int64_t i = 0; i < shape[d]; ++i) {
            if (*pos >= limit) {
                if (d != 0) tfc_text_puts(t, "...");
                return;
            }
            if (i > 0) tfc_text_puts(t, " ");
            element(t, data, (*pos)++);
        }
        return;
    }
    for (int64_t i = 0; i < shape[d]; ++i) {
        const int opened = *pos < limit;
        if (opened) tfc_text_puts(t, "[");
        tfc_text_v1_dim(t, data, element, shape, rank, d + 1, limit, pos);
        if (*pos < limit || opened) tfc_text_puts(t, "]");
    }
}

/* style v1 of a tensor of `count` elements (shape[rank]); summarize < 0: all of them */
static inline void tfc_text_v1(tfc_text *t, const void *data, tfc_text_element element,
                               const int64_t *shape, int rank, int64_t count, int64_t summarize) {
    const int64_t limit = summarize < 0 || summarize > count ? count : summarize;
    if (rank == 0) {
        for (int64_t i = 0; i < limit; ++i) element(t, data, i);
    } else {
        int64_t pos = 0;
        tfc_text_v1_dim(t, data, element, shape, rank, 0, limit, &pos);
    }
    if (count > limit) tfc_text_puts(t, "...");
}

static inline void tfc_text_v2_spacing(tfc_text *t, int d, int rank) {
    if (d == rank - 1) {
        tfc_text_puts(t, " ");
        return;
    }
    for (int j = 0; j < rank - d - 1; ++j) tfc_text_puts(t, "\n");
    for (int j = 0; j <= d; ++j) tfc_text_puts(t, " ");
}

static inline void tfc_text_v2_dim(tfc_text *t, const void *data, tfc_text_element element,
                                   const int64_t *shape, int rank, int d, int64_t ends,
                                   int64_t start) {
    if (d == rank) {
        element(t, data, start);
        return;
    }
    tfc_text_puts(t, "[");
    const int64_t n = shape[d];
    const int64_t start_of_end = ends > n - ends ? ends : n - ends;
    int64_t step = 1;
    for (int k = d + 1; k < rank; ++k) step *= shape[k];
    for (int64_t i = 0; i < ends && i < n; ++i) {
        if (i > 0) tfc_text_v2_spacing(t, d, rank);
        tfc_text_v2_dim(t, data, element, shape, rank, d + 1, ends, start + step * i);
    }
    if (n > 2 * ends) {
        tfc_text_v2_spacing(t, d, rank);
        tfc_text_puts(t, "...");
    }
    for (int64_t i = start_of_end; i < n; ++i) {
        tfc_text_v2_spacing(t, d, rank);
        tfc_text_v2_dim(t, data, element, shape, rank, d + 1, ends, start + step * i);
    }
    tfc_text_puts(t, "]");
}

/* style v2 of a tensor of `count` elements (shape[rank]); summarize < 0: all of them */
static inline void tfc_text_v2(tfc_text *t, const void *data, tfc_text_element element,
                               const int64_t *shape, int rank, int64_t count, int64_t summarize) {
    const int64_t limit = summarize < 0 || summarize > count ? count : summarize;
    if (rank == 0) {
        for (int64_t i = 0; i < limit; ++i) element(t, data, i);
        if (count > limit) tfc_text_puts(t, "...");
        return;
    }
    tfc_text_v2_dim(t, data, element, shape, rank, 0, limit, 0);
}

#endif /* TFC_TEXT_H */
