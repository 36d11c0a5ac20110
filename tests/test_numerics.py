"""tf.check_numerics: finite values pass through unchanged; NaN or Inf stops the run."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(77)
F = ["float32", "float64"]


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in F:
            big = np.finfo(dtype).max
            for shape in [(), (5,), (3, 4), (2, 3, 4), (0, 3)]:
                x = (RNG.standard_normal(shape) * 10).astype(dtype)
                b.add(f"pass-{dtype}-{shape}", tf.check_numerics(b.feed(x), "x"), x)
            edge = np.array([big, -big, np.finfo(dtype).tiny, 0.0, -0.0], dtype)
            b.add(f"edge-{dtype}", tf.debugging.check_numerics(b.feed(edge), "edge"), edge)
            x = RNG.standard_normal((3, 4)).astype(dtype)
            checked = tf.check_numerics(b.feed(x) * 2, "doubled") + 1
            b.add(f"in-a-chain-{dtype}", checked, x * 2 + 1)
            b.add(f"verify-{dtype}", tf.verify_tensor_all_finite(x, "msg"), x)
            b.add(f"const-{dtype}", tf.check_numerics(tf.constant(x), "c"), x)
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_finite_values_pass_unchanged(case):
    BATCH.check(case)


def _bad_values(dtype):
    base = np.ones((2, 3), dtype)
    nan, inf, both = base.copy(), base.copy(), base.copy()
    nan[1, 2] = np.nan
    inf[0, 1] = -np.inf
    both[0, 0], both[1, 1] = np.inf, np.nan
    return [(nan, "NaN"), (inf, "Inf"), (both, "Inf and NaN")]


def test_nan_or_inf_stops_the_run_naming_the_node():
    x = tf.placeholder(tf.float64, [None, 3], name="x")
    v = tf.Variable(np.zeros(3), name="v")
    with tf.name_scope("layer"):
        checked = tf.check_numerics(x * 2.0, "activations of layer", name="check")
    after = tf.assign_add(v, tf.reduce_sum(checked, 0))  # must not run when the check fails
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for bad, found in _bad_values("float64"):
            want = f"activations of layer : Tensor had {found} values"
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(after, {x: bad})
            assert info.value.message == want
            assert info.value.op.name == "layer/check"
            assert str(info.value) == f"{want}\n\t [[node layer/check]]"
            with pytest.raises(tf.errors.InvalidArgumentError) as ref:
                Interpreter().run(checked, {x: bad})
            assert str(ref.value) == str(info.value)
        np.testing.assert_array_equal(sess.run(v), np.zeros(3))
        # the session still works after failed runs, with the same compiled program
        good = np.arange(6.0).reshape(2, 3)
        np.testing.assert_array_equal(sess.run(after, {x: good}), [6.0, 10.0, 14.0])
        np.testing.assert_array_equal(sess.run(checked, {x: good}), good * 2)


def test_float32_checks_and_computed_nan():
    x = tf.placeholder(tf.float32, [4], name="x")
    ratio = tf.check_numerics(x / x, "ratio")  # 0 / 0 is NaN, 1 / 0 is not reached here
    big = tf.check_numerics(x * x, "square")  # overflows to Inf in float32
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="ratio : Tensor had NaN values"):
            sess.run(ratio, {x: np.array([1, 2, 0, 3], np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="square : Tensor had Inf values"):
            sess.run(big, {x: np.array([1, 3e20, 0, 3], np.float32)})
        np.testing.assert_array_equal(sess.run(big, {x: np.float32([1, 2, 3, 4])}), [1, 4, 9, 16])


def test_messages_are_kept_verbatim():
    message = 'a "quoted" 100% message\\with\nlines'
    x = tf.placeholder(tf.float32, [2])
    checked = tf.check_numerics(x, message)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(checked, {x: np.float32([np.nan, 1])})
    assert info.value.message == f"{message} : Tensor had NaN values"


def test_argument_errors():
    with pytest.raises(TypeError, match="'tensor' has DataType int32 not in list of allowed"):
        tf.check_numerics(tf.constant([1, 2]), "ints")
    with pytest.raises(TypeError, match="Expected string for argument 'message'"):
        tf.check_numerics(tf.constant([1.0]), None)
    op = tf.check_numerics(tf.constant([1.0]), "m", name="guard").op
    assert op.name == "guard" and op.type == "CheckNumerics" and op.get_attr("message") == "m"


def test_add_check_numerics_ops_checks_every_float_tensor():
    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.Variable(np.float32([1, 2, 3]), name="w")
    y = tf.log(x * w, name="log")
    counted = tf.cast(
        tf.shape(x), tf.float32
    )  # ints are not checked; floats computed from them are
    check = tf.add_check_numerics_ops()
    checks = [op for op in tf.get_default_graph().get_operations() if op.type == "CheckNumerics"]
    checked = sorted(op.get_attr("message") for op in checks)
    assert "log:0" in checked and "x:0" in checked and "w/read:0" in checked
    assert counted.op.name + ":0" in checked and "w:0" not in checked
    assert not any(m.startswith("w/Assign") for m in checked)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, check], {x: np.float32([1, 1, 1])})
        np.testing.assert_allclose(out, np.log([1, 2, 3]), rtol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"^log:0 : Tensor had NaN"):
            sess.run(check, {x: np.float32([1, -1, 1])})
        np.testing.assert_array_equal(sess.run(w), [1, 2, 3])


def test_gradient_is_checked_too():
    x = tf.placeholder(tf.float64, [3])
    checked = tf.check_numerics(x, "input")
    (g,) = tf.gradients(tf.reduce_sum(tf.sqrt(checked)), x)
    assert g.op.type == "CheckNumerics"
    assert g.op.get_attr("message") == (
        "Not a number (NaN) or infinity (Inf) values detected in gradient. input"
    )
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, 4.0, 16.0]}), [0.5, 0.25, 0.125])
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"detected in gradient\. input : Tensor had Inf values",
        ):
            sess.run(g, {x: [1.0, 0.0, 16.0]})  # d sqrt(x) / dx is Inf at 0


def test_a_nan_constant_fails_when_run_not_when_built():
    checked = tf.check_numerics(tf.constant([1.0, np.nan]), "constant", name="c")
    total = tf.reduce_sum(checked)  # built without evaluating the check at graph-build time
    assert total.shape.as_list() == []
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="constant : Tensor had NaN"):
            sess.run(total)
