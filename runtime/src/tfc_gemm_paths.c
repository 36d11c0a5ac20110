/* The GEMM's packing paths (tfc_gemm.h's TFC_GEMM_PATHs, float and double) as one object:
 * compiled once per flag set and linked into the Session's programs and into the native
 * executables (a member of their runtime archive), whose sources declare them
 * (TFC_GEMM_LINKED) instead of compiling them again in every program. */
#define TFC_GEMM_LIBRARY
#include "tfc_runtime.h"
