/* A small stdio for the sample on wasm32 (clang --target=wasm32 -nostdlib): printf with the
 * conversions main.c uses (%d, %s, %.Nf, %%), written to standard output with WASI's fd_write,
 * and the WASI command entry point _start, which runs main and exits with its status. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "stdio.h"

typedef struct {
    const void *buf;
    size_t len;
} wasi_ciovec;

__attribute__((import_module("wasi_snapshot_preview1"), import_name("fd_write"))) int
wasi_fd_write(int fd, const wasi_ciovec *iovs, size_t count, size_t *written);
__attribute__((import_module("wasi_snapshot_preview1"), import_name("proc_exit"), noreturn)) void
wasi_proc_exit(int status);

static char out[512];
static size_t used;

static void flush(void) {
    size_t written = 0;
    wasi_ciovec iov = {out, used};
    if (used > 0) wasi_fd_write(1, &iov, 1, &written);
    used = 0;
}

static void put(char c) {
    if (used == sizeof out) flush();
    out[used++] = c;
    if (c == '\n') flush();
}

static void put_unsigned(uint64_t u) {
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u != 0);
    while (n > 0) put(digits[--n]);
}

/* x with `places` decimals, rounded half away from zero (enough for a sample's output) */
static void put_fixed(double x, int places) {
    uint64_t scale = 1;
    if (x != x) {
        put('n'), put('a'), put('n');
        return;
    }
    if (x < 0) {
        put('-');
        x = -x;
    }
    if (x > 1e15) {
        put('i'), put('n'), put('f');
        return;
    }
    for (int i = 0; i < places; ++i) scale *= 10;
    uint64_t v = (uint64_t)(x * (double)scale + 0.5);
    put_unsigned(v / scale);
    if (places > 0) {
        uint64_t frac = v % scale;
        put('.');
        for (uint64_t d = scale / 10; d > 0; d /= 10) put((char)('0' + (int)(frac / d % 10)));
    }
}

int printf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    for (const char *p = format; *p; ++p) {
        if (*p != '%') {
            put(*p);
            continue;
        }
        ++p;
        int places = 6;
        if (*p == '.') {
            places = 0;
            for (++p; *p >= '0' && *p <= '9'; ++p) places = places * 10 + (*p - '0');
        }
        if (*p == 'd') {
            int v = va_arg(ap, int);
            if (v < 0) put('-');
            put_unsigned(v < 0 ? 0u - (uint64_t)(int64_t)v : (uint64_t)v);
        } else if (*p == 's') {
            for (const char *s = va_arg(ap, const char *); *s; ++s) put(*s);
        } else if (*p == 'f') {
            put_fixed(va_arg(ap, double), places);
        } else if (*p == '%') {
            put('%');
        } else {
            break; /* not a conversion main.c uses */
        }
    }
    va_end(ap);
    return 0;
}

int main(void);

void _start(void);
void _start(void) {
    int status = main();
    flush();
    wasi_proc_exit(status);
}
