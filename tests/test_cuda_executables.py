"""`tfc compile --target cuda` executables: built with nvcc (no GPU needed to build), and built
under CUDA device emulation (the host C++ compiler; `--cuda-emulate` or TFC_CUDA=emulate), where
they run anywhere. On a GPU (`cuda` marker) and emulated: the Iris `train` and `predict` give the
CPU executables' checkpoint, progress and predictions. The emulated build is warning-free at
-Wall -Wextra, the Makefile written with it rebuilds it that way, and its programs run clean
under ASan and UBSan."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cuda_devices import DEVICES, GPU_OK
from test_cuda_emulated import _sanitizer_runtime

import tfc
from tfc.backend.cc import CompileError
from tfc.backend.cuda_emu import host_cxx
from tfc.tools.cli import main as tfc_main

ROOT = Path(__file__).resolve().parent.parent
IRIS = ROOT / "samples" / "iris_model.py"
IRIS_TRAIN = ROOT / "samples" / "data" / "iris_training.csv"
IRIS_TEST = ROOT / "samples" / "data" / "iris_test.csv"
NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
needs_cxx = pytest.mark.skipif(shutil.which(host_cxx()) is None, reason="no host C++ compiler")
# the builds: nvcc's needs no GPU (machine code for sm_80 where none is present)
BUILDS = [pytest.param("gpu", marks=needs_nvcc), pytest.param("emulated", marks=needs_cxx)]
# 300 steps on a GPU; under emulation each step runs every GPU thread of every kernel in turn on
# the CPU, from objects built at -O0 (about 60 steps/s on 2 cores), so 100 steps keep the test
# near 2 s; the progress lines (every 100 steps) and the accuracy are compared either way
STEPS = {"gpu": 300, "emulated": 100}
PROGRESS = re.compile(r"^step (\d+)  loss (\S+)  \d+ examples/s$", re.M)
SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """device ("gpu", "emulated", "cpu") -> the Iris model compiled for it (each built once)."""
    built: dict[str, tfc.aot.CompiledModel] = {}

    def compile_for(device: str) -> tfc.aot.CompiledModel:
        if device not in built:
            out = tmp_path_factory.mktemp(f"iris_{device}")
            if device == "cpu":
                built[device] = tfc.compile(str(IRIS), out, batch=32, target="generic")
            else:
                arch = None if GPU_OK or device == "emulated" else "sm_80"
                built[device] = tfc.compile(
                    str(IRIS), out, batch=32, target="cuda", cuda_arch=arch,
                    cuda_emulate=device == "emulated",
                )  # fmt: skip
        return built[device]

    return compile_for


def _train_and_predict(model: tfc.aot.CompiledModel, steps: int, out: Path) -> dict:
    """Train `steps` without shuffling, then predict the test set: the checkpoint, the progress
    lines (step, loss), the probabilities predict prints and its accuracy line."""
    ckpt = out / "ckpt"
    args = ["--data", IRIS_TRAIN, "--steps", steps, "--checkpoint-dir", ckpt, "--no-shuffle"]
    train = subprocess.run(
        [str(model.train), *map(str, args)], check=True, capture_output=True, text=True
    )
    pred = subprocess.run(
        [str(model.predict), "--checkpoint", str(ckpt), "--data", str(IRIS_TEST)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    *rows, accuracy = pred.stdout.splitlines()
    return {
        "checkpoint": tfc.train.load_checkpoint(str(ckpt)),
        "progress": [(int(s), float(loss)) for s, loss in PROGRESS.findall(train.stdout)],
        "probabilities": np.array([[float(v) for v in row.split()] for row in rows]),
        "accuracy": accuracy,
    }


@pytest.mark.parametrize("device", BUILDS)
def test_compile_target_cuda_builds_executables(compiled, device):
    built = compiled(device)
    out = built.outdir
    assert sorted(p.name for p in out.glob("program_*")) == [
        "program_init.cu", "program_predict.cu", "program_predict_one.cu", "program_train.cu",
    ]  # fmt: skip
    makefile = (out / "Makefile").read_text()
    if device == "emulated":
        assert "$(CUDA_EMU_CXX) $(CUDA_EMU_FLAGS)" in makefile and "NVCC" not in makefile
        assert "-DTFC_CUDA_DEVICE_EMULATION" in makefile and built.cuda_emulated
    else:
        assert "$(NVCC)" in makefile and "EMU" not in makefile and not built.cuda_emulated
    # the fuse pass ran: the dense layers' bias + activation are fused kernels on the GPU
    assert "fused element-wise ops" in (out / "program_train.cu").read_text()
    assert built.train.stat().st_size > 0 and built.predict.exists()


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_cuda_executables_train_like_the_cpu_ones(compiled, cuda_device, tmp_path):
    steps = STEPS[cuda_device]
    cpu = _train_and_predict(compiled("cpu"), steps, tmp_path / "cpu")
    cuda = _train_and_predict(compiled(cuda_device), steps, tmp_path / cuda_device)
    # progress as the C executables show it: a line every 100 steps, the same losses
    assert [s for s, _ in cuda["progress"]] == [s for s, _ in cpu["progress"]]
    assert [s for s, _ in cpu["progress"]] == list(range(100, steps + 1, 100))
    np.testing.assert_allclose(
        [loss for _, loss in cuda["progress"]], [loss for _, loss in cpu["progress"]], rtol=1e-4
    )
    names = cpu["checkpoint"].get_variable_to_shape_map()
    assert names == cuda["checkpoint"].get_variable_to_shape_map()
    for name in names:
        np.testing.assert_allclose(cuda["checkpoint"].get_tensor(name),
                                   cpu["checkpoint"].get_tensor(name),
                                   rtol=1e-4, atol=1e-5, err_msg=name)  # fmt: skip
    # the same accuracy line, and the same predictions (the GEMMs sum in another order: the
    # printed probabilities may differ in their 6th digit)
    assert cuda["accuracy"] == cpu["accuracy"] and cpu["accuracy"].startswith("accuracy ")
    assert cuda["probabilities"].shape == cpu["probabilities"].shape == (30, 3)
    np.testing.assert_allclose(cuda["probabilities"], cpu["probabilities"], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(
        cuda["probabilities"].argmax(axis=1), cpu["probabilities"].argmax(axis=1)
    )


@needs_cxx
def test_the_makefile_rebuilds_the_emulated_executables_without_warnings(compiled, tmp_path):
    """`make` in a copy of the directory builds the .cu programs with the host C++ compiler at
    -Wall -Wextra (no nvcc), warning-free, into executables that train as tfc's build does."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    built = compiled("emulated")
    copy = tmp_path / "copy"
    shutil.copytree(built.outdir, copy, ignore=shutil.ignore_patterns("obj", "train", "predict"))
    proc = subprocess.run(["make", "-j2"], cwd=copy, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "warning" not in log.lower() and "nvcc" not in log
    cu_lines = [line for line in log.splitlines() if re.search(r" -c program_\w+\.cu ", line)]
    assert len(cu_lines) == 4
    for line in cu_lines:
        assert line.startswith(f"{host_cxx()} -x c++ ")
        assert {"-Wall", "-Wextra", "-Werror", "-DTFC_CUDA_DEVICE_EMULATION"} <= set(line.split())
    results = {}
    for name, exe_dir in (("tfc", built.outdir), ("make", copy)):
        ckpt = tmp_path / f"ckpt_{name}"
        args = ["--data", IRIS_TRAIN, "--steps", 20, "--checkpoint-dir", ckpt, "--no-shuffle"]
        subprocess.run([str(exe_dir / "train"), *map(str, args)], check=True, capture_output=True)
        results[name] = tfc.train.load_checkpoint(str(ckpt))
    for name in results["tfc"].get_variable_to_shape_map():  # the same compilers and flags
        np.testing.assert_array_equal(
            results["make"].get_tensor(name), results["tfc"].get_tensor(name), err_msg=name
        )


@needs_cxx
@pytest.mark.skipif(_sanitizer_runtime() is None, reason="the C++ compiler has no libasan")
def test_emulated_executables_with_sanitizers_train_the_same_bits(compiled, tmp_path, monkeypatch):
    """TFC_CUDA_EMU_FLAGS instruments the programs (ASan, UBSan: each kernel's indexing), and
    the executables link the sanitizers' runtimes: 20 steps run clean and give the plain
    emulated build's checkpoint exactly (the same -O0 arithmetic)."""
    monkeypatch.setenv("TFC_CUDA_EMU_FLAGS", SANITIZE)
    sanitized = tfc.compile(str(IRIS), tmp_path / "asan", target="cuda", cuda_emulate=True)
    assert "-fsanitize=address,undefined" in (sanitized.outdir / "Makefile").read_text()
    # no leak check: a program's device copies (arena, state) live until exit, as on a GPU
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    results = {}
    for name, built in (("plain", compiled("emulated")), ("sanitized", sanitized)):
        ckpt = tmp_path / f"ckpt_{name}"
        args = ["--data", IRIS_TRAIN, "--steps", 20, "--checkpoint-dir", ckpt, "--no-shuffle"]
        proc = subprocess.run(
            [str(built.train), *map(str, args)], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0 and "runtime error" not in proc.stderr, proc.stderr[-4000:]
        results[name] = tfc.train.load_checkpoint(str(ckpt))
    assert b"__asan_report_load" in sanitized.train.read_bytes()  # instrumented and linked
    for name in results["plain"].get_variable_to_shape_map():
        np.testing.assert_array_equal(
            results["sanitized"].get_tensor(name), results["plain"].get_tensor(name), err_msg=name
        )


@needs_cxx
def test_the_command_line_selects_the_emulation(tmp_path, monkeypatch, capsys):
    """TFC_CUDA=emulate or --cuda-emulate: the emulated build (here only written: --no-build);
    --cuda-emulate without --target cuda is an error."""
    monkeypatch.setenv("TFC_CUDA", "emulate")
    assert tfc_main(["compile", str(IRIS), "-o", str(tmp_path / "env"), "--target", "cuda",
                     "--no-build"]) == 0  # fmt: skip
    assert "$(CUDA_EMU_CXX)" in (tmp_path / "env" / "Makefile").read_text()
    monkeypatch.setenv("TFC_CUDA", "gpu")
    assert tfc_main(["compile", str(IRIS), "-o", str(tmp_path / "flag"), "--target", "cuda",
                     "--cuda-emulate", "--no-build"]) == 0  # fmt: skip
    assert "$(CUDA_EMU_CXX)" in (tmp_path / "flag" / "Makefile").read_text()
    assert "CUDA device emulation" in capsys.readouterr().out
    assert tfc_main(["compile", str(IRIS), "-o", str(tmp_path / "c"), "--cuda-emulate"]) == 1
    assert "CUDA device emulation needs target 'cuda'" in capsys.readouterr().err
    monkeypatch.setenv("TFC_CUDA", "emulated")
    assert tfc_main(["compile", str(IRIS), "-o", str(tmp_path / "bad"), "--target", "cuda"]) == 1
    assert "TFC_CUDA='emulated'" in capsys.readouterr().err


@needs_cxx
def test_a_failing_emulated_build_names_the_program(tmp_path, monkeypatch):
    # the emulation header's include guard defined beforehand: the programs see no CUDA
    # emulation at all (no __global__, no dim3), so the host compiler rejects each of them
    monkeypatch.setenv("TFC_CUDA_EMU_FLAGS", "-DTFC_CUDA_EMU_H")
    with pytest.raises(CompileError, match=r"failed on .*program_\w+\.cu") as info:
        tfc.compile(str(IRIS), tmp_path / "broken", target="cuda", cuda_emulate=True)
    assert "-DTFC_CUDA_DEVICE_EMULATION" in str(info.value)
    monkeypatch.delenv("TFC_CUDA_EMU_FLAGS")
    monkeypatch.setenv("TFC_CXX", "no-such-c++-compiler")
    with pytest.raises(CompileError, match=r"no-such-c\+\+-compiler \(the host C\+\+ compiler"):
        tfc.compile(str(IRIS), tmp_path / "missing", target="cuda", cuda_emulate=True)
