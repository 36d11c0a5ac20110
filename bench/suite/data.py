"""The synthetic data and the initial weights that every framework's run starts from.

Data: N_BATCHES batches of features uniform in [0, 1) and labels uniform over the classes,
from a fixed NumPy seed; runs cycle through the batches in order (batch 0 is step 1's).
Weights: tfc's initial weights of the model (Glorot-uniform kernels, zero biases), so tfc's
native executables, which run their own init program, start from the same values.
Everything is written as one .npz per workload: x, y, and w0, w1, ... (layer order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suite import models_tfc, workloads

N_BATCHES = 4
SEED = 2024


def make(w: dict) -> dict:
    """{"x": [N_BATCHES*batch, *input], "y": int32 labels, "weights": [arrays]}."""
    rng = np.random.default_rng(SEED)
    rows = N_BATCHES * w["batch"]
    x = rng.random((rows, *workloads.input_shape(w)), dtype=np.float32)
    y = rng.integers(0, workloads.n_classes(w), size=rows).astype(np.int32)
    return {"x": x, "y": y, "weights": models_tfc.initial_weights(w)}


def write(w: dict, directory: Path) -> Path:
    d = make(w)
    path = Path(directory) / f"{w['name']}.npz"
    arrays = {f"w{i}": a for i, a in enumerate(d["weights"])}
    np.savez(path, x=d["x"], y=d["y"], **arrays)
    return path


def read(path: str | Path) -> dict:
    with np.load(path) as f:
        n = sum(1 for k in f.files if k.startswith("w"))
        return {"x": f["x"], "y": f["y"], "weights": [f[f"w{i}"] for i in range(n)]}


def batch(d: dict, w: dict, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Batch i (cyclic) of the data: (features, labels)."""
    b = w["batch"]
    k = (i % N_BATCHES) * b
    return d["x"][k : k + b], d["y"][k : k + b]


def reference_loss(d: dict, w: dict) -> float:
    """Step 1's loss (batch 0, initial weights) computed with NumPy in float64: the mean sparse
    softmax cross entropy, for training and inference alike."""
    x, y = batch(d, w, 0)
    ws = [a.astype(np.float64) for a in d["weights"]]
    net = x.astype(np.float64)
    if w["model"] == "lenet":
        net = _pool(np.maximum(_conv(_pad(net, 2), ws[0]) + ws[1], 0))
        net = _pool(np.maximum(_conv(net, ws[2]) + ws[3], 0))
        net = net.reshape(len(net), -1)
        ws = ws[4:]
    for i in range(0, len(ws), 2):
        net = net @ ws[i] + ws[i + 1]
        if i + 2 < len(ws):
            net = np.maximum(net, 0)
    z = net - net.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(y)), y].mean())


def _pad(x, p):
    return np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))


def _conv(x, k):
    """VALID convolution, NHWC input, HWIO kernel."""
    kh, kw = k.shape[:2]
    n, h, wd, c = x.shape
    patches = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))
    # patches: [n, h-kh+1, w-kw+1, c, kh, kw]
    return np.einsum("nhwcij,ijco->nhwo", patches, k)


def _pool(x):
    n, h, w, c = x.shape
    return x[:, : h // 2 * 2, : w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
