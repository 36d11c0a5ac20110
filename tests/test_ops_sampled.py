"""The candidate samplers (uniform, log-uniform; unique or not) and the sampled losses
(nce_loss, sampled_softmax_loss): compiled vs reference draws, the samplers' distributions and
expected counts, the losses against NumPy for given samples (accidental hits, num_true = 2), and
their table gradients as rows that an optimizer applies to those rows only."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tfc as tf
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(3)
CLASSES = np.array([[0, 3], [7, 1], [2, 2]], np.int64)


UNIGRAMS = np.array([5.0, 1.0, 3.0, 0.5, 7.0, 2.0, 2.0, 9.0, 0.25, 4.0])
# the fixed-unigram samplers' arguments: distortion 0.75, and 0.5 with two reserved ids
FIXED = {10: {"distortion": 0.75}, 12: {"distortion": 0.5, "num_reserved_ids": 2}}


def _p(kind: str, k: np.ndarray, n: int) -> np.ndarray:
    if kind == "fixed_unigram":
        extra = FIXED[n]
        w = np.concatenate([np.zeros(extra.get("num_reserved_ids", 0)),
                            UNIGRAMS ** extra["distortion"]])  # fmt: skip
        return (w / w.sum())[np.asarray(k)]
    if kind == "uniform":
        return np.full(np.shape(k), 1.0 / n)
    return np.log((np.asarray(k) + 2.0) / (np.asarray(k) + 1.0)) / math.log(n + 1)


SAMPLERS = {  # name: (sampler, kind, num_sampled, unique, range_max)
    "log-unique-10": ("log_uniform", 6, True, 10),
    "log-unique-1000": ("log_uniform", 20, True, 1000),
    "log-10": ("log_uniform", 12, False, 10),
    "uniform-unique-10": ("uniform", 9, True, 10),
    "uniform-64": ("uniform", 8, False, 64),
    "uniform-1000": ("uniform", 20, False, 1000),
    "unigram-10": ("fixed_unigram", 12, False, 10),
    "unigram-unique-reserved-12": ("fixed_unigram", 6, True, 12),
}


@pytest.fixture(scope="module")
def draws():
    """Every sampler twice (two runs of one session), compiled and by the reference."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(3)
        outs = {}
        for name, (kind, n, unique, rng) in SAMPLERS.items():
            fn = getattr(tf.nn, f"{kind}_candidate_sampler")
            extra = {"unigrams": UNIGRAMS, **FIXED[rng]} if kind == "fixed_unigram" else {}
            outs[name] = fn(CLASSES, 2, n, unique, rng, seed=5, **extra)
        # many draws with replacement, for the distributions
        outs["log-many"] = tf.random.log_uniform_candidate_sampler(CLASSES, 2, 20000, False, 10)
        outs["uniform-many"] = tf.random.uniform_candidate_sampler(CLASSES, 2, 20000, False, 8)
        outs["unigram-many"] = tf.random.fixed_unigram_candidate_sampler(
            CLASSES, 2, 20000, False, 12, unigrams=UNIGRAMS, **FIXED[12]
        )
    with tf.Session(graph=graph, config=tf.CompileOptions(passes=[])) as sess:
        compiled = [sess.run(outs), sess.run(outs)]
    interp = Interpreter(graph)
    reference = [interp.run(outs), interp.run(outs)]
    return compiled, reference


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_draws_and_expected_counts(name, draws):
    kind, n, unique, rng = SAMPLERS[name]
    compiled, reference = draws
    for run in range(2):
        sampled, true_count, sampled_count = compiled[run][name]
        ref = reference[run][name]
        np.testing.assert_array_equal(sampled, ref[0])  # the same Philox draws
        np.testing.assert_allclose(true_count, ref[1], rtol=1e-6)
        np.testing.assert_allclose(sampled_count, ref[2], rtol=1e-6)
        assert sampled.dtype == np.int64 and sampled.shape == (n,)
        assert true_count.shape == (3, 2) and true_count.dtype == np.float32
        assert sampled.min() >= 0 and sampled.max() < rng
        if kind == "fixed_unigram" and rng == 12:
            assert sampled.min() >= 2  # the reserved ids are never drawn
        p_true, p_sampled = _p(kind, CLASSES, rng), _p(kind, sampled, rng)
        if not unique:
            np.testing.assert_allclose(true_count, p_true * n, rtol=1e-5)
            np.testing.assert_allclose(sampled_count, p_sampled * n, rtol=1e-5)
            continue
        assert len(set(sampled.tolist())) == n
        # 1 - (1 - p)^tries for one number of tries (>= n) shared by every count
        tries = np.log1p(-sampled_count) / np.log1p(-p_sampled)
        assert tries.min() >= n - 1e-3
        np.testing.assert_allclose(tries, tries[0], rtol=1e-3)
        np.testing.assert_allclose(true_count, -np.expm1(tries[0] * np.log1p(-p_true)), rtol=1e-4)


@pytest.mark.parametrize("name,kind,rng", [("log-many", "log_uniform", 10),
                                           ("uniform-many", "uniform", 8),
                                           ("unigram-many", "fixed_unigram", 12)])  # fmt: skip
def test_sampler_frequencies(name, kind, rng, draws):
    sampled = draws[0][0][name][0]
    np.testing.assert_array_equal(sampled, draws[1][0][name][0])
    freq = np.bincount(sampled, minlength=rng) / sampled.size
    p = _p(kind, np.arange(rng), rng)
    sigma = np.sqrt(p * (1 - p) / sampled.size)
    assert np.all(np.abs(freq - p) <= 5 * sigma), (freq, p)


def test_sampler_bad_arguments():
    with pytest.raises(ValueError, match="range is too small"):
        tf.nn.log_uniform_candidate_sampler(CLASSES, 2, 11, True, 10)
    with pytest.raises(ValueError, match="num_true columns, expected: 3 got: 2"):
        tf.nn.uniform_candidate_sampler(CLASSES, 3, 4, False, 10)
    with pytest.raises(TypeError, match="true_classes must be int64"):
        tf.nn.uniform_candidate_sampler(tf.constant(CLASSES, tf.int32), 2, 4, False, 10)
    with pytest.raises(ValueError, match="must be positive"):
        tf.nn.uniform_candidate_sampler(CLASSES, 2, 4, False, 0)
    with pytest.raises(ValueError, match="range is 11 must be equal to weights size 10"):
        tf.nn.fixed_unigram_candidate_sampler(CLASSES, 2, 4, False, 11, unigrams=UNIGRAMS)
    with pytest.raises(ValueError, match="exactly one of vocab_file and unigrams"):
        tf.nn.fixed_unigram_candidate_sampler(CLASSES, 2, 4, False, 10)
    out_of_range = tf.nn.log_uniform_candidate_sampler(CLASSES, 2, 3, False, 5)
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match=r"true_classes\[2\] = 7 is not in \[0, 5\)"
        ),
    ):
        sess.run(out_of_range)


def test_all_candidate_sampler_gives_every_class_once():
    drawn = tf.nn.all_candidate_sampler(CLASSES, 2, 8, True, seed=1)
    bad = tf.random.all_candidate_sampler(CLASSES, 2, 5, False)  # class 7 is not in [0, 5)
    with tf.Session() as sess:
        sampled, true_count, sampled_count = sess.run(drawn)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"= 7 is not in \[0, 5\)"):
            sess.run(bad)
    np.testing.assert_array_equal(sampled, np.arange(8))
    np.testing.assert_array_equal(true_count, np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(sampled_count, np.ones(8, np.float32))


def test_compute_accidental_hits():
    """Row by row, true class by true class; a class sampled twice hits at its last place."""
    sampled = tf.placeholder(tf.int64, [None])
    hits = tf.nn.compute_accidental_hits(CLASSES, sampled, num_true=2)
    with tf.Session() as sess:
        rows, ids, weights = sess.run(hits, {sampled: [2, 9, 3, 2, 1]})
        none = sess.run(hits, {sampled: [4, 5]})
    np.testing.assert_array_equal(rows, [0, 1, 2, 2])
    np.testing.assert_array_equal(ids, [2, 4, 3, 3])
    assert rows.dtype == np.int32 and ids.dtype == np.int64
    np.testing.assert_array_equal(weights, np.full(4, -np.finfo(np.float32).max, np.float32))
    assert [v.shape for v in none] == [(0,), (0,), (0,)]
    with pytest.raises(ValueError, match="num_true = 3 columns"):
        tf.nn.compute_accidental_hits(CLASSES, [1], num_true=3)


def test_fixed_unigram_reads_a_vocab_file_and_shards(tmp_path):
    """The last comma-separated field of each line is the count; shard 1 of 2 keeps the odd
    ids (its classes 0..4 are words 1, 3, 5, 7, 9)."""
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("".join(f"w{k},x,{u}\n" for k, u in enumerate(UNIGRAMS)))
    classes = np.array([[0], [4]], np.int64)
    drawn = tf.nn.fixed_unigram_candidate_sampler(classes, 1, 4000, False, 5,
                                                  vocab_file=str(vocab), num_shards=2, shard=1,
                                                  seed=1)  # fmt: skip
    with tf.Session() as sess:
        sampled, true_count, _ = sess.run(drawn)
    p = UNIGRAMS[1::2] / UNIGRAMS[1::2].sum()
    np.testing.assert_allclose(true_count[:, 0], p[[0, 4]] * 4000, rtol=1e-5)
    freq = np.bincount(sampled, minlength=5) / sampled.size
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / sampled.size)), (freq, p)


# -- the sampled losses, for given samples ---------------------------------------------------------
V, D, B = 12, 3, 4


def _np_logits(w, b, labels, x, sampled, true_count, sampled_count, hits):
    num_true = labels.shape[1]
    true_logits = (
        np.einsum("bd,btd->bt", x, w[labels]) + b[labels] - np.log(true_count.astype(np.float64))
    )
    sampled_logits = x @ w[sampled].T + b[sampled] - np.log(sampled_count.astype(np.float64))
    if hits:
        hit = (labels[:, :, None] == sampled[None, None, :]).any(1)
        sampled_logits = sampled_logits + np.where(hit, -np.finfo(np.float32).max, 0.0)
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate(
        [np.full_like(true_logits, 1.0 / num_true), np.zeros_like(sampled_logits)], 1
    )
    return logits, targets


def _np_nce(logits, z):
    return (np.maximum(logits, 0) - logits * z + np.log1p(np.exp(-np.abs(logits)))).sum(1)


def _np_softmax_xent(logits, z):
    top = logits.max(1, keepdims=True)
    log_sm = logits - top - np.log(np.exp(logits - top).sum(1, keepdims=True))
    return -(z * log_sm).sum(1)


def test_sampled_losses_match_numpy():
    w = RNG.standard_normal((V, D))
    b = RNG.standard_normal(V)
    x = RNG.standard_normal((B, D))
    sampled = np.array([0, 5, 9, 2, 11], np.int64)
    cases, wants = [], []
    for num_true in (1, 2):
        labels = RNG.integers(0, V, (B, num_true)).astype(np.int64)
        labels[0, 0], labels[1, -1] = 5, 9  # accidental hits
        true_count = RNG.uniform(0.1, 0.9, (B, num_true)).astype(np.float32)
        sampled_count = RNG.uniform(0.1, 0.9, 5).astype(np.float32)
        values = (sampled, true_count, sampled_count)
        for hits in (False, True):
            args = (w, b, labels, x, 5, V)
            kw = {"num_true": num_true, "sampled_values": values, "remove_accidental_hits": hits}
            cases += [tf.nn.nce_loss(*args, **kw), tf.nn.sampled_softmax_loss(*args, **kw)]
            logits, z = _np_logits(w, b, labels, x, *values, hits)
            wants += [_np_nce(logits, z), _np_softmax_xent(logits, z)]
    with tf.Session() as sess:
        got = sess.run(cases)
    for g, want in zip(got, wants):
        assert g.shape == (B,)
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["nce_loss", "sampled_softmax_loss"])
def test_sampled_loss_trains_only_the_rows_it_reads(loss):
    """The weights' and biases' gradients are rows (IndexedSlices); Adagrad moves the rows of
    the true and sampled classes and no other; the loss goes down."""
    w0 = RNG.standard_normal((V, D)).astype(np.float32)
    weights = tf.Variable(w0)
    biases = tf.Variable(np.zeros(V, np.float32))
    labels = np.array([[1], [4], [4], [6]], np.int64)
    x = RNG.standard_normal((B, D)).astype(np.float32)
    ids = np.array([0, 4, 9], np.int64)  # class 4 is an accidental hit for sampled softmax
    sampled = (ids, np.full((B, 1), 0.25, np.float32), np.full(3, 0.25, np.float32))
    total = tf.reduce_mean(getattr(tf.nn, loss)(weights, biases, labels, x, 3, V,
                                                sampled_values=sampled))  # fmt: skip
    grads = tf.gradients(total, [weights, biases])
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    train = tf.train.AdagradOptimizer(0.5).apply_gradients(zip(grads, [weights, biases]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before, _ = sess.run([total, train])
        after_w, after = sess.run([weights, total])
    read = set(labels.ravel().tolist()) | set(ids.tolist())
    unread = [r for r in range(V) if r not in read]
    np.testing.assert_array_equal(after_w[unread], w0[unread])
    assert not np.allclose(after_w[sorted(read)], w0[sorted(read)])
    assert after < before
