/* Checkpoints of native executables: safetensors files, written atomically, validated on read.
 *
 * The format and the rules are tfc/io/safetensors.py's (the Python side reads and writes the same
 * files, byte for byte): an 8-byte little-endian header length N, N bytes of JSON naming each
 * tensor's dtype, shape and data_offsets (plus an optional "__metadata__" object of strings),
 * padded with spaces to a multiple of 8, then the tensors' little-endian bytes back to back,
 * sorted by descending alignment (I64, F64, F32, I32, BOOL) and then by name.
 *
 * A checkpoint is named by its prefix ("dir/model.ckpt-100"); its file is prefix".safetensors".
 * The directory's "checkpoint" file is TensorFlow's CheckpointState text; these functions keep
 * it as tf.train.Saver does, so Python's tfc.train.latest_checkpoint finds native checkpoints.
 *
 * Errors return a TFC_ERR_* code and write a message naming the file and the problem into
 * err->msg: TFC_ERR_NOT_FOUND (no such file, no such tensor), TFC_ERR_INVALID_ARGUMENT (a
 * caller's tensor does not match the file, or is ill-formed), TFC_ERR_DATA_LOSS (the file is
 * not a valid checkpoint), TFC_ERR_RESOURCE_EXHAUSTED (out of memory or disk space),
 * TFC_ERR_UNKNOWN (other I/O errors). Needs POSIX (open, fsync, rename) and libc only; a program
 * that calls these links every C file of runtime/src (allocation goes through tfc_platform.h's
 * TFC_MALLOC, TFC_REALLOC and TFC_FREE). */
#ifndef TFC_CHECKPOINT_H
#define TFC_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_runtime.h"

/* Element types, numbered as TensorFlow's DataType enum (as the status codes follow TF's). */
enum {
    TFC_CHECKPOINT_F32 = 1,
    TFC_CHECKPOINT_F64 = 2,
    TFC_CHECKPOINT_I32 = 3,
    TFC_CHECKPOINT_I64 = 9,
    TFC_CHECKPOINT_BOOL = 10
};

/* The largest rank a tensor of a file may have for this reader (Python's has no limit). */
#define TFC_CHECKPOINT_MAX_RANK 16
/* The reference safetensors reader refuses larger headers; so do both of tfc's. */
#define TFC_CHECKPOINT_MAX_HEADER 100000000

/* One tensor to write, or to read into. `nbytes` must be prod(dims) * the dtype's size; `data`
 * is read from by tfc_checkpoint_write (never modified) and filled by tfc_checkpoint_read. */
typedef struct {
    const char *name; /* the key in the file: the variable's op name ("dense/kernel") */
    int dtype;        /* TFC_CHECKPOINT_F32, ... */
    int rank;         /* 0 (a scalar) .. TFC_CHECKPOINT_MAX_RANK */
    int64_t dims[TFC_CHECKPOINT_MAX_RANK];
    void *data;
    int64_t nbytes;
} tfc_checkpoint_tensor;

/* Write `n` tensors to `path` atomically: a temporary file in the same directory is written,
 * fsynced and renamed over `path`, then the directory is fsynced; a crash leaves the old file.
 * `metadata_json_or_null` is NULL or a JSON object of strings ({"global_step":"100"}). */
int tfc_checkpoint_write(const char *path, const tfc_checkpoint_tensor *tensors, int n,
                         const char *metadata_json_or_null, tfc_error *err);

/* Fill the caller's buffers from `path`, each found by name. The whole header is validated
 * first; every requested tensor must be present with the same dtype and dims. On an error the
 * buffers may hold part of the data: restore into scratch buffers if that matters. */
int tfc_checkpoint_read(const char *path, tfc_checkpoint_tensor *tensors, int n,
                        tfc_error *err);

/* The "__metadata__" value of `key` in `path` (validated as tfc_checkpoint_read does), copied
 * NUL-terminated into `value`. TFC_ERR_NOT_FOUND when the file has no such key. */
int tfc_checkpoint_read_metadata(const char *path, const char *key, char *value, size_t cap,
                                 tfc_error *err);

/* The "checkpoint" state file of a directory: paths as stored (relative ones are relative to
 * the directory), oldest first in `all_model_checkpoint_paths`. Strings are malloc'd. */
typedef struct {
    char *model_checkpoint_path;
    char **all_model_checkpoint_paths;
    int n_all;
} tfc_checkpoint_state;

/* TFC_ERR_NOT_FOUND when `dir` has no state file; TFC_ERR_DATA_LOSS when it cannot be parsed.
 * On success free the state with tfc_checkpoint_state_free. */
int tfc_checkpoint_state_read(const char *dir, tfc_checkpoint_state *state, tfc_error *err);
/* Replace `dir`/checkpoint atomically with `state`. */
int tfc_checkpoint_state_write(const char *dir, const tfc_checkpoint_state *state,
                               tfc_error *err);
void tfc_checkpoint_state_free(tfc_checkpoint_state *state);

/* The prefix of the newest checkpoint in `dir` (the state file's model_checkpoint_path joined
 * to `dir`), provided its file exists: tf.train.latest_checkpoint. TFC_ERR_NOT_FOUND if none. */
int tfc_checkpoint_latest(const char *dir, char *prefix, size_t cap, tfc_error *err);

/* Saver.save for native executables: write `dir`/`basename`-`global_step` (no step suffix when
 * global_step < 0) with metadata {"format":"tfc","global_step":"<n>"}, record it in the state
 * file after the checkpoints already listed there, and delete the oldest beyond `max_to_keep`
 * (0 keeps all). The data file is complete before the state file names it, and a checkpoint is
 * deleted only after the state file stops naming it. The prefix is copied to `prefix` (may be
 * NULL). */
int tfc_checkpoint_save(const char *dir, const char *basename, int64_t global_step,
                        const tfc_checkpoint_tensor *tensors, int n, int max_to_keep,
                        char *prefix, size_t cap, tfc_error *err);

/* What saves killed midway leave in `dir`, removed before this process saves there: the
 * temporary files ("NAME.tmp-PID-N") of writers that are no longer running (this process's
 * own included: call it before this process saves into `dir`), and, when max_to_keep > 0, the
 * checkpoint files `basename`-STEP.safetensors that the state file does not name (a save
 * killed after writing its file but before the state file named it, or after the state file
 * dropped the oldest but before its file was deleted). With max_to_keep 0 (keep all), or
 * without a readable state file, no checkpoint file is removed. *removed (may be NULL)
 * receives how many files went. */
int tfc_checkpoint_clean(const char *dir, const char *basename, int max_to_keep, int *removed,
                         tfc_error *err);

#endif /* TFC_CHECKPOINT_H */
