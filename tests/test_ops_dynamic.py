"""Ops whose output shape depends on their values (Python stages) vs the reference interpreter vs
an independent NumPy expectation: tf.where(cond), unique, unique_with_counts, setdiff1d,
boolean_mask, dynamic_partition, dynamic_stitch; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.compiler import PIPELINE, compile_program
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.native import NativeBuildError
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(7)


def first_occurrence_unique(x):
    """NumPy's unique, reordered by first occurrence (TF's order)."""
    _, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first)
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return x[np.sort(first)], position[inverse.reshape(-1)], counts[order]


def build_dynamic() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        x = RNG.integers(0, 5, 12).astype(np.int32)
        px = b.feed(x, [None])
        y, idx, counts = first_occurrence_unique(x)
        uy, uidx = tf.unique(px)
        b.add("unique-y", uy, y)
        b.add("unique-idx", uidx, idx.astype(np.int32))
        b.add("unique-roundtrip", tf.gather(uy, uidx), x)
        wy, widx, wc = tf.unique_with_counts(px, out_idx=tf.int64)
        b.add("unique_with_counts-y", wy, y)
        b.add("unique_with_counts-idx", widx, idx.astype(np.int64))
        b.add("unique_with_counts-count", wc, counts.astype(np.int64))
        f = np.array([0.5, -0.0, 0.0, 0.5, 2.0], np.float64)
        b.add("unique-float-zeros-equal", tf.unique(f)[0], np.array([0.5, -0.0, 2.0]))
        b.add("unique-strings", tf.unique(["b", "a", "b"])[0], np.array([b"b", b"a"], dtype=object))
        d, di = tf.setdiff1d(px, [1, 3])
        keep = ~np.isin(x, [1, 3])
        b.add("setdiff1d-out", d, x[keep])
        b.add("setdiff1d-idx", di, np.flatnonzero(keep).astype(np.int32))
        m = RNG.standard_normal((3, 4)).astype(np.float32)
        pm = b.feed(m, [None, 4])
        b.add("where-2d", tf.where(pm > 0), np.argwhere(m > 0).astype(np.int64))
        b.add("where-numeric", tf.where(tf.constant([0, 3, 0, -1])), np.array([[1], [3]], np.int64))
        b.add("where-none-true", tf.where(pm > 100), np.zeros((0, 2), np.int64))
        b.add("where_v2-one-argument", tf.where_v2(pm > 0), np.argwhere(m > 0).astype(np.int64))
        column = np.array([[True], [False], [True]])
        b.add("where_v2-broadcasts", tf.where_v2(column, pm, -pm[0]), np.where(column, m, -m[0]))
        b.add("boolean_mask-rows", tf.boolean_mask(pm, [True, False, True]), m[[0, 2]])
        b.add("boolean_mask-2d", tf.boolean_mask(pm, pm > 0), m[m > 0])
        b.add(
            "boolean_mask-axis1", tf.boolean_mask(pm, [False, True, True, False], axis=1), m[:, 1:3]
        )
        b.add(
            "boolean_mask-then-native",
            tf.reduce_sum(tf.boolean_mask(pm, pm > 0) * 2.0),
            np.float32(2 * m[m > 0].sum()),
            rtol=1e-6,
        )
        parts = np.array([1, 0, 2, 1], np.int32)
        data = RNG.standard_normal((4, 2)).astype(np.float32)
        pd = b.feed(data, [None, 2])
        for k, piece in enumerate(tf.dynamic_partition(pd, parts, 3)):
            b.add(f"dynamic_partition-{k}", piece, data[parts == k])
        grid_parts = np.array([[0, 1], [1, 1]], np.int32)
        cube = np.arange(8, dtype=np.int64).reshape(2, 2, 2)
        for k, piece in enumerate(tf.dynamic_partition(cube, grid_parts, 2)):
            b.add(
                f"dynamic_partition-2d-{k}", piece, cube.reshape(4, 2)[grid_parts.reshape(-1) == k]
            )
        i1, i2 = np.array([0, 4]), np.array([[1, 2], [5, 3]])
        d1, d2 = np.arange(4.0).reshape(2, 2), 10 + np.arange(8.0).reshape(2, 2, 2)
        want = np.zeros((6, 2))
        want[i1] = d1
        want[i2.reshape(-1)] = d2.reshape(4, 2)
        b.add("dynamic_stitch-constant", tf.dynamic_stitch([i1, i2], [d1, d2]), want)
        late = tf.placeholder_with_default(i2.astype(np.int32), [None, 2])
        b.add("dynamic_stitch-run-time", tf.dynamic_stitch([i1, late], [d1, d2]), want)
        dup = tf.dynamic_stitch([[0, 1], [1]], [[1.0, 2.0], [9.0]])
        b.add("dynamic_stitch-later-wins", dup, np.array([1.0, 9.0], np.float32))
        gap = tf.dynamic_stitch([tf.placeholder_with_default([2, 0], [None])], [[5, 6]])
        b.add("dynamic_stitch-gap-zero", gap, np.array([6, 0, 5], np.int32))
    return b


DYNAMIC = build_dynamic()


@pytest.mark.parametrize("case", DYNAMIC.ids())
def test_value_dependent_ops(case):
    DYNAMIC.check(case)


def test_shapes_known_when_building_are_kept():
    x = tf.placeholder(tf.float32, [5, 3])
    assert tf.unique(tf.reshape(x, [-1]))[1].shape.as_list() == [15]
    assert tf.where(x > 0).shape.as_list() == [None, 2]
    assert tf.boolean_mask(x, tf.ones([5], tf.bool)).shape.as_list() == [None, 3]
    assert [p.shape.as_list() for p in tf.dynamic_partition(x, [0, 1, 0, 1, 1], 2)] == [
        [None, 3], [None, 3]
    ]  # fmt: skip
    assert tf.dynamic_stitch([[0, 3]], [[[1.0], [2.0]]]).shape.as_list() == [4, 1]


def test_dynamic_stitch_with_constant_indices_compiles_natively():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.dynamic_stitch([[1, 0]], [x])
    feeds = [FeedSpec(("x", 0), tf.float32, (2,))]
    graph = make_program_graph(tf.get_default_graph(), [(y.op.name, 0)], feeds=feeds)
    program = compile_program(graph, PIPELINE, name="stitch")
    assert {s.op for s in program.lowered.steps} >= {"GatherV2"}


@pytest.mark.parametrize(
    "build, error, message",
    [
        (
            lambda: tf.dynamic_partition([1.0, 2.0], [0, 5], 2),
            tf.errors.InvalidArgumentError,
            r"partitions\[1\] = 5 is not in \[0, 2\)",
        ),
        (
            lambda: tf.dynamic_stitch([tf.placeholder_with_default([0, -1], [None])], [[1, 2]]),
            tf.errors.InvalidArgumentError,
            r"indices\[1\] = -1 is out of range",
        ),
    ],
)
def test_run_time_errors(build, error, message):
    y = build()
    target = y[0] if isinstance(y, list) else y
    with tf.Session() as sess, pytest.raises(error, match=message):
        sess.run(target)
    with pytest.raises(error, match=message):
        Interpreter().run(target)


def test_graph_build_errors():
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask([1, 2], True)
    with pytest.raises(ValueError, match="incompatible"):
        tf.boolean_mask(tf.zeros([3, 2]), [True, False])
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.unique([[1, 2]])
    with pytest.raises(TypeError, match="does not match type int32"):
        tf.setdiff1d([1, 2], [1.0])
    with pytest.raises(ValueError, match="must be a prefix of data.shape"):
        tf.dynamic_partition(tf.zeros([3, 2]), [0, 1], 2)


def test_native_builds_refuse_them_naming_the_op():
    x = tf.placeholder(tf.float32, [4], name="x")
    y = tf.reduce_sum(tf.boolean_mask(x, x > 0, name="positives"))
    feeds = [FeedSpec(("x", 0), tf.float32, (4,))]
    graph = make_program_graph(tf.get_default_graph(), [(y.op.name, 0)], feeds=feeds)
    with pytest.raises(NativeBuildError, match=r"Op 'positives/Where' \(type Where\) cannot be "
                       r"compiled into a native program: its output shape depends on its input "
                       r"values\. Only a tf.Session can run it"):  # fmt: skip
        compile_program(graph, PIPELINE)
