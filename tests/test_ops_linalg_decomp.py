"""Orthogonal decompositions (Qr, SelfAdjointEigV2, Svd), least squares and the tf.linalg
composites over them: compiled C vs the NumPy reference vs float64 NumPy.

q and r follow LAPACK's signs, so they are compared as they are. Eigenvectors and singular
vectors have the algorithm's own signs (NumPy's LAPACK and tfc's Jacobi may differ), so the
cases compare what does not depend on them: |v| for well-separated eigen/singular values, the
reconstruction v diag(e) v^T, and v^T v = I.
"""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(4242)
FLOATS = ["float32", "float64"]
RECTANGLES = [(1, 1), (3, 3), (5, 3), (3, 5), (2, 4, 2), (2, 2, 6), (17, 9), (2, 1, 6, 6)]


def orthonormal(rows: int, cols: int, batch: tuple = ()) -> np.ndarray:
    q, r = np.linalg.qr(RNG.standard_normal((*batch, rows, cols)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def separated(count: int, batch: tuple, lo: float, hi: float) -> np.ndarray:
    """Values spread over [lo, hi] at least (hi - lo) / (2 count) apart, in random order."""
    grid = np.linspace(lo, hi, count) if count > 1 else np.array([hi])
    jitter = RNG.uniform(-0.2, 0.2, (*batch, count)) * (hi - lo) / max(count, 1)
    return RNG.permuted(np.broadcast_to(grid, (*batch, count)) + jitter, axis=-1)


def rectangle(shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """A random [..., m, n] matrix with well-separated singular values in [0.5, 3] (and those,
    descending)."""
    *batch, m, n = shape
    p = min(m, n)
    s = -np.sort(-separated(p, tuple(batch), 0.5, 3.0), axis=-1)
    a = orthonormal(m, p, tuple(batch)) @ (
        s[..., None] * np.swapaxes(orthonormal(n, p, tuple(batch)), -1, -2)
    )
    return a, s


def symmetric(shape: tuple) -> np.ndarray:
    """A random symmetric matrix with well-separated eigenvalues in [-3, 3]."""
    *batch, n, _ = shape
    q = orthonormal(n, n, tuple(batch))
    e = separated(n, tuple(batch), -3.0, 3.0)
    return q @ (e[..., None] * np.swapaxes(q, -1, -2))


def tol(dtype: str, n: int, scale: float = 3.0, factor: float = 32) -> dict:
    eps = float(np.finfo(dtype).eps)
    return {"rtol": factor * n * eps, "atol": factor * n * eps * scale}


def source(batch: CaseBatch, x: np.ndarray, k: int) -> tf.Tensor:
    if k % 3 == 0:
        return tf.constant(x)
    if k % 3 == 1:
        return batch.feed(x)
    return batch.feed(x, [None] * x.ndim)


def eye_like(shape: tuple, dtype: str) -> np.ndarray:
    return np.broadcast_to(np.eye(shape[-1], dtype=dtype), shape).copy()


def build_decompositions() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        k = 0
        for dtype in FLOATS:
            for shape in RECTANGLES:
                *batch, m, n = shape
                p = min(m, n)
                a, s = rectangle(shape)
                x = a.astype(dtype)
                a = x.astype(np.float64)
                for full in (False, True):
                    k += 1
                    q, r = tf.qr(source(b, x, k), full_matrices=full)
                    assert q.op.type == "Qr"
                    wq, wr = np.linalg.qr(a, mode="complete" if full else "reduced")
                    cid = f"qr-{dtype}-{shape}-full{full:d}"
                    b.add(cid + "-q", q, wq.astype(dtype), **tol(dtype, m, 1.0))
                    b.add(cid + "-r", r, wr.astype(dtype), **tol(dtype, m))
                # singular values: as they are; singular vectors: |u|, |v|, u^T u and the product
                k += 1
                ws = np.linalg.svd(a, compute_uv=False)
                t = tf.svd(source(b, x, k), compute_uv=False)
                assert t.op.type == "Svd"
                b.add(f"svd-s-only-{dtype}-{shape}", t, ws.astype(dtype), **tol(dtype, m))
                wu, _, wvh = np.linalg.svd(a, full_matrices=False)
                wv = np.swapaxes(wvh, -1, -2)
                for full in (False, True):
                    k += 1
                    ts, tu, tv = tf.svd(source(b, x, k), full_matrices=full)
                    cid = f"svd-{dtype}-{shape}-full{full:d}"
                    b.add(cid + "-s", ts, ws.astype(dtype), **tol(dtype, m))
                    u1, v1 = tu[..., :, :p], tv[..., :, :p]
                    b.add(
                        cid + "-|u|", tf.abs(u1), np.abs(wu).astype(dtype), **tol(dtype, m, 1.0, 64)
                    )
                    b.add(
                        cid + "-|v|", tf.abs(v1), np.abs(wv).astype(dtype), **tol(dtype, m, 1.0, 64)
                    )
                    product = tf.matmul(u1 * tf.expand_dims(ts, -2), v1, adjoint_b=True)
                    b.add(cid + "-usv", product, x, **tol(dtype, m))
                    uu = tf.matmul(tu, tu, adjoint_a=True)
                    vv = tf.matmul(tv, tv, adjoint_a=True)
                    uc, vc = (m, n) if full else (p, p)
                    b.add(cid + "-utu", uu, eye_like((*batch, uc, uc), dtype), **tol(dtype, m, 1.0))
                    b.add(cid + "-vtv", vv, eye_like((*batch, vc, vc), dtype), **tol(dtype, m, 1.0))
        for dtype in FLOATS:
            for shape in [(1, 1), (3, 3), (2, 4, 4), (6, 6), (2, 1, 12, 12)]:
                n = shape[-1]
                k += 1
                sym = symmetric(shape).astype(dtype)
                junk = np.triu(RNG.uniform(-9, 9, shape), 1)
                x = (np.tril(sym) + junk).astype(dtype)  # only the lower triangle is read
                we, wv = np.linalg.eigh(sym.astype(np.float64))
                e, v = tf.self_adjoint_eig(source(b, x, k))
                assert e.op.type == "SelfAdjointEigV2"
                cid = f"eigh-{dtype}-{shape}"
                b.add(cid + "-e", e, we.astype(dtype), **tol(dtype, n))
                b.add(cid + "-|v|", tf.abs(v), np.abs(wv).astype(dtype), **tol(dtype, n, 1.0, 64))
                product = tf.matmul(v * tf.expand_dims(e, -2), v, adjoint_b=True)
                b.add(cid + "-vev", product, sym, **tol(dtype, n))
                vv = tf.matmul(v, v, adjoint_a=True)
                b.add(cid + "-vtv", vv, eye_like(shape, dtype), **tol(dtype, n, 1.0))
                t = tf.self_adjoint_eigvals(source(b, x, k + 1))
                b.add(f"eigvalsh-{dtype}-{shape}", t, we.astype(dtype), **tol(dtype, n))
            # repeated eigenvalues and a zero matrix: values exact-ish, vectors orthonormal
            x = np.array([[[2, 0, 0], [0, 2, 0], [0, 0, 2]], np.zeros((3, 3))], dtype)
            e, v = tf.self_adjoint_eig(b.feed(x))
            b.add(f"eigh-repeated-{dtype}-e", e, np.array([[2, 2, 2], [0, 0, 0]], dtype))
            b.add(f"eigh-repeated-{dtype}-v", v, eye_like((2, 3, 3), dtype))
            # rank-deficient: zero singular values, vectors completed to orthonormal bases
            x = np.outer([1.0, 2.0, 2.0, 0.0], [3.0, 0.0, 4.0]).astype(dtype)
            s, u, v = tf.svd(b.feed(x), full_matrices=True)
            b.add(f"svd-rank1-{dtype}-s", s, np.array([15, 0, 0], dtype), atol=1e-5)
            b.add(
                f"svd-rank1-{dtype}-utu",
                tf.matmul(u, u, adjoint_a=True),
                np.eye(4, dtype=dtype),
                atol=1e-5,
            )
            b.add(
                f"svd-rank1-{dtype}-vtv",
                tf.matmul(v, v, adjoint_a=True),
                np.eye(3, dtype=dtype),
                atol=1e-5,
            )
            product = tf.matmul(u[:, :3] * s, v, adjoint_b=True)
            b.add(f"svd-rank1-{dtype}-usv", product, x, atol=1e-5)
            x = np.zeros((4, 3), dtype)
            x[:, 0] = [1, 0, 0, 0]  # a zero column: no reflection, LAPACK's signs kept
            x[:, 2] = [0, -2, 1, 0]
            q, r = tf.qr(b.feed(x))
            wq, wr = np.linalg.qr(x.astype(np.float64))
            b.add(f"qr-zero-column-{dtype}-q", q, wq.astype(dtype), atol=1e-6)
            b.add(f"qr-zero-column-{dtype}-r", r, wr.astype(dtype), atol=1e-6)
            # least squares: the normal equations (fast) and the minimum-norm solution
            for m, n, l2 in [(6, 3, 0.0), (6, 3, 0.5), (3, 6, 0.0), (3, 6, 0.25), (4, 4, 0.0)]:
                k += 1
                a, _ = rectangle((2, m, n))
                rhs = RNG.standard_normal((2, m, 2))
                xa, xr = a.astype(dtype), rhs.astype(dtype)
                a, rhs = xa.astype(np.float64), xr.astype(np.float64)
                t = tf.matrix_solve_ls(
                    b.feed(xa, [None, m, n]), source(b, xr, k), l2_regularizer=l2
                )
                at = np.swapaxes(a, -1, -2)
                if m >= n:
                    want = np.linalg.solve(at @ a + l2 * np.eye(n), at @ rhs)
                else:
                    want = at @ np.linalg.solve(a @ at + l2 * np.eye(m), rhs)
                b.add(f"lstsq-{dtype}-{m}x{n}-l2{l2}", t, want.astype(dtype), **tol(dtype, 8, 4.0))
                t = tf.linalg.lstsq(tf.constant(xa), source(b, xr, k + 1), fast=False)
                want = np.linalg.pinv(a) @ rhs
                b.add(
                    f"lstsq-svd-{dtype}-{m}x{n}-l2{l2}", t, want.astype(dtype), **tol(dtype, 8, 4.0)
                )
            a = np.outer([1.0, 2.0, -1.0, 0.5], [2.0, -1.0, 1.0]).astype(dtype)  # rank 1
            rhs = RNG.standard_normal((4, 1)).astype(dtype)
            t = tf.matrix_solve_ls(b.feed(a), rhs, fast=False)
            want = np.linalg.lstsq(a.astype(np.float64), rhs.astype(np.float64), rcond=None)[0]
            b.add(f"lstsq-min-norm-{dtype}", t, want.astype(dtype), atol=1e-5)
            # tf.linalg composites
            x, _ = rectangle((2, 5, 3))
            x = x.astype(dtype)
            t = tf.linalg.pinv(b.feed(x))
            b.add(
                f"pinv-{dtype}",
                t,
                np.linalg.pinv(x.astype(np.float64)).astype(dtype),
                **tol(dtype, 8, 4.0),
            )
            ranks = np.stack([a, np.zeros_like(a), np.eye(4, 3, dtype=dtype)])
            t = tf.linalg.matrix_rank(b.feed(ranks))
            b.add(f"matrix_rank-{dtype}", t, np.array([1, 0, 3], np.int32))
            pd = symmetric((2, 4, 4)) + 4 * np.eye(4)
            t = tf.linalg.logdet(b.feed(pd.astype(dtype)))
            b.add(
                f"logdet-{dtype}", t, np.linalg.slogdet(pd)[1].astype(dtype), **tol(dtype, 4, 8.0)
            )
            vec = RNG.standard_normal((2, 3)).astype(dtype)
            t = tf.linalg.matvec(b.feed(x), vec)
            b.add(f"matvec-{dtype}", t, np.einsum("bij,bj->bi", x, vec), **tol(dtype, 3))
    return b


DECOMPOSITIONS = build_decompositions()


@pytest.mark.parametrize("case", DECOMPOSITIONS.ids())
def test_decompositions(case):
    DECOMPOSITIONS.check(case)


def test_partial_shapes_at_graph_build_time():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    assert [t.shape.as_tuple() for t in tf.qr(x)] == [(None, 5, 3), (None, 3, 3)]
    assert [t.shape.as_tuple() for t in tf.qr(x, full_matrices=True)] == [
        (None, 5, 5),
        (None, 5, 3),
    ]
    s, u, v = tf.svd(x)
    assert (s.shape.as_tuple(), u.shape.as_tuple(), v.shape.as_tuple()) == (
        (None, 3),
        (None, 5, 3),
        (None, 3, 3),
    )
    s, u, v = tf.svd(x, full_matrices=True)
    assert (u.shape.as_tuple(), v.shape.as_tuple()) == ((None, 5, 5), (None, 3, 3))
    assert tf.svd(x, compute_uv=False).shape.as_tuple() == (None, 3)
    e, v = tf.self_adjoint_eig(tf.placeholder(tf.float64, [2, None, 4]))
    assert (e.shape.as_tuple(), v.shape.as_tuple()) == ((2, 4), (2, 4, 4))
    assert tf.self_adjoint_eigvals(tf.placeholder(tf.float64, [None, None])).shape.as_tuple() == (
        None,
    )


def test_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.self_adjoint_eig(tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
        tf.svd(tf.zeros([3]))
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.qr(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="matrix_solve_ls needs the matrix's last two dimensions"):
        tf.matrix_solve_ls(tf.placeholder(tf.float32, [None, None]), tf.zeros([3, 1]))
