"""`tf.train.Supervisor`: TF1's older training-loop helper. It makes a session ready (restoring
the latest checkpoint of `logdir`), saves checkpoints and summaries from threads every
`save_model_secs` and `save_summaries_secs` seconds, and coordinates the loop's threads."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import tfc.logging as tf_logging
from tfc.client.session import Session
from tfc.graphdef.export import graph_to_graph_def
from tfc.io.summary_pb import SessionLog, Summary
from tfc.ir.graph import Graph, GraphKeys, get_default_graph
from tfc.ops.control import group
from tfc.summary.summary import merge_all
from tfc.summary.writer import FileWriter
from tfc.train.coordinator import Coordinator, LooperThread
from tfc.train.meta_graph_export import write_graph
from tfc.train.saver import Saver
from tfc.train.scaffold import UninitializedVariables
from tfc.train.training_util import get_global_step
from tfc.training.session_manager import SessionManager
from tfc.variables import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
)

__all__ = ["Supervisor"]


class Supervisor:
    """Initializes or restores a model for a training loop and checkpoints it periodically:

        sv = tf.train.Supervisor(logdir=path)
        with sv.managed_session() as sess:
            while not sv.should_stop():
                sess.run(train_op)

    Each USE_DEFAULT argument is taken from the graph's collection of that name, or made:
    `ready_op` an UninitializedVariables check (TF1: report_uninitialized_variables()),
    `init_op` the global variables' initializers, `local_init_op` the local ones', `saver` a
    Saver of every global variable, `global_step` the graph's. The chief (`is_chief`) restores
    the latest checkpoint of `logdir` or initializes, writes the graph to logdir/graph.pbtxt,
    and saves logdir/model.ckpt-<step> every `save_model_secs` seconds from a thread; other
    workers take a session their local init op makes ready (SessionManager.wait_for_session).
    The chief's `summary_writer` (default: a FileWriter of `logdir`; None for none) gets the
    graph, SessionLogs at start, checkpoints and stop, and every `save_summaries_secs` seconds
    the `summary_op` (default: every summary of the graph merged) and the step rate.
    """

    USE_DEFAULT = 0

    def __init__(
        self,
        graph: Graph | None = None,
        ready_op: Any = USE_DEFAULT,
        ready_for_local_init_op: Any = USE_DEFAULT,
        is_chief: bool = True,
        init_op: Any = USE_DEFAULT,
        init_feed_dict: dict | None = None,
        local_init_op: Any = USE_DEFAULT,
        logdir: str | None = None,
        summary_op: Any = USE_DEFAULT,
        saver: Any = USE_DEFAULT,
        global_step: Any = USE_DEFAULT,
        save_summaries_secs: float = 120,
        save_model_secs: float = 600,
        recovery_wait_secs: float = 30,
        stop_grace_secs: float = 120,
        checkpoint_basename: str = "model.ckpt",
        session_manager: SessionManager | None = None,
        summary_writer: Any = USE_DEFAULT,
        init_fn: Callable[[Session], Any] | None = None,
        local_init_run_options: Any = None,
    ) -> None:
        graph = graph if graph is not None else get_default_graph()
        with graph.as_default():
            self._ready_op = _default(ready_op, GraphKeys.READY_OP, UninitializedVariables)
            self._ready_for_local_init_op = (
                _first(GraphKeys.READY_FOR_LOCAL_INIT_OP)
                if ready_for_local_init_op is Supervisor.USE_DEFAULT
                else ready_for_local_init_op
            )
            self._init_op = _default(init_op, GraphKeys.INIT_OP, global_variables_initializer)
            self._local_init_op = _default(
                local_init_op, GraphKeys.LOCAL_INIT_OP, _local_variables_init
            )
            self._saver = _default(
                saver, GraphKeys.SAVERS, lambda: Saver() if global_variables() else None
            )
            self._summary_op = (
                _default(summary_op, GraphKeys.SUMMARY_OP, merge_all)
                if summary_op is Supervisor.USE_DEFAULT
                else summary_op
            )
            self._global_step = _global_step(global_step)
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._init_feed_dict = init_feed_dict
        self._local_init_run_options = local_init_run_options
        self._logdir = logdir if is_chief else None
        self._save_summaries_secs = save_summaries_secs if is_chief else None
        self._save_model_secs = save_model_secs if is_chief else None
        self._save_path = os.path.join(logdir, checkpoint_basename) if is_chief and logdir else None
        if not is_chief or summary_writer is None:
            self._summary_writer = None
        elif summary_writer is Supervisor.USE_DEFAULT:
            self._summary_writer = FileWriter(logdir) if logdir else None
        else:
            self._summary_writer = summary_writer
        self._graph_added_to_summary = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op,
            ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op,
            graph=graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options,
        )
        if not is_chief:
            for op in graph.get_operations():
                if op.type in ("Variable", "VariableV2") and not op.device:
                    raise ValueError(
                        f"When using replicas, all Variables must have their device set: {op.name}"
                    )

    # -- what it holds ---------------------------------------------------------------------------
    @property
    def is_chief(self) -> bool:
        return self._is_chief

    @property
    def session_manager(self) -> SessionManager:
        return self._session_manager

    @property
    def coord(self) -> Coordinator:
        return self._coord

    @property
    def init_op(self) -> Any:
        return self._init_op

    @property
    def init_feed_dict(self) -> dict | None:
        return self._init_feed_dict

    @property
    def ready_op(self) -> Any:
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        return self._ready_for_local_init_op

    @property
    def summary_writer(self) -> Any:
        return self._summary_writer

    @property
    def summary_op(self) -> Any:
        return self._summary_op

    @property
    def save_summaries_secs(self) -> float | None:
        return self._save_summaries_secs

    @property
    def global_step(self) -> Any:
        return self._global_step

    @property
    def saver(self) -> Saver | None:
        return self._saver

    @property
    def save_model_secs(self) -> float | None:
        return self._save_model_secs

    @property
    def save_path(self) -> str | None:
        return self._save_path

    # -- sessions --------------------------------------------------------------------------------
    def prepare_or_wait_for_session(
        self,
        master: str = "",
        config: Any = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        start_standard_services: bool = True,
    ) -> Session:
        """The chief's session restored from logdir or initialized (and the graph written, the
        checkpoint thread started), or a worker's (SessionManager.wait_for_session)."""
        self._coord.clear_stop()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master,
                init_op=self._init_op,
                saver=self._saver,
                checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs,
                config=config,
                init_feed_dict=self._init_feed_dict,
                init_fn=self._init_fn,
            )
            self._write_graph()
            if start_standard_services:
                tf_logging.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(
                master, config=config, max_wait_secs=max_wait_secs
            )
        if start_standard_services:
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(
        self,
        master: str = "",
        config: Any = None,
        start_standard_services: bool = True,
        close_summary_writer: bool = True,
    ) -> Iterator[Session]:
        """A ready session for a `with` block; at its end the threads are stopped and joined
        (an exception of the block or of a thread is raised then, except OutOfRangeError,
        which ends the loop cleanly) and the session is closed."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services
            )
            yield sess
        except Exception as e:
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    sess.close()

    def start_standard_services(self, sess: Session) -> list[LooperThread]:
        """The chief's checkpoint thread: saves every save_model_secs seconds into logdir, the
        first time at once. Nothing without a logdir."""
        if not self._is_chief:
            raise RuntimeError(
                "Only chief supervisor can start standard services. Because only chief "
                "supervisors can write events."
            )
        if not self._logdir:
            tf_logging.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        if self._summary_writer is not None:
            self._summary_writer.add_session_log(
                SessionLog(status=SessionLog.START), self._current_step(sess)
            )
        threads = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(
                    LooperThread(self._coord, self._save_summaries_secs, self._summarize, [sess])
                )
            if self._global_step is not None:
                threads.append(_StepCounter(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(
                LooperThread(self._coord, self._save_model_secs, self._checkpoint, [sess])
            )
        for thread in threads:
            thread.start()
        return threads

    def _checkpoint(self, sess: Session) -> None:
        tf_logging.info("Saving checkpoint to path %s", self._save_path)
        self._saver.save(sess, self._save_path, global_step=self._global_step)
        if self._summary_writer is not None and self._global_step is not None:
            self._summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path),
                self._current_step(sess),
            )

    def _summarize(self, sess: Session) -> None:
        if self._global_step is not None:
            summary, step = sess.run([self._summary_op, self._global_step])
        else:
            summary, step = sess.run(self._summary_op), None
        self._summary_writer.add_summary(summary, step)

    def _current_step(self, sess: Session) -> int | None:
        return None if self._global_step is None else int(sess.run(self._global_step))

    def _write_graph(self) -> None:
        """The graph to logdir/graph.pbtxt and, once, to the summary writer (TensorBoard)."""
        if not self._logdir:
            return
        graph_def = graph_to_graph_def(self._graph, add_shapes=True, lenient=True)
        write_graph(graph_def, self._logdir, "graph.pbtxt")
        if self._summary_writer is not None and not self._graph_added_to_summary:
            self._summary_writer.add_graph(None, graph_def=graph_def)
            self._graph_added_to_summary = True

    def start_queue_runners(self, sess: Session, queue_runners: list | None = None) -> list:
        """Start the threads of the queue runners (default: the graph's QUEUE_RUNNERS)."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    # -- threads ---------------------------------------------------------------------------------
    def loop(
        self,
        timer_interval_secs: float | None,
        target: Callable[..., Any],
        args: Any = None,
        kwargs: dict | None = None,
    ) -> LooperThread:
        """A started thread calling `target` every timer_interval_secs until the stop."""
        return LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)

    def stop(
        self,
        threads: list | None = None,
        close_summary_writer: bool = True,
        ignore_live_threads: bool = False,
    ) -> None:
        """Request a stop and join the threads (raising an exception one of them reported)."""
        self._coord.request_stop()
        try:
            self._coord.join(
                threads,
                stop_grace_period_secs=self._stop_grace_secs,
                ignore_live_threads=ignore_live_threads,
            )
        finally:
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Session, summary: Any, global_step: Any = None) -> None:
        """Write `summary` (a Summary or a summary op's result) at `global_step` (default:
        the global step's value)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = self._current_step(sess)
        self._summary_writer.add_summary(summary, global_step)


class _StepCounter(LooperThread):
    """Writes the global steps per second as the summary "<global step>/sec" (TF1's
    SVStepCounterThread)."""

    def __init__(self, sv: Supervisor, sess: Session) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._last_time = time.time()
        self._last_step = sv._current_step(sess) or 0
        self._tag = f"{sv.global_step.op.name}/sec"

    def run_loop(self) -> None:
        step = self._sv._current_step(self._sess) or 0
        now = time.time()
        elapsed = now - self._last_time
        if elapsed > 0:
            rate = (step - self._last_step) / elapsed
            summary = Summary()
            summary.value.add(tag=self._tag, simple_value=rate)
            self._sv.summary_writer.add_summary(summary, step)
        self._last_time, self._last_step = now, step


def _first(key: str) -> Any:
    """The first item of the default graph's collection `key`, or None."""
    items = get_default_graph().get_collection(key)
    if len(items) > 1:
        tf_logging.info("Found %d %s operations. Returning the first one.", len(items), key)
    return items[0] if items else None


def _default(given: Any, key: str, make: Callable[[], Any]) -> Any:
    """`given`, or for USE_DEFAULT the collection's first item, else make() added to it (when
    not None)."""
    if given is not Supervisor.USE_DEFAULT:
        return given
    found = _first(key)
    if found is None:
        found = make()
        if found is not None:
            get_default_graph().add_to_collection(key, found)
    return found


def _local_variables_init() -> Any:
    return group(local_variables_initializer())


def _global_step(given: Any) -> Any:
    if given is not Supervisor.USE_DEFAULT:
        return given
    try:
        step = get_global_step()
    except TypeError as e:
        tf_logging.warning("Found 'global_step' is not an int type: %s", e)
        return None
    if step is not None and not get_default_graph().get_collection(GraphKeys.GLOBAL_STEP):
        get_default_graph().add_to_collection(GraphKeys.GLOBAL_STEP, step)
    return step
