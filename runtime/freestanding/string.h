/* string.h for a target without a C library (wasm32 freestanding): what tfc's generated code
 * and runtime headers call. tfc_freestanding.c defines them. */
#ifndef TFC_FREESTANDING_STRING_H
#define TFC_FREESTANDING_STRING_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

#endif /* TFC_FREESTANDING_STRING_H */
