"""Orthogonal decompositions of batches of matrices, and least squares built on them.

    Qr                  Householder reflections (LAPACK's signs, so q and r equal NumPy's)
    SelfAdjointEigV2    the cyclic Jacobi method on the lower triangle; eigenvalues ascending
    Svd                 the one-sided Jacobi method; singular values descending
    matrix_solve_ls     a composite: Cholesky on the normal equations (fast), or the SVD's
                        minimum-norm solution

The routines are runtime/include/tfc_linalg.h's (its comment gives their accuracy), one call
per matrix (MatrixSpec). Eigenvectors and singular vectors have the algorithm's own signs, as
LAPACK's and Eigen's do: compare them through products that do not depend on the signs.
Gradients are TensorFlow's formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_index import slice_helper
from tfc.ops.array_join import concat
from tfc.ops.array_shape import expand_dims
from tfc.ops.constant import convert_to_tensor
from tfc.ops.kernels import matrix_kernel
from tfc.ops.linalg import matmul
from tfc.ops.linalg_solve import (
    FLOATS,
    cholesky,
    cholesky_solve,
    matrix_param,
    matrix_triangular_solve,
    square_shape,
)
from tfc.ops.linalg_structure import (
    eye,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
)
from tfc.ops.linalg_structure import matrix_transpose as _transpose
from tfc.ops.logic import where
from tfc.ops.math import reciprocal, square
from tfc.ops.reduce import reduce_max
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register

__all__ = ["qr", "self_adjoint_eig", "self_adjoint_eigvals", "svd", "matrix_solve_ls"]

EIGH_FAILED = "Self-adjoint eigen decomposition was not successful. The input might not be valid."


def _matrix_shape(ctx: OpContext) -> tuple | None:
    check_dtype(ctx, 0, FLOATS, "input")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) < 2:
        raise ctx.error(f"Shape must be at least rank 2 but is rank {len(shape)}")
    return shape


def _least(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else min(a, b)


def _safe_reciprocal(x: Tensor, epsilon: float = 1e-20) -> Tensor:
    """x / (x^2 + eps): 1/x away from 0, 0 at 0 (TF's _SafeReciprocal)."""
    return x * reciprocal(x * x + epsilon)


# -- Qr ------------------------------------------------------------------------------------------
def _full(ctx: OpContext) -> bool:
    return bool(ctx.attrs.get("full_matrices", False))


def _qr_infer(ctx: OpContext) -> list:
    shape = _matrix_shape(ctx)
    dtype = ctx.in_dtypes[0]
    if shape is None:
        return [(dtype, None), (dtype, None)]
    *batch, m, n = shape
    k = m if _full(ctx) else _least(m, n)
    return [(dtype, (*batch, m, k)), (dtype, (*batch, k, n))]


def _qr_reference(ctx: OpContext, a: np.ndarray) -> list:
    q, r = np.linalg.qr(a, mode="complete" if _full(ctx) else "reduced")
    return [q.astype(a.dtype), r.astype(a.dtype)]


def qr_workspace(m: int, n: int) -> int:
    """Elements of tfc_linalg_qr's work: the reflectors, a row of the update, the taus."""
    return m * n + max(m, n) + min(m, n)


def _qr_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    (*batch, m, n), (q, r) = shape, ctx.out_shapes
    if q[-1] * m + r[-2] * n == 0:
        return []
    operands = [
        (matrix_param("x0", "in0", dtype), batch, m * n),
        (matrix_param("q", "out0", dtype), batch, m * q[-1]),
        (matrix_param("r", "out1", dtype), batch, r[-2] * n),
    ]
    sizes = (m, n, int(_full(ctx)))
    return matrix_kernel("qr", dtype, sizes, batch, operands, qr_workspace(m, n))


def _qr_grad(op, dq: Tensor, dr: Tensor) -> list:
    """TF's rule (Roberts and Roberts, arXiv:2009.10071) for m >= n, and for m < n through the
    square case on a's first m columns; not for full q of a tall matrix, as in TF."""
    q, r = op.outputs
    m, n = q.shape.as_tuple()[-2], r.shape.as_tuple()[-1]
    if m is None or n is None:
        raise NotImplementedError(
            f"QrGrad not implemented with dynamic shapes. Received r.shape: {r.shape}"
        )
    if r.shape.as_tuple()[-2] > n and q.shape.as_tuple()[-1] == m:
        raise NotImplementedError(
            "QrGrad not implemented when nrows > ncols and full_matrices is true. Received "
            f"r.shape={r.shape} with nrows={m}and ncols={n}."
        )
    if m >= n:
        return [_qr_grad_deep(q, r, dq, dr)]
    a = op.inputs[0]
    y = slice_helper(a, (Ellipsis, slice(None), slice(m, None)))
    u = slice_helper(r, (Ellipsis, slice(None), slice(None, m)))
    dv = slice_helper(dr, (Ellipsis, slice(None), slice(m, None)))
    du = slice_helper(dr, (Ellipsis, slice(None), slice(None, m)))
    dy = matmul(q, dv)
    dx = _qr_grad_deep(q, u, dq + matmul(y, dv, adjoint_b=True), du)
    return [concat([dx, dy], axis=-1)]


def _qr_grad_deep(q: Tensor, r: Tensor, dq: Tensor, dr: Tensor) -> Tensor:
    def solve_r(x: Tensor) -> Tensor:  # x inv(r)^T, r upper triangular (TF's _TriangularSolve)
        return _transpose(matrix_triangular_solve(r, _transpose(x), lower=False, adjoint=False))

    qdq = matmul(q, dq, adjoint_a=True)
    qdq_ = qdq - _transpose(qdq)
    rdr = matmul(r, dr, adjoint_b=True)
    rdr_ = rdr - _transpose(rdr)
    tril = matrix_band_part(qdq_ + rdr_, -1, 0)
    grad_a = matmul(q, dr + solve_r(tril))
    grad_b = solve_r(dq - matmul(q, qdq))
    return grad_a + grad_b


register(
    OpDef(
        "Qr",
        infer=_qr_infer,
        reference=_qr_reference,
        lower=_qr_lower,
        grad=_qr_grad,
        scratch=lambda ctx: _count(ctx) * qr_workspace(*ctx.in_shapes[0][-2:]) * _size(ctx),
        flops=lambda ctx: _count(ctx) * 4 * _mn(ctx)[0] * _mn(ctx)[1] ** 2,
        input_names=("input",),
    )
)


def _count(ctx: OpContext) -> int:
    return int(np.prod(ctx.in_shapes[0][:-2], dtype=np.int64))


def _size(ctx: OpContext) -> int:
    return ctx.in_dtypes[0].size


def _mn(ctx: OpContext) -> tuple[int, int]:
    m, n = ctx.in_shapes[0][-2:]
    return max(m, n), min(m, n)


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """`tf.qr` (`tf.linalg.qr`): q with orthonormal columns and upper triangular r, q r =
    input, for each innermost [M, N] matrix: q [M, min(M, N)] and r [min(M, N), N], or q
    [M, M] and r [M, N] with `full_matrices`. Householder reflections with LAPACK's signs."""
    x = convert_to_tensor(input, name="input")
    attrs = {"full_matrices": bool(full_matrices)}
    op = apply_op("Qr", [x], attrs, name=name or "Qr")
    return op.outputs[0], op.outputs[1]


# -- SelfAdjointEigV2 ----------------------------------------------------------------------------
def _compute_v(ctx: OpContext) -> bool:
    return bool(ctx.attrs.get("compute_v", True))


def _eig_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, FLOATS, "input")
    shape = square_shape(ctx)
    dtype = ctx.in_dtypes[0]
    if shape is None:
        return [(dtype, None), (dtype, None if _compute_v(ctx) else (0,))]
    n = shape[-1] if shape[-1] is not None else shape[-2]
    return [(dtype, (*shape[:-2], n)), (dtype, (*shape[:-2], n, n) if _compute_v(ctx) else (0,))]


def _eig_reference(ctx: OpContext, a: np.ndarray) -> list:
    if not np.isfinite(np.tril(a)).all():
        raise errors.InvalidArgumentError(None, None, EIGH_FAILED)
    e, v = np.linalg.eigh(a, UPLO="L")
    v = v if _compute_v(ctx) else np.zeros((0,), a.dtype)
    return [e.astype(a.dtype), v.astype(a.dtype)]


def _eig_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    n, batch = shape[-1], shape[:-2]
    if n == 0:
        return []
    operands = [
        (matrix_param("x0", "in0", dtype), batch, n * n),
        (matrix_param("e", "out0", dtype), batch, n),
    ]
    if not _compute_v(ctx):  # v is an empty output: a routine without it
        return matrix_kernel("eigvalsh", dtype, (n,), batch, operands, 2 * n * n, EIGH_FAILED)
    operands.append((matrix_param("v", "out1", dtype), batch, n * n))
    return matrix_kernel("eigh", dtype, (n, 1), batch, operands, 2 * n * n, EIGH_FAILED)


def _eig_grad(op, de: Tensor, dv: Tensor) -> list:
    """TF's rule: dA = v (diag(de) + f * (v^T dv)) v^T with f_ij = 1 / (e_j - e_i) off the
    diagonal, then its lower triangle (the op reads only that) of the symmetrized matrix."""
    e = op.outputs[0]
    if op.get_attr("compute_v"):
        v = op.outputs[1]
        f = matrix_set_diag(_safe_reciprocal(expand_dims(e, -2) - expand_dims(e, -1)), e * 0.0)
        inner = matrix_diag(de) + f * matmul(v, dv, adjoint_a=True)
        grad = matmul(v, matmul(inner, v, adjoint_b=True))
    else:
        _, v = self_adjoint_eig(op.inputs[0])
        grad = matmul(v, matmul(matrix_diag(de), v, adjoint_b=True))
    grad = matrix_band_part(grad + _transpose(grad), -1, 0)
    return [matrix_set_diag(grad, 0.5 * matrix_diag_part(grad))]


register(
    OpDef(
        "SelfAdjointEigV2",
        infer=_eig_infer,
        reference=_eig_reference,
        lower=_eig_lower,
        grad=_eig_grad,
        scratch=lambda ctx: _count(ctx) * 2 * ctx.in_shapes[0][-1] ** 2 * _size(ctx),
        # about 8 sweeps of n^2 / 2 rotations, each updating 2 rows and 2 columns (and v's rows)
        flops=lambda ctx: _count(ctx) * 8 * 6 * ctx.in_shapes[0][-1] ** 3,
        input_names=("input",),
    )
)


def self_adjoint_eig(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.self_adjoint_eig` (`tf.linalg.eigh`): (e, v), the eigenvalues (ascending) and the
    eigenvectors (columns of v) of each innermost symmetric matrix, of which only the lower
    triangle is read. NaN or Inf in it fails the run, as in TensorFlow."""
    x = convert_to_tensor(tensor, name="tensor")
    op = apply_op("SelfAdjointEigV2", [x], {"compute_v": True}, name=name or "SelfAdjointEigV2")
    return op.outputs[0], op.outputs[1]


def self_adjoint_eigvals(tensor: Any, name: str | None = None) -> Tensor:
    """`tf.self_adjoint_eigvals` (`tf.linalg.eigvalsh`): the eigenvalues, ascending."""
    x = convert_to_tensor(tensor, name="tensor")
    attrs = {"compute_v": False}
    return apply_op("SelfAdjointEigV2", [x], attrs, name=name or "SelfAdjointEigV2").outputs[0]


# -- Svd -------------------------------------------------------------------------------------------
def _compute_uv(ctx: OpContext) -> bool:
    return bool(ctx.attrs.get("compute_uv", True))


def _svd_infer(ctx: OpContext) -> list:
    shape = _matrix_shape(ctx)
    dtype = ctx.in_dtypes[0]
    uv = _compute_uv(ctx)
    if shape is None:
        return [(dtype, None)] + [(dtype, None if uv else (0,))] * 2
    *batch, m, n = shape
    p = _least(m, n)
    if not uv:
        return [(dtype, (*batch, p)), (dtype, (0,)), (dtype, (0,))]
    ucols, vcols = (m, n) if _full(ctx) else (p, p)
    return [(dtype, (*batch, p)), (dtype, (*batch, m, ucols)), (dtype, (*batch, n, vcols))]


def _svd_reference(ctx: OpContext, a: np.ndarray) -> list:
    """NumPy's SVD; a matrix holding NaN or Inf gets NaN outputs (the C routine's answer)."""
    uv, full = _compute_uv(ctx), _full(ctx)
    *batch, m, n = a.shape
    p = min(m, n)
    s = np.full((*batch, p), np.nan, a.dtype)
    u = np.full((*batch, m, m if full else p), np.nan, a.dtype)
    v = np.full((*batch, n, n if full else p), np.nan, a.dtype)
    for idx in np.ndindex(*batch):
        if not np.isfinite(a[idx]).all():
            continue
        if uv:
            u[idx], s[idx], vh = np.linalg.svd(a[idx], full_matrices=full)
            v[idx] = np.swapaxes(vh, -1, -2)
        else:
            s[idx] = np.linalg.svd(a[idx], compute_uv=False)
    if not uv:
        return [s, np.zeros((0,), a.dtype), np.zeros((0,), a.dtype)]
    return [s, u, v]


def svd_workspace(m: int, n: int, full: bool) -> int:
    """Elements of tfc_linalg_svd's work (see its comment)."""
    long, p = max(m, n), min(m, n)
    rows = long if full else p
    return rows * long + p * p + rows


def _svd_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    (*batch, m, n), (s, u, v) = shape, ctx.out_shapes
    uv, full = _compute_uv(ctx), _full(ctx)
    work = svd_workspace(m, n, full)
    operands = [
        (matrix_param("x0", "in0", dtype), batch, m * n),
        (matrix_param("s", "out0", dtype), batch, s[-1]),
    ]
    if not uv:  # u and v are empty outputs: a routine without them
        return matrix_kernel("svdvals", dtype, (m, n), batch, operands, work) if s[-1] else []
    operands += [
        (matrix_param("u", "out1", dtype), batch, m * u[-1]),
        (matrix_param("v", "out2", dtype), batch, n * v[-1]),
    ]
    if m * u[-1] + n * v[-1] == 0:
        return []
    return matrix_kernel("svd", dtype, (m, n, 1, int(full)), batch, operands, work)


def _svd_grad(op, ds: Tensor, du: Tensor, dv: Tensor) -> list:
    """TF's rule (Giles 2008; Townsend 2016 for full_matrices=False): a's gradient from the
    singular values' and vectors', for m <= n (a tall matrix goes through its transpose)."""
    a = op.inputs[0]
    ds_mat = matrix_diag(ds)
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, compute_uv=True)
        return [matmul(u, matmul(ds_mat, v, adjoint_b=True))]
    m, n = a.shape.as_tuple()[-2:]
    if m is None or n is None:
        raise NotImplementedError(
            "SVD gradient has not been implemented for input with unknown inner matrix shape."
        )
    full = bool(op.get_attr("full_matrices"))
    s, u, v = op.outputs
    use_adjoint = m > n
    if use_adjoint:
        m, n, u, v, du, dv = n, m, v, u, dv, du
    if full and abs(m - n) > 1:
        raise NotImplementedError(
            "svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True. "
            f"Received: m={m} and n={n} from op input={a.name}."
        )
    s_mat = matrix_diag(s)
    s2 = square(s)
    f = matrix_set_diag(_safe_reciprocal(expand_dims(s2, -2) - expand_dims(s2, -1)), s * 0.0)
    s_inv_mat = matrix_diag(_safe_reciprocal(s))
    v1 = slice_helper(v, (Ellipsis, slice(None), slice(None, m)))
    dv1 = slice_helper(dv, (Ellipsis, slice(None), slice(None, m)))
    f_u = f * matmul(u, du, adjoint_a=True)
    f_v = f * matmul(v1, dv1, adjoint_a=True)
    term1_nouv = (
        ds_mat + matmul(f_u + _transpose(f_u), s_mat) + matmul(s_mat, f_v + _transpose(f_v))
    )
    grad = matmul(u, matmul(term1_nouv, v1, adjoint_b=True))
    if m != n:
        dv1t = _transpose(dv1)
        term2_nous = dv1t - matmul(matmul(dv1t, v1), v1, adjoint_b=True)
        if full:
            v2 = slice_helper(v, (Ellipsis, slice(None), slice(m, n)))
            dv2 = slice_helper(dv, (Ellipsis, slice(None), slice(m, n)))
            term2_nous -= matmul(matmul(v1, dv2, adjoint_a=True), v2, adjoint_b=True)
        grad = grad + matmul(matmul(u, s_inv_mat), term2_nous)
    return [_transpose(grad) if use_adjoint else grad]


register(
    OpDef(
        "Svd",
        infer=_svd_infer,
        reference=_svd_reference,
        lower=_svd_lower,
        grad=_svd_grad,
        scratch=lambda ctx: (
            _count(ctx) * svd_workspace(*ctx.in_shapes[0][-2:], _full(ctx)) * _size(ctx)
        ),
        # about 8 sweeps of p^2 / 2 column pairs, each 3 dot products and a rotation of length L
        flops=lambda ctx: _count(ctx) * 8 * 5 * _mn(ctx)[0] * _mn(ctx)[1] ** 2,
        input_names=("input",),
    )
)


def svd(
    tensor: Any,
    full_matrices: bool = False,
    compute_uv: bool = True,
    name: str | None = None,
) -> Any:
    """`tf.svd` (`tf.linalg.svd`): (s, u, v) with tensor = u diag(s) v^T for each innermost
    [M, N] matrix, s descending; only s when `compute_uv` is False. u is [M, P] and v [N, P]
    (P = min(M, N)), or [M, M] and [N, N] with `full_matrices`."""
    x = convert_to_tensor(tensor, name="tensor")
    attrs = {"compute_uv": bool(compute_uv), "full_matrices": bool(full_matrices)}
    op = apply_op("Svd", [x], attrs, name=name or "Svd")
    if not compute_uv:
        return op.outputs[0]
    return op.outputs[0], op.outputs[1], op.outputs[2]


# -- least squares -------------------------------------------------------------------------------
def matrix_solve_ls(
    matrix: Any,
    rhs: Any,
    l2_regularizer: Any = 0.0,
    fast: bool = True,
    name: str | None = None,
) -> Tensor:
    """`tf.matrix_solve_ls` (`tf.linalg.lstsq`): the least-squares solutions x of matrix x = rhs
    for each innermost [M, N] matrix and its [M, K] right-hand sides.

    fast=True (TF's default) solves the regularized normal equations by Cholesky, as
    TensorFlow composes it: (A^T A + l2 I) x = A^T rhs when M >= N, else x = A^T (A A^T + l2
    I)^-1 rhs; it needs A of full rank unless l2 > 0. fast=False returns the minimum-norm
    solution through the SVD (singular values below max(M, N) eps s_max count as zero), where
    TensorFlow uses a complete orthogonal decomposition; both ignore `l2_regularizer` there.
    """
    with name_scope(name, "matrix_solve_ls", [matrix, rhs, l2_regularizer]):
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype, name="rhs")
        shape = a._shape_tuple
        if shape is None or len(shape) < 2 or shape[-2] is None or shape[-1] is None:
            raise ValueError(
                f"matrix_solve_ls needs the matrix's last two dimensions when the graph is "
                f"built (tfc picks the algorithm then); {a.name} has shape {a.shape}"
            )
        m, n = shape[-2], shape[-1]
        if not fast:
            s, u, v = svd(a, full_matrices=False)
            eps = float(np.finfo(a.dtype.as_numpy_dtype).eps)
            cutoff = reduce_max(s, axis=-1, keepdims=True) * (eps * max(m, n))
            kept = s > cutoff
            inv_s = where(kept, reciprocal(where(kept, s, s * 0.0 + 1.0)), s * 0.0)
            return matmul(v, expand_dims(inv_s, -1) * matmul(u, b, adjoint_a=True))
        l2 = convert_to_tensor(l2_regularizer, dtype=a.dtype, name="l2_regularizer")
        if m >= n:
            gram = matmul(a, a, adjoint_a=True) + l2 * eye(n, dtype=a.dtype)
            return cholesky_solve(cholesky(gram), matmul(a, b, adjoint_a=True))
        gram = matmul(a, a, adjoint_b=True) + l2 * eye(m, dtype=a.dtype)
        return matmul(a, cholesky_solve(cholesky(gram), b), adjoint_a=True)
