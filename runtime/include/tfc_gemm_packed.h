/* Products whose B operand (a layer's weights, read-only in the calling program) stays in the
 * micro-kernel's panel layout between calls, so that a call does not pack it again.
 *
 * tfc_gemm_<tag>_ex_packed(M, N, K, A, sam, sak, B, sbk, sbn, cache, epoch, C, ldc, alpha, beta,
 * bias, relu) computes what tfc_gemm_<tag>_ex computes, with the same bits (the same packed
 * algorithm and micro-kernel, the same K blocks, only B's packing moved). `cache` is
 * TFC_GEMM_PACK_HEADER bytes of header followed by room for K rows of N elements rounded up to
 * TFC_GEMM_PACK_COLS, 64-byte aligned, zeroed before the first call. The panels are packed
 * again whenever B's address or `epoch` differ from the ones they were packed at: the caller
 * passes a counter that every writer of B's buffer increments, before and after it writes (a
 * Session's state epoch: generated programs that write variables bump it around each call,
 * Python-side writers when they write), so a change of the weights is never answered from
 * stale panels; a write racing a call costs at most that call, the writer's last increment
 * making the next one pack again. Two concurrent calls that both find the panels stale both
 * pack them, writing the same values.
 *
 * Two of tfc_gemm.h's paths read packed B: the plain packed algorithm (panels for every K
 * block, as tfc_gemm_columns packs them, read through its "B already packed" pointer), and a
 * row or two with row-major B (batch-1 inference), which reads the row panels: the columns in
 * blocks of the row kernel's NB vectors, then of 8, 4, 2 and 1 vectors, each block K rows of
 * its vectors, contiguous and zero-padded, so that B streams as one sequential run with its
 * lines prefetched TFC_GEMM_ROW_AHEAD bytes ahead, every column the row path's chain of K
 * FMAs, in register blocks (the row path runs the columns past whole blocks one vector at a
 * time). ResNet-50's classifier (1 x 2048 by 2048 x 1000 + bias, its 8 MB of weights read
 * from L3 or memory once per inference) ran 0.886 -> 0.606 ms in the model, 0.68x (ONNX
 * Runtime: 0.65-0.67 ms), load 1.4-1.7: PYTHONPATH=. python bench/onnx_ab.py OLD NEW --model
 * resnet50 --batch 1 --rounds 3 --runs 10 (the onnx venv). Products on the other paths
 * (tall, narrow, swapped) call tfc_gemm_<tag>_ex on B itself and leave the cache alone.
 */
#ifndef TFC_GEMM_PACKED_H
#define TFC_GEMM_PACKED_H

#include "tfc_gemm.h"

/* the header before the panels: one cache line, so the panels keep the buffer's alignment */
#define TFC_GEMM_PACK_HEADER 64
/* the cache's columns are rounded up to this many: a multiple of every target's NR (the
 * caller sizes the cache without knowing the target's vectors) */
#define TFC_GEMM_PACK_COLS 64
/* the row panels' lines prefetched this many bytes ahead of the row read: B streams from L3 or
 * memory (a classifier's weights, read once per inference) */
#ifndef TFC_GEMM_ROW_AHEAD
#define TFC_GEMM_ROW_AHEAD 4096
#endif
typedef struct {
    uint64_t epoch;     /* the epoch the panels were packed at */
    const void *source; /* the B they were packed from; NULL: never packed */
} tfc_gemm_pack_header;

/* A Session's state epoch is two counters whose sum is the epoch: [0] the generated programs'
 * (atomic adds), [1] Python's writes (under the session's lock); each only grows, so any
 * bump grows the sum, and no writer's increment can be lost to another's. */
/* one more write of the state that packed panels may copy (see above), by a program */
static inline void tfc_gemm_packed_bump(uint64_t *epoch) {
    __atomic_fetch_add(&epoch[0], 1, __ATOMIC_SEQ_CST);
}

/* the epoch a call compares its panels with */
static inline uint64_t tfc_gemm_packed_epoch(const uint64_t *epoch) {
    return __atomic_load_n(&epoch[0], __ATOMIC_SEQ_CST) +
           __atomic_load_n(&epoch[1], __ATOMIC_SEQ_CST);
}

#define TFC_DEFINE_GEMM_PACKED(tag, T, V, VU, VI, VL, KC)                                       \
    typedef char tfc_gemm_pack_cols_fit_##tag[TFC_GEMM_PACK_COLS % tfc_gemm_nr_##tag ? -1 : 1];\
                                                                                                 \
    /* whether tfc_gemm_<tag>_ex runs the product on the plain packed algorithm: the one path    \
     * that packs B whole */                                                                     \
    static inline int tfc_gemm_packs_b_##tag(int64_t M, int64_t N, int64_t K, int64_t sam,       \
                                             int64_t sbn) {                                      \
        if (M <= 0 || N <= 0 || K <= 0) return 0;                                                \
        return tfc_gemm_path_##tag(M, N, sam, sbn) == TFC_GEMM_PATH_PACKED;                      \
    }                                                                                            \
                                                                                                 \
    /* whether the row path reads B packed: a row or two with row-major B. The packed layout   \
     * (tfc_gemm_row_panels_<tag>) makes the stream of B one sequential run, prefetched ahead,  \
     * where the row path reads K strided pieces of each block of columns (ResNet-50's 2048 x   \
     * 1000 classifier: 16 lines every 4000 bytes, a new page almost every row, which the      \
     * hardware prefetchers, working within a page, barely follow); and columns past whole      \
     * blocks of the row kernel's NB vectors go in register blocks of 8, 4, 2 and 1 vectors,   \
     * not one vector at a time (each a chain of K dependent FMAs: latency-bound) */           \
    static inline int tfc_gemm_packs_rows_##tag(int64_t M, int64_t N, int64_t K, int64_t sbn) {  \
        return M > 0 && M <= TFC_GEMM_ROWS_MAX && N > (VL) && K > 0 && sbn == 1;                 \
    }                                                                                            \
                                                                                                 \
    /* columns [0, n) (n <= nv vectors) of a row c = relu?(alpha a B + beta c + bias), B a       \
     * sub-block of the row panels (K rows of nv vectors, contiguous): every column the chain   \
     * of tfc_gemm_row_<tag> (beta C or 0, fma over k in order, bias, relu), nv a constant      \
     * where it is inlined. The lines TFC_GEMM_ROW_AHEAD bytes ahead of each row are prefetched \
     * while they lie in the sub-block. */                                                      \
    static inline __attribute__((always_inline)) void tfc_gemm_packed_cols_##tag(               \
        int64_t K, const T *restrict a, int64_t sak, T alpha, const T *restrict b, T *restrict c,\
        T beta, const T *restrict bias, int relu, int64_t n, const int nv) {                     \
        enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                                   \
        const int64_t ldb = nv * (VL), row_bytes = ldb * (int64_t)sizeof(T);                    \
        const int64_t ahead = TFC_IDIV(TFC_GEMM_ROW_AHEAD + row_bytes - 1, row_bytes);           \
        V acc[NB];                                                                               \
        for (int v = 0; v < nv; ++v) {                                                           \
            const int64_t lanes = n - v * (VL) < (VL) ? n - v * (VL) : (VL);                     \
            acc[v] = beta == (T)0        ? (V){0}                                                \
                     : lanes == (VL) ? (V) * (const VU *)(c + v * (VL))                          \
                                     : tfc_gemm_tail_load_##tag(c + v * (VL), lanes);            \
            if (beta != (T)0 && beta != (T)1) acc[v] *= beta;                                    \
        }                                                                                        \
        int64_t k = 0;                                                                           \
        for (; k + ahead < K; ++k) {                                                             \
            const char *next = (const char *)(b + (k + ahead) * ldb);                            \
            for (int64_t l = 0; l < row_bytes; l += 64) TFC_GEMM_PREFETCH(next + l);             \
            const V av = TFC_GEMM_SPLAT(V, alpha == (T)1 ? a[k * sak] : alpha * a[k * sak]);     \
            for (int v = 0; v < nv; ++v)                                                         \
                acc[v] = TFC_GEMM_FMA_##tag(av, *(const VU *)(b + k * ldb + v * (VL)), acc[v]);  \
        }                                                                                        \
        for (; k < K; ++k) {                                                                     \
            const V av = TFC_GEMM_SPLAT(V, alpha == (T)1 ? a[k * sak] : alpha * a[k * sak]);     \
            for (int v = 0; v < nv; ++v)                                                         \
                acc[v] = TFC_GEMM_FMA_##tag(av, *(const VU *)(b + k * ldb + v * (VL)), acc[v]);  \
        }                                                                                        \
        for (int v = 0; v < nv; ++v) {                                                           \
            const int64_t lanes = n - v * (VL) < (VL) ? n - v * (VL) : (VL);                     \
            if (bias != NULL)                                                                    \
                acc[v] += lanes == (VL) ? (V) * (const VU *)(bias + v * (VL))                    \
                                        : tfc_gemm_tail_load_##tag(bias + v * (VL), lanes);      \
            if (relu) acc[v] = (V)((VI)acc[v] & ~(VI)(acc[v] < (V){0}));                         \
            if (lanes == (VL))                                                                   \
                *(VU *)(c + v * (VL)) = acc[v];                                                  \
            else                                                                                 \
                tfc_gemm_tail_store_##tag(c + v * (VL), acc[v], lanes);                          \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* the vectors of the sub-block of the row panels at column j0 (N columns in all): NB up to  \
     * the last whole block of NB vectors, then the largest of 8, 4, 2, 1 that the columns left \
     * fill (only the last vector partial: sub-block j0 starts at j0 * K in the panels) */      \
    static inline int tfc_gemm_row_block_##tag(int64_t N, int64_t j0) {                          \
        enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                                   \
        const int64_t vectors = TFC_IDIV(N - j0 + (VL)-1, (VL));                                 \
        return vectors >= NB ? NB : vectors >= 8 ? 8 : vectors >= 4 ? 4 : vectors >= 2 ? 2 : 1;  \
    }                                                                                            \
                                                                                                 \
    /* B (K x N, row stride sbk, row-major) into the row panels: its columns in the sub-blocks  \
     * of tfc_gemm_row_block_<tag>, each K rows of its vectors, contiguous, zero-padded */       \
    static inline void tfc_gemm_row_panels_##tag(int64_t N, int64_t K, const T *B, int64_t sbk,  \
                                                 T *out) {                                       \
        for (int64_t j0 = 0; j0 < N;) {                                                          \
            const int64_t w = tfc_gemm_row_block_##tag(N, j0) * (VL);                            \
            const int64_t n = N - j0 < w ? N - j0 : w;                                           \
            T *block = out + j0 * K;                                                             \
            for (int64_t k = 0; k < K; ++k) {                                                    \
                memcpy(block + k * w, B + k * sbk + j0, (size_t)n * sizeof(T));                  \
                for (int64_t j = n; j < w; ++j) block[k * w + j] = 0;                            \
            }                                                                                    \
            j0 += n;                                                                             \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* columns [j_begin, j_end) of the rows of C from the row panels (j_begin a multiple of NB  \
     * vectors, j_end one too or N): each row streams those sub-blocks in order */              \
    static inline void tfc_gemm_packed_rows_##tag(const tfc_gemm_args_##tag *g, int64_t j_begin, \
                                                  int64_t j_end) {                               \
        enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                                   \
        for (int64_t i = 0; i < g->M; ++i) {                                                     \
            const T *a = g->A + i * g->sam;                                                      \
            T *c = g->C + i * g->ldc;                                                            \
            for (int64_t j0 = j_begin; j0 < j_end;) {                                            \
                const int nv = tfc_gemm_row_block_##tag(g->N, j0);                               \
                const int64_t n = j_end - j0 < nv * (VL) ? j_end - j0 : nv * (VL);               \
                const T *b = g->Bp + j0 * g->K, *bb = g->bias != NULL ? g->bias + j0 : NULL;     \
                if (nv == NB)                                                                    \
                    tfc_gemm_packed_cols_##tag(g->K, a, g->sak, g->alpha, b, c + j0, g->beta,    \
                                               bb, g->relu, n, NB);                              \
                else if (nv == 8)                                                                \
                    tfc_gemm_packed_cols_##tag(g->K, a, g->sak, g->alpha, b, c + j0, g->beta,    \
                                               bb, g->relu, n, 8);                               \
                else if (nv == 4)                                                                \
                    tfc_gemm_packed_cols_##tag(g->K, a, g->sak, g->alpha, b, c + j0, g->beta,    \
                                               bb, g->relu, n, 4);                               \
                else if (nv == 2)                                                                \
                    tfc_gemm_packed_cols_##tag(g->K, a, g->sak, g->alpha, b, c + j0, g->beta,    \
                                               bb, g->relu, n, 2);                               \
                else                                                                             \
                    tfc_gemm_packed_cols_##tag(g->K, a, g->sak, g->alpha, b, c + j0, g->beta,    \
                                               bb, g->relu, n, 1);                               \
                j0 += n;                                                                         \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* a thread's columns of the row panels: panels_per_task blocks of NB vectors, as the row   \
     * path splits them */                                                                      \
    static inline void tfc_gemm_packed_row_task_##tag(void *ctx, int64_t task) {                 \
        enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                                   \
        const tfc_gemm_args_##tag *g = (const tfc_gemm_args_##tag *)ctx;                         \
        const int64_t j0 = task * g->panels_per_task * NB * (VL);                                \
        const int64_t j1 = j0 + g->panels_per_task * NB * (VL);                                  \
        tfc_gemm_packed_rows_##tag(g, j0, j1 < g->N ? j1 : g->N);                                \
    }                                                                                            \
                                                                                                 \
    /* B (K x N, strides sbk, sbn) into panels: for each K block of tfc_gemm_columns (equal      \
     * blocks of at most KC rows), its NR-column panels in order, kc x NR each, zero-padded */   \
    static inline void tfc_gemm_pack_panels_##tag(int64_t N, int64_t K, const T *B, int64_t sbk, \
                                                  int64_t sbn, int64_t kcmax, T *out) {          \
        enum { NR = tfc_gemm_nr_##tag };                                                         \
        const int64_t blocks = TFC_IDIV(K + kcmax - 1, kcmax);                                   \
        const int64_t kb = TFC_IDIV(K + blocks - 1, blocks);                                     \
        const int64_t width = TFC_IDIV(N + NR - 1, NR) * NR;                                     \
        for (int64_t p0 = 0; p0 < K; p0 += kb) {                                                 \
            const int64_t kc = K - p0 < kb ? K - p0 : kb;                                        \
            for (int64_t j0 = 0; j0 < N; j0 += NR) {                                             \
                const int64_t nc = N - j0 < NR ? N - j0 : (int64_t)NR;                           \
                tfc_gemm_pack_b_##tag(nc, kc, B + p0 * sbk + j0 * sbn, sbk, sbn, (T)1,           \
                                      out + p0 * width + j0 * kc);                               \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static inline void tfc_gemm_##tag##_ex_packed(                                               \
        int64_t M, int64_t N, int64_t K, const T *A, int64_t sam, int64_t sak, const T *B,       \
        int64_t sbk, int64_t sbn, void *cache, uint64_t epoch, T *C, int64_t ldc, T alpha,       \
        T beta, const T *bias, int relu) {                                                       \
        tfc_gemm_pack_header *head = (tfc_gemm_pack_header *)cache;                              \
        T *panels = (T *)((char *)cache + TFC_GEMM_PACK_HEADER);                                 \
        const int stale = head->source != (const void *)B || head->epoch != epoch;               \
        if (tfc_gemm_packs_rows_##tag(M, N, K, sbn)) {                                           \
            enum { NB = TFC_GEMM_ROW_COLS * 4 / TFC_GEMM_VBYTES };                               \
            if (stale) {                                                                         \
                tfc_gemm_row_panels_##tag(N, K, B, sbk, panels);                                 \
                head->source = B;                                                                \
                head->epoch = epoch;                                                             \
            }                                                                                    \
            tfc_gemm_args_##tag g = {M, N, K, sam, sak, sbk, sbn, ldc, A, B, bias, C, alpha,     \
                                     beta, relu, 0, 0, panels};                                  \
            const int64_t blocks = TFC_IDIV(N + NB * (VL)-1, NB * (VL));                         \
            const int64_t tasks = tfc_gemm_block_tasks(                                          \
                blocks, TFC_GEMM_ROW_SERIAL(M, N, K), &g.panels_per_task);                       \
            if (tasks <= 1) {                                                                    \
                tfc_gemm_packed_rows_##tag(&g, 0, N);                                            \
                return;                                                                          \
            }                                                                                    \
            tfc_threads_parallel_parts(tasks, tfc_gemm_packed_row_task_##tag, &g);               \
            return;                                                                              \
        }                                                                                        \
        if (!tfc_gemm_packs_b_##tag(M, N, K, sam, sbn)) {                                        \
            tfc_gemm_##tag##_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias,    \
                                relu);                                                           \
            return;                                                                              \
        }                                                                                        \
        if (stale) {                                                                             \
            tfc_gemm_pack_panels_##tag(N, K, B, sbk, sbn, (KC), panels);                        \
            head->source = B;                                                                    \
            head->epoch = epoch;                                                                 \
        }                                                                                        \
        tfc_gemm_args_##tag g = {M, N, K, sam, sak, sbk, sbn, ldc, A, B, bias, C, alpha,         \
                                 beta, relu, 0, 0, panels};                                      \
        tfc_gemm_packed_split_##tag(&g); /* unswapped: tfc_gemm_packs_b said so */               \
    }

TFC_DEFINE_GEMM_PACKED(f32, float, tfc_vf32, tfc_vf32u, tfc_vi32, TFC_GEMM_VBYTES / 4, TFC_GEMM_KC)
TFC_DEFINE_GEMM_PACKED(f64, double, tfc_vf64, tfc_vf64u, tfc_vi64, TFC_GEMM_VBYTES / 8,
                       TFC_GEMM_KC / 2)

#endif /* TFC_GEMM_PACKED_H */
