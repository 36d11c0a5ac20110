"""tf.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, PriorityQueue in a Session: values, the
blocking, deadline and close semantics of TF1, errors naming the op, and the interpreter.

Runs that may block carry RunOptions(timeout_in_ms) or run in threads joined with a timeout.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tfc as tf
from tfc.reference.interp import Interpreter

T = tf.RunOptions(timeout_in_ms=10_000)  # the bound of runs that should not wait at all


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def in_thread(fn, *args):
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except Exception as e:  # noqa: BLE001 - inspected by the test
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def test_fifo_queue_values_in_order_through_a_computation():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
    x = tf.placeholder(tf.float32, [None, 2])
    enq = q.enqueue_many([x * 2.0, tf.range(3)])
    a, b = q.dequeue()
    ma, mb = q.dequeue_many(2)
    total = tf.reduce_sum(ma, axis=1) + tf.cast(mb, tf.float32)
    data = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    with tf.Session() as sess:
        sess.run(enq, {x: data}, options=T)
        assert sess.run(q.size()) == 3
        first, index = sess.run([a, b], options=T)
        np.testing.assert_array_equal(first, data[0] * 2)
        assert index == 0 and isinstance(index, np.int32)
        np.testing.assert_allclose(sess.run(total, options=T), [14 + 1, 22 + 2])
        assert sess.run(q.size()) == 0


def test_dequeue_returns_a_tensor_a_list_or_a_dict_as_tf1():
    one = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    assert isinstance(one.dequeue(), tf.Tensor)
    two = tf.FIFOQueue(2, [tf.float32, tf.int64], shapes=[[], [3]])
    assert [t.get_shape().as_list() for t in two.dequeue_many(5)] == [[5], [5, 3]]
    assert [t.get_shape().as_list() for t in two.dequeue_up_to(5)] == [[None], [None, 3]]
    named = tf.FIFOQueue(2, [tf.float32, tf.int32], shapes=[[], []], names=["x", "y"])
    enq = named.enqueue({"y": 3, "x": 1.5})
    out = named.dequeue()
    assert set(out) == {"x", "y"}
    with tf.Session() as sess:
        sess.run(enq, options=T)
        assert sess.run(out, options=T) == {"x": 1.5, "y": 3}
    assert one.name == "fifo_queue" and one.dtypes == [tf.float32]
    assert two.shapes == [tf.TensorShape([]), tf.TensorShape([3])]


def test_bad_components_are_refused_when_the_graph_is_built():
    q = tf.FIFOQueue(3, [tf.float32], shapes=[[2]])
    with pytest.raises(ValueError, match="not compatible|incompatible"):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="Tensor conversion requested dtype float32"):
        q.enqueue([tf.constant([1, 2])])
    with pytest.raises(ValueError, match="Expected 1 components"):
        q.enqueue([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="must have names to enqueue a dictionary"):
        q.enqueue({"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match="needs the shapes"):
        tf.FIFOQueue(3, tf.float32).dequeue_many(2)
    with pytest.raises(ValueError, match="must be known when the graph is built"):
        q.dequeue_many(tf.placeholder(tf.int32, []))
    with pytest.raises(ValueError, match="fully defined"):
        tf.FIFOQueue(3, tf.float32, shapes=[[None]])
    with pytest.raises(ValueError, match="positive"):
        tf.FIFOQueue(0, tf.float32)


def test_a_component_of_the_wrong_shape_fails_the_enqueue_at_run_time():
    q = tf.FIFOQueue(3, [tf.float32], shapes=[[2]])
    x = tf.placeholder(tf.float32, [None])
    enq = q.enqueue([x])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected \[2\], got \[3\]") as e:
            sess.run(enq, {x: [1.0, 2.0, 3.0]}, options=T)
        assert e.value.op is not None and e.value.op.name == enq.name
        assert sess.run(q.size()) == 0


def test_a_waiting_dequeue_times_out_with_deadline_exceeded():
    q = tf.FIFOQueue(3, tf.float32, shapes=[[]])
    deq = q.dequeue()
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError) as e:
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=150))
        assert 0.1 < time.monotonic() - start < 5
        assert e.value.op.name == deq.op.name
    config = tf.ConfigProto(operation_timeout_in_ms=100)
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq)


def test_a_full_queue_times_out_the_enqueue():
    q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    enq = q.enqueue_many([[1.0, 2.0, 3.0]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(enq, options=tf.RunOptions(timeout_in_ms=100))
        assert sess.run(q.size()) == 2  # what went in stays in, as in TF


def test_close_then_drain_then_out_of_range():
    q = tf.FIFOQueue(5, tf.int32, shapes=[[]])
    enq = q.enqueue_many([[1, 2, 3]])
    many, up_to = q.dequeue_many(2), q.dequeue_up_to(2)
    with tf.Session() as sess:
        sess.run(enq, options=T)
        assert not sess.run(q.is_closed())
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(enq, options=T)
        np.testing.assert_array_equal(sess.run(many, options=T), [1, 2])
        with pytest.raises(
            tf.errors.OutOfRangeError,
            match=r"FIFOQueue 'fifo_queue' is closed and has insufficient elements "
            r"\(requested 2, current size 1\)",
        ):
            sess.run(many, options=T)
        np.testing.assert_array_equal(sess.run(up_to, options=T), [3])  # a smaller batch
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(up_to, options=T)


def test_close_wakes_the_waiting_dequeue_and_cancels_pending_enqueues():
    q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    x = tf.placeholder(tf.float32, [])
    enq = q.enqueue(x)
    deq_many = q.dequeue_many(2)
    with tf.Session() as sess:
        sess.run(enq, {x: 1.0}, options=T)
        waiting, box = in_thread(sess.run, deq_many)
        time.sleep(0.1)
        sess.run(q.close())
        waiting.join(10)
        assert isinstance(box["error"], tf.errors.OutOfRangeError)
        assert sess.run(q.size()) == 1  # the element it took is back

    q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    enq = q.enqueue(x)
    with tf.Session() as sess:
        sess.run(enq, {x: 1.0}, options=T)
        pending, box = in_thread(sess.run, enq, {x: 2.0})
        time.sleep(0.1)
        assert pending.is_alive()
        sess.run(q.close(cancel_pending_enqueues=True))
        pending.join(10)
        assert isinstance(box["error"], tf.errors.CancelledError)


def test_closing_the_session_cancels_a_run_waiting_on_a_queue():
    q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    deq = q.dequeue()
    sess = tf.Session()
    waiting, box = in_thread(sess.run, deq)
    time.sleep(0.1)
    sess.close()
    waiting.join(10)
    assert not waiting.is_alive()
    assert isinstance(box["error"], tf.errors.CancelledError)


def test_a_dequeue_feeds_a_training_step():
    q = tf.FIFOQueue(8, [tf.float32, tf.float32], shapes=[[2], [1]])
    xs = np.array([[1, 0], [0, 1], [1, 1], [2, 1]], np.float32)
    ys = xs @ np.array([[2.0], [-1.0]], np.float32)
    enq = q.enqueue_many([xs, ys])
    bx, by = q.dequeue_many(4)
    w = tf.Variable(tf.zeros([2, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(bx, w) - by))
    train = tf.train.GradientDescentOptimizer(0.2).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(200):
            sess.run(enq, options=T)
            sess.run(train, options=T)
        np.testing.assert_allclose(sess.run(w), [[2.0], [-1.0]], atol=1e-3)


def test_padding_fifo_queue_pads_each_batch_to_its_longest():
    q = tf.PaddingFIFOQueue(5, [tf.int32, tf.float32], shapes=[[None], []])
    x = tf.placeholder(tf.int32, [None])
    enq = q.enqueue([x, tf.cast(tf.size(x), tf.float32)])
    batch, lengths = q.dequeue_many(2)
    assert batch.get_shape().as_list() == [2, None]
    with tf.Session() as sess:
        for row in ([1, 2, 3], [4], [5, 6], [7]):
            sess.run(enq, {x: row}, options=T)
        out, n = sess.run([batch, lengths], options=T)
        np.testing.assert_array_equal(out, [[1, 2, 3], [4, 0, 0]])
        np.testing.assert_array_equal(n, [3, 1])
        np.testing.assert_array_equal(sess.run(batch, options=T), [[5, 6], [7, 0]])
    with pytest.raises(ValueError, match="must have a defined rank"):
        tf.PaddingFIFOQueue(5, [tf.int32], shapes=[tf.TensorShape(None)])


def test_string_queues_hold_bytes_for_string_ops():
    q = tf.PaddingFIFOQueue(4, [tf.string, tf.int32], shapes=[[None], []])
    words = tf.placeholder(tf.string, [None])
    enq = q.enqueue([words, tf.size(words)])
    batch, counts = q.dequeue_many(2)
    lengths = tf.strings.length(batch)
    with tf.Session() as sess:
        sess.run(enq, {words: ["queue", "s"]}, options=T)
        sess.run(enq, {words: ["tf\u00e9"]}, options=T)  # UTF-8: 4 bytes
        got, n, length = sess.run([batch, counts, lengths], options=T)
    assert got.tolist() == [[b"queue", b"s"], ["tf\u00e9".encode(), b""]]
    assert n.tolist() == [2, 1] and length.tolist() == [[5, 1], [4, 0]]
    single = tf.FIFOQueue(2, tf.string, shapes=[[]])
    with tf.Session() as sess:
        sess.run(single.enqueue("name.csv"), options=T)
        assert sess.run(single.dequeue(), options=T) == b"name.csv"


def test_priority_queue_dequeues_by_priority():
    q = tf.PriorityQueue(6, [tf.float32], shapes=[[]])
    assert q.dtypes == [tf.int64, tf.float32]
    enq = q.enqueue_many([[3, 1, 2, 1], [30.0, 10.0, 20.0, 11.0]])
    priority, value = q.dequeue_many(4)
    with tf.Session() as sess:
        sess.run(enq, options=T)
        p, v = sess.run([priority, value], options=T)
    np.testing.assert_array_equal(p, [1, 1, 2, 3])
    np.testing.assert_array_equal(v, [10, 11, 20, 30])
    unshaped = tf.PriorityQueue(2, [tf.float32])
    assert unshaped.shapes[0] == tf.TensorShape([])  # the priority is a scalar
    priorities = tf.placeholder(tf.int64, None)
    bad = unshaped.enqueue([priorities, 1.0])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected \[\], got \[2\]"):
            sess.run(bad, {priorities: [1, 2]}, options=T)


def _shuffled(seed, graph_seed=None):
    tf.reset_default_graph()
    if graph_seed is not None:
        tf.set_random_seed(graph_seed)
    q = tf.RandomShuffleQueue(20, 0, tf.int32, shapes=[[]], seed=seed)
    enq = q.enqueue_many([tf.range(20)])
    deq = q.dequeue_many(20)
    with tf.Session() as sess:
        sess.run(enq, options=T)
        return sess.run(deq, options=T).tolist()


def test_random_shuffle_queue_order_repeats_with_its_seed():
    a, b, c = _shuffled(3), _shuffled(3), _shuffled(4)
    assert a == b and a != c and sorted(a) == list(range(20)) and a != list(range(20))
    assert _shuffled(None, 5) == _shuffled(None, 5)
    assert _shuffled(None) != _shuffled(None)  # unseeded: a new order per session


def test_random_shuffle_queue_holds_min_after_dequeue_until_closed():
    q = tf.RandomShuffleQueue(10, 4, tf.int32, shapes=[[]], seed=1)
    enq = q.enqueue_many([tf.range(6)])
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq, options=T)
        got = [sess.run(deq, options=T) for _ in range(2)]
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=100))
        sess.run(q.close())
        got += sess.run(q.dequeue_up_to(10), options=T).tolist()
    assert sorted(got) == list(range(6))


def test_one_run_may_dequeue_from_one_queue_and_enqueue_into_another():
    source = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    sink = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    move = sink.enqueue(source.dequeue() * 10.0)
    fill = source.enqueue_many([[1.0, 2.0, 3.0]])
    with tf.Session() as sess:
        sess.run(fill, options=T)
        for _ in range(3):
            sess.run(move, options=T)
        np.testing.assert_array_equal(sess.run(sink.dequeue_many(3), options=T), [10, 20, 30])


def test_control_dependencies_on_an_enqueue_run_its_producers():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    v = tf.Variable(0.0)
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        enq = q.enqueue(5.0)
    with tf.control_dependencies([enq]):
        after = tf.identity(v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(enq, options=T)
        assert sess.run(v) == 1.0  # the targeted enqueue's control input ran
        assert sess.run(after, options=T) == 2.0
        assert sess.run(q.size()) == 2


def test_a_dequeue_after_an_enqueue_of_the_same_run_is_refused():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enq = q.enqueue(1.0)
    with tf.control_dependencies([enq]):
        deq = q.dequeue()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="two Session.run calls"):
            sess.run(deq, options=T)


def test_maybe_enqueue_keeps_the_selected_rows():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    keep = tf.placeholder(tf.bool, [None])
    rows = tf.placeholder(tf.int32, [None])
    enq = q.enqueue_selected([rows], keep, enqueue_many=True)
    flag = tf.placeholder(tf.bool, [])
    one = q.enqueue_selected([tf.constant(9)], flag)
    with tf.Session() as sess:
        sess.run(enq, {rows: [1, 2, 3, 4], keep: [True, False, False, True]}, options=T)
        sess.run(one, {flag: False}, options=T)
        sess.run(one, {flag: True}, options=T)
        np.testing.assert_array_equal(sess.run(q.dequeue_many(3), options=T), [1, 4, 9])
    with pytest.raises(ValueError, match="cannot be a vector"):
        q.enqueue_selected([tf.constant(1)], [True])


def test_queue_ops_run_in_the_interpreter_too():
    q = tf.FIFOQueue(4, [tf.float32], shapes=[[2]])
    enq = q.enqueue_many([[[1.0, 2.0], [3.0, 4.0]]])
    total = tf.reduce_sum(q.dequeue_many(2), axis=0)
    interp = Interpreter()
    interp.run(enq)
    np.testing.assert_allclose(interp.run(total), [4.0, 6.0])
    assert interp.run(q.size()) == 0


def test_native_builds_refuse_queue_ops_by_name(tmp_path):
    def signatures():
        q = tf.FIFOQueue(4, tf.float32, shapes=[[2]])
        x = tf.placeholder(tf.float32, [None, 2], name="features")
        w = tf.Variable(tf.zeros([2, 1]))
        loss = tf.reduce_mean(tf.matmul(x, w))
        with tf.control_dependencies([q.enqueue_many([x])]):  # dropped silently, were it not
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        return {"train": {"inputs": {"features": x}, "loss": loss, "train_op": train_op}}

    with pytest.raises(tf.errors.UnimplementedError, match="fifo_queue_EnqueueMany.*queue op"):
        tf.compile(signatures, tmp_path / "out", batch=4, build=False)
    tf.reset_default_graph()
    y = tf.FIFOQueue(4, tf.float32, shapes=[[]]).dequeue() * 2.0
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="fifo_queue_Dequeue"):
            sess.profile(y)


def test_from_list_is_refused_with_the_reason():
    q = tf.FIFOQueue(4, tf.float32)
    with pytest.raises(NotImplementedError, match="run-time index"):
        tf.QueueBase.from_list(0, [q, q])


def test_queues_survive_a_meta_graph_round_trip(tmp_path):
    q = tf.FIFOQueue(4, [tf.float32, tf.int32], shapes=[[2], []], name="q")
    q.enqueue_many([[[1.0, 2.0], [3.0, 4.0]], [7, 8]], name="fill")
    q.dequeue_many(2, name="take")
    path = str(tmp_path / "model.meta")
    tf.train.export_meta_graph(path)
    tf.reset_default_graph()
    tf.train.import_meta_graph(path)
    graph = tf.get_default_graph()
    with tf.Session() as sess:
        sess.run("fill", options=T)
        values, ids = sess.run(["take:0", "take:1"], options=T)
    np.testing.assert_array_equal(values, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(ids, [7, 8])
    assert graph.get_operation_by_name("q").type == "FIFOQueueV2"
