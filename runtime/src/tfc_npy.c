/* .npy files for tfc_data.h: reading 2-D arrays of any numeric type (C or Fortran order,
 * little-endian, format versions 1 to 3; the header parsed exactly as numpy parses it) and
 * writing C-order arrays (format 1.0). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_data_internal.h"

/* ---- the header: a Python dict literal, read as numpy reads it (ast.literal_eval, then
 * exactly the keys descr, fortran_order and shape) so that both refuse the same files ---- */

#define NPY_MAX_HEADER 10000 /* numpy's limit (max_header_size) for a file it trusts */
#define NPY_MAX_RANK 32

typedef struct {
    const char *s;
    size_t n, pos;
    int python2_ints; /* versions 1 and 2: "3L" (a Python 2 writer's ints) is 3 */
    const char *what; /* the first problem found */
} npy_lexer;

typedef struct {
    char descr[16];
    int have_descr, have_fortran, have_shape, fortran, rank;
    int64_t dims[NPY_MAX_RANK];
} npy_header;

static int fail(npy_lexer *l, const char *what) {
    if (l->what == NULL) l->what = what;
    return -1;
}

static void skip_ws(npy_lexer *l) {
    while (l->pos < l->n && strchr(" \t\n\r\f\v", l->s[l->pos]) != NULL && l->s[l->pos] != '\0')
        ++l->pos;
}

static int is_ident(char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A quoted string without escapes (numpy writes none); its text into out. */
static int parse_string(npy_lexer *l, char *out, size_t cap) {
    char quote = l->s[l->pos];
    if (l->pos >= l->n || (quote != '\'' && quote != '"')) return fail(l, "expected a string");
    size_t start = ++l->pos;
    while (l->pos < l->n && l->s[l->pos] != quote) {
        if (l->s[l->pos] == '\\' || l->s[l->pos] == '\n') return fail(l, "a string with an escape");
        ++l->pos;
    }
    if (l->pos >= l->n) return fail(l, "an unterminated string");
    size_t len = l->pos++ - start;
    if (len >= cap) len = cap - 1;
    memcpy(out, l->s + start, len);
    out[len] = '\0';
    return 0;
}

static int parse_word(npy_lexer *l, const char *word) {
    size_t k = strlen(word);
    if (l->n - l->pos < k || memcmp(l->s + l->pos, word, k) != 0) return 0;
    if (l->pos + k < l->n && is_ident(l->s[l->pos + k])) return 0;
    l->pos += k;
    return 1;
}

static int parse_int(npy_lexer *l, int64_t *out) {
    size_t start = l->pos;
    int64_t v = 0;
    while (l->pos < l->n && l->s[l->pos] >= '0' && l->s[l->pos] <= '9') {
        int d = l->s[l->pos++] - '0';
        if (v > (INT64_MAX - d) / 10) return fail(l, "a dimension too large");
        v = v * 10 + d;
    }
    size_t len = l->pos - start;
    if (len == 0) return fail(l, "shape is not valid (expected a tuple of integers)");
    if (len > 1 && l->s[start] == '0' && v != 0)
        return fail(l, "an integer with a leading zero (not a Python literal)");
    if (l->python2_ints && l->pos < l->n && (l->s[l->pos] == 'L' || l->s[l->pos] == 'l')) ++l->pos;
    if (l->pos < l->n && is_ident(l->s[l->pos])) return fail(l, "shape is not valid");
    *out = v;
    return 0;
}

/* "(d0, d1, ...)": a tuple; "(3)" is an int to Python, not a tuple, and so not a shape. */
static int parse_shape(npy_lexer *l, npy_header *h) {
    if (l->pos >= l->n || l->s[l->pos] != '(')
        return fail(l, "shape is not valid (expected a tuple of integers)");
    ++l->pos;
    int n = 0, trailing_comma = 0;
    for (;;) {
        skip_ws(l);
        if (l->pos < l->n && l->s[l->pos] == ')') break;
        if (n > 0 && !trailing_comma) return fail(l, "shape is not valid (expected , or ))");
        int64_t d;
        if (parse_int(l, &d) != 0) return -1;
        if (n >= NPY_MAX_RANK) return fail(l, "shape has too many dimensions");
        h->dims[n++] = d;
        skip_ws(l);
        trailing_comma = l->pos < l->n && l->s[l->pos] == ',';
        if (trailing_comma) ++l->pos;
    }
    ++l->pos;
    if (n == 1 && !trailing_comma) return fail(l, "shape is not valid (an int, not a tuple)");
    h->rank = n;
    return 0;
}

/* The whole header text: one dict literal, then only whitespace. */
static int parse_header(npy_lexer *l, npy_header *h) {
    memset(h, 0, sizeof(*h));
    skip_ws(l);
    if (l->pos >= l->n || l->s[l->pos] != '{') return fail(l, "the header is not a dictionary");
    ++l->pos;
    int first = 1;
    for (;;) {
        skip_ws(l);
        if (l->pos < l->n && l->s[l->pos] == '}') break;
        if (!first) {
            if (l->pos >= l->n || l->s[l->pos] != ',') return fail(l, "expected , or }");
            ++l->pos;
            skip_ws(l);
            if (l->pos < l->n && l->s[l->pos] == '}') break;
        }
        first = 0;
        char key[32];
        if (parse_string(l, key, sizeof(key)) != 0) return -1;
        skip_ws(l);
        if (l->pos >= l->n || l->s[l->pos] != ':') return fail(l, "expected : after a key");
        ++l->pos;
        skip_ws(l);
        /* a key given twice counts once, its last value winning, as in a Python dict */
        if (strcmp(key, "descr") == 0) {
            if (parse_string(l, h->descr, sizeof(h->descr)) != 0) return -1;
            h->have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(l, "True")) h->fortran = 1;
            else if (parse_word(l, "False")) h->fortran = 0;
            else return fail(l, "fortran_order is not a valid bool");
            h->have_fortran = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (parse_shape(l, h) != 0) return -1;
            h->have_shape = 1;
        } else {
            return fail(l, "the header has a key other than descr, fortran_order and shape");
        }
    }
    ++l->pos;
    skip_ws(l);
    if (l->pos != l->n) return fail(l, "bytes after the header's dictionary");
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        return fail(l, "the header lacks descr, fortran_order or shape");
    return 0;
}

static uint64_t load_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

/* One element of type (kind, size) at p as a double; the formats read bytes little-endian. */
static double npy_element(const unsigned char *p, char kind, int size) {
    uint64_t bits = load_le(p, size);
    if (kind == 'f') {
        if (size == 4) {
            uint32_t b32 = (uint32_t)bits;
            float f;
            memcpy(&f, &b32, 4);
            return f;
        }
        double d;
        memcpy(&d, &bits, 8);
        return d;
    }
    if (kind == 'u' || kind == 'b') return (double)bits;
    /* signed: sign-extend from `size` bytes */
    if (size < 8 && (bits >> (8 * size - 1)) & 1) bits |= ~(uint64_t)0 << (8 * size);
    int64_t s;
    memcpy(&s, &bits, 8);
    return (double)s;
}

int tfc_npy_parse(tfc_dataset *ds, const unsigned char *data, size_t size, tfc_error *err) {
    const char *path = ds->path;
    if (size < 10)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: truncated .npy header", path);
    int major = data[6], minor = data[7];
    size_t header_len, start;
    if ((major < 1 || major > 3) || minor != 0)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: unknown .npy format version %d.%d",
                              path, major, minor);
    if (major == 1) {
        header_len = (size_t)load_le(data + 8, 2);
        start = 10;
    } else {
        if (size < 12)
            return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: truncated .npy header", path);
        header_len = (size_t)load_le(data + 8, 4);
        start = 12;
    }
    if (header_len > size - start)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: truncated .npy header", path);
    if (header_len > NPY_MAX_HEADER)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: a .npy header of %zu bytes, over the "
                              "%d numpy reads without trusting the file", path, header_len,
                              NPY_MAX_HEADER);
    npy_lexer lex = {(const char *)data + start, header_len, 0, major < 3, NULL};
    npy_header h;
    if (parse_header(&lex, &h) != 0) {
        char near[41]; /* the text where it went wrong, printable */
        size_t at = lex.pos < header_len ? lex.pos : header_len, k = 0;
        for (; k < sizeof(near) - 1 && at + k < header_len; ++k) {
            char c = lex.s[at + k];
            near[k] = c >= 0x20 && c < 0x7F ? c : '?';
        }
        near[k] = '\0';
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: bad .npy header: %s (at byte %zu of "
                              "the header: '%s')", path, lex.what, at, near);
    }
    const char *d = h.descr;
    char order = d[0], kind = d[0] ? d[1] : 0;
    int elem = (kind && d[2] >= '1' && d[2] <= '8' && d[3] == '\0') ? d[2] - '0' : 0;
    int known = (kind == 'f' && (elem == 4 || elem == 8)) ||
                ((kind == 'i' || kind == 'u') && (elem == 1 || elem == 2 || elem == 4 ||
                                                  elem == 8)) ||
                (kind == 'b' && elem == 1);
    int little = order == '<' || order == '|' || (order == '=' && elem == 1);
    if (!known || !little)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: unsupported .npy element type "
                              "'%.8s' (expected a little-endian number: f4, f8, i1-i8, u1-u8, "
                              "b1)", path, d);
    if (h.rank != 2)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: a %d-D array; expected a 2-D "
                              "array (rows, columns)", path, h.rank);
    int64_t dims[2] = {h.dims[0], h.dims[1]};
    if (dims[0] == 0)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: no data rows", path);
    size_t have = size - start - header_len;
    if (dims[1] > 0 && (uint64_t)dims[0] > (uint64_t)SIZE_MAX / (uint64_t)dims[1] / 8)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: shape (%lld, %lld) is too large", path,
                              (long long)dims[0], (long long)dims[1]);
    size_t count = (size_t)dims[0] * (size_t)dims[1];
    if (count * (size_t)elem != have)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: shape (%lld, %lld) of %.4s needs %zu "
                              "bytes of data; the file has %zu", path, (long long)dims[0],
                              (long long)dims[1], d, count * (size_t)elem, have);
    double *values = malloc(count ? count * sizeof(double) : 1);
    if (values == NULL)
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    const unsigned char *base = data + start + header_len;
    for (int64_t r = 0; r < dims[0]; ++r) {
        for (int64_t c = 0; c < dims[1]; ++c) {
            size_t at = h.fortran ? (size_t)(c * dims[0] + r) : (size_t)(r * dims[1] + c);
            values[r * dims[1] + c] = npy_element(base + at * (size_t)elem, kind, elem);
        }
    }
    ds->rows = dims[0];
    ds->cols = dims[1];
    ds->values = values;
    ds->lines = NULL;
    return TFC_OK;
}

int tfc_npy_write(const char *path, int dtype, int rank, const int64_t *dims, const void *data,
                  tfc_error *err) {
    const char *descr = NULL;
    switch (dtype) {
    case TFC_DT_F32: descr = "<f4"; break;
    case TFC_DT_F64: descr = "<f8"; break;
    case TFC_DT_I32: descr = "<i4"; break;
    case TFC_DT_I64: descr = "<i8"; break;
    case TFC_DT_BOOL: descr = "|b1"; break;
    default:
        return tfc_error_setf(err, TFC_ERR_UNIMPLEMENTED, "%s: no .npy type for element type %d",
                             path, dtype);
    }
    char shape[512];
    size_t used = 0;
    int64_t count = 1;
    shape[used++] = '(';
    for (int i = 0; i < rank && used < sizeof(shape) - 32; ++i) {
        used += (size_t)snprintf(shape + used, sizeof(shape) - used, "%s%lld", i ? ", " : "",
                                 (long long)dims[i]);
        count *= dims[i];
    }
    snprintf(shape + used, sizeof(shape) - used, "%s)", rank == 1 ? "," : "");
    char header[640];
    int n = snprintf(header, sizeof(header), "{'descr': '%s', 'fortran_order': False, "
                     "'shape': %s, }", descr, shape);
    /* the format pads the header with spaces and a newline to a multiple of 64 bytes */
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t header_len = padded - 10;
    if (header_len >= sizeof(header))
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: too many dimensions", path);
    memset(header + n, ' ', header_len - (size_t)n);
    header[header_len - 1] = '\n';
    unsigned char pre[10];
    memcpy(pre, TFC_NPY_MAGIC, TFC_NPY_MAGIC_LEN);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = (unsigned char)(header_len & 0xff);
    pre[9] = (unsigned char)(header_len >> 8);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return tfc_error_setf(err, TFC_ERR_UNKNOWN, "cannot write %s: %s", path, strerror(errno));
    size_t nbytes = (size_t)count * (size_t)tfc_dtype_size(dtype);
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, header_len, f) == header_len &&
             (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
    int saved_errno = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved_errno = errno;
    }
    if (!ok)
        return tfc_error_setf(err, TFC_ERR_UNKNOWN, "cannot write %s: %s", path,
                             strerror(saved_errno));
    return TFC_OK;
}
