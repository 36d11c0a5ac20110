/* CRC32C (Castagnoli, reflected 0x82F63B78): slicing-by-8 tables, the SSE4.2 instruction when
 * the CPU has it. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "tfc_transport.h"

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init_tables(void) {
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
        for (int s = 1; s < 8; ++s)
            crc_table[s][i] = (crc_table[s - 1][i] >> 8) ^ crc_table[0][crc_table[s - 1][i] & 0xFF];
}

/* The portable one: 8 bytes per step through 8 tables. `crc` is the pre-inverted state. */
static uint32_t crc_slicing8(uint32_t crc, const uint8_t *p, size_t n) {
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
        --n;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
              crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
              crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
              crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TFC_CRC_HW 1
/* Three independent crc32 instruction streams hide the instruction's latency; their sums are
 * combined with "append n zero bytes" operators (GF(2) matrices, as in Mark Adler's crc32c.c). */
#define CRC_LONG 8192
#define CRC_SHORT 256
static uint32_t crc_zeros_long[4][256], crc_zeros_short[4][256];

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec; vec >>= 1, ++mat)
        if (vec & 1) sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; ++n) square[n] = gf2_times(mat, mat[n]);
}

/* The operator that appends `len` zero bytes (a power of two) to a CRC, as 4 byte tables. */
static void crc_zeros_tables(uint32_t zeros[4][256], size_t len) {
    uint32_t even[32], odd[32], row = 1;
    odd[0] = 0x82F63B78u; /* one zero bit */
    for (int n = 1; n < 32; ++n, row <<= 1) odd[n] = row;
    gf2_square(even, odd); /* two bits */
    gf2_square(odd, even); /* four bits */
    uint32_t *op = odd;
    for (;;) { /* eight bits (one byte), then doubling until len */
        gf2_square(even, odd);
        op = even;
        len >>= 1;
        if (len == 0) break;
        gf2_square(odd, even);
        op = odd;
        len >>= 1;
        if (len == 0) break;
    }
    for (uint32_t n = 0; n < 256; ++n)
        for (int k = 0; k < 4; ++k) zeros[k][n] = gf2_times(op, n << (8 * k));
}

static uint32_t crc_shift(uint32_t zeros[4][256], uint32_t crc) {
    return zeros[0][crc & 0xFF] ^ zeros[1][(crc >> 8) & 0xFF] ^ zeros[2][(crc >> 16) & 0xFF] ^
           zeros[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static uint64_t crc_words(uint64_t c, const uint8_t *p,
                                                            size_t words) {
    for (size_t i = 0; i < words; ++i) {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    return c;
}

/* `block` bytes from each of three consecutive blocks at once; returns the combined state. */
__attribute__((target("sse4.2"))) static uint32_t crc_three(uint32_t crc, const uint8_t *p,
                                                            size_t block,
                                                            uint32_t zeros[4][256]) {
    uint64_t c0 = crc, c1 = 0, c2 = 0;
    for (size_t i = 0; i < block; i += 8) {
        uint64_t v0, v1, v2;
        memcpy(&v0, p + i, 8);
        memcpy(&v1, p + block + i, 8);
        memcpy(&v2, p + 2 * block + i, 8);
        c0 = __builtin_ia32_crc32di(c0, v0);
        c1 = __builtin_ia32_crc32di(c1, v1);
        c2 = __builtin_ia32_crc32di(c2, v2);
    }
    uint32_t out = crc_shift(zeros, (uint32_t)c0) ^ (uint32_t)c1;
    return crc_shift(zeros, out) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                            size_t n) {
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        crc = __builtin_ia32_crc32qi(crc, *p++);
        --n;
    }
    for (; n >= 3 * CRC_LONG; p += 3 * CRC_LONG, n -= 3 * CRC_LONG)
        crc = crc_three(crc, p, CRC_LONG, crc_zeros_long);
    for (; n >= 3 * CRC_SHORT; p += 3 * CRC_SHORT, n -= 3 * CRC_SHORT)
        crc = crc_three(crc, p, CRC_SHORT, crc_zeros_short);
    crc = (uint32_t)crc_words(crc, p, n / 8);
    p += n / 8 * 8;
    n %= 8;
    while (n-- > 0) crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}

/* Carry-less multiplication folds 64 bytes per step (4 lanes of 16, moved forward by 512 bits,
 * then to one lane by 128-bit folds); the folded 16 bytes and the tail go through crc32. The
 * constants are x^e mod P for CRC32C, bit-reflected and shifted left by one, e = 512 +- 32
 * and 128 +- 32 (Gopal et al., "Fast CRC computation for generic polynomials using PCLMULQDQ"). */
__attribute__((target("sse4.2,pclmul"))) static __m128i crc_fold(__m128i x, __m128i k,
                                                                 __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)),
                         next);
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc_pclmul(uint32_t crc,
                                                                    const uint8_t *p, size_t n) {
    if (n < 128) return crc_sse42(crc, p, n);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    const __m128i k512 = _mm_set_epi64x(0x9e4addf8LL, 0x740eef02LL);
    const __m128i k128 = _mm_set_epi64x(0x14cd00bd6LL, 0xf20c0dfeLL);
    for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
        x1 = crc_fold(x1, k512, _mm_loadu_si128((const __m128i *)(const void *)p));
        x2 = crc_fold(x2, k512, _mm_loadu_si128((const __m128i *)(const void *)(p + 16)));
        x3 = crc_fold(x3, k512, _mm_loadu_si128((const __m128i *)(const void *)(p + 32)));
        x4 = crc_fold(x4, k512, _mm_loadu_si128((const __m128i *)(const void *)(p + 48)));
    }
    x1 = crc_fold(x1, k128, x2);
    x1 = crc_fold(x1, k128, x3);
    x1 = crc_fold(x1, k128, x4);
    for (; n >= 16; p += 16, n -= 16)
        x1 = crc_fold(x1, k128, _mm_loadu_si128((const __m128i *)(const void *)p));
    uint64_t c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(x1));
    c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(x1, 1));
    return crc_sse42((uint32_t)c, p, n);
}

/* The same with 512-bit registers (AVX-512 VPCLMULQDQ): four 128-bit lanes per register, four
 * registers, 256 bytes per step; at the end the lanes fold into one by 384, 256 and 128 bits. */
#define CRC_AVX512 "avx512f,vpclmulqdq,pclmul,sse4.2"
__attribute__((target(CRC_AVX512))) static __m512i crc_fold512(__m512i x, __m512i k,
                                                               __m512i next) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

__attribute__((target(CRC_AVX512))) static __m512i crc_load512(const uint8_t *p) {
    return _mm512_loadu_si512((const void *)p);
}

__attribute__((target(CRC_AVX512))) static uint32_t crc_avx512(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
    if (n < 512) return crc_pclmul(crc, p, n);
    __m512i x0 = crc_load512(p), x1 = crc_load512(p + 64), x2 = crc_load512(p + 128);
    __m512i x3 = crc_load512(p + 192);
    x0 = _mm512_xor_si512(x0, _mm512_inserti32x4(_mm512_setzero_si512(),
                                                  _mm_cvtsi32_si128((int)crc), 0));
    const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(0xb9e02b86LL, 0xdcb17aa4LL));
    const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x9e4addf8LL, 0x740eef02LL));
    for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
        x0 = crc_fold512(x0, k2048, crc_load512(p));
        x1 = crc_fold512(x1, k2048, crc_load512(p + 64));
        x2 = crc_fold512(x2, k2048, crc_load512(p + 128));
        x3 = crc_fold512(x3, k2048, crc_load512(p + 192));
    }
    x0 = crc_fold512(x0, k512, x1);
    x0 = crc_fold512(x0, k512, x2);
    x0 = crc_fold512(x0, k512, x3);
    for (; n >= 64; p += 64, n -= 64) x0 = crc_fold512(x0, k512, crc_load512(p));
    const __m128i k384 = _mm_set_epi64x(0x1d82c63daLL, 0x1c291d04LL);
    const __m128i k256 = _mm_set_epi64x(0xba4fc28eLL, 0x1384aa63aLL);
    const __m128i k128 = _mm_set_epi64x(0x14cd00bd6LL, 0xf20c0dfeLL);
    __m128i x = crc_fold(_mm512_extracti32x4_epi32(x0, 0), k384, _mm512_extracti32x4_epi32(x0, 3));
    x = crc_fold(_mm512_extracti32x4_epi32(x0, 1), k256, x);
    x = crc_fold(_mm512_extracti32x4_epi32(x0, 2), k128, x);
    for (; n >= 16; p += 16, n -= 16)
        x = crc_fold(x, k128, _mm_loadu_si128((const __m128i *)(const void *)p));
    uint64_t c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(x));
    c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(x, 1));
    return crc_sse42((uint32_t)c, p, n);
}
#endif

static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t) = crc_slicing8;

static void crc_init(void) {
    crc_init_tables();
#ifdef TFC_CRC_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc_zeros_tables(crc_zeros_long, CRC_LONG);
        crc_zeros_tables(crc_zeros_short, CRC_SHORT);
        crc_impl = crc_sse42;
        if (__builtin_cpu_supports("pclmul")) crc_impl = crc_pclmul;
        if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("vpclmulqdq"))
            crc_impl = crc_avx512;
    }
#endif
}

uint32_t tfc_crc32c(uint32_t crc, const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    return ~crc_impl(~crc, (const uint8_t *)data, n);
}

/* The portable path alone, so tests can check both give the same sums. */
uint32_t tfc_crc32c_portable(uint32_t crc, const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    return ~crc_slicing8(~crc, (const uint8_t *)data, n);
}
