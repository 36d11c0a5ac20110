"""LeNet-5 on the CPU: tfc's training step and inference vs PyTorch eager and ONNX Runtime, with
tfc's time per kernel; `--kernels` times each convolution kernel with each algorithm.

The model is samples/lenet_model.py (5x5 convolutions 1->6 SAME and 6->16 VALID, ReLU, 2x2 max
pooling, dense 400-120-84-10, mean sparse softmax cross entropy, Adam). PyTorch runs the same
network in NCHW from tfc's initial weights (the step-1 losses are printed: they agree), ONNX
Runtime the same inference graph built with onnx.helper. Everything on one thread; each figure
is the median over rounds of many steps, the rounds of all frameworks interleaved so a change
of the machine's load hits them alike; the 1-minute load average is printed before and after.
tfc's steps are timed by a loop in C (tfc.tools.profile.time_runs), the same feeds each step.

Run: pip install -e '.[bench]' && python bench/lenet_kernels.py [--rounds 11] [--kernels]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples"))

import tfc  # noqa: E402
from tfc.tools.profile import profile, time_runs  # noqa: E402

TRAIN_BATCH = 64


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "n/a"


def median_ms(rounds: list[float]) -> float:
    return statistics.median(rounds) * 1e3


# -- tfc --------------------------------------------------------------------------------------
class TfcLeNet:
    """The sample's graph in a session: a training step at TRAIN_BATCH, inference at any batch."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        import lenet_model

        self.graph = tfc.Graph()
        with self.graph.as_default():
            sigs = lenet_model.signatures()
            self.train, self.predict = sigs["train"], sigs["predict"]
            self.sess = tfc.Session(graph=self.graph)
            self.sess.run(tfc.global_variables_initializer())
            self.weights = {
                v.op.name: self.sess.read_variable(v.op.name) for v in tfc.trainable_variables()
            }
        self.train_feed = {self.train["inputs"]["features"]: x, self.train["inputs"]["labels"]: y}
        self.train_fetches = [self.train["loss"], self.train["train_op"]]

    def first_loss(self) -> float:
        return float(self.sess.run(self.train_fetches, self.train_feed)[0])

    def infer_feed(self, x: np.ndarray) -> dict:
        return {self.predict["inputs"]["features"]: x}

    def time_train(self, steps: int) -> float:
        return time_runs(self.sess, self.train_fetches, self.train_feed, steps)

    def time_infer(self, x: np.ndarray, steps: int) -> float:
        probs = self.predict["outputs"]["probabilities"]
        return time_runs(self.sess, probs, self.infer_feed(x), steps)

    def profile_table(self, fetches, feed, runs: int, limit: int = 14) -> str:
        return profile(self.sess, fetches, feed, runs=runs).table(limit=limit)


# -- PyTorch ----------------------------------------------------------------------------------
def torch_lenet(weights: dict):
    """The same network in NCHW with tfc's weights (HWIO filters -> OIHW; fc3's rows reordered
    from tfc's (h, w, c) flattening to PyTorch's (c, h, w))."""
    import torch

    class LeNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = torch.nn.Conv2d(6, 16, 5)
            self.fc3 = torch.nn.Linear(400, 120)
            self.fc4 = torch.nn.Linear(120, 84)
            self.logits = torch.nn.Linear(84, 10)

        def forward(self, x):
            f = torch.nn.functional
            x = f.max_pool2d(f.relu(self.conv1(x)), 2)
            x = f.max_pool2d(f.relu(self.conv2(x)), 2)
            x = f.relu(self.fc3(x.flatten(1)))
            x = f.relu(self.fc4(x))
            return self.logits(x)

    model = LeNet()
    fc3 = weights["fc3/kernel"].reshape(5, 5, 16, 120).transpose(2, 0, 1, 3).reshape(400, 120)
    values = {
        "conv1.weight": weights["conv1/kernel"].transpose(3, 2, 0, 1),
        "conv1.bias": weights["conv1/bias"],
        "conv2.weight": weights["conv2/kernel"].transpose(3, 2, 0, 1),
        "conv2.bias": weights["conv2/bias"],
        "fc3.weight": fc3.T,
        "fc3.bias": weights["fc3/bias"],
        "fc4.weight": weights["fc4/kernel"].T,
        "fc4.bias": weights["fc4/bias"],
        "logits.weight": weights["logits/kernel"].T,
        "logits.bias": weights["logits/bias"],
    }
    model.load_state_dict({k: torch.tensor(np.ascontiguousarray(v)) for k, v in values.items()})
    return model


class TorchLeNet:
    def __init__(self, weights: dict, x: np.ndarray, y: np.ndarray) -> None:
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.model = torch_lenet(weights)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.002)
        self.x = torch.tensor(x.transpose(0, 3, 1, 2).copy())
        self.y = torch.tensor(y.astype(np.int64))

    def step(self) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def time_train(self, steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            self.step()
        return (time.perf_counter() - start) / steps

    def time_infer(self, x: np.ndarray, steps: int) -> float:
        xt = self.torch.tensor(x.transpose(0, 3, 1, 2).copy())
        with self.torch.inference_mode():
            start = time.perf_counter()
            for _ in range(steps):
                self.torch.softmax(self.model(xt), dim=1)
            return (time.perf_counter() - start) / steps


# -- ONNX Runtime -----------------------------------------------------------------------------
def onnx_lenet(weights: dict) -> bytes:
    """The inference graph (NCHW input) as an ONNX model, built node by node."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    fc3 = weights["fc3/kernel"].reshape(5, 5, 16, 120).transpose(2, 0, 1, 3).reshape(400, 120)
    inits = {
        "w1": weights["conv1/kernel"].transpose(3, 2, 0, 1),
        "b1": weights["conv1/bias"],
        "w2": weights["conv2/kernel"].transpose(3, 2, 0, 1),
        "b2": weights["conv2/bias"],
        "w3": fc3,
        "b3": weights["fc3/bias"],
        "w4": weights["fc4/kernel"],
        "b4": weights["fc4/bias"],
        "w5": weights["logits/kernel"],
        "b5": weights["logits/bias"],
    }
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], **pool),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], **pool),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["g3"]),
        helper.make_node("Relu", ["g3"], ["r3"]),
        helper.make_node("Gemm", ["r3", "w4", "b4"], ["g4"]),
        helper.make_node("Relu", ["g4"], ["r4"]),
        helper.make_node("Gemm", ["r4", "w5", "b5"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "lenet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(np.ascontiguousarray(v, np.float32), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


class OrtLeNet:
    def __init__(self, weights: dict) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            onnx_lenet(weights), options, providers=["CPUExecutionProvider"]
        )

    def run(self, x: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"x": x.transpose(0, 3, 1, 2).copy()})[0]

    def time_infer(self, x: np.ndarray, steps: int) -> float:
        xt = {"x": x.transpose(0, 3, 1, 2).copy()}
        start = time.perf_counter()
        for _ in range(steps):
            self.session.run(None, xt)
        return (time.perf_counter() - start) / steps


# -- the comparison ---------------------------------------------------------------------------
def interleaved(timers: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median seconds per step of each timer, its rounds interleaved with the others'."""
    for timer in timers.values():  # warm-up: builds, caches, allocators
        timer()
    samples: dict[str, list[float]] = {k: [] for k in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            samples[name].append(timer())
    return {k: statistics.median(v) for k, v in samples.items()}


def table(title: str, medians: dict[str, float], reference: str) -> str:
    header = f"| implementation | ms/step | vs {reference} |"
    lines = [title, "", header, "|---|---:|---:|"]
    ref = medians.get(reference)
    for name, seconds in medians.items():
        ratio = f"{seconds / ref:.2f}x" if ref else "n/a"
        lines.append(f"| {name} | {seconds * 1e3:.4f} | {ratio} |")
    return "\n".join(lines) + "\n"


def compare(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((TRAIN_BATCH, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, TRAIN_BATCH).astype(np.int32)
    net = TfcLeNet(x, y)
    peers_missing = []
    try:
        torch_net = TorchLeNet(net.weights, x, y)
    except ImportError:
        torch_net = None
        peers_missing.append("PyTorch (pip install torch)")
    try:
        ort_net = OrtLeNet(net.weights)
    except ImportError:
        ort_net = None
        peers_missing.append("ONNX Runtime (pip install onnxruntime onnx)")

    print(f"LeNet-5, 1 thread, medians of {args.rounds} interleaved rounds; load {loadavg()}")
    if peers_missing:
        print("missing peers: " + ", ".join(peers_missing))
    # the same computation: probabilities and step-1 losses from the same weights and batch
    if ort_net is not None:
        probs = net.sess.run(net.predict["outputs"]["probabilities"], net.infer_feed(x[:4]))
        diff = np.abs(probs - ort_net.run(x[:4])).max()
        print(f"max |tfc - ONNX Runtime| probability: {diff:.2e}")
    print(f"step-1 loss: tfc {net.first_loss():.6f}", end="")
    if torch_net is not None:
        print(f", PyTorch {torch_net.step():.6f}", end="")
    print("\n")

    timers = {"tfc": lambda: net.time_train(args.train_steps)}
    if torch_net is not None:
        timers[f"PyTorch {torch_net.torch.__version__} eager"] = lambda: torch_net.time_train(
            args.train_steps
        )
    train = interleaved(timers, args.rounds)
    peer = min((v for k, v in train.items() if k != "tfc"), default=None)
    print(table(f"training step, batch {TRAIN_BATCH}", train, "tfc"))
    if peer:
        print(f"tfc / best peer: {train['tfc'] / peer:.2f} (issue 5 target: <= 0.40)\n")

    for batch, steps, target in ((1, args.infer_steps, 0.50), (64, args.train_steps, 0.75)):
        xb = x[:batch]
        timers = {"tfc": lambda xb=xb, s=steps: net.time_infer(xb, s)}
        if ort_net is not None:
            timers["ONNX Runtime"] = lambda xb=xb, s=steps: ort_net.time_infer(xb, s)
        if torch_net is not None:
            timers["PyTorch eager"] = lambda xb=xb, s=steps: torch_net.time_infer(xb, s)
        infer = interleaved(timers, args.rounds)
        print(table(f"inference, batch {batch}", infer, "tfc"))
        if "ONNX Runtime" in infer:
            ratio = infer["tfc"] / infer["ONNX Runtime"]
            print(f"tfc / ONNX Runtime: {ratio:.2f} (issue 5 target: <= {target:.2f})\n")

    print("where tfc's time goes (TFC_PROFILE build, per kernel):\n")
    print(net.profile_table(net.train_fetches, net.train_feed, args.train_steps))
    probs = net.predict["outputs"]["probabilities"]
    print(net.profile_table(probs, net.infer_feed(x[:1]), args.infer_steps, limit=8))
    print(net.profile_table(probs, net.infer_feed(x), args.train_steps, limit=8))
    print(f"load after: {loadavg()}")


# -- the convolution kernels alone ------------------------------------------------------------
KERNEL_SHAPES = {  # x shape, filter shape, padding
    "LeNet conv1 1->6 5x5, b=64": ((64, 28, 28, 1), (5, 5, 1, 6), "SAME"),
    "LeNet conv2 6->16 5x5, b=64": ((64, 14, 14, 6), (5, 5, 6, 16), "VALID"),
    "32->32 3x3 16x16, b=8": ((8, 16, 16, 32), (3, 3, 32, 32), "SAME"),
    "64->64 3x3 16x16, b=8": ((8, 16, 16, 64), (3, 3, 64, 64), "SAME"),
    "128->128 3x3 8x8, b=8": ((8, 8, 8, 128), (3, 3, 128, 128), "SAME"),
}


def kernels(args: argparse.Namespace) -> None:
    from tfc.ops.registry import apply_op

    rng = np.random.default_rng(0)
    print(f"convolution kernels alone, f32, 1 thread, medians of {args.rounds}; load {loadavg()}")
    print()
    from tfc.ops.conv_algo import ALGORITHMS  # "columns" runs direct where it does not fit

    print("| shape | op | " + " | ".join(f"{a} ms | GFLOP/s" for a in ALGORITHMS) + " |")
    print("|---|---|" + "---:|---:|" * len(ALGORITHMS))
    for name, (xs, fs, pad) in KERNEL_SHAPES.items():
        x = rng.standard_normal(xs).astype(np.float32)
        f = rng.standard_normal(fs).astype(np.float32)
        graph = tfc.Graph()
        with graph.as_default():
            xt, ft = tfc.placeholder(tfc.float32, xs), tfc.placeholder(tfc.float32, fs)
            ops, dyt = {}, None
            for algorithm in ALGORITHMS:
                attrs = {"strides": [1, 1, 1, 1], "padding": pad, "_algorithm": algorithm}
                y = apply_op("Conv2D", [xt, ft], attrs).outputs[0]
                if dyt is None:
                    dyt = tfc.placeholder(tfc.float32, y.shape.as_list())
                sizes_x, sizes_f = tfc.constant(list(xs)), tfc.constant(list(fs))
                dx = apply_op("Conv2DBackpropInput", [sizes_x, ft, dyt], attrs).outputs[0]
                df = apply_op("Conv2DBackpropFilter", [xt, sizes_f, dyt], attrs).outputs[0]
                ops[algorithm] = {"forward": y, "backprop input": dx, "backprop filter": df}
            dy = rng.standard_normal(y.shape.as_list()).astype(np.float32)
            feed = {xt: x, ft: f, dyt: dy}
            flops = 2 * dy.size * fs[0] * fs[1] * fs[2]
            with tfc.Session(graph=graph) as sess:
                for kind in ("forward", "backprop input", "backprop filter"):
                    times = {}
                    for algorithm in ALGORITHMS:
                        fetch = ops[algorithm][kind]
                        runs = max(3, int(2e8 // flops))
                        time_runs(sess, fetch, feed, 1)
                        times[algorithm] = statistics.median(
                            time_runs(sess, fetch, feed, runs) for _ in range(args.rounds)
                        )
                    cells = [f"{t * 1e3:.3f} | {flops / t * 1e-9:.1f}" for t in times.values()]
                    print(f"| {name} | {kind} | " + " | ".join(cells) + " |")
    print(f"\nload after: {loadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--train-steps", type=int, default=50, help="steps per round")
    parser.add_argument("--infer-steps", type=int, default=500, help="b=1 steps per round")
    parser.add_argument("--kernels", action="store_true", help="time the conv kernels alone")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.kernels:
        kernels(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
