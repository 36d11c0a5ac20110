"""Layer by layer: one `light` ONNX model's kernels in tfc against ONNX Runtime's, 1 thread.

tfc's kernels are timed by its profile build (Session.profile), ONNX Runtime's by its own
profiler (SessionOptions.enable_profiling); each kernel's figure is its fastest of `--runs`
single runs, the two frameworks' runs alternating. A convolution is matched to its counterpart
by its geometry (input channels, output channels, kernel, stride, output size) and its place
among the convolutions of that geometry; the other kernels are summed per op type. The table is
sorted by the absolute gap (tfc - ONNX Runtime), largest first.

Run with a python that has onnx and onnxruntime:
    PYTHONPATH=. python bench/onnx_layers.py [--model resnet50] [--batch 32] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx_models import Tfc, loadavg, ort_options, with_random_weights  # noqa: E402


def conv_geometry(model: onnx.ModelProto) -> list[tuple[str, tuple]]:
    """(output name, geometry) of each Conv of `model` in graph order; geometry is (input
    channels, output channels, kernel, stride, output height)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {}
    for value in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = tuple(d.dim_value for d in dims)
    weights = {t.name: tuple(t.dims) for t in model.graph.initializer}
    convs = []
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        w = weights[node.input[1]]
        strides = next((list(a.ints) for a in node.attribute if a.name == "strides"), [1, 1])
        out = shapes[node.output[0]]
        convs.append((node.output[0], (w[1], w[0], w[2], strides[0], out[2])))
    return convs


def geometry_name(g: tuple) -> str:
    cin, cout, k, stride, size = g
    return f"{k}x{k}/{stride} {cin}->{cout} @{size}x{size}"


def ort_kernels(model: onnx.ModelProto, x: np.ndarray, runs: int) -> list[dict[str, float]]:
    """Per run, ONNX Runtime's node times in seconds (keyed by node name and op type)."""
    options = ort_options()
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        fed = sess.get_inputs()[0].name
        for _ in range(2 + runs):
            sess.run(None, {fed: x})
        events = json.loads(Path(sess.end_profiling()).read_text())
    runs_at = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("cat") == "Session" and e["name"] == "model_run"
    )
    per_run: list[dict[str, float]] = [{} for _ in runs_at]
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            run = next(i for i, (a, b) in enumerate(runs_at) if a <= event["ts"] <= b)
            name = event["name"][: -len("_kernel_time")]
            key = f"{name}|{event['args'].get('op_name', '')}"
            per_run[run][key] = per_run[run].get(key, 0.0) + event["dur"] * 1e-6
    return per_run[2:]


# ONNX Runtime's op types where tfc's kernel of the same work has another name
SAME_KERNEL = {"Gemm": "Fusion(MatMul+Add)", "AveragePool": "AvgPool"}


def conv_aliases(model: onnx.ModelProto) -> dict[str, str]:
    """Every value name a convolution's fused chain (BatchNormalization, Add, Relu) computes,
    and its Conv node's name, mapped to the Conv's output: ONNX Runtime names a fused node after
    the chain's last output, tfc after the Conv node."""
    consumers: dict[str, list] = defaultdict(list)
    for node in model.graph.node:
        for value in node.input:
            consumers[value].append(node)
    aliases = {}
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        out = node.output[0]
        aliases[node.name] = aliases[out] = out
        value = out
        while len(consumers[value]) == 1 and consumers[value][0].op_type in (
            "BatchNormalization",
            "Add",
            "Sum",
            "Relu",
        ):
            value = consumers[value][0].output[0]
            aliases[value] = out
    return aliases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()
    model = with_random_weights(args.model, args.batch)
    convs = conv_geometry(model)
    aliases = conv_aliases(model)
    geometry = dict(convs)
    ours = Tfc(model)
    x = np.random.default_rng(1).random((args.batch, 3, 224, 224), np.float32)
    ours.call(x)
    print(f"load average {loadavg()}; {args.model} batch {args.batch}; fastest of {args.runs}")

    tfc_best: dict[str, float] = {}
    tfc_ops: dict[str, str] = {}
    for _ in range(args.runs):
        prof = ours.sess.profile(ours.out, {ours.fed: x}, runs=1, warmup=1)
        for k in prof.kernels:
            tfc_best[k.node] = min(tfc_best.get(k.node, np.inf), k.seconds)
            tfc_ops[k.node] = k.ops
    ort_runs = ort_kernels(model, x, args.runs)
    ort_best = {key: min(run.get(key, np.inf) for run in ort_runs) for key in ort_runs[0]}

    # tfc's nodes are named after ONNX outputs; a fused conv keeps its Conv's output name
    rows: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    order = {out: i for i, (out, _) in enumerate(convs)}
    unmatched_tfc = 0.0
    for node, sec in tfc_best.items():
        out = aliases.get(node.split("/")[0]) if "Conv" in tfc_ops[node] else None
        key = f"{geometry_name(geometry[out])} #{order[out]}" if out else tfc_ops[node]
        if out is None and "Conv" in tfc_ops[node]:
            unmatched_tfc += sec
        rows[key][0] += sec
    for key, sec in ort_best.items():
        node, op = key.split("|")
        out = aliases.get(node.removesuffix("_nchwc")) if "Conv" in op else None
        other = SAME_KERNEL.get(op, op)
        rows[f"{geometry_name(geometry[out])} #{order[out]}" if out else other][1] += sec
    table = sorted(rows.items(), key=lambda kv: -(kv[1][0] - kv[1][1]))
    print(f"{'kernel':36} {'tfc ms':>9} {'ORT ms':>9} {'gap ms':>8} {'ratio':>6}")
    for key, (t, o) in table[: args.limit]:
        ratio = f"{t / o:6.2f}" if o else "     -"
        print(f"{key:36} {t * 1e3:9.2f} {o * 1e3:9.2f} {(t - o) * 1e3:8.2f} {ratio}")
    by_geometry: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for key, (t, o) in rows.items():
        g = key.split(" #")[0]
        by_geometry[g][0] += t
        by_geometry[g][1] += o
        by_geometry[g][2] += 1
    print(f"\nper geometry\n{'kernel':36} {'n':>3} {'tfc ms':>9} {'ORT ms':>9} {'gap ms':>8}")
    for g, (t, o, n) in sorted(by_geometry.items(), key=lambda kv: -(kv[1][0] - kv[1][1])):
        print(f"{g:36} {n:3d} {t * 1e3:9.2f} {o * 1e3:9.2f} {(t - o) * 1e3:8.2f}")
    t_all = sum(v[0] for v in rows.values())
    o_all = sum(v[1] for v in rows.values())
    print(f"\nall kernels: tfc {t_all * 1e3:.1f} ms, ORT {o_all * 1e3:.1f} ms, "
          f"{t_all / o_all:.3f}x; unmatched tfc convs {unmatched_tfc * 1e3:.1f} ms; "
          f"load average {loadavg()}")  # fmt: skip


if __name__ == "__main__":
    main()
