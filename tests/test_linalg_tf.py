"""tfc's linear algebra against TensorFlow's own tf.compat.v1 in graph mode: the same program
built with both, values and gradients compared (skipped where tensorflow is not installed)."""

import numpy as np
import pytest

import tfc

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

RNG = np.random.default_rng(99)


def run_both(build, feeds: list[np.ndarray]) -> tuple[list, list]:
    """build(lib, placeholders) -> tensors, in TensorFlow and in tfc, run on `feeds`."""
    results = []
    for lib, session in ((tf1, tf1.Session), (tfc, tfc.Session)):
        graph = lib.Graph()
        with graph.as_default():
            phs = [lib.placeholder(lib.as_dtype(f.dtype), f.shape) for f in feeds]
            tensors = build(lib, phs)
            with session(graph=graph) as sess:
                results.append(sess.run(tensors, dict(zip(phs, feeds))))
    return results[0], results[1]


def orthogonal(n: int, batch: tuple = ()) -> np.ndarray:
    q, _ = np.linalg.qr(RNG.standard_normal((*batch, n, n)))
    return q


def matrices(batch: tuple, n: int) -> np.ndarray:
    s = RNG.uniform(0.5, 2.0, (*batch, n, 1))
    return orthogonal(n, batch) @ (s * orthogonal(n, batch))


def symmetric(batch: tuple, n: int) -> np.ndarray:
    q = orthogonal(n, batch)
    e = np.arange(n) - n / 2 + RNG.uniform(-0.2, 0.2, (*batch, n))
    return q @ (e[..., :, None] * np.swapaxes(q, -1, -2))


def close(want, got, rtol: float, atol: float) -> None:
    assert len(want) == len(got)
    for k, (w, g) in enumerate(zip(want, got)):
        w, g = np.asarray(w), np.asarray(g)
        assert w.shape == g.shape and w.dtype == g.dtype, (k, w.shape, g.shape, w.dtype, g.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{k}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_factorizations_and_solves_match_tensorflow(dtype):
    a = matrices((3,), 4).astype(dtype)
    b = RNG.standard_normal((3, 4, 2)).astype(dtype)
    pd = (a @ np.swapaxes(a, -1, -2) + np.eye(4)).astype(dtype)
    pd[1] = [[4, 2, 1, 0], [2, -3, 0, 0], [1, 0, 5, 0], [0, 0, 0, 1]]  # not positive definite

    def build(lib, ph):
        x, r, p = ph
        chol = lib.cholesky(p)
        return [
            lib.matrix_inverse(x),
            lib.matrix_inverse(x, adjoint=True),
            lib.matrix_determinant(x),
            *lib.linalg.slogdet(x),
            lib.linalg.band_part(chol, -1, 0),  # TF leaves the upper part of a failure unset
            lib.matrix_solve(x, r),
            lib.matrix_solve(x, r, adjoint=True),
            lib.matrix_triangular_solve(x, r[0], lower=False, adjoint=True),
            lib.cholesky_solve(lib.cholesky(x @ lib.linalg.adjoint(x)), r),
            lib.matrix_solve_ls(x[:, :, :3], r),
            lib.matrix_solve_ls(x[:, :3, :], r[:, :3], l2_regularizer=0.5),
            lib.matrix_solve_ls(x[:, :, :3], r, fast=False),
            lib.linalg.logdet(x @ lib.linalg.adjoint(x)),
            lib.linalg.pinv(x[:, :, :3]),
            lib.linalg.matrix_rank(x),
        ]

    want, got = run_both(build, [a, b, pd])
    close(
        want,
        got,
        rtol=2e-4 if dtype == "float32" else 1e-10,
        atol=2e-5 if dtype == "float32" else 1e-12,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_decompositions_match_tensorflow_up_to_signs(dtype):
    a = RNG.standard_normal((2, 5, 3)).astype(dtype)
    s = symmetric((2,), 4).astype(dtype)

    def build(lib, ph):
        x, y = ph
        q, r = lib.qr(x)
        qf, rf = lib.qr(lib.linalg.adjoint(x), full_matrices=True)
        sv, u, v = lib.svd(x)
        e, w = lib.self_adjoint_eig(y)
        return [
            lib.abs(q), lib.abs(r), lib.matmul(q, r), lib.matmul(qf, rf), lib.abs(rf),
            sv, lib.abs(u), lib.abs(v), lib.svd(x, compute_uv=False),
            e, lib.abs(w), lib.self_adjoint_eigvals(y),
        ]  # fmt: skip

    want, got = run_both(build, [a, s])
    close(
        want,
        got,
        rtol=1e-4 if dtype == "float32" else 1e-9,
        atol=1e-5 if dtype == "float32" else 1e-11,
    )


def test_structure_ops_match_tensorflow():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    d = RNG.standard_normal((2, 3)).astype(np.float32)
    v = RNG.standard_normal((5, 3)).astype(np.float32)

    def build(lib, ph):
        a, diag, vec = ph
        return [
            lib.matrix_band_part(a, 1, 0), lib.matrix_band_part(a, 0, -1),
            lib.matrix_diag(diag), lib.matrix_diag(diag, k=-1, num_cols=5, padding_value=9.0),
            lib.matrix_diag_part(a), lib.matrix_diag_part(a, k=1),
            lib.matrix_set_diag(a, diag), lib.matrix_set_diag(a, diag[:, :2], k=2),
            lib.diag(diag), lib.diag_part(lib.diag(diag)), lib.trace(a),
            lib.eye(3, 4, batch_shape=[2]), lib.cross(vec, vec[::-1]),
            lib.matrix_transpose(a), lib.linalg.matvec(a, lib.ones([2, 4])),
        ]  # fmt: skip

    want, got = run_both(build, [x, d, v])
    close(want, got, rtol=1e-6, atol=1e-6)


def test_gradients_match_tensorflow():
    a = matrices((2,), 3)
    s = symmetric((2,), 3)
    r = RNG.standard_normal((2, 3, 2))
    w = RNG.standard_normal((2, 3, 3))

    def build(lib, ph):
        x, y, b = ph
        e, vecs = lib.self_adjoint_eig(y)
        sv, u, v = lib.svd(x)
        q, rr = lib.qr(x)
        chol = lib.cholesky(lib.matmul(x, x, transpose_b=True) + lib.eye(3, dtype=lib.float64))
        losses = [
            lib.reduce_sum(lib.matrix_inverse(x) * w),
            lib.reduce_sum(lib.matrix_determinant(x)),
            lib.reduce_sum(lib.linalg.slogdet(x)[1]),
            lib.reduce_sum(chol * w),
            lib.reduce_sum(lib.matrix_solve(x, b) * b),
            lib.reduce_sum(lib.matrix_triangular_solve(x, b, adjoint=True) * b),
            lib.reduce_sum(e * e[..., ::-1]) + lib.reduce_sum(vecs * vecs * w),
            lib.reduce_sum(sv * sv[..., ::-1]) + lib.reduce_sum((u * u + v * v) * w),
            lib.reduce_sum(q * w) + lib.reduce_sum(rr * w),
            lib.reduce_sum(lib.matrix_band_part(x, 0, 1) * w),
            lib.reduce_sum(lib.trace(lib.matrix_diag(b[..., 0]) * x)),
        ]  # fmt: skip
        return [g for loss in losses for g in lib.gradients(loss, [x, y, b]) if g is not None]

    want, got = run_both(build, [a, s, r])
    close(want, got, rtol=1e-8, atol=1e-10)


def test_singular_matrix_messages_match_tensorflow():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for make in (
        lambda lib, x: lib.matrix_inverse(x),
        lambda lib, x: lib.matrix_solve(x, np.ones((2, 1))),
    ):
        messages = []
        for lib in (tf1, tfc):
            with lib.Graph().as_default():
                x = lib.placeholder(lib.float64, [2, 2])
                with lib.Session() as sess:
                    with pytest.raises(lib.errors.InvalidArgumentError) as info:
                        sess.run(make(lib, x), {x: singular})
                messages.append(info.value.message)
        assert messages[1].splitlines()[0] in messages[0]
