"""The state sessions keep between runs, by resource container (whitepaper 4.7): variables'
buffers and initialized flags, the words that lock them for updates with use_locking, queues.

A Session on target "" has a state of its own, as TF1's in-process sessions do (two of them
never share a variable). The sessions on the target of an in-process tf.train.Server share
one: variables by their container and name, queues by container and shared_name (a queue
without a shared_name stays private to its session, as in TF1); it outlives the sessions.
`Session.reset(target, containers)` clears containers of the target's state and closes the
sessions on it (`reset_target`).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from tfc.backend.native_queue import NativeQueue
from tfc.ir import errors

__all__ = ["SessionState", "state_for_target", "register_session", "reset_target"]

_ALIGN = 64


def aligned_zeros(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A zeroed array whose data starts on a 64-byte boundary (what the kernels assume)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + _ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start : start + nbytes].view(dtype).reshape(shape)


Key = tuple[str, str]  # (container, name)


class SessionState:
    """Variables (buffers, initialized flags, update locks) and queues, by (container, name)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.vars: dict[Key, np.ndarray] = {}
        self.initialized: set[Key] = set()
        self.update_locks: dict[Key, np.ndarray] = {}
        self.queues: dict[tuple, NativeQueue] = {}
        # the state epoch: bumped by every write of variables, so that the programs that keep
        # packed copies of weights (tfc.codegen.lower: prepack_weights) see every change. Two
        # counters, each with its own writers, whose sum is the epoch: [0] by the programs that
        # may write variables (an atomic add in C around each call), [1] here by Python's
        # writes under the lock (a += on a word C also adds to could lose one of the two)
        self.epoch = aligned_zeros((2,), np.uint64)

    def bump_epoch(self) -> None:
        """Record a write of variables' buffers (after it, or around it)."""
        with self.lock:
            self.epoch[1] += 1

    def variable(self, key: Key, dtype: np.dtype | None, shape: tuple) -> np.ndarray:
        """The buffer of variable `key`, made (zeroed) on first use (dtype None: the existing
        one). A variable of another dtype or shape under the same name (another graph on a
        shared target) is an error."""
        with self.lock:
            buf = self.vars.get(key)
            if dtype is None:
                return buf
            if buf is None:  # a new buffer may reuse a dropped one's address
                buf = self.vars[key] = aligned_zeros(shape, dtype)
                self.bump_epoch()
            elif buf.shape != tuple(shape) or buf.dtype != np.dtype(dtype):
                raise errors.InvalidArgumentError(
                    None, None, f"Trying to share variable {key[1]} (container '{key[0]}'), but "
                    f"specified shape {tuple(shape)} and dtype {np.dtype(dtype).name}, found "
                    f"shape {buf.shape} and dtype {buf.dtype.name}",
                )  # fmt: skip
            return buf

    def update_lock(self, key: Key) -> np.ndarray:
        """The lock word of variable `key` (a cache line of its own), which the update kernels
        of ops with use_locking hold while they write it."""
        with self.lock:
            word = self.update_locks.get(key)
            if word is None:
                word = self.update_locks[key] = aligned_zeros((_ALIGN,), np.uint8)
            return word

    def queue(self, key: tuple, make: Any) -> NativeQueue:
        with self.lock:
            queue = self.queues.get(key)
            if queue is None:
                queue = self.queues[key] = make()
            return queue

    def reset(self, containers: list[str] | None) -> None:
        """Drop the state of `containers` (None: all): variables become uninitialized, queues
        empty; calls waiting on a dropped queue fail with CancelledError."""
        with self.lock:
            wanted = None if containers is None else set(containers)

            def dropped(container: str) -> bool:
                return wanted is None or container in wanted

            for table in (self.vars, self.update_locks):
                for key in [k for k in table if dropped(k[0])]:
                    del table[key]
            self.initialized = {k for k in self.initialized if not dropped(k[0])}
            self.bump_epoch()
            for key in [k for k in self.queues if dropped(k[0])]:
                self.queues.pop(key).cancel()

    def cancel_queues(self, owner: int | None = None) -> None:
        """Fail the waiting and later calls of the queues (those private to session `owner`,
        when given) with CancelledError."""
        with self.lock:
            for key, queue in list(self.queues.items()):
                if owner is None or key[1] == owner:
                    queue.cancel()
                    if owner is not None:
                        del self.queues[key]


# -- the states of targets, and the sessions on them -----------------------------------------------
_lock = threading.Lock()
_shared: dict[str, SessionState] = {}
_sessions: dict[str, weakref.WeakSet] = {}


def state_for_target(target: str) -> SessionState:
    """A new private state for target "", else the target's shared one."""
    if not target:
        return SessionState()
    with _lock:
        state = _shared.get(target)
        if state is None:
            state = _shared[target] = SessionState()
        return state


def register_session(target: str, session: Any) -> None:
    with _lock:
        _sessions.setdefault(target or "", weakref.WeakSet()).add(session)


def reset_target(target: str, containers: list[str] | None) -> list[Any]:
    """Clear `containers` (None: all) of `target`'s shared state; returns the live sessions
    on the target, which the caller closes."""
    target = target or ""
    with _lock:
        sessions = list(_sessions.get(target, ()))
        state = _shared.get(target)
    if state is not None:
        state.reset(containers)
    return sessions
