/* Data for standalone executables (see tfc_data.h): loading a table from a file (CSV in
 * tfc_csv.c, .npy in tfc_npy.c, TFRecord files of Examples in tfc_tfrecord.c), converting rows
 * to program inputs, epochs and batches. */
#include "tfc_data.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_data_internal.h"

int64_t tfc_dtype_size(int dtype) {
    switch (dtype) {
    case TFC_DT_F32: return 4;
    case TFC_DT_F64: return 8;
    case TFC_DT_I32: return 4;
    case TFC_DT_I64: return 8;
    case TFC_DT_BOOL: return 1;
    default: return 0;
    }
}

const char *tfc_dtype_name(int dtype) {
    switch (dtype) {
    case TFC_DT_F32: return "float32";
    case TFC_DT_F64: return "float64";
    case TFC_DT_I32: return "int32";
    case TFC_DT_I64: return "int64";
    case TFC_DT_BOOL: return "bool";
    default: return "unknown";
    }
}

/* -- reading whole files --------------------------------------------------------------------- */

/* The file's bytes, NUL-terminated (so strtod never runs past the end). */
static int read_file(const char *path, char **data, size_t *size, tfc_error *err) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return tfc_error_setf(err, errno == ENOENT ? TFC_ERR_NOT_FOUND : TFC_ERR_UNKNOWN,
                             "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int status = TFC_OK, oom = buf == NULL;
    while (!oom) {
        if (cap - n < 2) {
            char *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (bigger == NULL) {
                oom = 1;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (oom) {
        status = tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED,
                               "%s: out of memory reading the file", path);
    } else if (ferror(f)) {
        status = tfc_error_setf(err, TFC_ERR_UNKNOWN, "cannot read %s: %s", path, strerror(errno));
    }
    fclose(f);
    if (status != TFC_OK) {
        free(buf);
        return status;
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return TFC_OK;
}

static char *copy_string(const char *s) {
    size_t n = strlen(s);
    char *c = malloc(n + 1);
    if (c != NULL) memcpy(c, s, n + 1);
    return c;
}

/* -- datasets -------------------------------------------------------------------------------- */

int tfc_dataset_load(tfc_dataset *ds, const char *path, tfc_error *err) {
    memset(ds, 0, sizeof(*ds));
    char *text = NULL;
    size_t size = 0;
    int status = read_file(path, &text, &size, err);
    if (status != TFC_OK) return status;
    ds->path = copy_string(path);
    if (ds->path == NULL) {
        free(text);
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    }
    size_t name_len = strlen(path);
    int named_npy = name_len >= 4 && strcmp(path + name_len - 4, ".npy") == 0;
    if (size >= TFC_NPY_MAGIC_LEN && memcmp(text, TFC_NPY_MAGIC, TFC_NPY_MAGIC_LEN) == 0) {
        status = tfc_npy_parse(ds, (const unsigned char *)text, size, err);
    } else if (tfc_tfrecord_looks_like((const unsigned char *)text, size)) {
        status = tfc_tfrecord_parse(ds, (const unsigned char *)text, size, err);
    } else if (named_npy) { /* a damaged .npy read as CSV would fail far from the cause */
        char start[3 * TFC_NPY_MAGIC_LEN + 1] = "";
        for (size_t i = 0; i < size && i < TFC_NPY_MAGIC_LEN; ++i)
            snprintf(start + 3 * i, 4, "%02x ", (unsigned char)text[i]);
        status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: not a .npy file: it starts with "
                                "%s(hex), not the magic bytes 93 4e 55 4d 50 59 (\\x93NUMPY)",
                                path, size ? start : "nothing ");
    } else {
        status = tfc_csv_parse(ds, text, size, err);
    }
    free(text);
    if (status != TFC_OK) {
        free(ds->path);
        memset(ds, 0, sizeof(*ds));
    }
    return status;
}

void tfc_dataset_free(tfc_dataset *ds) {
    if (ds == NULL) return;
    free(ds->path);
    free(ds->values);
    free(ds->lines);
    memset(ds, 0, sizeof(*ds));
}

const char *tfc_dataset_where(const tfc_dataset *ds, int64_t row, char *buf, size_t cap) {
    if (ds->lines != NULL)
        snprintf(buf, cap, "%s:%lld", ds->path, (long long)ds->lines[row]);
    else
        snprintf(buf, cap, "%s: row %lld", ds->path, (long long)row);
    return buf;
}

int tfc_dataset_check_finite(const tfc_dataset *ds, int64_t col, int64_t ncols, tfc_error *err) {
    for (int64_t r = 0; r < ds->rows; ++r)
        for (int64_t j = col; j < col + ncols && j < ds->cols; ++j) {
            double v = ds->values[r * ds->cols + j];
            if (!isfinite(v)) {
                char where[512];
                return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: column %lld: %g is "
                                      "not a finite number%s (--allow-nonfinite reads it as is)",
                                      tfc_dataset_where(ds, r, where, sizeof(where)),
                                      (long long)j + 1, v,
                                      isinf(v) ? " (a value out of range reads as inf)" : "");
            }
        }
    return TFC_OK;
}

int tfc_dataset_check_labels(const tfc_dataset *ds, int64_t col, int64_t ncols,
                             int64_t n_classes, tfc_error *err) {
    for (int64_t r = 0; r < ds->rows; ++r)
        for (int64_t j = col; j < col + ncols && j < ds->cols; ++j) {
            double v = ds->values[r * ds->cols + j];
            int ok = v == floor(v) && v >= 0 && (n_classes > 0 ? v < (double)n_classes : v < 9e15);
            if (ok) continue;
            char where[512], range[96];
            if (n_classes > 0)
                snprintf(range, sizeof(range), "one of the model's %lld classes (an integer from "
                         "0 to %lld)", (long long)n_classes, (long long)n_classes - 1);
            else
                snprintf(range, sizeof(range), "a class id (an integer >= 0)");
            return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: column %lld: label %.17g "
                                  "is not %s", tfc_dataset_where(ds, r, where, sizeof(where)),
                                  (long long)j + 1, v, range);
        }
    return TFC_OK;
}

int tfc_dataset_gather(const tfc_dataset *ds, const int64_t *rows, int64_t n, int64_t col,
                       int64_t ncols, int dtype, void *out, tfc_error *err) {
    if (col < 0 || ncols < 0 || col + ncols > ds->cols)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: columns %lld..%lld requested of "
                             "%lld", ds->path, (long long)col + 1, (long long)(col + ncols),
                             (long long)ds->cols);
    for (int64_t i = 0; i < n; ++i) {
        const double *src = ds->values + rows[i] * ds->cols + col;
        for (int64_t j = 0; j < ncols; ++j) {
            double v = src[j];
            int64_t k = i * ncols + j;
            int exact = 1;
            switch (dtype) {
            case TFC_DT_F32: ((float *)out)[k] = (float)v; break;
            case TFC_DT_F64: ((double *)out)[k] = v; break;
            case TFC_DT_I32:
                exact = v == floor(v) && v >= INT32_MIN && v <= INT32_MAX;
                if (exact) ((int32_t *)out)[k] = (int32_t)v;
                break;
            case TFC_DT_I64:
                /* 2^63 is the first double past INT64_MAX */
                exact = v == floor(v) && v >= -9223372036854775808.0 &&
                        v < 9223372036854775808.0;
                if (exact) ((int64_t *)out)[k] = (int64_t)v;
                break;
            case TFC_DT_BOOL:
                exact = v == 0.0 || v == 1.0;
                if (exact) ((unsigned char *)out)[k] = v != 0.0;
                break;
            default:
                return tfc_error_setf(err, TFC_ERR_UNIMPLEMENTED, "%s: no conversion to element "
                                     "type %d", ds->path, dtype);
            }
            if (!exact) {
                char where[512];
                return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: column %lld: %.17g is not "
                                     "%s (the model's input there is %s)",
                                     tfc_dataset_where(ds, rows[i], where, sizeof(where)),
                                     (long long)(col + j + 1), v,
                                     dtype == TFC_DT_BOOL ? "0 or 1" : "an integer in range",
                                     tfc_dtype_name(dtype));
            }
        }
    }
    return TFC_OK;
}

/* -- batches --------------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* A uniform integer in [0, n) without modulo bias. */
static uint64_t uniform_below(uint64_t *s, uint64_t n) {
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t r = splitmix64(s);
        if (r >= threshold) return r % n;
    }
}

static void batcher_fill(tfc_batcher *b) {
    for (int64_t i = 0; i < b->n_rows; ++i) b->order[i] = i;
    if (!b->shuffle) return;
    /* one generator per (seed, epoch): a restart at any epoch sees the same order */
    uint64_t s = b->seed;
    s = splitmix64(&s) ^ (uint64_t)b->epoch;
    for (int64_t i = b->n_rows - 1; i > 0; --i) {
        int64_t j = (int64_t)uniform_below(&s, (uint64_t)i + 1);
        int64_t t = b->order[i];
        b->order[i] = b->order[j];
        b->order[j] = t;
    }
}

int tfc_batcher_init(tfc_batcher *b, int64_t n_rows, int64_t batch, uint64_t seed, int shuffle,
                     int64_t start, tfc_error *err) {
    memset(b, 0, sizeof(*b));
    if (n_rows <= 0 || batch <= 0 || start < 0)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "batches of %lld from %lld rows "
                             "starting at %lld", (long long)batch, (long long)n_rows,
                             (long long)start);
    b->order = malloc((size_t)n_rows * sizeof(int64_t));
    if (b->order == NULL)
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory for %lld row indices",
                             (long long)n_rows);
    b->n_rows = n_rows;
    b->batch = batch;
    b->seed = seed;
    b->shuffle = shuffle;
    b->epoch = start / n_rows;
    b->pos = start % n_rows;
    batcher_fill(b);
    return TFC_OK;
}

void tfc_batcher_next(tfc_batcher *b, int64_t *rows) {
    for (int64_t i = 0; i < b->batch; ++i) {
        if (b->pos == b->n_rows) {
            ++b->epoch;
            b->pos = 0;
            batcher_fill(b);
        }
        rows[i] = b->order[b->pos++];
    }
}

void tfc_batcher_free(tfc_batcher *b) {
    if (b == NULL) return;
    free(b->order);
    memset(b, 0, sizeof(*b));
}
