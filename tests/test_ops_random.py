"""Random ops: compiled numbers vs the NumPy reference vs TF's algorithm, seeds, statistics."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opcheck import CaseBatch, assert_same

import tfc as tf
from tfc.ir.random_seed import DEFAULT_GRAPH_SEED, get_seed
from tfc.ops import philox
from tfc.reference.interp import Interpreter

ROOT = Path(tf.__file__).resolve().parent.parent  # where the subprocesses import tfc from
M32 = 0xFFFFFFFF


# -- TF's algorithm restated from Philox blocks (independent of tfc.philox's distributions) ------
def blocks(seed: int, seed2: int, first: int, count: int) -> np.ndarray:
    """Blocks at counters first.. of a fresh op stream: key = seed, counter = (i, seed2)."""
    ctr = np.zeros((count, 4), dtype=np.uint32)
    ctr[:, 0] = np.arange(first, first + count) & M32
    ctr[:, 1] = np.arange(first, first + count) >> 32
    ctr[:, 2], ctr[:, 3] = seed2 & M32, seed2 >> 32
    return philox.philox_blocks(ctr, (seed & M32, seed >> 32))


def unit_f32(w: np.ndarray) -> np.ndarray:
    return ((w & 0x7FFFFF).astype(np.float64) * 2.0**-23).astype(np.float32)  # exact


def unit_f64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    return ((hi.astype(np.uint64) & 0xFFFFF) << 32 | lo.astype(np.uint64)) * 2.0**-52


def box_muller(u1: np.ndarray, u2: np.ndarray, dtype: str) -> np.ndarray:
    u1 = np.maximum(u1, u1.dtype.type(1e-7))
    r = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
    v = 2.0 * np.pi * u2.astype(np.float64)
    return np.stack([np.sin(v) * r, np.cos(v) * r], axis=-1).astype(dtype)


def expected_uniform(seed2: int, n: int, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return unit_f32(blocks(DEFAULT_GRAPH_SEED, seed2, 0, -(-n // 4)).ravel())[:n]
    b = blocks(DEFAULT_GRAPH_SEED, seed2, 0, -(-n // 2))
    return np.stack([unit_f64(b[:, 0], b[:, 1]), unit_f64(b[:, 2], b[:, 3])], 1).ravel()[:n]


def expected_normal(seed2: int, n: int, dtype: str) -> np.ndarray:
    if dtype == "float32":
        w = blocks(DEFAULT_GRAPH_SEED, seed2, 0, -(-n // 4)).ravel()
        return box_muller(unit_f32(w[0::2]), unit_f32(w[1::2]), dtype).ravel()[:n]
    b = blocks(DEFAULT_GRAPH_SEED, seed2, 0, -(-n // 2))
    pairs = box_muller(unit_f64(b[:, 0], b[:, 1]), unit_f64(b[:, 2], b[:, 3]), dtype)
    return pairs.ravel()[:n]


def expected_truncated(seed2: int, n: int, dtype: str) -> np.ndarray:
    """Each group of outputs (4 floats, 2 doubles) rejects from its own stream 256 samples per
    output apart, taking 32-bit words one at a time (TF's SingleSampleAdapter)."""
    group = 4 if dtype == "float32" else 2
    out = []
    for g in range(-(-n // group)):
        words = blocks(DEFAULT_GRAPH_SEED, seed2, g * group * 256 // 4, 8).ravel()
        per_pair = 2 if dtype == "float32" else 4
        kept = []
        for k in range(0, len(words), per_pair):
            w = words[k : k + per_pair]
            if dtype == "float32":
                pair = box_muller(unit_f32(w[:1]), unit_f32(w[1:]), dtype)[0]
            else:
                pair = box_muller(unit_f64(w[:1], w[1:2]), unit_f64(w[2:3], w[3:]), dtype)[0]
            kept += [v for v in pair if abs(v) < 2.0]
            if len(kept) >= group:
                break
        assert len(kept) >= group, "8 blocks were not enough for one group (p < 1e-20)"
        out += kept[:group]
    return np.array(out[:n], dtype=dtype)


def expected_int(seed2: int, n: int, dtype: str, lo: int, hi: int) -> np.ndarray:
    if dtype == "int32":
        words = blocks(DEFAULT_GRAPH_SEED, seed2, 0, -(-n // 4)).ravel()[:n]
        return np.array([lo + int(w) % (hi - lo) for w in words]).astype(np.int32)
    w = blocks(DEFAULT_GRAPH_SEED, seed2, 0, -(-n // 2)).ravel()
    bits = [int(a) | int(b) << 32 for a, b in zip(w[0::2], w[1::2])][:n]
    return np.array([lo + v % (hi - lo) for v in bits], dtype=np.int64)


# -- compiled vs reference vs the restated algorithm ----------------------------------------------
SHAPES = [(), (5,), (3, 4), (2, 3, 5), (0, 3)]
DISTRIBUTIONS = {
    "uniform": (tf.random_uniform, expected_uniform, 0.0),
    "normal": (tf.random_normal, expected_normal, 1e-6),
    "truncated": (tf.truncated_normal, expected_truncated, 1e-6),
}


def _build_values() -> CaseBatch:
    b = CaseBatch()
    seed = iter(range(1, 10_000))
    with b.graph.as_default():
        for dist, (fn, expect, rtol) in DISTRIBUTIONS.items():
            for dtype in ["float32", "float64"]:
                for shape in SHAPES:
                    s = next(seed)
                    want = expect(s, int(np.prod(shape)), dtype).reshape(shape)
                    t = fn(list(shape), dtype=dtype, seed=s)
                    b.add(f"{dist}-{dtype}-{shape}", t, want, rtol=rtol, atol=rtol)
        for dtype in ["float32", "float64"]:  # the affine transforms TF1 builds around the ops
            s = next(seed)
            lo, hi = np.array([-2.5, 5.0], dtype=dtype)
            want = expected_uniform(s, 24, dtype).reshape(4, 6) * (hi - lo) + lo
            t = tf.random_uniform([4, 6], minval=-2.5, maxval=5.0, dtype=dtype, seed=s)
            b.add(f"uniform-scaled-{dtype}", t, want, rtol=0, atol=0)
            s = next(seed)
            mean, std = np.array([1.5, 3.0], dtype=dtype)
            want = expected_normal(s, 24, dtype).reshape(4, 6) * std + mean
            t = tf.random_normal([4, 6], mean=1.5, stddev=3.0, dtype=dtype, seed=s)
            b.add(f"normal-scaled-{dtype}", t, want, rtol=1e-6, atol=1e-6)
            s = next(seed)
            mean, std = np.array([-1.0, 0.25], dtype=dtype)
            want = expected_truncated(s, 24, dtype).reshape(4, 6) * std + mean
            t = tf.truncated_normal([4, 6], mean=-1.0, stddev=0.25, dtype=dtype, seed=s)
            b.add(f"truncated-scaled-{dtype}", t, want, rtol=1e-6, atol=1e-6)
        for dtype, lo, hi in [
            ("int32", -5, 7),
            ("int32", -(2**31), 2**31 - 1),
            ("int64", -3, 1000),
            ("int64", -(2**40), 2**50 + 3),
        ]:
            for shape in [(7,), (2, 5)]:
                s = next(seed)
                want = expected_int(s, int(np.prod(shape)), dtype, lo, hi).reshape(shape)
                t = tf.random_uniform(list(shape), lo, hi, dtype=dtype, seed=s)
                b.add(f"uniform-int-{dtype}-{lo}-{shape}", t, want)
        # shapes known only when fed: tf.shape of a placeholder with a None batch dim
        x = b.feed(np.zeros((5, 3), np.float32), [None, 3])
        s = next(seed)
        t = tf.random_uniform(tf.shape(x), seed=s)
        assert t.shape.as_list() == [None, 3]
        b.add("uniform-fed-shape", t, expected_uniform(s, 15, "float32").reshape(5, 3), 0, 0)
        s = next(seed)
        t = tf.random_normal([tf.shape(x)[0], 2], dtype=tf.float64, seed=s)
        assert t.shape.as_list() == [None, 2]
        b.add("normal-packed-shape", t, expected_normal(s, 10, "float64").reshape(5, 2), 1e-6)
    return b


VALUES = _build_values()


@pytest.mark.parametrize("case", VALUES.ids())
def test_values_match_reference_and_tf_algorithm(case):
    VALUES.check(case)


# -- seeds ----------------------------------------------------------------------------------------
def test_get_seed_follows_tf1_rules():
    g = tf.get_default_graph()
    assert get_seed(None) == (None, None)
    assert get_seed(7) == (DEFAULT_GRAPH_SEED, 7)
    assert get_seed(2**31 + 5) == (DEFAULT_GRAPH_SEED, 6)  # truncated modulo 2**31 - 1
    tf.constant(1.0)
    tf.set_random_seed(1234)
    assert g.seed == 1234
    assert get_seed(None) == (1234, g._next_id) == (1234, 1)
    assert get_seed(9) == (1234, 9)
    tf.set_random_seed(0)
    assert get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "unseeded" to the ops
    assert get_seed(None) == (0, 1)


def _attrs(t):
    op = next(op for op in t.graph.get_operations() if op.type.startswith(("Random", "Trunc")))
    return op.get_attr("seed"), op.get_attr("seed2")


def test_graph_seed_gives_each_op_its_own_reproducible_stream():
    def build():
        tf.set_random_seed(1234)
        a = tf.random_uniform([6], name="a")
        b = tf.random_uniform([6], name="b")
        c = tf.random_uniform([6], seed=3, name="c")
        return a, b, c

    g1 = tf.Graph()
    with g1.as_default():
        a, b, c = build()
        ops = {op.name: op for op in g1.get_operations()}
        seeds = [
            (
                ops[f"{n}/RandomUniform"].get_attr("seed"),
                ops[f"{n}/RandomUniform"].get_attr("seed2"),
            )
            for n in "abc"
        ]
    # the op seed defaults to the number of ops created before it: 3 (shape, min, max)
    # for a; 3 more plus a's sub, mul and add for b
    assert seeds == [(1234, 3), (1234, 10), (1234, 3)]
    g2 = tf.Graph()
    with g2.as_default():
        a2, b2, c2 = build()
    with tf.Session(graph=g1) as s1, tf.Session(graph=g2) as s2:
        first, second = s1.run([a, b, c]), s2.run([a2, b2, c2])
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], first[1])
    np.testing.assert_array_equal(first[0], first[2])  # same (graph seed, op seed) pair
    np.testing.assert_array_equal(first[0], expected_uniform_with(1234, 3, 6))


def expected_uniform_with(seed: int, seed2: int, n: int) -> np.ndarray:
    return unit_f32(blocks(seed, seed2, 0, -(-n // 4)).ravel())[:n]


def test_same_op_seed_same_numbers_across_sessions():
    u = tf.random_uniform([3, 4], seed=42)
    n = tf.truncated_normal([5], dtype=tf.float64, seed=42)
    with tf.Session() as s1:
        first = s1.run([u, n])
    with tf.Session() as s2:
        second = s2.run([u, n])
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(first[0], expected_uniform(42, 12, "float32").reshape(3, 4))


PROCESS_SCRIPT = """
import tfc as tf
u = tf.random_uniform([3, 4], seed=42)
n = tf.random_normal([5], dtype=tf.float64, seed=43)
with tf.Session() as sess:
    a, b = sess.run([u, n])
print(a.tobytes().hex(), b.tobytes().hex())
"""


def test_same_op_seed_same_numbers_across_processes():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    outputs = [
        subprocess.run(
            [sys.executable, "-c", PROCESS_SCRIPT], env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    for out in outputs:
        assert out.returncode == 0, out.stderr
    assert outputs[0].stdout == outputs[1].stdout
    u_hex, n_hex = outputs[0].stdout.split()
    np.testing.assert_array_equal(
        np.frombuffer(bytes.fromhex(u_hex), np.float32),
        expected_uniform(42, 12, "float32"),
    )
    np.testing.assert_allclose(
        np.frombuffer(bytes.fromhex(n_hex), np.float64), expected_normal(43, 5, "float64"), 1e-6
    )


def test_successive_runs_draw_fresh_numbers_and_a_new_session_starts_over():
    u = tf.random_uniform([7], seed=5)
    t = tf.truncated_normal([6], seed=6)
    with tf.Session() as sess:
        runs = [sess.run([u, t]) for _ in range(3)]
    with tf.Session() as sess:
        restart = sess.run([u, t])
    interp = Interpreter()
    interp_runs = [interp.run([u, t]) for _ in range(3)]
    # each run reserves 256 samples per output element: run k continues the stream there
    state_u = np.array([DEFAULT_GRAPH_SEED, 5, 0], dtype=np.uint64)
    state_t = np.array([DEFAULT_GRAPH_SEED, 6, 0], dtype=np.uint64)
    for k in range(3):
        want_u = philox.uniform(state_u, 7, np.float32)
        want_t = philox.truncated_normal(state_t, 6, np.float32)
        assert_same(runs[k][0], want_u, 0, 0, f"uniform run {k}")
        assert_same(runs[k][1], want_t, 1e-6, 1e-6, f"truncated run {k}")
        assert_same(interp_runs[k][0], runs[k][0], 0, 0, f"interpreter uniform run {k}")
        assert_same(interp_runs[k][1], runs[k][1], 1e-6, 1e-6, f"interpreter truncated {k}")
    assert int(state_u[2]) == 3 * 7 * 256
    assert not np.array_equal(runs[0][0], runs[1][0])
    assert not np.array_equal(runs[1][1], runs[2][1])
    np.testing.assert_array_equal(restart[0], runs[0][0])


def test_fed_batch_sizes_share_one_stream():
    x = tf.placeholder(tf.float32, [None, 2])
    u = tf.random_uniform(tf.shape(x), seed=8)
    with tf.Session() as sess:
        big = sess.run(u, {x: np.zeros((3, 2))})
        small = sess.run(u, {x: np.zeros((1, 2))})
    state = np.array([DEFAULT_GRAPH_SEED, 8, 0], dtype=np.uint64)
    np.testing.assert_array_equal(big, philox.uniform(state, 6, np.float32).reshape(3, 2))
    np.testing.assert_array_equal(small, philox.uniform(state, 2, np.float32).reshape(1, 2))


def test_unseeded_ops_differ_between_sessions_and_from_each_other():
    a = tf.random_uniform([64])
    b = tf.random_uniform([64])
    assert _attrs(a) == (0, 0)
    with tf.Session() as s1:
        a1, b1 = s1.run([a, b])
    with tf.Session() as s2:
        a2 = s2.run(a)
    assert not np.array_equal(a1, a2)
    assert not np.array_equal(a1, b1)


# -- statistics: a wrong transform, range or dtype conversion moves these well past the bounds ---
N = 200_000


def _stats_batch():
    tensors = {}
    for dtype in ["float32", "float64"]:
        tensors[f"uniform-{dtype}"] = tf.random_uniform([N], -1.0, 3.0, dtype=dtype, seed=21)
        tensors[f"normal-{dtype}"] = tf.random_normal([N], 3.0, 2.0, dtype=dtype, seed=22)
        tensors[f"truncated-{dtype}"] = tf.truncated_normal([N], -1.0, 0.5, dtype=dtype, seed=23)
    tensors["int32"] = tf.random_uniform([N], -3, 7, dtype=tf.int32, seed=24)
    tensors["int64"] = tf.random_uniform([N], -(2**40), 2**40, dtype=tf.int64, seed=25)
    with tf.Session() as sess:
        return sess.run(tensors)


def test_statistics():
    values = _stats_batch()
    se = 1 / np.sqrt(N)  # standard error of a mean, in units of the standard deviation
    for dtype in ["float32", "float64"]:
        u = values[f"uniform-{dtype}"]
        assert u.dtype == dtype and u.min() >= -1.0 and u.max() < 3.0
        assert abs(u.mean() - 1.0) < 6 * se * 4 / np.sqrt(12)
        assert abs(u.std() - 4 / np.sqrt(12)) < 0.005
        deciles = np.histogram(u, bins=10, range=(-1.0, 3.0))[0] / N
        assert np.all(np.abs(deciles - 0.1) < 0.004), deciles
        n = values[f"normal-{dtype}"]
        assert abs(n.mean() - 3.0) < 6 * se * 2.0
        assert abs(n.std() - 2.0) < 0.02
        assert abs(np.mean(np.abs(n - 3.0) < 2.0) - 0.682689) < 0.006  # within one sigma
        assert abs(np.mean(n - 3.0 > 4.0) - 0.02275) < 0.002  # the tails are there
        t = values[f"truncated-{dtype}"]
        assert np.all((t > -2.0) & (t < 0.0))  # (-2, 2) * 0.5 - 1
        assert abs(t.mean() + 1.0) < 6 * se * 0.5
        assert abs(t.std() - 0.5 * 0.8796256610342398) < 0.004  # a unit normal cut at +-2
        assert abs(np.mean(np.abs(t + 1.0) < 0.5) - 0.715232) < 0.006  # 0.6827 / 0.9545
    i32 = values["int32"]
    assert i32.dtype == np.int32
    np.testing.assert_array_equal(np.unique(i32), np.arange(-3, 7))
    assert np.all(np.abs(np.bincount(i32 + 3) / N - 0.1) < 0.005)
    i64 = values["int64"]
    assert i64.dtype == np.int64 and i64.min() >= -(2**40) and i64.max() < 2**40
    assert abs(i64.mean()) < 6 * se * 2**41 / np.sqrt(12)
    assert np.mean(np.abs(i64) > 2**39) == pytest.approx(0.5, abs=0.01)


# -- graph structure, shapes and errors -------------------------------------------------------
def test_graph_built_as_tf1_builds_it():
    u = tf.random_uniform([2, 3], minval=1.0, maxval=4.0, seed=1)
    n = tf.random_normal([2], seed=1, name="noise")
    t = tf.truncated_normal([2], seed=1)
    i = tf.random_uniform([2], maxval=10, dtype=tf.int64, seed=1)
    assert u.name == "random_uniform:0" and u.op.type == "Add"
    assert n.name == "noise:0" and t.name == "truncated_normal:0"
    assert i.name == "random_uniform_1:0" and i.op.type == "RandomUniformInt"
    types = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert types["random_uniform/RandomUniform"] == "RandomUniform"
    assert types["random_uniform/sub"] == "Sub" and types["random_uniform/mul"] == "Mul"
    assert types["noise/RandomStandardNormal"] == "RandomStandardNormal"
    assert types["noise/mul"] == "Mul"
    assert types["truncated_normal/TruncatedNormal"] == "TruncatedNormal"
    assert (
        tf.get_default_graph()
        .get_operation_by_name("random_uniform/RandomUniform")
        .get_attr("dtype")
        == tf.float32
    )


def test_partial_and_unknown_shapes_at_graph_construction():
    x = tf.placeholder(tf.float32, [None, 4, None])
    assert tf.random_normal(tf.shape(x)).shape.as_list() == [None, 4, None]
    packed = tf.truncated_normal([tf.shape(x)[1], tf.shape(x)[0], 2])
    assert packed.shape.as_list() == [4, None, 2]
    v = tf.placeholder(tf.int32, [3])
    assert tf.random_uniform(v).shape.as_list() == [None, None, None]
    assert tf.random_uniform(tf.placeholder(tf.int32)).shape.ndims is None
    assert tf.random_uniform(tf.TensorShape([2, 3])).shape.as_list() == [2, 3]


def test_shape_known_only_from_a_feed_compiles_to_that_shape():
    v = tf.placeholder(tf.int32, [2])
    u = tf.random_uniform(v, seed=2)
    with tf.Session() as sess, pytest.raises(ValueError, match="must be known when the graph"):
        sess.run(u, {v: [2, 3]})


def test_random_uniform_int_needs_a_nonempty_range_at_run_time():
    lo = tf.placeholder(tf.int32, [])
    hi = tf.placeholder(tf.int32, [])
    r = tf.random_uniform([3], lo, hi, dtype=tf.int32, seed=1)
    with tf.Session() as sess:
        assert sess.run(r, {lo: 2, hi: 3}).tolist() == [2, 2, 2]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 3 >= 3"):
            sess.run(r, {lo: 3, hi: 3})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 5 >= -1"):
        Interpreter().run(r, {lo: 5, hi: -1})


def test_argument_errors():
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random_uniform([2], dtype=tf.int32)
    with pytest.raises(TypeError, match="not in the list of allowed values"):
        tf.random_normal([2], mean=0, stddev=1, dtype=tf.int32)
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.random_uniform([[2, 3]])
    with pytest.raises(ValueError, match=r"Shape \[2,-1\] has negative dimensions"):
        tf.truncated_normal([2, -1])
    with pytest.raises(TypeError, match="A shape must hold int32 or int64 values, got float32"):
        tf.random_uniform(tf.constant([2.0]))
    with pytest.raises(ValueError, match="partially known TensorShape"):
        tf.random_uniform(tf.TensorShape([None, 2]))
