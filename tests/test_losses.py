"""tf.nn losses and tf.losses: compiled C vs reference vs NumPy; gradients vs finite differences."""

import functools

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(2024)
F = ["float32", "float64"]
R = tf.losses.Reduction
REDUCTIONS = [R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE, R.SUM_BY_NONZERO_WEIGHTS]
LARGE = np.array([[1000.0, 0.0, -1000.0], [-1000.0, 1000.0, 999.0], [1000.0, 1000.0, -1000.0]])


# -- independent NumPy formulas (float64, rounded once to the dtype) ------------------------------
def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def np_softmax_xent(labels, logits, axis=-1):
    """sum(labels) * logsumexp(logits) - sum(labels * logits) along `axis`."""
    x, z = np.broadcast_arrays(logits.astype(np.float64), labels.astype(np.float64))
    return (np.sum(z, axis) * _lse(x, axis) - np.sum(z * x, axis)).astype(logits.dtype)


def np_sparse_xent(labels, logits):
    x = logits.astype(np.float64)
    picked = np.take_along_axis(x, labels[..., None].astype(np.int64), -1)[..., 0]
    return (_lse(x, -1) - picked).astype(logits.dtype)


def np_sigmoid_xent(labels, logits):
    """z * softplus(-x) + (1 - z) * softplus(x): -z log(sigmoid(x)) - (1-z) log(1-sigmoid(x))."""
    x, z = logits.astype(np.float64), labels.astype(np.float64)
    return (z * np.logaddexp(0, -x) + (1 - z) * np.logaddexp(0, x)).astype(logits.dtype)


def np_l2(t):
    return np.asarray(0.5 * np.sum(t.astype(np.float64) ** 2), dtype=t.dtype)


def np_weighted(losses, weights, reduction, dtype=None):
    dtype = dtype or losses.dtype
    losses = losses.astype(np.float64)
    w = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * w
    if reduction == R.NONE:
        return weighted.astype(dtype)
    total = weighted.sum()
    count = {
        R.SUM: 1.0,
        R.MEAN: w.sum(),
        R.SUM_OVER_BATCH_SIZE: float(losses.size),
        R.SUM_BY_NONZERO_WEIGHTS: float(np.count_nonzero(w)),
    }[reduction]
    return np.asarray(total / count if count else 0.0, dtype=dtype)


def _dist(shape, axis=-1):
    """Random probability distributions along `axis`."""
    p = RNG.random(shape) + 0.05
    return p / p.sum(axis=axis, keepdims=True)


def _logits(shape, scale=3.0):
    return RNG.standard_normal(shape) * scale


# -- values ---------------------------------------------------------------------------------------
def _build_nn(b: CaseBatch) -> None:
    for dtype in F:
        for shape, axis in [((5,), -1), ((4, 6), -1), ((4, 6), 0), ((2, 3, 5), 1), ((2, 3, 5), -3)]:
            x, z = _logits(shape).astype(dtype), _dist(shape, axis).astype(dtype)
            tag = f"{dtype}-{shape}-axis{axis}"
            want = np_softmax_xent(z, x, axis)
            b.add(
                f"softmax_v2-{tag}",
                tf.nn.softmax_cross_entropy_with_logits_v2(z, b.feed(x), axis=axis),
                want,
            )
            b.add(
                f"softmax_v1-dim-{tag}",
                tf.nn.softmax_cross_entropy_with_logits(labels=b.feed(z), logits=x, dim=axis),
                want,
            )
        x = _logits((4, 6)).astype(dtype)
        z = _dist((6,)).astype(dtype)
        b.add(
            f"softmax-broadcast-labels-{dtype}",
            tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
            np_softmax_xent(z, x),
        )
        ph = b.feed(x, [None, None])
        b.add(
            f"softmax-unknown-dims-{dtype}",
            tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=ph, axis=1),
            np_softmax_xent(z, x),
        )
        large = LARGE.astype(dtype)
        z = _dist((3, 3)).astype(dtype)
        b.add(
            f"softmax-large-{dtype}",
            tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=b.feed(large)),
            np_softmax_xent(z, large),
        )

        for shape in [(7,), (4, 5), (2, 3, 4)]:
            x = _logits(shape).astype(dtype)
            for ldt in ["int32", "int64"]:
                ids = RNG.integers(0, shape[-1], shape[:-1]).astype(ldt)
                b.add(
                    f"sparse-{dtype}-{shape}-{ldt}",
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=b.feed(x)),
                    np_sparse_xent(ids, x),
                )
        ids = np.array([0, 1, 2], np.int32)
        ph = b.feed(large, [None, 3])
        b.add(
            f"sparse-large-{dtype}",
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=b.feed(ids, [None]), logits=ph),
            np_sparse_xent(ids, large),
        )

        for shape in [(), (5,), (3, 4)]:
            x = _logits(shape).astype(dtype)
            z = RNG.random(shape).astype(dtype)
            b.add(
                f"sigmoid-{dtype}-{shape}",
                tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=b.feed(x)),
                np_sigmoid_xent(z, x),
            )
            b.add(f"l2-{dtype}-{shape}", tf.nn.l2_loss(b.feed(x)), np_l2(x))
        x = np.array([-1000.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 1000.0], dtype)
        z = np.array([0.0, 1.0, 0.5, 0.3, 1.0, 0.0, 0.25], dtype)
        b.add(
            f"sigmoid-large-{dtype}",
            tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=b.feed(x)),
            np_sigmoid_xent(z, x),
        )
        b.add(f"l2-large-{dtype}", tf.nn.l2_loss(x), np_l2(x))


def _weight_kinds(shape):
    full = RNG.random(shape)
    full[0, 0] = 0.0
    return {
        "one": 1.0,
        "scalar": 2.5,
        "zero": 0.0,
        "rows": np.array([[0.5], [0.0], [2.0], [1.0]]),
        "full": full,
    }


def _build_losses(b: CaseBatch) -> None:
    shape = (4, 3)
    for dtype in F:
        labels, preds = _logits(shape).astype(dtype), _logits(shape).astype(dtype)
        for wname, w in _weight_kinds(shape).items():
            wt = w if isinstance(w, float) else w.astype(dtype)
            for red in REDUCTIONS:
                b.add(
                    f"mse-{dtype}-{wname}-{red}",
                    tf.losses.mean_squared_error(b.feed(labels), preds, wt, reduction=red),
                    np_weighted((preds.astype(np.float64) - labels) ** 2, wt, red, dtype),
                )
            b.add(
                f"absdiff-{dtype}-{wname}",
                tf.losses.absolute_difference(labels, b.feed(preds), weights=wt),
                np_weighted(
                    np.abs(preds.astype(np.float64) - labels), wt, R.SUM_BY_NONZERO_WEIGHTS, dtype
                ),
            )
        err = np.abs(preds.astype(np.float64) - labels)
        for delta in [1.0, 0.5]:
            quad = np.minimum(err, delta)
            b.add(
                f"huber-{dtype}-{delta}",
                tf.losses.huber_loss(labels, b.feed(preds), delta=delta, reduction=R.NONE),
                (0.5 * quad**2 + delta * (err - quad)).astype(dtype),
            )
        probs, targets = RNG.random(shape).astype(dtype), RNG.integers(0, 2, shape).astype(dtype)
        p64 = probs.astype(np.float64)
        b.add(
            f"log_loss-{dtype}",
            tf.losses.log_loss(targets, b.feed(probs), reduction=R.SUM),
            np.asarray(
                np.sum(-targets * np.log(p64 + 1e-7) - (1 - targets) * np.log(1 - p64 + 1e-7)),
                dtype,
            ),
        )
        b.add(
            f"hinge-{dtype}",
            tf.losses.hinge_loss(targets, b.feed(preds), reduction=R.NONE),
            np.maximum(0, 1 - (2 * targets.astype(np.float64) - 1) * preds).astype(dtype),
        )

        logits = _logits((4, 5)).astype(dtype)
        ids = RNG.integers(0, 5, 4)
        onehot = np.eye(5, dtype=dtype)[ids]
        example_w = np.array([1.0, 0.0, 2.0, 0.5], dtype)
        for smoothing in [0.0, 0.1]:
            smooth = onehot.astype(np.float64) * (1 - smoothing) + smoothing / 5
            b.add(
                f"losses.softmax-{dtype}-smooth{smoothing}",
                tf.losses.softmax_cross_entropy(
                    onehot, b.feed(logits), example_w, label_smoothing=smoothing
                ),
                np_weighted(
                    np_softmax_xent(smooth, logits.astype(np.float64)),
                    example_w,
                    R.SUM_BY_NONZERO_WEIGHTS,
                    dtype,
                ),
            )
        want = np_sparse_xent(ids, logits.astype(np.float64))
        b.add(
            f"losses.sparse-{dtype}",
            tf.losses.sparse_softmax_cross_entropy(ids.astype(np.int32), b.feed(logits)),
            np_weighted(want, 1.0, R.SUM_BY_NONZERO_WEIGHTS, dtype),
        )
        b.add(
            f"losses.sparse-squeezed-{dtype}",
            tf.losses.sparse_softmax_cross_entropy(
                ids[:, None], logits, weights=example_w[:, None], reduction=R.SUM
            ),
            np_weighted(want, example_w, R.SUM, dtype),
        )
        multi = RNG.integers(0, 2, (4, 5)).astype(dtype)
        for smoothing in [0.0, 0.2]:
            smooth = multi.astype(np.float64) * (1 - smoothing) + 0.5 * smoothing
            b.add(
                f"losses.sigmoid-{dtype}-smooth{smoothing}",
                tf.losses.sigmoid_cross_entropy(
                    multi, b.feed(logits), label_smoothing=smoothing, reduction=R.MEAN
                ),
                np_weighted(np_sigmoid_xent(smooth, logits.astype(np.float64)), 1.0, R.MEAN, dtype),
            )
        b.add(
            f"compute_weighted-{dtype}",
            tf.losses.compute_weighted_loss(b.feed(preds), example_w[:, None]),
            np_weighted(preds, example_w[:, None], R.SUM_BY_NONZERO_WEIGHTS),
        )

    # counts known only once the batch size is fed; all-zero weights give 0, not NaN
    labels, preds = _logits((5, 2)).astype("float32"), _logits((5, 2)).astype("float32")
    for wname, w in [("some", np.array([[1.0], [0], [3], [0], [1]])), ("none", np.zeros((5, 1)))]:
        w = w.astype("float32")
        for red in [R.MEAN, R.SUM_BY_NONZERO_WEIGHTS, R.SUM_OVER_BATCH_SIZE]:
            b.add(
                f"mse-fed-weights-{wname}-{red}",
                tf.losses.mean_squared_error(
                    b.feed(labels, [None, 2]),
                    b.feed(preds, [None, 2]),
                    weights=b.feed(w, [None, 1]),
                    reduction=red,
                ),
                np_weighted((preds.astype(np.float64) - labels) ** 2, w, red, "float32"),
            )
    ints = np.array([[1, 2], [3, 4]], np.int32)
    b.add(
        "mse-int-labels",
        tf.losses.mean_squared_error(ints, np.array([[1.5, 2], [2, 5]], np.float32)),
        np.float32((0.25 + 1 + 1) / 4),
    )
    b.add(
        "compute_weighted-int-losses",
        tf.losses.compute_weighted_loss(ints, 1.5, reduction=R.SUM),
        np.int32(15),
    )


def _build_weighted_and_averaged(b: CaseBatch) -> None:
    """weighted_cross_entropy_with_logits, log_poisson_loss, compute_average_loss,
    scale_regularization_loss."""
    for dtype in F:
        x = np.concatenate([_logits((4, 3)).ravel(), [-1000.0, -30.0, 0.0, 30.0, 1000.0]])
        x = x.astype(dtype)
        z = RNG.random(x.shape).astype(dtype)
        for q in [0.25, 1.0, 3.0]:
            # q z softplus(-x) + (1 - z) softplus(x): the positive term weighted by q
            want = q * z * np.logaddexp(0, -x.astype(np.float64))
            want += (1 - z) * np.logaddexp(0, x.astype(np.float64))
            b.add(
                f"weighted_xent-{dtype}-q{q}",
                tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=b.feed(x), pos_weight=q),
                want.astype(dtype),
            )
        targets = np.array([0.0, 0.5, 1.0, 2.0, 7.0, 30.0], dtype)
        log_input = RNG.standard_normal(6).astype(dtype)
        t64, l64 = targets.astype(np.float64), log_input.astype(np.float64)
        plain = np.exp(l64) - l64 * t64
        with np.errstate(all="ignore"):
            stirling = t64 * np.log(t64) - t64 + 0.5 * np.log(2 * np.pi * t64)
        full = plain + np.where(t64 <= 1, 0, stirling)
        b.add(
            f"log_poisson-{dtype}",
            tf.nn.log_poisson_loss(b.feed(targets), log_input),
            plain.astype(dtype),
        )
        b.add(
            f"log_poisson-full-{dtype}",
            tf.nn.log_poisson_loss(targets, b.feed(log_input), compute_full_loss=True),
            full.astype(dtype),
        )
        per_example = RNG.random((6, 3)).astype(dtype)
        weights = RNG.random((6, 1)).astype(dtype)
        b.add(
            f"average_loss-{dtype}",
            tf.nn.compute_average_loss(b.feed(per_example, [None, 3])),
            np.asarray(per_example.astype(np.float64).sum() / 6, dtype),
        )
        b.add(
            f"average_loss-weighted-{dtype}",
            tf.nn.compute_average_loss(per_example, sample_weight=weights, global_batch_size=10),
            np.asarray((per_example * weights).astype(np.float64).sum() / 10, dtype),
        )
        b.add(
            f"scale_regularization_loss-{dtype}",
            tf.nn.scale_regularization_loss(b.feed(per_example)),
            np.asarray(per_example.astype(np.float64).sum(), dtype),
        )


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        _build_nn(b)
        _build_losses(b)
        _build_weighted_and_averaged(b)
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_loss_values(case):
    BATCH.check(case)


def test_weighted_and_average_loss_errors():
    loss = tf.nn.weighted_cross_entropy_with_logits(targets=[1.0], logits=[0.0], pos_weight=2.0)
    assert loss.op.name == "logistic_loss"
    with pytest.raises(ValueError, match="Expected a tensor with at least rank 1"):
        tf.nn.compute_average_loss(1.0)
    with pytest.raises(TypeError, match="global_batch_size must be an integer"):
        tf.nn.compute_average_loss([1.0, 2.0], global_batch_size=2.0)
    with pytest.raises(ValueError, match="global_batch_size must be positive"):
        tf.nn.compute_average_loss([1.0, 2.0], global_batch_size=0)
    with pytest.raises(ValueError, match="logits and labels must have the same shape"):
        tf.nn.weighted_cross_entropy_with_logits(
            labels=np.zeros(3, np.float32), logits=np.zeros(4, np.float32), pos_weight=2.0
        )
    with pytest.raises(ValueError, match="Cannot specify both 'labels' and 'targets'"):
        tf.nn.weighted_cross_entropy_with_logits(
            labels=[1.0], logits=[1.0], pos_weight=2.0, targets=[1.0]
        )


def test_large_logits_give_finite_losses():
    compiled, _ = BATCH.results()
    for dtype in F:
        for case in ["softmax-large", "sparse-large", "sigmoid-large"]:
            assert np.all(np.isfinite(compiled[f"{case}-{dtype}"])), case
        np.testing.assert_allclose(
            compiled[f"sparse-large-{dtype}"], [0.0, np.log1p(np.exp(-1.0)), 2000 + np.log(2)]
        )
        np.testing.assert_allclose(compiled[f"sigmoid-large-{dtype}"][[0, -1]], [0, 750])


# -- gradients ------------------------------------------------------------------------------------
def _fd(f, x, h=1e-5):
    """Central finite differences of the scalar f at x (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


GRAD_TOL = {"rtol": 1e-6, "atol": 1e-8}


def _grad_cases(b: CaseBatch) -> None:
    """d sum(w * loss) / d inputs (w random, so every output element is weighed differently)."""

    def add(case, build, inputs, fn, out_shape):
        w = RNG.standard_normal(out_shape)
        inputs = [np.array(v, dtype=np.float64) for v in inputs]  # 0-d arrays, not scalars
        feeds = [b.feed(v) for v in inputs]
        loss = build(*feeds)
        grads = tf.gradients(tf.reduce_sum(loss * w), feeds)
        for k, (g, v) in enumerate(zip(grads, inputs)):
            others = list(inputs)

            def scalar(u, k=k, others=others):
                args = list(others)
                args[k] = u
                return float(np.sum(fn(*args) * w))

            b.add(f"{case}-d{k}", g, _fd(scalar, v), **GRAD_TOL)

    for shape, axis in [((6,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1)]:
        x, z = _logits(shape, 2.0), _dist(shape, axis)
        out = np.sum(x, axis).shape
        add(
            f"softmax-{shape}-axis{axis}",
            lambda z, x, axis=axis: tf.nn.softmax_cross_entropy_with_logits(
                labels=z, logits=x, axis=axis
            ),
            [z, x],
            lambda z, x, axis=axis: np_softmax_xent(z, x, axis),
            out,
        )
    for shape in [(5,), (3, 4), (2, 2, 3)]:
        ids = RNG.integers(0, shape[-1], shape[:-1]).astype(np.int64)
        add(
            f"sparse-{shape}",
            lambda x, ids=ids: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=x),
            [_logits(shape, 2.0)],
            lambda x, ids=ids: np_sparse_xent(ids, x),
            shape[:-1],
        )
    for shape in [(), (4,), (3, 4)]:
        x = _logits(shape, 2.0)
        if shape:
            x.flat[0] = 0.0  # the kink of max(x, 0) and |x|: the loss is smooth there
        add(
            f"sigmoid-{shape}",
            lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
            [RNG.random(shape), x],
            np_sigmoid_xent,
            shape,
        )
        add(f"l2-{shape}", tf.nn.l2_loss, [x], np_l2, ())

    shape = (4, 3)
    weights = RNG.random((4, 1))
    weights[1] = 0.0
    labels = _logits(shape)
    preds = labels + RNG.choice([-1.5, -0.7, -0.2, 0.3, 0.8, 1.6], shape)  # away from kinks
    for red in REDUCTIONS:
        add(
            f"losses.mse-{red}",
            lambda p, red=red: tf.losses.mean_squared_error(labels, p, weights, reduction=red),
            [preds],
            lambda p, red=red: np_weighted((p - labels) ** 2, weights, red),
            (shape if red == R.NONE else ()),
        )
    add(
        "losses.absdiff",
        lambda p: tf.losses.absolute_difference(labels, p, weights),
        [preds],
        lambda p: np_weighted(np.abs(p - labels), weights, R.SUM_BY_NONZERO_WEIGHTS),
        (),
    )
    add(
        "losses.huber",
        lambda p: tf.losses.huber_loss(labels, p, weights, delta=1.0),
        [preds],
        lambda p: np_weighted(
            np.where(np.abs(p - labels) <= 1, 0.5 * (p - labels) ** 2, np.abs(p - labels) - 0.5),
            weights,
            R.SUM_BY_NONZERO_WEIGHTS,
        ),
        (),
    )
    probs, targets = RNG.uniform(0.1, 0.9, shape), RNG.integers(0, 2, shape).astype(np.float64)
    add(
        "losses.log_loss",
        lambda p: tf.losses.log_loss(targets, p),
        [probs],
        lambda p: np.mean(-targets * np.log(p + 1e-7) - (1 - targets) * np.log(1 - p + 1e-7)),
        (),
    )
    logits = _logits((4, 5), 2.0)
    ids = RNG.integers(0, 5, 4)
    onehot = np.eye(5)[ids]
    smooth = onehot * 0.9 + 0.1 / 5
    add(
        "losses.softmax-smoothed",
        lambda x: tf.losses.softmax_cross_entropy(onehot, x, weights[:, 0], label_smoothing=0.1),
        [logits],
        lambda x: np_weighted(np_softmax_xent(smooth, x), weights[:, 0], R.SUM_BY_NONZERO_WEIGHTS),
        (),
    )
    add(
        "losses.sparse",
        lambda x: tf.losses.sparse_softmax_cross_entropy(ids, x, reduction=R.SUM_OVER_BATCH_SIZE),
        [logits],
        lambda x: np.mean(np_sparse_xent(ids, x)),
        (),
    )
    add(
        "losses.sigmoid",
        lambda z, x: tf.losses.sigmoid_cross_entropy(z, x, reduction=R.SUM),
        [RNG.random((4, 5)), logits],
        lambda z, x: np.sum(np_sigmoid_xent(z, x)),
        (),
    )


def _large_logit_grad_cases(b: CaseBatch) -> None:
    """float32 gradients at logits of +-1000: finite, and equal to the closed forms."""
    for dtype in F:
        x = LARGE.astype(dtype)
        z = _dist((3, 3)).astype(dtype)
        softmax = np.exp(x - _lse(x.astype(np.float64), -1)[:, None])
        ph = b.feed(x)
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=ph)
        b.add(f"large-softmax-{dtype}", tf.gradients(loss, ph)[0], (softmax - z).astype(dtype))
        ids = np.array([2, 0, 1], np.int32)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=ph)
        b.add(
            f"large-sparse-{dtype}",
            tf.gradients(loss, ph)[0],
            (softmax - np.eye(3)[ids]).astype(dtype),
        )
        v = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0], dtype)
        t = np.array([0.0, 1.0, 0.5, 0.25, 1.0], dtype)
        vp = b.feed(v)
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=t, logits=vp)
        sig = 0.5 * (1 + np.tanh(v.astype(np.float64) / 2))
        b.add(f"large-sigmoid-{dtype}", tf.gradients(loss, vp)[0], (sig - t).astype(dtype))


@functools.cache
def _grad_batch() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        _grad_cases(b)
        _large_logit_grad_cases(b)
    return b


def _grad_ids() -> list[str]:
    """The case ids, known without building the graph (tf.gradients may be missing)."""
    names = []
    for shape, axis in [((6,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1)]:
        names += [f"softmax-{shape}-axis{axis}-d0", f"softmax-{shape}-axis{axis}-d1"]
    names += [f"sparse-{s}-d0" for s in [(5,), (3, 4), (2, 2, 3)]]
    for s in [(), (4,), (3, 4)]:
        names += [f"sigmoid-{s}-d0", f"sigmoid-{s}-d1", f"l2-{s}-d0"]
    names += [f"losses.mse-{red}-d0" for red in REDUCTIONS]
    names += [f"losses.{n}-d0" for n in ["absdiff", "huber", "log_loss", "softmax-smoothed"]]
    names += ["losses.sparse-d0", "losses.sigmoid-d0", "losses.sigmoid-d1"]
    names += [f"large-{k}-{d}" for d in F for k in ["softmax", "sparse", "sigmoid"]]
    return names


@pytest.mark.parametrize("case", _grad_ids())
def test_loss_gradients(case):
    batch = _grad_batch()
    assert sorted(batch.ids()) == sorted(_grad_ids())
    batch.check(case)


def test_gradients_flow_into_labels_except_where_tf_stops_them():
    x = tf.placeholder(tf.float64, [2, 3])
    z = tf.placeholder(tf.float64, [2, 3])
    v2 = tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
    assert tf.gradients(v2, z)[0] is not None
    stopped = tf.losses.softmax_cross_entropy(z, x)
    assert tf.gradients(stopped, z) == [None]
    ids = tf.placeholder(tf.int32, [2])
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=x)
    assert tf.gradients(sparse, ids) == [None]


def test_sparse_second_derivative_fails_as_in_tf():
    x = tf.placeholder(tf.float64, [2, 3])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=x)
    (g,) = tf.gradients(loss, x)
    with pytest.raises(LookupError, match="no way to take the second derivative"):
        tf.gradients(g, x)


# -- errors and graph structure -------------------------------------------------------------------
def test_sparse_labels_out_of_range_fail_the_run():
    ids = tf.placeholder(tf.int64, [None], name="ids")
    x = np.zeros((3, 4), np.float32)
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=x, name="xent")
    with tf.Session() as sess:
        for bad, value in [([0, 4, 1], 4), ([3, -1, 7], -1)]:
            want = (
                rf"Received a label value of {value} which is outside the valid range of "
                rf"\[0, 4\)\.  Label values: {' '.join(map(str, bad))}"
            )
            with pytest.raises(tf.errors.InvalidArgumentError, match=want) as info:
                sess.run(loss, {ids: np.array(bad)})
            assert info.value.op.name == "xent/xent" and "[[node xent/xent]]" in str(info.value)
            with pytest.raises(tf.errors.InvalidArgumentError, match=want):
                Interpreter().run(loss, {ids: np.array(bad)})
        np.testing.assert_allclose(
            sess.run(loss, {ids: np.array([0, 3, 2])}), np.full(3, np.log(4), np.float32)
        )
    many = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.arange(12) % 5, logits=np.zeros((12, 4), np.float32)
    )
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match=r"Label values: 0 1 2 3 4 0 1 2 3 4 \.\.\.\n"
        ),
    ):
        sess.run(many)


def test_xent_functions_take_named_arguments_only():
    x = np.zeros((2, 3), np.float32)
    for fn in [
        tf.nn.softmax_cross_entropy_with_logits,
        tf.nn.sparse_softmax_cross_entropy_with_logits,
        tf.nn.sigmoid_cross_entropy_with_logits,
    ]:
        with pytest.raises(
            ValueError,
            match=rf"Only call `{fn.__name__}` with named arguments \(labels=\.\.\., logits=",
        ):
            fn(x, x)
        with pytest.raises(ValueError, match="Both labels and logits must be provided"):
            fn(logits=x)
    assert tf.nn.softmax_cross_entropy_with_logits_v2(x, x).shape.as_list() == [2]


def test_shape_and_dtype_errors_read_as_tf():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(
        ValueError,
        match=r"Dimensions must be equal, but are 3 and 4 for 'softmax_cross_entropy_with_logits' "
        r"\(op: 'SoftmaxCrossEntropyWithLogits'\) with input shapes: \[2,3\], \[2,4\]\.",
    ):
        tf.nn.softmax_cross_entropy_with_logits(labels=np.zeros((2, 4), np.float32), logits=x)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        tf.nn.softmax_cross_entropy_with_logits(labels=x, logits=x, dim=0, axis=1)
    with pytest.raises(TypeError, match="'features' has DataType int32"):
        tf.nn.softmax_cross_entropy_with_logits(labels=x, logits=np.zeros((2, 3), np.int32))
    with pytest.raises(
        ValueError,
        match=r"Rank mismatch: Rank of labels \(received 2\) should equal rank of logits minus "
        r"1 \(received 2\)\.",
    ):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=np.zeros((2, 3), np.int32), logits=x)
    with pytest.raises(
        ValueError,
        match=r"Shape mismatch: The shape of labels \(received \(3,\)\) should equal the shape "
        r"of logits except for the last dimension \(received \(2, 3\)\)\.",
    ):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2], logits=x)
    with pytest.raises(ValueError, match=r"Logits cannot be scalars - received shape \(\)\."):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=0, logits=np.float32(1))
    with pytest.raises(TypeError, match="'labels' has DataType float32 not in list of allowed"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0.0, 1.0], logits=x)
    with pytest.raises(
        ValueError, match=r"logits and labels must have the same shape \(\(2, 3\) vs \(3,\)\)"
    ):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0, 0.0], logits=x)
    with pytest.raises(TypeError, match="'t' has DataType int32"):
        tf.nn.l2_loss([1, 2])


def test_tf_losses_argument_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="Invalid Reduction Key mean."):
        tf.losses.mean_squared_error(x, x, reduction="mean")
    with pytest.raises(ValueError, match="labels must not be None."):
        tf.losses.mean_squared_error(None, x)
    with pytest.raises(ValueError, match="predictions must not be None."):
        tf.losses.absolute_difference(x, None)
    with pytest.raises(ValueError, match="onehot_labels must not be None."):
        tf.losses.softmax_cross_entropy(None, x)
    with pytest.raises(ValueError, match=r"Shapes \(2, 3\) and \(2, 4\) are incompatible"):
        tf.losses.mean_squared_error(np.zeros((2, 4), np.float32), x)
    with pytest.raises(
        ValueError,
        match=r"weights can not be broadcast to values\. values\.rank=2\. weights\.rank=1\. "
        r"values\.shape=\(2, 3\)\. weights\.shape=\(3,\)\.",
    ):
        tf.losses.mean_squared_error(x, x, weights=[1.0, 2.0, 3.0])
    with pytest.raises(
        ValueError,
        match=r"weights can not be broadcast to values\. Mismatch at dim 0\. "
        r"values\.shape=\(2, 3\) weights\.shape=\(3, 1\)\.",
    ):
        tf.losses.mean_squared_error(x, x, weights=np.ones((3, 1)))


def test_losses_collections_and_total_loss():
    x = tf.placeholder(tf.float32, [2, 2])
    a = tf.losses.mean_squared_error(x, tf.zeros([2, 2]))
    with tf.name_scope("head"):
        b = tf.losses.absolute_difference(x, tf.zeros([2, 2]), weights=2.0)
    tf.losses.mean_squared_error(x, x, loss_collection=None)
    assert tf.losses.get_losses() == [a, b]
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [a, b]
    assert tf.losses.get_losses(scope="head") == [b]
    assert a.name == "mean_squared_error/value:0" and b.name.startswith("head/absolute_difference")
    reg = tf.nn.l2_loss(x)
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, reg)
    assert tf.losses.get_regularization_losses() == [reg]
    total = tf.losses.get_total_loss()
    without = tf.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    extra = tf.constant(5.0)
    tf.losses.add_loss(extra)
    assert tf.losses.get_losses()[-1] is extra
    value = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    with tf.Session() as sess:
        got = sess.run([total, without, tf.losses.get_regularization_loss()], {x: value})
    mse, mad, l2 = np.mean(value**2), 2 * np.mean(np.abs(value)), 0.5 * np.sum(value**2)
    np.testing.assert_allclose(got, [mse + mad + l2, mse + mad, l2], rtol=1e-6)
    assert total.name == "total_loss:0" and total.op.type == "AddN"


def test_regularization_loss_is_zero_without_regularizers():
    with tf.Session() as sess:
        assert sess.run(tf.losses.get_regularization_loss()) == 0.0
    with pytest.raises(ValueError):
        tf.losses.get_total_loss()


def test_graph_names_follow_tf1():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.nn.softmax_cross_entropy_with_logits(labels=x, logits=x).op.name == (
        "softmax_cross_entropy_with_logits"
    )
    assert tf.nn.sigmoid_cross_entropy_with_logits(labels=x, logits=x).op.name == "logistic_loss"
    assert tf.nn.l2_loss(x).op.name == "L2Loss"
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0], logits=x)
    assert sparse.op.type == "SparseSoftmaxCrossEntropyWithLogits"
    assert sparse.shape.as_list() == [1]
    named = tf.nn.softmax_cross_entropy_with_logits(labels=x, logits=x, name="xent")
    assert named.op.name == "xent" and named.shape.as_list() == [None]
    assert tf.nn.softmax_cross_entropy_with_logits(labels=x, logits=x, axis=0).shape == [3]


def test_float64_losses_keep_float64():
    x = np.zeros((2, 3))
    for loss in [
        tf.losses.mean_squared_error(x, x),
        tf.losses.softmax_cross_entropy(x, x),
        tf.losses.compute_weighted_loss(x, np.float32(2.0)),
    ]:
        assert loss.dtype == tf.float64
