"""The readers of a session: where each is in its work, and what its ops do when a run has them.

A reader (tfc/ops/readers.py) holds the file it is reading (its work), the records of that
file still to come, and two counts. A read takes the next record, taking the next file name
from the reader's queue when the current file is done, as TF's ReaderBase does; the key is
"file:position" (tfc/io/record_files.py). The reads run before the run's compiled program,
with the queue's dequeues (tfc/client/queue_runs.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from tfc.backend.native_queue import NativeQueue
from tfc.io.record_files import file_records
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ops.readers import ReaderSpec

__all__ = ["Readers"]


class _Reader:
    def __init__(self, spec: ReaderSpec) -> None:
        self.spec = spec
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.work: str | None = None
        self.records: Iterator[tuple[int | None, bytes]] | None = None
        self.produced = 0
        self.completed = 0

    def _next_work(self, queue: NativeQueue, deadline_ns: int, op: Any) -> None:
        (name,) = queue.dequeue(None, False, False, deadline_ns, op)
        self.work = bytes(np.asarray(name)[()]).decode("utf-8", "surrogateescape")
        self.records = file_records(self.work, self.spec.format)

    def _key(self, position: int | None) -> bytes:
        assert self.work is not None
        key = self.work if position is None else f"{self.work}:{position}"
        return key.encode("utf-8", "surrogateescape")

    def read(
        self, queue: NativeQueue, limit: int, deadline_ns: int, op: Any
    ) -> tuple[list[bytes], list[bytes]]:
        """Up to `limit` records; fewer when a file ends after some were read, or when the
        queue closes after some were read. None read from a closed queue: OutOfRangeError."""
        keys: list[bytes] = []
        values: list[bytes] = []
        while len(keys) < limit:
            if self.records is None:
                try:
                    self._next_work(queue, deadline_ns, op)
                except errors.OutOfRangeError:
                    if keys:
                        break
                    raise
            assert self.records is not None
            try:
                while len(keys) < limit:
                    position, data = next(self.records)
                    keys.append(self._key(position))
                    values.append(data)
            except StopIteration:
                self.records, self.work = None, None
                self.completed += 1
                if keys:
                    break
            except errors.OpError as e:
                # a file that cannot be read fails the op, and the reader moves on from it
                self.records, self.work = None, None
                raise type(e)(None, op, e.message) from None
        self.produced += len(keys)
        return keys, values


def _strings(items: list[bytes], shape: tuple) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return _dt.string_array(array.reshape(shape))


class Readers:
    """The readers of one session (or interpreter), made on first use."""

    def __init__(self) -> None:
        self._readers: dict[tuple, _Reader] = {}
        self._lock = threading.Lock()

    def _reader(self, spec: ReaderSpec) -> _Reader:
        key = (spec.container, spec.op)
        with self._lock:
            reader = self._readers.get(key)
            if reader is None or reader.spec != spec:
                reader = self._readers[key] = _Reader(spec)
            return reader

    def run(
        self, op_type: str, attrs: dict, queue: NativeQueue | None, deadline_ns: int, op: Any
    ) -> list[np.ndarray]:
        """The outputs of reader op `op_type` (a node with `attrs`) run now."""
        reader = self._reader(ReaderSpec.of(attrs))
        with reader.lock:
            if op_type == "ReaderNumRecordsProducedV2":
                return [np.array(reader.produced, dtype=np.int64)]
            if op_type == "ReaderNumWorkUnitsCompletedV2":
                return [np.array(reader.completed, dtype=np.int64)]
            if op_type == "ReaderResetV2":
                reader.reset()
                return []
            assert queue is not None
            if op_type == "ReaderReadV2":
                keys, values = reader.read(queue, 1, deadline_ns, op)
                return [_strings(keys, ()), _strings(values, ())]
            keys, values = reader.read(queue, attrs["num_records"], deadline_ns, op)
            return [_strings(keys, (len(keys),)), _strings(values, (len(values),))]
