"""TopKV2 and InTopKV2: compiled C vs the NumPy reference vs independent NumPy formulas."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(77)


def np_top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A stable descending sort with NaN first: ties keep the lower index first."""
    rows = x.reshape(-1, x.shape[-1])
    indices = []
    for row in rows:
        key = [(0 if np.isnan(v) else 1, 0 if np.isnan(v) else -v, j) for j, v in enumerate(row)]
        indices.append([j for _, _, j in sorted(key)][:k])
    indices = np.array(indices, np.int32).reshape(x.shape[:-1] + (k,))
    return np.take_along_axis(x, indices.astype(np.int64), -1), indices


def np_in_top_k(predictions: np.ndarray, targets: np.ndarray, k: int) -> np.ndarray:
    out = []
    for row, t in zip(predictions, targets):
        if not 0 <= t < len(row) or not np.isfinite(row[t]):
            out.append(False)
            continue
        out.append(sum(np.isfinite(v) and v > row[t] for v in row) < k)
    return np.array(out, bool)


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ["float32", "float64", "int32", "int64"]:
            # few distinct values: many ties
            x = RNG.integers(-4, 5, (5, 11)).astype(dtype)
            for k in [0, 1, 3, 11]:
                values, indices = tf.nn.top_k(b.feed(x), k)
                want_v, want_i = np_top_k(x, k)
                b.add(f"values-{dtype}-k{k}", values, want_v)
                b.add(f"indices-{dtype}-k{k}", indices, want_i)
        x = RNG.standard_normal((2, 3, 40)).astype(np.float32)
        x[0, 1, [3, 17]] = np.nan
        x[1, 2, 5] = np.inf
        x[1, 0, :] = np.nan
        x[0, 0, 7] = -np.inf
        for k in [5, 40]:
            values, indices = tf.nn.top_k(b.feed(x, [None, 3, 40]), k=k, sorted=False)
            want_v, want_i = np_top_k(x, k)
            b.add(f"values-nan-rank3-k{k}", values, want_v)
            b.add(f"indices-nan-rank3-k{k}", indices, want_i)
        vector = np.array([3.0, 1.0, 3.0, 2.0], np.float64)
        values, indices = tf.nn.top_k(vector, 2)
        b.add("values-vector", values, np.array([3.0, 3.0]))
        b.add("indices-vector", indices, np.array([0, 2], np.int32))

        predictions = RNG.integers(0, 4, (6, 5)).astype(np.float32)
        predictions[1, 2] = np.nan
        predictions[2, 0] = np.inf
        predictions[3, 4] = -np.inf
        targets = np.array([0, 2, 0, 1, 5, -1], np.int32)
        for k in [0, 1, 2, 5]:
            b.add(
                f"in_top_k-k{k}",
                tf.nn.in_top_k(b.feed(predictions), targets, k),
                np_in_top_k(predictions, targets, k),
            )
        row_ids = np.array([1, 1, 3, 3, 0, 4], np.int64)
        k_fed = b.feed(np.int64(2))
        b.add(
            "in_top_k-int64-fed-k",
            tf.nn.in_top_k(predictions, b.feed(row_ids), k_fed),
            np_in_top_k(predictions, row_ids, 2),
        )
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_top_k_ops(case):
    BATCH.check(case)


def test_ties_in_top_k_follow_tf():
    """TF's own examples: the target ties the k-th largest value, so it is in."""
    with tf.Session() as sess:
        got = sess.run(tf.nn.in_top_k([[1.0, 2.0, 2.0, 0.0]], [1], 1))
    assert got.tolist() == [True]


def test_graph_and_shapes():
    x = tf.placeholder(tf.float32, [None, 7])
    values, indices = tf.nn.top_k(x, 3)
    assert values.op.type == "TopKV2" and values.op.name == "TopKV2"
    assert values.shape.as_list() == [None, 3] and indices.dtype == tf.int32
    assert tf.nn.in_top_k(x, tf.placeholder(tf.int32, [None]), 2).shape.as_list() == [None]


def test_errors():
    with pytest.raises(ValueError, match=r"input must have last dimension >= k = 4 but is 3"):
        tf.nn.top_k(np.zeros((2, 3), np.float32), 4)
    with pytest.raises(ValueError, match="Need k >= 0, got -1"):
        tf.nn.top_k(np.zeros((2, 3), np.float32), -1)
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.nn.top_k(np.float32(1.0), 1)
    with pytest.raises(ValueError, match="must be known when the graph is compiled"):
        k = tf.placeholder(tf.int32, [])
        values, _ = tf.nn.top_k(np.zeros((2, 3), np.float32), k)
        with tf.Session() as sess:
            sess.run(values, {k: 2})
    with pytest.raises(TypeError, match="'predictions' has DataType float64"):
        tf.nn.in_top_k(np.zeros((2, 3)), [0, 1], 1)
    with pytest.raises(TypeError, match="'targets' has DataType float32"):
        tf.nn.in_top_k(np.zeros((2, 3), np.float32), [0.0, 1.0], 1)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.nn.in_top_k(np.zeros((2, 3), np.float32), [0, 1, 2], 1)


def test_top_k_gradient_goes_to_the_picked_entries():
    x = tf.placeholder(tf.float64, [None, 5])
    values, _ = tf.nn.top_k(x, 2)
    weights = np.array([[1.0, 10.0], [100.0, 1000.0]])
    (grad,) = tf.gradients(tf.reduce_sum(values * weights), [x])
    value = np.array([[1.0, 5.0, 3.0, 5.0, 0.0], [2.0, 0.0, 9.0, 4.0, 4.0]])
    with tf.Session() as sess:
        got = sess.run(grad, {x: value})
    want = np.array([[0, 1, 0, 10, 0], [0, 0, 100, 1000, 0]], np.float64)
    np.testing.assert_array_equal(got, want)
