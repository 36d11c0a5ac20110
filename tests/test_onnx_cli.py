"""`tfc compile MODEL.onnx`: an ONNX model (made here with onnx.helper) to the native predict
executable and the embeddable library, predictions equal to ONNX Runtime's (skips without onnx
or onnxruntime)."""

import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tfc.tools.cli import main as tfc_main  # noqa: E402


def _mlp(path) -> None:
    """x[N, 6] -> MatMul -> Add -> Relu -> MatMul -> Softmax: y[N, 3]."""
    rng = np.random.default_rng(5)
    w1 = numpy_helper.from_array(rng.standard_normal((6, 8)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m"]),
        helper.make_node("Add", ["m", "b1"], ["a"]),
        helper.make_node("Relu", ["a"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["z"]),
        helper.make_node("Softmax", ["z"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        initializer=[w1, b1, w2],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def test_an_onnx_model_compiles_to_predict_and_the_library(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    _mlp(path)
    x = np.random.default_rng(6).standard_normal((5, 6)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[
        0
    ]
    assert tfc_main(["compile", str(path), "-o", str(tmp_path / "build"), "--batch", "5"]) == 0
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run(
        [str(tmp_path / "build" / "predict"), "--data", str(tmp_path / "x.npy"), "--output",
         str(tmp_path / "p.npy")], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), want, rtol=1e-5, atol=1e-6)
    # the embeddable library of the graph cut at the hidden layer
    embed = ["compile", str(path), "--target", "embed", "--outputs", "h", "--batch", "1"]
    assert tfc_main([*embed, "-o", str(tmp_path / "lib")]) == 0
    assert "predict" in (tmp_path / "lib" / "model.h").read_text()
    capsys.readouterr()
    assert tfc_main(["inspect", str(path), "--outputs", "nope"]) == 1
    assert "nope" in capsys.readouterr().err
