/* Depthwise convolution kernels for the generated code: NHWC images, one filter per channel.
 *
 *   forward          y[n, oh, ow, c]  = sum over taps (kh, kw) inside the image of
 *                                       x[n, oh*s_h + kh*d_h - pad_top, ow*s_w + kw*d_w - pad_left, c]
 *                                       * f[kh, kw, c]
 *   backprop input   dx[n, ih, iw, c] = sum over the (oh, ow, kh, kw) that read (ih, iw) of
 *                                       dy[n, oh, ow, c] * f[kh, kw, c]            (a gather)
 *   backprop filter  df[kh, kw, c]    = sum over (n, oh, ow) of x[...] * dy[n, oh, ow, c]
 *
 * Channels are contiguous in every operand, so each kernel works on SIMD vectors of channels
 * (GCC/Clang vector extensions) held in registers while it walks the taps: the forward and input
 * kernels in tiles of TFC_DW_P pixels x TFC_DW_NV vectors (a filter vector is loaded once per
 * tile and tap; at stride 1 neighbouring pixels' taps read the same input vectors), the filter
 * kernel in tiles of TFC_DW_TG taps x TFC_DW_NF vectors summed over every pixel. No padded
 * copy: the taps inside the image are computed per row and per pixel. A channel multiplier M > 1
 * (out channel c*M + m) is lowering's business (tfc/ops/conv_depthwise.py): it expands x (or
 * reduces dx) around these kernels, so here in channels == out channels.
 *
 * The functions are instantiated by the kernel templates with a `static const` plan of literals
 * and always inlined, so every size is a constant to the compiler. Work is split over the thread
 * pool in parts that each write their own outputs: the bits never depend on the thread count. */
#ifndef TFC_DEPTHWISE_H
#define TFC_DEPTHWISE_H

#include <stdint.h>
#include <string.h>

#include "tfc_threads.h"

/* Every size of one depthwise convolution (ops/kernels.Geometry's fields, in its order);
 * in_c == out_c. */
typedef struct {
    int64_t batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, s_h, s_w, d_h, d_w;
    int64_t pad_top, pad_left;
} tfc_depthwise_plan;

/* TFC_DW_UNROLL before a loop of a constant trip count (a tile's pixels, vectors, taps): GCC
 * otherwise leaves the nested loops of a large tile rolled, with its accumulators on the stack */
#if defined(__GNUC__) || defined(__clang__)
#define TFC_DW_INLINE static inline __attribute__((always_inline))
#define TFC_DW_UNROLL _Pragma("GCC unroll 16")
#else
#define TFC_DW_INLINE static inline
#define TFC_DW_UNROLL
#endif

/* The SIMD vector the kernels are made of, and their register tiles: pixels (TFC_DW_P) x
 * vectors (TFC_DW_NV) for forward and input, taps (TFC_DW_TG) x vectors (TFC_DW_NF) for the
 * filter: at most 25 accumulators with AVX-512's 32 registers, 9-10 with 16. */
#if defined(__AVX512F__)
#define TFC_DW_VBYTES 64
#define TFC_DW_NV 4
#define TFC_DW_NF 2
#elif defined(__AVX__)
#define TFC_DW_VBYTES 32
#define TFC_DW_NV 2
#define TFC_DW_NF 1
#else
#define TFC_DW_VBYTES 16
#define TFC_DW_NV 2
#define TFC_DW_NF 1
#endif
#define TFC_DW_P 4
#define TFC_DW_TG 9

/* acc + a * b for vectors: one fused multiply-add instruction on x86 with FMA whatever the
 * build's -ffp-contract says (ISO C modes turn contraction off), else multiply then add. */
#if defined(__FMA__) && defined(__AVX512F__)
#include <immintrin.h>
#define TFC_DW_FMA_f32(acc, a, b) _mm512_fmadd_ps((a), (b), (acc))
#define TFC_DW_FMA_f64(acc, a, b) _mm512_fmadd_pd((a), (b), (acc))
#elif defined(__FMA__) && defined(__AVX__)
#include <immintrin.h>
#define TFC_DW_FMA_f32(acc, a, b) _mm256_fmadd_ps((a), (b), (acc))
#define TFC_DW_FMA_f64(acc, a, b) _mm256_fmadd_pd((a), (b), (acc))
#else
#define TFC_DW_FMA_f32(acc, a, b) ((acc) + (a) * (b))
#define TFC_DW_FMA_f64(acc, a, b) ((acc) + (a) * (b))
#endif

/* Kernels of less work (multiply-adds) than this run on the calling thread (tfc_conv.h's
 * threshold: small kernels gain microseconds from threads and lose more on a busy machine). */
#ifndef TFC_DW_PARALLEL_MIN
#define TFC_DW_PARALLEL_MIN (1 << 18)
#endif
/* the forward and input kernels split their rows into this many parts, the filter kernel its
 * channels into at most this many; the filter kernel goes over bands of output rows of about
 * TFC_DW_BAND dy values (with their input rows, a few hundred KiB: in the core's L2 cache) */
#define TFC_DW_ROW_PARTS 16
#define TFC_DW_FILTER_PARTS 4
#define TFC_DW_BAND 16384

/* The taps k of kn whose position base + k*d (d > 0) lies in [0, size): k0 + j, j < *count
 * (forward: base = o*s - pad for output position o). */
static inline void tfc_depthwise_inside(int64_t base, int64_t d, int64_t kn, int64_t size,
                                        int64_t *k0, int64_t *count) {
    /* base + k*d >= 0 and base + k*d < size, d > 0 */
    const int64_t first = base >= 0 ? 0 : (-base + d - 1) / d;
    const int64_t end = size - base <= 0 ? 0 : (size - base + d - 1) / d;
    const int64_t hi = end < kn ? end : kn;
    *k0 = first;
    *count = hi > first ? hi - first : 0;
}

/* The taps k of kn through which some output position o (0 <= o < out_n) reads input position
 * i, that is o*s + k*d - pad == i: k0 + j*kstep for j < *count, at o0 - j*ostep. */
static inline void tfc_depthwise_gather(int64_t i, int64_t pad, int64_t s, int64_t d, int64_t kn,
                                        int64_t out_n, int64_t *k0, int64_t *kstep,
                                        int64_t *count, int64_t *o0, int64_t *ostep) {
    int64_t a = s, b = d; /* kstep = s / gcd(s, d): the taps of one residue modulo s */
    while (b) {
        const int64_t r = a % b;
        a = b;
        b = r;
    }
    *kstep = s / a;
    *ostep = d / a;
    *k0 = 0;
    *count = 0;
    *o0 = 0;
    for (int64_t k = 0; k < kn; ++k) {
        const int64_t t = i + pad - k * d;
        if (t < 0) break; /* later taps only go further left */
        if (t % s != 0 || t / s >= out_n) continue;
        *k0 = k;
        *o0 = t / s;
        /* o0 - j*ostep >= 0 and k + j*kstep < kn */
        const int64_t by_out = *o0 / *ostep + 1, by_taps = (kn - 1 - k) / *kstep + 1;
        *count = by_out < by_taps ? by_out : by_taps;
        return;
    }
}

/* (part, parts) -> the rows [*r0, *r1) of `rows` */
static inline void tfc_depthwise_part_rows(int64_t rows, int64_t part, int64_t *r0, int64_t *r1) {
    const int64_t per = (rows + TFC_DW_ROW_PARTS - 1) / TFC_DW_ROW_PARTS;
    *r0 = part * per;
    *r1 = rows < *r0 + per ? rows : *r0 + per;
}

/* fn(call, p) for p < parts, over the threads when there are `work` multiply-adds or more */
static inline void tfc_depthwise_run(double work, int64_t parts, tfc_threads_fn fn, void *call) {
    if (work < (double)TFC_DW_PARALLEL_MIN) {
        for (int64_t p = 0; p < parts; ++p) fn(call, p);
        return;
    }
    tfc_threads_parallel_for(parts, fn, call);
}

#define TFC_DW_T float
#define TFC_DW_TAG f32
#include "tfc_depthwise_impl.h"
#undef TFC_DW_T
#undef TFC_DW_TAG

#define TFC_DW_T double
#define TFC_DW_TAG f64
#include "tfc_depthwise_impl.h"
#undef TFC_DW_T
#undef TFC_DW_TAG

#endif /* TFC_DEPTHWISE_H */
