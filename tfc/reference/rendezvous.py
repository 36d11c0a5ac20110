"""An in-process rendezvous: the meeting point of the _Send and _Recv ops of one process.

Partitions evaluated in threads of one process (tfc.reference.interp.evaluate_partitions) exchange
tensors here. A value is stored under (step id, key) until its one receiver takes it; a
receiver waits for it at most `timeout` seconds. Sending the same (step, key) twice is an
error: it would mean a tensor crosses the same cut twice.
"""

from __future__ import annotations

import threading

import numpy as np


class RendezvousError(RuntimeError):
    pass


class LocalRendezvous:
    def __init__(self, timeout: float = 30.0) -> None:
        self._values: dict[tuple[int, str], np.ndarray] = {}
        self._sent: set[tuple[int, str]] = set()
        self._cond = threading.Condition()
        self._aborted: BaseException | None = None
        self.timeout = timeout
        self.sends = 0  # tensors sent, for tests and statistics

    def send(self, step_id: int, key: str, value: np.ndarray) -> None:
        with self._cond:
            if (step_id, key) in self._sent:
                raise RendezvousError(f"step {step_id}: key {key!r} was sent twice")
            self._sent.add((step_id, key))
            self._values[(step_id, key)] = np.array(value, copy=True)
            self.sends += 1
            self._cond.notify_all()

    def recv(self, step_id: int, key: str) -> np.ndarray:
        with self._cond:
            ok = self._cond.wait_for(
                lambda: (step_id, key) in self._values or self._aborted is not None,
                timeout=self.timeout,
            )
            if self._aborted is not None:
                raise RendezvousError(f"step {step_id}: aborted ({self._aborted})")
            if not ok:
                raise RendezvousError(
                    f"step {step_id}: no tensor arrived under key {key!r} in {self.timeout} s"
                )
            return self._values.pop((step_id, key))

    def abort(self, error: BaseException) -> None:
        """Wake every waiting receiver with an error (a partition failed)."""
        with self._cond:
            self._aborted = error
            self._cond.notify_all()

    def pending(self) -> list[tuple[int, str]]:
        """Keys sent but not received (empty after a complete step)."""
        with self._cond:
            return sorted(self._values)
