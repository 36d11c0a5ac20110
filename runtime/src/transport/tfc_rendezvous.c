/* The rendezvous table: tensors that arrived wait for their recv, recvs wait for their tensor. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tfc_transport_internal.h"

void tfc_transport_log(tfc_transport *t, const char *level, const char *fmt, ...) {
    char raw[768], line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    int used = TFC_SNPRINTF(line, sizeof line, "transport %s: ", t->name);
    tfc_wire_escape(raw, len, line + used, sizeof line - (size_t)used);
    TFC_LOG(level, line);
}

int tfc_transport_flag(const int *flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }

/* ---- accounts: what each peer holds ---- */

tfc_account *tfc_account_get(tfc_transport *t, const char *name) {
    for (tfc_account *a = t->accounts; a != NULL; a = a->next)
        if (strcmp(a->name, name) == 0) return a;
    tfc_account *a = (tfc_account *)TFC_MALLOC(sizeof *a);
    if (a == NULL) return NULL;
    memset(a, 0, sizeof *a);
    TFC_SNPRINTF(a->name, sizeof a->name, "%s", name);
    a->next = t->accounts;
    t->accounts = a;
    return a;
}

void tfc_account_put(tfc_transport *t, tfc_account *gone) {
    if (gone == NULL || gone->conns > 0 || gone->held_tensors > 0 || gone->held_bytes > 0) return;
    for (tfc_account **p = &t->accounts; *p != NULL; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            TFC_FREE(gone);
            return;
        }
}

int tfc_rendezvous_reserve(tfc_transport *t, tfc_account *from, int64_t nbytes, char *why,
                           size_t cap) {
    const char *over = NULL;
    int64_t have = 0, limit = 0;
    if (from->held_tensors + 1 > t->max_held_tensors_per_peer)
        over = "tensors of this peer", have = from->held_tensors, limit = t->max_held_tensors_per_peer;
    else if (t->held_tensors + 1 > t->max_held_tensors)
        over = "tensors", have = t->held_tensors, limit = t->max_held_tensors;
    else if (from->held_bytes + nbytes > t->max_held_bytes_per_peer)
        over = "bytes of this peer", have = from->held_bytes, limit = t->max_held_bytes_per_peer;
    else if (t->held_bytes + nbytes > t->max_held_bytes)
        over = "bytes", have = t->held_bytes, limit = t->max_held_bytes;
    if (over != NULL) {
        TFC_SNPRINTF(why, cap, "held: %" PRId64 " %s wait for their recv; a tensor of %" PRId64
                     " bytes more would pass the cap of %" PRId64, have, over, nbytes, limit);
        return -1;
    }
    from->held_tensors += 1, from->held_bytes += nbytes;
    t->held_tensors += 1, t->held_bytes += nbytes;
    return 0;
}

void tfc_rendezvous_release(tfc_transport *t, tfc_account *from, int64_t nbytes) {
    from->held_tensors -= 1, from->held_bytes -= nbytes;
    t->held_tensors -= 1, t->held_bytes -= nbytes;
    tfc_account_put(t, from);
}

/* ---- the table: a hash table of slots, one per key ---- */

static uint64_t hash_key(const char *key) { /* FNV-1a */
    uint64_t h = 1469598103934665603u;
    for (const unsigned char *p = (const unsigned char *)key; *p; ++p)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

static int grow(tfc_transport *t) {
    size_t n = t->n_buckets ? 2 * t->n_buckets : 64;
    tfc_slot **buckets = (tfc_slot **)TFC_MALLOC(n * sizeof *buckets);
    if (buckets == NULL) return -1;
    memset(buckets, 0, n * sizeof *buckets);
    for (size_t i = 0; i < t->n_buckets; ++i)
        for (tfc_slot *s = t->buckets[i], *next; s != NULL; s = next) {
            next = s->next;
            s->next = buckets[s->hash & (n - 1)];
            buckets[s->hash & (n - 1)] = s;
        }
    TFC_FREE(t->buckets);
    t->buckets = buckets;
    t->n_buckets = n;
    return 0;
}

tfc_slot *tfc_rendezvous_slot(tfc_transport *t, const char *key, int create) {
    uint64_t h = hash_key(key);
    if (t->n_buckets > 0)
        for (tfc_slot *s = t->buckets[h & (t->n_buckets - 1)]; s != NULL; s = s->next)
            if (s->hash == h && strcmp(s->key, key) == 0) return s;
    if (!create) return NULL;
    if (t->n_slots + 1 > t->n_buckets && grow(t) != 0) return NULL;
    size_t n = strlen(key) + 1;
    tfc_slot *s = (tfc_slot *)TFC_MALLOC(sizeof *s);
    char *copy = (char *)TFC_MALLOC(n);
    if (s == NULL || copy == NULL) {
        TFC_FREE(s), TFC_FREE(copy);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    memcpy(copy, key, n);
    s->key = copy;
    s->hash = h;
    s->next = t->buckets[h & (t->n_buckets - 1)];
    t->buckets[h & (t->n_buckets - 1)] = s;
    ++t->n_slots;
    return s;
}

static void free_slot(tfc_transport *t, tfc_slot *gone) {
    for (tfc_slot **p = &t->buckets[gone->hash & (t->n_buckets - 1)]; *p != NULL; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            --t->n_slots;
            TFC_FREE(gone->key);
            TFC_FREE(gone);
            return;
        }
}

int tfc_rendezvous_add_routes(tfc_transport *t, const tfc_transport_route *routes, int n,
                              tfc_error *err) {
    for (int i = 0; i < n; ++i) {
        const tfc_transport_route *r = &routes[i];
        size_t len = r->key != NULL ? strlen(r->key) : 0;
        if (len == 0 || len > TFC_TRANSPORT_MAX_KEY || !tfc_wire_name_valid(r->peer) ||
            r->max_bytes < 0)
            return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "transport: route %d needs a "
                                  "key of 1 to %d bytes, a peer name of 1 to %d printable "
                                  "characters and max_bytes >= 0", i, TFC_TRANSPORT_MAX_KEY,
                                  TFC_TRANSPORT_MAX_NAME);
        tfc_slot *s = tfc_rendezvous_slot(t, r->key, 1);
        if (s == NULL) return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
        if (s->route && strcmp(s->peer, r->peer) != 0)
            return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "transport: key '%s' is routed "
                                  "from both %s and %s", r->key, s->peer, r->peer);
        s->route = 1;
        TFC_SNPRINTF(s->peer, sizeof s->peer, "%s", r->peer);
        s->max_bytes = r->max_bytes;
    }
    return TFC_OK;
}

static int entry_matches(const tfc_entry *e, int64_t step) {
    return step == TFC_TRANSPORT_ANY_STEP || e->step == TFC_TRANSPORT_ANY_STEP || e->step == step;
}

tfc_entry *tfc_rendezvous_find(tfc_slot *slot, int state, int64_t step) {
    for (tfc_entry *e = slot != NULL ? slot->head : NULL; e != NULL; e = e->next)
        if (e->state == state && entry_matches(e, step)) return e;
    return NULL;
}

void tfc_rendezvous_append(tfc_slot *slot, tfc_entry *e) {
    e->next = NULL;
    e->slot = slot;
    if (slot->tail != NULL) slot->tail->next = e;
    else slot->head = e;
    slot->tail = e;
}

/* Take `gone` out of its slot, leaving the slot (even empty) in the table. */
static void unlink_entry(tfc_entry *gone) {
    tfc_slot *slot = gone->slot;
    tfc_entry *prev = NULL;
    for (tfc_entry *e = slot->head; e != NULL; prev = e, e = e->next)
        if (e == gone) {
            if (prev != NULL) prev->next = e->next;
            else slot->head = e->next;
            if (slot->tail == e) slot->tail = prev;
            break;
        }
    gone->next = NULL;
}

void tfc_rendezvous_unlink(tfc_transport *t, tfc_entry *gone) {
    tfc_slot *slot = gone->slot;
    unlink_entry(gone);
    if (slot->head == NULL && !slot->route) free_slot(t, slot);
}

/* Unlink an arrived tensor nobody received and free it; its slot stays (a tensor is about to
 * join it). */
static void evict(tfc_transport *t, tfc_entry *e) {
    unlink_entry(e);
    tfc_rendezvous_release(t, e->from, e->nbytes);
    TFC_FREE(e->data), TFC_FREE(e);
    TFC_STAT_ADD(t, evicted_tensors, 1);
}

void tfc_rendezvous_drop(tfc_transport *t, tfc_entry *e) {
    tfc_rendezvous_unlink(t, e);
    tfc_rendezvous_release(t, e->from, e->nbytes);
    TFC_FREE(e->data), TFC_FREE(e);
    TFC_STAT_ADD(t, evicted_tensors, 1);
}

void tfc_rendezvous_evict(tfc_transport *t, tfc_slot *slot, int64_t step) {
    if (t->keep_steps <= 0) return;
    int64_t floor = step > INT64_MIN + t->keep_steps ? step - t->keep_steps : INT64_MIN;
    for (tfc_entry *e = slot->head, *next; e != NULL; e = next) {
        next = e->next;
        if (e->state == ENTRY_ARRIVED && e->step < floor) evict(t, e);
    }
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

void tfc_rendezvous_free_all(tfc_transport *t) {
    for (size_t i = 0; i < t->n_buckets; ++i)
        for (tfc_slot *s = t->buckets[i], *next_slot; s != NULL; s = next_slot) {
            next_slot = s->next;
            for (tfc_entry *e = s->head, *next; e != NULL; e = next) {
                next = e->next;
                if (e->state == ENTRY_ARRIVED) { /* POSTED ones belong to recvs */
                    TFC_FREE(e->data), TFC_FREE(e);
                }
            }
            TFC_FREE(s->key), TFC_FREE(s);
        }
    TFC_FREE(t->buckets);
    t->buckets = NULL;
    t->n_buckets = t->n_slots = 0;
    for (tfc_account *a = t->accounts, *next; a != NULL; a = next) {
        next = a->next;
        TFC_FREE(a);
    }
    t->accounts = NULL;
}

static int check_key(const char *key, const char *what, tfc_error *err) {
    size_t n = key != NULL ? strlen(key) : 0;
    if (n == 0 || n > TFC_TRANSPORT_MAX_KEY)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport %s: the key must have 1 to %d bytes", what,
                                  TFC_TRANSPORT_MAX_KEY);
    return TFC_OK;
}

/* Hand an arrived tensor to the recv of `key` (t->lock not held; the entry is unlinked and
 * no longer counted against its peer). */
static int deliver(tfc_entry *a, const char *key, tfc_transport_tensor *want, int64_t *step_out,
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
                            "transport recv '%s' at step %" PRId64 ": expected %s, got %s", key,
                            a->step, expected, got);
    } else {
        if (a->nbytes > 0) memcpy(want->data, a->data, (size_t)a->nbytes);
        if (want->rank == TFC_TRANSPORT_ANY_RANK) {
            want->rank = a->rank;
            memcpy(want->dims, a->dims, sizeof a->dims);
        }
        if (step_out != NULL) *step_out = a->step;
    }
    TFC_FREE(a->data), TFC_FREE(a);
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

/* A recv in the table. `key` is the caller's key (tfc_transport_recv) or key_copy. */
struct tfc_transport_request {
    tfc_entry entry;
    const char *key;
    char *key_copy;
};

/* Wait (t->lock held, released on return) until the request is filled, the deadline passes
 * (TFC_ERR_DEADLINE_EXCEEDED: the request stays posted, *finished = 0) or the transport is
 * cancelled. Otherwise the request is out of the table and *finished = 1. With `withdraw` a
 * request past its deadline leaves the table too, before the lock is released: a reader that
 * took the lock in between would fill it after its recv returned: through an entry on a stack
 * that is gone, into a buffer the caller may have freed. */
static int await_request(tfc_transport *t, tfc_transport_request *req, int64_t deadline,
                         int64_t timeout_ms, int withdraw, int64_t *step_out, tfc_error *err,
                         int *finished) {
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
            tfc_entry *a = tfc_rendezvous_find(e->slot, ENTRY_ARRIVED, e->step);
            if (a != NULL) {
                tfc_rendezvous_unlink(t, a);
                tfc_rendezvous_release(t, a->from, a->nbytes);
                tfc_rendezvous_unlink(t, e);
                pthread_mutex_unlock(&t->lock);
                return deliver(a, req->key, e->want, step_out, err);
            }
            if (tfc_transport_flag(&t->cancelled)) {
                tfc_rendezvous_unlink(t, e);
                pthread_mutex_unlock(&t->lock);
                return tfc_error_setf(err, TFC_ERR_CANCELLED, "transport recv '%s': cancelled",
                                      req->key);
            }
            if (deadline >= 0 && tfc_wire_now_ms() >= deadline) {
                if (withdraw) tfc_rendezvous_unlink(t, e);
                pthread_mutex_unlock(&t->lock);
                *finished = withdraw;
                return tfc_error_setf(err, TFC_ERR_DEADLINE_EXCEEDED,
                                      "transport recv '%s' at step %" PRId64
                                      ": nothing arrived within %" PRId64 " ms",
                                      req->key, e->step, timeout_ms);
            }
        }
        /* while a reader fills the buffer, wait for it whatever the deadline: it ends within
         * the frame's deadline, and the buffer must not be handed back while it is written */
        wait_until(t, e->state == ENTRY_FILLING ? -1 : deadline);
    }
}

/* Post `req` (t->lock taken and held on success). */
static int post_request(tfc_transport *t, tfc_transport_request *req, const char *key,
                        int64_t step, tfc_transport_tensor *tensor, tfc_error *err) {
    memset(&req->entry, 0, sizeof req->entry);
    req->key = key;
    req->entry.step = step;
    req->entry.state = ENTRY_POSTED;
    req->entry.want = tensor;
    pthread_mutex_lock(&t->lock);
    tfc_slot *slot = tfc_rendezvous_slot(t, key, 1);
    if (slot == NULL) {
        pthread_mutex_unlock(&t->lock);
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "transport recv '%s': out of "
                              "memory", key);
    }
    tfc_rendezvous_append(slot, &req->entry);
    return TFC_OK;
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
    rc = post_request(t, &req, key, step, tensor, err);
    if (rc != TFC_OK) return rc;
    int finished;
    return await_request(t, &req, deadline, timeout_ms, 1, step_out, err, &finished);
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
    rc = post_request(t, r, copy, step, tensor, err);
    if (rc != TFC_OK) {
        TFC_FREE(r), TFC_FREE(copy);
        return rc;
    }
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
    int rc = await_request(t, req, deadline, timeout_ms, 0, step_out, err, &finished);
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
            if (tfc_rendezvous_find(tfc_rendezvous_slot(t, keys[i], 0), ENTRY_ARRIVED, step) !=
                NULL) {
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
