"""TF1's cosine-family learning-rate schedules and piecewise_constant against NumPy references
(and against TensorFlow itself where it is importable)."""

import math

import numpy as np
import pytest

import tfc as tf
from tfc.reference.interp import Interpreter

STEPS = [0, 1, 3, 7, 10, 11, 25, 29, 30, 31, 69, 70, 71, 150]


def cosine_ref(lr, step, decay_steps, alpha=0.0):
    s = min(step, decay_steps)
    return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay_steps)) + alpha)


def restarts_ref(lr, step, first, t_mul=2.0, m_mul=1.0, alpha=0.0):
    """Walk the periods one by one: period i lasts first * t_mul^i steps."""
    start, length, i = 0.0, float(first), 0
    while step >= start + length:
        start, length, i = start + length, length * t_mul, i + 1
    fraction = (step - start) / length
    cosine = 0.5 * m_mul**i * (1 + math.cos(math.pi * fraction))
    return lr * ((1 - alpha) * cosine + alpha)


def linear_cosine_ref(lr, step, decay_steps, num_periods=0.5, alpha=0.0, beta=0.001):
    s = min(step, decay_steps)
    linear = (decay_steps - s) / decay_steps
    cosine = 0.5 * (1 + math.cos(math.pi * 2 * num_periods * s / decay_steps))
    return lr * ((alpha + linear) * cosine + beta)


def _schedules(step):
    """name -> (tfc tensor, reference of the step)."""
    return {
        "cosine": (tf.train.cosine_decay(0.1, step, 30), lambda s: cosine_ref(0.1, s, 30)),
        "cosine_alpha": (
            tf.train.cosine_decay(0.5, step, 40, alpha=0.2),
            lambda s: cosine_ref(0.5, s, 40, 0.2),
        ),
        "restarts": (
            tf.train.cosine_decay_restarts(0.1, step, 10),
            lambda s: restarts_ref(0.1, s, 10),
        ),
        "restarts_equal_periods": (
            tf.train.cosine_decay_restarts(0.1, step, 10, t_mul=1.0, m_mul=0.5, alpha=0.1),
            lambda s: restarts_ref(0.1, s, 10, 1.0, 0.5, 0.1),
        ),
        "restarts_m_mul": (
            tf.train.cosine_decay_restarts(0.2, step, 7, t_mul=3.0, m_mul=0.8),
            lambda s: restarts_ref(0.2, s, 7, 3.0, 0.8),
        ),
        "linear_cosine": (
            tf.train.linear_cosine_decay(0.1, step, 30),
            lambda s: linear_cosine_ref(0.1, s, 30),
        ),
        "linear_cosine_periods": (
            tf.train.linear_cosine_decay(0.1, step, 70, num_periods=2.0, alpha=0.1, beta=0.01),
            lambda s: linear_cosine_ref(0.1, s, 70, 2.0, 0.1, 0.01),
        ),
        "noiseless_noisy": (
            tf.train.noisy_linear_cosine_decay(0.1, step, 30, initial_variance=0.0),
            lambda s: linear_cosine_ref(0.1, s, 30),
        ),
        "float64": (
            tf.train.cosine_decay(tf.constant(0.3, tf.float64), step, 30),
            lambda s: cosine_ref(0.3, s, 30),
        ),
    }


def test_cosine_schedules_match_their_formulas():
    step = tf.placeholder(tf.int64, [])
    schedules = _schedules(step)
    assert schedules["cosine"][0].op.name == "CosineDecay"
    assert schedules["restarts"][0].op.name == "SGDRDecay"
    assert schedules["linear_cosine"][0].op.name == "LinearCosineDecay"
    fetches = {k: t for k, (t, _) in schedules.items()}
    interp = Interpreter()
    with tf.Session() as sess:
        for s in STEPS:
            for got in (sess.run(fetches, {step: s}), interp.run(fetches, {step: s})):
                for name, (tensor, ref) in schedules.items():
                    assert got[name].dtype == tensor.dtype.np, name
                    rtol = 1e-5 if tensor.dtype == tf.float32 else 1e-12
                    np.testing.assert_allclose(
                        got[name], ref(s), rtol=rtol, atol=1e-7, err_msg=f"{name}@{s}"
                    )


def test_schedules_follow_a_global_step_variable():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.cosine_decay_restarts(1.0, step, 4)
    advance = tf.assign_add(step, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        seen = []
        for _ in range(13):
            seen.append(sess.run(lr))
            sess.run(advance)
    np.testing.assert_allclose(seen, [restarts_ref(1.0, s, 4) for s in range(13)], rtol=1e-5)
    assert seen[4] == pytest.approx(1.0) and seen[12] == pytest.approx(1.0)  # the restarts


def test_noisy_linear_cosine_noise_has_the_scheduled_variance():
    """Over many runs, (decayed / lr - beta) / cosine - alpha - linear is the noise: zero mean,
    variance initial_variance / (1 + step) ^ variance_decay."""
    tf.set_random_seed(7)
    step = tf.placeholder(tf.int64, [])
    lr = tf.train.noisy_linear_cosine_decay(
        0.1, step, 100, initial_variance=0.5, variance_decay=0.55, alpha=0.05, beta=0.002
    )
    runs = 4000
    with tf.Session() as sess:
        first = sess.run(lr, {step: 3})
        for s in [0, 20]:
            values = np.array([sess.run(lr, {step: s}) for _ in range(runs)], np.float64)
            linear = (100 - s) / 100
            cosine = 0.5 * (1 + math.cos(math.pi * s / 100))
            noise = (values / 0.1 - 0.002) / cosine - 0.05 - linear
            want_std = math.sqrt(0.5 / (1 + s) ** 0.55)
            assert abs(noise.mean()) < 4 * want_std / math.sqrt(runs)
            assert noise.std() == pytest.approx(want_std, rel=0.05)
    # the graph seed fixes the draws: a second session replays them
    with tf.Session() as sess:
        assert sess.run(lr, {step: 3}) == first


def test_piecewise_constant_dtypes_and_alias():
    assert tf.train.piecewise_constant_decay is tf.train.piecewise_constant
    step = tf.placeholder(tf.int64, [])
    lr = tf.train.piecewise_constant(step, [5, 10], [1.0, 0.5, 0.25])  # int32 bounds, int64 x
    x = tf.placeholder(tf.float32, [])
    by_float = tf.train.piecewise_constant_decay(x, [0.5], [3, 4])
    with tf.Session() as sess:
        got = [sess.run(lr, {step: s}) for s in [0, 5, 6, 10, 11]]
        assert got == [1.0, 1.0, 0.5, 0.5, 0.25]
        assert sess.run(by_float, {x: 0.5}) == 3 and sess.run(by_float, {x: 0.75}) == 4
    with pytest.raises(ValueError, match=r"Boundaries \(float32\) must have the same dtype as x"):
        tf.train.piecewise_constant(step, [2.5], [1.0, 0.5])
    with pytest.raises(ValueError, match=r"same dtype \(float32 vs int32\)"):
        tf.train.piecewise_constant(step, [2], [1.0, 2])
    with pytest.raises(ValueError, match="global_step is required for cosine_decay"):
        tf.train.cosine_decay(0.1, None, 10)


def test_schedules_match_tensorflow():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    steps = np.array(STEPS, np.int64)
    graph = tf1.Graph()
    with graph.as_default():
        s = tf1.placeholder(tf1.int64, [])
        want_tensors = {
            "cosine": tf1.train.cosine_decay(0.1, s, 30),
            "cosine_alpha": tf1.train.cosine_decay(0.5, s, 40, alpha=0.2),
            "restarts": tf1.train.cosine_decay_restarts(0.1, s, 10),
            "restarts_equal_periods": tf1.train.cosine_decay_restarts(
                0.1, s, 10, t_mul=1.0, m_mul=0.5, alpha=0.1
            ),
            "restarts_m_mul": tf1.train.cosine_decay_restarts(0.2, s, 7, t_mul=3.0, m_mul=0.8),
            "linear_cosine": tf1.train.linear_cosine_decay(0.1, s, 30),
            "linear_cosine_periods": tf1.train.linear_cosine_decay(
                0.1, s, 70, num_periods=2.0, alpha=0.1, beta=0.01
            ),
            "noiseless_noisy": tf1.train.noisy_linear_cosine_decay(
                0.1, s, 30, initial_variance=0.0
            ),
            "piecewise": tf1.train.piecewise_constant(s, [5, 10], [1.0, 0.5, 0.25]),
            "polynomial_cycle": tf1.train.polynomial_decay(0.1, s, 4, 0.0, power=2.0, cycle=True),
        }
        with tf1.Session(graph=graph) as sess:
            want = [sess.run(want_tensors, {s: v}) for v in steps]
    step = tf.placeholder(tf.int64, [])
    # TF's own cosine_decay fails on a float64 learning rate (it mixes in a float32 constant)
    ours = {k: t for k, (t, _) in _schedules(step).items() if k != "float64"}
    ours["piecewise"] = tf.train.piecewise_constant(step, [5, 10], [1.0, 0.5, 0.25])
    ours["polynomial_cycle"] = tf.train.polynomial_decay(0.1, step, 4, 0.0, power=2.0, cycle=True)
    with tf.Session() as sess:
        for v, expected in zip(steps, want):
            got = sess.run(ours, {step: v})
            for name, value in expected.items():
                assert got[name].dtype == value.dtype, name
                np.testing.assert_allclose(
                    got[name], value, rtol=2e-6, atol=1e-8, err_msg=f"{name}@{v}"
                )
