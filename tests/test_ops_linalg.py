"""MatMul and BatchMatMulV2: compiled C vs the NumPy reference vs exact or float64 products."""

import itertools

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(77)

TYPES = ["float32", "float64", "int32", "int64"]
SIZES = [(1, 1, 1), (3, 17, 1), (17, 3, 65), (65, 17, 3), (1, 65, 17), (4, 5, 6)]  # (M, K, N)


def sample(dtype: str, shape: tuple) -> np.ndarray:
    if dtype.startswith("int"):
        return RNG.integers(-20, 21, shape).astype(dtype)
    return RNG.uniform(-2.0, 2.0, shape).astype(dtype)


def stored(x: np.ndarray, transposed: bool) -> np.ndarray:
    """The array to pass so that, transposed by the op when asked, it stands for `x`."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2)) if transposed else x


def product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict]:
    """a @ b (NumPy broadcasting), exact for integers (wrapping), float64 for floats; and a
    tolerance for floats that scales with |a| @ |b|, so one wrong term still shows."""
    if a.dtype.kind == "i":
        bits = a.dtype.itemsize * 8
        exact = np.matmul(a.astype(object), b.astype(object))
        wrapped = np.frompyfunc(lambda v: (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1), 1, 1)
        return np.asarray(wrapped(exact), dtype=object).astype(a.dtype), {}
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    eps = 1e-6 if a.dtype == np.float32 else 1e-14
    return want.astype(a.dtype), {"rtol": eps, "atol": 4 * eps * float(np.max(scale, initial=0))}


def source(batch: CaseBatch, x: np.ndarray, k: int) -> tf.Tensor:
    """Operands rotate between compiled-in constants, fed buffers, and feeds with None dims."""
    if k % 3 == 0:
        return tf.constant(x)
    if k % 3 == 1:
        return batch.feed(x)
    return batch.feed(x, [None] * x.ndim)


def build_matmul() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        k = 0
        for dtype in TYPES:
            for (m, kk, n), ta, tb in itertools.product(SIZES, (False, True), (False, True)):
                k += 1
                x, y = sample(dtype, (m, kk)), sample(dtype, (kk, n))
                xa, yb = source(b, stored(x, ta), k), source(b, stored(y, tb), k + 1)
                if k % 4 == 0:  # adjoint is the transpose for real types
                    t = tf.matmul(xa, yb, adjoint_a=ta, adjoint_b=tb)
                else:
                    t = tf.matmul(xa, yb, transpose_a=ta, transpose_b=tb)
                assert t.op.type == "MatMul"
                want, tol = product(x, y)
                b.add(f"matmul-{dtype}-{m}x{kk}x{n}-t{ta:d}{tb:d}", t, want, **tol)
            # empty operands: K = 0 gives zeros, M = 0 or N = 0 an empty product
            for m, kk, n in [(3, 0, 4), (0, 3, 4), (3, 4, 0), (0, 0, 2)]:
                k += 1
                x, y = sample(dtype, (m, kk)), sample(dtype, (kk, n))
                t = tf.matmul(source(b, stored(x, True), k), source(b, y, k), transpose_a=True)
                b.add(f"matmul-{dtype}-{m}x{kk}x{n}-empty", t, product(x, y)[0])
        for dtype in ["int32", "int64"]:
            info = np.iinfo(dtype)
            x = np.array([[info.max, 2], [info.min, -1]], dtype=dtype)
            y = np.array([[3, info.max], [info.min, 7]], dtype=dtype)
            b.add(f"matmul-{dtype}-wraps", tf.matmul(b.feed(x), y), product(x, y)[0])
        x = sample("float32", (3, 4))
        y = sample("float32", (4, 2))
        p = b.feed(x, [None, 4])
        b.add("operator-matmul", p @ y, *_want_tol(x, y))
        b.add("operator-rmatmul", x @ tf.constant(y), *_want_tol(x, y))
        b.add("matmul-same-operand", tf.matmul(p, p, transpose_b=True), *_want_tol(x, x.T))
        b.add(
            "matmul-sparse-hints",
            tf.matmul(p, y, a_is_sparse=True, b_is_sparse=True),
            *_want_tol(x, y),
        )
    return b


def _want_tol(a: np.ndarray, b: np.ndarray) -> tuple:
    want, tol = product(a, b)
    return want, tol.get("rtol"), tol.get("atol")


# (a shape, b shape) as the product sees them, before any transpose
BATCHED = [
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4, 5), (2, 3, 5, 6)),
    ((2, 1, 4, 5), (3, 5, 6)),  # batch dims broadcast both ways
    ((1, 4, 5), (3, 5, 2)),
    ((4, 5), (3, 5, 6)),  # a rank-2 operand broadcast over b's batch
    ((3, 1, 5), (5, 7)),
    ((2, 1, 3, 17), (1, 4, 17, 1)),
    ((0, 3, 4), (0, 4, 5)),  # no batches
    ((2, 3, 0), (1, 0, 4)),  # K = 0
    ((2, 0, 3), (2, 3, 4)),  # M = 0
]


def build_batched() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        k = 0
        for dtype in TYPES:
            for (sa, sb), ta, tb in itertools.product(BATCHED, (False, True), (False, True)):
                k += 1
                x, y = sample(dtype, sa), sample(dtype, sb)
                t = tf.matmul(
                    source(b, stored(x, ta), k),
                    source(b, stored(y, tb), k + 1),
                    transpose_a=ta,
                    adjoint_b=tb,
                )
                assert t.op.type == "BatchMatMulV2"
                want, tol = product(x, y)
                cid = f"batch-{dtype}-{sa}@{sb}-t{ta:d}{tb:d}".replace(" ", "")
                b.add(cid, t, want, **tol)
        # a rank unknown when the graph is built makes a BatchMatMulV2 even for matrices
        x, y = sample("float64", (3, 4)), sample("float64", (4, 2))
        ph = tf.placeholder(tf.float64)
        b.feed_dict[ph] = x
        t = tf.matmul(ph, y)
        assert t.op.type == "BatchMatMulV2" and t.shape.as_tuple() is None
        b.add("batch-unknown-rank", t, *_want_tol(x, y))
    return b


MATMUL = build_matmul()
BATCHED_MATMUL = build_batched()


@pytest.mark.parametrize("case", MATMUL.ids())
def test_matmul(case):
    MATMUL.check(case)


@pytest.mark.parametrize("case", BATCHED_MATMUL.ids())
def test_batch_matmul(case):
    BATCHED_MATMUL.check(case)


# -- static shapes, errors ----------------------------------------------------------------------
def test_partial_shapes_at_graph_build_time():
    a = tf.placeholder(tf.float32, [None, 4])
    b = tf.placeholder(tf.float32, [4, None])
    assert tf.matmul(a, b).shape.as_tuple() == (None, None)
    assert tf.matmul(a, b, transpose_a=True, transpose_b=True).shape.as_tuple() == (4, 4)
    c = tf.placeholder(tf.float32, [None, 1, 3, 4])
    d = tf.placeholder(tf.float32, [5, None, 4])
    assert tf.matmul(c, d, transpose_b=True).shape.as_tuple() == (None, 5, 3, None)
    assert tf.matmul(d, c, adjoint_a=True).shape.as_tuple() == (None, 5, 4, 4)
    e = tf.matmul(tf.placeholder(tf.int64), tf.placeholder(tf.int64, [2, 2]))
    assert e.dtype == tf.int64 and e.shape.as_tuple() is None


def test_inner_dimension_mismatch_is_tf_error():
    a = tf.placeholder(tf.float32, [None, 4])
    b = tf.placeholder(tf.float32, [5, 10])
    message = (
        r"Dimensions must be equal, but are 4 and 5 for 'MatMul' \(op: 'MatMul'\) "
        r"with input shapes: \[\?,4\], \[5,10\]\."
    )
    with pytest.raises(ValueError, match=message):
        tf.matmul(a, b)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 10"):
        tf.matmul(a, b, transpose_b=True)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 5 and 4"):
        tf.matmul(b, a, transpose_a=True, transpose_b=True)


def test_batch_errors():
    a = tf.placeholder(tf.float32, [2, 3, 4])
    with pytest.raises(
        ValueError,
        match=r"Dimensions must be equal, but are 2 and 3 for "
        r"'MatMul' \(op: 'BatchMatMulV2'\)",
    ):
        tf.matmul(a, tf.placeholder(tf.float32, [3, 4, 5]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 3"):
        tf.matmul(a, a)
    with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
        tf.matmul(a, tf.placeholder(tf.float32, [4]))
    with pytest.raises(
        ValueError,
        match=r"Shape must be rank 2 but is rank 1 for 'MatMul(_\d+)?' "
        r"\(op: 'MatMul'\) with input shapes: \[4\], \[4,2\]",
    ):
        tf.matmul(tf.placeholder(tf.float32, [4]), tf.placeholder(tf.float32, [4, 2]))


def test_fed_shapes_that_do_not_multiply_fail_the_run():
    a = tf.placeholder(tf.float32, [None, None])
    y = tf.matmul(a, tf.constant(np.ones((3, 2), np.float32)))
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="Dimensions must be equal, but are 4 and 3"
        ):
            sess.run(y, {a: np.ones((2, 4), np.float32)})


def test_type_errors():
    with pytest.raises(
        TypeError,
        match="Input 'b' of 'MatMul' Op has type int32 that does not "
        "match type float32 of argument 'a'",
    ):
        tf.matmul(tf.placeholder(tf.float32, [2, 2]), tf.placeholder(tf.int32, [2, 2]))
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        tf.matmul(tf.constant([[True]]), tf.constant([[False]]))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a can be True"):
        tf.matmul([[1.0]], [[1.0]], transpose_a=True, adjoint_a=True)
    with pytest.raises(ValueError, match="Only one of transpose_b and adjoint_b can be True"):
        tf.matmul([[1.0]], [[1.0]], transpose_b=True, adjoint_b=True)
