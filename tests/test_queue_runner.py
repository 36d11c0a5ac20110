"""tf.train.QueueRunner, add_queue_runner, start_queue_runners: threads running enqueue ops in a
Session, stopped by their input's end or a Coordinator, errors handed to the coordinator.

Every run that may block has a timeout, every join a bound: no test can hang.
"""

from __future__ import annotations

import threading
import time

import pytest

import tfc as tf

T = tf.RunOptions(timeout_in_ms=10_000)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _counting_runner(capacity=4, threads=1):
    """A queue filled by `threads` threads, each enqueueing the next value of a counter."""
    counter = tf.Variable(0, name="counter")
    queue = tf.FIFOQueue(capacity, tf.int32, shapes=[[]])
    enqueue = queue.enqueue(tf.assign_add(counter, 1, use_locking=True))
    runner = tf.train.QueueRunner(queue, [enqueue] * threads)
    return counter, queue, runner


def test_threads_fill_the_queue_until_the_coordinator_stops_them():
    counter, queue, runner = _counting_runner(threads=2)
    dequeue = queue.dequeue_many(10)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        coord = tf.train.Coordinator()
        threads = runner.create_threads(sess, coord=coord, start=True)
        assert len(threads) == 3  # two enqueue threads and the one that cancels at the stop
        assert runner.create_threads(sess, coord=coord) == []  # already running here
        values = sess.run(dequeue, options=T).tolist()
        # each value once; the two threads may enqueue the values they counted out of order
        # (a thread blocks on the full queue after counting, as in TF1)
        assert len(set(values)) == 10 and min(values) >= 1 and max(values) <= 12
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)  # the blocked enqueues were cancelled
        assert not any(t.is_alive() for t in threads)
        assert sess.run(queue.is_closed())


def test_the_end_of_the_input_closes_the_queue_for_the_consumer():
    queue = tf.FIFOQueue(3, tf.float32, shapes=[[]])
    runner = tf.train.QueueRunner(
        queue, [queue.enqueue_many(tf.train.limit_epochs(tf.constant([1.0, 2.0]), 3))]
    )
    dequeue = queue.dequeue()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = runner.create_threads(sess, coord=coord, start=True)
        got = []
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                got.append(sess.run(dequeue, options=T))
        assert got == [1.0, 2.0] * 3
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)


def test_an_enqueue_error_stops_the_coordinator_and_join_raises_it():
    queue = tf.FIFOQueue(3, tf.float32, shapes=[[]])
    uninitialized = tf.Variable(1.0)
    runner = tf.train.QueueRunner(queue, [queue.enqueue(uninitialized + 1.0)])
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = runner.create_threads(sess, coord=coord, start=True)
        assert coord.wait_for_stop(10)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            coord.join(threads, stop_grace_period_secs=10)


# the thread raises its error too, as TF1's does: pytest reports that as a warning
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_without_a_coordinator_errors_are_kept():
    queue = tf.FIFOQueue(3, tf.float32, shapes=[[]])
    runner = tf.train.QueueRunner(queue, [queue.enqueue(tf.Variable(1.0) * 2.0)])
    with tf.Session() as sess:
        threads = runner.create_threads(sess, start=True)
        for t in threads:
            t.join(10)
    assert len(runner.exceptions_raised) == 1
    assert isinstance(runner.exceptions_raised[0], tf.errors.FailedPreconditionError)


def test_start_queue_runners_starts_the_collection():
    counter, queue, runner = _counting_runner()
    tf.train.add_queue_runner(runner)
    assert tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS) == [runner]
    with tf.Session() as sess:
        sess.run(counter.initializer)
        coord = tf.train.Coordinator()
        with sess.as_default():
            threads = tf.train.start_queue_runners(coord=coord)
        assert len(threads) == 2 and all(t.daemon for t in threads)
        assert sess.run(queue.dequeue_many(3), options=T).tolist() == [1, 2, 3]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    with pytest.raises(ValueError, match="No default session"):
        tf.train.start_queue_runners()
    with pytest.raises(TypeError, match="must be a `tf.Session`"):
        tf.train.start_queue_runners(sess=object())


def test_queue_runner_arguments_and_module_names():
    queue = tf.FIFOQueue(3, tf.float32, shapes=[[]])
    enqueue = queue.enqueue(1.0)
    runner = tf.train.queue_runner.QueueRunner(queue, [enqueue])
    assert runner.queue is queue and runner.enqueue_ops == [enqueue] and runner.name == queue.name
    assert runner.close_op.type == runner.cancel_op.type == "QueueCloseV2"
    assert runner.cancel_op.get_attr("cancel_pending_enqueues")
    assert runner.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
    assert tf.train.queue_runner.add_queue_runner is tf.train.add_queue_runner
    assert tf.train.queue_runner.start_queue_runners is tf.train.start_queue_runners
    with pytest.raises(ValueError, match="must be specified"):
        tf.train.QueueRunner(queue, [])
    with pytest.raises(TypeError, match="tf.error types"):
        tf.train.QueueRunner(queue, [enqueue], queue_closed_exception_types=(ValueError,))


def test_monitored_training_session_runs_the_graphs_queue_runners():
    counter, queue, runner = _counting_runner()
    tf.train.add_queue_runner(runner)
    total = tf.reduce_sum(queue.dequeue_many(4))
    start = time.monotonic()
    with tf.train.MonitoredTrainingSession() as sess:
        # its scaffold initialized the counter; its coordinator stops the runner at close
        assert sess.run(total, options=T) == 1 + 2 + 3 + 4
    assert time.monotonic() - start < 60
    deadline = time.monotonic() + 10
    while _runner_threads(queue) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _runner_threads(queue)  # the session's close stopped and joined them


def _runner_threads(queue):
    prefix = f"QueueRunnerThread-{queue.name}"
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


def test_supervisor_managed_session_reads_a_pipeline_to_its_end(tmp_path):
    (index,) = tf.train.slice_input_producer([list(range(6))], num_epochs=2, shuffle=False)
    batch = tf.train.batch([index], 4, allow_smaller_final_batch=True)
    supervisor = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    got = []
    with supervisor.managed_session() as sess:  # writes the graph, starts the runners
        while not supervisor.should_stop():
            got.append(sess.run(batch, options=T).tolist())
    assert got == [[0, 1, 2, 3], [4, 5, 0, 1], [2, 3, 4, 5]]


def test_monitored_training_session_with_checkpoints_reads_a_pipeline(tmp_path):
    (value,) = tf.train.slice_input_producer([[1.0, 2.0, 3.0, 4.0]], num_epochs=3, shuffle=False)
    batch = tf.train.batch([value], 2)
    total = tf.Variable(0.0)
    step = tf.train.get_or_create_global_step()
    train = tf.group(tf.assign_add(total, tf.reduce_sum(batch)), tf.assign_add(step, 1))
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), save_checkpoint_steps=2
    ) as sess:  # its graph file holds the queue ops; its checkpoints the model
        while not sess.should_stop():
            sess.run(train, options=T)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-6")
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_tensor(total.op.name) == 30.0  # 3 epochs of 1 + 2 + 3 + 4
