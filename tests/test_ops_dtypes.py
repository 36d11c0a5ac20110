"""Every dtype through the op families: casts between every pair, element-wise math with
wrapping small integers and 16-bit floats computed in float32, reductions, data movement and
the kernels that run 16-bit floats in float32; compiled C vs the NumPy reference vs
independent formulas (TF's rules written out here, not tfc's code)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.client.request import RunRequest
from tfc.compiler import pipeline, run_passes
from tfc.ir.program import make_program_graph
from tfc.ops.fusion import is_fusion
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(20250316)

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
HALVES = ["float16", "bfloat16"]
FLOATS = ["float32", "float64", *HALVES]
COMPLEX = ["complex64", "complex128"]
STORABLE = [*FLOATS, *INTS, "bool", *COMPLEX]


# -- independent oracles --------------------------------------------------------------------------
def _f32_magnitude(bits: int) -> float:
    """The exact value of float32 magnitude bits (0x7f800000 read as 2^128, the next step)."""
    exponent, mantissa = bits >> 23, bits & 0x7FFFFF
    if exponent == 0:
        return math.ldexp(mantissa, -149)
    return math.ldexp(0x800000 | mantissa, exponent - 150)


def bf16_bits(values) -> np.ndarray:
    """bfloat16 bit patterns of float32 values, to nearest, ties to even, written as the
    choice between the two neighbours (not the bit trick tfc uses); NaN -> quiet NaN."""
    flat = np.asarray(values, np.float32).ravel()
    out = []
    for f, bits in zip(flat.tolist(), flat.view(np.uint32).tolist()):
        sign, magnitude = bits & 0x80000000, bits & 0x7FFFFFFF
        if f != f:
            out.append((sign >> 16) | 0x7FC0)
            continue
        if math.isinf(f):
            out.append(bits >> 16)
            continue
        down = magnitude & 0xFFFF0000
        up = down + 0x10000
        lo, hi, exact = _f32_magnitude(down), _f32_magnitude(up), abs(f)
        if exact - lo < hi - exact or (exact - lo == hi - exact and not (down >> 16) & 1):
            chosen = down
        else:
            chosen = up
        out.append((sign | chosen) >> 16)
    return np.array(out, np.uint16).reshape(np.shape(values))


def held(values, dtype: str) -> np.ndarray:
    """Values as tfc holds `dtype` in NumPy (bfloat16: ml_dtypes' type, or its bits in uint16)."""
    if dtype == "bfloat16":
        return bf16_bits(np.asarray(values, np.float64).astype(np.float32)).view(tf.bfloat16.np)
    if dtype == "float16":
        return np.asarray(values, np.float64).astype(np.float32).astype(np.float16)
    return np.asarray(values).astype(dtype)


def values_of(x: np.ndarray, dtype: str) -> np.ndarray:
    """The numbers a held array stands for (16-bit floats as float32)."""
    if dtype == "bfloat16":
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    if dtype == "float16":
        return x.astype(np.float32)
    return x


def tf_float_to_int(values: np.ndarray, dst: str) -> np.ndarray:
    """TensorFlow's float -> integer cast on x86 as its vectorized loops do it (out of range is
    undefined in C++; TF gives these for every element but a loop's last few), element by
    element: truncation toward zero; then 8 and 16-bit types clamp the int32 conversion (the
    instruction gives int32's minimum for NaN and values beyond int32) to their range; int32 and
    int64 give their minimum out of range; uint32 and uint64 take values from 2^31 (2^63) on as
    x - 2^31 (2^63) plus the top bit, and the top bit alone out of range."""
    bits = np.dtype(dst).itemsize * 8

    def convert(v: float, wide_bits: int) -> int | None:
        t = math.trunc(v) if math.isfinite(v) else None
        return t if t is not None and -(2 ** (wide_bits - 1)) <= t < 2 ** (wide_bits - 1) else None

    out = []
    for v in np.asarray(values, np.float64).ravel().tolist():
        if dst in ("uint32", "uint64"):
            t = math.trunc(v) if math.isfinite(v) else None
            if t is not None and -(2 ** (bits - 1)) <= t < 2**bits:
                out.append(t % 2**bits)
            else:
                out.append(2 ** (bits - 1))
        elif bits == 64 or dst == "int32":
            t = convert(v, bits)
            out.append(-(2 ** (bits - 1)) if t is None else t)
        else:
            info = np.iinfo(dst)
            t = convert(v, 32)
            out.append(info.min if t is None else min(max(t, info.min), info.max))
    return np.array(out, dtype=object).astype(dst).reshape(np.shape(values))


def expected_cast(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """TF's Cast of a held array from src to dst, held as dst."""
    if src in COMPLEX:
        if dst in COMPLEX:
            return x.astype(dst)
        if dst == "bool":
            return x != 0
        return expected_cast(x.real, "float32" if src == "complex64" else "float64", dst)
    if dst in COMPLEX:
        part = "float32" if dst == "complex64" else "float64"
        return expected_cast(x, src, part).astype(dst)
    v = values_of(x, src)
    if dst == "bool":
        return v != 0
    if dst in HALVES:
        return held(np.asarray(v).astype(np.float32), dst)  # through float32, as TF
    if np.dtype(v.dtype).kind == "f" and dst in INTS:
        return tf_float_to_int(v, dst)
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(dst)


def cast_values(dtype: str) -> np.ndarray:
    """Values of `dtype` that probe a cast: extremes, wrapping, rounding, NaN and infinities."""
    if dtype == "bool":
        return np.array([False, True, True])
    if dtype in INTS:
        info = np.iinfo(dtype)
        vals = [info.min, info.min + 1, -300, -129, -1, 0, 1, 127, 128, 255, 256, 300, 40000]
        vals += [70000, 2**31 + 5, 2**40 + 3, 2**53 + 1, info.max - 1, info.max]
        return np.array([v for v in vals if info.min <= v <= info.max], dtype=object).astype(dtype)
    if dtype in COMPLEX:
        return np.array([1.5 + 2j, -3.25 - 0.5j, 0j, 300.7 + 1j, -1e10 + 0j], dtype=dtype)
    vals = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 127.9, -128.9, 255.7, 300.2, -300.2, 32767.5]
    vals += [65535.9, 70000.5, -70000.5, 3e9, -3e9, 1e10, 5e18, 1.2e19, -1e19, 3e19, 1e-8]
    vals += [np.nan, np.inf, -np.inf]
    if dtype == "float64":
        vals += [1e300, 1 + 2.0**-11 + 2.0**-40]  # a half that rounds twice (through float32)
    return held(np.array(vals), dtype)


def feed(batch: CaseBatch, x: np.ndarray, dtype: str, shape="same") -> tf.Tensor:
    ph = tf.placeholder(tf.as_dtype(dtype), x.shape if shape == "same" else shape)
    batch.feed_dict[ph] = x
    return ph


def approx(dtype: str) -> dict:
    """The tolerance of a float result computed in float32 and rounded to `dtype`: half of its
    last place (plus float32's own rounding), in its relative terms."""
    return {"float16": {"rtol": 1e-3, "atol": 1e-4}, "bfloat16": {"rtol": 8e-3, "atol": 1e-3},
            "float32": {"rtol": 1e-5, "atol": 1e-6}, "float64": {"rtol": 1e-12, "atol": 1e-12}
            }.get(dtype, {})  # fmt: skip


# -- casts between every pair ---------------------------------------------------------------------
def build_casts() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for src in STORABLE:
            x = cast_values(src)
            t = feed(b, x, src)
            for dst in STORABLE:
                b.add(f"cast-{src}-{dst}", tf.cast(t, tf.as_dtype(dst)), expected_cast(x, src, dst))
    return b


# -- element-wise math ----------------------------------------------------------------------------
def int_operands(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs that overflow (they must wrap), and signs mixed for the divisions."""
    info = np.iinfo(dtype)
    a = [info.max, info.min, info.max - 3, 100, -7, 7, -128, 0, 13, info.min + 1]
    b = [1, -1, 5, 3, 2, -2, 3, 9, -4, 7]
    pairs = [
        (x, y) for x, y in zip(a, b) if info.min <= x <= info.max and info.min <= y <= info.max
    ]
    xs, ys = zip(*pairs)
    return np.array(xs, dtype=object).astype(dtype), np.array(ys, dtype=object).astype(dtype)


def wrap(values, dtype: str) -> np.ndarray:
    """Python integers as two's complement `dtype` (how TF's integer arithmetic wraps)."""
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    out = []
    for v in values:
        v = int(v) % 2**bits
        out.append(v - 2**bits if signed and v >= 2 ** (bits - 1) else v)
    return np.array(out, dtype=object).astype(dtype)


def _floordiv(a: int, b: int) -> int:
    return a // b


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


INT_BINARY = {
    "add": (tf.add, lambda a, b: a + b),
    "sub": (tf.subtract, lambda a, b: a - b),
    "mul": (tf.multiply, lambda a, b: a * b),
    "floordiv": (tf.floordiv, _floordiv),
    "floormod": (tf.floormod, lambda a, b: a - _floordiv(a, b) * b),
    "truncatediv": (tf.truncatediv, _truncdiv),
    "truncatemod": (tf.truncatemod, lambda a, b: a - _truncdiv(a, b) * b),
    "maximum": (tf.maximum, max),
    "minimum": (tf.minimum, min),
    "squared_difference": (tf.squared_difference, lambda a, b: (a - b) * (a - b)),
}
INT_UNARY = {
    "neg": (tf.negative, lambda a: -a),
    "abs": (tf.abs, abs),
    "square": (tf.square, lambda a: a * a),
    "sign": (tf.sign, lambda a: (a > 0) - (a < 0)),
    "relu": (tf.nn.relu, lambda a: max(a, 0)),
    "relu6": (tf.nn.relu6, lambda a: min(max(a, 0), 6)),
}
COMPARISONS = {
    "less": (tf.less, np.less),
    "greater_equal": (tf.greater_equal, np.greater_equal),
    "equal": (tf.equal, np.equal),
    "not_equal": (tf.not_equal, np.not_equal),
}


def build_int_math() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in INTS:
            a, c = int_operands(dtype)
            ta, tc = feed(b, a, dtype), tf.constant(c)
            pairs = list(zip(a.tolist(), c.tolist()))
            for name, (fn, rule) in INT_BINARY.items():
                want = wrap([rule(int(x), int(y)) for x, y in pairs], dtype)
                b.add(f"{name}-{dtype}", fn(ta, tc), want)
            for name, (fn, rule) in INT_UNARY.items():
                b.add(f"{name}-{dtype}", fn(ta), wrap([rule(int(x)) for x in a.tolist()], dtype))
            for name, (fn, rule) in COMPARISONS.items():
                b.add(f"{name}-{dtype}", fn(ta, tc), rule(a, c))
            small = np.array([0, 1, 2, 3, 5, 7], dtype=dtype)
            base = np.array([3, -2 if dtype[0] == "i" else 2, 7, 5, 2, 3], dtype=dtype)
            if dtype[0] == "i":  # TF's Pow has no unsigned kernels
                want = wrap(
                    [int(x) ** int(e) for x, e in zip(base.tolist(), small.tolist())], dtype
                )
                b.add(f"pow-{dtype}", tf.pow(tf.constant(base), feed(b, small, dtype)), want)
            # a chain the fuse pass would merge: each op wraps on its own
            product_plus = wrap([x * y + x for x, y in pairs], dtype)
            b.add(f"chain-{dtype}", tf.maximum(ta * tc + ta, tc), np.maximum(product_plus, c))
    return b


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


FLOAT_UNARY = {
    "neg": (tf.negative, np.negative),
    "abs": (tf.abs, np.abs),
    "square": (tf.square, np.square),
    "sqrt": (tf.sqrt, np.sqrt),
    "exp": (tf.exp, np.exp),
    "log": (tf.log, np.log),
    "tanh": (tf.tanh, np.tanh),
    "sigmoid": (tf.sigmoid, _sigmoid),
    "floor": (tf.floor, np.floor),
    "round": (tf.round, np.rint),
    "relu": (tf.nn.relu, lambda x: np.maximum(x, 0)),
    "softplus": (tf.nn.softplus, lambda x: np.log1p(np.exp(x))),
    "erf": (tf.math.erf, np.vectorize(math.erf)),
}
FLOAT_BINARY = {
    "add": (tf.add, np.add),
    "sub": (tf.subtract, np.subtract),
    "mul": (tf.multiply, np.multiply),
    "div": (tf.divide, np.divide),
    "maximum": (tf.maximum, np.maximum),
    "minimum": (tf.minimum, np.minimum),
    "floordiv": (tf.floordiv, np.floor_divide),
    "pow": (tf.pow, np.power),
}


def build_half_math() -> CaseBatch:
    """16-bit floats: each op computes in float32 and rounds once; results compared as values
    (cast to float32 in the graph) within half an ulp of the 16-bit type."""
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in HALVES:
            x = held(RNG.uniform(0.1, 4.0, (3, 5)), dtype)
            y = held(RNG.uniform(-3.0, 3.0, (3, 5)), dtype)
            tx, ty = feed(b, x, dtype), feed(b, y, dtype, [None, 5])
            vx, vy = values_of(x, dtype), values_of(y, dtype)
            as_value = lambda t: tf.cast(t, tf.float32)  # noqa: E731
            for name, (fn, rule) in FLOAT_UNARY.items():
                arg, value = (tx, vx) if name in ("sqrt", "log") else (ty, vy)
                with np.errstate(all="ignore"):
                    want = values_of(held(rule(value.astype(np.float64)), dtype), dtype)
                b.add(f"{name}-{dtype}", as_value(fn(arg)), want, **approx(dtype))
            for name, (fn, rule) in FLOAT_BINARY.items():
                with np.errstate(all="ignore"):
                    want = values_of(held(rule(vx.astype(np.float64), vy), dtype), dtype)
                b.add(f"{name}-{dtype}", as_value(fn(tx, ty)), want, **approx(dtype))
            for name, (fn, rule) in COMPARISONS.items():
                b.add(f"{name}-{dtype}", fn(tx, ty), rule(vx, vy))
            b.add(f"is_nan-{dtype}", tf.is_nan(tf.sqrt(ty)), np.isnan(np.sqrt(vy)))
            # exact results compare as the held bits: products of 8-bit mantissas are exact in
            # float32, so one rounding decides them
            b.add(f"mul-held-{dtype}", tx * ty, held(vx.astype(np.float64) * vy, dtype))
            b.add(
                f"chain-held-{dtype}",
                tf.maximum(tx * ty, ty) - tx,
                held(
                    values_of(
                        held(
                            np.maximum(
                                values_of(held(vx * vy.astype(np.float64), dtype), dtype), vy
                            ),
                            dtype,
                        ),
                        dtype,
                    )
                    - vx,
                    dtype,
                ),
            )
            # float16 overflows to infinity; bfloat16 has float32's range
            big = held(np.array([60000.0, 3e38]), dtype)
            tb = feed(b, big, dtype)
            want = values_of(big, dtype).astype(np.float64) * 2
            b.add(
                f"overflow-{dtype}",
                as_value(tb * tf.constant(2, tf.as_dtype(dtype))),
                values_of(held(want, dtype), dtype),
            )
    return b


# -- reductions, scans, arg-reductions ------------------------------------------------------------
def _trunc_mean(total: int, count: int) -> int:
    return -(-total // count) if total < 0 else total // count


def build_reductions() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in INTS:
            info = np.iinfo(dtype)
            x = RNG.integers(max(info.min, -100), min(info.max, 120), (4, 6)).astype(dtype)
            x[0, :3] = info.max  # sums and products overflow and wrap; Mean up to 32 bits not
            t = feed(b, x, dtype)
            big = x.astype(object)
            b.add(f"sum-{dtype}", tf.reduce_sum(t, 1), wrap(big.sum(axis=1), dtype))
            b.add(f"sum-all-{dtype}", tf.reduce_sum(t), wrap([big.sum()], dtype).reshape(()))
            b.add(f"prod-{dtype}", tf.reduce_prod(t, 0), wrap(np.prod(big, axis=0), dtype))
            b.add(f"max-{dtype}", tf.reduce_max(t, 0), x.max(axis=0))
            b.add(f"min-{dtype}", tf.reduce_min(t, [0, 1]), x.min())
            if info.bits <= 32:  # TF sums these in 64 bits: their mean cannot overflow
                means = [_trunc_mean(int(s), 6) for s in big.sum(axis=1)]
            else:
                means = [_trunc_mean(int(s), 6) for s in wrap(big.sum(axis=1), dtype).tolist()]
            b.add(
                f"mean-{dtype}", tf.reduce_mean(t, 1), np.array(means, dtype=object).astype(dtype)
            )
            b.add(f"argmax-{dtype}", tf.argmax(t, 1), x.argmax(axis=1))
            b.add(
                f"argmin-{dtype}",
                tf.argmin(t, 0, output_type=tf.int32),
                x.argmin(axis=0).astype(np.int32),
            )
            b.add(
                f"cumsum-{dtype}",
                tf.cumsum(t, 1),
                wrap(np.cumsum(big, axis=1).ravel(), dtype).reshape(x.shape),
            )
        for dtype in HALVES:
            x = held(RNG.uniform(-2.0, 2.0, (5, 7)), dtype)
            t, v = feed(b, x, dtype), values_of(x, dtype).astype(np.float64)
            f32 = lambda r: tf.cast(r, tf.float32)  # noqa: E731
            for name, fn, rule in [
                ("sum", tf.reduce_sum, np.sum),
                ("mean", tf.reduce_mean, np.mean),
                ("max", tf.reduce_max, np.max),
                ("prod", tf.reduce_prod, np.prod),
            ]:
                want = values_of(held(rule(v, axis=1), dtype), dtype)
                b.add(f"{name}-{dtype}", f32(fn(t, 1)), want, **approx(dtype))
            b.add(f"argmax-{dtype}", tf.argmax(t, 0), v.argmax(axis=0))
            b.add(
                f"cumsum-{dtype}",
                f32(tf.cumsum(t, 1)),
                values_of(held(np.cumsum(v, axis=1), dtype), dtype),
                **approx(dtype),
            )
            values, indices = tf.nn.top_k(t, 3)
            order = np.argsort(-v, axis=1, kind="stable")[:, :3]
            b.add(f"top_k-{dtype}", values, np.take_along_axis(x, order, 1))
            b.add(f"top_k-indices-{dtype}", indices, order.astype(np.int32))
            b.add(f"sort-{dtype}", tf.sort(t), np.take_along_axis(x, np.argsort(v, 1), 1))
            ids = np.array([0, 2, 0, 1, 2])
            want = np.stack([v[ids == k].sum(axis=0) for k in range(3)])
            b.add(
                f"segment_sum-{dtype}",
                f32(tf.unsorted_segment_sum(t, ids, 3)),
                values_of(held(want, dtype), dtype),
                **approx(dtype),
            )
        z = np.array([[1 + 2j, -3 + 0.5j], [0.25 - 1j, 2 + 2j]], np.complex64)
        b.add("sum-complex64", tf.reduce_sum(feed(b, z, "complex64"), 0), z.sum(axis=0))
    return b


# -- data movement: every storable dtype -----------------------------------------------------------
def sample(dtype: str, shape: tuple) -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype in INTS:
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, dtype=np.int64 if info.bits < 64 else
                            dtype, endpoint=True).astype(dtype)  # fmt: skip
    if dtype in COMPLEX:
        return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)
    return held(RNG.normal(size=shape) * 100, dtype)


def one_of(dtype: str, value: float):
    """A Python scalar of `dtype` for constant_values, fill, one_hot."""
    return bool(value) if dtype == "bool" else complex(value) if dtype in COMPLEX else value


def build_movement() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in STORABLE:
            x = sample(dtype, (3, 4, 2))
            t = feed(b, x, dtype)
            d = tf.as_dtype(dtype)
            k = held(7, dtype) if dtype in HALVES else np.array(one_of(dtype, 7)).astype(dtype)
            cases = {
                "identity": (tf.identity(t), x),
                "reshape": (tf.reshape(t, [4, 6]), x.reshape(4, 6)),
                "transpose": (tf.transpose(t, [2, 0, 1]), x.transpose(2, 0, 1)),
                "concat": (tf.concat([t, t[:1]], 0), np.concatenate([x, x[:1]], 0)),
                "slice": (tf.slice(t, [1, 0, 1], [2, 3, 1]), x[1:3, 0:3, 1:2]),
                "strided": (t[::-1, 1::2, 0], x[::-1, 1::2, 0]),
                "gather": (tf.gather(t, [2, 0, 2], axis=0), x[[2, 0, 2]]),
                "gather_nd": (tf.gather_nd(t, [[1, 2], [0, 0]]), x[[1, 0], [2, 0]]),
                "tile": (tf.tile(t, [1, 2, 1]), np.tile(x, (1, 2, 1))),
                "pad": (
                    tf.pad(t, [[1, 0], [0, 1], [0, 0]], constant_values=one_of(dtype, 7)),
                    np.pad(x, [(1, 0), (0, 1), (0, 0)], constant_values=k),
                ),
                "reverse": (tf.reverse(t, [1]), x[:, ::-1]),
                "stack": (tf.stack([t[0], t[2]], 1), np.stack([x[0], x[2]], 1)),
                "unstack": (tf.unstack(t, axis=1)[3], x[:, 3]),
                "split": (tf.split(t, 2, axis=1)[1], x[:, 2:]),
                "expand_squeeze": (tf.squeeze(tf.expand_dims(t, 0), [0]), x),
                "broadcast_to": (
                    tf.broadcast_to(t[:1], [2, 4, 2]),
                    np.broadcast_to(x[:1], (2, 4, 2)),
                ),
                "roll": (tf.roll(t, 1, axis=1), np.roll(x, 1, axis=1)),
                "where": (
                    tf.where(tf.constant(np.eye(4, 2, dtype=bool)), t[0], t[1]),
                    np.where(np.eye(4, 2, dtype=bool), x[0], x[1]),
                ),
                "zeros_like": (tf.zeros_like(t), np.zeros_like(x)),
                "fill": (tf.fill([2, 2], tf.constant(k, d)), np.full((2, 2), k)),
                "one_hot": (
                    tf.one_hot([2, 0], 3, on_value=tf.constant(k, d), off_value=tf.zeros([], d)),
                    np.where(np.eye(3, dtype=bool)[[2, 0]], k, np.zeros((), x.dtype)),
                ),
            }
            if dtype != "bool":
                cases["ones_like"] = (tf.ones_like(t), held(np.ones(x.shape), dtype)
                                      if dtype in HALVES else np.ones_like(x))  # fmt: skip
            for name, (tensor, want) in cases.items():
                b.add(f"{name}-{dtype}", tensor, np.asarray(want).astype(x.dtype))
    return b


# -- kernels that run 16-bit floats in float32 -----------------------------------------------------
def conv2d_valid(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, h, wd, _ = x.shape
    kh, kw, _, co = w.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, co))
    for i in range(h - kh + 1):
        for j in range(wd - kw + 1):
            out[:, i, j] = np.tensordot(x[:, i : i + kh, j : j + kw], w, axes=3)
    return out


def build_half_kernels() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in HALVES:
            f32 = lambda r: tf.cast(r, tf.float32)  # noqa: E731
            tol = {
                "float16": {"rtol": 2e-3, "atol": 2e-3},
                "bfloat16": {"rtol": 1e-2, "atol": 1e-2},
            }
            a, w = held(RNG.normal(size=(4, 6)), dtype), held(RNG.normal(size=(6, 3)), dtype)
            va, vw = values_of(a, dtype).astype(np.float64), values_of(w, dtype).astype(np.float64)
            ta, tw = feed(b, a, dtype), feed(b, w, dtype)
            rounded = lambda v, d=dtype: values_of(held(v, d), d)  # noqa: E731
            b.add(f"matmul-{dtype}", f32(tf.matmul(ta, tw)), rounded(va @ vw), **tol[dtype])
            b.add(
                f"matmul-ta-{dtype}",
                f32(tf.matmul(tw, ta, transpose_a=True, transpose_b=True)),
                rounded(vw.T @ va.T),
                **tol[dtype],
            )
            b.add(
                f"batch_matmul-{dtype}",
                f32(tf.matmul(tf.stack([ta, ta]), tw)),
                rounded(np.stack([va @ vw] * 2)),
                **tol[dtype],
            )
            e = np.exp(va - va.max(axis=1, keepdims=True))
            b.add(
                f"softmax-{dtype}",
                f32(tf.nn.softmax(ta)),
                rounded(e / e.sum(1, keepdims=True)),
                **tol[dtype],
            )
            b.add(
                f"log_softmax-{dtype}",
                f32(tf.nn.log_softmax(ta)),
                rounded(np.log(e / e.sum(1, keepdims=True))),
                **tol[dtype],
            )
            labels = np.array([0, 5, 2, 3])
            xent = -np.log((e / e.sum(1, keepdims=True))[np.arange(4), labels])
            b.add(
                f"sparse_xent-{dtype}",
                f32(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=ta)),
                rounded(xent),
                **tol[dtype],
            )
            bias = held(RNG.normal(size=6), dtype)
            b.add(
                f"bias_add-{dtype}",
                tf.nn.bias_add(ta, tf.constant(bias, ta.dtype)),
                held(va + values_of(bias, dtype), dtype),
            )
            b.add(f"add_n-{dtype}", f32(tf.add_n([ta, ta, ta])), rounded(3 * va), **tol[dtype])
            img = held(RNG.normal(size=(2, 5, 5, 3)), dtype)
            ker = held(RNG.normal(size=(2, 2, 3, 4)), dtype)
            vi, vk = values_of(img, dtype).astype(np.float64), values_of(ker, dtype)
            ti, tk = feed(b, img, dtype), feed(b, ker, dtype)
            conv = tf.nn.conv2d(ti, tk, [1, 1, 1, 1], "VALID")
            b.add(f"conv2d-{dtype}", f32(conv), rounded(conv2d_valid(vi, vk)), **tol[dtype])
            pooled = vi[:, :4, :4].reshape(2, 2, 2, 2, 2, 3)
            b.add(
                f"max_pool-{dtype}",
                tf.nn.max_pool(ti, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
                held(pooled.max(axis=(2, 4)), dtype),
            )
            b.add(
                f"avg_pool-{dtype}",
                f32(tf.nn.avg_pool(ti, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")),
                rounded(pooled.mean(axis=(2, 4))),
                **tol[dtype],
            )
            b.add(
                f"range-{dtype}",
                f32(tf.range(0.0, 2.0, 0.25, dtype=tf.as_dtype(dtype))),
                np.arange(0, 2, 0.25, dtype=np.float32),
            )
    return b


with np.errstate(all="ignore"):  # the oracles meet NaN, overflow and out-of-range casts
    CASTS = build_casts()
    INT_MATH = build_int_math()
    HALF_MATH = build_half_math()
    REDUCTIONS = build_reductions()
    MOVEMENT = build_movement()
    HALF_KERNELS = build_half_kernels()


@pytest.mark.parametrize("case", CASTS.ids())
def test_casts(case):
    CASTS.check(case)


@pytest.mark.parametrize("case", INT_MATH.ids())
def test_integer_math_wraps(case):
    INT_MATH.check(case)


@pytest.mark.parametrize("case", HALF_MATH.ids())
def test_half_math_in_float32(case):
    HALF_MATH.check(case)


@pytest.mark.parametrize("case", REDUCTIONS.ids())
def test_reductions(case):
    REDUCTIONS.check(case)


@pytest.mark.parametrize("case", MOVEMENT.ids())
def test_data_movement(case):
    MOVEMENT.check(case)


@pytest.mark.parametrize("case", HALF_KERNELS.ids())
def test_half_kernels_in_float32(case):
    HALF_KERNELS.check(case)


def test_fused_loops_agree_with_one_kernel_per_op():
    """The fuse pass merges chains of 16-bit and small-integer ops into one loop; each member
    rounds (wraps) as its own kernel does, so the bits are the same."""
    graph = tf.Graph()
    with graph.as_default():
        h = tf.placeholder(tf.float16, [64])
        bf = tf.placeholder(tf.bfloat16, [64])
        i8 = tf.placeholder(tf.int8, [64])
        outs = [
            tf.tanh(h * h + 1.5) / (h - 3.0),
            tf.reduce_sum(tf.exp(bf) * bf),
            tf.cast(i8 * i8 + 100, tf.float16) * h,
            tf.cast(tf.nn.relu(h) * 300.0, tf.uint8),
        ]
        feed_dict = {
            h: held(RNG.normal(size=64), "float16"),
            bf: held(RNG.normal(size=64), "bfloat16"),
            i8: RNG.integers(-128, 127, 64).astype(np.int8),
        }
        request = RunRequest(graph, outs, feed_dict)
        program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
        program = run_passes(program, pipeline())
        fusions = [n for n in program.graph_attrs["schedule"] if is_fusion(program.node(n)["op"])]
        assert len(fusions) >= 3, fusions
        with tf.Session() as sess:
            fused = sess.run(outs, feed_dict)
        with tf.Session(config=tf.CompileOptions(passes=[])) as sess:
            alone = sess.run(outs, feed_dict)
    for got, want in zip(fused, alone):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view("u1"))


# -- feeds, fetches, variables, pipelines ----------------------------------------------------------
def test_bfloat16_numpy_values_round_trip():
    """bfloat16 is held as ml_dtypes.bfloat16 where that package is installed, else as its bit
    patterns in uint16; Python floats and float32 arrays fed to it round to nearest, even."""
    x = tf.placeholder(tf.bfloat16, [4])
    y = x * 2
    with tf.Session() as sess:
        got = sess.run(y, {x: [1.0, 1.00390625, 3.0, -0.1]})
    assert got.dtype == tf.bfloat16.as_numpy_dtype
    bits = got.view(np.uint16)
    np.testing.assert_array_equal(bits, bf16_bits(np.array([2.0, 2.0, 6.0, -0.2], np.float32)))
    assert tf.as_dtype(tf.bfloat16.as_numpy_dtype) in (tf.bfloat16, tf.uint16)


def test_variables_of_small_dtypes(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        u = tf.Variable(np.array([250, 3], np.uint8), name="u")
        h = tf.Variable(np.array([1.5, -2.25], np.float16), name="h")
        bump = [tf.assign_add(u, tf.constant([10, 1], tf.uint8)), tf.assign(h, h * 2)]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(bump)
            got_u, got_h = sess.run([u, h])
            # checkpoints hold what the native runtime reads: the core dtypes only
            with pytest.raises(ValueError, match="tensor 'u' has dtype uint8; tfc checkpoints"):
                saver.save(sess, str(tmp_path / "model"))
    np.testing.assert_array_equal(got_u, np.array([4, 4], np.uint8))  # 250 + 10 wraps
    np.testing.assert_array_equal(got_h, np.array([3.0, -4.5], np.float16))


def test_uint8_images_through_a_dataset():
    images = RNG.integers(0, 256, (10, 4, 4, 1)).astype(np.uint8)
    labels = np.arange(10, dtype=np.int64)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(4)
    x, y = ds.make_one_shot_iterator().get_next()
    assert x.dtype is tf.uint8
    pixels = tf.image.convert_image_dtype(x, tf.float32)
    with tf.Session() as sess:
        got, got_y = sess.run([pixels, y])
    np.testing.assert_allclose(got, images[:4].astype(np.float32) * np.float32(1 / 255), rtol=1e-6)
    np.testing.assert_array_equal(got_y, labels[:4])


# -- conversions: saturate_cast, bitcast, convert_image_dtype, complex -----------------------------
def test_saturate_cast_clamps_to_the_target_range():
    x = np.array([-1e10, -300.5, -1.5, 0.4, 254.6, 300.0, 3e9, 1e20], np.float32)
    graph = tf.Graph()
    with graph.as_default():
        t = tf.constant(x)
        outs = [tf.saturate_cast(t, tf.uint8), tf.saturate_cast(t, tf.int32),
                tf.saturate_cast(t, tf.float16), tf.saturate_cast(t, tf.uint64),
                tf.saturate_cast(tf.constant([70000, -5], tf.int32), tf.int16)]  # fmt: skip
        with tf.Session(config=tf.CompileOptions(passes=[])) as sess:
            got = sess.run(outs)
    np.testing.assert_array_equal(got[0], [0, 0, 0, 0, 254, 255, 255, 255])
    largest_f32_int32 = 2147483520  # float32 cannot hold 2^31 - 1: the float below it
    np.testing.assert_array_equal(
        got[1], [-(2**31), -300, -1, 0, 254, 300, largest_f32_int32, largest_f32_int32]
    )
    np.testing.assert_array_equal(got[2], np.clip(x, -65504, 65504).astype(np.float16))
    assert got[3][0] == 0 and got[3][-1] == 18446742974197923840  # the float32 below 2^64
    np.testing.assert_array_equal(got[4], np.array([32767, -5], np.int16))


def test_bitcast_reinterprets_bytes():
    x = np.array([[1.5, -2.0], [np.inf, 0.1]], np.float32)
    graph = tf.Graph()
    with graph.as_default():
        t = tf.constant(x)
        narrow = tf.bitcast(t, tf.uint8)
        outs = [tf.bitcast(t, tf.int32), narrow, tf.bitcast(narrow, tf.float32),
                tf.bitcast(tf.bitcast(t, tf.uint16), tf.float16),
                tf.bitcast(tf.constant(x.astype(np.float64)), tf.complex64)]  # fmt: skip
        with tf.Session(config=tf.CompileOptions(passes=[])) as sess:
            got = sess.run(outs)
        reference = Interpreter(graph).run(outs)
    want = [x.view(np.int32), x.view(np.uint8).reshape(2, 2, 4), x,
            x.view(np.uint16).view(np.float16).reshape(2, 2, 2),
            x.astype(np.float64).view(np.complex64).reshape(2, 2)]  # fmt: skip
    for g, r, w in zip(got, reference, want):
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
        np.testing.assert_array_equal(r.view(np.uint8), w.view(np.uint8))
    with pytest.raises(ValueError, match="Cannot bitcast from uint8 to float"):
        tf.bitcast(tf.constant(np.zeros((2, 3), np.uint8)), tf.float32)


def test_convert_image_dtype_scales_as_tf():
    graph = tf.Graph()
    with graph.as_default():
        u8 = tf.constant(np.array([0, 1, 128, 255], np.uint8))
        f = tf.constant(np.array([0.0, 0.5, 1.0, 1.2], np.float32))
        i16 = tf.constant(np.array([1000, 2000, 32767, -5], np.int16))
        outs = [
            tf.image.convert_image_dtype(u8, tf.int16),
            tf.image.convert_image_dtype(i16, tf.uint8),
            tf.image.convert_image_dtype(f, tf.uint8),
            tf.image.convert_image_dtype(f, tf.uint8, saturate=True),
            tf.image.convert_image_dtype(u8, tf.float16),
        ]
        with tf.Session() as sess:
            got = sess.run(outs)
    np.testing.assert_array_equal(got[0], [0, 128, 16384, 32640])  # * (32768 // 256)
    np.testing.assert_array_equal(got[1], [7, 15, 255, 255])  # // 128; -1 wraps to 255
    np.testing.assert_array_equal(got[2], [0, 127, 255, 255])  # 1.2 * 255.5: cast clamps
    np.testing.assert_array_equal(got[3], [0, 127, 255, 255])
    np.testing.assert_array_equal(
        got[4], (np.array([0, 1, 128, 255]) / np.float32(255)).astype(np.float32).astype(np.float16)
    )


def test_complex_parts_and_arithmetic():
    z = np.array([1 + 2j, -3.5 + 0.5j, 0.25 - 4j], np.complex64)
    graph = tf.Graph()
    with graph.as_default():
        t = tf.constant(z)
        re, im = tf.constant(z.real), tf.constant(z.imag)
        outs = [tf.complex(re, im), tf.real(t), tf.imag(t), tf.conj(t), tf.abs(t), tf.angle(t),
                t * t - t, t / tf.constant(z[::-1]), tf.reduce_sum(t), tf.equal(t, tf.conj(t)),
                tf.cast(t, tf.complex128), tf.cast(t, tf.int32), tf.real(re),
                tf.imag(re)]  # fmt: skip
        with tf.Session(config=tf.CompileOptions(passes=[])) as sess:
            got = sess.run(outs)
        with tf.Session() as sess:
            fused = sess.run(outs)
    want = [z, z.real, z.imag, np.conj(z), np.abs(z), np.angle(z), z * z - z, z / z[::-1],
            z.sum(), z == np.conj(z), z.astype(np.complex128), z.real.astype(np.int32), z.real,
            np.zeros(3, np.float32)]  # fmt: skip
    for g, f, w in zip(got, fused, want):
        assert g.dtype == np.asarray(w).dtype and f.dtype == g.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(f, w, rtol=1e-6, atol=1e-6)


def test_complex_gradients_use_the_conjugate():
    """d|z w|^2: TF's rules give the conjugate products (the gradient of a real loss)."""
    z = np.array([1 + 2j, -0.5 + 1j], np.complex64)
    w = np.array([0.5 - 1j, 2 + 0.25j], np.complex64)
    graph = tf.Graph()
    with graph.as_default():
        tz, tw = tf.constant(z), tf.constant(w)
        p = tz * tw
        loss = tf.reduce_sum(tf.real(p * tf.conj(p)))
        (gz,) = tf.gradients(loss, [tz])
        with tf.Session() as sess:
            got = sess.run(gz)
    np.testing.assert_allclose(got, 2 * z * w * np.conj(w), rtol=1e-6)


# -- errors -------------------------------------------------------------------------------------
def test_ops_refuse_dtypes_they_have_no_kernel_for():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="qint8.*no quantized types"):
            tf.placeholder(tf.qint8, [2])
        with pytest.raises(TypeError, match="DataType int8 not in list of allowed values"):
            tf.exp(tf.constant([1], tf.int8))
        with pytest.raises(TypeError, match="DataType int8 not in list of allowed values"):
            tf.matmul(tf.ones([2, 2], tf.int8), tf.ones([2, 2], tf.int8))
        with pytest.raises(TypeError, match="DataType complex64 not in list of allowed"):
            tf.reduce_mean(tf.constant([1j], tf.complex64))
        with pytest.raises(TypeError, match="must have one type, got bfloat16 and float32"):
            tf.matmul(tf.ones([2, 2], tf.bfloat16), tf.ones([2, 2]))
        with pytest.raises(TypeError, match="Pow"):
            tf.pow(tf.constant([2], tf.uint8), tf.constant([2], tf.uint8))
        with pytest.raises(ValueError, match="Invalid dtype float16 for random_uniform"):
            tf.random_uniform([2], dtype=tf.float16)  # TF's 16-bit draws are not float32's


def test_print_writes_every_dtype_as_tf(capfd):
    """The native text kernels write the small integers, uint64 beyond int64 and the 16-bit
    floats as the floats they widen to; complex values (Python) as TF's "?"."""
    x = tf.placeholder(tf.uint8, [3])
    h = tf.placeholder(tf.float16, [2])
    b = tf.placeholder(tf.bfloat16, [2])
    u = tf.placeholder(tf.uint64, [1])
    shown = [
        x,
        h,
        b,
        u,
        tf.constant(np.array([1.5, 2.25], np.float16)),
        tf.constant([0.5, 3], tf.bfloat16),
    ]
    printed = tf.Print(x, shown, "vals: ")
    with tf.Session() as sess:
        sess.run(printed, {x: [1, 200, 255], h: [0.1, 65504], b: [1.0, 3.0], u: [2**64 - 1]})
        sess.run(tf.Print(x, [tf.constant([1 + 2j], tf.complex64)], "complex: "), {x: [0, 0, 0]})
    err = capfd.readouterr().err
    # TF 2.21's tf.compat.v1.Print writes these very lines
    assert (
        "vals: [1 200 255][0.0999755859 65504][1 3][18446744073709551615][1.5 2.25][0.5 3]" in err
    )
    assert "complex: [?]" in err


def build_bitwise() -> CaseBatch:
    """tf.bitwise on every integer width: shifts clamp their amount to [0, bits - 1] (TF's
    kernels), a right shift of a negative value is arithmetic."""
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in INTS:
            info = np.iinfo(dtype)
            bits = info.bits
            x = np.array([info.min, -5 if info.min else 5, 0, 1, 0x5A, info.max], dtype=dtype)
            n = np.array([1, 2, bits + 3, bits - 1, 0, 3], dtype=dtype)
            if info.min:
                n[2] = -2  # negative amounts clamp to 0
            tx, tn = feed(b, x, dtype), tf.constant(n)
            k = np.clip(n.astype(object), 0, bits - 1)
            ux = [int(v) % 2**bits for v in x.tolist()]
            shl = wrap([(u << int(s)) % 2**bits for u, s in zip(ux, k)], dtype)
            shr = np.array([int(v) >> int(s) for v, s in zip(x.tolist(), k)], dtype=object)
            b.add(f"and-{dtype}", tf.bitwise.bitwise_and(tx, tn), x & n)
            b.add(f"or-{dtype}", tf.bitwise.bitwise_or(tx, tn), x | n)
            b.add(f"xor-{dtype}", tf.bitwise.bitwise_xor(tx, tn), x ^ n)
            b.add(f"invert-{dtype}", tf.bitwise.invert(tx), ~x)
            b.add(f"left_shift-{dtype}", tf.bitwise.left_shift(tx, tn), shl)
            b.add(f"right_shift-{dtype}", tf.bitwise.right_shift(tx, tn), shr.astype(dtype))
        # broadcasting, on random values of the whole range and amounts beyond it either side
        for dtype in ("int32", "uint64"):
            info = np.iinfo(dtype)
            x = RNG.integers(info.min, info.max, size=(4, 1), dtype=dtype, endpoint=True)
            n = RNG.integers(-3 if info.min else 0, info.bits + 4, size=(1, 5)).astype(dtype)
            pairs = [
                (int(v), int(s)) for v, s in zip(*(a.ravel() for a in np.broadcast_arrays(x, n)))
            ]
            k = [min(max(s, 0), info.bits - 1) for _, s in pairs]
            tx, tn = feed(b, x, dtype), feed(b, n, dtype)
            for name, fn, values in [
                ("and", tf.bitwise.bitwise_and, [v & s for v, s in pairs]),
                ("xor", tf.bitwise.bitwise_xor, [v ^ s for v, s in pairs]),
                ("left_shift", tf.bitwise.left_shift, [v << j for (v, _), j in zip(pairs, k)]),
                ("right_shift", tf.bitwise.right_shift, [v >> j for (v, _), j in zip(pairs, k)]),
            ]:
                b.add(f"{name}-broadcast-{dtype}", fn(tx, tn), wrap(values, dtype).reshape(4, 5))
    return b


with np.errstate(all="ignore"):
    BITWISE = build_bitwise()


@pytest.mark.parametrize("case", BITWISE.ids())
def test_bitwise(case):
    BITWISE.check(case)


@pytest.mark.parametrize("fn", [tf.bitwise.bitwise_and, tf.bitwise.left_shift])
def test_bitwise_ops_take_integers_only(fn):
    with pytest.raises(TypeError, match="float"):
        fn(tf.constant([1.0]), tf.constant([2.0]))


def test_bitwise_ops_have_no_gradient():
    x = tf.placeholder(tf.int32, [3])
    assert tf.gradients(tf.bitwise.bitwise_and(x, 3), x) == [None]


def build_conversions() -> CaseBatch:
    """Complex numbers' ops, bitcasts and saturating casts in one batch (so that every target's
    op-batch tests run them too)."""
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in COMPLEX:
            z = np.array([1 + 2j, -3.5 + 0.5j, 0.25 - 4j], dtype)
            t = feed(b, z, dtype)
            part = z.real.dtype.name
            re, im = feed(b, z.real, part), feed(b, z.imag, part)
            tol = {"rtol": 1e-6 if dtype == "complex64" else 1e-12}
            cases = {
                "complex": (tf.complex(re, im), z),
                "real": (tf.real(t), z.real),
                "imag": (tf.imag(t), z.imag),
                "conj": (tf.conj(t), np.conj(z)),
                "abs": (tf.abs(t), np.abs(z)),
                "angle": (tf.angle(t), np.angle(z)),
                "equal": (tf.equal(t, tf.conj(t)), z == np.conj(z)),
                "add": (t + t, z + z),
                "neg": (-t, -z),
            }
            for name, (tensor, want) in cases.items():
                b.add(f"{name}-{dtype}", tensor, np.asarray(want), **tol)
        x = np.array([[1.5, -2.0], [np.inf, 0.1]], np.float32)
        tx = feed(b, x, "float32")
        b.add("bitcast-int32", tf.bitcast(tx, tf.int32), x.view(np.int32))
        b.add("bitcast-uint8", tf.bitcast(tx, tf.uint8), x.view(np.uint8).reshape(2, 2, 4))
        b.add("bitcast-back", tf.bitcast(tf.bitcast(tx, tf.uint16), tf.float32), x)
        f = np.array([-1e10, -300.5, 0.4, 254.6, 300.0, 3e9], np.float32)
        tf_ = feed(b, f, "float32")
        b.add("saturate-uint8", tf.saturate_cast(tf_, tf.uint8), np.array([0, 0, 0, 254, 255, 255],
                                                                          np.uint8))  # fmt: skip
        b.add("saturate-int8", tf.saturate_cast(tf_, tf.int8),
              np.array([-128, -128, 0, 127, 127, 127], np.int8))  # fmt: skip
    return b


CONVERSIONS = build_conversions()


@pytest.mark.parametrize("case", CONVERSIONS.ids())
def test_conversions(case):
    CONVERSIONS.check(case)
