/* nvcuda::wmma (the warp matrix functions of <mma.h>) under CUDA device emulation: the TF32
 * shape m16n16k8 and the bfloat16 one m16n16k16 (operands __nv_bfloat16, of <cuda_bf16.h>,
 * emulated here too) with float accumulators, what tfc's tensor-core kernels use. A fragment
 * holds its whole tile in every thread: each of a warp's threads computes the warp's whole
 * product (the same values 32 times), so the emulation checks a kernel's indexing, strides and
 * rounding, not the per-lane layout of the hardware's fragments (which no tfc kernel reads).
 * __float_to_tf32 rounds as cvt.rna.tf32.f32: to 10 mantissa bits, ties away from zero;
 * __float2bfloat16_rn as cvt.rn.bf16.f32: to 7 mantissa bits, ties to even, NaN stays NaN. A
 * bfloat16 fragment holds its values as floats (exactly), and products of two bfloat16 values
 * are exact in fp32, so mma_sync's float arithmetic gives what the tensor cores' fp32 sums do
 * (up to the order of the sums inside one k16 step, which the hardware does not specify). */
#ifndef TFC_CUDA_EMU_WMMA_H
#define TFC_CUDA_EMU_WMMA_H

#include <string.h>

/* <cuda_bf16.h>'s type and conversions */
struct __nv_bfloat16 {
    uint16_t bits;
};

static inline __nv_bfloat16 __float2bfloat16_rn(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    __nv_bfloat16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, sign kept */
        b.bits = (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    else
        b.bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return b;
}

static inline float __bfloat162float(__nv_bfloat16 b) {
    const uint32_t u = (uint32_t)b.bits << 16;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

/* (rows, columns) of a fragment's tile */
template <typename Use, int M, int N, int K> struct tfc_tile;
template <int M, int N, int K> struct tfc_tile<matrix_a, M, N, K> {
    enum { rows = M, cols = K };
};
template <int M, int N, int K> struct tfc_tile<matrix_b, M, N, K> {
    enum { rows = K, cols = N };
};
template <int M, int N, int K> struct tfc_tile<accumulator, M, N, K> {
    enum { rows = M, cols = N };
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    enum { rows = tfc_tile<Use, M, N, K>::rows, cols = tfc_tile<Use, M, N, K>::cols };
    enum { num_elements = rows * cols };
    float x[num_elements]; /* row-major: element (r, c) is x[r * cols + c] */
};

static inline float __float_to_tf32(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    if ((bits & 0x7f800000u) != 0x7f800000u) /* inf and NaN stay */
        bits = (bits + 0x1000u) & 0xffffe000u;
    memcpy(&v, &bits, sizeof v);
    return v;
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
static inline void fill_fragment(fragment<Use, M, N, K, T, Layout> &f, float v) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

template <typename Use, int M, int N, int K, typename T>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, row_major> &f, const float *p,
                                    unsigned ldm) {
    for (int r = 0; r < f.rows; ++r)
        for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = p[(size_t)r * ldm + c];
}

template <typename Use, int M, int N, int K, typename T>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, col_major> &f, const float *p,
                                    unsigned ldm) {
    for (int r = 0; r < f.rows; ++r)
        for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = p[(size_t)c * ldm + r];
}

/* bfloat16 tiles, read as the floats they hold */
template <typename Use, int M, int N, int K>
static inline void load_matrix_sync(fragment<Use, M, N, K, __nv_bfloat16, row_major> &f,
                                    const __nv_bfloat16 *p, unsigned ldm) {
    for (int r = 0; r < f.rows; ++r)
        for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = __bfloat162float(p[(size_t)r * ldm + c]);
}

template <typename Use, int M, int N, int K>
static inline void load_matrix_sync(fragment<Use, M, N, K, __nv_bfloat16, col_major> &f,
                                    const __nv_bfloat16 *p, unsigned ldm) {
    for (int r = 0; r < f.rows; ++r)
        for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = __bfloat162float(p[(size_t)c * ldm + r]);
}

/* d = a * b + c, each output's products added in k order after c's value */
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB>
static inline void mma_sync(fragment<accumulator, M, N, K, float> &d,
                            const fragment<matrix_a, M, N, K, TA, LA> &a,
                            const fragment<matrix_b, M, N, K, TB, LB> &b,
                            const fragment<accumulator, M, N, K, float> &c) {
    float out[M * N];
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = c.x[i * N + j];
            for (int k = 0; k < K; ++k) acc += a.x[i * K + k] * b.x[k * N + j];
            out[i * N + j] = acc;
        }
    memcpy(d.x, out, sizeof out);
}

template <int M, int N, int K>
static inline void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f,
                                     unsigned ldm, layout_t layout) {
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
            const size_t at = layout == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r;
            p[at] = f.x[r * N + c];
        }
}

}  // namespace wmma
}  // namespace nvcuda

#endif /* TFC_CUDA_EMU_WMMA_H */
