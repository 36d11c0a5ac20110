"""tf.train.Supervisor, basic_train_loop, Coordinator and LooperThread: the older TF1 training
loop and the threads of a loop, checked by the weights and checkpoints they leave."""

import os
import threading
import time

import numpy as np
import pytest

import tfc as tf

X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [-2.0, 1.0]], np.float32)
Y = np.array([[1.0], [2.0], [0.0], [-1.0]], np.float32)
LR = 0.05


def _model():
    w = tf.Variable(np.zeros((2, 1), np.float32), name="w")
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(X), w) - tf.constant(Y)))
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
    return w, step, train


def _weights_after(steps):
    w = np.zeros((2, 1), np.float32)
    for _ in range(steps):
        w = (w - np.float32(LR) * (2.0 / len(X)) * X.T @ (X @ w - Y)).astype(np.float32)
    return w


def _wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# -- Supervisor ------------------------------------------------------------------------------------
def test_supervisor_checkpoints_from_its_thread_and_restores(tmp_path):
    logdir = str(tmp_path)
    w, step, train = _model()
    sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0.1)
    assert (
        sv.is_chief
        and sv.global_step is step
        and sv.save_path == os.path.join(logdir, "model.ckpt")
    )
    with sv.managed_session() as sess:
        for _ in range(3):
            sess.run(train)
        # the thread saves every 0.1 s: soon a checkpoint holds step 3
        _wait_for(lambda: (tf.train.latest_checkpoint(logdir) or "").endswith("-3"))
    assert os.path.exists(os.path.join(logdir, "graph.pbtxt"))
    np.testing.assert_allclose(
        tf.train.load_variable(logdir, "w"), _weights_after(3), rtol=1e-5, atol=1e-6
    )

    tf.reset_default_graph()
    w, step, train = _model()
    sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0)  # no checkpoint thread
    with sv.managed_session() as sess:
        assert sess.run(step) == 3
        np.testing.assert_allclose(sess.run(w), _weights_after(3), rtol=1e-5, atol=1e-6)
        while not sv.should_stop():
            sess.run(train)
            if sess.run(step) >= 5:
                sv.request_stop()
        sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
    np.testing.assert_allclose(
        tf.train.load_variable(logdir, "w"), _weights_after(5), rtol=1e-5, atol=1e-6
    )
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-5")


def test_managed_session_ends_cleanly_at_the_end_of_input_and_raises_other_errors():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32))
    value = tf.data.make_one_shot_iterator(dataset).get_next()
    sv = tf.train.Supervisor()  # no logdir: no checkpoints, no thread
    got = []
    with sv.managed_session() as sess:
        while not sv.should_stop():
            got.append(float(sess.run(value)))
    assert got == [0.0, 1.0, 2.0, 3.0] and sess.closed
    with pytest.raises(ValueError, match="bad step"):
        with sv.managed_session() as sess:
            raise ValueError("bad step")
    assert sess.closed


def test_supervisor_loop_threads_and_non_chief_workers():
    w, step, train = _model()
    sv = tf.train.Supervisor(recovery_wait_secs=0.05)
    calls = []
    with sv.managed_session() as sess:
        looper = sv.loop(0.02, lambda: calls.append(int(sess.run(step))))
        _wait_for(lambda: len(calls) >= 3)
        assert isinstance(looper, tf.train.LooperThread) and looper.daemon
    assert not looper.is_alive() and calls[:3] == [0, 0, 0]

    with pytest.raises(ValueError, match="all Variables must have their device set: w"):
        tf.train.Supervisor(is_chief=False)
    tf.reset_default_graph()
    with tf.device("/job:ps/task:0"):
        _model()
    worker = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.05)
    assert worker.save_path is None  # only the chief saves
    with pytest.raises(tf.errors.DeadlineExceededError, match="cannot become ready by waiting"):
        worker.prepare_or_wait_for_session()
    with pytest.raises(RuntimeError, match="Only chief supervisor can start standard services"):
        worker.start_standard_services(None)
    assert worker.summary_writer is None  # only the chief writes events
    with pytest.raises(RuntimeError, match="Writing a summary requires a summary writer"):
        worker.summary_computed(None, tf.Summary())


def test_basic_train_loop_begins_again_after_an_aborted_session(tmp_path):
    w, step, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    sessions = []

    def train_step(sess, last_step):
        if not sessions or sessions[-1] is not sess:
            sessions.append(sess)
        sess.run(train)
        value = int(sess.run(step))
        if value == 2 and len(sessions) == 1:
            sv.saver.save(sess, sv.save_path, global_step=step)
        if value == 3 and len(sessions) == 1:
            raise tf.errors.AbortedError(None, None, "the session was lost")
        if value >= last_step:
            sv.saver.save(sess, sv.save_path, global_step=step)
            sv.request_stop()

    tf.train.basic_train_loop(sv, train_step, args=[6])
    assert len(sessions) == 2  # the second restored step 2 and trained on to 6
    np.testing.assert_allclose(
        tf.train.load_variable(str(tmp_path), "w"), _weights_after(6), rtol=1e-5, atol=1e-6
    )
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-6")


# -- Coordinator and LooperThread ------------------------------------------------------------------
def test_coordinator_stops_threads_and_raises_the_first_error():
    coord = tf.train.Coordinator()
    done = []

    def worker(k):
        with coord.stop_on_exception():
            while not coord.should_stop():
                if k == 2:
                    raise RuntimeError("worker 2 failed")
                time.sleep(0.001)
            done.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    with pytest.raises(RuntimeError, match="worker 2 failed"):
        coord.join(threads)
    assert sorted(done) == [0, 1] and coord.joined and coord.should_stop()
    with pytest.raises(ValueError, match="late"):
        coord.request_stop(ValueError("late"))  # nobody joins any more
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.raise_requested_exception()  # nothing to raise

    clean = tf.train.Coordinator()
    clean.request_stop(tf.errors.OutOfRangeError(None, None, "end of input"))
    assert clean.should_stop() and clean.wait_for_stop(0)
    clean.join([])  # a clean stop raises nothing


def test_coordinator_join_names_threads_that_do_not_stop():
    coord = tf.train.Coordinator()
    release = threading.Event()
    stuck = threading.Thread(target=release.wait, name="stuck-reader", daemon=True)
    stuck.start()
    coord.request_stop()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="threads still running: stuck-reader"):
        coord.join([stuck], stop_grace_period_secs=0.1)
    assert time.monotonic() - start < 5
    coord.clear_stop()
    coord.request_stop()
    coord.join([stuck], stop_grace_period_secs=0.05, ignore_live_threads=True)
    release.set()


def test_looper_thread_calls_its_target_on_a_timer_until_the_stop():
    coord = tf.train.Coordinator()
    ticks = []
    looper = tf.train.LooperThread.loop(coord, 0.01, ticks.append, args=["tick"])
    _wait_for(lambda: len(ticks) >= 5)
    coord.request_stop()
    coord.join()
    assert not looper.is_alive() and set(ticks) == {"tick"}

    class Counter(tf.train.LooperThread):
        def __init__(self, coord):
            super().__init__(coord, None)
            self.events = []

        def start_loop(self):
            self.events.append("start")

        def run_loop(self):
            self.events.append("run")
            if self.events.count("run") == 3:
                self._coord.request_stop()

        def stop_loop(self):
            self.events.append("stop")

    coord = tf.train.Coordinator()
    counter = Counter(coord)
    counter.start()
    coord.join()
    assert counter.events == ["start", "run", "run", "run", "stop"]
    with pytest.raises(ValueError, match="'coord' argument must be a Coordinator"):
        tf.train.LooperThread(object(), 1.0)
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        tf.train.LooperThread(tf.train.Coordinator(), 1.0, args=[1])
