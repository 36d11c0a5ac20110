"""TF1's small framework functions: shapes, static values, conversions, collections, variable
helpers, templates, device specs."""

import numpy as np
import pytest

import tfc as tf
from tfc.reference.interp import Interpreter


def test_dimension_helpers():
    assert tf.dimension_value(tf.Dimension(3)) == 3
    assert tf.dimension_value(tf.Dimension(None)) is None
    assert tf.dimension_value(4) == 4 and tf.dimension_value(None) is None
    shape = tf.TensorShape([2, None])
    assert tf.dimension_at_index(shape, 0).value == 2
    assert tf.dimension_at_index(shape, 1).value is None
    assert tf.dimension_at_index(tf.TensorShape(None), 5).value is None
    assert tf.dimension_value(tf.placeholder(tf.float32, [None, 7]).shape[1]) == 7


def test_is_tensor_and_static_values():
    v = tf.Variable(np.ones(2, np.float32))
    assert tf.is_tensor(tf.constant(1)) and tf.is_tensor(v)
    assert not tf.is_tensor(1.0) and not tf.is_tensor(np.ones(2))
    np.testing.assert_array_equal(tf.get_static_value(tf.constant([1, 2]) + 1), [2, 3])
    x = tf.placeholder(tf.float32, [2, 3])
    np.testing.assert_array_equal(tf.get_static_value(tf.shape(x)), [2, 3])
    assert tf.get_static_value(x * 2.0) is None
    assert tf.get_static_value(v) is None  # the session holds a variable's value
    assert tf.get_static_value([5, 6]) == [5, 6]  # Python values come back as they are


def test_conversions_without_sparse_types():
    t = tf.convert_to_tensor_or_indexed_slices([1, 2], dtype=tf.int64, name="c")
    assert t.dtype == tf.int64 and t.op.name == "c"
    s = tf.convert_to_tensor_or_sparse_tensor([[1.0]])
    assert s.dtype == tf.float32 and s.shape.as_list() == [1, 1]


def test_collections_and_variable_helpers():
    tf.add_to_collections(["a", "b"], 7)
    assert tf.get_collection("a") == [7] and tf.get_collection("b") == [7]
    local = tf.get_local_variable("counter", [2], initializer=tf.zeros_initializer())
    assert local in tf.local_variables() and local not in tf.global_variables()
    assert local not in tf.trainable_variables()
    w = tf.get_variable("w", [1])
    tf.add_to_collection(tf.GraphKeys.MODEL_VARIABLES, w)
    assert tf.model_variables() == [w]
    init = tf.initialize_variables([w])
    assert init.type == "NoOp" and w.initializer in init.control_inputs
    with tf.Session() as sess:
        sess.run([tf.initialize_local_variables(), tf.tables_initializer()])
        np.testing.assert_array_equal(sess.run(local.value()), [0.0, 0.0])
    assert tf.tables_initializer().name.startswith("init_all_tables")
    assert tf.initialize_all_tables().type == "NoOp"


def test_make_template_shares_variables():
    def dense(x, units):
        w = tf.get_variable("w", [3, units], initializer=tf.ones_initializer())
        return tf.matmul(x, w)

    layer = tf.make_template("dense", dense, units=2)
    x = tf.constant(np.ones((1, 3), np.float32))
    a, b = layer(x), layer(x * 2.0)
    assert [v.op.name for v in tf.global_variables()] == ["dense/w"]
    assert layer.variable_scope_name == "dense"
    other = tf.make_template("dense", dense, units=1, create_scope_now_=True)
    assert other.variable_scope_name == "dense_1"
    other(x)
    assert "dense_1/w" in [v.op.name for v in tf.global_variables()]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run([a, b]), [[[3.0, 3.0]], [[6.0, 6.0]]])

    def makes_plain_variables(x):
        return x * tf.Variable(1.0)

    bad = tf.make_template("bad", makes_plain_variables)
    bad(x)
    with pytest.raises(ValueError, match="Trainable variable created when calling a template"):
        bad(x)


def test_device_spec_and_op_error():
    spec = tf.DeviceSpec(job="ps", task=1, device_type="CPU", device_index=0)
    assert spec.to_string() == "/job:ps/task:1/device:CPU:0"
    assert tf.DeviceSpec.from_string("/job:worker/gpu:1").device_type == "GPU"
    with tf.device(spec):
        assert tf.constant(1.0).device == "/job:ps/task:1/device:CPU:0"
    assert issubclass(tf.errors.InvalidArgumentError, tf.OpError)
    assert tf.OpError is tf.errors.OpError


def test_namespaces_name_the_same_functions():
    assert tf.manip.roll is tf.roll and tf.manip.gather_nd is tf.gather_nd
    assert tf.random.uniform is tf.random_uniform and tf.random.normal is tf.random_normal
    assert tf.random.truncated_normal is tf.truncated_normal
    assert tf.random.set_random_seed is tf.set_random_seed and tf.random.get_seed is tf.get_seed
    assert tf.random.poisson is tf.random_poisson and tf.random.multinomial is tf.multinomial


def test_is_variable_initialized_answers_from_the_session():
    a = tf.Variable(np.ones(2, np.float32), name="a")
    b = tf.Variable(np.zeros(3, np.float32), name="b")
    flags = [tf.is_variable_initialized(a), tf.is_variable_initialized(b)]
    assert flags[0].dtype == tf.bool and flags[0].shape.as_list() == []
    both = tf.logical_and(*flags)
    with tf.Session() as sess:
        assert sess.run(flags) == [False, False]
        sess.run(a.initializer)
        assert sess.run([flags, both]) == [[True, False], False]
        sess.run(b.initializer)
        assert sess.run(both)
        assert not sess.run(both, {flags[1]: False})  # a fed answer wins
    with tf.Session() as fresh:  # another session: its own variables
        assert fresh.run(flags) == [False, False]
    interp = Interpreter()
    assert interp.run(flags) == [False, False]
    interp.run(a.initializer)
    assert interp.run(flags) == [True, False]
    with pytest.raises(TypeError, match="needs a variable"):
        tf.is_variable_initialized(tf.constant(1.0))
