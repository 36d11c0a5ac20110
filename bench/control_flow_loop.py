"""A tf.while_loop of N steps against the same N steps unrolled, compiled by tfc.

Each step is an RNN cell h = tanh(x_t W + h U + b) (batch 64, 128 units, N = 28 steps of 28
inputs: the sequence MNIST classifier's shape), its inputs read from a TensorArray and its
outputs written to one in the loop; the unrolled graph slices and stacks instead. Measured:
the forward pass, and a training step's gradients (the loop's gradient is a second loop that
runs backwards over values the forward loop saved). Times are of the compiled program run by a
loop in C (Session.time_runs), one thread, medians over rounds that alternate between the two
graphs; the ratio is loop / unrolled (1.0: the loop costs nothing over straight-line code).

Run: python bench/control_flow_loop.py [--rounds 7] [--steps 28] [--batch 64] [--units 128]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

import tfc as tf


def build(steps: int, batch: int, n_in: int, units: int, loop: bool):
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [steps, batch, n_in], name="x")
        w = tf.get_variable("w", [n_in, units])
        u = tf.get_variable("u", [units, units])
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())

        def cell(inp, h):
            return tf.tanh(tf.matmul(inp, w) + tf.matmul(h, u) + b)

        h = tf.zeros([batch, units])
        if loop:
            inputs = tf.TensorArray(tf.float32, size=steps).unstack(x)

            def body(t, h, out):
                h = cell(inputs.read(t), h)
                return t + 1, h, out.write(t, h)

            _, h, out = tf.while_loop(
                lambda t, h, out: t < steps, body, (0, h, tf.TensorArray(tf.float32, steps))
            )
            seq = out.stack()
        else:
            outs = []
            for t in range(steps):
                h = cell(x[t], h)
                outs.append(h)
            seq = tf.stack(outs)
        loss = tf.reduce_mean(seq * seq) + tf.reduce_mean(h)
        grads = tf.gradients(loss, [w, u, b])
        init = tf.global_variables_initializer()
    return graph, x, loss, grads, init


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=28)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--inputs", type=int, default=28)
    p.add_argument("--units", type=int, default=128)
    p.add_argument("--runs", type=int, default=20, help="program runs per round")
    args = p.parse_args()
    tf.set_num_threads(1)
    xv = np.random.default_rng(0).normal(size=(args.steps, args.batch, args.inputs))
    xv = xv.astype(np.float32)
    sessions = {}
    for loop in (True, False):
        graph, x, loss, grads, init = build(args.steps, args.batch, args.inputs, args.units, loop)
        sess = tf.Session(graph=graph)
        sess.run(init)
        sessions[loop] = (sess, x, loss, grads)
    values = {k: s.run([loss, *grads], {x: xv}) for k, (s, x, loss, grads) in sessions.items()}
    for a, b in zip(values[True], values[False]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)  # the same computation
    times: dict = {(k, what): [] for k in (True, False) for what in ("forward", "gradients")}
    for _ in range(args.rounds):
        for loop, (sess, x, loss, grads) in sessions.items():
            times[(loop, "forward")].append(sess.time_runs(loss, {x: xv}, runs=args.runs))
            times[(loop, "gradients")].append(sess.time_runs(grads, {x: xv}, runs=args.runs))
    print(
        f"RNN cell x {args.steps} steps, batch {args.batch}, {args.inputs} inputs, "
        f"{args.units} units, 1 thread, median of {args.rounds} rounds of {args.runs} runs"
    )
    print(f"{'':<12}{'while_loop':>14}{'unrolled':>14}{'loop/unrolled':>16}")
    for what in ("forward", "gradients"):
        t_loop = statistics.median(times[(True, what)])
        t_unrolled = statistics.median(times[(False, what)])
        print(
            f"{what:<12}{t_loop * 1e3:>11.3f} ms{t_unrolled * 1e3:>11.3f} ms"
            f"{t_loop / t_unrolled:>15.2f}x"
        )


if __name__ == "__main__":
    main()
