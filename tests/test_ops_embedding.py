"""tf.nn.embedding_lookup (one tensor, shards by "mod" and "div", max_norm) and
tf.sequence_mask: compiled vs reference vs NumPy; dense gradients per shard; errors."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(5)


def np_shards(table: np.ndarray, n: int, strategy: str) -> list[np.ndarray]:
    """TF1's sharding of the rows of `table` over n shards."""
    if strategy == "mod":
        return [table[p::n] for p in range(n)]
    per, extras = divmod(len(table), n)
    bounds = np.cumsum([0] + [per + (p < extras) for p in range(n)])
    return [table[bounds[p] : bounds[p + 1]] for p in range(n)]


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ["float32", "float64"]:
            table = RNG.standard_normal((11, 3)).astype(dtype)
            ids = RNG.integers(0, 11, (4, 5)).astype(np.int32)
            b.add(f"single-{dtype}", tf.nn.embedding_lookup(b.feed(table), ids), table[ids])
            for strategy in ["mod", "div"]:
                for n in [2, 3, 4]:
                    shards = [b.feed(s) for s in np_shards(table, n, strategy)]
                    fed_ids = b.feed(ids.astype(np.int64), [None, 5])
                    got = tf.nn.embedding_lookup(shards, fed_ids, partition_strategy=strategy)
                    b.add(f"{strategy}-{n}-{dtype}", got, table[ids])
            cube = RNG.standard_normal((6, 2, 2)).astype(dtype)
            flat_ids = np.array([5, 0, 3, 3], np.int32)
            shards = np_shards(cube, 4, "div")  # 6 rows over 4 shards: 2, 2, 1, 1
            got = tf.nn.embedding_lookup(shards, flat_ids, partition_strategy="div")
            b.add(f"div-uneven-rank3-{dtype}", got, cube[flat_ids])
            rows = table[ids].astype(np.float64)
            norms = np.linalg.norm(rows, axis=-1, keepdims=True)
            clipped = rows * np.minimum(1.0, 0.8 / norms)
            got = tf.nn.embedding_lookup(table, b.feed(ids), max_norm=0.8)
            b.add(f"max_norm-{dtype}", got, clipped.astype(dtype))
        three = np.arange(3 * 2, dtype=np.float32).reshape(3, 2)
        b.add(  # fewer rows than shards: "div" gives one row to each of the first shards
            "div-one-row-each",
            tf.nn.embedding_lookup(np_shards(three, 3, "div"), [2, 0, 1], "div"),
            three[[2, 0, 1]],
        )

        lengths = np.array([0, 3, 1, 5], np.int32)
        positions = np.arange(6)
        b.add(
            "sequence_mask-maxlen",
            tf.sequence_mask(b.feed(lengths), 6),
            positions < lengths[:, None],
        )
        b.add(
            "sequence_mask-float",
            tf.sequence_mask(b.feed(lengths), tf.constant(4, tf.int64), dtype=tf.float32),
            (np.arange(4) < lengths[:, None]).astype(np.float32),
        )
        nested = np.array([[1, 2], [0, 3]], np.int64)
        b.add(
            "sequence_mask-constant-lengths",
            tf.sequence_mask(nested),
            np.arange(3) < nested[..., None],
        )
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_embedding_and_masks(case):
    BATCH.check(case)


def test_sharded_lookup_gradient_reaches_each_shard():
    table = RNG.standard_normal((7, 2))
    shards = [tf.placeholder(tf.float64, s.shape) for s in np_shards(table, 3, "mod")]
    ids = np.array([6, 3, 3, 0], np.int32)
    weights = RNG.standard_normal((4, 2))
    loss = tf.reduce_sum(tf.nn.embedding_lookup(shards, ids) * weights)
    grads = tf.gradients(loss, shards)
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)  # the rows read, as TF gives
    want = np.zeros_like(table)
    np.add.at(want, ids, weights)  # the dense gradient of the full table
    with tf.Session() as sess:
        feed = dict(zip(shards, np_shards(table, 3, "mod")))
        got, slices = sess.run([[tf.convert_to_tensor(g) for g in grads], grads], feed)
    for g, w in zip(got, np_shards(want, 3, "mod")):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # each shard's rows name its own ids (id // 3 for "mod") and no row (-1) for the others'
    for p, s in enumerate(slices):
        np.testing.assert_array_equal(s.indices, np.where(ids % 3 == p, ids // 3, -1))
        np.testing.assert_array_equal(s.values[ids % 3 != p], 0)


def test_partitioned_variable_is_looked_up_by_its_shards():
    var = tf.get_variable(
        "table",
        shape=[7, 2],
        initializer=tf.random_normal_initializer(seed=1),
        partitioner=tf.fixed_size_partitioner(3),
    )
    got = tf.nn.embedding_lookup(var, [6, 1, 3, 2], partition_strategy="div")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = sess.run(tf.convert_to_tensor(var))
        assert [v.shape.as_list() for v in var] == [[3, 2], [2, 2], [2, 2]]
        np.testing.assert_array_equal(sess.run(got), table[[6, 1, 3, 2]])


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("bad", [7, -1])
def test_out_of_range_ids_fail_the_run(strategy, bad):
    shards = np_shards(np.zeros((7, 2), np.float32), 2, strategy)
    ids = tf.placeholder(tf.int32, [3])
    got = tf.nn.embedding_lookup(shards, ids, partition_strategy=strategy)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
            sess.run(got, {ids: [0, bad, 1]})


def test_argument_errors():
    with pytest.raises(ValueError, match="Unrecognized partition strategy: modulo"):
        tf.nn.embedding_lookup(np.zeros((3, 2)), [0], partition_strategy="modulo")
    with pytest.raises(ValueError, match="Need at least one param"):
        tf.nn.embedding_lookup([], [0])
    with pytest.raises(TypeError, match="ids must be int32 or int64"):
        tf.nn.embedding_lookup(np.zeros((3, 2)), [0.0])
    lengths = tf.placeholder(tf.int32, [None])
    with pytest.raises(ValueError, match="pass maxlen"):
        tf.sequence_mask(lengths)
    with pytest.raises(ValueError, match="maxlen must be scalar"):
        tf.sequence_mask(lengths, [3, 4])
    with pytest.raises(ValueError, match="maxlen must be known when the program is compiled"):
        tf.sequence_mask(lengths, tf.placeholder(tf.int32, []))
