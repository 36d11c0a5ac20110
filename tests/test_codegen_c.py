"""Generated C: deterministic, readable, warning-free, allocation-free, sanitizer-clean."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.backend.cc import COMMON_FLAGS, build_flags, runtime_dir
from tfc.codegen.lower import EMBED_LIMIT_BYTES

REPO = Path(__file__).resolve().parent.parent


def _model():
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    w = tf.Variable(tf.random_uniform([6, 4], -1, 1, seed=7), name="w")
    h = tf.nn.relu(tf.matmul(x, w) + 0.5, name="h")
    s = tf.reduce_sum(h * h, axis=1, name="s")
    return x, s


def test_source_is_deterministic_and_names_every_node():
    sources = []
    for _ in range(2):
        tf.reset_default_graph()
        x, s = _model()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sources.append(sess.source(s, {x: np.zeros((3, 6), np.float32)}))
    assert sources[0] == sources[1]
    body = sources[0].split("run_steps(void", 1)[1]
    for node in ["x (Feed)", "w (VariableV2)", "MatMul (MatMul)", "h (Relu)", "s (Sum)"]:
        assert f"/* {node}" in body, node
    # every kernel call sits under the comment of the node it comes from
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if re.match(r"(if \(\(rc = )?k\d+\(", line):
            previous = [ln for ln in lines[:i] if ln.startswith("/*")]
            assert previous, line


def test_generated_code_allocates_nothing_and_builds_with_werror():
    for flag in ("-Wall", "-Wextra", "-Werror"):
        assert flag in COMMON_FLAGS and flag in build_flags()
    x, s = _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        source = sess.source(s, {x: np.zeros((2, 6), np.float32)})
    for word in ("malloc", "calloc", "realloc", "free("):
        assert word not in source


def test_large_constants_are_passed_in_not_compiled_in():
    small = np.arange(16, dtype=np.float32)
    big = np.arange(EMBED_LIMIT_BYTES // 4 + 1, dtype=np.float32)
    y = tf.reduce_sum(tf.constant(big)) + tf.reduce_sum(tf.constant(small))
    with tf.Session(config=tf.CompileOptions(passes=[])) as sess:  # folding would fold it all
        source = sess.source(y)
        assert sess.run(y) == pytest.approx(big.sum() + small.sum(), rel=1e-6)
    assert "static const float c0[16]" in source
    assert "consts[0]" in source and f"[{big.size}] = {{" not in source


def test_dump_dir_receives_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("TFC_DUMP_DIR", str(tmp_path))
    y = tf.constant([1.0, 2.0]) * 3.0
    with tf.Session() as sess:
        sess.run(y)
    files = list(tmp_path.glob("*.c"))
    assert len(files) == 1 and "tfc_run" in files[0].read_text()


SANITIZED_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import tfc as tf
    from tfc.reference.interp import Interpreter

    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    idx = tf.placeholder(tf.int32, [None], name="idx")
    w = tf.Variable(tf.truncated_normal([5, 7], seed=3), name="w")
    b = tf.Variable(tf.zeros([7]), name="b")
    h = tf.nn.relu(tf.matmul(x, w) + b)
    p = tf.nn.softmax(tf.transpose(h)[::-1, 1:])
    g = tf.gather(h, idx)
    r = tf.reduce_mean(tf.concat([g, -g], axis=1), axis=0) + tf.reduce_max(p)
    q = tf.argmax(tf.pad(h, [[1, 0], [0, 2]]), axis=1)
    n = tf.constant([7, -7, 5], tf.int32) // tf.constant([2, -2, -3], tf.int32)
    img = tf.reshape(tf.tile(x, [1, 5]), [-1, 5, 5, 1])
    conv = tf.nn.conv2d(img, tf.truncated_normal([3, 3, 1, 2], seed=4), [1, 1, 1, 1], "SAME")
    pooled = tf.nn.max_pool(tf.nn.relu(conv), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    conv_grad = tf.gradients(tf.reduce_sum(pooled * pooled), [img])[0]
    # a Pad folded into a fused convolution's explicit padding, its constant filter packed in
    # blocks of 16 channels (the second one partial)
    f20 = tf.constant(rng.normal(size=(3, 3, 1, 20)).astype(np.float32))
    padded = tf.pad(img, [[0, 0], [1, 1], [0, 2], [0, 0]])
    fused = tf.nn.relu(tf.nn.conv2d(padded, f20, [1, 2, 2, 1], "VALID") + tf.ones([20]))
    drop = tf.nn.dropout(h, keep_prob=0.5, seed=1)
    step = tf.assign_add(b, tf.reduce_sum(h, axis=0) * 0.01)
    feed = {x: rng.normal(size=(4, 5)).astype(np.float32), idx: [3, 0, 1]}
    fetches = [h, p, g, r, q, n, tf.shape(drop), pooled, conv_grad, fused, step]

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        compiled = sess.run(fetches, feed)
        compiled2 = sess.run(fetches, feed)
    ref = Interpreter()
    ref.run(tf.global_variables_initializer())
    expected = ref.run(fetches, feed)
    expected2 = ref.run(fetches, feed)
    for got, want in zip(compiled + compiled2, expected + expected2):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    print("SANITIZED-OK")
    """
)


def sanitizer_env(cache):
    """The environment of a sanitized Session run; `cache` is its build cache (TFC_CACHE_DIR),
    the `sanitized_cache` fixture's, so that the sanitized GEMM archive and header are built
    once per test worker."""
    libasan = subprocess.run(
        ["cc", "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(libasan):
        pytest.skip("the C compiler has no AddressSanitizer runtime")
    env = dict(os.environ)
    env.update(
        TFC_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all "
        "-fno-omit-frame-pointer -O1",
        TFC_CACHE_DIR=str(cache),
        LD_PRELOAD=libasan,
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
        PYTHONPATH=str(REPO),
    )
    return env


def test_generated_code_is_clean_under_asan_and_ubsan(tmp_path, sanitized_cache):
    env = sanitizer_env(sanitized_cache)
    script = tmp_path / "model.py"
    script.write_text(SANITIZED_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0 and "SANITIZED-OK" in proc.stdout, proc.stderr[-4000:]
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


# The direct convolution kernel's prefetches (the next filter block, the input rows the next
# output row reads first, the output slice written next) turned into reads of the byte they
# name: AddressSanitizer then reports any that lies outside its buffer. The shapes take every
# branch: channel blocks outermost in groups of rows (the group size shrunk so that there are
# several), the last group of a part, an output written over its residual, pixel tiles that do
# not divide the row, a part of several images, a strided 1x1 filter, feeds and fetches as
# the convolutions' own buffers (NumPy's, each its own allocation).
PREFETCH_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import tfc as tf
    from tfc.ops import conv_algo
    from tfc.reference.interp import Interpreter

    conv_algo.L2_GROUP_BYTES = 3000  # a few output rows a group
    conv_algo.PREFETCH_ROWS_MIN_BYTES = 1  # the input rows prefetched at 8 channels too
    rng = np.random.default_rng(0)

    def fused(x, k, cin, cout, stride, padding, residual=None):
        f = tf.constant(rng.normal(size=(k, k, cin, cout)).astype(np.float32) * 0.2)
        y = tf.nn.conv2d(x, f, [1, stride, stride, 1], padding)
        y = y + tf.constant(rng.normal(size=cout).astype(np.float32))
        return tf.nn.relu(y if residual is None else y + residual)

    blocked_x = tf.placeholder(tf.float32, [3, 6, 6, 8])
    wide_x = tf.placeholder(tf.float32, [40, 5, 31, 8])
    blocked = fused(blocked_x, 3, 8, 64, 1, "SAME")
    expanded = fused(blocked, 1, 64, 64, 1, "VALID", residual=blocked * 2.0)
    wide = fused(wide_x, 3, 8, 32, 1, "SAME")
    strided = fused(wide_x, 1, 8, 48, 2, "VALID")
    feed = {
        blocked_x: rng.normal(size=(3, 6, 6, 8)).astype(np.float32),
        wide_x: rng.normal(size=(40, 5, 31, 8)).astype(np.float32),
    }
    fetches = [blocked, expanded, wide, strided]
    with tf.Session() as sess:
        compiled = sess.run(fetches, feed)
    expected = Interpreter().run(fetches, feed)
    for got, want in zip(compiled, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    print("PREFETCH-OK")
    """
)


def test_the_convolution_kernels_prefetch_only_inside_their_buffers(tmp_path, sanitized_cache):
    env = sanitizer_env(sanitized_cache)
    env["TFC_CFLAGS"] += " -DTFC_CONV_PREFETCH_READS"
    script = tmp_path / "prefetch.py"
    script.write_text(PREFETCH_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0 and "PREFETCH-OK" in proc.stdout, proc.stderr[-4000:]
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.parametrize(
    "body, report",
    [
        (
            "int *p = malloc(4 * sizeof(int)); p[i] = 1; free(p);",
            r"heap-buffer-overflow|store to address",
        ),
        ("int big = 2147483647 - 2 + i; (void)(volatile int){big + 3};", "signed integer overflow"),
    ],
    ids=["out-of-bounds-write", "signed-overflow"],
)
def test_the_sanitizer_harness_catches_real_bugs(tmp_path, sanitized_cache, body, report):
    """Positive control: the same environment must report a bug planted in C."""
    env = sanitizer_env(sanitized_cache)
    src = tmp_path / "bug.c"
    src.write_text(f"#include <stdlib.h>\nvoid bug(int i) {{ {body} }}\n")
    lib = tmp_path / "bug.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", *env["TFC_CFLAGS"].split(), "-o", str(lib), str(src)], check=True
    )
    code = f"import cffi; f = cffi.FFI(); f.cdef('void bug(int);'); f.dlopen({str(lib)!r}).bug(4)"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and re.search(report, proc.stderr), proc.stderr[-2000:]


def test_runtime_headers_compile_standalone(tmp_path):
    src = tmp_path / "t.c"
    src.write_text('#include "tfc_runtime.h"\nint main(void) { return 0; }\n')
    subprocess.run(
        [
            "cc",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-I",
            str(runtime_dir() / "include"),
            "-o",
            str(tmp_path / "t"),
            str(src),
            "-lm",
        ],
        check=True,
    )


def test_a_kernel_writing_a_buffer_it_also_reads_is_not_restrict():
    w = tf.Variable([1.0, 2.0], name="w")
    doubled = tf.assign_add(w, w.value())  # writes w while reading w through W/read
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(doubled), [4.0, 8.0])
        kernels = [ln for ln in sess.source(doubled).splitlines() if ln.startswith("static void")]
    assert kernels == ["static void k0(float *y, const float *x0) {"]


def test_negative_zero_constants_keep_their_sign():
    x = tf.placeholder(tf.float32, [2])
    y = x + tf.constant(np.array([-0.0, -0.0], np.float32))  # -0.0 + -0.0 is -0.0, not +0.0
    with tf.Session(config=tf.CompileOptions(passes=[])) as sess:
        out = sess.run(y, {x: np.array([-0.0, 1.0], np.float32)})
    np.testing.assert_array_equal(np.signbit(out), [True, False])


def test_one_tensor_fetched_into_several_slots():
    a = tf.constant([1.0, 2.0]) * 2.0
    b = tf.constant([1.0, 2.0]) * 2.0  # the same computation: CSE makes it one node
    with tf.Session() as sess:
        first, second, third = sess.run([a, b, tf.identity(b)])
    for value in (first, second, third):
        np.testing.assert_array_equal(value, [2.0, 4.0])
