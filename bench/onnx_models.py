"""ResNet-50 and SqueezeNet from ONNX's `light` models: tfc against ONNX Runtime, one thread each,
in the same run, at batch 1 and 32.

The light models (onnx/backend/test/data/light in the onnx wheel) have the real layer shapes but
constant weights (ConstantOfShape nodes). Here every weight, bias and batch-norm parameter is
replaced by a seeded random initializer (He-scaled convolution and dense weights, batch-norm
variances in [0.5, 1.5]), the same model bytes for both frameworks, so the outputs are worth
comparing (they are compared first). The batch is set on the input and on ResNet's flattening
Reshape.

tfc: the model imported with tfc.onnx.import_model into a Session with
intra_op_parallelism_threads=1, timed two ways: `make_callable` (a Python call per inference:
feed, run, fetch) and the program's own loop in C (Session.time_runs: the native entry point
without Python). ONNX Runtime: InferenceSession with intra_op_num_threads=1,
inter_op_num_threads=1, sequential execution, every graph optimization, timed per
`session.run` call. Each figure is the median milliseconds per inference call over rounds, the
frameworks' rounds interleaved so a change of the machine's load hits them alike; the 1-minute
load average is printed before and after.

Run with a python that has onnx and onnxruntime (`pip install -e .[bench]`):
    PYTHONPATH=. python bench/onnx_models.py [--rounds 5] [--batches 1,32]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import tfc  # noqa: E402

LIGHT = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
MODELS = ("resnet50", "squeezenet")


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "n/a"


def _random_parameter(role: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A value for the parameter `role` (op type and input slot) of `shape`."""
    if role in ("Conv:1", "Gemm:1"):
        fan_in = int(np.prod(shape[1:]))
        return rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
    if role in ("BatchNormalization:1", "BatchNormalization:4"):  # scale, variance
        return rng.uniform(0.5, 1.5, shape)
    return rng.standard_normal(shape) * 0.1  # biases, batch-norm shifts and means


def with_random_weights(name: str, batch: int, seed: int = 0) -> onnx.ModelProto:
    """The light model `name` at `batch` with every float parameter seeded random."""
    model = onnx.load(str(LIGHT / f"light_{name}.onnx"))
    graph = model.graph
    consumers = {}
    for node in graph.node:
        for slot, value in enumerate(node.input):
            consumers.setdefault(value, f"{node.op_type}:{slot}")
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {}
    kept = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape":  # a weight: its shape is an initializer
            shape = tuple(int(d) for d in initializers[node.input[0]])
            role = consumers.get(node.output[0], "")
            values[node.output[0]] = _random_parameter(role, shape, rng)
        else:
            kept.append(node)
    for key, value in initializers.items():
        role = consumers.get(key, "")
        op_type = role.split(":")[0]
        if value.dtype == np.float32 and op_type in ("Conv", "Gemm", "BatchNormalization"):
            values[key] = _random_parameter(role, value.shape, rng)
        elif role == "Reshape:1":  # the flattening to [1, features]
            values[key] = np.array([batch, *value[1:]], dtype=value.dtype)
        elif key not in values and role and not role.startswith("ConstantOfShape"):
            values[key] = value
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(
        numpy_helper.from_array(v.astype(np.float32) if v.dtype == np.float64 else v, k)
        for k, v in values.items()
    )
    parameters = set(values) | set(initializers)  # unused ones dropped
    inputs = [i for i in graph.input if i.name not in parameters]
    del graph.input[:]
    graph.input.extend(inputs)
    (fed,) = graph.input  # extend copied the messages: set the batch on the graph's own
    fed.type.tensor_type.shape.dim[0].dim_value = batch
    del graph.value_info[:]  # the exporter's shapes are batch 1's
    for out in graph.output:
        out.type.tensor_type.shape.dim[0].dim_value = batch
    model.ir_version = max(model.ir_version, 4)  # initializers need not be graph inputs
    onnx.checker.check_model(model)
    return model


class Tfc:
    def __init__(self, model: onnx.ModelProto) -> None:
        graph, inputs, outputs = tfc.onnx.import_model(model)
        config = tfc.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        self.sess = tfc.Session(graph=graph, config=config)
        self.fed, self.out = inputs[0], outputs[0]
        self.call = self.sess.make_callable(self.out, feed_list=[self.fed])

    def loop_seconds(self, x: np.ndarray, runs: int) -> float:
        return self.sess.time_runs(self.out, {self.fed: x}, runs=runs)


def ort_options() -> ort.SessionOptions:
    """ONNX Runtime's settings for the comparison: 1 thread, every graph optimization."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return options


class OnnxRuntime:
    def __init__(self, model: onnx.ModelProto) -> None:
        options = ort_options()
        self.sess = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        self.fed = self.sess.get_inputs()[0].name

    def call(self, x: np.ndarray) -> np.ndarray:
        return self.sess.run(None, {self.fed: x})[0]


def seconds(call: Callable[[np.ndarray], object], x: np.ndarray, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        call(x)
    return (time.perf_counter() - start) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seconds", type=float, default=1.0, help="per round and framework")
    args = parser.parse_args()
    print(f"load average {loadavg()}; 1 thread; median of {args.rounds} rounds, ms per call")
    print(f"{'model':11} {'batch':>5} {'tfc call':>9} {'tfc C loop':>10} {'ORT':>9} "
          f"{'call/ORT':>8} {'loop/ORT':>8} {'max rel diff':>12}")  # fmt: skip
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            model = with_random_weights(name, batch)
            ours, theirs = Tfc(model), OnnxRuntime(model)
            x = np.random.default_rng(1).random((batch, 3, 224, 224), np.float32)
            a, b = ours.call(x), theirs.call(x)
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5 * np.abs(b).max())
            diff = float(np.abs(a - b).max() / np.abs(b).max())
            once = max(seconds(ours.call, x, 1), seconds(theirs.call, x, 1))
            runs = max(2, int(args.seconds / once))
            t_call, t_loop, t_ort = [], [], []
            for _ in range(args.rounds):
                t_call.append(seconds(ours.call, x, runs))
                t_loop.append(ours.loop_seconds(x, runs))
                t_ort.append(seconds(theirs.call, x, runs))
            c, loop, o = (statistics.median(t) * 1e3 for t in (t_call, t_loop, t_ort))
            print(f"{name:11} {batch:5d} {c:9.2f} {loop:10.2f} {o:9.2f} {c / o:8.2f} "
                  f"{loop / o:8.2f} {diff:12.1e}", flush=True)  # fmt: skip
            ours.sess.close()
    print(f"load average {loadavg()}")


if __name__ == "__main__":
    main()
