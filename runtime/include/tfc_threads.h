/* The thread pool of the tfc runtime: large kernels (GEMM) split their independent work items
 * between threads; small ones stay on the calling thread.
 *
 *   tfc_threads_set(n)       use n threads (the caller included); n <= 0: back to the default
 *   tfc_threads_count()      the count in force: tfc_threads_set's, else the environment
 *                            variable TFC_NUM_THREADS, else 1; 1 inside a task of a parallel
 *                            call (a nested call runs on the thread that makes it)
 *   tfc_threads_parallel_for(tasks, fn, ctx)
 *                            fn(ctx, t) for t in [0, tasks), spread over the threads; returns
 *                            when all are done. Task t always does the same work, so a result
 *                            that does not depend on the order of tasks does not depend on the
 *                            thread count either. Tasks go to the threads in turn, as each
 *                            finishes one (a thread the OS delays leaves its share to others).
 *   tfc_threads_parallel_parts(parts, fn, ctx)
 *                            the same, but part p runs on the same thread every call (the
 *                            caller runs part 0, worker w part w + 1; with more parts than
 *                            threads, thread i runs parts i, i + threads, ...): data a part
 *                            reads on every call (its share of a layer's weights) stays in
 *                            that core's caches from one call to the next. Only a worker that
 *                            has not started its part when the caller finishes its own (one
 *                            the OS has not run) leaves it to the caller.
 *   tfc_threads_parts(n)     how many parts an element-wise pass over n elements splits into:
 *                            one per thread, each of at least TFC_THREADS_ELEMENTS elements
 *                            (8,192 by default: a few microseconds of work, set above the
 *                            pool's wake-up cost without having been tuned)
 *
 * Built with TFC_THREADS_STATS (TFC_CFLAGS=-DTFC_THREADS_STATS), a program prints at exit how
 * many calls of more than one task it made and the wall time they took on the caller, whatever
 * the thread count: run on one thread, the rest of a step's time is what no thread count
 * shortens (bench/thread_scaling.py reads it). A second line gives CPU times, which other
 * processes on the machine inflate far less than wall times: the caller's in those calls, and
 * each thread's in the tasks it ran (thread 0 the caller, w + 1 worker w).
 *
 * Header-only (static functions, one pool per program that includes it): workers are started on
 * the first parallel call, poll for the next one for a while (TFC_THREADS_SPIN_US) and then sleep
 * on a condition variable. A call to polling workers costs a few atomic operations, no lock.
 * Under TFC_NO_THREADS (embedded builds) everything runs on the caller and no POSIX header is
 * used.
 */
#ifndef TFC_THREADS_H
#define TFC_THREADS_H

#include <stdint.h>

#include "tfc_fpenv.h"

#define TFC_THREADS_MAX 64

typedef void (*tfc_threads_fn)(void *ctx, int64_t task);

#ifndef TFC_THREADS_ELEMENTS
#define TFC_THREADS_ELEMENTS 8192
#endif

/* nvcc compiles CUDA programs as C++ (no C11 atomics), and so does the host compiler emulating
 * them (TFC_CUDA_DEVICE_EMULATION); their host side needs no pool */
#if defined(TFC_NO_THREADS) || defined(__CUDACC__) || defined(TFC_CUDA_DEVICE_EMULATION)

static inline void tfc_threads_set(int n) { (void)n; }
static inline int tfc_threads_count(void) { return 1; }
static inline int64_t tfc_threads_parts(int64_t elements) {
    (void)elements;
    return 1;
}
static inline void tfc_threads_parallel_for(int64_t tasks, tfc_threads_fn fn, void *ctx) {
    for (int64_t t = 0; t < tasks; ++t) fn(ctx, t);
}
static inline void tfc_threads_parallel_parts(int64_t parts, tfc_threads_fn fn, void *ctx) {
    for (int64_t t = 0; t < parts; ++t) fn(ctx, t);
}

#else

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#ifdef TFC_THREADS_STATS
#include <stdio.h>

static int64_t tfc_threads_stat_calls, tfc_threads_stat_ns, tfc_threads_stat_cpu_ns;
static int64_t tfc_threads_stat_task_ns[TFC_THREADS_MAX];
/* calls from inside a task (a worker's, or nested on the caller) are part of an outer one */
static _Thread_local int tfc_threads_stat_inside;

static inline int64_t tfc_threads_stat_clock(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline int64_t tfc_threads_stat_now(void) { return tfc_threads_stat_clock(CLOCK_MONOTONIC); }
static inline int64_t tfc_threads_stat_cpu(void) {
    return tfc_threads_stat_clock(CLOCK_THREAD_CPUTIME_ID);
}

#endif

/* how long a thread polls before it sleeps, in microseconds: kernels follow each other within
 * microseconds, and the steps of a Python loop (Session.run) within tens of them, while waking a
 * sleeping worker costs about 70 us on a virtual machine (the first product of a b=64 MLP step
 * at 2 threads: 1.27x with 4,000 pauses of polling, about 40 us here; 1.68x with 200,000). A
 * time, not a count of pauses: a pause takes 10 to 140 cycles, depending on the CPU. */
#ifndef TFC_THREADS_SPIN_US
#define TFC_THREADS_SPIN_US 500
#endif
/* how long the caller polls for the workers' parts before it sleeps: a running worker ends its
 * part about when the caller ends its own, and one that the OS has not run needs the CPU that
 * polling would take */
#ifndef TFC_THREADS_WAIT_US
#define TFC_THREADS_WAIT_US 50
#endif

static inline void tfc_threads_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* C11's clock (no POSIX feature macro needed): a step of the wall clock only ends one poll
 * early or late */
static inline int64_t tfc_threads_now_ns(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* when a thread that starts polling now for `us` microseconds stops (the clock is read every
 * 64 polls) */
static inline int64_t tfc_threads_spin_until(int64_t us) {
    return tfc_threads_now_ns() + us * 1000;
}

static inline int tfc_threads_spin_over(int spin, int64_t until) {
    return spin % 64 == 0 && tfc_threads_now_ns() > until;
}

/* The pool's state. A call publishes its function and context, then its word `call`: the
 * generation (bumped for each call), whether parts are fixed, the threads taking part, the task
 * count and, in the low 16 bits, the next task not yet taken (tasks in turn) or the parts
 * claimed (fixed parts). A thread takes a task or claims a part by a compare-and-swap of the
 * word within its generation, and reads the call's fields only after it succeeded (the call
 * cannot end before that task has run), so a worker late for a call that the others finished
 * touches nothing of it or of the next. The caller waits for `pending` (tasks not yet
 * finished) to reach 0. Polling threads see a call through the atomics alone; the mutex and
 * condition variables serve only threads that went to sleep. */
#define TFC_THREADS_GEN_SHIFT 40
#define TFC_THREADS_FIXED ((uint64_t)1 << 39)
#define TFC_THREADS_TASKS_MAX 0xFFFF /* tasks and the next task: 16 bits each */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    int started;                /* worker threads running (written only by the busy caller) */
    _Atomic int requested;      /* tfc_threads_set's count, 0: not set */
    _Atomic uint64_t call;      /* generation | fixed | parts << 32 | tasks << 16 | next */
    _Atomic int busy;           /* a call is in progress (nested or concurrent calls run inline) */
    _Atomic int sleepers;       /* workers waiting on `wake` */
    _Atomic int waiting;        /* the caller waits on `done` */
    _Atomic int64_t pending;    /* tasks of the current call not yet finished */
    tfc_threads_fn fn;
    void *ctx;
    struct {
        int id;
        uint64_t born; /* the call word when the worker was started */
    } workers[TFC_THREADS_MAX];
} tfc_threads_pool;

static inline tfc_threads_pool *tfc_threads_state(void) {
    static tfc_threads_pool pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                    .wake = PTHREAD_COND_INITIALIZER,
                                    .done = PTHREAD_COND_INITIALIZER};
    return &pool;
}

#ifdef TFC_THREADS_STATS
__attribute__((destructor)) static void tfc_threads_stat_print(void) {
    if (tfc_threads_stat_calls > 0) {
        fprintf(stderr, "tfc threads: %lld parallel calls, %.6f s in them\n",
                (long long)tfc_threads_stat_calls, (double)tfc_threads_stat_ns * 1e-9);
        fprintf(stderr, "tfc threads cpu: %.6f s in the calls; tasks by thread:",
                (double)tfc_threads_stat_cpu_ns * 1e-9);
        for (int t = 0; t <= tfc_threads_state()->started; ++t)
            fprintf(stderr, " %.6f", (double)tfc_threads_stat_task_ns[t] * 1e-9);
        fprintf(stderr, "\n");
    }
}
#endif

static inline void tfc_threads_set(int n) {
    atomic_store(&tfc_threads_state()->requested,
                 n > 0 ? (n > TFC_THREADS_MAX ? TFC_THREADS_MAX : n) : 0);
}

/* set on a thread while it runs tasks of a parallel call (for good on the workers): a call made
 * from there runs inline, so a GEMM inside a task plans for one thread */
static _Thread_local int tfc_threads_inside;

static inline int tfc_threads_count(void) {
    if (tfc_threads_inside) return 1;
    const int n = atomic_load_explicit(&tfc_threads_state()->requested, memory_order_relaxed);
    if (n > 0) return n;
    const char *env = getenv("TFC_NUM_THREADS");
    if (env == NULL || *env == '\0') return 1;
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1) return 1;
    return v > TFC_THREADS_MAX ? TFC_THREADS_MAX : (int)v;
}

static inline int64_t tfc_threads_parts(int64_t elements) {
    const int64_t most = elements / TFC_THREADS_ELEMENTS;
    if (most <= 1) return 1;
    const int64_t n = tfc_threads_count();
    return n < most ? n : most;
}

/* claims part `part` of the call whose word was `c` (its bit in the word's low 16) and runs its
 * tasks; returns how many it ran (none if another thread had claimed it or the call is over) */
static inline int64_t tfc_threads_part(tfc_threads_pool *p, uint64_t c, int64_t part) {
    const int64_t parts = (int64_t)(c >> 32 & 0x7F), tasks = (int64_t)(c >> 16 & 0xFFFF);
    const uint64_t bit = (uint64_t)1 << part;
    uint64_t w = atomic_load_explicit(&p->call, memory_order_relaxed);
    while (w >> TFC_THREADS_GEN_SHIFT == c >> TFC_THREADS_GEN_SHIFT && !(w & bit)) {
        if (atomic_compare_exchange_weak_explicit(&p->call, &w, w | bit, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            int64_t ran = 0;
            for (int64_t t = part; t < tasks; t += parts, ++ran) p->fn(p->ctx, t);
            return ran;
        }
    }
    return 0;
}

/* thread `part`'s share of the call whose word was `c`; returns how many tasks it ran. Fixed
 * parts: its own part, and on the caller (part 0) then any part no worker has claimed yet (a
 * worker the OS has not run leaves its part to the caller rather than delay the call). Tasks in
 * turn: task t taken by moving the word's low 16 bits from t to t + 1. */
static inline int64_t tfc_threads_work(tfc_threads_pool *p, uint64_t c, int part) {
    const int64_t parts = (int64_t)(c >> 32 & 0x7F), tasks = (int64_t)(c >> 16 & 0xFFFF);
    int64_t ran = 0;
    if (c & TFC_THREADS_FIXED) {
        ran = tfc_threads_part(p, c, part);
        for (int64_t q = parts - 1; part == 0 && q > 0; --q) ran += tfc_threads_part(p, c, q);
        return ran;
    }
    uint64_t w = atomic_load_explicit(&p->call, memory_order_relaxed);
    while (w >> TFC_THREADS_GEN_SHIFT == c >> TFC_THREADS_GEN_SHIFT &&
           (int64_t)(w & 0xFFFF) < tasks) {
        if (atomic_compare_exchange_weak_explicit(&p->call, &w, w + 1, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            p->fn(p->ctx, (int64_t)(w & 0xFFFF));
            ++ran;
            w = atomic_load_explicit(&p->call, memory_order_relaxed);
        }
    }
    return ran;
}

static inline void *tfc_threads_worker(void *arg) {
    tfc_threads_pool *p = tfc_threads_state();
    const int id = *(const int *)arg;
    (void)tfc_fp_flush_denormals(); /* a worker runs only compiled steps: their mode for good */
    tfc_threads_inside = 1;
#ifdef TFC_THREADS_STATS
    tfc_threads_stat_inside = 1;
#endif
    uint64_t seen = p->workers[id].born >> TFC_THREADS_GEN_SHIFT;
    for (;;) {
        uint64_t c = atomic_load_explicit(&p->call, memory_order_acquire);
        const int64_t until = tfc_threads_spin_until(TFC_THREADS_SPIN_US);
        for (int spin = 1; c >> TFC_THREADS_GEN_SHIFT == seen; ++spin) {
            tfc_threads_relax();
            if (tfc_threads_spin_over(spin, until)) break;
            c = atomic_load_explicit(&p->call, memory_order_acquire);
        }
        if (c >> TFC_THREADS_GEN_SHIFT == seen) { /* sleep: the caller wakes sleepers */
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            while ((c = atomic_load(&p->call)) >> TFC_THREADS_GEN_SHIFT == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
        }
        seen = c >> TFC_THREADS_GEN_SHIFT;
        if (id + 1 >= (int)(c >> 32 & 0x7F)) continue; /* not part of this call */
#ifdef TFC_THREADS_STATS
        const int64_t c0 = tfc_threads_stat_cpu();
#endif
        const int64_t ran = tfc_threads_work(p, c, id + 1);
#ifdef TFC_THREADS_STATS
        tfc_threads_stat_task_ns[id + 1] += tfc_threads_stat_cpu() - c0;
#endif
        if (ran > 0 && atomic_fetch_sub(&p->pending, ran) == ran && atomic_load(&p->waiting)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

static inline void tfc_threads_run(int64_t tasks, tfc_threads_fn fn, void *ctx, int fixed);

static inline void tfc_threads_call(int64_t tasks, tfc_threads_fn fn, void *ctx, int fixed) {
#ifdef TFC_THREADS_STATS
    if (tasks > 1 && !tfc_threads_stat_inside) {
        const int64_t t0 = tfc_threads_stat_now(), c0 = tfc_threads_stat_cpu();
        tfc_threads_stat_inside = 1;
        tfc_threads_run(tasks, fn, ctx, fixed);
        tfc_threads_stat_inside = 0;
        tfc_threads_stat_ns += tfc_threads_stat_now() - t0;
        tfc_threads_stat_cpu_ns += tfc_threads_stat_cpu() - c0;
        ++tfc_threads_stat_calls;
        return;
    }
#endif
    tfc_threads_run(tasks, fn, ctx, fixed);
}

static inline void tfc_threads_parallel_for(int64_t tasks, tfc_threads_fn fn, void *ctx) {
    tfc_threads_call(tasks, fn, ctx, 0);
}

static inline void tfc_threads_parallel_parts(int64_t parts, tfc_threads_fn fn, void *ctx) {
    tfc_threads_call(parts, fn, ctx, 1);
}

/* more tasks than the call word holds: calls of TFC_THREADS_TASKS_MAX tasks at a time */
typedef struct {
    tfc_threads_fn fn;
    void *ctx;
    int64_t first;
} tfc_threads_slice;

static inline void tfc_threads_slice_task(void *ctx, int64_t t) {
    const tfc_threads_slice *s = (const tfc_threads_slice *)ctx;
    s->fn(s->ctx, s->first + t);
}

static inline void tfc_threads_run(int64_t tasks, tfc_threads_fn fn, void *ctx, int fixed) {
    tfc_threads_pool *p = tfc_threads_state();
    if (tasks > TFC_THREADS_TASKS_MAX) {
        for (int64_t first = 0; first < tasks; first += TFC_THREADS_TASKS_MAX) {
            tfc_threads_slice s = {fn, ctx, first};
            const int64_t n = tasks - first;
            tfc_threads_run(n < TFC_THREADS_TASKS_MAX ? n : TFC_THREADS_TASKS_MAX,
                            tfc_threads_slice_task, &s, fixed);
        }
        return;
    }
    const int want = tasks > 1 ? tfc_threads_count() : 1;
    if (want <= 1 || atomic_exchange_explicit(&p->busy, 1, memory_order_acquire)) {
        const int inside = tfc_threads_inside;
        tfc_threads_inside = 1;
        for (int64_t t = 0; t < tasks; ++t) fn(ctx, t);
        tfc_threads_inside = inside;
        return;
    }
    const uint64_t last = atomic_load_explicit(&p->call, memory_order_relaxed);
    if (p->started < want - 1) { /* workers are only ever added: a larger count later */
        pthread_mutex_lock(&p->lock);
        while (p->started < want - 1) {
            pthread_attr_t attr;
            pthread_t id;
            pthread_attr_init(&attr);
            pthread_attr_setstacksize(&attr, (size_t)4 << 20); /* GEMM packing buffers */
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            p->workers[p->started].id = p->started;
            p->workers[p->started].born = last;
            const int rc =
                pthread_create(&id, &attr, tfc_threads_worker, &p->workers[p->started].id);
            pthread_attr_destroy(&attr);
            if (rc != 0) break; /* fewer threads than wanted: still correct */
            ++p->started;
        }
        pthread_mutex_unlock(&p->lock);
    }
    int64_t parts = want < p->started + 1 ? want : p->started + 1;
    if (parts > tasks) parts = tasks;
    if (parts <= 1) {
        for (int64_t t = 0; t < tasks; ++t) fn(ctx, t);
        atomic_store_explicit(&p->busy, 0, memory_order_release);
        return;
    }
    if (parts > 16) fixed = 0; /* one bit per part in the word's low 16 */
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, tasks, memory_order_relaxed);
    const uint64_t c = ((last >> TFC_THREADS_GEN_SHIFT) + 1) << TFC_THREADS_GEN_SHIFT |
                       (fixed ? TFC_THREADS_FIXED : 0) | (uint64_t)parts << 32 |
                       (uint64_t)tasks << 16;
    atomic_store(&p->call, c);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    tfc_threads_inside = 1;
#ifdef TFC_THREADS_STATS
    const int64_t c0 = tfc_threads_stat_cpu();
#endif
    const int64_t ran = tfc_threads_work(p, c, 0);
#ifdef TFC_THREADS_STATS
    tfc_threads_stat_task_ns[0] += tfc_threads_stat_cpu() - c0;
#endif
    tfc_threads_inside = 0;
    if (atomic_fetch_sub(&p->pending, ran) != ran) {
        const int64_t until = tfc_threads_spin_until(TFC_THREADS_WAIT_US);
        for (int spin = 1; atomic_load(&p->pending) > 0 && !tfc_threads_spin_over(spin, until);
             ++spin)
            tfc_threads_relax();
        if (atomic_load(&p->pending) > 0) {
            pthread_mutex_lock(&p->lock);
            atomic_store(&p->waiting, 1);
            while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->lock);
            atomic_store(&p->waiting, 0);
            pthread_mutex_unlock(&p->lock);
        }
    }
    atomic_store_explicit(&p->busy, 0, memory_order_release);
}

#endif /* TFC_NO_THREADS */

#endif /* TFC_THREADS_H */
