/* Writing safetensors checkpoints as the reference writer does, byte for byte: tensors sorted
 * by descending alignment then by name, compact JSON, the header padded to 8 bytes. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_checkpoint_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_json.h"

/* One tensor to write, with what tfc_ck_check_tensor found out about it. */
typedef struct {
    const tfc_checkpoint_tensor *t;
    const ck_dtype *dtype;
    size_t nbytes;
} ck_out;

typedef struct {
    const ck_out *outs;
    size_t n;
} ck_outs;

/* Little-endian bytes of one tensor: as they are on a little-endian host, swapped otherwise. */
static int ck_write_tensor(int fd, const void *data, size_t nbytes, int size) {
    if (size <= 1 || !tfc_ck_host_is_big_endian()) return tfc_ck_write_all(fd, data, nbytes);
    unsigned char bounce[1 << 16];
    const unsigned char *p = data;
    while (nbytes > 0) {
        size_t n = nbytes < sizeof bounce ? nbytes : sizeof bounce;
        memcpy(bounce, p, n);
        tfc_ck_swap_elements(bounce, n, size);
        if (tfc_ck_write_all(fd, bounce, n) != 0) return -1;
        p += n;
        nbytes -= n;
    }
    return 0;
}

/* The data section: each tensor's bytes, in the order of the header (a ck_write_body). */
static int ck_write_tensors(int fd, const void *ctx) {
    const ck_outs *o = ctx;
    for (size_t i = 0; i < o->n; ++i)
        if (ck_write_tensor(fd, o->outs[i].t->data, o->outs[i].nbytes, o->outs[i].dtype->size) != 0)
            return -1;
    return 0;
}

/* A JSON string as serde_json and Python's json.dumps(ensure_ascii=False) write it, so the
 * files are byte for byte those of the reference writer. */
static void ck_put_json_string(ck_buf *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    tfc_ck_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        switch (*p) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            if (*p < 0x20) {
                memcpy(esc + 1, "u00", 3);
                esc[4] = hex[*p >> 4];
                esc[5] = hex[*p & 15];
            }
        }
        if (esc[1] != 0) tfc_ck_puts(b, esc);
        else tfc_ck_put(b, (const char *)p, 1);
    }
    tfc_ck_puts(b, "\"");
}

static int ck_out_order(const void *pa, const void *pb) {
    const ck_out *a = pa, *b = pb;
    if (a->dtype->align_rank != b->dtype->align_rank)
        return a->dtype->align_rank > b->dtype->align_rank ? -1 : 1;
    return strcmp(a->t->name, b->t->name);
}

static int ck_cstr_order(const void *pa, const void *pb) {
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

static int ck_meta_order(const void *pa, const void *pb) {
    return tfc_json_key_cmp(*(const tfc_json_member *const *)pa,
                            *(const tfc_json_member *const *)pb);
}

/* Parse the caller's metadata object and append it to the header, keys sorted. */
static int ck_put_metadata(ck_buf *b, const char *path, const char *json, tfc_error *err) {
    size_t n = strlen(json);
    tfc_json j = {json, n, 0, NULL};
    tfc_json_skip_ws(&j);
    size_t start = j.pos;
    if (tfc_json_peek(&j) != '{')
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata is not a JSON "
                       "object", path);
    if (tfc_json_skip_value(&j) == 0) {
        tfc_json_skip_ws(&j);
        if (j.pos != j.n) j.what = "extra data after the object";
    }
    if (j.what != NULL)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata is not valid "
                       "JSON at byte %zu: %s", path, j.pos, j.what);
    if (tfc_utf8_valid_prefix((const unsigned char *)json, n) != n)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata is not valid "
                       "UTF-8", path);
    j.pos = start;
    tfc_json_member *m = NULL;
    size_t count = 0;
    int rc = tfc_json_members(&j, &m, &count);
    if (rc == TFC_JSON_STR_OOM) return tfc_ck_oom(err, path);
    if (rc != TFC_JSON_STR_OK)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata holds a lone "
                       "surrogate escape", path);
    int status = TFC_OK, oom;
    const tfc_json_member *dup = tfc_json_duplicate(m, count, &oom);
    const tfc_json_member **sorted = count ? TFC_MALLOC(count * sizeof *sorted) : NULL;
    char **values = count ? TFC_MALLOC(count * sizeof *values) : NULL;
    if (values != NULL) memset(values, 0, count * sizeof *values);
    if (oom || (count && (sorted == NULL || values == NULL))) {
        status = tfc_ck_oom(err, path);
    } else if (dup != NULL) {
        status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata has duplicate "
                         "key '%s'", path, dup->key);
    }
    for (size_t i = 0; i < count && status == TFC_OK; ++i) {
        size_t len = 0;
        if (json[m[i].value_begin] != '"') {
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata value of "
                             "'%s' is not a string", path, m[i].key);
            break;
        }
        j.pos = m[i].value_begin;
        rc = tfc_json_decode_string(&j, &values[i], &len);
        if (rc != TFC_JSON_STR_OK) {
            status = rc == TFC_JSON_STR_OOM
                         ? tfc_ck_oom(err, path)
                         : CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata "
                                   "holds a lone surrogate escape", path);
            break;
        }
        if (strlen(values[i]) != len || strlen(m[i].key) != m[i].key_len) {
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata '%s' "
                             "contains a NUL character", path, m[i].key);
            break;
        }
        sorted[i] = &m[i];
    }
    if (status == TFC_OK) {
        qsort(sorted, count, sizeof *sorted, ck_meta_order);
        tfc_ck_puts(b, "\"__metadata__\":{");
        for (size_t i = 0; i < count; ++i) {
            if (i) tfc_ck_puts(b, ",");
            ck_put_json_string(b, sorted[i]->key);
            tfc_ck_puts(b, ":");
            ck_put_json_string(b, values[sorted[i]->index]);
        }
        tfc_ck_puts(b, "}");
    }
    for (size_t i = 0; values != NULL && i < count; ++i) TFC_FREE(values[i]);
    TFC_FREE(values);
    TFC_FREE(sorted);
    tfc_json_free_members(m, count);
    return status;
}

int tfc_checkpoint_write(const char *path, const tfc_checkpoint_tensor *tensors, int n,
                         const char *metadata_json_or_null, tfc_error *err) {
    if (path == NULL) return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint path is NULL");
    if (n < 0 || (n > 0 && tensors == NULL))
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: %d tensors from a %s "
                       "array", path, n, tensors ? "valid" : "NULL");
    ck_out *outs = n ? TFC_MALLOC((size_t)n * sizeof *outs) : NULL;
    if (n && outs == NULL) return tfc_ck_oom(err, path);
    ck_buf head = {0};
    int status = TFC_OK;
    for (int i = 0; i < n && status == TFC_OK; ++i) {
        uint64_t nbytes;
        status = tfc_ck_check_tensor(&tensors[i], i, path, &nbytes, err);
        if (status != TFC_OK) break;
        const char *name = tensors[i].name;
        size_t len = strlen(name);
        if (tfc_utf8_valid_prefix((const unsigned char *)name, len) != len)
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor name '%s' is "
                             "not valid UTF-8", path, name);
        else if (strcmp(name, "__metadata__") == 0)
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: '__metadata__' is "
                             "reserved by safetensors and cannot name a tensor", path);
        outs[i].t = &tensors[i];
        outs[i].dtype = tfc_ck_dtype_by_code(tensors[i].dtype);
        outs[i].nbytes = (size_t)nbytes;
    }
    if (status == TFC_OK && n > 1) {
        const char **names = TFC_MALLOC((size_t)n * sizeof *names);
        if (names == NULL) {
            status = tfc_ck_oom(err, path);
        } else {
            for (int i = 0; i < n; ++i) names[i] = tensors[i].name;
            qsort(names, (size_t)n, sizeof *names, ck_cstr_order);
            for (int i = 1; i < n && status == TFC_OK; ++i)
                if (strcmp(names[i - 1], names[i]) == 0)
                    status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: two tensors "
                                     "are named '%s'", path, names[i]);
            TFC_FREE(names);
        }
    }
    if (status == TFC_OK && n > 0) qsort(outs, (size_t)n, sizeof *outs, ck_out_order);
    if (status == TFC_OK) {
        tfc_ck_puts(&head, "{");
        if (metadata_json_or_null != NULL) {
            status = ck_put_metadata(&head, path, metadata_json_or_null, err);
            if (n > 0) tfc_ck_puts(&head, ",");
        }
    }
    uint64_t offset = 0;
    for (int i = 0; i < n && status == TFC_OK; ++i) {
        const tfc_checkpoint_tensor *t = outs[i].t;
        if (i) tfc_ck_puts(&head, ",");
        ck_put_json_string(&head, t->name);
        tfc_ck_puts(&head, ":{\"dtype\":\"");
        tfc_ck_puts(&head, outs[i].dtype->code);
        tfc_ck_puts(&head, "\",\"shape\":[");
        for (int k = 0; k < t->rank; ++k) {
            if (k) tfc_ck_puts(&head, ",");
            tfc_ck_put_int(&head, (long long)t->dims[k]);
        }
        tfc_ck_puts(&head, "],\"data_offsets\":[");
        if (outs[i].nbytes > CK_INT64_MAX - offset) {
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: the tensors' bytes "
                             "overflow a 64-bit size", path);
            break;
        }
        tfc_ck_put_int(&head, (long long)offset);
        tfc_ck_puts(&head, ",");
        offset += outs[i].nbytes;
        tfc_ck_put_int(&head, (long long)offset);
        tfc_ck_puts(&head, "]}");
    }
    if (status == TFC_OK) {
        tfc_ck_puts(&head, "}");
        /* align the data to 8 bytes */
        while (!head.oom && head.n % 8 != 0) tfc_ck_puts(&head, " ");
        if (head.oom) {
            status = tfc_ck_oom(err, path);
        } else if (head.n > TFC_CHECKPOINT_MAX_HEADER) {
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: a header of %zu "
                             "bytes exceeds the safetensors limit of %d", path, head.n,
                             TFC_CHECKPOINT_MAX_HEADER);
        }
    }
    if (status == TFC_OK) {
        /* the 8-byte little-endian length goes in front of the header text */
        ck_buf file = {0};
        unsigned char len8[8];
        for (int i = 0; i < 8; ++i) len8[i] = (unsigned char)((uint64_t)head.n >> (8 * i));
        tfc_ck_put(&file, (const char *)len8, 8);
        tfc_ck_put(&file, head.p, head.n);
        ck_outs data = {outs, (size_t)n};
        status = file.oom ? tfc_ck_oom(err, path)
                          : tfc_ck_write_atomically(path, file.p, file.n, ck_write_tensors,
                                                    &data, err);
        TFC_FREE(file.p);
    }
    TFC_FREE(head.p);
    TFC_FREE(outs);
    return status;
}

