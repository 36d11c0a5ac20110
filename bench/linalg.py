"""tfc's batched matrix_inverse and cholesky against TensorFlow and NumPy, in the same run.

Shapes (64, 8, 8) (many small matrices: per-call and per-matrix overheads dominate) and
(4, 128, 128) (a few larger ones: the arithmetic dominates), float32. For each, three times:

- tfc Session.run: the compiled program run from Python, feed in, fetch out (what a user sees);
- tfc kernel: the same program looped in C (Session.time_runs): the kernel alone;
- TensorFlow's tf.compat.v1 Session.run of the same graph, and NumPy's np.linalg.inv /
  np.linalg.cholesky on the same array (LAPACK through its batched gufunc).

One thread everywhere (tfc's default; TensorFlow's intra- and inter-op pools set to 1, NumPy's
BLAS through the environment), so the numbers compare code, not core counts. Medians over
rounds (and, in brackets, the best round), the candidates alternating within each round; ratios
are tfc's Session.run time / the peer's (< 1: tfc is faster), of the medians and of the best
rounds. The machine may be shared: the load average is printed with the results.

Run: python bench/linalg.py [--rounds 7] (with TensorFlow installed for its column; the TF
venv has tfc's dependencies: PYTHONPATH=$PWD /path/to/tf-venv/bin/python bench/linalg.py)
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import tfc  # noqa: E402

SHAPES = [(64, 8, 8), (4, 128, 128)]
OPS = {  # name: (tfc/tf function name, NumPy function, input maker)
    "matrix_inverse": ("matrix_inverse", np.linalg.inv, "general"),
    "cholesky": ("cholesky", np.linalg.cholesky, "spd"),
}


def make_input(kind: str, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    a = rng.standard_normal(shape)
    n = shape[-1]
    if kind == "spd":
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    else:
        a = a + np.sqrt(n) * np.eye(n)  # comfortably invertible
    return a.astype(np.float32)


def per_call(fn: Callable[[], object], seconds: float = 0.2) -> float:
    """Seconds per call of fn, over as many calls as fit in about `seconds` (one warm-up)."""
    fn()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls


def tfc_runner(op: str, x: np.ndarray) -> tuple[Callable, Callable, np.ndarray]:
    graph = tfc.Graph()
    with graph.as_default():
        ph = tfc.placeholder(tfc.float32, x.shape)
        y = getattr(tfc, op)(ph)
    sess = tfc.Session(graph=graph)
    value = sess.run(y, {ph: x})
    return (lambda: sess.run(y, {ph: x})), (lambda: sess.time_runs(y, {ph: x}, runs=200)), value


def tf_runner(tf, op: str, x: np.ndarray) -> tuple[Callable, np.ndarray]:
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        ph = tf1.placeholder(tf.float32, x.shape)
        y = getattr(tf1, op)(ph)
    config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    sess = tf1.Session(graph=graph, config=config)
    value = sess.run(y, {ph: x})
    return (lambda: sess.run(y, {ph: x})), value


def row(times: dict[str, list[float]]) -> str:
    """The table's columns: each candidate's median (best round) in microseconds, then tfc's
    Session.run time over TensorFlow's and over NumPy's."""
    nan = float("nan")
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    cells = [
        f"{med.get(k, nan) * 1e6:7.1f} ({best.get(k, nan) * 1e6:6.1f})"
        for k in ("tfc run", "tfc kernel", "TF run", "NumPy")
    ]
    for peer in ("TF run", "NumPy"):
        m = med["tfc run"] / med.get(peer, nan)
        b = best["tfc run"] / best.get(peer, nan)
        cells.append(f"{m:5.2f} ({b:4.2f})")
    return " ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    try:
        import tensorflow as tf

        tf.compat.v1.disable_eager_execution()
    except ImportError:
        tf = None
        print("tensorflow is not installed: its column is left out")
    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()[0]:.2f}, {args.rounds} rounds, float32, one thread,")
    print("times in microseconds: median (best round)\n")
    print(f"{'op':15} {'shape':13} {'tfc run':>16} {'tfc kernel':>16} {'TF run':>16} ", end="")
    print(f"{'NumPy':>16} {'tfc/TF':>12} {'tfc/NumPy':>12}")
    for name, (op, numpy_fn, kind) in OPS.items():
        for shape in SHAPES:
            x = make_input(kind, shape, rng)
            run_tfc, loop_tfc, got = tfc_runner(op, x)
            want = numpy_fn(x.astype(np.float64))
            # the same answer, to float32 rounding: the timings compare equal work
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
            candidates: dict[str, Callable] = {
                "tfc run": run_tfc,
                "tfc kernel": loop_tfc,
                "NumPy": lambda x=x, f=numpy_fn: f(x),
            }
            if tf is not None:
                run_tf, tf_value = tf_runner(tf, op, x)
                np.testing.assert_allclose(
                    tf_value, want, rtol=1e-3, atol=1e-4 * np.abs(want).max()
                )
                candidates["TF run"] = run_tf
            times: dict[str, list[float]] = {k: [] for k in candidates}
            for _ in range(args.rounds):
                for label, fn in candidates.items():
                    times[label].append(fn() if label == "tfc kernel" else per_call(fn))
            print(f"{name:15} {str(shape):13} {row(times)}")
    print(f"\nload average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
