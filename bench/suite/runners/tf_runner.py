"""TensorFlow 2: the step as a tf.function, with and without XLA (jit_compile=True); Adam on
tf.Variables inside the function; NHWC/HWIO like tfc."""

from __future__ import annotations

import tensorflow as tf

from suite import data as bench_data
from suite.measure import time_steps
from suite.runners import cross_entropy, result

VERSION = f"tensorflow {tf.__version__}"
B1, B2, EPS = 0.9, 0.999, 1e-8


def _set_threads(threads: int) -> None:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def _dense_stack(params, net):
    for i in range(0, len(params), 2):
        net = tf.matmul(net, params[i]) + params[i + 1]
        if i + 2 < len(params):
            net = tf.nn.relu(net)
    return net


def _conv_pool(x, k, b, padding):
    y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, 1, padding), b))
    return tf.nn.max_pool2d(y, 2, 2, "VALID")


def logits(w: dict, params, x):
    if w["model"] == "mlp":
        return _dense_stack(params, x)
    net = _conv_pool(x, params[0], params[1], "SAME")
    net = _conv_pool(net, params[2], params[3], "VALID")
    return _dense_stack(params[4:], tf.reshape(net, [tf.shape(net)[0], -1]))


def _run(w: dict, d: dict, threads: int, plan, xla: bool) -> list[dict]:
    _set_threads(threads)
    params = [tf.Variable(a) for a in d["weights"]]
    data = [
        tuple(tf.constant(a) for a in bench_data.batch(d, w, i))
        for i in range(bench_data.N_BATCHES)
    ]
    n = len(data)
    if w["mode"] == "train":
        m = [tf.Variable(tf.zeros_like(p)) for p in params]
        v = [tf.Variable(tf.zeros_like(p)) for p in params]
        t = tf.Variable(0.0)
        lr = w["lr"]

        @tf.function(jit_compile=xla)
        def train(x, y):
            with tf.GradientTape() as tape:
                z = logits(w, params, x)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z)
                )
            grads = tape.gradient(loss, params)
            t.assign_add(1.0)
            lr_t = lr * tf.sqrt(1 - B2**t) / (1 - B1**t)
            for p, a, b, g in zip(params, m, v, grads):
                a.assign(B1 * a + (1 - B1) * g)
                b.assign(B2 * b + (1 - B2) * g * g)
                p.assign_sub(lr_t * a / (tf.sqrt(b) + EPS))
            return loss

        def step(i):
            return train(*data[i % n])

        loss1 = float(step(0))
    else:

        @tf.function(jit_compile=xla)
        def predict(x):
            return tf.nn.softmax(logits(w, params, x))

        def step(i):
            return predict(data[i % n][0])

        loss1 = cross_entropy(step(0).numpy(), data[0][1].numpy())
    timing = time_steps(step, lambda out: out.numpy(), plan)
    label = "TF XLA (jit_compile)" if xla else "TF tf.function"
    return [result(label, timing, loss1, VERSION)]


RUNNERS = {
    "tf": lambda w, d, t, p: _run(w, d, t, p, xla=False),
    "tf_xla": lambda w, d, t, p: _run(w, d, t, p, xla=True),
}
