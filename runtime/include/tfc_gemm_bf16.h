/* Mixed precision on the CPU (CompileOptions(mixed_precision="bfloat16")): products whose
 * operands are rounded to bfloat16 (to nearest, even: tfc_f32_to_bfloat16_bits) and whose sums
 * are fp32, as PyTorch's CPU autocast to bfloat16 computes them.
 *
 * tfc_gemm_bf16_f32(M, N, K, A, sam, sak, B, sbk, sbn, C) and tfc_gemm_bf16_f32_ex(..., C, ldc,
 * alpha, beta, bias, relu): tfc_gemm_f32's and tfc_gemm_f32_ex's contracts (tfc_gemm.h) on the
 * rounded operands. Blocks of A (MB x KB) and B (KB x NB) are rounded into contiguous buffers on
 * the stack and multiplied by tfc_gemm_f32_ex, the K blocks of one block of C chained through C
 * (beta 1 after the first, the bias and relu with the last). tfc_gemm.h computes each element
 * of C as one chain of fmas over k from 0 or beta*C, and the product of two bfloat16 values is
 * exact in fp32, so the result has the bits of tfc_gemm_f32_ex on the rounded operands whatever
 * the blocks. The rounding is a copy beside tfc_gemm.h's own packing (each block of one operand
 * rounded once, of the other once per MB rows or NB columns of C, whichever rounds fewer):
 * generic C on every CPU, no AVX512_BF16.
 *
 * tfc_round_bf16_f32(x, y, n): y[i] = x[i] rounded to bfloat16, as a float: the convolutions
 * multiply such copies of their operands (in their scratch) with the fp32 kernels.
 */
#ifndef TFC_GEMM_BF16_H
#define TFC_GEMM_BF16_H

#include <stdint.h>
#include <string.h>

#include "tfc_gemm.h"

/* the blocks rounded at a time: (MB x KB + KB x NB) floats on the stack, 160 KiB (6 under
 * TFC_EMBED) */
#ifdef TFC_EMBED
#define TFC_GEMM_BF16_MB 16
#define TFC_GEMM_BF16_KB 32
#define TFC_GEMM_BF16_NB 32
#else
#define TFC_GEMM_BF16_MB 64
#define TFC_GEMM_BF16_KB 128
#define TFC_GEMM_BF16_NB 256
#endif

/* v rounded to bfloat16 (to nearest, even; a NaN becomes the quiet NaN of its sign, as
 * tfc_f32_to_bfloat16_bits), as a float: without branches, so that loops of it vectorize */
static inline float tfc_round_bf16(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    const uint32_t nan = (u & 0x80000000u) | 0x7fc00000u;
    u = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline void tfc_round_bf16_f32(const float *restrict x, float *restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = tfc_round_bf16(x[i]);
}

/* An r x c block of src (element (i, j) at src[i*si + j*sj]) rounded into dst, contiguous in
 * the block's own orientation: rows of c values where sj <= si, else columns of r values, so
 * that both sides stream (tfc_gemm.h's packing then transposes, as for float32 operands).
 * Returns the block's strides in dst through *di, *dj. */
static inline void tfc_gemm_bf16_copy(int64_t r, int64_t c, const float *src, int64_t si,
                                      int64_t sj, float *restrict dst, int64_t *di, int64_t *dj) {
    const int by_rows = sj <= si;
    const int64_t outer = by_rows ? r : c, inner = by_rows ? c : r;
    const int64_t so = by_rows ? si : sj, sn = by_rows ? sj : si;
    for (int64_t o = 0; o < outer; ++o) {
        const float *s = src + o * so;
        float *restrict d = dst + o * inner;
        if (sn == 1)
            for (int64_t n = 0; n < inner; ++n) d[n] = tfc_round_bf16(s[n]);
        else
            for (int64_t n = 0; n < inner; ++n) d[n] = tfc_round_bf16(s[n * sn]);
    }
    *di = by_rows ? c : 1;
    *dj = by_rows ? 1 : r;
}

static inline void tfc_gemm_bf16_f32_ex(int64_t M, int64_t N, int64_t K, const float *A,
                                        int64_t sam, int64_t sak, const float *B, int64_t sbk,
                                        int64_t sbn, float *C, int64_t ldc, float alpha,
                                        float beta, const float *bias, int relu) {
    enum { MB = TFC_GEMM_BF16_MB, KB = TFC_GEMM_BF16_KB, NB = TFC_GEMM_BF16_NB };
    if (M <= 0 || N <= 0 || K <= 0) { /* nothing to round: tfc_gemm.h reads no operand */
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias, relu);
        return;
    }
    float a[MB * KB];
    float b[KB * NB];
    int64_t am = 0, ak = 0, bk = 0, bn = 0; /* the strides of the rounded blocks */
    /* each block of C takes its K blocks in order; the blocks of C in either order: rows
     * outermost rounds each block of B once per MB rows of C, columns outermost each block
     * of A once per NB columns, so the order rounding fewer values is taken */
    const int64_t row_blocks = (M + MB - 1) / MB, col_blocks = (N + NB - 1) / NB;
    const int rows_outer = row_blocks * N <= col_blocks * M;
    const int64_t outer_count = rows_outer ? row_blocks : col_blocks;
    const int64_t inner_count = rows_outer ? col_blocks : row_blocks;
    for (int64_t o = 0; o < outer_count; ++o)
        for (int64_t p0 = 0; p0 < K; p0 += KB) {
            const int64_t kb = K - p0 < KB ? K - p0 : KB;
            const int last = p0 + kb == K;
            for (int64_t q = 0; q < inner_count; ++q) {
                const int64_t i0 = (rows_outer ? o : q) * MB, j0 = (rows_outer ? q : o) * NB;
                const int64_t mb = M - i0 < MB ? M - i0 : MB, nb = N - j0 < NB ? N - j0 : NB;
                if (q == 0 || !rows_outer) /* A's block changes with the rows */
                    tfc_gemm_bf16_copy(mb, kb, A + i0 * sam + p0 * sak, sam, sak, a, &am, &ak);
                if (q == 0 || rows_outer) /* B's with the columns */
                    tfc_gemm_bf16_copy(kb, nb, B + p0 * sbk + j0 * sbn, sbk, sbn, b, &bk, &bn);
                tfc_gemm_f32_ex(mb, nb, kb, a, am, ak, b, bk, bn, C + i0 * ldc + j0, ldc, alpha,
                                p0 == 0 ? beta : 1.0f, last && bias != NULL ? bias + j0 : NULL,
                                last && relu);
            }
        }
}

static inline void tfc_gemm_bf16_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam,
                                     int64_t sak, const float *B, int64_t sbk, int64_t sbn,
                                     float *C) {
    tfc_gemm_bf16_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, 0.0f, NULL, 0);
}

#endif /* TFC_GEMM_BF16_H */
