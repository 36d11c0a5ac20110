"""The int8 ops (TFLite's quantized arithmetic) in one batch: every int8 model of the committed
set in tests/data/tflite (one per operator, and the converter's CNNs) imported into one graph,
its outputs expected equal to TFLite's interpreter bit for bit, compiled and in the references.
tests/test_cuda.py runs the same batch on the GPU (the int8 CUDA kernels); tests/test_tflite.py
checks the float32 models and regenerates the set where TensorFlow is importable."""

from pathlib import Path

import numpy as np
import pytest
from opcheck import CaseBatch

from tfc.tflite import import_graph

DATA = Path(__file__).resolve().parent / "data" / "tflite"


def int8_model_names() -> list[str]:
    """The committed models whose kernels are int8 ones (float32 inputs and outputs or not)."""
    names = sorted(p.stem for p in DATA.glob("*.npz"))
    return [n for n in names if not n.endswith("_float")]


TFLITE_INT8 = CaseBatch()
with TFLITE_INT8.graph.as_default():
    for _name in int8_model_names():
        _arrays = np.load(DATA / f"{_name}.npz")
        _imported = import_graph(DATA / f"{_name}.tflite")
        for _k, _input in enumerate(_imported.inputs):
            TFLITE_INT8.feed_dict[_input] = _arrays[f"x{_k}"]
        for _k, _output in enumerate(_imported.outputs):
            # exact: int8 outputs, and float32 ones dequantized from int8
            TFLITE_INT8.add(f"{_name}:{_k}", _output, _arrays[f"ref{_k}"], rtol=0, atol=0)


@pytest.mark.parametrize("case_id", TFLITE_INT8.ids())
def test_int8_models_equal_tflite_interpreter(case_id):
    TFLITE_INT8.check(case_id)
