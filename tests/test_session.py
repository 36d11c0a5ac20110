"""Session.run: fetch structures, feeds, partial execution, state across runs, errors."""

import collections

import numpy as np
import pytest

import tfc as tf


def test_whitepaper_getting_started():
    a = tf.add(3, 5)
    with tf.Session() as sess:
        result = sess.run(a)
    assert result == 8 and isinstance(result, np.int32)
    x = tf.placeholder(tf.float32)
    y = tf.placeholder(tf.float32)
    z = x + y
    with tf.Session() as sess:
        assert sess.run(z, feed_dict={x: 3, y: 4.5}) == np.float32(7.5)
        np.testing.assert_array_equal(sess.run(z, feed_dict={x: [1, 3], y: [2, 4]}), [3.0, 7.0])


def test_fetch_structures():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2, name="b")
    Pair = collections.namedtuple("Pair", "first second")
    with tf.Session() as sess:
        out = sess.run({"x": [a, (b, a)], "y": Pair(a, b), "op": a.op})
    assert out["x"][0] == 1.0 and out["x"][1] == (2, 1.0)
    assert isinstance(out["y"], Pair) and out["y"].second == 2
    assert out["op"] is None
    with tf.Session() as sess:
        assert sess.run("a:0") == 1.0
        assert sess.run(["a:0", "b"]) == [1.0, None]
        assert sess.run(collections.OrderedDict([("k", a)])) == {"k": 1.0}


def test_feeds_by_name_and_conversion():
    x = tf.placeholder(tf.int32, shape=[None], name="x")
    y = x * 2
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {"x:0": [1, 2, 3]}), [2, 4, 6])
        np.testing.assert_array_equal(sess.run(y, {x: np.array([1.9, -1.9])}), [2, -2])
        # the same program serves every feed of the same shape; another shape compiles anew
        assert len(sess._programs) == 2
        sess.run(y, {x: [4, 5]})
        assert len(sess._programs) == 2


def test_any_tensor_can_be_fed():
    x = tf.placeholder(tf.float32, [2], name="x")
    h = tf.exp(x, name="h")
    y = h * 3.0
    with tf.Session() as sess:
        # feeding h cuts the graph there: x need not be fed
        np.testing.assert_allclose(sess.run(y, {h: [1.0, 2.0]}), [3.0, 6.0])
        # fetching a fed tensor returns the fed value
        np.testing.assert_allclose(sess.run(h, {h: [5.0, 6.0]}), [5.0, 6.0])
        assert "Exp" not in sess.source(y, {h: [1.0, 2.0]}).split("*/", 1)[1]


def test_placeholder_with_default():
    x = tf.placeholder_with_default(tf.constant([1.0, 2.0]), shape=[None])
    y = x * 10.0
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), [10.0, 20.0])
        np.testing.assert_allclose(sess.run(y, {x: [3.0, 4.0, 5.0]}), [30.0, 40.0, 50.0])


def test_a_default_that_a_feed_may_replace_is_not_a_constant_when_building():
    """What a graph's structure depends on must not bake in a default a run can replace:
    a keep probability given as placeholder_with_default(1.0) still drops when fed 0.5."""
    from tfc.ops.registry import constant_value

    keep = tf.placeholder_with_default(1.0, [])
    scaled = keep * 2.0
    assert constant_value(tf.get_default_graph(), (scaled.op.name, 0)) is None
    with pytest.raises(ValueError, match="maxlen must be known when the program is compiled"):
        tf.sequence_mask([1, 2], tf.placeholder_with_default(3, []))  # the width a feed changes
    with tf.Session() as sess:
        assert sess.run(scaled) == 2.0 and sess.run(scaled, {keep: 0.5}) == 1.0


def test_missing_feed_error():
    x = tf.placeholder(tf.float32, shape=[None, 784], name="x")
    y = x + 1.0
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"You must feed a value for placeholder tensor 'x' with dtype "
            r"float and shape \[\?,784\]",
        ):
            sess.run(y)
    u = tf.placeholder(tf.int32, name="u")
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="placeholder tensor 'u' with dtype int32$"
        ):
            sess.run(u * 2)


def test_feed_shape_error():
    x = tf.placeholder(tf.float32, shape=[None, 4], name="x")
    with tf.Session() as sess:
        with pytest.raises(
            ValueError,
            match=r"Cannot feed value of shape \(3,\) for Tensor "
            r"'x:0', which has shape '\(\?, 4\)'",
        ):
            sess.run(x * 2.0, {x: [1.0, 2.0, 3.0]})


def test_feed_value_not_convertible():
    x = tf.placeholder(tf.float32, name="x")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Cannot convert the value fed for 'x:0' to float32"):
            sess.run(x * 2.0, {x: "abc"})
        with pytest.raises(TypeError, match="The value of a feed cannot be a tf.Tensor"):
            sess.run(x * 2.0, {x: tf.constant(1.0)})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(x * 2.0, {"nothing:0": 1.0})


def test_fetch_from_another_graph():
    other = tf.Graph()
    with other.as_default():
        c = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="is not an element of this graph"):
            sess.run(c)
        with pytest.raises(TypeError, match="Fetch argument None"):
            sess.run(None)


def test_closed_session():
    sess = tf.Session()
    a = tf.constant(1)
    sess.run(a)
    sess.close()
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session"):
        sess.run(a)


def test_eval_and_run_use_the_default_session():
    a = tf.constant(4.0)
    with pytest.raises(ValueError, match="No default session"):
        a.eval()
    with tf.Session():
        assert a.eval() == 4.0
        tf.no_op(name="nothing").run()
    sess = tf.Session()
    with sess.as_default():
        assert (a * 2.0).eval() == 8.0
    assert (a * 3.0).eval(session=sess) == 12.0
    sess.close()
    inter = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is inter
        assert a.eval() == 4.0
    finally:
        inter.close()
    assert tf.get_default_session() is None


def test_session_on_explicit_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [2])
        y = tf.square(x)
    with tf.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [3.0, 4.0]}), [9.0, 16.0])


def test_whitepaper_programming_model_example():
    # Figure 1 of the TensorFlow whitepaper, with the Python 2 `xrange` spelled `range`
    b = tf.Variable(tf.zeros([100]))
    W = tf.Variable(tf.random_uniform([784, 100], -1, 1))
    x = tf.placeholder(name="x")
    relu = tf.nn.relu(tf.matmul(W, x) + b)
    C = [relu]
    s = tf.Session()
    s.run(tf.global_variables_initializer())
    weights = s.run(W)
    for _ in range(0, 10):
        inputs = np.random.default_rng(0).random((100, 1), dtype=np.float32)
        result = s.run(C, feed_dict={x: inputs})
    expected = np.maximum(weights @ inputs + np.zeros(100, np.float32), 0)
    np.testing.assert_allclose(result[0], expected, rtol=1e-5, atol=1e-5)
    assert result[0].shape == (784, 100)


def test_variables_persist_and_accumulate():
    counter = tf.Variable(0, name="counter")
    step = tf.assign_add(counter, 1)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        for expected in (1, 2, 3):
            assert sess.run(step) == expected
        assert sess.run(counter) == 3
    with tf.Session() as sess:  # a new session starts from scratch
        with pytest.raises(
            tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value counter"
        ):
            sess.run(step)


def test_uninitialized_variable_error():
    W = tf.Variable(tf.zeros([2, 2]), name="W")
    y = tf.matmul(W, W)
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value W"
        ):
            sess.run(y)
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y), np.zeros((2, 2)))


def test_partial_execution_skips_unneeded_stateful_ops():
    x = tf.placeholder(tf.float32, [3], name="x")
    counter = tf.Variable(0.0, name="counter")
    bump = counter.assign_add(1.0, name="bump")
    y = tf.multiply(x, 2.0, name="double")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y, {x: [1.0, 2.0, 3.0]})
        assert sess.run(counter) == 0.0  # bump is not needed by y, so it did not run
        source = sess.source(y, {x: [1.0, 2.0, 3.0]})
        assert "double (Mul)" in source and "bump" not in source and "counter" not in source
        sess.run(bump)
        assert sess.run(counter) == 1.0


def test_reads_see_the_variable_before_an_unrelated_write():
    v = tf.Variable([1.0, 2.0], name="v")
    doubled = v * 2.0
    update = v.assign_add([10.0, 10.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        d, u = sess.run([doubled, update])
        np.testing.assert_array_equal(d, [2.0, 4.0])  # read before the write
        np.testing.assert_array_equal(u, [11.0, 12.0])
        with tf.control_dependencies([update]):
            after = v.read_value() * 1.0
        np.testing.assert_array_equal(sess.run(after), [21.0, 22.0])


def test_assign_family_and_variable_methods():
    w = tf.Variable([1, 2, 3], name="w")
    assert repr(w) == "<tf.Variable 'w:0' shape=(3,) dtype=int32_ref>"
    assert w.op.name == "w" and w.initializer.name == "w/Assign" and w.value().name == "w/read:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w.assign([4, 5, 6])), [4, 5, 6])
        np.testing.assert_array_equal(sess.run(tf.assign_sub(w, [1, 1, 1])), [3, 4, 5])
        np.testing.assert_array_equal(sess.run(w + 1), [4, 5, 6])
        w.load([7, 8, 9], sess)
        np.testing.assert_array_equal(w.eval(sess), [7, 8, 9])
    with pytest.raises(ValueError, match="Shapes must be equal"):
        w.assign([1, 2])
    with pytest.raises(TypeError, match="needs a variable to update"):
        tf.assign(tf.constant(1), 2)


def test_programs_share_variables():
    v = tf.Variable(tf.ones([4]), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.assign(v * 3.0))
        np.testing.assert_array_equal(sess.run(v), [3.0] * 4)
        np.testing.assert_array_equal(sess.run(v + 0.5), [3.5] * 4)


def test_get_variable_and_scopes():
    with tf.variable_scope("layer1"):
        w = tf.get_variable("w", [3, 4], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [4], initializer=tf.constant_initializer(0.5))
    assert w.name == "layer1/w:0" and b.name == "layer1/b:0"
    with pytest.raises(ValueError, match="already exists, disallowed"):
        with tf.variable_scope("layer1"):
            tf.get_variable("w", [3, 4])
    with tf.variable_scope("layer1", reuse=True):
        assert tf.get_variable("w") is w
        with pytest.raises(ValueError, match="does not exist"):
            tf.get_variable("missing", [1])
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        g1 = tf.get_variable("g", [5, 7])
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("g", [5, 7]) is g1
    assert set(tf.trainable_variables()) == {w, b, g1}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(b), [0.5] * 4)
        glorot = sess.run(g1)  # get_variable's default: glorot uniform in +-sqrt(6/(5+7))
    limit = np.sqrt(6.0 / 12.0)
    assert np.abs(glorot).max() <= limit and np.abs(glorot).max() > 0.5 * limit
    assert glorot.std() == pytest.approx(limit / np.sqrt(3.0), rel=0.35)


def test_initializers_match_their_distributions():
    shape = [200, 300]
    vs = {
        "ones": tf.get_variable("ones", shape, initializer=tf.ones_initializer()),
        "uniform": tf.get_variable(
            "u", shape, initializer=tf.random_uniform_initializer(-2, 2, seed=1)
        ),
        "normal": tf.get_variable(
            "n", shape, initializer=tf.random_normal_initializer(1, 3, seed=2)
        ),
        "trunc": tf.get_variable(
            "t", shape, initializer=tf.truncated_normal_initializer(0, 2, seed=3)
        ),
        "glorot": tf.get_variable("g", shape, initializer=tf.glorot_uniform_initializer(seed=4)),
    }
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        v = sess.run(vs)
    assert (v["ones"] == 1).all()
    assert v["uniform"].min() >= -2 and v["uniform"].max() < 2
    assert abs(v["uniform"].mean()) < 0.03 and abs(v["uniform"].std() - 4 / np.sqrt(12)) < 0.02
    assert abs(v["normal"].mean() - 1) < 0.05 and abs(v["normal"].std() - 3) < 0.05
    assert np.abs(v["trunc"]).max() < 4.0 and abs(v["trunc"].std() - 2 * 0.8796) < 0.03
    limit = np.sqrt(6.0 / 500.0)
    assert (
        np.abs(v["glorot"]).max() <= limit and abs(v["glorot"].std() - limit / np.sqrt(3)) < 0.002
    )
