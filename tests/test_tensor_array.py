"""tf.TensorArray: every method against NumPy (compiled and interpreted), in and out of loops,
element shapes fixed by a loop's body, dynamic size grown by a loop's bound, and TF1's errors:
writing an element twice, reading or writing out of range, reading a cleared element."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf
from tfc.ir import errors
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(7)


def both(fetches, feed=None):
    with tf.Session() as sess:
        compiled = sess.run(fetches, feed)
    interpreted = Interpreter().run(fetches, feed)
    for c, i in zip(compiled, interpreted):
        np.testing.assert_array_equal(c, i)
    return compiled


def test_methods_outside_loops():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    ta = tf.TensorArray(tf.float32, size=4, element_shape=[3])
    written = ta.write(2, x[0]).write(0, x[1] * 2.0)
    scattered = tf.TensorArray(tf.float32, size=4).scatter([3, 1], x[:2])
    unstacked = tf.TensorArray(tf.float32, size=4).unstack(x)
    keep = tf.TensorArray(tf.float32, size=4, clear_after_read=False).unstack(x)
    split = tf.TensorArray(tf.float32, size=2).split(tf.reshape(x, [12]), [6, 6])
    fetches = [
        written.read(2),  # 0
        written.read(1),  # 1: never written: zeros
        written.stack(),  # 2
        scattered.gather([1, 3, 0]),  # 3
        unstacked.stack(),  # 4
        keep.read(3) + keep.read(3),  # 5: clear_after_read=False reads twice
        unstacked.concat(),  # 6
        split.stack(),  # 7
        written.size(),  # 8
    ]
    xv = RNG.normal(size=(4, 3)).astype(np.float32)
    got = both(fetches, {x: xv})
    np.testing.assert_array_equal(got[0], xv[0])
    np.testing.assert_array_equal(got[1], np.zeros(3, np.float32))
    np.testing.assert_array_equal(got[2], np.stack([2 * xv[1], np.zeros(3), xv[0], np.zeros(3)]))
    np.testing.assert_array_equal(got[3], np.stack([xv[1], xv[0], np.zeros(3)]))
    np.testing.assert_array_equal(got[4], xv)
    np.testing.assert_array_equal(got[5], 2 * xv[3])
    np.testing.assert_array_equal(got[6], xv.reshape(12))  # 4 elements of [3]
    np.testing.assert_array_equal(got[7], xv.reshape(2, 6))
    assert got[8] == 4


def test_element_shape_from_a_loop_body_and_dynamic_size_grown_by_the_bound():
    """A TensorArray made without an element shape learns it from the body that writes it
    (once the batch is fed); one of dynamic size gets the loop's iteration bound as capacity."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    fixed = tf.TensorArray(tf.float32, size=3)
    growing = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

    def body(i, a, b):
        v = x * tf.cast(i + 1, tf.float32)
        return i + 1, a.write(i, v), b.write(b.size(), tf.reduce_sum(v, 1))

    _, a, b = tf.while_loop(lambda i, a, b: i < 3, body, (0, fixed, growing))
    xv = RNG.normal(size=(5, 2)).astype(np.float32)
    got = both([a.stack(), b.stack(), b.size()], {x: xv})
    np.testing.assert_allclose(got[0], np.stack([xv * k for k in (1, 2, 3)]), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.stack([xv.sum(1) * k for k in (1, 2, 3)]), rtol=1e-6)
    assert got[2] == 3


def test_a_dynamic_array_in_a_loop_with_no_bound_is_a_clear_error():
    n = tf.placeholder(tf.int32, [], name="n")
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    _, ta = tf.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t.write(i, 1.0)), (0, ta),
                          name="fill")  # fmt: skip
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="while_loop 'fill'.*maximum_iterations"):
            sess.run(ta.stack(), {n: 3})


def test_partially_written_dynamic_array_cannot_be_stacked():
    n = tf.placeholder(tf.int32, [], name="n")
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    _, ta = tf.while_loop(
        lambda i, t: i < n, lambda i, t: (i + 1, t.write(i, 1.0)), (0, ta), maximum_iterations=4
    )
    stacked = ta.stack()
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(stacked, {n: 4}), np.ones(4, np.float32))
        with pytest.raises(errors.InvalidArgumentError, match="2 elements written.*capacity 4"):
            sess.run(stacked, {n: 2})


@pytest.mark.parametrize("runner", ["session", "interpreter"])
def test_run_time_errors_name_the_op(runner):
    i = tf.placeholder(tf.int32, [], name="i")
    x = tf.constant([1.0, 2.0])
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[2], name="arr").write(0, x)
    cases = [
        (ta.write(i, x, name="again"), 0, "Could not write to TensorArray index 0 because it has "
         "already been written to", "again"),
        (ta.write(i, x, name="past"), 3, "Tried to write to index 3 but array is not resizeable "
         "and size is: 3", "past"),
        (ta.read(i, name="beyond"), 5, "Tried to read from index 5 but array size is: 3",
         "beyond"),
    ]  # fmt: skip
    twice = tf.identity(ta.read(0)) + ta.read(0, name="twice")  # clear_after_read (TF's default)
    if runner == "session":
        run = tf.Session().run
    else:
        run = Interpreter().run
    for fetch, index, message, where in cases:
        target = fetch.stack() if isinstance(fetch, tf.TensorArray) else fetch
        with pytest.raises(errors.InvalidArgumentError, match=message) as info:
            run(target, {i: index})
        assert where in info.value.op.name
    with pytest.raises(errors.InvalidArgumentError, match="Could not read index 0 twice"):
        run(twice)


def test_bad_values_are_errors_when_the_graph_is_built():
    ta = tf.TensorArray(tf.float32, size=3)
    with pytest.raises(TypeError, match="TensorArray dtype is float32 but Op is trying to write"):
        ta.write(0, tf.constant(1))
    ta = ta.write(0, [1.0])
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(2,\) but expected \(1,\)"):
        ta.write(1, [1.0, 2.0])
    with pytest.raises(ValueError, match="split lengths"):
        tf.TensorArray(tf.float32, size=2).split(tf.zeros([5]), [2, 3])
    with pytest.raises(ValueError, match="element shape of TensorArray"):
        with tf.Session() as sess:
            sess.run(tf.TensorArray(tf.float32, size=2).stack())


def test_gradients_through_tensor_arrays_in_a_loop():
    """d/dx of writes, reads, gather and scatter inside a loop: each element's gradient lands
    in its row (the read's rows are added in place to the gradient carried by the loop)."""
    x = tf.placeholder(tf.float64, [4, 3], name="x")
    w = tf.constant(RNG.normal(size=(4, 3)))
    inputs = tf.TensorArray(tf.float64, size=4).unstack(x)

    def body(t, acc, out):
        v = tf.sin(inputs.read(t)) * acc
        return t + 1, acc + v, out.write(t, v)

    _, acc, out = tf.while_loop(
        lambda t, a, o: t < 4, body, (0, tf.ones([3], tf.float64), tf.TensorArray(tf.float64, 4))
    )
    loss = tf.reduce_sum(out.stack() * w) + tf.reduce_sum(acc)
    (g,) = tf.gradients(loss, x)
    xv = RNG.normal(size=(4, 3))

    def numpy_loss(xv):
        acc, total = np.ones(3), 0.0
        for t in range(4):
            v = np.sin(xv[t]) * acc
            total += (v * w_value[t]).sum()
            acc = acc + v
        return total + acc.sum()

    with tf.Session() as sess:
        w_value = sess.run(w)
        got = sess.run([loss, g], {x: xv})
    assert abs(got[0] - numpy_loss(xv)) < 1e-10
    eps = 1e-6
    fd = np.zeros_like(xv)
    for k in range(xv.size):
        d = np.zeros(xv.size)
        d[k] = eps
        d = d.reshape(xv.shape)
        fd.flat[k] = (numpy_loss(xv + d) - numpy_loss(xv - d)) / (2 * eps)
    np.testing.assert_allclose(got[1], fd, rtol=1e-6, atol=1e-9)


def test_tensor_arrays_in_branches():
    """A branch reading an outside array (clear_after_read marks it: the If carries the flags)
    and branches writing an array they return."""
    x = tf.placeholder(tf.float32, [3, 2], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    ta = tf.TensorArray(tf.float32, size=3).unstack(x)
    y = tf.cond(p, lambda: ta.read(0) * 2.0, lambda: ta.read(2) + 1.0)
    out = tf.TensorArray(tf.float32, size=2, element_shape=[2])
    res = tf.cond(
        p, lambda: out.write(0, x[0]).write(1, x[1]), lambda: out.write(0, x[2]).write(1, x[2])
    )
    xv = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = both([y, res.stack()], {x: xv, p: True})
    np.testing.assert_array_equal(got[0], 2 * xv[0])
    np.testing.assert_array_equal(got[1], xv[:2])
    got = both([y, res.stack()], {x: xv, p: False})
    np.testing.assert_array_equal(got[0], xv[2] + 1)
    np.testing.assert_array_equal(got[1], np.stack([xv[2], xv[2]]))
