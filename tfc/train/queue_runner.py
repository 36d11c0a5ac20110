"""`tf.train.QueueRunner`, `add_queue_runner`, `start_queue_runners` (also under their
`tf.train.queue_runner` module names): threads that run a queue's enqueue ops over and over,
each its own Session.run (tfc's sessions run concurrent steps), until the input runs out or a
Coordinator asks them to stop.

As in TF1: each enqueue op gets a thread; when the queue-closed exceptions (OutOfRangeError:
an input producer's epochs are over) end the last of them, the runner closes its queue, so the
consumers take what is left and then see OutOfRangeError. With a coordinator, one more thread
waits for the stop request and cancels the pending enqueues (close(cancel_pending_enqueues)),
and any other error stops the coordinator, which re-raises it from join().
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import tfc.logging as tf_logging
from tfc.ir import errors
from tfc.ir.graph import GraphKeys, Operation, add_to_collection, default_session
from tfc.train.coordinator import Coordinator

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]


class QueueRunner:
    """Runs `enqueue_ops` of `queue` in threads (create_threads); `close_op` (default
    queue.close()) is run when they are done, `cancel_op` (default
    queue.close(cancel_pending_enqueues=True)) when the coordinator stops."""

    def __init__(
        self,
        queue: Any = None,
        enqueue_ops: Sequence[Operation] | None = None,
        close_op: Operation | None = None,
        cancel_op: Operation | None = None,
        queue_closed_exception_types: Sequence[type] | None = None,
        queue_runner_def: Any = None,
        import_scope: str | None = None,
    ) -> None:
        if queue_runner_def is not None:
            raise NotImplementedError(
                "QueueRunner(queue_runner_def=...) rebuilds a runner from its protocol buffer, "
                "which tfc's meta graph files do not hold; build the runner from the queue"
            )
        if queue is None or not enqueue_ops:
            raise ValueError("Queue and enqueue_ops must be specified.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        if not types or not all(
            isinstance(t, type) and issubclass(t, errors.OpError) for t in types
        ):
            raise TypeError(
                "queue_closed_exception_types, when provided, must be a tuple of tf.error "
                f"types, but saw: {queue_closed_exception_types}"
            )
        self._queue_closed_exception_types = types
        self._lock = threading.Lock()
        # per session: the enqueue threads still running
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._exceptions_raised: list[BaseException] = []

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> list[Operation]:
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Operation:
        return self._close_op

    @property
    def cancel_op(self) -> Operation:
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type, ...]:
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """The exceptions the threads raised when they ran without a coordinator."""
        return list(self._exceptions_raised)

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess: Any, enqueue_op: Operation, coord: Coordinator | None) -> None:
        """One thread: run `enqueue_op` until the queue closes or a stop is requested."""
        decremented = False
        try:
            while not (coord is not None and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._queue_closed_exception_types:
                    with self._lock:  # the last thread to see its input end closes the queue
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception as e:  # noqa: BLE001 - as TF: logged, not raised
                            tf_logging.debug("Ignored exception: %s", e)
                    return
        except Exception as e:  # noqa: BLE001 - handed to the coordinator (or kept), as TF
            if coord is not None:
                coord.request_stop(e)
            else:
                tf_logging.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess: Any, coord: Coordinator) -> None:
        """Wait for the stop request, then cancel the enqueues still waiting for room."""
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception as e:  # noqa: BLE001 - as TF: the session may be closed already
            tf_logging.debug("Ignored exception: %s", e)

    def create_threads(
        self,
        sess: Any,
        coord: Coordinator | None = None,
        daemon: bool = False,
        start: bool = False,
    ) -> list[threading.Thread]:
        """The threads running the enqueue ops in `sess` (plus, with `coord`, the one that
        cancels them at the stop request), registered with `coord`; none when this runner's
        threads already run in `sess`."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(
                target=self._run,
                args=(sess, op, coord),
                name=f"QueueRunnerThread-{self.name}-{op.name}-{i}",
                daemon=daemon,
            )
            for i, op in enumerate(self._enqueue_ops)
        ]
        if coord is not None:
            threads.append(
                threading.Thread(
                    target=self._close_on_stop,
                    args=(sess, coord),
                    name=f"QueueRunnerThread-{self.name}",
                    daemon=daemon,
                )
            )
        for thread in threads:
            if coord is not None:
                coord.register_thread(thread)
            if start:
                thread.start()
        return threads


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Add `qr` to the graph's collection (what start_queue_runners starts)."""
    add_to_collection(collection, qr)


def start_queue_runners(
    sess: Any = None,
    coord: Coordinator | None = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = GraphKeys.QUEUE_RUNNERS,
) -> list[threading.Thread]:
    """Start the threads of every queue runner of the collection in `sess` (default: the
    default session); returns them."""
    if sess is None:
        try:
            sess = default_session("start queue runners")
        except ValueError:
            raise ValueError(
                "Cannot start queue runners: No default session is registered. Use `with "
                "sess.as_default()` or pass an explicit session to "
                "tf.start_queue_runners(sess=sess)"
            ) from None
    if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
        return []  # it started the graph's queue runners itself, as TF's does
    if not hasattr(sess, "run") or not hasattr(sess, "graph"):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    runners = sess.graph.get_collection(collection)
    if not runners:
        tf_logging.warning(
            "`tf.train.start_queue_runners()` was called when no queue runners were defined. "
            "You can safely remove the call to this deprecated function."
        )
    threads = []
    for runner in runners:
        threads.extend(runner.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
