"""What splitting each product of the MNIST MLP step between two threads costs, in CPU time.

    python bench/gemm_threads.py [--reps 30]

For each product (the forward ones at batch 256 and 64, a weight gradient's 144-row block and
its half of the columns, an input gradient's block and its half, the two GEMVs of batch-1
inference) a child process built with TFC_THREADS_STATS runs it `--reps` times on 1 thread,
timing the calling thread's CPU time, then `--reps` times on 2 threads; the pool's exit report
gives the CPU time each thread spent in its tasks. CPU times are what another process on a
shared machine inflates least (wall times at 2 threads mean little there), so:

- split cost: the two threads' task CPU time together over the 1-thread CPU time: what the
  split adds (an operand packed by both threads, caches filled twice); 1.00 is free;
- balance: the busier thread's time over the mean (a thread the OS did not run in time leaves
  its part to the caller, which shows here on a loaded machine);
- predicted: the 1-thread time over the busier thread's: the speedup on two idle cores,
  without the wake-ups and the two cores' contention for memory; "balanced": 2 / split cost,
  the same with the parts on time (what an idle machine gives the equal parts).

The halves of the column blocks ("/2") are what a thread of a fused kernel split by columns
computes on its own (fused_cols.c.j2): twice their 1-thread time over the whole block's is
that kernel's split cost.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tfc.backend.cc import HOST_FLAGS, compiler, runtime_dir  # noqa: E402

MAIN = r"""
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include "tfc_gemm.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* M N K ta tb reps: C = op(A) op(B) (+ bias when A is not transposed) */
int main(int argc, char **argv) {
    if (argc != 7) return 2;
    const int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
    const int ta = atoi(argv[4]), tb = atoi(argv[5]), reps = atoi(argv[6]);
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C = malloc(sizeof(float) * M * N), *bias = malloc(sizeof(float) * N);
    for (int64_t i = 0; i < M * K; ++i) A[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < K * N; ++i) B[i] = (float)(i % 5) * 0.1f;
    for (int64_t i = 0; i < N; ++i) bias[i] = 0.01f;
    const int64_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
    const float *b = ta ? NULL : bias;
    tfc_threads_set(1);
    tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, 0.0f, b, 0); /* warm-up */
    const double t0 = cpu_now();
    for (int r = 0; r < reps; ++r)
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, 0.0f, b, 0);
    printf("%.9f\n", (cpu_now() - t0) / reps);
    tfc_threads_set(2);
    for (int r = 0; r < reps; ++r)
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, 0.0f, b, 0);
    free(A), free(B), free(C), free(bias);
    return 0;
}
"""

# name, M, N, K, A transposed, B transposed
PRODUCTS = [
    ("forward 256x512x784", 256, 512, 784, 0, 0),
    ("forward 256x512x512", 256, 512, 512, 0, 0),
    ("forward 64x512x784", 64, 512, 784, 0, 0),
    ("dW block 144x512x256 (X^T dY)", 144, 512, 256, 1, 0),
    ("dW block/2 144x256x256", 144, 256, 256, 1, 0),
    ("dX block 144x512x512 (dY W^T)", 144, 512, 512, 0, 1),
    ("dX block/2 144x256x512", 144, 256, 512, 0, 1),
    ("GEMV 1x512x784", 1, 512, 784, 0, 0),
    ("GEMV 1x512x512", 1, 512, 512, 0, 0),
]


def measure(binary: Path, product: tuple, reps: int) -> dict:
    _, m, n, k, ta, tb = product
    reps = reps * 50 if m == 1 else reps
    proc = subprocess.run(
        [str(binary), str(m), str(n), str(k), str(ta), str(tb), str(reps)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    one = float(proc.stdout.split()[0])
    cpu = next(line for line in proc.stderr.splitlines() if line.startswith("tfc threads cpu:"))
    tasks = [float(v) / reps for v in cpu.split("thread:")[1].split()]
    return {"one": one, "tasks": tasks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = Path(tmp) / "split.c", Path(tmp) / "split"
        source.write_text(MAIN)
        subprocess.run(
            [compiler(), "-std=c11", *HOST_FLAGS, "-DTFC_THREADS_STATS", "-I",
             str(runtime_dir() / "include"), str(source), "-o", str(binary), "-lm", "-pthread"],
            check=True,
        )  # fmt: skip
        print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print(
            "| product | 1 thread us (CPU) | 2 threads: tasks us by thread | split cost "
            "| balance | predicted | balanced |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for product in PRODUCTS:
            r = measure(binary, product, args.reps)
            tasks = r["tasks"]
            busiest = max(tasks)
            print(
                f"| {product[0]} | {r['one'] * 1e6:.1f} "
                f"| {' / '.join(f'{t * 1e6:.1f}' for t in tasks)} | {sum(tasks) / r['one']:.3f} "
                f"| {busiest / (sum(tasks) / len(tasks)):.2f} | {r['one'] / busiest:.2f}x "
                f"| {len(tasks) * r['one'] / sum(tasks):.2f}x |",
                flush=True,
            )
        print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
