"""Device arrays in and out of a Session: feeds already in GPU memory and fetches left there.

Any feed value exposing `__cuda_array_interface__` (a pycuda GPUArray, a CuPy array, a torch CUDA
tensor, a tfc.DeviceArray) is passed to a GPU program by its device pointer: no copy through the
host. `Session.run(..., options=tfc.RunOptions(fetches_on_device=True))` returns a GPU program's
fetches as tfc.DeviceArray, which exposes the same interface, so those libraries wrap it without
a copy too (cupy.asarray, torch.as_tensor, numba.cuda.as_cuda_array). No GPU library is imported
here. Under CUDA device emulation (TFC_CUDA=emulate) device memory is the emulated device's:
tfc.DeviceArray works as on a GPU, and a foreign pointer must be memory tfc allocated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.backend.device_memory import DeviceBuffer, copy_to_host, device_address, synchronize

__all__ = ["DeviceArray"]


class DeviceArray:
    """A C-contiguous array in device memory (a tfc DeviceBuffer): `shape`, `dtype`, `ptr`,
    `get()` for a NumPy copy, `__cuda_array_interface__` for other GPU libraries."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, buffer: Any = None) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.buffer = buffer if buffer is not None else DeviceBuffer(self.nbytes)
        if self.buffer.nbytes < self.nbytes:
            raise ValueError(f"a device buffer of {self.buffer.nbytes} bytes cannot hold {self}")

    @classmethod
    def from_numpy(cls, array: Any) -> DeviceArray:
        """A device copy of `array`."""
        array = np.ascontiguousarray(array)
        out = cls(array.shape, array.dtype)
        out.buffer.upload(array)
        return out

    @property
    def ptr(self) -> int:
        return device_address(self.buffer)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def get(self) -> np.ndarray:
        """A host (NumPy) copy, as pycuda's GPUArray.get()."""
        out = np.empty(self.shape, self.dtype)
        self.buffer.download(out)
        return out

    @property
    def __cuda_array_interface__(self) -> dict:
        # no "stream": the data is ready (the program that wrote it synchronized its stream)
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
        }

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"


@dataclass(frozen=True)
class DeviceFeed:
    """A feed value in device memory, by pointer: what a GPU program reads in place. `owner` is
    the caller's object, kept alive while the feed is."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    owner: Any

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def to_host(self) -> np.ndarray:
        """A NumPy copy, for a program that runs on the CPU."""
        out = np.empty(self.shape, self.dtype)
        copy_to_host(self.ptr, out)
        return out


def is_device_value(value: Any) -> bool:
    return hasattr(value, "__cuda_array_interface__")


def device_feed(value: Any, dtype: np.dtype, name: str) -> DeviceFeed:
    """The DeviceFeed of a value exposing `__cuda_array_interface__`, fed to a tensor `name` of
    `dtype`: device values are not converted, so the dtype must match, and they must be
    C-contiguous and unmasked."""
    iface = value.__cuda_array_interface__
    shape = tuple(int(d) for d in iface["shape"])
    got = np.dtype(iface["typestr"])
    if got != dtype:
        raise TypeError(
            f"The device array fed for '{name}' holds {got}, the tensor is {np.dtype(dtype)}: "
            "device feeds are not converted"
        )
    strides, contiguous, step = iface.get("strides"), [], got.itemsize
    for extent in reversed(shape):
        contiguous.insert(0, step)
        step *= extent
    if strides is not None and all(shape) and tuple(strides) != tuple(contiguous):
        raise ValueError(f"The device array fed for '{name}' is not C-contiguous ({strides})")
    if iface.get("mask") is not None:
        raise ValueError(f"The device array fed for '{name}' has a mask: not supported")
    return DeviceFeed(int(iface["data"][0]), shape, got, value)


def bind_device_io(
    ffi: Any, inputs: Any, outputs: Any, feeds: list, fetches: list
) -> tuple[list, list[DeviceArray]]:
    """Point a GPU program's `inputs` at its feeds in device memory (device feeds in place, host
    feeds uploaded first) and its `outputs` at a new DeviceArray per fetch spec: (what to keep
    alive during the call, the result arrays)."""
    held: list = []
    foreign = False
    for i, value in enumerate(feeds):
        if not isinstance(value, DeviceFeed):
            value = DeviceArray.from_numpy(value)
        else:
            foreign = foreign or not isinstance(value.owner, DeviceArray)
        held.append(value)
        inputs[i] = ffi.cast("void *", value.ptr)
    if foreign:  # written on another library's stream, maybe still running: wait for it
        synchronize()
    results = [DeviceArray(f.shape, f.dtype.np) for f in fetches]
    for j, result in enumerate(results):
        outputs[j] = ffi.cast("void *", result.ptr)
    return held, results


def bind_mixed_io(
    ffi: Any, inputs: Any, outputs: Any, feed_on_host: Any, fetch_on_host: Any, feeds: list,
    fetches: list, where: list,
) -> tuple[list, list]:  # fmt: skip
    """Point a GPU program's run_mixed at each feed where it is (a DeviceFeed in place, a NumPy
    array through the staging) and each fetch where `where` says: False a new NumPy array, True
    a new DeviceArray, a DeviceArray that one (written in place: a buffer reused run after run),
    None nowhere (not wanted: its result is None). Sets the on-host flags; returns (what to keep
    alive during the call, the results)."""
    held: list = []
    foreign = False
    for i, value in enumerate(feeds):
        feed_on_host[i] = not isinstance(value, DeviceFeed)
        if feed_on_host[i]:
            held.append(ffi.from_buffer(np.ascontiguousarray(value)))
            inputs[i] = held[-1]
        else:
            # tfc's own memory (an array, or a program's arena) is ready: its writer finished
            foreign = foreign or not isinstance(value.owner, (DeviceArray, DeviceBuffer))
            inputs[i] = ffi.cast("void *", value.ptr)
    if foreign:  # written on another library's stream, maybe still running: wait for it
        synchronize()
    results: list = []
    for j, (spec, want) in enumerate(zip(fetches, where, strict=True)):
        if want is None:
            fetch_on_host[j] = 2  # left in its staging, not copied out
            results.append(None)
            continue
        fetch_on_host[j] = want is False
        if want is False:
            results.append(np.empty(spec.shape, dtype=spec.dtype.np))
            held.append(ffi.from_buffer(results[-1]))
            outputs[j] = held[-1]
            continue
        result = DeviceArray(spec.shape, spec.dtype.np) if want is True else want
        if (result.shape, result.dtype) != (tuple(spec.shape), np.dtype(spec.dtype.np)):
            raise ValueError(f"fetch {j} is {spec.dtype.name}{list(spec.shape)}, not {result}")
        results.append(result)
        outputs[j] = ffi.cast("void *", result.ptr)
    return held, results
