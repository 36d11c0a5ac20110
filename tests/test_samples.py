"""The samples run as users run them, and print what their comments promise."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BASICS_EXPECTED = """\
Tensor("Add:0", shape=(), dtype=int32)
8
7.5
[3. 7.]
22.5
[0.         0.3        0.6        0.90000004]
23.66
0.0
Tensor("Relu:0", shape=(?, 100), dtype=float32) (32, 100) float32
matches NumPy: True
"""


def test_basics_sample_prints_the_tf1_outputs():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, str(REPO / "samples" / "basics.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "\n".join(lines[:10]) + "\n" == BASICS_EXPECTED
    assert lines[10].startswith("generated C: ") and lines[10].endswith(" for 32 examples per run")
    assert lines[11] == "figure 1: (784, 100) max True"
