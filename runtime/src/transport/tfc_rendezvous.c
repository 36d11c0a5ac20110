/* The rendezvous table: tensors that arrived wait for their recv, recvs wait for their tensor. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tfc_transport_internal.h"

void tfc_transport_log(tfc_transport *t, const char *level, const char *fmt, ...) {
    char line[768];
    int used = TFC_SNPRINTF(line, sizeof line, "transport %s: ", t->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + used, sizeof line - (size_t)used, fmt, ap);
    va_end(ap);
    TFC_LOG(level, line);
}

int tfc_transport_flag(const int *flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }

static int entry_matches(const tfc_entry *e, const char *key, int64_t step) {
    return strcmp(e->key, key) == 0 && (step == TFC_TRANSPORT_ANY_STEP ||
                                        e->step == TFC_TRANSPORT_ANY_STEP || e->step == step);
}

tfc_entry *tfc_rendezvous_find(tfc_transport *t, int state, const char *key, int64_t step) {
    for (tfc_entry *e = t->entries; e != NULL; e = e->next)
        if (e->state == state && entry_matches(e, key, step)) return e;
    return NULL;
}

void tfc_rendezvous_unlink(tfc_transport *t, tfc_entry *gone) {
    for (tfc_entry **p = &t->entries; *p != NULL; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            return;
        }
}

void tfc_rendezvous_append(tfc_transport *t, tfc_entry *e) {
    tfc_entry **p = &t->entries;
    while (*p != NULL) p = &(*p)->next;
    e->next = NULL;
    *p = e;
}

int tfc_rendezvous_fits(const tfc_transport_tensor *want, int dtype, int rank,
                        const int64_t *dims, int64_t nbytes) {
    if (want->dtype != dtype || want->nbytes < nbytes) return 0;
    if (want->rank == TFC_TRANSPORT_ANY_RANK) return 1;
    if (want->rank != rank) return 0;
    for (int i = 0; i < rank; ++i)
        if (want->dims[i] != dims[i]) return 0;
    return 1;
}

static int check_key(const char *key, const char *what, tfc_error *err) {
    size_t n = key != NULL ? strlen(key) : 0;
    if (n == 0 || n > TFC_TRANSPORT_MAX_KEY)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport %s: the key must have 1 to %d bytes", what,
                                  TFC_TRANSPORT_MAX_KEY);
    return TFC_OK;
}

/* Hand an arrived tensor to the recv (t->lock not held; the entry is already unlinked). */
static int deliver(tfc_entry *a, tfc_transport_tensor *want, int64_t *step_out,
                   tfc_error *err) {
    int rc = TFC_OK;
    if (!tfc_rendezvous_fits(want, a->dtype, a->rank, a->dims, a->nbytes)) {
        char got[200], expected[200];
        tfc_wire_describe(a->dtype, a->rank, a->dims, got, sizeof got);
        if (want->rank == TFC_TRANSPORT_ANY_RANK)
            TFC_SNPRINTF(expected, sizeof expected, "%s[any shape] in %" PRId64 " bytes",
                         tfc_wire_dtype_name(want->dtype), want->nbytes);
        else
            tfc_wire_describe(want->dtype, want->rank, want->dims, expected, sizeof expected);
        rc = tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                "transport recv '%s' at step %" PRId64 ": expected %s, got %s",
                                a->key, a->step, expected, got);
    } else {
        if (a->nbytes > 0) memcpy(want->data, a->data, (size_t)a->nbytes);
        if (want->rank == TFC_TRANSPORT_ANY_RANK) {
            want->rank = a->rank;
            memcpy(want->dims, a->dims, sizeof a->dims);
        }
        if (step_out != NULL) *step_out = a->step;
    }
    TFC_FREE((void *)a->key), TFC_FREE(a->data), TFC_FREE(a);
    return rc;
}

static int check_want(const tfc_transport_tensor *w, tfc_error *err) {
    if (w == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "transport recv: tensor is NULL");
    int64_t size = tfc_transport_dtype_size(w->dtype);
    if (size == 0 || w->dtype == TFC_DTYPE_F16 || w->dtype == TFC_DTYPE_BF16)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport recv: dtype %d is not one the transport carries",
                                  w->dtype);
    if (w->rank != TFC_TRANSPORT_ANY_RANK && (w->rank < 0 || w->rank > TFC_TRANSPORT_MAX_RANK))
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport recv: rank %d is not in [0, %d]", w->rank,
                                  TFC_TRANSPORT_MAX_RANK);
    if (w->nbytes < 0 || (w->nbytes > 0 && w->data == NULL))
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport recv: no buffer for %" PRId64 " bytes", w->nbytes);
    return TFC_OK;
}

/* Wait on t->cond until `deadline_ms` (-1: no limit). */
static void wait_until(tfc_transport *t, int64_t deadline_ms) {
    if (deadline_ms < 0) {
        pthread_cond_wait(&t->cond, &t->lock);
        return;
    }
    int64_t left = deadline_ms - tfc_wire_now_ms();
    if (left <= 0) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(left / 1000);
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec += 1, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&t->cond, &t->lock, &ts);
}

/* A recv in the table. `entry.key` is the caller's key (tfc_transport_recv) or key_copy. */
struct tfc_transport_request {
    tfc_entry entry;
    char *key_copy;
};

/* Wait (t->lock held, released on return) until the request is filled, the deadline passes
 * (TFC_ERR_DEADLINE_EXCEEDED: the request stays posted, *finished = 0) or the transport is
 * cancelled. Otherwise the request is out of the table and *finished = 1. */
static int await_request(tfc_transport *t, tfc_transport_request *req, int64_t deadline,
                         int64_t timeout_ms, int64_t *step_out, tfc_error *err, int *finished) {
    tfc_entry *e = &req->entry;
    *finished = 1;
    for (;;) {
        if (e->state == ENTRY_DONE) {
            tfc_rendezvous_unlink(t, e);
            pthread_mutex_unlock(&t->lock);
            if (step_out != NULL) *step_out = e->got_step;
            return TFC_OK;
        }
        if (e->state == ENTRY_POSTED) {
            tfc_entry *a = tfc_rendezvous_find(t, ENTRY_ARRIVED, e->key, e->step);
            if (a != NULL) {
                tfc_rendezvous_unlink(t, a);
                tfc_rendezvous_unlink(t, e);
                pthread_mutex_unlock(&t->lock);
                return deliver(a, e->want, step_out, err);
            }
            if (tfc_transport_flag(&t->cancelled)) {
                tfc_rendezvous_unlink(t, e);
                pthread_mutex_unlock(&t->lock);
                return tfc_error_setf(err, TFC_ERR_CANCELLED, "transport recv '%s': cancelled",
                                          e->key);
            }
            if (deadline >= 0 && tfc_wire_now_ms() >= deadline) {
                pthread_mutex_unlock(&t->lock);
                *finished = 0;
                return tfc_error_setf(err, TFC_ERR_DEADLINE_EXCEEDED,
                                          "transport recv '%s' at step %" PRId64
                                          ": nothing arrived within %" PRId64 " ms",
                                          e->key, e->step, timeout_ms);
            }
        }
        /* while a reader fills the buffer, wait for it whatever the deadline: it ends within
         * io_timeout_ms, and the buffer must not be handed back while it is being written */
        wait_until(t, e->state == ENTRY_FILLING ? -1 : deadline);
    }
}

static void post_request(tfc_transport *t, tfc_transport_request *req, const char *key,
                         int64_t step, tfc_transport_tensor *tensor) {
    memset(&req->entry, 0, sizeof req->entry);
    req->entry.key = key;
    req->entry.step = step;
    req->entry.state = ENTRY_POSTED;
    req->entry.want = tensor;
    pthread_mutex_lock(&t->lock);
    tfc_rendezvous_append(t, &req->entry);
}

int tfc_transport_recv(tfc_transport *t, const char *key, int64_t step,
                       tfc_transport_tensor *tensor, int64_t timeout_ms, int64_t *step_out,
                       tfc_error *err) {
    if (t == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "transport recv: t is NULL");
    int rc = check_key(key, "recv", err);
    if (rc == TFC_OK) rc = check_want(tensor, err);
    if (rc != TFC_OK) return rc;
    int64_t deadline = timeout_ms < 0 ? -1 : tfc_wire_now_ms() + timeout_ms;
    tfc_transport_request req; /* on this stack: out of the table before return */
    req.key_copy = NULL;
    post_request(t, &req, key, step, tensor);
    int finished;
    rc = await_request(t, &req, deadline, timeout_ms, step_out, err, &finished);
    if (!finished) {
        pthread_mutex_lock(&t->lock);
        tfc_rendezvous_unlink(t, &req.entry); /* POSTED: no reader holds it */
        pthread_mutex_unlock(&t->lock);
    }
    return rc;
}

int tfc_transport_recv_post(tfc_transport *t, const char *key, int64_t step,
                            tfc_transport_tensor *tensor, tfc_transport_request **req,
                            tfc_error *err) {
    if (t == NULL || req == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport recv_post: t or req is NULL");
    *req = NULL;
    int rc = check_key(key, "recv_post", err);
    if (rc == TFC_OK) rc = check_want(tensor, err);
    if (rc != TFC_OK) return rc;
    size_t n = strlen(key) + 1;
    tfc_transport_request *r = (tfc_transport_request *)TFC_MALLOC(sizeof *r);
    char *copy = (char *)TFC_MALLOC(n);
    if (r == NULL || copy == NULL) {
        TFC_FREE(r), TFC_FREE(copy);
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED,
                                  "transport recv_post: out of memory");
    }
    memcpy(copy, key, n);
    r->key_copy = copy;
    post_request(t, r, copy, step, tensor);
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    *req = r;
    return TFC_OK;
}

int tfc_transport_recv_wait(tfc_transport *t, tfc_transport_request *req, int64_t timeout_ms,
                            int64_t *step_out, tfc_error *err) {
    if (t == NULL || req == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport recv_wait: t or req is NULL");
    int64_t deadline = timeout_ms < 0 ? -1 : tfc_wire_now_ms() + timeout_ms;
    int finished;
    pthread_mutex_lock(&t->lock);
    int rc = await_request(t, req, deadline, timeout_ms, step_out, err, &finished);
    if (finished) TFC_FREE(req->key_copy), TFC_FREE(req);
    return rc;
}

void tfc_transport_recv_abandon(tfc_transport *t, tfc_transport_request *req) {
    if (t == NULL || req == NULL) return;
    pthread_mutex_lock(&t->lock);
    while (req->entry.state == ENTRY_FILLING) pthread_cond_wait(&t->cond, &t->lock);
    tfc_rendezvous_unlink(t, &req->entry);
    pthread_mutex_unlock(&t->lock);
    TFC_FREE(req->key_copy), TFC_FREE(req);
}

int tfc_transport_poll(tfc_transport *t, const char *const *keys, int n, int64_t step,
                       int64_t timeout_ms, int *index, tfc_error *err) {
    if (t == NULL || keys == NULL || n <= 0 || index == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport poll: needs a transport, keys, n > 0 and index");
    for (int i = 0; i < n; ++i) {
        int rc = check_key(keys[i], "poll", err);
        if (rc != TFC_OK) return rc;
    }
    int64_t deadline = timeout_ms < 0 ? -1 : tfc_wire_now_ms() + timeout_ms;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        for (int i = 0; i < n; ++i)
            if (tfc_rendezvous_find(t, ENTRY_ARRIVED, keys[i], step) != NULL) {
                pthread_mutex_unlock(&t->lock);
                *index = i;
                return TFC_OK;
            }
        if (tfc_transport_flag(&t->cancelled)) {
            pthread_mutex_unlock(&t->lock);
            return tfc_error_setf(err, TFC_ERR_CANCELLED, "transport poll: cancelled");
        }
        if (deadline >= 0 && tfc_wire_now_ms() >= deadline) {
            pthread_mutex_unlock(&t->lock);
            return tfc_error_setf(err, TFC_ERR_DEADLINE_EXCEEDED,
                                      "transport poll: none of %d keys ('%s'...) arrived "
                                      "within %" PRId64 " ms",
                                      n, keys[0], timeout_ms);
        }
        wait_until(t, deadline);
    }
}
