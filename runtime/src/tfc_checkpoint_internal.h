/* What the checkpoint sources of runtime/src share (internal: not part of the API, not to be
 * included by generated code or embedders). The public functions are in tfc_checkpoint.h.
 *
 *   tfc_file.c               text buffers, paths, I/O errors, full reads, atomic writes
 *   tfc_json.c               JSON and UTF-8 for safetensors headers (tfc_json.h)
 *   tfc_safetensors_header.c opening a safetensors file: every header field validated
 *   tfc_safetensors.c        element types, callers' tensors, tfc_checkpoint_read{,_metadata}
 *   tfc_safetensors_write.c  tfc_checkpoint_write
 *   tfc_checkpoint_state.c   the "checkpoint" state file
 *   tfc_checkpoint.c         tfc_checkpoint_latest and tfc_checkpoint_save
 *
 * Shared functions are named tfc_ck_*; types and macros keep the short ck_ / CK_ prefix, being
 * invisible outside these files. */
#ifndef TFC_CHECKPOINT_INTERNAL_H
#define TFC_CHECKPOINT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_checkpoint.h"

#define CK_INT64_MAX ((uint64_t)INT64_MAX)
#define CK_IO_CHUNK ((size_t)1 << 20) /* bounded reads and writes: some systems cap them at 2 GiB */
/* Room for tfc_ck_format_dims of any rank this reader accepts. */
#define CK_DIMS_CAP (TFC_CHECKPOINT_MAX_RANK * 22 + 8)

/* Format the message (when the caller gave a buffer) and evaluate to `code`. */
#define CK_FAIL(err, code, ...)                                                               \
    (((err) != NULL && (err)->msg != NULL && (err)->cap > 0)                                  \
         ? (void)TFC_SNPRINTF((err)->msg, (size_t)(err)->cap, __VA_ARGS__)                    \
         : (void)0,                                                                           \
     (code))

#define CK_CORRUPT(f, err, ...) CK_FAIL(err, TFC_ERR_DATA_LOSS, __VA_ARGS__)

/* ---------------------------------------------------------------------------------------------
 * tfc_file.c: text buffers, paths, files */

/* A growable byte buffer (header text, state file text, paths), NUL-terminated once written
 * to. After a failed allocation `oom` is set and further writes are ignored. */
typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} ck_buf;

void tfc_ck_put(ck_buf *b, const char *s, size_t n);
void tfc_ck_puts(ck_buf *b, const char *s);
void tfc_ck_put_int(ck_buf *b, long long v);

/* A malloc'd copy of s, or NULL. */
char *tfc_ck_strdup(const char *s);
/* dir joined with a relative path, as os.path.join does (malloc'd, NULL when out of memory);
 * absolute paths stay as they are. */
char *tfc_ck_join(const char *dir, const char *path);

/* The TFC_ERR_* code of errno `e` (NOT_FOUND, RESOURCE_EXHAUSTED or UNKNOWN), with a message
 * naming the failed step and the path. */
int tfc_ck_io_error(tfc_error *err, const char *what, const char *path, int e);
int tfc_ck_oom(tfc_error *err, const char *path);

/* Read exactly n bytes at offset unless the file ends first; returns the count read, or -1. */
int64_t tfc_ck_pread_full(int fd, void *buf, size_t n, uint64_t offset);
/* Write all n bytes (in bounded pieces); 0, or -1 with errno set. */
int tfc_ck_write_all(int fd, const void *data, size_t n);

/* Writes what follows the head of a file: 0, or -1 with errno set. */
typedef int (*ck_write_body)(int fd, const void *ctx);

/* Write `head` then what `body` (may be NULL) writes to a temporary file beside `path`, fsync
 * it, rename it over `path`, fsync the directory: a crash leaves the old file or the new one. */
int tfc_ck_write_atomically(const char *path, const char *head, size_t head_len,
                            ck_write_body body, const void *ctx, tfc_error *err);

/* ---------------------------------------------------------------------------------------------
 * tfc_safetensors.c: element types and callers' tensors */

typedef struct {
    int dtype;
    const char *code;    /* safetensors' name */
    const char *tf_name; /* TensorFlow's, for messages that read as TF's */
    int size;
    int align_rank; /* position in safetensors' Dtype enum: the writer sorts by it, descending */
} ck_dtype;

const ck_dtype *tfc_ck_dtype_by_code(int dtype);
const ck_dtype *tfc_ck_dtype_by_name(const char *name);

int tfc_ck_host_is_big_endian(void);
/* Safetensors data is little-endian: on a big-endian host, reverse each element in place. */
void tfc_ck_swap_elements(unsigned char *p, size_t nbytes, int size);
/* "[2, 3]", as Python prints a list, into buf (truncated to cap). */
void tfc_ck_format_dims(char *buf, size_t cap, const int64_t *dims, int rank);

/* A caller's tensor description: known dtype, rank in range, dims >= 0, nbytes consistent.
 * Its byte count goes to *nbytes. */
int tfc_ck_check_tensor(const tfc_checkpoint_tensor *t, int i, const char *path,
                        uint64_t *nbytes, tfc_error *err);

/* ---------------------------------------------------------------------------------------------
 * tfc_safetensors_header.c: an open safetensors file, its header validated */

typedef struct {
    char *name;
    const ck_dtype *dtype;
    int rank;
    int64_t dims[TFC_CHECKPOINT_MAX_RANK];
    uint64_t begin, end;
    size_t index;
} ck_entry;

typedef struct {
    const char *path;
    int fd;
    uint64_t file_size, header_len, data_start;
    ck_entry *entries;
    size_t n_entries;
    ck_entry **by_name; /* sorted by name, for lookups */
    char **meta_keys, **meta_values;
    size_t n_meta;
} ck_file;

/* Open and validate `path` completely; on TFC_OK the caller must tfc_ck_file_close(f). */
int tfc_ck_open(ck_file *f, const char *path, tfc_error *err);
void tfc_ck_file_close(ck_file *f);
/* The entry named `name`, or NULL. */
const ck_entry *tfc_ck_find(const ck_file *f, const char *name);

/* ---------------------------------------------------------------------------------------------
 * tfc_checkpoint_state.c */

/* Append `path` (owned by the state from now on) to all_model_checkpoint_paths; -1 on OOM. */
int tfc_ck_state_append(tfc_checkpoint_state *st, char *path);

#endif /* TFC_CHECKPOINT_INTERNAL_H */
