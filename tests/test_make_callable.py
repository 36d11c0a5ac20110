"""Session.make_callable and the plans repeat runs take: the same values as Session.run, the
fetches' structure kept, fresh arrays each call, TF1's errors for bad calls."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import tfc as tf


@pytest.fixture(scope="module")
def model():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        y = tf.matmul(x, w, name="y")
        total = tf.reduce_sum(y, name="total")
        bump = tf.assign_add(w, tf.ones([3, 2]), name="bump")
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    yield sess, x, w, y, total, bump
    sess.close()


def feed(rows: int = 2, scale: float = 1.0) -> np.ndarray:
    return (np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) - 2.0) * scale


def test_callable_matches_run_in_every_fetch_structure(model):
    sess, x, _, y, total, _ = model
    Pair = collections.namedtuple("Pair", ["out", "sum"])
    structures = [y, [y, total], (total, y), {"out": y, "sum": [total]}, Pair(y, total)]
    for fetches in structures:
        call = sess.make_callable(fetches, [x])
        for scale in (1.0, -0.5, 3.0):  # the first call plans, the later ones take the plan
            got, want = call(feed(scale=scale)), sess.run(fetches, {x: feed(scale=scale)})
            assert type(got) is type(want)
            for g, e in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
                np.testing.assert_array_equal(g, e)
    scalar = sess.make_callable(total, [x])(feed())
    assert isinstance(scalar, np.float32)  # 0-d fetches come back as NumPy scalars, as in TF1
    assert scalar == np.float32(np.sum(feed() @ np.arange(6, dtype=np.float32).reshape(3, 2)))


def test_repeat_runs_return_fresh_arrays_and_read_feeds_in_place(model):
    sess, x, _, y, _, _ = model
    call = sess.make_callable(y, [x])
    first = call(feed())
    assert call.program is not None  # the repeat calls below take the plan's path
    kept = first.copy()
    second = call(feed(scale=2.0))
    np.testing.assert_array_equal(first, kept)  # a later call does not overwrite it
    assert not np.shares_memory(first, second)
    third = sess.run(y, {x: feed(scale=2.0)})
    assert not np.shares_memory(second, third)
    np.testing.assert_array_equal(second, third)


def test_read_only_and_offset_feeds_are_read_in_place(model):
    sess, x, w, y, _, _ = model
    call = sess.make_callable(y, [x])
    weights = sess.run(w)
    raw = np.concatenate([np.zeros(3, np.float32), feed().ravel()]).tobytes()
    view = np.frombuffer(raw, np.float32)[3:].reshape(2, 3)  # read-only, inside a bigger buffer
    assert not view.flags.writeable
    for _ in range(2):
        np.testing.assert_array_equal(call(view), feed() @ weights)
        np.testing.assert_array_equal(sess.run(y, {x: view}), feed() @ weights)


def test_feeds_the_plan_was_not_made_for_take_the_generic_path(model):
    sess, x, w, y, _, _ = model
    call = sess.make_callable(y, [x])
    weights = sess.run(w)
    value = feed(4)
    call(value)
    for odd in (
        np.asfortranarray(value),  # not C-contiguous
        value[::2],  # strided
        value.astype(np.float64),  # another dtype: converted as run converts it
        value.tolist(),  # a Python list
        feed(5),  # another batch size: its own program
    ):
        expected = np.asarray(odd, dtype=np.float32) @ weights
        np.testing.assert_allclose(call(odd), expected, rtol=1e-6)
        np.testing.assert_allclose(sess.run(y, {x: odd}), expected, rtol=1e-6)


def test_bad_calls_fail_as_in_tf(model):
    sess, x, _, y, _, _ = model
    call = sess.make_callable(y, [x])
    call(feed())
    with pytest.raises(TypeError, match="takes 1 feed values"):
        call()
    with pytest.raises(TypeError, match="takes 1 feed values"):
        call(feed(), feed())
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 4\) for Tensor 'x:0'"):
        call(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 4\) for Tensor 'x:0'"):
        sess.run(y, {x: np.zeros((2, 4), np.float32)})
    with pytest.raises(TypeError, match="accept_options"):
        call(feed(), options=tf.RunOptions())
    with pytest.raises(TypeError, match="feed_list"):
        sess.make_callable(y, x)
    with pytest.raises(TypeError, match="Cannot interpret feed_list key"):
        sess.make_callable(y, ["nothing:0"])
    with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
        sess.make_callable("nothing:0", [x])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value"):
        sess.make_callable(y)()  # TF1 too: x has no value


def test_options_variables_and_graph_changes(model):
    sess, x, w, y, _, bump = model
    with_options = sess.make_callable(y, [x], accept_options=True)
    np.testing.assert_array_equal(
        with_options(feed(), options=tf.RunOptions(timeout_in_ms=1000)),
        sess.run(y, {x: feed()}),
    )
    step = sess.make_callable((bump,), ["x:0"])  # feed keys by name (x is not needed)
    before = sess.run(w)
    for i in range(1, 4):  # each call updates the variable: no plan skips the update
        (updated,) = step(feed())
        np.testing.assert_array_equal(updated, before + i)
    np.testing.assert_array_equal(sess.run(y, {x: feed()}), feed() @ (before + 3))
    with sess.graph.as_default():  # a changed graph: repeat runs re-plan
        doubled = tf.multiply(y, 2.0, name="doubled")
    np.testing.assert_array_equal(
        sess.make_callable(doubled, [x])(feed()), 2 * sess.run(y, {x: feed()})
    )


def test_uninitialized_variables_and_closed_sessions():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        v = tf.Variable([1.0, 2.0], name="v")
        y = x * v
    sess = tf.Session(graph=graph)
    call = sess.make_callable(y, [x])
    for _ in range(2):
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
            call(np.ones(2, np.float32))
    sess.run(v.initializer)
    np.testing.assert_array_equal(call(np.ones(2, np.float32)), [1.0, 2.0])
    np.testing.assert_array_equal(call(np.ones(2, np.float32)), [1.0, 2.0])
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        call(np.ones(2, np.float32))
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y, {x: np.ones(2, np.float32)})
