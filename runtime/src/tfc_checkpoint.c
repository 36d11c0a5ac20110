/* Checkpoint directories as tf.train.Saver keeps them: tfc_checkpoint_save writes a checkpoint
 * and records it in the state file, tfc_checkpoint_latest finds the newest one,
 * tfc_checkpoint_clean removes what interrupted saves left behind. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_checkpoint_internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int ck_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* prefix".safetensors", or the path itself when it already names the file. */
static char *ck_data_path(const char *prefix) {
    ck_buf b = {0};
    tfc_ck_puts(&b, prefix);
    if (!ck_ends_with(prefix, ".safetensors")) tfc_ck_puts(&b, ".safetensors");
    if (b.oom) {
        TFC_FREE(b.p);
        return NULL;
    }
    return b.p;
}

static int ck_copy_out(char *out, size_t cap, const char *s, const char *what, tfc_error *err) {
    size_t n = strlen(s);
    if (out == NULL) return TFC_OK;
    if (n >= cap)
        return CK_FAIL(err, TFC_ERR_OUT_OF_RANGE, "%s %s has %zu bytes; the buffer holds %zu",
                       what, s, n, cap ? cap - 1 : 0);
    memcpy(out, s, n + 1);
    return TFC_OK;
}

int tfc_checkpoint_latest(const char *dir, char *prefix, size_t cap, tfc_error *err) {
    tfc_checkpoint_state st;
    int status = tfc_checkpoint_state_read(dir, &st, err);
    if (status != TFC_OK) return status;
    char *full = NULL, *data = NULL;
    struct stat sb;
    if (st.model_checkpoint_path == NULL || st.model_checkpoint_path[0] == '\0') {
        status = CK_FAIL(err, TFC_ERR_DATA_LOSS, "checkpoint state file in %s names no "
                         "model_checkpoint_path", dir);
    } else if ((full = tfc_ck_join(dir, st.model_checkpoint_path)) == NULL ||
               (data = ck_data_path(full)) == NULL) {
        status = tfc_ck_oom(err, dir);
    } else if (stat(data, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        status = CK_FAIL(err, TFC_ERR_NOT_FOUND, "checkpoint state file in %s names %s, but %s "
                         "does not exist", dir, st.model_checkpoint_path, data);
    } else {
        status = ck_copy_out(prefix, cap, full, "checkpoint prefix", err);
    }
    TFC_FREE(full);
    TFC_FREE(data);
    tfc_checkpoint_state_free(&st);
    return status;
}

int tfc_checkpoint_save(const char *dir, const char *basename, int64_t global_step,
                        const tfc_checkpoint_tensor *tensors, int n, int max_to_keep,
                        char *prefix, size_t cap, tfc_error *err) {
    if (dir == NULL || basename == NULL || basename[0] == '\0')
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint save: a directory and a "
                       "file name must be given");
    ck_buf rel = {0}, meta = {0};
    char *full = NULL, *data = NULL;
    tfc_checkpoint_state old = {0}, next = {0};
    int status = TFC_OK, keep_from = 0;

    tfc_ck_puts(&rel, basename);
    tfc_ck_puts(&meta, "{\"format\":\"tfc\"");
    if (global_step >= 0) {
        tfc_ck_puts(&rel, "-");
        tfc_ck_put_int(&rel, (long long)global_step);
        tfc_ck_puts(&meta, ",\"global_step\":\"");
        tfc_ck_put_int(&meta, (long long)global_step);
        tfc_ck_puts(&meta, "\"");
    }
    tfc_ck_puts(&meta, "}");
    if (rel.oom || meta.oom || (full = tfc_ck_join(dir, rel.p)) == NULL ||
        (data = ck_data_path(full)) == NULL) {
        status = tfc_ck_oom(err, dir);
        goto done;
    }
    if (prefix != NULL && strlen(full) >= cap) { /* before anything is written */
        status = ck_copy_out(prefix, cap, full, "checkpoint prefix", err);
        goto done;
    }
    status = tfc_checkpoint_write(data, tensors, n, meta.p, err);
    if (status != TFC_OK) goto done;

    /* keep the checkpoints the state file lists (an unreadable one is ignored, as TF does) */
    status = tfc_checkpoint_state_read(dir, &old, err);
    if (status == TFC_ERR_NOT_FOUND || status == TFC_ERR_DATA_LOSS) status = TFC_OK;
    if (status != TFC_OK) goto done;
    for (int i = 0; i < old.n_all; ++i) {
        char *listed = tfc_ck_join(dir, old.all_model_checkpoint_paths[i]);
        int same = listed != NULL && strcmp(listed, full) == 0;
        TFC_FREE(listed);
        if (same) continue; /* saved again: it moves to the end */
        if (tfc_ck_state_append(&next, old.all_model_checkpoint_paths[i]) != 0) {
            status = tfc_ck_oom(err, dir);
            goto done;
        }
        old.all_model_checkpoint_paths[i] = NULL; /* owned by next now */
    }
    char *entry = tfc_ck_strdup(rel.p);
    if (entry == NULL || tfc_ck_state_append(&next, entry) != 0) {
        TFC_FREE(entry);
        status = tfc_ck_oom(err, dir);
        goto done;
    }
    if (max_to_keep > 0 && next.n_all > max_to_keep) keep_from = next.n_all - max_to_keep;
    tfc_checkpoint_state kept = {rel.p, next.all_model_checkpoint_paths + keep_from,
                                 next.n_all - keep_from};
    status = tfc_checkpoint_state_write(dir, &kept, err);
    if (status != TFC_OK) goto done;
    /* only now that the state file no longer names them may the oldest go */
    for (int i = 0; i < keep_from; ++i) {
        char *old_full = tfc_ck_join(dir, next.all_model_checkpoint_paths[i]);
        char *old_data = old_full != NULL ? ck_data_path(old_full) : NULL;
        if (old_data != NULL) (void)unlink(old_data); /* already gone is fine, as in TF */
        TFC_FREE(old_data);
        TFC_FREE(old_full);
    }
    status = ck_copy_out(prefix, cap, full, "checkpoint prefix", err);
done:
    tfc_checkpoint_state_free(&old);
    tfc_checkpoint_state_free(&next);
    TFC_FREE(rel.p);
    TFC_FREE(meta.p);
    TFC_FREE(full);
    TFC_FREE(data);
    return status;
}

/* -- cleaning up after interrupted saves ------------------------------------------------------- */

/* The writer's pid of a temporary file "NAME.tmp-PID-X" (X: the C writer's counter or the Python
 * writer's hex), or -1 when `name` is not one. */
static long ck_temp_writer(const char *name) {
    const char *tag = NULL;
    for (const char *p = strstr(name, ".tmp-"); p != NULL; p = strstr(p + 1, ".tmp-")) tag = p;
    if (tag == NULL || tag == name) return -1;
    const char *p = tag + 5, *digits = p;
    long pid = 0;
    while (*p >= '0' && *p <= '9' && pid < 100000000L) pid = pid * 10 + (*p++ - '0');
    if (p == digits || *p != '-' || p[1] == '\0') return -1;
    for (++p; *p; ++p)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return -1;
    return pid;
}

/* Is process `pid` gone? (It may be another user's: then it is running.) */
static int ck_writer_gone(long pid) {
    if (pid == (long)getpid()) return 1; /* this process has written nothing here yet */
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Is `name` basename-STEP.safetensors? */
static int ck_is_stepped(const char *name, const char *basename) {
    size_t k = strlen(basename);
    if (strncmp(name, basename, k) != 0 || name[k] != '-') return 0;
    const char *p = name + k + 1, *digits = p;
    while (*p >= '0' && *p <= '9') ++p;
    return p > digits && strcmp(p, ".safetensors") == 0;
}

/* The (device, inode) of every data file the state names, to compare files whatever the path
 * (a state file may name them by absolute or relative paths). */
typedef struct {
    dev_t dev;
    ino_t ino;
} ck_file_id;

static int ck_named_files(const char *dir, const tfc_checkpoint_state *st, ck_file_id **out,
                          int *n, tfc_error *err) {
    *out = TFC_MALLOC(((size_t)st->n_all + 1) * sizeof **out);
    *n = 0;
    if (*out == NULL) return tfc_ck_oom(err, dir);
    for (int i = -1; i < st->n_all; ++i) {
        const char *named = i < 0 ? st->model_checkpoint_path : st->all_model_checkpoint_paths[i];
        if (named == NULL || named[0] == '\0') continue;
        char *full = tfc_ck_join(dir, named), *data = full ? ck_data_path(full) : NULL;
        struct stat sb;
        if (data == NULL) {
            TFC_FREE(full);
            return tfc_ck_oom(err, dir);
        }
        if (stat(data, &sb) == 0) (*out)[(*n)++] = (ck_file_id){sb.st_dev, sb.st_ino};
        TFC_FREE(full);
        TFC_FREE(data);
    }
    return TFC_OK;
}

int tfc_checkpoint_clean(const char *dir, const char *basename, int max_to_keep, int *removed,
                         tfc_error *err) {
    if (removed != NULL) *removed = 0;
    if (dir == NULL || basename == NULL || basename[0] == '\0')
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint clean: a directory and a file "
                       "name must be given");
    tfc_checkpoint_state st;
    ck_file_id *named = NULL;
    int n_named = 0, orphans = 0;
    if (max_to_keep > 0 && tfc_checkpoint_state_read(dir, &st, NULL) == TFC_OK) {
        int status = ck_named_files(dir, &st, &named, &n_named, err);
        tfc_checkpoint_state_free(&st);
        if (status != TFC_OK) return status;
        orphans = 1;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        TFC_FREE(named);
        return errno == ENOENT ? TFC_OK : tfc_ck_io_error(err, "open the directory", dir, errno);
    }
    int status = TFC_OK, count = 0;
    for (struct dirent *e; status == TFC_OK && (e = readdir(d)) != NULL;) {
        long writer = ck_temp_writer(e->d_name);
        int stale = writer >= 0 && ck_writer_gone(writer);
        int orphan = orphans && ck_is_stepped(e->d_name, basename);
        if (!stale && !orphan) continue;
        char *path = tfc_ck_join(dir, e->d_name);
        struct stat sb;
        if (path == NULL) {
            status = tfc_ck_oom(err, dir);
            break;
        }
        if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            for (int i = 0; orphan && i < n_named; ++i)
                if (named[i].dev == sb.st_dev && named[i].ino == sb.st_ino) orphan = 0;
            if (stale || orphan) {
                if (unlink(path) == 0) ++count;
                else if (errno != ENOENT) status = tfc_ck_io_error(err, "remove", path, errno);
            }
        }
        TFC_FREE(path);
    }
    closedir(d);
    TFC_FREE(named);
    if (removed != NULL) *removed = count;
    return status;
}
