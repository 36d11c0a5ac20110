"""Standalone native executables: `tfc compile` of the Iris model, its `train` and `predict`
checked against the Python session, its Makefile, its errors, and the drivers under sanitizers.
"""

import os
import re
import shutil
import struct
import subprocess
import sys
import time
import tokenize
import warnings
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.aot import ModelError
from tfc.io.tfrecord import encode_record
from tfc.tools.cli import main as tfc_main

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "samples" / "iris_model.py"
TRAIN_CSV = ROOT / "samples" / "data" / "iris_training.csv"
TEST_CSV = ROOT / "samples" / "data" / "iris_test.csv"
BATCH = 32
# -O0: ASan and UBSan instrument every access and operation at any level, and -O0 builds
# the GEMM paths 4x faster than -O1 (the warnings only optimization finds are -Werror in
# the plain -O3 build of the same sources)
SANITIZE = "-O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# distinct exit codes, so a sanitizer report can never pass for a driver's own error exit
SANITIZER_ENV = {
    "ASAN_OPTIONS": "exitcode=86:detect_leaks=1",
    "UBSAN_OPTIONS": "exitcode=87:print_stacktrace=1",
}


def _load(path):
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    return table[:, :4].astype(np.float32), table[:, 4].astype(np.int32)


def _run(exe, *args, env=None, check=True):
    proc = subprocess.run(
        [str(exe), *map(str, args)], capture_output=True, text=True, env=env, timeout=120
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{exe} {args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def _train(exe_dir, ckpt, steps, *extra, data=TRAIN_CSV, **kw):
    """`train` of `exe_dir` on `data` until step `steps`, checkpoints in `ckpt`."""
    return _run(exe_dir / "train", "--data", data, "--steps", steps, "--checkpoint-dir", ckpt,
                *extra, **kw)  # fmt: skip


def _predict(exe_dir, ckpt, data, *extra, **kw):
    return _run(exe_dir / "predict", "--checkpoint", ckpt, "--data", data, *extra, **kw)


def _iris_signatures():
    """The Iris model's graph in the default graph, as the model file builds it."""
    sys.path.insert(0, str(MODEL.parent))
    try:
        import iris_model
    finally:
        sys.path.remove(str(MODEL.parent))
    return iris_model.signatures()


def _session_variables(sess):
    return {v.op.name: sess.read_variable(v.op.name) for v in tf.global_variables()}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """The Iris model compiled by the `tfc compile` command."""
    outdir = tmp_path_factory.mktemp("iris") / "build"
    assert tfc_main(["compile", str(MODEL), "-o", str(outdir), "--batch", str(BATCH)]) == 0
    return outdir


@pytest.fixture(scope="module")
def sanitized(build, tmp_path_factory):
    """A copy of the build directory rebuilt by its own Makefile, with ASan and UBSan."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    copy = tmp_path_factory.mktemp("copy") / "iris"
    shutil.copytree(build, copy)
    subprocess.run(["make", "clean"], cwd=copy, check=True, capture_output=True)
    assert not (copy / "train").exists() and not (copy / "obj").exists()
    proc = subprocess.run(
        ["make", "-j2", f"CFLAGS={SANITIZE} -Werror"], cwd=copy, capture_output=True, text=True
    )
    if proc.returncode != 0 and "asan" in proc.stderr:
        pytest.skip(f"no sanitizer runtime: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    return copy


def test_one_step_matches_the_session(build, tmp_path, safetensors):
    native = tmp_path / "ckpt"
    out = _train(build, native, 1, "--batch", BATCH, "--no-shuffle", "--log-every", 1).stdout
    native_loss = float(re.search(r"^step 1  loss (\S+)", out, re.M).group(1))

    sig = _iris_signatures()["train"]
    x, y = _load(TRAIN_CSV)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {sig["inputs"]["features"]: x[:BATCH], sig["inputs"]["labels"]: y[:BATCH]}
        loss, _ = sess.run([sig["loss"], sig["train_op"]], feed)
        expected = _session_variables(sess)
    assert abs(native_loss - loss) <= 1e-5
    saved = safetensors.numpy.load_file(str(native / "model.ckpt-1.safetensors"))
    assert set(saved) == set(expected)
    assert int(saved["global_step"]) == 1
    for name, value in expected.items():
        np.testing.assert_allclose(saved[name], value, rtol=0, atol=1e-5, err_msg=name)
    # and tf.train.Saver reads the native checkpoint into a session
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(str(native)))
        for name, value in expected.items():
            np.testing.assert_allclose(sess.read_variable(name), value, atol=1e-5, err_msg=name)


def test_initial_weights_and_npy_data_match(build, tmp_path, safetensors):
    """--steps 0 saves the initial values: the session's, from the same Philox streams; a
    .npy file of the same rows trains exactly as the CSV does."""
    _train(build, tmp_path / "a", 0)
    initial = safetensors.numpy.load_file(str(tmp_path / "a" / "model.ckpt-0.safetensors"))
    _iris_signatures()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for name, value in _session_variables(sess).items():
            np.testing.assert_array_equal(initial[name], value, err_msg=name)

    np.save(tmp_path / "train.npy", np.loadtxt(TRAIN_CSV, delimiter=",", skiprows=1))
    for data, ckpt in ((TRAIN_CSV, "csv"), (tmp_path / "train.npy", "npy")):
        _train(build, tmp_path / ckpt, 3, data=data)
    from_csv = safetensors.numpy.load_file(str(tmp_path / "csv" / "model.ckpt-3.safetensors"))
    from_npy = safetensors.numpy.load_file(str(tmp_path / "npy" / "model.ckpt-3.safetensors"))
    for name in from_csv:
        np.testing.assert_array_equal(from_csv[name], from_npy[name], err_msg=name)


def test_data_formats_read_alike(build, tmp_path):
    """CSV with a byte order mark, CRLF, blank lines and spaces, .npy files of other types
    and layouts, and a TFRecord file of Examples give predict the same rows."""
    ckpt = tmp_path / "ckpt"
    _train(build, ckpt, 20)
    table = np.loadtxt(TEST_CSV, delimiter=",", skiprows=1)
    rows = [", ".join(f"{v:g}" for v in row) for row in table]
    (tmp_path / "messy.csv").write_bytes(
        ("\ufeff" + "\r\n".join(["a,b,c,d,label", "", *rows, "  "])).encode()
    )
    np.save(tmp_path / "f32.npy", table.astype(np.float32))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(table))
    # TFRecord files of Examples: features in the order of their names, a record a row
    with tf.python_io.TFRecordWriter(str(tmp_path / "examples.tfrecord")) as w:
        for row in table:
            feature = {
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(row[4])])),
                "features": tf.train.Feature(float_list=tf.train.FloatList(value=row[:4])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=feature))
                    .SerializeToString())  # fmt: skip
    results = {}
    for name in ("messy.csv", "f32.npy", "fortran.npy", "examples.tfrecord"):
        out = _predict(build, ckpt, tmp_path / name, "--output", tmp_path / f"{name}.out.npy")
        assert out.stdout.startswith("accuracy ")
        results[name] = np.load(tmp_path / f"{name}.out.npy")
    _predict(build, ckpt, TEST_CSV, "--output", tmp_path / "reference.npy")
    reference = np.load(tmp_path / "reference.npy")
    assert reference.shape == (30, 3)
    for name, result in results.items():
        np.testing.assert_array_equal(result, reference, err_msg=name)


def test_native_training_reaches_the_tutorial_accuracy(build, tmp_path):
    ckpt = tmp_path / "ckpt"
    log = _train(build, ckpt, 1000, "--log-every", 500).stdout
    losses = [float(v) for v in re.findall(r"^step \d+  loss (\S+)  \d+ examples/s$", log, re.M)]
    assert len(losses) == 2 and losses[-1] < 0.2
    out = _predict(build, ckpt, TEST_CSV).stdout.splitlines()
    assert len(out) == 31
    accuracy = float(re.fullmatch(r"accuracy (\S+) \((\d+) of 30\)", out[-1]).group(1))
    assert accuracy >= 0.93
    flowers = tmp_path / "flowers.csv"
    flowers.write_text("5.1,3.3,1.7,0.5\n5.9,3.0,4.2,1.5\n6.9,3.1,5.4,2.1\n")
    lines = _predict(build, ckpt, flowers).stdout.splitlines()
    probabilities = np.array([[float(v) for v in line.split()] for line in lines])
    assert probabilities.shape == (3, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    assert list(probabilities.argmax(axis=1)) == [0, 1, 2]  # Setosa, Versicolor, Virginica


def test_native_and_session_training_agree_over_1000_steps(build, tmp_path):
    """The same batches in the same order (no shuffle) natively and in a session: after 1000
    steps the weights agree and so does the test accuracy (both >= 0.93)."""
    steps = 1000
    native = tmp_path / "ckpt"
    _train(build, native, steps, "--batch", BATCH, "--no-shuffle", "--log-every", steps)
    out = _predict(build, native, TEST_CSV).stdout.splitlines()
    native_accuracy = float(re.fullmatch(r"accuracy (\S+) \(\d+ of 30\)", out[-1]).group(1))

    sig = _iris_signatures()
    x, y = _load(TRAIN_CSV)
    test_x, test_y = _load(TEST_CSV)
    rows = np.arange(steps * BATCH) % len(x)  # a batch continues into the next epoch
    train, inputs = sig["train"], sig["train"]["inputs"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            batch = rows[step * BATCH : (step + 1) * BATCH]
            sess.run(train["train_op"], {inputs["features"]: x[batch], inputs["labels"]: y[batch]})
        probabilities = sess.run(
            sig["predict"]["outputs"]["probabilities"], {inputs["features"]: test_x}
        )
        expected = _session_variables(sess)
    session_accuracy = float((probabilities.argmax(axis=1) == test_y).mean())
    assert native_accuracy == session_accuracy >= 0.93
    saved = tf.train.load_checkpoint(str(native))
    for name, value in expected.items():
        np.testing.assert_allclose(saved.get_tensor(name), value, rtol=1e-4, atol=1e-5)


def test_resume_continues_the_global_step(build, tmp_path, safetensors):
    resumed, straight = tmp_path / "resumed", tmp_path / "straight"
    _train(build, resumed, 5)
    out = _train(build, resumed, 9, "--log-every", 1).stdout
    assert "(global_step 5)" in out
    assert re.findall(r"^step (\d+)", out, re.M) == ["6", "7", "8", "9"]
    assert "nothing to do" in _train(build, resumed, 9).stdout
    _train(build, straight, 9)
    # the example stream continues where it stood: resumed training is the same training
    a = safetensors.numpy.load_file(str(resumed / "model.ckpt-9.safetensors"))
    b = safetensors.numpy.load_file(str(straight / "model.ckpt-9.safetensors"))
    assert int(a["global_step"]) == 9
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert tf.train.latest_checkpoint(str(resumed)) == str(resumed / "model.ckpt-9")


def test_predict_matches_the_session(build, tmp_path):
    ckpt = tmp_path / "ckpt"
    _train(build, ckpt, 50)
    # 120 rows: three batches of 32 and a tail of 24 run one by one
    out = _predict(build, ckpt, TRAIN_CSV, "--output", tmp_path / "p.npy").stdout
    assert re.fullmatch(r"accuracy \S+ \(\d+ of 120\)\n", out)
    native = np.load(tmp_path / "p.npy")
    text = _predict(build, ckpt / "model.ckpt-50", TRAIN_CSV)
    printed = np.array([[float(v) for v in line.split()] for line in text.stdout.splitlines()[:-1]])

    sig = _iris_signatures()["predict"]
    x, _ = _load(TRAIN_CSV)
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, str(ckpt / "model.ckpt-50"))
        expected = sess.run(sig["outputs"]["probabilities"], {sig["inputs"]["features"]: x})
    assert native.shape == (120, 3) and native.dtype == np.float32
    np.testing.assert_allclose(native, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(printed, expected, rtol=1e-5, atol=1e-6)


def test_threads_option_and_variable_give_the_same_weights(build, tmp_path):
    """--threads and TFC_NUM_THREADS are accepted; no split changes a sum, so the weights are
    the same bits as one thread's."""
    one, two, env = tmp_path / "one", tmp_path / "two", tmp_path / "env"
    _train(build, one, 20, "--no-shuffle", "--threads", 1)
    _train(build, two, 20, "--no-shuffle", "--threads", 2)
    _train(build, env, 20, "--no-shuffle", env={**os.environ, "TFC_NUM_THREADS": "2"})
    a, b, c = (tf.train.load_checkpoint(str(d)) for d in (one, two, env))
    for name in a.get_variable_to_shape_map():
        np.testing.assert_array_equal(a.get_tensor(name), b.get_tensor(name))
        np.testing.assert_array_equal(a.get_tensor(name), c.get_tensor(name))
    assert "--threads T" in _run(build / "predict", "--help").stdout


def test_executables_need_only_libc_and_libm(build):
    if shutil.which("ldd") is None:
        pytest.skip("ldd is not installed")
    allowed = ("linux-vdso.so", "libc.so", "libm.so", "libpthread.so", "ld-linux")
    for exe in ("train", "predict"):
        lines = subprocess.run(
            ["ldd", str(build / exe)], capture_output=True, text=True, check=True
        ).stdout.split("\n")
        libs = [line.split()[0] for line in lines if line.strip()]
        assert libs and all(lib.rsplit("/", 1)[-1].startswith(allowed) for lib in libs), libs


def test_the_programs_link_the_gemms_paths_from_the_runtime_archive(build):
    """The program files only declare the GEMM's packing paths (TFC_GEMM_LINKED); the runtime's
    archive defines them, compiled once (runtime/src/tfc_gemm_paths.c)."""
    if shutil.which("nm") is None:
        pytest.skip("nm is not installed")

    def symbols(path):
        return subprocess.run(["nm", str(path)], capture_output=True, text=True, check=True).stdout

    archive = symbols(build / "obj" / "libtfcrt.a")
    for path in ("columns", "narrow", "tall"):
        assert re.search(rf" T tfc_gemm_{path}_f32$", archive, re.M), path
    programs = [symbols(p) for p in sorted((build / "obj").glob("program_*.o"))]
    assert programs and any(re.search(r" U tfc_gemm_\w+_f32$", p, re.M) for p in programs)
    for p in programs:
        assert not re.search(r" [tT] tfc_gemm_(columns|narrow|tall)_f(32|64)$", p, re.M), p


def test_makefile_rebuilds_from_the_directory_alone(build, sanitized, tmp_path, safetensors):
    """The copy was rebuilt by `make` (with sanitizers) and trains exactly as the original."""
    env = {**os.environ, **SANITIZER_ENV}
    for name, exe_dir in (("plain", build), ("sanitized", sanitized)):
        proc = _train(exe_dir, tmp_path / name, 20, "--save-every", 10, "--max-to-keep", 1, env=env)
        assert "runtime error" not in proc.stderr
    assert sorted(p.name for p in (tmp_path / "sanitized").iterdir()) == [
        "checkpoint",
        "model.ckpt-20.safetensors",
    ]
    a = safetensors.numpy.load_file(str(tmp_path / "plain" / "model.ckpt-20.safetensors"))
    b = safetensors.numpy.load_file(str(tmp_path / "sanitized" / "model.ckpt-20.safetensors"))
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-6, err_msg=name)
    proc = _predict(sanitized, tmp_path / "sanitized", TEST_CSV, "--output", tmp_path / "p.npy",
                    env=env)  # fmt: skip
    assert proc.stdout.startswith("accuracy ") and "runtime error" not in proc.stderr


# file -> (content, the error of train and predict; predict reads 4 or 5 columns, so narrow.csv
# fails there on the missing checkpoint instead)


def _records(*examples: dict, damage: int | None = None) -> bytes:
    """A TFRecord file of Examples, each {feature: {list kind: values}}; a byte flipped at
    `damage`."""
    out = b""
    for features in examples:
        feature = {
            name: tf.train.Feature(**{kind: getattr(tf.train, kind.title().replace("_", ""))(
                value=values)}) for name, spec in features.items() for kind, values in spec.items()
        }  # fmt: skip
        out += encode_record(tf.train.Example(features=tf.train.Features(feature=feature))
                             .SerializeToString())  # fmt: skip
    if damage is not None:
        out = out[:damage] + bytes([out[damage] ^ 1]) + out[damage + 1 :]
    return out


def _npy(header: bytes, data: bytes = bytes(20)) -> bytes:
    """A version 1.0 .npy file of `header` (the dict text, as is) and `data`."""
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


BAD_DATA = {
    "ragged.csv": ("5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4\n", r"ragged\.csv:2: 3 columns, but the "),
    "word.csv": (
        "120,4,a,b,c\n5.1,3.5,1.4,0.2,0\n4.9,x,1.4,0.2,0\n",
        r"word\.csv:3: column 2: 'x' is not a number",
    ),
    "empty.csv": ("\n \n", r"empty\.csv: no data rows"),
    "bad.npy": (
        b"\x93NUMPY\x01\x00\x40\x00{'descr': '<f4', 'fortran_order': False, 'shape': (",
        r"bad\.npy: truncated",
    ),
    "narrow.csv": ("5.1,3.5,1.4,0\n", r"narrow\.csv has 4 columns; .* expected 5"),
    "label.csv": (
        "5.1,3.5,1.4,0.2,1.5\n",
        r"label\.csv:1: column 5: label 1\.5 is not one of the model's 3 classes \(an integer "
        r"from 0 to 2\)",
    ),
    "class7.csv": ("5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,7\n", r"class7\.csv:2: column 5: label 7 "),
    "negative.csv": ("5.1,3.5,1.4,0.2,-1\n", r"negative\.csv:1: column 5: label -1 is not"),
    "huge_label.csv": ("5.1,3.5,1.4,0.2,1e30\n", r"huge_label\.csv:1: column 5: label 1e\+30 "),
    "nan.csv": ("5.1,nan,1.4,0.2,0\n", r"nan\.csv:1: column 2: nan is not a finite number"),
    "inf.csv": ("h,e,a,d,r\n5.1,3.5,-inf,0.2,0\n", r"inf\.csv:2: column 3: -inf is not a finite"),
    "big.csv": (
        "5.1,3.5,1.4,1e999,0\n",
        r"big\.csv:1: column 4: inf is not a finite number "
        r"\(a value out of range reads as inf\)",
    ),  # fmt: skip
    "magic.npy": (
        b"\x93NUMPZ\x01\x00",
        r"magic\.npy: not a \.npy file: it starts with 93 4e 55 "
        r"4d 50 5a \(hex\)",
    ),  # fmt: skip
    "junk.npy": (
        _npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5), } junk\n"),
        r"junk\.npy: bad \.npy header: bytes after the header's dictionary",
    ),
    "damaged.npy": (
        _npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5)), }     \n"),
        r"damaged\.npy: bad \.npy header: expected , or }",
    ),
    "text.tfrecord": (
        _records({"x": {"float_list": [1, 2, 3, 4]}, "y": {"bytes_list": [b"setosa"]}}),
        r"text\.tfrecord: record 0: feature 'y' is a bytes_list",
    ),
    "crc.tfrecord": (
        _records({"x": {"float_list": [1, 2, 3, 4, 0]}}, damage=20),
        r"crc\.tfrecord: record 0 at byte 0: corrupted record data",
    ),
    "uneven.tfrecord": (
        _records({"x": {"float_list": [1, 2, 3, 4, 0]}}, {"x": {"float_list": [1, 2, 3, 4]}}),
        r"uneven\.tfrecord: record 1: feature 'x' has 4 values, in record 0 5",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_DATA))
def test_bad_data_is_a_clear_error(sanitized, tmp_path, name):
    content, message = BAD_DATA[name]
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    env = {**os.environ, **SANITIZER_ENV}
    train = _train(sanitized, tmp_path / "ck", 1, data=path, env=env, check=False)
    predict = _predict(sanitized, tmp_path / "none", path, env=env, check=False)
    if name == "narrow.csv":
        predict_message = r"no checkpoint at .*none"
    else:
        predict_message = message
    for proc, exe, expected in ((train, "train", message), (predict, "predict", predict_message)):
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith(f"{exe}: error: "), proc.stderr
        assert re.search(expected, proc.stderr), proc.stderr
        assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr


BAD_ARGUMENTS = [
    (
        ["--data", "missing.csv", "--steps", 1, "--checkpoint-dir", "ck"],
        "cannot open missing.csv: No such file or directory",
    ),
    (
        ["--data", TRAIN_CSV, "--steps", 1, "--checkpoint-dir", "ck", "--batch", 64],
        "compiled for batch 32; recompile with `tfc compile --batch 64`",
    ),
    (["--data", TRAIN_CSV, "--steps", "ten", "--checkpoint-dir", "ck"], "--steps ten: not an"),
    (["--data", TRAIN_CSV, "--steps", 1], "--checkpoint-dir are required"),
    (
        ["--data", TRAIN_CSV, "--steps", 1, "--checkpoint-dir", "ck", "--hparam", "momentum=0.9"],
        "declares no hyperparameter 'momentum' (declared: learning_rate)",
    ),
    (
        ["--data", TRAIN_CSV, "--steps", 1, "--checkpoint-dir", "ck", "--lr", "fast"],
        "--lr fast: not a finite number",
    ),
    (
        ["--data", TRAIN_CSV, "--steps", 1, "--checkpoint-dir", "ck", "--shuffle"],
        "unknown argument '--shuffle'",
    ),
    (
        ["--data", TRAIN_CSV, "--steps", 1, "--checkpoint-dir", "ck", "--threads", 0],
        "--threads 0: must be at least 1",
    ),
]


@pytest.mark.parametrize("args, message", BAD_ARGUMENTS)
def test_bad_arguments_are_a_clear_error(sanitized, tmp_path, args, message):
    env = {**os.environ, **SANITIZER_ENV}
    proc = subprocess.run(
        [str(sanitized / "train"), *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "ck").exists()  # refused before anything is written


def test_missing_and_corrupt_checkpoints_are_clear_errors(sanitized, tmp_path):
    env = {**os.environ, **SANITIZER_ENV}

    def predict():
        proc = _predict(sanitized, tmp_path, TEST_CSV, env=env, check=False)
        assert proc.returncode == 1 and "Sanitizer" not in proc.stderr, proc.stderr
        return proc.stderr

    assert f"checkpoint state file {tmp_path}/checkpoint does not exist" in predict()
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-7"\n')
    assert f"names model.ckpt-7, but {tmp_path}/model.ckpt-7.safetensors does not" in predict()
    (tmp_path / "model.ckpt-7.safetensors").write_bytes(b"not a checkpoint at all")
    message = f"checkpoint {tmp_path}/model.ckpt-7.safetensors has a corrupt header"
    assert message in predict()
    # train refuses to resume from it rather than start over and overwrite the directory
    proc = _train(sanitized, tmp_path, 1, env=env, check=False)
    assert proc.returncode == 1 and f"resuming from {tmp_path}: {message}" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "model.ckpt-7.safetensors"]


def test_lr_overrides_the_learning_rate(build, tmp_path, safetensors):
    for lr in ("0", "0.01"):
        _train(build, tmp_path / lr, 2, "--lr", lr)
    frozen = safetensors.numpy.load_file(str(tmp_path / "0" / "model.ckpt-2.safetensors"))
    moved = safetensors.numpy.load_file(str(tmp_path / "0.01" / "model.ckpt-2.safetensors"))
    assert "saved" in _train(build, tmp_path / "init", 0).stdout
    initial = safetensors.numpy.load_file(str(tmp_path / "init" / "model.ckpt-0.safetensors"))
    np.testing.assert_array_equal(frozen["logits/kernel"], initial["logits/kernel"])
    assert np.abs(moved["logits/kernel"] - initial["logits/kernel"]).max() > 1e-3


def test_model_file_errors(tmp_path):
    cases = {
        "no_signatures.py": ("x = 1\n", "defines no signatures() function"),
        "not_a_placeholder.py": (
            "import tfc as tf\n"
            "def signatures():\n"
            "    x = tf.zeros([3, 4])\n"
            "    return {'predict': {'inputs': {'features': x}, 'outputs': {'y': x * 2}}}\n",
            "must be a tf.placeholder, not a",
        ),
        "unknown_key.py": (
            "import tfc as tf\n"
            "def signatures():\n"
            "    x = tf.placeholder(tf.float32, [None, 4])\n"
            "    return {'predict': {'inputs': {'x': x}, 'outputs': {'y': x * 2}}}\n",
            "predict inputs: unknown key(s) ['x']",
        ),
        "fixed_batch.py": (
            "import tfc as tf\n"
            "def signatures():\n"
            "    x = tf.placeholder(tf.float32, [8, 4])\n"
            "    return {'predict': {'inputs': {'features': x}, 'outputs': {'y': x * 2}}}\n",
            "compiled for batch 32: use --batch 8",
        ),
    }
    for filename, (text, message) in cases.items():
        (tmp_path / filename).write_text(text)
        with pytest.raises(ModelError, match=re.escape(message)):
            tf.compile(tmp_path / filename, tmp_path / "out", build=False)
    assert tfc_main(["compile", str(tmp_path / "no_signatures.py"), "-o", str(tmp_path)]) == 1


def test_iris_native_sample_runs():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "samples" / "iris_native.py")],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    accuracy = float(re.search(r"^Test set accuracy: (\S+)$", proc.stdout, re.M).group(1))
    assert accuracy >= 0.93
    for species in ("Setosa", "Versicolor", "Virginica"):
        assert re.search(
            rf'^Prediction is "{species}" \(\d+\.\d%\), expected "{species}"$', proc.stdout, re.M
        ), proc.stdout


# (header text, whether numpy reads it): every header numpy refuses, the executables refuse
NPY_HEADERS = [
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5), }\n", True),
    (b'{"shape": (1,5), "descr": "<f4", "fortran_order": False}', True),
    (b"{ 'descr' : '<f4' ,\n 'fortran_order':False,'shape':( 1 , 5 , ) }   \n", True),
    (b"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 5), 'descr': '<f4'}", True),
    (b"{'descr': '<f4', 'fortran_order': True, 'shape': (1L, 5L)}", True),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5), } junk\n", False),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5)), }\n", False),
    (b"{'descr': '<f4', 'fortran_order': False}", False),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5), 'extra': 1}", False),
    (b"{'descr': '<f4', 'fortran_order': 'False', 'shape': (1, 5)}", False),
    (b"{'descr': '<f4', 'fortran_order': 0, 'shape': (1, 5)}", False),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': [1, 5]}", False),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1.0, 5)}", False),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (20)}", False),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5)", False),
    (b"{'descr': '<f4, 'fortran_order': False, 'shape': (1, 5)}", False),
    (b"('descr', '<f4')", False),
    (b"", False),
]


@pytest.mark.parametrize("header, numpy_reads", NPY_HEADERS)
def test_npy_headers_are_read_as_numpy_reads_them(build, tmp_path, header, numpy_reads):
    path = tmp_path / "data.npy"
    path.write_bytes(_npy(header, np.array([5.1, 3.5, 1.4, 0.2, 1], np.float32).tobytes()))
    try:
        with warnings.catch_warnings():  # a Python 2 header's "L" warns
            warnings.simplefilter("ignore", UserWarning)
            np.load(path)
        numpy_ok = True
    except (ValueError, SyntaxError, tokenize.TokenError):  # numpy's ways of refusing a header
        numpy_ok = False
    assert numpy_ok == numpy_reads, header  # the table says what numpy does
    proc = _predict(build, tmp_path / "none", path, check=False)
    assert proc.returncode == 1
    if numpy_reads:  # the data was read: the missing checkpoint is what fails
        assert "no checkpoint at" in proc.stderr, proc.stderr
    else:
        assert "data.npy: bad .npy header: " in proc.stderr, proc.stderr


def test_non_finite_features_pass_only_when_allowed(build, tmp_path):
    data = tmp_path / "inf.csv"
    rows = TRAIN_CSV.read_text().splitlines()
    fields = rows[1].split(",")
    fields[1] = "inf"
    data.write_text("\n".join([rows[0], ",".join(fields), *rows[2:]]) + "\n")
    proc = _train(build, tmp_path / "ck", 1, data=data, check=False)
    assert proc.returncode == 1 and "inf.csv:2: column 2: inf is not a finite" in proc.stderr
    _train(build, tmp_path / "ck", 1, "--allow-nonfinite", data=data)
    test = tmp_path / "nan.csv"
    test.write_text("5.1,nan,1.4,0.2\n")
    proc = _predict(build, tmp_path / "ck", test, check=False)
    assert proc.returncode == 1 and "nan.csv:1: column 2: nan is not a finite" in proc.stderr
    out = _predict(build, tmp_path / "ck", test, "--allow-nonfinite").stdout
    assert out.split() == ["nan"] * 3  # NaN in, NaN out: the caller asked for it


def test_train_removes_what_killed_saves_left(build, tmp_path):
    """SIGKILLed during saves again and again, then run once more: the leftovers of every
    interrupted save (temporaries, checkpoints the state file does not name) are gone."""
    import signal

    ckpt = tmp_path / "ckpt"
    rng = np.random.default_rng(0)
    for _ in range(5):
        proc = subprocess.Popen(
            [str(build / "train"), "--data", str(TRAIN_CSV), "--steps", "100000000",
             "--checkpoint-dir", str(ckpt), "--save-every", "1", "--max-to-keep", "3",
             "--log-every", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(float(rng.uniform(0.3, 0.8)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (ckpt / f"checkpoint.tmp-{dead.pid}-3").write_text("partial")
    (ckpt / f"model.ckpt-99999999.safetensors.tmp-{dead.pid}-0").write_bytes(b"partial")
    (ckpt / "model.ckpt-1.safetensors").write_bytes(b"an orphan")
    state = tf.train.get_checkpoint_state(str(ckpt))
    step = int(os.path.basename(state.model_checkpoint_path).rsplit("-", 1)[1])
    out = _train(build, ckpt, step + 2, "--save-every", "1", "--max-to-keep", "3").stdout
    assert re.search(rf"removed \d+ leftover file\(s\) of interrupted saves from {ckpt}", out)
    state = tf.train.get_checkpoint_state(str(ckpt))
    listed = {os.path.basename(p) + ".safetensors" for p in state.all_model_checkpoint_paths}
    assert {p.name for p in ckpt.iterdir()} == {"checkpoint", *listed} and len(listed) == 3
