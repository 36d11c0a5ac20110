"""The index, reordering and sampling ops against real TensorFlow (needs tensorflow).

The same program is built twice, once with tf.compat.v1 and once with tfc, from a function of
the module (`m`): values, gradients and seeded random draws must agree. Without tensorflow the
module is skipped; the op tests compare with NumPy and with TF's algorithms restated.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5, 3)).astype(np.float32)
IDX = np.array([[[0, 4], [3, 1]], [[2, 2], [1, 0]]], np.int32)
SORTED = np.sort(RNG.integers(-5, 6, (3, 8)), axis=-1).astype(np.float64)
QUERIES = RNG.integers(-6, 7, (3, 4)).astype(np.float64)
PERM = RNG.permutation(7).astype(np.int32)
WEIGHTS = RNG.standard_normal((4, 5, 3))


def _array_program(m):
    x = m.constant(X)
    v = m.constant(PERM)
    return {
        "gather_nd": m.gather_nd(x, IDX),
        "gather_nd_batch": m.gather_nd(
            x, [[[1], [4]], [[0], [0]], [[2], [3]], [[4], [4]]], batch_dims=1
        ),
        "batch_gather": m.batch_gather(x, [[0, 4], [1, 1], [3, 2], [4, 0]]),
        "scatter_nd": m.scatter_nd([[1, 2], [0, 0], [1, 2]], [[1.0, 2.0, 3.0]] * 3, [2, 3, 3]),
        "tensor_scatter_update": m.tensor_scatter_nd_update(x, [[3], [0]], m.ones([2, 5, 3])),
        "tensor_scatter_add": m.tensor_scatter_nd_add(x, [[1, 1], [1, 1]], m.ones([2, 3])),
        "tensor_scatter_max": m.tensor_scatter_nd_max(x, [[2, 0, 1]], [0.5]),
        "reverse": m.reverse(x, [0, -1]),
        "reverse_sequence": m.reverse_sequence(x, [5, 0, 3, 2], seq_axis=1, batch_axis=0),
        "roll": m.roll(x, [2, -1, 7], [0, 1, 1]),
        "sort": m.sort(m.constant(SORTED[:, ::-1].copy()), direction="DESCENDING"),
        "argsort": m.argsort(m.constant(QUERIES), axis=0, stable=True),
        "searchsorted_left": m.searchsorted(SORTED, QUERIES),
        "searchsorted_right": m.searchsorted(SORTED, QUERIES, side="right", out_type=m.int64),
        "invert_permutation": m.invert_permutation(v),
        "unravel_index": m.unravel_index([3, 59, 17], [4, 5, 3]),
        "broadcast_to": m.broadcast_to(x[:, :1], [2, 4, 5, 3]),
        "broadcast_dynamic_shape": m.broadcast_dynamic_shape([4, 1, 3], [5, 1]),
        "meshgrid": m.meshgrid([1.0, 2.0, 3.0], [4.0, 5.0])[1],
        "repeat": m.repeat(x, [1, 0, 2, 1], axis=0),
        "where_v2": m.where_v2(x > 0, x, [0.0, 1.0, 2.0]),
    }


def _run_tf(build):
    graph = real_tf.Graph()
    with graph.as_default():
        v1.set_random_seed(11)
        fetches = build(v1)
        with v1.Session() as sess:
            return [sess.run(fetches) for _ in range(2)]


def _run_tfc(build):
    graph = tfc.Graph()
    with graph.as_default():
        tfc.set_random_seed(11)
        fetches = build(tfc)
        with tfc.Session() as sess:
            return [sess.run(fetches) for _ in range(2)]


def test_array_ops_equal_tensorflow():
    want, got = _run_tf(_array_program)[0], _run_tfc(_array_program)[0]
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, err_msg=key)
        assert np.asarray(got[key]).dtype == np.asarray(want[key]).dtype, key


def _gradient_program(m):
    x = m.constant(X.astype(np.float64))
    w = m.constant(WEIGHTS)
    ys = [
        m.gather_nd(x, IDX),
        m.tensor_scatter_nd_max(x, [[1, 2], [1, 2]], m.constant(np.full((2, 3), 0.1))),
        m.tensor_scatter_nd_update(x, [[3]], m.zeros([1, 5, 3], m.float64)),
        m.reverse_sequence(x, [5, 1, 3, 2], seq_axis=1, batch_axis=0),
        m.roll(x, [1], [2]),
        m.sort(x, axis=1),
        m.broadcast_to(x[:1], [3, 4, 5, 3]),
    ]
    return [m.gradients(m.reduce_sum(y * (1.0 + m.reduce_sum(w))), x)[0] for y in ys]


def test_gradients_equal_tensorflow():
    want, got = _run_tf(_gradient_program)[0], _run_tfc(_gradient_program)[0]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=str(k))


def _sampling_program(m):
    x = m.constant(np.arange(30).reshape(10, 3))
    return {
        "shuffle": m.random_shuffle(x, seed=1),
        "shuffle_vector": m.random_shuffle(m.constant(np.arange(9.0)), seed=2),
        "multinomial": m.multinomial(m.log([[0.1, 0.6, 0.3], [0.5, 0.5, 1e-6]]), 11, seed=3),
        "categorical": m.random.categorical([[0.0, 1.0, -2.0]], 6, dtype=m.int32, seed=4),
        "gamma": m.random_gamma([4], [0.4, 1.0, 2.0, 30.0], beta=[1.0, 2.0, 0.5, 1.0], seed=5),
        "gamma64": m.random_gamma([3, 2], [[0.2], [5.0]], dtype=m.float64, seed=6),
        "poisson": m.random_poisson([0.7, 9.99, 10.0, 500.0], [5], seed=7),
        "poisson_int": m.random_poisson(m.constant([2.0, 40.0], m.float64), [3], m.int32, 8),
        "crop": m.random_crop(m.reshape(m.constant(np.arange(60)), [3, 4, 5]), [2, 3, 2], seed=9),
    }


def test_seeded_samples_equal_tensorflow_over_two_runs():
    want, got = _run_tf(_sampling_program), _run_tfc(_sampling_program)
    for step in range(2):
        for key in want[step]:
            a, b = np.asarray(got[step][key]), np.asarray(want[step][key])
            assert a.dtype == b.dtype, key
            np.testing.assert_array_equal(a, b, err_msg=f"{key} run {step}")
