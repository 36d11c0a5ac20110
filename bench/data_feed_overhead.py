"""Per-run cost of a compiled step fed by a tf.data iterator vs. by feed_dict (same batches).

Run: python bench/data_feed_overhead.py
"""

import time

import numpy as np

import tfc as tf

N, B, RUNS = 4096, 32, 5000
rng = np.random.default_rng(0)
X = rng.standard_normal((N, 4)).astype(np.float32)
Y = rng.integers(0, 3, N).astype(np.int32)


def step(x, y):
    w = tf.Variable(tf.zeros([4, 3]), name="w")
    logits = tf.matmul(x, w)
    loss = tf.reduce_mean(logits) + tf.reduce_mean(tf.cast(y, tf.float32))
    train = tf.assign_add(w, tf.ones([4, 3]) * 1e-6)
    return loss, train, tf.global_variables_initializer()


def bench(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(fetches[2])
        for _ in range(50):  # compile and warm up
            sess.run(fetches[:2], feed(0) if feed else None)
        t = time.perf_counter()
        for i in range(RUNS):
            sess.run(fetches[:2], feed(i) if feed else None)
        return (time.perf_counter() - t) / RUNS * 1e6


batches = [(X[i : i + B], Y[i : i + B]) for i in range(0, N, B)]
x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.int32, [None])
fed = step(x, y)
us_feed = bench(fed, lambda i: {x: batches[i % len(batches)][0], y: batches[i % len(batches)][1]})

tf.reset_default_graph()
ds = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(B)
xi, yi = ds.make_one_shot_iterator().get_next()
us_iter = bench(step(xi, yi))

tf.reset_default_graph()
ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(1000, seed=1).repeat().batch(B)
xs, ys = ds.make_one_shot_iterator().get_next()
us_shuf = bench(step(xs, ys))

tf.reset_default_graph()
no_feed = tf.Variable(tf.zeros([B, 4]))
yc = tf.zeros([B], tf.int32)
us_none = bench(step(no_feed, yc))

print(
    f"per run: feed_dict {us_feed:.1f} us, iterator {us_iter:.1f} us, "
    f"iterator+shuffle(1000) {us_shuf:.1f} us, no feeds {us_none:.1f} us"
)
print(f"iterator / feed_dict = {us_iter / us_feed:.2f}")
