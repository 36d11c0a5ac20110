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
 * (scaled by alpha) into MR-row panels (row-major A with alpha 1 is read in place instead where
 * every tile of the block is a whole-width one of 2, 4 or MR rows: packing it is a transpose, and
 * the micro-kernel's broadcasts need no contiguous panel), N in NR-column panels of packed B,
 * and a register-blocked MR x NR micro-kernel written with GCC/Clang vector extensions (AVX-512:
 * 6 x 64 floats in 24 of its 32 registers, B's 4 vectors loaded once per k and A broadcast; AVX2:
 * 6 x 16 in 12; SSE, NEON and scalar targets get the same source split or lane by lane). K goes
 * in equal blocks of at most KC (a kc x NR panel of B stays in L1); row-major B is packed by the
 * first tile of each panel, which reads it in place and stores each row of the panel as it goes
 * (its loads from L2 or L3 overlap its multiply-adds; the panel layout, b[kc][NR], is the same
 * whoever packs it); transposed operands are packed VL x VL blocks at a time, transposed in
 * registers with GCC's shuffles; tiles of 2 or 4 rows (M = 64 is ten tiles of 6 and one of 4)
 * run a micro-kernel of that many rows, other edge tiles go through the same micro-kernel on a
 * zero-padded buffer, so every element of C
 * is the same chain of multiply-adds over k = 0..K-1 (fma(alpha*a_k, b_k, acc) from 0 or
 * beta*C, then bias, then relu) whatever its position, the block sizes or the number of
 * threads: a product computed row by row or split across threads has the same bits. The shape
 * picks the path (the generated code passes literal sizes, so the choice folds at compile
 * time), every path computing those same chains:
 *   - 1 or 2 rows with row-major B (a GEMV: batch-1 inference) skip the packing: B streams
 *     once per row through blocks of TFC_GEMM_ROW_COLS columns held in registers;
 *   - at most TFC_GEMM_TALL columns with A stored transposed (the gradient of a classifier's
 *     weights, X^T dY) where there are 32 vector registers: the tall kernel on C^T, two
 *     vectors of C's rows per column of C, A^T read in place, every lane useful;
 *   - at most one vector of columns otherwise (a classifier's logits): the narrow kernel, one
 *     vector per row of C, TFC_GEMM_NARROW rows of accumulators, A broadcast in place and B in
 *     a zero-padded kc x VL panel;
 *   - few columns for NR-wide panels but many rows: the packed algorithm on C^T = B^T A^T
 *     (swapped), C's rows filling the vectors, written back through the edge-tile path;
 *   - otherwise the packed algorithm.
 * Packing buffers live on the stack ((MC + NR) * KC elements: 164 KiB on AVX-512 hosts, 140 KiB
 * on other hosts, 9 KiB under TFC_EMBED): no allocation, no alignment requirement on any
 * pointer. Large products are split between the threads of tfc_threads.h over rows of C where
 * each thread then packs less (tfc_gemm_rows_pay: many rows), else over NR panels (of C^T when
 * swapped), over rows (narrow) or over blocks of TFC_GEMM_ROW_COLS columns (a row or two); one
 * task per thread goes to the same thread every call. The K reduction is never split.
 */
#ifndef TFC_GEMM_H
#define TFC_GEMM_H

#include <stdint.h>
#include <string.h>

#include "tfc_index.h"
#include "tfc_threads.h"

/* The float types' three packing paths (columns, narrow, tall: most of the code a product
 * compiles to) are TFC_GEMM_PATHs. Header-only by default (the embeddable library, CUDA
 * sources): static inline. Under TFC_GEMM_LINKED (the Session's programs, tfc/backend/cc.py;
 * the native executables' C sources, tfc/aot/sources.py) they are only declared, and
 * runtime/src/tfc_gemm_paths.c (TFC_GEMM_LIBRARY) defines them once per flag set, linked into
 * each program; the dispatcher, the thread tasks and the row path stay inline, so the choice of
 * path still folds at each call. Either way the same source, so the same bits. */
#if defined(TFC_GEMM_LIBRARY)
#define TFC_GEMM_PATH(name, params, ...) __attribute__((visibility("hidden"))) void name params __VA_ARGS__
#elif defined(TFC_GEMM_LINKED)
#define TFC_GEMM_PATH(name, params, ...) __attribute__((visibility("hidden"))) void name params;
#else
#define TFC_GEMM_PATH(name, params, ...) static inline void name params __VA_ARGS__
#endif

/* the micro-kernel's vectors: 64 bytes where AVX-512 has 32 registers of that width, 32 where
 * AVX has 16, else 16 bytes (SSE, NEON; scalar targets split them lane by lane) */
#if defined(__AVX512F__) && !defined(TFC_EMBED)
#define TFC_GEMM_VBYTES 64
#define TFC_GEMM_NV 4 /* MR x NR = 6 x 64 floats: 24 accumulators, 4 of B, 1 broadcast */
#elif defined(__AVX__)
#define TFC_GEMM_VBYTES 32
#define TFC_GEMM_NV 2 /* 6 x 16 floats in 12 of the 16 registers */
#else
#define TFC_GEMM_VBYTES 16
#define TFC_GEMM_NV 2
#endif

#ifndef TFC_GEMM_KC
#ifdef TFC_EMBED
#define TFC_GEMM_KC 64
#define TFC_GEMM_MC 24
#define TFC_GEMM_ROW_COLS 256
#else
#define TFC_GEMM_KC 128 /* float; double: half, the same bytes (kc x NR: 32 KiB) */
/* rows of A packed per block (A's block in L2, 132 KiB): 264 covers a batch of 256 in one block,
 * so B (transposed in dX = dY W^T) is packed once per product; 144 packed it twice there */
#define TFC_GEMM_MC 264
/* the row kernel's register block, in floats: 16 of AVX-512's 32 registers (a GEMV streams
 * its weights row by row: the wider the block, the fewer passes), 8 elsewhere */
#define TFC_GEMM_ROW_COLS (TFC_GEMM_VBYTES == 64 ? 256 : 2 * TFC_GEMM_VBYTES)
#endif
#endif
#define TFC_GEMM_MR 6
/* packed B of at least this many bytes streams from L3 or memory, past any core's L2: the
 * packed algorithm then prefetches the next panel (below it is in L2 already, and the
 * prefetches made the MNIST MLP's inference at batch 64, 784 x 512 and 512 x 512 layers,
 * 1.10x slower: bench/run.py mlp_infer_b64, 3 rounds per tree alternating, load 1.0) */
#ifndef TFC_GEMM_STREAM_BYTES
#define TFC_GEMM_STREAM_BYTES (4 << 20)
#endif
/* whether the first tile of a panel packs row-major B as it reads it (a copy of the micro-kernel:
 * not where code size counts) */
#ifdef TFC_EMBED
#define TFC_GEMM_FILL 0
#else
#define TFC_GEMM_FILL 1
#endif
/* rows of accumulators of the narrow kernel (products of at most one vector of columns) */
#define TFC_GEMM_NARROW 8
/* products of at most this many columns run the C^T kernel where there are 32 registers */
#define TFC_GEMM_TALL 12
/* products of at most this many rows (B row-major) skip the packing: one pass over B per row */
#ifndef TFC_GEMM_ROWS_MAX
#define TFC_GEMM_ROWS_MAX 2
#endif
/* products with fewer multiply-adds than this stay on one thread */
#ifndef TFC_GEMM_PARALLEL_MIN
#define TFC_GEMM_PARALLEL_MIN (1 << 20)
#endif

/* a row or two (batch-1 inference) split by columns from this many multiply-adds: each thread
 * always streams the same columns of B, so a B that overflows one core's L2 (a 784x512 layer's
 * 1.6 MB) stays resident in the threads' L2s together, not only in L3 */
#ifndef TFC_GEMM_ROW_PARALLEL_MIN
#define TFC_GEMM_ROW_PARALLEL_MIN (1 << 17)
#endif

/* whether a product stays on the calling thread: always in a single-threaded build, which
 * then computes no estimate (an embedded build does no double arithmetic) */
#ifdef TFC_NO_THREADS
#define TFC_GEMM_SERIAL(M, N, K) 1
#define TFC_GEMM_ROW_SERIAL(M, N, K) 1
#else
#define TFC_GEMM_SERIAL(M, N, K) \
    ((double)(M) * (double)(N) * (double)(K) < (double)TFC_GEMM_PARALLEL_MIN)
#define TFC_GEMM_ROW_SERIAL(M, N, K) \
    ((double)(M) * (double)(N) * (double)(K) < (double)TFC_GEMM_ROW_PARALLEL_MIN)
#endif

/* how many parts a fused kernel splits its M x N (depth K) product and epilogue into: one where
 * the GEMM would not split the product, else as an element-wise pass over M x N elements */
static inline int64_t tfc_gemm_fused_parts(int64_t M, int64_t N, int64_t K) {
    (void)K; /* unread in a single-threaded build */
    return TFC_GEMM_SERIAL(M, N, K) ? 1 : tfc_threads_parts(M * N);
}

/* a hint that the line at p is read soon, into L1 or into L2 (a prefetch never faults); with
 * TFC_GEMM_PREFETCH_READS (tests, under AddressSanitizer) a read of the byte at p instead, so
 * that an address outside the packed B it means is reported */
#if defined(TFC_GEMM_PREFETCH_READS)
#define TFC_GEMM_PREFETCH(p) ((void)*(const volatile char *)(p))
#define TFC_GEMM_PREFETCH_L2(p) ((void)*(const volatile char *)(p))
#elif defined(__GNUC__) || defined(__clang__)
#define TFC_GEMM_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define TFC_GEMM_PREFETCH_L2(p) __builtin_prefetch((p), 0, 1)
#else
#define TFC_GEMM_PREFETCH(p) ((void)(p))
#define TFC_GEMM_PREFETCH_L2(p) ((void)(p))
#endif

typedef float tfc_vf32 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(4)));
typedef int32_t tfc_vi32 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(4)));
typedef double tfc_vf64 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(8)));
typedef int64_t tfc_vi64 __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(8)));
/* the same vectors read and written in place of the elements (loads and stores of any
 * alignment that may alias float or double: no memcpy, which GCC splits into 32-byte halves
 * and then reloads through the stack) */
typedef float tfc_vf32u __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(4), may_alias));
typedef double tfc_vf64u __attribute__((vector_size(TFC_GEMM_VBYTES), aligned(8), may_alias));

/* The tasks that `blocks` blocks of a product's work split into between the threads: one
 * where `serial` or fewer than two blocks, else at most one per thread, *per_task blocks each
 * (set only then). */
static inline int64_t tfc_gemm_block_tasks(int64_t blocks, int serial, int64_t *per_task) {
    int64_t tasks = serial ? 1 : tfc_threads_count();
    if (tasks > blocks) tasks = blocks;
    if (tasks <= 1) return 1;
    *per_task = TFC_IDIV(blocks + tasks - 1, tasks);
    return TFC_IDIV(blocks + *per_task - 1, *per_task);
}

/* a vector of x in every lane: x - 0 is x for every x (-0 included), so it folds to a broadcast
 * where 0 + x, which is +0 for x = -0, costs an add */
#define TFC_GEMM_SPLAT(V, x) ((x) - (V){0})

/* tfc_gemm_tail_load/store_<tag>(p, [v,] n): the first n (<= all) lanes of a vector read from p
 * (the others zero) or written to p (nothing past them): one masked move on AVX-512, which does
 * not fault past the end, a copy through memory elsewhere */
#if TFC_GEMM_VBYTES == 64 && defined(__GNUC__) && !defined(__clang__)
#define TFC_GEMM_DEFINE_TAIL(tag, T, V, VL, M, LOAD, STORE)                                      \
    static inline V tfc_gemm_tail_load_##tag(const T *p, int64_t n) {                            \
        return LOAD(p, (V){0}, (M)((1u << n) - 1u));                                             \
    }                                                                                            \
    static inline void tfc_gemm_tail_store_##tag(T *p, V v, int64_t n) {                         \
        STORE(p, v, (M)((1u << n) - 1u));                                                        \
    }
#else
#define TFC_GEMM_DEFINE_TAIL(tag, T, V, VL, M, LOAD, STORE)                                      \
    static inline V tfc_gemm_tail_load_##tag(const T *p, int64_t n) {                            \
        T pad[VL] = {0};                                                                         \
        memcpy(pad, p, (size_t)n * sizeof(T));                                                   \
        V v;                                                                                     \
        memcpy(&v, pad, sizeof(V));                                                              \
        return v;                                                                                \
    }                                                                                            \
    static inline void tfc_gemm_tail_store_##tag(T *p, V v, int64_t n) {                         \
        T pad[VL];                                                                               \
        memcpy(pad, &v, sizeof(V));                                                              \
        memcpy(p, pad, (size_t)n * sizeof(T));                                                   \
    }
#endif
TFC_GEMM_DEFINE_TAIL(f32, float, tfc_vf32, TFC_GEMM_VBYTES / 4, unsigned short,
                     __builtin_ia32_loadups512_mask, __builtin_ia32_storeups512_mask)
TFC_GEMM_DEFINE_TAIL(f64, double, tfc_vf64, TFC_GEMM_VBYTES / 8, unsigned char,
                     __builtin_ia32_loadupd512_mask, __builtin_ia32_storeupd512_mask)

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

/* TFC_GEMM_TRANSPOSE(T, V, VI, VL, r): the VL x VL matrix held in vectors r[0..VL) transposed in
 * place. With GCC's two-input shuffles: log2(VL) rounds, each swapping the off-diagonal d x d
 * blocks of every 2d x 2d block (lane masks computed from the lane index, constants once
 * unrolled); elsewhere through memory (TFC_GEMM_SHUFFLE 0: the packing then keeps its scalar
 * loops, this only has to compile). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(TFC_EMBED)
#define TFC_GEMM_SHUFFLE 1
#define TFC_GEMM_TRANSPOSE(T, V, VI, VL, r)                                                      \
    do {                                                                                         \
        VI lane_;                                                                                \
        _Pragma("GCC unroll 16") for (int j_ = 0; j_ < (VL); ++j_) lane_[j_] = j_;               \
        _Pragma("GCC unroll 4") for (int d_ = (VL) / 2; d_ >= 1; d_ /= 2) {                      \
            const VI odd_ = (VI)((lane_ & d_) != 0) & ((VI){0} + ((VL)-d_));                     \
            const VI lo_ = lane_ + odd_, hi_ = lane_ + d_ + odd_;                                \
            _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (VL); ++i_) {                         \
                if (i_ & d_) continue;                                                           \
                const V a_ = (r)[i_], b_ = (r)[i_ + d_];                                         \
                (r)[i_] = __builtin_shuffle(a_, b_, lo_);                                        \
                (r)[i_ + d_] = __builtin_shuffle(a_, b_, hi_);                                   \
            }                                                                                    \
        }                                                                                        \
    } while (0)
#else
#define TFC_GEMM_SHUFFLE 0
#define TFC_GEMM_TRANSPOSE(T, V, VI, VL, r)                                                      \
    do {                                                                                         \
        T m_[VL][VL];                                                                            \
        memcpy(m_, (r), sizeof m_);                                                              \
        for (int i_ = 0; i_ < (VL); ++i_)                                                        \
            for (int j_ = 0; j_ < (VL); ++j_) (r)[i_][j_] = m_[j_][i_];                          \
    } while (0)
#endif

/* One float GEMM family per type: T the element, V its vector, VU the same read in place, VI the
 * same-width integer vector, VL lanes, NR = TFC_GEMM_NV * VL columns per micro-tile. */
/* the first row of part `part` of `parts` of M rows split between the threads: boundaries at
 * even rows, so that each part's last tile has 2, 4 or MR rows (micro-kernels of their own,
 * no tile buffer) */
static inline int64_t tfc_gemm_row_split(int64_t M, int64_t parts, int64_t part) {
    const int64_t pairs = TFC_IDIV(M + 1, 2);
    const int64_t row = 2 * TFC_IDIV(part * pairs, parts);
    return row < M ? row : M;
}

/* whether `tasks` threads pack less splitting C by rows than by NR panels of columns (a split
 * by columns packs all of A on every thread and its panels of B once per MC block of rows; by
 * rows, its own rows of A and all of B once per MC block of its rows). Large M: the forward
 * product of a batch of 256 packs 502K values a thread by rows against 602K by columns; at
 * M = 64 the columns win (251K against 426K). */
static inline int tfc_gemm_rows_pay(int64_t M, int64_t N, int64_t K, int64_t tasks, int64_t nr) {
    const int64_t share = TFC_IDIV(M + tasks - 1, tasks);
    if (share < 4 * TFC_GEMM_MR) return 0;
    const int64_t panels = TFC_IDIV(N + nr - 1, nr);
    const int64_t cols = TFC_IDIV(panels + tasks - 1, tasks) * nr;
    const int64_t by_cols = M * K + cols * K * TFC_IDIV(M + TFC_GEMM_MC - 1, TFC_GEMM_MC);
    const int64_t by_rows =
        share * K + panels * nr * K * TFC_IDIV(share + TFC_GEMM_MC - 1, TFC_GEMM_MC);
    return by_rows < by_cols;
}

/* the paths of tfc_gemm_<tag>_ex (tfc_gemm_path_<tag> picks one) */
enum {
    TFC_GEMM_PATH_ROWS,    /* a row or two: B streamed */
    TFC_GEMM_PATH_TALL,    /* few columns, A stored transposed: C^T in registers */
    TFC_GEMM_PATH_NARROW,  /* at most one vector of columns */
    TFC_GEMM_PATH_PACKED,  /* the packed algorithm on C */
    TFC_GEMM_PATH_SWAPPED, /* the packed algorithm on C^T = B^T A^T */
};

#define TFC_DEFINE_GEMM_FLOAT(tag, T, V, VU, VI, VL, KC)                                         \
    enum { tfc_gemm_nr_##tag = TFC_GEMM_NV * (VL) };                                             \
                                                                                                 \
    /* the micro-kernel: acc[mr][NR] = C, beta*C or 0, plus the products of a[kc][mr] (element   \
     * (k, r) at a[k*ask + r*asr]: packed, ask = MR and asr = 1; row-major A in place, ask = 1)  \
     * and b[kc][NR], b's rows sb apart (NR when packed; one FMA chain per element, k in order); \
     * then bias, relu and the store to C (row stride ldc). mr <= MR rows and fill (b's rows    \
     * also copied into the packed panel bout[kc][NR]) are constants where it is called          \
     * (tfc_gemm_kernel_* below), so an edge tile of fewer rows computes only those. Loads and   \
     * stores through VU (may alias T); the accumulators stay registers. */                      \
    static inline __attribute__((always_inline)) void tfc_gemm_kernel_rows_##tag(                \
        int64_t kc, const T *restrict a, int64_t ask, int64_t asr, const T *restrict b,          \
        int64_t sb, T *restrict bout, T *restrict c, int64_t ldc, T beta,                        \
        const T *restrict bias, int relu, const int mr, const int fill) {                        \
        enum { NV = TFC_GEMM_NV, MR = TFC_GEMM_MR, NR = TFC_GEMM_NV * (VL) };                    \
        V acc[MR][NV];                                                                           \
        if (beta == (T)0) {                                                                      \
            for (int r = 0; r < mr; ++r)                                                         \
                for (int v = 0; v < NV; ++v) acc[r][v] = (V){0};                                 \
        } else {                                                                                 \
            for (int r = 0; r < mr; ++r)                                                         \
                for (int v = 0; v < NV; ++v) {                                                   \
                    acc[r][v] = *(const VU *)(c + r * ldc + v * (VL));                           \
                    if (beta != (T)1) acc[r][v] *= beta;                                         \
                }                                                                                \
        }                                                                                        \
        for (int64_t k = 0; k < kc; ++k) {                                                       \
            V bv[NV];                                                                            \
            for (int v = 0; v < NV; ++v) bv[v] = *(const VU *)(b + k * sb + v * (VL));           \
            if (fill)                                                                            \
                for (int v = 0; v < NV; ++v) *(VU *)(bout + k * NR + v * (VL)) = bv[v];          \
            const T *restrict ak = a + k * ask;                                                  \
            for (int r = 0; r < mr; ++r) {                                                       \
                const V ar = TFC_GEMM_SPLAT(V, ak[r * asr]);                                     \
                for (int v = 0; v < NV; ++v) acc[r][v] = TFC_GEMM_FMA_##tag(ar, bv[v], acc[r][v]); \
            }                                                                                    \
        }                                                                                        \
        if (bias != NULL) {                                                                      \
            for (int v = 0; v < NV; ++v) {                                                       \
                const V bb = *(const VU *)(bias + v * (VL));                                     \
                for (int r = 0; r < mr; ++r) acc[r][v] += bb;                                    \
            }                                                                                    \
        }                                                                                        \
        if (relu) {                                                                              \
            for (int r = 0; r < mr; ++r)                                                         \
                for (int v = 0; v < NV; ++v)                                                     \
                    acc[r][v] = (V)((VI)acc[r][v] & ~(VI)(acc[r][v] < (V){0}));                  \
        }                                                                                        \
        for (int r = 0; r < mr; ++r)                                                             \
            for (int v = 0; v < NV; ++v) *(VU *)(c + r * ldc + v * (VL)) = acc[r][v];            \
    }                                                                                            \
                                                                                                 \
    /* the micro-kernel on mr = 2, 4 or MR rows: one inlined copy each (odd row counts run       \
     * rounded up, on the tile buffer), A packed (lda = 0) or read in place (rows lda apart) */  \
    static inline void tfc_gemm_kernel_##tag(int64_t kc, const T *restrict a, int64_t lda,       \
                                             const T *restrict b, T *restrict c, int64_t ldc,    \
                                             T beta, const T *restrict bias, int relu,           \
                                             int64_t mr) {                                       \
        enum { NR = TFC_GEMM_NV * (VL), MR = TFC_GEMM_MR };                                      \
        if (lda == 0) {                                                                          \
            if (mr <= 2) {                                                                       \
                tfc_gemm_kernel_rows_##tag(kc, a, MR, 1, b, NR, NULL, c, ldc, beta, bias, relu,  \
                                           2, 0);                                                \
            } else if (mr <= 4) {                                                                \
                tfc_gemm_kernel_rows_##tag(kc, a, MR, 1, b, NR, NULL, c, ldc, beta, bias, relu,  \
                                           4, 0);                                                \
            } else {                                                                             \
                tfc_gemm_kernel_rows_##tag(kc, a, MR, 1, b, NR, NULL, c, ldc, beta, bias, relu,  \
                                           MR, 0);                                               \
            }                                                                                    \
        } else if (TFC_GEMM_FILL) {                                                              \
            if (mr <= 2) {                                                                       \
                tfc_gemm_kernel_rows_##tag(kc, a, 1, lda, b, NR, NULL, c, ldc, beta, bias, relu, \
                                           2, 0);                                                \
            } else if (mr <= 4) {                                                                \
                tfc_gemm_kernel_rows_##tag(kc, a, 1, lda, b, NR, NULL, c, ldc, beta, bias, relu, \
                                           4, 0);                                                \
            } else {                                                                             \
                tfc_gemm_kernel_rows_##tag(kc, a, 1, lda, b, NR, NULL, c, ldc, beta, bias, relu, \
                                           MR, 0);                                               \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    /* the same on a panel of row-major B read in place (row stride sbk), copied into the packed \
     * panel bout as it goes: the first tile of a panel packs it for the others, its loads from \
     * L2 or L3 overlapping its multiply-adds instead of a copy loop of their own */             \
    static inline void tfc_gemm_kernel_fill_##tag(int64_t kc, const T *restrict a, int64_t lda,  \
                                                  const T *restrict b, int64_t sbk,              \
                                                  T *restrict bout, T *restrict c, int64_t ldc,  \
                                                  T beta, const T *restrict bias, int relu,      \
                                                  int64_t mr) {                                  \
        enum { MR = TFC_GEMM_MR };                                                               \
        const int64_t ask = lda == 0 ? MR : 1, asr = lda == 0 ? 1 : lda;                         \
        if (mr <= 2) {                                                                           \
            tfc_gemm_kernel_rows_##tag(kc, a, ask, asr, b, sbk, bout, c, ldc, beta, bias, relu,  \
                                       2, 1);                                                    \
        } else if (mr <= 4) {                                                                    \
            tfc_gemm_kernel_rows_##tag(kc, a, ask, asr, b, sbk, bout, c, ldc, beta, bias, relu,  \
                                       4, 1);                                                    \
        } else {                                                                                 \
            tfc_gemm_kernel_rows_##tag(kc, a, ask, asr, b, sbk, bout, c, ldc, beta, bias, relu,  \
                                       MR, 1);                                                   \
        }                                                                                        \
    }                                                                                            \
    /* rows [0, mc) x k [0, kc) of alpha*A into MR-row panels a[kc][MR], zero-padded rows.       \
     * A stored transposed (sam == 1) copies each k's MR contiguous values; row-major A with     \
     * vectors of at least MR lanes goes by VL k at a time: MR rows loaded (the last k block     \
     * with tail loads), transposed in registers, one overlapping store per k (each one's lanes  \
     * past MR rewritten by the next; the last one's land in the next panel, packed after it,    \
     * or in the VL elements of slack after the buffer). */                                      \
    static __attribute__((noinline, unused)) void tfc_gemm_pack_a_##tag(                         \
        int64_t mc, int64_t kc, const T *restrict A, int64_t sam, int64_t sak, T alpha,          \
        T *restrict out) {                                                                       \
        enum { MR = TFC_GEMM_MR };                                                               \
        for (int64_t i = 0; i < mc; i += MR) {                                                   \
            const int64_t rows = mc - i < MR ? mc - i : MR;                                      \
            T *restrict panel = out + i * kc;                                                    \
            if (rows == MR && sam == 1) {                                                        \
                const T *restrict col = A + i;                                                   \
                for (int64_t k = 0; k < kc; ++k)                                                 \
                    for (int r = 0; r < MR; ++r)                                                 \
                        panel[k * MR + r] = alpha == (T)1 ? col[k * sak + r]                     \
                                                          : alpha * col[k * sak + r];            \
                continue;                                                                        \
            }                                                                                    \
            if (TFC_GEMM_SHUFFLE && (VL) >= MR && rows == MR && sak == 1) {                      \
                for (int64_t k0 = 0; k0 < kc; k0 += (VL)) {                                      \
                    const int64_t kn = kc - k0 < (VL) ? kc - k0 : (VL);                          \
                    V v[VL];                                                                     \
                    for (int t = 0; t < (VL); ++t) {                                             \
                        const T *p = A + (i + t) * sam + k0;                                     \
                        v[t] = t >= MR ? (V){0}                                                  \
                               : kn == (VL) ? (V) * (const VU *)p                                \
                                            : tfc_gemm_tail_load_##tag(p, kn);                   \
                    }                                                                            \
                    if (alpha != (T)1)                                                           \
                        for (int t = 0; t < MR; ++t) v[t] *= TFC_GEMM_SPLAT(V, alpha);           \
                    TFC_GEMM_TRANSPOSE(T, V, VI, VL, v);                                         \
                    for (int t = 0; t < kn; ++t) *(VU *)(panel + (k0 + t) * MR) = v[t];          \
                }                                                                                \
                continue;                                                                        \
            }                                                                                    \
            for (int64_t r = 0; r < MR; ++r) {                                                   \
                if (r >= rows) {                                                                 \
                    for (int64_t k = 0; k < kc; ++k) panel[k * MR + r] = 0;                      \
                    continue;                                                                    \
                }                                                                                \
                const T *restrict row = A + (i + r) * sam;                                       \
                if (alpha == (T)1) {                                                             \
                    for (int64_t k = 0; k < kc; ++k) panel[k * MR + r] = row[k * sak];           \
                } else {                                                                         \
                    for (int64_t k = 0; k < kc; ++k) panel[k * MR + r] = alpha * row[k * sak];   \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* columns [0, nc) (nc <= NR) x kc rows of alpha*B into one panel b[kc][NR], zero-padded.    \
     * Row-major B copies rows; B stored transposed (sbk == 1, a transpose) goes by VL x VL      \
     * blocks transposed in registers where the compiler has shuffles (partial blocks read with  \
     * tail loads, zero vectors past column nc), else by blocks of 16 k: each column's 16        \
     * contiguous elements read, 16 rows of the panel written (in L1). */                        \
    static __attribute__((noinline, unused)) void tfc_gemm_pack_b_##tag(                         \
        int64_t nc, int64_t kc, const T *restrict B, int64_t sbk, int64_t sbn, T alpha,          \
        T *restrict out) {                                                                       \
        enum { NR = TFC_GEMM_NV * (VL), KB = 16 };                                               \
        if (sbn == 1 && alpha == (T)1 && nc == NR) { /* a constant size: vector moves */         \
            for (int64_t k = 0; k < kc; ++k) memcpy(out + k * NR, B + k * sbk, NR * sizeof(T));  \
            return;                                                                              \
        }                                                                                        \
        if (sbn == 1 && alpha == (T)1) {                                                         \
            for (int64_t k = 0; k < kc; ++k) {                                                   \
                memcpy(out + k * NR, B + k * sbk, (size_t)nc * sizeof(T));                       \
                for (int64_t j = nc; j < NR; ++j) out[k * NR + j] = 0;                           \
            }                                                                                    \
            return;                                                                              \
        }                                                                                        \
        if (TFC_GEMM_SHUFFLE && sbk == 1) {                                                      \
            for (int64_t j0 = 0; j0 < NR; j0 += (VL)) {                                          \
                for (int64_t k0 = 0; k0 < kc; k0 += (VL)) {                                      \
                    const int64_t kn = kc - k0 < (VL) ? kc - k0 : (VL);                          \
                    V v[VL];                                                                     \
                    for (int t = 0; t < (VL); ++t) {                                             \
                        const T *p = B + (j0 + t) * sbn + k0;                                    \
                        v[t] = j0 + t >= nc   ? (V){0}                                           \
                               : kn == (VL) ? (V) * (const VU *)p                                \
                                            : tfc_gemm_tail_load_##tag(p, kn);                   \
                    }                                                                            \
                    if (alpha != (T)1)                                                           \
                        for (int t = 0; t < (VL); ++t) v[t] *= TFC_GEMM_SPLAT(V, alpha);         \
                    TFC_GEMM_TRANSPOSE(T, V, VI, VL, v);                                         \
                    for (int t = 0; t < kn; ++t) *(VU *)(out + (k0 + t) * NR + j0) = v[t];       \
                }                                                                                \
            }                                                                                    \
            return;                                                                              \
        }                                                                                        \
        for (int64_t k0 = 0; k0 < kc; k0 += KB) {                                                \
            const int64_t kb = kc - k0 < KB ? kc - k0 : KB;                                      \
            T *restrict o = out + k0 * NR;                                                       \
            for (int64_t j = 0; j < nc; ++j) {                                                   \
                const T *restrict col = B + j * sbn + k0 * sbk;                                  \
                if (alpha == (T)1) {                                                             \
                    for (int64_t k = 0; k < kb; ++k) o[k * NR + j] = col[k * sbk];               \
                } else {                                                                         \
                    for (int64_t k = 0; k < kb; ++k) o[k * NR + j] = alpha * col[k * sbk];       \
                }                                                                                \
            }                                                                                    \
            for (int64_t k = 0; k < kb; ++k)                                                     \
                for (int64_t j = nc; j < NR; ++j) o[k * NR + j] = 0;                             \
        }                                                                                        \
    }                                                                                            \
    /* The packed algorithm runs on a view of the product: tile rows i and columns j of A'[i,k] *\
     * B'[k,j], element (i, j) stored at C[i*csr + j*csc]. Plain, A' = alpha*A, B' = B, csr = ldc,\
     * csc = 1; swapped (a product with few columns: C' = B^T A^T, its many rows fill NR-wide    \
     * vectors), A' = B^T, B' = alpha*A^T, csr = 1, csc = ldc, and bias and relu apply per row.  \
     * Either way every element is the chain fma(alpha*a_k, b_k, acc): the same bits. */         \
    typedef struct {                                                                             \
        int64_t M, N, K, sam, sak, sbk, sbn, ldc; /* the caller's product */                     \
        const T *A, *B, *bias;                                                                   \
        T *C, alpha, beta;                                                                       \
        int relu, swap;                                                                          \
        int64_t panels_per_task;                                                                 \
        const T *Bp; /* NULL, or B already in panels (tfc_gemm_packed.h; plain products only) */\
    } tfc_gemm_args_##tag;                                                                       \
                                                                                                 \
    /* columns [n0, n1) of the view: the whole packed algorithm on one thread. K goes in blocks  \
     * of equal size (at most KC: the kc x NR panel of B stays in L1 while every MR-row panel of \
     * A passes it), so no block is a sliver; tiles of fewer than MR rows run the micro-kernel   \
     * on those rows only, and only partial-width and swapped tiles use the tile buffer. */      \
    TFC_GEMM_PATH(tfc_gemm_columns_##tag,                                                        \
                  (const tfc_gemm_args_##tag *g, int64_t n0, int64_t n1), {                      \
        enum { NR = TFC_GEMM_NV * (VL), MR = TFC_GEMM_MR };                                      \
        T apack[((TFC_GEMM_MC + MR - 1) / MR) * MR * (KC) + (VL)];                               \
        T bpack[(KC) * NR];                                                                      \
        T tile[MR * NR], tile_bias[NR];                                                          \
        const int swap = g->swap;                                                                \
        const int64_t M = swap ? g->N : g->M, K = g->K;                                          \
        const T *const A = swap ? g->B : g->A, *const B = swap ? g->A : g->B;                    \
        const int64_t sam = swap ? g->sbn : g->sam, sak = swap ? g->sbk : g->sak;                \
        const int64_t sbk = swap ? g->sak : g->sbk, sbn = swap ? g->sam : g->sbn;                \
        const int64_t csr = swap ? 1 : g->ldc, csc = swap ? g->ldc : 1;                          \
        const T alpha_a = swap ? (T)1 : g->alpha, alpha_b = swap ? g->alpha : (T)1;              \
        const int64_t blocks = TFC_IDIV(K + (KC)-1, (KC));                                       \
        const int64_t kb = TFC_IDIV(K + blocks - 1, blocks);                                     \
        for (int64_t p0 = 0; p0 < K; p0 += kb) {                                                 \
            const int64_t kc = K - p0 < kb ? K - p0 : kb;                                        \
            const int first = p0 == 0, last = p0 + kc == K;                                      \
            const T beta = first ? g->beta : (T)1;                                               \
            const int relu = last && g->relu;                                                    \
            for (int64_t i0 = 0; i0 < M; i0 += TFC_GEMM_MC) {                                    \
                const int64_t mc = M - i0 < TFC_GEMM_MC ? M - i0 : TFC_GEMM_MC;                  \
                /* row-major A is read in place where every tile runs the micro-kernel on C:    \
                 * no packing pass (it transposes); a block with a partial panel or an odd row  \
                 * tile packs, for the tile buffer */                                            \
                const int64_t lda = TFC_GEMM_FILL && sak == 1 && alpha_a == (T)1 && !swap &&     \
                                            (n1 - n0) % NR == 0 &&                               \
                                            (mc % MR == 0 || mc % MR == 2 || mc % MR == 4)       \
                                        ? sam                                                    \
                                        : 0;                                                     \
                const T *const ablock = A + i0 * sam + p0 * sak;                                 \
                if (lda == 0) tfc_gemm_pack_a_##tag(mc, kc, ablock, sam, sak, alpha_a, apack);   \
                for (int64_t j0 = n0; j0 < n1; j0 += NR) {                                       \
                    const int64_t nc = n1 - j0 < NR ? n1 - j0 : (int64_t)NR;                     \
                    const int64_t mr0 = mc < MR ? mc : (int64_t)MR;                              \
                    const int fill = TFC_GEMM_FILL && g->Bp == NULL && nc == NR && !swap &&      \
                                     sbn == 1 && alpha_b == (T)1 &&                              \
                                     (mr0 == MR || mr0 == 2 || mr0 == 4);                        \
                    const T *bp = bpack;                                                         \
                    if (g->Bp != NULL) /* packed before the call: panel j0 / NR of block p0 */   \
                        bp = g->Bp + p0 * TFC_IDIV(g->N + NR - 1, NR) * NR + j0 * kc;            \
                    else if (!fill)                                                              \
                        tfc_gemm_pack_b_##tag(nc, kc, B + p0 * sbk + j0 * sbn, sbk, sbn,         \
                                              alpha_b, bpack);                                   \
                    const T *bias = last && !swap && g->bias != NULL ? g->bias + j0 : NULL;      \
                    if (bias != NULL && nc < NR) {                                               \
                        for (int64_t j = 0; j < NR; ++j) tile_bias[j] = j < nc ? bias[j] : 0;    \
                        bias = tile_bias;                                                        \
                    }                                                                            \
                    /* B packed before the call: the panel read next, spread over this one's \
                     * tiles, prefetched into L2 (the panels stream from L3 or memory, which   \
                     * the micro-kernel waited for at each new panel). ResNet-50's classifier \
                     * at batch 32 (32 x 2048 by 2048 x 1000, 8 MB of panels): 2.170 -> 1.796 \
                     * ms in the model, 0.83x, load 3.4-3.9 (bench/onnx_ab.py OLD NEW --model \
                     * resnet50 --batch 32 --rounds 2 --runs 3) */                            \
                    const char *ahead = NULL;                                                    \
                    int64_t ahead_lines = 0, ahead_per = 0;                                      \
                    if (g->Bp != NULL && i0 + mc >= M &&                                         \
                        (uint64_t)K * (uint64_t)g->N * sizeof(T) >=                              \
                            (uint64_t)TFC_GEMM_STREAM_BYTES) {                                   \
                        if (j0 + NR < n1) {                                                      \
                            ahead = (const char *)(bp + kc * NR);                                \
                            ahead_lines = TFC_IDIV(kc * NR * (int64_t)sizeof(T), 64);            \
                        } else if (!last) {                                                      \
                            const int64_t kn = K - p0 - kc < kb ? K - p0 - kc : kb;              \
                            ahead = (const char *)(g->Bp + (p0 + kc) *                           \
                                                               TFC_IDIV(g->N + NR - 1, NR) * NR +\
                                                   n0 * kn);                                     \
                            ahead_lines = TFC_IDIV(kn * NR * (int64_t)sizeof(T), 64);            \
                        }                                                                        \
                        ahead_per = TFC_IDIV(ahead_lines * MR + mc - 1, mc);                     \
                    }                                                                            \
                    for (int64_t i = 0; i < mc; i += MR) {                                       \
                        const int64_t mr = mc - i < MR ? mc - i : (int64_t)MR;                   \
                        T *c = g->C + (i0 + i) * csr + j0 * csc;                                 \
                        for (int64_t l = TFC_IDIV(i, MR) * ahead_per, e = l + ahead_per;         \
                             l < e && l < ahead_lines; ++l)                                      \
                            TFC_GEMM_PREFETCH_L2(ahead + l * 64);                                \
                        const T *a = lda ? ablock + i * lda : apack + i * kc;                    \
                        if (fill && i == 0) {                                                    \
                            tfc_gemm_kernel_fill_##tag(kc, a, lda, B + p0 * sbk + j0, sbk,       \
                                                       bpack, c, csr, beta, bias, relu, mr);     \
                            continue;                                                            \
                        }                                                                        \
                        if (nc == NR && !swap && (mr == MR || mr == 2 || mr == 4)) {             \
                            tfc_gemm_kernel_##tag(kc, a, lda, bp, c, csr, beta, bias, relu, mr); \
                            continue;                                                            \
                        }                                                                        \
                        for (int64_t r = 0; r < MR; ++r)                                         \
                            for (int64_t j = 0; j < NR; ++j)                                     \
                                tile[r * NR + j] = r < mr && j < nc && beta != (T)0              \
                                                       ? c[r * csr + j * csc]                    \
                                                       : (T)0;                                   \
                        tfc_gemm_kernel_##tag(kc, apack + i * kc, 0, bp, tile, NR, beta, bias,   \
                                              relu && !swap, mr);                                \
                        for (int64_t r = 0; r < mr; ++r) {                                       \
                            const T *t = tile + r * NR;                                          \
                            if (!swap) {                                                         \
                                memcpy(c + r * csr, t, (size_t)nc * sizeof(T));                  \
                                continue;                                                        \
                            }                                                                    \
                            /* the epilogue of a swapped product: its rows are C's columns */    \
                            const T add = last && g->bias != NULL ? g->bias[i0 + i + r] : (T)0;  \
                            for (int64_t j = 0; j < nc; ++j) {                                   \
                                T x = t[j];                                                      \
                                if (last && g->bias != NULL) x += add;                           \
                                if (relu && x < (T)0) x = 0;                                     \
                                c[r + j * csc] = x;                                              \
                            }                                                                    \
                        }                                                                        \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    })                                                                                           \
    /* one row of C when B's rows are contiguous (sbn == 1): no packing, no padding to MR rows.  \
     * Blocks of NB vectors of columns stay in registers while B streams through them, k in order\
     * (each element the same multiply-add chain as in the micro-kernel); the last partial vector\
     * goes through a padded copy. Columns [j_begin, j_end): j_begin a multiple of NB vectors,  \
     * j_end one too or N (the threads' shares of the columns). */                               \
    static inline void tfc_gemm_row_##tag(const tfc_gemm_args_##tag *g, const T *a, T *c,        \
                                          int64_t j_begin, int64_t j_end) {                      \
        enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                                   \
        const int64_t N = j_end, K = g->K, sak = g->sak, sbk = g->sbk;                           \
        const T alpha = g->alpha, beta = g->beta;                                                \
        const T *restrict bias = g->bias;                                                        \
        const int relu = g->relu;                                                                \
        int64_t j0 = j_begin;                                                                    \
        for (; j0 + NB * (VL) <= N; j0 += NB * (VL)) { /* whole blocks: registers */             \
            V acc[NB];                                                                           \
            for (int v = 0; v < NB; ++v) {                                                       \
                if (beta == (T)0) {                                                              \
                    acc[v] = (V){0};                                                             \
                } else {                                                                         \
                    acc[v] = *(const VU *)(c + j0 + v * (VL));                                   \
                    if (beta != (T)1) acc[v] *= beta;                                            \
                }                                                                                \
            }                                                                                    \
            const T *restrict b = g->B + j0;                                                     \
            for (int64_t k = 0; k < K; ++k) {                                                    \
                const V av = TFC_GEMM_SPLAT(V, alpha == (T)1 ? a[k * sak] : alpha * a[k * sak]); \
                for (int v = 0; v < NB; ++v)                                                     \
                    acc[v] = TFC_GEMM_FMA_##tag(av, *(const VU *)(b + k * sbk + v * (VL)), acc[v]);\
            }                                                                                    \
            for (int v = 0; v < NB; ++v) {                                                       \
                if (bias != NULL) acc[v] += *(const VU *)(bias + j0 + v * (VL));                 \
                if (relu) acc[v] = (V)((VI)acc[v] & ~(VI)(acc[v] < (V){0}));                     \
                *(VU *)(c + j0 + v * (VL)) = acc[v];                                             \
            }                                                                                    \
        }                                                                                        \
        /* the last columns, one vector at a time (the last one partial: tfc_gemm_tail_*) */     \
        for (; j0 < N; j0 += (VL)) {                                                             \
            const int64_t n = N - j0 < (VL) ? N - j0 : (VL);                                     \
            V acc = beta == (T)0 ? (V){0} : tfc_gemm_tail_load_##tag(c + j0, n);                 \
            if (beta != (T)0 && beta != (T)1) acc *= beta;                                       \
            const T *b = g->B + j0;                                                              \
            for (int64_t k = 0; k < K; ++k) {                                                    \
                const V av = TFC_GEMM_SPLAT(V, alpha == (T)1 ? a[k * sak] : alpha * a[k * sak]); \
                const V bv = n == (VL) ? (V) * (const VU *)(b + k * sbk)                         \
                                       : tfc_gemm_tail_load_##tag(b + k * sbk, n);               \
                acc = TFC_GEMM_FMA_##tag(av, bv, acc);                                           \
            }                                                                                    \
            if (bias != NULL) acc += tfc_gemm_tail_load_##tag(bias + j0, n);                     \
            if (relu) acc = (V)((VI)acc & ~(VI)(acc < (V){0}));                                  \
            tfc_gemm_tail_store_##tag(c + j0, acc, n);                                           \
        }                                                                                        \
    }                                                                                            \
    /* a thread's columns of a product of a row or two: panels_per_task blocks of the row path */\
    static inline void tfc_gemm_row_task_##tag(void *ctx, int64_t task) {                        \
        enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                                   \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t j0 = task * g->panels_per_task * NB * (VL);                                \
        const int64_t j1 = j0 + g->panels_per_task * NB * (VL);                                  \
        const int64_t end = j1 < g->N ? j1 : g->N;                                               \
        for (int64_t i = 0; i < g->M; ++i)                                                       \
            tfc_gemm_row_##tag(g, g->A + i * g->sam, g->C + i * g->ldc, j0, end);                \
    }                                                                                            \
    /* rows [m0, m1) of C (task of panels_per_task): the packed algorithm on that view, its own  \
     * rows of A packed and all of B, each element the same chain as in the whole product */     \
    static inline void tfc_gemm_rows_task_##tag(void *ctx, int64_t task) {                       \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t m0 = tfc_gemm_row_split(g->M, g->panels_per_task, task);                   \
        const int64_t m1 = tfc_gemm_row_split(g->M, g->panels_per_task, task + 1);               \
        if (m1 <= m0) return;                                                                    \
        tfc_gemm_args_##tag view = *g;                                                           \
        view.M = m1 - m0;                                                                        \
        view.A = g->A + m0 * g->sam;                                                             \
        view.C = g->C + m0 * g->ldc;                                                             \
        tfc_gemm_columns_##tag(&view, 0, g->N);                                                  \
    }                                                                                            \
    static inline void tfc_gemm_task_##tag(void *ctx, int64_t task) {                            \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t n0 = task * g->panels_per_task * TFC_GEMM_NV * (VL);                       \
        const int64_t n1 = n0 + g->panels_per_task * TFC_GEMM_NV * (VL);                         \
        const int64_t cols = g->swap ? g->M : g->N;                                              \
        tfc_gemm_columns_##tag(g, n0, n1 < cols ? n1 : cols);                                    \
    }                                                                                            \
                                                                                                 \
    /* Products of at most VL columns (N <= VL, the logits of a classifier and their gradients): \
     * one vector per row of C, NARROW rows of accumulators, A broadcast in place (no packing), B\
     * in kc x VL zero-padded panels. The same multiply-add chains as the micro-kernel's. */     \
    static inline __attribute__((always_inline)) void tfc_gemm_narrow_rows_##tag(                \
        const tfc_gemm_args_##tag *g, int64_t i0, int64_t rows, int64_t p0, int64_t kc,          \
        const T *restrict bpack, T beta, int last) {                                             \
        V acc[TFC_GEMM_NARROW];                                                                  \
        const int64_t N = g->N, ldc = g->ldc, sam = g->sam, sak = g->sak;                        \
        const T alpha = g->alpha;                                                                \
        for (int64_t r = 0; r < TFC_GEMM_NARROW; ++r) {                                          \
            if (beta == (T)0 || r >= rows) {                                                     \
                acc[r] = (V){0};                                                                 \
                continue;                                                                        \
            }                                                                                    \
            acc[r] = tfc_gemm_tail_load_##tag(g->C + (i0 + r) * ldc, N);                         \
            if (beta != (T)1) acc[r] *= beta;                                                    \
        }                                                                                        \
        /* all R rows every time (constant trip counts keep acc in registers): rows past the     \
         * edge repeat the last row, their sums unused */                                        \
        const T *restrict ar[TFC_GEMM_NARROW];                                                   \
        for (int r = 0; r < TFC_GEMM_NARROW; ++r)                                                \
            ar[r] = g->A + (i0 + (r < rows ? r : rows - 1)) * sam + p0 * sak;                    \
        if (alpha == (T)1 && sak == 1) { /* row-major A: each row's pointer steps by one */      \
            for (int64_t k = 0; k < kc; ++k) {                                                   \
                const V bv = *(const VU *)(bpack + k * (VL));                                    \
                for (int r = 0; r < TFC_GEMM_NARROW; ++r)                                        \
                    acc[r] = TFC_GEMM_FMA_##tag(TFC_GEMM_SPLAT(V, ar[r][k]), bv, acc[r]);        \
            }                                                                                    \
        } else if (alpha == (T)1) {                                                              \
            for (int64_t k = 0; k < kc; ++k) {                                                   \
                const V bv = *(const VU *)(bpack + k * (VL));                                    \
                for (int r = 0; r < TFC_GEMM_NARROW; ++r)                                        \
                    acc[r] = TFC_GEMM_FMA_##tag(TFC_GEMM_SPLAT(V, ar[r][k * sak]), bv, acc[r]);  \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t k = 0; k < kc; ++k) {                                                   \
                const V bv = *(const VU *)(bpack + k * (VL));                                    \
                for (int r = 0; r < TFC_GEMM_NARROW; ++r)                                        \
                    acc[r] = TFC_GEMM_FMA_##tag(TFC_GEMM_SPLAT(V, alpha * ar[r][k * sak]), bv,   \
                                                acc[r]);                                         \
            }                                                                                    \
        }                                                                                        \
        V bias = {0};                                                                            \
        if (last && g->bias != NULL) bias = tfc_gemm_tail_load_##tag(g->bias, N);                \
        for (int64_t r = 0; r < rows; ++r) {                                                     \
            if (last && g->bias != NULL) acc[r] += bias;                                         \
            if (last && g->relu) acc[r] = (V)((VI)acc[r] & ~(VI)(acc[r] < (V){0}));              \
            tfc_gemm_tail_store_##tag(g->C + (i0 + r) * ldc, acc[r], N);                         \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* rows [m0, m1) of a narrow product */                                                      \
    TFC_GEMM_PATH(tfc_gemm_narrow_##tag,                                                         \
                  (const tfc_gemm_args_##tag *g, int64_t m0, int64_t m1), {                      \
        enum { R = TFC_GEMM_NARROW };                                                            \
        T bpack[(KC) * (VL)];                                                                    \
        const int64_t N = g->N, K = g->K;                                                        \
        for (int64_t p0 = 0; p0 < K; p0 += (KC)) {                                               \
            const int64_t kc = K - p0 < (KC) ? K - p0 : (KC);                                    \
            for (int64_t k = 0; k < kc; ++k)                                                     \
                for (int64_t j = 0; j < (VL); ++j)                                               \
                    bpack[k * (VL) + j] = j < N ? g->B[(p0 + k) * g->sbk + j * g->sbn] : (T)0;   \
            const T beta = p0 == 0 ? g->beta : (T)1;                                             \
            const int last = p0 + kc == K;                                                       \
            int64_t i = m0;                                                                      \
            for (; i + R <= m1; i += R)                                                          \
                tfc_gemm_narrow_rows_##tag(g, i, R, p0, kc, bpack, beta, last);                  \
            if (i < m1) tfc_gemm_narrow_rows_##tag(g, i, m1 - i, p0, kc, bpack, beta, last);     \
        }                                                                                        \
    })                                                                                           \
                                                                                                 \
    static inline void tfc_gemm_narrow_task_##tag(void *ctx, int64_t task) {                     \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t m0 = task * g->panels_per_task * TFC_GEMM_NARROW;                          \
        const int64_t m1 = m0 + g->panels_per_task * TFC_GEMM_NARROW;                            \
        tfc_gemm_narrow_##tag(g, m0, m1 < g->M ? m1 : g->M);                                     \
    }                                                                                            \
                                                                                                 \
    /* Products of at most TFC_GEMM_TALL columns with A stored transposed on targets with 32     \
     * vector registers (the gradient of a classifier's weights, dW = X^T dY): C^T, one row per  \
     * column of C, two vectors of C's rows each, so every lane does useful work whatever N is.  \
     * Per k: two vectors of alpha*A^T (read in place, or packed kc x 2VL by tfc_gemm_pack_b at  \
     * an edge or with alpha), N broadcasts of B's row k, 2N FMAs into nn x 2 accumulators       \
     * (nn = N, a constant where it is called). C^T lives in a buffer between K blocks (loaded   \
     * into registers for a block's k loop: no accumulator lives across the packing) and goes in \
     * and out of C transposed. fma(b_k, alpha*a_k, acc) is the micro-kernel's                   \
     * fma(alpha*a_k, b_k, acc): the same chains, the same bits. */                              \
    static inline __attribute__((always_inline)) void tfc_gemm_tall_block_##tag(                 \
        int64_t kc, const T *restrict at, int64_t lda, const T *restrict b, int64_t sbk,         \
        int64_t sbn, int64_t N, T (*restrict buf)[2 * (VL)], const int nn) {                     \
        V acc0[TFC_GEMM_TALL], acc1[TFC_GEMM_TALL];                                              \
        for (int n = 0; n < nn; ++n)                                                             \
            acc0[n] = *(const VU *)buf[n], acc1[n] = *(const VU *)(buf[n] + (VL));               \
        for (int64_t k = 0; k < kc; ++k) {                                                       \
            const V a0 = *(const VU *)(at + k * lda), a1 = *(const VU *)(at + k * lda + (VL));   \
            for (int n = 0; n < nn; ++n) {                                                       \
                const V bn = TFC_GEMM_SPLAT(V, b[k * sbk + (n < N ? n : N - 1) * sbn]);          \
                acc0[n] = TFC_GEMM_FMA_##tag(bn, a0, acc0[n]);                                   \
                acc1[n] = TFC_GEMM_FMA_##tag(bn, a1, acc1[n]);                                   \
            }                                                                                    \
        }                                                                                        \
        for (int n = 0; n < nn; ++n)                                                             \
            *(VU *)buf[n] = acc0[n], *(VU *)(buf[n] + (VL)) = acc1[n];                           \
    }                                                                                            \
                                                                                                 \
    /* the end of a C^T block of the tall kernel: bias and relu on buf (nn rows of C^T, 2VL      \
     * columns), then its first mn columns written to C's rows (transposed in registers where    \
     * there are shuffles, element by element elsewhere) */                                      \
    static __attribute__((noinline, unused)) void tfc_gemm_tall_store_##tag(                     \
        const tfc_gemm_args_##tag *g, T (*restrict buf)[2 * (VL)], T *restrict c, int64_t mn,    \
        int nn) {                                                                                \
        const int64_t ldc = g->ldc;                                                              \
        for (int v = 0; v < 2; ++v) {                                                            \
            enum { X = (VL) > TFC_GEMM_TALL ? (VL) : TFC_GEMM_TALL };                            \
            V x[X]; /* VL rows to transpose, nn of them nonzero (nn may pass VL: double) */      \
            for (int n = 0; n < X; ++n) {                                                        \
                if (n >= nn) {                                                                   \
                    x[n] = (V){0};                                                               \
                    continue;                                                                    \
                }                                                                                \
                x[n] = *(const VU *)(buf[n] + v * (VL));                                         \
                if (g->bias != NULL) x[n] += TFC_GEMM_SPLAT(V, g->bias[n]);                      \
                if (g->relu) x[n] = (V)((VI)x[n] & ~(VI)(x[n] < (V){0}));                        \
            }                                                                                    \
            const int64_t rows = mn - v * (VL) < (VL) ? mn - v * (VL) : (VL);                    \
            if (TFC_GEMM_SHUFFLE && nn <= (VL)) { /* C's rows as vectors, N lanes stored */      \
                TFC_GEMM_TRANSPOSE(T, V, VI, VL, x);                                             \
                for (int64_t l = 0; l < rows; ++l)                                               \
                    tfc_gemm_tail_store_##tag(c + (v * (VL) + l) * ldc, x[l], nn);               \
            } else {                                                                             \
                for (int64_t l = 0; l < rows; ++l)                                               \
                    for (int n = 0; n < nn; ++n) c[(v * (VL) + l) * ldc + n] = x[n][l];          \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static inline __attribute__((always_inline)) void tfc_gemm_tall_cols_##tag(                  \
        const tfc_gemm_args_##tag *g, int64_t m0, int64_t m1, const int nn) {                    \
        enum { NR = TFC_GEMM_NV * (VL), W = 2 * (VL) };                                          \
        T apack[(KC) * NR];                                                                      \
        T buf[TFC_GEMM_TALL][W];                                                                 \
        const int64_t K = g->K, ldc = g->ldc, sbk = g->sbk, sbn = g->sbn;                        \
        const T alpha = g->alpha, beta = g->beta;                                                \
        const int64_t blocks = TFC_IDIV(K + (KC)-1, (KC));                                       \
        const int64_t kb = TFC_IDIV(K + blocks - 1, blocks);                                     \
        for (int64_t i = m0; i < m1; i += W) {                                                   \
            const int64_t mn = m1 - i < W ? m1 - i : W;                                          \
            T *c = g->C + i * ldc;                                                               \
            memset(buf, 0, sizeof buf);                                                          \
            if (beta != (T)0)                                                                    \
                for (int n = 0; n < nn; ++n)                                                     \
                    for (int64_t l = 0; l < mn; ++l)                                             \
                        buf[n][l] = beta == (T)1 ? c[l * ldc + n] : beta * c[l * ldc + n];       \
            for (int64_t p0 = 0; p0 < K; p0 += kb) {                                             \
                const int64_t kc = K - p0 < kb ? K - p0 : kb;                                    \
                const T *at = g->A + i * g->sam + p0 * g->sak;                                   \
                int64_t lda = g->sak;                                                            \
                if (!(g->sam == 1 && mn == W && alpha == (T)1)) {                                \
                    tfc_gemm_pack_b_##tag(mn, kc, at, g->sak, g->sam, alpha, apack);             \
                    at = apack, lda = NR;                                                        \
                }                                                                                \
                tfc_gemm_tall_block_##tag(kc, at, lda, g->B + p0 * sbk, sbk, sbn, g->N, buf, nn);\
            }                                                                                    \
            tfc_gemm_tall_store_##tag(g, buf, c, mn, (int)g->N);                                 \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* rows [m0, m1) of a product of N <= TFC_GEMM_TALL columns: one inlined copy for each of    \
     * nn = 4, 8, 10 and 12 rows of C^T, N rounded up (the rows past N repeat column N-1 of B    \
     * and are not stored) */                                                                    \
    TFC_GEMM_PATH(tfc_gemm_tall_##tag,                                                           \
                  (const tfc_gemm_args_##tag *g, int64_t m0, int64_t m1), {                      \
        if (g->N <= 4) {                                                                         \
            tfc_gemm_tall_cols_##tag(g, m0, m1, 4);                                              \
        } else if (g->N <= 8) {                                                                  \
            tfc_gemm_tall_cols_##tag(g, m0, m1, 8);                                              \
        } else if (g->N <= 10) {                                                                 \
            tfc_gemm_tall_cols_##tag(g, m0, m1, 10);                                             \
        } else {                                                                                 \
            tfc_gemm_tall_cols_##tag(g, m0, m1, TFC_GEMM_TALL);                                  \
        }                                                                                        \
    })                                                                                           \
    static inline void tfc_gemm_tall_task_##tag(void *ctx, int64_t task) {                       \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t m0 = task * g->panels_per_task * 2 * (VL);                                 \
        const int64_t m1 = m0 + g->panels_per_task * 2 * (VL);                                   \
        tfc_gemm_tall_##tag(g, m0, m1 < g->M ? m1 : g->M);                                       \
    }                                                                                            \
    /* whether computing C^T = B^T A^T pads less: a product of few columns and many rows */      \
    static inline int tfc_gemm_swap_##tag(int64_t M, int64_t N) {                                \
        enum { NR = TFC_GEMM_NV * (VL), MR = TFC_GEMM_MR };                                      \
        const int64_t plain = TFC_IDIV(M + MR - 1, MR) * MR * TFC_IDIV(N + NR - 1, NR) * NR;     \
        const int64_t swapped = TFC_IDIV(N + MR - 1, MR) * MR * TFC_IDIV(M + NR - 1, NR) * NR;   \
        return 4 * swapped < 3 * plain;                                                          \
    }                                                                                            \
    /* the path tfc_gemm_<tag>_ex takes for a product of M, N, K > 0 (the one place that order   \
     * is written: tfc_gemm_packed.h asks it which products pack B whole) */                     \
    static inline int tfc_gemm_path_##tag(int64_t M, int64_t N, int64_t sam, int64_t sbn) {      \
        if (M <= TFC_GEMM_ROWS_MAX && sbn == 1) return TFC_GEMM_PATH_ROWS;                       \
        if (TFC_GEMM_VBYTES == 64 && N <= TFC_GEMM_TALL && sam == 1) return TFC_GEMM_PATH_TALL;  \
        if (N <= (VL)) return TFC_GEMM_PATH_NARROW;                                              \
        return tfc_gemm_swap_##tag(M, N) ? TFC_GEMM_PATH_SWAPPED : TFC_GEMM_PATH_PACKED;         \
    }                                                                                            \
                                                                                                 \
    /* the packed algorithm on g (g->swap set), C split between the threads: by rows where each \
     * thread then packs less (its own rows of A; with B already packed, whenever each thread   \
     * has rows enough), otherwise by column panels */                                          \
    static inline void tfc_gemm_packed_split_##tag(tfc_gemm_args_##tag *g) {                     \
        const int64_t M = g->M, N = g->N, K = g->K;                                              \
        const int64_t cols = g->swap ? M : N;                                                    \
        const int64_t panels = TFC_IDIV(cols + TFC_GEMM_NV * (VL)-1, TFC_GEMM_NV * (VL));        \
        int64_t tasks = TFC_GEMM_SERIAL(M, N, K) ? 1 : tfc_threads_count();                      \
        const int by_rows = g->Bp != NULL ? TFC_IDIV(M + tasks - 1, tasks) >= 4 * TFC_GEMM_MR    \
                                          : tfc_gemm_rows_pay(M, N, K, tasks, TFC_GEMM_NV * (VL));\
        if (tasks > 1 && !g->swap && by_rows) {                                                  \
            g->panels_per_task = tasks; /* the row task's count of parts */                      \
            tfc_threads_parallel_parts(tasks, tfc_gemm_rows_task_##tag, g);                      \
            return;                                                                              \
        }                                                                                        \
        if (tasks > panels) tasks = panels;                                                      \
        if (tasks <= 1) {                                                                        \
            tfc_gemm_columns_##tag(g, 0, cols);                                                  \
            return;                                                                              \
        }                                                                                        \
        const int64_t threads = tasks;                                                           \
        /* up to 3 tasks per thread of at least 4 panels: a thread that the OS delays (a shared  \
         * machine) leaves its share to the others; a task repacks A, so not smaller */          \
        const int64_t finer = tasks * 3 < TFC_IDIV(panels, 4) ? tasks * 3 : TFC_IDIV(panels, 4); \
        if (finer > tasks) tasks = finer;                                                        \
        g->panels_per_task = TFC_IDIV(panels + tasks - 1, tasks);                                \
        tasks = TFC_IDIV(panels + g->panels_per_task - 1, g->panels_per_task);                   \
        if (tasks <= threads) { /* a task per thread: the same columns on the same thread */     \
            tfc_threads_parallel_parts(tasks, tfc_gemm_task_##tag, g);                           \
        } else {                                                                                 \
            tfc_threads_parallel_for(tasks, tfc_gemm_task_##tag, g);                             \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static inline __attribute__((always_inline)) void tfc_gemm_##tag##_ex(                       \
        int64_t M, int64_t N, int64_t K, const T *A,                                              \
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
                                 beta, relu, 0, 0, NULL};                                        \
        const int path = tfc_gemm_path_##tag(M, N, sam, sbn);                                    \
        if (path == TFC_GEMM_PATH_ROWS) { /* a row or two: streaming B beats packing it */       \
            enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                               \
            const int64_t blocks = TFC_IDIV(N + NB * (VL)-1, NB * (VL));                         \
            const int64_t tasks = tfc_gemm_block_tasks(                                          \
                blocks, TFC_GEMM_ROW_SERIAL(M, N, K), &g.panels_per_task);                       \
            if (tasks <= 1) {                                                                    \
                for (int64_t i = 0; i < M; ++i)                                                  \
                    tfc_gemm_row_##tag(&g, A + i * sam, C + i * ldc, 0, N);                      \
                return;                                                                          \
            }                                                                                    \
            tfc_threads_parallel_parts(tasks, tfc_gemm_row_task_##tag, &g);                      \
            return;                                                                              \
        }                                                                                        \
        if (path == TFC_GEMM_PATH_TALL) { /* C^T, rows split */                                  \
            const int64_t blocks = TFC_IDIV(M + 2 * (VL)-1, 2 * (VL));                           \
            const int64_t tasks = tfc_gemm_block_tasks(                                          \
                blocks, TFC_GEMM_SERIAL(M, N, K), &g.panels_per_task);                           \
            if (tasks <= 1) {                                                                    \
                tfc_gemm_tall_##tag(&g, 0, M);                                                   \
                return;                                                                          \
            }                                                                                    \
            tfc_threads_parallel_parts(tasks, tfc_gemm_tall_task_##tag, &g);                     \
            return;                                                                              \
        }                                                                                        \
        if (path == TFC_GEMM_PATH_NARROW) { /* one vector per row of C: rows split by threads */ \
            const int64_t blocks = TFC_IDIV(M + TFC_GEMM_NARROW - 1, TFC_GEMM_NARROW);           \
            const int64_t tasks = tfc_gemm_block_tasks(                                          \
                blocks, TFC_GEMM_SERIAL(M, N, K), &g.panels_per_task);                           \
            if (tasks <= 1) {                                                                    \
                tfc_gemm_narrow_##tag(&g, 0, M);                                                 \
                return;                                                                          \
            }                                                                                    \
            tfc_threads_parallel_parts(tasks, tfc_gemm_narrow_task_##tag, &g);                   \
            return;                                                                              \
        }                                                                                        \
        g.swap = path == TFC_GEMM_PATH_SWAPPED;                                                  \
        tfc_gemm_packed_split_##tag(&g);                                                         \
    }                                                                                            \
                                                                                                 \
    static inline void tfc_gemm_##tag(int64_t M, int64_t N, int64_t K, const T *A, int64_t sam,  \
                                      int64_t sak, const T *B, int64_t sbk, int64_t sbn, T *C) { \
        tfc_gemm_##tag##_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, (T)1, (T)0, NULL, 0);       \
    }

TFC_DEFINE_GEMM_FLOAT(f32, float, tfc_vf32, tfc_vf32u, tfc_vi32, TFC_GEMM_VBYTES / 4, TFC_GEMM_KC)
TFC_DEFINE_GEMM_FLOAT(f64, double, tfc_vf64, tfc_vf64u, tfc_vi64, TFC_GEMM_VBYTES / 8,
                      TFC_GEMM_KC / 2)

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
