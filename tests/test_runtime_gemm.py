"""runtime/include/tfc_gemm.h and tfc_threads.h: every GEMM variant against NumPy (each transpose
and general strides, each epilogue, sizes that are not block multiples, 1 and 0, K = 0, K past
the KC block), bits independent of row blocking and thread count, generated dense heads, and a
sanitized run of the C directly."""

from __future__ import annotations

import itertools
import os
import subprocess
import textwrap

import cffi
import numpy as np
import pytest

import tfc as tf
from tfc.backend.cc import build_shared_library, compiler, runtime_dir
from tfc.client.config import session_thread_request

HARNESS = textwrap.dedent(
    """
    #include "tfc_runtime.h"

    void h_gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam, int64_t sak,
                    const float *B, int64_t sbk, int64_t sbn, float *C, int64_t ldc, float alpha,
                    float beta, const float *bias, int relu) {
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias, relu);
    }
    void h_gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t sam, int64_t sak,
                    const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc,
                    double alpha, double beta, const double *bias, int relu) {
        tfc_gemm_f64_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, alpha, beta, bias, relu);
    }
    void h_gemm_plain_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam,
                          int64_t sak, const float *B, int64_t sbk, int64_t sbn, float *C) {
        tfc_gemm_f32(M, N, K, A, sam, sak, B, sbk, sbn, C);
    }
    void h_gemm_plain_i32(int64_t M, int64_t N, int64_t K, const int32_t *A, int64_t sam,
                          int64_t sak, const int32_t *B, int64_t sbk, int64_t sbn, int32_t *C) {
        tfc_gemm_i32(M, N, K, A, sam, sak, B, sbk, sbn, C);
    }
    void h_threads_set(int n) { tfc_threads_set(n); }
    int h_threads_count(void) { return tfc_threads_count(); }
    """
)

CDEF = """
void h_gemm_f32(int64_t, int64_t, int64_t, const float *, int64_t, int64_t, const float *,
                int64_t, int64_t, float *, int64_t, float, float, const float *, int);
void h_gemm_f64(int64_t, int64_t, int64_t, const double *, int64_t, int64_t, const double *,
                int64_t, int64_t, double *, int64_t, double, double, const double *, int);
void h_gemm_plain_f32(int64_t, int64_t, int64_t, const float *, int64_t, int64_t,
                      const float *, int64_t, int64_t, float *);
void h_gemm_plain_i32(int64_t, int64_t, int64_t, const int32_t *, int64_t, int64_t,
                      const int32_t *, int64_t, int64_t, int32_t *);
void h_threads_set(int);
int h_threads_count(void);
"""


@pytest.fixture(scope="module")
def lib():
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    handle = ffi.dlopen(str(build_shared_library(HARNESS, name="gemm_harness")))
    yield ffi, handle
    handle.h_threads_set(0)


def _operand(rng, rows, cols, transposed, dtype, spread=1):
    """A [rows, cols] matrix stored transposed or not, every `spread`-th column of a wider
    array (general strides); returns (the logical matrix, storage, row stride, col stride)."""
    shape = (cols, rows * spread) if transposed else (rows, cols * spread)
    store = rng.uniform(-1, 1, size=shape).astype(dtype)
    if transposed:
        logical = store[:, ::spread].T
        return logical, store, spread, store.shape[1]
    return store[:, ::spread], store, store.shape[1], spread


def _gemm(lib, M, N, K, dtype=np.float32, ta=False, tb=False, spread=1, alpha=1.0, beta=0.0,
          bias=False, relu=False, ldc_pad=0, seed=0):  # fmt: skip
    ffi, h = lib
    rng = np.random.default_rng(seed)
    a, a_store, sam, sak = _operand(rng, M, K, ta, dtype, spread)
    b, b_store, sbk, sbn = _operand(rng, K, N, tb, dtype, spread)
    ldc = N + ldc_pad
    c = rng.uniform(-1, 1, size=(max(M, 1), max(ldc, 1))).astype(dtype)
    if beta == 0:
        c[:] = np.nan  # beta == 0 must never read C
    c0 = c.copy()
    bias_v = rng.uniform(-1, 1, size=max(N, 1)).astype(dtype) if bias else None
    ctype = "float" if dtype == np.float32 else "double"
    fn = h.h_gemm_f32 if dtype == np.float32 else h.h_gemm_f64

    def ptr(x):
        return ffi.cast(f"{ctype} *", ffi.from_buffer(x)) if x is not None and x.size else ffi.NULL

    fn(M, N, K, ptr(a_store), sam, sak, ptr(b_store), sbk, sbn, ptr(c), ldc, alpha, beta,
       ptr(bias_v), int(relu))  # fmt: skip
    want = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if beta != 0:
        want = want + beta * c0[:M, :N].astype(np.float64)
    if bias:
        want = want + bias_v[:N]
    if relu:
        want = np.where(want < 0, 0, want)
    got = c[:M, :N]
    tol = 1e-5 * max(1.0, np.sqrt(K)) if dtype == np.float32 else 1e-12 * max(1.0, K)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if ldc_pad and M:
        np.testing.assert_array_equal(c[:M, N:], c0[:M, N:])  # columns past N untouched
    return got


SIZES = [
    (1, 1, 1),
    (6, 16, 8),  # one full micro-tile
    (7, 17, 5),  # one more than a tile each way
    (5, 3, 2),
    (1, 40, 30),  # one row: the unpacked row path when B is row-major
    (2, 1030, 20),  # two rows, past the row path's 1024-column chunk, a partial vector
    (40, 1, 30),
    (13, 29, 256),  # K exactly two blocks of KC = 128
    (73, 35, 257),  # K one past two blocks: three equal blocks
    (151, 21, 40),  # few columns: swapped where panels are 64 wide
    (271, 128, 40),  # M past one MC block (264 rows)
    (9, 50, 700),  # three K blocks
    (64, 10, 300),  # few columns: the narrow kernel (A stored transposed: the tall one)
    (29, 3, 7),  # narrow, a partial block of rows
    (200, 20, 70),  # few columns, many rows: the swapped product (C^T = B^T A^T)
    (130, 24, 300),  # swapped, K past KC
]


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_every_transpose_and_size_matches_numpy(lib, size, ta, tb):
    _gemm(lib, *size, ta=ta, tb=tb)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_general_strides(lib, ta, tb):
    _gemm(lib, 11, 21, 19, ta=ta, tb=tb, spread=3)


@pytest.mark.parametrize(
    "epilogue",
    [
        dict(alpha=0.5),
        dict(beta=1.0),  # accumulate into an existing gradient
        dict(beta=-2.0, alpha=3.0),
        dict(bias=True),
        dict(relu=True),
        dict(bias=True, relu=True),
        dict(beta=1.0, bias=True, relu=True, alpha=-1.5),
    ],
    ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()),
)
@pytest.mark.parametrize(
    "size",
    [(7, 17, 5), (30, 40, 300), (1, 1, 1), (2, 1030, 7), (40, 10, 300), (100, 24, 50)],
    ids=str,
)
def test_every_epilogue(lib, epilogue, size):
    _gemm(lib, *size, ldc_pad=3, **epilogue)
    _gemm(lib, *size, dtype=np.float64, tb=True, **epilogue)


def test_relu_keeps_nan_as_tf_relu_does(lib):
    ffi, h = lib
    a = np.array([[np.nan, 1.0]], np.float32)
    b = np.array([[1.0], [-5.0]], np.float32)
    c = np.zeros((1, 1), np.float32)
    fp = lambda x: ffi.cast("float *", ffi.from_buffer(x))  # noqa: E731
    h.h_gemm_f32(1, 1, 2, fp(a), 2, 1, fp(b), 1, 1, fp(c), 1, 1.0, 0.0, ffi.NULL, 1)
    assert np.isnan(c[0, 0])
    a[0, 0] = 2.0
    h.h_gemm_f32(1, 1, 2, fp(a), 2, 1, fp(b), 1, 1, fp(c), 1, 1.0, 0.0, ffi.NULL, 1)
    assert c[0, 0] == 0.0


@pytest.mark.parametrize("size", [(0, 5, 3), (5, 0, 3), (0, 0, 0)])
def test_empty_products_write_nothing(lib, size):
    _gemm(lib, *size, ldc_pad=2)


@pytest.mark.parametrize("epilogue", [dict(), dict(beta=2.0, bias=True, relu=True)], ids=str)
def test_k_zero_is_the_epilogue_alone(lib, epilogue):
    _gemm(lib, 4, 5, 0, **epilogue)


def test_plain_entry_point_and_integers_wrap(lib):
    ffi, h = lib
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (37, 45)).astype(np.float32)
    b = rng.uniform(-1, 1, (45, 29)).astype(np.float32)
    c = np.full((37, 29), np.nan, np.float32)
    fp = lambda x: ffi.cast("float *", ffi.from_buffer(x))  # noqa: E731
    h.h_gemm_plain_f32(37, 29, 45, fp(a), 45, 1, fp(b), 29, 1, fp(c))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    ai = rng.integers(-(2**31), 2**31, (5, 7), dtype=np.int64).astype(np.int32)
    bi = rng.integers(-(2**31), 2**31, (9, 7), dtype=np.int64).astype(np.int32)  # stored B^T
    ci = np.zeros((5, 9), np.int32)
    ip = lambda x: ffi.cast("int32_t *", ffi.from_buffer(x))  # noqa: E731
    h.h_gemm_plain_i32(5, 9, 7, ip(ai), 7, 1, ip(bi), 1, 7, ip(ci))
    wide = (ai.astype(np.uint64) @ bi.T.astype(np.uint64)).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(ci, wide)


@pytest.mark.parametrize("n", [37, 10, 24], ids=["packed", "narrow", "swapped"])
def test_rows_computed_block_by_block_have_the_bits_of_the_whole_product(lib, n):
    ffi, h = lib
    rng = np.random.default_rng(5)
    M, N, K = 50, n, 300
    a = rng.normal(size=(M, K)).astype(np.float32)
    b = rng.normal(size=(K, N)).astype(np.float32)
    fp = lambda x: ffi.cast("float *", ffi.from_buffer(x))  # noqa: E731
    whole = np.zeros((M, N), np.float32)
    h.h_gemm_plain_f32(M, N, K, fp(a), K, 1, fp(b), N, 1, fp(whole))
    by_rows = np.zeros((M, N), np.float32)
    for i0, rows in ((0, 1), (1, 2), (3, 4), (7, 13), (20, 30)):  # the row path and the packed
        h.h_gemm_plain_f32(rows, N, K, fp(a[i0:]), K, 1, fp(b), N, 1, fp(by_rows[i0:]))
    np.testing.assert_array_equal(by_rows, whole)


@pytest.mark.parametrize("n", [130, 128], ids=["a-packed", "a-in-place"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
def test_tiles_that_pack_b_as_they_go_have_the_bits_of_the_others(lib, dtype, n):
    """Row-major B with whole NR-wide panels: the first tile of each panel reads B in place and
    packs it for the tiles below (6, 4 or 2 rows high). Rows computed in blocks put other rows
    first, so every row is sometimes in a packing tile and sometimes not; the last panel (130 is
    two 64-wide panels and 2 columns) is packed ahead. With 128 columns (whole panels where they
    are 64 wide) and alpha 1, row-major A is read in place by blocks of 50, 4 and 30 rows and
    packed by blocks of 3 and 11 (an odd tile). The epilogue runs on both."""
    ffi, h = lib
    rng = np.random.default_rng(6)
    M, N, K = 50, n, 300
    alpha = 0.5 if n == 130 else 1.0
    a = rng.normal(size=(M, K)).astype(dtype)
    b = rng.normal(size=(K, N)).astype(dtype)
    bias = rng.normal(size=N).astype(dtype)
    c0 = rng.normal(size=(M, N)).astype(dtype)
    ctype = "float" if dtype == np.float32 else "double"
    fn = h.h_gemm_f32 if dtype == np.float32 else h.h_gemm_f64
    fp = lambda x: ffi.cast(f"{ctype} *", ffi.from_buffer(x))  # noqa: E731
    whole = c0.copy()
    fn(M, N, K, fp(a), K, 1, fp(b), N, 1, fp(whole), N, alpha, 1.0, fp(bias), 1)
    by_rows = c0.copy()
    for i0, rows in ((0, 3), (3, 4), (7, 2), (9, 11), (20, 30)):
        fn(rows, N, K, fp(a[i0:]), K, 1, fp(b), N, 1, fp(by_rows[i0:]), N, alpha, 1.0, fp(bias),
           1)  # fmt: skip
    np.testing.assert_array_equal(by_rows, whole)
    want = np.maximum(alpha * (a.astype(np.float64) @ b) + c0 + bias, 0)
    np.testing.assert_allclose(whole, want, rtol=1e-4, atol=1e-4)


def test_few_columns_have_the_same_bits_whatever_the_layout(lib):
    """N = 10: row-major A runs the narrow kernel, A stored transposed the C^T kernel (AVX-512),
    a row at a time the row path, and a wider ldc the same kernels on a strided C: every one
    computes the same multiply-add chains, so the products agree to the bit, epilogue included."""
    ffi, h = lib
    rng = np.random.default_rng(11)
    M, N, K = 70, 10, 300
    a = rng.normal(size=(M, K)).astype(np.float32)
    at = np.ascontiguousarray(a.T)
    b = rng.normal(size=(K, N)).astype(np.float32)
    bias = rng.normal(size=N).astype(np.float32)
    fp = lambda x: ffi.cast("float *", ffi.from_buffer(x))  # noqa: E731
    results = []
    for layout in ("rows", "transposed", "one row at a time"):
        c = np.zeros((M, N + 3), np.float32)
        if layout == "rows":
            h.h_gemm_f32(M, N, K, fp(a), K, 1, fp(b), N, 1, fp(c), N + 3, 0.5, 0.0, fp(bias), 1)
        elif layout == "transposed":
            h.h_gemm_f32(M, N, K, fp(at), 1, M, fp(b), N, 1, fp(c), N + 3, 0.5, 0.0, fp(bias), 1)
        else:
            for i in range(M):
                h.h_gemm_f32(1, N, K, fp(a[i:]), K, 1, fp(b), N, 1, fp(c[i:]), N + 3, 0.5, 0.0,
                             fp(bias), 1)  # fmt: skip
        results.append(c)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    want = np.maximum(0.5 * (a.astype(np.float64) @ b) + bias, 0)
    np.testing.assert_allclose(results[0][:, :N], want, rtol=1e-4, atol=1e-4)
    # either type (double: the tall kernel's 10 rows of C^T pass its 8 lanes), each epilogue
    for dtype, ta in itertools.product((np.float32, np.float64), (False, True)):
        _gemm(lib, M, N, 45, dtype=dtype, ta=ta, alpha=0.5, bias=True, relu=True)
        _gemm(lib, M, N, 45, dtype=dtype, ta=ta, beta=1.0, ldc_pad=2)
        _gemm(lib, 37, 3, 45, dtype=dtype, ta=ta, beta=0.5, alpha=2.0)


def _task_count() -> int:
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1


# past the parallel threshold: N not a panel multiple (C split by rows: each thread packs its
# rows of A); a batch of 256 (by rows) and of 64 (by NR panels of columns); few columns (narrow:
# rows split between the threads); few columns on AVX-512's 64-wide panels (swapped: C's rows
# split); a row or two (the GEMV path: columns split in blocks, the last one ending in a partial
# vector)
@pytest.mark.parametrize(
    "size",
    [
        (150, 203, 300), (256, 512, 200), (64, 512, 200), (600, 10, 300), (700, 24, 100),
        (1, 1000, 300), (2, 600, 400),
    ],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("a_layout", ["transposed", "rows"])
def test_threads_give_identical_bits(lib, size, a_layout):
    ffi, h = lib
    rng = np.random.default_rng(7)
    M, N, K = size
    a = rng.normal(size=(K, M)).astype(np.float32)  # A^T
    # A stored transposed, or the same values row-major (read in place by whole tiles)
    a_store = a if a_layout == "transposed" else np.ascontiguousarray(a.T)
    b = rng.normal(size=(K, N)).astype(np.float32)
    bias = rng.normal(size=N).astype(np.float32)
    fp = lambda x: ffi.cast("float *", ffi.from_buffer(x))  # noqa: E731
    results = []
    for n in (1, 2, 3):
        h.h_threads_set(n)
        assert h.h_threads_count() == n
        c = np.zeros((M, N), np.float32)
        sam, sak = (1, M) if a_layout == "transposed" else (K, 1)
        h.h_gemm_f32(M, N, K, fp(a_store), sam, sak, fp(b), N, 1, fp(c), N, 1.0, 0.0, fp(bias),
                     1)  # fmt: skip
        results.append(c)
    h.h_threads_set(0)
    if _task_count() > 0:
        assert _task_count() >= 3  # the caller and the pool's two workers are running
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    want = np.maximum(a.T.astype(np.float64) @ b + bias, 0)
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-4)


def test_thread_count_from_the_environment(lib, monkeypatch):
    _, h = lib
    h.h_threads_set(0)
    monkeypatch.setenv("TFC_NUM_THREADS", "3")
    assert h.h_threads_count() == 3
    monkeypatch.setenv("TFC_NUM_THREADS", "zero")
    assert h.h_threads_count() == 1
    h.h_threads_set(2)
    assert h.h_threads_count() == 2
    h.h_threads_set(0)


def test_a_session_leaves_the_environment_to_the_library(lib, monkeypatch):
    """A Session hands its programs the ConfigProto's count, else set_num_threads's, else 0:
    the library then reads TFC_NUM_THREADS itself (no os.environ lookup per run)."""
    _, h = lib
    monkeypatch.setenv("TFC_NUM_THREADS", "3")
    assert session_thread_request(None) == 0
    h.h_threads_set(session_thread_request(None))
    assert h.h_threads_count() == 3
    assert session_thread_request(tf.ConfigProto(intra_op_parallelism_threads=2)) == 2
    tf.set_num_threads(4)
    try:
        assert session_thread_request(tf.ConfigProto()) == 4
        assert session_thread_request(tf.ConfigProto(intra_op_parallelism_threads=2)) == 2
    finally:
        tf.set_num_threads(0)
    h.h_threads_set(0)


# -- through generated code -----------------------------------------------------------------------
def _mlp_step(threads_config=None, disable=()):
    """A dense head and its gradients: relu(x W + b) with M = 270 rows (a 264-row GEMM block and
    a partial one), fused updates whose dW lives in scratch."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [270, 70], name="x")
        w1 = tf.Variable(tf.random_normal([70, 90], stddev=0.2), name="w1")
        b1 = tf.Variable(tf.random_normal([90], stddev=0.2), name="b1")
        w2 = tf.Variable(tf.random_normal([90, 10], stddev=0.2), name="w2")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w2)))
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: np.random.default_rng(0).normal(size=(270, 70)).astype(np.float32)}
    config = tf.ConfigProto(compile_options=tf.CompileOptions(disable=list(disable)))
    if threads_config:
        config.intra_op_parallelism_threads = threads_config
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train, feed)
        return sess.run([loss, h, w1, b1, w2], feed)


def test_generated_dense_heads_fused_or_not_threaded_or_not_agree():
    plain = _mlp_step(disable=["fuse"])
    fused = _mlp_step()
    threaded = _mlp_step(threads_config=2)
    for p, f, t in zip(plain, fused, threaded):
        np.testing.assert_array_equal(p, f)
        np.testing.assert_array_equal(f, t)
    assert np.isfinite(plain[0]) and plain[0] > 0


@pytest.mark.parametrize(
    "bias_add,relu",
    [("add", False), ("add", True), ("bias_add", False), ("bias_add", True), ("none", True)],
)
def test_dense_heads_are_one_gemm_call_with_the_unfused_bits(bias_add, relu):
    rng = np.random.default_rng(2)
    xv = rng.normal(size=(77, 40)).astype(np.float32)
    xv[3, 5] = np.nan  # NaN rows stay NaN through the ReLU, as Relu's own kernel keeps them
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [77, 40], name="x")
        wv = rng.normal(size=(19, 40)).astype(np.float32)  # used transposed
        bv = rng.normal(size=19).astype(np.float32)
        w, b = tf.constant(wv), tf.constant(bv)
        y = tf.matmul(x, w, transpose_b=True)
        y = {"add": lambda: b + y, "bias_add": lambda: tf.nn.bias_add(y, b), "none": lambda: y}[
            bias_add
        ]()
        y = tf.nn.relu(y) if relu else y
        results, sources = [], []
        for disable in (["fuse"], []):
            config = tf.CompileOptions(disable=disable)
            with tf.Session(graph=g, config=config) as sess:
                results.append(sess.run(y, {x: xv}))
                sources.append(sess.source([y], {x: xv}))
    np.testing.assert_array_equal(results[0], results[1])
    bias_arg = "NULL" if bias_add == "none" else "x2"
    assert f"0.0f, {bias_arg}, {int(relu)});" in sources[1]
    assert "for (" not in sources[1].split("tfc_gemm_f32_ex(77, 19, 40")[0].split("static")[-1]
    want = xv.astype(np.float64) @ wv.T + (0 if bias_add == "none" else bv)
    want = np.where(want < 0, 0, want) if relu else want
    np.testing.assert_allclose(results[1], want, rtol=1e-5, atol=1e-5)  # NaN where x's row is
    assert np.isnan(results[1][3]).all() and not np.isnan(results[1][4]).any()


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_session_matmul_past_the_blocks(ta, tb):
    rng = np.random.default_rng(11)
    a = rng.normal(size=(263, 145) if ta else (145, 263)).astype(np.float32)
    b = rng.normal(size=(77, 263) if tb else (263, 77)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        pa, pb = tf.placeholder(tf.float32, a.shape), tf.placeholder(tf.float32, b.shape)
        y = tf.matmul(pa, pb, transpose_a=ta, transpose_b=tb)
        with tf.Session(graph=g) as sess:
            got = sess.run(y, {pa: a, pb: b})
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_set_num_threads_validates():
    with pytest.raises(ValueError, match="set_num_threads"):
        tf.set_num_threads(-1)
    tf.set_num_threads(2)
    assert tf.get_num_threads() == 2
    tf.set_num_threads(0)


# -- sanitizers -----------------------------------------------------------------------------------
SANITIZED_MAIN = textwrap.dedent(
    """
    #include <stdio.h>
    #include <stdlib.h>
    #include <math.h>
    #include "tfc_runtime.h"

    /* exact-size heap buffers so any read past an operand is reported */
    static float *filled(int64_t n, unsigned *seed) {
        float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        for (int64_t i = 0; i < n; ++i) p[i] = (float)(rand_r(seed) % 2001 - 1000) / 1000.0f;
        return p;
    }

    static int check(int64_t M, int64_t N, int64_t K, int ta, int tb, int epi, unsigned seed) {
        float *A = filled(M * K, &seed), *B = filled(K * N, &seed), *C = filled(M * N, &seed);
        float *C0 = filled(M * N, &seed), *bias = filled(N, &seed);
        memcpy(C0, C, (size_t)(M * N) * sizeof(float));
        const int64_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
        const float beta = epi ? 1.0f : 0.0f;
        tfc_gemm_f32_ex(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1.0f, beta,
                        epi ? bias : NULL, epi);
        int bad = 0;
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = epi ? (double)C0[i * N + j] + bias[j] : 0.0;
                for (int64_t k = 0; k < K; ++k)
                    s += (double)A[i * sam + k * sak] * B[k * sbk + j * sbn];
                if (epi && s < 0) s = 0;
                if (fabs(s - C[i * N + j]) > 1e-4 * (1 + sqrt((double)K))) bad = 1;
            }
        free(A), free(B), free(C), free(C0), free(bias);
        return bad;
    }

    int main(void) {
        static const int64_t sizes[][3] = {{1, 1, 1}, {7, 17, 5}, {73, 35, 257}, {0, 4, 3},
                                           {3, 4, 0}, {150, 70, 90}, {64, 100, 300},
                                           {70, 10, 45}, {40, 30, 10}};
        int bad = 0;
        for (int threads = 1; threads <= 2; ++threads) {
            tfc_threads_set(threads);
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
                for (int v = 0; v < 8; ++v)
                    bad |= check(sizes[s][0], sizes[s][1], sizes[s][2], v & 1, (v >> 1) & 1,
                                 (v >> 2) & 1, (unsigned)(s * 8 + v + 1));
        }
        puts(bad ? "MISMATCH" : "GEMM-SANITIZED-OK");
        return bad;
    }
    """
)


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_gemm_is_clean_under_sanitizers(tmp_path, sanitizer):
    """ASan/UBSan: no read past an operand, no undefined behaviour; TSan: the pool's hand-off
    of tasks between threads has no data race (the main runs 1 and 2 threads)."""
    cc = compiler()
    runtime = "libasan.so" if sanitizer.startswith("address") else "libtsan.so"
    found = subprocess.run(
        [cc, f"-print-file-name={runtime}"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(found):
        pytest.skip(f"the C compiler has no {runtime}")
    source = tmp_path / "gemm_main.c"
    source.write_text("#define _DEFAULT_SOURCE\n" + SANITIZED_MAIN)
    binary = tmp_path / "gemm_main"
    flags = ["-std=c11", "-O1", "-march=native", "-Wall", "-Wextra", "-Werror", "-g"]
    sanitize = [f"-fsanitize={sanitizer}", "-fno-sanitize-recover=all"]
    subprocess.run(
        [cc, *flags, *sanitize, "-I", str(runtime_dir() / "include"), str(source), "-o",
         str(binary), "-lm", "-pthread"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="halt_on_error=1",
               TSAN_OPTIONS="halt_on_error=1")  # fmt: skip
    proc = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "GEMM-SANITIZED-OK" in proc.stdout, proc.stderr[-4000:]
    assert "runtime error" not in proc.stderr and "WARNING: ThreadSanitizer" not in proc.stderr


POOL_MAIN = textwrap.dedent(
    """
    #include <stdio.h>
    #include "tfc_threads.h"

    static unsigned char hit[150000], inner[8];
    static void task(void *ctx, int64_t t) { (void)ctx; ++hit[t]; }
    static void sub(void *ctx, int64_t t) { ++((unsigned char *)ctx)[t]; }
    /* a task that makes a call of its own: it runs inline, on one thread */
    static void nested(void *ctx, int64_t t) {
        (void)ctx;
        if (tfc_threads_count() != 1) inner[2 * t] = 99;
        tfc_threads_parallel_parts(2, sub, inner + 2 * t);
    }

    int main(void) {
        int bad = 0;
        for (int threads = 1; threads <= 3; ++threads) {
            tfc_threads_set(threads);
            for (int i = 0; i < 150000; ++i) hit[i] = 0;
            for (int i = 0; i < 8; ++i) inner[i] = 0;
            /* more tasks than the call word holds (65535): calls of slices */
            tfc_threads_parallel_for(140001, task, NULL);
            tfc_threads_parallel_parts(70000, task, NULL);
            for (int r = 0; r < 200; ++r) tfc_threads_parallel_parts(threads, task, NULL);
            tfc_threads_parallel_for(4, nested, NULL);
            for (int i = 0; i < 150000; ++i) {
                int want = i < 70000 ? 2 : i < 140001 ? 1 : 0;
                if (i < threads) want += 200;
                bad |= hit[i] != want;
            }
            for (int i = 0; i < 8; ++i) bad |= inner[i] != 1;
        }
        puts(bad ? "MISMATCH" : "POOL-OK");
        return bad;
    }
    """
)


@pytest.mark.parametrize("sanitizer", [None, "thread"])
def test_the_pool_runs_every_task_once(tmp_path, sanitizer):
    """tfc_threads.h on 1, 2 and 3 threads: tasks in turn and fixed parts, more tasks than one
    call holds, a call made inside a task (one thread, inline); TSan: no data race in the
    hand-offs through the call word."""
    flags = ["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-g"]
    if sanitizer:
        found = subprocess.run(
            [compiler(), "-print-file-name=libtsan.so"], capture_output=True, text=True
        ).stdout.strip()
        if not os.path.isabs(found):
            pytest.skip("the C compiler has no libtsan.so")
        flags += [f"-fsanitize={sanitizer}"]
    source = tmp_path / "pool_main.c"
    source.write_text("#define _DEFAULT_SOURCE\n" + POOL_MAIN)
    binary = tmp_path / "pool_main"
    subprocess.run(
        [compiler(), *flags, "-I", str(runtime_dir() / "include"), str(source), "-o",
         str(binary), "-pthread"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1")
    proc = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "POOL-OK" in proc.stdout, proc.stdout + proc.stderr[-4000:]
    assert "WARNING: ThreadSanitizer" not in proc.stderr


STATS_MAIN = textwrap.dedent(
    """
    #include <stdlib.h>
    #include "tfc_gemm.h"

    int main(void) {
        float *A = calloc(150 * 300, sizeof(float)), *B = calloc(300 * 203, sizeof(float));
        float *C = calloc(150 * 203, sizeof(float));
        tfc_threads_set(2);
        for (int i = 0; i < 5; ++i) tfc_gemm_f32(150, 203, 300, A, 300, 1, B, 203, 1, C);
        free(A), free(B), free(C);
        return 0;
    }
    """
)


def test_the_stats_build_reports_calls_and_each_threads_cpu_time(tmp_path):
    """-DTFC_THREADS_STATS (bench/thread_scaling.py): at exit, the parallel calls and their wall
    time, then the CPU time in them and in tasks on each thread (the caller, one worker)."""
    source = tmp_path / "stats_main.c"
    source.write_text("#define _DEFAULT_SOURCE\n" + STATS_MAIN)
    binary = tmp_path / "stats_main"
    subprocess.run(
        [compiler(), "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-DTFC_THREADS_STATS",
         "-I", str(runtime_dir() / "include"), str(source), "-o", str(binary), "-lm", "-pthread"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    calls, cpu = proc.stderr.splitlines()
    assert calls.startswith("tfc threads: 5 parallel calls, "), proc.stderr
    head, tasks = cpu.split("tasks by thread:")
    assert head.startswith("tfc threads cpu: ") and float(head.split()[3]) > 0, proc.stderr
    assert len(tasks.split()) == 2 and sum(float(t) for t in tasks.split()) > 0, proc.stderr


def test_generic_and_embedded_builds_compile_without_warnings(tmp_path):
    """The portable build (no -march) and the embedded one (no threads, no POSIX headers)."""
    source = tmp_path / "gemm_embed.c"
    source.write_text(
        '#include "tfc_gemm.h"\n'
        "void f(float *C, const float *A, const float *B) {\n"
        "    tfc_gemm_f32_ex(5, 7, 9, A, 9, 1, B, 7, 1, C, 7, 1.0f, 0.0f, 0, 1);\n"
        "}\n"
    )
    include = ["-I", str(runtime_dir() / "include")]
    base = [compiler(), "-std=c11", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", *include]
    subprocess.run([*base, "-c", str(source), "-o", str(tmp_path / "g.o")], check=True)
    proc = subprocess.run(
        [*base, "-DTFC_EMBED", "-DTFC_NO_THREADS", "-H", "-c", str(source), "-o",
         str(tmp_path / "e.o")],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    included = [line.split()[-1] for line in proc.stderr.splitlines() if line.startswith(".")]
    for header in ("pthread.h", "stdio.h", "stdlib.h"):
        assert not any(path.endswith("/" + header) for path in included), header


# -- the paths linked from one archive (tfc/backend/cc.py: gemm_paths_archive) -----------------

# a product on each path: packed (K in three blocks), past one MC block, swapped, narrow, tall
# where A is stored transposed (AVX-512), one row, two rows past the row path's chunk
LINKED_CASES = [
    dict(M=73, N=35, K=257), dict(M=271, N=128, K=40), dict(M=200, N=20, K=70),
    dict(M=29, N=3, K=7), dict(M=64, N=10, K=300, ta=True), dict(M=1, N=40, K=30),
    dict(M=2, N=1030, K=20), dict(M=151, N=21, K=40, tb=True, beta=0.5, bias=True, relu=True),
]  # fmt: skip


def test_linked_paths_have_the_bits_of_the_inline_ones(monkeypatch):
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    paths = {}
    for mode in ("0", "1"):  # each build whatever the environment says (the same key as lib's)
        monkeypatch.setenv("TFC_GEMM_INLINE", mode)
        paths[mode] = build_shared_library(HARNESS, name="gemm_harness")
    assert paths["0"] != paths["1"]  # two programs: linked, and with the paths compiled in
    linked, inline = ((ffi, ffi.dlopen(str(paths[m]))) for m in ("0", "1"))
    for case in LINKED_CASES:
        for dtype in (np.float32, np.float64):
            linked_c = _gemm(linked, dtype=dtype, seed=3, **case)
            inline_c = _gemm(inline, dtype=dtype, seed=3, **case)
            assert linked_c.tobytes() == inline_c.tobytes(), (case, dtype)


def _matmul_program(rows: int, cols: int) -> np.ndarray:
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant(np.arange(rows * 5, dtype=np.float32).reshape(rows, 5) / 7)
        w = tf.placeholder(tf.float32, [5, cols])
        return sess.run(tf.matmul(x, w), {w: np.ones((5, cols), np.float32)})


def test_programs_link_one_archive_of_the_paths_built_once(tmp_path, monkeypatch):
    import shutil

    from tfc.backend import cc

    cache = tmp_path / "cache"
    monkeypatch.setenv("TFC_CACHE_DIR", str(cache))
    monkeypatch.delenv("TFC_GEMM_INLINE", raising=False)
    before = cc.BUILD_STATS["compiles"]
    with tf.Graph().as_default(), tf.Session() as sess:
        assert sess.run(tf.constant([1.0, 2.0]) * 3.0).tolist() == [3.0, 6.0]
    assert len(list(cache.glob("gemm-*.a"))) == 1
    assert cc.BUILD_STATS["compiles"] - before == 2  # the archive, the program
    for rows, cols in [(3, 4), (40, 70)]:
        want = (np.arange(rows * 5, dtype=np.float64).reshape(rows, 5) / 7).sum(1, keepdims=True)
        np.testing.assert_allclose(_matmul_program(rows, cols), np.repeat(want, cols, 1), 1e-6)
    assert len(list(cache.glob("gemm-*.a"))) == 1
    assert cc.BUILD_STATS["compiles"] - before == 4  # two more programs, the archive reused
    if shutil.which("nm"):  # the linker took the paths only into the programs that multiply
        defined = {}
        for so in cache.glob("*.so"):
            names = subprocess.run(["nm", str(so)], capture_output=True, text=True).stdout
            defined[so] = "tfc_gemm_columns_f32" in names
        assert sorted(defined.values()) == [False, True, True], defined


def test_without_an_archiver_each_program_compiles_the_paths(tmp_path, monkeypatch):
    import shutil

    from tfc.backend import cc

    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TFC_GEMM_INLINE", raising=False)
    which = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: None if name == "ar" else which(name, *a, **k)
    )
    got = _matmul_program(7, 9)
    np.testing.assert_allclose(
        got, np.repeat((np.arange(35).reshape(7, 5) / 7).sum(1)[:, None], 9, 1), 1e-6
    )
    assert not list((tmp_path / "cache").glob("gemm-*.a"))
    assert cc.gemm_paths_archive(cc.compiler(), cc.program_flags()) is None
