"""bench/inference_cpu.py end to end on a tiny MLP: tfc's two ways (and ONNX Runtime's, where it
is installed: the script checks its probabilities against tfc's) get a row in CPU time."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


def test_tiny_run_times_each_way_in_cpu_time_and_says_the_load():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "inference_cpu.py"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(
        r"^\| tiny MLP 12-16-5 inference, b=4 \| ([^|]+) \| ([\d.]+) \| ([^|]*) \| ([\d.]+) \|",
        proc.stdout,
        re.M,
    )
    times = {
        name.strip(): (float(cpu), ratio.strip(), float(wall)) for name, cpu, ratio, wall in rows
    }
    ways = ["tfc Session.run (make_callable)", "tfc program (cffi call)"]
    assert set(ways) <= set(times), proc.stdout
    assert all(times[w][0] > 0 and times[w][2] > 0 for w in ways)
    has_ort = all(importlib.util.find_spec(m) for m in ("onnx", "onnxruntime"))
    assert ("ONNX Runtime" in times) == has_ort, proc.stdout
    assert all(bool(re.fullmatch(r"[\d.]+x", times[w][1])) == has_ort for w in ways)
    assert "load average before/after: " in proc.stdout
