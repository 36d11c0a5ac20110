"""Sampling ops (shuffle, multinomial, gamma, Poisson, crop): compiled vs reference vs TF's
algorithm restated from raw Philox blocks, runs that advance the stream, statistics, errors."""

import numpy as np
import pytest
from opcheck import CaseBatch, assert_same

import tfc as tf
from tfc.ops import philox
from tfc.reference.interp import Interpreter

M32 = 0xFFFFFFFF
N = 20000


def blocks(seed: int, seed2: int, first: int, count: int) -> np.ndarray:
    """Blocks at counters first.. of a fresh op stream: key = seed, counter = (i, seed2)."""
    ctr = np.zeros((count, 4), dtype=np.uint32)
    ctr[:, 0] = np.arange(first, first + count) & M32
    ctr[:, 1] = np.arange(first, first + count) >> 32
    ctr[:, 2], ctr[:, 3] = seed2 & M32, seed2 >> 32
    return philox.philox_blocks(ctr, (seed & M32, seed >> 32))


def seeds(t: tf.Tensor) -> tuple[int, int]:
    return t.op.get_attr("seed"), t.op.get_attr("seed2")


def expected_permutation(seed: int, seed2: int, n: int) -> np.ndarray:
    """TF's RandomShuffle: (n - 1 + 3) // 4 blocks, one word per Fisher-Yates step."""
    words = blocks(seed, seed2, 0, max(1, (n + 2) // 4)).ravel().tolist()
    perm = list(range(n))
    for i in range(n - 1):
        j = i + words[i] % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm)


def expected_multinomial(seed: int, seed2: int, logits: np.ndarray, n: int) -> np.ndarray:
    """TF's CPU Multinomial: per row, running sums of exp(logit - max) over finite logits; each
    draw a double from two words (the first the high bits), found by an upper bound."""
    words = blocks(seed, seed2, 0, logits.shape[0] * n).ravel()
    unit = ((words[0::2].astype(np.uint64) & 0xFFFFF) << 32 | words[1::2]) * 2.0**-52
    out, k = [], 0
    for row in logits.astype(np.float64):
        finite = np.isfinite(row)
        sums = np.cumsum(np.where(finite, np.exp(row - row[finite].max()), 0.0))
        out.append(np.searchsorted(sums, unit[k : k + n] * sums[-1], side="right"))
        k += n
    return np.array(out)


def state_after(t: tf.Tensor) -> np.ndarray:
    seed, seed2 = seeds(t)
    return np.array([seed, seed2, 0], np.uint64)


def build_sampling() -> CaseBatch:
    b = CaseBatch()
    s = iter(range(101, 10_000))
    with b.graph.as_default():
        for dtype in ["float32", "float64", "int32", "int64", "bool"]:
            rows = np.arange(24).reshape(8, 3)
            x = rows.astype(dtype) if dtype != "bool" else rows % 3 == 1
            t = tf.random_shuffle(b.feed(x, [None, 3]) if dtype == "float64" else x, seed=next(s))
            b.add(f"shuffle-rows-{dtype}", t, x[expected_permutation(*seeds(t), 8)])
        v = np.arange(11.0)
        t = tf.random_shuffle(v, seed=next(s))
        b.add("shuffle-vector", t, v[expected_permutation(*seeds(t), 11)])
        one = tf.random_shuffle([[1.0, 2.0]], seed=next(s))
        b.add("shuffle-one-row", one, np.array([[1.0, 2.0]], np.float32))
        b.add("shuffle-scalar", tf.random_shuffle(5, seed=next(s)), np.int32(5))
        logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [1.0, 1e-9, 1e-9]]))
        for dtype in ["float32", "float64"]:
            t = tf.multinomial(logits.astype(dtype), 9, seed=next(s))
            want = expected_multinomial(*seeds(t), logits.astype(dtype), 9)
            b.add(f"multinomial-{dtype}", t, want.astype(np.int64))
        t = tf.random.categorical(
            np.array([[0.0, -np.inf, 2.0], [np.inf, 1.0, 0.0]], np.float32), 5, tf.int32, next(s)
        )
        want = expected_multinomial(
            *seeds(t), np.array([[0.0, -np.inf, 2.0], [np.inf, 1.0, 0.0]]), 5
        )
        b.add("categorical-infinite-logits", t, want.astype(np.int32))
        fed = b.feed(logits.astype(np.float32), [None, 3])
        t = tf.multinomial(fed, 4, seed=next(s), output_dtype=tf.int32)
        b.add(
            "multinomial-fed",
            t,
            expected_multinomial(*seeds(t), logits.astype(np.float32), 4).astype(np.int32),
        )
        # gamma and Poisson: the twin's samples (tfc.ops.philox), checked independently by the
        # statistics below and against TensorFlow's own numbers where it is installed
        for dtype in ["float32", "float64"]:
            alpha = np.array([[0.3, 1.0], [2.5, 40.0]], dtype)
            draws = tf.random_gamma([3], alpha, dtype=dtype, seed=next(s))
            gamma = [op for op in b.graph.get_operations() if op.type == "RandomGamma"][-1]
            state = np.array([gamma.get_attr("seed"), gamma.get_attr("seed2"), 0], np.uint64)
            want = philox.per_output_samples(state, alpha, 3, philox.gamma_sample)
            want = np.maximum(want.reshape(3, 2, 2).astype(dtype), np.finfo(dtype).tiny)
            b.add(f"gamma-{dtype}", draws, want)
        for rate_dtype, out in [("float32", "float32"), ("float64", "int64"), ("int32", "int32")]:
            rates = np.array([0.5, 3.0, 9.5, 10.0, 25.0, 1e4], rate_dtype)
            draws = tf.random_poisson(rates, [2, 2], dtype=out, seed=next(s))
            state = state_after(draws)
            highest = float(np.finfo(out).max if out.startswith("float") else np.iinfo(out).max)
            want = philox.per_output_samples(
                state, rates, 4, lambda g, r, h=highest: philox.poisson_sample(g, r, h)
            )
            b.add(f"poisson-{rate_dtype}-{out}", draws, want.reshape(2, 2, 6).astype(out))
        img = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
        crop = tf.random_crop(img, [2, 4, 3], seed=next(s))
        draws = [op for op in b.graph.get_operations() if op.type == "RandomUniformInt"][-1]
        words = blocks(draws.get_attr("seed"), draws.get_attr("seed2"), 0, 1).ravel()[:3]
        start = [int(w) % 0x7FFFFFFF % room for w, room in zip(words, (2, 1, 3))]
        b.add("random_crop", crop, img[start[0] : start[0] + 2, :, start[2] : start[2] + 3])
    return b


SAMPLING = build_sampling()


@pytest.mark.parametrize("case", SAMPLING.ids())
def test_samples_match_reference_and_tf_algorithm(case):
    SAMPLING.check(case)


def test_runs_draw_fresh_samples_identically_compiled_and_interpreted():
    graph = tf.Graph()
    with graph.as_default():
        fetches = [
            tf.random_shuffle(np.arange(9), seed=1),
            tf.multinomial([[0.0, 1.0, 2.0]], 6, seed=2),
            tf.random_gamma([4], [0.7, 3.0], seed=3),
            tf.random_poisson([4.0, 60.0], [4], dtype=tf.int32, seed=4),
        ]
    with tf.Session(graph=graph) as sess:
        compiled = [sess.run(fetches) for _ in range(3)]
    interp = Interpreter(graph)
    interpreted = [interp.run(fetches) for _ in range(3)]
    for step in range(3):
        for got, want in zip(compiled[step], interpreted[step]):
            assert_same(got, want, rtol=0, atol=0, what=f"step {step}")
    assert not np.array_equal(compiled[0][0], compiled[1][0])  # the stream moved on
    assert not np.array_equal(compiled[0][2], compiled[1][2])


def test_statistics():
    with tf.Graph().as_default():
        values = tf.Session().run(
            {
                "gamma": tf.random_gamma([N], [0.5, 1.0, 4.0], beta=[1.0, 2.0, 0.5], seed=5),
                "poisson": tf.random_poisson([3.0, 40.0], [N], dtype=tf.int64, seed=6),
                "draws": tf.multinomial(np.log([[0.2, 0.5, 0.3]]), N, seed=7),
                "perms": tf.stack([tf.random_shuffle(np.arange(4)) for _ in range(300)]),
            }
        )
    g = values["gamma"]
    se = 1 / np.sqrt(N)
    for k, (alpha, beta) in enumerate([(0.5, 1.0), (1.0, 2.0), (4.0, 0.5)]):
        mean, std = alpha / beta, np.sqrt(alpha) / beta
        assert abs(g[:, k].mean() - mean) < 6 * se * std
        assert abs(g[:, k].std() - std) < 0.05 * std
        assert g[:, k].min() > 0
    p = values["poisson"]
    for k, rate in enumerate([3.0, 40.0]):
        assert abs(p[:, k].mean() - rate) < 6 * se * np.sqrt(rate)
        assert abs(p[:, k].var() - rate) < 0.06 * rate
    counts = np.bincount(values["draws"].ravel(), minlength=3) / N
    np.testing.assert_allclose(counts, [0.2, 0.5, 0.3], atol=0.015)
    perms = values["perms"]
    assert all(sorted(row) == [0, 1, 2, 3] for row in perms.tolist())
    assert len({tuple(r) for r in perms.tolist()}) > 20  # of 24 orders, most appear


def test_shapes_names_and_errors():
    x = tf.placeholder(tf.float32, [None, 5])
    assert tf.random_shuffle(x).shape.as_list() == [None, 5]
    assert tf.random_shuffle(x).op.type == "RandomShuffle"
    m = tf.multinomial(x, 3)
    assert m.shape.as_list() == [None, 3] and m.dtype == tf.int64
    assert m.op.name == "multinomial/Multinomial"
    assert tf.random.categorical(x, 2, dtype=tf.int32).dtype == tf.int32
    assert tf.random_gamma([7, 2], tf.zeros([3])).shape.as_list() == [7, 2, 3]
    assert tf.random_poisson(tf.zeros([4]), [2], dtype=tf.int32).shape.as_list() == [2, 4]
    assert tf.random.gamma is tf.random_gamma and tf.random.shuffle is tf.random_shuffle
    with pytest.raises(ValueError, match="logits should be a matrix, got shape"):
        tf.multinomial(tf.zeros([3]), 2)
    with pytest.raises(ValueError, match="num_samples should be non-negative, got -1"):
        tf.multinomial(tf.zeros([1, 3]), -1)
    with pytest.raises(ValueError, match="num_classes should be positive, got 0"):
        tf.multinomial(tf.zeros([1, 0]), 2)
    with pytest.raises(TypeError, match="parameter 'logits' has DataType int32"):
        tf.multinomial(tf.zeros([1, 3], tf.int32), 2)
    with pytest.raises(ValueError, match="Input alpha should have non-zero element count"):
        tf.random_gamma([2], tf.zeros([0]))
    with pytest.raises(ValueError, match="Need value.shape >= size"):
        tf.random_crop(tf.zeros([2, 3]), [3, 3])
    with pytest.raises(ValueError, match="Invalid dtype int32 for random_gamma"):
        tf.random_gamma([2], 1.0, dtype=tf.int32)
