"""tfc's queues and queue-based input functions against TensorFlow's own tf.compat.v1: the same
script run with both, the values, shapes, op names and errors compared (skipped where
tensorflow is not installed). Only what is deterministic is compared: FIFO, padding and
priority orders, epochs in order, errors; random orders differ by design (different
generators), and the tests of tfc alone check their properties."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tfc

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def both(script):
    """script(lib, sess) -> a list of results (values, or the names of the errors raised), run
    in a fresh graph and session of TensorFlow and of tfc."""
    results = []
    for lib in (tf1, tfc):
        graph = lib.Graph()
        with graph.as_default(), lib.Session(graph=graph) as sess:
            results.append(script(lib, sess))
    return results


def attempt(fn):
    """fn()'s value, or ("error", its class name, the line of its message naming a queue or
    a limit, with TF's resource prefix ("_0_") taken out of the queue's name)."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the comparison is the test
        lines = getattr(e, "message", str(e)).splitlines()
        line = next((x for x in lines if re.search(r"Queue '|^Reached limit", x.strip())), "")
        return ("error", type(e).__name__, re.sub(r"'_\d+_", "'", line).strip())


def same(a, b):
    assert type(a) is type(b) or (np.isscalar(a) and np.isscalar(b)), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, str):
        assert a == b
    else:
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_array_equal(a, b)


def test_fifo_queue_semantics_match():
    def script(lib, sess):
        q = lib.FIFOQueue(3, [lib.float32, lib.int32], shapes=[[2], []])
        enq = q.enqueue_many([[[1, 2], [3, 4]], [5, 6]])
        deq, many, up_to = q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(3)
        out = [[t.get_shape().as_list() for t in ts] for ts in (deq, many, up_to)]
        out.append([op.name for op in (enq, deq[0].op, many[0].op, up_to[0].op)])
        sess.run(enq)
        out += [sess.run(q.size()), sess.run(deq), sess.run(q.size())]
        sess.run(enq)
        sess.run(q.close())
        out.append(sess.run(q.is_closed()))
        out.append(attempt(lambda: sess.run(enq)))
        out.append(sess.run(many))
        out.append(sess.run(up_to))
        out.append(attempt(lambda: sess.run(up_to)))
        out.append(attempt(lambda: sess.run(deq)))
        empty = lib.FIFOQueue(3, lib.float32, shapes=[[]])
        timeout = lib.RunOptions(timeout_in_ms=50)
        waited = attempt(lambda: sess.run(empty.dequeue(), options=timeout))
        out.append(waited[:2])
        return out

    want, got = both(script)
    same(want, got)
    assert got[-1] == ("error", "DeadlineExceededError")
    assert got[-2][:2] == ("error", "OutOfRangeError") and "insufficient elements" in got[-2][2]


def test_padding_and_priority_queues_match():
    def script(lib, sess):
        pq = lib.PaddingFIFOQueue(5, [lib.int32], shapes=[[None]])
        x = lib.placeholder(lib.int32, [None])
        enq = pq.enqueue(x)
        for row in ([1, 2, 3], [4], [5, 6]):
            sess.run(enq, {x: row})
        pq.close()
        out = [sess.run(pq.dequeue_many(2)), pq.dequeue_many(2).get_shape().as_list()]
        sess.run(pq.close())
        out.append(sess.run(pq.dequeue_up_to(2)))
        prio = lib.PriorityQueue(6, [lib.float32], shapes=[[]])
        sess.run(prio.enqueue_many([[3, 1, 2, 1, 0], [30.0, 10.0, 20.0, 11.0, 0.0]]))
        out.append(sess.run(prio.dequeue_many(5)))
        out.append([prio.dtypes, prio.name])
        return out

    want, got = both(script)
    same(want[:4], got[:4])
    assert [d.name for d in want[4][0]] == [d.name for d in got[4][0]]
    assert want[4][1] == got[4][1]


def test_input_functions_in_order_match():
    def script(lib, sess):
        x = np.arange(14, dtype=np.float32).reshape(7, 2)
        row, index = lib.train.slice_input_producer(
            [x, np.arange(7)], num_epochs=2, shuffle=False, capacity=5
        )
        rows, indices = lib.train.batch(
            [row, index], batch_size=3, allow_smaller_final_batch=True, capacity=4
        )
        # the queue ops, but the sizes TF reads for its summaries (tfc makes no summaries)
        names = sorted(
            op.name
            for op in lib.get_default_graph().get_operations()
            if op.type.startswith(("Queue", "FIFOQueue")) and op.type != "QueueSizeV2"
        )
        sess.run(lib.local_variables_initializer())
        coord = lib.train.Coordinator()
        threads = lib.train.start_queue_runners(sess, coord)
        batches = []
        try:
            for _ in range(20):
                batches.append(sess.run([rows, indices]))
        except lib.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        return [names, batches, rows.op.name, rows.get_shape().as_list()]

    want, got = both(script)
    same(want, got)


def test_limit_epochs_and_count_up_to_match():
    def script(lib, sess):
        limited = lib.train.limit_epochs(lib.constant([1, 2]), 2)
        v = lib.Variable(3, name="v")
        counted = lib.count_up_to(v, 5)
        sess.run([lib.local_variables_initializer(), v.initializer])
        out = [sess.run(limited), sess.run(limited), attempt(lambda: sess.run(limited))]
        out += [sess.run(counted), sess.run(counted), attempt(lambda: sess.run(counted))]
        out.append([var.op.name for var in lib.local_variables()])
        return out

    want, got = both(script)
    same(want, got)


def test_shuffled_producers_draw_tfs_orders():
    """input_producer shuffles with RandomShuffle, TF's draws: with an op seed (and no graph
    seed) both libraries' seeds are (87654321, seed), so the epochs come in the same orders."""

    def script(lib, sess):
        names = lib.train.string_input_producer([f"f{i}" for i in range(6)], num_epochs=2,
                                                seed=3)  # fmt: skip
        numbers = lib.train.range_input_producer(7, num_epochs=2, seed=5)
        rows = lib.train.input_producer(
            np.arange(10, dtype=np.float32).reshape(5, 2), num_epochs=1, seed=9
        )
        sess.run(lib.local_variables_initializer())
        coord = lib.train.Coordinator()
        threads = lib.train.start_queue_runners(sess, coord)
        out = [sess.run(names.dequeue_many(12)), sess.run(numbers.dequeue_many(14)),
               sess.run(rows.dequeue_many(5))]  # fmt: skip
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        return out

    want, got = both(script)
    same(want, got)
