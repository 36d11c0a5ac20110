"""tf.range and tf.linspace: compiled C vs the NumPy reference vs NumPy's arange/linspace."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf


def build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        b.add("range-n", tf.range(7), np.arange(7, dtype=np.int32))
        b.add("range-start-limit", tf.range(-3, 4), np.arange(-3, 4, dtype=np.int32))
        b.add("range-delta", tf.range(2, 17, 4), np.arange(2, 17, 4, dtype=np.int32))
        b.add("range-negative-delta", tf.range(10, -5, -3), np.arange(10, -5, -3, dtype=np.int32))
        b.add("range-empty", tf.range(5, 5), np.zeros(0, np.int32))
        b.add("range-int64", tf.range(2**33, 2**33 + 5), np.arange(2**33, 2**33 + 5))
        b.add("range-float", tf.range(0.5, 2.0, 0.25),
              np.arange(0.5, 2.0, 0.25, dtype=np.float32))  # fmt: skip
        # TF's length for floats: ceil(|limit - start| / |delta|)
        b.add("range-float-ceil", tf.range(0.0, 1.0, 0.3),
              np.array([0.0, 0.3, 0.6, 0.9], np.float32), rtol=1e-6)  # fmt: skip
        b.add("range-mixed-widens", tf.range(1, 2.5, 0.5), np.array([1.0, 1.5, 2.0], np.float32))
        b.add("range-dtype", tf.range(4, dtype=tf.float64), np.arange(4, dtype=np.float64))
        b.add("range-int-dtype-float", tf.range(3, dtype=tf.int64), np.arange(3, dtype=np.int64))
        # bounds computed from a shape known only when the program is compiled
        x = b.feed(np.ones((5, 3), np.float32), [None, 3])
        n = tf.shape(x)[0]
        r = tf.range(1, n * 2, 2)
        assert r.shape.as_list() == [None]
        b.add("range-late-bounds", r, np.arange(1, 10, 2, dtype=np.int32))

        b.add("linspace", tf.linspace(1.0, 2.0, 5), np.linspace(1, 2, 5, dtype=np.float32))
        b.add("lin_space-f64", tf.lin_space(tf.constant(-3.0, tf.float64), 7.0, 11),
              np.linspace(-3, 7, 11))  # fmt: skip
        b.add("linspace-one", tf.linspace(4.0, 9.0, 1), np.array([4.0], np.float32))
        b.add("linspace-none", tf.linspace(4.0, 9.0, 0), np.zeros(0, np.float32))
        start = np.array([0.0, 1.0, -2.0], np.float32)
        stop = np.array([1.0, 3.0, 2.0], np.float32)
        s, e = b.feed(start), b.feed(stop)
        b.add("linspace-vectors", tf.linspace(s, e, 4),
              np.linspace(start, stop, 4, dtype=np.float32))  # fmt: skip
        b.add("linspace-vectors-axis1", tf.linspace(s, e, 4, axis=1),
              np.linspace(start, stop, 4, axis=1, dtype=np.float32))  # fmt: skip
        b.add("linspace-num-tensor", tf.linspace(0.0, 1.0, tf.constant(3)),
              np.array([0.0, 0.5, 1.0], np.float32))  # fmt: skip
    return b


SEQUENCES = build()


@pytest.mark.parametrize("case", SEQUENCES.ids())
def test_sequences(case):
    SEQUENCES.check(case)


def test_linspace_ends_exactly():
    with tf.Session() as sess:
        y = sess.run(tf.linspace(0.1, 0.7, 7))
    assert y[0] == np.float32(0.1) and y[-1] == np.float32(0.7)


def test_range_dtypes_and_static_shapes():
    assert tf.range(5).dtype == tf.int32 and tf.range(5).shape.as_list() == [5]
    assert tf.range(1, 2.5, 0.5).dtype == tf.float32
    assert tf.range(2**40).dtype == tf.int64
    assert tf.range(tf.constant(3, tf.int64)).dtype == tf.int64
    assert tf.range(0.0, 1.0, 0.3).shape.as_list() == [4]


def test_range_errors():
    with pytest.raises(ValueError, match="Requires delta != 0"):
        tf.range(0, 5, 0)
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0: 5/1"):
        tf.range(5, 1)
    with pytest.raises(ValueError, match="Requires start >= limit when delta < 0"):
        tf.range(1, 5, -1)
    with pytest.raises(ValueError, match="Requires num >= 0"):
        tf.linspace(0.0, 1.0, -1)
    with pytest.raises(TypeError, match="float start and stop"):
        tf.linspace(0, 1, 3)
    num = tf.placeholder(tf.int32, [])
    with pytest.raises(ValueError, match="linspace's num .* must be known when the graph is built"):
        tf.linspace(0.0, 1.0, num)


def test_range_of_run_time_values_is_refused_naming_the_op():
    n = tf.placeholder(tf.int32, [])
    r = tf.range(n, name="steps")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"of 'steps' \(op: 'Range'\) must be known"):
            sess.run(r, {n: 3})
