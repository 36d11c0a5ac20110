/* Dense linear algebra on one small matrix at a time: the routines of the linalg ops (MatrixInverse,
 * Cholesky, Qr, Svd, ...). The generated kernels call them once per matrix of a batch: a loop on
 * the CPU, one GPU thread per matrix in CUDA programs (every routine is TFC_HD).
 *
 * Matrices are row-major and contiguous; sizes are element counts. Each routine writes only its
 * outputs and `work`, a caller-provided buffer of the size its comment gives (in elements of T),
 * so nothing allocates. Routines that can fail return 1 (and 0 on success); the caller turns
 * that into the op's error.
 *
 *   tfc_linalg_inverse_<tag>(n, adjoint, a, y, work)          y = inv(a) or inv(a^T); 1: singular
 *   tfc_linalg_solve_<tag>(n, k, adjoint, a, b, y, work)      y = a \ b (b: n x k); 1: singular
 *   tfc_linalg_det_<tag>(n, a, y, work)                       y[0] = det(a)
 *   tfc_linalg_slogdet_<tag>(n, a, sign, logabs, work)        sign and log|det(a)|
 *   tfc_linalg_cholesky_<tag>(n, a, y)                        a = y y^T, y lower (reads a's lower
 *                                                             triangle); NaN where a is not PD
 *   tfc_linalg_trisolve_<tag>(n, k, lower, adjoint, a, b, y)  y = op(a) \ b, a triangular
 *   tfc_linalg_qr_<tag>(m, n, full, a, q, r, work)            a = q r (Householder)
 *   tfc_linalg_eigh_<tag>(n, vectors, a, e, v, work)          a = v diag(e) v^T, e ascending
 *                                                             (reads a's lower triangle); 1: NaN
 *                                                             or Inf input
 *   tfc_linalg_eigvalsh_<tag>(n, a, e, work)                  e alone
 *   tfc_linalg_svd_<tag>(m, n, vectors, full, a, s, u, v, work)  a = u diag(s) v^T, s descending
 *   tfc_linalg_svdvals_<tag>(m, n, a, s, work)                s alone
 *
 * Algorithms and accuracy (all in the element type T; errors are in units of its epsilon):
 * - inverse, solve, det, slogdet: LU with partial (row) pivoting, as LAPACK's getrf and Eigen's
 *   PartialPivLU: backward stable in practice, forward error about cond(a) * eps. A pivot that
 *   is exactly zero makes the matrix singular: what TensorFlow checks (its "not invertible").
 * - cholesky: Cholesky-Banachiewicz, row by row (each entry a dot product of two rows): backward
 *   stable; a pivot that is not positive (or NaN) fills the lower triangle with NaN, as
 *   TensorFlow does.
 * - trisolve: forward or back substitution (row operations): backward stable.
 * - qr: Householder reflections with LAPACK's sign convention (dlarfg: beta = -sign(alpha)|x|,
 *   no reflection where the column below the diagonal is zero), so q and r equal LAPACK's
 *   (NumPy's) and Eigen's up to rounding; q from the reflectors as dorgqr does. Backward stable.
 * - eigh: the cyclic Jacobi method (rotations of the symmetric matrix, Rutishauser's formulas):
 *   sweeps until no off-diagonal element is above eps * sqrt(|a_pp a_qq|) (and a negligible
 *   absolute floor), typically 5-10 sweeps; eigenvalues to about eps * |a| (relative accuracy
 *   for definite matrices), eigenvectors orthonormal to a few eps. O(n^3) per sweep: meant for
 *   the small matrices of the batched ops, not for n in the thousands.
 * - svd: the one-sided Jacobi method (Hestenes) on the columns of a (of a^T when m < n):
 *   rotations until every pair of columns is orthogonal to eps, singular values to about
 *   eps * sigma_max (often relative accuracy), singular vectors orthonormal to a few eps;
 *   columns of u (v) for zero singular values, and the extra columns of full_matrices, are
 *   completed to an orthonormal basis by Gram-Schmidt (twice) on unit vectors. Like LAPACK's,
 *   the signs of singular vector pairs are the algorithm's own.
 */
#ifndef TFC_LINALG_H
#define TFC_LINALG_H

#include <math.h>
#include <stdint.h>

#include "tfc_hd.h"

#define TFC_LINALG_T float
#define TFC_LINALG_TAG f32
#define TFC_LINALG_EPS 1.1920929e-07f
#define TFC_LINALG_SQRT sqrtf
#define TFC_LINALG_ABS fabsf
#define TFC_LINALG_LOG logf
#include "tfc_linalg_impl.h"
#undef TFC_LINALG_T
#undef TFC_LINALG_TAG
#undef TFC_LINALG_EPS
#undef TFC_LINALG_SQRT
#undef TFC_LINALG_ABS
#undef TFC_LINALG_LOG

#define TFC_LINALG_T double
#define TFC_LINALG_TAG f64
#define TFC_LINALG_EPS 2.220446049250313e-16
#define TFC_LINALG_SQRT sqrt
#define TFC_LINALG_ABS fabs
#define TFC_LINALG_LOG log
#include "tfc_linalg_impl.h"
#undef TFC_LINALG_T
#undef TFC_LINALG_TAG
#undef TFC_LINALG_EPS
#undef TFC_LINALG_SQRT
#undef TFC_LINALG_ABS
#undef TFC_LINALG_LOG

#endif /* TFC_LINALG_H */
