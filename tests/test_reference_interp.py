"""The reference interpreter's run loop: each run signature is planned once, as a Session compiles
each of its programs once, and a change of the graph plans again."""

import numpy as np

import tfc as tf
import tfc.reference.interp as interp_module
from tfc.reference.interp import Interpreter


def test_a_run_signature_is_planned_once_and_again_after_the_graph_changes(monkeypatch):
    planned = []
    plan = interp_module.interpreter_program

    def counting(program):
        planned.append(program)
        return plan(program)

    monkeypatch.setattr(interp_module, "interpreter_program", counting)
    x = tf.placeholder(tf.float32, [None])
    v = tf.Variable(tf.zeros([2]))
    step = tf.assign_add(v, x[:2] * 2.0)
    triple = x * 3.0
    runner = Interpreter()
    runner.run(v.initializer)
    for k in range(1, 4):  # the step reads the state each time: the same plan, new values
        got = runner.run(step, {x: np.full(3, k, np.float32)})
        np.testing.assert_array_equal(got, np.full(2, k * (k + 1), np.float32))
    np.testing.assert_array_equal(runner.run(triple, {x: [1.0]}), [3.0])
    np.testing.assert_array_equal(runner.run(triple, {x: [1.0, 2.0]}), [3.0, 6.0])
    assert len(planned) == 4  # init, the step, and x * 3 at each of its feed shapes
    y = v + 1.0  # a new op: the graph's version moves, so the step is planned again
    np.testing.assert_array_equal(runner.run(step, {x: np.ones(2, np.float32)}), [14.0, 14.0])
    np.testing.assert_array_equal(runner.run(y), [15.0, 15.0])
    assert len(planned) == 6
