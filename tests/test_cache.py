"""The compiled-program cache: a second process running the same graph starts no compiler."""

import os
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SCRIPT = """
import numpy as np
import tfc as tf
from tfc.backend.cc import BUILD_STATS
x = tf.placeholder(tf.float32, [None, 3], name="x")
y = tf.reduce_sum(tf.exp(x) * 2.0 + 1.0, axis=1)
with tf.Session() as sess:
    out = sess.run(y, {x: np.ones((2, 3), np.float32)})
print(round(float(out[0]), 4), BUILD_STATS["compiles"], BUILD_STATS["disk_hits"])
"""


def test_second_process_reuses_the_compiled_module(tmp_path):
    log = tmp_path / "compiler-calls.log"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec cc "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    env = dict(
        os.environ, TFC_CC=str(wrapper), TFC_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO)
    )

    def run() -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    first = run()
    calls_after_first = log.read_text().count("\n")
    second = run()
    assert first[0] == second[0] == str(round(3 * (2 * 2.718281828 + 1), 4))
    assert calls_after_first == 1 and first[1:] == ["1", "0"]
    assert log.read_text().count("\n") == 1  # the wrapper was not started again
    assert second[1:] == ["0", "1"]
    built = list((tmp_path / "cache").glob("*.so"))
    assert len(built) == 1 and built[0].with_suffix(".c").exists()  # readable source beside it
