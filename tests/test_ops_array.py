"""Array ops: compiled C vs the NumPy reference vs an independent NumPy expectation; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch, assert_same

import tfc as tf
from tfc.reference.interp import Interpreter

DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def arr(shape: tuple, dtype: str = "float32", start: int = 0) -> np.ndarray:
    """Distinct values (0/1 alternating for bool), so a wrong index shows."""
    x = np.arange(start, start + int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if dtype == "bool":
        return (x % 3 == 1).reshape(shape)
    if dtype.startswith("float"):
        return (x * 0.5 - 3).astype(dtype)
    return (x * 7 - 11).astype(dtype)


# -- views, shapes, fills, transposes -------------------------------------------------------------
def build_views() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in DTYPES:
            x = arr((2, 3, 4), dtype)
            t = b.feed(x, [None, 3, None]) if dtype in ("float32", "int64") else tf.constant(x)
            b.add(f"identity-{dtype}", tf.identity(t), x)
            b.add(f"stop_gradient-{dtype}", tf.stop_gradient(t), x)
            b.add(f"reshape-{dtype}", tf.reshape(t, [4, -1]), x.reshape(4, 6))
            b.add(f"reshape-3d-{dtype}", tf.reshape(t, [3, 2, 4]), x.reshape(3, 2, 4))
            b.add(f"expand_dims-{dtype}", tf.expand_dims(t, 1), x[:, None])
            b.add(f"transpose-rev-{dtype}", tf.transpose(t), x.transpose())
            b.add(f"transpose-201-{dtype}", tf.transpose(t, [2, 0, 1]), x.transpose(2, 0, 1))
            b.add(f"zeros_like-{dtype}", tf.zeros_like(t), np.zeros_like(x))
            b.add(f"ones_like-{dtype}", tf.ones_like(t), np.ones_like(x))
            b.add(f"zeros-{dtype}", tf.zeros([2, 0, 3], dtype), np.zeros((2, 0, 3), dtype))
            b.add(f"ones-{dtype}", tf.ones([3, 1], dtype), np.ones((3, 1), dtype))
            b.add(f"fill-{dtype}", tf.fill([2, 3], x.flat[5]), np.full((2, 3), x.flat[5]))
        # partially known placeholders: shapes known only once the feed shapes are
        v = arr((5, 28 * 28))
        pv = b.feed(v, [None, 784])
        b.add("reshape-mnist", tf.reshape(pv, [-1, 28, 28, 1]), v.reshape(-1, 28, 28, 1))
        y = arr((5, 784), start=3)
        py = b.feed(y, [None, None])
        b.add("reshape-to-shape-of", tf.reshape(py, tf.shape(pv)), y)
        b.add("zeros-shape-of", tf.zeros(tf.shape(pv)), np.zeros((5, 784), np.float32))
        b.add("ones-shape-of-int", tf.ones(tf.shape(py), tf.int32), np.ones((5, 784), np.int32))
        b.add("fill-shape-of", tf.fill(tf.shape(py)[1:], 2.5), np.full((784,), 2.5, np.float32))
        b.add("shape-none-dims", tf.shape(py), np.array([5, 784], np.int32))
        b.add("shape-int64", tf.shape(py, out_type=tf.int64), np.array([5, 784], np.int64))
        b.add("size-none-dims", tf.size(py), np.int32(5 * 784))
        b.add("rank-none-dims", tf.rank(py), np.int32(2))
        b.add("shape-scalar", tf.shape(3.0), np.zeros((0,), np.int32))
        b.add("size-zero", tf.size(np.zeros((3, 0))), np.int32(0))
        b.add("reshape-mixed-list", tf.reshape(py, [tf.shape(py)[0], 28, -1]), y.reshape(5, 28, 28))
        b.add("reshape-size-1", tf.reshape(py[:1, :1], []), y[0, 0])
        b.add(
            "reshape-scalar", tf.reshape(tf.constant(4.5), [1, 1]), np.full((1, 1), 4.5, np.float32)
        )
        z = np.zeros((0, 3), np.float64)
        b.add("reshape-zero-size", tf.reshape(b.feed(z, [None, 3]), [3, 0]), z.reshape(3, 0))
        b.add("reshape-zero-infer", tf.reshape(z, [-1, 6]), z.reshape(-1, 6))
        b.add(
            "zeros-like-float64-as-int",
            tf.zeros_like(pv, dtype=tf.int64),
            np.zeros((5, 784), np.int64),
        )
        b.add("ones-like-as-bool", tf.ones_like(py, dtype=tf.bool), np.ones((5, 784), bool))
        b.add("zeros-scalar-shape", tf.zeros([]), np.float32(0))
        b.add("fill-scalar", tf.fill([], 7), np.int32(7))
        b.add("zeros-scalar-dim", tf.zeros(3), np.zeros(3, np.float32))
        w = arr((1, 3, 1, 2), "int32")
        pw = b.feed(w, [None, 3, None, 2])
        b.add("squeeze-all", tf.squeeze(w), w.reshape(3, 2))
        b.add("squeeze-axis", tf.squeeze(pw, [2]), w.reshape(1, 3, 2))
        b.add("squeeze-neg-axes", tf.squeeze(pw, axis=[-2, 0]), w.reshape(3, 2))
        b.add("squeeze-scalar", tf.squeeze(3.0), np.float32(3.0))
        b.add("squeeze-scalar-axis", tf.squeeze(w, 0), w[0])
        b.add("expand_dims-neg", tf.expand_dims(pw, -1), w[..., None])
        b.add("expand_dims-front", tf.expand_dims(pw, -5), w[None])
        b.add("expand_dims-scalar", tf.expand_dims(7, 0), np.array([7], np.int32))
        b.add("transpose-4d", tf.transpose(pw, [3, 1, 0, 2]), w.transpose(3, 1, 0, 2))
        b.add("transpose-scalar", tf.transpose(2.0, []), np.float32(2.0))
        b.add("transpose-zero", tf.transpose(np.zeros((2, 0, 3))), np.zeros((3, 0, 2)))
        m = arr((3, 5), "float64")
        b.add("transpose-perm-tensor", tf.transpose(m, tf.constant([1, 0], tf.int64)), m.T)
        b.add("identity-of-variable-read", tf.identity(tf.constant(m) * 2), m * 2)
    return b


VIEWS = build_views()


@pytest.mark.parametrize("case", VIEWS.ids())
def test_views_shapes_fills(case):
    VIEWS.check(case)


# -- joins, splits, tiles, pads -------------------------------------------------------------------
def build_joins() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in DTYPES:
            x, y = arr((2, 3), dtype), arr((2, 5), dtype, start=40)
            tx = b.feed(x, [None, 3]) if dtype != "int32" else tf.constant(x)
            b.add(f"concat-axis1-{dtype}", tf.concat([tx, y], 1), np.concatenate([x, y], 1))
            b.add(
                f"concat-neg-axis-{dtype}",
                tf.concat([y, tx, tx], -1),
                np.concatenate([y, x, x], -1),
            )
            b.add(f"stack-{dtype}", tf.stack([tx, x]), np.stack([x, x]))
            b.add(f"stack-axis2-{dtype}", tf.stack([tx, x, x], axis=2), np.stack([x, x, x], 2))
            for i, piece in enumerate(tf.unstack(y, axis=1)):
                b.add(f"unstack-{i}-{dtype}", piece, y[:, i])
            for i, piece in enumerate(tf.split(y, [2, -1, 0], axis=-1)):
                b.add(f"splitv-{i}-{dtype}", piece, np.split(y, [2, 5], axis=-1)[i])
            b.add(f"tile-{dtype}", tf.tile(tx, [3, 2]), np.tile(x, (3, 2)))
            pads = [[1, 2], [0, 3]]
            b.add(f"pad-{dtype}", tf.pad(tx, pads), np.pad(x, pads))
            for mode in ("REFLECT", "SYMMETRIC"):
                mp = [[1, 1], [2, 1]]
                want = np.pad(x, mp, mode=mode.lower())
                b.add(f"pad-{mode}-{dtype}", tf.pad(tx, mp, mode=mode), want)
        a, c = arr((3, 1, 4), "float64"), arr((3, 2, 4), "float64", start=100)
        ta = b.feed(a, [None, None, 4])
        b.add("concat-middle", tf.concat([ta, c, a], axis=1), np.concatenate([a, c, a], 1))
        b.add("concat-axis0", tf.concat([ta, c[:, :1]], 0), np.concatenate([a, c[:, :1]], 0))
        b.add("concat-zero-piece", tf.concat([c, np.zeros((3, 0, 4))], 1), c)
        b.add(
            "concat-computed-axis", tf.concat([ta, c], tf.rank(ta) - 2), np.concatenate([a, c], 1)
        )
        b.add("concat-one", tf.concat([ta], 0), a)
        b.add("concat-vectors", tf.concat([[1, 2], [3], []], 0), np.array([1, 2, 3], np.int32))
        b.add("stack-scalars", tf.stack([tf.constant(1.5), 2.5, 3.5]), np.float32([1.5, 2.5, 3.5]))
        b.add("stack-python", tf.stack([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
        b.add("stack-neg-axis", tf.stack([ta, a], axis=-1), np.stack([a, a], -1))
        b.add(
            "stack-zero-size",
            tf.stack([np.zeros((2, 0)), np.zeros((2, 0))], 1),
            np.zeros((2, 2, 0)),
        )
        b.add("stack-one", tf.stack([ta], axis=3), a[..., None])
        packed = tf.convert_to_tensor([tf.shape(ta)[0], 7, tf.size(ta)])
        b.add("convert-mixed-list", packed, np.array([3, 7, 12], np.int32))
        for i, piece in enumerate(tf.unstack(ta, axis=-1)):
            b.add(f"unstack-last-{i}", piece, a[..., i])
        for i, piece in enumerate(tf.unstack(c, num=3)):
            b.add(f"unstack-first-{i}", piece, c[i])
        b.add("unstack-zero-size", tf.unstack(np.zeros((2, 0)))[1], np.zeros((0,)))
        odd = arr((3, 7, 2), "int64")
        todd = b.feed(odd, [3, None, 2])
        for i, piece in enumerate(tf.split(odd, 3, axis=0)):
            b.add(f"split-even-{i}", piece, odd[i : i + 1])
        for i, piece in enumerate(tf.split(todd, [3, 1, 3], 1)):
            b.add(f"splitv-odd-{i}", piece, np.split(odd, [3, 4], 1)[i])
        for i, piece in enumerate(tf.split(odd, [-1, 1], axis=-1)):
            b.add(f"splitv-neg-one-{i}", piece, odd[..., i : i + 1])
        for i, piece in enumerate(tf.split(todd, tf.Dimension(1), axis=1)):
            b.add(f"split-one-{i}", piece, odd)
        b.add("tile-3d", tf.tile(todd, [2, 1, 3]), np.tile(odd, (2, 1, 3)))
        b.add("tile-zero-multiple", tf.tile(todd, [1, 0, 2]), np.zeros((3, 0, 4), np.int64))
        b.add("tile-scalar", tf.tile(5.0, []), np.float32(5.0))
        b.add("tile-zero-size", tf.tile(np.zeros((0, 2)), [3, 2]), np.zeros((0, 4)))
        b.add(
            "tile-int64-multiples",
            tf.tile([1, 2], np.array([3], np.int64)),
            np.tile([1, 2], 3).astype(np.int32),
        )
        b.add(
            "pad-value",
            tf.pad(ta, [[0, 1], [2, 0], [1, 1]], constant_values=-2.5),
            np.pad(a, [[0, 1], [2, 0], [1, 1]], constant_values=-2.5),
        )
        b.add(
            "pad-value-tensor",
            tf.pad(odd, [[1, 0], [0, 0], [0, 2]], constant_values=tf.constant(np.int64(9))),
            np.pad(odd, [[1, 0], [0, 0], [0, 2]], constant_values=9),
        )
        b.add(
            "pad-zero-size",
            tf.pad(np.zeros((0, 2), np.float32), [[1, 1], [1, 0]]),
            np.zeros((2, 3), np.float32),
        )
        b.add("pad-scalar", tf.pad(3, np.zeros((0, 2), np.int32)), np.int32(3))
        b.add(
            "pad-lowercase-reflect",
            tf.pad(todd, [[2, 2], [3, 6], [1, 1]], "reflect"),
            np.pad(odd, [[2, 2], [3, 6], [1, 1]], mode="reflect"),
        )
        b.add(
            "pad-symmetric-3d",
            tf.pad(todd, [[3, 2], [7, 1], [2, 0]], "SYMMETRIC"),
            np.pad(odd, [[3, 2], [7, 1], [2, 0]], mode="symmetric"),
        )
        b.add("pad-reflect-no-pads", tf.pad(todd, [[0, 0]] * 3, "REFLECT"), odd)
    return b


JOINS = build_joins()


@pytest.mark.parametrize("case", JOINS.ids())
def test_joins_splits_tiles_pads(case):
    JOINS.check(case)


# -- slicing, gather, one_hot ---------------------------------------------------------------------
S = slice
KEYS = [
    1,
    -1,
    (0, 1),
    (S(None), 2),
    (Ellipsis, 1),
    (Ellipsis, None),
    (None, Ellipsis),
    (1, None, S(None, None, -1)),
    S(None, None, -1),
    (S(1, None), S(None, None, 2)),
    (S(-2, None), Ellipsis, S(4, 0, -2)),
    S(10, 20),
    S(-10, 1),
    (S(None), S(1, 100), S(-100, 2)),
    Ellipsis,
    (),
    (0, 0, 0, 0),
    (-1, -1, -1, -1),
    (S(None), None, 1, S(None), None),
    (S(3, 0, -1), S(None, None, -2)),
    (-1, Ellipsis, -1),
    (S(None, None, 3), S(None, None, -3), S(1, -1, 2)),
    (0, Ellipsis, None, 1),
    (Ellipsis, S(-1, None, -1), None),
    (None, None, 1, None),
    (S(5, 2, -1), 0),
    (S(0, 0),),
    (S(2, -100, -1), S(None), S(0, 3, -1)),
    (np.int64(1), Ellipsis, np.int32(-2)),
]


def build_indexing() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        x = arr((2, 3, 4, 5))
        tx = b.feed(x, [None, 3, None, 5])
        cx = tf.constant(x)
        for k, key in enumerate(KEYS):
            b.add(f"getitem-{k}-fed", tx[key], x[key])
            b.add(f"getitem-{k}-const", cx[key], x[key])
        for dtype in DTYPES:
            v = arr((4, 6), dtype)
            tv = b.feed(v, [None, 6]) if dtype != "bool" else tf.constant(v)
            b.add(f"getitem-steps-{dtype}", tv[::-2, 1::3], v[::-2, 1::3])
            b.add(f"getitem-int-{dtype}", tv[-1], v[-1])
            b.add(f"slice-{dtype}", tf.slice(tv, [1, 2], [2, -1]), v[1:3, 2:])
            b.add(
                f"strided_slice-{dtype}",
                tf.strided_slice(tv, [3, 0], [0, 6], [-1, 2]),
                v[3:0:-1, 0:6:2],
            )
            b.add(f"gather-{dtype}", tf.gather(tv, [3, 0, 0]), v[[3, 0, 0]])
            b.add(
                f"gather-axis1-{dtype}",
                tf.gather(tv, [[5, 1], [0, 2]], axis=1),
                v[:, [[5, 1], [0, 2]]],
            )
        s = arr((7,), "int64")
        ts = b.feed(s, [None])
        b.add("getitem-tensor-index", ts[tf.constant(2)], s[2])
        b.add("getitem-tensor-bounds", ts[tf.constant(1) : tf.constant(-1)], s[1:-1])
        b.add("getitem-tensor-int64", ts[tf.constant(np.int64(-2)) :], s[-2:])
        b.add("getitem-shape-of", tf.shape(tx)[-1], np.int32(5))
        b.add("getitem-scalar", tf.constant(3.5)[...], np.float32(3.5))
        b.add("getitem-scalar-newaxis", tf.constant(3.5)[None], np.float32([3.5]))
        b.add("getitem-zero-size", tf.constant(np.zeros((0, 4)))[:, 1:3], np.zeros((0, 2)))
        b.add("iterate", tf.stack(list(tf.constant(s[:3]))), s[:3])
        # strided_slice with the masks spelled out, as TF1 code sometimes does
        ss = tf.strided_slice(
            tx, [0, 1, 0], [0, 2, 2], [1, 1, 1], begin_mask=1, end_mask=1, shrink_axis_mask=2
        )
        b.add("strided_slice-masks", ss, x[:, 1, 0:2])
        ss2 = tf.strided_slice(
            cx, [1, 0], [0, 0], ellipsis_mask=2, new_axis_mask=0, shrink_axis_mask=1
        )
        b.add("strided_slice-ellipsis", ss2, x[1, ...])
        ss3 = tf.strided_slice(
            cx, [0, 0, -1], [0, 0, 0], [1, 1, -1], new_axis_mask=1, ellipsis_mask=2, end_mask=4
        )
        b.add("strided_slice-new-axis", ss3, x[None, ..., ::-1])
        begin = tf.constant(np.array([0, 4], np.int64))
        b.add("strided_slice-default-strides", tf.strided_slice(cx, begin, [2, 5]), x[0:2, 4:5])
        b.add(
            "slice-int64-bounds",
            tf.slice(tx, np.array([1, 0, 1, 2]), np.array([-1, 2, 2, -1])),
            x[1:, 0:2, 1:3, 2:],
        )
        b.add("slice-zero", tf.slice(tx, [0, 3, 0, 0], [2, 0, -1, 1]), x[:, 3:3, :, :1])
        b.add("slice-scalar", tf.slice(4.0, [], []), np.float32(4.0))
        p = arr((3, 4, 2), "float64")
        tp = b.feed(p, [None, 4, None])
        ind = np.array([[2, 0, 1], [1, 1, 0]])
        b.add("gather-axis-neg1", tf.gather(tp, [1, 0, 1], axis=-1), p[..., [1, 0, 1]])
        b.add("gather-axis-neg2-2d", tf.gather(tp, ind, axis=-2), p[:, ind])
        b.add("gather-int64-indices", tf.gather(tp, ind.astype(np.int64)), p[ind])
        b.add("gather-scalar-index", tf.gather(tp, 2, axis=1), p[:, 2])
        b.add("gather-empty-indices", tf.gather(tp, np.zeros((0,), np.int32)), np.zeros((0, 4, 2)))
        b.add(
            "gather-fed-indices",
            tf.gather(tp, b.feed(np.array([0, 2, 2, 1], np.int32))),
            p[[0, 2, 2, 1]],
        )
        b.add("gather-axis-tensor", tf.gather(p, [3], axis=tf.constant(1)), p[:, [3]])
        b.add("gather-zero-inner", tf.gather(np.zeros((3, 0)), [2, 0]), np.zeros((2, 0)))
        b.add("gather-1d", tf.gather([5, 6, 7], [2, 2, 0]), np.array([7, 7, 5], np.int32))
        idx = np.array([0, 2, 5, -1, 1])

        def hot(i: np.ndarray, depth: int = 3) -> np.ndarray:
            return (i[..., None] == np.arange(depth)).astype(np.float32)

        tidx = b.feed(idx.astype(np.int32), [None])
        b.add("one_hot", tf.one_hot(tidx, 3), hot(idx))
        b.add("one_hot-axis0", tf.one_hot(tidx, 3, axis=0), hot(idx).T)
        b.add(
            "one_hot-int32",
            tf.one_hot(idx, 3, on_value=5, off_value=-1),
            np.where(hot(idx) == 1, 5, -1).astype(np.int32),
        )
        b.add(
            "one_hot-float64-dtype",
            tf.one_hot(idx.astype(np.int64), 3, dtype=tf.float64),
            hot(idx).astype(np.float64),
        )
        b.add("one_hot-bool", tf.one_hot(idx, 3, True, False), hot(idx) == 1)
        idx2 = np.array([[1, 0], [3, 2]])
        want2 = (idx2[:, None, :] == np.arange(2)[None, :, None]).astype(np.float32)
        b.add("one_hot-2d-axis1", tf.one_hot(idx2, 2, axis=1), want2)
        b.add("one_hot-scalar", tf.one_hot(1, 4, off_value=0.5), np.float32([0.5, 1, 0.5, 0.5]))
        b.add("one_hot-depth-zero", tf.one_hot(idx, 0), np.zeros((5, 0), np.float32))
        b.add("one_hot-depth-tensor", tf.one_hot(idx, tf.size(idx)), hot(idx, 5))
    return b


INDEXING = build_indexing()


@pytest.mark.parametrize("case", INDEXING.ids())
def test_slicing_gather_one_hot(case):
    INDEXING.check(case)


# -- graph-build time: static shapes and names ----------------------------------------------------
def test_static_shapes_and_names():
    x = tf.placeholder(tf.float32, [None, 784])
    assert tf.reshape(x, [-1, 28, 28, 1]).shape.as_list() == [None, 28, 28, 1]
    y = tf.placeholder(tf.float32, [None, 3])
    assert tf.reshape(x[:, :3], tf.shape(y)).shape.as_list() == [None, 3]
    assert tf.zeros(tf.shape(y)).shape.as_list() == [None, 3]
    assert tf.reshape(x, [tf.shape(x)[0], 2, -1]).shape.as_list() == [None, 2, None]
    assert tf.reshape(x, tf.stack([tf.shape(x)[0], 784])).shape.as_list() == [None, 784]
    assert tf.transpose(y).shape.as_list() == [3, None]
    assert tf.shape(y).shape.as_list() == [2]
    assert tf.concat([y, y], 1).shape.as_list() == [None, 6]
    assert tf.gather(y, [0, 1], axis=1).shape.as_list() == [None, 2]
    assert tf.one_hot(tf.placeholder(tf.int32, [None]), 10).shape.as_list() == [None, 10]
    assert y[..., None, 1:].shape.as_list() == [None, 1, 2]
    assert y[::-1, 2].shape.as_list() == [None]
    assert tf.squeeze(tf.placeholder(tf.float32, [None, 1, 3]), [1]).shape.as_list() == [None, 3]
    assert tf.squeeze(tf.placeholder(tf.float32, [None, 1, 3])).shape.ndims is None
    assert tf.reshape(tf.placeholder(tf.float32), [2, -1]).shape.as_list() == [2, None]
    u = tf.placeholder(tf.float32)
    assert tf.shape(u).shape.as_list() == [None]
    assert tf.pad(y, [[1, 1], [2, 2]]).shape.as_list() == [None, 7]
    assert [t.shape.as_list() for t in tf.split(y, [1, -1], 1)] == [[None, 1], [None, 2]]
    assert tf.slice(y, [0, 1], [-1, 2]).shape.as_list() == [None, 2]
    assert tf.tile(y, [2, 2]).shape.as_list() == [None, 6]
    assert tf.newaxis is None


def test_op_names_and_types_as_tf1():
    y = tf.placeholder(tf.float32, [None, 3])
    assert tf.zeros([2, 3]).op.name == "zeros"
    assert tf.ones([2, 3]).op.name == "ones"
    assert tf.zeros([2]).op.type == "Fill"
    first = y[0]
    assert first.op.name == "strided_slice" and first.op.type == "StridedSlice"
    assert y[1].op.name == "strided_slice_1"
    assert tf.concat([y, y], 0).op.name == "concat"
    assert tf.split(y, 3, axis=1)[0].op.type == "Split"
    assert tf.split(y, [1, 2], axis=1)[0].op.type == "SplitV"
    assert tf.pad(y, [[0, 0], [1, 1]], constant_values=1.0).op.type == "PadV2"
    assert tf.pad(y, [[0, 0], [1, 1]], mode="REFLECT").op.type == "MirrorPad"
    assert tf.gather(y, [0]).op.type == "GatherV2"
    assert tf.stack([1, 2]).op.type == "Const"
    assert tf.stack([y, y]).op.type == "Pack"
    assert tf.identity(y, name="out").op.name == "out"


# -- errors ---------------------------------------------------------------------------------------
BUILD_ERRORS = [
    (
        lambda: tf.reshape(tf.zeros([2, 3]), [4]),
        r"Cannot reshape a tensor with 6 elements to shape \[4\] \(4 elements\) for 'Reshape' "
        r"\(op: 'Reshape'\) with input shapes: \[2,3\], \[1\]\.",
    ),
    (
        lambda: tf.reshape(tf.zeros([7]), [2, -1]),
        "Dimension size must be evenly divisible by 2 but is 7",
    ),
    (
        lambda: tf.reshape(tf.zeros([8]), [-1, -1]),
        "Only one input size may be -1, not both 0 and 1",
    ),
    (lambda: tf.reshape(tf.zeros([4]), [2, -3]), "Size 1 must be non-negative, not -3"),
    (
        lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([2, 3, 1])], 0),
        "Shape must be rank 2 but is rank 3",
    ),
    (
        lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([4, 5])], 0),
        r"Dimension 0 in both shapes must be equal, but are 3 and 5\. Shapes are \[3\] and \[5\]",
    ),
    (
        lambda: tf.concat([tf.zeros([]), tf.zeros([])], 0),
        r"Can't concatenate scalars \(use tf.stack instead\)",
    ),
    (
        lambda: tf.concat([tf.zeros([2]), tf.zeros([2])], 1),
        "Shape must be at least rank 2 but is rank 1",
    ),
    (lambda: tf.concat([tf.zeros([2]), tf.zeros([2], tf.int32)], 0), "does not match type float32"),
    (
        lambda: tf.stack([tf.zeros([2, 3]), tf.zeros([2])]),
        "Shapes must be equal rank, but are 2 and 1\n\tFrom merging shape 0 with other shapes",
    ),
    (lambda: tf.stack([tf.zeros([2])], axis=2), r"axis = 2 not in \[-2, 2\)"),
    (lambda: tf.unstack(tf.zeros([2, 3]), num=2, axis=1), "Dimension must be 2 but is 3"),
    (
        lambda: tf.unstack(tf.placeholder(tf.float32, [None, 3])),
        r"Cannot infer num from shape \(\?, 3\)",
    ),
    (
        lambda: tf.split(tf.zeros([2, 5]), 2, axis=1),
        "Dimension size must be evenly divisible by 2 but is 5",
    ),
    (
        lambda: tf.split(tf.zeros([2, 5]), 2, axis=2),
        r"Dimension size, given by scalar input 2 must be in range \[-2, 2\)",
    ),
    (
        lambda: tf.split(tf.zeros([5]), [2, 2]),
        r"can't split axis of size 5 into pieces of size \[2,2\]",
    ),
    (
        lambda: tf.split(tf.zeros([5]), [-1, 6]),
        r"can't split axis of size 5 into pieces of size \[-1,6\]",
    ),
    (lambda: tf.split(tf.zeros([5]), [-1, -1]), "size_splits can only have one -1"),
    (lambda: tf.transpose(tf.zeros([1, 2, 3]), [1, 0]), "Dimension must be 3 but is 2"),
    (lambda: tf.transpose(tf.zeros([1, 2]), [1, 2]), "perm dim 2 is out of range of input rank 2"),
    (lambda: tf.transpose(tf.zeros([1, 2]), [1, 1]), r"0 is missing from \{1,1\}"),
    (
        lambda: tf.squeeze(tf.zeros([4, 6, 5]), [1]),
        r"Can not squeeze dim\[1\], expected a dimension of 1, got 6",
    ),
    (
        lambda: tf.squeeze(tf.zeros([1, 2, 3]), [3]),
        "Tried to squeeze dim index 3 for tensor with 3 dimensions",
    ),
    (
        lambda: tf.expand_dims(tf.zeros([5, 7]), 3),
        "Tried to expand dim index 3 for tensor with 2 dimensions",
    ),
    (lambda: tf.gather(tf.zeros([3]), [0], axis=1), "Shape must be at least rank 2 but is rank 1"),
    (
        lambda: tf.gather(tf.zeros([3, 2]), [0], axis=-3),
        "Shape must be at least rank 3 but is rank 2",
    ),
    (lambda: tf.gather(tf.zeros([3]), [0.5]), "parameter 'indices' has DataType float32"),
    (lambda: tf.tile(tf.zeros([2, 3]), [1, 2, 3]), "Dimension must be 2 but is 3"),
    (lambda: tf.tile(tf.zeros([2, 3]), [1, -2]), r"Expected multiples\[1\] >= 0, but got -2"),
    (lambda: tf.pad(tf.zeros([2, 3]), [[1, -1], [0, 0]]), "Paddings must be non-negative: 1 -1"),
    (lambda: tf.pad(tf.zeros([2, 3]), [[1, 1]]), "Shape must be rank 1 but is rank 2"),
    (lambda: tf.pad(tf.zeros([2, 3]), [[1, 1, 1], [0, 0, 0]]), "Dimension must be 2 but is 3"),
    (
        lambda: tf.pad(tf.zeros([2, 3]), [[2, 0], [0, 0]], "REFLECT"),
        "paddings must be less than the dimension size: 2, 0 not less than 2",
    ),
    (
        lambda: tf.pad(tf.zeros([2, 3]), [[0, 0], [0, 4]], "SYMMETRIC"),
        "paddings must be less than the dimension size: 0, 4 not less than 3",
    ),
    (lambda: tf.pad(tf.zeros([2]), [[1, 1]], "WRAP"), "Unknown padding mode: WRAP"),
    (
        lambda: tf.zeros([3, 4])[3],
        r"slice index 3 of dimension 0 out of bounds\. for 'strided_slice'",
    ),
    (lambda: tf.zeros([3, 4])[:, -5], "slice index -1 of dimension 1 out of bounds"),
    (lambda: tf.zeros([3, 4])[::0], r"strides\[0\] must be non-zero"),
    (lambda: tf.zeros([3, 4])[..., 1, ...], "Multiple ellipses in slice spec not allowed"),
    (
        lambda: tf.zeros([3, 4])[1, 2, 3],
        "Index out of range using input dim 2; input has only 2 dims",
    ),
    (
        lambda: tf.strided_slice(tf.zeros([3]), [0], [1], [-1], shrink_axis_mask=1),
        "only stride 1 allowed on non-range indexing",
    ),
    (
        lambda: tf.strided_slice(tf.zeros([3]), [0, 1], [1], [1]),
        r"Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
        r"\[2\], \[1\], and \[1\] instead\.",
    ),
    (lambda: tf.zeros([3])[1.5], "Only integers, slices"),
    (lambda: tf.zeros([3])[[0, 1]], "Only integers, slices"),
    (
        lambda: tf.slice(tf.zeros([3, 4]), [0, 5], [1, 1]),
        r"Expected begin\[1\] in \[0, 4\], but got 5",
    ),
    (
        lambda: tf.slice(tf.zeros([3, 4]), [1, 1], [3, 1]),
        r"Expected size\[0\] in \[0, 2\], but got 3",
    ),
    (lambda: tf.slice(tf.zeros([3, 4]), [1], [1]), "Shape must be rank 1 but is rank 2"),
    (lambda: tf.one_hot([1], 3, axis=-2), "axis must be >= -1"),
    (lambda: tf.one_hot([1], -1), "depth must be non-negative, got: -1"),
    (
        lambda: tf.one_hot([1], 3, on_value=tf.constant(1.0), off_value=tf.constant(0)),
        "dtype int32 of off_value does not match dtype parameter float32",
    ),
    (lambda: tf.fill([2, -1], 1.0), "Fill dimensions must be >= 0"),
    (lambda: tf.fill([2], [1.0]), "Shape must be rank 0 but is rank 1"),
    (lambda: tf.reshape(tf.zeros([2]), [2.0]), "Expected int32, got 2.0 of type 'float' instead"),
]


@pytest.mark.parametrize("k", range(len(BUILD_ERRORS)))
def test_graph_build_errors(k):
    make, pattern = BUILD_ERRORS[k]
    with pytest.raises((ValueError, TypeError), match=pattern):
        make()


def test_pad_mode_and_gather_batch_dims_errors():
    with pytest.raises(NotImplementedError, match="batch_dims"):
        tf.gather(tf.zeros([2, 2]), [[0]], batch_dims=1)
    with pytest.raises(
        TypeError, match="dtype float64 of on_value does not match dtype parameter float32"
    ):
        tf.one_hot([0], 2, on_value=tf.constant(1.0, tf.float64), dtype=tf.float32)


def test_gather_out_of_range_fails_the_run():
    params = tf.placeholder(tf.float32, [5, 2])
    indices = tf.placeholder(tf.int32, [None])
    out = tf.gather(params, indices)
    p = arr((5, 2))
    with tf.Session() as sess:
        assert_same(sess.run(out, {params: p, indices: [4, 0]}), p[[4, 0]])
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in \[0, 5\)"
        ):
            sess.run(out, {params: p, indices: [0, 7, 1]})
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"indices\[0\] = -1 is not in \[0, 5\)"
        ):
            sess.run(out, {params: p, indices: [-1]})
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"indices\[2\] = 5 is not in \[0, 5\)"
    ):
        Interpreter().run(out, {params: p, indices: [0, 1, 5]})


def test_shape_errors_found_when_feed_shapes_are_known():
    x = tf.placeholder(tf.float32, [None, 3])
    bad = tf.reshape(x, [4, 4])
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Cannot reshape a tensor with 6 elements to shape \[4,4\]",
        ),
    ):
        sess.run(bad, {x: np.zeros((2, 3), np.float32)})


def test_run_time_index_is_refused_at_compile_time():
    x = tf.constant([1.0, 2.0, 3.0])
    i = tf.placeholder(tf.int32, [])
    with (
        tf.Session() as sess,
        pytest.raises(ValueError, match="must be known when the graph is compiled"),
    ):
        sess.run(x[i], {i: 1})
