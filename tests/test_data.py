"""tf.data: datasets against NumPy constructions, shuffle's buffer algorithm, iterators
feeding compiled steps, per-session iterator state, and the errors."""

import collections

import numpy as np
import pytest

import tfc as tf
from tfc.ir.random_seed import DEFAULT_GRAPH_SEED
from tfc.reference.interp import Interpreter

RUNNERS = {"session": tf.Session, "interpreter": Interpreter}


def take_all(runner, fetches, limit=10_000):
    """Run `fetches` until the iterator behind them ends; returns the list of results."""
    out = []
    for _ in range(limit):
        try:
            out.append(runner.run(fetches))
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("the dataset did not end")


def elements(dataset, runner_cls=tf.Session):
    nxt = dataset.make_one_shot_iterator().get_next()
    runner = runner_cls()
    try:
        return take_all(runner, nxt)
    finally:
        getattr(runner, "close", lambda: None)()


def stacked(values):
    return np.stack([np.asarray(v) for v in values])


def reference_shuffle(stream, size, seed, seed2, epoch=0):
    """TF's shuffle buffer, element by element, with the words tfc's shuffle draws."""
    words = np.random.PCG64(np.random.SeedSequence([seed, seed2, epoch]))
    buffer, out = list(stream[:size]), []
    for item in stream[size:]:
        slot = int(words.random_raw()) % size
        out.append(buffer[slot])
        buffer[slot] = item
    keys = words.random_raw(len(buffer))
    return out + [buffer[i] for i in np.argsort(keys, kind="stable")]


# -- sources ------------------------------------------------------------------------------------
def test_from_tensor_slices_nested_structures_and_dtypes():
    a = np.arange(12, dtype=np.float64).reshape(6, 2)
    b = [1, 2, 3, 4, 5, 6]
    y = np.arange(6, dtype=np.int64) * 10
    Pair = collections.namedtuple("Pair", "features label")
    ds = tf.data.Dataset.from_tensor_slices(Pair({"b": b, "a": a}, y))
    assert ds.output_types == Pair({"a": tf.float64, "b": tf.int32}, tf.int64)
    assert ds.output_shapes.features["a"].as_list() == [2]
    assert ds.output_shapes.label.as_list() == []
    assert ds.output_classes.label is tf.Tensor
    out = elements(ds)
    assert len(out) == 6
    for i, e in enumerate(out):
        assert isinstance(e, Pair) and sorted(e.features) == ["a", "b"]
        np.testing.assert_array_equal(e.features["a"], a[i])
        assert e.features["b"] == b[i] and e.features["b"].dtype == np.int32
        assert e.label == y[i] and e.label.dtype == np.int64
    # a list is one value (stacked), a tuple is a structure
    assert tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]]).output_shapes.as_list() == [2]
    pair = tf.data.Dataset.from_tensor_slices(([1.5, 2.5], [3, 4]))
    assert pair.output_types == (tf.float32, tf.int32)
    assert [tuple(e) for e in elements(pair)] == [(1.5, 3), (2.5, 4)]


def test_from_tensors_range_and_compile_time_tensors():
    ds = tf.data.Dataset.from_tensors({"x": np.ones((2, 3), np.float32), "n": 7})
    assert ds.output_shapes["x"].as_list() == [2, 3]
    (only,) = elements(ds)
    np.testing.assert_array_equal(only["x"], np.ones((2, 3)))
    assert only["n"] == 7
    for args in [(5,), (2, 11, 3), (10, 0, -3), (4, 4), (3, 0)]:
        ds = tf.data.Dataset.range(*args)
        assert ds.output_types == tf.int64
        assert [int(v) for v in elements(ds)] == list(range(*args))
    # tensors whose values follow from constants are evaluated when the dataset is built
    c = tf.constant([[1, 2], [3, 4], [5, 6]]) * 2
    out = elements(tf.data.Dataset.from_tensor_slices(c).batch(tf.constant(2)))
    np.testing.assert_array_equal(out[0], [[2, 4], [6, 8]])
    np.testing.assert_array_equal(out[1], [[10, 12]])


def test_source_arrays_are_copied():
    x = np.arange(4)
    ds = tf.data.Dataset.from_tensor_slices(x)
    x[:] = -1
    assert [int(v) for v in elements(ds)] == [0, 1, 2, 3]


# -- batch, repeat, take, skip ------------------------------------------------------------------
@pytest.mark.parametrize("n,size", [(10, 4), (12, 4), (3, 5), (1, 1)])
def test_batch_boundaries_and_remainder(n, size):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    kept = ds.batch(size)
    assert kept.output_shapes[0].as_list() == [None, 2]
    out = elements(kept)
    starts = range(0, n, size)
    assert len(out) == len(starts)
    for (bx, by), s in zip(out, starts):
        np.testing.assert_array_equal(bx, x[s : s + size])
        np.testing.assert_array_equal(by, y[s : s + size])
    dropped = ds.batch(size, drop_remainder=True)
    assert dropped.output_shapes[0].as_list() == [size, 2]
    out = elements(dropped)
    assert len(out) == n // size
    assert all(bx.shape == (size, 2) for bx, _ in out)


def test_batches_span_repeats_and_nest():
    stream = np.tile(np.arange(5), 3)
    out = elements(tf.data.Dataset.range(5).repeat(3).batch(4))
    expected = [stream[i : i + 4] for i in range(0, 15, 4)]
    assert [b.tolist() for b in out] == [e.tolist() for e in expected]
    nested = elements(tf.data.Dataset.range(7).batch(3).batch(2))
    assert [b.tolist() for b in nested] == [[[0, 1, 2], [3, 4, 5]], [[6]]]


def test_repeat_take_skip():
    r = tf.data.Dataset.range

    def ints(ds):
        return [int(v) for v in elements(ds)]

    assert ints(r(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert ints(r(3).repeat(0)) == []
    assert ints(r(3).repeat().take(8)) == [0, 1, 2, 0, 1, 2, 0, 1]
    assert ints(r(3).repeat(-1).take(0)) == []
    assert ints(r(0).repeat()) == []  # repeating nothing ends
    assert ints(r(10).skip(3).take(4)) == [3, 4, 5, 6]
    assert ints(r(10).take(-1)) == list(range(10))
    assert ints(r(10).skip(-1)) == []
    assert ints(r(4).skip(9)) == []
    assert ints(r(5).repeat(2).skip(3).take(5)) == [3, 4, 0, 1, 2]
    assert ints(r(4).prefetch(2).apply(lambda d: d.take(2))) == [0, 1]


# -- shuffle ------------------------------------------------------------------------------------
def test_shuffle_permutes_each_epoch_deterministically_for_a_seed():
    def epochs(ds, n):
        values = [int(v) for v in elements(ds)]
        return [values[i : i + n] for i in range(0, len(values), n)]

    first = epochs(tf.data.Dataset.range(40).shuffle(40, seed=3).repeat(3), 40)
    assert len(first) == 3 and all(sorted(e) == list(range(40)) for e in first)
    assert first[0] != first[1] != first[2] != list(range(40))
    again = epochs(tf.data.Dataset.range(40).shuffle(40, seed=3).repeat(3), 40)
    assert again == first
    assert epochs(tf.data.Dataset.range(40).shuffle(40, seed=4).repeat(3), 40) != first
    same = epochs(
        tf.data.Dataset.range(40).shuffle(40, 3, reshuffle_each_iteration=False).repeat(2), 40
    )
    assert same[0] == same[1] == first[0]
    # the graph seed makes unseeded shuffles repeatable, as for random ops
    orders = []
    for _ in range(2):
        tf.reset_default_graph()
        tf.set_random_seed(5)
        orders.append(epochs(tf.data.Dataset.range(30).shuffle(30), 30)[0])
    assert orders[0] == orders[1] != list(range(30))


def test_unseeded_shuffle_differs_between_sessions():
    nxt = tf.data.Dataset.range(50).shuffle(50).batch(50).make_one_shot_iterator().get_next()
    with tf.Session() as a, tf.Session() as b:
        first, second = a.run(nxt), b.run(nxt)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first.tolist() != second.tolist()


@pytest.mark.parametrize("n,size", [(20, 5), (10, 10), (10, 50), (30, 1), (300, 7)])
def test_shuffle_follows_the_buffer_algorithm(n, size):
    out = [int(v) for v in elements(tf.data.Dataset.range(n).shuffle(size, seed=11))]
    assert out == reference_shuffle(list(range(n)), size, DEFAULT_GRAPH_SEED, 11)
    if size == 1:
        assert out == list(range(n))
    # independent of the generator: output k is one of the first size + k inputs
    assert all(v < size + k for k, v in enumerate(out))


def test_shuffle_is_the_same_however_the_input_is_cut():
    # repeat() hands over one block per pass; map() blocks of 1024; the order must not care
    stream = list(range(10)) * 3
    out = [int(v) for v in elements(tf.data.Dataset.range(10).repeat(3).shuffle(4, seed=2))]
    assert out == reference_shuffle(stream, 4, DEFAULT_GRAPH_SEED, 2)
    ds = tf.data.Dataset.range(2500).map(lambda x: x * 2).shuffle(1500, seed=9).batch(2500)
    (batch,) = elements(ds)
    expected = reference_shuffle(list(range(0, 5000, 2)), 1500, DEFAULT_GRAPH_SEED, 9)
    assert batch.tolist() == expected


def test_shuffle_of_batches_of_different_shapes():
    out = elements(tf.data.Dataset.range(10).batch(3).shuffle(2, seed=1))
    batches = [np.arange(10)[i : i + 3].tolist() for i in range(0, 10, 3)]
    assert sorted(b.tolist() for b in out) == sorted(batches)
    order = reference_shuffle(list(range(4)), 2, DEFAULT_GRAPH_SEED, 1)
    assert [b.tolist() for b in out] == [batches[i] for i in order]


# -- map ----------------------------------------------------------------------------------------
def test_map_with_tf_ops():
    x = np.arange(24, dtype=np.int32).reshape(6, 4)
    ds = tf.data.Dataset.from_tensor_slices(x).map(
        lambda v: tf.reshape(tf.cast(v, tf.float32) * 2.0 + 1.0, [2, 2])
    )
    assert ds.output_types == tf.float32 and ds.output_shapes.as_list() == [2, 2]
    out = elements(ds)
    np.testing.assert_array_equal(stacked(out), (x * 2.0 + 1).reshape(6, 2, 2))
    labels = np.array([0, 1, 1, 0, 2, 1], dtype=np.int32)
    feats = {"a": x.astype(np.float32), "b": np.ones(6, np.float32)}
    ds = tf.data.Dataset.from_tensor_slices((feats, labels)).map(
        lambda f, y: ({"s": tf.reduce_sum(f["a"]) + f["b"]}, tf.one_hot(y, 3))
    )
    assert ds.output_shapes[1].as_list() == [3]
    out = elements(ds.batch(4))
    np.testing.assert_array_equal(out[0][0]["s"], x[:4].sum(1) + 1)
    np.testing.assert_array_equal(out[1][1], np.eye(3)[labels[4:]])


def test_map_with_python_operators_and_values():
    scale = np.float64(0.5)
    ds = tf.data.Dataset.range(5).map(lambda v: v * 3 + 1)
    assert [int(v) for v in elements(ds)] == [v * 3 + 1 for v in range(5)]
    pairs = tf.data.Dataset.from_tensor_slices((np.arange(3.0), np.arange(3))).map(
        lambda a, b: [b, a * scale, 7]  # a list is a tuple; arguments pass through unchanged
    )
    assert pairs.output_types == (tf.int64, tf.float64, tf.int32)
    assert [tuple(e) for e in elements(pairs)] == [(i, i * 0.5, 7) for i in range(3)]


def test_map_after_batch_runs_per_batch_shape():
    ds = (
        tf.data.Dataset.range(10)
        .batch(4)
        .map(lambda b: tf.reduce_sum(b) + tf.cast(tf.size(b), tf.int64))
    )
    assert [int(v) for v in elements(ds)] == [6 + 4, 22 + 4, 17 + 2]


# -- iterators in sessions ----------------------------------------------------------------------
def test_get_next_drives_a_compiled_training_loop():
    rng = np.random.default_rng(0)
    n, size, epochs, lr = 30, 8, 3, 0.1
    x_data = rng.standard_normal((n, 3)).astype(np.float32)
    y_data = (x_data @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x_data, y_data)).repeat(epochs).batch(size)
    x, y = ds.make_one_shot_iterator().get_next()
    w = tf.Variable(tf.zeros([3, 1]), name="w")
    err = tf.matmul(x, w) - y
    grad = tf.matmul(tf.transpose(x), err) / tf.cast(tf.shape(x)[0], tf.float32)
    step = tf.assign_sub(w, lr * grad)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = len(sess._programs)
        steps = len(take_all(sess, step.op))
        # one program for full batches, one for the last, smaller one
        assert len(sess._programs) - before == 2
        learned = sess.run(w)
    stream_x, stream_y = np.tile(x_data, (epochs, 1)), np.tile(y_data, (epochs, 1))
    expected = np.zeros((3, 1), np.float32)
    for s in range(0, n * epochs, size):
        bx, by = stream_x[s : s + size], stream_y[s : s + size]
        expected -= lr * (bx.T @ (bx @ expected - by)) / np.float32(len(bx))
    assert steps == -(-n * epochs // size)
    np.testing.assert_allclose(learned, expected, rtol=1e-5, atol=1e-6)


def test_runs_reuse_the_plan_of_their_signature(monkeypatch):
    plans = []
    make_plan = tf.data.runtime.make_plan
    monkeypatch.setattr(
        tf.data.runtime, "make_plan", lambda *args: plans.append(args) or make_plan(*args)
    )
    x = tf.data.Dataset.range(100).batch(10).make_one_shot_iterator().get_next()
    total = tf.reduce_sum(x)
    double, one = total * 2, tf.constant(1.0)
    with tf.Session() as sess:
        assert [int(sess.run(total)) for _ in range(5)] == [45 + 100 * i for i in range(5)]
        assert len(plans) == 1  # the graph was walked once, not per run
        assert int(sess.run(double)) == 2 * 545 and len(plans) == 2  # another signature
        sess.run(one)  # a run that needs no iterator takes no element
        assert int(sess.run(total)) == 645 and len(plans) == 3


@pytest.mark.parametrize("kind", sorted(RUNNERS))
def test_iterator_position_is_per_session(kind):
    nxt = tf.data.Dataset.range(4).make_one_shot_iterator().get_next()
    first, second = RUNNERS[kind](), RUNNERS[kind]()
    assert [int(first.run(nxt)) for _ in range(2)] == [0, 1]
    assert [int(second.run(nxt)) for _ in range(3)] == [0, 1, 2]
    assert [int(first.run(nxt)) for _ in range(2)] == [2, 3]
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence") as info:
        first.run(nxt)
    assert info.value.op.name == "IteratorGetNext"
    with pytest.raises(tf.errors.OutOfRangeError):  # and stays at the end
        first.run(nxt)
    assert int(second.run(nxt)) == 3


def test_session_and_interpreter_agree():
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    ds = tf.data.Dataset.from_tensor_slices(x).shuffle(6, seed=1).map(lambda v: v * v - 1.0)
    ds = ds.repeat(2).batch(6)
    compiled = elements(ds, tf.Session)
    interpreted = elements(ds, Interpreter)
    assert len(compiled) == len(interpreted) == 7
    for a, b in zip(compiled, interpreted):
        np.testing.assert_array_equal(a, b)


def test_one_element_per_run_per_get_next_op():
    it = tf.data.Dataset.from_tensor_slices((np.arange(6), -np.arange(6))).make_one_shot_iterator()
    a, b = it.get_next()
    c, _ = it.get_next(name="second")
    with tf.Session() as sess:
        assert sess.run([a, b]) == [0, 0]  # both components of one element
        assert sess.run(b) == -1  # fetching one component takes a whole element
        assert sess.run([a, c]) == [2, 3]  # two get_next ops take two elements
        assert sess.run(a * 10) == 40
        # a fed component cuts the graph: the iterator does not move
        assert sess.run(a * 10, {a: 100}) == 1000
        assert sess.run(a) == 5


def test_initializable_iterator():
    ds = tf.data.Dataset.range(5).shuffle(5, seed=8)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    assert it.output_types == tf.int64 and it.output_shapes.as_list() == []
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        sess.run(it.initializer)
        order = [int(sess.run(nxt)) for _ in range(5)]
        assert sorted(order) == list(range(5))
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
        sess.run(it.initializer)  # restarts: the seeded order replays
        assert int(sess.run(nxt)) == order[0]
        sess.run(tf.group(it.initializer))  # also when it runs as a control input
        assert [int(sess.run(nxt)) for _ in range(5)] == order
    with pytest.raises(ValueError, match="one-shot"):
        _ = tf.data.make_one_shot_iterator(ds).initializer


def test_reinitializable_iterator_switches_datasets():
    train = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(4)
    test = tf.data.Dataset.from_tensor_slices(np.full(3, 9.0, np.float32)).batch(2)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    use_train, use_test = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        sess.run(use_train)
        assert sess.run(nxt).tolist() == [0, 1, 2, 3]
        sess.run(use_test)
        assert [v.tolist() for v in take_all(sess, nxt)] == [[9, 9], [9]]
        sess.run(use_train)
        assert sess.run(nxt).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="Expected a dataset of float32"):
        it.make_initializer(tf.data.Dataset.range(3))


# -- errors -------------------------------------------------------------------------------------
def test_errors_name_the_problem():
    D = tf.data.Dataset
    with pytest.raises(ValueError, match=r"same size in their first dimension.*\['x'\] has 3.*"):
        D.from_tensor_slices({"x": np.zeros(3), "y": np.zeros(4)})
    with pytest.raises(ValueError, match="scalar"):
        D.from_tensor_slices((np.zeros(3), 5))
    with pytest.raises(ValueError, match="no components"):
        D.from_tensor_slices({})
    with pytest.raises(TypeError, match="cannot convert component"):
        D.from_tensor_slices(np.array([b"a", 1], dtype=object))  # strings mixed with numbers
    with pytest.raises(ValueError, match="only known when the graph runs"):
        D.from_tensor_slices(tf.placeholder(tf.float32, [3]))
    ds = D.range(4)
    with pytest.raises(ValueError, match="Batch size must be greater than zero"):
        ds.batch(0)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        ds.batch(2.5)
    with pytest.raises(ValueError, match="buffer_size must be greater than zero"):
        ds.shuffle(0)
    with pytest.raises(ValueError, match="count must be >= -1"):
        ds.repeat(-2)
    with pytest.raises(TypeError, match="must be callable"):
        ds.map(3)
    outer = tf.constant(2, tf.int64)
    with pytest.raises(ValueError, match="tensor of another graph"):
        ds.map(lambda v: v * outer)
    with pytest.raises(ValueError, match="step must not be 0"):
        D.range(0, 5, 0)
    ragged = D.range(7).batch(3).batch(3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors with different"):
        elements(ragged)
