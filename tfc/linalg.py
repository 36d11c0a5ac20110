"""`tf.linalg`: TF1's linear algebra namespace, over tfc's matrix ops (tfc/ops/linalg*.py).

Most names are TF's second names for top-level ops (`tf.linalg.inv` is `tf.matrix_inverse`,
`tf.linalg.l2_normalize` is `tf.nn.l2_normalize`);
`adjoint`, `logdet`, `matvec`, `pinv` and `matrix_rank` are small composites, as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_shape import expand_dims, squeeze
from tfc.ops.constant import convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.linalg_decomp import matrix_solve_ls, qr, self_adjoint_eig, self_adjoint_eigvals, svd
from tfc.ops.linalg_solve import (
    cholesky,
    cholesky_solve,
    log_matrix_determinant,
    matrix_determinant,
    matrix_inverse,
    matrix_solve,
    matrix_triangular_solve,
)
from tfc.ops.linalg_structure import (
    cross,
    eye,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
    trace,
)
from tfc.ops.linalg_structure import diag as tensor_diag
from tfc.ops.linalg_structure import diag_part as tensor_diag_part
from tfc.ops.logic import where
from tfc.ops.math import cast, log, reciprocal
from tfc.ops.normalization import l2_normalize
from tfc.ops.reduce import reduce_max, reduce_sum

__all__ = [
    "adjoint",
    "band_part",
    "cholesky",
    "cholesky_solve",
    "cross",
    "det",
    "diag",
    "diag_part",
    "eigh",
    "eigvalsh",
    "eye",
    "inv",
    "l2_normalize",
    "logdet",
    "lstsq",
    "matmul",
    "matrix_rank",
    "matrix_transpose",
    "matvec",
    "pinv",
    "qr",
    "set_diag",
    "slogdet",
    "solve",
    "svd",
    "tensor_diag",
    "tensor_diag_part",
    "trace",
    "transpose",
    "triangular_solve",
]

band_part = matrix_band_part
det = matrix_determinant
diag = matrix_diag  # tf.linalg.diag is the batched matrix_diag; tf.diag is tensor_diag
diag_part = matrix_diag_part
eigh = self_adjoint_eig
eigvalsh = self_adjoint_eigvals
inv = matrix_inverse
lstsq = matrix_solve_ls
set_diag = matrix_set_diag
slogdet = log_matrix_determinant
solve = matrix_solve
transpose = matrix_transpose
triangular_solve = matrix_triangular_solve


def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """`tf.linalg.adjoint`: the conjugate transpose of the innermost matrices (the transpose,
    for real types)."""
    with name_scope(name, "adjoint", [matrix]) as scope:
        return matrix_transpose(matrix, name=scope, conjugate=True)


def logdet(matrix: Any, name: str | None = None) -> Tensor:
    """`tf.linalg.logdet`: log(det(matrix)) of Hermitian positive definite matrices, as twice
    the sum of the logs of the Cholesky factor's diagonal (no overflow)."""
    with name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        return 2.0 * reduce_sum(log(matrix_diag_part(chol)), axis=[-1])


def matvec(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    adjoint_a: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Tensor:
    """`tf.linalg.matvec`: a b for matrices a [..., M, N] and vectors b [..., N]."""
    with name_scope(name, "MatVec", [a, b]):
        column = expand_dims(convert_to_tensor(b, name="b"), -1)
        product = matmul(
            a, column, transpose_a=transpose_a, adjoint_a=adjoint_a, a_is_sparse=a_is_sparse,
            b_is_sparse=b_is_sparse,
        )  # fmt: skip
        return squeeze(product, axis=-1)


def _singular_cutoff(s: Tensor, scale: Any) -> Tensor:
    """`scale` times the largest singular value of each matrix, kept as a trailing dim."""
    return reduce_max(s, axis=-1, keepdims=True) * scale


def _default_rtol(a: Tensor) -> float:
    m, n = a._shape_tuple[-2:]
    return float(np.finfo(a.dtype.as_numpy_dtype).eps) * max(m, n)


def _static_matrix(a: Tensor, what: str) -> None:
    shape = a._shape_tuple
    if shape is None or len(shape) < 2 or shape[-2] is None or shape[-1] is None:
        raise ValueError(
            f"{what} needs the last two dimensions of {a.name} when the graph is built"
        )


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: str | None = None) -> Tensor:
    """`tf.linalg.pinv`: the Moore-Penrose pseudo-inverse through the SVD; singular values at
    most rcond * s_max (default 10 max(M, N) eps, TF's) count as zero."""
    with name_scope(name, "pinv", [a, rcond]):
        a = convert_to_tensor(a, name="a")
        _static_matrix(a, "pinv")
        rcond = 10.0 * _default_rtol(a) if rcond is None else rcond
        s, u, v = svd(a, full_matrices=False)
        kept = s > _singular_cutoff(s, rcond)
        inv_s = where(kept, reciprocal(where(kept, s, s * 0.0 + 1.0)), s * 0.0)
        return matmul(v * expand_dims(inv_s, -2), u, adjoint_b=True)


def matrix_rank(
    a: Any, tol: Any = None, validate_args: bool = False, name: str | None = None
) -> Tensor:
    """`tf.linalg.matrix_rank`: the number of singular values above `tol` (default max(M, N)
    eps s_max), as int32."""
    with name_scope(name, "matrix_rank", [a, tol]):
        a = convert_to_tensor(a, name="a")
        _static_matrix(a, "matrix_rank")
        s = svd(a, compute_uv=False)
        cutoff = _singular_cutoff(s, _default_rtol(a)) if tol is None else tol
        return reduce_sum(cast(s > cutoff, _dt.int32), axis=-1)
