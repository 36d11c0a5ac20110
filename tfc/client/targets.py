"""The targets a Session may name: "" (this process) and the targets of this process's
tf.train.Server objects, which register here when they start."""

from __future__ import annotations

import threading

from tfc.ir import errors

__all__ = ["check_session_target", "register_server_target", "unregister_server_target"]

_lock = threading.Lock()
# target -> None when a session on it runs in this process, else why it cannot
_servers: dict[str, str | None] = {}

_COMPILED_PATH = (
    "tfc runs distributed training as compiled executables, not through remote sessions: "
    "`tfc compile MODEL.py --cluster cluster.json -o OUT` builds one `train` executable that "
    "runs every task (`OUT/train --job ps --task 0 --cluster cluster.json`, or all of them on "
    "this machine with `tfc launch OUT --ps 1 --workers 2`); see docs/distributed.md"
)


def register_server_target(target: str, refusal: str | None) -> None:
    """Make `target` known: sessions on it run in this process (refusal None), or fail with
    `refusal` and the compiled path to distributed training."""
    with _lock:
        _servers[target] = refusal


def unregister_server_target(target: str) -> None:
    with _lock:
        _servers.pop(target, None)


def check_session_target(target: str | None) -> None:
    """Nothing when a Session can run on `target` in this process; else an error saying why
    and how tfc runs distributed training instead."""
    if target in ("", None):
        return
    if not isinstance(target, str):
        raise TypeError(f"Session target must be a string, got {target!r}")
    with _lock:
        known = target in _servers
        refusal = _servers.get(target)
    if known and refusal is None:
        return
    if known:
        raise errors.UnimplementedError(
            None, None, f"Session target {target!r}: {refusal}. {_COMPILED_PATH}"
        )
    raise errors.UnimplementedError(
        None,
        None,
        f"Session target {target!r} is no tf.train.Server of this process. {_COMPILED_PATH}",
    )
