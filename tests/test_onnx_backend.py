"""ONNX's own backend conformance suite (`onnx.backend.test.BackendTest`) run against
tfc.onnx.backend: the operator (node) cases, the simple and PyTorch-converted/-operator model
cases, and the nine `light` real models shipped in the onnx wheel (through a Session). Every
case tfc does not run is in EXCLUDED, matched by pattern, with the reason.

The node and small model cases are compiled in batches (tests/onnx_batches.py): one program per
batch, each case run with its own inputs through it, so the suite starts the C compiler a few
dozen times instead of once per case. `python -m pytest tests/test_onnx_backend.py -k NodeModel`
runs the node cases alone.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

pytest.importorskip("onnx", reason="the ONNX conformance suite needs the onnx package")

import onnx.backend.test  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnx.backend.test.loader import load_model_tests  # noqa: E402
from onnx_batches import BATCHES, BatchedBackend, Member  # noqa: E402

# (pattern, reason): the cases tfc does not run, and why. A pattern is a regular expression
# searched in the case's test name (`test_<case>_cpu`).
EXCLUDED: list[tuple[str, str]] = [
    # element types tfc does not compute (it holds 2- to 16-bit integers, uint32/64 and the
    # half floats in wider dtypes; these have no exact wider representation or are not numbers)
    (r"FLOAT8|float8|_e4m3|_e5m2|E8M0|e8m0|FLOAT4E2M1|float4e2m1", "float8 and float4 types"),
    (r"string|strnorm|regex|StringNormalizer|label_encoder", "string tensors"),
    (r"_sequence|sequence_|SequenceMap|split_to_sequence|loop13_seq|loop16_seq", "sequences"),
    (r"optional|identity_opt", "optional values"),
    (r"^test_cast_no_saturate|castlike_no_saturate", "saturate=0 applies to float8 types"),
    # operators whose output shape depends on the data, or that are not numeric programs
    (r"test_unique", "Unique: the output's size depends on the values"),
    (r"nonmaxsuppression", "NonMaxSuppression: the output's size depends on the values"),
    (r"image_decoder", "ImageDecoder: decoding image files"),
    (r"tfidfvectorizer", "TfIdfVectorizer: n-gram counting over strings of token ids"),
    (r"ai_onnx_ml", "the ai.onnx.ml domain (tree ensembles, label encoders)"),
    # random draws the suite compares bit for bit with NumPy's generator
    (r"bernoulli|test_training_dropout(?!_zero_ratio)", "random draws of NumPy's generator"),
    # expected values that carry NumPy's float32 FFT rounding (1.9e-7 where the transform is
    # exactly 0), beyond the suite's atol of 1e-7; tfc computes the transform in float64
    (r"test_dft_inverse", "NumPy's float32 FFT rounding in the expected values"),
    # the ai.onnx.preview.training domain: optimizer steps and gradients as operators (tfc
    # trains through tf.train's optimizers and tf.gradients on the imported graph)
    (r"test_adagrad|test_adam|test_momentum|test_nesterov_momentum|test_gradient_of",
     "ai.onnx.preview.training operators"),
    (r"deform_conv", "DeformConv: no converter (offsets sampled per output position)"),
    (r"roialign", "RoiAlign: no converter (bilinear samples at boxes given at run time)"),
    (r"test_if_opt|test_if_seq", "If branches returning optionals or sequences"),
    (r"test_loop11", "Loop11: a Slice whose start is the loop counter, a run-time start whose "
     "output shape ONNX leaves open"),
    # every case once, on the CPU: the CUDA target runs the op batches of tests/test_cuda.py
    (r"_cuda$", "the CUDA device (tfc's CUDA kernels are tested by tests/test_cuda.py)"),
]  # fmt: skip
EXCLUDED_RE = [re.compile(p) for p, _ in EXCLUDED]

# node cases per compiled program: the program stays small enough to build in seconds
BATCH_SIZE = 64
# model cases per program: networks converted from PyTorch have hundreds of nodes each, and a
# program of 64 of them spent half an hour in the compiler's list scheduler (its cost grows with
# the program's nodes times its width)
MODEL_BATCH_SIZE = 8


def _excluded(name: str) -> bool:
    return any(p.search(f"{name}_cpu") for p in EXCLUDED_RE)


def _tensor(value):
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def _directory_inputs(model_dir: str, model: onnx.ModelProto) -> list | None:
    """The inputs of a model-directory case's one data set (None when it has several)."""
    sets = glob.glob(os.path.join(model_dir, "test_data_set*"))
    if len(sets) != 1:
        return None
    inputs = []
    for i in range(len(glob.glob(os.path.join(sets[0], "input_*.pb")))):
        if not model.graph.input[i].type.HasField("tensor_type"):
            return None
        t = onnx.TensorProto()
        with open(os.path.join(sets[0], f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        inputs.append(numpy_helper.to_array(t))
    return inputs


def _register_batches() -> None:
    members = []
    for case in load_model_tests(kind="node"):
        if _excluded(case.name) or len(case.data_sets) != 1:
            continue
        members.append(Member(case.name, case.model, [_tensor(v) for v in case.data_sets[0][0]]))
    BATCHES.register(members, BATCH_SIZE)
    members = []
    for kind in ("simple", "pytorch-converted", "pytorch-operator"):
        for case in load_model_tests(kind=kind):
            if _excluded(case.name) or case.model_dir is None:
                continue
            model = onnx.load(os.path.join(case.model_dir, "model.onnx"))
            inputs = _directory_inputs(case.model_dir, model)
            if inputs is not None:
                members.append(Member(case.name, model, inputs))
    BATCHES.register(members, MODEL_BATCH_SIZE)


backend_test = onnx.backend.test.BackendTest(BatchedBackend, __name__)
for _pattern, _ in EXCLUDED:
    backend_test.exclude(_pattern)
_register_batches()

globals().update(backend_test.test_cases)
