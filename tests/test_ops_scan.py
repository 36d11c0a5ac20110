"""cumsum and cumprod: compiled C vs the NumPy reference vs NumPy's accumulate, every axis,
exclusive and reverse, all numeric dtypes."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(31)
DTYPES = ["float32", "float64", "int32", "int64"]
SHAPES = [(7,), (3, 4), (2, 3, 5), (4, 1, 3), (0, 3), (3, 0)]


def expected(x: np.ndarray, axis: int, exclusive: bool, reverse: bool, op: str) -> np.ndarray:
    """The running fold from NumPy's accumulate (float32 sums in float32, ints wrap)."""
    ufunc, identity = (np.add, 0) if op == "cumsum" else (np.multiply, 1)
    y = np.flip(x, axis) if reverse else x
    with np.errstate(over="ignore"):
        out = ufunc.accumulate(y, axis=axis, dtype=x.dtype)
    if exclusive:
        out = np.roll(out, 1, axis=axis)
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, 1)
        out[tuple(index)] = identity
    return np.flip(out, axis) if reverse else out


def sample(dtype: str, shape: tuple, op: str) -> np.ndarray:
    if dtype.startswith("int"):
        low, high = (-3, 4) if op == "cumprod" else (-50, 51)
        return RNG.integers(low, high, shape).astype(dtype)
    if op == "cumprod":  # magnitudes near 1: long products neither vanish nor overflow
        return (RNG.uniform(0.6, 1.4, shape) * RNG.choice([-1, 1], shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for op, fn in (("cumsum", tf.cumsum), ("cumprod", tf.cumprod)):
            for dtype in DTYPES:
                for k, shape in enumerate(SHAPES):
                    x = sample(dtype, shape, op)
                    t = b.feed(x, [None] * len(shape)) if k % 2 else tf.constant(x)
                    for axis in [*range(len(shape)), -1]:
                        for exclusive in (False, True):
                            for reverse in (False, True):
                                flags = f"{'e' if exclusive else ''}{'r' if reverse else ''}"
                                if axis < 0 and flags:
                                    continue  # a negative axis once per shape
                                y = fn(t, axis, exclusive=exclusive, reverse=reverse)
                                want = expected(x, axis % len(shape), exclusive, reverse, op)
                                b.add(f"{op}-{dtype}-{shape}-axis{axis}{flags}", y, want)
        # overflow wraps for integers, as TF's kernels do
        big = np.array([2**30, 2**30, 2**30], np.int32)
        with np.errstate(over="ignore"):
            b.add("cumsum-int32-wraps", tf.cumsum(big), np.cumsum(big, dtype=np.int32))
        # an axis given as a tensor computed from constants
        x = sample("float32", (2, 3), "cumsum")
        b.add("cumsum-axis-tensor", tf.cumsum(x, tf.rank(x) - 1), np.cumsum(x, 1))
    return b


SCANS = build()


@pytest.mark.parametrize("case", SCANS.ids())
def test_scans(case):
    SCANS.check(case)


def test_scan_errors():
    x = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(ValueError, match=r"axis 2 is out of range \[-2, 2\) for 'Cumsum'"):
        tf.cumsum(x, 2)
    with pytest.raises(ValueError, match="axis -3 is out of range"):
        tf.cumprod(x, -3)
    with pytest.raises(ValueError, match="axis must be a scalar"):
        tf.cumsum(x, [0, 1])
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.cumsum(tf.constant([True, False]))
    with pytest.raises(ValueError, match=r"out of range \[0, 0\)"):
        tf.cumsum(tf.constant(3.0))  # TF: a scalar has no axis to scan


def test_scan_axis_must_be_known_when_compiling():
    x = tf.placeholder(tf.float32, [2, 3])
    axis = tf.placeholder(tf.int32, [])
    y = tf.cumsum(x, axis)
    assert y.shape.as_list() == [2, 3]
    with tf.Session() as sess:
        known = r"of 'Cumsum' \(op: 'Cumsum'\) must be known when the graph is compiled"
        with pytest.raises(ValueError, match=known):
            sess.run(y, {x: np.ones((2, 3)), axis: 1})
