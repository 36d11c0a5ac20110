"""Compiled steps run with denormals flushed to zero (runtime/include/tfc_fpenv.h), as
TensorFlow's CPU kernels do: results below float32's smallest normal become 0, denormal inputs
read as 0, on the calling thread and in the thread pool's workers, and the caller's IEEE mode
comes back after each run."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf

TINY = np.finfo(np.float32).tiny  # the smallest normal float32, 1.2e-38
DENORMAL = np.float32(1e-40)


def test_results_and_inputs_below_the_normal_range_are_zero():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [5])
        scaled_down = x * np.float32(1e-30)
        scaled_up = x * np.float32(1e30)
        halved = x * np.float32(0.5)
    feed = np.array([1e-10, 1e-5, 1.0, DENORMAL, TINY], np.float32)
    with tf.Session(graph=g) as sess:
        down, up, half = sess.run([scaled_down, scaled_up, halved], {x: feed})
    ieee_down = feed * np.float32(1e-30)  # NumPy: IEEE, 1e-40 (a denormal) for the first
    assert ieee_down[0] != 0.0
    np.testing.assert_array_equal(down, np.where(np.abs(ieee_down) < TINY, 0, ieee_down))
    # a denormal input reads as 0: IEEE would give 1e-10 for it
    ieee_up = feed * np.float32(1e30)
    assert ieee_up[3] != 0.0 and up[3] == 0.0
    np.testing.assert_array_equal(np.delete(up, 3), np.delete(ieee_up, 3))
    # half of the smallest normal is a denormal result: 0
    assert half[4] == 0.0 and half[2] == 0.5


def test_the_callers_mode_comes_back_after_a_run():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2])
        y = x * np.float32(1e-30)
    with tf.Session(graph=g) as sess:
        sess.run(y, {x: np.ones(2, np.float32)})
    # NumPy in this thread computes with IEEE denormals again
    assert np.float32(1e-20) * np.float32(1e-20) != 0.0
    assert DENORMAL * np.float32(1.0) == DENORMAL


@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_products_below_the_normal_range_are_zero_on_every_thread(threads):
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, (96, 64)).astype(np.float32)
    b = rng.uniform(0.5, 1.0, (64, 128)).astype(np.float32)
    scale = np.float32(1e-41)  # every product, and every sum of 64, is a denormal
    g = tf.Graph()
    with g.as_default():
        pa = tf.placeholder(tf.float32, a.shape)
        pb = tf.placeholder(tf.float32, b.shape)
        product = tf.matmul(pa * scale, pb)
        reference = tf.matmul(pa, pb)
    config = tf.ConfigProto(intra_op_parallelism_threads=threads)
    with tf.Session(graph=g, config=config) as sess:
        small, normal = sess.run([product, reference], {pa: a, pb: b})
    np.testing.assert_allclose(normal, a.astype(np.float64) @ b, rtol=1e-5)
    np.testing.assert_array_equal(small, np.zeros_like(small))


def test_matches_tensorflow_near_zero():
    tf_real = pytest.importorskip("tensorflow")
    v1 = tf_real.compat.v1
    feed = np.array([1e-10, 1e-5, 1.0, DENORMAL, -3.0, 80.0], np.float32)

    def build(api, placeholder):
        x = placeholder(api.float32, [6])
        return x, [x * np.float32(1e-30), x * np.float32(1e30), api.exp(x - 100.0)]

    g = v1.Graph()
    with g.as_default():
        x, outs = build(v1, v1.placeholder)
        with v1.Session(graph=g) as sess:
            expected = sess.run(outs, {x: feed})
    tg = tf.Graph()
    with tg.as_default():
        x, outs = build(tf, tf.placeholder)
        with tf.Session(graph=tg) as sess:
            got = sess.run(outs, {x: feed})
    for e, o in zip(expected, got, strict=True):
        np.testing.assert_allclose(o, e, rtol=1e-6, atol=0)
