"""TF1's stock session-run hooks: logging tensors, stopping at a step, saving checkpoints and
summaries, NaN checks, step rates, feeds and final ops."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.logging as tf_logging
from tfc.graphdef.export import graph_to_graph_def
from tfc.graphdef.files import write_graph
from tfc.io.summary_pb import SessionLog, Summary
from tfc.ir.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from tfc.summary.writer import FileWriterCache
from tfc.train.saver import Saver
from tfc.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from tfc.train.training_util import get_global_step

__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "FeedFnHook",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "LoggingTensorHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "SecondOrStepTimer",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
]


class SecondOrStepTimer:
    """Triggers once every `every_secs` seconds or every `every_steps` steps (one of them)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if (every_secs is None) == (every_steps is None):
            raise ValueError(
                "Either every_secs or every_steps should be provided."
                if every_secs is None
                else "Can not provide both every_secs and every_steps."
            )
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True the first time, then once the interval has passed since the last trigger."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_triggered_time + self._every_secs
        return step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Record a trigger at `step`; returns (seconds, steps) since the previous one."""
        now = time.time()
        elapsed: tuple[float | None, int | None] = (None, None)
        if self._last_triggered_time is not None:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


def _as_graph_element(obj: Any, graph: Graph) -> Tensor | Operation:
    """A tensor of `graph`, given as itself or by name ("x" meaning "x:0")."""
    if not isinstance(obj, str):
        if getattr(obj, "graph", None) is not graph:
            raise ValueError(
                f"Passed {obj} should have graph attribute that is equal to current graph."
            )
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        return element
    raise ValueError(
        f"Name {obj} is ambiguous, as this `Operation` has multiple outputs (at least 2)."
    )


def _require_global_step(hook: str) -> Tensor:
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return step


class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a dict tag -> tensor or name, or a list) at INFO level
    every `every_n_iter` steps or `every_n_secs` seconds, and/or at the end."""

    def __init__(
        self,
        tensors: Any,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict], str] | None = None,
    ) -> None:
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs must be "
                "provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._formatter = formatter
        self._log_at_end = at_end
        self._timer = (
            _NeverTriggerTimer()
            if only_at_end
            else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        )

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        graph = get_default_graph()
        self._current = {tag: _as_graph_element(t, graph) for tag, t in self._tensors.items()}

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log(self, values: dict) -> None:
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        if self._formatter is not None:
            tf_logging.info(self._formatter(values))
            return
        with np.printoptions(suppress=True):
            stats = ", ".join(f"{tag} = {values[tag]!s}" for tag in self._tag_order)
        if elapsed is not None:
            tf_logging.info("%s (%.3f sec)", stats, elapsed)
        else:
            tf_logging.info("%s", stats)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._should_trigger:
            self._log(run_values.results)
        self._iter_count += 1

    def end(self, session: Any) -> None:
        if self._log_at_end:
            self._log(session.run(self._current))


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self) -> None:
        self.reset()

    def should_trigger_for_step(self, step: int) -> bool:
        return False


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step`, or `num_steps` past its value
    when the session starts."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step = _require_global_step("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # the fetched value may predate this step's increment: check again before stopping
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around each save of a CheckpointSaverHook; after_save returning True stops
    training."""

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        pass

    def end(self, session: Any, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every `save_secs` seconds or `save_steps` steps into checkpoint_dir,
    when the session starts, and at the end (unless that step is saved already).

    The Saver is `saver`, else the `scaffold`'s (once its session creator finalized it), else
    the one of the graph's SAVERS collection, else one made at begin() that saves all global
    variables.
    """

    def __init__(
        self,
        checkpoint_dir: str,
        save_secs: float | None = None,
        save_steps: int | None = None,
        saver: Saver | None = None,
        checkpoint_basename: str = "model.ckpt",
        scaffold: Any = None,
        listeners: list[CheckpointSaverListener] | None = None,
        save_graph_def: bool = True,
    ) -> None:
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._saver = saver
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def

    def add_listeners(self, listeners: list[CheckpointSaverListener]) -> None:
        """More listeners (an Estimator adds its saving_listeners to its saver hook)."""
        self._listeners.extend(listeners)

    def begin(self) -> None:
        self._global_step = _require_global_step("CheckpointSaverHook")
        if self._saver is None and self._scaffold is None:
            savers = get_default_graph().get_collection(GraphKeys.SAVERS)
            if len(savers) > 1:
                raise RuntimeError(
                    "More than one item in collection SAVERS. Please indicate which one to use "
                    "by passing it to the constructor."
                )
            self._saver = savers[0] if savers else Saver()
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        step = int(session.run(self._global_step))
        if self._save_graph_def:
            # as TF1: the graph beside the checkpoints (the event file has it already: the
            # cached FileWriter of the directory wrote the default graph when it was made)
            graph_def = graph_to_graph_def(get_default_graph(), add_shapes=True, lenient=True)
            write_graph(graph_def, self._checkpoint_dir, "graph.pbtxt")
        self._save(session, step)  # the state the run starts from
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session: Any, step: int) -> bool:
        """Save at `step`; True when a listener asks training to stop."""
        for listener in self._listeners:
            listener.before_save(session, step)
        tf_logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        os.makedirs(self._checkpoint_dir, exist_ok=True)
        saver = self._saver if self._saver is not None else self._scaffold.saver
        saver.save(session, self._save_path, global_step=step)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step
        )
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                tf_logging.info(
                    "A CheckpointSaverListener requested that training be stopped. listener: %s",
                    listener,
                )
                stop = True
        return stop


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Raises NanLossDuringTrainingError (or, without fail_on_nan_loss, stops training) when
    `loss_tensor` is NaN."""

    def __init__(self, loss_tensor: Tensor, fail_on_nan_loss: bool = True) -> None:
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results):
            if self._fail_on_nan_loss:
                tf_logging.error("Model diverged with loss = NaN.")
                raise NanLossDuringTrainingError
            tf_logging.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Logs the global steps per second every `every_n_steps` steps or `every_n_secs` seconds,
    and writes it as the summary "<global step>/sec" with `summary_writer`, or the cached
    FileWriter of `output_dir`, when given."""

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
    ) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step = _require_global_step("StepCounterHook")
        self._summary_tag = self._global_step.op.name + "/sec"

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        step = int(run_values.results)
        if self._timer.should_trigger_for_step(step):
            elapsed_secs, elapsed_steps = self._timer.update_last_triggered_step(step)
            if elapsed_secs:
                rate = elapsed_steps / elapsed_secs
                tf_logging.info("global_step/sec: %g", rate)
                if self._summary_writer is not None:
                    summary = Summary()
                    summary.value.add(tag=self._summary_tag, simple_value=rate)
                    self._summary_writer.add_summary(summary, step)


class SummarySaverHook(SessionRunHook):
    """Runs the summary op every `save_steps` steps or `save_secs` seconds and writes what it
    gives to `summary_writer` (or the cached FileWriter of `output_dir`), with a SessionLog
    START first. The summary op is `summary_op` (a tensor or a list), else the `scaffold`'s."""

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
        scaffold: Any = None,
        summary_op: Any = None,
    ) -> None:
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step: int | None = None
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")

    def _summary_ops(self) -> list | None:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(
            self._next_step
        )
        requests: dict[str, Any] = {"global_step": self._global_step}
        ops = self._summary_ops()
        if self._request_summary and ops is not None:
            requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if not self._summary_writer:
            return
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session: Any = None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()


class FeedFnHook(SessionRunHook):
    """Feeds `feed_fn()` (a feed dict) into every run."""

    def __init__(self, feed_fn: Callable[[], dict]) -> None:
        self.feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` once at the end; their values are then `final_ops_values`."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: dict | None = None) -> None:
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values: Any = None

    @property
    def final_ops_values(self) -> Any:
        return self._final_ops_values

    def end(self, session: Any) -> None:
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops, self._final_ops_feed_dict)


class GlobalStepWaiterHook(SessionRunHook):
    """Holds the first step until the global step reaches `wait_until_step` (polling every half
    second): a worker that starts once the chief's first updates are in (TF1 staggers its
    workers this way)."""

    def __init__(self, wait_until_step: int) -> None:
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step = _require_global_step("GlobalStepWaiterHook")

    def before_run(self, run_context: SessionRunContext) -> None:
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        tf_logging.info(
            "Waiting for global step %d before starting training.", self._wait_until_step
        )
        last_logged = 0
        while True:
            step = int(run_context.session.run(self._global_step))
            if step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if step - last_logged > 1000:
                tf_logging.info(
                    "Waiting for global step %d before starting training. Current step is %d.",
                    self._wait_until_step,
                    step,
                )
                last_logged = step
            time.sleep(0.5)
