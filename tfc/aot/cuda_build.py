"""How `tfc compile --target cuda` builds its .cu programs: by nvcc for a GPU, or by the host C++
compiler under CUDA device emulation (TFC_CUDA=emulate, `--cuda-emulate`).

Either way the programs become objects that the C drivers (data readers, checkpoint I/O,
progress) link with into `train` and `predict`; the two builds differ only in the compiler, its
flags and the libraries of the link, which the build and the Makefile both take from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CudaToolchain:
    """The compiler of the .cu programs (`compiler` with `flags`, each program to an object)
    and the libraries the executables link (`libs`). The Makefile defines the compiler and its
    flags as the make variables `compiler_var` and `flags_var` (overridable like CC), with
    `comment` above them."""

    compiler: str
    flags: list[str]
    libs: list[str]
    compiler_var: str
    flags_var: str
    what: str  # what the compiler is, and how to choose another: for a missing compiler's error
    comment: list[str] = field(default_factory=list)
    emulated: bool = False

    def makefile_fields(self) -> dict:
        """What tfc/templates/c/Makefile.j2 interpolates for the .cu programs: the link
        libraries, the toolchain's variable lines (after its comment) and the .cu rule."""
        return {
            "libs": self.libs,
            "toolchain": [
                *(f"# {line}" for line in self.comment),
                f"{self.compiler_var} ?= {self.compiler}",
                f"{self.flags_var} ?= {' '.join(self.flags)}",
            ],
            "cu_rules": [{"compiler_var": self.compiler_var, "flags_var": self.flags_var}],
        }


def nvcc_toolchain(cuda_arch: str | Sequence[str] | None = None) -> CudaToolchain:
    """nvcc for the GPU present (or `cuda_arch`), linked with the CUDA runtime (and cuBLAS)."""
    from tfc.backend.cuda import executable_flags

    flags, libs = executable_flags(cuda_arch)
    # "nvcc" as the Makefile's NVCC default names it, so both builds run the same compiler
    return CudaToolchain("nvcc", flags, libs, "NVCC", "NVCCFLAGS", "the CUDA toolkit's compiler")


def emulated_toolchain() -> CudaToolchain:
    """The host C++ compiler with the device emulation's flags (tfc/backend/cuda_emu.py): every
    kernel launch of the executables runs on the CPU. The programs are C++, so the link adds
    libstdc++; no CUDA library is needed."""
    from tfc.backend.cuda_emu import host_cxx, object_flags

    comment = [
        "CUDA device emulation: the .cu programs are built by the host C++ compiler and every",
        "kernel launch runs on the CPU (runtime/include/tfc_cuda_emu.h); no GPU or nvcc needed.",
    ]
    what = "the host C++ compiler of CUDA device emulation; TFC_CXX or CXX names another"
    flags = object_flags()
    # sanitizers of TFC_CUDA_EMU_FLAGS instrument the programs: the link needs their runtimes
    libs = [f for f in flags if f.startswith("-fsanitize")] + ["-lstdc++"]
    return CudaToolchain(
        host_cxx(), flags, libs, "CUDA_EMU_CXX", "CUDA_EMU_FLAGS", what, comment, emulated=True
    )


def cuda_toolchain(cuda_arch: str | Sequence[str] | None, emulate: bool | None) -> CudaToolchain:
    """The toolchain of `tfc compile --target cuda`: emulated when `emulate` says so (None: when
    TFC_CUDA=emulate), else nvcc. `cuda_arch` means nothing to the emulation: no device code is
    compiled for an architecture there."""
    if emulate is None:
        from tfc.backend.cuda_emu import emulating

        emulate = emulating()
    return emulated_toolchain() if emulate else nvcc_toolchain(cuda_arch)
