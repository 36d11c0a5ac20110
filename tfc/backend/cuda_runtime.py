"""The CUDA toolkit's location and the CUDA runtime API from Python: libcudart, or the emulated
library under TFC_CUDA=emulate (tfc/backend/cuda_emu.py); its error checks and the GPU present.

`nvcc` is found as TFC_NVCC, or `nvcc` on PATH; the toolkit as CUDA_HOME (or CUDA_PATH, or the
folder above nvcc's). Device memory (tfc/backend/device_memory.py) and the CUDA builds
(tfc/backend/cuda.py) both start here.
"""

from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import cffi

from tfc.backend.cuda_emu import RUNTIME_CDEF, emulated_runtime, emulating

# cudaMemcpyKind
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2
_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76

Runtime = tuple[cffi.FFI, Any]  # (ffi, library) of the runtime API RUNTIME_CDEF declares


class CudaUnavailable(RuntimeError):
    """No GPU (or no CUDA runtime) to run a CUDA program on: the message says which."""


# -- the toolkit ----------------------------------------------------------------------------------
def nvcc() -> str:
    return os.environ.get("TFC_NVCC") or "nvcc"


@cache
def cuda_home() -> Path | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var])
    if Path("/usr/local/cuda/include/cuda_runtime.h").exists():
        return Path("/usr/local/cuda")
    found = shutil.which(nvcc())
    return Path(os.path.realpath(found)).parent.parent if found else None


def include_dirs() -> list[Path]:
    home = cuda_home()
    if home is None:
        return []
    return [home / "include", *sorted((home / "targets").glob("*/include"))]


def lib_dirs() -> list[Path]:
    home = cuda_home()
    if home is None:
        return []
    return [home / "lib64", home / "lib", *sorted((home / "targets").glob("*/lib"))]


# -- the runtime API ------------------------------------------------------------------------------
@cache
def cudart() -> Runtime:
    """libcudart, from the toolkit's library folders or the loader's path."""
    ffi = cffi.FFI()
    ffi.cdef(RUNTIME_CDEF)
    names = []
    for d in lib_dirs():
        names += sorted(str(p) for p in d.glob("libcudart.so*")) if d.exists() else []
    names += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    errors = []
    for candidate in names:
        try:
            return ffi, ffi.dlopen(candidate)
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    raise CudaUnavailable("the CUDA runtime (libcudart.so) cannot be loaded: " + "; ".join(errors))


def device_runtime() -> Runtime:
    """The CUDA runtime that device buffers go through: libcudart, or the emulated one."""
    return emulated_runtime() if emulating() else cudart()


def check(code: int, what: str, runtime: Runtime | None = None) -> None:
    """Raise CudaUnavailable naming `what` when a runtime call returned error `code`."""
    if code != 0:
        ffi, rt = runtime or cudart()
        raise CudaUnavailable(f"{what}: {ffi.string(rt.cudaGetErrorString(code)).decode()}")


@cache
def gpu_status() -> tuple[bool, str]:
    """(True, 'sm_90') when a GPU can run programs, else (False, why not)."""
    try:
        ffi, rt = cudart()
    except CudaUnavailable as e:
        return False, str(e)
    count = ffi.new("int *")
    code = rt.cudaGetDeviceCount(count)
    if code != 0:
        return False, "no CUDA GPU: " + ffi.string(rt.cudaGetErrorString(code)).decode()
    if count[0] == 0:
        return False, "no CUDA GPU on this machine"
    major, minor = ffi.new("int *"), ffi.new("int *")
    check(rt.cudaDeviceGetAttribute(major, _ATTR_CC_MAJOR, 0), "cudaDeviceGetAttribute")
    check(rt.cudaDeviceGetAttribute(minor, _ATTR_CC_MINOR, 0), "cudaDeviceGetAttribute")
    return True, f"sm_{major[0]}{minor[0]}"


def present_arch() -> str | None:
    ok, arch = gpu_status()
    return arch if ok else None
