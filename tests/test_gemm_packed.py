"""runtime/include/tfc_gemm_packed.h and the Session's pre-packed weights: the packed entry point
has the bits of tfc_gemm_<t>_ex on every path, packs again exactly when the epoch or B's address
moves, and a Session's read-only programs answer every change of the weights (a training step,
an assign op, write_variable, a checkpoint restore) as a program that packs on every call does."""

from __future__ import annotations

import os
import subprocess
import textwrap

import cffi
import numpy as np
import pytest

import tfc as tf
from tfc.backend.cc import build_shared_library, compiler, runtime_dir
from tfc.codegen.lower import PACK_COLS, PACK_HEADER_BYTES
from tfc.codegen.targets import CUDA
from tfc.compiler import PIPELINE, compile_program
from tfc.ir.program import FeedSpec, make_program_graph

HARNESS = textwrap.dedent(
    """
    #include "tfc_runtime.h"

    #define H_GEMM(tag, T)                                                                     \\
    void h_ex_##tag(int64_t M, int64_t N, int64_t K, const T *A, int64_t sam, int64_t sak,     \\
                    const T *B, int64_t sbk, int64_t sbn, T *C, T alpha, T beta,               \\
                    const T *bias, int relu) {                                                 \\
        tfc_gemm_##tag##_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, alpha, beta, bias, relu); \\
    }                                                                                          \\
    void h_packed_##tag(int64_t M, int64_t N, int64_t K, const T *A, int64_t sam, int64_t sak, \\
                        const T *B, int64_t sbk, int64_t sbn, void *cache, uint64_t epoch,     \\
                        T *C, T alpha, T beta, const T *bias, int relu) {                      \\
        tfc_gemm_##tag##_ex_packed(M, N, K, A, sam, sak, B, sbk, sbn, cache, epoch, C, N,      \\
                                   alpha, beta, bias, relu);                                   \\
    }
    H_GEMM(f32, float)
    H_GEMM(f64, double)
    void h_threads_set(int n) { tfc_threads_set(n); }
    """
)

CDEF = """
void h_ex_f32(int64_t, int64_t, int64_t, const float *, int64_t, int64_t, const float *, int64_t,
              int64_t, float *, float, float, const float *, int);
void h_packed_f32(int64_t, int64_t, int64_t, const float *, int64_t, int64_t, const float *,
                  int64_t, int64_t, void *, uint64_t, float *, float, float, const float *, int);
void h_ex_f64(int64_t, int64_t, int64_t, const double *, int64_t, int64_t, const double *,
              int64_t, int64_t, double *, double, double, const double *, int);
void h_packed_f64(int64_t, int64_t, int64_t, const double *, int64_t, int64_t, const double *,
                  int64_t, int64_t, void *, uint64_t, double *, double, double, const double *,
                  int);
void h_threads_set(int);
"""


@pytest.fixture(scope="module")
def lib():
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    handle = ffi.dlopen(str(build_shared_library(HARNESS, name="gemm_packed_harness")))
    yield ffi, handle
    handle.h_threads_set(0)


def _cache(n: int, k: int, dtype) -> np.ndarray:
    """A zeroed cache as the lowering sizes it (header, K rows of N rounded up), 64-aligned."""
    nbytes = PACK_HEADER_BYTES + k * -(-n // PACK_COLS) * PACK_COLS * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start : start + nbytes]


class _Product:
    """One product's operands (A row-major or stored transposed, B likewise), run unpacked and
    packed through the harness."""

    def __init__(self, lib, rng, size, dtype, ta, tb, alpha=1.0, beta=0.0, bias=False, relu=0):
        self.ffi, self.h = lib
        self.M, self.N, self.K = size
        self.dtype, self.tag = np.dtype(dtype), "f32" if dtype == np.float32 else "f64"
        M, N, K = size
        self.a = rng.uniform(-1, 1, (K, M) if ta else (M, K)).astype(dtype)
        self.b = rng.uniform(-1, 1, (N, K) if tb else (K, N)).astype(dtype)
        self.sa = (1, M) if ta else (K, 1)
        self.sb = (1, K) if tb else (N, 1)
        self.c0 = rng.uniform(-1, 1, (M, N)).astype(dtype)
        self.bias = rng.uniform(-1, 1, N).astype(dtype) if bias else None
        self.epilogue = (alpha, beta, relu)
        self.cache = _cache(N, K, dtype)

    def _ptr(self, x):
        if x is None:
            return self.ffi.NULL
        ctype = "float" if self.tag == "f32" else "double"
        return self.ffi.cast(f"{ctype} *", self.ffi.from_buffer(x))

    def unpacked(self) -> np.ndarray:
        c = self.c0.copy()
        alpha, beta, relu = self.epilogue
        getattr(self.h, f"h_ex_{self.tag}")(
            self.M, self.N, self.K, self._ptr(self.a), *self.sa, self._ptr(self.b), *self.sb,
            self._ptr(c), alpha, beta, self._ptr(self.bias), relu,
        )  # fmt: skip
        return c

    def packed(self, epoch: int) -> np.ndarray:
        c = self.c0.copy()
        alpha, beta, relu = self.epilogue
        getattr(self.h, f"h_packed_{self.tag}")(
            self.M, self.N, self.K, self._ptr(self.a), *self.sa, self._ptr(self.b), *self.sb,
            self.ffi.from_buffer(self.cache), epoch, self._ptr(c), alpha, beta,
            self._ptr(self.bias), relu,
        )  # fmt: skip
        return c


# the MLP's layers (the plain path); edges of every block (N not a panel multiple, K past KC,
# M past MC); a row or two from the row panels (LeNet's batch-1 layers; whole row blocks and
# 8, 4, 2, 1 vectors past them, the last one partial; a classifier's 1000 columns, split
# between threads by whole row blocks; a row of two vectors); the paths that take
# tfc_gemm_<t>_ex's (a few columns: tall, narrow or swapped)
SIZES = [(64, 512, 784), (7, 100, 300), (150, 203, 260), (13, 70, 5), (1, 120, 400),
         (2, 84, 120), (1, 300, 40), (2, 517, 30), (1, 600, 300), (1, 1000, 150),
         (2, 1000, 70), (1, 17, 5), (40, 10, 33), (300, 24, 50)]  # fmt: skip
CASES = [
    dict(dtype=np.float32, ta=False, tb=False, bias=True, relu=1),
    dict(dtype=np.float32, ta=True, tb=True, alpha=0.5, beta=1.5),
    dict(dtype=np.float64, ta=False, tb=True, bias=True),
]


@pytest.mark.parametrize("threads", [1, 2])
def test_packed_products_have_the_unpacked_bits(lib, threads):
    _, h = lib
    h.h_threads_set(threads)
    rng = np.random.default_rng(3)
    try:
        for size in SIZES:
            for case in CASES:
                p = _Product(lib, rng, size, **case)
                want = p.unpacked()
                np.testing.assert_array_equal(p.packed(1), want, err_msg=f"{size} {case}")
                np.testing.assert_array_equal(p.packed(1), want, err_msg=f"{size} {case} again")
                ref = p.c0.astype(np.float64)  # the harness itself against NumPy
                alpha, beta, relu = p.epilogue
                a = p.a.T if case["ta"] else p.a
                b = p.b.T if case["tb"] else p.b
                ref = alpha * (a.astype(np.float64) @ b) + beta * ref
                if p.bias is not None:
                    ref = ref + p.bias
                ref = np.maximum(ref, 0) if relu else ref
                np.testing.assert_allclose(want, ref, rtol=1e-4, atol=1e-4)
    finally:
        h.h_threads_set(0)


@pytest.mark.parametrize("size", [(64, 200, 300), (1, 120, 400)], ids=["panels", "row"])
def test_panels_are_packed_again_exactly_when_the_epoch_or_the_source_moves(lib, size):
    rng = np.random.default_rng(5)
    p = _Product(lib, rng, size, np.float32, ta=False, tb=False, bias=True)
    before = p.packed(7)
    np.testing.assert_array_equal(before, p.unpacked())
    p.b *= 2  # a writer that does not bump the epoch: the call answers from the panels
    np.testing.assert_array_equal(p.packed(7), before)
    np.testing.assert_array_equal(p.packed(8), p.unpacked())  # bumped: packed again
    assert not np.array_equal(p.unpacked(), before)
    p.b = p.b.copy() + 1  # another buffer at the same epoch: its address differs
    np.testing.assert_array_equal(p.packed(8), p.unpacked())


# -- a Session's programs ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mlp():
    """An MLP with its training step, an assign op, a writer that leaves the weights alone (a
    step counter) and a frozen layer (constant weights, as an imported model has), all built
    before the first run: no program of the tests is recompiled."""
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        tf.set_random_seed(11)
        x = tf.placeholder(tf.float32, [None, 96], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        h = tf.layers.dense(x, 160, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(h, 80, name="logits")
        probs = tf.nn.softmax(logits)
        frozen_w = tf.constant(rng.standard_normal((96, 72)).astype(np.float32))
        frozen = tf.nn.relu(tf.matmul(x, frozen_w) + tf.constant(np.ones(72, np.float32)))
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        kernel = graph.get_tensor_by_name("hidden/kernel:0")
        halve = tf.assign(kernel, kernel * 0.5)
        steps = tf.Variable(0, name="steps")
        count = tf.assign_add(steps, 1)
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
    feeds = {x: rng.standard_normal((32, 96)).astype(np.float32)}
    return dict(graph=graph, x=x, labels=labels, probs=probs, frozen=frozen, train=train,
                halve=halve, count=count, saver=saver, init=init, feeds=feeds,
                label_values=rng.integers(0, 80, 32).astype(np.int32))  # fmt: skip


def _session_program(sess, fetches):
    return next(p for p in sess._programs.values() if p.lowered.name.startswith(fetches))


def test_every_change_of_the_weights_reaches_the_packed_program(mlp, tmp_path):
    """The read-only program packs its three layers' weights (two variables, one constant),
    the training step packs none and bumps the epoch. After each write of the weights, the
    read-only program gives the bits of a writer program that computes the same values
    unpacked (its only write is a counter); the frozen layer's stay the same."""
    probs, frozen, feeds = mlp["probs"], mlp["frozen"], mlp["feeds"]
    with tf.Session(graph=mlp["graph"]) as sess:
        sess.run(mlp["init"])
        path = mlp["saver"].save(sess, str(tmp_path / "model"))
        first, frozen_first = sess.run([probs, frozen], feeds)
        seen = [first]

        def check(what):
            packed, frozen_packed = sess.run([probs, frozen], feeds)
            unpacked, frozen_unpacked, _ = sess.run([probs, frozen, mlp["count"]], feeds)
            np.testing.assert_array_equal(packed, unpacked, err_msg=what)
            np.testing.assert_array_equal(frozen_packed, frozen_unpacked, err_msg=what)
            np.testing.assert_array_equal(frozen_packed, frozen_first, err_msg=what)
            assert not any(np.array_equal(packed, s) for s in seen), what  # it did change
            seen.append(packed)
            # the writer bumped the epoch: the packed program packs again at it, so that the next
            # write must bump it itself (write_variable, restore: Python's) to be seen
            sess.run([probs, frozen], feeds)

        sess.run(mlp["train"], {**feeds, mlp["labels"]: mlp["label_values"]})
        check("training step")
        sess.run(mlp["halve"])
        check("assign op")
        hidden = sess.read_variable("hidden/kernel")
        sess.write_variable("hidden/kernel", hidden * -1.0)
        check("write_variable")
        mlp["saver"].restore(sess, path)
        packed = sess.run([probs, frozen], feeds)[0]
        np.testing.assert_array_equal(packed, first, err_msg="restore")
        sess.run(mlp["halve"])
        check("assign after restore")

        read = _session_program(sess, "Softmax")
        kinds = [s.kind for s in read.lowered.slots]
        assert kinds.count("pack") == 3 and kinds.count("epoch") == 1
        assert read.lowered.bumps_epoch is None and read.source.count("_ex_packed(") == 3
        write = _session_program(sess, "GradientDescent")
        assert [s.kind for s in write.lowered.slots].count("pack") == 0
        assert write.lowered.slots[write.lowered.bumps_epoch].kind == "epoch"
        assert "_ex_packed(" not in write.source and "tfc_gemm_packed_bump(" in write.source


def test_only_host_programs_may_prepack(mlp):
    feeds = [FeedSpec((mlp["x"].op.name, 0), tf.float32, (32, 96))]
    fetches = [(mlp["probs"].op.name, 0)]
    graph = make_program_graph(mlp["graph"], fetches, [], feeds)
    with pytest.raises(ValueError, match="host C programs"):
        compile_program(graph, PIPELINE, CUDA, prepack_weights=True)
    graph = make_program_graph(mlp["graph"], fetches, [], feeds)
    lowered = compile_program(graph, PIPELINE).lowered  # tfc compile, embed: unchanged
    assert not [s for s in lowered.slots if s.kind in ("pack", "epoch")]
    assert lowered.bumps_epoch is None


SANITIZED_MAIN = textwrap.dedent(
    """
    #include <stdio.h>
    #include <stdlib.h>
    #include "tfc_runtime.h"

    /* packed against unpacked, twice (the second call reads the kept panels), 1 and 2 threads:
     * 0 when every element has the same bits */
    static int same_bits(int64_t M, int64_t N, int64_t K) {
        float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
        float *c = malloc(sizeof(float) * M * N), *d = malloc(sizeof(float) * M * N);
        float *bias = malloc(sizeof(float) * N);
        const size_t bytes = 64 + (size_t)K * ((N + 63) / 64 * 64) * sizeof(float);
        void *cache = aligned_alloc(64, bytes);
        int rc = 0;
        memset(cache, 0, bytes);
        for (int64_t i = 0; i < M * K; ++i) a[i] = (float)(i % 7) * 0.37f - 1.1f;
        for (int64_t i = 0; i < K * N; ++i) b[i] = (float)(i % 5) * 0.53f - 1.3f;
        for (int64_t j = 0; j < N; ++j) bias[j] = (float)(j % 3) - 1.0f;
        for (int threads = 1; threads <= 2; ++threads) {
            tfc_threads_set(threads);
            for (int call = 0; call < 2; ++call)
                tfc_gemm_f32_ex_packed(M, N, K, a, K, 1, b, N, 1, cache, 1, c, N, 1.0f, 0.0f,
                                       bias, 1);
            tfc_gemm_f32_ex(M, N, K, a, K, 1, b, N, 1, d, N, 1.0f, 0.0f, bias, 1);
            if (memcmp(c, d, sizeof(float) * M * N) != 0) rc = 1;
        }
        tfc_threads_set(0);
        free(a), free(b), free(c), free(d), free(bias), free(cache);
        return rc;
    }

    int main(void) {
        /* the plain path (edges of every block; rows past MC: panels read again per block
         * of rows, the next panel prefetched in the last); rows from the row panels: past
         * whole row blocks, a short row, a classifier's 1000 columns (serial, and split
         * between the threads), a row of two vectors */
        if (same_bits(13, 70, 150) || same_bits(64, 300, 200) || same_bits(300, 130, 260) ||
            same_bits(1, 300, 40) ||
            same_bits(2, 84, 120) || same_bits(1, 1000, 60) || same_bits(2, 1000, 300) ||
            same_bits(1, 17, 5))
            return 1;
        puts("PACKED-SANITIZED-OK");
        return 0;
    }
    """
)


def _build_and_run(tmp_path, name: str, flags: list[str]) -> None:
    cc = compiler()
    source = tmp_path / "packed_main.c"
    source.write_text("#define _DEFAULT_SOURCE\n#define _ISOC11_SOURCE\n" + SANITIZED_MAIN)
    binary = tmp_path / name
    subprocess.run(
        [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(runtime_dir() / "include"),
         *flags, str(source), "-o", str(binary), "-lm", "-pthread"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "PACKED-SANITIZED-OK" in proc.stdout, proc.stderr[-3000:]


def _cpu_has(flag: str) -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return flag in f.read().split()
    except OSError:
        return False


def test_packed_gemm_has_the_bits_on_every_vector_width_and_is_sanitizer_clean(tmp_path):
    """Packed against unpacked on the host's vectors under ASan/UBSan (each prefetch a read),
    then on 32-byte (AVX2,
    where the CPU has it) and 16-byte vectors (the portable build, no -march); the header
    compiles without warnings in the embedded build (no threads)."""
    cc = compiler()
    found = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True)
    if os.path.isabs(found.stdout.strip()):
        sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
        # the prefetches (the row panels', the next panel's: from any size of B here) as reads
        # of the byte they name: ASan reports one outside
        reads = ["-DTFC_GEMM_PREFETCH_READS", "-DTFC_GEMM_STREAM_BYTES=1"]
        _build_and_run(
            tmp_path, "native_sanitized", ["-O1", "-march=native", "-g", *reads, *sanitize]
        )
    if _cpu_has("avx2") and _cpu_has("fma"):
        _build_and_run(tmp_path, "avx2", ["-O2", "-mavx2", "-mfma"])
    _build_and_run(tmp_path, "portable", ["-O2"])
    user = tmp_path / "packed_user.c"
    user.write_text(
        '#include "tfc_gemm_packed.h"\n'
        "void f(float *C, const float *A, const float *B, void *cache, uint64_t epoch) {\n"
        "    tfc_gemm_f32_ex_packed(5, 70, 9, A, 9, 1, B, 70, 1, cache, epoch, C, 70, 1.0f,\n"
        "                           0.0f, 0, 1);\n"
        "}\n"
    )
    include = ["-I", str(runtime_dir() / "include")]
    subprocess.run(
        [cc, "-std=c11", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", *include,
         "-DTFC_EMBED", "-DTFC_NO_THREADS", "-c", str(user), "-o", str(tmp_path / "e.o")],
        check=True,
    )  # fmt: skip
