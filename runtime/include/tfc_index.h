/* Divisions of array indices in the runtime's kernels and the generated code: TFC_IDIV(i, d)
 * and TFC_IMOD(i, d) for i >= 0 and d > 0, as int64_t.
 *
 * An embedded build (-DTFC_EMBED) for a 32-bit target divides in 32 bits: such a target divides
 * 32-bit values in one instruction (Cortex-M3/M4/M7, wasm32) where 64-bit ones call libgcc's
 * __aeabi_ldivmod, a routine the library would otherwise link for nothing; an index fits (tfc
 * compile --target embed checks that every tensor has fewer than 2^31 elements). Other builds
 * keep the 64-bit division their targets do in one instruction. */
#ifndef TFC_INDEX_H
#define TFC_INDEX_H

#include <stdint.h>

#if defined(TFC_EMBED) && UINTPTR_MAX <= 0xFFFFFFFFu
#define TFC_IDIV(i, d) ((int64_t)((uint32_t)(i) / (uint32_t)(d)))
#define TFC_IMOD(i, d) ((int64_t)((uint32_t)(i) % (uint32_t)(d)))
#else
#define TFC_IDIV(i, d) ((int64_t)(i) / (int64_t)(d))
#define TFC_IMOD(i, d) ((int64_t)(i) % (int64_t)(d))
#endif

#endif /* TFC_INDEX_H */
