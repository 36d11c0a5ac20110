/* TFRecord files of tf.train.Example records as data tables (see tfc_data.h).
 *
 * A record is framed as TensorFlow writes it: its length (uint64, little-endian), the masked
 * CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data; both checksums are
 * checked. Each record's data is an Example; its features are read in the byte order of their
 * names, each one's values (a float_list or an int64_list, packed or not) one column after
 * another, so a record is a row. Every record must have the first one's features with as many
 * values each. Errors name the file, the record and the feature. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_data_internal.h"

/* CRC-32C (Castagnoli) with a table: data files are megabytes */
static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_table[i] = c;
    }
}

static uint32_t masked_crc32c(const unsigned char *p, size_t n) {
    if (crc_table[1] == 0) crc_init();
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    crc = ~crc;
    return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int tfc_tfrecord_looks_like(const unsigned char *data, size_t size) {
    return size >= 16 && masked_crc32c(data, 8) == le32(data + 8);
}

/* -- protobuf's wire format ------------------------------------------------------------------ */

typedef struct {
    const unsigned char *p, *end;
} span;

static int varint(span *s, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && s->p < s->end; shift += 7) {
        unsigned char b = *s->p++;
        v |= (uint64_t)(b & 0x7Fu) << shift;
        if (!(b & 0x80u)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* The next field of a message: its number, wire type and (length-delimited) payload or
 * (varint, fixed) value. 0 at the end, -1 for bytes that are not a message. */
static int field(span *s, int *number, int *wire, span *payload, uint64_t *value) {
    if (s->p >= s->end) return 0;
    uint64_t key;
    if (!varint(s, &key)) return -1;
    *number = (int)(key >> 3);
    *wire = (int)(key & 7u);
    switch (*wire) {
    case 0: return varint(s, value) ? 1 : -1;
    case 1:
        if (s->end - s->p < 8) return -1;
        *value = le64(s->p);
        s->p += 8;
        return 1;
    case 5:
        if (s->end - s->p < 4) return -1;
        *value = le32(s->p);
        s->p += 4;
        return 1;
    case 2: {
        uint64_t n;
        if (!varint(s, &n) || n > (uint64_t)(s->end - s->p)) return -1;
        payload->p = s->p;
        payload->end = s->p + n;
        s->p += n;
        return 1;
    }
    default: return -1;
    }
}

/* -- Examples -------------------------------------------------------------------------------- */

typedef struct {
    span name;
    span feature; /* the Feature message */
} named_feature;

typedef struct {
    named_feature *items;
    size_t n, cap;
} feature_set;

static int by_name(const void *a, const void *b) {
    const named_feature *x = a, *y = b;
    size_t nx = (size_t)(x->name.end - x->name.p), ny = (size_t)(y->name.end - y->name.p);
    int c = memcmp(x->name.p, y->name.p, nx < ny ? nx : ny);
    return c != 0 ? c : (nx > ny) - (nx < ny);
}

/* The features of an Example, sorted by name (a name given twice: the last one, as protobuf's
 * maps keep). 1 on success, 0 for bytes that are not an Example, -1 out of memory. */
static int example_features(span example, feature_set *out) {
    out->n = 0;
    int number, wire, r;
    span payload;
    uint64_t value;
    while ((r = field(&example, &number, &wire, &payload, &value)) == 1) {
        if (number != 1 || wire != 2) continue;
        span features = payload;
        span entry;
        while ((r = field(&features, &number, &wire, &entry, &value)) == 1) {
            if (number != 1 || wire != 2) continue;
            named_feature f = {{entry.p, entry.p}, {entry.p, entry.p}};
            span e = entry, part;
            while ((r = field(&e, &number, &wire, &part, &value)) == 1) {
                if (number == 1 && wire == 2) f.name = part;
                if (number == 2 && wire == 2) f.feature = part;
            }
            if (r < 0) return 0;
            size_t i = 0;
            while (i < out->n && by_name(&out->items[i], &f) != 0) ++i;
            if (i == out->n) {
                if (out->n == out->cap) {
                    size_t cap = out->cap ? 2 * out->cap : 16;
                    named_feature *grown = realloc(out->items, cap * sizeof(*grown));
                    if (grown == NULL) return -1;
                    out->items = grown;
                    out->cap = cap;
                }
                ++out->n;
            }
            out->items[i] = f;
        }
        if (r < 0) return 0;
    }
    if (r < 0) return 0;
    qsort(out->items, out->n, sizeof(*out->items), by_name);
    return 1;
}

/* The values of a Feature appended to `values` (when not NULL) and counted in *count.
 * Returns NULL, or why the feature cannot be a column ("a bytes_list"). */
static const char *feature_values(span feature, double *values, int64_t *count) {
    int number, wire, r;
    span list, part;
    uint64_t value;
    int kind = 0;
    span chosen = {NULL, NULL};
    while ((r = field(&feature, &number, &wire, &list, &value)) == 1) {
        if (wire == 2 && number >= 1 && number <= 3) {
            kind = number; /* a oneof: the last member set wins */
            chosen = list;
        }
    }
    if (r < 0) return "not a Feature message";
    if (kind == 1) return "a bytes_list (only float_list and int64_list make columns)";
    *count = 0;
    if (kind == 0) return NULL;
    while ((r = field(&chosen, &number, &wire, &part, &value)) == 1) {
        if (number != 1) continue;
        if (kind == 2 && wire == 5) {
            float f;
            uint32_t bits = (uint32_t)value;
            memcpy(&f, &bits, 4);
            if (values) values[*count] = f;
            ++*count;
        } else if (kind == 2 && wire == 2) {
            if ((part.end - part.p) % 4) return "a packed float_list that ends inside a value";
            for (const unsigned char *q = part.p; q < part.end; q += 4) {
                float f;
                uint32_t bits = le32(q);
                memcpy(&f, &bits, 4);
                if (values) values[*count] = f;
                ++*count;
            }
        } else if (kind == 3 && (wire == 0 || wire == 2)) {
            span packed = part;
            if (wire == 0) packed.p = packed.end = NULL;
            for (int one = wire == 0;;) {
                uint64_t v = value;
                if (!one) {
                    if (packed.p >= packed.end) break;
                    if (!varint(&packed, &v)) return "a packed int64_list cut short";
                }
                int64_t i = (int64_t)v;
                if (i > (INT64_C(1) << 53) || i < -(INT64_C(1) << 53))
                    return "an int64 value beyond 2^53, which a double does not hold exactly";
                if (values) values[*count] = (double)i;
                ++*count;
                if (one) break;
            }
        } else {
            return "a list value of the wrong wire type";
        }
    }
    return r < 0 ? "not a Feature message" : NULL;
}

int tfc_tfrecord_parse(tfc_dataset *ds, const unsigned char *data, size_t size, tfc_error *err) {
    const char *path = ds->path;
    feature_set features = {NULL, 0, 0};
    char (*names)[64] = NULL; /* the first record's feature names, for messages */
    int64_t *widths = NULL, n_features = 0, cols = 0, rows = 0, cap_rows = 0;
    double *values = NULL;
    int status = TFC_OK;
    for (size_t at = 0; at < size;) {
        if (size - at < 12) {
            status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: record %lld at byte %zu: the file "
                                    "ends inside a record header", path, (long long)rows, at);
            goto done;
        }
        uint64_t length = le64(data + at);
        if (masked_crc32c(data + at, 8) != le32(data + at + 8)) {
            status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: record %lld at byte %zu: corrupted "
                                    "record length (its CRC does not match)", path,
                                    (long long)rows, at);
            goto done;
        }
        if (length > size - at - 12 || size - at - 12 - length < 4) {
            status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: record %lld at byte %zu: the file "
                                    "ends inside a record", path, (long long)rows, at);
            goto done;
        }
        const unsigned char *record = data + at + 12;
        if (masked_crc32c(record, (size_t)length) != le32(record + length)) {
            status = tfc_error_setf(err, TFC_ERR_DATA_LOSS, "%s: record %lld at byte %zu: corrupted "
                                    "record data (its CRC does not match)", path,
                                    (long long)rows, at);
            goto done;
        }
        span example = {record, record + length};
        int r = example_features(example, &features);
        if (r < 0) goto oom;
        if (r == 0) {
            status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record %lld is not a "
                                    "tf.train.Example", path, (long long)rows);
            goto done;
        }
        if (rows == 0) { /* the first record sets the columns */
            n_features = (int64_t)features.n;
            names = calloc(features.n ? features.n : 1, sizeof(*names));
            widths = calloc(features.n ? features.n : 1, sizeof(*widths));
            if (names == NULL || widths == NULL) goto oom;
            for (size_t k = 0; k < features.n; ++k) {
                size_t n = (size_t)(features.items[k].name.end - features.items[k].name.p);
                snprintf(names[k], sizeof(names[k]), "%.*s", (int)(n < 63 ? n : 63),
                         (const char *)features.items[k].name.p);
                const char *why = feature_values(features.items[k].feature, NULL, &widths[k]);
                if (why != NULL) {
                    status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record 0: "
                                            "feature '%s' is %s", path, names[k], why);
                    goto done;
                }
                cols += widths[k];
            }
            if (cols == 0) {
                status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record 0 has no "
                                        "float or int64 values", path);
                goto done;
            }
        } else if ((int64_t)features.n != n_features) {
            status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record %lld has %zu "
                                    "features, record 0 has %lld", path, (long long)rows,
                                    features.n, (long long)n_features);
            goto done;
        }
        if (rows == cap_rows) {
            int64_t grown_rows = cap_rows ? 2 * cap_rows : 64;
            double *grown = realloc(values, (size_t)(grown_rows * cols) * sizeof(double));
            if (grown == NULL) goto oom;
            values = grown;
            cap_rows = grown_rows;
        }
        double *row = values + rows * cols;
        for (size_t k = 0; k < features.n; ++k) {
            size_t n = (size_t)(features.items[k].name.end - features.items[k].name.p);
            if (n != strlen(names[k]) || memcmp(features.items[k].name.p, names[k], n) != 0) {
                status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record %lld: feature "
                                        "%zu is '%.*s', in record 0 '%s'", path, (long long)rows,
                                        k, (int)n, (const char *)features.items[k].name.p,
                                        names[k]);
                goto done;
            }
            int64_t count = 0;
            const char *why = feature_values(features.items[k].feature, NULL, &count);
            if (why == NULL && count != widths[k]) {
                status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record %lld: feature "
                                        "'%s' has %lld values, in record 0 %lld", path,
                                        (long long)rows, names[k], (long long)count,
                                        (long long)widths[k]);
                goto done;
            }
            if (why == NULL) why = feature_values(features.items[k].feature, row, &count);
            if (why != NULL) {
                status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: record %lld: feature "
                                        "'%s' is %s", path, (long long)rows, names[k], why);
                goto done;
            }
            row += count;
        }
        ++rows;
        at += 12 + (size_t)length + 4;
    }
    if (rows == 0) {
        status = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "%s: no records", path);
        goto done;
    }
    ds->rows = rows;
    ds->cols = cols;
    ds->values = values;
    values = NULL;
    goto done;
oom:
    status = tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
done:
    free(values);
    free(names);
    free(widths);
    free(features.items);
    return status;
}
