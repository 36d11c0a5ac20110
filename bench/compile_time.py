"""How long the first Session.run of a 20-op graph takes: cold compile vs cached module.

Run: python bench/compile_time.py [--repeats 5]
Each measurement runs in a fresh process (so nothing is cached in memory): "cold" with an
empty cache directory (passes + codegen + cc, and the GEMM's paths compiled into the cache),
"new program" with only the runtime header precompiled and the GEMM's paths compiled in the
cache (as they are once any few programs were built with the same flags),
"warm" with the cache the cold run filled (passes + codegen, no compiler). Prints medians and
the spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MODEL = """
import time
import numpy as np
import tfc as tf
from tfc.backend.cc import BUILD_STATS

x = tf.placeholder(tf.float32, [None, 64], name="x")
w1 = tf.Variable(tf.random_uniform([64, 32], -0.1, 0.1, seed=1))
w2 = tf.Variable(tf.random_uniform([32, 10], -0.1, 0.1, seed=2))
b1 = tf.Variable(tf.zeros([32]))
h = tf.nn.relu(tf.matmul(x, w1) + b1)
h = tf.clip_by_value(h * 0.5 + 0.1, 0.0, 4.0)
logits = tf.matmul(h, w2)
p = tf.nn.softmax(logits)
out = tf.reduce_mean(tf.reduce_max(p, axis=1) - tf.reduce_min(p, axis=1))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())  # its own program, not timed
    feed = {x: np.ones((8, 64), np.float32)}
    start = time.perf_counter()
    sess.run(out, feed)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(100):
        sess.run(out, feed)
    again = (time.perf_counter() - start) / 100
    ops = sess._programs[next(k for k in sess._programs if k[0][0] == ((out.op.name, 0),))]
    n_ops = len(ops.lowered.steps)
print(first, again, n_ops, BUILD_STATS["compiles"])
"""


def measure(cache: str) -> tuple[float, float, int, int]:
    env = dict(os.environ, TFC_CACHE_DIR=cache, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", MODEL], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]), int(out[3])


PRECOMPILE = """
from tfc.backend import cc
cc.PCH_AFTER = 0
print(cc.precompiled_header_dir(cc.compiler(), cc.program_flags(), '#include "tfc_runtime.h"'))
if cc.GEMM_LINKED in cc.program_flags():
    cc.gemm_paths_archive(cc.compiler(), cc.program_flags())
"""


def precompile_header(cache: str) -> bool:
    """Leave the runtime header precompiled (and the GEMM's paths compiled) in `cache`; False
    where there is no precompiled header (not gcc)."""
    env = dict(os.environ, TFC_CACHE_DIR=cache, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", PRECOMPILE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    return out != "None"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from tfc.backend import cc

    linked = cc.GEMM_LINKED in cc.program_flags()
    cold, fresh, warm, steady = [], [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            if precompile_header(cache):
                fresh.append(measure(cache)[0])
        with tempfile.TemporaryDirectory() as cache:
            first, again, n_ops, compiles = measure(cache)
            # the initializer's program, the GEMM's paths (unless TFC_GEMM_INLINE), the timed one
            assert compiles == (3 if linked else 2), compiles
            cold.append(first)
            first, again, _, compiles = measure(cache)
            assert compiles == 0
            warm.append(first)
            steady.append(again)
    load = os.getloadavg()[0]
    print(f"graph: {n_ops} ops in the compiled program; load average {load:.2f} (2 cores)")
    for name, xs in [
        ("first run, cold cache (passes+codegen+cc)", cold),
        ("first run, new program, header precompiled", fresh),
        ("first run, module cached on disk", warm),
        ("later runs (steady state)", steady),
    ]:
        if not xs:
            continue
        print(
            f"{name:45s} median {statistics.median(xs) * 1e3:8.2f} ms  "
            f"(min {min(xs) * 1e3:.2f}, max {max(xs) * 1e3:.2f})"
        )


if __name__ == "__main__":
    main()
