"""`tf.train.Coordinator` and `LooperThread`: threads of a training loop asking each other to stop
and handing the first error to the thread that joins them."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import tfc.logging as tf_logging
from tfc.ir import errors

__all__ = ["Coordinator", "LooperThread"]


class Coordinator:
    """Stop requests shared by threads, and the first exception one of them reported.

    request_stop(ex) records `ex` (an exception, or a sys.exc_info() tuple) unless it is one of
    `clean_stop_exception_types` (default: OutOfRangeError, the end of the input), which stop
    cleanly. join() waits for the threads, then raises that exception.
    """

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None) -> None:
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: tuple | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _exception_of(self, ex: Any) -> BaseException | None:
        return ex[1] if isinstance(ex, tuple) else ex

    def request_stop(self, ex: Any = None) -> None:
        """Ask every thread to stop; the first non-clean `ex` is raised again by join()."""
        with self._lock:
            if isinstance(self._exception_of(ex), self._clean_stop_exception_types):
                ex = None
            if self._joined and ex is not None:
                # nobody joins any more: the error is the caller's to handle
                raise self._exception_of(ex)  # type: ignore[misc]
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    self._exc_info_to_raise = ex
                else:
                    self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                tf_logging.info("Error reported to Coordinator: %s", ex)
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Forget the stop request and its exception, so that threads may run again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A block whose exception (any, SystemExit included) becomes a stop request."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - every exception is reported, as in TF1
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Wait until a stop is requested (at most `timeout` seconds); whether one was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._registered_threads.add(thread)

    def join(
        self,
        threads: Iterable[threading.Thread] | None = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Wait for `threads` and the registered ones: until they end or a stop is requested,
        then up to `stop_grace_period_secs` more. Raises the reported exception, else a
        RuntimeError naming threads still alive (unless `ignore_live_threads`)."""
        with self._lock:
            waited = list(self._registered_threads.union(threads or ()))
        while any(t.is_alive() for t in waited) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        pause = 0.001
        while any(t.is_alive() for t in waited) and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(2 * pause, max(deadline - time.monotonic(), 0.001))
        stragglers = [t.name for t in waited if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise[1]
            if stragglers:
                message = f"Coordinator stopped with threads still running: {' '.join(stragglers)}"
                if not ignore_live_threads:
                    raise RuntimeError(message)
                tf_logging.info(message)

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the reported exception now, if there is one."""
        with self._lock:
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise[1]


class LooperThread(threading.Thread):
    """A daemon thread that calls `target(*args, **kwargs)` (or its run_loop()) every
    `timer_interval_secs` seconds, or back to back when that is None, until `coord` is asked
    to stop; an exception it raises becomes the coordinator's."""

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any] | None = None,
        args: Any = None,
        kwargs: dict | None = None,
    ) -> None:
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__(daemon=True)
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._loop_target = target
        self._loop_args = tuple(args or ())
        self._loop_kwargs = dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any],
        args: Any = None,
        kwargs: dict | None = None,
    ) -> LooperThread:
        """A started LooperThread calling `target`."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.monotonic()
                while not self._coord.wait_for_stop(max(next_time - time.monotonic(), 0)):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once in the thread before the first run_loop()."""

    def stop_loop(self) -> None:
        """Called once in the thread after the last run_loop()."""

    def run_loop(self) -> None:
        """One iteration: calls the target."""
        if self._loop_target is not None:
            self._loop_target(*self._loop_args, **self._loop_kwargs)
