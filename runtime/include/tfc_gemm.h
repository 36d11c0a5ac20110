/* Matrix multiply for the generated kernels: C[M,N] = A[M,K] * B[K,N], A and B strided (so every
 * transpose is a choice of strides), C contiguous and overwritten. Integer types wrap. */
#ifndef TFC_GEMM_H
#define TFC_GEMM_H

#include <stdint.h>

#define TFC_DEFINE_GEMM(tag, T, W)                                                           \
    static inline void tfc_gemm_##tag(int64_t M, int64_t N, int64_t K, const T *restrict A,  \
                                      int64_t sam, int64_t sak, const T *restrict B,         \
                                      int64_t sbk, int64_t sbn, T *restrict C) {             \
        if (sbn == 1) {                                                                      \
            /* rows of B are contiguous: broadcast one A element over a row of C */          \
            for (int64_t i = 0; i < M; ++i) {                                                \
                T *restrict c = C + i * N;                                                   \
                for (int64_t j = 0; j < N; ++j) c[j] = 0;                                    \
                for (int64_t k = 0; k < K; ++k) {                                            \
                    const W a = (W)A[i * sam + k * sak];                                     \
                    const T *restrict b = B + k * sbk;                                       \
                    for (int64_t j = 0; j < N; ++j) c[j] = (T)((W)c[j] + a * (W)b[j]);       \
                }                                                                            \
            }                                                                                \
        } else {                                                                             \
            /* B transposed: dot products along contiguous K */                              \
            for (int64_t i = 0; i < M; ++i) {                                                \
                for (int64_t j = 0; j < N; ++j) {                                            \
                    W acc = 0;                                                               \
                    for (int64_t k = 0; k < K; ++k)                                          \
                        acc += (W)A[i * sam + k * sak] * (W)B[k * sbk + j * sbn];            \
                    C[i * N + j] = (T)acc;                                                   \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }

TFC_DEFINE_GEMM(f32, float, float)
TFC_DEFINE_GEMM(f64, double, double)
TFC_DEFINE_GEMM(i32, int32_t, uint32_t)
TFC_DEFINE_GEMM(i64, int64_t, uint64_t)

#endif /* TFC_GEMM_H */
