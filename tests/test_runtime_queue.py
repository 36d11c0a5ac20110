"""The native queues of runtime/src/queue/tfc_queue.c (through tfc.backend.native_queue): order,
blocking, deadlines, close and cancel semantics, padding, and many threads at once.

Every wait here has a deadline or a join timeout: a broken queue fails a test, never hangs it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tfc.backend.native_queue import (
    FIFO,
    PRIORITY,
    RANDOM_SHUFFLE,
    NativeQueue,
    clock_ns,
    decode_strings,
    encode_strings,
)
from tfc.ir import errors


def deadline(seconds: float) -> int:
    return clock_ns() + int(seconds * 1e9)


def fifo(capacity=4, dtypes=(np.float32,), **kw):
    return NativeQueue("FIFOQueue 'q'", FIFO, capacity, list(dtypes), **kw)


def run_thread(fn, *args):
    """Start fn(*args) in a thread; returns (thread, box) where box holds its result or error."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def test_fifo_keeps_order_and_components_together():
    q = fifo(capacity=5, dtypes=(np.float32, np.int64))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    q.enqueue([x, np.array([10, 11, 12, 13])], many=True)
    q.enqueue([np.array([7.0, 8.0, 9.0], np.float32), np.array(14)], many=False)
    assert q.size() == 5
    one = q.dequeue(None)
    np.testing.assert_array_equal(one[0], x[0])
    assert one[1].shape == () and one[1] == 10
    rest = q.dequeue(4)
    np.testing.assert_array_equal(rest[0], np.concatenate([x[1:], [[7, 8, 9]]]))
    np.testing.assert_array_equal(rest[1], [11, 12, 13, 14])
    assert rest[0].dtype == np.float32 and rest[1].dtype == np.int64
    assert q.size() == 0


def test_dequeue_waits_for_an_enqueue_of_another_thread():
    q = fifo()
    thread, box = run_thread(q.dequeue, 3, False, False, deadline(10))
    time.sleep(0.05)
    assert thread.is_alive()  # nothing there yet
    q.enqueue([np.array([1.0, 2.0], np.float32)], many=True)
    time.sleep(0.05)
    assert thread.is_alive()  # two of three
    q.enqueue([np.array(3.0, np.float32)], many=False)
    thread.join(10)
    np.testing.assert_array_equal(box["value"][0], [1, 2, 3])


def test_a_full_queue_blocks_enqueues_until_the_deadline():
    q = fifo(capacity=2)
    q.enqueue([np.ones(2, np.float32)], many=True)
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError, match="Timed out waiting"):
        q.enqueue([np.array(5.0, np.float32)], many=False, deadline_ns=deadline(0.2))
    assert 0.15 < time.monotonic() - start < 5
    assert q.size() == 2


def test_enqueue_many_larger_than_the_capacity_goes_in_as_room_is_made():
    q = fifo(capacity=3)
    values = np.arange(10, dtype=np.float32)
    thread, box = run_thread(q.enqueue, [values], True, deadline(10))
    got = np.concatenate([q.dequeue(2, deadline_ns=deadline(10))[0] for _ in range(5)])
    thread.join(10)
    assert "error" not in box
    np.testing.assert_array_equal(got, values)


def test_dequeue_many_larger_than_the_capacity_takes_as_elements_come():
    q = fifo(capacity=2)
    thread, box = run_thread(q.dequeue, 7, False, False, deadline(10))
    for i in range(7):
        q.enqueue([np.array(float(i), np.float32)], many=False, deadline_ns=deadline(10))
    thread.join(10)
    np.testing.assert_array_equal(box["value"][0], np.arange(7))


def test_a_timed_out_dequeue_puts_back_what_it_took_in_order():
    q = fifo()
    q.enqueue([np.array([1.0, 2.0], np.float32)], many=True)
    with pytest.raises(errors.DeadlineExceededError):
        q.dequeue(3, deadline_ns=deadline(0.1))
    assert q.size() == 2
    np.testing.assert_array_equal(q.dequeue(2)[0], [1, 2])


def test_close_fails_enqueues_and_lets_dequeues_drain():
    q = fifo()
    q.enqueue([np.array([1.0, 2.0, 3.0], np.float32)], many=True)
    q.close()
    assert q.is_closed()
    with pytest.raises(errors.CancelledError, match=r"FIFOQueue 'q' is closed\."):
        q.enqueue([np.array(4.0, np.float32)], many=False)
    np.testing.assert_array_equal(q.dequeue(2)[0], [1, 2])
    with pytest.raises(
        errors.OutOfRangeError,
        match=r"FIFOQueue 'q' is closed and has insufficient elements \(requested 2, current "
        r"size 1\)",
    ):
        q.dequeue(2)
    assert q.size() == 1  # the failed dequeue took nothing
    np.testing.assert_array_equal(q.dequeue(5, allow_fewer=True)[0], [3])
    with pytest.raises(errors.OutOfRangeError, match=r"requested 5, current size 0"):
        q.dequeue(5, allow_fewer=True)


def test_close_wakes_a_waiting_dequeue_with_out_of_range():
    q = fifo()
    thread, box = run_thread(q.dequeue, None, False, False, deadline(10))
    time.sleep(0.05)
    q.close()
    thread.join(10)
    assert isinstance(box["error"], errors.OutOfRangeError)


def test_close_with_cancel_pending_enqueues_fails_the_waiting_enqueue():
    q = fifo(capacity=1)
    q.enqueue([np.array(1.0, np.float32)], many=False)
    pending, box = run_thread(q.enqueue, [np.array(2.0, np.float32)], False, deadline(10))
    time.sleep(0.05)
    q.close()  # without cancelling, a pending enqueue still goes in when room is made
    time.sleep(0.05)
    assert pending.is_alive()
    np.testing.assert_array_equal(q.dequeue(None)[0], 1.0)
    pending.join(10)
    assert "error" not in box and q.size() == 1

    q = fifo(capacity=1)
    q.enqueue([np.array(1.0, np.float32)], many=False)
    pending, box = run_thread(q.enqueue, [np.array(2.0, np.float32)], False, deadline(10))
    time.sleep(0.05)
    q.close(cancel_pending_enqueues=True)
    pending.join(10)
    assert isinstance(box["error"], errors.CancelledError)
    assert "Enqueue operation was cancelled" in str(box["error"])
    assert q.size() == 1


def test_cancel_fails_every_waiting_and_later_call():
    q = fifo()
    waiters = [run_thread(q.dequeue, None, False, False, deadline(10)) for _ in range(3)]
    time.sleep(0.05)
    q.cancel()
    for thread, box in waiters:
        thread.join(10)
        assert isinstance(box["error"], errors.CancelledError)
    with pytest.raises(errors.CancelledError, match="Session has been closed"):
        q.enqueue([np.array(1.0, np.float32)], many=False)


def test_a_queue_goes_with_its_last_reference_while_others_wait_on_another():
    for _ in range(20):  # the native memory is freed at once: no leak, no crash
        q = fifo(capacity=100)
        q.enqueue([np.ones(100, np.float32)], many=True)
        del q


def test_random_shuffle_keeps_min_after_dequeue_until_closed():
    q = NativeQueue("RandomShuffleQueue 'r'", RANDOM_SHUFFLE, 10, [np.int32], 3, 1, 2)
    q.enqueue([np.arange(5, dtype=np.int32)], many=True)
    got = [int(q.dequeue(None)[0]) for _ in range(2)]
    with pytest.raises(errors.DeadlineExceededError):
        q.dequeue(None, deadline_ns=deadline(0.1))  # 3 left: no more than min_after_dequeue
    q.close()
    got += [int(v) for v in q.dequeue(3)[0]]
    assert sorted(got) == [0, 1, 2, 3, 4]


def _shuffle_order(seed, seed2, n=20):
    q = NativeQueue("RandomShuffleQueue 'r'", RANDOM_SHUFFLE, n, [np.int32], 0, seed, seed2)
    q.enqueue([np.arange(n, dtype=np.int32)], many=True)
    return q.dequeue(n)[0].tolist()


def test_random_shuffle_order_is_a_permutation_fixed_by_the_seeds():
    a, b, c = _shuffle_order(7, 9), _shuffle_order(7, 9), _shuffle_order(7, 10)
    assert a == b and a != c
    assert sorted(a) == list(range(20)) and a != list(range(20))


def test_random_shuffle_picks_uniformly():
    # the first element taken out of 10, over 2000 seeds: about 200 each (binomial sd ~13)
    firsts = np.bincount([_shuffle_order(s, 0, 10)[0] for s in range(2000)], minlength=10)
    assert firsts.min() > 140 and firsts.max() < 260, firsts


def test_priority_queue_takes_the_smallest_first_ties_in_order():
    q = NativeQueue("PriorityQueue 'p'", PRIORITY, 8, [np.int64, np.float32])
    q.enqueue([np.array([3, 1, 2, 1, 0]), np.array([30, 10, 20, 11, 0], np.float32)], many=True)
    priorities, values = q.dequeue(3)
    np.testing.assert_array_equal(priorities, [0, 1, 1])
    np.testing.assert_array_equal(values, [0, 10, 11])
    with pytest.raises(errors.DeadlineExceededError):  # put back as they were
        q.dequeue(3, deadline_ns=deadline(0.05))
    np.testing.assert_array_equal(q.dequeue(2)[1], [20, 30])


def test_a_padding_batch_pads_each_element_to_the_largest_with_zeros():
    q = fifo(capacity=4, dtypes=(np.int32,))
    elements = [np.array([[1, 2, 3]]), np.array([[4], [5]]), np.zeros((0, 2), np.int32)]
    for e in elements:
        q.enqueue([e.astype(np.int32)], many=False)
    (batch,) = q.dequeue(3, padded=True)
    expected = np.zeros((3, 2, 3), np.int32)
    for i, e in enumerate(elements):
        expected[i, : e.shape[0], : e.shape[1]] = e
    np.testing.assert_array_equal(batch, expected)


def test_elements_of_different_shapes_are_refused_unpadded():
    q = fifo(capacity=4, dtypes=(np.float32,))
    q.enqueue([np.ones(2, np.float32)], many=False)
    q.enqueue([np.ones(3, np.float32)], many=False)
    with pytest.raises(errors.InvalidArgumentError, match="different shapes"):
        q.dequeue(2)


def test_many_threads_move_every_element_exactly_once():
    q = fifo(capacity=16, dtypes=(np.int64, np.float64))
    producers, per = 4, 500

    def produce(k):
        for i in range(0, per, 5):
            ids = np.arange(k * per + i, k * per + i + 5)
            q.enqueue([ids, ids * 0.5], many=True, deadline_ns=deadline(30))

    seen = []
    lock = threading.Lock()

    def consume():
        while True:
            try:
                ids, halves = q.dequeue(7, allow_fewer=True, deadline_ns=deadline(30))
            except errors.OutOfRangeError:
                return
            np.testing.assert_array_equal(halves, ids * 0.5)  # components stay together
            with lock:
                seen.extend(ids.tolist())

    makers = [threading.Thread(target=produce, args=(k,)) for k in range(producers)]
    takers = [threading.Thread(target=consume) for _ in range(3)]
    for t in makers + takers:
        t.start()
    for t in makers:
        t.join(60)
    q.close()
    for t in takers:
        t.join(60)
    assert not any(t.is_alive() for t in makers + takers)
    assert sorted(seen) == list(range(producers * per))


def test_strings_round_trip_through_their_encoding():
    for element in (
        np.array(b"", dtype=object),
        np.array(b"a\x00b", dtype=object),
        np.array([[b"x", b""], [b"yz", b"\xff" * 300]], dtype=object),
        np.empty((0, 3), dtype=object),
    ):
        back = decode_strings(encode_strings(element))
        assert back.dtype == object and back.shape == element.shape
        assert back.tolist() == element.tolist()


def test_string_components_keep_their_bytes_and_pad_with_empty_strings():
    q = NativeQueue("PaddingFIFOQueue 'p'", FIFO, 4, [object, np.int32])
    q.enqueue([np.array([b"ab", b"c"], dtype=object), np.array(1, np.int32)], many=False)
    q.enqueue([np.array([b"d"], dtype=object), np.array(2, np.int32)], many=False)
    names, ids = q.dequeue(2, padded=True)
    assert names.dtype == object and names.tolist() == [[b"ab", b"c"], [b"d", b""]]
    assert ids.tolist() == [1, 2]
    q.enqueue([np.array([[b"x"], [b"yy"]], dtype=object), np.array([3, 4], np.int32)], many=True)
    first = q.dequeue(None)
    assert first[0].tolist() == [b"x"] and first[1] == 3
