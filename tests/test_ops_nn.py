"""tf.nn ops: compiled C vs the NumPy reference vs an independent NumPy formula; dropout."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(4321)
F = ["float32", "float64"]


def _f64(fn):
    """Evaluate in float64 and round once: what a correctly rounded float32 kernel gives."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype)


# SELU's lambda and alpha (Klambauer et al., 2017)
SELU_L, SELU_A = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
ACTIVATIONS = {
    "relu": (tf.nn.relu, _f64(lambda x: np.maximum(x, 0))),
    "relu6": (tf.nn.relu6, _f64(lambda x: np.clip(x, 0, 6))),
    "elu": (tf.nn.elu, _f64(lambda x: np.where(x > 0, x, np.expm1(x)))),
    "selu": (tf.nn.selu, _f64(lambda x: SELU_L * np.where(x > 0, x, SELU_A * np.expm1(x)))),
    "softsign": (tf.nn.softsign, _f64(lambda x: x / (1 + np.abs(x)))),
    "swish": (tf.nn.swish, _f64(lambda x: x / (1 + np.exp(-x)))),
    "log_sigmoid": (tf.log_sigmoid, _f64(lambda x: -np.logaddexp(0, -x))),
    "leaky_relu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, x * x.dtype.type(0.2))),
    "leaky_relu-0.01": (
        lambda x: tf.nn.leaky_relu(x, alpha=0.01),
        lambda x: np.where(x > 0, x, x * x.dtype.type(0.01)),
    ),
    "softplus": (tf.nn.softplus, _f64(lambda x: np.logaddexp(0, x))),
    "sigmoid": (tf.nn.sigmoid, _f64(lambda x: 0.5 * (1 + np.tanh(x / 2)))),
    "tanh": (tf.nn.tanh, _f64(np.tanh)),
}
SHAPES = [(), (7,), (3, 4), (2, 3, 4)]
LARGE = np.array([-1000.0, -100.0, -30.0, -1e-3, 0.0, 1e-3, 5.5, 6.0, 30.0, 100.0, 1000.0])


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x64 = x.astype(np.float64)
    z = x64 - x64.max(axis=axis, keepdims=True)
    return (z - np.log(np.exp(z).sum(axis=axis, keepdims=True))).astype(x.dtype)


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for name, (fn, want) in ACTIVATIONS.items():
            for dtype in F:
                for k, shape in enumerate(SHAPES):
                    x = (RNG.standard_normal(shape) * 4).astype(dtype)
                    t = b.feed(x) if k % 2 else tf.constant(x)
                    with np.errstate(all="ignore"):
                        b.add(f"{name}-{dtype}-{shape}", fn(t), want(x))
                large = LARGE.astype(dtype)
                with np.errstate(all="ignore"):
                    b.add(f"{name}-{dtype}-large", fn(b.feed(large)), want(large))
        ints = np.array([[-3, 0, 4]], dtype=np.int32)
        b.add("leaky_relu-int-to-float32", tf.nn.leaky_relu(ints), np.array([[-0.6, 0, 4]], "f4"))

        for dtype in F:
            cases = [
                ("row", RNG.standard_normal(9) * 3, -1),
                ("matrix", RNG.standard_normal((4, 5)) * 3, -1),
                ("matrix-axis0", RNG.standard_normal((4, 5)) * 3, 0),
                ("rank3-axis1", RNG.standard_normal((2, 3, 6)) * 3, 1),
                ("rank3-axis-3", RNG.standard_normal((2, 3, 6)) * 3, -3),
                ("rank3-axis2", RNG.standard_normal((2, 3, 6)) * 3, 2),
                ("one-class", RNG.standard_normal((3, 1)), -1),
                ("large", np.array([[1000.0, 0.0], [-1000.0, 0.0], [1000.0, 1000.0]]), -1),
                ("large-spread", np.array([-1000.0, 0.0, 1000.0, 999.0]), -1),
                ("empty-rows", np.zeros((0, 4)), -1),
            ]
            for case, value, axis in cases:
                x = value.astype(dtype)
                t = b.feed(x, [None] * x.ndim) if case.startswith("matrix") else tf.constant(x)
                b.add(f"softmax-{dtype}-{case}", tf.nn.softmax(t, axis=axis), _softmax(x, axis))
                b.add(
                    f"log_softmax-{dtype}-{case}",
                    tf.nn.log_softmax(t, axis=axis),
                    _log_softmax(x, axis),
                )
            x = RNG.standard_normal((3, 4)).astype(dtype)
            b.add(f"softmax-{dtype}-dim-alias", tf.nn.softmax(x, dim=0), _softmax(x, 0))

        for dtype in F + ["int32", "int64"]:
            scale = 1 if dtype in F else 10  # integers: values in about [-30, 30]

            def cast(v, dtype=dtype, scale=scale):
                return (v * scale).astype(dtype)

            value, bias = cast(RNG.standard_normal((4, 3))), cast(RNG.standard_normal(3))
            b.add(f"bias_add-{dtype}-2d", tf.nn.bias_add(b.feed(value), bias), value + bias)
            value, bias = cast(RNG.standard_normal((2, 3, 4, 5))), cast(RNG.standard_normal(5))
            b.add(f"bias_add-{dtype}-nhwc", tf.nn.bias_add(value, bias, "NHWC"), value + bias)
            bias = cast(RNG.standard_normal(3))
            b.add(
                f"bias_add-{dtype}-nchw",
                tf.nn.bias_add(b.feed(value, [None, 3, None, 5]), bias, data_format="NCHW"),
                value + bias[:, None, None],
            )
        value = RNG.standard_normal((2, 4, 3)).astype("float32")
        bias = RNG.standard_normal(4).astype("float32")
        b.add("bias_add-nchw-rank3", tf.nn.bias_add(value, bias, "NCW"), value + bias[:, None])
        lim = np.array([[2**31 - 1, -(2**31)]], dtype=np.int32)
        with np.errstate(all="ignore"):
            b.add(
                "bias_add-int-wraps",
                tf.nn.bias_add(lim, np.int32([1, -1])),
                lim + np.int32([1, -1]),
            )
        _build_composites(b)
    return b


def _build_composites(b: CaseBatch) -> None:
    """crelu, swish with beta, xw_plus_b, relu_layer, zero_fraction."""
    for dtype in F:
        x = (RNG.standard_normal((3, 4)) * 3).astype(dtype)
        both = np.concatenate([x, -x], axis=-1)
        b.add(f"crelu-{dtype}", tf.nn.crelu(b.feed(x)), np.maximum(both, 0))
        b.add(
            f"crelu-axis0-{dtype}",
            tf.nn.crelu(x, axis=0),
            np.maximum(np.concatenate([x, -x], axis=0), 0),
        )
        want = _f64(lambda v: v / (1 + np.exp(-0.5 * v)))(x)
        b.add(f"swish-beta-{dtype}", tf.nn.swish(b.feed(x), beta=0.5), want)
        w = RNG.standard_normal((4, 5)).astype(dtype)
        bias = RNG.standard_normal(5).astype(dtype)
        affine = (x.astype(np.float64) @ w + bias).astype(dtype)
        b.add(f"xw_plus_b-{dtype}", tf.nn.xw_plus_b(b.feed(x), w, bias), affine)
        b.add(f"relu_layer-{dtype}", tf.nn.relu_layer(x, b.feed(w), bias), np.maximum(affine, 0))
    mixed = np.array([[0.0, 1.5, -0.0], [2.0, 0.0, 0.0]], np.float64)
    b.add("zero_fraction-f64", tf.nn.zero_fraction(b.feed(mixed)), np.float32(4 / 6))
    ints = np.array([0, 3, 0, 0, 7, 1, 0, 0], np.int32)
    b.add("zero_fraction-int", tf.nn.zero_fraction(ints), np.float32(5 / 8))


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_nn_ops(case):
    BATCH.check(case)


def test_large_logits_give_finite_probabilities():
    compiled, _ = BATCH.results()
    for dtype in F:
        probs = compiled[f"softmax-{dtype}-large"]
        assert np.all(np.isfinite(probs))
        np.testing.assert_array_equal(probs, np.array([[1, 0], [0, 1], [0.5, 0.5]], dtype))
        logs = compiled[f"log_softmax-{dtype}-large"]
        np.testing.assert_array_equal(logs[:2], np.array([[0, -1000], [-1000, 0]], dtype))
        np.testing.assert_allclose(compiled[f"softplus-{dtype}-large"][[0, -1]], [0, 1000])


def test_graph_names_and_shapes_follow_tf1():
    x = tf.placeholder(tf.float32, [None, 3, 5])
    assert tf.nn.relu(x).op.name == "Relu" and tf.nn.relu6(x).op.name == "Relu6"
    assert tf.nn.leaky_relu(x).op.get_attr("alpha") == pytest.approx(0.2)
    assert tf.nn.softmax(x).op.type == "Softmax"
    swapped = tf.nn.softmax(x, axis=1)
    assert swapped.op.type == "Transpose" and swapped.shape.as_list() == [None, 3, 5]
    biased = tf.nn.bias_add(x, np.zeros(3, np.float32), data_format="NCHW")
    assert biased.op.name == "BiasAdd" and biased.op.get_attr("data_format") == "NCHW"
    assert biased.shape.as_list() == [None, 3, 5]
    assert tf.nn.bias_add(tf.placeholder(tf.float32), [1.0]).shape.ndims is None


def test_errors_name_the_op_and_shapes():
    with pytest.raises(
        ValueError,
        match=r"Dimensions must be equal, but are 2 and 1 for "
        r"'BiasAdd' \(op: 'BiasAdd'\) with input shapes: "
        r"\[3,2\], \[1\]\.",
    ):
        tf.nn.bias_add(np.zeros((3, 2), np.float32), [1.0])
    with pytest.raises(ValueError, match="Shape must be at least rank 3 but is rank 2"):
        tf.nn.bias_add(np.zeros((3, 2), np.float32), [1.0, 2.0, 3.0], data_format="NCHW")
    with pytest.raises(ValueError, match="data_format must be of the form"):
        tf.nn.bias_add(np.zeros((3, 2), np.float32), [1.0, 2.0], data_format="HWCN")
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Dimension \(2\) must be in the "
        r"range \[-2, 2\)",
    ):
        tf.nn.softmax(np.zeros((2, 3), np.float32), axis=2)
    with pytest.raises(TypeError, match="not in list of allowed values: float32, float64"):
        tf.nn.elu(tf.constant([1, 2]))  # Relu takes integers, as TF's kernels; Elu does not
    with pytest.raises(TypeError, match="'logits' has DataType int32"):
        tf.nn.log_softmax(tf.constant([1, 2]))


# -- dropout --------------------------------------------------------------------------------------
def test_dropout_keeps_scaled_entries_at_the_keep_rate():
    x = np.abs(RNG.standard_normal((400, 250))).astype(np.float32) + 0.5
    ph = tf.placeholder(tf.float32, [None, 250])
    kept = tf.nn.dropout(ph, keep_prob=0.7, seed=11)
    same_rate = tf.nn.dropout(ph, rate=0.3, seed=11)
    reseeded = tf.nn.dropout(ph, keep_prob=0.7, seed=11)
    other_seed = tf.nn.dropout(ph, keep_prob=0.7, seed=12)
    rows = tf.nn.dropout(ph, 0.5, noise_shape=[tf.shape(ph)[0], 1], seed=13)
    keep_ph = tf.placeholder(tf.float32, [])
    fed_keep = tf.nn.dropout(ph, keep_ph, seed=14)
    f64 = tf.nn.dropout(x.astype(np.float64), rate=0.25, seed=15)
    assert kept.shape.as_list() == [None, 250] and kept.dtype == tf.float32
    with tf.Session() as sess:
        out = sess.run(
            [kept, same_rate, reseeded, other_seed, rows, fed_keep, f64], {ph: x, keep_ph: 0.4}
        )
        again = sess.run(kept, {ph: x})
    with tf.Session() as sess:
        restarted = sess.run(kept, {ph: x})
    k, same, re, other, by_row, fed, d64 = out
    mask = k != 0
    np.testing.assert_array_equal(k[mask], x[mask] / np.float32(0.7))  # kept: x / keep_prob
    assert abs(mask.mean() - 0.7) < 0.01
    np.testing.assert_array_equal(same, k)  # rate=0.3 and keep_prob=0.7 draw the same mask
    np.testing.assert_array_equal(re, k)  # the same op seed reproduces it
    np.testing.assert_array_equal(restarted, k)
    assert not np.array_equal(again, k)  # the next run draws a new mask
    assert abs((other != 0).mean() - 0.7) < 0.01 and not np.array_equal(other, k)
    row_kept = by_row[:, 0] != 0
    np.testing.assert_array_equal(by_row != 0, np.repeat(row_kept[:, None], 250, axis=1))
    np.testing.assert_allclose(by_row[row_kept], x[row_kept] * 2, rtol=1e-6)
    assert 0.4 < row_kept.mean() < 0.6
    assert abs((fed != 0).mean() - 0.4) < 0.01
    np.testing.assert_allclose(fed[fed != 0], x[fed != 0] / np.float32(0.4), rtol=1e-6)
    assert d64.dtype == np.float64 and abs((d64 != 0).mean() - 0.75) < 0.01
    np.testing.assert_allclose(d64[d64 != 0], x.astype(np.float64)[d64 != 0] / 0.75, rtol=1e-15)


def test_dropout_is_built_as_tf1_builds_it():
    x = tf.placeholder(tf.float32, [None, 3])
    out = tf.nn.dropout(x, keep_prob=0.5, seed=1)
    assert out.name.startswith("dropout/")
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Shape", "RandomUniform", "Floor", "RealDiv", "Mul"} <= types
    assert tf.nn.dropout(x, keep_prob=1.0) is x
    assert tf.nn.dropout(x, rate=0.0) is x


def test_dropout_argument_errors():
    x = tf.constant(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="You must provide a rate to dropout"):
        tf.nn.dropout(x)
    with pytest.raises(ValueError, match="Cannot specify both 'rate' and 'keep_prob'"):
        tf.nn.dropout(x, keep_prob=0.5, rate=0.5)
    with pytest.raises(
        ValueError,
        match=r"rate must be a scalar tensor or a float in the range "
        r"\[0, 1\), got 1",
    ):
        tf.nn.dropout(x, keep_prob=0.0)
    with pytest.raises(ValueError, match="x has to be a floating point tensor"):
        tf.nn.dropout(np.zeros(2, np.int32), keep_prob=0.5)
