"""TF1's remaining top-level helpers: tf.hessians, unconnected_gradients, grad_pass_through,
recompute_grad, vectorized_map, nondifferentiable_batch_function, guarantee_const,
register_tensor_conversion_function, get_logger and the TF2 behaviour switches."""

import logging

import numpy as np
import pytest

import tfc as tf


def test_differentiation_helpers_against_analytic_values():
    tf.reset_default_graph()
    x0 = np.array([0.5, -1.0, 2.0])
    x = tf.placeholder(tf.float64, [3])
    y = tf.reduce_sum(x**3) + x[0] * x[1]
    (hessian,) = tf.hessians(y, x)
    unused = tf.placeholder(tf.float64, [2])
    none_grad, zero_grad = (
        tf.gradients(y, unused)[0],
        tf.gradients(y, unused, unconnected_gradients=tf.UnconnectedGradients.ZERO)[0],
    )
    rounded = tf.grad_pass_through(tf.round)(x * 2.0)
    (through,) = tf.gradients(tf.reduce_sum(rounded * x), x)  # d/dx round(2x) taken as 2

    @tf.recompute_grad
    def block(t):
        return tf.tanh(t) * t

    (recomputed,) = tf.gradients(tf.reduce_sum(block(x)), x)
    with tf.Session() as sess:
        feed = {x: x0, unused: [1.0, 2.0]}
        h, z, r, t, g = sess.run([hessian, zero_grad, rounded, through, recomputed], feed)
    expected = np.diag(6 * x0)
    expected[0, 1] = expected[1, 0] = 1.0
    np.testing.assert_allclose(h, expected, rtol=1e-12)
    assert none_grad is None
    np.testing.assert_array_equal(z, [0.0, 0.0])
    np.testing.assert_array_equal(r, np.round(2 * x0))
    np.testing.assert_allclose(t, np.round(2 * x0) + 2 * x0, rtol=1e-12)
    th = np.tanh(x0)
    np.testing.assert_allclose(g, th + x0 * (1 - th**2), rtol=1e-12)
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tf.gradients(y, x, unconnected_gradients="zeros")
    with pytest.raises(ValueError, match="shape of .* known"):
        tf.hessians(y, tf.placeholder(tf.float64, [None]))


def test_vectorized_map_batch_function_and_guarantee_const():
    tf.reset_default_graph()
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = tf.placeholder(tf.float32, [4, 3])
    mapped = tf.vectorized_map(lambda row: (tf.reduce_sum(row), tf.cast(row > 4, tf.int32)), x)

    @tf.nondifferentiable_batch_function(1, 8, 1000, allowed_batch_sizes=[4, 8])
    def doubled(t):
        return t * 2.0

    batched = doubled(x)
    const = tf.guarantee_const(x + 1.0)
    with tf.Session() as sess:
        sums, flags, b, c = sess.run([mapped[0], mapped[1], batched, const], {x: data})
    np.testing.assert_array_equal(sums, data.sum(axis=1))
    np.testing.assert_array_equal(flags, (data > 4).astype(np.int32))
    assert flags.dtype == np.int32
    np.testing.assert_array_equal(b, data * 2.0)
    np.testing.assert_array_equal(c, data + 1.0)
    assert tf.gradients(tf.reduce_sum(batched), x) == [None]
    assert tf.gradients(tf.reduce_sum(const), x) == [None]
    with pytest.raises(ValueError, match="allowed_batch_sizes must be increasing"):
        tf.nondifferentiable_batch_function(1, 8, 1000, allowed_batch_sizes=[4, 6])


class _Meters:
    def __init__(self, values):
        self.values = values


def test_registered_conversion_functions_convert_for_every_op():
    tf.reset_default_graph()

    def convert(value, dtype=None, name=None, as_ref=False):
        return tf.constant(np.asarray(value.values, np.float32), name=name)  # ignores dtype

    tf.register_tensor_conversion_function(_Meters, convert)
    total = tf.reduce_sum(_Meters([1.0, 2.5]))
    with tf.Session() as sess:
        assert sess.run(total) == pytest.approx(3.5)
    with pytest.raises(TypeError, match="Cannot register conversions for Python numeric"):
        tf.register_tensor_conversion_function(float, convert)
    with pytest.raises(RuntimeError, match="requested = float64, actual = float32"):
        tf.convert_to_tensor(_Meters([1.0]), dtype=tf.float64)


def test_logger_and_behaviour_switches():
    assert isinstance(tf.get_logger(), logging.Logger)
    assert tf.get_logger() is tf.get_logger()
    assert tf.disable_eager_execution() is None and tf.disable_v2_behavior() is None
