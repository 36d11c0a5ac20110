/* The embeddable library's platform (-DTFC_EMBED): error messages formatted without stdio.
 *
 * tfc_embed_format understands what tfc_runtime.h's error helpers write (%s, %lld and %%),
 * always NUL-terminates within `cap`, and needs only the freestanding <stdarg.h>. */
#ifndef TFC_EMBED_H
#define TFC_EMBED_H

#include <stdarg.h>
#include <stddef.h>

static inline void tfc_embed_put(char *buf, size_t cap, size_t *n, char c) {
    if (*n + 1 < cap) buf[*n] = c;
    ++*n;
}

static inline int tfc_embed_format(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    size_t n = 0;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; ++p) {
        if (*p != '%') {
            tfc_embed_put(buf, cap, &n, *p);
        } else if (p[1] == 's') {
            for (const char *s = va_arg(ap, const char *); *s; ++s) tfc_embed_put(buf, cap, &n, *s);
            p += 1;
        } else if (p[1] == 'l' && p[2] == 'l' && p[3] == 'd') {
            long long v = va_arg(ap, long long);
            unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            char digits[24];
            int k = 0;
            do {
                digits[k++] = (char)('0' + (int)(u % 10u));
                u /= 10u;
            } while (u != 0);
            if (v < 0) tfc_embed_put(buf, cap, &n, '-');
            while (k > 0) tfc_embed_put(buf, cap, &n, digits[--k]);
            p += 3;
        } else {
            tfc_embed_put(buf, cap, &n, '%');
            if (p[1] == '%') ++p;
        }
    }
    va_end(ap);
    if (cap > 0) buf[n < cap ? n : cap - 1] = '\0';
    return (int)n;
}

#ifndef TFC_SNPRINTF
#define TFC_SNPRINTF tfc_embed_format
#endif

#endif /* TFC_EMBED_H */
