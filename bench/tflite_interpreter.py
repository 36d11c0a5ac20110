"""tfc against TensorFlow Lite's interpreter on the committed TFLite CNNs (tests/data/tflite:
12x12x1 images, conv + depthwise conv + pools + dense + softmax; float32, and int8 quantized by
TensorFlow's converter), in the same run: microseconds per inference call at batch 1 and 32,
one thread each. tfc: the imported model compiled, through Session.run; TFLite: set_tensor,
invoke, get_tensor with its default (optimized) kernels and with its reference kernels (those
tfc follows bit for bit). Both sides pay their Python call overhead. Also: how many int8 output
values of the batch of 32 differ from each TFLite kernel set (tfc: 0 from the reference ones).

Needs TensorFlow (its venv): PYTHONPATH=. python bench/tflite_interpreter.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import tfc  # noqa: E402
from tfc.tflite import import_model  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "tflite"
MODELS = ("cnn_float", "cnn_int8", "branches_float", "branches_int8")


def interpreter(model: bytes, batch: int, reference: bool):
    kinds = tf.lite.experimental.OpResolverType
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = tf.lite.Interpreter(
            model_content=model,
            num_threads=1,
            experimental_op_resolver_type=kinds.BUILTIN_REF if reference else kinds.BUILTIN,
        )
    detail = it.get_input_details()[0]
    it.resize_tensor_input(detail["index"], [batch, *detail["shape"][1:]])
    it.allocate_tensors()
    return it, detail["index"], it.get_output_details()[0]["index"]


def timed(fn, runs: int) -> float:
    """Median microseconds of `fn` over 5 rounds of runs/5 calls."""
    fn()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs // 5):
            fn()
        rounds.append((time.perf_counter() - start) / (runs // 5) * 1e6)
    return statistics.median(rounds)


def measure(name: str, batch: int, runs: int, rng) -> tuple[dict, list[str]]:
    """Microseconds per call (tfc, TFLite's default kernels, its reference ones) and how the
    outputs of tfc differ from each TFLite kernel set's."""
    model = (DATA / f"{name}.tflite").read_bytes()
    graph, inputs, outputs = import_model(model, batch=batch)
    x = rng.uniform(0, 1, (batch, 12, 12, 1)).astype(np.float32)
    if inputs[0].dtype.np == np.int8:
        x = rng.integers(-128, 128, x.shape).astype(np.int8)
    with tfc.Session(graph=graph) as sess:
        feed = {inputs[0]: x}
        ours = sess.run(outputs[0], feed)
        times = {"tfc": timed(lambda: sess.run(outputs[0], feed), runs)}
    theirs = {}
    for reference in (False, True):
        it, i, o = interpreter(model, batch, reference)

        def call(it=it, i=i, o=o):
            it.set_tensor(i, x)
            it.invoke()
            return it.get_tensor(o)

        theirs[reference] = call().copy()
        times[reference] = timed(call, runs)
    if ours.dtype == np.int8:
        diffs = [str(int((ours != theirs[r]).sum())) for r in (False, True)]
    else:
        diffs = [f"{np.abs(ours - theirs[r]).max():.1e}" for r in (False, True)]
    return times, diffs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'model':16} {'batch':>5} {'tfc us':>9} {'TFLite us':>10} {'TFLite ref us':>14} "
          f"{'tfc/TFLite':>10} {'diff vs default':>15} {'diff vs ref':>11}")  # fmt: skip
    for name in MODELS:
        for batch in (1, 32):
            times, diffs = measure(name, batch, args.runs, rng)
            print(f"{name:16} {batch:5d} {times['tfc']:9.1f} {times[False]:10.1f} "
                  f"{times[True]:14.1f} {times['tfc'] / times[False]:10.2f} {diffs[0]:>15} "
                  f"{diffs[1]:>11}")  # fmt: skip
    print(f"load average: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
