"""LU and Cholesky ops on batches of square matrices, and the solves built on them.

    MatrixInverse, MatrixDeterminant,       LU with partial pivoting (runtime/include/
    LogMatrixDeterminant, MatrixSolve       tfc_linalg.h); an exactly zero pivot is TF's
                                            "not invertible" run-time error
    Cholesky                                a = l l^T from a's lower triangle; NaN where a is
                                            not positive definite (TensorFlow 2's behaviour)
    MatrixTriangularSolve                   substitution; batch dims broadcast
    cholesky_solve                          a composite of two triangular solves

Each kernel calls one tfc_linalg.h routine per matrix (MatrixSpec): a loop on the CPU, a thread
per matrix on a GPU. Gradients are TensorFlow's formulas.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_common import merge_or_raise
from tfc.ops.array_shape import expand_dims
from tfc.ops.constant import convert_to_tensor
from tfc.ops.kernels import Param, c_literal, loop_kernel, matrix_kernel, view
from tfc.ops.linalg import matmul
from tfc.ops.linalg_structure import matrix_band_part, matrix_diag_part, matrix_set_diag
from tfc.ops.linalg_structure import matrix_transpose as _transpose
from tfc.ops.registry import (
    OpContext,
    OpDef,
    apply_op,
    broadcast_shape,
    check_dtype,
    check_same_dtypes,
    register,
)

__all__ = [
    "matrix_inverse",
    "matrix_determinant",
    "cholesky",
    "matrix_solve",
    "matrix_triangular_solve",
    "cholesky_solve",
]

FLOATS = (_dt.float32, _dt.float64)
NOT_INVERTIBLE = "Input is not invertible."  # MatrixInverse's message
SOLVE_NOT_INVERTIBLE = "Input matrix is not invertible."  # MatrixSolve's


# -- shared rules --------------------------------------------------------------------------------
def square_shape(ctx: OpContext, i: int = 0) -> tuple | None:
    """Input i's shape, [..., M, M] (None when its rank is unknown), with TF's errors."""
    shape = ctx.in_shapes[i]
    if shape is None:
        return None
    if len(shape) < 2:
        raise ctx.error(f"Shape must be at least rank 2 but is rank {len(shape)}")
    rows, cols = shape[-2], shape[-1]
    if rows is not None and cols is not None and rows != cols:
        raise ctx.error(f"Dimensions must be equal, but are {rows} and {cols}")
    return shape


def matrix_param(name: str, buf: str, dtype: _dt.DType) -> Param:
    return Param(name, dtype.c_type, buf.startswith("in"), buf)


def lu_workspace(n: int) -> int:
    """Elements of tfc_linalg.h's LU routines' work: a copy of the matrix and the pivots."""
    return n * n + n


def _batch_count(shape: tuple) -> int:
    return math.prod(shape[:-2])


def _float_square(ctx: OpContext, what: str = "input") -> tuple | None:
    check_dtype(ctx, 0, FLOATS, what)
    return square_shape(ctx)


def _as_lu_error(message: str):
    """Run `fn` (a NumPy solver); LinAlgError (an exactly singular matrix) becomes TF's error."""

    def run(fn, *args):
        try:
            return fn(*args)
        except np.linalg.LinAlgError:
            raise errors.InvalidArgumentError(None, None, message) from None

    return run


# -- MatrixInverse -------------------------------------------------------------------------------
def _adjoint(ctx: OpContext) -> bool:
    return bool(ctx.attrs.get("adjoint", False))


def _inverse_reference(ctx: OpContext, a: np.ndarray) -> np.ndarray:
    a = np.swapaxes(a, -1, -2) if _adjoint(ctx) else a
    return _as_lu_error(NOT_INVERTIBLE)(np.linalg.inv, a).astype(a.dtype)


def _inverse_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    n, batch = shape[-1], shape[:-2]
    operands = [
        (matrix_param("x0", "in0", dtype), batch, n * n),
        (matrix_param("y", "out0", dtype), batch, n * n),
    ]
    if n == 0:
        return []
    return matrix_kernel(
        "inverse", dtype, (n, int(_adjoint(ctx))), batch, operands, lu_workspace(n),
        NOT_INVERTIBLE,
    )  # fmt: skip


def _inverse_grad(op, dy: Tensor) -> list:
    """d inv(A) = -inv(A) dA inv(A): dA = -Y^T dy Y^T for Y = inv(A), -Y dy^T Y for Y =
    inv(A^T)."""
    y = op.outputs[0]
    if op.get_attr("adjoint"):
        return [-matmul(y, matmul(dy, y, adjoint_a=True))]
    return [-matmul(y, matmul(dy, y, adjoint_b=True), adjoint_a=True)]


def _square_scratch(ctx: OpContext) -> int:
    shape = ctx.in_shapes[0]
    return _batch_count(shape) * lu_workspace(shape[-1]) * ctx.in_dtypes[0].size


register(
    OpDef(
        "MatrixInverse",
        infer=lambda ctx: [(ctx.in_dtypes[0], _float_square(ctx))],
        reference=_inverse_reference,
        lower=_inverse_lower,
        grad=_inverse_grad,
        scratch=_square_scratch,
        flops=lambda ctx: _batch_count(ctx.in_shapes[0]) * 2 * ctx.in_shapes[0][-1] ** 3,
        input_names=("input",),
    )
)


def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.matrix_inverse` (`tf.linalg.inv`): the inverse of each innermost square matrix (of
    its transpose when `adjoint`). A matrix whose LU factorization meets an exactly zero pivot
    fails the run: InvalidArgumentError "Input is not invertible."."""
    x = convert_to_tensor(input, name="input")
    attrs = {"adjoint": bool(adjoint)}
    return apply_op("MatrixInverse", [x], attrs, name=name or "MatrixInverse").outputs[0]


# -- MatrixDeterminant, LogMatrixDeterminant -------------------------------------------------------
def _det_infer(ctx: OpContext) -> list:
    shape = _float_square(ctx)
    out = None if shape is None else shape[:-2]
    return [(ctx.in_dtypes[0], out)] * (2 if ctx.type == "LogMatrixDeterminant" else 1)


def _det_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    n, batch = shape[-1], shape[:-2]
    log = ctx.type == "LogMatrixDeterminant"
    outputs = ["out0", "out1"] if log else ["out0"]
    if n == 0:  # the empty product: det 1, sign 1 and log|det| 0
        values = [1, 0] if log else [1]
        kernels = []
        for buf, value in zip(outputs, values):
            out = view(buf, dtype, batch)
            kernels += loop_kernel(batch, out, [], c_literal(value, dtype))
        return kernels
    operands = [(matrix_param("x0", "in0", dtype), batch, n * n)]
    operands += [(matrix_param(f"y{k}", buf, dtype), batch, 1) for k, buf in enumerate(outputs)]
    routine = "slogdet" if log else "det"
    return matrix_kernel(routine, dtype, (n,), batch, operands, lu_workspace(n))


def _det_grad(op, dy: Tensor) -> list:
    """d det(A) = det(A) tr(inv(A) dA): dA = dy det(A) inv(A)^T."""
    scale = expand_dims(expand_dims(dy * op.outputs[0], -1), -1)
    return [scale * matrix_inverse(op.inputs[0], adjoint=True)]


def _log_det_grad(op, dsign: Tensor, dlog: Tensor) -> list:
    """d log|det A| = tr(inv(A) dA) (the sign is piecewise constant: no gradient)."""
    scale = expand_dims(expand_dims(dlog, -1), -1)
    return [scale * matrix_inverse(op.inputs[0], adjoint=True)]


def _slogdet_reference(ctx: OpContext, a: np.ndarray) -> list:
    sign, log_abs = np.linalg.slogdet(a)
    return [np.asarray(sign, a.dtype), np.asarray(log_abs, a.dtype)]


register(
    OpDef(
        "MatrixDeterminant",
        infer=_det_infer,
        reference=lambda ctx, a: np.asarray(np.linalg.det(a), a.dtype),
        lower=_det_lower,
        grad=_det_grad,
        scratch=_square_scratch,
        flops=lambda ctx: _batch_count(ctx.in_shapes[0]) * 2 * ctx.in_shapes[0][-1] ** 3 // 3,
        input_names=("input",),
    )
)
register(
    OpDef(
        "LogMatrixDeterminant",
        infer=_det_infer,
        reference=_slogdet_reference,
        lower=_det_lower,
        grad=_log_det_grad,
        scratch=_square_scratch,
        flops=lambda ctx: _batch_count(ctx.in_shapes[0]) * 2 * ctx.in_shapes[0][-1] ** 3 // 3,
        input_names=("input",),
    )
)


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.matrix_determinant` (`tf.linalg.det`): the determinant of each innermost square
    matrix (the product of its LU pivots; 1 for 0 x 0 matrices)."""
    x = convert_to_tensor(input, name="input")
    return apply_op("MatrixDeterminant", [x], name=name or "MatrixDeterminant").outputs[0]


def log_matrix_determinant(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """`tf.linalg.slogdet`: (sign, log|det|) of each innermost square matrix, a sum of the
    pivots' logarithms, so a large determinant does not overflow; (0, -inf) when singular."""
    x = convert_to_tensor(input, name="input")
    op = apply_op("LogMatrixDeterminant", [x], name=name or "LogMatrixDeterminant")
    return op.outputs[0], op.outputs[1]


# -- Cholesky --------------------------------------------------------------------------------------
def _cholesky_reference(ctx: OpContext, a: np.ndarray) -> np.ndarray:
    """From the lower triangle; a matrix that is not positive definite gets a NaN lower
    triangle (zeros above), as TensorFlow 2 gives (the upper part TF leaves is unspecified)."""
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    try:
        return np.linalg.cholesky(sym).astype(a.dtype)
    except np.linalg.LinAlgError:
        pass
    out = np.empty_like(a)
    failed = np.where(np.tri(a.shape[-1], dtype=bool), np.nan, 0).astype(a.dtype)
    for idx in np.ndindex(a.shape[:-2]):
        try:
            out[idx] = np.linalg.cholesky(sym[idx])
        except np.linalg.LinAlgError:
            out[idx] = failed
    return out


def _cholesky_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    n, batch = shape[-1], shape[:-2]
    if n == 0:
        return []
    operands = [
        (matrix_param("x0", "in0", dtype), batch, n * n),
        (matrix_param("y", "out0", dtype), batch, n * n),
    ]
    return matrix_kernel("cholesky", dtype, (n,), batch, operands)


def _cholesky_grad(op, dy: Tensor) -> list:
    """TF's rule (Murray 2016) for a symmetric perturbation: with middle = tril(l^T dy) (its
    diagonal halved), dA = sym(l^-T middle l^-1), here by two triangular solves instead of
    the inverse of l."""
    l_ = op.outputs[0]
    middle = matmul(l_, dy, adjoint_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    left = matrix_triangular_solve(l_, middle, lower=True, adjoint=True)  # l^-T middle
    grad = _transpose(matrix_triangular_solve(l_, _transpose(left), lower=True, adjoint=True))
    return [0.5 * (grad + _transpose(grad))]


register(
    OpDef(
        "Cholesky",
        infer=lambda ctx: [(ctx.in_dtypes[0], _float_square(ctx))],
        reference=_cholesky_reference,
        lower=_cholesky_lower,
        grad=_cholesky_grad,
        flops=lambda ctx: _batch_count(ctx.in_shapes[0]) * ctx.in_shapes[0][-1] ** 3 // 3,
        input_names=("input",),
    )
)


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.cholesky` (`tf.linalg.cholesky`): the lower triangular l with l l^T = input, for
    each innermost symmetric positive definite matrix; only its lower triangle is read. A
    matrix that is not positive definite gives NaN (TensorFlow 2's CPU kernel does the same)."""
    x = convert_to_tensor(input, name="input")
    return apply_op("Cholesky", [x], name=name or "Cholesky").outputs[0]


# -- MatrixSolve --------------------------------------------------------------------------------
def _rhs_shape(ctx: OpContext) -> tuple | None:
    shape = ctx.in_shapes[1]
    if shape is not None and len(shape) < 2:
        raise ctx.error(f"Shape must be at least rank 2 but is rank {len(shape)}")
    return shape


def _check_rows(ctx: OpContext, a: tuple, b: tuple) -> None:
    if a[-1] is not None and b[-2] is not None and a[-1] != b[-2]:
        raise ctx.error(f"Dimensions must be equal, but are {a[-1]} and {b[-2]}")


def _solve_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("matrix", "rhs"))
    check_dtype(ctx, 0, FLOATS, "matrix")
    a, b = square_shape(ctx), _rhs_shape(ctx)
    if a is None or b is None:
        return [(ctx.in_dtypes[0], None)]
    _check_rows(ctx, a, b)
    if ctx.type == "MatrixSolve":
        batch = merge_or_raise(ctx, a[:-2], b[:-2])
    else:
        batch = broadcast_shape(ctx, a[:-2], b[:-2])
    rows = a[-1] if a[-1] is not None else b[-2]
    return [(ctx.in_dtypes[0], (*batch, rows, b[-1]))]


def _solve_reference(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.swapaxes(a, -1, -2) if _adjoint(ctx) else a
    return _as_lu_error(SOLVE_NOT_INVERTIBLE)(np.linalg.solve, a, b).astype(a.dtype)


def _solve_lower(ctx: OpContext) -> list:
    dtype, (a, b), out = ctx.in_dtypes[0], ctx.in_shapes, ctx.out_shapes[0]
    n, k, batch = a[-1], b[-1], out[:-2]
    if n == 0 or k == 0:
        return []
    operands = [
        (matrix_param("x0", "in0", dtype), a[:-2], n * n),
        (matrix_param("x1", "in1", dtype), b[:-2], n * k),
        (matrix_param("y", "out0", dtype), batch, n * k),
    ]
    if ctx.type == "MatrixSolve":
        return matrix_kernel(
            "solve", dtype, (n, k, int(_adjoint(ctx))), batch, operands, lu_workspace(n),
            SOLVE_NOT_INVERTIBLE,
        )  # fmt: skip
    flags = (n, k, int(_lower_flag(ctx)), int(_adjoint(ctx)))
    return matrix_kernel("trisolve", dtype, flags, batch, operands)


def _solve_grad(op, dy: Tensor) -> list:
    """c = op(a)^-1 b: db = op(a)^-T dy, and da = -db c^T (-c db^T for the adjoint); a
    triangular a's gradient keeps its triangle. Broadcast batch dims are summed back by the
    gradient pass."""
    a = op.inputs[0]
    c = op.outputs[0]
    adjoint = bool(op.get_attr("adjoint"))
    if op.type == "MatrixSolve":
        db = matrix_solve(a, dy, adjoint=not adjoint)
    else:
        lower = bool(op.get_attr("lower"))
        db = matrix_triangular_solve(a, dy, lower=lower, adjoint=not adjoint)
    da = -matmul(c, db, adjoint_b=True) if adjoint else -matmul(db, c, adjoint_b=True)
    if op.type == "MatrixTriangularSolve":
        da = matrix_band_part(da, -1, 0) if op.get_attr("lower") else matrix_band_part(da, 0, -1)
    return [da, db]


def _solve_scratch(ctx: OpContext) -> int:
    out = ctx.out_shapes[0]
    n = ctx.in_shapes[0][-1]
    return _batch_count(out) * lu_workspace(n) * ctx.in_dtypes[0].size


def _solve_flops(ctx: OpContext) -> int:
    out, n = ctx.out_shapes[0], ctx.in_shapes[0][-1]
    factor = 2 * n**3 // 3 if ctx.type == "MatrixSolve" else 0
    return _batch_count(out) * (factor + 2 * n * n * out[-1])


register(
    OpDef(
        "MatrixSolve",
        infer=_solve_infer,
        reference=_solve_reference,
        lower=_solve_lower,
        grad=_solve_grad,
        scratch=_solve_scratch,
        flops=_solve_flops,
        input_names=("matrix", "rhs"),
    )
)


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """`tf.matrix_solve` (`tf.linalg.solve`): x with matrix x = rhs (matrix^T x = rhs when
    `adjoint`) for each innermost square matrix and its [M, K] right-hand sides (same batch
    dims). An exactly singular matrix fails the run: "Input matrix is not invertible."."""
    with name_scope(name, "MatrixSolve", [matrix, rhs]) as scope:
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype, name="rhs")
        attrs = {"adjoint": bool(adjoint)}
        return apply_op("MatrixSolve", [a, b], attrs, name=scope).outputs[0]


# -- MatrixTriangularSolve -----------------------------------------------------------------------
def _lower_flag(ctx: OpContext) -> bool:
    return bool(ctx.attrs.get("lower", True))


def _triangular_reference(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Substitution, row by row (vectorized over the batch and the right-hand sides), over the
    triangle the op reads: a zero on the diagonal gives Inf and NaN as TensorFlow's does."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if _adjoint(ctx):
        a = np.swapaxes(a, -1, -2)
    forward = _lower_flag(ctx) != _adjoint(ctx)  # op(a) is lower triangular
    n = a.shape[-1]
    x = np.zeros(batch + b.shape[-2:], dtype=a.dtype)
    with np.errstate(all="ignore"):
        for i in range(n) if forward else range(n - 1, -1, -1):
            known = slice(0, i) if forward else slice(i + 1, n)
            acc = np.einsum("...j,...jk->...k", a[..., i, known], x[..., known, :])
            x[..., i, :] = (b[..., i, :] - acc) / a[..., i, i][..., None]
    return x


register(
    OpDef(
        "MatrixTriangularSolve",
        infer=_solve_infer,
        reference=_triangular_reference,
        lower=_solve_lower,
        grad=_solve_grad,
        flops=_solve_flops,
        input_names=("matrix", "rhs"),
    )
)


def matrix_triangular_solve(
    matrix: Any,
    rhs: Any,
    lower: bool = True,
    adjoint: bool = False,
    name: str | None = None,
) -> Tensor:
    """`tf.matrix_triangular_solve` (`tf.linalg.triangular_solve`): x with op(matrix) x = rhs,
    matrix lower (or upper) triangular, op the transpose when `adjoint`; only that triangle is
    read. Batch dims broadcast; a zero on the diagonal gives Inf/NaN, as in TensorFlow."""
    with name_scope(name, "MatrixTriangularSolve", [matrix, rhs]) as scope:
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype, name="rhs")
        attrs = {"lower": bool(lower), "adjoint": bool(adjoint)}
        return apply_op("MatrixTriangularSolve", [a, b], attrs, name=scope).outputs[0]


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """`tf.cholesky_solve` (`tf.linalg.cholesky_solve`): x with (chol chol^T) x = rhs, for chol
    a Cholesky factor: two triangular solves, as TensorFlow composes it."""
    with name_scope(name, "cholesky_solve", [chol, rhs]):
        y = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
        return matrix_triangular_solve(chol, y, lower=True, adjoint=True)
