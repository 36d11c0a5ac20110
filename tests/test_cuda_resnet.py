"""The ResNet of samples/resnet_cifar.py (bench/cuda_train.py's resnet configs) on the GPU and
under CUDA device emulation, against the CPU build: one residual block per stage on 8x8 images
(the stride-2 convolutions, their gradients, batch norm in training mode and its moving averages
all in), two SGD steps at batch 2, losses and every variable to 1e-4."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_devices import DEVICES

import tfc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "samples"))
from resnet_cifar import training_step  # noqa: E402

BATCH, SIZE, STEPS = 2, 8, 2


def _train(monkeypatch, device: str) -> tuple[list, dict]:
    rng = np.random.default_rng(7)
    xb = rng.random((BATCH, SIZE, SIZE, 3), np.float32)
    yb = rng.integers(0, 10, BATCH).astype(np.int64)
    graph = tfc.Graph()  # a fresh graph per device: the same seed, the same initial weights
    with graph.as_default():
        tfc.set_random_seed(3)
        x = tfc.placeholder(tfc.float32, [None, SIZE, SIZE, 3])
        y = tfc.placeholder(tfc.int64, [None])
        loss, train = training_step(x, y, blocks=1, learning_rate=0.1)
        init = tfc.global_variables_initializer()
    monkeypatch.setenv("TFC_DEVICE", device)
    with tfc.Session(graph=graph) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], {x: xb, y: yb})[0] for _ in range(STEPS)]
        weights = {v: sess.read_variable(v) for v in sorted(sess.initialized_variables())}
        if device == "gpu":
            assert any(p.on_device for p in sess._programs.values())
    return losses, weights


# the CPU's numbers are the reference: built at -O1 (conftest.quick_builds: -O3's numbers, a
# fraction of gcc's time on the ResNet's program); the CUDA programs under test build as always
@pytest.mark.usefixtures("quick_builds")
@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_resnet_training_steps_on_gpu_equal_cpu(cuda_device, monkeypatch):
    cpu_losses, cpu_weights = _train(monkeypatch, "cpu")
    gpu_losses, gpu_weights = _train(monkeypatch, "gpu")
    assert cpu_losses[1] < cpu_losses[0]  # the step trains
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4, atol=1e-4)
    assert cpu_weights.keys() == gpu_weights.keys()
    assert any("moving_mean" in name for name in cpu_weights)
    for name in cpu_weights:
        np.testing.assert_allclose(
            gpu_weights[name], cpu_weights[name], rtol=1e-4, atol=1e-4, err_msg=name
        )
