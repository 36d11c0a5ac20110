/* The transport's wire: frame header layout and validation, 16-bit float conversion, socket
 * I/O with deadlines, nonces. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "tfc_transport_internal.h"

int64_t tfc_transport_dtype_size(int dtype) {
    switch (dtype) {
    case TFC_DTYPE_F32: case TFC_DTYPE_I32: return 4;
    case TFC_DTYPE_F64: case TFC_DTYPE_I64: return 8;
    case TFC_DTYPE_U8: case TFC_DTYPE_I8: case TFC_DTYPE_BOOL: return 1;
    case TFC_DTYPE_F16: case TFC_DTYPE_BF16: return 2;
    default: return 0;
    }
}

const char *tfc_wire_dtype_name(int dtype) {
    switch (dtype) {
    case TFC_DTYPE_F32: return "float32";
    case TFC_DTYPE_F64: return "float64";
    case TFC_DTYPE_I32: return "int32";
    case TFC_DTYPE_U8: return "uint8";
    case TFC_DTYPE_I8: return "int8";
    case TFC_DTYPE_I64: return "int64";
    case TFC_DTYPE_BOOL: return "bool";
    case TFC_DTYPE_BF16: return "bfloat16";
    case TFC_DTYPE_F16: return "float16";
    default: return "unknown dtype";
    }
}

void tfc_wire_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
void tfc_wire_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
void tfc_wire_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
uint16_t tfc_wire_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
uint32_t tfc_wire_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
uint64_t tfc_wire_get_u64(const uint8_t *p) {
    return (uint64_t)tfc_wire_get_u32(p) | (uint64_t)tfc_wire_get_u32(p + 4) << 32;
}

void tfc_wire_encode_header(const tfc_wire_header *h, uint8_t out[TFC_WIRE_HEADER_BYTES]) {
    tfc_wire_put_u32(out, TFC_WIRE_MAGIC);
    tfc_wire_put_u16(out + 4, TFC_WIRE_VERSION);
    tfc_wire_put_u16(out + 6, 0);
    tfc_wire_put_u64(out + 8, (uint64_t)h->step);
    tfc_wire_put_u32(out + 16, h->key_len);
    out[20] = (uint8_t)h->dtype;
    out[21] = (uint8_t)h->wire_dtype;
    out[22] = (uint8_t)h->rank;
    out[23] = 0;
    tfc_wire_put_u64(out + 24, h->payload_bytes);
}

#define WHY(...) (TFC_SNPRINTF(why, cap, __VA_ARGS__), -1)

int tfc_wire_decode_header(const uint8_t in[TFC_WIRE_HEADER_BYTES], int64_t max_frame_bytes,
                           tfc_wire_header *h, char *why, size_t cap) {
    uint32_t magic = tfc_wire_get_u32(in);
    if (magic != TFC_WIRE_MAGIC)
        return WHY("magic: 0x%08" PRIx32 " is not 0x%08" PRIx32 " (\"TFCF\")", magic,
                   (uint32_t)TFC_WIRE_MAGIC);
    unsigned version = tfc_wire_get_u16(in + 4);
    if (version != TFC_WIRE_VERSION)
        return WHY("version: %u is not %u", version, (unsigned)TFC_WIRE_VERSION);
    if (tfc_wire_get_u16(in + 6) != 0 || in[23] != 0)
        return WHY("reserved: bytes 6, 7 and 23 must be 0");
    memset(h, 0, sizeof *h);
    h->step = (int64_t)tfc_wire_get_u64(in + 8);
    h->key_len = tfc_wire_get_u32(in + 16);
    h->dtype = in[20];
    h->wire_dtype = in[21];
    h->rank = in[22];
    h->payload_bytes = tfc_wire_get_u64(in + 24);
    if (h->step == TFC_TRANSPORT_ANY_STEP) return WHY("step: INT64_MIN is reserved for recv");
    if (h->key_len == 0 || h->key_len > TFC_TRANSPORT_MAX_KEY)
        return WHY("key length: %" PRIu32 " is not in [1, %d]", h->key_len,
                   TFC_TRANSPORT_MAX_KEY);
    if (tfc_transport_dtype_size(h->dtype) == 0 || h->dtype == TFC_DTYPE_F16 ||
        h->dtype == TFC_DTYPE_BF16)
        return WHY("dtype: %d is not a dtype the transport carries", h->dtype);
    if (h->wire_dtype != h->dtype &&
        !(h->dtype == TFC_DTYPE_F32 &&
          (h->wire_dtype == TFC_DTYPE_F16 || h->wire_dtype == TFC_DTYPE_BF16)))
        return WHY("wire dtype: %d cannot carry %s", h->wire_dtype,
                   tfc_wire_dtype_name(h->dtype));
    if (h->rank > TFC_TRANSPORT_MAX_RANK)
        return WHY("rank: %d is over %d", h->rank, TFC_TRANSPORT_MAX_RANK);
    if (h->payload_bytes > (uint64_t)max_frame_bytes)
        return WHY("payload bytes: %" PRIu64 " are over the frame limit of %" PRId64 " bytes",
                   h->payload_bytes, max_frame_bytes);
    uint64_t fixed = TFC_WIRE_HEADER_BYTES + 8u * (uint64_t)h->rank + h->key_len + 4u;
    if (h->payload_bytes + fixed > (uint64_t)max_frame_bytes)
        return WHY("payload bytes: %" PRIu64 " and the %" PRIu64 " bytes of header, dims, key and "
                   "checksum make a frame of %" PRIu64 " bytes, over the limit of %" PRId64,
                   h->payload_bytes, fixed, h->payload_bytes + fixed, max_frame_bytes);
    return 0;
}

size_t tfc_wire_rest_bytes(const tfc_wire_header *h) {
    return 8u * (size_t)h->rank + h->key_len;
}

int tfc_wire_decode_rest(uint8_t *head, tfc_wire_header *h, char *why, size_t cap) {
    for (int i = 0; i < h->rank; ++i)
        h->dims[i] = (int64_t)tfc_wire_get_u64(head + TFC_WIRE_HEADER_BYTES + 8 * i);
    if (tfc_wire_check_dims(h, why, cap) != 0) return -1;
    char *key = (char *)head + TFC_WIRE_HEADER_BYTES + 8 * h->rank;
    if (memchr(key, '\0', h->key_len) != NULL) return WHY("key: contains a NUL byte");
    key[h->key_len] = '\0';
    return 0;
}

void tfc_wire_escape(const char *in, size_t n, char *out, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    if (cap == 0) return;
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = (unsigned char)in[i];
        size_t need = c >= 0x20 && c < 0x7F ? 1 : 4;
        if (used + need >= cap) break;
        if (need == 1) {
            out[used++] = (char)c;
        } else {
            out[used++] = '\\', out[used++] = 'x';
            out[used++] = hex[c >> 4], out[used++] = hex[c & 15];
        }
    }
    out[used] = '\0';
}

int tfc_wire_name_valid(const char *name) {
    size_t n = name != NULL ? strlen(name) : 0;
    if (n == 0 || n > TFC_TRANSPORT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; ++i)
        if (name[i] <= 0x20 || name[i] >= 0x7F) return 0;
    return 1;
}

int64_t tfc_wire_count(int rank, const int64_t *dims) {
    int64_t count = 1;
    for (int i = 0; i < rank; ++i) {
        if (dims[i] < 0) return -1;
        if (dims[i] != 0 && count > INT64_MAX / dims[i]) return -1;
        count *= dims[i];
    }
    return count;
}

void tfc_wire_describe(int dtype, int rank, const int64_t *dims, char *out, size_t cap) {
    size_t used = (size_t)TFC_SNPRINTF(out, cap, "%s[", tfc_wire_dtype_name(dtype));
    for (int i = 0; i < rank && used < cap; ++i)
        used += (size_t)TFC_SNPRINTF(out + used, cap - used, i ? ",%" PRId64 : "%" PRId64,
                                     dims[i]);
    if (used < cap) TFC_SNPRINTF(out + used, cap - used, "]");
}

int tfc_wire_check_dims(const tfc_wire_header *h, char *why, size_t cap) {
    for (int i = 0; i < h->rank; ++i)
        if (h->dims[i] < 0) return WHY("dims: dim %d is %" PRId64 " (negative)", i, h->dims[i]);
    int64_t count = tfc_wire_count(h->rank, h->dims);
    int64_t size = tfc_transport_dtype_size(h->wire_dtype);
    if (count < 0 || count > INT64_MAX / size) return WHY("dims: the element count overflows");
    if ((uint64_t)(count * size) != h->payload_bytes) {
        char shape[160];
        tfc_wire_describe(h->wire_dtype, h->rank, h->dims, shape, sizeof shape);
        return WHY("payload bytes: %" PRIu64 " is not the %" PRId64 " bytes of %s",
                   h->payload_bytes, count * size, shape);
    }
    return 0;
}

/* ---- 16-bit floats: round to nearest even, NaN stays NaN, Inf stays Inf ---- */

static uint16_t f32_to_f16_one(float value) {
    uint32_t x;
    memcpy(&x, &value, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7FFFFFFFu;
    if (x >= 0x47800000u) /* >= 65536: Inf, or NaN (made quiet, payload's top bits kept) */
        return (uint16_t)(sign | (x > 0x7F800000u ? 0x7E00u | ((x >> 13) & 0x3FFu) : 0x7C00u));
    if (x < 0x38800000u) { /* below 2^-14: a subnormal half; the FPU rounds the addition */
        float f, magic = 0.5f; /* 2^(-1): aligns the half's subnormal ulp at the float's ulp */
        memcpy(&f, &x, 4);
        f += magic;
        uint32_t r;
        memcpy(&r, &f, 4);
        return (uint16_t)(sign | (r - 0x3F000000u));
    }
    uint32_t odd = (x >> 13) & 1u;
    x += 0xC8000FFFu + odd; /* rebias the exponent (-112 << 23) and round half to even */
    return (uint16_t)(sign | (x >> 13));
}

static float f16_to_f32_one(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp == 0) {
        float f = (float)mant * 0x1p-24f; /* exact: subnormal halves are multiples of 2^-24 */
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void tfc_transport_f32_to_f16_portable(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16_one(src[i]);
}

void tfc_transport_f16_to_f32_portable(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32_one(src[i]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* F16C converts 8 at a time, IEEE round to nearest even, subnormals, Inf and NaN included. */
__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(const float *src,
                                                                uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    tfc_transport_f32_to_f16_portable(src + i, dst + i, n - i);
}

__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(const uint16_t *src,
                                                                float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i half = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(half));
    }
    tfc_transport_f16_to_f32_portable(src + i, dst + i, n - i);
}

/* CPUID: F16C, AVX and OSXSAVE, and the OS saves the YMM registers (XGETBV); asked once. */
static int has_f16c(void) {
    static int known = -1;
    int has = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (has < 0) {
        unsigned a, b, c, d, lo = 0, hi = 0;
        has = __get_cpuid(1, &a, &b, &c, &d) && (c & (7u << 27)) == (7u << 27);
        if (has) __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        (void)hi;
        has = has && (lo & 6u) == 6u;
        __atomic_store_n(&known, has, __ATOMIC_RELAXED);
    }
    return has;
}
#define TFC_WIRE_F16C 1
#endif

void tfc_transport_f32_to_f16(const float *src, uint16_t *dst, int64_t n) {
#ifdef TFC_WIRE_F16C
    if (has_f16c()) {
        f32_to_f16_f16c(src, dst, n);
        return;
    }
#endif
    tfc_transport_f32_to_f16_portable(src, dst, n);
}

void tfc_transport_f16_to_f32(const uint16_t *src, float *dst, int64_t n) {
#ifdef TFC_WIRE_F16C
    if (has_f16c()) {
        f16_to_f32_f16c(src, dst, n);
        return;
    }
#endif
    tfc_transport_f16_to_f32_portable(src, dst, n);
}

void tfc_transport_f32_to_bf16(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) { /* branch-free, so the compiler vectorizes it */
        uint32_t x;
        memcpy(&x, &src[i], 4);
        uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
        uint32_t quiet_nan = (x >> 16) | 0x40u; /* NaN stays NaN, never rounds to Inf */
        dst[i] = (uint16_t)((x & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
    }
}

void tfc_transport_bf16_to_f32(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint32_t x = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &x, 4);
    }
}

/* ---- socket I/O with deadlines ---- */

int64_t tfc_wire_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stopped(const int *stop) {
    return stop != NULL && __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

/* After a socket call that moved no byte: TFC_IO_OK to call again, or why not. */
static int keep_waiting(int64_t last_progress, int64_t stall_ms, const int *stop) {
    if (stopped(stop)) return TFC_IO_STOPPED;
    if (stall_ms >= 0 && tfc_wire_now_ms() - last_progress >= stall_ms) return TFC_IO_TIMEOUT;
    return TFC_IO_OK;
}

/* The sockets block, with SO_RCVTIMEO / SO_SNDTIMEO of TFC_WIRE_WAKE_MS: one recv of a whole
 * chunk (MSG_WAITALL) sleeps in the kernel until it is there, and still comes back often
 * enough to see a stop flag or a passed deadline. The deadline is the whole read's: bytes
 * trickling in do not move it. */
int tfc_wire_read_by(int fd, void *buf, size_t n, int64_t deadline_ms, const int *stop,
                     size_t *got) {
    uint8_t *p = (uint8_t *)buf;
    size_t done = 0;
    int status = TFC_IO_OK;
    while (done < n) {
        ssize_t r = recv(fd, p + done, n - done, MSG_WAITALL);
        if (r > 0) {
            done += (size_t)r;
        } else if (r == 0) {
            status = TFC_IO_CLOSED;
            break;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            status = TFC_IO_ERROR;
            break;
        }
        if (done < n && stopped(stop)) {
            status = TFC_IO_STOPPED;
            break;
        }
        if (done < n && deadline_ms >= 0 && tfc_wire_now_ms() >= deadline_ms) {
            status = TFC_IO_TIMEOUT;
            break;
        }
    }
    if (got != NULL) *got = done;
    return status;
}

int tfc_wire_write_full(int fd, const void *buf, size_t n, int64_t stall_ms, const int *stop) {
    return tfc_wire_write_flags(fd, buf, n, stall_ms, stop, 0);
}

int tfc_wire_write_flags(int fd, const void *buf, size_t n, int64_t stall_ms, const int *stop,
                         int more) {
    const uint8_t *p = (const uint8_t *)buf;
    size_t done = 0;
    int64_t last = tfc_wire_now_ms();
    int flags = MSG_NOSIGNAL;
#ifdef MSG_MORE
    if (more) flags |= MSG_MORE;
#else
    (void)more;
#endif
    while (done < n) {
        ssize_t r = send(fd, p + done, n - done, flags);
        if (r > 0) {
            done += (size_t)r;
            last = tfc_wire_now_ms();
        } else if (r == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            int status = keep_waiting(last, stall_ms, stop);
            if (status != TFC_IO_OK) return status;
        } else {
            return TFC_IO_ERROR;
        }
    }
    return TFC_IO_OK;
}

const char *tfc_wire_io_name(int io_status) {
    switch (io_status) {
    case TFC_IO_OK: return "ok";
    case TFC_IO_CLOSED: return "the peer closed the connection";
    case TFC_IO_TIMEOUT: return "timed out";
    case TFC_IO_STOPPED: return "cancelled";
    default: return strerror(errno);
    }
}

int tfc_wire_random(void *buf, size_t n) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(fd, (uint8_t *)buf + done, n - done);
        if (r <= 0 && !(r < 0 && errno == EINTR)) break;
        if (r > 0) done += (size_t)r;
    }
    close(fd);
    return done == n ? 0 : -1;
}

int tfc_wire_mac_equal(const uint8_t *a, const uint8_t *b) {
    volatile uint8_t diff = 0;
    for (int i = 0; i < 32; ++i) diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

void tfc_wire_socket_options(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct timeval wake = {0, TFC_WIRE_WAKE_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wake, sizeof wake);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wake, sizeof wake);
}
