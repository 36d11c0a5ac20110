/* CUDA device emulation: the generated .cu programs compiled by the host C++ compiler (g++ -x c++)
 * run every kernel launch on the CPU, like CUDA's old -deviceemu. tfc_cuda.h includes this
 * header instead of <cuda_runtime.h> when TFC_CUDA_DEVICE_EMULATION is defined; the tests use it
 * to check the CUDA backend's numbers on machines without a GPU.
 *
 * Device memory is host memory. A launch runs its blocks one after another in the calling
 * thread, so __shared__ variables can be function statics. Within a block, thread 0 runs first
 * as a fiber (its own stack, ucontext): if it finishes without reaching __syncthreads(), the
 * other threads simply run to completion one by one; if it reaches a barrier, every thread of
 * the block runs as a fiber and __syncthreads() switches to the next one, so the block's threads
 * really interleave at each barrier. The order is fixed: runs are deterministic. The launch
 * state is static, per program: one run of a program at a time, as with its one stream and
 * device status on a GPU (a Session runs one program call at a time).
 *
 * With TFC_CUDA_EMU_EXPORT defined, only the runtime API (memory, copies, errors) is compiled,
 * with C linkage: the library tfc's Python side allocates emulated device buffers with. */
#ifndef TFC_CUDA_EMU_H
#define TFC_CUDA_EMU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

/* the values of the CUDA runtime's codes, so messages and Python's checks read the same */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

struct CUstream_st {
    int unused;
};
typedef struct CUstream_st *cudaStream_t;
#define cudaStreamNonBlocking 0x01

#ifdef TFC_CUDA_EMU_EXPORT
#define TFC_EMU_API extern "C" __attribute__((visibility("default")))
#else
#define TFC_EMU_API static inline
#endif

/* -- the runtime API: memory is host memory, streams run in order, so every call is synchronous */
#define TFC_EMU_ALIGN 256 /* cudaMalloc's alignment, which vectorized kernels may rely on */

/* A launch with a bad configuration, reported by the next cudaGetLastError(). */
static cudaError_t tfc_emu_last_error = cudaSuccess;

TFC_EMU_API const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error (CUDA device emulation)";
    case cudaErrorInvalidValue: return "invalid argument (CUDA device emulation)";
    case cudaErrorMemoryAllocation: return "out of memory (CUDA device emulation)";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument (CUDA device emulation)";
    }
    return "unknown error (CUDA device emulation)";
}

TFC_EMU_API cudaError_t cudaGetLastError(void) {
    cudaError_t e = tfc_emu_last_error;
    tfc_emu_last_error = cudaSuccess;
    return e;
}

TFC_EMU_API cudaError_t cudaGetDeviceCount(int *count) {
    *count = 1; /* the emulated device */
    return cudaSuccess;
}

TFC_EMU_API cudaError_t cudaDeviceGetAttribute(int *value, int attr, int device) {
    (void)attr, (void)device;
    *value = 0; /* no compute capability: nothing is compiled for one */
    return cudaSuccess;
}

TFC_EMU_API cudaError_t cudaMalloc(void **ptr, size_t size) {
    if (ptr == NULL) return cudaErrorInvalidValue;
    size_t rounded = (size + TFC_EMU_ALIGN - 1) / TFC_EMU_ALIGN * TFC_EMU_ALIGN;
    *ptr = aligned_alloc(TFC_EMU_ALIGN, rounded ? rounded : TFC_EMU_ALIGN);
    if (*ptr == NULL) return cudaErrorMemoryAllocation;
    /* device memory starts out as garbage: all-ones bytes (NaN as floats, -1 as integers) make a
     * kernel that reads what nothing wrote fail under emulation, not pass by luck */
    memset(*ptr, 0xff, rounded ? rounded : TFC_EMU_ALIGN);
    return cudaSuccess;
}

TFC_EMU_API cudaError_t cudaFree(void *ptr) {
    free(ptr);
    return cudaSuccess;
}

TFC_EMU_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
    (void)kind;
    if (count == 0) return cudaSuccess;
    if (dst == NULL || src == NULL) return cudaErrorInvalidValue;
    memmove(dst, src, count);
    return cudaSuccess;
}

TFC_EMU_API cudaError_t cudaMemset(void *ptr, int value, size_t count) {
    if (count == 0) return cudaSuccess;
    if (ptr == NULL) return cudaErrorInvalidValue;
    memset(ptr, value, count);
    return cudaSuccess;
}

TFC_EMU_API cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

#ifndef TFC_CUDA_EMU_EXPORT
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                          cudaMemcpyKind kind, cudaStream_t stream) {
    (void)stream;
    return cudaMemcpy(dst, src, count, kind);
}

static inline cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count,
                                          cudaStream_t stream) {
    (void)stream;
    return cudaMemset(ptr, value, count);
}

static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
    static struct CUstream_st the_stream;
    (void)flags;
    *stream = &the_stream;
    return cudaSuccess;
}

static inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    (void)stream;
    return cudaSuccess;
}

/* __device__ variables are host variables: their address is the symbol's */
template <typename T>
static inline cudaError_t cudaGetSymbolAddress(void **ptr, const T &symbol) {
    *ptr = (void *)&symbol;
    return cudaSuccess;
}

template <typename T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count,
                                               size_t offset = 0,
                                               cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    if (offset + count > sizeof(T)) return cudaErrorInvalidValue;
    return cudaMemcpy(dst, (const char *)&symbol + offset, count, kind);
}

/* -- device code: one OS thread runs every GPU thread, so atomics need no atomicity ------------ */
static inline int atomicCAS(int *address, int compare, int value) {
    int old = *address;
    if (old == compare) *address = value;
    return old;
}
static inline unsigned atomicCAS(unsigned *address, unsigned compare, unsigned value) {
    unsigned old = *address;
    if (old == compare) *address = value;
    return old;
}
static inline unsigned long long atomicCAS(unsigned long long *address, unsigned long long compare,
                                           unsigned long long value) {
    unsigned long long old = *address;
    if (old == compare) *address = value;
    return old;
}

/* the running thread's coordinates, set before it runs and whenever a fiber resumes */
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;

/* the launches: blocks in order, a block's threads as fibers where they synchronize */
#include "tfc_cuda_emu_launch.h"

/* Run `body` (a kernel call) as every thread of a grid of `blocks` x `threads`. */
template <typename F>
static inline void tfc_emu_launch(dim3 blocks, dim3 threads, const F &body) {
    tfc_emu_run_grid(blocks, threads, [](const void *f) { (*(const F *)f)(); }, &body);
}
#endif /* TFC_CUDA_EMU_EXPORT */

#endif /* TFC_CUDA_EMU_H */
