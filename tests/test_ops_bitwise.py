"""tf.bitwise: compiled C vs the NumPy reference vs independent formulas on Python integers."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(77)
DTYPES = ["int32", "int64"]
SHAPES = [((6,), (6,)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((0, 3), (3,))]


def _wrap(value: int, bits: int) -> int:
    """A Python integer as a `bits`-bit two's-complement value."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _elementwise(fn, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.broadcast_arrays(x, y)
    bits = np.iinfo(x.dtype).bits
    out = [fn(int(a), int(b), bits) for a, b in zip(x.ravel(), y.ravel())]
    return np.array(out, dtype=x.dtype).reshape(x.shape)


def _shl(a: int, b: int, bits: int) -> int:
    return _wrap(a << min(max(b, 0), bits - 1), bits)


def _shr(a: int, b: int, bits: int) -> int:
    return a >> min(max(b, 0), bits - 1)  # Python's >> is arithmetic (floor division)


BINARY = {
    "bitwise_and": (tf.bitwise.bitwise_and, lambda a, b, bits: a & b),
    "bitwise_or": (tf.bitwise.bitwise_or, lambda a, b, bits: a | b),
    "bitwise_xor": (tf.bitwise.bitwise_xor, lambda a, b, bits: a ^ b),
    "left_shift": (tf.bitwise.left_shift, _shl),
    "right_shift": (tf.bitwise.right_shift, _shr),
}


def _operands(dtype: str, sa: tuple, sb: tuple, shift: bool) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=sa, dtype=dtype, endpoint=True)
    if shift:  # amounts in range, negative and beyond the width: TF clamps them
        y = RNG.integers(-3, info.bits + 4, size=sb).astype(dtype)
    else:
        y = RNG.integers(info.min, info.max, size=sb, dtype=dtype, endpoint=True)
    return x, y


def build() -> CaseBatch:
    batch = CaseBatch()
    with batch.graph.as_default():
        for name, (fn, formula) in BINARY.items():
            for dtype in DTYPES:
                for k, (sa, sb) in enumerate(SHAPES):
                    x, y = _operands(dtype, sa, sb, "shift" in name)
                    tx, ty = (
                        (batch.feed(x), batch.feed(y))
                        if k % 2
                        else (tf.constant(x), tf.constant(y))
                    )
                    batch.add(f"{name}-{dtype}-{sa}x{sb}", fn(tx, ty), _elementwise(formula, x, y))
        for dtype in DTYPES:
            for k, (shape, _) in enumerate(SHAPES):
                x, _ = _operands(dtype, shape, shape, False)
                t = batch.feed(x) if k % 2 else tf.constant(x)
                expected = np.array([~int(v) for v in x.ravel()], dtype=dtype).reshape(x.shape)
                batch.add(f"invert-{dtype}-{shape}", tf.bitwise.invert(t), expected)
        # the edges of the shifts: the sign bit, INT_MIN, and amounts 0 and bits - 1
        for dtype in DTYPES:
            info = np.iinfo(dtype)
            x = np.array([info.min, -1, 1, info.max, -5, 5], dtype=dtype)
            y = np.array([0, info.bits - 1, info.bits - 1, 1, 2, info.bits], dtype=dtype)
            for name in ("left_shift", "right_shift"):
                fn, formula = BINARY[name]
                batch.add(f"{name}-edges-{dtype}", fn(tf.constant(x), tf.constant(y)),
                          _elementwise(formula, x, y))  # fmt: skip
    return batch


BITWISE = build()


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


def test_against_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    v1 = tf_real.compat.v1
    x = np.array([-7, 0, 5, 2**30, -(2**31)], np.int32)
    y = np.array([1, 31, -2, 3, 40], np.int32)
    fns = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
    with tf_real.Graph().as_default():
        a, b = v1.constant(x), v1.constant(y)
        ops = [getattr(tf_real.bitwise, f)(a, b) for f in fns] + [tf_real.bitwise.invert(a)]
        with v1.Session() as sess:
            want = sess.run(ops)
    with tf.Graph().as_default():
        a, b = tf.constant(x), tf.constant(y)
        ops = [getattr(tf.bitwise, f)(a, b) for f in fns] + [tf.bitwise.invert(a)]
        with tf.Session() as sess:
            got = sess.run(ops)
    for name, g, w in zip([*fns, "invert"], got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)
