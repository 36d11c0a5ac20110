/* The locks of variables' updates with use_locking=True (TF1's ApplyAdam(use_locking=True)...).
 *
 * A Session's programs may run concurrently on shared variables (whitepaper section 7). Updates
 * are unsynchronized (Hogwild) unless their op was created with use_locking, whose kernels then
 * hold the lock word of each variable they write (a cache line the session owns, passed in a
 * state slot, so every program of the session takes the same lock). A spin lock: updates are
 * short loops; a waiter yields its CPU after a while. Programs that never run concurrently (the
 * embeddable library, CUDA programs) get no-ops. */
#ifndef TFC_UPDATE_LOCK_H
#define TFC_UPDATE_LOCK_H

#if defined(TFC_NO_THREADS) || defined(TFC_EMBED) || defined(__CUDACC__) || \
    defined(TFC_CUDA_DEVICE_EMULATION)

static inline void tfc_update_lock(void *word) { (void)word; }
static inline void tfc_update_unlock(void *word) { (void)word; }

#else

#include <sched.h>
#include <stdatomic.h>

static inline void tfc_update_lock(void *word) {
    atomic_int *lock = (atomic_int *)word;
    for (int spins = 0;; ++spins) {
        int expected = 0;
        if (atomic_compare_exchange_weak_explicit(lock, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        if (spins >= 64) sched_yield();
    }
}

static inline void tfc_update_unlock(void *word) {
    atomic_store_explicit((atomic_int *)word, 0, memory_order_release);
}

#endif

#endif /* TFC_UPDATE_LOCK_H */
