"""IndexedSlices gradients and the sparse updates: a gather's gradient is the rows it read;
every SparseApply op updates exactly the rows its dense Apply op would change for the summed
gradient of those rows (and no other row); the optimizers apply an embedding's gradient with
TF1's sparse semantics without making it dense; sharded lookups update only their own rows."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf
import tfc.ops.training_ops as training_ops
import tfc.ops.training_ops_sparse as sparse_ops

RNG = np.random.default_rng(7)
ROWS, WIDTH = 7, 3
INDICES = np.array([4, 1, 4, -1, 6, 1, 4], np.int32)  # repeats, and one "no row"


def _touched(indices=INDICES):
    return sorted({int(i) for i in indices if i >= 0})


# name: (sparse frontend, dense frontend, slots (name, initial), scalars before grad, after)
OPS = {
    "Momentum": (sparse_ops.sparse_apply_momentum, training_ops.apply_momentum,
                 [("accum", 0.3)], [0.1], [0.9]),
    "Adagrad": (sparse_ops.sparse_apply_adagrad, training_ops.apply_adagrad,
                [("accum", 0.5)], [0.1], []),
    "RMSProp": (sparse_ops.sparse_apply_rms_prop, training_ops.apply_rms_prop,
                [("ms", 1.0), ("mom", 0.2)], [0.1, 0.9, 0.5, 1e-6], []),
    "CenteredRMSProp": (sparse_ops.sparse_apply_centered_rms_prop,
                        training_ops.apply_centered_rms_prop,
                        [("mg", 0.1), ("ms", 1.0), ("mom", 0.2)], [0.1, 0.9, 0.5, 1e-6], []),
    "Adadelta": (sparse_ops.sparse_apply_adadelta, training_ops.apply_adadelta,
                 [("accum", 0.4), ("accum_update", 0.3)], [1.0, 0.95, 1e-6], []),
    "ProximalGradientDescent": (sparse_ops.sparse_apply_proximal_gradient_descent,
                                training_ops.apply_proximal_gradient_descent, [],
                                [0.1, 0.01, 0.02], []),
    "ProximalAdagrad": (sparse_ops.sparse_apply_proximal_adagrad,
                        training_ops.apply_proximal_adagrad, [("accum", 0.5)],
                        [0.1, 0.01, 0.02], []),
    "Ftrl": (sparse_ops.sparse_apply_ftrl, training_ops.apply_ftrl,
             [("accum", 0.5), ("linear", 0.1)], [], [0.1, 0.01, 0.02, -0.5]),
    "FtrlV2": (sparse_ops.sparse_apply_ftrl_v2, training_ops.apply_ftrl_v2,
               [("accum", 0.5), ("linear", 0.1)], [], [0.1, 0.01, 0.02, 0.05, -0.5]),
    "AdagradDA": (sparse_ops.sparse_apply_adagrad_da, training_ops.apply_adagrad_da,
                  [("g", 0.1), ("gg", 0.5)], [], [0.1, 0.01, 0.02, np.int64(3)]),
}  # fmt: skip


def test_every_sparse_apply_op_updates_the_rows_its_dense_op_would():
    """For each op: the variable and slots after the sparse update equal those after the dense
    Apply op with the summed rows' gradient, on the rows named, and are unchanged elsewhere."""
    start = RNG.standard_normal((ROWS, WIDTH)).astype(np.float32)
    rows = RNG.standard_normal((len(INDICES), WIDTH)).astype(np.float32)
    dense_grad = np.zeros_like(start)
    for i, k in enumerate(INDICES):
        if k >= 0:
            dense_grad[k] += rows[i]
    built = {}
    for name, (sparse, dense, slots, before, after) in OPS.items():
        pair = []
        for kind in ("sparse", "dense"):
            var = tf.Variable(start, name=f"{name}_{kind}")
            made = [tf.Variable(np.full_like(start, v), name=f"{name}_{kind}_{s}")
                    for s, v in slots]  # fmt: skip
            if kind == "sparse":
                op = sparse(var, *made, *before, rows, INDICES, *after)
            else:
                op = dense(var, *made, *before, dense_grad, *after)
            pair.append((op, [var, *made]))
        built[name] = pair
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([op for pair in built.values() for op, _ in pair])
        values = sess.run({n: [vs for _, vs in pair] for n, pair in built.items()})
    touched = _touched()
    untouched = [r for r in range(ROWS) if r not in touched]
    for name, (got, want) in values.items():
        slot_starts = [np.full_like(start, v) for _, v in OPS[name][2]]
        for k, (g, w, s0) in enumerate(zip(got, want, [start, *slot_starts])):
            np.testing.assert_allclose(g[touched], w[touched], rtol=1e-6, atol=1e-7,
                                       err_msg=f"{name} buffer {k}")  # fmt: skip
            np.testing.assert_array_equal(g[untouched], s0[untouched], err_msg=name)


def test_momentum_and_adagrad_rows_by_tf1_formulas():
    """Momentum's and Adagrad's sparse rules in NumPy: duplicates summed, rows not named
    untouched (the dense rule would decay every row's momentum)."""
    var0 = RNG.standard_normal((ROWS, WIDTH))
    rows = RNG.standard_normal((len(INDICES), WIDTH))
    var_m, acc_m = tf.Variable(var0), tf.Variable(np.full_like(var0, 0.3))
    var_a, acc_a = tf.Variable(var0), tf.Variable(np.full_like(var0, 0.5))
    ops = [
        sparse_ops.sparse_apply_momentum(var_m, acc_m, 0.1, rows, INDICES, 0.9, use_nesterov=True),
        sparse_ops.sparse_apply_adagrad(var_a, acc_a, 0.1, rows, INDICES),
    ]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(ops)
        got = sess.run([var_m, acc_m, var_a, acc_a])
    want = [var0.copy(), np.full_like(var0, 0.3), var0.copy(), np.full_like(var0, 0.5)]
    for k in _touched():
        g = rows[INDICES == k].sum(0)
        want[1][k] = 0.3 * 0.9 + g
        want[0][k] -= g * 0.1 + want[1][k] * 0.9 * 0.1
        want[3][k] = 0.5 + g * g
        want[2][k] -= 0.1 * g / np.sqrt(want[3][k])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda: tf.train.GradientDescentOptimizer(0.5),
        lambda: tf.train.MomentumOptimizer(0.5, 0.9),
        lambda: tf.train.AdagradOptimizer(0.5),
        lambda: tf.train.AdamOptimizer(0.1),
        lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.5),
        lambda: tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.01),
    ],
    ids=["sgd", "momentum", "adagrad", "adam", "rmsprop", "ftrl"],
)
def test_optimizers_apply_an_embedding_gradient_to_its_rows(make):
    """Three steps on a table read at repeated ids: the rows no id names stay as they were
    (except Adam, whose TF1 sparse rule moves every row by its decaying moments), the rows
    read equal the dense optimizer's on the densified gradient where that is TF1's rule too
    (SGD, Adagrad, Adam: their sparse and dense rules agree), and the gradient is never made
    dense (Adam sums repeated rows, TF1's deduplication, over the rows read only)."""
    table0 = RNG.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[3, 7, 3], [0, 7, 7]], np.int32)
    target = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    results = []
    for dense in (False, True):
        graph = tf.Graph()
        with graph.as_default():
            table = tf.Variable(table0, name="table")
            read = tf.convert_to_tensor(table)
            looked = tf.nn.embedding_lookup(read, ids)
            loss = tf.reduce_sum(tf.square(looked - target))
            opt = make()
            (grad, var), = opt.compute_gradients(loss, [table])  # fmt: skip
            assert isinstance(grad, tf.IndexedSlices)
            if dense:
                grad = tf.convert_to_tensor(grad)
            train = opt.apply_gradients([(grad, var)])
            with tf.Session(graph=graph) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                results.append(sess.run(table))
                if not dense:  # no op makes a table-sized gradient
                    sums = [op for op in graph.get_operations() if op.type == "UnsortedSegmentSum"]
                    assert all(op.outputs[0].shape[0].value == ids.size for op in sums)
    sparse_result, dense_result = results
    name = type(make()).__name__
    untouched = [r for r in range(10) if r not in ids]
    if name != "AdamOptimizer":
        np.testing.assert_array_equal(sparse_result[untouched], table0[untouched])
    if name in ("GradientDescentOptimizer", "AdagradOptimizer", "AdamOptimizer"):
        np.testing.assert_allclose(sparse_result, dense_result, rtol=2e-6, atol=1e-6)
    assert not np.allclose(sparse_result[[0, 3, 7]], table0[[0, 3, 7]])


def test_sharded_table_with_momentum_updates_only_the_rows_looked_up():
    table0 = RNG.standard_normal((9, 2)).astype(np.float32)
    table = tf.get_variable(
        "emb", [9, 2], initializer=table0,
        partitioner=tf.fixed_size_partitioner(3),
    )  # fmt: skip
    ids = tf.constant([5, 1, 5, 7])
    loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids, partition_strategy="div") ** 2)
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(train)
        shards = sess.run(list(table))
    got = np.concatenate(shards)  # "div": id i is row i of the shards in order
    untouched = [r for r in range(9) if r not in (1, 5, 7)]
    np.testing.assert_array_equal(got[untouched], table0[untouched])  # row 0 of each shard too
    # rows 1, 7 once per step, row 5 twice: two momentum steps of d(x^2) = 2x
    for r, n in ((1, 1), (5, 2), (7, 1)):
        x, acc = table0[r].astype(np.float64), np.zeros(2)
        for _ in range(2):
            acc = acc * 0.9 + 2 * n * x
            x = x - 0.1 * acc
        np.testing.assert_allclose(got[r], x, rtol=1e-5, atol=1e-6)


def test_indexed_slices_api_and_bad_indices():
    values = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    slices = tf.IndexedSlices(values, tf.constant([2, 0, 2]), tf.constant([4, 2]))
    assert slices.dtype == tf.float32 and slices.shape.as_list() == [4, 2]
    assert tf.convert_to_tensor_or_indexed_slices(slices) is slices
    var = tf.Variable(np.zeros((4, 2), np.float32))
    bad = sparse_ops.sparse_apply_adagrad(var, tf.Variable(np.ones((4, 2), np.float32)), 0.1,
                                          values, tf.constant([0, 4, 1]))  # fmt: skip
    with tf.Session() as sess:
        dense, fetched = sess.run([tf.convert_to_tensor(slices), slices])
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 4 is not in"):
            sess.run(bad)
    np.testing.assert_array_equal(dense, [[3, 4], [0, 0], [6, 8], [0, 0]])
    assert isinstance(fetched, tf.IndexedSlicesValue)
    np.testing.assert_array_equal(fetched.indices, [2, 0, 2])
    np.testing.assert_array_equal(fetched.dense_shape, [4, 2])
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        tf.IndexedSlices(values, tf.constant([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="grad must be the same size as indices"):
        sparse_ops.sparse_apply_adagrad(var, var, 0.1, values, tf.constant([0, 1]))


def test_clipping_counts_rows_and_keeps_them_rows():
    """TF's: global_norm and clip_by_norm of an IndexedSlices use its rows' values (a row read
    twice counts twice), and the clipped gradient is rows again."""
    table = tf.Variable(RNG.standard_normal((ROWS, WIDTH)))
    ids = np.array([1, 3, 3, 5])
    loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids) ** 3)
    dense = tf.Variable(RNG.standard_normal(3))
    grads = tf.gradients(loss + tf.reduce_sum(dense**2), [table, dense])
    clipped, norm = tf.clip_by_global_norm(grads, 0.5)
    by_norm = tf.clip_by_norm(grads[0], 0.25)
    assert isinstance(clipped[0], tf.IndexedSlices) and isinstance(by_norm, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        t, d = sess.run([table, dense])
        got_norm, rows, indices, rows_by_norm = sess.run(
            [norm, clipped[0].values, clipped[0].indices, by_norm.values]
        )
    g_rows, g_dense = 3 * t[ids] ** 2, 2 * d
    want = np.sqrt((g_rows**2).sum() + (g_dense**2).sum())
    np.testing.assert_allclose(got_norm, want, rtol=1e-12)
    np.testing.assert_array_equal(indices, ids)
    np.testing.assert_allclose(rows, g_rows * 0.5 / max(want, 0.5), rtol=1e-12)
    l2 = np.sqrt((g_rows**2).sum())
    np.testing.assert_allclose(rows_by_norm, g_rows * 0.25 / max(l2, 0.25), rtol=1e-12)
