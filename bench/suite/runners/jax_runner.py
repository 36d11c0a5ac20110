"""JAX: the whole step under jax.jit (forward, grad, Adam), NHWC/HWIO like tfc; thread count
from XLA_FLAGS/NPROC, set by the parent before import."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from suite import data as bench_data
from suite.measure import time_steps
from suite.runners import cross_entropy, result

VERSION = f"jax {jax.__version__}"
B1, B2, EPS = 0.9, 0.999, 1e-8


def _dense_stack(params, net):
    for i in range(0, len(params), 2):
        net = net @ params[i] + params[i + 1]
        if i + 2 < len(params):
            net = jax.nn.relu(net)
    return net


def _conv_pool(x, k, b, padding):
    y = lax.conv_general_dilated(x, k, (1, 1), padding, dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y + b)
    return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def logits_fn(w: dict):
    if w["model"] == "mlp":
        return _dense_stack

    def lenet(params, x):
        net = _conv_pool(x, params[0], params[1], "SAME")
        net = _conv_pool(net, params[2], params[3], "VALID")
        return _dense_stack(params[4:], net.reshape(net.shape[0], -1))

    return lenet


def loss_fn(logits, params, x, y):
    z = logits(params, x)
    logp = jax.nn.log_softmax(z)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def make_train_step(w: dict):
    logits, lr = logits_fn(w), w["lr"]

    def step(params, m, v, t, x, y):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(logits, p, x, y))(params)
        t = t + 1
        m = [B1 * a + (1 - B1) * g for a, g in zip(m, grads)]
        v = [B2 * a + (1 - B2) * g * g for a, g in zip(v, grads)]
        lr_t = lr * jnp.sqrt(1 - B2**t) / (1 - B1**t)
        params = [p - lr_t * a / (jnp.sqrt(b) + EPS) for p, a, b in zip(params, m, v)]
        return params, m, v, t, loss

    return jax.jit(step, donate_argnums=(0, 1, 2))


def run(w: dict, d: dict, threads: int, plan) -> list[dict]:
    params = [jnp.asarray(a) for a in d["weights"]]
    data = [
        tuple(jnp.asarray(a) for a in bench_data.batch(d, w, i))
        for i in range(bench_data.N_BATCHES)
    ]
    n = len(data)
    if w["mode"] == "train":
        train = make_train_step(w)
        state = {
            "s": (
                params,
                [jnp.zeros_like(p) for p in params],
                [jnp.zeros_like(p) for p in params],
                jnp.float32(0),
            )
        }

        def step(i):
            x, y = data[i % n]
            *rest, loss = train(*state["s"], x, y)
            state["s"] = tuple(rest)
            return loss

        loss1 = float(step(0))
    else:
        logits = logits_fn(w)
        predict = jax.jit(lambda p, x: jax.nn.softmax(logits(p, x)))

        def step(i):
            return predict(params, data[i % n][0])

        loss1 = cross_entropy(jax.device_get(step(0)), jax.device_get(data[0][1]))
    timing = time_steps(step, lambda out: out.block_until_ready(), plan)
    return [result("JAX jit", timing, loss1, VERSION)]


RUNNERS = {"jax": run}
