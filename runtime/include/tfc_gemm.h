/* Matrix multiply for the generated kernels: C[M,N] = A[M,K] * B[K,N], A and B strided (so every
 * transpose is a choice of strides).
 *
 * tfc_gemm_<tag>(M, N, K, A, sam, sak, B, sbk, sbn, C): C contiguous ([M,N], row stride N) and
 * overwritten. Integer types wrap.
 *
 * tfc_gemm_<tag>_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias, relu), float
 * types only: C[i*ldc + j] = relu?( alpha * sum_k A[i,k] B[k,j] + beta * C[i*ldc + j] + bias[j] )
 * where beta == 0 never reads C (NaN-safe), bias may be NULL (length N otherwise) and relu is
 * TF's Relu (x < 0 ? 0 : x). beta = 1 accumulates into an existing gradient buffer.
 *
 * Float types run BLIS-style: the K range in KC blocks, M in MC blocks whose A rows are packed
 * (scaled by alpha) into MR-row panels, N in NR-column panels of packed B, and a register-blocked
 * MR x NR micro-kernel written with GCC/Clang vector extensions (AVX2: 6 x 16 floats in 12
 * accumulators; SSE, NEON and scalar targets get the same source split or lane by lane). Edge
 * tiles go through the same micro-kernel on zero-padded panels, so every element of C is the
 * same chain of multiply-adds over k = 0..K-1 whatever its position, the block sizes or the
 * number of threads: a product computed row by row or split across threads has the same bits.
 * Products of 1 or 2 rows with row-major B skip the packing (B streams once per row into
 * accumulators of TFC_GEMM_ROW_COLS columns): the same chains, so the same bits again.
 * Packing buffers live on the stack ((MC + NR) * KC elements, 160 KiB on hosts, 9 KiB under
 * TFC_EMBED): no allocation, no alignment requirement on any pointer. Large products are
 * split over N panels between the threads of tfc_threads.h (the K reduction is never split).
 */
#ifndef TFC_GEMM_H
#define TFC_GEMM_H

#include <stdint.h>
#include <string.h>

#include "tfc_index.h"
#include "tfc_threads.h"

#ifndef TFC_GEMM_KC
#ifdef TFC_EMBED
#define TFC_GEMM_KC 64
#define TFC_GEMM_MC 24
#define TFC_GEMM_ROW_COLS 256
#else
#define TFC_GEMM_KC 256 /* float; double: half, the same bytes */
#define TFC_GEMM_MC 144
#define TFC_GEMM_ROW_COLS 1024
#endif
#endif
#define TFC_GEMM_MR 6
/* products of at most this many rows (B row-major) skip the packing: one pass over B per row */
#ifndef TFC_GEMM_ROWS_MAX
#define TFC_GEMM_ROWS_MAX 2
#endif
/* products with fewer multiply-adds than this stay on one thread */
#ifndef TFC_GEMM_PARALLEL_MIN
#define TFC_GEMM_PARALLEL_MIN (1 << 20)
#endif

/* whether a product stays on the calling thread: always in a single-threaded build, which
 * then computes no estimate (an embedded build does no double arithmetic) */
#ifdef TFC_NO_THREADS
#define TFC_GEMM_SERIAL(M, N, K) 1
#else
#define TFC_GEMM_SERIAL(M, N, K) \
    ((double)(M) * (double)(N) * (double)(K) < (double)TFC_GEMM_PARALLEL_MIN)
#endif

/* the micro-kernel's vectors: 32 bytes where AVX has 16 registers of that width, else 16 bytes
 * (SSE, NEON; scalar targets split them lane by lane) */
#if defined(__AVX512F__) && !defined(TFC_EMBED)
#define TFC_GEMM_VBYTES 64 /* 32 registers of 64 bytes: 6 x 32 floats in 12 of them */
#elif defined(__AVX__)
#define TFC_GEMM_VBYTES 32
#else
#define TFC_GEMM_VBYTES 16
#endif
typedef float tfc_vf32 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(4)));
typedef int32_t tfc_vi32 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(4)));
typedef double tfc_vf64 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(8)));
typedef int64_t tfc_vi64 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(8)));

/* a*b + c as one fused multiply-add where the target has one (ISO C mode does not contract;
 * clang does within an expression). Macros, not functions: a 32-byte vector passed by value
 * changes the ABI on targets without AVX. */
#if TFC_GEMM_VBYTES == 64 && defined(__GNUC__) && !defined(__clang__)
#define TFC_GEMM_FMA_f32(a, b, c) __builtin_ia32_vfmaddps512_mask((a), (b), (c), (unsigned short)0xFFFF, 4)
#define TFC_GEMM_FMA_f64(a, b, c) __builtin_ia32_vfmaddpd512_mask((a), (b), (c), (unsigned char)0xFF, 4)
#elif defined(__FMA__) && defined(__AVX__) && defined(__GNUC__) && !defined(__clang__)
#define TFC_GEMM_FMA_f32(a, b, c) __builtin_ia32_vfmaddps256((a), (b), (c))
#define TFC_GEMM_FMA_f64(a, b, c) __builtin_ia32_vfmaddpd256((a), (b), (c))
#else
#define TFC_GEMM_FMA_f32(a, b, c) ((a) * (b) + (c))
#define TFC_GEMM_FMA_f64(a, b, c) ((a) * (b) + (c))
#endif

/* One float GEMM family per type: T the element, V its 32-byte vector, VI the same-width integer
 * vector, VL lanes, NR = 2 VL columns per micro-tile. */
#define TFC_DEFINE_GEMM_FLOAT(tag, T, V, VI, VL, KC)                                             \
    enum { tfc_gemm_nr_##tag = 2 * (VL) };                                                       \
                                                                                                 \
    /* the micro-kernel: C[MR, NR] (row stride ldc) from packed a[kc][MR] and b[kc][NR];       \
     * acc starts at 0 (beta == 0), C or beta*C; bias/relu applied before the store */          \
    static inline void tfc_gemm_kernel_##tag(int64_t kc, const T *restrict a,                   \
                                             const T *restrict b, T *restrict c, int64_t ldc,    \
                                             T beta, const T *restrict bias, int relu) {         \
        V acc[TFC_GEMM_MR][2];                                                                   \
        if (beta == (T)0) {                                                                      \
            for (int r = 0; r < TFC_GEMM_MR; ++r) acc[r][0] = acc[r][1] = (V){0};                \
        } else {                                                                                 \
            for (int r = 0; r < TFC_GEMM_MR; ++r) {                                              \
                memcpy(&acc[r][0], c + r * ldc, sizeof(V));                                      \
                memcpy(&acc[r][1], c + r * ldc + (VL), sizeof(V));                               \
                if (beta != (T)1) {                                                              \
                    acc[r][0] *= beta;                                                           \
                    acc[r][1] *= beta;                                                           \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        for (int64_t k = 0; k < kc; ++k) {                                                       \
            V b0, b1;                                                                            \
            memcpy(&b0, b + k * 2 * (VL), sizeof(V));                                            \
            memcpy(&b1, b + k * 2 * (VL) + (VL), sizeof(V));                                     \
            const T *restrict ak = a + k * TFC_GEMM_MR;                                          \
            for (int r = 0; r < TFC_GEMM_MR; ++r) {                                              \
                const V ar = (V){0} + ak[r];                                                     \
                acc[r][0] = TFC_GEMM_FMA_##tag(ar, b0, acc[r][0]);                               \
                acc[r][1] = TFC_GEMM_FMA_##tag(ar, b1, acc[r][1]);                               \
            }                                                                                    \
        }                                                                                        \
        if (bias != NULL) {                                                                      \
            V bv0, bv1;                                                                          \
            memcpy(&bv0, bias, sizeof(V));                                                       \
            memcpy(&bv1, bias + (VL), sizeof(V));                                                \
            for (int r = 0; r < TFC_GEMM_MR; ++r) {                                              \
                acc[r][0] += bv0;                                                                \
                acc[r][1] += bv1;                                                                \
            }                                                                                    \
        }                                                                                        \
        if (relu) {                                                                              \
            const V zero = {0};                                                                  \
            for (int r = 0; r < TFC_GEMM_MR; ++r)                                                \
                for (int h = 0; h < 2; ++h)                                                      \
                    acc[r][h] = (V)((VI)acc[r][h] & ~(VI)(acc[r][h] < zero));                    \
        }                                                                                        \
        for (int r = 0; r < TFC_GEMM_MR; ++r) {                                                  \
            memcpy(c + r * ldc, &acc[r][0], sizeof(V));                                          \
            memcpy(c + r * ldc + (VL), &acc[r][1], sizeof(V));                                   \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* rows [i0, i0+mc) x k [p0, p0+kc) of alpha*A into MR-row panels, zero-padded rows */     \
    static inline void tfc_gemm_pack_a_##tag(int64_t mc, int64_t kc, const T *restrict A,       \
                                             int64_t sam, int64_t sak, T alpha,                  \
                                             T *restrict out) {                                  \
        for (int64_t i = 0; i < mc; i += TFC_GEMM_MR) {                                          \
            const int64_t rows = mc - i < TFC_GEMM_MR ? mc - i : TFC_GEMM_MR;                    \
            T *restrict panel = out + i * kc;                                                    \
            for (int64_t r = 0; r < TFC_GEMM_MR; ++r) {                                          \
                if (r >= rows) {                                                                 \
                    for (int64_t k = 0; k < kc; ++k) panel[k * TFC_GEMM_MR + r] = 0;             \
                    continue;                                                                    \
                }                                                                                \
                const T *restrict row = A + (i + r) * sam;                                       \
                if (alpha == (T)1) {                                                             \
                    for (int64_t k = 0; k < kc; ++k) panel[k * TFC_GEMM_MR + r] = row[k * sak];  \
                } else {                                                                         \
                    for (int64_t k = 0; k < kc; ++k)                                             \
                        panel[k * TFC_GEMM_MR + r] = alpha * row[k * sak];                       \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* columns [0, nc) (nc <= NR) x kc rows of B into one NR-column panel, zero-padded */        \
    static inline void tfc_gemm_pack_b_##tag(int64_t nc, int64_t kc, const T *restrict B,       \
                                             int64_t sbk, int64_t sbn, T *restrict out) {        \
        enum { NR = 2 * (VL) };                                                                  \
        if (sbn == 1 && nc == NR) {                                                              \
            for (int64_t k = 0; k < kc; ++k) memcpy(out + k * NR, B + k * sbk, NR * sizeof(T));  \
            return;                                                                              \
        }                                                                                        \
        for (int64_t j = 0; j < NR; ++j) {                                                       \
            if (j >= nc) {                                                                       \
                for (int64_t k = 0; k < kc; ++k) out[k * NR + j] = 0;                            \
                continue;                                                                        \
            }                                                                                    \
            const T *restrict col = B + j * sbn;                                                 \
            for (int64_t k = 0; k < kc; ++k) out[k * NR + j] = col[k * sbk];                     \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    typedef struct {                                                                             \
        int64_t M, N, K, sam, sak, sbk, sbn, ldc;                                                \
        const T *A, *B, *bias;                                                                   \
        T *C, alpha, beta;                                                                       \
        int relu;                                                                                \
        int64_t panels_per_task;                                                                 \
    } tfc_gemm_args_##tag;                                                                       \
                                                                                                 \
    /* columns [n0, n1) of the product: the whole algorithm on one thread */                    \
    static inline void tfc_gemm_columns_##tag(const tfc_gemm_args_##tag *g, int64_t n0,         \
                                              int64_t n1) {                                      \
        enum { NR = 2 * (VL), MR = TFC_GEMM_MR };                                                \
        T apack[((TFC_GEMM_MC + MR - 1) / MR) * MR * (KC)];                                      \
        T bpack[(KC) * NR];                                                                      \
        T tile[MR * NR], tile_bias[NR];                                                          \
        const int64_t M = g->M, K = g->K, ldc = g->ldc;                                          \
        for (int64_t p0 = 0; p0 < K; p0 += (KC)) {                                               \
            const int64_t kc = K - p0 < (KC) ? K - p0 : (KC);                                    \
            const int first = p0 == 0, last = p0 + kc == K;                                      \
            const T beta = first ? g->beta : (T)1;                                               \
            const int relu = last && g->relu;                                                    \
            for (int64_t i0 = 0; i0 < M; i0 += TFC_GEMM_MC) {                                    \
                const int64_t mc = M - i0 < TFC_GEMM_MC ? M - i0 : TFC_GEMM_MC;                  \
                tfc_gemm_pack_a_##tag(mc, kc, g->A + i0 * g->sam + p0 * g->sak, g->sam, g->sak,  \
                                      g->alpha, apack);                                          \
                for (int64_t j0 = n0; j0 < n1; j0 += NR) {                                       \
                    const int64_t nc = n1 - j0 < NR ? n1 - j0 : (int64_t)NR;                     \
                    tfc_gemm_pack_b_##tag(nc, kc, g->B + p0 * g->sbk + j0 * g->sbn, g->sbk,      \
                                          g->sbn, bpack);                                        \
                    const T *bias = last && g->bias != NULL ? g->bias + j0 : NULL;               \
                    if (bias != NULL && nc < NR) {                                               \
                        for (int64_t j = 0; j < NR; ++j) tile_bias[j] = j < nc ? bias[j] : 0;    \
                        bias = tile_bias;                                                        \
                    }                                                                            \
                    for (int64_t i = 0; i < mc; i += MR) {                                       \
                        const int64_t mr = mc - i < MR ? mc - i : (int64_t)MR;                   \
                        T *c = g->C + (i0 + i) * ldc + j0;                                       \
                        if (mr == MR && nc == NR) {                                              \
                            tfc_gemm_kernel_##tag(kc, apack + i * kc, bpack, c, ldc, beta, bias, \
                                                  relu);                                         \
                            continue;                                                            \
                        }                                                                        \
                        for (int64_t r = 0; r < MR; ++r)                                         \
                            for (int64_t j = 0; j < NR; ++j)                                     \
                                tile[r * NR + j] =                                               \
                                    r < mr && j < nc && beta != (T)0 ? c[r * ldc + j] : (T)0;    \
                        tfc_gemm_kernel_##tag(kc, apack + i * kc, bpack, tile, NR, beta, bias,   \
                                              relu);                                             \
                        for (int64_t r = 0; r < mr; ++r)                                         \
                            memcpy(c + r * ldc, tile + r * NR, (size_t)nc * sizeof(T));          \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* one row of C when B's rows are contiguous (sbn == 1): no packing, no padding to MR rows;     \
     * B streams row by row into accumulators of up to 1024 columns (in L1), each element the    \
     * same multiply-add chain as in the micro-kernel (a partial vector goes through a padded    \
     * copy) */                                                                                  \
    static inline void tfc_gemm_row_##tag(const tfc_gemm_args_##tag *g, const T *a, T *c) {     \
        enum { NB = TFC_GEMM_ROW_COLS / (VL) };                                                  \
        const int64_t N = g->N, K = g->K, sak = g->sak, sbk = g->sbk;                            \
        for (int64_t j0 = 0; j0 < N; j0 += NB * (VL)) {                                          \
            const int64_t nc = N - j0 < NB * (VL) ? N - j0 : NB * (VL);                          \
            const int64_t nv = TFC_IDIV(nc + (VL)-1, VL), whole = TFC_IDIV(nc, VL);              \
            V acc[NB];                                                                           \
            T pad[VL];                                                                           \
            for (int64_t v = 0; v < nv; ++v) {                                                   \
                for (int64_t l = 0; l < (VL); ++l) {                                             \
                    const int64_t j = v * (VL) + l;                                              \
                    pad[l] = j < nc && g->beta != (T)0 ? c[j0 + j] : (T)0;                       \
                }                                                                                \
                memcpy(&acc[v], pad, sizeof(V));                                                 \
                if (g->beta != (T)0 && g->beta != (T)1) acc[v] *= g->beta;                       \
            }                                                                                    \
            for (int64_t k = 0; k < K; ++k) {                                                    \
                const T ak = g->alpha == (T)1 ? a[k * sak] : g->alpha * a[k * sak];              \
                const V av = (V){0} + ak;                                                        \
                const T *b = g->B + k * sbk + j0;                                                \
                for (int64_t v = 0; v < whole; ++v) {                                            \
                    V bv;                                                                        \
                    memcpy(&bv, b + v * (VL), sizeof(V));                                        \
                    acc[v] = TFC_GEMM_FMA_##tag(av, bv, acc[v]);                                 \
                }                                                                                \
                if (whole < nv) {                                                                \
                    V bv;                                                                        \
                    for (int64_t l = 0; l < (VL); ++l)                                           \
                        pad[l] = whole * (VL) + l < nc ? b[whole * (VL) + l] : (T)0;             \
                    memcpy(&bv, pad, sizeof(V));                                                 \
                    acc[whole] = TFC_GEMM_FMA_##tag(av, bv, acc[whole]);                         \
                }                                                                                \
            }                                                                                    \
            for (int64_t v = 0; v < nv; ++v) {                                                   \
                if (g->bias != NULL) {                                                           \
                    V bv;                                                                        \
                    for (int64_t l = 0; l < (VL); ++l) {                                         \
                        const int64_t j = v * (VL) + l;                                          \
                        pad[l] = j < nc ? g->bias[j0 + j] : (T)0;                                \
                    }                                                                            \
                    memcpy(&bv, pad, sizeof(V));                                                 \
                    acc[v] += bv;                                                                \
                }                                                                                \
                if (g->relu) acc[v] = (V)((VI)acc[v] & ~(VI)(acc[v] < (V){0}));                  \
                if (v < whole) {                                                                 \
                    memcpy(c + j0 + v * (VL), &acc[v], sizeof(V));                               \
                } else {                                                                         \
                    memcpy(pad, &acc[v], sizeof(V));                                             \
                    memcpy(c + j0 + v * (VL), pad, (size_t)(nc - v * (VL)) * sizeof(T));         \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static inline void tfc_gemm_task_##tag(void *ctx, int64_t task) {                            \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t n0 = task * g->panels_per_task * 2 * (VL);                                 \
        const int64_t n1 = n0 + g->panels_per_task * 2 * (VL);                                   \
        tfc_gemm_columns_##tag(g, n0, n1 < g->N ? n1 : g->N);                                    \
    }                                                                                            \
                                                                                                 \
    static inline void tfc_gemm_##tag##_ex(int64_t M, int64_t N, int64_t K, const T *A,          \
                                           int64_t sam, int64_t sak, const T *B, int64_t sbk,    \
                                           int64_t sbn, T *C, int64_t ldc, T alpha, T beta,      \
                                           const T *bias, int relu) {                            \
        if (M <= 0 || N <= 0) return;                                                            \
        if (K <= 0) { /* an empty sum: the epilogue alone, the inputs untouched */               \
            for (int64_t i = 0; i < M; ++i)                                                      \
                for (int64_t j = 0; j < N; ++j) {                                                \
                    T t = beta == (T)0 ? (T)0 : beta * C[i * ldc + j];                           \
                    if (bias != NULL) t += bias[j];                                              \
                    if (relu && t < (T)0) t = 0;                                                 \
                    C[i * ldc + j] = t;                                                          \
                }                                                                                \
            return;                                                                              \
        }                                                                                        \
        tfc_gemm_args_##tag g = {M, N, K, sam, sak, sbk, sbn, ldc, A, B, bias, C, alpha,         \
                                 beta, relu, 0};                                                 \
        if (M <= TFC_GEMM_ROWS_MAX && sbn == 1) { /* a row or two: streaming B beats packing it */ \
            for (int64_t i = 0; i < M; ++i) tfc_gemm_row_##tag(&g, A + i * sam, C + i * ldc);    \
            return;                                                                              \
        }                                                                                        \
        const int64_t panels = TFC_IDIV(N + 2 * (VL)-1, 2 * (VL));                               \
        int64_t tasks = tfc_threads_count();                                                     \
        if (TFC_GEMM_SERIAL(M, N, K)) tasks = 1;                                                 \
        if (tasks > panels) tasks = panels;                                                      \
        if (tasks <= 1) {                                                                        \
            tfc_gemm_columns_##tag(&g, 0, N);                                                    \
            return;                                                                              \
        }                                                                                        \
        /* up to 3 tasks per thread of at least 4 panels: a thread that the OS delays (a shared  \
         * machine) leaves its share to the others; a task repacks A, so not smaller */         \
        const int64_t finer = tasks * 3 < TFC_IDIV(panels, 4) ? tasks * 3 : TFC_IDIV(panels, 4);  \
        if (finer > tasks) tasks = finer;                                                        \
        g.panels_per_task = TFC_IDIV(panels + tasks - 1, tasks);                                 \
        tasks = TFC_IDIV(panels + g.panels_per_task - 1, g.panels_per_task);                     \
        tfc_threads_parallel_for(tasks, tfc_gemm_task_##tag, &g);                                \
    }                                                                                            \
                                                                                                 \
    static inline void tfc_gemm_##tag(int64_t M, int64_t N, int64_t K, const T *A, int64_t sam,  \
                                      int64_t sak, const T *B, int64_t sbk, int64_t sbn, T *C) { \
        tfc_gemm_##tag##_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, (T)1, (T)0, NULL, 0);       \
    }

TFC_DEFINE_GEMM_FLOAT(f32, float, tfc_vf32, tfc_vi32, TFC_GEMM_VBYTES / 4, TFC_GEMM_KC)
TFC_DEFINE_GEMM_FLOAT(f64, double, tfc_vf64, tfc_vi64, TFC_GEMM_VBYTES / 8, TFC_GEMM_KC / 2)

/* Integer products (wrapping: the arithmetic is done in the unsigned type W). */
#define TFC_DEFINE_GEMM_INT(tag, T, W)                                                           \
    static inline void tfc_gemm_##tag(int64_t M, int64_t N, int64_t K, const T *restrict A,      \
                                      int64_t sam, int64_t sak, const T *restrict B,             \
                                      int64_t sbk, int64_t sbn, T *restrict C) {                 \
        for (int64_t i = 0; i < M; ++i) {                                                        \
            T *restrict c = C + i * N;                                                           \
            for (int64_t j = 0; j < N; ++j) c[j] = 0;                                            \
            for (int64_t k = 0; k < K; ++k) {                                                    \
                const W a = (W)A[i * sam + k * sak];                                             \
                const T *restrict b = B + k * sbk;                                               \
                for (int64_t j = 0; j < N; ++j) c[j] = (T)((W)c[j] + a * (W)b[j * sbn]);         \
            }                                                                                    \
        }                                                                                        \
    }

TFC_DEFINE_GEMM_INT(i32, int32_t, uint32_t)
TFC_DEFINE_GEMM_INT(i64, int64_t, uint64_t)

#endif /* TFC_GEMM_H */
