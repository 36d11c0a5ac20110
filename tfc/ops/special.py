"""Special functions: erf, erfc, lgamma, digamma, polygamma, Hurwitz zeta; lbeta, log_sigmoid.

The C expressions call libm (erf, erfc, lgamma) or the double-precision helpers of
runtime/include/tfc_math.h (digamma, zeta, polygamma); the float32 versions round the double
result. The NumPy references are scalar Python definitions of the same functions, following
TensorFlow's (Eigen's) conventions at the poles: digamma is NaN at 0 and the negative integers,
zeta(s, q) is +inf for s == 1 and NaN for s < 1, polygamma NaN unless its order is a
non-negative integer. igamma, igammac and betainc are not provided: their gradients with
respect to the shape parameters need series of their own that tfc does not have yet.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tfc.ops.reduce as _reduce
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.elementwise import binary_frontend, register_elementwise, unary_frontend
from tfc.ops.math import exp, negative, square, subtract
from tfc.ops.nn import softplus

__all__ = ["erf", "erfc", "lgamma", "digamma", "polygamma", "zeta", "lbeta", "log_sigmoid"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# -- scalar definitions (the references) ----------------------------------------------------------
def _lgamma(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf  # the poles, as C's lgamma
    return math.lgamma(x)


def _digamma(x: float) -> float:
    """The recurrence up to x >= 10, then the asymptotic series; reflection for x <= 0."""
    if math.isnan(x):
        return x
    result = 0.0
    if x <= 0:
        if x == math.floor(x):
            return math.nan
        result = -math.pi / math.tan(math.pi * (x - math.floor(x)))
        x = 1.0 - x
    while x < 10:
        result -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    coefficients = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
    series = sum(c * inv2 ** (k + 1) for k, c in enumerate(coefficients))
    return result + math.log(x) - 0.5 / x - series


# B(2j) / (2j)! for j = 1..12: the Euler-Maclaurin corrections of the zeta sum
_BERNOULLI_OVER_FACTORIAL = (
    1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000,
    1 / 74724249600, -3617 / 10670622842880000, 43867 / 5109094217170944000,
    -174611 / 802857662698291200000, 77683 / 14101100039391805440000,
    -236364091 / 1693824136731743669452800000,
)  # fmt: skip


def _zeta(s: float, q: float) -> float:
    """Hurwitz zeta: the terms up to q + n >= 9 summed, the tail by Euler-Maclaurin."""
    if math.isnan(s) or math.isnan(q):
        return math.nan
    if s == 1:
        return math.inf
    if s < 1:
        return math.nan
    if q <= 0:
        if q == math.floor(q):
            return math.inf
        if s != math.floor(s):
            return math.nan
    total, a, n = _power(q, -s), q, 0
    while n < 9 or a <= 9:
        n += 1
        a += 1.0
        total += _power(a, -s)
    b = _power(a, -s)
    total += b * a / (s - 1) - 0.5 * b
    rising, factor, power = 1.0, s, b
    for c in _BERNOULLI_OVER_FACTORIAL:
        rising *= factor
        power /= a
        total += c * rising * power
        rising *= factor + 1
        power /= a
        factor += 2
    return total


def _power(base: float, exponent: float) -> float:
    """base ** exponent as C's pow: a negative base with an integer exponent stays real."""
    try:
        return math.pow(base, exponent)
    except (OverflowError, ZeroDivisionError):
        return math.inf
    except ValueError:
        return math.nan


def _polygamma(n: float, x: float) -> float:
    if math.isnan(n) or math.isnan(x):
        return math.nan
    if n < 0 or n != math.floor(n):
        return math.nan
    if n == 0:
        return _digamma(x)
    sign = 1.0 if int(n) % 2 else -1.0
    try:
        factorial = float(math.factorial(int(n)))
    except OverflowError:
        factorial = math.inf
    return sign * factorial * _zeta(n + 1, x)


def _vectorized(fn):
    """A scalar function over arrays, in double, rounded once to the inputs' dtype."""
    vector = np.vectorize(fn, otypes=[np.float64])

    def reference(*xs: np.ndarray) -> np.ndarray:
        return vector(*(x.astype(np.float64) for x in xs)).astype(xs[0].dtype)

    return reference


# -- the ops --------------------------------------------------------------------------------------
def _gaussian(x: Tensor, dy: Tensor) -> Tensor:
    """dy * 2 / sqrt(pi) * exp(-x^2): the derivative of erf."""
    return dy * (_TWO_OVER_SQRT_PI * exp(-square(x)))


register_elementwise(
    "Erf",
    _vectorized(math.erf),
    {"f": "erf{sfx}({0})"},
    grad=lambda op, dy: [_gaussian(op.inputs[0], dy)],
)
register_elementwise(
    "Erfc",
    _vectorized(math.erfc),
    {"f": "erfc{sfx}({0})"},
    grad=lambda op, dy: [-_gaussian(op.inputs[0], dy)],
)
register_elementwise(
    "Lgamma",
    _vectorized(_lgamma),
    {"f": "lgamma{sfx}({0})"},
    grad=lambda op, dy: [dy * digamma(op.inputs[0])],
)
register_elementwise(
    "Digamma",
    _vectorized(_digamma),
    {"f": "tfc_digamma_{tag}({0})"},
    grad=lambda op, dy: [dy * polygamma(convert_to_tensor(1, dtype=dy.dtype), op.inputs[0])],
)
# the order a and the zeta exponent s have no gradient (TF's rules say so too)
register_elementwise(
    "Polygamma",
    _vectorized(_polygamma),
    {"f": "tfc_polygamma_{tag}({0}, {1})"},
    grad=lambda op, dy: [None, dy * polygamma(op.inputs[0] + 1, op.inputs[1])],
)
register_elementwise(
    "Zeta",
    _vectorized(_zeta),
    {"f": "tfc_zeta_{tag}({0}, {1})"},
    grad=lambda op, dy: [None, dy * -op.inputs[0] * zeta(op.inputs[0] + 1, op.inputs[1])],
)

erf = unary_frontend("Erf")
erfc = unary_frontend("Erfc")
lgamma = unary_frontend("Lgamma")
digamma = unary_frontend("Digamma")
polygamma = binary_frontend("Polygamma", "Polygamma")
zeta = binary_frontend("Zeta", "Zeta")


def lbeta(x: Any, name: str | None = None) -> Tensor:
    """`tf.lbeta`: log(|Beta(x)|) along the last dimension, sum(lgamma(x)) - lgamma(sum(x)),
    composed as TF composes it."""
    with name_scope(name, "lbeta") as scope:
        x = convert_to_tensor(x)
        log_prod_gamma = _reduce.reduce_sum(lgamma(x), axis=[-1])
        log_gamma_sum = lgamma(_reduce.reduce_sum(x, axis=[-1]))
        return subtract(log_prod_gamma, log_gamma_sum, name=scope)


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """`tf.log_sigmoid`: log(1 / (1 + exp(-x))) = -softplus(-x), without overflow."""
    with name_scope(name, "LogSigmoid") as scope:
        x = convert_to_tensor(x)
        return negative(softplus(negative(x)), name=scope)
