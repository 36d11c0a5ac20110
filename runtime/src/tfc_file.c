/* Files for checkpoints: growable text buffers, paths, I/O errors, full reads, atomic writes.
 *
 * Needs POSIX (open, pread, fsync, rename) and libc only. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_checkpoint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#ifndef __STDC_NO_ATOMICS__
#include <stdatomic.h>
#endif

/* ---------------------------------------------------------------------------------------------
 * A growable byte buffer (header text, state file text, paths) */

void tfc_ck_put(ck_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (n > SIZE_MAX / 2 - b->n) {
        b->oom = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = TFC_REALLOC(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void tfc_ck_puts(ck_buf *b, const char *s) { tfc_ck_put(b, s, strlen(s)); }

void tfc_ck_put_int(ck_buf *b, long long v) {
    char tmp[32];
    int w = TFC_SNPRINTF(tmp, sizeof tmp, "%lld", v);
    if (w > 0) tfc_ck_put(b, tmp, (size_t)w);
}

char *tfc_ck_strdup(const char *s) {
    size_t n = strlen(s);
    char *p = TFC_MALLOC(n + 1);
    if (p != NULL) memcpy(p, s, n + 1);
    return p;
}

char *tfc_ck_join(const char *dir, const char *path) {
    ck_buf b = {0};
    if (path[0] != '/' && dir[0] != '\0') {
        tfc_ck_puts(&b, dir);
        if (dir[strlen(dir) - 1] != '/') tfc_ck_puts(&b, "/");
    }
    tfc_ck_puts(&b, path);
    if (b.oom) {
        TFC_FREE(b.p);
        return NULL;
    }
    return b.p != NULL ? b.p : tfc_ck_strdup("");
}

/* ---------------------------------------------------------------------------------------------
 * Reading and writing whole files */

int tfc_ck_io_error(tfc_error *err, const char *what, const char *path, int e) {
    int code = TFC_ERR_UNKNOWN;
    if (e == ENOENT) code = TFC_ERR_NOT_FOUND;
    if (e == ENOSPC || e == ENOMEM) code = TFC_ERR_RESOURCE_EXHAUSTED;
#ifdef EDQUOT
    if (e == EDQUOT) code = TFC_ERR_RESOURCE_EXHAUSTED;
#endif
    return CK_FAIL(err, code, "checkpoint %s: %s failed: %s", path, what, strerror(e));
}

int tfc_ck_oom(tfc_error *err, const char *path) {
    return CK_FAIL(err, TFC_ERR_RESOURCE_EXHAUSTED, "checkpoint %s: out of memory", path);
}

int64_t tfc_ck_pread_full(int fd, void *buf, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < CK_IO_CHUNK ? n - done : CK_IO_CHUNK;
        ssize_t got = pread(fd, (char *)buf + done, want, (off_t)(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) break;
        done += (size_t)got;
    }
    return (int64_t)done;
}

int tfc_ck_write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n < CK_IO_CHUNK ? n : CK_IO_CHUNK);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The directory holding `path`, to fsync after a rename (the new entry lives in its blocks). */
static int ck_fsync_parent(const char *path) {
    char *dir = tfc_ck_strdup(path);
    if (dir == NULL) return -1;
    char *slash = strrchr(dir, '/');
    const char *name = dir;
    if (slash == NULL) name = ".";
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    int fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;
    if (fd < 0) {
        rc = -1;
    } else {
        /* some file systems cannot sync directories (EINVAL): the rename still stands */
        if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP) rc = -1;
        int saved = errno;
        close(fd);
        errno = saved;
    }
    TFC_FREE(dir);
    return rc;
}

/* Distinct temporary names for the writes of one process, threads included (O_EXCL and a
 * retry catch any collision left, e.g. with a stale file of a dead process of the same pid). */
#ifndef __STDC_NO_ATOMICS__
static atomic_uint ck_temp_counter;
static unsigned ck_next_temp_number(void) { return atomic_fetch_add(&ck_temp_counter, 1u); }
#else
static unsigned ck_temp_counter;
static unsigned ck_next_temp_number(void) { return ck_temp_counter++; }
#endif

/* Write header bytes then what `body` writes to a temporary file beside `path`, fsync it,
 * rename it over `path`, fsync the directory. `body` may be NULL (a text file). */
int tfc_ck_write_atomically(const char *path, const char *head, size_t head_len,
                            ck_write_body body, const void *ctx, tfc_error *err) {
    ck_buf tmp = {0};
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        tmp.n = 0;
        tfc_ck_puts(&tmp, path);
        tfc_ck_puts(&tmp, ".tmp-");
        tfc_ck_put_int(&tmp, (long long)getpid());
        tfc_ck_puts(&tmp, "-");
        tfc_ck_put_int(&tmp, (long long)ck_next_temp_number());
        if (tmp.oom) {
            TFC_FREE(tmp.p);
            return tfc_ck_oom(err, path);
        }
        fd = open(tmp.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int status = tfc_ck_io_error(err, "creating a temporary file", path, errno);
        TFC_FREE(tmp.p);
        return status;
    }
    const char *failed = NULL;
    if (tfc_ck_write_all(fd, head, head_len) != 0) failed = "write";
    if (failed == NULL && body != NULL && body(fd, ctx) != 0) failed = "write";
    if (failed == NULL && fsync(fd) != 0) failed = "fsync";
    int saved = errno;
    if (close(fd) != 0 && failed == NULL) {
        failed = "close";
        saved = errno;
    }
    if (failed == NULL && rename(tmp.p, path) != 0) {
        failed = "rename";
        saved = errno;
    }
    if (failed != NULL) {
        unlink(tmp.p);
        TFC_FREE(tmp.p);
        return tfc_ck_io_error(err, failed, path, saved);
    }
    TFC_FREE(tmp.p);
    if (ck_fsync_parent(path) != 0)
        return tfc_ck_io_error(err, "fsync of the directory", path, errno);
    return TFC_OK;
}

