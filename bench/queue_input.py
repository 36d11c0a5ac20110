"""Examples per second of one training step fed three ways, in the same run: TF1's queue-based
input (slice_input_producer + shuffle_batch, runner threads filling the queues while the loop
trains), tf.data (from_tensor_slices.shuffle.repeat.batch, one-shot iterator), and feed_dict
(batches sliced in Python). The step: a 2-layer MLP on 32 features, batch 64, Adam.

The queue pipeline's runner threads are concurrent steps of the session: each enqueue is a
run of its own (dequeue one example before its program, enqueue after), so per example it
pays a Session.run, where tf.data pays a row copy. Medians of rounds, the three alternating;
ratios are each feed's examples/s over tf.data's. The machine may be shared: the load average
is printed with the results.

Run: python bench/queue_input.py [--rounds 3] [--steps 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import tfc as tf

N, FEATURES, CLASSES, BATCH = 8192, 32, 10, 64
rng = np.random.default_rng(0)
X = rng.standard_normal((N, FEATURES)).astype(np.float32)
Y = rng.integers(0, CLASSES, N).astype(np.int64)


def model(x, y):
    hidden = tf.layers.dense(x, 128, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, CLASSES)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    return tf.train.AdamOptimizer(1e-3).minimize(loss)


def queue_feed():
    x, y = tf.train.slice_input_producer([X, Y], seed=1, capacity=4 * BATCH)
    bx, by = tf.train.shuffle_batch(
        [x, y], BATCH, capacity=8 * BATCH, min_after_dequeue=2 * BATCH, num_threads=2, seed=2
    )
    return model(bx, by), None


def data_feed():
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(2 * BATCH, seed=1).repeat()
    bx, by = ds.batch(BATCH).make_one_shot_iterator().get_next()
    return model(bx, by), None


def dict_feed():
    x = tf.placeholder(tf.float32, [None, FEATURES])
    y = tf.placeholder(tf.int64, [None])
    order = rng.permutation(N)
    batches = [(X[order[i : i + BATCH]], Y[order[i : i + BATCH]]) for i in range(0, N, BATCH)]
    return model(x, y), lambda i: dict(zip((x, y), batches[i % len(batches)]))


FEEDS = {"queues": queue_feed, "tf.data": data_feed, "feed_dict": dict_feed}


def examples_per_second(build, steps: int) -> float:
    tf.reset_default_graph()
    train, feed = build()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        threads = tf.train.start_queue_runners(sess, coord) if runners else []
        try:
            for i in range(20):  # compile and warm up (fill the queues)
                sess.run(train, feed(i) if feed else None)
            start = time.perf_counter()
            for i in range(steps):
                sess.run(train, feed(i) if feed else None)
            seconds = time.perf_counter() - start
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return steps * BATCH / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name in FEEDS}
    for _ in range(args.rounds):
        for name, build in FEEDS.items():
            rates[name].append(examples_per_second(build, args.steps))
    base = statistics.median(rates["tf.data"])
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds of {args.steps} steps")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:>10}: {median:10.0f} examples/s (best {max(values):.0f})"
              f"  x{median / base:.2f} of tf.data")  # fmt: skip


if __name__ == "__main__":
    main()
