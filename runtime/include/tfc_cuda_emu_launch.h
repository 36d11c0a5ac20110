/* CUDA device emulation, part 2 (included by tfc_cuda_emu.h): kernel launches on the CPU.
 *
 * A grid's blocks run one after another in the calling thread. A block's thread 0 runs first as
 * a fiber; if it ends without a barrier the others run directly, one after another (most
 * kernels: no stack switch per thread). If it stops at __syncthreads(), every thread of the block
 * becomes a fiber with its own stack, and the block runs in rounds: each round resumes, in thread
 * order, every thread waiting at a barrier, until it reaches the next barrier or ends. Threads
 * that ended count as arrived (as on Volta and later GPUs).
 *
 * Fibers are ucontext contexts; stacks are mmap'd once (a guard page below each) and reused.
 * Under AddressSanitizer every switch is announced with __sanitizer_start/finish_switch_fiber,
 * so ASan knows which stack is live and checks the kernels' stack accesses on the fibers too. */
#ifndef TFC_CUDA_EMU_LAUNCH_H
#define TFC_CUDA_EMU_LAUNCH_H

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define TFC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TFC_EMU_ASAN 1
#endif
#endif
#ifdef TFC_EMU_ASAN
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                               size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
#endif

#define TFC_EMU_MAX_THREADS 1024   /* per block, as on every CUDA GPU */
#define TFC_EMU_STACK (256 * 1024) /* per GPU thread: generous (ASan's redzones), touched lazily */

enum { TFC_EMU_ON_HOST, TFC_EMU_AS_FIBERS, TFC_EMU_DIRECTLY };
enum { TFC_EMU_RUNNING, TFC_EMU_AT_BARRIER, TFC_EMU_ENDED };

typedef struct {
    ucontext_t ctx;
    char *stack; /* the mapping: a guard page, then TFC_EMU_STACK bytes */
    int state;
    void *fake_stack; /* ASan's fake stack of the fiber while it is switched out */
} tfc_emu_fiber;

static struct {
    void (*run)(const void *); /* the kernel call of the current launch ... */
    const void *body;          /* ... and its arguments */
    int mode;
    unsigned current; /* the running thread's index within its block */
    dim3 threads;
    tfc_emu_fiber *fibers[TFC_EMU_MAX_THREADS];
    ucontext_t host;
    void *host_fake_stack;
    const void *host_stack;
    size_t host_stack_size;
} tfc_emu;

static inline size_t tfc_emu_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static inline void tfc_emu_set_thread(unsigned i) {
    tfc_emu.current = i;
    threadIdx.x = i % tfc_emu.threads.x;
    threadIdx.y = i / tfc_emu.threads.x % tfc_emu.threads.y;
    threadIdx.z = i / (tfc_emu.threads.x * tfc_emu.threads.y);
}

static void tfc_emu_die(const char *why) {
    fprintf(stderr,
            "tfc CUDA device emulation: %s (block (%u,%u,%u), thread (%u,%u,%u))\n", why,
            blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    abort();
}

static tfc_emu_fiber *tfc_emu_fiber_of(unsigned i) {
    if (tfc_emu.fibers[i] == NULL) {
        tfc_emu_fiber *f = (tfc_emu_fiber *)calloc(1, sizeof(tfc_emu_fiber));
        void *stack = mmap(NULL, TFC_EMU_STACK + tfc_emu_page(), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (f == NULL || stack == MAP_FAILED) tfc_emu_die("no memory for a GPU thread's stack");
        mprotect(stack, tfc_emu_page(), PROT_NONE); /* an overflow faults, not corrupts */
        f->stack = (char *)stack;
        tfc_emu.fibers[i] = f;
    }
    return tfc_emu.fibers[i];
}

/* From the host's context into fiber i (started or waiting at a barrier), until it yields. */
static void tfc_emu_resume(unsigned i) {
    tfc_emu_fiber *f = tfc_emu.fibers[i];
    tfc_emu_set_thread(i);
    f->state = TFC_EMU_RUNNING;
#ifdef TFC_EMU_ASAN
    __sanitizer_start_switch_fiber(&tfc_emu.host_fake_stack, f->stack + tfc_emu_page(),
                                   TFC_EMU_STACK);
#endif
    swapcontext(&tfc_emu.host, &f->ctx);
#ifdef TFC_EMU_ASAN
    __sanitizer_finish_switch_fiber(tfc_emu.host_fake_stack, NULL, NULL);
#endif
}

/* From the running fiber back to the host: at a barrier (resumed later) or at its end. */
static void tfc_emu_yield(int state) {
    tfc_emu_fiber *f = tfc_emu.fibers[tfc_emu.current];
    f->state = state;
#ifdef TFC_EMU_ASAN
    /* an ended fiber is never resumed (the next one starts afresh): ASan may drop its frames */
    __sanitizer_start_switch_fiber(state == TFC_EMU_ENDED ? NULL : &f->fake_stack,
                                   tfc_emu.host_stack, tfc_emu.host_stack_size);
#endif
    swapcontext(&f->ctx, &tfc_emu.host);
#ifdef TFC_EMU_ASAN
    __sanitizer_finish_switch_fiber(f->fake_stack, NULL, NULL);
#endif
}

static void tfc_emu_fiber_main(void) {
#ifdef TFC_EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &tfc_emu.host_stack, &tfc_emu.host_stack_size);
#endif
    tfc_emu.run(tfc_emu.body);
    tfc_emu_yield(TFC_EMU_ENDED);
    tfc_emu_die("an ended GPU thread was resumed"); /* never: ended fibers are restarted */
}

static void tfc_emu_start(unsigned i) {
    tfc_emu_fiber *f = tfc_emu_fiber_of(i);
    if (getcontext(&f->ctx) != 0) tfc_emu_die("getcontext failed");
    f->ctx.uc_stack.ss_sp = f->stack + tfc_emu_page();
    f->ctx.uc_stack.ss_size = TFC_EMU_STACK;
    f->ctx.uc_link = NULL;
    makecontext(&f->ctx, tfc_emu_fiber_main, 0);
    tfc_emu_resume(i);
}

static inline void __syncthreads(void) {
    if (tfc_emu.mode == TFC_EMU_AS_FIBERS) {
        tfc_emu_yield(TFC_EMU_AT_BARRIER);
    } else if (tfc_emu.mode == TFC_EMU_DIRECTLY) {
        /* on a GPU, a barrier only some threads of a block reach is undefined behaviour too */
        tfc_emu_die("__syncthreads() reached by a thread whose block's thread 0 ended without "
                    "one: a divergent barrier, which the emulation cannot interleave");
    }
}

static void tfc_emu_run_block(unsigned n) {
    tfc_emu.mode = TFC_EMU_AS_FIBERS;
    tfc_emu_start(0);
    if (tfc_emu.fibers[0]->state == TFC_EMU_ENDED) {
        tfc_emu.mode = TFC_EMU_DIRECTLY;
        for (unsigned i = 1; i < n; ++i) {
            tfc_emu_set_thread(i);
            tfc_emu.run(tfc_emu.body);
        }
        return;
    }
    for (unsigned i = 1; i < n; ++i) tfc_emu_start(i);
    for (bool waiting = true; waiting;) {
        waiting = false;
        for (unsigned i = 0; i < n; ++i) {
            if (tfc_emu.fibers[i]->state == TFC_EMU_AT_BARRIER) {
                waiting = true;
                tfc_emu_resume(i);
            }
        }
    }
}

static void tfc_emu_run_grid(dim3 blocks, dim3 threads, void (*run)(const void *),
                             const void *body) {
    const unsigned long long n = (unsigned long long)threads.x * threads.y * threads.z;
    if (n == 0 || n > TFC_EMU_MAX_THREADS || blocks.x == 0 || blocks.y == 0 || blocks.z == 0) {
        if (tfc_emu_last_error == cudaSuccess) tfc_emu_last_error = cudaErrorInvalidConfiguration;
        return;
    }
    tfc_emu.run = run;
    tfc_emu.body = body;
    tfc_emu.threads = threads;
    blockDim = threads;
    gridDim = blocks;
    for (unsigned z = 0; z < blocks.z; ++z) {
        for (unsigned y = 0; y < blocks.y; ++y) {
            for (unsigned x = 0; x < blocks.x; ++x) {
                blockIdx.x = x, blockIdx.y = y, blockIdx.z = z;
                tfc_emu_run_block((unsigned)n);
            }
        }
    }
    tfc_emu.mode = TFC_EMU_ON_HOST;
}

#endif /* TFC_CUDA_EMU_LAUNCH_H */
