/* The routines of tfc_linalg.h for one element type: included once per type with TFC_LINALG_T
 * (the C type), TFC_LINALG_TAG (its suffix: f32, f64), TFC_LINALG_EPS (its epsilon) and its
 * libm functions defined. No include guard. */

#define TFC_LINALG_CAT_(a, b) a##_##b
#define TFC_LINALG_CAT(a, b) TFC_LINALG_CAT_(a, b)
#define TFC_LINALG_FN(name) TFC_LINALG_CAT(name, TFC_LINALG_TAG)
#define T TFC_LINALG_T
#define EPS TFC_LINALG_EPS
#define SQRT TFC_LINALG_SQRT
#define ABS TFC_LINALG_ABS
/* Jacobi sweeps before the eigen and singular value routines stop (5-10 are typical) */
#define TFC_LINALG_SWEEPS 60

/* -- LU with partial pivoting ------------------------------------------------------------------ */

/* P a = L U in place (L unit lower triangular below the diagonal, U on and above it); piv[k] is
 * the row swapped with row k at step k. Returns the permutation's sign, or 0 when a pivot is
 * exactly zero (the matrix is singular; the factorization stops there). */
static inline TFC_HD int TFC_LINALG_FN(tfc_linalg_lu)(int64_t n, T *a, int32_t *piv) {
    int sign = 1;
    for (int64_t k = 0; k < n; ++k) {
        int64_t p = k;
        T best = ABS(a[k * n + k]);
        for (int64_t i = k + 1; i < n; ++i) {
            const T v = ABS(a[i * n + k]);
            if (v > best) best = v, p = i;
        }
        piv[k] = (int32_t)p;
        if (best == 0) return 0;
        T *rk = a + k * n;
        if (p != k) {
            T *rp = a + p * n;
            for (int64_t j = 0; j < n; ++j) {
                const T t = rk[j];
                rk[j] = rp[j], rp[j] = t;
            }
            sign = -sign;
        }
        const T inv = 1 / rk[k];
        for (int64_t i = k + 1; i < n; ++i) {
            T *ri = a + i * n;
            const T l = ri[k] * inv;
            ri[k] = l;
            for (int64_t j = k + 1; j < n; ++j) ri[j] -= l * rk[j];
        }
    }
    return sign;
}

/* y (n x k) := inv(L U) P y, for the factors and pivots of tfc_linalg_lu: the row swaps, then
 * forward and back substitution as row operations (each an axpy of k contiguous values). */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_lu_solve)(int64_t n, int64_t k, const T *lu,
                                                             const int32_t *piv, T *y) {
    for (int64_t i = 0; i < n; ++i) {
        const int64_t p = piv[i];
        if (p == i) continue;
        T *yi = y + i * k, *yp = y + p * k;
        for (int64_t c = 0; c < k; ++c) {
            const T t = yi[c];
            yi[c] = yp[c], yp[c] = t;
        }
    }
    for (int64_t i = 1; i < n; ++i) {
        T *yi = y + i * k;
        for (int64_t j = 0; j < i; ++j) {
            const T l = lu[i * n + j];
            const T *yj = y + j * k;
            for (int64_t c = 0; c < k; ++c) yi[c] -= l * yj[c];
        }
    }
    for (int64_t i = n - 1; i >= 0; --i) {
        T *yi = y + i * k;
        for (int64_t j = i + 1; j < n; ++j) {
            const T u = lu[i * n + j];
            const T *yj = y + j * k;
            for (int64_t c = 0; c < k; ++c) yi[c] -= u * yj[c];
        }
        const T d = lu[i * n + i];
        for (int64_t c = 0; c < k; ++c) yi[c] /= d;
    }
}

/* work: a copy of a (or of a^T) and the pivots: n * n + n elements */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_lu_copy)(int64_t n, int adjoint, const T *a,
                                                            T *lu) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) lu[i * n + j] = adjoint ? a[j * n + i] : a[i * n + j];
}

static inline TFC_HD int TFC_LINALG_FN(tfc_linalg_inverse)(int64_t n, int adjoint, const T *a, T *y,
                                                           T *work) {
    int32_t *piv = (int32_t *)(work + n * n);
    TFC_LINALG_FN(tfc_linalg_lu_copy)(n, adjoint, a, work);
    if (TFC_LINALG_FN(tfc_linalg_lu)(n, work, piv) == 0) return 1;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = i == j ? (T)1 : (T)0;
    TFC_LINALG_FN(tfc_linalg_lu_solve)(n, n, work, piv, y);
    return 0;
}

static inline TFC_HD int TFC_LINALG_FN(tfc_linalg_solve)(int64_t n, int64_t k, int adjoint,
                                                         const T *a, const T *b, T *y, T *work) {
    int32_t *piv = (int32_t *)(work + n * n);
    TFC_LINALG_FN(tfc_linalg_lu_copy)(n, adjoint, a, work);
    if (TFC_LINALG_FN(tfc_linalg_lu)(n, work, piv) == 0) return 1;
    for (int64_t i = 0; i < n * k; ++i) y[i] = b[i];
    TFC_LINALG_FN(tfc_linalg_lu_solve)(n, k, work, piv, y);
    return 0;
}

static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_det)(int64_t n, const T *a, T *y, T *work) {
    TFC_LINALG_FN(tfc_linalg_lu_copy)(n, 0, a, work);
    const int sign = TFC_LINALG_FN(tfc_linalg_lu)(n, work, (int32_t *)(work + n * n));
    T d = (T)sign;
    for (int64_t k = 0; k < n && sign != 0; ++k) d *= work[k * n + k];
    y[0] = d;
}

/* sign in {-1, 0, 1} and log|det a| (-inf for a singular matrix): the log of each pivot, summed,
 * so large determinants do not overflow */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_slogdet)(int64_t n, const T *a, T *sign,
                                                            T *logabs, T *work) {
    TFC_LINALG_FN(tfc_linalg_lu_copy)(n, 0, a, work);
    int s = TFC_LINALG_FN(tfc_linalg_lu)(n, work, (int32_t *)(work + n * n));
    T sum = 0;
    for (int64_t k = 0; k < n && s != 0; ++k) {
        const T d = work[k * n + k];
        if (d < 0) s = -s;
        sum += TFC_LINALG_LOG(ABS(d));
    }
    sign[0] = (T)s;
    logabs[0] = s == 0 ? -(T)INFINITY : sum;
}

/* -- Cholesky and triangular solves ------------------------------------------------------------ */

/* Right-looking, on the upper triangle of y (U = L^T, so each update is an axpy of two
 * contiguous rows and vectorizes), which is then transposed into place. */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_cholesky)(int64_t n, const T *a, T *y) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i; j < n; ++j) y[i * n + j] = a[j * n + i];
    for (int64_t k = 0; k < n; ++k) {
        T *uk = y + k * n;
        if (!(uk[k] > 0)) { /* not positive definite (or NaN): TensorFlow's NaN lower triangle */
            for (int64_t r = 0; r < n; ++r)
                for (int64_t c = 0; c < n; ++c) y[r * n + c] = c <= r ? (T)NAN : (T)0;
            return;
        }
        uk[k] = SQRT(uk[k]);
        const T inv = 1 / uk[k];
        for (int64_t j = k + 1; j < n; ++j) uk[j] *= inv;
        for (int64_t i = k + 1; i < n; ++i) {
            T *ui = y + i * n;
            const T l = uk[i];
            for (int64_t j = i; j < n; ++j) ui[j] -= l * uk[j];
        }
    }
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) {
            y[j * n + i] = y[i * n + j];
            y[i * n + j] = 0;
        }
}

/* op(a) y = b with op(a) = a or a^T, a lower or upper triangular (the other triangle is not
 * read): forward substitution where op(a) is lower triangular, back substitution otherwise */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_trisolve)(int64_t n, int64_t k, int lower,
                                                             int adjoint, const T *a, const T *b,
                                                             T *y) {
    const int forward = lower != adjoint;
    const int64_t si = adjoint ? 1 : n, sj = adjoint ? n : 1; /* op(a)[i][j] = a[i*si + j*sj] */
    for (int64_t step = 0; step < n; ++step) {
        const int64_t i = forward ? step : n - 1 - step;
        T *yi = y + i * k;
        for (int64_t c = 0; c < k; ++c) yi[c] = b[i * k + c];
        const int64_t j0 = forward ? 0 : i + 1, j1 = forward ? i : n;
        for (int64_t j = j0; j < j1; ++j) {
            const T l = a[i * si + j * sj];
            const T *yj = y + j * k;
            for (int64_t c = 0; c < k; ++c) yi[c] -= l * yj[c];
        }
        const T d = a[i * si + i * sj];
        for (int64_t c = 0; c < k; ++c) yi[c] /= d;
    }
}

/* -- Householder QR ---------------------------------------------------------------------------- */

/* |x| of n values `stride` apart, scaled as LAPACK's dnrm2 so no square overflows */
static inline TFC_HD T TFC_LINALG_FN(tfc_linalg_norm)(int64_t n, const T *x, int64_t stride) {
    T scale = 0, ssq = 1;
    for (int64_t i = 0; i < n; ++i) {
        const T v = ABS(x[i * stride]);
        if (v == 0) continue;
        if (scale < v) {
            ssq = 1 + ssq * (scale / v) * (scale / v);
            scale = v;
        } else {
            ssq += (v / scale) * (v / scale);
        }
    }
    return scale * SQRT(ssq);
}

/* q: m x (full ? m : min(m, n)), r: (full ? m : min(m, n)) x n.
 * work: m * n (the reflectors below R) + max(m, n) (a row of the update) + min(m, n) (the taus) */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_qr)(int64_t m, int64_t n, int full, const T *a,
                                                       T *q, T *r, T *work) {
    const int64_t p = m < n ? m : n, qc = full ? m : p;
    T *h = work, *w = work + m * n, *tau = w + (m > n ? m : n);
    for (int64_t i = 0; i < m * n; ++i) h[i] = a[i];
    for (int64_t j = 0; j < p; ++j) {
        /* the reflector I - tau v v^T (v = [1, v_j+1..]) taking column j below the diagonal to 0 */
        const T alpha = h[j * n + j];
        const T xnorm = TFC_LINALG_FN(tfc_linalg_norm)(m - j - 1, h + (j + 1) * n + j, n);
        tau[j] = 0;
        if (xnorm == 0) continue; /* LAPACK's dlarfg: no reflection, the diagonal keeps its sign */
        const T big = ABS(alpha) > xnorm ? ABS(alpha) : xnorm;
        T beta = big * SQRT((alpha / big) * (alpha / big) + (xnorm / big) * (xnorm / big));
        if (alpha >= 0) beta = -beta;
        tau[j] = (beta - alpha) / beta;
        const T scale = 1 / (alpha - beta);
        for (int64_t i = j + 1; i < m; ++i) h[i * n + j] *= scale;
        h[j * n + j] = beta;
        /* the rest of the rows j.. : w = tau (v^T H), then H -= v w */
        for (int64_t c = j + 1; c < n; ++c) w[c] = h[j * n + c];
        for (int64_t i = j + 1; i < m; ++i) {
            const T vi = h[i * n + j];
            for (int64_t c = j + 1; c < n; ++c) w[c] += vi * h[i * n + c];
        }
        for (int64_t c = j + 1; c < n; ++c) {
            w[c] *= tau[j];
            h[j * n + c] -= w[c];
        }
        for (int64_t i = j + 1; i < m; ++i) {
            const T vi = h[i * n + j];
            for (int64_t c = j + 1; c < n; ++c) h[i * n + c] -= vi * w[c];
        }
    }
    /* q = H_0 H_1 ... H_(p-1) applied to the first qc columns of I, last reflector first; H_j
     * leaves the columns before j alone (they are still unit vectors above row j) */
    for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < qc; ++c) q[i * qc + c] = i == c ? (T)1 : (T)0;
    for (int64_t j = p - 1; j >= 0; --j) {
        if (tau[j] == 0) continue;
        for (int64_t c = j; c < qc; ++c) w[c] = q[j * qc + c];
        for (int64_t i = j + 1; i < m; ++i) {
            const T vi = h[i * n + j];
            for (int64_t c = j; c < qc; ++c) w[c] += vi * q[i * qc + c];
        }
        for (int64_t c = j; c < qc; ++c) {
            w[c] *= tau[j];
            q[j * qc + c] -= w[c];
        }
        for (int64_t i = j + 1; i < m; ++i) {
            const T vi = h[i * n + j];
            for (int64_t c = j; c < qc; ++c) q[i * qc + c] -= vi * w[c];
        }
    }
    for (int64_t i = 0; i < qc; ++i)
        for (int64_t c = 0; c < n; ++c) r[i * n + c] = i < p && c >= i ? h[i * n + c] : (T)0;
}

/* -- Jacobi: symmetric eigenproblems and the SVD ----------------------------------------------- */

/* tan of the rotation angle that zeroes an off-diagonal element, from cot(2 angle) = x
 * (the root of smaller magnitude, so the rotation is at most 45 degrees) */
static inline TFC_HD T TFC_LINALG_FN(tfc_linalg_jacobi_tan)(T x) {
    const T ax = ABS(x);
    const T t = ax > 1 / EPS ? (T)0.5 / ax : 1 / (ax + SQRT(1 + ax * ax));
    return x < 0 ? -t : t;
}

/* the largest |a| over a's lower triangle (all of a when `lower` is 0); -1 when a value read is
 * NaN or infinite */
static inline TFC_HD T TFC_LINALG_FN(tfc_linalg_max_abs)(int64_t rows, int64_t cols, int lower,
                                                         const T *a) {
    T big = 0;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < (lower ? i + 1 : cols); ++j) {
            const T v = a[i * cols + j];
            if (v - v != 0) return -1;
            if (ABS(v) > big) big = ABS(v);
        }
    return big;
}

/* e ascending; v (when `vectors`): the eigenvectors as columns. work: 2 n^2 */
static inline TFC_HD int TFC_LINALG_FN(tfc_linalg_eigh)(int64_t n, int vectors, const T *a, T *e,
                                                        T *v, T *work) {
    T *s = work, *z = work + n * n; /* the rotated matrix; rows of z: the eigenvectors */
    const T big = TFC_LINALG_FN(tfc_linalg_max_abs)(n, n, 1, a);
    if (big < 0) return 1;
    /* scaled so the largest element is 1: no square under- or overflows */
    const T scale = big > 0 ? 1 / big : (T)1;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) s[i * n + j] = s[j * n + i] = a[i * n + j] * scale;
    for (int64_t i = 0; i < n * n; ++i) z[i] = i % (n + 1) == 0 ? (T)1 : (T)0;
    for (int sweep = 0; sweep < TFC_LINALG_SWEEPS; ++sweep) {
        int rotated = 0;
        for (int64_t p = 0; p + 1 < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) {
                const T apq = s[p * n + q], app = s[p * n + p], aqq = s[q * n + q];
                if (ABS(apq) <= EPS * SQRT(ABS(app)) * SQRT(ABS(aqq)) || ABS(apq) <= EPS * EPS)
                    continue;
                rotated = 1;
                const T t = TFC_LINALG_FN(tfc_linalg_jacobi_tan)((aqq - app) / (2 * apq));
                const T c = 1 / SQRT(1 + t * t), sn = t * c;
                for (int64_t k = 0; k < n; ++k) {
                    if (k == p || k == q) continue;
                    const T akp = s[p * n + k], akq = s[q * n + k];
                    const T np = c * akp - sn * akq, nq = sn * akp + c * akq;
                    s[p * n + k] = s[k * n + p] = np;
                    s[q * n + k] = s[k * n + q] = nq;
                }
                s[p * n + p] = app - t * apq;
                s[q * n + q] = aqq + t * apq;
                s[p * n + q] = s[q * n + p] = 0;
                if (!vectors) continue;
                T *zp = z + p * n, *zq = z + q * n;
                for (int64_t k = 0; k < n; ++k) {
                    const T x = zp[k], y = zq[k];
                    zp[k] = c * x - sn * y;
                    zq[k] = sn * x + c * y;
                }
            }
        if (!rotated) break;
    }
    for (int64_t k = 0; k < n; ++k) e[k] = s[k * n + k];
    for (int64_t k = 0; k < n; ++k) { /* selection sort, ascending */
        int64_t best = k;
        for (int64_t i = k + 1; i < n; ++i)
            if (e[i] < e[best]) best = i;
        if (best == k) continue;
        const T t = e[k];
        e[k] = e[best], e[best] = t;
        for (int64_t i = 0; vectors && i < n; ++i) {
            const T x = z[k * n + i];
            z[k * n + i] = z[best * n + i], z[best * n + i] = x;
        }
    }
    for (int64_t k = 0; k < n; ++k) e[k] *= big > 0 ? big : (T)1;
    for (int64_t i = 0; vectors && i < n; ++i)
        for (int64_t k = 0; k < n; ++k) v[i * n + k] = z[k * n + i];
    return 0;
}

/* the eigenvalues alone (v is not touched) */
static inline TFC_HD int TFC_LINALG_FN(tfc_linalg_eigvalsh)(int64_t n, const T *a, T *e, T *work) {
    return TFC_LINALG_FN(tfc_linalg_eigh)(n, 0, a, e, (T *)0, work);
}

static inline TFC_HD T TFC_LINALG_FN(tfc_linalg_dot)(int64_t n, const T *x, const T *y) {
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

/* Rows `rows` of w (each of length len) hold orthonormal vectors where ok[r] != 0: fill the
 * others with unit vectors orthogonalized against every accepted row (Gram-Schmidt, twice). */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_complete)(int64_t rows, int64_t len, T *w,
                                                             T *ok) {
    int64_t candidate = 0;
    for (int64_t r = 0; r < rows; ++r) {
        if (ok[r] != 0) continue;
        T *wr = w + r * len;
        for (; candidate < len; ++candidate) {
            for (int64_t k = 0; k < len; ++k) wr[k] = k == candidate ? (T)1 : (T)0;
            for (int pass = 0; pass < 2; ++pass)
                for (int64_t o = 0; o < rows; ++o) {
                    if (ok[o] == 0) continue;
                    const T *wo = w + o * len;
                    const T d = TFC_LINALG_FN(tfc_linalg_dot)(len, wr, wo);
                    for (int64_t k = 0; k < len; ++k) wr[k] -= d * wo[k];
                }
            const T norm = SQRT(TFC_LINALG_FN(tfc_linalg_dot)(len, wr, wr));
            if (norm > (T)0.5) { /* a unit vector far enough from the accepted ones */
                for (int64_t k = 0; k < len; ++k) wr[k] /= norm;
                ok[r] = 1;
                ++candidate;
                break;
            }
        }
    }
}

/* s: min(m, n), descending; when `vectors`: u m x (full ? m : min(m, n)), v n x (full ? n :
 * min(m, n)). With p = min(m, n), L = max(m, n) and xc = full ? L : p,
 * work: xc * L (the rotated columns, then the singular vectors of the long side) + p * p (the
 * rotations, accumulated) + xc (their norms, then which rows are done) */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_svd)(int64_t m, int64_t n, int vectors, int full,
                                                        const T *a, T *s, T *u, T *v, T *work) {
    const int tall = m >= n;
    const int64_t p = tall ? n : m, len = tall ? m : n, xc = full ? len : p;
    const int64_t uc = full ? m : p, vc = full ? n : p;
    T *w = work, *z = work + xc * len, *norm = z + p * p;
    const T big = TFC_LINALG_FN(tfc_linalg_max_abs)(m, n, 0, a);
    if (big < 0) { /* NaN or Inf in a: NaN out, as LAPACK's do */
        for (int64_t i = 0; i < p; ++i) s[i] = (T)NAN;
        for (int64_t i = 0; vectors && i < m * uc; ++i) u[i] = (T)NAN;
        for (int64_t i = 0; vectors && i < n * vc; ++i) v[i] = (T)NAN;
        return;
    }
    const T scale = big > 0 ? 1 / big : (T)1;
    /* the rows of w: the columns of a (tall) or its rows, scaled so the largest value is 1 */
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) w[tall ? j * len + i : i * len + j] = a[i * n + j] * scale;
    for (int64_t i = 0; i < p * p; ++i) z[i] = i % (p + 1) == 0 ? (T)1 : (T)0;
    const T tol = EPS * SQRT((T)len);
    for (int sweep = 0; sweep < TFC_LINALG_SWEEPS; ++sweep) {
        int rotated = 0;
        for (int64_t i = 0; i + 1 < p; ++i)
            for (int64_t j = i + 1; j < p; ++j) {
                T *wi = w + i * len, *wj = w + j * len;
                const T alpha = TFC_LINALG_FN(tfc_linalg_dot)(len, wi, wi);
                const T beta = TFC_LINALG_FN(tfc_linalg_dot)(len, wj, wj);
                const T gamma = TFC_LINALG_FN(tfc_linalg_dot)(len, wi, wj);
                if (alpha == 0 || beta == 0 || ABS(gamma) <= tol * SQRT(alpha) * SQRT(beta))
                    continue;
                rotated = 1;
                const T t = TFC_LINALG_FN(tfc_linalg_jacobi_tan)((beta - alpha) / (2 * gamma));
                const T c = 1 / SQRT(1 + t * t), sn = t * c;
                for (int64_t k = 0; k < len; ++k) {
                    const T x = wi[k], y = wj[k];
                    wi[k] = c * x - sn * y;
                    wj[k] = sn * x + c * y;
                }
                if (!vectors) continue;
                T *zi = z + i * p, *zj = z + j * p;
                for (int64_t k = 0; k < p; ++k) {
                    const T x = zi[k], y = zj[k];
                    zi[k] = c * x - sn * y;
                    zj[k] = sn * x + c * y;
                }
            }
        if (!rotated) break;
    }
    for (int64_t j = 0; j < p; ++j) norm[j] = SQRT(TFC_LINALG_FN(tfc_linalg_dot)(len, w + j * len,
                                                                              w + j * len));
    for (int64_t k = 0; k < p; ++k) { /* selection sort, descending */
        int64_t best = k;
        for (int64_t i = k + 1; i < p; ++i)
            if (norm[i] > norm[best]) best = i;
        s[k] = norm[best] * (big > 0 ? big : (T)1);
        if (best == k) continue;
        const T t = norm[k];
        norm[k] = norm[best], norm[best] = t;
        for (int64_t i = 0; vectors && i < len; ++i) {
            const T x = w[k * len + i];
            w[k * len + i] = w[best * len + i], w[best * len + i] = x;
        }
        for (int64_t i = 0; vectors && i < p; ++i) {
            const T x = z[k * p + i];
            z[k * p + i] = z[best * p + i], z[best * p + i] = x;
        }
    }
    if (!vectors) return;
    /* the long side's singular vectors: w's rows normalized, completed where a singular value is
     * zero and, for full matrices, to a basis */
    for (int64_t r = 0; r < xc; ++r) {
        const T nr = r < p ? norm[r] : (T)0;
        for (int64_t k = 0; r < p && nr > 0 && k < len; ++k) w[r * len + k] /= nr;
        norm[r] = nr > 0 ? (T)1 : (T)0;
    }
    TFC_LINALG_FN(tfc_linalg_complete)(xc, len, w, norm);
    T *x = tall ? u : v, *y = tall ? v : u;
    for (int64_t k = 0; k < len; ++k)
        for (int64_t r = 0; r < xc; ++r) x[k * xc + r] = w[r * len + k];
    for (int64_t k = 0; k < p; ++k)
        for (int64_t r = 0; r < p; ++r) y[k * p + r] = z[r * p + k];
}

/* the singular values alone */
static inline TFC_HD void TFC_LINALG_FN(tfc_linalg_svdvals)(int64_t m, int64_t n, const T *a, T *s,
                                                            T *work) {
    TFC_LINALG_FN(tfc_linalg_svd)(m, n, 0, 0, a, s, (T *)0, (T *)0, work);
}

#undef TFC_LINALG_SWEEPS
#undef ABS
#undef SQRT
#undef EPS
#undef T
#undef TFC_LINALG_FN
#undef TFC_LINALG_CAT
#undef TFC_LINALG_CAT_
