"""An LSTM classifier's training step, tfc against its peers (issue 15's benchmark).

The model: 28 steps of 28 inputs (sequence MNIST's shape), an LSTM of 128 units, a dense layer
to 10 classes on the last output, the mean sparse softmax cross entropy and one Adam step;
batch 64, 1 thread.

tfc builds it as TF1 programs do (BasicLSTMCell, dynamic_rnn: a compiled while loop, its
gradient a second loop running backwards) and is timed by Session.time_runs (the compiled
program run by a loop in C); the peers run the same model and step as their users write it:
PyTorch eager (nn.LSTM, Adam), JAX jit (lax.scan over the cell, optax-free Adam written out)
and TensorFlow 1 graph mode (the tfc program, run by tf.compat.v1.Session). A peer that is not
installed is reported as such. Every framework starts from the same weights and batch, and
their first-step losses are checked against each other. Times are medians over rounds that
alternate between the frameworks: wall time, and the process's CPU time (on a loaded shared
machine the wall time mostly measures waiting for a core; the CPU time, one thread, what the
step costs). The load average is printed before and after.

Run: python bench/lstm_train.py [--rounds 7] [--runs 20] [--batch 64] [--units 128]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

STEPS, INPUTS, CLASSES = 28, 28, 10
LR = 0.001


def initial_weights(units: int, seed: int = 0) -> dict[str, np.ndarray]:
    """TF1's layout: kernel [inputs + units, 4 units] with gates i, j (the candidate), f, o;
    forget bias 1.0 added inside the cell as BasicLSTMCell does."""
    rng = np.random.default_rng(seed)
    limit = np.sqrt(6 / (INPUTS + 2 * units + 3 * units))
    return {
        "kernel": rng.uniform(-limit, limit, (INPUTS + units, 4 * units)).astype(np.float32),
        "bias": np.zeros(4 * units, np.float32),
        "dense_w": rng.uniform(-0.1, 0.1, (units, CLASSES)).astype(np.float32),
        "dense_b": np.zeros(CLASSES, np.float32),
    }


def make_batch(batch: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((batch, STEPS, INPUTS), dtype=np.float32)
    return x, rng.integers(0, CLASSES, batch).astype(np.int64)


# -- tfc and TensorFlow 1: the same graph-building program ---------------------------------------
def build_tf1(tf, weights: dict, batch: int, units: int):
    images = tf.placeholder(tf.float32, [batch, STEPS, INPUTS])
    labels = tf.placeholder(tf.int64, [batch])
    cell = tf.nn.rnn_cell.BasicLSTMCell(units)
    outputs, _ = tf.nn.dynamic_rnn(cell, images, dtype=tf.float32)
    dense_w = tf.Variable(weights["dense_w"], name="dense_w")
    dense_b = tf.Variable(weights["dense_b"], name="dense_b")
    logits = tf.matmul(outputs[:, -1], dense_w) + dense_b
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train = tf.train.AdamOptimizer(LR).minimize(loss)
    cell_vars = {v.op.name.split("/")[-1]: v for v in tf.global_variables()
                 if v.op.name.startswith("rnn/")}  # fmt: skip
    loads = [tf.assign(cell_vars[k], weights[k]) for k in ("kernel", "bias")]
    return images, labels, loss, train, loads


def tfc_step(weights, x, y, units) -> tuple[float, Callable[[int], float]]:
    import tfc as tf

    tf.set_num_threads(1)
    graph = tf.Graph()
    with graph.as_default():
        images, labels, loss, train, loads = build_tf1(tf, weights, len(x), units)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    sess.run(loads)
    feed = {images: x, labels: y}
    first = float(sess.run([loss, train], feed)[0])
    return first, lambda runs: sess.time_runs([loss, train], feed, runs=runs)


def tensorflow_step(weights, x, y, units):
    import tensorflow as real_tf

    v1 = real_tf.compat.v1
    v1.disable_eager_execution()
    config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    graph = real_tf.Graph()
    with graph.as_default():
        images, labels, loss, train, loads = build_tf1(v1, weights, len(x), units)
        init = v1.global_variables_initializer()
    sess = v1.Session(graph=graph, config=config)
    sess.run(init)
    sess.run(loads)
    feed = {images: x, labels: y}
    first = float(sess.run([loss, train], feed)[0])

    def timed(runs: int) -> float:
        start = time.perf_counter()
        for _ in range(runs):
            sess.run([loss, train], feed)
        return (time.perf_counter() - start) / runs

    return first, timed


# -- PyTorch eager ------------------------------------------------------------------------------
def torch_step(weights, x, y, units):
    import torch

    torch.set_num_threads(1)
    lstm = torch.nn.LSTM(INPUTS, units, batch_first=True)
    dense = torch.nn.Linear(units, CLASSES)
    # TF1's kernel [x; h] x [i, j, f, o] -> PyTorch's weight_ih/hh [4 units, n] in [i, f, g, o]
    k = weights["kernel"].reshape(INPUTS + units, 4, units)[:, [0, 2, 1, 3]]
    k = k.reshape(INPUTS + units, 4 * units)
    bias = weights["bias"].reshape(4, units)[[0, 2, 1, 3]].copy()
    bias[1] += 1.0  # BasicLSTMCell's forget bias
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(k[:INPUTS].T)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(np.ascontiguousarray(k[INPUTS:].T)))
        lstm.bias_ih_l0.copy_(torch.from_numpy(bias.reshape(-1)))
        lstm.bias_hh_l0.zero_()
        dense.weight.copy_(torch.from_numpy(weights["dense_w"].T.copy()))
        dense.bias.copy_(torch.from_numpy(weights["dense_b"]))
    params = [*lstm.parameters(), *dense.parameters()]
    opt = torch.optim.Adam(params, lr=LR, eps=1e-8)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> float:
        opt.zero_grad()
        out, _ = lstm(xt)
        loss = torch.nn.functional.cross_entropy(dense(out[:, -1]), yt)
        loss.backward()
        opt.step()
        return float(loss)

    first = step()

    def timed(runs: int) -> float:
        start = time.perf_counter()
        for _ in range(runs):
            step()
        return (time.perf_counter() - start) / runs

    return first, timed


# -- JAX jit ----------------------------------------------------------------------------------
def jax_step(weights, x, y, units):
    import jax
    import jax.numpy as jnp

    def loss_fn(p, xb, yb):
        def cell(carry, xt):
            c, h = carry
            z = jnp.concatenate([xt, h], 1) @ p["kernel"] + p["bias"]
            i, j, f, o = jnp.split(z, 4, 1)
            c = c * jax.nn.sigmoid(f + 1.0) + jax.nn.sigmoid(i) * jnp.tanh(j)
            h = jnp.tanh(c) * jax.nn.sigmoid(o)
            return (c, h), None

        zeros = jnp.zeros((xb.shape[0], units), xb.dtype)
        (_, h), _ = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(xb, 0, 1))
        logits = h @ p["dense_w"] + p["dense_b"]
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], 1)
        return -jnp.mean(picked)

    @jax.jit
    def step(p, m, v, t, xb, yb):
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        t = t + 1
        lr = LR * jnp.sqrt(1 - 0.999**t) / (1 - 0.9**t)  # TF1's Adam
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        p = jax.tree_util.tree_map(lambda a, b, c: a - lr * b / (jnp.sqrt(c) + 1e-8), p, m, v)
        return loss, p, m, v, t

    state = [{k: jnp.asarray(a) for k, a in weights.items()}]
    state += [jax.tree_util.tree_map(jnp.zeros_like, state[0]) for _ in range(2)]
    state.append(jnp.asarray(0.0, jnp.float32))
    xb, yb = jnp.asarray(x), jnp.asarray(y.astype(np.int32))
    loss, *state = step(*state, xb, yb)
    first = float(loss)

    def timed(runs: int) -> float:
        nonlocal state
        start = time.perf_counter()
        for _ in range(runs):
            loss, *state = step(*state, xb, yb)
        loss.block_until_ready()
        return (time.perf_counter() - start) / runs

    return first, timed


FRAMEWORKS = {
    "tfc": tfc_step,
    "PyTorch eager": torch_step,
    "JAX jit": jax_step,
    "TensorFlow 1 graph": tensorflow_step,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--runs", type=int, default=20, help="training steps per round")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--units", type=int, default=128)
    args = p.parse_args()
    weights = initial_weights(args.units)
    x, y = make_batch(args.batch)
    timers, firsts, missing = {}, {}, {}
    for name, make in FRAMEWORKS.items():
        try:
            firsts[name], timers[name] = make(weights, x, y, args.units)
        except ImportError as e:
            missing[name] = str(e)
    for name, loss in firsts.items():  # the same model, weights and batch
        if abs(loss - firsts["tfc"]) > 1e-4 * abs(firsts["tfc"]):
            raise SystemExit(f"first-step loss of {name} is {loss}, tfc's {firsts['tfc']}")
    for timed in timers.values():
        timed(2)  # warm-up
    load_before = os.getloadavg()
    walls: dict[str, list[float]] = {name: [] for name in timers}
    cpus: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(args.rounds):
        for name, timed in timers.items():
            start = time.process_time()
            walls[name].append(timed(args.runs))
            cpus[name].append((time.process_time() - start) / args.runs)
    wall = {name: statistics.median(t) for name, t in walls.items()}
    cpu = {name: statistics.median(t) for name, t in cpus.items()}
    print(
        f"LSTM training step: {STEPS} steps x {INPUTS} inputs, {args.units} units, batch "
        f"{args.batch}, Adam; 1 thread; median of {args.rounds} rounds of {args.runs} steps; "
        f"first-step loss {firsts['tfc']:.5f} in every framework; load average "
        f"{load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print("| framework | wall ms/step | tfc / it | CPU ms/step | tfc / it |")
    print("|---|---:|---:|---:|---:|")
    for name in wall:
        print(
            f"| {name} | {wall[name] * 1e3:.3f} | {wall['tfc'] / wall[name]:.2f}x "
            f"| {cpu[name] * 1e3:.3f} | {cpu['tfc'] / cpu[name]:.2f}x |"
        )
    for name, why in missing.items():
        print(f"| {name} | not installed ({why}) | | | |")
    for what, times in (("wall", wall), ("CPU", cpu)):
        peers = {n: t for n, t in times.items() if n != "tfc"}
        if peers:
            best = min(peers, key=peers.get)
            ratio = times["tfc"] / peers[best]
            verdict = "met" if ratio <= 0.8 else "not met"
            print(
                f"target tfc <= 0.8x the best peer ({best}), {what} time: {ratio:.2f}x, {verdict}"
            )


if __name__ == "__main__":
    main()
