/* The CSV reader of tfc_data.h: numbers separated by commas, an optional header row, errors
 * that name the file, the line and the column. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_data_internal.h"

#define DATA_MAX_FIELD_SHOWN 40 /* characters of a bad field quoted in a message */

typedef struct {
    double *values;
    int64_t *lines;
    int64_t rows, cap_values, cap_rows, n_values;
} csv_table;

static int csv_reserve(csv_table *t, int64_t cols) {
    if (t->n_values + cols > t->cap_values) {
        int64_t cap = t->cap_values ? t->cap_values : 1024;
        while (cap < t->n_values + cols) cap *= 2;
        double *v = realloc(t->values, (size_t)cap * sizeof(double));
        if (v == NULL) return -1;
        t->values = v;
        t->cap_values = cap;
    }
    if (t->rows + 1 > t->cap_rows) {
        int64_t cap = t->cap_rows ? t->cap_rows * 2 : 256;
        int64_t *l = realloc(t->lines, (size_t)cap * sizeof(int64_t));
        if (l == NULL) return -1;
        t->lines = l;
        t->cap_rows = cap;
    }
    return 0;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Parse the field [s, e) as a number; 0 when it is one. */
static int parse_number(const char *s, const char *e, double *out) {
    while (s < e && is_blank(*s)) ++s;
    while (e > s && is_blank(e[-1])) --e;
    if (s == e) return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end != e) return -1;
    /* an out-of-range literal is still a number: strtod gives +-HUGE_VAL or a denormal */
    *out = v;
    return 0;
}

/* The line [s, e) split at commas into `vals`; -1 and the bad column (0-based) in *bad when a
 * field is not a number. Returns the number of fields; counts all fields even past `cap`. */
static int64_t parse_line(const char *s, const char *e, double *vals, int64_t cap, int64_t *bad) {
    int64_t n = 0;
    for (;;) {
        const char *f = s;
        while (f < e && *f != ',') ++f;
        double v;
        if (parse_number(s, f, &v) != 0) {
            *bad = n;
            return -1;
        }
        if (n < cap) vals[n] = v;
        ++n;
        if (f == e) return n;
        s = f + 1;
    }
}

/* The bounds of field `col` of the line [s, e), for quoting it in a message. */
static void field_bounds(const char *s, const char *e, int64_t col, const char **fs,
                         const char **fe) {
    for (int64_t i = 0; i < col && s < e; ++i) {
        while (s < e && *s != ',') ++s;
        if (s < e) ++s;
    }
    const char *f = s;
    while (f < e && *f != ',') ++f;
    while (s < f && is_blank(*s)) ++s;
    while (f > s && is_blank(f[-1])) --f;
    *fs = s;
    *fe = f;
}

int tfc_csv_parse(tfc_dataset *ds, const char *text, size_t size, tfc_error *err) {
    csv_table t = {0};
    int64_t cols = -1, first_line = 0, line = 0;
    int seen_line = 0, status = TFC_OK;
    const char *p = text, *end = text + size;
    /* a UTF-8 byte order mark (spreadsheets write one) would make the first row a "header" */
    if (size >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p += 3;
    while (p < end && status == TFC_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        ++line;
        const char *q = p;
        while (q < e && is_blank(*q)) ++q;
        if (q == e) { /* a blank line */
            p = nl ? nl + 1 : end;
            continue;
        }
        if (cols < 0) {
            /* the first row fixes the column count; a header row is recognized and skipped */
            int64_t bad = -1;
            int64_t n = parse_line(p, e, NULL, 0, &bad);
            if (n < 0 && !seen_line) {
                seen_line = 1;
                p = nl ? nl + 1 : end;
                continue;
            }
            if (n >= 0) {
                cols = n;
                first_line = line;
            }
            /* a second line that is not numbers either is reported below */
        }
        seen_line = 1;
        if (cols >= 0 && csv_reserve(&t, cols) != 0) {
            status = tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED,
                                   "%s: out of memory at line %lld", ds->path, (long long)line);
            break;
        }
        int64_t bad = -1;
        int64_t n = parse_line(p, e, cols >= 0 ? t.values + t.n_values : NULL,
                               cols >= 0 ? cols : 0, &bad);
        if (n < 0) {
            const char *fs, *fe;
            field_bounds(p, e, bad, &fs, &fe);
            int len = (int)(fe - fs);
            if (len == 0)
                status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                       "%s:%lld: column %lld is empty", ds->path,
                                       (long long)line, (long long)bad + 1);
            else
                status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                       "%s:%lld: column %lld: '%.*s%s' is not a number", ds->path,
                                       (long long)line, (long long)bad + 1,
                                       len > DATA_MAX_FIELD_SHOWN ? DATA_MAX_FIELD_SHOWN : len, fs,
                                       len > DATA_MAX_FIELD_SHOWN ? "..." : "");
            break;
        }
        if (n != cols) {
            status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                   "%s:%lld: %lld columns, but the first row (line %lld) has %lld",
                                   ds->path, (long long)line, (long long)n, (long long)first_line,
                                   (long long)cols);
            break;
        }
        t.n_values += cols;
        t.lines[t.rows++] = line;
        p = nl ? nl + 1 : end;
    }
    if (status == TFC_OK && t.rows == 0)
        status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: no data rows", ds->path);
    if (status != TFC_OK) {
        free(t.values);
        free(t.lines);
        return status;
    }
    ds->rows = t.rows;
    ds->cols = cols;
    ds->values = t.values;
    ds->lines = t.lines;
    return TFC_OK;
}
