"""bench/prepack.py end to end on a tiny MLP: the Session's program packs its weights, the
unpacked compilation of the same graph gives the same bits (the script checks), each gets a
row with its ratio, and the load is said."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


def test_tiny_run_compares_packed_and_unpacked_and_says_the_load():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "prepack.py"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    rows = re.findall(
        r"^\| tiny MLP 12-48-24-5, b=(\d) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x \| ([\d.]+)x \|",
        proc.stdout,
        re.M,
    )
    assert [r[0] for r in rows] == ["4", "1"], proc.stdout
    assert all(float(v) > 0 for r in rows for v in r[1:]), proc.stdout
    assert "load average before: " in proc.stdout and "load average after: " in proc.stdout
