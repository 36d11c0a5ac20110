"""Reordering ops and the array functions composed of ops: compiled C vs reference vs NumPy."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.reference.interp import Interpreter

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
RNG = np.random.default_rng(61)


def arr(shape: tuple, dtype: str = "float32", start: int = 0) -> np.ndarray:
    """Distinct values (0/1 alternating for bool), so a wrong index shows."""
    x = np.arange(start, start + int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if dtype == "bool":
        return (x % 3 == 1).reshape(shape)
    if dtype.startswith("float"):
        return (x * 0.5 - 3).astype(dtype)
    return (x * 7 - 11).astype(dtype)


def np_reverse_sequence(x, lengths, seq, batch):
    out = np.array(x, copy=True)
    for b, n in enumerate(lengths):
        for t in range(n):
            src = [slice(None)] * x.ndim
            dst = [slice(None)] * x.ndim
            src[batch] = dst[batch] = b
            src[seq], dst[seq] = n - 1 - t, t
            out[tuple(dst)] = x[tuple(src)]
    return out


def build_order() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in DTYPES:
            x = arr((3, 4, 5), dtype)
            tx = b.feed(x, [None, 4, None]) if dtype in ("float32", "int64") else tf.constant(x)
            b.add(f"reverse-0-{dtype}", tf.reverse(tx, [0]), x[::-1])
            b.add(f"reverse-02-{dtype}", tf.reverse(tx, [2, 0]), x[::-1, :, ::-1])
            b.add(f"reverse-neg-{dtype}", tf.reverse_v2(tx, [-2]), x[:, ::-1])
            b.add(f"reverse-none-{dtype}", tf.reverse(tx, np.zeros(0, np.int32)), x)
            lengths = np.array([4, 0, 2], np.int64)
            b.add(
                f"reverse_sequence-{dtype}",
                tf.reverse_sequence(tx, lengths, seq_axis=1, batch_axis=0),
                np_reverse_sequence(x, lengths, 1, 0),
            )
            b.add(
                f"reverse_sequence-seq0-{dtype}",
                tf.reverse_sequence(tx, [3, 1, 2, 0, 3], seq_axis=0, batch_axis=2),
                np_reverse_sequence(x, [3, 1, 2, 0, 3], 0, 2),
            )
            b.add(f"roll-{dtype}", tf.roll(tx, 2, 1), np.roll(x, 2, 1))
            b.add(
                f"roll-multi-{dtype}",
                tf.roll(tx, [1, -7, 3], [0, 2, 0]),
                np.roll(x, (4, -7), (0, 2)),
            )
            b.add(
                f"broadcast_to-{dtype}",
                tf.broadcast_to(tx[:, :1], [2, 3, 4, 5]),
                np.broadcast_to(x[:, :1], (2, 3, 4, 5)),
            )
            mesh = tf.meshgrid(x.ravel()[:3], x.ravel()[3:5], x.ravel()[5:9])
            for k, (got, want) in enumerate(
                zip(mesh, np.meshgrid(x.ravel()[:3], x.ravel()[3:5], x.ravel()[5:9]))
            ):
                b.add(f"meshgrid-xy-{k}-{dtype}", got, want)
            b.add(f"repeat-{dtype}", tf.repeat(tx, [1, 0, 3], axis=0), np.repeat(x, [1, 0, 3], 0))
            b.add(f"repeat-flat-{dtype}", tf.repeat(tx, 2), np.repeat(x, 2))
            b.add(
                f"where_v2-{dtype}",
                tf.where_v2(x[0, :, :1] > x[0, :, 1:2], tx, x[0]),
                np.where(x[0, :, :1] > x[0, :, 1:2], x, x[0]),
            )
        for dtype in ("float32", "float64", "int32", "int64"):
            v = RNG.integers(-3, 4, (3, 7)).astype(dtype)
            tv = b.feed(v, [None, 7]) if dtype == "float64" else tf.constant(v)
            order = np.argsort(v, axis=-1, kind="stable")
            down = np.argsort(-v.astype(np.float64), axis=-1, kind="stable")
            b.add(f"sort-{dtype}", tf.sort(tv), np.sort(v, axis=-1))
            b.add(f"sort-desc-{dtype}", tf.sort(tv, direction="DESCENDING"), -np.sort(-v, axis=-1))
            b.add(f"argsort-{dtype}", tf.argsort(tv), order.astype(np.int32))
            b.add(
                f"argsort-desc-{dtype}",
                tf.argsort(tv, direction="DESCENDING"),
                down.astype(np.int32),
            )
            b.add(
                f"argsort-axis0-{dtype}",
                tf.argsort(tv, axis=0),
                np.argsort(v, 0, kind="stable").astype(np.int32),
            )
            s = np.sort(v, axis=-1)
            q = RNG.integers(-4, 5, (3, 5)).astype(dtype)
            for side in ("left", "right"):
                want = np.stack([np.searchsorted(r, w, side=side) for r, w in zip(s, q)]).astype(
                    np.int32
                )
                b.add(f"searchsorted-{side}-{dtype}", tf.searchsorted(s, q, side=side), want)
        nan = np.array([3.0, np.nan, 1.0, -np.inf, 1.0, np.inf, np.nan, -0.0, 0.0])
        b.add("sort-nan-last", tf.sort(nan), np.sort(nan))
        b.add("argsort-nan-last", tf.argsort(nan), np.argsort(nan, kind="stable").astype(np.int32))
        b.add(
            "argsort-nan-first-desc",
            tf.argsort(nan, direction="DESCENDING"),
            np.array([1, 6, 5, 0, 2, 4, 7, 8, 3], np.int32),
        )
        big = RNG.standard_normal((2, 1000)).astype(np.float32)
        b.add("sort-long-rows", tf.sort(big), np.sort(big, axis=-1))
        b.add(
            "argsort-3d-axis1",
            tf.argsort(arr((2, 3, 4))[:, ::-1], axis=1),
            np.argsort(arr((2, 3, 4))[:, ::-1], axis=1, kind="stable").astype(np.int32),
        )
        seq = np.array([1.0, 3.0, 5.0, 7.0])
        rows3 = np.sort(RNG.standard_normal((2, 2, 4)), -1).astype(np.float32)
        values3 = RNG.standard_normal((2, 2, 3)).astype(np.float32)
        b.add(
            "searchsorted-1d-int64",
            tf.searchsorted(seq, [0.0, 5.0, 8.0], out_type=tf.int64),
            np.array([0, 2, 4], np.int64),
        )
        b.add(
            "searchsorted-3d",
            tf.searchsorted(rows3, values3),
            np.array(
                [np.searchsorted(r, v) for r, v in zip(rows3.reshape(4, 4), values3.reshape(4, 3))],
                np.int32,
            ).reshape(2, 2, 3),
        )
        perm = RNG.permutation(9).astype(np.int32)
        b.add(
            "invert_permutation",
            tf.invert_permutation(b.feed(perm, [None])),
            np.argsort(perm).astype(np.int32),
        )
        b.add(
            "invert_permutation-int64",
            tf.invert_permutation(perm.astype(np.int64)),
            np.argsort(perm),
        )
        flat = np.array([0, 5, 23, 11], np.int32)
        b.add(
            "unravel_index",
            tf.unravel_index(b.feed(flat, [None]), [2, 3, 4]),
            np.array(np.unravel_index(flat, (2, 3, 4)), np.int32),
        )
        b.add(
            "unravel_index-scalar",
            tf.unravel_index(np.int64(7), np.array([4, 3], np.int64)),
            np.array([2, 1], np.int64),
        )
        b.add(
            "unravel_index-negative",
            tf.unravel_index([-1], [2, 3]),
            np.array([[0], [-1]], np.int32),
        )
        b.add(
            "broadcast_dynamic_shape",
            tf.broadcast_dynamic_shape([2, 1], [4, 1, 3]),
            np.array([4, 2, 3], np.int32),
        )
        ph = tf.placeholder(tf.float32, [None, 3])
        b.feed_dict[ph] = np.zeros((5, 3), np.float32)
        b.add(
            "broadcast_dynamic_shape-shapes",
            tf.broadcast_dynamic_shape(tf.shape(ph), [2, 1, 1]),
            np.array([2, 5, 3], np.int32),
        )
        b.add(
            "broadcast_to-shape-of",
            tf.broadcast_to(1.5, tf.shape(ph)),
            np.full((5, 3), 1.5, np.float32),
        )
        b.add("ensure_shape", tf.ensure_shape(ph, [5, None]) * 2.0, np.zeros((5, 3), np.float32))
        m = tf.meshgrid([1, 2, 3], [4, 5], indexing="ij")
        b.add(
            "meshgrid-ij-0", m[0], np.meshgrid([1, 2, 3], [4, 5], indexing="ij")[0].astype(np.int32)
        )
        b.add(
            "meshgrid-ij-1", m[1], np.meshgrid([1, 2, 3], [4, 5], indexing="ij")[1].astype(np.int32)
        )
        b.add(
            "repeat-scalar-count-tensor",
            tf.repeat([1.0, 2.0], tf.constant(3)),
            np.repeat(np.float32([1, 2]), 3),
        )
        b.add(
            "parallel_stack",
            tf.parallel_stack([[1, 2], [3, 4]]),
            np.array([[1, 2], [3, 4]], np.int32),
        )
        first, second = tf.identity_n([tf.constant(1.0), tf.constant([2, 3])])
        b.add("identity_n-0", first, np.float32(1.0))
        b.add("identity_n-1", second, np.array([2, 3], np.int32))
        shapes = tf.shape_n([ph, tf.zeros([2, 0, 4])], out_type=tf.int64)
        b.add("shape_n-0", shapes[0], np.array([5, 3], np.int64))
        b.add("shape_n-1", shapes[1], np.array([2, 0, 4], np.int64))
        gated = tf.tuple([tf.constant(1.5), None, ph])
        b.add("tuple-0", gated[0], np.float32(1.5))
        b.add("tuple-2", gated[2], np.zeros((5, 3), np.float32))
    return b


ORDER = build_order()


@pytest.mark.parametrize("case", ORDER.ids())
def test_reorder_ops(case):
    ORDER.check(case)


# -- run-time errors ----------------------------------------------------------------------------
RUN_ERRORS = [
    (
        lambda: tf.reverse_sequence(tf.zeros([2, 3]), [1, 4], seq_axis=1, batch_axis=0),
        r"seq_lens\(1\) > input.dims\(1\)",
    ),
    (
        lambda: tf.reverse_sequence(tf.zeros([2, 3]), [1, -1], seq_axis=1, batch_axis=0),
        r"seq_lens\(1\) < 0",
    ),
    (lambda: tf.invert_permutation([0, 1, 1]), "1 is duplicated in the input."),
    (lambda: tf.invert_permutation([0, 3, 1]), "3 is not between 0 and 3"),
    (lambda: tf.invert_permutation([0, -1, 1]), "-1 is not between 0 and 3"),
    (lambda: tf.unravel_index([1, 7], [2, 3]), "index is out of bound as with dims"),
]


@pytest.mark.parametrize("k", range(len(RUN_ERRORS)))
def test_bad_values_fail_the_run(k):
    make, pattern = RUN_ERRORS[k]
    graph = tf.Graph()
    with graph.as_default():
        out = make()
    for runner in (tf.Session(graph=graph).run, Interpreter(graph).run):
        with pytest.raises(tf.errors.InvalidArgumentError, match=pattern) as info:
            runner(out)
        assert info.value.op is not None and info.value.op.name == out.op.name


def test_ensure_shape_mismatch_found_when_the_feed_shape_is_known():
    x = tf.placeholder(tf.float32, [None])
    y = tf.ensure_shape(x, [2])
    assert y.shape.as_list() == [2]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [1.0, 2.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension 0 in both shapes"):
            sess.run(y, {x: [1.0, 2.0, 3.0]})


BUILD_ERRORS = [
    (lambda: tf.reverse(tf.zeros([2, 3]), [2]), r"'axis'\[0\] = 2 is out of valid range \[0, 1"),
    (lambda: tf.reverse(tf.zeros([2, 3]), [1, -1]), "axis 1 specified more than once."),
    (
        lambda: tf.reverse(tf.zeros([2, 3]), tf.constant([1.0])),
        "parameter .axis. has DataType float32",
    ),
    (
        lambda: tf.reverse_sequence(tf.zeros([2, 3]), [1, 1, 1], seq_axis=1, batch_axis=0),
        "Dimensions must be equal, but are 2 and 3",
    ),
    (
        lambda: tf.reverse_sequence(tf.zeros([2, 3]), [1, 1], seq_axis=2, batch_axis=0),
        "seq_dim must be < input rank: 2 vs. 2",
    ),
    (
        lambda: tf.reverse_sequence(tf.zeros([2, 3]), [1.0, 1.0], seq_axis=1),
        "parameter 'seq_lengths' has DataType float32",
    ),
    (
        lambda: tf.roll(tf.zeros([2, 3]), [1, 2], [0]),
        r"Dimension 0 in both shapes must be equal, but are 2 and 1",
    ),
    (lambda: tf.roll(tf.zeros([2, 3]), [1], [2]), "axis 2 is out of range"),
    (lambda: tf.invert_permutation([[0]]), "Shape must be rank 1 but is rank 2"),
    (
        lambda: tf.unravel_index([[1, 5], [0, 2]], [2, 3]),
        r'The indices can only be scalar or vector, got "\[2,2\]"',
    ),
    (
        lambda: tf.unravel_index(4, [2, 0]),
        "Input dims cannot contain a dim of zero, but dims contains zero at index 1",
    ),
    (
        lambda: tf.unravel_index(4, [2, -3]),
        "Input dims cannot be negative. Got dim = -3 at index 1",
    ),
    (
        lambda: tf.broadcast_to(tf.zeros([2, 3]), [4, 3]),
        "Dimensions must be equal, but are 2 and 4",
    ),
    (lambda: tf.broadcast_to(tf.zeros([2, 3]), [3]), "Shape must be at most rank 1 but is rank 2"),
    (
        lambda: tf.broadcast_static_shape(tf.TensorShape([2, 3]), tf.TensorShape([4, 3])),
        r"Incompatible shapes for broadcasting\. .* Received: \(2, 3\) and \(4, 3\)\.",
    ),
    (
        lambda: tf.broadcast_dynamic_shape([2, 3], [4, 3]),
        r"Incompatible shapes: \[2,3\] vs\. \[4,3\]",
    ),
    (
        lambda: tf.ensure_shape(tf.zeros([3]), [2]),
        r"Dimension 0 in both shapes must be equal, but are 2 and 3\. Shapes are \[2\] and \[3\]\.",
    ),
    (
        lambda: tf.searchsorted([1, 3, 5], [3], side="middle"),
        "Argument `side` must be either 'right' or 'left'",
    ),
    (
        lambda: tf.searchsorted([[1, 3, 5]], [[3, 0], [7, 4]]),
        "Leading dim_size of both tensors must match.",
    ),
    (
        lambda: tf.sort([3, 1, 2], direction="DOWN"),
        "Argument `direction` should be one of ASCENDING",
    ),
    (lambda: tf.sort(3.0), "needs a tensor of rank 1 or more"),
    (lambda: tf.sort(tf.zeros([2, 3]), axis=2), "axis 2 is out of range"),
    (lambda: tf.sort([True, False]), "parameter 'values' has DataType bool"),
    (
        lambda: tf.repeat([[1, 2], [3, 4]], [1, 2, 3], axis=0),
        "Dimensions 2 and 3 are not compatible",
    ),
    (
        lambda: tf.repeat([1, 2], tf.placeholder(tf.int32, [])),
        "repeats must be known when the graph is built",
    ),
    (
        lambda: tf.meshgrid([1, 2, 3], [4, 5], indexing="zz"),
        "must be either 'xy' or 'ij', got 'zz'",
    ),
    (lambda: tf.parallel_stack([tf.placeholder(tf.float32, [None])]), "fully defined"),
    (lambda: tf.tuple([]), r"'tensors' must have at least one Tensor\. Received: \[\]\."),
]


@pytest.mark.parametrize("k", range(len(BUILD_ERRORS)))
def test_graph_build_errors(k):
    make, pattern = BUILD_ERRORS[k]
    with tf.Graph().as_default():
        with pytest.raises((ValueError, TypeError, NotImplementedError), match=pattern):
            make()


def test_static_shapes_names_and_tuple_gating():
    x = tf.placeholder(tf.float32, [None, 4])
    assert tf.reverse(x, [1]).shape.as_list() == [None, 4]
    assert tf.roll(x, 1, 0).op.type == "Roll"
    assert tf.sort(x).shape.as_list() == [None, 4]
    assert tf.argsort(x).dtype == tf.int32
    assert tf.broadcast_to(x[:1], [3, 4]).shape.as_list() == [3, 4]
    assert tf.broadcast_to(x, tf.shape(x)).shape.as_list() == [None, 4]
    assert tf.broadcast_static_shape(
        tf.TensorShape([2, None]), tf.TensorShape([None, 1, 3])
    ).as_list() == [None, 2, 3]
    assert tf.broadcast_static_shape(tf.TensorShape(None), tf.TensorShape([1])).ndims is None
    assert tf.unravel_index(tf.placeholder(tf.int32, [None]), [2, 3]).shape.as_list() == [2, None]
    assert tf.ensure_shape(x, [3, None]).shape.as_list() == [3, 4]
    pair = tf.identity_n([x, x])
    assert pair[1].op.name == "IdentityN" and pair[1].value_index == 1
    a, none = tf.tuple([x, None])
    assert none is None and a.op.name == "tuple/control_dependency"
    assert a.op.control_inputs[0].type == "NoOp"
    assert tf.where_v2(True, x, 0.0).op.type == "SelectV2"
