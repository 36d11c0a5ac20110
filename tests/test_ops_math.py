"""Element-wise math ops: compiled C vs the NumPy reference vs an independent NumPy formula."""

import math

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(1234)

F = ["float32", "float64"]
I = ["int32", "int64"]  # noqa: E741


def _f64(fn):
    """Evaluate a float formula in float64 and round once, like a correctly rounded libm."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype) if x.dtype.kind == "f" else fn(x)


def _f64_binary(fn):
    return lambda x, y: fn(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


def _scalar(fn):
    """A function of Python's math module over arrays (poles give inf, as C's)."""

    def safe(v: float) -> float:
        try:
            return fn(v)
        except ValueError:
            return math.inf

    return np.vectorize(safe, otypes=[np.float64])


# op function, independent NumPy formula, dtypes, input domain (or one per input)
BINARY = {
    "add": (tf.add, np.add, F + I, "any"),
    "subtract": (tf.subtract, np.subtract, F + I, "any"),
    "multiply": (tf.multiply, np.multiply, F + I, "any"),
    "floordiv": (
        tf.floordiv,
        lambda x, y: np.floor_divide(x, y) if x.dtype.kind == "i" else np.floor(x / y),
        F + I,
        "nonzero_y",
    ),
    "floormod": (tf.floormod, np.mod, F + I, "nonzero_y"),
    "pow": (tf.pow, np.power, F + I, "pow"),
    "maximum": (tf.maximum, np.maximum, F + I, "any"),
    "minimum": (tf.minimum, np.minimum, F + I, "any"),
    "squared_difference": (tf.squared_difference, lambda x, y: (x - y) * (x - y), F + I, "any"),
    "greater": (tf.greater, np.greater, F + I, "any"),
    "greater_equal": (tf.greater_equal, np.greater_equal, F + I, "ties"),
    "less": (tf.less, np.less, F + I, "any"),
    "less_equal": (tf.less_equal, np.less_equal, F + I, "ties"),
    "equal": (tf.equal, np.equal, F + I + ["bool"], "ties"),
    "not_equal": (tf.not_equal, np.not_equal, F + I + ["bool"], "ties"),
    "logical_and": (tf.logical_and, np.logical_and, ["bool"], "any"),
    "logical_or": (tf.logical_or, np.logical_or, ["bool"], "any"),
    "logical_xor": (tf.logical_xor, np.logical_xor, ["bool"], "any"),
    "realdiv": (tf.realdiv, lambda x, y: x / y, F, "nonzero_y"),
    "floor_div": (
        tf.floor_div,
        lambda x, y: np.floor_divide(x, y) if x.dtype.kind == "i" else np.floor(x / y),
        F + I,
        "nonzero_y",
    ),
    # C's division and remainder: toward zero, the sign of the dividend
    "truncatediv": (
        tf.truncatediv,
        lambda x, y: np.trunc(x / y).astype(x.dtype),
        F + I,
        "nonzero_y",
    ),
    "truncatemod": (tf.truncatemod, np.fmod, F + I, "nonzero_y"),
    "div_no_nan": (
        tf.div_no_nan,
        lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y)).astype(x.dtype),
        F,
        ("any", "with_zeros"),
    ),
    "atan2": (tf.atan2, _f64_binary(np.arctan2), F, "any"),
    "xlogy": (
        tf.math.xlogy,
        _f64_binary(lambda x, y: np.where(x == 0, 0, x * np.log(y))),
        F,
        ("with_zeros", "positive"),
    ),
    "xdivy": (
        tf.math.xdivy,
        _f64_binary(lambda x, y: np.where(x == 0, 0, x / y)),
        F,
        ("with_zeros", "nonzero"),
    ),
    "xlog1py": (
        tf.math.xlog1py,
        _f64_binary(lambda x, y: np.where(x == 0, 0, x * np.log1p(y))),
        F,
        ("with_zeros", "positive"),
    ),
    "multiply_no_nan": (
        tf.math.multiply_no_nan,
        lambda x, y: np.where(y == 0, 0, x * y).astype(x.dtype),
        F,
        ("specials", "with_zeros"),
    ),
}


UNARY = {
    "negative": (tf.negative, np.negative, F + I, "any"),
    "abs": (tf.abs, np.abs, F + I, "any"),
    "sign": (tf.sign, np.sign, F + I, "any"),
    "square": (tf.square, np.square, F + I, "any"),
    "reciprocal": (tf.reciprocal, _f64(lambda x: 1 / x), F, "nonzero"),
    "rsqrt": (tf.rsqrt, _f64(lambda x: 1 / np.sqrt(x)), F, "positive"),
    "sigmoid": (tf.sigmoid, _f64(lambda x: 1 / (1 + np.exp(-x))), F, "wide"),
    "round": (tf.round, np.rint, F, "halves"),
    "floor": (tf.floor, np.floor, F, "any"),
    "ceil": (tf.ceil, np.ceil, F, "any"),
    "exp": (tf.exp, _f64(np.exp), F, "any"),
    "expm1": (tf.expm1, _f64(np.expm1), F, "any"),
    "log": (tf.log, _f64(np.log), F, "positive"),
    "log1p": (tf.log1p, _f64(np.log1p), F, "positive"),
    "sqrt": (tf.sqrt, _f64(np.sqrt), F, "positive"),
    "sin": (tf.sin, _f64(np.sin), F, "any"),
    "cos": (tf.cos, _f64(np.cos), F, "any"),
    "tan": (tf.tan, _f64(np.tan), F, "small"),
    "tanh": (tf.tanh, _f64(np.tanh), F, "wide"),
    "logical_not": (tf.logical_not, np.logical_not, ["bool"], "any"),
    "rint": (tf.rint, np.rint, F, "halves"),
    "acos": (tf.acos, _f64(np.arccos), F, "unit"),
    "asin": (tf.asin, _f64(np.arcsin), F, "unit"),
    "atan": (tf.atan, _f64(np.arctan), F, "wide"),
    "sinh": (tf.sinh, _f64(np.sinh), F, "any"),
    "cosh": (tf.cosh, _f64(np.cosh), F, "any"),
    "asinh": (tf.asinh, _f64(np.arcsinh), F, "wide"),
    "acosh": (tf.acosh, _f64(np.arccosh), F, "above_one"),
    "atanh": (tf.atanh, _f64(np.arctanh), F, "unit"),
    "erf": (tf.erf, _f64(_scalar(math.erf)), F, "any"),
    "erfc": (tf.erfc, _f64(_scalar(math.erfc)), F, "any"),
    "lgamma": (tf.lgamma, _f64(_scalar(math.lgamma)), F, "gamma"),
    "is_finite": (tf.is_finite, np.isfinite, F, "specials"),
    "is_inf": (tf.is_inf, np.isinf, F, "specials"),
    "is_nan": (tf.is_nan, np.isnan, F, "specials"),
}

BINARY_SHAPES = [
    ((), ()),
    ((7,), (7,)),
    ((3, 4), (4,)),
    ((3, 1), (1, 5)),
    ((2, 3, 4), (3, 1)),
    ((0, 3), (3,)),
    ((1,), (6,)),
]
UNARY_SHAPES = [(), (5,), (2, 3, 4), (0,)]


def sample(dtype: str, shape: tuple, domain: str) -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype in I:
        x = RNG.integers(-20, 21, shape)
        if domain in ("nonzero", "nonzero_y"):
            x[x == 0] = 3
        if domain == "pow":
            x = RNG.integers(0, 6, shape)
        if domain == "ties":
            x = RNG.integers(-2, 3, shape)
        return x.astype(dtype)
    low, high = {
        "positive": (0.05, 9.0),
        "small": (-1.2, 1.2),
        "wide": (-30.0, 30.0),
        "pow": (0.1, 3.0),
        "unit": (-0.99, 0.99),
        "above_one": (1.0, 9.0),
        "gamma": (-4.5, 9.0),  # random floats: no pole (0, -1, ...) is drawn
    }.get(domain, (-4.0, 4.0))
    x = RNG.uniform(low, high, shape)
    if domain in ("nonzero", "nonzero_y"):
        x[np.abs(x) < 0.1] = 0.5
    if domain == "with_zeros":
        x[RNG.random(shape) < 0.4] = 0.0
    if domain == "specials":
        x.flat[: x.size // 2] = RNG.choice([np.inf, -np.inf, np.nan, 0.0], x.size // 2)
    if domain == "halves":
        x = np.round(x * 2) / 2  # exact .5 ties: round half to even must hold
    if domain == "ties":
        x = np.round(x)
    return x.astype(dtype)


def build_binary(dtypes: list[str]) -> CaseBatch:
    batch = CaseBatch()
    with batch.graph.as_default():
        for name, (fn, ref, allowed, domain) in BINARY.items():
            x_domain, y_domain = domain if isinstance(domain, tuple) else ("any", domain)
            if domain == "pow":
                x_domain = "pow"
            for dtype in [d for d in allowed if d in dtypes]:
                for k, (sa, sb) in enumerate(BINARY_SHAPES):
                    x = sample(dtype, sa, x_domain)
                    y = sample(dtype, sb, y_domain)
                    if k % 2:  # half the cases read fed buffers, half compiled-in constants
                        tx, ty = batch.feed(x), batch.feed(y, [None] * len(sb))
                    else:
                        tx, ty = tf.constant(x), tf.constant(y)
                    with np.errstate(all="ignore"):
                        expected = ref(x, y)
                    batch.add(f"{name}-{dtype}-{sa}x{sb}", fn(tx, ty), expected)
    return batch


def build_unary() -> CaseBatch:
    batch = CaseBatch()
    with batch.graph.as_default():
        for name, (fn, ref, allowed, domain) in UNARY.items():
            for dtype in allowed:
                for k, shape in enumerate(UNARY_SHAPES):
                    x = sample(dtype, shape, domain)
                    t = batch.feed(x) if k % 2 else tf.constant(x)
                    with np.errstate(all="ignore"):
                        batch.add(f"{name}-{dtype}-{shape}", fn(t), ref(x))
    return batch


FLOAT_BINARY = build_binary(F)
INT_BINARY = build_binary(I + ["bool"])
UNARY_BATCH = build_unary()


@pytest.mark.parametrize("case", FLOAT_BINARY.ids())
def test_binary_float(case):
    FLOAT_BINARY.check(case)


@pytest.mark.parametrize("case", INT_BINARY.ids())
def test_binary_int_bool(case):
    INT_BINARY.check(case)


@pytest.mark.parametrize("case", UNARY_BATCH.ids())
def test_unary(case):
    UNARY_BATCH.check(case)


def _misc_batch() -> CaseBatch:
    """Cast, where, add_n, clip_by_value, division flavours, operators, integer edge values."""
    b = CaseBatch()
    with b.graph.as_default():
        f = sample("float32", (4, 5), "any") * 1e3
        f[0, :3] = [np.nan, 3e9, -3e9]  # out of int32 range: x86's INT_MIN, as NumPy gives
        tf_f = b.feed(f)
        for dtype in ["int32", "int64", "float64", "bool"]:
            with np.errstate(all="ignore"):
                want = (
                    f.astype(dtype)
                    if dtype != "int32"
                    else np.where(
                        np.isfinite(f) & (np.abs(f) < 2**31), np.trunc(np.nan_to_num(f)), -(2**31)
                    ).astype(np.int32)
                )
            if dtype == "int64":
                want = np.where(np.isnan(f), np.iinfo(np.int64).min, np.trunc(np.nan_to_num(f)))
                want = want.astype(np.int64)
            b.add(f"cast-f32-{dtype}", tf.cast(tf_f, dtype), want)
        big = np.array([2**40 + 7, -(2**40) - 3, 5], dtype=np.int64)
        b.add("cast-i64-i32-wraps", tf.cast(tf.constant(big), tf.int32), big.astype(np.int32))
        bools = np.array([True, False, True])
        b.add("cast-bool-f32", tf.cast(tf.constant(bools), tf.float32), bools.astype(np.float32))

        cond = RNG.random((3, 4)) < 0.5
        x, y = sample("float64", (3, 4), "any"), sample("float64", (4,), "any")
        b.add("where-broadcast", tf.where(cond, x, y), np.where(cond, x, y))
        rows = np.array([True, False, True])
        b.add("where-tf1-vector-cond", tf.where(rows, x, -x), np.where(rows[:, None], x, -x))

        xs = [sample("float32", (2, 3), "any") for _ in range(4)]
        b.add("add_n-4", tf.add_n([tf.constant(v) for v in xs]), np.sum(xs, axis=0), rtol=1e-6)
        ints = [RNG.integers(-(2**31), 2**31 - 1, 5).astype(np.int32) for _ in range(3)]
        b.add("add_n-int-wraps", tf.add_n(ints), ints[0] + ints[1] + ints[2])

        v = sample("float32", (10,), "any")
        b.add("clip_by_value", tf.clip_by_value(v, -1.0, 2.0), np.clip(v, -1.0, 2.0))

        a = np.array([7, -7, 7, -7, 0], dtype=np.int32)
        d = np.array([2, 2, -2, -2, 3], dtype=np.int32)
        b.add("truediv-int32-to-f64", tf.truediv(a, d), a / d)
        b.add("divide-int32", tf.divide(a, d), a / d)
        b.add("div-int-floors", tf.div(a, d), np.floor_divide(a, d))
        b.add(
            "div-float",
            tf.div(a.astype(np.float32), d.astype(np.float32)),
            (a / d).astype(np.float32),
        )
        lim = np.array([-(2**31), 2**31 - 1, -5], dtype=np.int32)
        with np.errstate(all="ignore"):
            b.add("int-neg-wraps", -tf.constant(lim), -lim)
            b.add("int-abs-wraps", tf.abs(lim), np.abs(lim))
            b.add("int-floordiv-min-by-minus1", tf.constant(lim) // -1, lim // -1)
            b.add("int-mul-wraps", tf.constant(lim) * 3, lim * 3)

        p = b.feed(sample("float32", (2, 3), "positive"), [None, 3])
        q = sample("float32", (3,), "positive")
        pv = b.feed_dict[p]
        b.add("op-add", p + q, pv + q)
        b.add("op-radd", q + p, q + pv)
        b.add("op-rsub-scalar", 1 - p, 1 - pv)
        b.add("op-rdiv-scalar", 2.0 / p, (2.0 / pv).astype(np.float32))
        b.add("op-mul-pow-neg", -((p * p) ** 2), -((pv * pv) ** 2))
        b.add(
            "op-floordiv-mod",
            p // 0.3 + p % 0.3,
            np.floor(pv / np.float32(0.3)) + np.mod(pv, np.float32(0.3)),
        )
        b.add(
            "op-compare",
            (p > 1.0) & (p <= 5.0) | ~(p < 2.0),
            (pv > 1.0) & (pv <= 5.0) | ~(pv < 2.0),
        )
        b.add("op-abs", abs(p - 2.0), np.abs(pv - 2.0))
        b.add("op-ndarray-left", q * p, q * pv)
    return b


MISC = _misc_batch()


@pytest.mark.parametrize("case", MISC.ids())
def test_misc(case):
    MISC.check(case)


def test_python_values_infer_tf1_dtypes():
    assert tf.add(3, 5).dtype == tf.int32
    assert tf.add(3.0, 5).dtype == tf.float32
    assert tf.constant([1, 2.5]).dtype == tf.float32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant(np.float64(1.0)).dtype == tf.float64
    x = tf.placeholder(tf.float64)
    assert (x + 1).dtype == tf.float64  # Python values take the tensor's dtype
    assert (np.float32(2) * x).dtype == tf.float64


def test_dtype_mismatch_is_a_type_error():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.int32, name="y")
    with pytest.raises(
        TypeError,
        match="Input 'y' of 'Add' Op has type int32 that does not "
        "match type float32 of argument 'x'",
    ):
        tf.add(x, y)
    with pytest.raises(TypeError, match="Expected int32, got 2.5"):
        tf.add(tf.constant(1), 2.5)
    with pytest.raises(TypeError, match="not in list of allowed values: float32, float64"):
        tf.exp(tf.constant([1, 2]))


def test_broadcast_error_names_op_and_shapes():
    a = tf.placeholder(tf.float32, [2, 3])
    b = tf.placeholder(tf.float32, [4])
    with pytest.raises(
        ValueError,
        match=r"Dimensions must be equal, but are 3 and 4 for 'Add' "
        r"\(op: 'Add'\) with input shapes: \[2,3\], \[4\]\.",
    ):
        tf.add(a, b)


def test_integer_division_by_zero_fails_the_run():
    x = tf.placeholder(tf.int32, [None])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(x // 0, {x: [1, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
            sess.run(tf.pow(x, -1), {x: [1, 2]})
        # the same session keeps working after a failed run
        assert sess.run(x // 2, {x: [5, -5]}).tolist() == [2, -3]


def test_where_one_argument_gives_coordinates_of_a_shape_known_when_run():
    # a Python-stage op (tests/test_ops_dynamic.py checks its values)
    coordinates = tf.where(tf.constant([[True, False], [False, True]]))
    assert coordinates.op.type == "Where" and coordinates.shape.as_list() == [None, 2]


def test_truncating_integer_division_by_zero_fails_the_run():
    x = tf.placeholder(tf.int32, [None])
    with tf.Session() as sess:
        for fn in (tf.truncatediv, tf.truncatemod):
            with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
                sess.run(fn(x, 0), {x: [1, 2]})
        # INT_MIN by -1 wraps (C would trap), as the kernels define it
        lim = np.array([-(2**31), 7], np.int32)
        q, r = sess.run([tf.truncatediv(x, -1), tf.truncatemod(x, -1)], {x: lim})
    assert q.tolist() == [-(2**31), -7] and r.tolist() == [0, 0]


def test_float_only_and_bool_only_ops_refuse_other_dtypes():
    with pytest.raises(TypeError, match="not in list of allowed values: float32, float64"):
        tf.div_no_nan(tf.constant([1]), tf.constant([2]))
    with pytest.raises(TypeError, match="not in list of allowed values: float32, float64"):
        tf.is_nan(tf.constant([1]))
    with pytest.raises(TypeError, match="not in list of allowed values: bool"):
        tf.logical_xor(tf.constant([1]), tf.constant([0]))


def test_accumulate_n_checks_shape_and_dtype():
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.Session() as sess:
        assert sess.run(tf.accumulate_n([a, b, a], shape=[2])).tolist() == [5.0, 8.0]
    with pytest.raises(ValueError, match="expected"):
        tf.accumulate_n([a, b], shape=[3])
    with pytest.raises(TypeError, match="tensor_dtype"):
        tf.accumulate_n([a, b], tensor_dtype=tf.float64)


def test_polyval_and_reciprocal_no_nan():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    with tf.Session() as sess:
        p, r = sess.run([tf.math.polyval([2.0, -1.0, 0.5], x), tf.math.reciprocal_no_nan(x)])
    np.testing.assert_allclose(p, 2 * x * x - x + 0.5, rtol=1e-6)
    np.testing.assert_allclose(r, [1 / -1.5, 0.0, 0.5], rtol=1e-6)


def test_tf_math_namespace_holds_the_same_functions():
    """tf.math names the top-level functions (TF1 has both) and those only it has."""
    shared = ["erf", "lgamma", "cumsum", "segment_sum", "reduce_logsumexp", "atan2", "rint",
              "floormod", "truediv", "bincount", "unsorted_segment_max", "argmax"]  # fmt: skip
    for name in shared:
        assert getattr(tf.math, name) is getattr(tf, name), name
    only = [
        "xlogy",
        "xdivy",
        "xlog1py",
        "multiply_no_nan",
        "divide_no_nan",
        "polyval",
        "reduce_euclidean_norm",
        "reduce_std",
        "reduce_variance",
        "reciprocal_no_nan",
    ]
    for name in only:
        assert callable(getattr(tf.math, name)) and not hasattr(tf, name), name


def test_float32_tanh_and_sigmoid_within_a_few_ulp_everywhere():
    """tanh and the logistic function of float32 are inline approximations (tfc_math.h, as
    Eigen's): within 5 ulp of the float64 value over the whole range (libm's are within 1), the
    sigmoid's tail flushed to 0 below the normal range, and exact at the special values."""
    mags = np.concatenate(
        [
            np.logspace(-42, -4, 60),
            np.linspace(4e-4, 1, 500),
            np.linspace(1, 120, 700),
            [7.9053, 9.0, 88.7, 103.0, 104.0, 1e30],
        ]
    )
    x = np.concatenate([mags, -mags, [0.0, -0.0, np.inf, -np.inf]]).astype(np.float32)
    with tf.Graph().as_default():
        feed = tf.placeholder(tf.float32, [len(x) + 1])
        out = [tf.tanh(feed), tf.sigmoid(feed)]
        with tf.Session() as sess:
            got_tanh, got_sigmoid = sess.run(out, {feed: np.append(x, np.float32(np.nan))})
    assert np.isnan(got_tanh[-1]) and np.isnan(got_sigmoid[-1])
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        wants = [np.tanh(x64), 1 / (1 + np.exp(-x64))]
    # compiled steps flush results below float32's normal range to 0 and read denormal inputs
    # as 0, as TensorFlow's CPU kernels do (runtime/include/tfc_fpenv.h): where the true value
    # is a denormal, 0 is right, and so is tanh's x for tiny x (passed through, not computed)
    tiny = np.finfo(np.float32).tiny
    for got, want in zip([got_tanh[:-1], got_sigmoid[:-1]], wants):
        below = np.abs(want) < tiny
        assert np.all((got[below] == 0) | ((got[below] == x[below]) & (want[below] == x64[below])))
        got, want, xs = got[~below], want[~below], x[~below]
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        err = np.abs(got.astype(np.float64) - want) / ulp
        assert err.max() <= 5, (xs[err.argmax()], got[err.argmax()], want[err.argmax()])
    assert np.array_equal(got_tanh[-5:-1], [0, -0.0, 1, -1])
    assert np.signbit(got_tanh[-4]) and np.array_equal(got_sigmoid[-5:-1], [0.5, 0.5, 1, 0])
