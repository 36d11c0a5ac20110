"""The embeddable library (tfc compile --target embed) on this machine: its results equal the
session's, it builds warning-free as strict C99, runs clean under ASan/UBSan, calls nothing of
libc but memcpy/memset and libm, and two prefixed models link into one program."""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest
from embed_support import (
    CHECKS,
    EMBED_CFLAGS,
    ROOT,
    STEPS,
    WARNINGS,
    build,
    compile_with_harness,
    inputs,
    parse_stdout,
    reference_words,
    split_words,
)

from tfc.aot.embed import compile_embed
from tfc.aot.signatures import ModelError

MODELS = {  # file, features, classes
    "iris": ("iris_model.py", 4, 3),
    "digits": ("digits_model.py", 64, 10),
}
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
# -O0, where the same model.c is also built optimized with -Werror (checks warnings only
# optimization finds): the sanitizers instrument every access at any level, and -O0 builds
# twice as fast
SANITIZE_O0 = ["-O0", *SANITIZE]
# libc and libm functions model.c may call; anything else (malloc, printf, pthread_*) fails
ALLOWED = {"memcpy", "memset", "memmove"} | {
    f + s
    for f in ("exp", "expm1", "log", "log1p", "sqrt", "tanh", "pow", "sin", "cos", "tan",
              "fmod", "floor", "ceil", "nearbyint", "fabs", "trunc", "atan", "atan2", "asin",
              "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma")
    for s in ("", "f")
}  # fmt: skip


def _run(exe, **kw) -> str:
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, **kw)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _check(words, expected, rtol=2e-5, atol=2e-6):
    got = split_words(words, [len(e) for e in expected])
    for i, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"result {i}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_and_predict_equal_the_session_under_sanitizers(tmp_path, name):
    model, n_features, n_classes = MODELS[name]
    x, y = inputs(4, n_features, n_classes)
    m = compile_with_harness(model, tmp_path, 4, x, y, prefix=f"{name}_")
    exe = build(["cc"], tmp_path, [*SANITIZE_O0, "-DHARNESS_STDIO"], "harness", ["-lm"])
    words = parse_stdout(_run(exe))
    expected = reference_words(model, 4, x, y)
    assert len(expected) == 1 + 2 * STEPS
    _check(words, expected)
    # training moved the predictions: the comparison covers the updated variables
    assert not np.allclose(expected[0], expected[-1], atol=1e-4)
    assert m.arena_bytes <= 1.05 * m.arena_lower_bound, (m.arena_bytes, m.arena_lower_bound)


def test_training_from_an_external_blob_equals_the_session(tmp_path):
    """--weights external with a train step: init takes the blob and its size; the blob holds
    the non-zero variables only (Adam's slots and the biases are zeroed by init)."""
    x, y = inputs(4, 4, 3, seed=6)
    m = compile_with_harness("iris_model.py", tmp_path, 4, x, y, weights="external")
    assert m.weights_bytes == (tmp_path / "weights.bin").stat().st_size == 696
    assert "int model_init(void *state, size_t state_bytes, const void *weights, size_t " \
        "weights_bytes);" in (tmp_path / "model.h").read_text()  # fmt: skip
    exe = build(["cc"], tmp_path, ["-O1", *SANITIZE, "-DHARNESS_STDIO"], "harness", ["-lm"])
    _check(parse_stdout(_run(exe)), reference_words("iris_model.py", 4, x, y))


@pytest.mark.parametrize("weights", ["const", "external"])
def test_inference_only_predict_equals_the_session(tmp_path, weights):
    x, y = inputs(3, 4, 3, seed=1)
    m = compile_with_harness(
        "iris_model.py", tmp_path, 3, x, y, inference_only=True, weights=weights
    )
    assert m.state_bytes == 0 and not m.trainable
    header = (tmp_path / "model.h").read_text()
    assert "train_step" not in header and "MODEL_WEIGHTS_BYTES 776" in header
    exe = build(["cc"], tmp_path, ["-O2", "-DHARNESS_STDIO"], "harness", ["-lm"])
    words = parse_stdout(_run(exe))
    _check(words, reference_words("iris_model.py", 3, x, y, trainable=False))
    if weights == "external":
        assert "model_weights" not in (tmp_path / "model.c").read_text()


def test_strict_c99_object_calls_only_memcpy_and_libm(tmp_path):
    compile_embed("samples/iris_model.py", tmp_path, 2, prefix="iris_")
    cmd = ["cc", *EMBED_CFLAGS, *WARNINGS, "-O2", "-c", "model.c", "-o", "model.o"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    nm = subprocess.run(["nm", "model.o"], cwd=tmp_path, capture_output=True, text=True).stdout
    undefined = {line.split()[-1] for line in nm.splitlines() if line.split()[-2:-1] == ["U"]}
    assert undefined and undefined <= ALLOWED, undefined - ALLOWED
    defined = {line.split()[-1] for line in nm.splitlines() if " T " in line}
    assert defined == {"iris_init", "iris_save", "iris_restore", "iris_train_step",
                       "iris_predict"}  # fmt: skip
    # the headers it needs, and only the runtime sources listed for it
    from tfc.aot.embed import EMBED_RUNTIME_SOURCES

    listed = sorted(p.name for p in (tmp_path / "runtime" / "src").glob("*.c"))
    assert listed == sorted(EMBED_RUNTIME_SOURCES)
    assert not (tmp_path / "runtime" / "include" / "tfc_model.h").exists()


MAIN_TWO = r"""
#include <stdio.h>
#include "iris/model.h"
#include "digits/model.h"
static union { double d; unsigned char b[IRIS_ARENA_BYTES > DIGITS_ARENA_BYTES ?
    IRIS_ARENA_BYTES : DIGITS_ARENA_BYTES]; } arena;  /* one arena shared by both */
static union { double d; unsigned char b[IRIS_STATE_BYTES]; } iris_state;
int main(void) {
    float xi[IRIS_PREDICT_IN_FEATURES_COUNT] = {5.1f, 3.5f, 1.4f, 0.2f};
    float xd[DIGITS_PREDICT_IN_FEATURES_COUNT] = {0};
    float pi[IRIS_PREDICT_OUT_PROBABILITIES_COUNT], pd[DIGITS_PREDICT_OUT_PROBABILITIES_COUNT];
    if (iris_init(iris_state.b, sizeof iris_state.b)) return 1;
    if (iris_predict(iris_state.b, sizeof iris_state.b, 1, xi, pi, arena.b, sizeof arena.b))
        return 1;
    if (digits_predict(1, xd, pd, arena.b, sizeof arena.b)) return 2;
    for (int i = 0; i < IRIS_PREDICT_OUT_PROBABILITIES_COUNT; ++i) printf("%.9g\n", pi[i]);
    for (int i = 0; i < DIGITS_PREDICT_OUT_PROBABILITIES_COUNT; ++i) printf("%.9g\n", pd[i]);
    return 0;
}
"""


def test_two_prefixed_models_link_into_one_program(tmp_path):
    compile_embed("samples/iris_model.py", tmp_path / "iris", 1, prefix="iris_")
    compile_embed(
        "samples/digits_model.py", tmp_path / "digits", 1, prefix="digits_", inference_only=True
    )
    (tmp_path / "main.c").write_text(MAIN_TWO)
    flags = [*EMBED_CFLAGS[:3], *WARNINGS, "-O2"]
    for d in ("iris", "digits"):
        cmd = ["cc", *flags, "-Iruntime/include", "-c", "model.c", "-o", "model.o"]
        proc = subprocess.run(cmd, cwd=tmp_path / d, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    cmd = ["cc", *flags, "main.c", "iris/model.o", "digits/model.o", "-lm", "-o", "two"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    got = np.array(_run(tmp_path / "two").split(), dtype=np.float32)
    xi = np.array([[5.1, 3.5, 1.4, 0.2]], np.float32)
    expected = [
        reference_words("iris_model.py", 1, xi, None, trainable=False)[0],
        reference_words("digits_model.py", 1, np.zeros((1, 64), np.float32), None, False)[0],
    ]
    np.testing.assert_allclose(got, np.concatenate(expected), rtol=2e-5, atol=2e-6)


def test_cli_compile_target_embed(tmp_path, capsys):
    from tfc.tools.cli import main

    rc = main(["compile", "samples/iris_model.py", "--target", "embed", "-o", str(tmp_path),
               "--prefix", "iris_", "--batch", "8", "--inference-only"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    header = (tmp_path / "model.h").read_text()
    assert "#define IRIS_BATCH 8" in header and "#define IRIS_ARENA_BYTES" in header
    assert (
        "int iris_predict(int64_t n, const float *features, float *probabilities, void *arena, "
        "size_t arena_bytes);" in header
    )
    assert "IRIS_ARENA_BYTES" in capsys.readouterr().out
    rc = main(["compile", "samples/iris_model.py", "--target", "embed", "-o", str(tmp_path / "t"),
               "--no-check-finite"])  # fmt: skip
    assert rc == 0 and "TFC_ERR_NON_FINITE" not in (tmp_path / "t" / "model.h").read_text()


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"prefix": "9lives"}, "--prefix '9lives' must be a C identifier"),
        ({"weights": "flash"}, "--weights must be const or external"),
        ({"arena_align": 12}, "--arena-align must be a power of two >= 8"),
        ({"batch": 0}, "batch must be at least 1"),
    ],
)
def test_bad_options_are_named(tmp_path, kw, message):
    kw = {"batch": 1, **kw}
    with pytest.raises(ModelError, match=message.replace("(", r"\(")):
        compile_embed("samples/iris_model.py", tmp_path, **kw)


def test_arena_alignment_is_honoured(tmp_path):
    a8 = compile_embed("samples/digits_model.py", tmp_path / "a", 4, inference_only=True)
    a64 = compile_embed(
        "samples/digits_model.py", tmp_path / "b", 4, inference_only=True, arena_align=64
    )
    assert a8.arena_bytes <= a64.arena_bytes and a64.arena_bytes % 64 == 0
    assert "#define MODEL_ARENA_ALIGN 64" in (tmp_path / "b" / "model.h").read_text()


pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


def test_sample_program_trains_on_the_device_and_classifies(tmp_path):
    import os
    import re
    import sys

    from embed_support import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = ["make", "-s", "-C", str(ROOT / "samples" / "embed"), f"OUT={tmp_path}",
           f"PYTHON={sys.executable}", "CC=cc", "CFLAGS=-O2 -Werror"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", proc.stdout)]
    assert len(losses) == 4 and losses[-1] < 0.1 * losses[0], proc.stdout
    flowers = re.findall(r"flower \d: (\w+)", proc.stdout)
    assert flowers == ["setosa", "versicolor", "virginica"], proc.stdout


def test_footprint_reads_code_bytes_as_size_does(tmp_path):
    from tfc.aot.footprint import code_bytes

    compile_embed("samples/iris_model.py", tmp_path, 1)
    cmd = ["cc", *EMBED_CFLAGS, "-Os", "-ffunction-sections", "-c", "model.c", "-o", "m.o"]
    assert subprocess.run(cmd, cwd=tmp_path).returncode == 0
    if shutil.which("size") is None:
        pytest.skip("binutils' size not installed")
    listing = subprocess.run(["size", "-A", "m.o"], cwd=tmp_path, capture_output=True, text=True)
    text = sum(
        int(line.split()[1]) for line in listing.stdout.splitlines() if line.startswith(".text")
    )
    assert code_bytes((tmp_path / "m.o").read_bytes()) == text > 0


def test_inspect_target_embed_prints_the_footprint(capsys):
    from tfc.tools.cli import main

    assert main(["inspect", "--target", "embed", "samples/iris_model.py"]) == 0
    out = capsys.readouterr().out
    assert "code bytes (.text)" in out and "host" in out
    lines = out.splitlines()
    memory = lines[next(i for i, line in enumerate(lines) if "weights" in line) :]
    train = next(line.split() for line in memory if line.strip().startswith("train_step"))
    weights, state, arena, _, stack, ram = (int(v.replace(",", "")) for v in train[3:9])
    # the blob holds the kernels and Adam's beta powers (160 + 400 + 120 + 8 + 8 bytes); the
    # state, the Iris variables with Adam's slots: 584 floats and the step
    assert (weights, state) == (696, 2336)
    assert ram == state + arena + stack
    if "stack measured by GCC" in out:  # the host's cc is GCC: its deepest call is below
        measured = lines[lines.index(next(x for x in lines if "stack measured" in x)) + 2]
        assert 0 < int(measured.split()[3].replace(",", "")) <= stack, out


@pytest.mark.parametrize("inference_only", [True, False])
def test_max_batch_predict_takes_the_batch_at_run_time(tmp_path, inference_only):
    x, y = inputs(5, 4, 3, seed=2)
    m = compile_with_harness(
        "iris_model.py", tmp_path, 5, x, y, max_batch=8, inference_only=inference_only
    )
    header = (tmp_path / "model.h").read_text()
    assert "#define MODEL_MAX_BATCH 8" in header and "int64_t n, const float *features" in header
    one = compile_embed("samples/iris_model.py", tmp_path / "one", 1, inference_only=True)
    assert m.programs["predict"].lowered.arena_bytes == one.arena_bytes  # one example's arena
    exe = build(["cc"], tmp_path, [*SANITIZE_O0, "-DHARNESS_STDIO"], "harness", ["-lm"])
    words = parse_stdout(_run(exe))
    _check(words, reference_words("iris_model.py", 5, x, y, trainable=not inference_only))
    # n beyond the maximum is refused, not run
    data = (tmp_path / "harness_data.h").read_text().replace("INT64_C(5)", "INT64_C(9)")
    (tmp_path / "harness_data.h").write_text(data)
    exe = build(["cc"], tmp_path, ["-O1", "-DHARNESS_STDIO"], "harness9", ["-lm"])
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode == 30 + 3  # TFC_ERR_INVALID_ARGUMENT from predict


BATCH_COUPLED = """
import tfc as tf

def signatures():
    x = tf.placeholder(tf.float32, [None, 3], name="features")
    return {"predict": {"inputs": {"features": x},
                        "outputs": {"centered": x - tf.reduce_mean(x, axis=0)}}}
"""


def test_max_batch_refuses_a_predict_that_mixes_examples(tmp_path):
    model = tmp_path / "coupled.py"
    model.write_text(BATCH_COUPLED)
    with pytest.raises(ModelError, match="output 'centered' of an example depends on the other"):
        compile_embed(model, tmp_path / "out", 4, max_batch=4)
    compile_embed(model, tmp_path / "fixed", 4)  # a fixed batch is fine


ROUND_TRIP = r"""
#include <stdio.h>
#include "model.h"
static union { double d; unsigned char b[MODEL_STATE_BYTES]; } state;
static union { double d; unsigned char b[MODEL_SAVE_BYTES]; } saved;
int main(void) {
    if (model_init(state.b, sizeof state.b) != 0) return 1;
    if (model_save(state.b, sizeof state.b, saved.b, sizeof saved.b) != 0) return 1;
    for (int i = 0; i < MODEL_SAVE_BYTES; i += 4) {
        unsigned long w = (unsigned long)saved.b[i] | (unsigned long)saved.b[i + 1] << 8 |
                          (unsigned long)saved.b[i + 2] << 16 | (unsigned long)saved.b[i + 3] << 24;
        printf("%08lx\n", w);
    }
    return 0;
}
"""


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8"])
def test_compressed_weights_expand_to_their_rounded_values(tmp_path, dtype):
    full = compile_embed("samples/digits_model.py", tmp_path / "f32", 1)
    m = compile_embed("samples/digits_model.py", tmp_path, 1, weights_dtype=dtype)
    compressed = [s for s in m.stored if s.kind == dtype]
    # the kernels shrink; the biases and Adam's slots start at zero, so init writes them and
    # the blob leaves them out
    assert {s.var.name for s in compressed} == {
        f"{layer}/kernel" for layer in ("hidden1", "hidden2", "logits")
    }
    saved = sum(s.var.nbytes - s.nbytes for s in compressed)
    assert full.weights_bytes - m.weights_bytes >= saved - 8 * len(compressed) > 0
    (tmp_path / "main.c").write_text(ROUND_TRIP)
    cmd = ["cc", *EMBED_CFLAGS, *WARNINGS, "-O1", *SANITIZE, "main.c", "model.c", "-lm", "-o", "rt"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    words = np.array([int(w, 16) for w in _run(tmp_path / "rt").split()], dtype=np.uint32)
    state = words.view(np.uint8)
    for item in m.stored:
        v = item.var
        got = state[v.offset : v.offset + v.nbytes].view(v.dtype.np).reshape(v.shape)
        want = item.expanded if item.kind == dtype else item.data
        np.testing.assert_array_equal(got, np.asarray(want).reshape(v.shape), err_msg=v.name)
        if item.kind == dtype:
            original = full.stored[[s.var.name for s in full.stored].index(v.name)].data
            bound = {"float16": 1e-3, "bfloat16": 8e-3, "int8": 1.0 / 127}[dtype]
            err = np.abs(got - original).max() / max(np.abs(original).max(), 1e-30)
            assert err <= bound, (v.name, err)
    kept = {item.var.name for item in m.stored}
    zeroed = [v for v in m.variables if v.name not in kept]
    assert {v.name for v in zeroed} >= {"hidden1/bias", "hidden1/kernel/Adam", "logits/bias"}
    for v in zeroed:
        assert not state[v.offset : v.offset + v.nbytes].any(), v.name


def test_int8_weights_cost_less_than_a_point_of_accuracy_on_digits(tmp_path):
    """Train the digits MLP with a session, then predict the 360 held-out images with the
    embedded library from its checkpoint: float32 weights, and int8 with per-channel scales."""
    from embed_support import SAMPLES

    import tfc
    from tfc.aot.signatures import build_signatures, load_signatures_function
    from tfc.ir.graph import GraphKeys
    from tfc.variables import variables_initializer

    data = np.load(SAMPLES / "data" / "digits.npz")
    images = (data["images"].reshape(-1, 64) / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(images))  # digits_model's split
    test_x, test_y = images[order[:360]], data["labels"][order[:360]].astype(np.int64)
    train_x, train_y = images[order[360:]], data["labels"][order[360:]].astype(np.int64)
    _, fn = load_signatures_function(SAMPLES / "digits_model.py")
    sigs = build_signatures("digits", fn)
    g, tr = sigs.graph, sigs.train
    with g.as_default():
        init = variables_initializer(g.get_collection(GraphKeys.GLOBAL_VARIABLES))
        saver = tfc.train.Saver()
    rng = np.random.default_rng(1)
    with tfc.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(300):
            i = rng.integers(0, len(train_x), 64)
            sess.run(tr.train_op, {tr.features: train_x[i], tr.labels: train_y[i]})
        prefix = saver.save(sess, str(tmp_path / "digits"))
    accuracy, weights_bytes = {}, {}
    for dtype in ("float32", "int8"):
        out = tmp_path / dtype
        m = compile_with_harness(
            "digits_model.py", out, 360, test_x, test_y, inference_only=True,
            checkpoint=prefix, weights_dtype=dtype,
        )  # fmt: skip
        exe = build(["cc"], out, ["-O2", "-DHARNESS_STDIO"], "harness", ["-lm"])
        probabilities = split_words(parse_stdout(_run(exe)), [3600])[0].reshape(360, 10)
        accuracy[dtype] = float(np.mean(probabilities.argmax(axis=1) == test_y))
        weights_bytes[dtype] = m.weights_bytes
    assert weights_bytes["int8"] < 0.3 * weights_bytes["float32"], weights_bytes
    assert accuracy["float32"] > 0.9, accuracy
    assert accuracy["float32"] - accuracy["int8"] < 0.01, accuracy


FREESTANDING_MAIN = r"""
#include <math.h>
#include <stdint.h>
int printf(const char *, ...);
int main(void) {
    for (int i = 0; i < 2001; ++i) {
        double x = -40.0 + 0.04 * i + 1e-3 * (i % 7);
        printf("%a %a %a %a %a %a %a %a %a %a\n", exp(x), log(fabs(x) + 1e-300),
               log1p(fabs(x)), expm1(x * 0.1), tanh(x * 0.2), sin(x), cos(x),
               pow(fabs(x), 0.37), fmod(x, 0.7), (double)expf((float)(x * 0.5)));
    }
    return 0;
}
"""
# the inverse trigonometric, hyperbolic and error functions and lgamma, over their domains
FREESTANDING_MORE = r"""
#include <math.h>
int printf(const char *, ...);
int main(void) {
    for (int i = 0; i < 4001; ++i) {
        double x = -40.0 + 0.02 * i + 1e-3 * (i % 7), u = x / 40.5;
        printf("%a %a %a %a %a %a %a %a %a %a %a %a %a %a\n", atan(x), atan2(x, u - 0.3),
               asin(u), acos(u), sinh(x * 18.0), cosh(x * 18.0), asinh(x * x * x),
               acosh(fabs(x) + 1.0), atanh(u), erf(x * 0.15), erfc(x * 0.3), lgamma(x),
               lgamma(fabs(x) * 5.0 + 1e-3), (double)erff((float)(x * 0.1)));
    }
    return 0;
}
"""


def _freestanding_run(tmp_path, source: str) -> np.ndarray:
    """Build `source` against runtime/freestanding/tfc_freestanding.c alone (no -lm) and run
    it; its lines of hex floats as an array."""
    from embed_support import ROOT

    fs = ROOT / "runtime" / "freestanding"
    (tmp_path / "main.c").write_text(source)
    # -fno-math-errno: sqrt stays the instruction (a wasm32 build's default; tfc's C flags)
    obj = ["cc", "-std=c99", "-O2", "-ffreestanding", "-fno-builtin", "-fno-math-errno",
           f"-I{fs}", *WARNINGS]  # fmt: skip
    cmd = [*obj, "-c", str(fs / "tfc_freestanding.c"), "-o", "fs.o"]
    assert subprocess.run(cmd, cwd=tmp_path).returncode == 0
    cmd = ["cc", "-std=c99", "-O2", "-fno-builtin", f"-I{fs}", "main.c", "fs.o", "-o", "fsm"]
    assert subprocess.run(cmd, cwd=tmp_path).returncode == 0  # no -lm: only the shim's math
    return np.array([[float.fromhex(v) for v in line.split()] for line in
                     _run(tmp_path / "fsm").splitlines()])  # fmt: skip


def test_freestanding_math_matches_numpy(tmp_path):
    """runtime/freestanding/tfc_freestanding.c (wasm32's libm) against NumPy's, here on the
    host: within a few double ulps (the float function within half a float ulp and a bit)."""
    got = _freestanding_run(tmp_path, FREESTANDING_MAIN)
    x = -40.0 + 0.04 * np.arange(2001) + 1e-3 * (np.arange(2001) % 7)
    want = [np.exp(x), np.log(np.abs(x) + 1e-300), np.log1p(np.abs(x)), np.expm1(x * 0.1),
            np.tanh(x * 0.2), np.sin(x), np.cos(x), np.abs(x) ** 0.37, np.fmod(x, 0.7)]  # fmt: skip
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[:, k], w, rtol=4e-15, atol=1e-15, err_msg=f"column {k}")
    f = np.exp((x * 0.5).astype(np.float32).astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got[:, 9], f, rtol=1.2e-7)


def test_freestanding_special_math_matches_the_c_library(tmp_path):
    """The shim's atan, atan2, asin, acos, sinh, cosh, asinh, acosh, atanh, erf, erfc and
    lgamma against Python's math module (the C library's): within a few double ulps, and
    lgamma within 1e-13 of its magnitude where the recurrence sums cancel near its zeros."""
    got = _freestanding_run(tmp_path, FREESTANDING_MORE)
    x = -40.0 + 0.02 * np.arange(4001) + 1e-3 * (np.arange(4001) % 7)
    u = x / 40.5

    def each(fn, values):
        def safe(v):
            try:
                return fn(v)
            except ValueError:  # a pole of lgamma
                return math.inf
            except OverflowError:
                return math.copysign(math.inf, v) if fn is math.sinh else math.inf

        return np.array([safe(float(v)) for v in values])

    want = [each(math.atan, x), np.arctan2(x, u - 0.3), each(math.asin, u), each(math.acos, u),
            each(math.sinh, x * 18.0), each(math.cosh, x * 18.0), each(math.asinh, x * x * x),
            each(math.acosh, np.abs(x) + 1.0), each(math.atanh, u), each(math.erf, x * 0.15),
            each(math.erfc, x * 0.3), each(math.lgamma, x),
            each(math.lgamma, np.abs(x) * 5.0 + 1e-3)]  # fmt: skip
    for k, w in enumerate(want):
        close = dict(rtol=4e-15, atol=1e-300)
        if k >= 11:  # lgamma
            close = dict(rtol=4e-15, atol=1e-13)
        np.testing.assert_allclose(got[:, k], w, **close, err_msg=f"column {k}")
    f = np.array([math.erf(v) for v in (x * 0.1).astype(np.float32).astype(float)], np.float32)
    np.testing.assert_allclose(got[:, 13], f, rtol=1.2e-7)


def test_generating_the_library_needs_no_c_compiler(tmp_path, monkeypatch):
    """The weights come from the NumPy interpreter: `CC=arm-none-eabi-gcc tfc compile --target
    embed` works on a machine whose CC is a cross compiler (or none)."""
    monkeypatch.delenv("TFC_CC", raising=False)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    m = compile_embed("samples/lenet_model.py", tmp_path, 1, prefix="lenet_", max_batch=4)
    assert m.trainable and (tmp_path / "model.c").stat().st_size > m.weights_bytes


DROPOUT_MODEL = """
import tfc as tf

def signatures():
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [None, 4], name="features")
    y = tf.placeholder(tf.int32, [None], name="labels")
    lr = tf.placeholder_with_default(0.1, [], name="learning_rate")
    w1 = tf.Variable(tf.random_normal([4, 8], stddev=0.5, seed=1), name="w1")
    b1 = tf.Variable(tf.zeros([8]), name="b1")
    w2 = tf.Variable(tf.random_normal([8, 3], stddev=0.5, seed=2), name="w2")
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(tf.nn.dropout(hidden, keep_prob=0.5, seed=4), w2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(lr).minimize(loss, global_step=step)
    return {
        "train": {"inputs": {"features": x, "labels": y}, "loss": loss, "train_op": train_op,
                  "hyperparameters": {"learning_rate": lr}},
        "predict": {"inputs": {"features": x},
                    "outputs": {"probabilities": tf.nn.softmax(tf.matmul(hidden, w2))}},
    }
"""


@pytest.mark.parametrize("model", ["iris", "dropout"])
def test_misused_entry_points_return_their_status_codes(tmp_path, model):
    """NULL pointers, a short arena, a misaligned one, short state and variables blocks, a
    count that is not the batch (no buffer is read past its end: ASan), a NaN or infinite
    feature or learning rate (TFC_ERR_NON_FINITE, the state unchanged: the variables, Adam's
    slots and a dropout's random stream)."""
    if model == "iris":
        path = ROOT / "samples" / "iris_model.py"
    else:
        path = tmp_path / "dropout_model.py"
        path.write_text(DROPOUT_MODEL)
    m = compile_embed(path, tmp_path / "lib", 4)
    assert m.check_finite and (model == "iris" or m.state_bytes > m.vars_bytes)  # a stream
    header = (tmp_path / "lib" / "model.h").read_text()
    for code in (
        "TFC_ERR_NULL_POINTER",
        "TFC_ERR_ALIGNMENT",
        "TFC_ERR_ARENA_TOO_SMALL",
        "TFC_ERR_BUFFER_TOO_SMALL",
        "TFC_ERR_INVALID_ARGUMENT",
        "TFC_ERR_NON_FINITE",
    ):
        assert f" *   {code}: " in header, code  # fmt: skip
    cmd = ["cc", *EMBED_CFLAGS, *WARNINGS, "-O1", *SANITIZE, str(CHECKS), "model.c", "-lm",
           "-o", "checks"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path / "lib", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert _run(tmp_path / "lib" / "checks").strip() == "ok"


POISON = r"""
#include <math.h>
#include <stdio.h>
#include "model.h"
static union { double d; unsigned char b[MODEL_STATE_BYTES]; } state;
static union { double d; unsigned char b[MODEL_ARENA_BYTES]; } arena;
int main(void) {
    float x[MODEL_TRAIN_IN_FEATURES_COUNT] = {0}, p[MODEL_PREDICT_OUT_PROBABILITIES_COUNT];
    int64_t y[MODEL_BATCH] = {0};
    x[0] = NAN;
    int init = model_init(state.b, sizeof state.b);
    int step = model_train_step(state.b, sizeof state.b, MODEL_BATCH, x, y, 0.002f, NULL, arena.b,
                                sizeof arena.b);
    x[0] = 0;
    int predict = model_predict(state.b, sizeof state.b, MODEL_BATCH, x, p, arena.b,
                                sizeof arena.b);
    printf("%d %d %d %d\n", init, step, predict, isnan(p[0]) ? 1 : 0);
    return 0;
}
"""


@pytest.mark.parametrize("check_finite", [True, False])
def test_check_finite_off_lets_a_nan_step_poison_the_weights(tmp_path, check_finite):
    """check_finite=False: no guard (a smaller arena), and a step with a NaN feature returns
    TFC_OK with every later prediction NaN; with the guard it returns TFC_ERR_NON_FINITE."""
    m = compile_embed("samples/digits_model.py", tmp_path, 4, check_finite=check_finite)
    if not check_finite:
        guarded = compile_embed("samples/digits_model.py", tmp_path / "guarded", 4)
        assert m.arena_bytes < guarded.arena_bytes
    (tmp_path / "poison.c").write_text(POISON)
    cmd = ["cc", *EMBED_CFLAGS, *WARNINGS, "-O1", "poison.c", "model.c", "-lm", "-o", "poison"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    init, step, predict, nan = map(int, _run(tmp_path / "poison").split())
    assert (init, predict) == (0, 0)
    assert (step, nan) == ((104, 0) if check_finite else (0, 1))  # 104: TFC_ERR_NON_FINITE


def _gcc(cc: str) -> bool:
    proc = subprocess.run([cc, "--version"], capture_output=True, text=True)
    return proc.returncode == 0 and "Free Software Foundation" in proc.stdout


@pytest.mark.parametrize("model", ["iris", "digits", "lenet"])
def test_stack_bytes_bounds_what_gcc_measures_on_the_host(tmp_path, model):
    """model.h's STACK_BYTES against GCC's -fcallgraph-info=su (each function's frame, from
    -fstack-usage, along the deepest chain of calls from the entry point) at -O1, -Os, -O2."""
    from tfc.aot.embed_stack import measure_stack

    if not _gcc("cc"):
        pytest.skip("cc is not GCC (-fcallgraph-info)")
    for inference_only in (True, False):
        out = tmp_path / str(inference_only)
        m = compile_embed(f"samples/{model}_model.py", out, 1, inference_only=inference_only)
        header = (out / "model.h").read_text()
        assert f"#define MODEL_STACK_BYTES {m.stack_bytes}\n" in header
        entries = ["model_predict"] + (["model_train_step"] if m.trainable else [])
        for opt in ("-O1", "-Os", "-O2"):
            measured = measure_stack(out, ["cc"], [*EMBED_CFLAGS, opt], entries)
            assert 0 < max(measured.values()) <= m.stack_bytes, (opt, measured, m.stack_bytes)


def test_lenet_inference_fits_in_32_kb_of_ram(tmp_path):
    """The arena, the stack and the state of LeNet-5's predict: its first convolution's planes
    are arena scratch (they were a 41,912-byte stack frame)."""
    m = compile_embed("samples/lenet_model.py", tmp_path, 1, inference_only=True)
    assert m.state_bytes == 0
    assert m.arena_bytes + m.stack_bytes <= 32 * 1024, (m.arena_bytes, m.stack_bytes)


def test_worst_paths_follow_calls_indirect_calls_and_library_calls():
    from tfc.aot.embed_stack import LIBRARY_CALL_BYTES, worst_paths

    def node(title, frame=None):
        label = title if frame is None else f"{title}\\nm.c:1:1\\n{frame} bytes (static)"
        return f'node: {{ title: "{title}" label: "{label}" }}\n'

    def edge(a, b):
        return f'edge: {{ sourcename: "{a}" targetname: "{b}" }}\n'

    graph = (
        node("entry", 100) + node("m.c:run", 50) + node("m.c:part", 4000) + node("m.c:small", 8)
        + node("memcpy") + node("__indirect_call")
        + edge("entry", "m.c:run") + edge("m.c:run", "__indirect_call")
        + edge("entry", "m.c:small") + edge("m.c:small", "memcpy")
    )  # fmt: skip
    assert worst_paths(graph, ["entry"]) == {"entry": 100 + 50 + 4000}
    assert worst_paths(graph + node("solo", 16) + edge("solo", "memcpy"), ["solo"]) == {
        "solo": 16 + LIBRARY_CALL_BYTES
    }
    with pytest.raises(ValueError, match="recursion"):
        worst_paths(graph + edge("m.c:small", "entry"), ["entry"])
    with pytest.raises(ValueError, match="does not define"):
        worst_paths(graph + edge("entry", "m.c:merged"), ["entry"])
    dynamic = node("entry", 100).replace("(static)", "(dynamic)")
    with pytest.raises(ValueError, match="dynamic"):
        worst_paths(dynamic, ["entry"])
