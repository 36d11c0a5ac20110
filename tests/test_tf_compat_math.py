"""tfc's math ops against TensorFlow's `tf.compat.v1`, in graph mode, where tensorflow is
installed (skipped elsewhere): the same calls on the same inputs give the same numbers.

Each entry builds its expression twice, once with `tfc` and once with TensorFlow, from one
function of the module (`tf`) and the NumPy inputs; every tfc result is compiled to C.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc  # noqa: E402

RNG = np.random.default_rng(2024)
X = RNG.uniform(-3, 3, (4, 5)).astype(np.float32)
POS = RNG.uniform(0.1, 6, (4, 5)).astype(np.float32)
UNIT = RNG.uniform(-0.95, 0.95, (4, 5)).astype(np.float32)
WITH_ZEROS = np.where(RNG.random((4, 5)) < 0.3, 0, X).astype(np.float32)
INTS = RNG.integers(-9, 10, (4, 5)).astype(np.int32)
NONZERO_INTS = np.where(INTS == 0, 3, INTS).astype(np.int32)
SPECIALS = np.array([np.inf, -np.inf, np.nan, 0.0, -2.5], np.float32)
IDS = np.array([0, 0, 2, 3], np.int32)
UNSORTED = np.array([3, -1, 0, 3], np.int32)

# name -> (function of the module, inputs)
CASES = {
    "acos": (lambda tf, x: tf.acos(x), [UNIT]),
    "asin": (lambda tf, x: tf.asin(x), [UNIT]),
    "atan": (lambda tf, x: tf.atan(x), [X]),
    "atan2": (lambda tf, y, x: tf.atan2(y, x), [X, POS - 3]),
    "sinh": (lambda tf, x: tf.sinh(x), [X]),
    "cosh": (lambda tf, x: tf.cosh(x), [X]),
    "asinh": (lambda tf, x: tf.asinh(x), [X]),
    "acosh": (lambda tf, x: tf.acosh(x), [POS + 1]),
    "atanh": (lambda tf, x: tf.atanh(x), [UNIT]),
    "erf": (lambda tf, x: tf.erf(x), [X]),
    "erfc": (lambda tf, x: tf.erfc(x), [X]),
    "lgamma": (lambda tf, x: tf.lgamma(x), [X]),
    "digamma": (lambda tf, x: tf.digamma(x), [X]),
    "polygamma": (lambda tf, x: tf.polygamma(tf.ones_like(x) * 2, x), [POS]),
    "zeta": (lambda tf, q: tf.zeta(tf.ones_like(q) * 2.5, q), [POS]),
    "lbeta": (lambda tf, x: tf.lbeta(x), [POS]),
    "log_sigmoid": (lambda tf, x: tf.log_sigmoid(x * 30), [X]),
    "rint": (lambda tf, x: tf.rint(x * 2), [np.round(X) / 2]),
    "is_finite": (lambda tf, x: tf.is_finite(x), [SPECIALS]),
    "is_inf": (lambda tf, x: tf.is_inf(x), [SPECIALS]),
    "is_nan": (lambda tf, x: tf.is_nan(x), [SPECIALS]),
    "logical_xor": (lambda tf, x: tf.logical_xor(x > 0, x < 1), [X]),
    "truncatediv": (lambda tf, x, y: tf.truncatediv(x, y), [INTS, NONZERO_INTS[::-1]]),
    "truncatemod": (lambda tf, x, y: tf.truncatemod(x, y), [INTS, NONZERO_INTS[::-1]]),
    "truncatemod-float": (lambda tf, x, y: tf.truncatemod(x, y), [X, POS]),
    "floormod": (lambda tf, x, y: tf.floormod(x, y), [INTS, NONZERO_INTS[::-1]]),
    "floor_div": (lambda tf, x, y: tf.floor_div(x, y), [INTS, NONZERO_INTS[::-1]]),
    "realdiv": (lambda tf, x, y: tf.realdiv(x, y), [X, POS]),
    "div_no_nan": (lambda tf, x, y: tf.div_no_nan(x, y), [X, WITH_ZEROS]),
    "xlogy": (lambda tf, x, y: tf.math.xlogy(x, y), [WITH_ZEROS, POS]),
    "xdivy": (lambda tf, x, y: tf.math.xdivy(x, y), [WITH_ZEROS, POS]),
    "squared_difference": (lambda tf, x, y: tf.squared_difference(x, y), [X, POS]),
    "cumsum": (lambda tf, x: tf.cumsum(x, axis=1, exclusive=True, reverse=True), [X]),
    "cumprod": (lambda tf, x: tf.cumprod(x, axis=0, reverse=True), [UNIT]),
    "reduce_logsumexp": (lambda tf, x: tf.reduce_logsumexp(x * 100, axis=1), [X]),
    "reduce_euclidean_norm": (lambda tf, x: tf.math.reduce_euclidean_norm(x, 0), [X]),
    "reduce_variance": (lambda tf, x: tf.math.reduce_variance(x, 1), [X]),
    "count_nonzero": (lambda tf, x: tf.count_nonzero(x, axis=1), [WITH_ZEROS]),
    "arg_max": (lambda tf, x: tf.arg_max(x, 1), [X]),
    "arg_min": (lambda tf, x: tf.arg_min(x, 0), [X]),
    "einsum": (lambda tf, a, b: tf.einsum("ij,kj->ki", a, b), [X, POS]),
    "einsum-trace": (lambda tf, a: tf.einsum("ii", a[:, :4]), [X]),
    "tensordot": (lambda tf, a, b: tf.tensordot(a, b, [[0], [0]]), [X, POS]),
    "norm": (lambda tf, x: tf.norm(x, ord=3, axis=1), [X]),
    "norm-matrix": (lambda tf, x: tf.norm(x, ord=np.inf, axis=[0, 1]), [X]),
    "global_norm": (lambda tf, a, b: tf.global_norm([a, b]), [X, POS]),
    "clip_by_norm": (lambda tf, x: tf.clip_by_norm(x, 2.0, axes=[1]), [X]),
    "clip_by_global_norm": (lambda tf, a, b: tf.clip_by_global_norm([a, b], 3.0)[0], [X, POS]),
    "clip_by_average_norm": (lambda tf, x: tf.clip_by_average_norm(x, 0.5), [X]),
    "range": (lambda tf: tf.range(1.5, 9.0, 0.75), []),
    "linspace": (lambda tf: tf.linspace(-1.0, 4.0, 9), []),
    "segment_sum": (lambda tf, d: tf.segment_sum(d, IDS), [X]),
    "segment_mean": (lambda tf, d: tf.segment_mean(d, IDS), [X]),
    "segment_max": (lambda tf, d: tf.segment_max(d, IDS), [X]),
    "segment_prod": (lambda tf, d: tf.segment_prod(d, IDS), [X]),
    "unsorted_segment_max": (lambda tf, d: tf.unsorted_segment_max(d, UNSORTED, 5), [X]),
    "unsorted_segment_min": (lambda tf, d: tf.unsorted_segment_min(d, UNSORTED, 5), [X]),
    "unsorted_segment_prod": (lambda tf, d: tf.unsorted_segment_prod(d, UNSORTED, 5), [X]),
    "unsorted_segment_mean": (lambda tf, d: tf.unsorted_segment_mean(d, UNSORTED, 5), [X]),
    "unsorted_segment_sqrt_n": (lambda tf, d: tf.unsorted_segment_sqrt_n(d, UNSORTED, 5), [X]),
    "bincount": (lambda tf, a: tf.bincount(a, minlength=12), [np.abs(INTS)]),
    "histogram_fixed_width": (lambda tf, v: tf.histogram_fixed_width(v, [-2.0, 2.0], 7), [X]),
    "histogram_fixed_width_bins": (
        lambda tf, v: tf.histogram_fixed_width_bins(v, [-2.0, 2.0], 7),
        [X],
    ),
    "confusion_matrix": (lambda tf, a, b: tf.confusion_matrix(a, b, 5), [IDS, UNSORTED + 1]),
}

# inputs that decide an output's shape: constants (fed values could not)
KNOWN_WHEN_COMPILING = {"bincount"}


def _tf_results() -> dict:
    graph = v1.Graph()
    with graph.as_default():
        out = {name: fn(v1, *[v1.constant(x) for x in xs]) for name, (fn, xs) in CASES.items()}
        with v1.Session(graph=graph) as sess:
            return sess.run(out)


def _tfc_results() -> dict:
    graph = tfc.Graph()
    with graph.as_default():
        feeds, out = {}, {}
        for name, (fn, xs) in CASES.items():
            tensors = []
            for x in xs:
                if name in KNOWN_WHEN_COMPILING:
                    tensors.append(tfc.constant(x))
                    continue
                ph = tfc.placeholder(tfc.as_dtype(x.dtype), x.shape)
                feeds[ph] = x
                tensors.append(ph)
            out[name] = fn(tfc, *tensors)
        with tfc.Session(graph=graph) as sess:
            return sess.run(out, feed_dict=feeds)


@pytest.fixture(scope="module")
def results():
    return _tf_results(), _tfc_results()


@pytest.mark.parametrize("name", sorted(CASES))
def test_tfc_matches_tensorflow(results, name):
    want, got = (r[name] for r in results)
    want, got = (np.asarray(v) for v in (want, got))
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def test_every_tfc_math_name_is_a_tf_math_name():
    public = {n for n in dir(tfc.math) if not n.startswith("_")}
    assert public <= set(dir(v1.math)), sorted(public - set(dir(v1.math)))
