"""Embedding gradients applied by the optimizers against real TensorFlow (needs tensorflow;
skipped without it): the same table, ids with repeats, and three steps give the same table
and slots for every optimizer with a sparse rule, a sharded table included."""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc as tf  # noqa: E402

RNG = np.random.default_rng(11)
TABLE = RNG.standard_normal((12, 3)).astype(np.float32)
IDS = np.array([[3, 7, 3, 11], [0, 7, 7, 5]], np.int32)
TARGET = RNG.standard_normal((2, 4, 3)).astype(np.float32)

OPTIMIZERS = {
    "sgd": lambda t: t.train.GradientDescentOptimizer(0.3),
    "momentum": lambda t: t.train.MomentumOptimizer(0.2, 0.9),
    "nesterov": lambda t: t.train.MomentumOptimizer(0.2, 0.9, use_nesterov=True),
    "adagrad": lambda t: t.train.AdagradOptimizer(0.3),
    "adam": lambda t: t.train.AdamOptimizer(0.1),
    "rmsprop": lambda t: t.train.RMSPropOptimizer(0.05, momentum=0.5),
    "centered_rmsprop": lambda t: t.train.RMSPropOptimizer(0.05, centered=True),
    "adadelta": lambda t: t.train.AdadeltaOptimizer(1.0),
    "ftrl": lambda t: t.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01),
    "proximal_adagrad": lambda t: t.train.ProximalAdagradOptimizer(0.3, 0.1, 0.01, 0.01),
}


def _train(lib, make, shards):
    table = lib.get_variable(
        "table", [12, 3], initializer=lib.constant_initializer(TABLE) if not shards else None,
        partitioner=lib.fixed_size_partitioner(3) if shards else None,
    )  # fmt: skip
    looked = lib.nn.embedding_lookup(table, IDS, partition_strategy="div")
    loss = lib.reduce_sum(lib.square(looked - TARGET))
    opt = make(lib)
    train = opt.minimize(loss)
    parts = list(table) if shards else [table]
    slots = [opt.get_slot(p, n) for p in parts for n in opt.get_slot_names()]
    return train, parts, slots


def _run(lib, session, make, shards):
    train, parts, slots = _train(lib, make, shards)
    with session() as sess:
        sess.run(lib.global_variables_initializer())
        if shards:  # the same starting rows in both
            for p, rows in zip(parts, np.split(TABLE, [4, 8])):
                p.load(rows, sess)
        for _ in range(3):
            sess.run(train)
        return sess.run(parts), sess.run(slots)


@pytest.mark.parametrize("shards", [False, True], ids=["table", "sharded"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_sparse_updates_equal_tensorflows(name, shards):
    graph = real_tf.Graph()
    with graph.as_default():
        want = _run(v1, lambda: v1.Session(graph=graph), OPTIMIZERS[name], shards)
    got = _run(tf, tf.Session, OPTIMIZERS[name], shards)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
