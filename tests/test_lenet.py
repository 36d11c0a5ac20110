"""LeNet-5: the sample trains to >= 95% on the digits in a session, and `tfc compile` of its
model file builds native executables whose first step and predictions match the session's."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.tools.cli import main as tfc_main

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
BATCH = 32


def _import_samples():
    sys.path.insert(0, str(SAMPLES))
    try:
        import lenet
        import lenet_model
    finally:
        sys.path.remove(str(SAMPLES))
    return lenet, lenet_model


@pytest.mark.benchmark
def test_lenet_sample_reaches_95_percent():
    """The default run (500 steps); test_layers.py's test_layers_cnn_sample_trains_to_lenets_
    accuracy runs the sample for 300 steps in the default suite, to 95% too."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, str(SAMPLES / "lenet.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    progress = [ln for ln in lines if ln.startswith("step ")]
    assert len(progress) == 5
    assert re.fullmatch(r"step +100  loss \d+\.\d{4}  [\d,]+ examples/s", progress[0])
    first, last = (float(ln.split()[3]) for ln in (progress[0], progress[-1]))
    assert last < first  # it learns
    assert lines[-1].startswith("test accuracy ") and float(lines[-1].split()[-1]) >= 0.95


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """samples/lenet_model.py compiled by `tfc compile`, and the first batch as a .npy file."""
    root = tmp_path_factory.mktemp("lenet")
    assert (
        tfc_main(
            [
                "compile",
                str(SAMPLES / "lenet_model.py"),
                "-o",
                str(root / "build"),
                "--batch",
                str(BATCH),
            ]
        )
        == 0
    )
    lenet, _ = _import_samples()
    (x, y), _ = lenet.load_digits()
    lenet.save_data(root / "data", (x[:BATCH], y[:BATCH]), (x[:5], y[:5]))
    return root, x[:BATCH], y[:BATCH]


def _run(*args):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_native_step_and_predictions_match_the_session(build, safetensors):
    root, x, y = build
    exe, ckpt = root / "build", root / "ckpt"
    out = _run(
        exe / "train",
        "--data",
        root / "data" / "train.npy",
        "--steps",
        1,
        "--checkpoint-dir",
        ckpt,
        "--no-shuffle",
        "--log-every",
        1,
    )
    native_loss = float(re.search(r"^step 1  loss (\S+)", out, re.M).group(1))
    _run(
        exe / "predict",
        "--checkpoint",
        ckpt,
        "--data",
        root / "data" / "test.npy",
        "--output",
        root / "p.npy",
    )

    _, lenet_model = _import_samples()
    sigs = lenet_model.signatures()
    train, predict = sigs["train"], sigs["predict"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {train["inputs"]["features"]: x, train["inputs"]["labels"]: y}
        loss, _ = sess.run([train["loss"], train["train_op"]], feed)
        probabilities = predict["outputs"]["probabilities"]
        expected_p = sess.run(probabilities, {predict["inputs"]["features"]: x[:5]})
        expected = {v.op.name: sess.read_variable(v.op.name) for v in tf.global_variables()}
    assert abs(native_loss - loss) <= 1e-5
    saved = safetensors.numpy.load_file(str(ckpt / "model.ckpt-1.safetensors"))
    assert set(saved) == set(expected) and int(saved["global_step"]) == 1
    assert saved["conv1/kernel"].shape == (5, 5, 1, 6) and saved["fc3/kernel"].shape == (400, 120)
    for name, value in expected.items():
        np.testing.assert_allclose(saved[name], value, rtol=0, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(np.load(root / "p.npy"), expected_p, rtol=0, atol=1e-5)


def test_training_steps_have_the_same_bits_at_1_2_3_threads():
    """Three Adam steps of LeNet at b=64 (the benchmark's batch: every convolution is split
    over the threads) give the same losses and variables, bit for bit, at 1, 2 and 3 threads."""
    _, lenet_model = _import_samples()
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, size=(64, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, size=64).astype(np.int32)
    results = []
    for threads in (1, 2, 3):
        g = tf.Graph()
        with g.as_default():
            train = lenet_model.signatures()["train"]
            init = tf.global_variables_initializer()
            names = sorted(v.op.name for v in tf.global_variables())
        assert len(names) == 33  # 10 weights, their 20 Adam slots, 2 beta powers, the step
        config = tf.ConfigProto(intra_op_parallelism_threads=threads)
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            feed = {train["inputs"]["features"]: x, train["inputs"]["labels"]: y}
            losses = [sess.run([train["loss"], train["train_op"]], feed)[0] for _ in range(3)]
            results.append((losses, [sess.read_variable(n) for n in names]))
    assert results[0][0][2] < results[0][0][0]  # it learns
    for losses, values in results[1:]:
        np.testing.assert_array_equal(losses, results[0][0])
        for a, b in zip(values, results[0][1], strict=True):
            np.testing.assert_array_equal(a, b)


# -O0: ASan and UBSan instrument every access and operation at any level, and -O0 builds
# the GEMM paths 4x faster than -O1 (the warnings only optimization finds are -Werror in
# the plain -O3 build of the same sources)
SANITIZE = "-O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
SANITIZER_ENV = {"ASAN_OPTIONS": "exitcode=86:detect_leaks=1", "UBSAN_OPTIONS": "exitcode=87"}


def test_training_step_is_clean_under_sanitizers(build, tmp_path, safetensors):
    """Two training steps and a prediction built with ASan and UBSan report nothing and save
    what the plain build saves: no undefined behaviour in the kernels, no access outside the
    arena and the tensors (within the arena, the op tests' exact comparisons guard the
    scratch buffers and tiles)."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root, _, _ = build
    copy = tmp_path / "sanitized"
    shutil.copytree(root / "build", copy)
    subprocess.run(["make", "clean"], cwd=copy, check=True, capture_output=True)
    proc = subprocess.run(
        ["make", "-j2", f"CFLAGS={SANITIZE} -Werror"], cwd=copy, capture_output=True, text=True
    )
    if proc.returncode != 0 and "asan" in proc.stderr:
        pytest.skip(f"no sanitizer runtime: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    # two threads: the kernels that split their work over the pool run their parts concurrently
    env = {**os.environ, **SANITIZER_ENV, "TFC_NUM_THREADS": "2"}
    data = root / "data" / "train.npy"
    for name, exe in (("plain", root / "build"), ("sanitized", copy)):
        proc = subprocess.run(
            [str(exe / "train"), "--data", str(data), "--steps", "2", "--no-shuffle",
             "--checkpoint-dir", str(tmp_path / name)],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "runtime error" not in proc.stderr and "Sanitizer" not in proc.stderr
    a = safetensors.numpy.load_file(str(tmp_path / "plain" / "model.ckpt-2.safetensors"))
    b = safetensors.numpy.load_file(str(tmp_path / "sanitized" / "model.ckpt-2.safetensors"))
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-5, err_msg=name)
    proc = subprocess.run(
        [str(copy / "predict"), "--checkpoint", str(tmp_path / "sanitized"), "--data",
         str(root / "data" / "test.npy"), "--output", str(tmp_path / "p.npy")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0 and "runtime error" not in proc.stderr, proc.stderr
