"""TF1's remaining initializers, partitioners and variable helpers: orthogonal and unit-scaling
initializers, tf.initializers, min_max/variable_axis_size partitioners,
create_partitioned_variables, report_uninitialized_variables / assert_variables_initialized,
and the synchronization / aggregation arguments."""

import numpy as np
import pytest

import tfc as tf
from tfc.ir.tensor_shape import TensorShape


@pytest.fixture(scope="module")
def initial_values():
    """One compiled program that makes every initializer's value."""
    tf.reset_default_graph()
    tf.set_random_seed(7)
    made = {
        "tall": tf.orthogonal_initializer(gain=2.0)([6, 4]),
        "wide": tf.initializers.orthogonal(seed=3)([3, 5]),
        "conv": tf.orthogonal_initializer()([2, 3, 8]),
        "unit": tf.uniform_unit_scaling_initializer(factor=1.5)([50, 40]),
        "eye": tf.initializers.identity(gain=3.0)([3, 4]),
        "he": tf.initializers.he_uniform()([200, 100]),
        "lecun": tf.initializers.lecun_normal()([400, 100]),
    }
    with tf.Session() as sess:
        return sess.run(made)


def test_orthogonal_initializer_gives_orthonormal_rows_or_columns(initial_values):
    tall, wide = initial_values["tall"], initial_values["wide"]
    np.testing.assert_allclose(tall.T @ tall, 4.0 * np.eye(4), atol=1e-5)  # gain 2
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)
    flat = initial_values["conv"].reshape(6, 8)  # all dims but the last are the rows
    np.testing.assert_allclose(flat @ flat.T, np.eye(6), atol=1e-5)
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.orthogonal_initializer()([5])
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.orthogonal_initializer(dtype=tf.int32)


def test_scaling_initializers_keep_their_bounds_and_variances(initial_values):
    limit = 1.5 * np.sqrt(3 / 50)
    unit = initial_values["unit"]
    assert np.abs(unit).max() <= limit and np.abs(unit).max() > 0.9 * limit
    np.testing.assert_allclose(initial_values["eye"], 3.0 * np.eye(3, 4))
    he = initial_values["he"]  # uniform of variance 2 / fan_in: limit sqrt(6 / 200)
    assert np.abs(he).max() <= np.sqrt(6 / 200) + 1e-7
    assert np.var(he) == pytest.approx(2 / 200, rel=0.1)
    assert np.var(initial_values["lecun"]) == pytest.approx(1 / 400, rel=0.1)


def test_partitioners_split_as_tf_does():
    # expected values: what tf.compat.v1 2.21 returns for the same calls
    by_size = tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=1024)
    assert by_size(TensorShape([1000, 3]), tf.float32) == [4, 1]
    assert by_size(TensorShape([2, 500]), tf.float32) == [2, 1]
    assert by_size(TensorShape([10, 10]), tf.float32) == [1, 1]
    by_bytes = tf.variable_axis_size_partitioner(max_shard_bytes=400)
    assert by_bytes(TensorShape([100, 4]), tf.float32) == [4, 1]
    assert by_bytes(TensorShape([3, 1000]), tf.float32) == [3, 1]
    assert by_bytes(TensorShape([100, 4]), tf.string) == [17, 1]
    capped = tf.variable_axis_size_partitioner(400, max_shards=2)
    assert capped(TensorShape([100, 4]), tf.float32) == [2, 1]
    with pytest.raises(ValueError, match="must be positive"):
        tf.variable_axis_size_partitioner(0)


def test_partitioned_variables_and_the_uninitialized_report():
    tf.reset_default_graph()
    value = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    parts = tf.create_partitioned_variables([10, 3], [3, 1], value, name="emb")
    assert [p.op.name for p in parts] == ["emb/part_0", "emb/part_1", "emb/part_2"]
    assert [p.shape.as_list() for p in parts] == [[4, 3], [3, 3], [3, 3]]
    other = tf.Variable(tf.zeros([2, 2]), name="other")
    report = tf.report_uninitialized_variables()
    checked = tf.assert_variables_initialized([other, parts[0]])
    with tf.Session() as sess:
        sess.run(parts[0].initializer)
        names = sess.run(report)
        assert [n.decode() for n in names] == ["emb/part_1", "emb/part_2", "other"]
        with pytest.raises(tf.errors.InvalidArgumentError, match="uninitialized value.*other"):
            sess.run(checked)
        sess.run(tf.global_variables_initializer())
        names, ranks, values = sess.run([report, checked, parts])
        assert names.shape == (0,)
        np.testing.assert_array_equal(ranks, [2, 2])
        np.testing.assert_array_equal(np.concatenate(values), value)
    with pytest.raises(ValueError, match="along one dimension"):
        tf.create_partitioned_variables([4, 4], [2, 2], None)


def test_synchronization_and_aggregation_arguments():
    tf.reset_default_graph()
    on_read = tf.VariableSynchronization.ON_READ
    v = tf.Variable(1.0, synchronization=on_read, aggregation=tf.VariableAggregation.SUM)
    assert v not in tf.trainable_variables()
    w = tf.get_variable("w", [2], synchronization=on_read)
    assert w not in tf.trainable_variables() and tf.Variable(2.0) in tf.trainable_variables()
    with pytest.raises(ValueError, match="ON_READ only for non-trainable"):
        tf.Variable(1.0, trainable=True, synchronization=on_read)
    with pytest.raises(ValueError, match="Invalid variable aggregation mode"):
        tf.Variable(1.0, aggregation="sum")
    with tf.variable_op_scope([v], None, default_name="block") as scope:
        assert scope.name == "block"
    assert tf.no_regularizer(v) is None
