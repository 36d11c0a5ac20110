"""bench/gpu_check.sh, the one call that checks tfc on a lent GPU, checked without one: its bash
parses, its dry run (the GPU tests collected, the sanitizer step, bench/cuda_conv.py and
bench/cuda_train.py under device emulation at tiny sizes) passes and writes every log and a
summary, and a step that does not run makes the script fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "gpu_check.sh"
STEPS = ("tests", "sanitizer", "conv", "train", "conv_tf32", "train_bf16")
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def _run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    logs = tmp_path / "logs"
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    environ = dict(os.environ, OUT=str(logs), PYTHON=sys.executable, **env)
    environ["PYTHONPATH"] = os.pathsep.join(path)
    environ.pop("TFC_CUDA", None)
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"], cwd=tmp_path, env=environ,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return proc, logs


def test_script_parses():
    proc = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_dry_run_runs_every_step_and_writes_the_logs(tmp_path):
    proc, logs = _run(tmp_path)
    summary = (logs / "summary.txt").read_text()
    assert proc.returncode == 0, summary + proc.stderr[-3000:]
    assert sorted(p.name for p in logs.iterdir()) == sorted(
        [f"{name}.log" for name in ("env", *STEPS)] + ["summary.txt"]
    )
    for name in STEPS:
        assert re.search(rf"^== {name}: ok, \d+ s: ", summary, re.M), summary
    assert "TFC_CUDA=emulate" in (logs / "env.log").read_text()
    collected = re.search(r"(\d+)/\d+ tests collected", (logs / "tests.log").read_text())
    assert collected and int(collected.group(1)) >= 40, summary
    conv = (logs / "conv.log").read_text()
    for op in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"):
        assert re.search(rf"^res128-s2 +{op} +\d+\.\d+ ", conv, re.M), conv
    assert "TF32 (tensor cores) in both" in (logs / "conv_tf32.log").read_text()
    for log in ("sanitizer", "train"):  # the table row of the one ResNet step
        text = (logs / f"{log}.log").read_text()
        assert re.search(r"^resnet128 +1 +\d+\.\d+ ", text, re.M), text
    # bf16 mixed precision: tfc against torch.autocast (on the CPU here; LeNet, the cheapest to
    # emulate, has no loss check: its flatten order is not PyTorch's)
    text = (logs / "train_bf16.log").read_text()
    assert "bf16 mixed precision" in text
    assert re.search(r"^lenet64-bf16 +1 +\d+\.\d+ +\d+\.\d+ ", text, re.M), text


def test_a_step_that_does_not_run_fails_the_check(tmp_path):
    proc, logs = _run(tmp_path, GPU_CHECK_BUDGET="0")
    summary = (logs / "summary.txt").read_text()
    assert proc.returncode != 0
    for name in STEPS:
        assert f"== {name}: not run (the budget is spent)" in summary
