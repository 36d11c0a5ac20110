/* The CUDA side of the tfc runtime: generated .cu programs include this instead of tfc_runtime.h.
 *
 * It brings the C runtime's helpers to device code (TFC_HD), a printf-free message formatter
 * for kernels that fail (TFC_SNPRINTF on the device), the per-program device status a failing
 * kernel reports to, the stream and cuBLAS handle every launch uses, and GEMM: cuBLAS for
 * float and double, a tiled kernel for integers and for strides cuBLAS cannot express (and for
 * everything when TFC_NO_CUBLAS is defined).
 *
 * Kernels are launched with TFC_CUDA_LAUNCH(kernel, blocks, threads, args...): the <<<>>> launch
 * on the program's stream under nvcc; with TFC_CUDA_DEVICE_EMULATION defined, the program is
 * plain C++ for the host compiler (tfc_cuda_emu.h) and every launch runs on the CPU. */
#ifndef TFC_CUDA_H
#define TFC_CUDA_H

#ifdef TFC_CUDA_DEVICE_EMULATION
#include "tfc_cuda_emu.h"
#include "tfc_cuda_emu_wmma.h"
#ifndef TFC_NO_CUBLAS
#define TFC_NO_CUBLAS /* no cuBLAS on the host: GEMM is the tiled kernel, emulated like the rest */
#endif
#define TFC_CUDA_LAUNCH(kernel, blocks, threads, ...) \
    tfc_emu_launch((blocks), (threads), [&]() { kernel(__VA_ARGS__); })
#else
#include <cuda_runtime.h>
#include <mma.h> /* the tensor-core convolutions (CompileOptions(allow_tf32=True)) */
#include <cuda_bf16.h> /* mixed precision (CompileOptions(mixed_precision="bfloat16")) */
#define TFC_CUDA_LAUNCH(kernel, blocks, threads, ...) \
    kernel<<<(blocks), (threads), 0, tfc_cuda_stream>>>(__VA_ARGS__)
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifndef TFC_NO_CUBLAS
#include <cublas_v2.h>
#endif

#define TFC_HD __host__ __device__

#ifdef __CUDACC__
/* C kernels that run on the GPU as they are keep their gcc loop pragmas: not an error here */
#pragma nv_diag_suppress 1675
#endif

/* -- messages without printf: %s, %d, %lld, %g (six decimals) and %% -------------------------- */
static TFC_HD inline int tfc_fmt_put(char *out, size_t cap, int n, char c) {
    if ((size_t)n + 1 < cap) out[n] = c;
    return n + 1;
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, const char *s) {
    if (s == NULL) s = "(null)";
    while (*s) n = tfc_fmt_put(out, cap, n, *s++);
    return n;
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, unsigned long long u) {
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    while (k > 0) n = tfc_fmt_put(out, cap, n, digits[--k]);
    return n;
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, long long v) {
    if (v < 0) n = tfc_fmt_put(out, cap, n, '-');
    return tfc_fmt_value(out, cap, n, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, long v) {
    return tfc_fmt_value(out, cap, n, (long long)v);
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, int v) {
    return tfc_fmt_value(out, cap, n, (long long)v);
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, unsigned v) {
    return tfc_fmt_value(out, cap, n, (unsigned long long)v);
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, unsigned long v) {
    return tfc_fmt_value(out, cap, n, (unsigned long long)v);
}
static TFC_HD inline int tfc_fmt_value(char *out, size_t cap, int n, double v) {
    if (v != v) return tfc_fmt_value(out, cap, n, "nan");
    if (v < 0) {
        n = tfc_fmt_put(out, cap, n, '-');
        v = -v;
    }
    if (v > 1e18) return tfc_fmt_value(out, cap, n, "inf");
    unsigned long long whole = (unsigned long long)v;
    unsigned long long frac = (unsigned long long)((v - (double)whole) * 1e6 + 0.5);
    if (frac >= 1000000ull) whole += 1, frac -= 1000000ull;
    n = tfc_fmt_value(out, cap, n, whole);
    n = tfc_fmt_put(out, cap, n, '.');
    for (unsigned long long d = 100000ull; d > 0; d /= 10) {
        n = tfc_fmt_put(out, cap, n, (char)('0' + (frac / d) % 10));
    }
    return n;
}
static TFC_HD inline int tfc_fmt_end(char *out, size_t cap, int n) {
    if (cap > 0) out[(size_t)n < cap ? (size_t)n : cap - 1] = '\0';
    return n;
}
static TFC_HD inline int tfc_fmt(char *out, size_t cap, int n, const char *f) {
    for (; *f; ++f) {
        if (f[0] == '%' && f[1] == '%') ++f;
        n = tfc_fmt_put(out, cap, n, *f);
    }
    return tfc_fmt_end(out, cap, n);
}
template <typename T, typename... Rest>
static TFC_HD inline int tfc_fmt(char *out, size_t cap, int n, const char *f, T value,
                                 Rest... rest) {
    for (; *f; ++f) {
        if (*f != '%') {
            n = tfc_fmt_put(out, cap, n, *f);
            continue;
        }
        if (f[1] == '%') {
            n = tfc_fmt_put(out, cap, n, '%');
            ++f;
            continue;
        }
        ++f; /* skip flags, width, precision and length up to the conversion letter */
        while (*f == 'l' || *f == 'h' || *f == '.' || *f == '-' || (*f >= '0' && *f <= '9')) ++f;
        n = tfc_fmt_value(out, cap, n, value);
        return tfc_fmt(out, cap, n, *f ? f + 1 : f, rest...);
    }
    return tfc_fmt_end(out, cap, n);
}
template <typename... Args>
static TFC_HD inline int tfc_cuda_snprintf(char *out, size_t cap, const char *f, Args... args) {
    return tfc_fmt(out, cap, 0, f, args...);
}

#define TFC_SNPRINTF tfc_cuda_snprintf
#define restrict __restrict__
#include "tfc_runtime.h"

/* -- the status a failing kernel reports: the first failure wins ------------------------------ */
#define TFC_CUDA_MSG 1024
typedef struct {
    int code;
    int site; /* which fallible call of the program (its node name is in the host's table) */
    tfc_error err;
    char msg[TFC_CUDA_MSG];
    char scratch[TFC_CUDA_MSG];
} tfc_cuda_status;

static __device__ tfc_cuda_status tfc_cuda_dstatus;

static __device__ inline bool tfc_cuda_failed(void) {
    return *(volatile int *)&tfc_cuda_dstatus.code != 0;
}

/* Claim the status for this failure; false when an earlier one holds it. */
static __device__ inline bool tfc_cuda_claim(int code, int site) {
    if (atomicCAS(&tfc_cuda_dstatus.code, 0, code) != 0) return false;
    tfc_cuda_dstatus.site = site;
    tfc_cuda_dstatus.err.msg = tfc_cuda_dstatus.msg;
    tfc_cuda_dstatus.err.cap = TFC_CUDA_MSG;
    tfc_cuda_dstatus.err.node = NULL;
    return true;
}

static __device__ inline void tfc_cuda_fail(int code, int site, const char *msg) {
    if (tfc_cuda_claim(code, site)) tfc_error_set(&tfc_cuda_dstatus.err, code, msg);
}

/* -- host side: one stream and one cuBLAS handle per program; errors kept until the run ends --- */
static cudaStream_t tfc_cuda_stream;
static cudaError_t tfc_cuda_host_error = cudaSuccess;
#ifndef TFC_NO_CUBLAS
static cublasHandle_t tfc_cuda_blas;
static cublasStatus_t tfc_cuda_blas_error = CUBLAS_STATUS_SUCCESS;
#endif

static inline void tfc_cuda_note(cudaError_t e) {
    if (e != cudaSuccess && tfc_cuda_host_error == cudaSuccess) tfc_cuda_host_error = e;
}

static inline void tfc_cuda_memcpy(void *dst, const void *src, size_t n) {
    tfc_cuda_note(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, tfc_cuda_stream));
}

static inline unsigned tfc_cuda_blocks(long long n, unsigned threads, unsigned cap) {
    long long b = (n + threads - 1) / threads;
    return b < 1 ? 1u : (b > (long long)cap ? cap : (unsigned)b);
}

/* Create the stream and the cuBLAS handle on first use; clear the device status. */
static inline int tfc_cuda_begin(tfc_error *err) {
    if (tfc_cuda_stream == NULL) {
        cudaError_t e = cudaStreamCreateWithFlags(&tfc_cuda_stream, cudaStreamNonBlocking);
        if (e != cudaSuccess) {
            tfc_cuda_stream = NULL;
            if (err != NULL && err->msg != NULL && err->cap > 0)
                snprintf(err->msg, (size_t)err->cap, "CUDA: %s", cudaGetErrorString(e));
            return TFC_ERR_INTERNAL;
        }
#ifndef TFC_NO_CUBLAS
        if (cublasCreate(&tfc_cuda_blas) != CUBLAS_STATUS_SUCCESS ||
            cublasSetStream(tfc_cuda_blas, tfc_cuda_stream) != CUBLAS_STATUS_SUCCESS) {
            return tfc_error_set(err, TFC_ERR_INTERNAL, "cuBLAS could not be initialized");
        }
#endif
    }
    tfc_cuda_host_error = cudaSuccess;
#ifndef TFC_NO_CUBLAS
    tfc_cuda_blas_error = CUBLAS_STATUS_SUCCESS;
#endif
    tfc_cuda_status *status = NULL;
    tfc_cuda_note(cudaGetSymbolAddress((void **)&status, tfc_cuda_dstatus));
    if (status != NULL) tfc_cuda_note(cudaMemsetAsync(status, 0, sizeof(int), tfc_cuda_stream));
    return TFC_OK;
}

/* Wait for the stream; report a CUDA error, or the failure a kernel claimed (naming its node). */
static inline int tfc_cuda_finish(tfc_error *err, const char *const *sites, int n_sites) {
    tfc_cuda_note(cudaStreamSynchronize(tfc_cuda_stream));
    tfc_cuda_note(cudaGetLastError());
    if (tfc_cuda_host_error != cudaSuccess) {
        if (err != NULL && err->msg != NULL && err->cap > 0)
            snprintf(err->msg, (size_t)err->cap, "CUDA: %s", cudaGetErrorString(tfc_cuda_host_error));
        return TFC_ERR_INTERNAL;
    }
#ifndef TFC_NO_CUBLAS
    if (tfc_cuda_blas_error != CUBLAS_STATUS_SUCCESS) {
        if (err != NULL && err->msg != NULL && err->cap > 0)
            snprintf(err->msg, (size_t)err->cap, "cuBLAS: %s",
                     cublasGetStatusString(tfc_cuda_blas_error));
        return TFC_ERR_INTERNAL;
    }
#endif
    int head[2] = {0, 0};
    if (cudaMemcpyFromSymbol(head, tfc_cuda_dstatus, sizeof head) != cudaSuccess) {
        return tfc_error_set(err, TFC_ERR_INTERNAL, "CUDA: the device status is unreadable");
    }
    if (head[0] == TFC_OK) return TFC_OK;
    if (err != NULL && err->msg != NULL && err->cap > 0) {
        size_t n = (size_t)err->cap < TFC_CUDA_MSG ? (size_t)err->cap : TFC_CUDA_MSG;
        if (cudaMemcpyFromSymbol(err->msg, tfc_cuda_dstatus, n,
                                 offsetof(tfc_cuda_status, msg)) != cudaSuccess) {
            err->msg[0] = '\0';
        }
        err->msg[n - 1] = '\0';
    }
    if (err != NULL && head[1] >= 0 && head[1] < n_sites) err->node = sites[head[1]];
    return head[0];
}

/* -- control flow: the host loop of a While and the host branch of an If read values that live
 * in device memory (tfc/codegen/control_flow.py) ----------------------------------------------- */
/* A predicate, once the kernels computing it ran; 0 (stop the loop, take the else branch) when
 * a kernel failed: the run then reports that failure when it finishes. */
static inline int tfc_cuda_flag(const void *p) {
    unsigned char v = 0;
    int head = 0;
    tfc_cuda_note(cudaMemcpyAsync(&v, p, 1, cudaMemcpyDeviceToHost, tfc_cuda_stream));
    tfc_cuda_note(cudaStreamSynchronize(tfc_cuda_stream));
    if (tfc_cuda_host_error != cudaSuccess) return 0;
    if (cudaMemcpyFromSymbol(&head, tfc_cuda_dstatus, sizeof head) != cudaSuccess || head != 0)
        return 0;
    return v != 0;
}

static inline int64_t tfc_cuda_read_i32(const void *p) {
    int32_t v = 0;
    tfc_cuda_note(cudaMemcpyAsync(&v, p, sizeof v, cudaMemcpyDeviceToHost, tfc_cuda_stream));
    tfc_cuda_note(cudaStreamSynchronize(tfc_cuda_stream));
    return v;
}

static inline void tfc_cuda_store_i32(void *p, int32_t v) {
    tfc_cuda_note(cudaMemcpyAsync(p, &v, sizeof v, cudaMemcpyHostToDevice, tfc_cuda_stream));
    tfc_cuda_note(cudaStreamSynchronize(tfc_cuda_stream)); /* v lives on this stack frame */
}

static inline void tfc_cuda_memset(void *p, int value, size_t n) {
    tfc_cuda_note(cudaMemsetAsync(p, value, n, tfc_cuda_stream));
}

/* -- GEMM: C[M,N] = A[M,K] * B[K,N], A and B strided, C contiguous, as tfc_gemm_* in C ---------- */
#define TFC_CUDA_TILE 16
#define TFC_CUDA_DEFINE_GEMM_KERNEL(tag, T, W)                                                  \
    static __global__ void tfc_cuda_gemm_kernel_##tag(int64_t M, int64_t N, int64_t K,          \
                                                      const T *A, int64_t sam, int64_t sak,     \
                                                      const T *B, int64_t sbk, int64_t sbn,     \
                                                      T *C) {                                   \
        __shared__ W a[TFC_CUDA_TILE][TFC_CUDA_TILE];                                           \
        __shared__ W b[TFC_CUDA_TILE][TFC_CUDA_TILE + 1];                                       \
        const int64_t i = (int64_t)blockIdx.y * TFC_CUDA_TILE + threadIdx.y;                    \
        const int64_t j = (int64_t)blockIdx.x * TFC_CUDA_TILE + threadIdx.x;                    \
        W acc = 0;                                                                              \
        for (int64_t k0 = 0; k0 < K; k0 += TFC_CUDA_TILE) {                                     \
            const int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;                         \
            a[threadIdx.y][threadIdx.x] = (i < M && ka < K) ? (W)A[i * sam + ka * sak] : (W)0;  \
            b[threadIdx.y][threadIdx.x] = (kb < K && j < N) ? (W)B[kb * sbk + j * sbn] : (W)0;  \
            __syncthreads();                                                                    \
            for (int k = 0; k < TFC_CUDA_TILE; ++k) acc += a[threadIdx.y][k] * b[k][threadIdx.x]; \
            __syncthreads();                                                                    \
        }                                                                                       \
        if (i < M && j < N) C[i * N + j] = (T)acc;                                              \
    }                                                                                           \
    static inline void tfc_cuda_gemm_tiled_##tag(int64_t M, int64_t N, int64_t K, const T *A,   \
                                                 int64_t sam, int64_t sak, const T *B,          \
                                                 int64_t sbk, int64_t sbn, T *C) {              \
        dim3 threads(TFC_CUDA_TILE, TFC_CUDA_TILE);                                             \
        dim3 blocks((unsigned)((N + TFC_CUDA_TILE - 1) / TFC_CUDA_TILE),                        \
                    (unsigned)((M + TFC_CUDA_TILE - 1) / TFC_CUDA_TILE));                       \
        TFC_CUDA_LAUNCH(tfc_cuda_gemm_kernel_##tag, blocks, threads, M, N, K, A, sam, sak, B, sbk, \
                        sbn, C);                                                                \
    }

TFC_CUDA_DEFINE_GEMM_KERNEL(f32, float, float)
TFC_CUDA_DEFINE_GEMM_KERNEL(f64, double, double)
TFC_CUDA_DEFINE_GEMM_KERNEL(i32, int32_t, uint32_t)
TFC_CUDA_DEFINE_GEMM_KERNEL(i64, int64_t, uint64_t)

#ifndef TFC_NO_CUBLAS
/* An r x c operand whose element (i, j) is at p[i*si + j*sj], as cuBLAS sees it (column-major):
 * untransposed when columns are contiguous runs, transposed when rows are; else not at all. */
static inline bool tfc_cuda_blas_operand(int64_t r, int64_t c, int64_t si, int64_t sj,
                                         cublasOperation_t *op, int *ld) {
    if (si == 1 && (c == 1 || sj >= r)) {
        *op = CUBLAS_OP_N;
        *ld = (int)(c == 1 ? (r > 1 ? r : 1) : sj);
        return true;
    }
    if (sj == 1 && (r == 1 || si >= c)) {
        *op = CUBLAS_OP_T;
        *ld = (int)(r == 1 ? (c > 1 ? c : 1) : si);
        return true;
    }
    return false;
}

/* Row-major C = A B is column-major C^T = B^T A^T: B^T is N x K, A^T is K x M. */
#define TFC_CUDA_DEFINE_BLAS_GEMM(tag, T, call)                                                 \
    static inline void tfc_cuda_gemm_##tag(int64_t M, int64_t N, int64_t K, const T *A,         \
                                           int64_t sam, int64_t sak, const T *B, int64_t sbk,   \
                                           int64_t sbn, T *C) {                                 \
        cublasOperation_t opa, opb;                                                             \
        int lda, ldb;                                                                           \
        if (M < INT32_MAX && N < INT32_MAX && K < INT32_MAX &&                                  \
            tfc_cuda_blas_operand(N, K, sbn, sbk, &opb, &ldb) &&                                \
            tfc_cuda_blas_operand(K, M, sak, sam, &opa, &lda)) {                                \
            const T one = 1, zero = 0;                                                          \
            cublasStatus_t s = call(tfc_cuda_blas, opb, opa, (int)N, (int)M, (int)K, &one, B,   \
                                    ldb, A, lda, &zero, C, (int)N);                             \
            if (s != CUBLAS_STATUS_SUCCESS && tfc_cuda_blas_error == CUBLAS_STATUS_SUCCESS)     \
                tfc_cuda_blas_error = s;                                                        \
        } else {                                                                                \
            tfc_cuda_gemm_tiled_##tag(M, N, K, A, sam, sak, B, sbk, sbn, C);                    \
        }                                                                                       \
    }
TFC_CUDA_DEFINE_BLAS_GEMM(f32, float, cublasSgemm)
TFC_CUDA_DEFINE_BLAS_GEMM(f64, double, cublasDgemm)
#else
#define tfc_cuda_gemm_f32 tfc_cuda_gemm_tiled_f32
#define tfc_cuda_gemm_f64 tfc_cuda_gemm_tiled_f64
#endif
#define tfc_cuda_gemm_i32 tfc_cuda_gemm_tiled_i32
#define tfc_cuda_gemm_i64 tfc_cuda_gemm_tiled_i64

/* -- mixed precision (CompileOptions(mixed_precision="bfloat16")): bfloat16 operands, fp32 sums --
 * tfc_cuda_gemm_bf16_f32: tfc_cuda_gemm_f32's contract with A and B rounded to bfloat16 (to
 * nearest, even) as a block stages them into shared memory, multiplied on tensor cores (wmma
 * m16n16k16, sm_80 and newer) into fp32 accumulators: 4 warps, a 32 x 32 tile of C each block,
 * 16 x 16 per warp, k in steps of 16. Rows of the staged tiles are multiples of 8 bfloat16
 * values (wmma's ldm) and pieces start on 32 bytes. */
#define TFC_CUDA_BF16_TILE 32
#define TFC_CUDA_BF16_K 16
#define TFC_CUDA_BF16_LDA (TFC_CUDA_BF16_K + 8)
#define TFC_CUDA_BF16_LDB (TFC_CUDA_BF16_TILE + 8)
#define TFC_CUDA_BF16_LDC (TFC_CUDA_BF16_TILE + 4)
typedef union {
    struct {
        __nv_bfloat16 a[TFC_CUDA_BF16_TILE][TFC_CUDA_BF16_LDA]; /* A[i, k]: row-major */
        __nv_bfloat16 b[TFC_CUDA_BF16_K][TFC_CUDA_BF16_LDB];    /* B[k, j]: row-major */
    } in;
    float c[TFC_CUDA_BF16_TILE][TFC_CUDA_BF16_LDC];
} tfc_cuda_bf16_smem;

static __global__ void tfc_cuda_gemm_bf16_kernel(int64_t M, int64_t N, int64_t K, const float *A,
                                                 int64_t sam, int64_t sak, const float *B,
                                                 int64_t sbk, int64_t sbn, float *C,
                                                 int64_t tiles_n) {
    using namespace nvcuda;
    __shared__ __align__(32) tfc_cuda_bf16_smem sh;
    const int tid = (int)threadIdx.x, warp = tid / 32;
    const int row0 = warp / 2 * 16, col0 = warp % 2 * 16;
    const int64_t i0 = (int64_t)blockIdx.x / tiles_n * TFC_CUDA_BF16_TILE;
    const int64_t j0 = (int64_t)blockIdx.x % tiles_n * TFC_CUDA_BF16_TILE;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int64_t k0 = 0; k0 < K; k0 += TFC_CUDA_BF16_K) {
        for (int e = tid; e < TFC_CUDA_BF16_TILE * TFC_CUDA_BF16_K; e += 128) {
            const int r = e / TFC_CUDA_BF16_K, k = e % TFC_CUDA_BF16_K; /* A: along k */
            const int64_t i = i0 + r, ka = k0 + k;
            sh.in.a[r][k] = __float2bfloat16_rn(i < M && ka < K ? A[i * sam + ka * sak] : 0.0f);
            const int kb = e / TFC_CUDA_BF16_TILE, c = e % TFC_CUDA_BF16_TILE; /* B: along j */
            const int64_t kk = k0 + kb, j = j0 + c;
            sh.in.b[kb][c] = __float2bfloat16_rn(kk < K && j < N ? B[kk * sbk + j * sbn] : 0.0f);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(a, &sh.in.a[row0][0], TFC_CUDA_BF16_LDA);
        wmma::load_matrix_sync(b, &sh.in.b[0][col0], TFC_CUDA_BF16_LDB);
        wmma::mma_sync(acc, a, b, acc);
        __syncthreads();
    }
    wmma::store_matrix_sync(&sh.c[row0][col0], acc, TFC_CUDA_BF16_LDC, wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < TFC_CUDA_BF16_TILE * TFC_CUDA_BF16_TILE; e += 128) {
        const int r = e / TFC_CUDA_BF16_TILE, c = e % TFC_CUDA_BF16_TILE;
        if (i0 + r < M && j0 + c < N) C[(i0 + r) * N + j0 + c] = sh.c[r][c];
    }
}

static inline void tfc_cuda_gemm_bf16_f32(int64_t M, int64_t N, int64_t K, const float *A,
                                          int64_t sam, int64_t sak, const float *B, int64_t sbk,
                                          int64_t sbn, float *C) {
    const int64_t tiles_n = (N + TFC_CUDA_BF16_TILE - 1) / TFC_CUDA_BF16_TILE;
    const int64_t tiles = (M + TFC_CUDA_BF16_TILE - 1) / TFC_CUDA_BF16_TILE * tiles_n;
    TFC_CUDA_LAUNCH(tfc_cuda_gemm_bf16_kernel, (unsigned)tiles, 128, M, N, K, A, sam, sak, B, sbk,
                    sbn, C, tiles_n);
}

/* y[i] = x[i] rounded to bfloat16, as a float: the operands of the convolution forms that do
 * not run on tensor cores, which then multiply them as they are */
static __global__ void tfc_cuda_round_bf16_kernel(const float *x, float *y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __bfloat162float(__float2bfloat16_rn(x[i]));
}

static inline void tfc_cuda_round_bf16_f32(const float *x, float *y, int64_t n) {
    int64_t blocks = (n + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    if (blocks > 0) TFC_CUDA_LAUNCH(tfc_cuda_round_bf16_kernel, (unsigned)blocks, 256, x, y, n);
}

#endif /* TFC_CUDA_H */
