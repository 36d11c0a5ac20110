/* The floating-point mode compiled steps run in: flush-to-zero and denormals-are-zero.
 *
 *   tfc_fp_flush_denormals()  results too small to be normal become 0 and denormal inputs read
 *                             as 0; returns the caller's mode
 *   tfc_fp_restore(mode)      puts the caller's mode back
 *
 * Arithmetic on denormal floats takes microcode assists on x86 (tens to hundreds of cycles per
 * operation): a training step whose softmax gradients have decayed below float32's smallest
 * normal (1.2e-38) ran 3.5 times slower. TensorFlow and XLA run their CPU kernels in this mode
 * for the same reason, so results near zero also match theirs. A program's entry point sets it
 * around its steps and restores the caller's (the Python interpreter and NumPy keep IEEE
 * denormals); the thread pool's workers, which run nothing but steps, keep it set.
 *
 * x86 (SSE's MXCSR: FTZ bit 15, DAZ bit 6) and AArch64 (FPCR.FZ, bit 24, which flushes both
 * inputs and results). Elsewhere, and where TFC_KEEP_DENORMALS is defined, the mode is left as it
 * is: IEEE denormals, as the C standard computes.
 */
#ifndef TFC_FPENV_H
#define TFC_FPENV_H

#include <stdint.h>

typedef uint64_t tfc_fp_mode;

#if !defined(TFC_KEEP_DENORMALS) && !defined(__CUDACC__) && \
    defined(__GNUC__) && (defined(__SSE__) || defined(__x86_64__))
/* stmxcsr/ldmxcsr in GNU assembly, not <xmmintrin.h>: that header brings <stdlib.h>, which the
 * embeddable library does not include */
static inline tfc_fp_mode tfc_fp_flush_denormals(void) {
    unsigned int caller;
    __asm__ __volatile__("stmxcsr %0" : "=m"(caller));
    const unsigned int flushing = caller | 0x8040u;
    __asm__ __volatile__("ldmxcsr %0" : : "m"(flushing));
    return caller;
}

static inline void tfc_fp_restore(tfc_fp_mode caller) {
    const unsigned int mode = (unsigned int)caller;
    __asm__ __volatile__("ldmxcsr %0" : : "m"(mode));
}

#elif !defined(TFC_KEEP_DENORMALS) && !defined(__CUDACC__) && defined(__aarch64__)

static inline tfc_fp_mode tfc_fp_flush_denormals(void) {
    uint64_t caller;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(caller));
    __asm__ __volatile__("msr fpcr, %0" : : "r"(caller | ((uint64_t)1 << 24)));
    return caller;
}

static inline void tfc_fp_restore(tfc_fp_mode caller) {
    __asm__ __volatile__("msr fpcr, %0" : : "r"(caller));
}

#else

static inline tfc_fp_mode tfc_fp_flush_denormals(void) { return 0; }
static inline void tfc_fp_restore(tfc_fp_mode caller) { (void)caller; }

#endif

#endif /* TFC_FPENV_H */
