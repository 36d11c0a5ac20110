"""Device memory, the one interface tfc's Python side uses: buffers on the GPU (or on the
emulated device, under TFC_CUDA=emulate), copies between host and device memory, and the
session's variables and random streams kept coherent between the host and the device. The
runtime calls go through tfc/backend/cuda_runtime.py (libcudart, or the emulated library)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.backend.cuda_runtime import DEVICE_TO_HOST, HOST_TO_DEVICE, check, device_runtime


class DeviceBuffer:
    """`nbytes` of GPU memory (of the emulated device's, under TFC_CUDA=emulate), freed with the
    object by the runtime that allocated it."""

    def __init__(self, nbytes: int) -> None:
        self.runtime = ffi, rt = device_runtime()
        self.nbytes = max(int(nbytes), 1)
        ptr = ffi.new("void **")
        check(rt.cudaMalloc(ptr, self.nbytes), f"cudaMalloc of {self.nbytes} bytes", self.runtime)
        self.ptr = ptr[0]
        self._rt = rt

    def upload(self, array: np.ndarray) -> None:
        ffi, rt = self.runtime
        array = np.ascontiguousarray(array)
        if array.nbytes:
            code = rt.cudaMemcpy(self.ptr, ffi.from_buffer(array), array.nbytes, HOST_TO_DEVICE)
            check(code, "upload", self.runtime)

    def download(self, array: np.ndarray) -> None:
        copy_to_host(self.ptr, array, "download", self.runtime)

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        if getattr(self, "ptr", None) is not None:
            self._rt.cudaFree(self.ptr)
            self.ptr = None


def device_address(buffer: DeviceBuffer) -> int:
    """The integer address of a DeviceBuffer's memory."""
    ffi, _ = buffer.runtime
    return int(ffi.cast("uintptr_t", buffer.ptr))


def copy_to_host(source: Any, array: np.ndarray, what: str = "fetch", runtime: Any = None) -> None:
    """Copy `array.nbytes` of device memory at `source` (a pointer, or an integer address)
    into `array` (C-contiguous)."""
    if not array.nbytes:
        return
    ffi, rt = runtime = runtime or device_runtime()
    if isinstance(source, int):
        source = ffi.cast("void *", source)
    check(
        rt.cudaMemcpy(ffi.from_buffer(array), source, array.nbytes, DEVICE_TO_HOST), what, runtime
    )


def synchronize() -> None:
    """Wait for all device work (another library's stream, say) to finish."""
    device_runtime()[1].cudaDeviceSynchronize()


class DeviceState:
    """A session's variables and random streams on the GPU, coherent with the host copies: each
    slot is fresh on the host, on the device, or both; a program gets its slots where it runs."""

    def __init__(self, host_buffer, host_written=None) -> None:
        self._host_buffer = host_buffer  # slot -> the session's host array
        # called after a download changed a host array (the session bumps its state epoch:
        # host programs may keep packed copies of the variables)
        self._host_written = host_written
        self.buffers: dict[tuple[str, str], DeviceBuffer] = {}
        self.fresh: dict[tuple[str, str], str] = {}  # "host", "device" or "both"

    def device_pointer(self, slot: Any) -> Any:
        key = (slot.kind, slot.name)
        host = self._host_buffer(slot)
        buf = self.buffers.get(key)
        if buf is None:
            buf = self.buffers[key] = DeviceBuffer(host.nbytes)
            self.fresh.setdefault(key, "host")
        if self.fresh.get(key, "host") == "host":
            buf.upload(host)
            self.fresh[key] = "both"
        return buf.ptr

    def to_host(self, kind: str, name: str) -> None:
        key = (kind, name)
        if self.fresh.get(key) == "device":
            self.buffers[key].download(self._host_buffer_of(kind, name))
            self.fresh[key] = "both"
            if self._host_written is not None:
                self._host_written()

    def _host_buffer_of(self, kind: str, name: str) -> np.ndarray:
        from tfc.codegen.lower import Slot

        return self._host_buffer(Slot(kind, name, None, ()))  # type: ignore[arg-type]

    def before(self, program: Any) -> None:
        for slot in program.lowered.slots:
            if program.on_device:
                self.device_pointer(slot)
            else:
                self.to_host(slot.kind, slot.name)

    def after(self, program: Any) -> None:
        where = "device" if program.on_device else "host"
        written = set(program.lowered.vars_written)
        for slot in program.lowered.slots:
            if slot.kind == "rng" or slot.name in written:
                if where == "host" and (slot.kind, slot.name) not in self.buffers:
                    continue
                self.fresh[(slot.kind, slot.name)] = where

    def host_wrote(self, kind: str, name: str) -> None:
        if (kind, name) in self.buffers:
            self.fresh[(kind, name)] = "host"
