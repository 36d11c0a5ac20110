/* Products whose B operand (a layer's weights, read-only in the calling program) stays in the
 * micro-kernel's panel layout between calls, so that a call does not pack it again.
 *
 * tfc_gemm_<tag>_ex_packed(M, N, K, A, sam, sak, B, sbk, sbn, cache, epoch, C, ldc, alpha, beta,
 * bias, relu) computes what tfc_gemm_<tag>_ex computes, with the same bits (the same packed
 * algorithm and micro-kernel, the same K blocks, only B's packing moved). `cache` is
 * TFC_GEMM_PACK_HEADER bytes of header followed by room for tfc_gemm_packed_count(N, K)
 * elements (at most K * N rounded up to TFC_GEMM_PACK_COLS columns), 64-byte aligned, zeroed
 * before the first call. The panels are packed again whenever B's address or `epoch` differ
 * from the ones they were packed at: the caller passes a counter that every writer of B's
 * buffer increments, before and after it writes (a Session's state epoch: generated programs
 * that write variables bump it around each call, Python-side writers when they write), so a
 * change of the weights is never answered from stale panels; a write racing a call costs at
 * most that call, the writer's last increment making the next one pack again. Products that
 * tfc_gemm.h runs on another path (a row or two, the tall, narrow or swapped kernels, which
 * never pack B whole) call tfc_gemm_<tag>_ex on B itself and leave the cache alone.
 */
#ifndef TFC_GEMM_PACKED_H
#define TFC_GEMM_PACKED_H

#include "tfc_gemm.h"

/* the header before the panels: one cache line, so the panels keep the buffer's alignment */
#define TFC_GEMM_PACK_HEADER 64
/* the cache's columns are rounded up to this many: a multiple of every target's NR (the
 * caller sizes the cache without knowing the target's vectors) */
#define TFC_GEMM_PACK_COLS 64

typedef struct {
    uint64_t epoch;     /* the epoch the panels were packed at */
    const void *source; /* the B they were packed from; NULL: never packed */
} tfc_gemm_pack_header;

/* one more write of the state that packed panels may copy (see above) */
static inline void tfc_gemm_packed_bump(uint64_t *epoch) {
    __atomic_fetch_add(epoch, 1, __ATOMIC_SEQ_CST);
}

#define TFC_DEFINE_GEMM_PACKED(tag, T, VL, KC)                                                   \
    typedef char tfc_gemm_pack_cols_fit_##tag[TFC_GEMM_PACK_COLS % tfc_gemm_nr_##tag ? -1 : 1]; \
                                                                                                 \
    /* elements of the panels of a K x N operand: K rows of N rounded up to whole panels */      \
    static inline int64_t tfc_gemm_packed_count_##tag(int64_t N, int64_t K) {                    \
        return K * TFC_IDIV(N + tfc_gemm_nr_##tag - 1, tfc_gemm_nr_##tag) * tfc_gemm_nr_##tag;   \
    }                                                                                            \
                                                                                                 \
    /* whether tfc_gemm_<tag>_ex runs the product on the plain packed algorithm (the paths and   \
     * their order as there): the one path that packs B whole */                                 \
    static inline int tfc_gemm_packs_b_##tag(int64_t M, int64_t N, int64_t K, int64_t sam,       \
                                             int64_t sbn) {                                      \
        if (M <= 0 || N <= 0 || K <= 0) return 0;                                                \
        if (M <= TFC_GEMM_ROWS_MAX && sbn == 1) return 0;                                        \
        if (TFC_GEMM_VBYTES == 64 && N <= TFC_GEMM_TALL && sam == 1) return 0;                   \
        if (N <= (VL)) return 0;                                                                 \
        return !tfc_gemm_swap_##tag(M, N);                                                       \
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
        enum { NR = tfc_gemm_nr_##tag };                                                         \
        if (!tfc_gemm_packs_b_##tag(M, N, K, sam, sbn)) {                                        \
            tfc_gemm_##tag##_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias,    \
                                relu);                                                           \
            return;                                                                              \
        }                                                                                        \
        tfc_gemm_pack_header *head = (tfc_gemm_pack_header *)cache;                              \
        T *panels = (T *)((char *)cache + TFC_GEMM_PACK_HEADER);                                 \
        if (head->source != (const void *)B || head->epoch != epoch) {                           \
            tfc_gemm_pack_panels_##tag(N, K, B, sbk, sbn, (KC), panels);                        \
            head->source = B;                                                                    \
            head->epoch = epoch;                                                                 \
        }                                                                                        \
        tfc_gemm_args_##tag g = {M, N, K, sam, sak, sbk, sbn, ldc, A, B, bias, C, alpha,         \
                                 beta, relu, 0, 0, panels};                                      \
        /* the thread split of tfc_gemm_<tag>_ex's packed path (unswapped) */                    \
        const int64_t panel_count = TFC_IDIV(N + NR - 1, NR);                                    \
        int64_t tasks = TFC_GEMM_SERIAL(M, N, K) ? 1 : tfc_threads_count();                      \
        if (tasks > panel_count) tasks = panel_count;                                            \
        if (tasks <= 1) {                                                                        \
            tfc_gemm_columns_##tag(&g, 0, N);                                                    \
            return;                                                                              \
        }                                                                                        \
        const int64_t finer =                                                                    \
            tasks * 3 < TFC_IDIV(panel_count, 4) ? tasks * 3 : TFC_IDIV(panel_count, 4);         \
        if (finer > tasks) tasks = finer;                                                        \
        g.panels_per_task = TFC_IDIV(panel_count + tasks - 1, tasks);                            \
        tasks = TFC_IDIV(panel_count + g.panels_per_task - 1, g.panels_per_task);                \
        tfc_threads_parallel_for(tasks, tfc_gemm_task_##tag, &g);                                \
    }

TFC_DEFINE_GEMM_PACKED(f32, float, TFC_GEMM_VBYTES / 4, TFC_GEMM_KC)
TFC_DEFINE_GEMM_PACKED(f64, double, TFC_GEMM_VBYTES / 8, TFC_GEMM_KC / 2)

#endif /* TFC_GEMM_PACKED_H */
