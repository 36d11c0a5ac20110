/* Helpers of the train and predict drivers: options, messages, clocks, directories. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_driver.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

int tfc_driver_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int tfc_driver_option(const char *prog, int argc, char **argv, int *i, const char *name,
                      const char **value) {
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0') return 0;
    if (*i + 1 >= argc) {
        tfc_driver_error(prog, "%s needs a value", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int tfc_driver_int(const char *prog, const char *name, const char *text, int64_t min,
                   int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0) {
        tfc_driver_error(prog, "%s %s: not an integer", name, text);
        return -1;
    }
    if (v < min) {
        tfc_driver_error(prog, "%s %s: must be at least %lld", name, text, (long long)min);
        return -1;
    }
    *out = v;
    return 0;
}

int tfc_driver_double(const char *prog, const char *name, const char *text, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !isfinite(v)) {
        tfc_driver_error(prog, "%s %s: not a finite number", name, text);
        return -1;
    }
    *out = v;
    return 0;
}

int tfc_driver_threads(const char *prog, const char *text) {
    int64_t n = 0;
    if (tfc_driver_int(prog, "--threads", text, 1, &n)) return 1;
    if (n > 64) return tfc_driver_error(prog, "--threads %s: at most 64", text);
    char value[24];
    snprintf(value, sizeof value, "%d", (int)n);
    if (setenv("TFC_NUM_THREADS", value, 1) != 0)
        return tfc_driver_error(prog, "--threads %s: cannot set TFC_NUM_THREADS", text);
    return 0;
}

double tfc_driver_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tfc_driver_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

int tfc_driver_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int tfc_driver_mkdirs(const char *path, char *msg, size_t cap) {
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (p == NULL) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    memcpy(p, path, n + 1);
    int status = 0;
    /* each parent in turn, then the directory itself */
    for (size_t k = 1; k <= n && status == 0; ++k) {
        if (k < n && p[k] != '/') continue;
        char saved = p[k];
        p[k] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(msg, cap, "cannot create directory %s: %s", p, strerror(errno));
            status = -1;
        } else if (k == n && !tfc_driver_is_dir(p)) {
            snprintf(msg, cap, "%s exists and is not a directory", p);
            status = -1;
        }
        p[k] = saved;
    }
    free(p);
    return status;
}

double tfc_driver_element(const void *data, int dtype, int64_t k) {
    switch (dtype) {
    case TFC_DT_F32: return ((const float *)data)[k];
    case TFC_DT_F64: return ((const double *)data)[k];
    case TFC_DT_I32: return ((const int32_t *)data)[k];
    case TFC_DT_I64: return (double)((const int64_t *)data)[k];
    case TFC_DT_BOOL: return ((const unsigned char *)data)[k];
    default: return NAN;
    }
}
