"""CUDA device emulation: generated CUDA programs built by the host C++ compiler, run on the CPU.

`TFC_CUDA=emulate` in the environment selects it: programs placed on /gpu:0 (or every program,
with TFC_DEVICE=gpu) are then the same generated .cu source compiled with `c++ -x c++` against
runtime/include/tfc_cuda_emu.h, which runs each kernel launch's threads on the CPU (fibers where
a block synchronizes). Emulated "device memory" is host memory, allocated through a small library
built from the same header, so the session's device buffers take the same path as on a GPU. It
needs neither a GPU nor nvcc: the tests use it to check the CUDA backend's numbers anywhere.

Environment: TFC_CXX (or CXX) picks the compiler, TFC_CUDA_EMU_FLAGS adds flags (sanitizers).
`tfc compile --target cuda` builds its executables' programs the same way under emulation
(tfc/aot/cuda_build.py).
"""

from __future__ import annotations

import os
import shlex
from functools import cache
from pathlib import Path
from typing import Any

import cffi

from tfc.backend.cc import cache_key, cached_build, precompiled_header_flags, runtime_dir

# the programs are C++ (templates, overloads); warnings are errors, as nvcc's builds make them
EMULATION_FLAGS = [
    "-x", "c++", "-std=c++17", "-O0", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
    "-fno-math-errno", "-DTFC_CUDA_DEVICE_EMULATION", "-DTFC_NO_CUBLAS",
]  # fmt: skip
# -O0: building dominates the emulated tests (the op tests' programs are large, and CI builds them
# cold); test_cuda.py's emulated cases took 25 s cold at -O0 and 33 s at -O1 on 2 cores, with the
# LeNet training steps no slower. TFC_CUDA_EMU_FLAGS=-O2 overrides it.

_RUNTIME_SOURCE = """/* the emulated CUDA runtime API, for tfc's Python side (device buffers) */
#define TFC_CUDA_EMU_EXPORT
#include "tfc_cuda_emu.h"
"""

# the CUDA runtime calls tfc makes from Python: libcudart's, or the emulated library's
RUNTIME_CDEF = """
int cudaGetDeviceCount(int *count);
int cudaDeviceGetAttribute(int *value, int attr, int device);
int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);
int cudaMemcpy(void *dst, const void *src, size_t count, int kind);
int cudaMemset(void *ptr, int value, size_t count);
int cudaDeviceSynchronize(void);
const char *cudaGetErrorString(int error);
"""

DESCRIPTION = "CUDA device emulation on the CPU (TFC_CUDA=emulate), not a GPU"


def emulating() -> bool:
    """Whether CUDA programs run emulated on the CPU: TFC_CUDA=emulate (else, or TFC_CUDA=gpu,
    they need a GPU)."""
    mode = os.environ.get("TFC_CUDA", "").strip().lower()
    if mode not in ("", "gpu", "emulate"):
        raise ValueError(f"TFC_CUDA={mode!r}: expected 'gpu' (the default) or 'emulate'")
    return mode == "emulate"


def host_cxx() -> str:
    return os.environ.get("TFC_CXX") or os.environ.get("CXX") or "c++"


def emulation_flags() -> list[str]:
    return EMULATION_FLAGS + shlex.split(os.environ.get("TFC_CUDA_EMU_FLAGS", ""))


def object_flags() -> list[str]:
    """The emulation's flags compiling a program to an object (`tfc compile --target cuda`
    executables, which link the objects with the C runtime drivers): a shared library's less
    -shared."""
    return [f for f in emulation_flags() if f != "-shared"]


def compile_emulated(source: str, name: str = "program") -> Path:
    """The generated CUDA `source` compiled by the host C++ compiler into a shared library whose
    kernels run on the CPU; cached by content, flags and compiler like every build."""
    cxx, flags = host_cxx(), emulation_flags()
    include = str(runtime_dir() / "include")

    def command(src: Path, out: Path) -> list[str]:
        first = precompiled_header_flags(cxx, flags, source)
        return [cxx, *flags, *first, "-I", include, "-o", str(out), str(src)]

    return cached_build(
        source, name, cache_key(source, flags, cxx), ".cu", ".so",
        f"{cxx} (CUDA device emulation)", command,
        rejects=lambda proc: proc.returncode != 0 or "warning" in proc.stderr,
    )  # fmt: skip


@cache
def _runtime(flags: str) -> tuple[cffi.FFI, Any]:
    path = compile_emulated(_RUNTIME_SOURCE, name="cuda_emulated_runtime")
    ffi = cffi.FFI()
    ffi.cdef(RUNTIME_CDEF)
    return ffi, ffi.dlopen(str(path))


def emulated_runtime() -> tuple[cffi.FFI, Any]:
    """(ffi, library) of the emulated CUDA runtime API: the same functions DeviceBuffer calls in
    libcudart, allocating and copying host memory."""
    return _runtime(" ".join(emulation_flags()))
