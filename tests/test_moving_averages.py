"""tf.train.ExponentialMovingAverage against its formula in NumPy (and TensorFlow's own)."""

import numpy as np
import pytest

import tfc as tf

W0 = np.array([1.0, -2.0, 0.5], np.float32)
DELTAS = [np.array(d, np.float32) for d in ([0.5, 1.0, -1.0], [2.0, 0.0, 0.25], [-1.5, 3.0, 1.0])]


def _ema_reference(decay, num_updates_from=None, zero_debias=False, start=None):
    """The shadows after each step: w moves by DELTAS[i], then the average updates."""
    w = W0.astype(np.float64)
    shadow = w.copy() if start is None else start.copy()
    biased, local_step = np.zeros_like(w), 0
    out = []
    for i, d in enumerate(DELTAS):
        w = w + d
        rate = decay
        if num_updates_from is not None:
            n = num_updates_from + i
            rate = min(decay, (1 + n) / (10 + n))
        if zero_debias:
            biased -= (biased - w) * (1 - rate)
            local_step += 1
            shadow = biased / (1 - rate**local_step)
        else:
            shadow -= (shadow - w) * (1 - rate)
        out.append(shadow.copy())
    return out


def _graph(**ema_args):
    """w, a step counter and one training step that moves w, then updates w's average."""
    w = tf.Variable(W0, name="w")
    counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="counter")
    delta = tf.placeholder(tf.float32, [3])
    move = tf.group(tf.assign_add(w, delta), tf.assign_add(counter, 1))
    num_updates = counter if ema_args.pop("count", False) else None
    ema = tf.train.ExponentialMovingAverage(0.8, num_updates=num_updates, **ema_args)
    with tf.control_dependencies([move]):
        train = ema.apply([w])
    return w, delta, train, ema


@pytest.mark.parametrize("count", [False, True])
def test_variable_average_follows_the_formula(count):
    w, delta, train, ema = _graph(count=count)
    shadow = ema.average(w)
    assert shadow.name == "w/ExponentialMovingAverage:0" and not shadow.trainable
    assert train.name == "ExponentialMovingAverage" and train.type == "NoOp"
    assert tf.moving_average_variables() == [w]
    assert shadow in tf.global_variables() and shadow not in tf.trainable_variables()
    # the counter is read after the step moves it, so step i sees num_updates = i + 1
    want = _ema_reference(0.8, num_updates_from=1 if count else None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(shadow), W0)  # starts at w's initial value
        for d, expected in zip(DELTAS, want):
            sess.run(train, {delta: d})
            np.testing.assert_allclose(sess.run(shadow), expected, rtol=1e-6)


def test_tensor_average_starts_at_zero_and_debiases():
    w = tf.Variable(W0, name="w")
    delta = tf.placeholder(tf.float32, [3])
    move = tf.assign_add(w, delta)
    with tf.control_dependencies([move]):
        value = tf.identity(w.read_value(), name="value")
    plain = tf.train.ExponentialMovingAverage(0.7, name="plain")
    debiased = tf.train.ExponentialMovingAverage(0.7, zero_debias=True, name="debiased")
    train = tf.group(plain.apply([value]), debiased.apply([value]))
    names = {v.op.name for v in tf.global_variables()}
    assert {"value/plain", "value/debiased", "value/debiased/biased"} <= names
    assert "value/debiased/local_step" in names and "value/plain/biased" not in names
    assert tf.moving_average_variables() == []  # only variables are recorded there
    zeros = np.zeros(3)
    want_plain = _ema_reference(0.7, start=zeros)
    want_debiased = _ema_reference(0.7, zero_debias=True, start=zeros)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for d, p, q in zip(DELTAS, want_plain, want_debiased):
            sess.run(train, {delta: d})
            got = sess.run([plain.average(value), debiased.average(value)])
            np.testing.assert_allclose(got[0], p, rtol=1e-6)
            np.testing.assert_allclose(got[1], q, rtol=1e-6)
    np.testing.assert_allclose(want_debiased[0], W0 + DELTAS[0])  # debiased: no pull to zero


def test_float64_variable_uses_a_float32_decay_like_tf1():
    w = tf.Variable(np.array([1.0, 3.0]), name="w")
    ema = tf.train.ExponentialMovingAverage(0.9)
    update = ema.apply([w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(w, [2.0, 5.0]))
        sess.run(update)
        got = sess.run(ema.average(w))
    rate = np.float64(np.float32(1.0) - np.float32(0.9))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.array([1.0, 3.0]) - (np.array([-1.0, -2.0]) * rate))


def test_names_restore_map_and_errors(tmp_path):
    w = tf.Variable(W0, name="w")
    with tf.variable_scope("layer"):
        b = tf.get_variable("b", [2], initializer=tf.ones_initializer())
    step = tf.train.get_or_create_global_step()
    ema = tf.train.ExponentialMovingAverage(0.5)
    assert ema.average_name(w) == "w/ExponentialMovingAverage"  # before apply: the name to be
    with tf.name_scope("outer"):
        update = ema.apply()  # the trainable variables
    assert update.name == "outer/ExponentialMovingAverage"
    assert ema.average(b).op.name == "layer/b/ExponentialMovingAverage"
    assert ema.average(step) is None
    again = tf.train.ExponentialMovingAverage(0.5).apply([w])
    assert again is not None and "w/ExponentialMovingAverage_1" in {
        v.op.name for v in tf.global_variables()
    }
    restore = ema.variables_to_restore()
    assert restore["w/ExponentialMovingAverage"] is w
    assert restore["layer/b/ExponentialMovingAverage"] is b
    assert restore["global_step"] is step
    with pytest.raises(TypeError, match="must be half, float, or double: global_step"):
        ema.apply([step])

    # a checkpoint's averages load into the model's variables through the restore map
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(w, W0 + 4.0))
        sess.run(update)
        path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    tf.reset_default_graph()
    w2 = tf.Variable(np.zeros(3, np.float32), name="w")
    with tf.variable_scope("layer"):
        tf.get_variable("b", [2], initializer=tf.zeros_initializer())
    tf.train.get_or_create_global_step()
    saver = tf.train.Saver(tf.train.ExponentialMovingAverage(0.5).variables_to_restore())
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_allclose(sess.run(w2), W0 + 2.0)  # halfway from W0 to W0 + 4


def test_moving_averages_match_tensorflow():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    results = {}
    for name, lib in [("tf", tf1), ("tfc", tf)]:
        graph = lib.Graph()
        with graph.as_default():
            w = lib.Variable(W0, name="w")
            counter = lib.Variable(0, dtype=lib.int64, trainable=False, name="counter")
            delta = lib.placeholder(lib.float32, [3])
            move = lib.group(lib.assign_add(w, delta), lib.assign_add(counter, 1))
            with lib.control_dependencies([move]):
                value = lib.identity(w.read_value(), name="value")
                ema = lib.train.ExponentialMovingAverage(0.95, num_updates=counter)
                debias = lib.train.ExponentialMovingAverage(0.6, zero_debias=True, name="db")
                train = lib.group(ema.apply([w]), debias.apply([value]))
            names = sorted(v.op.name for v in lib.global_variables())
            with lib.Session(graph=graph) as sess:
                sess.run(lib.global_variables_initializer())
                values = []
                for d in DELTAS:
                    sess.run(train, {delta: d})
                    values.append(sess.run([ema.average(w), debias.average(value)]))
            results[name] = names, values, sorted(ema.variables_to_restore())
    assert results["tfc"][0] == results["tf"][0]
    assert results["tfc"][2] == results["tf"][2]
    for got, want in zip(results["tfc"][1], results["tf"][1]):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
