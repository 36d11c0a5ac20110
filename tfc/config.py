"""`tf.config`: the devices tfc runs programs on, and the thread settings, as TF1's graph mode
has them.

Devices: the CPU, and GPU 0 when a CUDA GPU can run programs (the emulated device under
TFC_CUDA=emulate counts: programs placed on /gpu:0 run there); tfc uses one GPU. Threads: the
intra-op count is the number of threads compiled programs split large kernels over
(tfc.set_num_threads); a program runs its ops one after another, so the inter-op count is
kept for programs that read it back but changes nothing.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

from tfc.backend.cuda_runtime import gpu_status
from tfc.client.config import get_num_threads, set_num_threads

__all__ = [
    "PhysicalDevice",
    "LogicalDevice",
    "list_physical_devices",
    "list_logical_devices",
    "get_visible_devices",
    "threading",
]


class PhysicalDevice(NamedTuple):
    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    name: str
    device_type: str


def _device_types() -> list[str]:
    return ["CPU", "GPU"] if gpu_status()[0] else ["CPU"]


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """`tf.config.list_physical_devices`: CPU:0, and GPU:0 where a GPU runs programs; only
    those of `device_type` ("CPU", "GPU") when given."""
    return [
        PhysicalDevice(f"/physical_device:{t}:0", t)
        for t in _device_types()
        if device_type is None or t == device_type
    ]


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """`tf.config.list_logical_devices`: the devices ops are placed on (/device:CPU:0, ...)."""
    return [
        LogicalDevice(f"/device:{t}:0", t)
        for t in _device_types()
        if device_type is None or t == device_type
    ]


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """`tf.config.get_visible_devices`: every physical device is visible to tfc."""
    return list_physical_devices(device_type)


_inter_op_threads = 0


def _check_count(num_threads: int, what: str) -> int:
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
        raise ValueError(f"{what}: expected a non-negative int, got {num_threads!r}")
    return num_threads


def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """The threads compiled programs split large kernels over (tfc.set_num_threads, at most
    64); 0 lets tfc choose (TFC_NUM_THREADS, else 1)."""
    set_num_threads(min(_check_count(num_threads, "set_intra_op_parallelism_threads"), 64))


def get_intra_op_parallelism_threads() -> int:
    """The number of threads compiled programs run with."""
    return get_num_threads()


def set_inter_op_parallelism_threads(num_threads: int) -> None:
    """Kept for get_inter_op_parallelism_threads: a tfc program runs its ops in sequence."""
    global _inter_op_threads
    _inter_op_threads = _check_count(num_threads, "set_inter_op_parallelism_threads")


def get_inter_op_parallelism_threads() -> int:
    """What set_inter_op_parallelism_threads was given (0: unset, as TF reports it)."""
    return _inter_op_threads


threading = SimpleNamespace(
    set_intra_op_parallelism_threads=set_intra_op_parallelism_threads,
    get_intra_op_parallelism_threads=get_intra_op_parallelism_threads,
    set_inter_op_parallelism_threads=set_inter_op_parallelism_threads,
    get_inter_op_parallelism_threads=get_inter_op_parallelism_threads,
)
