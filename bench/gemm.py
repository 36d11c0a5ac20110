"""tfc's GEMM and the MNIST MLP training step, against the peers measured in the same run.

1. The FMA peak of one core: a C loop of independent vector FMAs (12 chains), built with the
   host flags tfc uses. Then every product of the MLP step below (forward, dW = Xt dY, dX =
   dY Wt) at each batch, against the peak measured in the same rounds, on 1 and 2 threads; and
   the GEMVs of batch-1 inference in GB/s against a plain read of the same bytes.
2. sgemm n x n x n for n = 64..1024: tfc_gemm_f32 (runtime/include/tfc_gemm.h, called from C)
   against NumPy's BLAS (OpenBLAS/MKL), one thread each; GFLOP/s and the fraction of the peak.
3. The MNIST MLP 784-512-512-10 training step (ReLU, mean sparse softmax cross entropy, Adam),
   batch 64 and 256: a tfc Session (timed by tfc.tools.profile.time_runs: a loop in C) against
   PyTorch
   eager, same weights and data; the step-1 loss of each shows they compute the same thing.
   tfc also runs with 2 threads. Then the TFC_PROFILE-style table of where tfc's time goes.

Medians over rounds, the rounds of tfc and its peers alternating; ratios are tfc's time / the
peer's (< 1: tfc is faster), of the medians and of the best rounds. The machine may be shared
(on a time-sliced vCPU even a loop of FMAs swings between rounds): the load average is printed
with the results.

Run: python bench/gemm.py [--rounds 7] [--sizes 64,128,256,512,1024] [--no-mlp] [--no-sgemm]
     python bench/gemm.py --shapes  (the per-product and GEMV tables only)
"""

from __future__ import annotations

import os

# one BLAS thread for the peers: set before NumPy / PyTorch load their libraries
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import cffi  # noqa: E402
import numpy as np  # noqa: E402

import tfc as tf  # noqa: E402
from tfc.backend.cc import build_shared_library  # noqa: E402
from tfc.tools.profile import profile, time_runs  # noqa: E402

HARNESS = r"""
#include <time.h>
#include "tfc_runtime.h"

static double tfc_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* seconds per product, over `reps` products */
double bench_sgemm(int64_t n, const float *A, const float *B, float *C, int64_t reps) {
    const double t = tfc_bench_now();
    for (int64_t r = 0; r < reps; ++r) tfc_gemm_f32(n, n, n, A, n, 1, B, n, 1, C);
    return (tfc_bench_now() - t) / (double)reps;
}

/* seconds per product C = A B (+ beta C), strided A and B, `threads` threads */
double bench_gemm_ex(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam, int64_t sak,
                     const float *B, int64_t sbk, int64_t sbn, float *C, float beta,
                     int64_t threads, int64_t reps) {
    tfc_threads_set((int)threads);
    const double t = tfc_bench_now();
    for (int64_t r = 0; r < reps; ++r)
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, beta, NULL, 0);
    const double s = (tfc_bench_now() - t) / (double)reps;
    tfc_threads_set(0);
    return s;
}

/* seconds per pass of `copies` GEMVs y = x W (x one row, W [K, N] row-major), each on the next
 * of `copies` weight matrices laid end to end (copies past the L2 size: weights from L3) */
double bench_gemv(int64_t N, int64_t K, const float *x, const float *W, int64_t copies,
                  float *y, int64_t reps) {
    const double t = tfc_bench_now();
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t c = 0; c < copies; ++c) tfc_gemm_f32(1, N, K, x, K, 1, W + c * K * N, N, 1, y);
    return (tfc_bench_now() - t) / (double)(reps * copies);
}

/* seconds per read of n floats: the same bytes as a GEMV's weights, summed in 8 vector
 * chains (what streaming them costs without the arithmetic) */
double bench_read(const float *p, int64_t n, int64_t copies, int64_t reps, float *sink) {
    enum { VL = (int)(sizeof(tfc_vf32) / sizeof(float)) };
    tfc_vf32 acc[8] = {{0}};
    const double t = tfc_bench_now();
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t c = 0; c < copies; ++c)
            for (int64_t i = 0; i + 8 * VL <= n; i += 8 * VL)
                for (int v = 0; v < 8; ++v) acc[v] += *(const tfc_vf32u *)(p + c * n + i + v * VL);
    const double s = (tfc_bench_now() - t) / (double)(reps * copies);
    for (int v = 1; v < 8; ++v) acc[0] += acc[v];
    *sink = acc[0][0];
    return s;
}

/* FLOP/s of `iters` rounds of 12 independent vector FMA chains (named locals: registers) */
double bench_fma_peak(int64_t iters, float *sink) {
    const tfc_vf32 x = (tfc_vf32){0} + 1.0000001f, y = (tfc_vf32){0} + 1e-7f;
    tfc_vf32 a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5;
    tfc_vf32 a6 = x + 6, a7 = x + 7, a8 = x + 8, a9 = x + 9, a10 = x + 10, a11 = x + 11;
    const double t = tfc_bench_now();
    for (int64_t k = 0; k < iters; ++k) {
        a0 = TFC_GEMM_FMA_f32(a0, x, y), a1 = TFC_GEMM_FMA_f32(a1, x, y);
        a2 = TFC_GEMM_FMA_f32(a2, x, y), a3 = TFC_GEMM_FMA_f32(a3, x, y);
        a4 = TFC_GEMM_FMA_f32(a4, x, y), a5 = TFC_GEMM_FMA_f32(a5, x, y);
        a6 = TFC_GEMM_FMA_f32(a6, x, y), a7 = TFC_GEMM_FMA_f32(a7, x, y);
        a8 = TFC_GEMM_FMA_f32(a8, x, y), a9 = TFC_GEMM_FMA_f32(a9, x, y);
        a10 = TFC_GEMM_FMA_f32(a10, x, y), a11 = TFC_GEMM_FMA_f32(a11, x, y);
    }
    const double s = tfc_bench_now() - t;
    const tfc_vf32 total = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    *sink = total[0];
    return 2.0 * 12 * (double)(sizeof(tfc_vf32) / sizeof(float)) * (double)iters / s;
}
"""

CDEF = """
double bench_sgemm(int64_t n, const float *A, const float *B, float *C, int64_t reps);
double bench_fma_peak(int64_t iters, float *sink);
double bench_gemm_ex(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam, int64_t sak,
                     const float *B, int64_t sbk, int64_t sbn, float *C, float beta,
                     int64_t threads, int64_t reps);
double bench_gemv(int64_t N, int64_t K, const float *x, const float *W, int64_t copies,
                  float *y, int64_t reps);
double bench_read(const float *p, int64_t n, int64_t copies, int64_t reps, float *sink);
"""


def load_harness():
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    source = "#define _POSIX_C_SOURCE 199309L\n" + HARNESS
    return ffi, ffi.dlopen(str(build_shared_library(source, name="bench_gemm")))


def median_time(fn, rounds: int) -> float:
    fn()  # warm-up
    return statistics.median(fn() for _ in range(rounds))


def fma_peak(ffi, lib, rounds: int) -> float:
    sink = ffi.new("float *")
    return max(lib.bench_fma_peak(20_000_000, sink) for _ in range(rounds)) * 1e-9  # the best


def sgemm_table(ffi, lib, sizes: list[int], rounds: int, peak: float) -> None:
    print(f"\nsgemm, 1 thread: GFLOP/s (fraction of the {peak:.1f} GFLOP/s FMA peak)")
    print(f"{'n':>6} {'tfc':>16} {'numpy BLAS':>16} {'tfc/BLAS time':>14} {'best rounds':>12}")
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        c = np.empty((n, n), np.float32)
        flops = 2.0 * n**3
        reps = max(1, int(3e9 / flops))  # rounds of ~30 ms: longer than a vCPU's time slices
        pa, pb, pc = (ffi.cast("float *", ffi.from_buffer(x)) for x in (a, b, c))

        def tfc_time(n=n, p=(pa, pb, pc), r=reps):
            return lib.bench_sgemm(n, *p, r)

        def numpy_time(a=a, b=b, c=c, reps=reps):
            t = time.perf_counter()
            for _ in range(reps):
                np.matmul(a, b, out=c)
            return (time.perf_counter() - t) / reps

        # rounds alternate between the two, so a burst of load elsewhere hits both alike
        tfc_time(), numpy_time()
        rounds_tfc, rounds_np = [], []
        for _ in range(rounds):
            rounds_tfc.append(tfc_time())
            rounds_np.append(numpy_time())
        c[:] = np.nan
        tfc_time(r=1)  # tfc's own product, checked
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3 * n**0.5)
        t_tfc, t_np = statistics.median(rounds_tfc), statistics.median(rounds_np)
        g_tfc, g_np = flops / t_tfc * 1e-9, flops / t_np * 1e-9
        print(
            f"{n:>6} {g_tfc:>8.1f} ({g_tfc / peak:4.0%}) {g_np:>8.1f} ({g_np / peak:4.0%})"
            f" {t_tfc / t_np:>13.2f}x {min(rounds_tfc) / min(rounds_np):>11.2f}x"
        )


def mlp_products(batch: int) -> list[tuple[str, int, int, int, bool, bool, float]]:
    """The MLP training step's products (name, M, N, K, A transposed, B transposed, beta) as its
    MatMul ops and their gradients call the GEMM: dW = Xt dY reduces over the batch (A stored
    [K, M]), dX = dY Wt reads W transposed (B stored [N, K])."""
    out = []
    dims = list(zip(LAYERS[:-1], LAYERS[1:]))
    for k, (i, o) in enumerate(dims):
        out.append((f"fwd x{k}.W{k}", batch, o, i, False, False, 0.0))
    for k, (i, o) in reversed(list(enumerate(dims))):
        out.append((f"dW{k} = x{k}t.dy", i, o, batch, True, False, 0.0))
        if k > 0:
            out.append((f"dx{k} = dy.W{k}t", batch, i, o, False, True, 0.0))
    return out


def shape_table(ffi, lib, batches: list[int], rounds: int) -> None:
    """Every MLP product at each batch: GFLOP/s on 1 thread and its fraction of the FMA peak
    measured in the same rounds, then 2 threads and their speedup. Best rounds, all of them: on
    a shared machine (a neighbour on the core's other hyperthread) the peak itself halves in
    some rounds, and the best rounds of both are the ones it did not."""
    print("\nMLP products: GFLOP/s of the best rounds, 1 thread (fraction of the FMA peak")
    print("measured alongside), 2 threads")
    print(f"{'batch':>5} {'product':<16} {'M':>5} {'N':>5} {'K':>5} {'1 thread':>15}"
          f" {'peak':>6} {'2 threads':>10} {'speedup':>8}")  # fmt: skip
    rng = np.random.default_rng(0)
    sink = ffi.new("float *")
    for batch in batches:
        for name, m, n, k, ta, tb, beta in mlp_products(batch):
            a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np.float32)
            b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
            c = np.zeros((m, n), np.float32)
            sam, sak = (1, m) if ta else (k, 1)
            sbk, sbn = (1, k) if tb else (n, 1)
            flops = 2.0 * m * n * k
            reps = max(1, int(1e9 / flops))
            pa, pb, pc = (ffi.cast("float *", ffi.from_buffer(x)) for x in (a, b, c))

            def timer(threads, d=(m, n, k), p=(pa, pb, pc), s=(sam, sak, sbk, sbn), x=(beta, reps)):
                return lib.bench_gemm_ex(*d, p[0], s[0], s[1], p[1], s[2], s[3], p[2], x[0],
                                         threads, x[1])  # fmt: skip

            timer(1), timer(2)
            t1s, t2s, peaks = [], [], []
            for _ in range(rounds):  # alternating, so load elsewhere hits all alike
                t1s.append(timer(1))
                peaks.append(lib.bench_fma_peak(2_000_000, sink) * 1e-9)
                t2s.append(timer(2))
            want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
            np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * k**0.5)
            t1, t2, peak = min(t1s), min(t2s), max(peaks)
            g1, g2 = flops / t1 * 1e-9, flops / t2 * 1e-9
            print(f"{batch:>5} {name:<16} {m:>5} {n:>5} {k:>5} {g1:>8.1f} ({g1 / peak:4.0%})"
                  f" {peak:>6.0f} {g2:>10.1f} {t1 / t2:>7.2f}x")  # fmt: skip


def gemv_table(ffi, lib, rounds: int) -> None:
    """Batch-1 inference's products (one row: the weights stream once, no packing) in GB/s of
    weights, with the weights in L2 (one matrix) and from L3 (16 copies, 16x past an L2 of
    2 MiB), against a plain vector read of the same bytes: a GEMV at the read's rate is
    bandwidth-bound, and no kernel can beat it by more than the arithmetic it hides."""
    print("\nGEMV (batch-1 layers): GB/s of weights read, best rounds; 'read' = a vector sum of")
    print("the same bytes")
    print(f"{'N':>5} {'K':>5} {'L2: gemv':>10} {'read':>8} {'L3: gemv':>10} {'read':>8}")
    rng = np.random.default_rng(0)
    sink = ffi.new("float *")
    for n, k in ((512, 784), (512, 512), (10, 512)):
        cells = []
        for copies in (1, 16):
            w = rng.uniform(-1, 1, copies * k * n).astype(np.float32)
            x = rng.uniform(-1, 1, k).astype(np.float32)
            y = np.zeros(n, np.float32)
            pw, px, py = (ffi.cast("float *", ffi.from_buffer(v)) for v in (w, x, y))
            reps = max(1, int(2e7 / (copies * k * n)))
            gemv = min(lib.bench_gemv(n, k, px, pw, copies, py, reps) for _ in range(rounds))
            read = min(lib.bench_read(pw, k * n, copies, reps, sink) for _ in range(rounds))
            np.testing.assert_allclose(y, x.astype(np.float64) @ w[-k * n :].reshape(k, n),
                                       rtol=1e-4, atol=1e-4 * k**0.5)  # fmt: skip
            cells += [4 * k * n / gemv * 1e-9, 4 * k * n / read * 1e-9]
        l2, l2_read, l3, l3_read = cells
        print(f"{n:>5} {k:>5} {l2:>10.1f} {l2_read:>8.1f} {l3:>10.1f} {l3_read:>8.1f}")


# -- the MNIST MLP training step ------------------------------------------------------------------
LAYERS = (784, 512, 512, 10)


def mlp_weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(LAYERS[:-1], LAYERS[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        out.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        out.append(np.zeros(fan_out, np.float32))
    return out


def mlp_flops(batch: int) -> float:
    """Forward 2*b*in*out per layer, backward twice that (the first layer's dx is not needed)."""
    total = 0.0
    for k, (i, o) in enumerate(zip(LAYERS[:-1], LAYERS[1:])):
        total += 2 * batch * i * o * (2 if k == 0 else 3)
    return total


def tfc_mlp(batch: int, threads: int, x: np.ndarray, y: np.ndarray, runs: int):
    """A timer of tfc's training step (seconds per step), the step-1 loss, the session."""
    g = tf.Graph()
    with g.as_default():
        images = tf.placeholder(tf.float32, [batch, LAYERS[0]], name="images")
        labels = tf.placeholder(tf.int64, [batch], name="labels")
        params = [tf.Variable(w) for w in mlp_weights()]
        h = images
        for k in range(0, len(params), 2):
            h = tf.matmul(h, params[k]) + params[k + 1]
            if k + 2 < len(params):
                h = tf.nn.relu(h)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h)
        loss = tf.reduce_mean(xent)
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(intra_op_parallelism_threads=threads)
    sess = tf.Session(graph=g, config=config)
    sess.run(init)
    feed = {images: x, labels: y}
    first_loss = sess.run([loss, train], feed)[0]
    return (lambda: time_runs(sess, train, feed, runs=runs)), float(first_loss), (sess, train, feed)


def torch_mlp(batch: int, x: np.ndarray, y: np.ndarray, runs: int):
    """A timer of PyTorch's training step (seconds per step), and the step-1 loss."""
    import torch

    torch.set_num_threads(1)
    ws = mlp_weights()
    layers = []
    for k in range(0, len(ws), 2):
        lin = torch.nn.Linear(ws[k].shape[0], ws[k].shape[1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(ws[k].T.copy()))
            lin.bias.copy_(torch.from_numpy(ws[k + 1]))
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    first_loss = float(step().detach())

    def timed():
        t = time.perf_counter()
        for _ in range(runs):
            step()
        return (time.perf_counter() - t) / runs

    return timed, first_loss


def mlp_table(batches: list[int], rounds: int, peak: float) -> None:
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    print("\nMNIST MLP 784-512-512-10 training step (Adam): ms/step (fraction of the FMA peak)")
    print(f"{'batch':>6} {'tfc 1 thread':>20} {'tfc 2 threads':>20} {'PyTorch eager':>20}"
          f" {'tfc/torch':>10} {'(best)':>7} {'2T speedup':>11}")  # fmt: skip
    profiled = None
    for batch in batches:
        rng = np.random.default_rng(1)
        x = rng.normal(size=(batch, LAYERS[0])).astype(np.float32)
        y = rng.integers(0, LAYERS[-1], size=batch).astype(np.int64)
        runs = max(5, int(3e9 / mlp_flops(batch)))  # rounds of ~30 ms or more
        flops = mlp_flops(batch)
        timer1, loss1, profiled = tfc_mlp(batch, 1, x, y, runs)
        timer2, _, _ = tfc_mlp(batch, 2, x, y, runs)
        timers = [timer1, timer2]
        if have_torch:
            timer_t, loss_t = torch_mlp(batch, x, y, runs)
            timers.append(timer_t)
        times: list[list[float]] = [[] for _ in timers]
        for timer in timers:  # warm-up
            timer()
        for _ in range(rounds):  # alternating, so a burst of load elsewhere hits all alike
            for k, timer in enumerate(timers):
                times[k].append(timer())
        t1, t2 = statistics.median(times[0]), statistics.median(times[1])

        def cell(t, flops=flops):
            return f"{t * 1e3:8.3f} ({flops / t * 1e-9 / peak:4.0%})"

        if have_torch:
            tt = statistics.median(times[2])
            best = min(times[0]) / min(times[2])
            torch_cell, ratio = cell(tt), f"{t1 / tt:9.2f}x {best:6.2f}x"
        else:
            torch_cell, ratio, loss_t = f"{'not installed':>20}", "", float("nan")
        print(f"{batch:>6} {cell(t1):>20} {cell(t2):>20} {torch_cell:>20} {ratio:>10}"
              f" {t1 / t2:10.2f}x   (step-1 loss tfc {loss1:.5f}, torch {loss_t:.5f})")  # fmt: skip
    if profiled is not None:
        sess, train, feed = profiled
        print()
        print(profile(sess, train, feed, runs=20).table(limit=12))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="64,128,256,384,512,768,1024")
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--no-mlp", action="store_true")
    parser.add_argument("--no-sgemm", action="store_true", help="skip the n x n x n table")
    parser.add_argument(
        "--shapes", action="store_true", help="only the MLP products' and the GEMV tables"
    )
    args = parser.parse_args()
    ffi, lib = load_harness()
    peak = fma_peak(ffi, lib, args.rounds)
    print(f"FMA peak, 1 core: {peak:.1f} GFLOP/s (load average {os.getloadavg()[0]:.2f})")
    batches = [int(b) for b in args.batches.split(",")]
    shape_table(ffi, lib, batches, args.rounds)
    gemv_table(ffi, lib, args.rounds)
    if args.shapes:
        return
    if not args.no_sgemm:
        sgemm_table(ffi, lib, [int(s) for s in args.sizes.split(",")], args.rounds, peak)
    if not args.no_mlp:
        mlp_table(batches, args.rounds, peak)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
