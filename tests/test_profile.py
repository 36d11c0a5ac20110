"""The profile build (per-kernel times), TFC_PROFILE, the C timing loop, `tfc inspect --profile`."""

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.backend.cc import build_shared_library
from tfc.client.request import RunRequest
from tfc.codegen.lower import lower_program
from tfc.codegen.render import render_program
from tfc.compiler import run_passes
from tfc.ir.program import make_program_graph
from tfc.tools.cli import main
from tfc.tools.profile import profile, time_runs

ROOT = Path(__file__).resolve().parent.parent
PROFILE_SYMBOLS = (
    "tfc_profile_steps",
    "tfc_profile_label",
    "tfc_profile_read",
    "tfc_profile_reset",
)


def _training_graph(batch=128, width=256):
    """A two-layer softmax classifier trained by SGD: about a millisecond of kernels a step at
    the default sizes (the timing test's: kernels long next to the timer calls); the tests that
    do not time kernels take a smaller one, whose program compiles several times faster."""
    rng = np.random.default_rng(3)
    x = tf.placeholder(tf.float32, [None, width], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    w1 = tf.Variable(rng.standard_normal((width, width)).astype(np.float32) * 0.05, name="w1")
    w2 = tf.Variable(rng.standard_normal((width, 10)).astype(np.float32) * 0.05, name="w2")
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
    )
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {
        x: rng.standard_normal((batch, width)).astype(np.float32),
        y: rng.integers(0, 10, batch),
    }
    return loss, train, feed


def _lowered(graph, fetches, feed):
    request = RunRequest(graph, fetches, feed)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    return lower_program(run_passes(program, tf.CompileOptions().pipeline()))


def test_profile_times_every_kernel_and_trains_like_run():
    graph = tf.Graph()
    with graph.as_default():
        loss, train, feed = _training_graph()
        init = tf.global_variables_initializer()
        lowered = _lowered(graph, [loss, train], feed)
        with tf.Session() as profiled, tf.Session() as plain:
            profiled.run(init)
            plain.run(init)
            result = profiled.profile([loss, train], feed, runs=20)
            for _ in range(2 + 20):  # the profile's two warm-up runs, then its 20
                plain.run([loss, train], feed)
            for name in ("w1", "w2"):
                np.testing.assert_array_equal(
                    profiled.read_variable(name), plain.read_variable(name)
                )
    timed = [s.node for s in lowered.steps if s.kernels or s.copies]
    assert [k.node for k in result.kernels] == timed
    assert len(timed) >= 5
    assert result.runs == 20
    assert all(k.seconds >= 0 for k in result.kernels)
    # the steps' timers nest inside the whole run's: their sum is at most the total, and the
    # time outside them (entry, exit, the timer calls) is small next to these kernels
    assert 0.8 * result.total_seconds <= result.kernel_seconds <= result.total_seconds
    matmuls = [k for k in result.kernels if "MatMul" in k.ops]
    assert matmuls and all(k.flops and k.flops >= 2 * 128 * 256 * 10 for k in matmuls)
    layer1 = 2 * 128 * 256 * 256  # x @ w1, and again for the gradient of w1 (x needs none)
    assert 2 * layer1 <= result.flops <= 2.2 * layer1
    table = result.table()
    assert all(k.node in table for k in result.kernels)
    assert "GFLOP/s" in table


def test_default_build_has_no_profiling_code(monkeypatch):
    monkeypatch.delenv("TFC_PROFILE", raising=False)
    graph = tf.Graph()
    with graph.as_default():
        loss, train, feed = _training_graph(batch=8, width=16)
        lowered = _lowered(graph, [loss, train], feed)
    default, profiled = render_program(lowered), render_program(lowered, profile=True)
    assert "tfc_prof" not in default and "clock_gettime" not in default
    assert "tfc_prof" in profiled
    default_lib = build_shared_library(default, "default")
    profiled_lib = build_shared_library(profiled, "profiled")
    assert default_lib != profiled_lib  # two cache entries
    assert not any(hasattr(ctypes.CDLL(str(default_lib)), s) for s in PROFILE_SYMBOLS)
    assert all(hasattr(ctypes.CDLL(str(profiled_lib)), s) for s in PROFILE_SYMBOLS)
    monkeypatch.setenv("TFC_PROFILE", "1")
    assert render_program(lowered) == profiled
    monkeypatch.setenv("TFC_PROFILE", "0")
    assert render_program(lowered) == default


_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import tfc as tf
    x = tf.placeholder(tf.float32, [None, 16], name="x")
    w = tf.Variable(np.ones((16, 4), np.float32), name="w")
    total = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)), name="total")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            print(sess.run(total, {x: np.ones((2, 16), np.float32)}))
    """
)


@pytest.mark.parametrize("switch", ["1", None])
def test_tfc_profile_switch_prints_the_table_at_exit(tmp_path, switch):
    env = {k: v for k, v in os.environ.items() if k != "TFC_PROFILE"}
    if switch is not None:
        env["TFC_PROFILE"] = switch
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == ["128.0"] * 3
    if switch is None:
        assert "tfc profile" not in proc.stderr
        return
    assert 'tfc profile of program "total_0": 3 runs' in proc.stderr
    assert 'tfc profile of program "init": 1 runs' in proc.stderr
    assert "(Fusion)" in proc.stderr or "(MatMul)" in proc.stderr


def test_time_runs_runs_the_program_in_a_c_loop():
    graph = tf.Graph()
    with graph.as_default():
        counter = tf.Variable(0, dtype=tf.int64, name="counter")
        bump = tf.assign_add(counter, 1)
        loss, train, feed = _training_graph(batch=8, width=16)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            seconds = time_runs(sess, bump, runs=1000)
            assert sess.run(counter) == 1000
            assert 0 < seconds < 1e-3
            before = sess.run(loss, feed)
            step = time_runs(sess, [loss, train], feed, runs=10)
            assert sess.run(loss, feed) < before  # ten SGD steps on one batch lower its loss
            assert step > seconds
            with pytest.raises(ValueError, match="runs must be at least 1"):
                time_runs(sess, bump, runs=0)


def test_profile_needs_initialized_variables():
    graph = tf.Graph()
    with graph.as_default():
        loss, train, feed = _training_graph()
        with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError):
            profile(sess, [loss, train], feed, runs=1)


def test_inspect_profile_prints_the_kernels(capsys):
    model = ROOT / "samples" / "iris_model.py"
    assert main(["inspect", str(model), "--batch", "8", "--profile", "--runs", "5"]) == 0
    out = capsys.readouterr().out
    assert "profile of program loss_0+Adam: 5 runs" in out
    assert "FusedApplyAdam" in out and "outside the kernels" in out


def test_native_executables_print_the_profile_at_exit(tmp_path, monkeypatch):
    monkeypatch.setenv("TFC_PROFILE", "1")
    out = tmp_path / "iris"
    assert main(["compile", str(ROOT / "samples" / "iris_model.py"), "-o", str(out)]) == 0
    proc = subprocess.run(
        [
            str(out / "train"),
            *("--data", str(ROOT / "samples" / "data" / "iris_training.csv")),
            *("--steps", "7", "--checkpoint-dir", str(tmp_path / "ckpt")),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert 'tfc profile of program "iris_model:train": 7 runs' in proc.stderr
    assert "(FusedApplyAdam)" in proc.stderr
