/* The tfc runtime: the one header generated code includes. Header-only parts are static inline. */
#ifndef TFC_RUNTIME_H
#define TFC_RUNTIME_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tfc_platform.h"
#include "tfc_fpenv.h"

#include "tfc_hd.h"
#include "tfc_index.h"

/* The address of a constant array compiled into the program, hidden from the optimizer, so that
 * no code reading the array is specialized for its values. GCC 12 on x86 with AVX-512 turns a
 * block copy from a constant it can see into stores of broadcast registers and, for a run of
 * equal values, stores one element too many (a fetched constant holding seven ones and then
 * zeros came back with eight ones, at every -O level). Every use of a compiled-in constant in
 * generated code goes through this (tfc/codegen/lower.py). */
static inline TFC_HD const void *tfc_opaque(const void *p) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
    __asm__("" : "+r"(p));
#endif
    return p;
}

/* Status codes: TFC_OK, TensorFlow's error codes, the embeddable library's checks */
#include "tfc_status.h"

/* Where a failing run reports: a caller-owned message buffer, and the failing graph node. */
typedef struct {
    char *msg;
    int64_t cap;
    const char *node;
} tfc_error;

static inline TFC_HD int tfc_fail_at(tfc_error *err, int code, const char *node) {
    if (err != NULL) err->node = node;
    return code;
}

static inline TFC_HD int tfc_error_set(tfc_error *err, int code, const char *msg) {
    if (err != NULL && err->msg != NULL && err->cap > 0) {
        TFC_SNPRINTF(err->msg, (size_t)err->cap, "%s", msg);
    }
    return code;
}

#if !defined(TFC_EMBED) && !defined(__CUDACC__) && !defined(TFC_CUDA_DEVICE_EMULATION)
#include <stdarg.h>
#include <stdio.h>
/* tfc_error_set with a printf format: the host runtime's files, data readers and transport */
static inline int tfc_error_setf(tfc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int tfc_error_setf(tfc_error *err, int code, const char *fmt, ...) {
    if (err != NULL && err->msg != NULL && err->cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, (size_t)err->cap, fmt, ap);
        va_end(ap);
    }
    return code;
}
#endif

static inline TFC_HD int tfc_error_index(tfc_error *err, const char *what, int64_t pos, int64_t value,
                                  int64_t limit) {
    if (err != NULL && err->msg != NULL && err->cap > 0) {
        TFC_SNPRINTF(err->msg, (size_t)err->cap, "%s[%lld] = %lld is not in [0, %lld)", what,
                     (long long)pos, (long long)value, (long long)limit);
    }
    return TFC_ERR_INVALID_ARGUMENT;
}

/* Append "%s" or "%lld" to a message being built in err->msg at *n (clamped to its capacity). */
static inline TFC_HD void tfc_error_append(tfc_error *err, int64_t *n, const char *text) {
    if (*n + 1 < err->cap) *n += TFC_SNPRINTF(err->msg + *n, (size_t)(err->cap - *n), "%s", text);
}
static inline TFC_HD void tfc_error_append_int(tfc_error *err, int64_t *n, int64_t v) {
    if (*n + 1 < err->cap) {
        *n += TFC_SNPRINTF(err->msg + *n, (size_t)(err->cap - *n), "%lld", (long long)v);
    }
}
static inline TFC_HD void tfc_error_append_list(tfc_error *err, int64_t *n, const int64_t *v,
                                                int64_t count, const char *sep) {
    for (int64_t k = 0; k < count; ++k) {
        if (k > 0) tfc_error_append(err, n, sep);
        tfc_error_append_int(err, n, v[k]);
    }
}

/* TensorFlow's message for an index tuple outside the shape it indexes (GatherNd, ScatterNd and
 * their kin): "indices[1,2] = [0, 5] does not index into param shape [3,3]". The tuple is number
 * `pos` of the indices' leading dims `lead` (`lead_rank` of them). */
static inline TFC_HD int tfc_error_nd_index(tfc_error *err, int64_t pos, const int64_t *lead,
                                            int64_t lead_rank, const int64_t *tuple, int64_t depth,
                                            const int64_t *shape, int64_t rank, const char *what) {
    if (err != NULL && err->msg != NULL && err->cap > 0) {
        int64_t n = 0, at[16];
        err->msg[0] = '\0';
        for (int64_t k = lead_rank - 1; k >= 0; --k) {
            if (k < 16) at[k] = lead[k] > 0 ? pos % lead[k] : 0;
            pos = lead[k] > 0 ? pos / lead[k] : 0;
        }
        tfc_error_append(err, &n, "indices");
        if (lead_rank > 0) {
            tfc_error_append(err, &n, "[");
            tfc_error_append_list(err, &n, at, lead_rank < 16 ? lead_rank : 16, ",");
            tfc_error_append(err, &n, "]");
        }
        tfc_error_append(err, &n, " = [");
        tfc_error_append_list(err, &n, tuple, depth, ", ");
        tfc_error_append(err, &n, "] does not index into ");
        tfc_error_append(err, &n, what);
        tfc_error_append(err, &n, " [");
        tfc_error_append_list(err, &n, shape, rank, ",");
        tfc_error_append(err, &n, "]");
    }
    return TFC_ERR_INVALID_ARGUMENT;
}

/* A message with two integers, "<a>%lld<b>%lld<c>" (a TensorArray's index and its size). */
static inline TFC_HD int tfc_error_i64(tfc_error *err, int code, const char *a, int64_t x,
                                       const char *b, int64_t y, const char *c) {
    if (err != NULL && err->msg != NULL && err->cap > 0) {
        TFC_SNPRINTF(err->msg, (size_t)err->cap, "%s%lld%s%lld%s", a, (long long)x, b,
                     (long long)y, c);
    }
    return code;
}

#include "tfc_math.h"
#include "tfc_quant.h"
#include "tfc_philox.h"
/* the linalg ops' routines, one matrix at a time (TFC_HD: CUDA threads call them too) */
#include "tfc_linalg.h"
#if !defined(__CUDACC__) && !defined(TFC_CUDA_DEVICE_EMULATION)
/* the CPU's GEMM and convolutions: CUDA programs (emulated ones too) have kernels of their own
 * (tfc_cuda.h) */
#include "tfc_gemm.h"
#include "tfc_conv.h"
/* mixed precision: products of operands rounded to bfloat16, fp32 sums */
#include "tfc_gemm_bf16.h"
/* products whose weights stay packed between calls (a Session's read-only programs) */
#include "tfc_gemm_packed.h"
/* tensor values as text: the host-only kernels of tf.Print, tf.print and tf.Assert */
#include "tfc_text.h"
#endif
/* the update locks of use_locking ops (no-ops where programs never run concurrently) */
#include "tfc_update_lock.h"
/* declarations only: a program that saves or restores links the checkpoint sources of
 * runtime/src (tfc_checkpoint_internal.h lists them) */
#include "tfc_checkpoint.h"

#endif /* TFC_RUNTIME_H */
