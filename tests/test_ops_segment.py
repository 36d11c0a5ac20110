"""Segment reductions, bincount, histograms, confusion matrices: compiled C vs the NumPy
reference vs plain Python loops over the rows."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(77)
DTYPES = ["float32", "float64", "int32", "int64"]
FOLDS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def by_loops(kind: str, data: np.ndarray, ids: np.ndarray, num: int, empty) -> np.ndarray:
    """Each row folded into its segment in order, negative ids skipped; `empty` (a value or
    a function of the dtype) where no row falls; a mean divides the sum by the row count."""
    rows = data.reshape(ids.size, -1)
    out = [None] * num
    counts = [0] * num
    fold = FOLDS["sum" if kind in ("mean", "sqrt_n") else kind]
    with np.errstate(over="ignore"):
        for row, k in zip(rows, ids.reshape(-1).tolist()):
            if k < 0:
                continue
            out[k] = row.copy() if out[k] is None else fold(out[k], row)
            counts[k] += 1
    filler = empty(data.dtype) if callable(empty) else empty
    result = np.stack([np.full(rows.shape[1], filler, data.dtype) if o is None else o for o in out])
    if kind == "mean":
        n = np.maximum(np.array(counts), 1)[:, None]
        result = result / n if data.dtype.kind == "f" else np.trunc(result / n)
    if kind == "sqrt_n":
        result = result / np.sqrt(np.maximum(np.array(counts), 1))[:, None]
    return result.astype(data.dtype).reshape((num, *data.shape[ids.ndim :]))


def lowest(dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def highest(dtype):
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


def sample(dtype: str, shape: tuple) -> np.ndarray:
    if dtype.startswith("int"):
        return RNG.integers(-5, 6, shape).astype(dtype)
    return RNG.uniform(-2, 2, shape).astype(dtype)


SORTED = {"sum": tf.segment_sum, "mean": tf.segment_mean, "max": tf.segment_max,
          "min": tf.segment_min, "prod": tf.segment_prod}  # fmt: skip
UNSORTED = {
    "sum": (tf.unsorted_segment_sum, 0),
    "max": (tf.unsorted_segment_max, lowest),
    "min": (tf.unsorted_segment_min, highest),
    "prod": (tf.unsorted_segment_prod, 1),
    "mean": (tf.unsorted_segment_mean, 0),
}


def build_segments() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        sorted_ids = [
            np.array([0, 0, 1, 3, 3, 3], np.int32),  # segment 2 is empty
            np.array([2, 2, 2, 2, 4, 4], np.int64),  # 0, 1 and 3 are empty
        ]
        unsorted_ids = [
            np.array([3, 0, -1, 3, 1, 0], np.int32),  # a dropped row, an empty segment
            np.array([[1, 0, 1], [2, -1, 1]], np.int64),  # ids of rank 2
        ]
        for dtype in DTYPES:
            for shape_tail in ((), (3,), (2, 2)):
                data = sample(dtype, (6, *shape_tail))
                t = b.feed(data, [None, *shape_tail])
                for k, ids in enumerate(sorted_ids):
                    num = int(ids[-1]) + 1
                    for kind, fn in SORTED.items():
                        want = by_loops(kind, data, ids, num, 1 if kind == "prod" else 0)
                        b.add(f"segment_{kind}-{dtype}-{shape_tail}-{k}", fn(t, ids), want)
                for k, ids in enumerate(unsorted_ids):
                    if k and shape_tail == (2, 2):
                        continue
                    rows = data.reshape(ids.shape + data.shape[1:])
                    src = b.feed(rows)
                    for kind, (fn, empty) in UNSORTED.items():
                        if kind == "mean" and dtype.startswith("int"):
                            rows = rows.astype(np.float64)  # TF's `/`: a float64 mean
                        want = by_loops(kind, rows, ids, 5, empty)
                        b.add(f"unsorted_{kind}-{dtype}-{shape_tail}-{k}", fn(src, ids, 5), want)
            floats = sample("float64", (6, 2))
            want = by_loops("sqrt_n", floats, unsorted_ids[0], 5, 0)
            b.add(f"unsorted_sqrt_n-{dtype}", tf.unsorted_segment_sqrt_n(floats,
                  unsorted_ids[0], 5), want)  # fmt: skip
        # no rows at all, and rows of no values
        empty = np.zeros((0, 3), np.float32)
        b.add("segment_sum-no-rows", tf.segment_sum(empty, np.zeros(0, np.int32)),
              np.zeros((0, 3), np.float32))  # fmt: skip
        b.add("unsorted_max-no-rows", tf.unsorted_segment_max(empty, np.zeros(0, np.int32), 2),
              np.full((2, 3), np.finfo(np.float32).min, np.float32))  # fmt: skip
        narrow = np.zeros((4, 0), np.float32)
        b.add("unsorted_prod-no-values", tf.unsorted_segment_prod(narrow, [0, 1, 1, 0], 3),
              np.zeros((3, 0), np.float32))  # fmt: skip
        # ids computed from constants (known when compiling, not when building)
        late = tf.placeholder_with_default(np.array([0, 1, 1], np.int32), [None])
        y = tf.segment_max(np.array([1.0, 5.0, 2.0], np.float32), late)
        assert y.shape.as_list() == [None]
        b.add("segment_max-late-ids", y, np.array([1.0, 5.0], np.float32))
    return b


def build_counts() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        arr = RNG.integers(0, 7, 40).astype(np.int32)
        b.add("bincount", tf.bincount(arr), np.bincount(arr).astype(np.int32))
        b.add("bincount-minlength", tf.bincount(arr, minlength=10),
              np.bincount(arr, minlength=10).astype(np.int32))  # fmt: skip
        b.add("bincount-maxlength", tf.bincount(arr, maxlength=4),
              np.bincount(arr)[:4].astype(np.int32))  # fmt: skip
        w = RNG.uniform(0, 1, 40).astype(np.float32)
        b.add("bincount-weights", tf.bincount(arr, weights=w),
              np.bincount(arr, weights=w).astype(np.float32), rtol=1e-6)  # fmt: skip
        b.add("bincount-int64", tf.bincount(arr.reshape(5, 8), dtype=tf.int64),
              np.bincount(arr).astype(np.int64))  # fmt: skip
        fed = b.feed(arr)  # the values at run time: the size from minlength == maxlength
        b.add("bincount-fixed-size", tf.bincount(fed, minlength=5, maxlength=5),
              np.bincount(arr)[:5].astype(np.int32))  # fmt: skip
        b.add("bincount-empty", tf.bincount(np.zeros(0, np.int32)), np.zeros(0, np.int32))

        values = RNG.uniform(-1, 6, 50).astype(np.float32)
        values[:4] = [0.0, 5.0, 1.0, -3.0]  # the range's ends, a bin edge, below the range
        lo, hi = 0.0, 5.0
        bins = np.clip(np.floor((np.maximum(values, lo) - lo) / ((hi - lo) / 5)), 0, 4)
        b.add("histogram_fixed_width", tf.histogram_fixed_width(b.feed(values), [lo, hi], 5),
              np.bincount(bins.astype(int), minlength=5).astype(np.int32))  # fmt: skip
        scaled = np.floor(5 * (values - lo) / (hi - lo))
        b.add("histogram_fixed_width_bins",
              tf.histogram_fixed_width_bins(values, [lo, hi], nbins=5),
              np.clip(scaled, 0, 4).astype(np.int32))  # fmt: skip

        labels = RNG.integers(0, 4, 30)
        predictions = RNG.integers(0, 4, 30)
        matrix = np.zeros((4, 4), np.int32)
        for i, j in zip(labels, predictions):
            matrix[i, j] += 1
        b.add("confusion_matrix", tf.confusion_matrix(labels, predictions), matrix)
        weights = RNG.uniform(0, 2, 30)
        weighted = np.zeros((5, 5))
        for i, j, v in zip(labels, predictions, weights):
            weighted[i, j] += v
        b.add("confusion_matrix-weights", tf.confusion_matrix(b.feed(labels), predictions, 5,
              weights=weights, dtype=tf.float64), weighted)  # fmt: skip
    return b


SEGMENTS = build_segments()
COUNTS = build_counts()


@pytest.mark.parametrize("case", SEGMENTS.ids())
def test_segments(case):
    SEGMENTS.check(case)


@pytest.mark.parametrize("case", COUNTS.ids())
def test_counts(case):
    COUNTS.check(case)


def test_sorted_segment_ids_must_be_known_when_compiling():
    data = tf.placeholder(tf.float32, [4])
    ids = tf.placeholder(tf.int32, [4])
    y = tf.segment_sum(data, ids, name="seg")
    assert y.shape.as_list() == [None]
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"of 'seg' \(op: 'SegmentSum'\) must be known"):
            sess.run(y, {data: np.ones(4), ids: [0, 0, 1, 1]})


def test_sorted_segment_ids_are_checked():
    x = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="segment ids are not increasing"):
        tf.segment_sum(x, [0, 2, 1])
    with pytest.raises(ValueError, match="segment ids must be >= 0"):
        tf.segment_mean(x, [-1, 0, 0])
    with pytest.raises(ValueError, match="segment_ids.shape must be a prefix of data.shape"):
        tf.segment_max(x, [0, 1])


def test_unsorted_ids_out_of_range_fail_the_run():
    ids = tf.placeholder(tf.int32, [3])
    y = tf.unsorted_segment_max(tf.constant([1.0, 2.0, 3.0]), ids, 2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 5"):
            sess.run(y, {ids: [0, 5, 1]})
        assert sess.run(y, {ids: [1, -1, 1]}).tolist() == [np.finfo(np.float32).min, 3.0]


def test_bincount_rules():
    arr = tf.placeholder(tf.int32, [None])
    y = tf.bincount(arr)  # the size depends on the values
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"op: 'Bincount'\) must be known"):
            sess.run(y, {arr: [1, 2]})
        fixed = tf.bincount(arr, minlength=3, maxlength=3)
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be non-negative"):
            sess.run(fixed, {arr: [1, -2]})
        assert sess.run(fixed, {arr: [0, 2, 2, 7]}).tolist() == [1, 0, 2]


def test_histogram_nbins_must_be_positive():
    with pytest.raises(ValueError, match="nbins should be a positive number"):
        tf.histogram_fixed_width([1.0], [0.0, 1.0], nbins=0)
