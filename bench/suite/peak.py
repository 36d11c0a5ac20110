"""The FMA peak of one core, measured: a C loop of 12 independent chains of vector FMAs (GCC/Clang
vector extensions), built with `cc -O2 -march=native`, once with 32-byte vectors (AVX2) and once
with 64-byte ones (AVX-512 where the CPU has it; elsewhere they split into pairs and spill, so
that build is slower and does not count). Each runs for about 0.1 s of CPU time five times,
timed by the thread's CPU clock, so a busy machine's time slicing does not lower it; the best
run counts (a peak is what the core can do)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef VEC_BYTES
#define VEC_BYTES 32
#endif
#define LANES (VEC_BYTES / 4)
typedef float v8 __attribute__((vector_size(VEC_BYTES)));

/* CPU time of this thread: on a shared machine the time slices other processes take from
   this one do not count against the core's rate */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 12 independent accumulators in registers: more chains than FMA latency x FMA units */
#define FMA12                                                                              \
    x0 = x0 * a + b; x1 = x1 * a + b; x2 = x2 * a + b; x3 = x3 * a + b;                      \
    x4 = x4 * a + b; x5 = x5 * a + b; x6 = x6 * a + b; x7 = x7 * a + b;                      \
    x8 = x8 * a + b; x9 = x9 * a + b; x10 = x10 * a + b; x11 = x11 * a + b;

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 10000000L;
    volatile float seed = 1.0f;
    float s = seed;
    v8 a = {0}, b = {0};
    a += 0.999999f * s;
    b += 1e-7f * s;
    v8 x0 = a + s, x1 = a + 2 * s, x2 = a + 3 * s, x3 = a + 4 * s, x4 = a + 5 * s,
       x5 = a + 6 * s, x6 = a + 7 * s, x7 = a + 8 * s, x8 = a + 9 * s, x9 = a + 10 * s,
       x10 = a + 11 * s, x11 = a + 12 * s;
    double t0 = now();
    for (long i = 0; i < iters; ++i) {
        FMA12
    }
    double t = now() - t0;
    v8 sum = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;
    printf("%.6f %.6g\n", (double)iters * 12 * LANES * 2 / t / 1e9, (double)sum[0]);
    return 0;
}
"""


def measure(runs: int = 5, seconds: float = 0.1, cc: str = "cc") -> dict:
    """{"gflops": best GFLOP/s of one core, "vector_bytes": the width that reached it,
    "runs": {width: [GFLOP/s, ...]}, "flags": ...}; gflops is None with a "reason" when no C
    compiler works."""
    best = {"gflops": None, "reason": "no build of the FMA loop ran", "runs": {}}
    with tempfile.TemporaryDirectory(prefix="tfc-bench-peak-") as tmp:
        src = Path(tmp) / "peak.c"
        src.write_text(SOURCE)
        for width in (32, 64):
            exe = Path(tmp) / f"peak{width}"
            for flags in (["-O2", "-march=native", "-ffp-contract=fast"], ["-O2"]):
                proc = subprocess.run(
                    [cc, *flags, f"-DVEC_BYTES={width}", str(src), "-o", str(exe)],
                    capture_output=True,
                    text=True,
                )
                if proc.returncode == 0:
                    break
            else:
                best["reason"] = f"{cc} failed: {proc.stderr.strip()[:200]}"
                continue
            flops_per_iter = 12 * (width // 4) * 2
            probe = _run(exe, 100_000)
            iters = max(1000, int(seconds * probe * 1e9 / flops_per_iter))
            rates = [_run(exe, iters) for _ in range(runs)]
            best["runs"][width] = rates
            if best["gflops"] is None or max(rates) > best["gflops"]:
                best.update(gflops=max(rates), vector_bytes=width, flags=" ".join(flags))
                best.pop("reason", None)
    return best


def _run(exe: Path, iters: int) -> float:
    out = subprocess.run([str(exe), str(iters)], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[0])
