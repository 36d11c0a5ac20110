"""`tf.train.MonitoredSession` and `MonitoredTrainingSession`: a training loop's session that
initializes or restores the model, runs the hooks around every step, coordinates the loop's
threads, and makes a new session (restored from the latest checkpoint) when one is lost."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable
from typing import Any

import tfc.logging as tf_logging
from tfc.client.session import Session
from tfc.ir import errors
from tfc.ir.graph import Graph, GraphKeys, get_default_graph
from tfc.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    StepCounterHook,
    SummarySaverHook,
)
from tfc.train.coordinator import Coordinator
from tfc.train.scaffold import Scaffold
from tfc.train.session_run_hook import HookedSession, SessionRunHook
from tfc.training.session_manager import SessionManager

__all__ = [
    "ChiefSessionCreator",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "SessionCreator",
    "SingularMonitoredSession",
    "WorkerSessionCreator",
]

# a task of the session was lost (a restarted peer): a new session continues from a checkpoint
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


class _UseDefault:
    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT: Any = _UseDefault()


class SessionCreator(abc.ABC):
    """Makes the tf.Session a monitored session runs."""

    @abc.abstractmethod
    def create_session(self) -> Session: ...


class ChiefSessionCreator(SessionCreator):
    """The chief's session: the scaffold finalized, then restored from `checkpoint_dir`'s
    latest checkpoint (or `checkpoint_filename_with_path`) or initialized by its init_op and
    init_fn (SessionManager.prepare_session)."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
    ) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).prepare_session(
            self._master,
            saver=scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config,
            init_op=scaffold.init_op,
            init_feed_dict=scaffold.init_feed_dict,
            init_fn=scaffold.init_fn,
        )


class WorkerSessionCreator(SessionCreator):
    """A non-chief worker's session: one the local init op alone makes ready (TF1 waits up to
    `max_wait_secs` for the chief to initialize the rest; see SessionManager.wait_for_session
    for why tfc does not)."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        max_wait_secs: float = 30 * 60,
    ) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs
        )


def _session_manager(scaffold: Scaffold) -> SessionManager:
    return SessionManager(
        local_init_op=scaffold.local_init_op,
        local_init_feed_dict=scaffold.local_init_feed_dict,
        ready_op=scaffold.ready_op,
        ready_for_local_init_op=scaffold.ready_for_local_init_op,
        graph=get_default_graph(),
    )


class _CoordinatedSession:
    """One tf.Session with the hooks around its runs and the coordinator of the loop's threads:
    it should stop once a hook or a thread asked, and a thread's error is raised here."""

    def __init__(self, session: Session, hooks: list, coord: Coordinator, grace: float) -> None:
        self.session = session
        self._hooked = HookedSession(session, hooks)
        self._coord = coord
        self._grace = grace

    def check_stop(self) -> bool:
        self._coord.raise_requested_exception()
        return self._coord.should_stop() or self._hooked.should_stop()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._hooked.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as original:
            # a thread's error explains a failed run better than the run's own
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:
                raise original from None
            raise

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._grace, ignore_live_threads=True)
        finally:
            self.session.close()


class _CoordinatedSessionCreator:
    """Makes a _CoordinatedSession: the session, a new coordinator, the graph's queue runners
    started, then every hook's after_create_session."""

    def __init__(self, creator: SessionCreator, hooks: list, grace: float) -> None:
        self._creator = creator
        self._hooks = hooks
        self._grace = grace
        self.tf_sess: Session | None = None
        self.coord: Coordinator | None = None

    def create_session(self) -> _CoordinatedSession:
        self.tf_sess = self._creator.create_session()
        self.coord = Coordinator(clean_stop_exception_types=[])
        # queue runners (TF's QueueRunner API: create_threads) feed the queues of the graph
        for runner in self.tf_sess.graph.get_collection(GraphKeys.QUEUE_RUNNERS):
            runner.create_threads(self.tf_sess, coord=self.coord, daemon=True, start=True)
        for hook in self._hooks:
            hook.after_create_session(self.tf_sess, self.coord)
        return _CoordinatedSession(self.tf_sess, self._hooks, self.coord, self._grace)


class _RecoverableSession:
    """A coordinated session that is made again (the model restored from the latest
    checkpoint) whenever a run fails with AbortedError or UnavailableError."""

    def __init__(self, creator: _CoordinatedSessionCreator) -> None:
        self._creator = creator
        self._sess: _CoordinatedSession | None = self._create()

    def _create(self) -> _CoordinatedSession:
        while True:
            try:
                return self._creator.create_session()
            except _PREEMPTION_ERRORS as e:
                tf_logging.info("An error was raised while a session was being created: %s", e)

    def _recreate_after(self, e: Exception) -> None:
        tf_logging.info("An error was raised; the session is closed and a new one created: %s", e)
        self.close()

    def check_stop(self) -> bool:
        if self._sess is None:
            return True
        try:
            return self._sess.check_stop()
        except _PREEMPTION_ERRORS as e:
            self._recreate_after(e)
            self._sess = self._create()
            return False
        except Exception:  # noqa: BLE001 - the error is raised again when the session closes
            return True

    def run(self, *args: Any, **kwargs: Any) -> Any:
        while True:
            try:
                if self._sess is None:
                    self._sess = self._create()
                return self._sess.run(*args, **kwargs)
            except _PREEMPTION_ERRORS as e:
                self._recreate_after(e)

    def run_step_fn(self, step_fn: Callable) -> Any:
        while True:
            try:
                if self._sess is None:
                    self._sess = self._create()
                return step_fn(_StepContext(self._sess.session, self._sess.run))
            except _PREEMPTION_ERRORS as e:
                self._recreate_after(e)

    def close(self) -> None:
        if self._sess is not None:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                tf_logging.error("An error occurred when closing the session: %s", e)
            finally:
                self._sess = None


class _StepContext:
    """What a step function gets: the raw session, a run with the hooks, and a way to stop."""

    def __init__(self, session: Session, run_with_hooks_fn: Callable[..., Any]) -> None:
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self) -> Session:
        """The tf.Session itself: its runs skip the hooks."""
        return self._session

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self) -> None:
        """End the loop: the step function stops here, and should_stop() turns true."""
        raise StopIteration("step_fn has requested the iterations to stop.")


class _MonitoredSession:
    """The loop's session: hooks begun at construction, a session created (recoverable or not),
    ended and closed by close() or the end of a `with` block (where OutOfRangeError and
    StopIteration end the loop cleanly)."""

    StepContext = _StepContext

    def __init__(
        self,
        session_creator: SessionCreator | None,
        hooks: list[SessionRunHook] | None,
        should_recover: bool,
        stop_grace_period_secs: float = 120,
    ) -> None:
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = _CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs
        )
        self._sess: Any = (
            _RecoverableSession(self._coordinated_creator)
            if should_recover
            else _OneSession(self._coordinated_creator.create_session())
        )

    @property
    def graph(self) -> Graph | None:
        sess = self._tf_sess()
        return None if sess is None else sess.graph

    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """Session.run with every hook around it."""
        if self._sess is None:
            raise RuntimeError("Run called on a closed MonitoredSession.")
        return self._sess.run(
            fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata
        )

    def run_step_fn(self, step_fn: Callable[[Any], Any]) -> Any:
        """step_fn(step_context): a step of the caller's own, which may run the raw session
        (step_context.session), run with the hooks (step_context.run_with_hooks) and stop the
        loop (step_context.request_stop())."""
        names = _positional_parameters(step_fn)
        if names not in (("step_context",), ("self", "step_context")):
            raise ValueError(
                "`step_fn` may either have one `step_context` argument, or `self` and "
                "`step_context` arguments if it's an instance method. Got "
                f"{names} instead."
            )
        if self._sess is None:
            raise RuntimeError("run_step_fn called on a closed MonitoredSession.")
        return self._sess.run_step_fn(step_fn)

    def should_stop(self) -> bool:
        return self._sess is None or self._sess.check_stop()

    def close(self) -> None:
        self._close_internal()

    def __enter__(self) -> _MonitoredSession:
        return self

    def __exit__(self, exception_type: Any, exception_value: Any, traceback: Any) -> bool:
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None  # the clean ends of a loop are swallowed

    def _close_internal(self, exception_type: Any = None) -> None:
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None

    def _tf_sess(self) -> Session | None:
        return self._coordinated_creator.tf_sess


class _OneSession:
    """A coordinated session that is not made again (SingularMonitoredSession's)."""

    def __init__(self, sess: _CoordinatedSession) -> None:
        self._sess = sess

    def check_stop(self) -> bool:
        try:
            return self._sess.check_stop()
        except Exception:  # noqa: BLE001 - the error is raised again when the session closes
            return True

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn: Callable) -> Any:
        return step_fn(_StepContext(self._sess.session, self._sess.run))

    def close(self) -> None:
        self._sess.close()


def _positional_parameters(fn: Callable) -> tuple[str, ...]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds)


class MonitoredSession(_MonitoredSession):
    """A session for training loops (`session_creator` default: ChiefSessionCreator()):

        with tf.train.MonitoredSession(session_creator=..., hooks=[...]) as sess:
            while not sess.should_stop():
                sess.run(train_op)

    It calls each hook's begin() now, after_create_session() once the session is ready,
    before_run()/after_run() around every run, and end() when it closes without error. A run
    that fails with AbortedError or UnavailableError makes a new session, restored from the
    latest checkpoint.
    """

    def __init__(
        self,
        session_creator: SessionCreator | None = None,
        hooks: list[SessionRunHook] | None = None,
        stop_grace_period_secs: float = 120,
    ) -> None:
        super().__init__(session_creator, hooks, True, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession of the chief that is never made again, with its tf.Session at hand
    (raw_session())."""

    def __init__(
        self,
        hooks: list[SessionRunHook] | None = None,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        stop_grace_period_secs: float = 120,
        checkpoint_filename_with_path: str | None = None,
    ) -> None:
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(creator, hooks, False, stop_grace_period_secs)

    def raw_session(self) -> Session | None:
        return self._tf_sess()


def MonitoredTrainingSession(  # noqa: N802 - TF1's name for this factory
    master: str = "",
    is_chief: bool = True,
    checkpoint_dir: str | None = None,
    scaffold: Scaffold | None = None,
    hooks: list[SessionRunHook] | None = None,
    chief_only_hooks: list[SessionRunHook] | None = None,
    save_checkpoint_secs: Any = USE_DEFAULT,
    save_summaries_steps: Any = USE_DEFAULT,
    save_summaries_secs: Any = USE_DEFAULT,
    config: Any = None,
    stop_grace_period_secs: float = 120,
    log_step_count_steps: int | None = 100,
    max_wait_secs: float = 7200,
    save_checkpoint_steps: Any = USE_DEFAULT,
    summary_dir: str | None = None,
    save_graph_def: bool = True,
) -> MonitoredSession:
    """A MonitoredSession for training, with TF1's standard hooks.

    The chief (`is_chief`) initializes the model or restores it from `checkpoint_dir`'s latest
    checkpoint, and runs `chief_only_hooks`, a StepCounterHook logging the global steps per
    second every `log_step_count_steps` steps (with a checkpoint or summary directory), and a
    CheckpointSaverHook saving into `checkpoint_dir` every `save_checkpoint_secs` seconds
    (default 600) or `save_checkpoint_steps` steps, then `hooks`. Other workers take a session
    their local init op makes ready (WorkerSessionCreator) and run `hooks` only.

    With a `summary_dir` (default: `checkpoint_dir`) the chief also writes event files there:
    the step rate (StepCounterHook) and, every `save_summaries_steps` steps (default 100) or
    `save_summaries_secs` seconds, the scaffold's summary op (SummarySaverHook; by default every
    summary of the graph merged). The hooks need a global step.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        worker = WorkerSessionCreator(
            scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs
        )
        return MonitoredSession(worker, hooks or [], stop_grace_period_secs)
    all_hooks: list[SessionRunHook] = list(chief_only_hooks or [])
    chief = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config
    )
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(
                StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps)
            )
        if (save_summaries_steps and save_summaries_steps > 0) or (
            save_summaries_secs and save_summaries_secs > 0
        ):
            all_hooks.append(
                SummarySaverHook(
                    scaffold=scaffold,
                    save_steps=save_summaries_steps,
                    save_secs=save_summaries_secs,
                    output_dir=summary_dir,
                )
            )
    saving = (save_checkpoint_secs and save_checkpoint_secs > 0) or (
        save_checkpoint_steps and save_checkpoint_steps > 0
    )
    if checkpoint_dir and saving:
        all_hooks.append(
            CheckpointSaverHook(
                checkpoint_dir,
                save_steps=save_checkpoint_steps,
                save_secs=save_checkpoint_secs,
                scaffold=scaffold,
                save_graph_def=save_graph_def,
            )
        )
    all_hooks.extend(hooks or [])
    return MonitoredSession(chief, all_hooks, stop_grace_period_secs)
