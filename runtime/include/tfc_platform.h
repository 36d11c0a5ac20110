/* Platform hooks of the tfc runtime: what an embedder may replace (define before including). */
#ifndef TFC_PLATFORM_H
#define TFC_PLATFORM_H

#ifdef TFC_EMBED
/* the embeddable library (tfc compile --target embed): no stdio, no heap */
#include "tfc_embed.h"
#endif

#ifndef TFC_SNPRINTF
#include <stdio.h>
#define TFC_SNPRINTF snprintf
#endif

/* Heap allocation (checkpoint I/O; generated code allocates nothing). Define all three or none:
 * what one of them returns is given back to the others. */
#if defined(TFC_EMBED)
/* nothing of the embeddable library allocates: TFC_MALLOC stays undefined */
#elif !defined(TFC_MALLOC) && !defined(TFC_REALLOC) && !defined(TFC_FREE)
#include <stdlib.h>
#define TFC_MALLOC malloc
#define TFC_REALLOC realloc
#define TFC_FREE free
#elif !defined(TFC_MALLOC) || !defined(TFC_REALLOC) || !defined(TFC_FREE)
#error "define all of TFC_MALLOC, TFC_REALLOC and TFC_FREE, or none of them"
#endif

/* One log line of the runtime (the tensor transport's errors and warnings): `level` is "error",
 * "warning" or "info", `msg` a finished line without its newline. */
#if !defined(TFC_LOG) && defined(TFC_EMBED)
/* the embeddable library has no stderr: its embedder defines TFC_LOG to see runtime logs */
#define TFC_LOG(level, msg) ((void)(level), (void)(msg))
#elif !defined(TFC_LOG)
#include <stdio.h>
#define TFC_LOG(level, msg) fprintf(stderr, "tfc %s: %s\n", (level), (msg))
#endif

/* What tf.Print and tf.print write: `len` bytes of `text` (no NUL) to `stream`, 1 for stdout and
 * 2 for stderr. */
#if !defined(TFC_PRINT) && defined(TFC_EMBED)
/* the embeddable library has no stdout: its embedder defines TFC_PRINT to see printed values */
#define TFC_PRINT(stream, text, len) ((void)(stream), (void)(text), (void)(len))
#elif !defined(TFC_PRINT)
#include <stdio.h>
#define TFC_PRINT(stream, text, len) \
    ((void)fwrite((text), 1, (size_t)(len), (stream) == 1 ? stdout : stderr), \
     (void)fflush((stream) == 1 ? stdout : stderr))
#endif

/* Seconds since the Unix epoch, as a double (tf.timestamp). C11's timespec_get by default; the
 * embeddable library has no clock of its own: its embedder defines TFC_WALL_SECONDS() to use
 * tf.timestamp there. */
#if !defined(TFC_WALL_SECONDS) && !defined(TFC_EMBED)
#include <time.h>
static inline double tfc_wall_seconds(void) {
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0.0 / 0.0; /* no clock: NaN */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#define TFC_WALL_SECONDS() tfc_wall_seconds()
#endif
#if !defined(TFC_WALL_SECONDS)
/* An embedded program using tf.timestamp fails to compile, naming what to define. */
#define TFC_WALL_SECONDS() tfc_embedder_must_define_TFC_WALL_SECONDS_for_tf_timestamp()
#endif

#endif /* TFC_PLATFORM_H */
