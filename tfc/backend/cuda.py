"""Building and running generated CUDA: nvcc makes a shared library (cached like the C builds),
cffi loads it; CudaProgram runs it on the state in tfc/backend/device_memory.py.

The toolkit and the CUDA runtime are found as tfc/backend/cuda_runtime.py says. Builds target
the GPU present, or the architectures given (`cuda_arch="sm_80,sm_90"`: a fat binary plus PTX of
the newest); without cuBLAS in the toolkit, GEMM uses the generated tiled kernel
(TFC_NO_CUBLAS). Nothing here needs a GPU until a program runs: a machine with nvcc and no GPU
still builds every program. With TFC_CUDA=emulate (tfc/backend/cuda_emu.py) programs run on the
CPU instead, built by the host C++ compiler.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import cffi
import numpy as np

from tfc.backend.cc import (
    CompileError,
    bind_io,
    cache_key,
    cached_build,
    load_library,
    program_error,
    runtime_dir,
)
from tfc.backend.cuda_emu import DESCRIPTION, compile_emulated, emulating
from tfc.backend.cuda_runtime import (
    CudaUnavailable,
    gpu_status,
    include_dirs,
    lib_dirs,
    nvcc,
    present_arch,
)
from tfc.backend.device_array import DeviceFeed, bind_device_io, bind_mixed_io
from tfc.backend.device_memory import DeviceBuffer, device_address
from tfc.codegen.render import staging_layout

WARNING_FLAGS = ["-Werror", "all-warnings", "-Xcompiler", "-Wall,-Wextra,-Werror"]
COMMON_FLAGS = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC", *WARNING_FLAGS]

_CDEF = """
typedef struct {{ char *msg; int64_t cap; const char *node; }} tfc_error;
int64_t {p}arena_bytes(void);
int {p}run(void *const *state, const void *const *inputs, void *const *outputs,
           const void *const *consts, void *arena_base, tfc_error *err);
int {p}run_device(void *const *state, const void *const *inputs, void *const *outputs,
                  const void *const *consts, void *arena_base, tfc_error *err);
int {p}run_host(void *const *state, const void *const *inputs, void *const *outputs,
                const void *const *consts, void *arena_base, tfc_error *err);
int {p}run_mixed(void *const *state, const void *const *inputs, void *const *outputs,
                 const void *const *consts, void *arena_base, const unsigned char *feed_on_host,
                 const unsigned char *fetch_on_host, tfc_error *err);
"""


# -- the toolkit ----------------------------------------------------------------------------------
@cache
def has_cublas() -> bool:
    """Whether the toolkit ships cuBLAS (header and library); else GEMM is the tiled kernel."""
    header = any((d / "cublas_v2.h").exists() for d in include_dirs())
    library = any(list(d.glob("libcublas.so*")) for d in lib_dirs() if d.exists())
    return header and library


def arch_flags(cuda_arch: str | Sequence[str] | None) -> list[str]:
    """nvcc's -gencode flags: machine code for each `sm_XY` given, plus PTX of the newest."""
    if cuda_arch is None:
        cuda_arch = present_arch() or "sm_80"
    archs = [cuda_arch] if isinstance(cuda_arch, str) else list(cuda_arch)
    archs = [a.strip() for part in archs for a in part.split(",") if a.strip()]
    numbers = []
    for arch in archs:
        digits = arch.removeprefix("sm_").removeprefix("compute_")
        if not digits.rstrip("a").isdigit():
            raise ValueError(f"--cuda-arch: '{arch}' is not an architecture like sm_80 or sm_90")
        numbers.append(digits)
    flags = []
    for n in numbers:
        flags += ["-gencode", f"arch=compute_{n},code=sm_{n}"]
    newest = max(numbers, key=lambda n: int(n.rstrip("a")))
    return flags + ["-gencode", f"arch=compute_{newest},code=compute_{newest}"]


def build_flags(cuda_arch: str | Sequence[str] | None = None) -> list[str]:
    flags = COMMON_FLAGS + arch_flags(cuda_arch)
    if not has_cublas():
        flags.append("-DTFC_NO_CUBLAS")
    return flags


def _link_flags() -> list[str]:
    flags = ["-shared", "-cudart", "shared"]
    for d in lib_dirs():
        if d.exists():
            flags += ["-Xlinker", f"-rpath,{d}"]
    return flags + (["-lcublas"] if has_cublas() else [])


def executable_flags(cuda_arch: str | Sequence[str] | None = None) -> tuple[list, list]:
    """(nvcc flags compiling a program to an object, the libraries linking it into an
    executable) for `tfc compile --target cuda`."""
    flags = build_flags(cuda_arch)
    libs = []
    for d in lib_dirs():
        if d.exists():
            libs += [f"-L{d}", f"-Wl,-rpath,{d}"]
    return flags, libs + ["-lcudart"] + (["-lcublas"] if has_cublas() else []) + ["-lstdc++"]


_OUTPUTS = {"shared": ".so", "object": ".o", "ptx": ".ptx", "cubin": ".cubin"}
_MODES = {"object": ["-c"], "ptx": ["--ptx"], "cubin": ["--cubin"]}  # nvcc's flag for each


def compile_cuda(
    source: str,
    name: str = "program",
    cuda_arch: str | Sequence[str] | None = None,
    output: str = "shared",
    optimize_device: bool = True,
) -> Path:
    """nvcc `source` into a shared library; or an object ("object": device and host code
    compiled, not linked), a cubin ("cubin": the device side only, through cicc's optimizer and
    ptxas, for the newest architecture given) or PTX ("ptx": the device side only, the quickest
    check), which need no GPU. Cached on disk by content like C builds. `optimize_device=False`
    runs cicc without its optimizer (-Xcicc -O0): the same front end and its diagnostics, for a
    check that nvcc accepts the source warning-free; it cuts the device side's time about
    five-fold."""
    if shutil.which(nvcc()) is None:
        raise CompileError(f"nvcc ('{nvcc()}') not found; install the CUDA toolkit or set TFC_NVCC")
    suffix = _OUTPUTS[output]
    flags = build_flags(cuda_arch)
    mode = _link_flags() if output == "shared" else _MODES[output]
    if output in ("ptx", "cubin"):  # one architecture: neither is a fat binary
        flags = [f for f in flags if not f.startswith(("-gencode", "arch="))]
        newest = arch_flags(cuda_arch)[-1].split("=")[-1]  # compute_XY
        flags += ["-arch", newest if output == "ptx" else newest.replace("compute_", "sm_")]
    if not optimize_device:
        flags += ["-Xcicc", "-O0"]
    include = str(runtime_dir() / "include")
    return cached_build(
        source, name, cache_key(source, flags + mode, nvcc()), ".cu", suffix, "nvcc",
        lambda src, out: [nvcc(), *flags, "-I", include, "-o", str(out), str(src), *mode],
        rejects=lambda proc: proc.returncode != 0 or "warning" in proc.stderr,  # -Werror
    )  # fmt: skip


# -- loading and running --------------------------------------------------------------------------
def load_cuda_library(path: Path, prefix: str = "tfc_") -> tuple[cffi.FFI, Any]:
    return load_library(path, prefix, _CDEF)


class CudaProgram:
    """One signature's program on the GPU (or on the emulated device, under TFC_CUDA=emulate):
    its device arena (with the staging of feeds and fetches) and its slots in the session's
    DeviceState. A call is one host call into the library: feeds copied in, every kernel queued
    on one stream, fetches copied out."""

    on_device = True

    def __init__(self, session: Any, lowered: Any, source: str, cuda_arch: Any = None) -> None:
        self.emulated = emulating()
        if self.emulated:
            path = compile_emulated(source, name=lowered.name)
            self.device = DESCRIPTION
        else:
            ok, why = gpu_status()
            if not ok:
                raise CudaUnavailable(
                    f"cannot run '{lowered.name}' on /gpu:0: {why} (TFC_CUDA=emulate runs CUDA "
                    "programs emulated on the CPU)"
                )
            path = compile_cuda(source, name=lowered.name, cuda_arch=cuda_arch)
            self.device = f"GPU {why}"
        self.lowered = lowered
        self.source = source
        self.session = session
        self.ffi, self.lib = load_cuda_library(path, lowered.prefix)
        self._run = getattr(self.lib, f"{lowered.prefix}run_host")
        self._run_device = getattr(self.lib, f"{lowered.prefix}run_device")
        # only a stage of a staged program has it (the compiled Program's mixed_io)
        self._run_mixed = getattr(self.lib, f"{lowered.prefix}run_mixed", None)
        ffi = self.ffi
        self.arena = DeviceBuffer(getattr(self.lib, f"{lowered.prefix}arena_bytes")())
        self._consts = []
        for value in lowered.external_consts:
            buf = DeviceBuffer(value.nbytes)
            buf.upload(value)
            self._consts.append(buf)
        self.consts = ffi.new("void *[]", [ffi.cast("void *", c.ptr) for c in self._consts] or 1)
        self.state = ffi.new("void *[]", max(len(lowered.slots), 1))
        self.inputs = ffi.new("void *[]", max(len(lowered.feeds), 1))
        self.outputs = ffi.new("void *[]", max(len(lowered.fetches), 1))
        # where run_mixed copies each host feed in, kept there until the next run
        self.feed_staging = [f["offset"] for f in staging_layout(lowered)["staged_feeds"]]
        self.feed_on_host = ffi.new("unsigned char[]", max(len(lowered.feeds), 1))
        self.fetch_on_host = ffi.new("unsigned char[]", max(len(lowered.fetches), 1))
        self.errbuf = ffi.new("char[]", 1024)
        self.err = ffi.new("tfc_error *")
        self.err.msg = self.errbuf
        self.err.cap = 1024

    def __call__(self, feeds: list, fetches_on_device: bool | list = False) -> tuple[int, list]:
        """Run on host feeds (NumPy) and/or device feeds (tfc.backend.device_array.DeviceFeed): host
        feeds and fetches go through the program's staging (run_host) unless a feed is in device
        memory or the fetches should stay there (run_device, tfc.DeviceArray results). A list
        says it per fetch (device_array.bind_mixed_io: NumPy, a new DeviceArray, or one to
        write) and runs run_mixed: device feeds in place, host ones staged, in one host call."""
        ffi = self.ffi
        device = self.session._device_state()
        for i, slot in enumerate(self.lowered.slots):
            self.state[i] = ffi.cast("void *", device.device_pointer(slot))
        self.err.node = ffi.NULL
        arena = ffi.cast("void *", self.arena.ptr)
        if isinstance(fetches_on_device, list):
            return self._call_mixed(feeds, fetches_on_device, arena)
        if not fetches_on_device and all(isinstance(f, np.ndarray) for f in feeds):
            held, results = bind_io(ffi, self.inputs, self.outputs, feeds, self.lowered.fetches)
            rc = self._run(self.state, self.inputs, self.outputs, self.consts, arena, self.err)
            return rc, results
        held, results = bind_device_io(ffi, self.inputs, self.outputs, feeds, self.lowered.fetches)
        rc = self._run_device(self.state, self.inputs, self.outputs, self.consts, arena, self.err)
        del held  # the feeds' device memory stays alive through the call
        if rc != 0 or fetches_on_device:
            return rc, results
        return rc, [r.get() for r in results]

    def _call_mixed(self, feeds: list, where: list, arena: Any) -> tuple[int, list]:
        if self._run_mixed is None:
            raise ValueError(f"'{self.lowered.name}' was rendered without run_mixed (mixed_io)")
        held, results = bind_mixed_io(
            self.ffi, self.inputs, self.outputs, self.feed_on_host, self.fetch_on_host, feeds,
            self.lowered.fetches, where,
        )  # fmt: skip
        rc = self._run_mixed(self.state, self.inputs, self.outputs, self.consts, arena,
                             self.feed_on_host, self.fetch_on_host, self.err)  # fmt: skip
        del held  # the host feeds and results stay alive through the call
        return rc, results

    def staged_feed(self, i: int) -> Any:
        """Feed i's device copy from the last run_mixed call that staged it (a host feed), as a
        DeviceFeed: valid until this program runs again."""
        spec = self.lowered.feeds[i]
        ptr = device_address(self.arena) + self.feed_staging[i]
        return DeviceFeed(ptr, tuple(spec.shape), np.dtype(spec.dtype.np), self.arena)

    def error(self, rc: int, graph: Any) -> Any:
        return program_error(self.ffi, self.errbuf, self.err, rc, graph)
