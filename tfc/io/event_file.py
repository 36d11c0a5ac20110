"""TensorBoard's event files: `events.out.tfevents.<time>.<host>`, a TFRecord file of Events.

The first Event of a file says its version ("brain.Event:2"); every later one carries a
Summary, a GraphDef, a SessionLog, ... with its wall time and step. `EventFileWriter` appends
Events and flushes them when `max_queue` are pending, when `flush_secs` have passed since the
last flush, on `flush()` and on `close()`; `summary_iterator` reads them back.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from tfc.io.summary_pb import Event
from tfc.io.tfrecord import encode_record, read_records

__all__ = ["FILE_VERSION", "event_file_name", "EventFileWriter", "summary_iterator"]

FILE_VERSION = "brain.Event:2"


def event_file_name(logdir: str, suffix: str = "") -> str:
    """The path of a new event file in `logdir`, named as TensorFlow names them."""
    name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}{suffix or ''}"
    return os.path.join(logdir, name)


class EventFileWriter:
    """Writes Events to a new event file in `logdir` (made when missing)."""

    def __init__(
        self,
        logdir: str | os.PathLike,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str | None = None,
    ) -> None:
        self._logdir = os.fspath(logdir)
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._suffix = filename_suffix or ""
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._file: Any = None
        self._path = ""
        self._closed = True
        self.reopen()

    def get_logdir(self) -> str:
        return self._logdir

    @property
    def path(self) -> str:
        """The event file written now (a new one after each reopen)."""
        return self._path

    def reopen(self) -> None:
        """Start a new event file, after `close()` (does nothing while open)."""
        with self._lock:
            if not self._closed:
                return
            os.makedirs(self._logdir or ".", exist_ok=True)
            path = event_file_name(self._logdir, self._suffix)
            while os.path.exists(path):  # two writers in one second: TF's names would clash
                time.sleep(0.01)
                path = event_file_name(self._logdir, self._suffix + f".{time.time_ns()}")
            self._file = open(path, "ab")  # noqa: SIM115 - open until close()
            self._path = path
            self._closed = False
            self._last_flush = time.monotonic()
            first = Event(wall_time=time.time(), file_version=FILE_VERSION)
            self._file.write(encode_record(first.SerializeToString()))
            self._file.flush()

    def add_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"add_event takes an Event, got {type(event).__name__}")
        record = encode_record(event.SerializeToString())
        with self._lock:
            if self._closed:
                return  # TF's writer drops events after close
            self._pending.append(record)
            if (
                len(self._pending) >= self._max_queue
                or time.monotonic() - self._last_flush >= self._flush_secs
            ):
                self._flush_locked()

    def _flush_locked(self) -> None:
        if self._file is None:
            return
        self._file.write(b"".join(self._pending))
        self._pending.clear()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._last_flush = time.monotonic()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._flush_locked()
            self._file.close()
            self._file = None
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed


def summary_iterator(path: str | os.PathLike) -> Iterator[Event]:
    """`tf.train.summary_iterator`: the Events of an event file, in order."""
    for data in read_records(path):
        yield Event.FromString(data)
