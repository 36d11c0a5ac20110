"""bench/inference_b1.py end to end on a tiny MLP: every tfc way runs, agrees with the Session
(the script checks the embedded library's and ONNX Runtime's outputs) and gets a row."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


def test_tiny_run_times_every_way_and_says_the_load():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "inference_b1.py"), "--tiny", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(r"^\| tiny MLP 12-16-5 inference \| ([^|]+) \| ([\d.]+) ", proc.stdout, re.M)
    times = {name.strip(): float(us) for name, us in rows}
    ways = [
        "Session.run (make_callable)",
        "cffi call",
        "Session's program, C loop",
        "embedded C (predict loop)",
    ]
    assert set(ways) <= set(times), proc.stdout
    assert all(times[w] > 0 for w in ways)
    has_ort = all(importlib.util.find_spec(m) for m in ("onnx", "onnxruntime"))
    assert any(name.startswith("ONNX Runtime") for name in times) == has_ort, proc.stdout
    if has_ort:
        assert re.search(r"\| [\d.]+x \| (met|not met) \|", proc.stdout), proc.stdout
    assert "load average before/after: " in proc.stdout
