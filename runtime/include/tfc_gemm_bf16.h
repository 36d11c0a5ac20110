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
 * the blocks. The rounding is a copy beside tfc_gemm.h's own packing (one more pass over each
 * block of A and B, about 1/MB of the multiply-adds): generic C on every CPU, no AVX512_BF16.
 *
 * tfc_round_bf16_f32(x, y, n): y[i] = x[i] rounded to bfloat16, as a float: the convolutions
 * multiply such copies of their operands (in their scratch) with the fp32 kernels.
 */
#ifndef TFC_GEMM_BF16_H
#define TFC_GEMM_BF16_H

#include <stdint.h>

#include "tfc_dtypes.h"
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

static inline float tfc_round_bf16(float v) {
    return tfc_bfloat16_bits_to_f32(tfc_f32_to_bfloat16_bits(v));
}

static inline void tfc_round_bf16_f32(const float *restrict x, float *restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = tfc_round_bf16(x[i]);
}

static inline void tfc_gemm_bf16_f32_ex(int64_t M, int64_t N, int64_t K, const float *A,
                                        int64_t sam, int64_t sak, const float *B, int64_t sbk,
                                        int64_t sbn, float *C, int64_t ldc, float alpha,
                                        float beta, const float *bias, int relu) {
    if (M <= 0 || N <= 0 || K <= 0) { /* nothing to round: tfc_gemm.h reads no operand */
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias, relu);
        return;
    }
    float a[TFC_GEMM_BF16_MB * TFC_GEMM_BF16_KB];
    float b[TFC_GEMM_BF16_KB * TFC_GEMM_BF16_NB];
    for (int64_t i0 = 0; i0 < M; i0 += TFC_GEMM_BF16_MB) {
        const int64_t mb = M - i0 < TFC_GEMM_BF16_MB ? M - i0 : TFC_GEMM_BF16_MB;
        for (int64_t p0 = 0; p0 < K; p0 += TFC_GEMM_BF16_KB) {
            const int64_t kb = K - p0 < TFC_GEMM_BF16_KB ? K - p0 : TFC_GEMM_BF16_KB;
            const int last = p0 + kb == K;
            for (int64_t i = 0; i < mb; ++i)
                for (int64_t k = 0; k < kb; ++k)
                    a[i * kb + k] = tfc_round_bf16(A[(i0 + i) * sam + (p0 + k) * sak]);
            for (int64_t j0 = 0; j0 < N; j0 += TFC_GEMM_BF16_NB) {
                const int64_t nb = N - j0 < TFC_GEMM_BF16_NB ? N - j0 : TFC_GEMM_BF16_NB;
                for (int64_t k = 0; k < kb; ++k)
                    for (int64_t j = 0; j < nb; ++j)
                        b[k * nb + j] = tfc_round_bf16(B[(p0 + k) * sbk + (j0 + j) * sbn]);
                tfc_gemm_f32_ex(mb, nb, kb, a, kb, 1, b, nb, 1, C + i0 * ldc + j0, ldc, alpha,
                                p0 == 0 ? beta : 1.0f, last && bias != NULL ? bias + j0 : NULL,
                                last && relu);
            }
        }
    }
}

static inline void tfc_gemm_bf16_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam,
                                     int64_t sak, const float *B, int64_t sbk, int64_t sbn,
                                     float *C) {
    tfc_gemm_bf16_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, 0.0f, NULL, 0);
}

#endif /* TFC_GEMM_BF16_H */
