/* TFC_HD marks the runtime's helpers that nvcc also compiles for the GPU (empty in C). */
#ifndef TFC_HD_H
#define TFC_HD_H

#ifndef TFC_HD
#ifdef __CUDACC__
#define TFC_HD __host__ __device__
#else
#define TFC_HD
#endif
#endif

#endif /* TFC_HD_H */
