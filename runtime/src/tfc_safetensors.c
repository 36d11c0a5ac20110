/* Safetensors checkpoints: element types, the checks of a caller's tensors, and reading tensors
 * and metadata from a file that tfc_safetensors_header.c has opened and validated. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_checkpoint_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Element types and callers' tensors */

static const ck_dtype CK_DTYPES[] = {
    {TFC_CHECKPOINT_BOOL, "BOOL", "bool", 1, 0}, {TFC_CHECKPOINT_I32, "I32", "int32", 4, 1},
    {TFC_CHECKPOINT_F32, "F32", "float", 4, 2},  {TFC_CHECKPOINT_F64, "F64", "double", 8, 3},
    {TFC_CHECKPOINT_I64, "I64", "int64", 8, 4},
};
#define CK_NDTYPES ((int)(sizeof CK_DTYPES / sizeof CK_DTYPES[0]))

const ck_dtype *tfc_ck_dtype_by_code(int dtype) {
    for (int i = 0; i < CK_NDTYPES; ++i)
        if (CK_DTYPES[i].dtype == dtype) return &CK_DTYPES[i];
    return NULL;
}

const ck_dtype *tfc_ck_dtype_by_name(const char *name) {
    for (int i = 0; i < CK_NDTYPES; ++i)
        if (strcmp(CK_DTYPES[i].code, name) == 0) return &CK_DTYPES[i];
    return NULL;
}

int tfc_ck_host_is_big_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 0;
}

void tfc_ck_swap_elements(unsigned char *p, size_t nbytes, int size) {
    if (size <= 1 || !tfc_ck_host_is_big_endian()) return;
    for (size_t i = 0; i + (size_t)size <= nbytes; i += (size_t)size)
        for (int a = 0, b = size - 1; a < b; ++a, --b) {
            unsigned char t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

void tfc_ck_format_dims(char *buf, size_t cap, const int64_t *dims, int rank) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = -1; i <= rank && used < cap; ++i) {
        int w;
        if (i < 0)
            w = TFC_SNPRINTF(buf + used, cap - used, "[");
        else if (i == rank)
            w = TFC_SNPRINTF(buf + used, cap - used, "]");
        else
            w = TFC_SNPRINTF(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)dims[i]);
        if (w < 0) return;
        used += (size_t)w;
    }
}

int tfc_ck_check_tensor(const tfc_checkpoint_tensor *t, int i, const char *path,
                        uint64_t *nbytes, tfc_error *err) {
    const ck_dtype *d = tfc_ck_dtype_by_code(t->dtype);
    if (t->name == NULL)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor %d has no name",
                       path, i);
    if (d == NULL)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s' has unknown "
                       "dtype code %d", path, t->name, t->dtype);
    if (t->rank < 0 || t->rank > TFC_CHECKPOINT_MAX_RANK)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s' has rank %d, "
                       "not in [0, %d]", path, t->name, t->rank, TFC_CHECKPOINT_MAX_RANK);
    uint64_t elements = 1;
    for (int k = 0; k < t->rank; ++k) {
        if (t->dims[k] < 0)
            return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s' has "
                           "negative dimension %lld", path, t->name, (long long)t->dims[k]);
        uint64_t dim = (uint64_t)t->dims[k];
        if (dim != 0 && elements > CK_INT64_MAX / dim)
            return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s': the "
                           "shape overflows a 64-bit size", path, t->name);
        elements *= dim;
    }
    if (elements > CK_INT64_MAX / (uint64_t)d->size)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s': the shape "
                       "overflows a 64-bit size", path, t->name);
    *nbytes = elements * (uint64_t)d->size;
    if (t->nbytes < 0 || (uint64_t)t->nbytes != *nbytes)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s' has nbytes "
                       "%lld, but its dtype and dims make %llu", path, t->name,
                       (long long)t->nbytes, (unsigned long long)*nbytes);
    if (*nbytes > 0 && t->data == NULL)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s' has no data "
                       "buffer", path, t->name);
    if (*nbytes > SIZE_MAX)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: tensor '%s' is larger "
                       "than this machine's address space", path, t->name);
    return TFC_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Reading */

int tfc_checkpoint_read(const char *path, tfc_checkpoint_tensor *tensors, int n,
                        tfc_error *err) {
    if (n < 0 || (n > 0 && tensors == NULL))
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: %d tensors requested "
                       "from a %s array", path ? path : "(null)", n, tensors ? "valid" : "NULL");
    ck_file f;
    int status = tfc_ck_open(&f, path, err);
    if (status != TFC_OK) return status;
    /* check every request against the header before any data is read */
    for (int i = 0; i < n && status == TFC_OK; ++i) {
        const tfc_checkpoint_tensor *t = &tensors[i];
        uint64_t nbytes;
        status = tfc_ck_check_tensor(t, i, path, &nbytes, err);
        if (status != TFC_OK) break;
        const ck_entry *e = tfc_ck_find(&f, t->name);
        if (e == NULL) {
            status = CK_FAIL(err, TFC_ERR_NOT_FOUND, "Restoring from checkpoint %s failed: Key "
                             "%s not found in checkpoint", path, t->name);
            break;
        }
        if (e->dtype->dtype != t->dtype) {
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "Restoring from checkpoint %s "
                             "failed: tensor_name = %s; expected dtype %s does not equal "
                             "original dtype %s", path, t->name,
                             tfc_ck_dtype_by_code(t->dtype)->tf_name, e->dtype->tf_name);
            break;
        }
        int same = e->rank == t->rank;
        for (int k = 0; same && k < t->rank; ++k) same = e->dims[k] == t->dims[k];
        if (!same) {
            char want[CK_DIMS_CAP], have[CK_DIMS_CAP];
            tfc_ck_format_dims(want, sizeof want, t->dims, t->rank);
            tfc_ck_format_dims(have, sizeof have, e->dims, e->rank);
            status = CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "Restoring from checkpoint %s "
                             "failed: variable %s: Assign requires shapes of both tensors to "
                             "match. lhs shape= %s rhs shape= %s", path, t->name, want, have);
            break;
        }
    }
    for (int i = 0; i < n && status == TFC_OK; ++i) {
        const tfc_checkpoint_tensor *t = &tensors[i];
        const ck_entry *e = tfc_ck_find(&f, t->name);
        size_t nbytes = (size_t)(e->end - e->begin);
        int64_t got = tfc_ck_pread_full(f.fd, t->data, nbytes, f.data_start + e->begin);
        if (got < 0) {
            status = tfc_ck_io_error(err, "read", path, errno);
        } else if ((uint64_t)got != nbytes) { /* shrank since validation: written in place */
            status = CK_CORRUPT(&f, err, "checkpoint %s is truncated: tensor '%s' ends past the "
                                         "end of the file", path, t->name);
        } else if (e->dtype->dtype == TFC_CHECKPOINT_BOOL) {
            const unsigned char *b = t->data;
            for (size_t k = 0; k < nbytes; ++k)
                if (b[k] > 1) {
                    status = CK_CORRUPT(&f, err, "checkpoint %s is corrupt: tensor '%s' of dtype "
                                                 "BOOL holds byte value %d (not 0 or 1)", path,
                                        t->name, (int)b[k]);
                    break;
                }
        } else {
            tfc_ck_swap_elements(t->data, nbytes, e->dtype->size);
        }
    }
    tfc_ck_file_close(&f);
    return status;
}

int tfc_checkpoint_read_metadata(const char *path, const char *key, char *value, size_t cap,
                                 tfc_error *err) {
    if (key == NULL || value == NULL || cap == 0)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint %s: metadata key and value "
                       "buffer must be given", path ? path : "(null)");
    ck_file f;
    int status = tfc_ck_open(&f, path, err);
    if (status != TFC_OK) return status;
    status = CK_FAIL(err, TFC_ERR_NOT_FOUND, "checkpoint %s has no metadata '%s'", path, key);
    for (size_t i = 0; i < f.n_meta; ++i)
        if (strcmp(f.meta_keys[i], key) == 0) {
            size_t len = strlen(f.meta_values[i]);
            if (len >= cap) {
                status = CK_FAIL(err, TFC_ERR_OUT_OF_RANGE, "checkpoint %s: metadata '%s' has "
                                 "%zu bytes, the buffer holds %zu", path, key, len, cap - 1);
            } else {
                memcpy(value, f.meta_values[i], len + 1);
                status = TFC_OK;
            }
            break;
        }
    tfc_ck_file_close(&f);
    return status;
}

