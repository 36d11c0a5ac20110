"""The variables' ops of tfc/ops/state.py beyond the Assign family (test_session.py): CountUpTo,
against its reference in the interpreter, and the update locks of ops with use_locking."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf
from tfc.reference.interp import Interpreter


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_count_up_to_counts_then_stops_at_its_limit(dtype):
    v = tf.Variable(np.array(2, dtype.np), name="counter")
    counted = tf.count_up_to(v, 5)
    assert counted.dtype == dtype and counted.get_shape().as_list() == []
    for runner in (tf.Session(), Interpreter()):
        runner.run(v.initializer)
        values = [runner.run(counted) for _ in range(3)]
        assert values == [2, 3, 4]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 5") as e:
            runner.run(counted)
        if isinstance(runner, tf.Session):
            assert e.value.op.name == counted.op.name
        assert runner.run(v) == 5  # the failed run did not count


def test_count_up_to_needs_an_integer_scalar_variable():
    with pytest.raises(TypeError, match="not in list of allowed values: int32, int64"):
        tf.count_up_to(tf.Variable(0.0), 3)
    with pytest.raises(ValueError, match="must be rank 0"):
        tf.count_up_to(tf.Variable([0, 0]), 3)
    with pytest.raises(TypeError, match="needs a variable"):
        tf.count_up_to(tf.constant(0), 3)
    assert tf.Variable(0).count_up_to(2).op.type == "CountUpTo"


def test_updates_with_use_locking_hold_their_variables_locks():
    w = tf.Variable(np.zeros(4, np.float32), name="w")
    m = tf.Variable(np.zeros(4, np.float32), name="m")
    locked = tf.train.MomentumOptimizer(0.1, 0.9, use_locking=True)
    train = locked.apply_gradients([(tf.constant([1.0, 2.0, 3.0, 4.0]), w)])
    plain = tf.assign_add(m, [1.0, 1.0, 1.0, 1.0])
    with tf.Session() as sess:
        locked_source = sess.source(train)
        plain_source = sess.source(plain)
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [-0.1, -0.2, -0.3, -0.4])
    # Momentum writes the variable and its accumulator: both locks taken in the order of their
    # names (so no two programs deadlock), released in reverse
    slots = dict(
        line.split(": lock ")[::-1]
        for line in (raw.strip(" *") for raw in locked_source.splitlines())
        if ": lock " in line
    )
    word = {name.split()[0]: f"state[{index}]" for name, index in slots.items()}
    assert sorted(word) == ["w", "w/Momentum"]
    calls = [line.strip() for line in locked_source.splitlines() if "tfc_update_" in line]
    assert calls == [
        f"tfc_update_lock({word['w']});",
        f"tfc_update_lock({word['w/Momentum']});",
        f"tfc_update_unlock({word['w/Momentum']}); tfc_update_unlock({word['w']});",
    ]
    assert "tfc_update_" not in plain_source  # Hogwild, as TF1's default
