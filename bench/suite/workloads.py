"""The workloads of issue 5: models, batches, FLOPs per step and the issue's targets.

A workload is a plain dict (it travels to the worker processes as JSON):
  name, title, model ("mlp" with `sizes`, or "lenet"), mode ("train" or "infer"), batch,
  lr (Adam's learning rate, training), native (tfc runs its `tfc compile` executable),
  target: {"ratio": R, "ref": "best" | framework label} -- tfc's time / the reference's <= R.
Training is one Adam step (TF1 defaults beta1 0.9, beta2 0.999, epsilon 1e-8) on the mean
sparse softmax cross entropy; inference returns the softmax probabilities.
"""

from __future__ import annotations

MNIST = [784, 512, 512, 10]
IRIS = [4, 10, 10, 3]
LENET_IMAGE = 28  # 28x28x1 in, conv 5x5x6 SAME, pool, conv 5x5x16 VALID, pool, 120, 84, 10
ONNX = "ONNX Runtime"
JAX = "JAX jit"


def _w(name, title, model, mode, batch, ratio, ref="best", **extra):
    w = {"name": name, "title": title, "model": model, "mode": mode, "batch": batch}
    w.update(extra)
    w["target"] = {"ratio": ratio, "ref": ref}
    return w


def full() -> list[dict]:
    """Every workload of the issue, in report order."""
    return [
        _w(
            "mlp_train_b64",
            "MNIST MLP 784-512-512-10 training step, b=64",
            "mlp",
            "train",
            64,
            0.80,
            sizes=MNIST,
            lr=0.001,
        ),
        _w(
            "mlp_train_b256",
            "MNIST MLP 784-512-512-10 training step, b=256",
            "mlp",
            "train",
            256,
            0.90,
            sizes=MNIST,
            lr=0.001,
        ),
        _w(
            "lenet_train_b64",
            "LeNet-5 CNN 28x28x1 training step, b=64",
            "lenet",
            "train",
            64,
            0.40,
            lr=0.001,
        ),
        _w(
            "iris_train_b32",
            "Iris MLP 4-10-10-3 training step, b=32 (tfc: native executable)",
            "mlp",
            "train",
            32,
            0.10,
            ref=JAX,
            sizes=IRIS,
            lr=0.01,
            native=True,
        ),
        _w(
            "mlp_infer_b1",
            "MNIST MLP inference, b=1",
            "mlp",
            "infer",
            1,
            0.90,
            ref=ONNX,
            sizes=MNIST,
        ),
        _w(
            "mlp_infer_b64",
            "MNIST MLP inference, b=64",
            "mlp",
            "infer",
            64,
            0.90,
            ref=ONNX,
            sizes=MNIST,
        ),
        _w("lenet_infer_b1", "LeNet-5 inference, b=1", "lenet", "infer", 1, 0.50, ref=ONNX),
        _w("lenet_infer_b64", "LeNet-5 inference, b=64", "lenet", "infer", 64, 0.75, ref=ONNX),
    ]


# the thread-scaling target: tfc at 2 threads >= 1.7x its own 1-thread speed
SCALING_TARGET = {"workloads": ["mlp_train_b256", "lenet_train_b64"], "speedup": 1.7}


def tiny() -> list[dict]:
    """A small MLP for tests: compiles and runs in a few seconds."""
    return [
        _w(
            "tiny_train_b8",
            "tiny MLP 12-16-5 training step, b=8",
            "mlp",
            "train",
            8,
            1.0,
            sizes=[12, 16, 5],
            lr=0.01,
        ),
        _w(
            "tiny_infer_b4",
            "tiny MLP 12-16-5 inference, b=4",
            "mlp",
            "infer",
            4,
            1.0,
            ref=ONNX,
            sizes=[12, 16, 5],
        ),
    ]


def by_names(names: str) -> list[dict]:
    """The workloads of full() named in a comma-separated list, in its order; unknown names
    end the program with the known ones."""
    known = {w["name"]: w for w in full()}
    wanted = [n for n in names.split(",") if n]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; known: {', '.join(known)}")
    return [known[n] for n in wanted]


def input_shape(w: dict) -> list[int]:
    """One example's feature shape (NHWC for images)."""
    return [w["sizes"][0]] if w["model"] == "mlp" else [LENET_IMAGE, LENET_IMAGE, 1]


def n_classes(w: dict) -> int:
    return w["sizes"][-1] if w["model"] == "mlp" else 10


def layer_macs(w: dict) -> list[int]:
    """Multiply-adds of each matmul/conv layer's forward pass, per example, input to output."""
    if w["model"] == "mlp":
        s = w["sizes"]
        return [s[i] * s[i + 1] for i in range(len(s) - 1)]
    conv1 = 28 * 28 * 6 * (5 * 5 * 1)  # SAME
    conv2 = 10 * 10 * 16 * (5 * 5 * 6)  # VALID on 14x14x6
    return [conv1, conv2, 400 * 120, 120 * 84, 84 * 10]


def flops(w: dict) -> int:
    """FLOPs of one step counted as 2 per multiply-add of the matmuls and convolutions: the
    forward pass, and for training also every weight gradient and every input gradient but the
    first layer's (nobody needs the gradient of the data). Element-wise work is not counted."""
    macs = layer_macs(w)
    total = sum(macs)
    if w["mode"] == "train":
        total += sum(macs) + sum(macs[1:])
    return 2 * total * w["batch"]
