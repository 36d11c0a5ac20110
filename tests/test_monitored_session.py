"""TF1's training-loop API: MonitoredTrainingSession, MonitoredSession, SingularMonitoredSession,
the session creators, Scaffold and SessionManager, checked by the weights they train, the
checkpoints they write and restore, and the hooks they call."""

import os
import threading
import time

import numpy as np
import pytest

import tfc as tf
from tfc.train.checkpoint_wait import wait_for_new_checkpoint
from tfc.train.scaffold import UninitializedVariables

X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [-2.0, 1.0]], np.float32)
Y = np.array([[1.0], [2.0], [0.0], [-1.0]], np.float32)
LR = 0.05


def _model():
    """Linear least squares trained by gradient descent, with a global step."""
    w = tf.Variable(np.zeros((2, 1), np.float32), name="w")
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(X), w) - tf.constant(Y)))
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
    return w, step, train


def _weights_after(steps):
    """The weights after `steps` steps of the same gradient descent, in NumPy (float32)."""
    w = np.zeros((2, 1), np.float32)
    for _ in range(steps):
        grad = (2.0 / len(X)) * X.T @ (X @ w - Y)
        w = (w - np.float32(LR) * grad).astype(np.float32)
    return w


class Recorder(tf.train.SessionRunHook):
    """Every call a hook gets, with the global step it saw."""

    def __init__(self, name, calls, step=None):
        self.name, self.calls, self.step = name, calls, step

    def begin(self):
        self.calls.append((self.name, "begin"))

    def after_create_session(self, session, coord):
        assert isinstance(coord, tf.train.Coordinator)
        self.calls.append((self.name, "after_create_session"))

    def before_run(self, run_context):
        self.calls.append((self.name, "before_run"))
        return tf.train.SessionRunArgs(self.step) if self.step is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, "after_run", run_values.results))

    def end(self, session):
        self.calls.append((self.name, "end"))


def _checkpoint_steps(directory):
    state = tf.train.get_checkpoint_state(str(directory))
    return [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]


# -- MonitoredTrainingSession --------------------------------------------------------------------
def test_trains_saves_checkpoints_and_resumes_from_the_latest(tmp_path):
    w, step, train = _model()
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path),
        hooks=[tf.train.StopAtStepHook(last_step=7)],
        save_checkpoint_steps=3,
    ) as sess:
        while not sess.should_stop():
            sess.run(train)
    assert _checkpoint_steps(tmp_path) == [0, 3, 6, 7]  # at the start, every 3 steps, the end
    np.testing.assert_allclose(
        tf.train.load_variable(str(tmp_path), "w"), _weights_after(7), rtol=1e-5, atol=1e-6
    )

    tf.reset_default_graph()  # a new process: the same model, trained on to step 12
    w, step, train = _model()
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), hooks=[tf.train.StopAtStepHook(last_step=12)]
    ) as sess:
        assert sess.run(step) == 7
        np.testing.assert_allclose(sess.run(w), _weights_after(7), rtol=1e-5, atol=1e-6)
        while not sess.should_stop():
            sess.run(train)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-12")
    np.testing.assert_allclose(
        tf.train.load_variable(str(tmp_path), "w"), _weights_after(12), rtol=1e-5, atol=1e-6
    )


def test_hooks_chief_only_hooks_and_their_calls(tmp_path):
    w, step, train = _model()
    calls = []
    chief = Recorder("chief", calls, step)
    hook = Recorder("hook", calls)
    with tf.train.MonitoredTrainingSession(
        chief_only_hooks=[chief], hooks=[hook, tf.train.StopAtStepHook(num_steps=2)]
    ) as sess:
        assert isinstance(sess, tf.train.MonitoredSession)
        while not sess.should_stop():
            sess.run(train)
    assert [c for c in calls if c[0] == "hook"] == [
        ("hook", "begin"),
        ("hook", "after_create_session"),
        ("hook", "before_run"),
        ("hook", "after_run", None),
        ("hook", "before_run"),
        ("hook", "after_run", None),
        ("hook", "end"),
    ]
    # the chief's hook runs first and gets its fetch, the global step, in each run
    assert calls[0] == ("chief", "begin")
    assert len([c for c in calls if c[:2] == ("chief", "after_run") and c[2] in (0, 1, 2)]) == 2

    # a worker runs `hooks` only; its session is ready once the local init op ran
    tf.reset_default_graph()
    local = tf.Variable(3.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    bump = tf.assign_add(local, 1.0)
    calls = []
    with tf.train.MonitoredTrainingSession(
        is_chief=False,
        chief_only_hooks=[Recorder("chief", calls)],
        hooks=[Recorder("hook", calls)],
    ) as sess:
        assert sess.run(bump) == 4.0
    assert {c[0] for c in calls} == {"hook"}


def test_a_worker_whose_model_no_local_init_makes_ready_fails_at_once(tmp_path):
    w, step, train = _model()
    creator = tf.train.WorkerSessionCreator()  # TF1 would wait 30 minutes for a chief
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError) as raised:
        tf.train.MonitoredSession(session_creator=creator)
    assert time.monotonic() - start < 10
    message = str(raised.value)
    assert "Variables not initialized: w, global_step" in message
    assert (
        "cannot become ready by waiting" in message and "tfc compile MODEL.py --cluster" in message
    )


def test_master_is_a_local_server_or_a_cluster_worker():
    w, step, train = _model()
    server = tf.train.Server.create_local_server()
    with tf.train.MonitoredTrainingSession(master=server.target) as sess:
        sess.run(train)
        assert sess.run(step) == 1
    cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"], "worker": ["localhost:2223"]})
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    # a worker of the compiled cluster runtime (tests/test_cluster_tf1.py trains one): the ps
    # tasks initialize the variables, which it reads after its first step
    with tf.train.MonitoredTrainingSession(master=worker.target) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="variables live on the ps"):
            sess.run(w)


# -- scaffold and session manager ----------------------------------------------------------------
def test_scaffold_takes_the_graphs_pieces_and_makes_the_missing_ones():
    w, step, train = _model()
    scaffold = tf.train.Scaffold().finalize()
    assert tf.get_collection(tf.GraphKeys.INIT_OP) == [scaffold.init_op]
    assert tf.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
    assert isinstance(scaffold.ready_op, UninitializedVariables)
    assert scaffold.summary_op is None
    again = tf.train.Scaffold().finalize()  # a second scaffold finds them in the graph
    assert (again.init_op, again.saver, again.local_init_op) == (
        scaffold.init_op,
        scaffold.saver,
        scaffold.local_init_op,
    )
    tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())
    with pytest.raises(RuntimeError, match='More than one item in the collection "savers"'):
        tf.train.Scaffold().finalize()
    copied = tf.train.Scaffold(copy_from_scaffold=scaffold, init_feed_dict={})
    assert copied.saver is scaffold.saver and copied.init_feed_dict == {}
    with pytest.raises(TypeError, match="copy_from_scaffold is not a Scaffold"):
        tf.train.Scaffold(copy_from_scaffold=object())


def test_scaffold_init_fn_local_init_op_and_saver_are_used(tmp_path):
    w, step, train = _model()
    local = tf.Variable(0.0, name="runs", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    count_local = tf.assign_add(local, 1.0)
    saver = tf.train.Saver([w, step], max_to_keep=2)
    seen = []

    def init_fn(scaffold, session):
        seen.append(scaffold)
        session.write_variable("w", np.full((2, 1), 0.25, np.float32))

    scaffold = tf.train.Scaffold(init_fn=init_fn, saver=saver)
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), scaffold=scaffold, save_checkpoint_steps=1,
        hooks=[tf.train.StopAtStepHook(last_step=3)],
    ) as sess:  # fmt: skip
        assert seen == [scaffold]
        np.testing.assert_array_equal(sess.run(w), np.full((2, 1), 0.25, np.float32))
        assert sess.run(count_local) == 1.0  # the local init op set it to 0
        while not sess.should_stop():
            sess.run(train)
    assert _checkpoint_steps(tmp_path) == [2, 3]  # the scaffold's Saver keeps 2
    assert set(tf.train.load_checkpoint(str(tmp_path)).get_variable_to_shape_map()) == {
        "w",
        "global_step",
    }


def test_session_manager_prepares_recovers_and_explains(tmp_path):
    w, step, train = _model()
    tf.Variable(1.0, name="other")
    saver = tf.train.Saver()
    manager = tf.train.SessionManager(ready_op=UninitializedVariables())
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
        manager.prepare_session("")
    with pytest.raises(RuntimeError, match="not make model ready.*not initialized: other"):
        manager.prepare_session("", init_op=tf.variables_initializer([w, step]))
    sess = manager.prepare_session("", init_op=tf.global_variables_initializer())
    for _ in range(2):
        sess.run(train)
    saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    sess.close()

    recovered, ok = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert ok and recovered.run(step) == 2
    np.testing.assert_allclose(recovered.run(w), _weights_after(2), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "model.ckpt-2")
    by_file = manager.prepare_session("", saver=saver, checkpoint_filename_with_path=path)
    assert by_file.run(step) == 2
    fresh, ok = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path / "none"))
    assert not ok and fresh.initialized_variables() == set()
    waiting = tf.train.SessionManager(recovery_wait_secs=0.05)
    start = time.monotonic()
    _, ok = waiting.recover_session(
        "", saver=saver, checkpoint_dir=str(tmp_path / "none"), wait_for_checkpoint=True,
        max_wait_secs=0.2,
    )  # fmt: skip
    assert not ok and 0.2 <= time.monotonic() - start < 5
    with pytest.raises(ValueError, match="Can not provide both checkpoint_dir and"):
        manager.prepare_session(
            "", saver=saver, checkpoint_dir="a", checkpoint_filename_with_path="b"
        )
    with pytest.raises(ValueError, match="you must also pass a local_init_op"):
        tf.train.SessionManager(ready_for_local_init_op=w)
    # a ready_op tensor: empty when ready (TF1's convention)
    ready = tf.train.SessionManager(ready_op=tf.zeros([0]))
    assert ready.prepare_session("", init_op=tf.no_op()).initialized_variables() == set()
    not_ready = tf.train.SessionManager(ready_op=tf.constant([3, 4]))
    with pytest.raises(RuntimeError, match="Variables not initialized: 3, 4"):
        not_ready.prepare_session("", init_op=tf.no_op())


# -- the loop's session ----------------------------------------------------------------------------
class AbortOnce(tf.train.SessionRunHook):
    """A lost session (what a restarted parameter server causes): one AbortedError at a step."""

    def __init__(self, at_step, step):
        self.at_step, self.step, self.done, self.seen = at_step, step, False, []

    def after_run(self, run_context, run_values):
        self.seen.append(int(run_context.session.run(self.step)))  # after this run's update
        if self.seen[-1] == self.at_step and not self.done:
            self.done = True
            raise tf.errors.AbortedError(None, None, "the ps task restarted")


def test_an_aborted_session_is_made_again_from_the_latest_checkpoint(tmp_path):
    w, step, train = _model()
    abort = AbortOnce(5, step)
    creates = []

    class CountSessions(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            creates.append(int(session.run(step)))

    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
        hooks=[abort, CountSessions(), tf.train.StopAtStepHook(last_step=7)],
    ) as sess:  # fmt: skip
        while not sess.should_stop():
            sess.run(train)
    assert creates == [0, 4]  # the second session starts from the checkpoint of step 4
    assert abort.seen == [1, 2, 3, 4, 5, 5, 6, 7]  # the failed run, run again, makes step 5
    np.testing.assert_allclose(
        tf.train.load_variable(str(tmp_path), "w"), _weights_after(7), rtol=1e-5, atol=1e-6
    )
    # a SingularMonitoredSession is not made again: the error is the caller's
    tf.reset_default_graph()
    w, step, train = _model()
    abort = AbortOnce(2, step)
    with pytest.raises(tf.errors.AbortedError, match="the ps task restarted"):
        with tf.train.SingularMonitoredSession(hooks=[abort]) as sess:
            assert isinstance(sess.raw_session(), tf.Session)
            while not sess.should_stop():
                sess.run(train)


def test_run_step_fn_runs_with_or_without_hooks_and_stops(tmp_path):
    w, step, train = _model()
    calls = []
    with tf.train.MonitoredSession(hooks=[Recorder("hook", calls)]) as sess:

        def step_fn(step_context):
            step_context.session.run(train)  # no hooks
            value = step_context.run_with_hooks(step)
            if value >= 3:
                step_context.request_stop()
            return value

        values = []
        while not sess.should_stop():
            values.append(sess.run_step_fn(step_fn))
        raise AssertionError("request_stop ends the with block")  # pragma: no cover
    assert values == [1, 2]  # the third call stopped, the with block ended cleanly
    assert sum(1 for c in calls if c[1] == "before_run") == 3
    assert calls[-1] == ("hook", "end")
    with tf.train.MonitoredSession() as sess:
        with pytest.raises(ValueError, match="`step_fn` may either have one `step_context`"):
            sess.run_step_fn(lambda context: None)


def test_end_of_input_ends_the_loop_cleanly_and_errors_skip_the_hooks_end():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(3, dtype=np.float32))
    value = tf.data.make_one_shot_iterator(dataset).get_next()
    calls = []
    got = []
    with tf.train.MonitoredSession(hooks=[Recorder("hook", calls)]) as sess:
        while not sess.should_stop():
            got.append(float(sess.run(value)))
    assert got == [0.0, 1.0, 2.0]
    assert calls[-1] == ("hook", "end") and sess.should_stop()
    calls.clear()
    with pytest.raises(ZeroDivisionError):
        with tf.train.MonitoredSession(hooks=[Recorder("hook", calls)]) as sess:
            raise ZeroDivisionError
    assert ("hook", "end") not in calls
    with pytest.raises(RuntimeError, match="closed MonitoredSession"):
        sess.run(value)


def test_a_threads_error_stops_the_loop_and_is_raised():
    counter = tf.Variable(0.0, name="counter")
    bump = tf.assign_add(counter, 1.0)

    class FailingThread(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            def work():
                raise ValueError("the input thread failed")

            tf.train.LooperThread.loop(coord, None, work)

    with pytest.raises(ValueError, match="the input thread failed"):
        with tf.train.MonitoredSession(hooks=[FailingThread()]) as sess:
            deadline = time.monotonic() + 10
            while not sess.should_stop() and time.monotonic() < deadline:
                sess.run(bump)


class FeedingRunner:
    """A queue runner in TF's interface (create_threads): it writes an increasing value into a
    variable from its own thread until the coordinator stops."""

    def __init__(self, variable):
        self.variable, self.threads = variable, []

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        def feed():
            value = 0.0
            while not coord.should_stop():
                value += 1.0
                sess.write_variable(self.variable.op.name, value)
                time.sleep(0.01)

        thread = threading.Thread(target=feed, daemon=daemon)
        coord.register_thread(thread)
        if start:
            thread.start()
        self.threads.append(thread)
        return [thread]


def test_the_graphs_queue_runners_run_until_the_session_closes():
    fed = tf.Variable(0.0, name="fed")
    runner = FeedingRunner(fed)
    tf.add_to_collection(tf.GraphKeys.QUEUE_RUNNERS, runner)
    with tf.train.MonitoredSession() as sess:
        deadline = time.monotonic() + 10
        while sess.run(fed) < 3.0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sess.run(fed) >= 3.0
    assert len(runner.threads) == 1 and not runner.threads[0].is_alive()


def test_global_step_waiter_hook_holds_the_first_step():
    w, step, train = _model()
    raised = tf.assign(step, 5)

    class RaiseStepLater(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            threading.Timer(0.3, lambda: session.run(raised)).start()

    start = time.monotonic()
    with tf.train.MonitoredSession(
        hooks=[RaiseStepLater(), tf.train.GlobalStepWaiterHook(5)]
    ) as sess:
        sess.run(train)
        assert sess.run(step) == 6  # set to 5 while the first step waited, then that step
    assert time.monotonic() - start >= 0.3


def _loop_in(lib, directory):
    """Train to step 5, then (a restart) to step 8, with MonitoredTrainingSession of `lib`:
    the hook's calls, the checkpoints kept, the final weights."""
    graph = lib.Graph()
    with graph.as_default():
        w = lib.Variable(np.zeros((2, 1), np.float32), name="w")
        step = lib.train.get_or_create_global_step()
        loss = lib.reduce_mean(lib.square(lib.matmul(lib.constant(X), w) - lib.constant(Y)))
        train = lib.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
        calls = []

        class Hook(lib.train.SessionRunHook):
            def begin(self):
                calls.append("begin")

            def after_create_session(self, session, coord):
                calls.append("after_create_session")

            def before_run(self, run_context):
                calls.append("before_run")
                return lib.train.SessionRunArgs(step)

            def after_run(self, run_context, run_values):
                calls.append(("after_run", int(run_values.results)))

            def end(self, session):
                calls.append("end")

        for last in (5, 8):
            with lib.train.MonitoredTrainingSession(
                checkpoint_dir=directory, save_checkpoint_steps=2,
                hooks=[Hook(), lib.train.StopAtStepHook(last_step=last)],
                log_step_count_steps=None,
            ) as sess:  # fmt: skip
                while not sess.should_stop():
                    sess.run(train)
        state = lib.train.get_checkpoint_state(directory)
        kept = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
        return calls, kept, lib.train.load_variable(directory, "w")


def test_monitored_training_session_matches_tensorflow(tmp_path):
    """The same loop in TF and tfc: the hooks' calls, the checkpoints kept, the weights."""
    tf1 = pytest.importorskip("tensorflow").compat.v1
    want = _loop_in(tf1, str(tmp_path / "tf"))
    got = _loop_in(tf, str(tmp_path / "tfc"))
    # the order of the calls (TF's fetched global step may or may not include its run's
    # increment: its reads are not ordered after the update)
    assert [c if isinstance(c, str) else c[0] for c in got[0]] == [
        c if isinstance(c, str) else c[0] for c in want[0]
    ]
    assert got[1] == want[1]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_checkpoints_iterator_yields_each_new_checkpoint_until_the_timeout(tmp_path):
    w, step, train = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        seen = []
        for path in tf.train.checkpoints_iterator(str(tmp_path), timeout=0.5):
            seen.append(os.path.basename(path))
            if len(seen) < 3:  # the trainer writes the next one meanwhile
                sess.run(train)
                saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    assert seen == ["model.ckpt-0", "model.ckpt-1", "model.ckpt-2"]
    asked = []

    def done():
        asked.append(True)
        return len(asked) == 2  # more could come once; then the trainer is done

    start = time.monotonic()
    assert len(list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0, timeout_fn=done))) == 1
    assert asked == [True, True] and time.monotonic() - start < 5
    assert wait_for_new_checkpoint(str(tmp_path / "none"), timeout=0) is None
