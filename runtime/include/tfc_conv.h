/* Convolution kernels for the generated code: NHWC images, HWIO filters, any stride, dilation
 * and padding (the padding is a size here; TF's SAME/VALID arithmetic is done in Python).
 *
 * Each op has two algorithms, picked per shape at compile time (tfc/ops/conv_algo.py):
 * - direct: register tiles of `pix_block` output pixels x `co_block` output channels are
 *   accumulated over the taps (an implicit GEMM: no column matrix, the filter row of each tap
 *   is one vector load, each input value one broadcast), the forward kernel's on the image
 *   itself (a tile at an edge on a copy of its windows, zeros outside: tfc_conv_strip),
 *   backprop filter's on a zero-bordered copy, so that every window lies inside. Backprop
 *   input is the same forward kernel on the zero-stuffed, bordered gradient with the filter
 *   flipped and transposed; backprop filter tiles `pix_block` filter taps x `co_block`
 *   channels over all pixels.
 * - im2col: the windows of a chunk of images become the rows of a column matrix and one
 *   GEMM (tfc_gemm.h) does the products; backprop input scatters its columns back (col2im).
 * Temporary buffers come from the arena (the op's scratch memory), passed in as pointers.
 * The forward functions also take a bias and a residual for _FusedConv2D's epilogue (plan
 * fields bias, residual, act; NULL where the plan has none): the direct kernel applies it to
 * each register tile before storing it, im2col and columns to the rows they just wrote. A
 * forward convolution may write channels [y_off, y_off + out_c) of pixels ldy elements apart:
 * its slice of a concatenation along the channels (_FusedConv2DConcat), which then costs no
 * copy. A constant forward filter may come packed (plan field `packed`, tfc/passes/conv_pack.py):
 * blocks of co_block output channels, each contiguous, which the direct kernel reads where they
 * lie, prefetching the next block while the tiles of one run.
 *
 * The functions are instantiated by the kernel templates with a `static const tfc_conv_plan`
 * of literals, and always inlined, so every size is a constant to the compiler. Only string.h
 * and stdint.h: the header builds for embedded targets (no alignment beyond the element's). */
#ifndef TFC_CONV_H
#define TFC_CONV_H

#include <stdint.h>
#include <string.h>

#include "tfc_gemm.h"
#include "tfc_index.h"

/* Every size of one convolution, and how its kernels block it. */
typedef struct {
    int64_t batch, in_h, in_w, in_c;    /* the image (the input of the forward convolution) */
    int64_t out_h, out_w, out_c;        /* the forward output */
    int64_t k_h, k_w, s_h, s_w, d_h, d_w;
    int64_t pad_top, pad_left;          /* rows/columns of zeros before the image */
    int64_t pix_block;                  /* direct: output pixels (or filter taps) per tile;
                                           im2col of a 1x1 with a residual: the product's rows
                                           per block (tfc_conv_forward_pointwise) */
    int64_t pix_wide;                   /* the same for tiles of 64-byte vectors (AVX-512) */
    int64_t co_block;                   /* direct: channels per tile (whole SIMD vectors) */
    int64_t hp, wp;                     /* direct: the bordered buffer's height and width
                                           (in_h and in_w: the image itself, no copy) */
    int64_t cp;                         /* direct: channels of the padded filter (or gradient);
                                           columns: the width of the bordered planes */
    int64_t chunk;                      /* im2col: images per column matrix */
    int64_t blocked;                    /* direct forward: 0, or the filter read in blocks of
                                           co_block channels, the blocks outermost within groups
                                           of this many output rows (tfc_conv_direct_core) */
    int64_t packed;                     /* direct forward: the filter comes packed, one block of
                                           co_block channels after another, each [taps, co_block]
                                           and zero past out_c (tfc/passes/conv_pack.py) */
    int64_t prefetch_rows;              /* direct forward and backprop input: each output row's
                                           tiles prefetch the input rows the next one reads
                                           first (tfc_conv_next_rows) */
    int64_t bias, residual, act;        /* forward epilogue (_FusedConv2D): a bias per channel
                                           added, a tensor of y's shape added, then the
                                           activation (TFC_CONV_ACT_*) */
    int64_t ldy, y_off;                 /* forward: y's elements per pixel and the first one
                                           written (out_c and 0, or the channels of a
                                           concatenation and this convolution's slice) */
} tfc_conv_plan;

/* the activations of the forward epilogue, as tfc's Relu and Relu6 compute them (NaN stays) */
#define TFC_CONV_ACT_NONE 0
#define TFC_CONV_ACT_RELU 1
#define TFC_CONV_ACT_RELU6 2

#if defined(__GNUC__) || defined(__clang__)
#define TFC_CONV_INLINE static inline __attribute__((always_inline))
#else
#define TFC_CONV_INLINE static inline
#endif

/* whether `g` is a 1x1 convolution at stride 1 without padding: x is the product's left matrix
 * (tfc/ops/conv_algo.py: pointwise) */
TFC_CONV_INLINE int tfc_conv_pointwise(const tfc_conv_plan *g) {
    return g->k_h == 1 && g->k_w == 1 && g->s_h == 1 && g->s_w == 1 && g->out_h == g->in_h &&
           g->out_w == g->in_w;
}

/* Register tiles: at most this many pixels (or taps) x vectors of channels */
#define TFC_CONV_MAX_P 16
/* before each loop of a register tile over its pixels or vectors (constant trip counts where
 * the tile is inlined): unrolled whole, so that the accumulators and filter vectors live in
 * registers. Without it GCC 12 at -O3 -march=znver3 (AVX2) vectorized the copy of the filter
 * row into w[] as a loop of 16-byte moves through the stack and stored every accumulator back
 * each step: ResNet-50's 3x3 64->64 on 56x56 ran at 14 GFLOP/s of a 101 GFLOP/s peak. */
#ifndef TFC_CONV_TILE_UNROLL
#if defined(__OPTIMIZE_SIZE__)
#define TFC_CONV_TILE_UNROLL /* -Os (the embeddable library): as the size heuristics decide */
#elif defined(__GNUC__) && !defined(__clang__)
#define TFC_CONV_TILE_UNROLL _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define TFC_CONV_TILE_UNROLL _Pragma("unroll")
#else
#define TFC_CONV_TILE_UNROLL
#endif
#endif

/* A compiler barrier between two scatters of backprop-input rows, whose vectors may partially
 * overlap (a row's last segment's padding reaches into the next row; columns of a narrow image
 * overlap whatever their order): gcc 12's predictive commoning at -O3 forwards a stored vector
 * to a later load of partly the same bytes as if it were all of them, and drops the other
 * tile's sums. Memory is re-read after it; nothing else changes. */
#if defined(__GNUC__)
#define TFC_CONV_FENCE() __asm__ __volatile__("" ::: "memory")
#else
#define TFC_CONV_FENCE() ((void)0)
#endif
#define TFC_CONV_MAX_NV 8
/* the accumulators of one narrow tile (tfc_conv_narrow_part): of the 16 AVX registers, 12 for
 * 6 pixels x 2 vectors (a filter row in two more), 14 for a 7-pixel row (the filter read by
 * the multiply-adds themselves) */
#ifndef TFC_CONV_NARROW_ACC
#define TFC_CONV_NARROW_ACC 14
#endif
/* A hint that the cache line at p is read soon, into L2, or written soon (nothing where the
 * compiler has no builtin for it; a prefetch never faults). With TFC_CONV_PREFETCH_READS
 * (tests, under AddressSanitizer) each is a read of the byte at p instead, so that an address
 * outside the buffers it means to prefetch is reported. */
#if defined(TFC_CONV_PREFETCH_READS)
#define TFC_CONV_PREFETCH(p) ((void)*(const volatile char *)(p))
#define TFC_CONV_PREFETCH_L1(p) ((void)*(const volatile char *)(p))
#define TFC_CONV_PREFETCH_WRITE(p) ((void)*(const volatile char *)(p))
#elif defined(__GNUC__) || defined(__clang__)
#define TFC_CONV_PREFETCH(p) __builtin_prefetch((p), 0, 2)
#define TFC_CONV_PREFETCH_L1(p) __builtin_prefetch((p), 0, 3)
#define TFC_CONV_PREFETCH_WRITE(p) __builtin_prefetch((p), 1, 3)
#else
#define TFC_CONV_PREFETCH(p) ((void)(p))
#define TFC_CONV_PREFETCH_L1(p) ((void)(p))
#define TFC_CONV_PREFETCH_WRITE(p) ((void)(p))
#endif
/* The direct tile's filter rows prefetched into L1 this many rows ahead of the one read */
#ifndef TFC_CONV_FILTER_AHEAD
#define TFC_CONV_FILTER_AHEAD 16
#endif
#define TFC_CONV_COLS_MAX_ACC 24
/* The SIMD width the tiles are made of: co_block (chosen in Python) is a multiple of it */
#if defined(__AVX__)
#define TFC_CONV_VBYTES 32
#else
#define TFC_CONV_VBYTES 16
#endif

/* acc + a * w for a vector w and a scalar a: one fused multiply-add instruction on x86 with FMA
 * whatever the build's -ffp-contract says (ISO C modes turn contraction off), else the vector
 * extensions' multiply then add (fused by the compiler where the flags allow it). */
#if defined(__FMA__) && defined(__AVX__)
#include <immintrin.h>
#define TFC_CONV_VMADD_f32(acc, a, w) _mm256_fmadd_ps(_mm256_set1_ps(a), (w), (acc))
#define TFC_CONV_VMADD_f64(acc, a, w) _mm256_fmadd_pd(_mm256_set1_pd(a), (w), (acc))
#if defined(__AVX512F__)
/* 64-byte vectors for the tiles whose channels fill them (tfc_conv_impl.h picks per tile) */
#define TFC_CONV_WBYTES 64
#define TFC_CONV_WMADD_f32(acc, a, w) _mm512_fmadd_ps(_mm512_set1_ps(a), (w), (acc))
#define TFC_CONV_WMADD_f64(acc, a, w) _mm512_fmadd_pd(_mm512_set1_pd(a), (w), (acc))
#endif
#else
#define TFC_CONV_VMADD_f32(acc, a, w) ((acc) + (w) * (a))
#define TFC_CONV_VMADD_f64(acc, a, w) ((acc) + (w) * (a))
#endif

/* Convolutions of less work (multiply-adds) than this run on the calling thread. Measured at 2
 * threads on LeNet's conv1 forward + filter gradient split with no threshold (the 2-core
 * AVX-512 host): idle, 235k multiply-adds each 1.5x, 350k 1.34x, 470k 1.7x; with another
 * process busy on the other core, 470k 0.57x. Small kernels gain microseconds and lose more
 * on a shared machine, so they stay on the caller. */
#ifndef TFC_CONV_PARALLEL_MIN
#define TFC_CONV_PARALLEL_MIN (1 << 18)
#endif

/* part(call, p) for each part p of the batch (plan->chunk images each), over the threads when
 * the convolution is large enough. Part p always does the same work: the result does not
 * depend on the thread count. */
static inline void tfc_conv_run_parts(const tfc_conv_plan *g, tfc_threads_fn part, void *call) {
    const int64_t parts = TFC_IDIV(g->batch + g->chunk - 1, g->chunk);
#ifdef TFC_NO_THREADS
    /* one thread: no work estimate (an embedded build does no double arithmetic) */
    for (int64_t p = 0; p < parts; ++p) part(call, p);
#else
    const double work = (double)g->batch * (double)(g->out_h * g->out_w) *
                        (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c;
    if (work < (double)TFC_CONV_PARALLEL_MIN) {
        for (int64_t p = 0; p < parts; ++p) part(call, p);
        return;
    }
    tfc_threads_parallel_for(parts, part, call);
#endif
}

#define TFC_CONV_T float
#define TFC_CONV_IT int32_t
#define TFC_CONV_TAG f32
#include "tfc_conv_impl.h"
#undef TFC_CONV_T
#undef TFC_CONV_IT
#undef TFC_CONV_TAG

#define TFC_CONV_T double
#define TFC_CONV_IT int64_t
#define TFC_CONV_TAG f64
#include "tfc_conv_impl.h"
#undef TFC_CONV_T
#undef TFC_CONV_IT
#undef TFC_CONV_TAG

#endif /* TFC_CONV_H */
