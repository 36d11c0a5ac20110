"""Matrix structure ops (band parts, diagonals, Diag, Cross, matrix_transpose, eye, trace):
compiled C vs the NumPy reference vs NumPy, every dtype; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(1616)
TYPES = ["float32", "float64", "int32", "int64", "bool"]


def sample(dtype: str, shape: tuple) -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype.startswith("int"):
        return RNG.integers(-50, 51, shape).astype(dtype)
    return RNG.uniform(-2.0, 2.0, shape).astype(dtype)


def source(batch: CaseBatch, x: np.ndarray, k: int) -> tf.Tensor:
    """Inputs rotate between compiled-in constants, fed buffers, and feeds with None dims."""
    if k % 3 == 0:
        return tf.constant(x)
    if k % 3 == 1:
        return batch.feed(x)
    return batch.feed(x, [None] * x.ndim)


# -- independent NumPy formulas (loops over the indices, not the references' vectorized forms) --
def np_band(x: np.ndarray, lower: int, upper: int) -> np.ndarray:
    out = np.zeros_like(x)
    rows, cols = x.shape[-2:]
    for i in range(rows):
        for j in range(cols):
            if (lower < 0 or i - j <= lower) and (upper < 0 or j - i <= upper):
                out[..., i, j] = x[..., i, j]
    return out


def np_diagonal(x: np.ndarray, k: int) -> np.ndarray:
    return np.array(np.diagonal(x, offset=k, axis1=-2, axis2=-1))


def np_matrix_diag(d: np.ndarray, k: int, rows: int, cols: int, pad) -> np.ndarray:
    out = np.full((*d.shape[:-1], rows, cols), pad, dtype=d.dtype)
    for i in range(d.shape[-1]):
        r, c = (i, i + k) if k >= 0 else (i - k, i)
        out[..., r, c] = d[..., i]
    return out


def np_set_diag(x: np.ndarray, d: np.ndarray, k: int) -> np.ndarray:
    out = x.copy()
    for i in range(d.shape[-1]):
        r, c = (i, i + k) if k >= 0 else (i - k, i)
        out[..., r, c] = d[..., i]
    return out


def np_cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "i":  # products and differences wrap in the integer type
        bits = a.dtype.itemsize * 8
        ao, bo = a.astype(object), b.astype(object)
        p, q = [1, 2, 0], [2, 0, 1]
        exact = ao[..., p] * bo[..., q] - ao[..., q] * bo[..., p]
        wrap = np.frompyfunc(lambda v: (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1), 1, 1)
        return np.asarray(wrap(exact)).astype(a.dtype)
    return np.cross(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


BAND_SHAPES = [(3, 4), (2, 5, 3), (2, 1, 4, 4), (1, 1), (0, 3, 3), (2, 6, 2)]
BANDS = [(0, 0), (1, 0), (0, -1), (-1, 0), (-1, -1), (2, 1), (0, 2)]
DIAG_CASES = [  # (diagonal shape, k, num_rows, num_cols, padding)
    ((3,), 0, -1, -1, 0),
    ((2, 4), 1, -1, -1, 0),
    ((2, 3, 2), -2, -1, -1, 7),
    ((3,), 0, 3, 5, 0),  # wider than the square, rows fixed
    ((2, 2), 1, 4, 3, 1),  # taller, columns fixed at the minimum
    ((3,), -1, 4, -1, 0),
    ((0,), 0, -1, -1, 0),
]
PART_CASES = [((3, 4), 0), ((2, 4, 3), 1), ((5, 2), -1), ((2, 3, 5), 3), ((2, 2, 6), -1),
              ((3, 3), -2), ((1, 0, 3), 0)]  # fmt: skip


def build_structure() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        k = 0
        for dtype in TYPES:
            for shape in BAND_SHAPES:
                for lower, upper in BANDS:
                    if lower > shape[-2] or upper > shape[-1]:
                        continue
                    k += 1
                    x = sample(dtype, shape)
                    t = tf.matrix_band_part(source(b, x, k), lower, upper)
                    assert t.op.type == "MatrixBandPart"
                    b.add(f"band-{dtype}-{shape}-{lower},{upper}", t, np_band(x, lower, upper))
            for shape, dk, rows, cols, pad in DIAG_CASES:
                k += 1
                d = sample(dtype, shape)
                pad = np.asarray(pad).astype(dtype)
                t = tf.matrix_diag(source(b, d, k), k=dk, num_rows=rows, num_cols=cols,
                                   padding_value=pad)  # fmt: skip
                assert t.op.type == "MatrixDiagV3"
                length = shape[-1]
                r = rows if rows >= 0 else length + max(-dk, 0)
                c = cols if cols >= 0 else length + max(dk, 0)
                if rows < 0 and cols < 0:
                    r = c = max(r, c)
                want = np_matrix_diag(d, dk, r, c, pad)
                b.add(f"matrix_diag-{dtype}-{shape}-k{dk}-{rows}x{cols}", t, want)
            for shape, dk in PART_CASES:
                k += 1
                x = sample(dtype, shape)
                t = tf.matrix_diag_part(source(b, x, k), k=dk)
                assert t.op.type == "MatrixDiagPartV3"
                b.add(f"diag_part-{dtype}-{shape}-k{dk}", t, np_diagonal(x, dk))
                d = sample(dtype, np_diagonal(x, dk).shape)
                t = tf.matrix_set_diag(source(b, x, k + 1), source(b, d, k + 2), k=dk)
                assert t.op.type == "MatrixSetDiagV3"
                b.add(f"set_diag-{dtype}-{shape}-k{dk}", t, np_set_diag(x, d, dk))
            for shape in [(3,), (2, 3), (1, 2, 2), (0,)]:
                k += 1
                d = sample(dtype, shape)
                want = np.diag(d.reshape(-1)).reshape(shape + shape)
                t = tf.diag(source(b, d, k))
                b.add(f"diag-{dtype}-{shape}", t, want)
                b.add(f"diag_part-of-diag-{dtype}-{shape}", tf.diag_part(t), d)
                full = sample(dtype, shape + shape)
                want = np.diagonal(full.reshape(d.size, d.size)).reshape(shape)
                b.add(f"tensor-diag_part-{dtype}-{shape}", tf.diag_part(source(b, full, k)), want)
            for shape in [(2, 3), (2, 3, 4), (1, 1, 5)]:
                k += 1
                x = sample(dtype, shape)
                t = tf.matrix_transpose(source(b, x, k))
                b.add(f"matrix_transpose-{dtype}-{shape}", t, np.swapaxes(x, -1, -2))
            if dtype != "bool":
                for shape in [(3, 3), (2, 3, 4), (4, 2), (2, 0, 3)]:
                    k += 1
                    x = sample(dtype, shape)
                    t = tf.trace(source(b, x, k))
                    want = np.trace(x, axis1=-2, axis2=-1).astype(dtype)
                    b.add(f"trace-{dtype}-{shape}", t, want)
        for dtype in ["float32", "float64", "int32", "int64"]:
            for shape in [(3,), (4, 3), (2, 2, 3)]:
                k += 1
                x, y = sample(dtype, shape), sample(dtype, shape)
                t = tf.cross(source(b, x, k), source(b, y, k + 1))
                assert t.op.type == "Cross"
                b.add(f"cross-{dtype}-{shape}", t, np_cross(x, y))
            for rows, cols, batch in [(3, None, None), (2, 4, None), (4, 2, [2]), (3, 3, [2, 1])]:
                want = np.eye(rows, cols or rows, dtype=dtype)
                if batch:
                    want = np.broadcast_to(want, (*batch, *want.shape)).copy()
                t = tf.eye(rows, cols, batch_shape=batch, dtype=dtype)
                b.add(f"eye-{dtype}-{rows}x{cols}-{batch}", t, want)
        big = np.iinfo(np.int32).max
        x = np.array([[big, 2, -big], [3, big, 1]], np.int32)
        y = np.array([[5, -big, 3], [big, 7, big]], np.int32)
        b.add("cross-int32-wraps", tf.cross(b.feed(x), y), np_cross(x, y))
        x = sample("float32", (2, 3, 3))
        b.add("band-late-bounds", tf.matrix_band_part(x, tf.size(x) - 17, -1), np_band(x, 1, -1))
        b.add("adjoint", tf.linalg.adjoint(b.feed(x)), np.swapaxes(x, -1, -2))
        b.add("band-of-feed", tf.linalg.band_part(b.feed(x, [None, 3, 3]), 0, 1), np_band(x, 0, 1))
    return b


STRUCTURE = build_structure()


@pytest.mark.parametrize("case", STRUCTURE.ids())
def test_structure(case):
    STRUCTURE.check(case)


# -- static shapes, errors -----------------------------------------------------------------------
def test_partial_shapes_at_graph_build_time():
    x = tf.placeholder(tf.float32, [None, 3, 5])
    assert tf.matrix_band_part(x, 1, 1).shape.as_tuple() == (None, 3, 5)
    assert tf.matrix_diag_part(x, k=1).shape.as_tuple() == (None, 3)
    assert tf.matrix_diag_part(x, k=-2).shape.as_tuple() == (None, 1)
    assert tf.matrix_diag(tf.placeholder(tf.float32, [None, 4])).shape.as_tuple() == (None, 4, 4)
    d = tf.placeholder(tf.float32, [None, 2])
    assert tf.matrix_diag(d, k=-1, num_cols=5).shape.as_tuple() == (None, 3, 5)
    assert tf.matrix_set_diag(x, tf.placeholder(tf.float32, [2, 3])).shape.as_tuple() == (2, 3, 5)
    assert tf.diag(tf.placeholder(tf.int32, [2, None])).shape.as_tuple() == (2, None, 2, None)
    assert tf.diag_part(tf.placeholder(tf.int32, [None, 3, 2, None])).shape.as_tuple() == (2, 3)
    assert tf.matrix_transpose(x).shape.as_tuple() == (None, 5, 3)
    assert tf.trace(x).shape.as_tuple() == (None,)
    assert tf.eye(2, 3, batch_shape=[4]).shape.as_tuple() == (4, 2, 3)
    assert tf.cross(tf.placeholder(tf.float64, [None, 3]), [[1.0, 2, 3]]).shape.as_tuple() == (1, 3)


def test_shape_and_type_errors_are_tf_errors():
    v = tf.placeholder(tf.float32, [4])
    with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
        tf.matrix_band_part(v, 0, -1)
    with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
        tf.matrix_diag_part(v)
    with pytest.raises(ValueError, match=r"bands of diagonals \(k = \(lower, upper\)\)"):
        tf.matrix_diag(v, k=(0, 1))
    with pytest.raises(
        ValueError, match="num_rows = 3 != min_num_rows = 2, num_cols = 4 != min_num_cols = 3"
    ):
        tf.matrix_diag([1.0, 2.0], k=1, num_rows=3, num_cols=4)
    with pytest.raises(ValueError, match="lower_diag_index is out of bound: 4. It must be between"):
        tf.matrix_diag_part(tf.zeros([3, 4]), k=4)
    with pytest.raises(ValueError, match=r"Expected diagonal shape: \[3\]"):
        tf.matrix_set_diag(tf.zeros([3, 3]), [1.0, 2.0])
    with pytest.raises(ValueError, match="Input must have even rank <= 6, input rank is 3"):
        tf.diag_part(tf.zeros([2, 2, 2]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.diag_part(tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Dimension must be 3 but is 2"):
        tf.cross(tf.zeros([4, 2]), tf.zeros([4, 2]))
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
        tf.cross(tf.zeros([4, 3]), tf.zeros([2, 3]))
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        tf.cross([[True, False, True]], [[True, True, True]])
    with pytest.raises(ValueError, match="should be a \\(batch\\) matrix, with rank >= 2"):
        tf.matrix_transpose(v)
    with pytest.raises(ValueError, match="needs its rank, which is unknown"):
        tf.matrix_transpose(tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        tf.matrix_diag(v, padding_value=tf.constant(1, tf.int32))


def test_band_bounds_are_checked_when_the_op_runs():
    x = tf.placeholder(tf.float32, [None, None])
    band = tf.matrix_band_part(x, 3, -1)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(band, {x: np.ones((3, 2), np.float32)}), 1)
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"num_lower must be negative or less or equal to number of rows \(2\) got: 3",
        ):
            sess.run(band, {x: np.ones((2, 2), np.float32)})
