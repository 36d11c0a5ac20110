"""CUDA device emulation itself (tfc/backend/cuda_emu.py, runtime/include/tfc_cuda_emu*.h): its
barriers interleave a block's threads, a divergent barrier and a bad launch are reported, its
builds reject warnings, and an emulated training step is clean under ASan and UBSan. The CUDA
programs' numbers under emulation are checked by test_cuda.py's tests ("emulated" cases)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import cffi
import numpy as np
import pytest

import tfc
from tfc.backend.cc import CompileError
from tfc.backend.cuda_emu import EMULATION_FLAGS, compile_emulated, host_cxx

ROOT = Path(__file__).resolve().parent.parent
needs_cxx = pytest.mark.skipif(shutil.which(host_cxx()) is None, reason="no host C++ compiler")

# kernels written for these tests: a block reverses its slice of x through shared memory (every
# thread must see the others' writes: the barrier has to interleave them), with 2-D blocks so
# threadIdx.y counts; and a kernel whose thread 1 alone reaches a barrier
KERNELS = r"""
#include "tfc_cuda.h"

static __global__ void reverse_g(const int *x, int *y) {
    __shared__ int sh[32];
    const unsigned t = threadIdx.y * blockDim.x + threadIdx.x, n = blockDim.x * blockDim.y;
    const unsigned base = blockIdx.x * n;
    sh[t] = x[base + t];
    __syncthreads();
    y[base + t] = sh[n - 1 - t] * 100 + (int)blockIdx.x;
}

static __global__ void divergent_g(int *y) {
    if (threadIdx.x == 1) __syncthreads();
    y[threadIdx.x] = 1;
}

extern "C" int emu_reverse(const int *x, int *y, int blocks) {
    TFC_CUDA_LAUNCH(reverse_g, blocks, dim3(8, 4), x, y);
    return cudaGetLastError();
}

extern "C" int emu_bad_launch(int *y) {
    TFC_CUDA_LAUNCH(divergent_g, 1, 2048, y); /* more threads than a block holds */
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? -1 : (int)e;
}

extern "C" const char *emu_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }

extern "C" void emu_divergent(int *y) { TFC_CUDA_LAUNCH(divergent_g, 1, 4, y); }
"""
CDEF = """
int emu_reverse(const int *x, int *y, int blocks);
int emu_bad_launch(int *y);
const char *emu_error_string(int e);
void emu_divergent(int *y);
"""


def load_kernels() -> tuple[cffi.FFI, object]:
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    return ffi, ffi.dlopen(str(compile_emulated(KERNELS, name="emulation_kernels")))


@pytest.fixture(scope="module")
def kernels():
    return load_kernels()


@needs_cxx
def test_barriers_interleave_a_blocks_threads(kernels):
    ffi, lib = kernels
    blocks = 3
    x = np.arange(32 * blocks, dtype=np.int32)
    y = np.zeros_like(x)
    assert lib.emu_reverse(ffi.from_buffer("int[]", x), ffi.from_buffer("int[]", y), blocks) == 0
    expected = x.reshape(blocks, 32)[:, ::-1] * 100 + np.arange(blocks)[:, None]
    np.testing.assert_array_equal(y.reshape(blocks, 32), expected)


@needs_cxx
def test_a_bad_launch_is_a_cuda_error_naming_the_emulation(kernels):
    ffi, lib = kernels
    y = np.zeros(4, np.int32)
    code = lib.emu_bad_launch(ffi.from_buffer("int[]", y))
    assert code == 9  # cudaErrorInvalidConfiguration, as the CUDA runtime numbers it
    message = ffi.string(lib.emu_error_string(code)).decode()
    assert message == "invalid configuration argument (CUDA device emulation)"
    assert not y.any()  # nothing ran


@needs_cxx
def test_a_divergent_barrier_stops_the_process_with_a_message():
    script = (
        "import cffi, sys; sys.path.insert(0, 'tests'); import test_cuda_emulated as t\n"
        "import numpy as np\n"
        "ffi, lib = t.load_kernels()\n"
        "y = np.zeros(4, np.int32); lib.emu_divergent(ffi.from_buffer('int[]', y))\n"
    )
    proc = _python(script)
    assert proc.returncode != 0
    assert "__syncthreads() reached by a thread whose block's thread 0 ended" in proc.stderr
    assert "block (0,0,0), thread (1,0,0)" in proc.stderr


@needs_cxx
def test_emulated_builds_reject_warnings():
    assert {"-Wall", "-Wextra", "-Werror"} <= set(EMULATION_FLAGS)
    source = '#include "tfc_cuda.h"\nextern "C" int f(int a) { int unused; return a; }\n'
    with pytest.raises(CompileError, match="unused"):
        compile_emulated(source, name="emulation_warning")


@needs_cxx
def test_programs_on_gpu0_say_they_are_emulated(monkeypatch):
    monkeypatch.setenv("TFC_CUDA", "emulate")
    with tfc.device("/gpu:0"):
        a = tfc.placeholder(tfc.float32, [3])
        b = a * 2.0
    with tfc.Session() as sess:
        np.testing.assert_array_equal(sess.run(b, {a: np.ones(3, np.float32)}), [2.0, 2.0, 2.0])
        (program,) = sess._programs.values()
    assert program.on_device and program.emulated
    assert "emulation" in program.device and "not a GPU" in program.device
    monkeypatch.setenv("TFC_CUDA", "cuda")
    with tfc.Session() as sess, pytest.raises(ValueError, match="TFC_CUDA='cuda'"):
        sess.run(b, {a: np.ones(3, np.float32)})


def _sanitizer_runtime() -> str | None:
    """libasan's path (the Python process must load it first), if the compiler has one."""
    try:
        out = subprocess.run(
            [host_cxx(), "-print-file-name=libasan.so"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return None
    return out if os.path.isabs(out) and os.path.exists(out) else None


def _python(script: str, **env: str) -> subprocess.CompletedProcess:
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **env)
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=full_env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


@needs_cxx
@pytest.mark.skipif(_sanitizer_runtime() is None, reason="the C++ compiler has no libasan")
def test_emulated_training_step_is_asan_and_ubsan_clean():
    script = (
        "import sys; sys.path.insert(0, 'tests'); import test_cuda as t\n"
        "losses, _ = t._train('lenet_model', 1, 'gpu', None)\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('sanitized', 'libasan' in maps, 'libubsan' in maps)\n"
        "print('loss', losses[0])\n"
    )
    proc = _python(
        script,
        TFC_CUDA="emulate",
        TFC_CUDA_EMU_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all "
        "-fno-omit-frame-pointer",
        LD_PRELOAD=_sanitizer_runtime() or "",
        ASAN_OPTIONS="detect_leaks=0",  # the Python interpreter's allocations are not ours
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "sanitized True True" in proc.stdout
    loss = float(proc.stdout.split("loss")[-1])
    assert 0.5 < loss < 5.0  # ten classes from random weights: about ln(10)
