"""The nine `light` real models of ONNX's backend suite (shipped in the onnx wheel under
onnx/backend/test/data/light with their expected outputs) compiled by `tfc compile MODEL.onnx`
to the native predict executable and to the embeddable library (`--target embed`, built for the
host with tests/embed/file_harness.c), each fed the input ONNX's runner generates
(`generate_dummy_data(..., seed=0, random=False)`) and compared with the shipped output at the
case's rtol/atol. SqueezeNet runs by default (the cheapest, about 10 s cold); the others are
benchmarks (`-m benchmark`), their Session runs being in tests/test_onnx_backend.py. Skips
without onnx.

The light models' weights are constants (ConstantOfShape), so every class gets the same logit
and most shipped outputs are a uniform softmax (0.001 each): a wrong convolution would still
match them. The logits themselves (0.5 to 1e19 by model: the whole network's arithmetic)
are compared with ONNX Runtime's where it is installed: ZFNet-512's by default (LRN, Gemm and
large-kernel convolutions, which SqueezeNet lacks)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the light models ship in the onnx wheel")

from onnx import numpy_helper  # noqa: E402
from onnx.backend.test.loader import load_model_tests  # noqa: E402
from onnx.backend.test.runner import Runner  # noqa: E402

from tfc.aot.embed import EMBED_CFLAGS, library_sources  # noqa: E402
from tfc.tools.cli import main as tfc_main  # noqa: E402

HARNESS = Path(__file__).resolve().parent / "embed" / "file_harness.c"
WARNINGS = ["-Wall", "-Wextra", "-Werror", "-pedantic"]
# the cheapest to compile and run; the others take 10 s to 30 s each, cold
DEFAULT = {"squeezenet"}
DEFAULT_LOGITS = {"zfnet512"}
CASES = {case.model_name: case for case in load_model_tests(kind="real")}


def _params(default: set[str]) -> list:
    return [
        pytest.param(name, marks=() if name in default else pytest.mark.benchmark)
        for name in sorted(CASES)
    ]


def _model_path(name: str) -> Path:
    url = CASES[name].url
    assert url is not None and url.startswith("onnx/backend/test/data/light/"), url
    return Path(onnx.__file__).resolve().parent.parent / url


def _input_and_expected(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The one input as ONNX's runner makes it, and the shipped output_0."""
    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    (fed,) = [i for i in model.graph.input if i.name not in initializers]
    x = Runner.generate_dummy_data(fed, seed=0, name=path.stem, random=False)
    expected = onnx.TensorProto()
    expected.ParseFromString(path.with_name(f"{path.stem}_output_0.pb").read_bytes())
    return x, numpy_helper.to_array(expected)


def _header_define(header: str, pattern: str) -> str:
    (name,) = re.findall(rf"^#define ({pattern}) ", header, re.M)
    return name


def _run_embed(lib: Path, x: np.ndarray) -> np.ndarray:
    """model.c and its runtime built with file_harness.c at -O2, warnings as errors, and run
    on `x`."""
    header = (lib / "model.h").read_text()
    out_count = _header_define(header, r"MODEL_PREDICT_OUT_\w+_COUNT")
    (lib / "harness_data.h").write_text(
        '#include "model.h"\n'
        "#define H_IN_COUNT MODEL_PREDICT_IN_FEATURES_COUNT\n"
        f"#define H_OUT_COUNT {out_count}\n"
        "#define H_ARENA_BYTES MODEL_ARENA_BYTES\n"
        "#define H_PREDICT(x, y, a, ab) model_predict(MODEL_BATCH, x, y, a, ab)\n"
    )
    sources = ["model.c", *library_sources(), str(HARNESS)]
    cmd = ["cc", *EMBED_CFLAGS, *WARNINGS, "-O2", *sources, "-lm", "-o", "run_model"]
    proc = subprocess.run(cmd, cwd=lib, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    x.astype("<f4").tofile(lib / "x.bin")
    proc = subprocess.run(
        [str(lib / "run_model"), "x.bin", "y.bin"], cwd=lib, capture_output=True, timeout=300
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]!r}"
    return np.fromfile(lib / "y.bin", dtype="<f4")


def _run_native(build: Path, x: np.ndarray) -> np.ndarray:
    np.save(build / "x.npy", x.reshape(x.shape[0], -1))
    proc = subprocess.run(
        [str(build / "predict"), "--data", "x.npy", "--output", "y.npy"],
        cwd=build, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return np.load(build / "y.npy")


@pytest.mark.parametrize("name", _params(DEFAULT))
def test_light_model_native_and_embedded_match_the_shipped_outputs(name, tmp_path):
    path = _model_path(name)
    case = CASES[name]
    x, expected = _input_and_expected(path)
    assert x.shape[0] == 1  # the light models are batch-1 models
    assert tfc_main(["compile", str(path), "-o", str(tmp_path / "native")]) == 0
    native = _run_native(tmp_path / "native", x)
    np.testing.assert_allclose(
        native.reshape(expected.shape), expected, rtol=case.rtol, atol=case.atol
    )
    assert tfc_main(["compile", str(path), "--target", "embed", "-o", str(tmp_path / "lib")]) == 0
    embedded = _run_embed(tmp_path / "lib", x)
    np.testing.assert_allclose(
        embedded.reshape(expected.shape), expected, rtol=case.rtol, atol=case.atol
    )
    # both builds compute the same function: closer to each other than to the reference
    np.testing.assert_allclose(embedded.reshape(native.shape), native, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", _params(DEFAULT_LOGITS))
def test_light_model_logits_match_onnx_runtime(name, tmp_path):
    """The predict executable of the model cut at its classifier's logits (the input of its
    last Softmax, or its output when there is none) against ONNX Runtime on the same input."""
    ort = pytest.importorskip("onnxruntime")
    path = _model_path(name)
    model = onnx.load(str(path))
    softmax = [n for n in model.graph.node if n.op_type == "Softmax"]
    logits = softmax[-1].input[0] if softmax else model.graph.output[0].name
    x, _ = _input_and_expected(path)
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info(logits))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    initializers = {t.name for t in model.graph.initializer}
    (fed,) = [i.name for i in model.graph.input if i.name not in initializers]
    want = session.run([logits], {fed: x})[0]
    out = tmp_path / "native"
    assert tfc_main(["compile", str(path), "-o", str(out), "--outputs", logits]) == 0
    got = _run_native(out, x)
    assert np.all(np.isfinite(want)) and np.abs(want).max() > 0.1  # a number worth comparing
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4)


def test_every_light_model_is_a_case():
    """The nine models the issue names are the ones the wheel ships (a new onnx release that
    adds or drops one shows up here, not as a silently different parametrization)."""
    assert sorted(CASES) == sorted(
        ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512"]
    )  # fmt: skip
    for name in CASES:
        assert os.path.isfile(_model_path(name)), name
