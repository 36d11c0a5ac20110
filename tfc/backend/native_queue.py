"""Native queues (runtime/src/queue/tfc_queue.c) through cffi: where a Session's tf.FIFOQueue and
its kin keep their elements, in native memory, safe across threads.

The runtime source is built once into a shared library (the build cache of tfc/backend/cc.py).
cffi releases the GIL around every call, so a thread blocked in an enqueue or a dequeue leaves
the other Python threads running.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import cffi
import numpy as np

from tfc.backend.cc import build_shared_library, runtime_dir
from tfc.ir import errors
from tfc.ir.dtypes import string_array

__all__ = [
    "FIFO", "RANDOM_SHUFFLE", "PRIORITY", "NativeQueue", "clock_ns", "encode_strings",
    "decode_strings",
]  # fmt: skip

FIFO, RANDOM_SHUFFLE, PRIORITY = 0, 1, 2

_CDEF = """
typedef struct { char *msg; int64_t cap; const char *node; } tfc_error;
typedef struct tfc_queue tfc_queue;
typedef struct tfc_queue_batch tfc_queue_batch;
tfc_queue *tfc_queue_new(const char *label, int kind, int64_t capacity, int components,
                         int64_t min_after_dequeue, uint64_t seed, uint64_t seed2);
void tfc_queue_free(tfc_queue *q);
int64_t tfc_queue_clock_ns(void);
int tfc_queue_enqueue(tfc_queue *q, int64_t n, const void *const *data, const int64_t *nbytes,
                      const int32_t *ranks, const int64_t *dims, int64_t deadline_ns,
                      tfc_error *err);
int tfc_queue_dequeue(tfc_queue *q, int64_t n, int allow_fewer, int64_t deadline_ns,
                      tfc_queue_batch **out, tfc_error *err);
int64_t tfc_queue_batch_count(const tfc_queue_batch *b);
int tfc_queue_batch_dims(const tfc_queue_batch *b, int c, int64_t *dims, int cap, int *uniform);
void tfc_queue_batch_copy(const tfc_queue_batch *b, int c, void *out, const int64_t *dims,
                          int rank, int64_t itemsize);
const void *tfc_queue_batch_element(const tfc_queue_batch *b, int64_t i, int c, int64_t *nbytes);
void tfc_queue_batch_free(tfc_queue_batch *b);
void tfc_queue_close(tfc_queue *q, int cancel_pending_enqueues);
void tfc_queue_cancel(tfc_queue *q);
int64_t tfc_queue_size(tfc_queue *q);
int tfc_queue_is_closed(tfc_queue *q);
"""

_MAX_RANK = 32
_library: list[tuple[cffi.FFI, Any]] = []
_library_lock = threading.Lock()


def _runtime() -> tuple[cffi.FFI, Any]:
    with _library_lock:
        if not _library:
            source = (runtime_dir() / "src" / "queue" / "tfc_queue.c").read_text()
            ffi = cffi.FFI()
            ffi.cdef(_CDEF)
            _library.append((ffi, ffi.dlopen(str(build_shared_library(source, "tfc_queue")))))
        return _library[0]


def clock_ns() -> int:
    """Now on the clock of queue deadlines (monotonic nanoseconds)."""
    return int(_runtime()[1].tfc_queue_clock_ns())


class _Scratch:
    """A thread's buffers for its queue calls: the error report, the dequeued batch's pointer,
    dims (allocated once per thread, not per call)."""

    def __init__(self, ffi: cffi.FFI) -> None:
        self.buf = ffi.new("char[]", 1024)
        self.err = ffi.new("tfc_error *")
        self.err.msg, self.err.cap = self.buf, 1024
        self.batch = ffi.new("tfc_queue_batch **")
        self.dims = ffi.new("int64_t[]", _MAX_RANK)
        self.uniform = ffi.new("int *")


_threads = threading.local()


def _scratch(ffi: cffi.FFI) -> _Scratch:
    scratch = getattr(_threads, "scratch", None)
    if scratch is None:
        scratch = _threads.scratch = _Scratch(ffi)
    return scratch


class NativeQueue:
    """One queue in native memory: `label` starts its messages ("FIFOQueue 'q'"), `kind` is
    FIFO, RANDOM_SHUFFLE or PRIORITY, `dtypes` the NumPy dtypes of its components, `shapes`
    their element shapes where every element has that shape (the caller checks enqueues)."""

    def __init__(
        self,
        label: str,
        kind: int,
        capacity: int,
        dtypes: list[np.dtype],
        min_after_dequeue: int = 0,
        seed: int = 0,
        seed2: int = 0,
        shapes: list[tuple[int, ...] | None] | None = None,
    ) -> None:
        self.ffi, self._lib = _runtime()
        self.label = label
        self.dtypes = [np.dtype(d) for d in dtypes]
        self._shapes = list(shapes) if shapes is not None else [None] * len(self.dtypes)
        self._dims = [  # the dims of the components whose every element has one shape
            None if shape is None else self.ffi.new("int64_t[]", list(shape) or [0])
            for shape in self._shapes
        ]
        # element layouts of enqueues (bytes, ranks, dims per component), by their shapes
        self._layouts: dict[tuple, tuple] = {}
        self._ptr = self._lib.tfc_queue_new(
            label.encode(), kind, capacity, len(self.dtypes), min_after_dequeue,
            seed & (2**64 - 1), seed2 & (2**64 - 1),
        )  # fmt: skip
        if self._ptr == self.ffi.NULL:
            raise MemoryError(f"cannot create {label} (capacity {capacity})")

    def _raise(self, rc: int, scratch: _Scratch, op: Any) -> None:
        message = self.ffi.string(scratch.buf).decode(errors="replace")
        raise errors.error_for_code(rc)(None, op, message)

    def _layout(self, shapes: tuple) -> tuple:
        """The ranks and dims arrays of elements of `shapes` (cached: shapes repeat)."""
        layout = self._layouts.get(shapes)
        if layout is None:
            if len(self._layouts) > 64:  # elements of ever new shapes (a padding queue's)
                self._layouts.clear()
            ffi = self.ffi
            layout = self._layouts[shapes] = (
                ffi.new("int32_t[]", [len(s) for s in shapes]),
                ffi.new("int64_t[]", [d for s in shapes for d in s] or [0]),
            )
        return layout

    def enqueue(
        self, components: list[np.ndarray], many: bool, deadline_ns: int = 0, op: Any = None
    ) -> None:
        """Enqueue one element (`many` False: one array per component) or the rows of each
        component (`many` True: every array has the same first dimension). Blocks while the
        queue is full; raises the tf.errors exception of a failure, naming `op`."""
        ffi = self.ffi
        arrays = [
            string_array(a) if d.kind == "O" else np.asarray(a, dtype=d, order="C")
            for a, d in zip(components, self.dtypes)
        ]
        n = arrays[0].shape[0] if many else 1
        shapes = tuple(a.shape[1:] if many else a.shape for a in arrays)
        ranks, dims = self._layout(shapes)
        # where each element's component starts, and its bytes: rows of an array, or the
        # encoding of a string element (kept alive through the call)
        pointers = np.empty((n, len(arrays)), np.uint64)
        sizes = np.empty((n, len(arrays)), np.int64)
        held = [pointers, sizes]
        for c, (array, shape) in enumerate(zip(arrays, shapes)):
            if array.dtype == object:
                rows = array if many else array[None]
                for i in range(n):
                    blob = ffi.from_buffer(encode_strings(rows[i, ...]))
                    held.append(blob)
                    pointers[i, c] = int(ffi.cast("uintptr_t", blob))
                    sizes[i, c] = len(blob)
            else:
                size = math.prod(shape) * array.itemsize
                buf = ffi.from_buffer(array)
                held.append(buf)
                base = int(ffi.cast("uintptr_t", buf))
                pointers[:, c] = base + np.arange(n, dtype=np.uint64) * np.uint64(size)
                sizes[:, c] = size
        scratch = _scratch(ffi)
        rc = self._lib.tfc_queue_enqueue(
            self._ptr, n, ffi.cast("void **", ffi.from_buffer(pointers)),
            ffi.cast("int64_t *", ffi.from_buffer(sizes)), ranks, dims, deadline_ns, scratch.err,
        )  # fmt: skip
        del held
        if rc != 0:
            self._raise(rc, scratch, op)

    def dequeue(
        self,
        n: int | None,
        allow_fewer: bool = False,
        padded: bool = False,
        deadline_ns: int = 0,
        op: Any = None,
    ) -> list[np.ndarray]:
        """Take one element (`n` None: its arrays) or `n` (each component's elements stacked;
        with `allow_fewer`, fewer from a closed queue). Elements of different shapes are padded
        with zeros to the largest when `padded`, else an error. Blocks while too few are there."""
        ffi, lib = self.ffi, self._lib
        scratch = _scratch(ffi)
        rc = lib.tfc_queue_dequeue(self._ptr, 1 if n is None else n, allow_fewer, deadline_ns,
                                   scratch.batch, scratch.err)  # fmt: skip
        if rc != 0:
            self._raise(rc, scratch, op)
        batch = scratch.batch[0]
        try:
            count = int(lib.tfc_queue_batch_count(batch))
            arrays = []
            for c, dtype in enumerate(self.dtypes):
                shape, dims = self._shapes[c], self._dims[c]
                if shape is not None:  # every element has this shape
                    rank = len(shape)
                else:
                    shape, rank, dims = self._batch_shape(batch, scratch, c, count, padded, op)
                if dtype.kind == "O":  # tf.string
                    array = self._strings(batch, c, count, shape)
                else:
                    array = np.empty((count, *shape), dtype=dtype)
                    if count:
                        lib.tfc_queue_batch_copy(
                            batch, c, ffi.from_buffer(array), dims, rank, dtype.itemsize
                        )
                arrays.append(array[0, ...] if n is None else array)
            return arrays
        finally:
            lib.tfc_queue_batch_free(batch)

    def _strings(self, batch: Any, c: int, count: int, shape: tuple) -> np.ndarray:
        """String component c of the batch's elements, each padded with b"" to `shape`."""
        ffi, lib = self.ffi, self._lib
        out = np.full((count, *shape), b"", dtype=object)
        size = ffi.new("int64_t *")
        for i in range(count):
            data = lib.tfc_queue_batch_element(batch, i, c, size)
            element = decode_strings(bytes(ffi.buffer(data, size[0])))
            corner = (i, *(slice(0, d) for d in element.shape), Ellipsis)  # a view, even 0-d
            np.copyto(out[corner], element)
        return out

    def _batch_shape(
        self, batch: Any, scratch: _Scratch, c: int, count: int, padded: bool, op: Any
    ) -> tuple:
        """(shape, rank, dims) of component c over a batch of elements of varying shapes."""
        rank = self._lib.tfc_queue_batch_dims(batch, c, scratch.dims, _MAX_RANK, scratch.uniform)
        if rank == -1 or (rank >= 0 and not scratch.uniform[0] and not padded):
            raise errors.InvalidArgumentError(
                None, op, f"Shape mismatch in tuple component {c}: the elements dequeued "
                f"together from {self.label} have different shapes",
            )  # fmt: skip
        if rank == -2:
            raise errors.InvalidArgumentError(
                None, op, f"component {c} of {self.label} has rank over {_MAX_RANK}"
            )
        shape = tuple(scratch.dims[k] for k in range(rank)) if count else ()
        return shape, rank, scratch.dims

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        self._lib.tfc_queue_close(self._ptr, int(bool(cancel_pending_enqueues)))

    def cancel(self) -> None:
        """Fail the waiting and all later calls with CancelledError (the session closed)."""
        self._lib.tfc_queue_cancel(self._ptr)

    def size(self) -> int:
        return int(self._lib.tfc_queue_size(self._ptr))

    def is_closed(self) -> bool:
        return bool(self._lib.tfc_queue_is_closed(self._ptr))

    def __del__(self) -> None:
        # the native memory goes with the last reference: a thread inside a call holds one, so
        # no call can still be using it
        ptr = getattr(self, "_ptr", None)
        if ptr is not None and ptr != self.ffi.NULL:
            self._lib.tfc_queue_free(ptr)


def encode_strings(element: np.ndarray) -> bytes:
    """A string tensor as the queue keeps it: its rank, its dims, each string's length (int64,
    little-endian), then the strings' bytes back to back."""
    flat = element.reshape(-1)
    header = np.array([element.ndim, *element.shape, *(len(b) for b in flat)], dtype="<i8")
    return header.tobytes() + b"".join(flat.tolist())


def decode_strings(blob: bytes) -> np.ndarray:
    """The string tensor `encode_strings` made `blob` of."""
    rank = int(np.frombuffer(blob, "<i8", count=1)[0])
    shape = tuple(int(d) for d in np.frombuffer(blob, "<i8", count=rank, offset=8))
    count = math.prod(shape)
    lengths = np.frombuffer(blob, "<i8", count=count, offset=8 * (1 + rank))
    out = np.empty(count, dtype=object)
    at = 8 * (1 + rank + count)
    for k, length in enumerate(lengths.tolist()):
        out[k] = blob[at : at + length]
        at += length
    return out.reshape(shape)
