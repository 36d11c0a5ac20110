/* The thread pool of the tfc runtime: large kernels (GEMM) split their independent work items
 * between threads; small ones stay on the calling thread.
 *
 *   tfc_threads_set(n)       use n threads (the caller included); n <= 0: back to the default
 *   tfc_threads_count()      the count in force: tfc_threads_set's, else the environment
 *                            variable TFC_NUM_THREADS, else 1
 *   tfc_threads_parallel_for(tasks, fn, ctx)
 *                            fn(ctx, t) for t in [0, tasks), spread over the threads; returns
 *                            when all are done. Task t always does the same work, so a result
 *                            that does not depend on the order of tasks does not depend on the
 *                            thread count either.
 *
 * Header-only (static functions, one pool per program that includes it): workers are started on
 * the first parallel call and sleep on a condition variable between calls. Under
 * TFC_NO_THREADS (embedded builds) everything runs on the caller and no POSIX header is used.
 */
#ifndef TFC_THREADS_H
#define TFC_THREADS_H

#include <stdint.h>

#include "tfc_fpenv.h"

#define TFC_THREADS_MAX 64

typedef void (*tfc_threads_fn)(void *ctx, int64_t task);

/* nvcc compiles CUDA programs as C++ (no C11 atomics), and so does the host compiler emulating
 * them (TFC_CUDA_DEVICE_EMULATION); their host side needs no pool */
#if defined(TFC_NO_THREADS) || defined(__CUDACC__) || defined(TFC_CUDA_DEVICE_EMULATION)

static inline void tfc_threads_set(int n) { (void)n; }
static inline int tfc_threads_count(void) { return 1; }
static inline void tfc_threads_parallel_for(int64_t tasks, tfc_threads_fn fn, void *ctx) {
    for (int64_t t = 0; t < tasks; ++t) fn(ctx, t);
}

#else

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* how long a thread polls before it sleeps: kernels follow each other within microseconds, and
 * a condition-variable wake-up costs about as much as a small GEMM */
#ifndef TFC_THREADS_SPIN
#define TFC_THREADS_SPIN 4000
#endif

static inline void tfc_threads_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    int started;         /* worker threads running */
    int requested;       /* tfc_threads_set's count, 0: not set */
    _Atomic int64_t generation; /* bumped for each parallel call */
    int64_t born;        /* the generation new workers start after */
    tfc_threads_fn fn;
    void *ctx;
    int64_t tasks, next; /* the current call's tasks and the next one not yet taken */
    _Atomic int64_t pending; /* tasks not yet finished */
    int busy;            /* a parallel call is in progress (nested or concurrent calls run inline) */
    int active;          /* workers 0..active-1 take part in the current call */
    int ids[TFC_THREADS_MAX];
} tfc_threads_pool;

static inline tfc_threads_pool *tfc_threads_state(void) {
    static tfc_threads_pool pool = {PTHREAD_MUTEX_INITIALIZER,
                                    PTHREAD_COND_INITIALIZER,
                                    PTHREAD_COND_INITIALIZER,
                                    0, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, 0, {0}};
    return &pool;
}

static inline void tfc_threads_set(int n) {
    tfc_threads_pool *p = tfc_threads_state();
    pthread_mutex_lock(&p->lock);
    p->requested = n > 0 ? (n > TFC_THREADS_MAX ? TFC_THREADS_MAX : n) : 0;
    pthread_mutex_unlock(&p->lock);
}

static inline int tfc_threads_count(void) {
    tfc_threads_pool *p = tfc_threads_state();
    pthread_mutex_lock(&p->lock);
    int n = p->requested;
    pthread_mutex_unlock(&p->lock);
    if (n > 0) return n;
    const char *env = getenv("TFC_NUM_THREADS");
    if (env == NULL || *env == '\0') return 1;
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1) return 1;
    return v > TFC_THREADS_MAX ? TFC_THREADS_MAX : (int)v;
}

/* take and run tasks of the current call until none is left; called with the lock held */
static inline void tfc_threads_drain(tfc_threads_pool *p) {
    while (p->next < p->tasks) {
        const int64_t t = p->next++;
        tfc_threads_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->lock);
        fn(ctx, t);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0) pthread_cond_broadcast(&p->done);
    }
}

static inline void *tfc_threads_worker(void *arg) {
    tfc_threads_pool *p = tfc_threads_state();
    const int id = *(const int *)arg;
    (void)tfc_fp_flush_denormals(); /* a worker runs only compiled steps: their mode for good */
    pthread_mutex_lock(&p->lock);
    int64_t seen = p->born;
    pthread_mutex_unlock(&p->lock);
    for (;;) {
        for (int spin = 0; spin < TFC_THREADS_SPIN && atomic_load(&p->generation) == seen; ++spin)
            tfc_threads_relax();
        pthread_mutex_lock(&p->lock);
        while (p->generation == seen) pthread_cond_wait(&p->wake, &p->lock);
        seen = p->generation;
        if (id < p->active) tfc_threads_drain(p);
        pthread_mutex_unlock(&p->lock);
    }
    return NULL;
}

static inline void tfc_threads_parallel_for(int64_t tasks, tfc_threads_fn fn, void *ctx) {
    tfc_threads_pool *p = tfc_threads_state();
    const int want = tfc_threads_count();
    pthread_mutex_lock(&p->lock);
    if (tasks <= 1 || want <= 1 || p->busy) {
        pthread_mutex_unlock(&p->lock);
        for (int64_t t = 0; t < tasks; ++t) fn(ctx, t);
        return;
    }
    while (p->started < want - 1) { /* workers are only ever added: a larger count later */
        pthread_attr_t attr;
        pthread_t id;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, (size_t)4 << 20); /* GEMM packing buffers */
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        p->ids[p->started] = p->started;
        p->born = p->generation;
        const int rc = pthread_create(&id, &attr, tfc_threads_worker, &p->ids[p->started]);
        pthread_attr_destroy(&attr);
        if (rc != 0) break; /* fewer threads than wanted: still correct */
        ++p->started;
    }
    p->busy = 1;
    p->active = want - 1;
    p->fn = fn;
    p->ctx = ctx;
    p->tasks = tasks;
    p->next = 0;
    p->pending = tasks;
    ++p->generation;
    pthread_cond_broadcast(&p->wake);
    tfc_threads_drain(p);
    while (p->pending > 0) {
        pthread_mutex_unlock(&p->lock);
        for (int spin = 0; spin < TFC_THREADS_SPIN && atomic_load(&p->pending) > 0; ++spin)
            tfc_threads_relax();
        pthread_mutex_lock(&p->lock);
        if (p->pending > 0) pthread_cond_wait(&p->done, &p->lock);
    }
    p->busy = 0;
    pthread_mutex_unlock(&p->lock);
}

#endif /* TFC_NO_THREADS */

#endif /* TFC_THREADS_H */
