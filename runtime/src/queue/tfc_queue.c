/* Queues of tensors: see tfc_queue.h. One mutex and one condition variable per queue; every
 * change broadcasts, and each waiter re-checks its own condition. The elements live in a ring
 * (FIFO) or an array (random shuffle: swap-remove; priority: a binary heap) of pointers that
 * grows only when a failed dequeue puts back more than the capacity leaves room for. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "tfc_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int64_t priority; /* a PRIORITY queue's component 0 */
    uint64_t seq;     /* enqueue order */
    int32_t *ranks;   /* per component */
    int64_t *dims;    /* per component, back to back */
    int64_t *nbytes;  /* per component */
    char **data;      /* per component */
} elem;

struct tfc_queue {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    char label[160];
    int kind, components;
    int64_t capacity, min_after_dequeue;
    elem **items;
    int64_t slots, head, count; /* FIFO: items[(head + i) % slots]; others: head is 0 */
    uint64_t seq;
    uint64_t rng; /* splitmix64 state of a RANDOM_SHUFFLE queue */
    int enqueuing, dequeuing; /* a call holds the enqueue (dequeue) side */
    int closed, cancel_enqueues, cancelled;
    int64_t inside; /* calls between entry and return */
};

struct tfc_queue_batch {
    int components;
    int64_t count;
    elem *elems[];
};

int64_t tfc_queue_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

tfc_queue *tfc_queue_new(const char *label, int kind, int64_t capacity, int components,
                         int64_t min_after_dequeue, uint64_t seed, uint64_t seed2) {
    if (capacity < 1 || components < 1 || kind < 0 || kind > TFC_QUEUE_PRIORITY) return NULL;
    tfc_queue *q = calloc(1, sizeof *q);
    if (q == NULL) return NULL;
    q->slots = capacity;
    q->items = calloc((size_t)q->slots, sizeof *q->items);
    pthread_condattr_t attr;
    if (q->items == NULL || pthread_condattr_init(&attr) != 0) {
        free(q->items);
        free(q);
        return NULL;
    }
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&q->changed, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&q->mu, NULL);
    snprintf(q->label, sizeof q->label, "%s", label != NULL ? label : "queue");
    q->kind = kind;
    q->components = components;
    q->capacity = capacity;
    q->min_after_dequeue = min_after_dequeue > 0 ? min_after_dequeue : 0;
    q->rng = seed * 0x9E3779B97F4A7C15ull ^ (seed2 + 0xD1B54A32D192ED03ull);
    return q;
}

/* -- elements ----------------------------------------------------------------------------------- */
#define ALIGN16(x) (((x) + 15) & ~(int64_t)15)

static elem *elem_new(int components, const int32_t *ranks, const int64_t *dims,
                      const int64_t *nbytes, const void *const *data) {
    int64_t total_rank = 0, payload = 0;
    for (int c = 0; c < components; ++c) {
        total_rank += ranks[c];
        payload += ALIGN16(nbytes[c]);
    }
    const int64_t header = ALIGN16((int64_t)sizeof(elem) + components * (int64_t)sizeof(int32_t) +
                                   (total_rank + components) * (int64_t)sizeof(int64_t) +
                                   components * (int64_t)sizeof(char *));
    char *block = malloc((size_t)(header + payload));
    if (block == NULL) return NULL;
    elem *e = (elem *)block;
    char *p = block + sizeof(elem);
    e->data = (char **)p;
    p += components * sizeof(char *);
    e->dims = (int64_t *)p;
    p += total_rank * sizeof(int64_t);
    e->nbytes = (int64_t *)p;
    p += components * sizeof(int64_t);
    e->ranks = (int32_t *)p;
    memcpy(e->ranks, ranks, (size_t)components * sizeof(int32_t));
    memcpy(e->dims, dims, (size_t)total_rank * sizeof(int64_t));
    char *out = block + header;
    for (int c = 0; c < components; ++c) {
        e->nbytes[c] = nbytes[c];
        e->data[c] = out;
        if (nbytes[c] > 0) memcpy(out, data[c], (size_t)nbytes[c]);
        out += ALIGN16(nbytes[c]);
    }
    e->priority = 0;
    if (nbytes[0] == (int64_t)sizeof(int64_t)) memcpy(&e->priority, e->data[0], sizeof(int64_t));
    return e;
}

static const int64_t *elem_dims(const elem *e, int c) {
    const int64_t *d = e->dims;
    for (int k = 0; k < c; ++k) d += e->ranks[k];
    return d;
}

/* -- storage: a ring (FIFO), an array (random shuffle) or a heap (priority) of elements -------- */
static int grow(tfc_queue *q) {
    const int64_t slots = q->slots * 2;
    elem **items = malloc((size_t)slots * sizeof *items);
    if (items == NULL) return 0;
    for (int64_t i = 0; i < q->count; ++i) items[i] = q->items[(q->head + i) % q->slots];
    free(q->items);
    q->items = items;
    q->slots = slots;
    q->head = 0;
    return 1;
}

static int before(const elem *a, const elem *b) {
    return a->priority < b->priority || (a->priority == b->priority && a->seq < b->seq);
}

static void heap_up(tfc_queue *q, int64_t i) {
    while (i > 0) {
        const int64_t parent = (i - 1) / 2;
        if (!before(q->items[i], q->items[parent])) break;
        elem *t = q->items[i];
        q->items[i] = q->items[parent];
        q->items[parent] = t;
        i = parent;
    }
}

static void heap_down(tfc_queue *q, int64_t i) {
    for (;;) {
        int64_t best = i;
        const int64_t l = 2 * i + 1, r = l + 1;
        if (l < q->count && before(q->items[l], q->items[best])) best = l;
        if (r < q->count && before(q->items[r], q->items[best])) best = r;
        if (best == i) return;
        elem *t = q->items[i];
        q->items[i] = q->items[best];
        q->items[best] = t;
        i = best;
    }
}

/* Add an element at the back (front: a FIFO queue's put-back); 0 without memory. */
static int put(tfc_queue *q, elem *e, int front) {
    if (q->count == q->slots && !grow(q)) return 0;
    if (q->kind == TFC_QUEUE_FIFO) {
        if (front) {
            q->head = (q->head + q->slots - 1) % q->slots;
            q->items[q->head] = e;
        } else {
            q->items[(q->head + q->count) % q->slots] = e;
        }
        q->count++;
        return 1;
    }
    q->items[q->count++] = e;
    if (q->kind == TFC_QUEUE_PRIORITY) heap_up(q, q->count - 1);
    return 1;
}

static uint64_t next_random(tfc_queue *q) {
    uint64_t z = (q->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static elem *take(tfc_queue *q) {
    elem *e;
    if (q->kind == TFC_QUEUE_FIFO) {
        e = q->items[q->head];
        q->head = (q->head + 1) % q->slots;
    } else if (q->kind == TFC_QUEUE_RANDOM_SHUFFLE) {
        const int64_t i = (int64_t)(next_random(q) % (uint64_t)q->count);
        e = q->items[i];
        q->items[i] = q->items[q->count - 1];
    } else {
        e = q->items[0];
        q->items[0] = q->items[q->count - 1];
    }
    q->count--;
    if (q->kind == TFC_QUEUE_PRIORITY && q->count > 0) heap_down(q, 0);
    return e;
}

static int can_take(const tfc_queue *q) {
    if (q->kind == TFC_QUEUE_RANDOM_SHUFFLE && !q->closed) return q->count > q->min_after_dequeue;
    return q->count > 0;
}

/* -- waiting -------------------------------------------------------------------------------------- */
/* Wait for a change; TFC_ERR_DEADLINE_EXCEEDED once the deadline has passed. */
static int wait_change(tfc_queue *q, int64_t deadline_ns) {
    if (deadline_ns <= 0) {
        pthread_cond_wait(&q->changed, &q->mu);
        return TFC_OK;
    }
    if (tfc_queue_clock_ns() >= deadline_ns) return TFC_ERR_DEADLINE_EXCEEDED;
    struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    const int rc = pthread_cond_timedwait(&q->changed, &q->mu, &ts);
    return rc == ETIMEDOUT ? TFC_ERR_DEADLINE_EXCEEDED : TFC_OK;
}

static int fail_waiting(tfc_queue *q, int rc, const char *what, tfc_error *err) {
    if (rc == TFC_ERR_DEADLINE_EXCEEDED)
        return tfc_error_setf(err, rc, "Timed out waiting for notification: %s of %s", what,
                              q->label);
    return tfc_error_setf(err, TFC_ERR_CANCELLED, "Session has been closed: %s of %s cancelled",
                          what, q->label);
}

static void leave(tfc_queue *q) {
    q->inside--;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

/* -- the calls ------------------------------------------------------------------------------------ */
int tfc_queue_enqueue(tfc_queue *q, int64_t n, const void *const *data, const int64_t *nbytes,
                      const int32_t *ranks, const int64_t *dims, int64_t deadline_ns,
                      tfc_error *err) {
    elem **elems = n > 0 ? malloc((size_t)n * sizeof *elems) : NULL;
    if (n > 0 && elems == NULL)
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory enqueuing to %s",
                              q->label);
    for (int64_t i = 0; i < n; ++i) { /* copied before the lock is taken */
        const int64_t at = i * q->components;
        elems[i] = elem_new(q->components, ranks, dims, nbytes + at, data + at);
        if (elems[i] == NULL) {
            for (int64_t k = 0; k < i; ++k) free(elems[k]);
            free(elems);
            return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED,
                                  "out of memory enqueuing to %s", q->label);
        }
    }
    pthread_mutex_lock(&q->mu);
    q->inside++;
    int rc = TFC_OK;
    int64_t done = 0;
    if (q->cancelled) {
        rc = fail_waiting(q, TFC_ERR_CANCELLED, "enqueue", err);
    } else if (q->closed) {
        rc = tfc_error_setf(err, TFC_ERR_CANCELLED, "%s is closed.", q->label);
    } else {
        while (rc == TFC_OK && q->enqueuing && !q->cancelled && !q->cancel_enqueues)
            rc = wait_change(q, deadline_ns);
        if (rc == TFC_OK && !q->cancelled && !q->cancel_enqueues) {
            q->enqueuing = 1;
            while (done < n) {
                if (q->cancelled || q->cancel_enqueues) break;
                if (q->count < q->capacity) {
                    elems[done]->seq = q->seq++;
                    if (!put(q, elems[done], 0)) {
                        rc = tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED,
                                            "out of memory enqueuing to %s", q->label);
                        break;
                    }
                    done++;
                    pthread_cond_broadcast(&q->changed);
                    continue;
                }
                if ((rc = wait_change(q, deadline_ns)) != TFC_OK) break;
            }
            q->enqueuing = 0;
        }
        if (rc != TFC_OK) {
            rc = fail_waiting(q, rc, "enqueue", err);
        } else if (done < n && q->cancelled) {
            rc = fail_waiting(q, TFC_ERR_CANCELLED, "enqueue", err);
        } else if (done < n) {
            rc = tfc_error_setf(err, TFC_ERR_CANCELLED, "Enqueue operation was cancelled (%s "
                                "closed with cancel_pending_enqueues)", q->label);
        }
    }
    leave(q);
    for (int64_t i = done; i < n; ++i) free(elems[i]);
    free(elems);
    return rc;
}

int tfc_queue_dequeue(tfc_queue *q, int64_t n, int allow_fewer, int64_t deadline_ns,
                      tfc_queue_batch **out, tfc_error *err) {
    *out = NULL;
    tfc_queue_batch *b = malloc(sizeof *b + (size_t)(n > 0 ? n : 1) * sizeof(elem *));
    if (b == NULL)
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory dequeuing from %s",
                              q->label);
    b->components = q->components;
    b->count = 0;
    pthread_mutex_lock(&q->mu);
    q->inside++;
    int rc = TFC_OK;
    while (rc == TFC_OK && q->dequeuing && !q->cancelled) rc = wait_change(q, deadline_ns);
    if (rc == TFC_OK && !q->cancelled) {
        q->dequeuing = 1;
        while (b->count < n && !q->cancelled) {
            if (can_take(q)) {
                b->elems[b->count++] = take(q);
                pthread_cond_broadcast(&q->changed);
                continue;
            }
            if (q->closed) break; /* nothing more will come */
            if ((rc = wait_change(q, deadline_ns)) != TFC_OK) break;
        }
        q->dequeuing = 0;
    }
    if (rc == TFC_OK && q->cancelled) rc = TFC_ERR_CANCELLED;
    const int short_closed = rc == TFC_OK && b->count < n;
    if (rc != TFC_OK || (short_closed && !(allow_fewer && b->count > 0))) {
        /* put back what was taken, in its order: the queue is as if this call never ran */
        for (int64_t i = b->count - 1; i >= 0; --i) {
            if (!put(q, b->elems[i], 1)) { /* no memory for the put-back: the element is lost */
                free(b->elems[i]);
            }
        }
        if (rc != TFC_OK) {
            rc = fail_waiting(q, rc, "dequeue", err);
        } else {
            rc = tfc_error_setf(err, TFC_ERR_OUT_OF_RANGE,
                                "%s is closed and has insufficient elements (requested %lld, "
                                "current size %lld)",
                                q->label, (long long)n, (long long)q->count);
        }
        b->count = 0;
    }
    leave(q);
    if (rc != TFC_OK) {
        free(b);
        return rc;
    }
    *out = b;
    return TFC_OK;
}

int64_t tfc_queue_batch_count(const tfc_queue_batch *b) { return b->count; }

int tfc_queue_batch_dims(const tfc_queue_batch *b, int c, int64_t *dims, int cap, int *uniform) {
    *uniform = 1;
    if (b->count == 0) return 0;
    const int rank = b->elems[0]->ranks[c];
    if (rank > cap) return -2;
    memcpy(dims, elem_dims(b->elems[0], c), (size_t)rank * sizeof(int64_t));
    for (int64_t i = 1; i < b->count; ++i) {
        if (b->elems[i]->ranks[c] != rank) return -1;
        const int64_t *d = elem_dims(b->elems[i], c);
        for (int k = 0; k < rank; ++k) {
            if (d[k] != dims[k]) *uniform = 0;
            if (d[k] > dims[k]) dims[k] = d[k];
        }
    }
    return rank;
}

/* Copy one element of `rank` dims `have` into the zeroed block of dims `want` (each >= have). */
static void copy_padded(char *dst, const char *src, const int64_t *have, const int64_t *want,
                        int rank, int64_t itemsize) {
    if (rank == 0) {
        memcpy(dst, src, (size_t)itemsize);
        return;
    }
    int64_t want_stride = itemsize, have_stride = itemsize;
    for (int k = 1; k < rank; ++k) {
        want_stride *= want[k];
        have_stride *= have[k];
    }
    for (int64_t i = 0; i < have[0]; ++i)
        copy_padded(dst + i * want_stride, src + i * have_stride, have + 1, want + 1, rank - 1,
                    itemsize);
}

void tfc_queue_batch_copy(const tfc_queue_batch *b, int c, void *out, const int64_t *dims,
                          int rank, int64_t itemsize) {
    int64_t block = itemsize;
    for (int k = 0; k < rank; ++k) block *= dims[k];
    char *dst = out;
    for (int64_t i = 0; i < b->count; ++i, dst += block) {
        const elem *e = b->elems[i];
        if (e->nbytes[c] == block) {
            memcpy(dst, e->data[c], (size_t)block);
        } else {
            memset(dst, 0, (size_t)block);
            copy_padded(dst, e->data[c], elem_dims(e, c), dims, rank, itemsize);
        }
    }
}

const void *tfc_queue_batch_element(const tfc_queue_batch *b, int64_t i, int c, int64_t *nbytes) {
    *nbytes = b->elems[i]->nbytes[c];
    return b->elems[i]->data[c];
}

void tfc_queue_batch_free(tfc_queue_batch *b) {
    if (b == NULL) return;
    for (int64_t i = 0; i < b->count; ++i) free(b->elems[i]);
    free(b);
}

void tfc_queue_close(tfc_queue *q, int cancel_pending_enqueues) {
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    if (cancel_pending_enqueues) q->cancel_enqueues = 1;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

void tfc_queue_cancel(tfc_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->cancelled = 1;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

int64_t tfc_queue_size(tfc_queue *q) {
    pthread_mutex_lock(&q->mu);
    const int64_t n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int tfc_queue_is_closed(tfc_queue *q) {
    pthread_mutex_lock(&q->mu);
    const int closed = q->closed;
    pthread_mutex_unlock(&q->mu);
    return closed;
}

void tfc_queue_free(tfc_queue *q) {
    if (q == NULL) return;
    pthread_mutex_lock(&q->mu);
    q->cancelled = 1;
    pthread_cond_broadcast(&q->changed);
    while (q->inside > 0) pthread_cond_wait(&q->changed, &q->mu);
    pthread_mutex_unlock(&q->mu);
    for (int64_t i = 0; i < q->count; ++i) free(q->items[(q->head + i) % q->slots]);
    free(q->items);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
