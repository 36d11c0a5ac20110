"""TF1's queue-based input functions (tfc/train/input.py): producers, epochs, batching, shuffling,
padding, joins and the maybe_* variants, each read to the end of its input in a Session.

The runner threads are stopped and joined with a bound; every run has a timeout.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import pytest

import tfc as tf

T = tf.RunOptions(timeout_in_ms=10_000)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


@contextlib.contextmanager
def running():
    """A session with the local variables (epoch counters) initialized and the graph's queue
    runners started; they are stopped and joined on exit."""
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            yield sess
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)


def read_all(sess, fetches, limit=1000):
    """Run `fetches` until OutOfRangeError: the list of results."""
    results = []
    with pytest.raises(tf.errors.OutOfRangeError):
        for _ in range(limit):
            results.append(sess.run(fetches, options=T))
    return results


def test_limit_epochs_counts_in_a_local_variable():
    x = tf.train.limit_epochs(tf.constant([1, 2]), num_epochs=2, name="limited")
    assert x.op.name == "limited"
    (epochs,) = tf.local_variables()
    assert epochs.op.name == "limited/epochs" and epochs.dtype == tf.int64
    assert not tf.trainable_variables()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert [v.tolist() for v in read_all(sess, x)] == [[1, 2], [1, 2]]
    assert tf.train.limit_epochs(x) is x
    with pytest.raises(ValueError, match="num_epochs must be > 0"):
        tf.train.limit_epochs(x, 0)


def test_input_producer_in_order_epoch_after_epoch():
    queue = tf.train.input_producer(tf.constant([[1, 2], [3, 4], [5, 6]]), num_epochs=2,
                                    shuffle=False, capacity=4)  # fmt: skip
    with running() as sess:
        rows = read_all(sess, queue.dequeue())
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]] * 2
    with pytest.raises(ValueError, match="fully defined shape"):
        tf.train.input_producer(tf.placeholder(tf.float32, [3, None]))


def test_shuffled_epochs_are_permutations_repeated_by_the_seed():
    def epochs(seed):
        tf.reset_default_graph()
        queue = tf.train.range_input_producer(10, num_epochs=3, seed=seed, capacity=40)
        with running() as sess:
            return [int(v) for v in read_all(sess, queue.dequeue())]

    a, b, c = epochs(5), epochs(5), epochs(6)
    assert len(a) == 30 and a == b and a != c
    for k in range(3):
        assert sorted(a[10 * k : 10 * k + 10]) == list(range(10))
    assert a[:10] != a[10:20]  # each epoch in a new order


def test_slice_input_producer_keeps_rows_together():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.arange(6) * 10
    row, label = tf.train.slice_input_producer([x, y], num_epochs=2, seed=1)
    with running() as sess:
        pairs = read_all(sess, [row, label])
    assert len(pairs) == 12
    for r, lab in pairs:
        np.testing.assert_array_equal(r, x[lab // 10])
    assert Counter(int(lab) for _, lab in pairs) == Counter({int(v): 2 for v in y})
    with pytest.raises(ValueError, match="at least one tensor"):
        tf.train.slice_input_producer([])


def test_slice_input_producer_over_file_names():
    # the image-folder pipeline: its row count is the static length of a string tensor, which
    # the native stage uses as a Range limit; a string row is one element of a string array
    names = tf.convert_to_tensor(["a.jpg", "b.jpg", "c.jpg"], dtype=tf.string)
    labels = tf.convert_to_tensor([0, 1, 1], dtype=tf.int32)
    name, label = tf.train.slice_input_producer([names, labels], num_epochs=1, shuffle=False)
    with running() as sess:
        pairs = read_all(sess, [name, label])
    assert [(n, int(lab)) for n, lab in pairs] == [(b"a.jpg", 0), (b"b.jpg", 1), (b"c.jpg", 1)]


def test_batch_groups_in_order_with_a_smaller_final_batch():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    row, index = tf.train.slice_input_producer([x, np.arange(5)], num_epochs=2, shuffle=False)
    rows, indices = tf.train.batch([row, index], batch_size=3, allow_smaller_final_batch=True)
    assert rows.op.name == "batch" and rows.get_shape().as_list() == [None, 2]
    with running() as sess:
        batches = read_all(sess, [rows, indices])
    assert [i.tolist() for _, i in batches] == [[0, 1, 2], [3, 4, 0], [1, 2, 3], [4]]
    for r, i in batches:
        np.testing.assert_array_equal(r, x[i])


def test_batch_without_a_smaller_final_batch_drops_the_rest():
    (index,) = tf.train.slice_input_producer([np.arange(5)], num_epochs=1, shuffle=False)
    batch = tf.train.batch([index], batch_size=2)
    assert isinstance(batch, tf.Tensor)  # one component: a tensor, as TF1 returns it
    assert batch.get_shape().as_list() == [2]
    with running() as sess:
        assert [b.tolist() for b in read_all(sess, batch)] == [[0, 1], [2, 3]]


def test_batch_of_a_dict_with_enqueue_many_and_threads():
    features = {"b": tf.constant([[1.0], [2.0], [3.0], [4.0]]), "a": tf.constant([1, 2, 3, 4])}
    limited = {k: tf.train.limit_epochs(v, 3) for k, v in features.items()}
    batch = tf.train.batch(limited, batch_size=4, enqueue_many=True, num_threads=2)
    assert set(batch) == {"a", "b"} and batch["b"].get_shape().as_list() == [4, 1]
    with running() as sess:
        batches = read_all(sess, batch)
    assert len(batches) == 3
    for b in batches:  # the rows of one enqueue_many stay together, a's next to b's
        np.testing.assert_array_equal(b["b"][:, 0], b["a"].astype(np.float32))


def test_dynamic_pad_pads_each_batch():
    source = tf.PaddingFIFOQueue(8, tf.int32, shapes=[[None]])
    x = tf.placeholder(tf.int32, [None])
    fill, close = source.enqueue(x), source.close()
    padded = tf.train.batch([source.dequeue()], batch_size=2, dynamic_pad=True)
    assert padded.get_shape().as_list() == [2, None]
    with running() as sess:
        for row in ([3, 3, 3], [1], [2, 2], [4, 4]):
            sess.run(fill, {x: row}, options=T)
        sess.run(close)
        batches = [b.tolist() for b in read_all(sess, padded)]
    assert batches == [[[3, 3, 3], [1, 0, 0]], [[2, 2], [4, 4]]]


def test_batch_join_takes_from_every_input():
    inputs = [[tf.train.limit_epochs(tf.constant([k, k]), 2)] for k in (1, 2, 3)]
    batch = tf.train.batch_join(inputs, batch_size=3, enqueue_many=True,
                                allow_smaller_final_batch=True)  # fmt: skip
    with running() as sess:
        values = np.concatenate(read_all(sess, batch))
    assert Counter(values.tolist()) == Counter({1: 4, 2: 4, 3: 4})
    with pytest.raises(ValueError, match="of one length"):
        tf.train.batch_join([[tf.constant(1)], [tf.constant(1), tf.constant(2)]], 2)
    with pytest.raises(TypeError, match="types to be consistent"):
        tf.train.batch_join([[tf.constant(1)], [tf.constant(1.0)]], 2)


def test_shuffle_batch_mixes_every_element_once_per_epoch():
    (index,) = tf.train.slice_input_producer([np.arange(20)], num_epochs=2, seed=3)
    batch = tf.train.shuffle_batch(
        [index], batch_size=5, capacity=12, min_after_dequeue=4, seed=4,
        allow_smaller_final_batch=True, num_threads=2,
    )  # fmt: skip
    assert batch.op.name == "shuffle_batch"
    with running() as sess:
        values = np.concatenate(read_all(sess, batch)).tolist()
    assert Counter(values) == Counter({v: 2 for v in range(20)})
    assert values[:20] != sorted(values[:20])
    with pytest.raises(ValueError, match="must be bigger than min_after_dequeue"):
        tf.train.shuffle_batch([index], 2, capacity=4, min_after_dequeue=4)


def test_shuffle_batch_join_mixes_the_inputs():
    inputs = [[tf.train.limit_epochs(tf.fill([4], k), 1)] for k in (1, 2)]
    batch = tf.train.shuffle_batch_join(inputs, batch_size=2, capacity=8, min_after_dequeue=2,
                                        enqueue_many=True, seed=1)  # fmt: skip
    with running() as sess:
        values = np.concatenate(read_all(sess, batch)).tolist()
    assert Counter(values) == Counter({1: 4, 2: 4})


def test_maybe_batch_keeps_the_selected_elements():
    (index,) = tf.train.slice_input_producer([np.arange(8)], num_epochs=1, shuffle=False)
    even = tf.equal(tf.mod(index, 2), 0)
    batch = tf.train.maybe_batch([index], even, batch_size=2)
    many = tf.train.maybe_batch(
        [tf.train.limit_epochs(tf.constant([5, 6, 7]), 1)], tf.constant([True, False, True]),
        batch_size=2, enqueue_many=True,
    )  # fmt: skip
    with running() as sess:
        assert [b.tolist() for b in read_all(sess, batch)] == [[0, 2], [4, 6]]
        assert sess.run(many, options=T).tolist() == [5, 7]
    with pytest.raises(ValueError, match="cannot be a vector"):
        tf.train.maybe_batch([index], [True, False], batch_size=2)


def test_maybe_shuffle_batch_and_joins_filter_too():
    values = tf.train.limit_epochs(tf.range(10), 1)
    keep = tf.less(values, 4)
    batch = tf.train.maybe_shuffle_batch([values], 4, 10, 0, keep, enqueue_many=True, seed=2)
    joined = tf.train.maybe_batch_join(
        [[tf.train.limit_epochs(tf.constant([1, 2]), 1)]], tf.constant([False, True]), 1,
        enqueue_many=True,
    )  # fmt: skip
    shuffled_join = tf.train.maybe_shuffle_batch_join(
        [[tf.train.limit_epochs(tf.constant([3, 4]), 1)]], 1, 4, 0, tf.constant([True, False]),
        enqueue_many=True,
    )  # fmt: skip
    with running() as sess:
        assert sorted(sess.run(batch, options=T).tolist()) == [0, 1, 2, 3]
        assert sess.run(joined, options=T).tolist() == [2]
        assert sess.run(shuffled_join, options=T).tolist() == [3]


def test_string_input_producer_hands_out_names_epoch_after_epoch():
    names = ["a.csv", "bb.csv", "ccc.csv"]
    queue = tf.train.string_input_producer(names, num_epochs=2, shuffle=False)
    name = queue.dequeue()
    with running() as sess:
        got = read_all(sess, [name, tf.strings.length(name)])
    assert [(n, int(k)) for n, k in got] == [(n.encode(), len(n)) for n in names] * 2

    files = [f"part-{i}.csv" for i in range(8)]

    def shuffled(seed):
        tf.reset_default_graph()
        q = tf.train.string_input_producer(files, num_epochs=2, seed=seed)
        with running() as sess:
            return [v.decode() for v in read_all(sess, q.dequeue())]

    a, b = shuffled(7), shuffled(7)
    assert a == b and sorted(a[:8]) == sorted(a[8:]) == files  # each epoch every file once
    assert a[:8] != files and a[:8] != a[8:]
    with pytest.raises(ValueError, match="requires a non-null input tensor"):
        tf.train.string_input_producer([])


def test_match_filenames_once_feeds_a_string_input_producer(tmp_path):
    """A local tf.string variable globbed once, when the local variables are initialized (files
    made later are not seen), read by a reader pipeline as in TF1."""
    for name, text in [("b.csv", "3\n4\n"), ("a.csv", "1\n2\n"), ("skip.txt", "9\n")]:
        (tmp_path / name).write_text(text)
    files = tf.train.match_filenames_once(str(tmp_path / "*.csv"), name="csvs")
    assert files.op.name == "csvs" and files.dtype == tf.string
    assert tf.local_variables() == [files] and not tf.global_variables()
    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    (value,) = tf.decode_csv(line, [[0]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value csvs"):
            sess.run(files)
    with running() as sess:
        (tmp_path / "c.csv").write_text("5\n")  # after the glob: not matched
        expected = [str(tmp_path / n).encode() for n in ("a.csv", "b.csv")]
        assert sess.run(files).tolist() == expected
        assert [int(v) for v in read_all(sess, value)] == [1, 2, 3, 4]
        assert sess.run(tf.report_uninitialized_variables()).tolist() == []


def test_batch_and_shuffle_batch_carry_sparse_tensors():
    """A VarLenFeature's SparseTensor per example, batched as TF1 batches it: serialized into
    strings through the queue, joined again into one SparseTensor [batch, longest]."""

    def record(ids):
        feature = tf.train.Feature(int64_list=tf.train.Int64List(value=ids))
        features = tf.train.Features(feature={"ids": feature})
        return tf.train.Example(features=features).SerializeToString()

    lists = [[3, 1], [], [4, 1, 5], [9]]
    records = tf.train.input_producer(
        tf.constant([record(ids) for ids in lists]), num_epochs=1, shuffle=False
    ).dequeue()
    parsed = tf.parse_single_example(records, {"ids": tf.VarLenFeature(tf.int64)})
    label = tf.strings.length(records)
    ids, lengths = tf.train.batch([parsed["ids"], label], batch_size=2)
    assert isinstance(ids, tf.SparseTensor)
    with running() as sess:
        batches = read_all(sess, [ids, lengths])
    assert len(batches) == 2
    first, second = batches[0][0], batches[1][0]
    np.testing.assert_array_equal(first.indices, [[0, 0], [0, 1]])
    np.testing.assert_array_equal(first.values, [3, 1])
    np.testing.assert_array_equal(first.dense_shape, [2, 2])
    np.testing.assert_array_equal(second.indices, [[0, 0], [0, 1], [0, 2], [1, 0]])
    np.testing.assert_array_equal(second.values, [4, 1, 5, 9])
    np.testing.assert_array_equal(second.dense_shape, [2, 3])

    tf.reset_default_graph()
    sp = tf.SparseTensor([[0, 0], [1, 1], [2, 0]], [1.0, 2.0, 3.0], [3, 2])
    in_order = tf.train.batch([sp], batch_size=3, enqueue_many=True)
    # the runner enqueues the three rows again and again: a shuffled batch holds rows of them
    mixed = tf.train.shuffle_batch(
        [sp], batch_size=4, capacity=10, min_after_dequeue=2, enqueue_many=True, seed=3
    )
    with running() as sess:
        got, shuffled = sess.run([in_order, mixed])
    np.testing.assert_array_equal(got.indices, [[0, 0], [1, 1], [2, 0]])
    np.testing.assert_array_equal(got.values, np.float32([1, 2, 3]))
    np.testing.assert_array_equal(got.dense_shape, [3, 2])
    assert shuffled.dense_shape.tolist()[0] == 4 and len(shuffled.values) == 4
    rows = {(1.0, 0), (2.0, 1), (3.0, 0)}  # (value, column) of each row
    assert {(float(v), int(i[1])) for v, i in zip(shuffled.values, shuffled.indices)} <= rows
    assert shuffled.indices[:, 0].tolist() == [0, 1, 2, 3]
