"""The candidate samplers and the sampled losses against real TensorFlow (needs tensorflow;
skipped without it): the same seeds draw the same classes with the same expected counts over
two runs, and nce_loss and sampled_softmax_loss give TF's losses and table gradients."""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc as tf  # noqa: E402

CLASSES = np.array([[0, 3], [7, 1], [2, 2]], np.int64)
UNIGRAMS = [5.0, 1.0, 3.0, 0.5, 7.0, 2.0, 2.0, 9.0, 0.25, 4.0]


def _in(lib, build):
    """build(lib) in a fresh graph of `lib` with graph seed 3; its values over two runs."""
    if lib is tf:
        graph, session, seed = tf.Graph(), tf.Session, tf.set_random_seed
    else:
        graph, session, seed = real_tf.Graph(), v1.Session, v1.set_random_seed
    with graph.as_default():
        seed(3)
        fetches = build(lib if lib is tf else v1)
        with session(graph=graph) as sess:
            sess.run((tf if lib is tf else v1).global_variables_initializer())
            return [sess.run(fetches), sess.run(fetches)]


@pytest.mark.parametrize("unique", [True, False])
def test_samplers_draw_what_tensorflow_draws(unique):
    def build(lib):
        drawn = [
            getattr(lib.nn, f"{kind}_candidate_sampler")(CLASSES, 2, n, unique, rng, seed=5)
            for kind in ("log_uniform", "uniform")
            for rng, n in ((10, 6), (1000, 20), (64, 8))
        ]
        counts = np.random.default_rng(0).integers(1, 1000, 997).astype(float).tolist()
        return drawn + [
            lib.nn.all_candidate_sampler(CLASSES, 2, 9, unique, seed=4),
            lib.nn.fixed_unigram_candidate_sampler(CLASSES, 2, 8, unique, 10,
                                                   unigrams=UNIGRAMS, distortion=0.75, seed=5),
            lib.nn.fixed_unigram_candidate_sampler(CLASSES, 2, 6, unique, 12, unigrams=UNIGRAMS,
                                                   distortion=0.5, num_reserved_ids=2, seed=6),
            lib.nn.fixed_unigram_candidate_sampler(CLASSES, 2, 40, unique, 997, unigrams=counts,
                                                   distortion=0.75, seed=7),
            lib.nn.fixed_unigram_candidate_sampler(CLASSES % 5, 2, 4, unique, 5, seed=8,
                                                   unigrams=UNIGRAMS, num_shards=2, shard=1),
        ]  # fmt: skip

    got, want = _in(tf, build), _in(real_tf, build)
    for run_got, run_want in zip(got, want):
        for g, w in zip(run_got, run_want):
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_allclose(g[1], w[1], rtol=1e-6)
            np.testing.assert_allclose(g[2], w[2], rtol=1e-6)


@pytest.mark.parametrize("num_true", [1, 2])
def test_sampled_losses_and_gradients_equal_tensorflows(num_true):
    rng = np.random.default_rng(num_true)
    classes, dim, batch = 50, 4, 6
    w0 = rng.standard_normal((classes, dim)).astype(np.float32)
    b0 = rng.standard_normal(classes).astype(np.float32)
    x = rng.standard_normal((batch, dim)).astype(np.float32)
    labels = rng.integers(0, classes, (batch, num_true)).astype(np.int64)
    labels[0, 0] = 0  # the likeliest log-uniform sample: an accidental hit

    def build(lib):
        w, b = lib.Variable(w0), lib.Variable(b0)
        losses = []
        for hits in (False, True):
            drawn = lib.nn.log_uniform_candidate_sampler(labels, num_true, 10, True, classes, 7)
            losses.append(
                lib.nn.nce_loss(
                    w,
                    b,
                    labels,
                    x,
                    10,
                    classes,
                    num_true=num_true,
                    sampled_values=drawn,
                    remove_accidental_hits=hits,
                )
            )
            losses.append(
                lib.nn.sampled_softmax_loss(
                    w,
                    b,
                    labels,
                    x,
                    10,
                    classes,
                    num_true=num_true,
                    seed=3,
                    remove_accidental_hits=hits,
                )
            )
        total = lib.add_n([lib.reduce_sum(t) for t in losses])
        grads = lib.gradients(total, [w, b])
        return losses, [lib.convert_to_tensor(g) for g in grads]

    got, want = _in(tf, build), _in(real_tf, build)
    for run_got, run_want in zip(got, want):
        for g, w in zip(run_got[0] + run_got[1], run_want[0] + run_want[1]):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_accidental_hits_equal_tensorflows():
    def build(lib):
        return lib.nn.compute_accidental_hits(CLASSES, np.array([2, 9, 3, 2, 1, 0]), num_true=2)

    got, want = _in(tf, build)[0], _in(real_tf, build)[0]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype
