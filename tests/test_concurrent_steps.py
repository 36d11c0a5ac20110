"""Concurrent steps (whitepaper section 7): Session.run from several threads at once, each call
running its compiled program concurrently on the shared variables; use_locking honoured;
training fed by two threads, and by queue runner threads.

Every thread is joined with a bound and every queue wait has a deadline: no test can hang.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

import tfc as tf

T = tf.RunOptions(timeout_in_ms=30_000)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run_threads(target, count, *args):
    """Run target(k, *args) in `count` threads; re-raise the first error; bounded wait."""
    errors = []

    def body(k):
        try:
            target(k, *args)
        except Exception as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,), daemon=True) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


def test_threads_running_one_program_get_their_own_results():
    x = tf.placeholder(tf.float32, [64])
    y = tf.tanh(x) * 3.0 + tf.reduce_sum(x)
    with tf.Session() as sess:
        sess.run(y, {x: np.zeros(64, np.float32)})  # compiled once, before the threads

        def work(k):
            rng = np.random.RandomState(k)
            for _ in range(200):
                value = rng.randn(64).astype(np.float32)
                expected = np.tanh(value) * 3.0 + value.sum(dtype=np.float32)
                np.testing.assert_allclose(sess.run(y, {x: value}), expected, rtol=1e-5, atol=1e-5)

        run_threads(work, 4)


def test_a_long_step_does_not_hold_up_another_thread():
    """The session's lock is not held, and the GIL is released, while a program runs."""
    size = 768
    a = tf.Variable(np.eye(size, dtype=np.float32) * 0.5)
    # a loop of products, its length fed: one program (one GEMM call site) runs any length
    links = tf.placeholder(tf.int32, [], name="links")
    _, chained = tf.while_loop(
        lambda i, y: i < links, lambda i, y: (i + 1, tf.matmul(y, a)), (0, a.value())
    )
    long = tf.reduce_sum(chained)
    short = tf.reduce_sum(a[0])
    with tf.Session() as sess:
        sess.run(a.initializer)
        sess.run(short)
        sess.run(long, {links: 1})  # compiled before it is timed
        start = time.monotonic()
        sess.run(long, {links: 1})
        one = time.monotonic() - start  # about one product
        steps = {links: max(2, math.ceil(1.5 / max(one, 1e-3)))}  # a step of ~1.5 s or more
        running = threading.Event()
        done = []

        def long_step():
            running.set()
            began = time.monotonic()
            done.append(sess.run(long, steps))
            done.append(time.monotonic() - began)

        thread = threading.Thread(target=long_step, daemon=True)
        thread.start()
        running.wait(10)
        time.sleep(0.05)  # inside its program now
        start = time.monotonic()
        for _ in range(5):
            assert sess.run(short) == 0.5
        short_steps = time.monotonic() - start
        assert thread.is_alive() and not done, f"the long step ended first ({short_steps:.3f}s)"
        thread.join(120)
        assert done and np.isfinite(done[0])
        # short runs that waited for the long one (a lock held while a program runs) end just
        # before it does: the thread is still returning its result, so is_alive alone passes
        assert short_steps < done[1] / 2, f"short steps {short_steps:.3f}s, long {done[1]:.3f}s"


def test_use_locking_updates_lose_nothing():
    # a million elements: an update long enough that unlocked ones lose increments here
    # (compiled with -DTFC_NO_THREADS, which makes the locks no-ops, this test fails)
    n = 1_000_000
    v = tf.Variable(np.zeros(n, np.float32))
    add = tf.assign_add(v, np.ones(n, np.float32), use_locking=True)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(add.op)

        def work(k):
            for _ in range(30):
                sess.run(add.op)

        run_threads(work, 4)
        np.testing.assert_array_equal(sess.run(v), np.full(n, 121.0, np.float32))


def test_count_up_to_hands_out_each_value_once_across_threads():
    counter = tf.Variable(0, dtype=tf.int64)
    take = counter.count_up_to(300)
    taken = []
    lock = threading.Lock()
    with tf.Session() as sess:
        sess.run(counter.initializer)

        def work(k):
            while True:
                try:
                    value = sess.run(take)
                except tf.errors.OutOfRangeError:
                    return
                with lock:
                    taken.append(int(value))

        run_threads(work, 4)
    assert sorted(taken) == list(range(300))


def _regression(seed=0, n=256):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype(np.float32)
    w = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    return x, x @ w + 0.25, w


@pytest.mark.parametrize("use_locking", [False, True])
def test_two_threads_train_one_model(use_locking):
    """TF1's Hogwild training (and its locked variant): two threads, each feeding its half of
    the data, step one session's shared variables to the solution."""
    data_x, data_y, w_true = _regression()
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(tf.zeros([4, 1]))
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    step = tf.train.get_or_create_global_step()
    optimizer = tf.train.GradientDescentOptimizer(0.05, use_locking=use_locking)
    train = optimizer.minimize(loss, global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())

        def work(k):
            half = slice(k * 128, (k + 1) * 128)
            for i in range(300):
                rows = slice(half.start + (i % 4) * 32, half.start + (i % 4 + 1) * 32)
                sess.run(train, {x: data_x[rows], y: data_y[rows]})

        run_threads(work, 2)
        final = sess.run(loss, {x: data_x, y: data_y})
        np.testing.assert_allclose(sess.run(w), w_true, atol=1e-2)
        assert abs(sess.run(b) - 0.25) < 1e-2 and final < 1e-4
        assert 500 <= sess.run(step) <= 600  # Hogwild may lose a racing increment


def test_queue_runner_threads_feed_a_monitored_training_loop():
    """The queue-based input pipeline: producer and batching threads (concurrent steps of the
    session) feed MonitoredTrainingSession's training loop until the input's epochs end."""
    rng = np.random.RandomState(1)
    centers = np.array([[2.0, 0.0], [-1.0, 2.0], [-1.0, -2.0]], np.float32)
    labels = rng.randint(0, 3, 600)
    points = (centers[labels] + rng.randn(600, 2) * 0.7).astype(np.float32)
    train_x, train_y, test_x, test_y = points[:450], labels[:450], points[450:], labels[450:]

    px, py = tf.train.slice_input_producer([train_x, train_y], num_epochs=8, seed=2)
    bx, by = tf.train.shuffle_batch(
        [px, py], batch_size=30, capacity=200, min_after_dequeue=60, num_threads=2, seed=3,
        allow_smaller_final_batch=True,
    )  # fmt: skip
    w = tf.Variable(tf.zeros([2, 3]))
    b = tf.Variable(tf.zeros([3]))
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=by, logits=tf.matmul(bx, w) + b)
    )
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    examples = tf.Variable(0, dtype=tf.int64, trainable=False)
    count = tf.assign_add(examples, tf.cast(tf.shape(by)[0], tf.int64), use_locking=True)
    steps, last = 0, None
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            last = sess.run([train, count, w, b], options=T)
            steps += 1
    # the loop ended on the input's OutOfRangeError (its __exit__ took it): every example was
    # seen 8 times, in full batches
    _, seen, weights, bias = last
    assert seen == 450 * 8 and steps == 450 * 8 // 30
    predicted = np.argmax(test_x @ weights + bias, axis=1)
    assert np.mean(predicted == test_y) >= 0.9
