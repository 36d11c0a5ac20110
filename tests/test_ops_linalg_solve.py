"""LU and Cholesky ops (MatrixInverse, MatrixDeterminant, LogMatrixDeterminant, Cholesky,
MatrixSolve, MatrixTriangularSolve, cholesky_solve): compiled C vs the NumPy reference vs
float64 NumPy, on batches of well-conditioned matrices; TF's errors, at graph-building time and
at run time (also from a GPU kernel, here under device emulation)."""

import numpy as np
import pytest
from cuda_devices import DEVICES
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(2016)
FLOATS = ["float32", "float64"]
SQUARE = [(1, 1), (3, 3), (2, 4, 4), (2, 3, 5, 5), (17, 17), (0, 3, 3)]


def orthogonal(shape: tuple) -> np.ndarray:
    q, r = np.linalg.qr(RNG.standard_normal(shape))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def conditioned(shape: tuple, lo: float = 0.5, hi: float = 2.0) -> np.ndarray:
    """Random [..., n, n] matrices with singular values in [lo, hi] (condition <= hi / lo):
    errors stay near eps, so a tolerance of a few n eps catches any wrong entry."""
    n = shape[-1]
    s = RNG.uniform(lo, hi, (*shape[:-2], n)) * RNG.choice([-1.0, 1.0], (*shape[:-2], n))
    return orthogonal(shape) @ (s[..., None] * orthogonal(shape))


def spd(shape: tuple) -> np.ndarray:
    q = orthogonal(shape)
    s = RNG.uniform(0.5, 2.0, shape[:-1])
    return q @ (s[..., None] * np.swapaxes(q, -1, -2))


def with_junk_above(a: np.ndarray) -> np.ndarray:
    """a's lower triangle, anything above it (ops that read only the lower triangle)."""
    return np.tril(a) + np.triu(RNG.uniform(-9, 9, a.shape), 1)


def triangular(shape: tuple, lower: bool) -> np.ndarray:
    """A well-conditioned triangular matrix (diagonal in [1, 2], signed) and junk elsewhere."""
    n = shape[-1]
    t = RNG.uniform(-0.5, 0.5, shape) / np.sqrt(max(n, 1))
    d = RNG.uniform(1.0, 2.0, (*shape[:-2], n)) * RNG.choice([-1.0, 1.0], (*shape[:-2], n))
    t = np.tril(t, -1) if lower else np.triu(t, 1)
    junk = (
        np.triu(RNG.uniform(-9, 9, shape), 1) if lower else np.tril(RNG.uniform(-9, 9, shape), -1)
    )
    return t + d[..., None] * np.eye(n) + junk


def tolerance(dtype: str, n: int, want: np.ndarray) -> dict:
    """Rounding of a few n eps relative to the result's size: a wrong entry is off by O(1)."""
    eps = float(np.finfo(dtype).eps)
    scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
    return {"rtol": 16 * max(n, 1) * eps, "atol": 16 * max(n, 1) * eps * scale}


def source(batch: CaseBatch, x: np.ndarray, k: int) -> tf.Tensor:
    if k % 3 == 0:
        return tf.constant(x)
    if k % 3 == 1:
        return batch.feed(x)
    return batch.feed(x, [None] * x.ndim)


def add(b: CaseBatch, cid: str, t: tf.Tensor, want64: np.ndarray, dtype: str, n: int) -> None:
    b.add(cid, t, np.asarray(want64).astype(dtype), **tolerance(dtype, n, want64))


def build_factor() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        k = 0
        for dtype in FLOATS:
            for shape in SQUARE:
                n = shape[-1]
                k += 1
                a = conditioned(shape)
                x = a.astype(dtype)
                a = x.astype(np.float64)  # the values the op sees
                for adjoint in (False, True):
                    t = tf.matrix_inverse(source(b, x, k + adjoint), adjoint=adjoint)
                    assert t.op.type == "MatrixInverse"
                    want = np.linalg.inv(np.swapaxes(a, -1, -2) if adjoint else a)
                    add(b, f"inverse-{dtype}-{shape}-adj{adjoint:d}", t, want, dtype, n)
                t = tf.matrix_determinant(source(b, x, k))
                add(b, f"det-{dtype}-{shape}", t, np.linalg.det(a), dtype, n)
                sign, logabs = tf.linalg.slogdet(source(b, x, k + 1))
                want_sign, want_log = np.linalg.slogdet(a)
                b.add(f"slogdet-sign-{dtype}-{shape}", sign, want_sign.astype(dtype))
                add(b, f"slogdet-log-{dtype}-{shape}", logabs, want_log, dtype, n)
                s = spd(shape).astype(dtype)
                t = tf.cholesky(source(b, with_junk_above(s).astype(dtype), k))
                assert t.op.type == "Cholesky"
                add(b, f"cholesky-{dtype}-{shape}", t, np.linalg.cholesky(s.astype(np.float64)),
                    dtype, n)  # fmt: skip
                for rhs_cols in (1, 3):
                    for adjoint in (False, True):
                        k += 1
                        r = RNG.standard_normal((*shape[:-1], rhs_cols)).astype(dtype)
                        t = tf.matrix_solve(source(b, x, k), source(b, r, k + 1), adjoint=adjoint)
                        m = np.swapaxes(a, -1, -2) if adjoint else a
                        want = np.linalg.solve(m, r.astype(np.float64))
                        cid = f"solve-{dtype}-{shape}x{rhs_cols}-adj{adjoint:d}"
                        add(b, cid, t, want, dtype, n)
                for lower in (True, False):
                    for adjoint in (False, True):
                        k += 1
                        tri = triangular(shape, lower).astype(dtype)
                        r = RNG.standard_normal((*shape[:-1], 2)).astype(dtype)
                        t = tf.matrix_triangular_solve(
                            source(b, tri, k), source(b, r, k + 2), lower=lower, adjoint=adjoint
                        )
                        m = np.tril(tri) if lower else np.triu(tri)
                        m = m.astype(np.float64)
                        m = np.swapaxes(m, -1, -2) if adjoint else m
                        want = np.linalg.solve(m, r.astype(np.float64))
                        cid = f"trisolve-{dtype}-{shape}-low{lower:d}-adj{adjoint:d}"
                        add(b, cid, t, want, dtype, n)
                r = RNG.standard_normal((*shape[:-1], 2)).astype(dtype)
                chol = np.linalg.cholesky(s.astype(np.float64)).astype(dtype)
                t = tf.cholesky_solve(source(b, chol, k), source(b, r, k + 1))
                want = np.linalg.solve(s.astype(np.float64), r.astype(np.float64))
                add(b, f"cholesky_solve-{dtype}-{shape}", t, want, dtype, n)
            # 0 x 0 matrices: determinant 1, slogdet (1, 0); batch dims broadcast in
            # triangular solves (TF 2's MatrixTriangularSolve)
            empty = np.zeros((2, 0, 0), dtype)
            b.add(f"det-{dtype}-0x0", tf.matrix_determinant(b.feed(empty)), np.ones(2, dtype))
            sign, logabs = tf.linalg.slogdet(tf.constant(empty))
            b.add(f"slogdet-sign-{dtype}-0x0", sign, np.ones(2, dtype))
            b.add(f"slogdet-log-{dtype}-0x0", logabs, np.zeros(2, dtype))
            for sa, sb in [((2, 1, 4, 4), (3, 4, 2)), ((4, 4), (2, 4, 3)), ((3, 4, 4), (4, 1))]:
                k += 1
                tri = triangular(sa, True).astype(dtype)
                r = RNG.standard_normal(sb).astype(dtype)
                t = tf.matrix_triangular_solve(source(b, tri, k), source(b, r, k + 1))
                want = np.linalg.solve(np.tril(tri).astype(np.float64), r.astype(np.float64))
                add(b, f"trisolve-broadcast-{dtype}-{sa}-{sb}", t, want, dtype, 4)
            # singular and indefinite inputs: TF's answers, not errors
            singular = np.array([[[1, 2], [2, 4]], [[3, 1], [1, 2]]], dtype)
            t = tf.matrix_determinant(b.feed(singular))
            b.add(f"det-singular-{dtype}", t, np.array([0, 5], dtype), atol=1e-5)
            sign, logabs = tf.linalg.slogdet(b.feed(singular))
            b.add(f"slogdet-sign-singular-{dtype}", sign, np.array([0, 1], dtype))
            b.add(f"slogdet-log-singular-{dtype}", logabs, np.array([-np.inf, np.log(5)], dtype))
            indefinite = np.array([[[4, 2, 1], [2, -3, 0], [1, 0, 5]], spd((3, 3))], dtype)
            want = np.array([np.tril(np.full((3, 3), np.nan)), np.linalg.cholesky(indefinite[1])])
            t = tf.cholesky(b.feed(indefinite))
            add(b, f"cholesky-indefinite-{dtype}", t, want, dtype, 3)
            zero = np.zeros((2, 2), dtype)
            t = tf.matrix_triangular_solve(b.feed(zero), np.ones((2, 1), dtype))
            b.add(f"trisolve-singular-{dtype}", t, np.array([[np.inf], [np.nan]], dtype))
    return b


FACTOR = build_factor()


@pytest.mark.parametrize("case", FACTOR.ids())
def test_factor(case):
    FACTOR.check(case)


# -- static shapes, errors -----------------------------------------------------------------------
def test_partial_shapes_at_graph_build_time():
    x = tf.placeholder(tf.float32, [None, 3, 3])
    assert tf.matrix_inverse(x).shape.as_tuple() == (None, 3, 3)
    assert tf.matrix_determinant(x).shape.as_tuple() == (None,)
    assert [t.shape.as_tuple() for t in tf.linalg.slogdet(x)] == [(None,), (None,)]
    assert tf.cholesky(tf.placeholder(tf.float64, [None, None])).shape.as_tuple() == (None, None)
    rhs = tf.placeholder(tf.float32, [2, None, 5])
    assert tf.matrix_solve(x, rhs).shape.as_tuple() == (2, 3, 5)
    solved = tf.matrix_triangular_solve(x, tf.placeholder(tf.float32, [4, 1, 3, 2]))
    assert solved.shape.as_tuple() == (4, None, 3, 2)


def test_shape_and_type_errors_are_tf_errors():
    with pytest.raises(
        ValueError,
        match=r"Dimensions must be equal, but are 2 and 3 for 'MatrixInverse' \(op: "
        r"'MatrixInverse'\) with input shapes: \[2,3\]",
    ):
        tf.matrix_inverse(tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
        tf.matrix_determinant(tf.zeros([4]))
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.matrix_inverse(np.ones((2, 2), np.int32))
    with pytest.raises(TypeError, match="DataType int64 not in list of allowed values"):
        tf.cholesky(np.eye(2, dtype=np.int64))
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 1 and 0"):
        tf.matrix_solve(tf.zeros([3, 2, 2]), tf.zeros([2, 1]))
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
        tf.matrix_solve(tf.zeros([3, 2, 2]), tf.zeros([4, 2, 1]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.matrix_solve(tf.zeros([2, 2]), tf.zeros([3, 1]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.matrix_triangular_solve(tf.zeros([2, 2, 2]), tf.zeros([3, 2, 1]))


def test_singular_matrices_fail_the_run_with_tf_errors():
    check_singular_matrices_fail("/cpu:0")


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_singular_matrices_fail_a_gpu_run_alike(cuda_device):
    check_singular_matrices_fail("/gpu:0")


def check_singular_matrices_fail(device: str) -> None:
    with tf.device(device):
        a = tf.placeholder(tf.float32, [None, 2, 2])
        inverse = tf.matrix_inverse(a, name="inv")
        solved = tf.matrix_solve(a, tf.ones([2, 2, 1]), name="solve")
        eigvals = tf.self_adjoint_eigvals(a, name="eig")
    good = np.array([[[2, 1], [1, 2]], [[1, 0], [0, 4]]], np.float32)
    bad = good.copy()
    bad[1] = [[1, 2], [2, 4]]  # exactly singular: LU meets a zero pivot
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible.") as e:
            sess.run(inverse, {a: bad})
        assert e.value.op is not None and e.value.op.name == "inv"
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input matrix is not invertible."):
            sess.run(solved, {a: bad})
        nan = good.copy()
        nan[0, 1, 0] = np.nan
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match="Self-adjoint eigen decomposition was not successful. The input might not be "
            "valid.",
        ):
            sess.run(eigvals, {a: nan})
        # the program still runs after a failure
        np.testing.assert_allclose(sess.run(inverse, {a: good}), np.linalg.inv(good), rtol=1e-6)


def test_the_interpreter_raises_the_same_errors():
    from tfc.reference.interp import Interpreter

    a = tf.placeholder(tf.float64, [2, 2])
    bad = np.array([[1.0, 2.0], [2.0, 4.0]])
    run = Interpreter(tf.get_default_graph()).run
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        run(tf.matrix_inverse(a), {a: bad})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input matrix is not invertible."):
        run(tf.matrix_solve(a, np.ones((2, 1))), {a: bad})
