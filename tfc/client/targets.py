"""The targets a Session may name: "" (this process) and the targets of this process's
tf.train.Server objects, which register here when they start. A server that is one task of a
larger cluster registers its ServerDef: Sessions on its target and its join() go to the cluster
runtime (tfc.aot.cluster_session registers it; it sits above this layer)."""

from __future__ import annotations

import threading
from typing import Any

from tfc.ir import errors

__all__ = [
    "check_session_target",
    "cluster_runtime",
    "cluster_task",
    "register_cluster_runtime",
    "register_cluster_task",
    "register_server_target",
    "unregister_server_target",
]

_lock = threading.Lock()
# target -> None when a session on it runs in this process, else why it cannot
_servers: dict[str, str | None] = {}
# target -> the ServerDef of a task of a cluster of several tasks
_cluster_tasks: dict[str, Any] = {}
_runtime: list[Any] = []  # the cluster runtime, once registered

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
        _cluster_tasks.pop(target, None)


def register_cluster_task(target: str, server_def: Any) -> None:
    """Sessions on `target` run as task `server_def` of its cluster (the cluster runtime)."""
    with _lock:
        _servers.pop(target, None)
        _cluster_tasks[target] = server_def


def cluster_task(target: Any) -> Any:
    """The ServerDef registered for `target` by register_cluster_task, else None."""
    with _lock:
        return _cluster_tasks.get(target) if isinstance(target, str) else None


def register_cluster_runtime(runtime: Any) -> None:
    """`runtime.session(server_def, graph, config)` makes a worker's session and
    `runtime.join(server_def)` runs a ps task (tfc.aot.cluster_session)."""
    with _lock:
        _runtime[:] = [runtime]


def cluster_runtime() -> Any:
    with _lock:
        if _runtime:
            return _runtime[0]
    raise errors.UnimplementedError(
        None, None, f"no cluster runtime is loaded (import tfc.aot). {_COMPILED_PATH}"
    )


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
