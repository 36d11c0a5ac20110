"""tf.contrib.layers and tf.contrib.framework: contrib's names, formulas and variable names."""

import math

import numpy as np
import pytest

import tfc as tf


def test_fully_connected_matches_numpy_and_names_variables_as_contrib():
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    y = tf.contrib.layers.fully_connected(x, 5)
    z = tf.contrib.layers.fully_connected(y, 2, activation_fn=None, scope="logits")
    again = tf.contrib.layers.fully_connected(y, 2)
    names = [v.op.name for v in tf.global_variables()]
    assert names == [
        "fully_connected/weights",
        "fully_connected/biases",
        "logits/weights",
        "logits/biases",
        "fully_connected_1/weights",
        "fully_connected_1/biases",
    ]
    assert tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) == tf.global_variables()
    assert tf.trainable_variables() == tf.global_variables()
    assert again.shape.as_list() == [4, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w1, b1, w2, b2 = sess.run(tf.global_variables()[:4])
        got_y, got_z = sess.run([y, z])
    assert not b1.any() and not b2.any()  # zeros
    np.testing.assert_allclose(got_y, np.maximum(x @ w1, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_z, got_y @ w2, rtol=1e-5, atol=1e-6)
    assert np.abs(w1).max() <= math.sqrt(6 / (3 + 5))  # xavier uniform


def test_fully_connected_options():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    y = tf.contrib.layers.fully_connected(
        x,
        4,
        activation_fn=tf.nn.sigmoid,
        normalizer_fn=lambda t, scale: t * scale,
        normalizer_params={"scale": 2.0},
        weights_initializer=tf.constant_initializer(0.5),
        variables_collections={"weights": ["mine"]},
        outputs_collections=["outs"],
        scope="fc",
    )
    collected = tf.get_collection("mine")
    assert [v.op.name for v in collected] == ["fc/weights"]
    assert tf.get_collection("outs") == [y]
    assert [v.op.name for v in tf.global_variables()] == ["fc/weights"]  # no bias: normalized
    assert y.shape.as_list() == [None, 2, 4]
    value = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y, {x: value})
    want = 1 / (1 + np.exp(-2.0 * (value.sum(-1, keepdims=True) * 0.5)))
    np.testing.assert_allclose(got, np.broadcast_to(want, (2, 2, 4)), rtol=1e-6)
    reused = tf.contrib.layers.fully_connected(
        x, 4, scope="fc", reuse=True, normalizer_fn=tf.identity
    )
    assert len(tf.global_variables()) == 1 and reused.shape.as_list() == [None, 2, 4]
    with pytest.raises(ValueError, match="num_outputs type should be one of"):
        tf.contrib.layers.fully_connected(x, 4.0)
    with pytest.raises(ValueError, match="last dimension known"):
        tf.contrib.layers.fully_connected(tf.placeholder(tf.float32, [None, None]), 2)


@pytest.mark.parametrize(
    "make, shape, n, uniform",
    [
        (lambda: tf.contrib.layers.xavier_initializer(seed=1), [200, 300], 250.0, True),
        (lambda: tf.contrib.layers.xavier_initializer(False, seed=2), [200, 300], 250.0, False),
        (lambda: tf.contrib.layers.variance_scaling_initializer(seed=3), [3, 3, 40, 60], 360.0, 0),
        (
            lambda: tf.contrib.layers.variance_scaling_initializer(
                factor=1.5, mode="FAN_OUT", uniform=True, seed=4
            ),
            [3, 3, 40, 60],
            540.0,
            True,
        ),
    ],
)
def test_initializers_follow_contribs_formulas(make, shape, n, uniform):
    init = make()
    factor = 1.5 if n == 540.0 else (2.0 if n == 360.0 else 1.0)
    v = tf.get_variable("v", shape, initializer=init)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(v).ravel()
    if uniform:
        limit = math.sqrt(3.0 * factor / n)
        assert values.min() >= -limit and values.max() <= limit
        assert values.std() == pytest.approx(limit / math.sqrt(3), rel=0.03)
    else:
        stddev = math.sqrt(1.3 * factor / n)  # of the normal before truncation at 2 stddev
        assert np.abs(values).max() <= 2 * stddev * (1 + 1e-6)
        assert values.std() == pytest.approx(stddev * 0.87962566, rel=0.03)
    assert abs(values.mean()) < 0.05 * values.std()


def test_initializer_errors_and_missing_names():
    with pytest.raises(TypeError, match="non-floating point type"):
        tf.contrib.layers.xavier_initializer(dtype=tf.int32)
    with pytest.raises(TypeError, match="Unknown mode FAN_MAX"):
        tf.contrib.layers.variance_scaling_initializer(mode="FAN_MAX")
    with pytest.raises(AttributeError, match=r"tf\.contrib\.seq2seq is not part of tfc"):
        tf.contrib.seq2seq  # noqa: B018
    with pytest.raises(AttributeError, match=r"tf\.contrib\.rnn\.LSTMBlockCell is not part"):
        tf.contrib.rnn.LSTMBlockCell  # noqa: B018
    with pytest.raises(AttributeError, match=r"tf\.contrib\.layers\.conv3d is not part of tfc"):
        tf.contrib.layers.conv3d  # noqa: B018
    with pytest.raises(AttributeError, match=r"tf\.contrib\.framework\.model_variable is not"):
        tf.contrib.framework.model_variable  # noqa: B018
    assert not hasattr(tf.contrib, "learn")


def test_framework_global_step():
    assert tf.contrib.framework.get_global_step() is None
    step = tf.contrib.framework.get_or_create_global_step()
    assert step is tf.train.get_global_step() and step.op.name == "global_step"
    assert tf.contrib.framework.get_or_create_global_step() is step
    with pytest.raises(ValueError, match='"global_step" already exists'):
        tf.contrib.framework.create_global_step()
    tf.contrib.framework.assert_global_step(step)
