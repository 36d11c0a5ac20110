"""tfc.tflite: `.tflite` models made by TensorFlow (tests/tflite_models.py), imported and compiled,
against the outputs of TFLite's interpreter: int8 models bit for bit (its reference kernels),
float32 ones to float32 rounding; malformed files and unsupported schemes refused by name.

Without TensorFlow the committed set in tests/data/tflite is checked; with it, a fresh set is
made and checked against the live interpreter too.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import tfc
from tfc.reference.interp import Interpreter
from tfc.tflite import TFLiteImportError, import_graph, import_model

ROOT_DIR = Path(__file__).resolve().parent.parent
DATA = ROOT_DIR / "tests" / "data" / "tflite"


def _load(directory: Path, name: str) -> tuple[bytes, list, list, list]:
    model = (directory / f"{name}.tflite").read_bytes()
    arrays = np.load(directory / f"{name}.npz")
    count = {p: sum(k.startswith(p) for k in arrays.files) for p in ("x", "ref", "opt")}
    return (
        model,
        [arrays[f"x{k}"] for k in range(count["x"])],
        [arrays[f"ref{k}"] for k in range(count["ref"])],
        [arrays[f"opt{k}"] for k in range(count["opt"])],
    )


def _names(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.npz"))


def _check_set(directory: Path, names: list[str] | None = None) -> dict[str, int]:
    """Import every model of `directory` (or those `names`) into one graph, run it compiled
    (one program) and with the ops' NumPy references, and compare both with TFLite's reference
    kernels. Returns how many int8 values each model's outputs hold that TFLite's default
    kernels compute differently (tfc follows the reference kernels)."""
    graph = tfc.Graph()
    feeds, fetches, expected, names, optimized = {}, [], [], [], {}
    for name in _names(directory) if names is None else names:
        model, xs, refs, opts = _load(directory, name)
        imported = import_graph(model, graph=graph)
        assert len(imported.inputs) == len(xs) and len(imported.outputs) == len(refs), name
        feeds.update(zip(imported.inputs, xs))
        fetches += imported.outputs
        expected += refs
        names += [f"{name}:{k}" for k in range(len(refs))]
        optimized[name] = sum(
            int((o != r).sum()) for o, r in zip(opts, refs) if r.dtype != np.float32
        )
    with tfc.Session(graph=graph) as sess:
        compiled = sess.run(fetches, feeds)
    reference = Interpreter(graph).run(fetches, feeds)
    for name, got, ref, want in zip(names, compiled, reference, expected):
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if want.dtype == np.float32 and "int8" in name:  # dequantized int8: exact too
            np.testing.assert_array_equal(got, want, err_msg=name)
        elif want.dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: compiled vs TFLite")
        if "float" in name.split(":")[0].replace("float_io", ""):  # float32 kernels round alike
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got, ref, err_msg=f"{name}: compiled vs reference")
    return optimized


def test_committed_models_match_tflite_interpreter():
    names = _names(DATA)
    # every operator of issue 18 has a model of its own, and the converter's CNNs are there
    for op in ("conv_2d_per_tensor", "conv_2d_per_channel", "depthwise_conv_2d_per_tensor",
               "depthwise_conv_2d_per_channel", "fully_connected_per_tensor",
               "fully_connected_per_channel", "average_pool_2d", "max_pool_2d", "reshape",
               "softmax", "add", "mul", "quantize", "requantize", "dequantize", "logistic",
               "tanh", "relu", "relu6", "concatenation", "mean_1_2_keep", "pad"):  # fmt: skip
        assert f"op_{op}" in names
    for kind in ("cnn", "branches"):
        assert {f"{kind}_float", f"{kind}_int8", f"{kind}_int8_float_io"} <= set(names)
    # the int8 ones are tests/test_ops_quantized.py's batch (on the CPU and the GPU)
    _check_set(DATA, [n for n in names if n.endswith("_float")])


def test_fresh_models_from_tensorflow_match_its_interpreter(tmp_path):
    pytest.importorskip("tensorflow")
    import tflite_models

    tflite_models.write(tmp_path)
    optimized = _check_set(tmp_path)
    assert sum(optimized.values()) >= 0  # reported by the benchmark note, not asserted


def test_import_model_api_and_shapes():
    graph, inputs, outputs = import_model(DATA / "cnn_int8.tflite")
    assert isinstance(graph, tfc.Graph)
    assert [t.dtype for t in inputs] == [tfc.int8] and [t.dtype for t in outputs] == [tfc.int8]
    assert inputs[0].shape.as_list() == [None, 12, 12, 1]  # the converter's dynamic batch
    graph, inputs, outputs = import_model(DATA / "cnn_float.tflite", batch=3)
    assert inputs[0].shape.as_list() == [3, 12, 12, 1] and outputs[0].shape.as_list() == [3, 10]
    types = {op.type for op in import_model(DATA / "cnn_int8.tflite")[0].get_operations()}
    assert {"Int8Conv2D", "Int8DepthwiseConv2D", "Int8FullyConnected", "Int8Softmax",
            "Int8MaxPool", "Int8AvgPool"} <= types  # fmt: skip
    assert not {t for t in types if t in ("Conv2D", "MatMul", "Softmax")}


def test_a_batch_other_than_the_model_s_gives_the_same_rows():
    model, xs, refs, _ = _load(DATA, "cnn_int8")
    graph, inputs, outputs = import_model(model, batch=1)
    with graph.as_default(), tfc.Session() as sess:
        rows = [sess.run(outputs[0], {inputs[0]: xs[0][k : k + 1]}) for k in range(len(xs[0]))]
    np.testing.assert_array_equal(np.concatenate(rows), refs[0])


def test_cut_at_named_tensors():
    info_graph = import_graph(DATA / "cnn_float.tflite")
    first = info_graph.input_names[0]
    from tfc.tflite.schema import read_model

    model = read_model((DATA / "cnn_float.tflite").read_bytes())
    relu = next(model.tensors[op.outputs[0]].name for op in model.operators
                if op.name == "CONV_2D")  # fmt: skip
    cut = import_graph(DATA / "cnn_float.tflite", graph=tfc.Graph(), input_names=[first],
                       output_names=[relu])  # fmt: skip
    assert cut.output_names == [relu] and cut.outputs[0].shape.as_list()[-1] == 8
    ops = {op.type for op in cut.graph.get_operations()}
    assert "MatMul" not in ops and "Softmax" not in ops
    with pytest.raises(TFLiteImportError, match="no tensor is named 'nope'"):
        import_graph(DATA / "cnn_float.tflite", graph=tfc.Graph(), output_names=["nope"])


@pytest.mark.parametrize(
    "name, message",
    [
        ("bad_unsupported_operator", r"operator 0 \(REDUCE_MAX\): the operator is not supported"),
        ("bad_int16_activations", r"int16 activations are a quantization scheme tfc does not"),
        ("bad_asymmetric_per_channel", r"operator 0 \(CONV_2D\): .*per-channel zero points"),
        ("bad_hybrid_fully_connected", r"operator 0 \(FULLY_CONNECTED\): .*hybrid operator"),
        ("bad_custom_operator", r"operator 0 \(MyCustomOp\): custom operators"),
    ],
)
def test_unsupported_models_are_refused_by_operator(name, message):
    path = DATA / f"{name}.tflite"
    with pytest.raises(TFLiteImportError, match=message) as info:
        import_model(path)
    assert str(info.value).startswith(str(path))


def test_truncated_files_are_refused_naming_the_file(tmp_path):
    data = (DATA / "cnn_int8.tflite").read_bytes()
    for size in (0, 3, 7, 8, 16, 40, len(data) // 3, len(data) // 2, len(data) - 100):
        path = tmp_path / f"cut_{size}.tflite"
        path.write_bytes(data[:size])
        with pytest.raises(TFLiteImportError) as info:
            import_model(path)
        assert str(path) in str(info.value)
    path = tmp_path / "not_tflite.tflite"
    path.write_bytes(b"\x10\x00\x00\x00ONNXxxxxxxxxxxxxxxxxxxxx")
    with pytest.raises(TFLiteImportError, match="identifier is b'ONNX', not b'TFL3'"):
        import_model(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        import_model(tmp_path / "missing.tflite")


def test_corrupt_bytes_give_import_errors_or_a_model_never_a_crash():
    """Every byte of a model overwritten in turn (and random offsets planted): the importer
    raises TFLiteImportError (a ValueError) or builds a graph, nothing else."""
    data = (DATA / "op_conv_2d_per_channel.tflite").read_bytes()
    rng = np.random.default_rng(0)
    refused = 0
    for k in range(0, len(data), 3):
        corrupt = bytearray(data)
        corrupt[k] ^= 0xFF if k % 2 else int(rng.integers(1, 256))
        if k + 4 <= len(corrupt) and k % 7 == 0:
            struct.pack_into("<I", corrupt, k, int(rng.integers(0, 2**32)))
        try:
            import_model(bytes(corrupt))
        except TFLiteImportError:
            refused += 1
    assert refused > 10


def test_int8_embedded_arena_holds_int8_activations(tmp_path):
    from tfc.aot.embed import compile_embed
    from tfc.aot.footprint import Variant

    m = compile_embed(DATA / "cnn_int8.tflite", tmp_path / "int8", batch=1, inference_only=True)
    f = compile_embed(DATA / "cnn_float.tflite", tmp_path / "float", batch=1, inference_only=True)
    header = (tmp_path / "int8" / "model.h").read_text()
    assert "const int8_t *" in header and "int8_t *" in header
    # 12x12x8 activations: int8 bytes where the float model holds float32 ones
    assert 0 < m.arena_bytes * 3 < f.arena_bytes
    # int8 weights (int32 biases and per-channel multipliers aside) against float32 ones
    # (tfc inspect --target embed reports them: an imported model's weights are constants)
    assert 0 < Variant(m).constant_bytes * 2 < Variant(f).constant_bytes


def test_tfc_compile_and_inspect_take_tflite_models(tmp_path, capsys):
    import subprocess

    from tfc.tools.cli import main as tfc_main

    # quantized inside, float32 in and out: the native predict executable, equal to TFLite
    model, xs, refs, _ = _load(DATA, "cnn_int8_float_io")
    out = tmp_path / "build"
    path = str(DATA / "cnn_int8_float_io.tflite")
    assert tfc_main(["compile", path, "-o", str(out), "--batch", "4"]) == 0
    np.save(tmp_path / "x.npy", xs[0].reshape(len(xs[0]), -1))  # rows of features
    proc = subprocess.run(
        [str(out / "predict"), "--data", str(tmp_path / "x.npy"), "--output",
         str(tmp_path / "p.npy")], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), refs[0])
    # int8 in and out: the embeddable library, not the executables (they read no int8 data)
    int8 = str(DATA / "cnn_int8.tflite")
    assert tfc_main(["compile", int8, "--target", "embed", "-o", str(tmp_path / "e")]) == 0
    assert "const int8_t *features" in (tmp_path / "e" / "model.h").read_text()
    capsys.readouterr()
    assert tfc_main(["compile", int8, "-o", str(tmp_path / "none")]) == 1
    assert "compile an int8 model with --target embed" in capsys.readouterr().err
    assert tfc_main(["inspect", int8, "--batch", "2"]) == 0
    assert "Int8Conv2D" in capsys.readouterr().out
    # --outputs cuts the model at a TFLite tensor; an unknown one is named
    cut = ["compile", path, "--target", "embed", "--outputs", "nope", "-o", str(tmp_path / "c")]
    assert tfc_main(cut) == 1
    assert "no tensor is named 'nope'" in capsys.readouterr().err
    assert tfc_main(["inspect", int8, "--outputs", "nope"]) == 1
    assert "no tensor is named 'nope'" in capsys.readouterr().err
    dot = tmp_path / "g.dot"
    assert tfc_main(["graph", int8, "--batch", "1", "-o", str(dot)]) == 0
    assert "Int8Softmax" in dot.read_text()


def test_int8_library_on_cortex_m4_equals_tflite_interpreter(tmp_path):
    """The converter's int8 CNN through --target embed, cross-compiled for a Cortex-M4 and run
    under qemu-system-arm (mps2-an386, output over semihosting): TFLite's outputs exactly."""
    import shutil
    import subprocess

    from tfc.aot.embed import EMBED_CFLAGS, compile_embed, library_sources

    tools = ("arm-none-eabi-gcc", "qemu-system-arm")
    if any(shutil.which(t) is None for t in tools):
        pytest.skip(f"{' and '.join(tools)} are needed (see .ci/run for the Debian packages)")
    _, xs, refs, _ = _load(DATA, "cnn_int8")
    out = tmp_path / "lib"
    m = compile_embed(DATA / "cnn_int8.tflite", out, batch=1, inference_only=True)
    rows, n_in = len(xs[0]), xs[0][0].size
    out_name = m.programs["predict"].output_names[0]
    (out / "int8_data.h").write_text(
        '#include "model.h"\n'
        f"#define H_ROWS {rows}\n#define H_IN_COUNT {n_in}\n"
        f"#define H_OUT_COUNT {refs[0][0].size}\n#define H_ARENA_BYTES {m.macro}ARENA_BYTES\n"
        f"#define H_PREDICT(x, y, a, n) {m.prefix}predict(1, x, y, a, n)\n"
        f"static const int8_t h_x[] = {{ {', '.join(str(int(v)) for v in xs[0].ravel())} }};\n"
    )
    assert f"int8_t *{out_name}" in (out / "model.h").read_text()
    m4 = ROOT_DIR / "samples" / "embed" / "cortex-m4"
    cmd = [
        "arm-none-eabi-gcc", *EMBED_CFLAGS, "-O2", "-mcpu=cortex-m4", "-mthumb",
        "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-DHARNESS_SEMIHOSTING", "-ffunction-sections",
        "-Wall", "-Wextra", "-Werror", "model.c", *library_sources(),
        str(ROOT_DIR / "tests" / "embed" / "int8_harness.c"), str(m4 / "startup.c"),
        "-nostartfiles", f"-T{m4 / 'mps2-an386.ld'}", "-Wl,--gc-sections", "-lm",
        "-o", "int8.elf",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(
        ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
         "-semihosting-config", "enable=on,target=native", "-kernel", str(out / "int8.elf")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # QEMU writes the semihosting console to its stderr
    assert proc.returncode == 0 and "end 0" in proc.stderr, proc.stderr[-1000:]
    lines = proc.stderr[: proc.stderr.index("end 0")].split()
    got = np.array([int(v) for v in lines], np.int8).reshape(refs[0].shape)
    np.testing.assert_array_equal(got, refs[0])
