/* .npy files for tfc_data.h: reading 2-D arrays of any numeric type (C or Fortran order,
 * little-endian, format versions 1 to 3) and writing C-order arrays (format 1.0). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_data_internal.h"

/* The value of `key` in the header dict `h`: a pointer just past its colon, or NULL. */
static const char *npy_field(const char *h, const char *key) {
    const char *k = strstr(h, key);
    if (k == NULL) return NULL;
    k += strlen(key);
    while (*k == ' ') ++k;
    if (*k != ':') return NULL;
    ++k;
    while (*k == ' ') ++k;
    return k;
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
    int major = data[6];
    size_t header_len, start;
    if (major == 1) {
        header_len = (size_t)load_le(data + 8, 2);
        start = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12)
            return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: truncated .npy header", path);
        header_len = (size_t)load_le(data + 8, 4);
        start = 12;
    } else {
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: unknown .npy format version %d", path,
                             major);
    }
    if (header_len > size - start)
        return tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: truncated .npy header", path);
    char *h = malloc(header_len + 1);
    if (h == NULL) return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    memcpy(h, data + start, header_len);
    h[header_len] = '\0';

    int status = TFC_OK;
    char order = 0, kind = 0;
    int elem = 0, fortran = 0;
    int64_t dims[2] = {0, 0};
    int rank = 0;
    const char *d = npy_field(h, "'descr'");
    const char *fo = npy_field(h, "'fortran_order'");
    const char *sh = npy_field(h, "'shape'");
    if (d == NULL || fo == NULL || sh == NULL || d[0] != '\'') {
        status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: .npy header lacks descr, fortran_order "
                               "or shape: %.80s", path, h);
        goto done;
    }
    order = d[1];
    kind = d[1] ? d[2] : 0;
    elem = (kind && d[3] >= '1' && d[3] <= '8' && d[4] == '\'') ? d[3] - '0' : 0;
    int known = (kind == 'f' && (elem == 4 || elem == 8)) ||
                ((kind == 'i' || kind == 'u') && (elem == 1 || elem == 2 || elem == 4 ||
                                                  elem == 8)) ||
                (kind == 'b' && elem == 1);
    int little = order == '<' || order == '|' || (order == '=' && elem == 1);
    if (!known || !little) {
        status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: unsupported .npy element type "
                               "%.8s (expected a little-endian number: f4, f8, i1-i8, u1-u8, b1)",
                               path, d);
        goto done;
    }
    if (strncmp(fo, "True", 4) == 0) {
        fortran = 1;
    } else if (strncmp(fo, "False", 5) != 0) {
        status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: bad fortran_order in .npy header",
                               path);
        goto done;
    }
    if (sh[0] != '(') {
        status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: bad shape in .npy header", path);
        goto done;
    }
    const char *s = sh + 1;
    for (;;) {
        while (*s == ' ') ++s;
        if (*s == ')') break;
        char *e = NULL;
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (e == s || v < 0 || errno != 0) {
            status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: bad shape in .npy header", path);
            goto done;
        }
        if (rank < 2) dims[rank] = v;
        ++rank;
        s = e;
        while (*s == ' ') ++s;
        if (*s == ',') ++s;
    }
    if (rank != 2) {
        status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: a %d-D array; expected a 2-D "
                               "array (rows, columns)", path, rank);
        goto done;
    }
    if (dims[0] == 0) {
        status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: no data rows", path);
        goto done;
    }
    size_t have = size - start - header_len;
    if (dims[1] > 0 && (uint64_t)dims[0] > (uint64_t)SIZE_MAX / (uint64_t)dims[1] / 8) {
        status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: shape (%lld, %lld) is too large", path,
                               (long long)dims[0], (long long)dims[1]);
        goto done;
    }
    size_t count = (size_t)dims[0] * (size_t)dims[1];
    if (count * (size_t)elem != have) {
        status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: shape (%lld, %lld) of %.4s needs %zu "
                               "bytes of data; the file has %zu", path, (long long)dims[0],
                               (long long)dims[1], d + 1, count * (size_t)elem, have);
        goto done;
    }
    double *values = malloc(count ? count * sizeof(double) : 1);
    if (values == NULL) {
        status = tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
        goto done;
    }
    const unsigned char *base = data + start + header_len;
    for (int64_t r = 0; r < dims[0]; ++r) {
        for (int64_t c = 0; c < dims[1]; ++c) {
            size_t at = fortran ? (size_t)(c * dims[0] + r) : (size_t)(r * dims[1] + c);
            values[r * dims[1] + c] = npy_element(base + at * (size_t)elem, kind, elem);
        }
    }
    ds->rows = dims[0];
    ds->cols = dims[1];
    ds->values = values;
    ds->lines = NULL;
done:
    free(h);
    return status;
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
