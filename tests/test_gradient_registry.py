"""tf.RegisterGradient, tf.NotDifferentiable and gradient_override_map (autodiff/registry.py)."""

import numpy as np
import pytest

import tfc as tf
from tfc.autodiff import registry
from tfc.reference.interp import Interpreter


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test registers into an empty registry (registrations are process-wide, as in TF)."""
    monkeypatch.setattr(registry, "_REGISTERED", {})


def _run(fetches, feed=None):
    with tf.Session() as sess:
        compiled = sess.run(fetches, feed)
    return compiled, Interpreter().run(fetches, feed)


def test_override_map_replaces_the_ops_own_rule():
    @tf.RegisterGradient("ClippedSquare")
    def _clipped(op, dy):  # a straight-through style rule: 2x, clipped to [-1, 1]
        return dy * tf.clip_by_value(2.0 * op.inputs[0], -1.0, 1.0)

    x = tf.placeholder(tf.float32, [4])
    g = tf.get_default_graph()
    with g.gradient_override_map({"Square": "ClippedSquare"}):
        y = tf.square(x)
    plain = tf.square(x)  # made outside the map: the built-in rule
    assert y.op.get_attr("_gradient_op_type") == "ClippedSquare"
    gy, gplain = tf.gradients(tf.reduce_sum(y), x)[0], tf.gradients(tf.reduce_sum(plain), x)[0]
    xv = np.array([-2.0, -0.25, 0.4, 3.0], np.float32)
    for got_y, got_plain in _run([gy, gplain], {x: xv}):
        np.testing.assert_allclose(got_y, np.clip(2 * xv, -1, 1))
        np.testing.assert_allclose(got_plain, 2 * xv)


def test_registered_gradient_for_a_type_without_a_rule_and_single_tensor_results():
    @tf.RegisterGradient("MyIdentity")
    def _double(op, dy):
        return dy * 2.0  # one tensor for a one-input op, as TF accepts

    x = tf.placeholder(tf.float32, [3])
    with tf.get_default_graph().gradient_override_map({"Identity": "MyIdentity"}):
        y = tf.identity(x)
    (g,) = tf.gradients(y * 3.0, [x])
    for got in _run(g, {x: np.ones(3, np.float32)}):
        np.testing.assert_allclose(got, [6.0, 6.0, 6.0])


def test_not_differentiable_cuts_the_path():
    tf.NotDifferentiable("StopHere")
    x = tf.placeholder(tf.float32, [2])
    with tf.get_default_graph().gradient_override_map({"Sin": "StopHere"}):
        y = tf.sin(x)
    assert tf.gradients(y + x, x)[0] is not None  # only x's own path remains
    (g,) = tf.gradients(tf.reduce_sum(y + 2.0 * x), [x])
    for got in _run(g, {x: np.zeros(2, np.float32)}):
        np.testing.assert_allclose(got, [2.0, 2.0])
    assert tf.gradients(y, x) == [None]


def test_registration_errors_as_tf():
    tf.RegisterGradient("Twice")(lambda op, dy: dy)
    with pytest.raises(KeyError, match="Registering two gradient with name 'Twice'"):
        tf.RegisterGradient("Twice")(lambda op, dy: dy)
    with pytest.raises(KeyError, match="Registering two gradient with name 'MatMul'"):
        tf.RegisterGradient("MatMul")(lambda op, dy: dy)  # tfc's own rule is registered
    with pytest.raises(KeyError, match="'Multinomial'"):
        tf.no_gradient("Multinomial")  # declared not differentiable already
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.RegisterGradient(3)
    with pytest.raises(TypeError, match="dictionary mapping strings to strings"):
        with tf.get_default_graph().gradient_override_map({"Square": 1}):
            pass
    x = tf.placeholder(tf.float32, [2])
    with tf.get_default_graph().gradient_override_map({"Square": "Unregistered"}):
        y = tf.square(x)
    with pytest.raises(LookupError, match=r"No gradient defined for operation .* Unregistered"):
        tf.gradients(y, x)
    assert tf.NoGradient is tf.NotDifferentiable


def test_custom_gradient_replaces_the_functions_derivative():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))  # stable where differentiating the ops gives NaN

        return tf.log(1 + e), grad

    @tf.custom_gradient
    def scaled_pair(a, b):
        def grad(da, db):
            return [da * 10.0 + db, db * 0.0]

        return [a * b, a + b], grad

    x = tf.placeholder(tf.float32, [3])
    y = log1pexp(x)
    assert y.op.type == "IdentityN"
    (gx,) = tf.gradients(y, [x])
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    prod, total = scaled_pair(a, b)
    ga, gb = tf.gradients(prod + 2.0 * total, [a, b])
    xv = np.array([0.0, 2.0, 100.0], np.float32)
    for got in _run([y, gx, prod, ga, gb], {x: xv}):
        np.testing.assert_allclose(got[0][:2], np.log1p(np.exp(xv[:2])), rtol=1e-6)
        np.testing.assert_allclose(got[1], 1 - 1 / (1 + np.exp(xv.astype(np.float64))), rtol=1e-6)
        np.testing.assert_allclose(got[2], [3.0, 8.0])
        np.testing.assert_allclose(got[3], [12.0, 12.0])  # da = 1, db = 2: 1 * 10 + 2
        np.testing.assert_allclose(got[4], [0.0, 0.0])

    @tf.custom_gradient
    def wrong_count(a):
        return a * 2.0, lambda dy: [dy, dy]

    with pytest.raises(ValueError, match="expected to return 1 gradients, but returned 2"):
        tf.gradients(wrong_count(a), a)
