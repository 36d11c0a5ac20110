"""ONNX Runtime (inference): the model written with the `onnx` helper API (NCHW for LeNet,
the canonical weights as initializers), all graph optimizations, sequential execution."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from suite import data as bench_data
from suite.measure import time_steps
from suite.runners import cross_entropy, layouts, result

VERSION = f"onnxruntime {ort.__version__}"
OPSET = 17


class _Builder:
    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out


def build_model(w: dict, weights: list) -> bytes:
    g = _Builder()
    ws = list(weights)
    if w["model"] == "mlp":
        shape, net = ["N", w["sizes"][0]], "x"
    else:
        shape, net = ["N", 1, 28, 28], "x"
        for i, pads in enumerate(([2, 2, 2, 2], [0, 0, 0, 0])):
            k = g.const(f"conv{i}_w", layouts.conv_oihw(ws[2 * i]))
            b = g.const(f"conv{i}_b", ws[2 * i + 1])
            net = g.node("Conv", [net, k, b], f"conv{i}", kernel_shape=[5, 5], pads=pads)
            net = g.node("Relu", [net], f"relu_c{i}")
            net = g.node("MaxPool", [net], f"pool{i}", kernel_shape=[2, 2], strides=[2, 2])
        net = g.node("Flatten", [net], "flat", axis=1)
        ws = ws[4:]
        ws[0] = layouts.fc_after_chw_flatten(ws[0])
    for i in range(0, len(ws), 2):
        k, b = g.const(f"dense{i}_w", ws[i]), g.const(f"dense{i}_b", ws[i + 1])
        net = g.node("Add", [g.node("MatMul", [net, k], f"mm{i}"), b], f"add{i}")
        if i + 2 < len(ws):
            net = g.node("Relu", [net], f"relu{i}")
    g.node("Softmax", [net], "probabilities", axis=-1)
    graph = helper.make_graph(
        g.nodes,
        f"bench_{w['model']}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", None])],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def run(w: dict, d: dict, threads: int, plan) -> list[dict]:
    if w["mode"] != "infer":
        raise ValueError("ONNX Runtime runs the inference workloads only")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(
        build_model(w, d["weights"]), opts, providers=["CPUExecutionProvider"]
    )
    xs = []
    for i in range(bench_data.N_BATCHES):
        x = bench_data.batch(d, w, i)[0]
        xs.append(layouts.images_nchw(x) if w["model"] == "lenet" else np.ascontiguousarray(x))
    n = len(xs)

    def step(i):
        return sess.run(None, {"x": xs[i % n]})[0]

    loss1 = cross_entropy(step(0), bench_data.batch(d, w, 0)[1])
    timing = time_steps(step, lambda out: None, plan)
    return [result("ONNX Runtime", timing, loss1, VERSION)]


RUNNERS = {"onnxruntime": run}
