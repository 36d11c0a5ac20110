/* Opening a safetensors checkpoint: the whole header validated before anything is trusted.
 *
 * Nothing read from a file is trusted before it is checked: the header length against the
 * limit and the file size, the header as UTF-8 and as JSON (a syntax pass over the whole text
 * before any value is interpreted), every field, and the data offsets against each other and
 * the file. The checks and their messages are tfc/io/safetensors.py's, so both readers refuse the
 * same files with the same words. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_checkpoint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tfc_json.h"

/* ---------------------------------------------------------------------------------------------
 * The parsed, validated header */

void tfc_ck_file_close(ck_file *f) {
    for (size_t i = 0; i < f->n_entries; ++i) TFC_FREE(f->entries[i].name);
    TFC_FREE(f->entries);
    TFC_FREE(f->by_name);
    for (size_t i = 0; i < f->n_meta; ++i) {
        TFC_FREE(f->meta_keys[i]);
        TFC_FREE(f->meta_values[i]);
    }
    TFC_FREE(f->meta_keys);
    TFC_FREE(f->meta_values);
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}

static int ck_str_problem(ck_file *f, tfc_error *err, int rc) {
    if (rc == TFC_JSON_STR_OOM) return tfc_ck_oom(err, f->path);
    return CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: a string holds a lone "
                              "surrogate escape", f->path);
}

static int ck_parse_metadata(ck_file *f, tfc_json *j, const tfc_json_member *meta,
                             tfc_error *err) {
    const char *p = f->path;
    if (j->s[meta->value_begin] != '{')
        return CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: field '__metadata__' is "
                                  "not an object", p);
    tfc_json sub = *j;
    sub.pos = meta->value_begin;
    tfc_json_member *m = NULL;
    size_t n = 0;
    int rc = tfc_json_members(&sub, &m, &n);
    if (rc != TFC_JSON_STR_OK) return ck_str_problem(f, err, rc);
    int oom;
    const tfc_json_member *dup = tfc_json_duplicate(m, n, &oom);
    int status = TFC_OK;
    if (oom) {
        status = tfc_ck_oom(err, p);
    } else if (dup != NULL) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: duplicate key '%s'", p,
                            dup->key);
    } else if (n > 0) {
        f->meta_keys = TFC_MALLOC(n * sizeof *f->meta_keys);
        f->meta_values = TFC_MALLOC(n * sizeof *f->meta_values);
        if (f->meta_keys == NULL || f->meta_values == NULL) status = tfc_ck_oom(err, p);
    }
    for (size_t i = 0; i < n && status == TFC_OK; ++i) {
        if (strlen(m[i].key) != m[i].key_len) {
            status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: a __metadata__ key "
                                        "contains a NUL character", p);
            break;
        }
        if (j->s[m[i].value_begin] != '"') {
            status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: field "
                                        "'__metadata__' value of '%s' is not a string", p,
                                m[i].key);
            break;
        }
        sub.pos = m[i].value_begin;
        char *value;
        size_t len;
        rc = tfc_json_decode_string(&sub, &value, &len);
        if (rc != TFC_JSON_STR_OK) {
            status = ck_str_problem(f, err, rc);
            break;
        }
        if (strlen(value) != len) {
            TFC_FREE(value);
            status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: __metadata__ value "
                                        "of '%s' contains a NUL character", p, m[i].key);
            break;
        }
        f->meta_keys[f->n_meta] = m[i].key;
        f->meta_values[f->n_meta] = value;
        m[i].key = NULL; /* owned by f now */
        ++f->n_meta;
    }
    tfc_json_free_members(m, n);
    return status;
}

static const char *const CK_FIELDS[3] = {"dtype", "shape", "data_offsets"};

/* Validate one tensor's entry, in tfc/io/safetensors.py's order, filling *e. */
static int ck_parse_entry(ck_file *f, tfc_json *j, const tfc_json_member *t, ck_entry *e,
                          tfc_error *err) {
    const char *p = f->path, *name = t->key;
    if (strlen(name) != t->key_len)
        return CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: a tensor name contains a "
                                  "NUL character", p);
    if (j->s[t->value_begin] != '{')
        return CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': entry is "
                                  "not an object", p, name);
    tfc_json sub = *j;
    sub.pos = t->value_begin;
    tfc_json_member *m = NULL;
    size_t n = 0;
    int rc = tfc_json_members(&sub, &m, &n);
    if (rc != TFC_JSON_STR_OK) return ck_str_problem(f, err, rc);
    int status = TFC_OK, oom;
    const tfc_json_member *field[3] = {NULL, NULL, NULL};
    const tfc_json_member *dup = tfc_json_duplicate(m, n, &oom);
    if (oom) {
        status = tfc_ck_oom(err, p);
        goto done;
    }
    if (dup != NULL) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: duplicate key '%s'", p,
                            dup->key);
        goto done;
    }
    for (size_t i = 0; i < n; ++i) {
        int k = 0;
        while (k < 3 && strcmp(m[i].key, CK_FIELDS[k]) != 0) ++k;
        if (k == 3 || strlen(m[i].key) != m[i].key_len) {
            status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': "
                                        "unknown field '%s'", p, name, m[i].key);
            goto done;
        }
        field[k] = &m[i];
    }
    for (int k = 0; k < 3; ++k)
        if (field[k] == NULL) {
            status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                        "'%s' is missing", p, name, CK_FIELDS[k]);
            goto done;
        }

    /* dtype */
    const tfc_json_member *d = field[0];
    e->dtype = NULL;
    if (j->s[d->value_begin] == '"') {
        char *code;
        size_t len;
        sub.pos = d->value_begin;
        rc = tfc_json_decode_string(&sub, &code, &len);
        if (rc != TFC_JSON_STR_OK) {
            status = ck_str_problem(f, err, rc);
            goto done;
        }
        if (strlen(code) == len) e->dtype = tfc_ck_dtype_by_name(code);
        TFC_FREE(code);
    }
    if (e->dtype == NULL) {
        int shown = (int)(d->value_end - d->value_begin);
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'dtype' is %.*s, not one of F32, F64, I32, I64, BOOL", p,
                            name, shown > 64 ? 64 : shown, j->s + d->value_begin);
        goto done;
    }

    /* shape */
    int64_t rank;
    if (tfc_json_uint_list(j->s, field[1]->value_begin, field[1]->value_end, e->dims,
                           TFC_CHECKPOINT_MAX_RANK, &rank) != 0) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'shape' is not a list of non-negative integers", p, name);
        goto done;
    }
    if (rank > TFC_CHECKPOINT_MAX_RANK) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'shape' has rank %lld, more than tfc's limit of %d", p,
                            name, (long long)rank, TFC_CHECKPOINT_MAX_RANK);
        goto done;
    }
    e->rank = (int)rank;

    /* data_offsets */
    int64_t offsets[2], count;
    if (tfc_json_uint_list(j->s, field[2]->value_begin, field[2]->value_end, offsets, 2,
                           &count) != 0 ||
        count != 2) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'data_offsets' is not a list of two non-negative integers",
                            p, name);
        goto done;
    }
    e->begin = (uint64_t)offsets[0];
    e->end = (uint64_t)offsets[1];
    if (e->begin > e->end) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'data_offsets' [%llu, %llu] ends before it begins", p, name,
                            (unsigned long long)e->begin, (unsigned long long)e->end);
        goto done;
    }

    /* byte count: prod(shape) * itemsize, overflow checked left to right as the reference */
    char dims[CK_DIMS_CAP];
    tfc_ck_format_dims(dims, sizeof dims, e->dims, e->rank);
    uint64_t elements = 1;
    for (int i = 0; i < e->rank; ++i) {
        uint64_t dim = (uint64_t)e->dims[i];
        if (dim != 0 && elements > CK_INT64_MAX / dim) {
            status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                        "'shape' %s overflows a 64-bit size", p, name, dims);
            goto done;
        }
        elements *= dim;
    }
    if (elements > CK_INT64_MAX / (uint64_t)e->dtype->size) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'shape' %s overflows a 64-bit size", p, name, dims);
        goto done;
    }
    uint64_t nbytes = elements * (uint64_t)e->dtype->size;
    if (e->end - e->begin != nbytes) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': field "
                                    "'data_offsets' [%llu, %llu] holds %llu bytes, but %s shape %s "
                                    "needs %llu", p, name, (unsigned long long)e->begin,
                            (unsigned long long)e->end, (unsigned long long)(e->end - e->begin),
                            e->dtype->code, dims, (unsigned long long)nbytes);
        goto done;
    }
done:
    tfc_json_free_members(m, n);
    return status;
}

static int ck_entry_by_offset(const void *pa, const void *pb) {
    const ck_entry *a = *(const ck_entry *const *)pa, *b = *(const ck_entry *const *)pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index; /* a stable order, as Python's */
}

static int ck_entry_by_name(const void *pa, const void *pb) {
    return strcmp((*(const ck_entry *const *)pa)->name, (*(const ck_entry *const *)pb)->name);
}

/* The data section must be the tensors back to back from offset 0; its size goes to *total. */
static int ck_check_layout(ck_file *f, uint64_t *total, tfc_error *err) {
    const char *p = f->path;
    *total = 0;
    if (f->n_entries == 0) return TFC_OK;
    ck_entry **order = TFC_MALLOC(f->n_entries * sizeof *order);
    if (order == NULL) return tfc_ck_oom(err, p);
    for (size_t i = 0; i < f->n_entries; ++i) order[i] = &f->entries[i];
    qsort(order, f->n_entries, sizeof *order, ck_entry_by_offset);
    uint64_t expected = 0;
    const ck_entry *prev = NULL;
    int status = TFC_OK;
    for (size_t i = 0; i < f->n_entries; ++i) {
        const ck_entry *e = order[i];
        if (e->begin != expected) {
            if (prev == NULL)
                status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': "
                                            "field 'data_offsets' [%llu, %llu]: the data does not "
                                            "start at offset 0", p, e->name,
                                    (unsigned long long)e->begin, (unsigned long long)e->end);
            else
                status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: tensor '%s': "
                                            "field 'data_offsets' [%llu, %llu] %s tensor '%s' "
                                            "[%llu, %llu]", p, e->name,
                                    (unsigned long long)e->begin, (unsigned long long)e->end,
                                    e->begin < expected ? "overlaps" : "leaves a gap after",
                                    prev->name, (unsigned long long)prev->begin,
                                    (unsigned long long)prev->end);
            break;
        }
        expected = e->end;
        prev = e;
    }
    TFC_FREE(order);
    *total = expected;
    return status;
}

int tfc_ck_open(ck_file *f, const char *path, tfc_error *err) {
    memset(f, 0, sizeof *f);
    f->path = path;
    f->fd = -1;
    if (path == NULL) return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint path is NULL");
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        if (errno == ENOENT)
            return CK_FAIL(err, TFC_ERR_NOT_FOUND, "checkpoint %s does not exist", path);
        return tfc_ck_io_error(err, "open", path, errno);
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        int status = tfc_ck_io_error(err, "stat", path, errno);
        tfc_ck_file_close(f);
        return status;
    }
    if (!S_ISREG(st.st_mode)) {
        tfc_ck_file_close(f);
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s is not a regular file",
                       path);
    }
    f->file_size = (uint64_t)st.st_size;
    char *header = NULL;
    tfc_json_member *top = NULL;
    size_t n_top = 0;
    int status = TFC_OK;

    if (f->file_size < 8) {
        status = CK_CORRUPT(f, err, "checkpoint %s is truncated: %llu bytes, too short for the "
                                    "8-byte header length", path,
                            (unsigned long long)f->file_size);
        goto done;
    }
    unsigned char len8[8];
    if (tfc_ck_pread_full(f->fd, len8, 8, 0) != 8) {
        status = tfc_ck_io_error(err, "read", path, errno);
        goto done;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | len8[i];
    f->header_len = n;
    if (n > TFC_CHECKPOINT_MAX_HEADER) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header length: %llu bytes "
                                    "exceeds the safetensors limit of %d", path,
                            (unsigned long long)n, TFC_CHECKPOINT_MAX_HEADER);
        goto done;
    }
    if (n > f->file_size - 8) {
        status = CK_CORRUPT(f, err, "checkpoint %s is truncated: header length says %llu header "
                                    "bytes, file has %llu", path, (unsigned long long)n,
                            (unsigned long long)(f->file_size - 8));
        goto done;
    }
    header = TFC_MALLOC((size_t)n + 1);
    if (header == NULL) {
        status = tfc_ck_oom(err, path);
        goto done;
    }
    int64_t got = tfc_ck_pread_full(f->fd, header, (size_t)n, 8);
    if (got != (int64_t)n) {
        status = got < 0 ? tfc_ck_io_error(err, "read", path, errno)
                         : CK_CORRUPT(f, err, "checkpoint %s is truncated: header length says "
                                              "%llu header bytes, file has %lld", path,
                                      (unsigned long long)n, (long long)got);
        goto done;
    }
    header[n] = '\0';
    size_t valid = tfc_utf8_valid_prefix((const unsigned char *)header, (size_t)n);
    if (valid != n) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: not valid UTF-8 at byte "
                                    "%zu", path, valid);
        goto done;
    }
    if (n == 0 || header[0] != '{') {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: it does not start with "
                                    "'{'", path);
        goto done;
    }
    /* syntax first: from here on the readers may assume well-formed JSON */
    tfc_json j = {header, (size_t)n, 0, NULL};
    if (tfc_json_skip_value(&j) == 0) {
        tfc_json_skip_ws(&j);
        if (j.pos != j.n) j.what = "extra data after the header object";
    }
    if (j.what != NULL) {
        status = CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: invalid JSON at byte "
                                    "%zu: %s", path, j.pos, j.what);
        goto done;
    }
    j.pos = 0;
    int rc = tfc_json_members(&j, &top, &n_top);
    if (rc != TFC_JSON_STR_OK) {
        status = ck_str_problem(f, err, rc);
        goto done;
    }
    int oom;
    const tfc_json_member *dup = tfc_json_duplicate(top, n_top, &oom);
    if (oom || dup != NULL) {
        status = oom ? tfc_ck_oom(err, path)
                     : CK_CORRUPT(f, err, "checkpoint %s has a corrupt header: duplicate key '%s'",
                                  path, dup->key);
        goto done;
    }
    for (size_t i = 0; i < n_top; ++i)
        if (strcmp(top[i].key, "__metadata__") == 0 && top[i].key_len == 12) {
            status = ck_parse_metadata(f, &j, &top[i], err);
            if (status != TFC_OK) goto done;
        }
    if (n_top > 0) {
        f->entries = TFC_MALLOC(n_top * sizeof *f->entries);
        if (f->entries == NULL) {
            status = tfc_ck_oom(err, path);
            goto done;
        }
    }
    for (size_t i = 0; i < n_top; ++i) {
        if (strcmp(top[i].key, "__metadata__") == 0 && top[i].key_len == 12) continue;
        ck_entry *e = &f->entries[f->n_entries];
        status = ck_parse_entry(f, &j, &top[i], e, err);
        if (status != TFC_OK) goto done;
        e->name = top[i].key;
        e->index = f->n_entries;
        top[i].key = NULL; /* owned by the entry now */
        ++f->n_entries;
    }
    uint64_t data_bytes;
    status = ck_check_layout(f, &data_bytes, err);
    if (status != TFC_OK) goto done;
    uint64_t have = f->file_size - 8 - n;
    if (have < data_bytes) {
        status = CK_CORRUPT(f, err, "checkpoint %s is truncated: header says %llu data bytes, "
                                    "file has %llu", path, (unsigned long long)data_bytes,
                            (unsigned long long)have);
        goto done;
    }
    if (have > data_bytes) {
        status = CK_CORRUPT(f, err, "checkpoint %s has %llu bytes of trailing garbage after the "
                                    "%llu data bytes its header describes", path,
                            (unsigned long long)(have - data_bytes),
                            (unsigned long long)data_bytes);
        goto done;
    }
    f->data_start = 8 + n;
    if (f->n_entries > 0) {
        f->by_name = TFC_MALLOC(f->n_entries * sizeof *f->by_name);
        if (f->by_name == NULL) {
            status = tfc_ck_oom(err, path);
            goto done;
        }
        for (size_t i = 0; i < f->n_entries; ++i) f->by_name[i] = &f->entries[i];
        qsort(f->by_name, f->n_entries, sizeof *f->by_name, ck_entry_by_name);
    }
done:
    tfc_json_free_members(top, n_top);
    TFC_FREE(header);
    if (status != TFC_OK) tfc_ck_file_close(f);
    return status;
}

const ck_entry *tfc_ck_find(const ck_file *f, const char *name) {
    size_t lo = 0, hi = f->n_entries;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->by_name[mid]->name, name);
        if (c == 0) return f->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* A caller's tensor description: known dtype, rank in range, dims >= 0, nbytes consistent. */
