"""Where the CUDA programs of a test run: the GPU (`cuda` marker, skipped without one), or the
CPU under device emulation (TFC_CUDA=emulate, always). Parametrize a test with
`@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)`: the `cuda_device` fixture
(conftest.py) sets TFC_CUDA for it."""

from __future__ import annotations

import pytest

from tfc.backend.cuda_runtime import gpu_status

GPU_OK, GPU_WHY = gpu_status()
on_gpu = [
    pytest.mark.cuda,
    pytest.mark.skipif(not GPU_OK, reason=f"no GPU to run CUDA programs on: {GPU_WHY}"),
]
DEVICES = [pytest.param("gpu", marks=on_gpu), "emulated"]
