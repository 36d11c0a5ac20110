"""tf.train's session-run hooks, run around a plain Session as an Estimator runs them."""

import logging
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.train.session_run_hook import HookedSession


@pytest.fixture
def tfc_log():
    """The messages tfc logs at INFO level and above while the test runs."""
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    logger = logging.getLogger("tfc")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


def _counter_graph():
    """A global step, a train op that advances it, and x = 10 * step read after the update."""
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    with tf.control_dependencies([train]):
        x = tf.cast(step.read_value(), tf.float32) * 10.0
    return step, train, x


def _run(hooks, fetches, steps=100, feed_dict=None):
    """Begin, open a session, initialize, then run until a hook stops (at most `steps`)."""
    for hook in hooks:
        hook.begin()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for hook in hooks:
        hook.after_create_session(sess, None)
    hooked = HookedSession(sess, hooks)
    results = []
    while not hooked.should_stop() and len(results) < steps:
        results.append(hooked.run(fetches, feed_dict))
    for hook in hooks:
        hook.end(sess)
    sess.close()
    return results


class Recorder(tf.train.SessionRunHook):
    def __init__(self, fetch):
        self.fetch, self.calls, self.values = fetch, [], []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs(self.fetch)

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.values.append(run_values.results)
        if len(self.values) == 3:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_hooked_session_adds_each_hooks_fetches_and_feeds():
    step, train, x = _counter_graph()
    y = tf.placeholder(tf.float32, [])
    recorder = Recorder({"x": x, "doubled": y * 2})
    feeder = tf.train.FeedFnHook(lambda: {y: 4.0})
    results = _run([recorder, feeder], train)
    assert results == [1, 2, 3]  # the caller's fetch, until the recorder stops the loop
    assert recorder.values == [{"x": 10.0, "doubled": 8.0}, {"x": 20.0, "doubled": 8.0}] + [
        {"x": 30.0, "doubled": 8.0}
    ]
    assert recorder.calls == ["begin", "after_create_session"] + [
        "before_run",
        "after_run",
    ] * 3 + ["end"]
    with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
        _run([tf.train.FeedFnHook(lambda: {y: 1.0})], train, feed_dict={y: 2.0})
    with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks"):
        _run([tf.train.FeedFnHook(lambda: {y: 1.0}), tf.train.FeedFnHook(lambda: {y: 2.0})], x)


def test_stop_at_step_hook():
    step, train, _ = _counter_graph()
    assert len(_run([tf.train.StopAtStepHook(last_step=4)], train)) == 4
    assert len(_run([tf.train.StopAtStepHook(num_steps=2)], train)) == 2
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        tf.train.StopAtStepHook(1, 2)
    tf.reset_default_graph()
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        tf.train.StopAtStepHook(num_steps=1).begin()


def test_logging_tensor_hook(tfc_log):
    step, train, x = _counter_graph()
    every_two = tf.train.LoggingTensorHook({"x": x}, every_n_iter=2)
    at_end = tf.train.LoggingTensorHook({"step": step.value(), "x10": x.name}, at_end=True)
    _run([every_two, tf.train.StopAtStepHook(last_step=5)], train)
    assert [m.split(" (")[0] for m in tfc_log] == ["x = 10.0", "x = 30.0", "x = 50.0"]
    assert " sec)" in tfc_log[1] and " sec)" not in tfc_log[0]  # the time since the last one
    tfc_log.clear()
    tf.reset_default_graph()
    step, train, x = _counter_graph()
    at_end = tf.train.LoggingTensorHook({"step": step.value()}, at_end=True)
    _run([at_end, tf.train.StopAtStepHook(last_step=3)], train)
    assert tfc_log == ["step = 3"]
    tfc_log.clear()
    formatted = tf.train.LoggingTensorHook([x.name], at_end=True, formatter=lambda v: f"got {v}")
    _run([formatted, tf.train.StopAtStepHook(num_steps=2)], train)
    # a new session: 2 steps, and the end's run of x takes a third
    assert tfc_log == [f"got {{'{x.name}': np.float32(30.0)}}"]
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        tf.train.LoggingTensorHook([x])
    with pytest.raises(ValueError, match="invalid every_n_iter=0"):
        tf.train.LoggingTensorHook([x], every_n_iter=0)


def test_checkpoint_saver_hook_and_listeners(tmp_path):
    step, train, _ = _counter_graph()
    calls = []

    class Listener(tf.train.CheckpointSaverListener):
        def begin(self):
            calls.append("begin")

        def before_save(self, session, global_step_value):
            calls.append(("before", global_step_value))

        def after_save(self, session, global_step_value):
            calls.append(("after", global_step_value))
            return global_step_value >= 4  # then stop training

        def end(self, session, global_step_value):
            calls.append(("end", global_step_value))

    saver = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[Listener()])
    assert len(_run([saver], train)) == 4  # the save at step 4 stopped the loop
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [Path(p).name for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-0",
        "model.ckpt-2",
        "model.ckpt-4",
    ]
    saves = [(when, s) for s in (0, 2, 4) for when in ("before", "after")]
    assert calls == ["begin", *saves, ("end", 4)]
    assert tf.train.load_variable(str(tmp_path), "global_step") == 4
    # the end saves the last step when the timer has not just saved it
    tf.reset_default_graph()
    step, train, _ = _counter_graph()
    _run([tf.train.CheckpointSaverHook(str(tmp_path / "b"), save_steps=10)], train, steps=3)
    assert Path(tf.train.latest_checkpoint(str(tmp_path / "b"))).name == "model.ckpt-3"
    with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided"):
        tf.train.CheckpointSaverHook(str(tmp_path))


def test_nan_tensor_hook_raises_or_stops():
    step, train, _ = _counter_graph()
    with tf.control_dependencies([train]):
        loss = tf.log(tf.cast(3 - step.read_value(), tf.float32) - 0.5)  # NaN from step 3
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        _run([tf.train.NanTensorHook(loss)], train)
    tf.reset_default_graph()
    step, train, _ = _counter_graph()
    with tf.control_dependencies([train]):
        loss = tf.log(tf.cast(3 - step.read_value(), tf.float32) - 0.5)
    assert len(_run([tf.train.NanTensorHook(loss, fail_on_nan_loss=False)], train)) == 3


def test_final_ops_hook_and_step_counter(tfc_log, tmp_path):
    step, train, x = _counter_graph()
    final = tf.train.FinalOpsHook({"step": step})
    counter = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
    _run([final, counter, tf.train.StopAtStepHook(last_step=5)], train)
    assert final.final_ops_values == {"step": 5}
    assert sum(m.startswith("global_step/sec: ") for m in tfc_log) == 2  # at steps 2 and 4
    # the rate is also a summary, written where output_dir says (TF1's tag: "<step op>/sec")
    tf.summary.FileWriterCache.get(str(tmp_path)).flush()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    rates = [(e.step, v.tag, v.simple_value) for e in tf.train.summary_iterator(path)
             if e.HasField("summary") for v in e.summary.value]  # fmt: skip
    assert [(s, tag) for s, tag, _ in rates] == [(2, f"{step.op.name}/sec"), (4, "global_step/sec")]
    assert all(rate > 0 for _, _, rate in rates)
    tf.summary.FileWriterCache.clear()


def test_second_or_step_timer():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0) and timer.last_triggered_step() is None
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(0) and not timer.should_trigger_for_step(2)
    assert timer.should_trigger_for_step(3)
    elapsed_secs, elapsed_steps = timer.update_last_triggered_step(4)
    assert elapsed_steps == 4 and elapsed_secs >= 0
    seconds = tf.train.SecondOrStepTimer(every_secs=0)
    seconds.update_last_triggered_step(1)
    assert seconds.should_trigger_for_step(2) and not seconds.should_trigger_for_step(1)
    with pytest.raises(ValueError, match="Can not provide both every_secs and every_steps"):
        tf.train.SecondOrStepTimer(1, 1)
    np.testing.assert_equal(timer.last_triggered_step(), 4)
