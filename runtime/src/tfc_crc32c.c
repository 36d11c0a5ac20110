/* CRC32C (Castagnoli, reflected 0x82F63B78): slicing-by-8 tables, the SSE4.2 instruction when
 * the CPU has it. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TFC_CRC_HW 1
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                            size_t n) {
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        crc = __builtin_ia32_crc32qi(crc, *p++);
        --n;
    }
#if defined(__x86_64__)
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
#endif
    while (n-- > 0) crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}
#endif

static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t) = crc_slicing8;

static void crc_init(void) {
    crc_init_tables();
#ifdef TFC_CRC_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) crc_impl = crc_sse42;
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
