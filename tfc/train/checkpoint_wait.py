"""`tf.train.checkpoints_iterator`: the checkpoints of a directory as a training process writes
them, for an evaluation loop that runs beside it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import tfc.logging as tf_logging
from tfc.train.saver import latest_checkpoint

__all__ = ["checkpoints_iterator"]  # and wait_for_new_checkpoint (tf.contrib.training in TF1)


def wait_for_new_checkpoint(
    checkpoint_dir: str,
    last_checkpoint: str | None = None,
    seconds_to_sleep: float = 1,
    timeout: float | None = None,
) -> str | None:
    """The latest checkpoint of `checkpoint_dir` once it is not `last_checkpoint`, looking every
    `seconds_to_sleep` seconds; None after `timeout` seconds without one."""
    tf_logging.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = None if timeout is None else time.monotonic() + timeout
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            tf_logging.info("Found new checkpoint at %s", path)
            return path
        if stop_time is not None and time.monotonic() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(
    checkpoint_dir: str,
    min_interval_secs: float = 0,
    timeout: float | None = None,
    timeout_fn: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """Each new latest checkpoint of `checkpoint_dir`, at most one per `min_interval_secs`.

    It ends when `timeout` seconds pass without a new one, unless `timeout_fn` is given: then
    it ends only when timeout_fn() returns True (no more checkpoints will come).
    """
    path = None
    while True:
        new_path = wait_for_new_checkpoint(checkpoint_dir, path, timeout=timeout)
        if new_path is None:
            if timeout_fn is None:
                tf_logging.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                tf_logging.info("Done. No new checkpoints will be generated.")
                return
            continue
        start = time.monotonic()
        path = new_path
        yield path
        pause = start + min_interval_secs - time.monotonic()
        if pause > 0:
            time.sleep(pause)
