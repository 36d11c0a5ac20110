"""The GEMM's paths linked from one archive (the default) against compiled into each program
(TFC_GEMM_INLINE=1): what the Session's programs lose at run time, and what they save in gcc.

    python bench/gemm_linked.py [--rounds 9]

MLPs (MNIST 784-512-512-10 and Iris 4-10-10-3; Adam training steps and inference) at one
thread. Each graph is compiled both ways in this one process, the programs run by the Session's
C timing loop (tfc.tools.profile.time_runs), rounds interleaved (each round times both, in
alternating order) so a drifting load weighs on both; the table gives the medians and the
ratio linked / inline (< 1: linking is faster), of the medians and of the best rounds, and the
fetched values are checked to be the same bits. Then the compile time of each graph's program
both ways (a new cache, the runtime header precompiled and the archive built first: the time
of a new program once a few were built), and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import tfc as tf
from tfc.backend import cc
from tfc.tools.profile import time_runs

CASES = [  # name, layer sizes, batch, training, runs per timing
    ("MNIST MLP training step, b=64", [784, 512, 512, 10], 64, True, 20),
    ("MNIST MLP training step, b=256", [784, 512, 512, 10], 256, True, 6),
    ("MNIST MLP inference, b=1", [784, 512, 512, 10], 1, False, 400),
    ("MNIST MLP inference, b=64", [784, 512, 512, 10], 64, False, 40),
    ("Iris MLP training step, b=32", [4, 10, 10, 3], 32, True, 3000),
    ("Iris MLP inference, b=1", [4, 10, 10, 3], 1, False, 5000),
]
MODES = {"linked": "0", "inline": "1"}  # TFC_GEMM_INLINE
ONE_THREAD = tf.ConfigProto(intra_op_parallelism_threads=1)


def mlp(sizes: list[int], batch: int, train: bool):
    """The graph, the op to run (the Adam step or the logits), its initializer and a feed."""
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [batch, sizes[0]])
        y = tf.placeholder(tf.int32, [batch])
        h = x
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = tf.Variable(rng.randn(a, b).astype(np.float32) * 0.05)
            h = tf.matmul(h, w) + tf.Variable(np.zeros(b, np.float32))
            if i < len(sizes) - 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        op = tf.train.AdamOptimizer(1e-3).minimize(loss) if train else h
        init = tf.global_variables_initializer()
    feed = {x: rng.rand(batch, sizes[0]).astype(np.float32), y: rng.randint(0, sizes[-1], batch)}
    return graph, op, init, feed, loss


def set_mode(mode: str) -> None:
    os.environ["TFC_GEMM_INLINE"] = MODES[mode]


def run_times(rounds: int) -> None:
    print(f"{'workload':34s} {'linked ms':>10s} {'inline ms':>10s} {'ratio':>6s} {'best':>6s}")
    for name, sizes, batch, train, runs in CASES:
        graph, op, init, feed, loss = mlp(sizes, batch, train)
        sessions, values = {}, {}
        for mode in MODES:
            set_mode(mode)
            sess = sessions[mode] = tf.Session(graph=graph, config=ONE_THREAD)
            sess.run(init)
            values[mode] = sess.run([loss, op] if train else op, feed)  # compiled in this mode
        if train:  # the step-1 loss, and the same state after it: the same bits
            assert values["linked"][0].tobytes() == values["inline"][0].tobytes(), name
        else:
            assert values["linked"].tobytes() == values["inline"].tobytes(), name
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        for r in range(rounds):
            for mode in list(MODES)[:: 1 if r % 2 else -1]:
                set_mode(mode)
                times[mode].append(time_runs(sessions[mode], op, feed, runs=runs))
        med = {mode: statistics.median(t) for mode, t in times.items()}
        print(
            f"{name:34s} {med['linked'] * 1e3:10.4f} {med['inline'] * 1e3:10.4f} "
            f"{med['linked'] / med['inline']:6.3f} "
            f"{min(times['linked']) / min(times['inline']):6.3f}",
            flush=True,
        )


def compile_times() -> None:
    print(f"\n{'program compiled (new, header precompiled)':44s} {'linked s':>9s} {'inline s':>9s}")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TFC_CACHE_DIR"] = cache
        cc.PCH_AFTER = 0
        for mode in MODES:
            set_mode(mode)
            flags = cc.program_flags()
            cc.precompiled_header_dir(cc.compiler(), flags, '#include "tfc_runtime.h"')
            if cc.GEMM_LINKED in flags:
                start = time.perf_counter()
                cc.gemm_paths_archive(cc.compiler(), flags)
                print(f"{'the archive of the paths, once per flag set':44s} "
                      f"{time.perf_counter() - start:9.2f}")  # fmt: skip
        for name, sizes, batch, train, _ in CASES:
            graph, op, init, feed, _ = mlp(sizes, batch, train)
            seconds = {}
            for mode in MODES:
                set_mode(mode)
                sess = tf.Session(graph=graph, config=ONE_THREAD)
                sess.run(init)
                start = time.perf_counter()
                sess.run(op, feed)
                seconds[mode] = time.perf_counter() - start
            print(f"{name:44s} {seconds['linked']:9.2f} {seconds['inline']:9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    run_times(args.rounds)
    compile_times()
    print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after (1 thread used)")


if __name__ == "__main__":
    main()
