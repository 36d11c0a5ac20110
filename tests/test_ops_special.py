"""Special functions (digamma, polygamma, zeta, lbeta, log_sigmoid): compiled C vs the NumPy
reference vs independent formulas.

erf, erfc and lgamma are rows of test_ops_math.py's unary table (Python's math module is their
oracle). The functions here have none in NumPy or the standard library, so the expectations
come from other formulas: digamma as the derivative of math.lgamma (Richardson-extrapolated
central differences, after the recurrence has moved x above 6; the reflection formula for
x < 0), and the Hurwitz zeta function as its series summed over 4000 terms plus the
Euler-Maclaurin tail.
"""

import math

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(20240923)
F = ["float32", "float64"]


def digamma_by_differences(x: float) -> float:
    """d/dx lgamma(x): the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 6, there the
    central difference of lgamma extrapolated twice (error ~1e-12), reflection below 0."""
    if x <= 0:
        return digamma_by_differences(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 6:
        shift -= 1 / x
        x += 1
    h = 1.0 / 64

    def d(step: float) -> float:
        return (math.lgamma(x + step) - math.lgamma(x - step)) / (2 * step)

    d1, d2, d3 = d(h), d(h / 2), d(h / 4)
    r1, r2 = (4 * d2 - d1) / 3, (4 * d3 - d2) / 3
    return shift + (16 * r2 - r1) / 15


def zeta_by_summation(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """sum over k of (q + k)^-s: 4000 terms, then the integral, half a term and the first
    Bernoulli correction of the rest."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    k = np.arange(4000.0).reshape((-1,) + (1,) * s.ndim)
    head = np.sum(np.power(q + k, -s), axis=0)
    a = q + 4000.0
    return head + a ** (1 - s) / (s - 1) + 0.5 * a**-s + s * a ** (-s - 1) / 12


def polygamma_by_zeta(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(-1)^(n+1) n! zeta(n + 1, x) for n >= 1."""
    n = np.asarray(n, np.float64)
    sign = np.where(n % 2 == 1, 1.0, -1.0)
    factorial = np.vectorize(lambda v: float(math.factorial(int(v))))(n)
    return sign * factorial * zeta_by_summation(n + 1, x)


def _round(dtype: str, values: np.ndarray) -> np.ndarray:
    return np.asarray(values, np.float64).astype(dtype)


def build_special() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in F:
            tight = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else {}
            # digamma: positive, negative non-integers, and close to a pole
            x = np.concatenate([RNG.uniform(0.05, 12, 9), RNG.uniform(-4.9, -0.1, 5)])
            x[-1] = -2.0 + 1e-3
            x = x.astype(dtype)
            want = [digamma_by_differences(v) for v in x.astype(np.float64)]
            t = b.feed(x) if dtype == "float32" else tf.constant(x)
            b.add(f"digamma-{dtype}", tf.digamma(t), _round(dtype, want), **tight)
            poles = np.array([0.0, -1.0, -3.0, np.nan], dtype)
            b.add(f"digamma-poles-{dtype}", tf.digamma(poles), np.full(4, np.nan, dtype))

            # zeta(s, q): s > 1, q > 0; q < 0 with integer s; the poles
            s = RNG.uniform(1.2, 6, 8).astype(dtype)
            q = RNG.uniform(0.1, 5, 8).astype(dtype)
            z_tight = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else {}
            b.add(f"zeta-{dtype}", tf.zeta(b.feed(s), q), _round(dtype, zeta_by_summation(s, q)),
                  **z_tight)  # fmt: skip
            si = np.array([2.0, 3.0, 4.0, 2.0], dtype)
            qn = np.array([-1.5, -0.25, -2.75, -3.5], dtype)
            b.add(f"zeta-negative-q-{dtype}", tf.zeta(si, qn),
                  _round(dtype, zeta_by_summation(si, qn)), **z_tight)  # fmt: skip
            edge_s = np.array([1.0, 0.5, 2.5, 2.0], dtype)
            edge_q = np.array([1.0, 1.0, -1.5, 0.0], dtype)
            b.add(f"zeta-edges-{dtype}", tf.zeta(edge_s, edge_q),
                  np.array([np.inf, np.nan, np.nan, np.inf], dtype))  # fmt: skip

            # polygamma(n, x): n = 0 is digamma; n >= 1 by zeta; a fractional n is NaN
            n = np.array([1, 1, 2, 3, 4, 1], dtype)
            x = np.array([0.5, 3.25, 1.75, 0.8, 6.5, -1.5], dtype)
            b.add(f"polygamma-{dtype}", tf.polygamma(n, b.feed(x)),
                  _round(dtype, polygamma_by_zeta(n, x)), **z_tight)  # fmt: skip
            b.add(f"polygamma-order0-{dtype}", tf.polygamma(np.zeros(3, dtype), x[:3]),
                  _round(dtype, [digamma_by_differences(v) for v in x[:3].astype(float)]),
                  **tight)  # fmt: skip
            b.add(f"polygamma-bad-order-{dtype}", tf.polygamma(np.array([0.5, -1.0], dtype),
                  np.array([1.0, 2.0], dtype)), np.full(2, np.nan, dtype))  # fmt: skip

            # lbeta along the last axis; log_sigmoid without overflow
            a = RNG.uniform(0.2, 6, (3, 4)).astype(dtype)
            lbeta = [sum(math.lgamma(v) for v in row) - math.lgamma(sum(row)) for row in
                     a.astype(np.float64)]  # fmt: skip
            b.add(f"lbeta-{dtype}", tf.lbeta(b.feed(a)), _round(dtype, lbeta),
                  **(dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else {}))  # fmt: skip
            v = np.array([-800.0, -30.0, -1.5, 0.0, 0.75, 40.0, 800.0], dtype)
            v64 = v.astype(np.float64)
            with np.errstate(over="ignore"):  # np.where evaluates both sides
                want = np.where(v64 > 0, -np.log1p(np.exp(-v64)), v64 - np.log1p(np.exp(v64)))
            b.add(f"log_sigmoid-{dtype}", tf.log_sigmoid(v), _round(dtype, want))
    return b


SPECIAL = build_special()


@pytest.mark.parametrize("case", SPECIAL.ids())
def test_special_functions(case):
    SPECIAL.check(case)


def test_independent_formulas_agree_with_known_values():
    """The test's own oracles, on values known in closed form."""
    euler = 0.57721566490153286061
    assert abs(digamma_by_differences(1.0) + euler) < 1e-12
    assert abs(digamma_by_differences(0.5) + euler + 2 * math.log(2)) < 1e-12
    assert abs(zeta_by_summation(2.0, 1.0) - math.pi**2 / 6) < 1e-13
    assert abs(polygamma_by_zeta(1, 0.5) - math.pi**2 / 2) < 1e-12


def test_special_functions_need_floats():
    with pytest.raises(TypeError, match="not in list of allowed values: float32, float64"):
        tf.digamma(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="Input 'y' of 'Zeta' Op has type float64"):
        tf.zeta(tf.constant([2.0]), tf.constant([1.0], tf.float64))
