"""`tf.train.replica_device_setter`: variables round-robin over ps tasks, the rest on a worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfc.ir.device import DeviceSpec
from tfc.train.cluster_spec import ClusterSpec

__all__ = ["replica_device_setter"]

STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "VarHandleOp")  # fmt: skip


class _RoundRobinStrategy:
    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next = 0

    def __call__(self, op: Any) -> int:
        task = self._next
        self._next = (self._next + 1) % self._num_tasks
        return task


def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str = "/job:ps",
    worker_device: str = "/job:worker",
    merge_devices: bool = True,
    cluster: Any = None,
    ps_ops: Any = None,
    ps_strategy: Callable[[Any], int] | None = None,
) -> Callable[[Any], str] | None:
    """A device function for `tf.device`: variable ops go to the ps tasks (round-robin, or
    `ps_strategy(op)` -> task), everything else to `worker_device`. Devices already set by inner
    scopes win, as in TF1. `cluster` (a ClusterSpec, a ClusterDef or a dict job -> list of
    addresses) gives ps_tasks as the number of tasks of the ps job. Returns None when
    there are no ps tasks."""
    if cluster is not None:
        spec = ClusterSpec(cluster).as_dict()
        ps_job = DeviceSpec.from_string(ps_device).job or "ps"
        ps_tasks = len(spec.get(ps_job) or ())
    if ps_tasks == 0:
        return None
    ps_ops = tuple(ps_ops) if ps_ops is not None else STANDARD_PS_OPS
    strategy = ps_strategy or _RoundRobinStrategy(ps_tasks)

    def device_function(op: Any) -> str:
        current = DeviceSpec.from_string(op.device or "")
        if op.type in ps_ops:
            device = DeviceSpec.from_string(ps_device)
            if device.job and (current.job is None or current.job == device.job):
                device = DeviceSpec(**{**device.__dict__, "task": strategy(op)})
            return current.merged_onto(device).to_string() if merge_devices else ps_device
        device = DeviceSpec.from_string(worker_device)
        return current.merged_onto(device).to_string() if merge_devices else worker_device

    return device_function
