"""`tf.train.basic_train_loop`: a Supervisor's managed session running a step function until a
stop is requested, begun again when a session is aborted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfc.ir import errors
from tfc.training.supervisor import Supervisor

__all__ = ["basic_train_loop"]


def basic_train_loop(
    supervisor: Supervisor,
    train_step_fn: Callable[..., Any],
    args: Any = None,
    kwargs: dict | None = None,
    master: str = "",
) -> None:
    """Call train_step_fn(session, *args, **kwargs) in `supervisor.managed_session(master)`
    until supervisor.should_stop(); an AbortedError starts a new managed session (restored
    from the latest checkpoint)."""
    args, kwargs = list(args or []), dict(kwargs or {})
    while True:
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
            return
        except errors.AbortedError:
            continue
