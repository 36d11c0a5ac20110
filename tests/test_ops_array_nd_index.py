"""Index-tuple ops and variable scatters: compiled C vs NumPy reference vs NumPy; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch, assert_same

import tfc as tf
from tfc.reference.interp import Interpreter

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
NUMERIC = ["float32", "float64", "int32", "int64"]
RNG = np.random.default_rng(16)


def arr(shape: tuple, dtype: str = "float32", start: int = 0) -> np.ndarray:
    """Distinct values (0/1 alternating for bool), so a wrong index shows."""
    x = np.arange(start, start + int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if dtype == "bool":
        return (x % 3 == 1).reshape(shape)
    if dtype.startswith("float"):
        return (x * 0.5 - 3).astype(dtype)
    return (x * 7 - 11).astype(dtype)


def tuples(dims: tuple, lead: tuple, dtype=np.int32) -> np.ndarray:
    """Random index tuples into `dims`, laid out as `lead` + (len(dims),)."""
    cols = [RNG.integers(0, d, lead) for d in dims]
    return np.stack(cols, axis=-1).astype(dtype) if cols else np.zeros(lead + (0,), dtype)


def np_gather_nd(params: np.ndarray, idx: np.ndarray, batch_dims: int = 0) -> np.ndarray:
    """NumPy indexing, one batch entry at a time."""
    if batch_dims:
        return np.stack([np_gather_nd(p, i, batch_dims - 1) for p, i in zip(params, idx)])
    if idx.shape[-1] == 0:  # an empty tuple names the whole tensor
        return np.array(np.broadcast_to(params, idx.shape[:-1] + params.shape))
    return params[tuple(np.moveaxis(idx, -1, 0))]


def np_scatter(target: np.ndarray, idx: np.ndarray, updates: np.ndarray, combine) -> np.ndarray:
    """Updates applied one tuple at a time, in order."""
    out = np.array(target, copy=True)
    rows = idx.reshape(-1, idx.shape[-1])
    ups = updates.reshape((len(rows),) + out.shape[idx.shape[-1] :])
    for row, up in zip(rows, ups):
        key = tuple(int(v) for v in row)
        out[key] = combine(out[key], up)
    return out


COMBINE = {
    "update": lambda a, b: b,
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "min": np.minimum,
    "max": np.maximum,
}


# -- GatherNd, ScatterNd, TensorScatter* ---------------------------------------------------------
def build_nd() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in DTYPES:
            p = arr((4, 3, 5), dtype)
            tp = b.feed(p, [None, 3, None]) if dtype in ("float32", "int64") else tf.constant(p)
            for depth, lead in ((3, (6,)), (2, (2, 3)), (1, (4,)), (0, (2,))):
                idx = tuples(p.shape[:depth], lead)
                b.add(f"gather_nd-{depth}-{dtype}", tf.gather_nd(tp, idx), np_gather_nd(p, idx))
            idx = tuples((3,), (4, 2))
            b.add(
                f"gather_nd-batch1-{dtype}",
                tf.gather_nd(tp, idx, batch_dims=1),
                np_gather_nd(p, idx, 1),
            )
            idx = tuples((5,), (4, 3, 2))
            b.add(
                f"gather_nd-batch2-{dtype}",
                tf.gather_nd(p, idx, batch_dims=2),
                np_gather_nd(p, idx, 2),
            )
            rows = RNG.integers(0, 3, (4, 5))
            b.add(
                f"batch_gather-{dtype}",
                tf.batch_gather(tp, rows),
                np.stack([p[i, rows[i]] for i in range(4)]),
            )
            target = arr((5, 3), dtype, start=40)
            ttarget = b.feed(target, [None, 3]) if dtype == "float64" else tf.constant(target)
            idx = np.array([[4], [0], [4], [2]], np.int32)
            up = arr((4, 3), dtype, start=7)
            b.add(
                f"tensor_scatter_update-{dtype}",
                tf.tensor_scatter_nd_update(ttarget, idx, up),
                np_scatter(target, idx, up, COMBINE["update"]),
            )
            if dtype == "bool":
                continue
            want = np_scatter(np.zeros((5, 3), dtype), idx, up, COMBINE["add"])
            b.add(f"scatter_nd-{dtype}", tf.scatter_nd(idx, up, [5, 3]), want)
            for rule in ("add", "sub", "min", "max"):
                fn = getattr(tf, f"tensor_scatter_nd_{rule}")
                want = np_scatter(target, idx, up, COMBINE[rule])
                b.add(f"tensor_scatter_{rule}-{dtype}", fn(ttarget, idx, up), want)
        # element tuples, int64 indices, fed indices, duplicates summed, 2-D leading dims
        x = arr((3, 4), "float64")
        idx = tuples((3, 4), (2, 5), np.int64)
        b.add("gather_nd-int64-indices", tf.gather_nd(x, idx), np_gather_nd(x, idx))
        fed = b.feed(idx.astype(np.int32), [None, 5, 2])
        b.add("gather_nd-fed-indices", tf.gather_nd(x, fed), np_gather_nd(x, idx))
        ups = arr((2, 5), "float64", start=3)
        b.add(
            "scatter_nd-elements",
            tf.scatter_nd(fed, ups, [3, 4]),
            np_scatter(np.zeros((3, 4)), idx, ups, COMBINE["add"]),
        )
        b.add(
            "scatter_nd-int64-shape",
            tf.scatter_nd(idx, ups, np.array([3, 4], np.int64)),
            np_scatter(np.zeros((3, 4)), idx, ups, COMBINE["add"]),
        )
        b.add(
            "tensor_scatter_update-duplicates-last-wins",
            tf.tensor_scatter_nd_update(x, [[1, 1], [1, 1]], [5.0, 6.0]),
            np_scatter(x, np.array([[1, 1], [1, 1]]), np.array([5.0, 6.0]), COMBINE["update"]),
        )
        b.add(
            "tensor_scatter-alias",
            tf.tensor_scatter_add(x, [[0]], [[1.0] * 4]),
            x + [[1], [0], [0]],
        )
        b.add(
            "tensor_scatter-alias-sub", tf.tensor_scatter_sub(x, [[2]], x[2:]), x * [[1], [1], [0]]
        )
        b.add(
            "tensor_scatter-alias-update",
            tf.tensor_scatter_update(x, [[0, 3]], [-1.0]),
            np.where(np.arange(12).reshape(3, 4) == 3, -1.0, x),
        )
        b.add("gather_nd-empty-indices", tf.gather_nd(x, np.zeros((0, 2), np.int32)), np.zeros(0))
        b.add(
            "scatter_nd-empty-updates",
            tf.scatter_nd(np.zeros((0, 1), np.int32), np.zeros((0, 4)), [3, 4]),
            np.zeros((3, 4)),
        )
        b.add("gather_nd-scalar-tuple", tf.gather_nd(x, [2, 1]), x[2, 1])
        b.add("gather_nd-zero-inner", tf.gather_nd(np.zeros((3, 0)), [[1], [2]]), np.zeros((2, 0)))
        sc = arr((2, 3), "float32")
        tsc = b.feed(sc, [None, None])
        scidx = np.array([[0, 2], [1, 0]], np.int32)
        b.add(
            "scatter_nd-batch_dims-gradient-form",
            tf.gradients(
                tf.reduce_sum(
                    tf.gather_nd(tsc, scidx[..., None], batch_dims=1) * [[1.0, 2.0], [3.0, 4.0]]
                ),
                tsc,
            )[0],
            np.array([[1, 0, 2], [4, 3, 0]], np.float32),
        )
    return b


ND = build_nd()


@pytest.mark.parametrize("case", ND.ids())
def test_gather_scatter_nd(case):
    ND.check(case)


# -- variables updated at indices -----------------------------------------------------------------
def _np_row_update(ref, indices, updates, rule):
    out = np.array(ref, copy=True)
    flat = np.ravel(indices)
    ups = (
        np.broadcast_to(updates, flat.shape + ref.shape[1:])
        if np.ndim(updates) == 0
        else (np.reshape(updates, flat.shape + ref.shape[1:]))
    )
    for i, u in zip(flat.tolist(), ups):
        if rule == "update":
            out[i] = u
        elif rule == "add":
            out[i] = out[i] + u
        elif rule == "sub":
            out[i] = out[i] - u
        elif rule == "mul":
            out[i] = out[i] * u
        elif rule == "div":
            out[i] = out[i] / u if out.dtype.kind == "f" else np.trunc(out[i] / u).astype(out.dtype)
        elif rule == "min":
            out[i] = np.minimum(out[i], u)
        else:
            out[i] = np.maximum(out[i], u)
    return out


def _run_both(build, feeds=None) -> tuple:
    """Build variables and updates in a fresh graph; run init then the updates (twice) with the
    compiled session and the interpreter."""
    graph = tf.Graph()
    with graph.as_default():
        init_value, fetches = build()
        init = tf.global_variables_initializer()
    results = []
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        results.append([sess.run(fetches, feeds) for _ in range(2)])
    interp = Interpreter(graph)
    interp.run(init)
    results.append([interp.run(fetches, feeds) for _ in range(2)])
    return init_value, results


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("rule", ["update", "add", "sub", "mul", "div", "min", "max"])
def test_variable_scatter_rows(rule, dtype):
    ref = arr((5, 3), dtype, start=3)
    if dtype.startswith("int"):
        ref = ref + 100
    indices = np.array([[4, 0], [4, 2]], np.int32)
    updates = arr((2, 2, 3), dtype, start=1) + (2 if dtype.startswith("int") else 0.25)

    def build():
        v = tf.Variable(ref)
        fn = getattr(tf, f"scatter_{rule}")
        return ref, [fn(v, indices, updates), fn(v, [1, 3], updates.flat[4])]

    _, (compiled, interpreted) = _run_both(build)
    want = ref
    for step in range(2):
        want = _np_row_update(want, indices, updates, rule)
        first = want
        want = _np_row_update(want, [1, 3], updates.flat[4], rule)
        for got in (compiled[step], interpreted[step]):
            # the two ops run in one step: the fetched variable is read after both
            assert_same(got[1], want, what=f"{rule} {dtype} step {step}")
        assert first is not None


@pytest.mark.parametrize("rule", ["update", "add", "sub"])
def test_variable_scatter_nd(rule):
    ref = arr((4, 3, 2), "float64")
    indices = np.array([[[3, 1], [0, 0]], [[3, 1], [2, 2]]], np.int64)
    updates = arr((2, 2, 2), "float64", start=5)

    def build():
        v = tf.Variable(ref)
        op = getattr(tf, f"scatter_nd_{rule}")(v, indices, updates)
        return ref, op

    _, (compiled, interpreted) = _run_both(build)
    want = ref
    for step in range(2):
        want = np_scatter(want, indices, updates, COMBINE[rule])
        assert_same(compiled[step], want, what=f"compiled step {step}")
        assert_same(interpreted[step], want, what=f"interpreted step {step}")


def test_batch_scatter_update_and_variable_alias():
    ref = arr((2, 4, 3), "float32")
    indices = np.array([[3, 0], [1, 1]], np.int32)
    updates = arr((2, 2, 3), "float32", start=50)

    def build():
        v = tf.Variable(ref)
        return ref, [tf.batch_scatter_update(v, indices, updates)]

    _, (compiled, interpreted) = _run_both(build)
    want = np.array(ref, copy=True)
    for b in range(2):
        for k in range(2):
            want[b, indices[b, k]] = updates[b, k]
    for got in (compiled[0][0], interpreted[0][0]):
        assert_same(got, want)


def test_variable_scatter_fed_updates_and_read_after():
    """A scatter in a training-like step: fed indices and updates, the variable read later."""
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(np.zeros((6, 2), np.float32))
        ids = tf.placeholder(tf.int32, [None])
        rows = tf.placeholder(tf.float32, [None, 2])
        step = tf.scatter_add(v, ids, rows)
        with tf.control_dependencies([step]):
            total = tf.reduce_sum(v.read_value())
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        got = sess.run(total, {ids: [5, 1, 5], rows: np.ones((3, 2), np.float32)})
        assert got == 6.0
        np.testing.assert_array_equal(sess.run(v.read_value())[:, 0], [0, 1, 0, 0, 0, 2])


# -- run-time errors: a tuple outside the shape fails the run with TF's message ------------------
RUN_ERRORS = [
    (
        lambda: tf.gather_nd(tf.zeros([3, 3]), [[0, 1], [1, 5]]),
        r"indices\[1\] = \[1, 5\] does not index into param shape \[3,3\]",
    ),
    (
        lambda: tf.gather_nd(tf.zeros([3, 3]), [[[0, 1], [1, 1]], [[0, 1], [3, 1]]]),
        r"indices\[1,1\] = \[3, 1\] does not index into param shape \[3,3\]",
    ),
    (
        lambda: tf.gather_nd(tf.zeros([2, 3]), [[4], [-1]], batch_dims=1),
        r"indices\[0\] = \[4\] does not index into param shape \[2,3\]",
    ),
    (
        lambda: tf.scatter_nd([[0], [5]], [1.0, 2.0], [4]),
        r"indices\[1\] = \[5\] does not index into shape \[4\]",
    ),
    (
        lambda: tf.scatter_nd([[0, 1], [5, 0]], [1.0, 2.0], [4, 3]),
        r"indices\[1\] = \[5, 0\] does not index into shape \[4,3\]",
    ),
    (
        lambda: tf.tensor_scatter_nd_update(tf.zeros([4]), [[0], [-1]], [1.0, 2.0]),
        r"indices\[1\] = \[-1\] does not index into shape \[4\]",
    ),
    (
        lambda: tf.tensor_scatter_nd_max(tf.zeros([4], tf.int32), [[9]], [2]),
        r"indices\[0\] = \[9\] does not index into shape \[4\]",
    ),
]


@pytest.mark.parametrize("k", range(len(RUN_ERRORS)))
def test_out_of_range_tuple_fails_the_run(k):
    make, pattern = RUN_ERRORS[k]
    graph = tf.Graph()
    with graph.as_default():
        out = make()
    for runner in (tf.Session(graph=graph).run, Interpreter(graph).run):
        with pytest.raises(tf.errors.InvalidArgumentError, match=pattern) as info:
            runner(out)
        assert info.value.op is not None and info.value.op.name == out.op.name


def test_variable_scatter_errors_leave_the_variable_unchanged():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(np.arange(10, dtype=np.float32).reshape(5, 2))
        rows = tf.scatter_update(v, [0, 7], tf.ones([2, 2]))
        tuples = tf.scatter_nd_add(v, [[0], [7]], tf.ones([2, 2]))
        pairs = tf.scatter_nd_sub(v, [[0, 1], [4, 2]], [1.0, 1.0])
        ints = tf.Variable(np.array([[6], [7]], np.int32))
        divide = tf.scatter_div(ints, [1], [[0]])
        init = tf.global_variables_initializer()
    expected = [
        (rows, r"indices\[1\] = 7 is not in \[0, 5\)"),
        (tuples, r"indices\[1\] = \[7\] does not index into shape \[5,2\]"),
        (pairs, r"indices\[1\] = \[4, 2\] does not index into shape \[5,2\]"),
        (divide, "Integer division by zero"),
    ]
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        interp = Interpreter(graph)
        interp.run(init)
        for op, pattern in expected:
            for runner in (sess.run, interp.run):
                with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
                    runner(op)
        np.testing.assert_array_equal(sess.run(v.read_value()), np.arange(10).reshape(5, 2))
        np.testing.assert_array_equal(sess.run(ints.read_value()), [[6], [7]])


# -- graph-build errors -------------------------------------------------------------------------
BUILD_ERRORS = [
    (lambda: tf.gather_nd(tf.zeros([3, 3]), 1), "Shape must be at least rank 1 but is rank 0"),
    (
        lambda: tf.gather_nd(tf.zeros([3]), tf.zeros([2, 2], tf.int32)),
        r"indices.shape\[-1\] must be <= params.rank, but saw indices shape: \[2,2\] and params "
        r"shape: \[3\]",
    ),
    (lambda: tf.gather_nd(tf.zeros([3]), [[0.5]]), "parameter 'indices' has DataType float32"),
    (
        lambda: tf.gather_nd(tf.zeros([2, 3]), tf.zeros([3, 1, 1], tf.int32), batch_dims=1),
        "The batch dimensions of params and indices must be equal",
    ),
    (
        lambda: tf.scatter_nd(tf.zeros([4, 1], tf.int32), tf.zeros([3]), [5]),
        r"Dimensions \[0,1\) of indices\[shape=\[4,1\]\] = \[4\] must match dimensions \[0,1\) of "
        r"updates\[shape=\[3\]\] = \[3\]: Dimension 0 in both shapes must be equal, but are 4 "
        r"and 3\. Shapes are \[4\] and \[3\]\.",
    ),
    (
        lambda: tf.scatter_nd(tf.zeros([2, 1], tf.int32), tf.zeros([2, 4, 5]), [4, 4, 4]),
        r"Dimensions \[1,3\) of input\[shape=\[4,4,4\]\] = \[4,4\] must match dimensions \[1,3\) "
        r"of updates\[shape=\[2,4,5\]\] = \[4,5\]: Dimension 1 in both shapes must be equal",
    ),
    (
        lambda: tf.scatter_nd(tf.zeros([2, 4], tf.int32), tf.zeros([2]), [4, 4, 4]),
        r"Index innermost dimension length must be <= tensor rank; saw: 4 vs\. 3",
    ),
    (
        lambda: tf.scatter_nd(tf.zeros([2, 1], tf.int32), tf.zeros([2]), [0]),
        "Indices and updates specified for empty input",
    ),
    (
        lambda: tf.tensor_scatter_nd_update(
            tf.zeros([4, 3]), tf.zeros([2, 1], tf.int32), tf.zeros([2, 3], tf.float64)
        ),
        "Input 'updates' of 'TensorScatterUpdate' Op has type float64 that does not match type "
        "float32 of argument 'tensor'",
    ),
    (
        lambda: tf.tensor_scatter_nd_add(tf.zeros([2], tf.bool), [[0]], [True]),
        "parameter 'tensor' has DataType bool not in list of allowed values",
    ),
    (
        lambda: tf.scatter_update(tf.Variable(tf.zeros([5, 2])), [0, 1], tf.zeros([2, 3])),
        r"Dimension 1 in both shapes must be equal, but are 3 and 2\. Shapes are \[2,3\] and "
        r"\[2,2\]\.",
    ),
    (
        lambda: tf.scatter_update(tf.Variable(tf.zeros([5, 2])), [0, 1], tf.zeros([3])),
        "Shapes must be equal rank, but are 1 and 2",
    ),
    (
        lambda: tf.scatter_nd_update(tf.Variable(tf.zeros([5, 2])), [[0], [1]], tf.zeros([2, 3])),
        r"Dimensions \[1,2\) of input\[shape=\[5,2\]\] = \[2\] must match dimensions \[1,2\) of "
        r"updates\[shape=\[2,3\]\] = \[3\]",
    ),
    (lambda: tf.scatter_add(tf.zeros([3]), [0], [1.0]), "needs a variable to update"),
    (
        lambda: tf.batch_gather(tf.zeros([3]), tf.placeholder(tf.int32)),
        "batch_gather does not allow indices with unknown shape",
    ),
]


@pytest.mark.parametrize("k", range(len(BUILD_ERRORS)))
def test_graph_build_errors(k):
    make, pattern = BUILD_ERRORS[k]
    with tf.Graph().as_default(), pytest.raises((ValueError, TypeError), match=pattern):
        make()


def test_static_shapes_and_op_types():
    p = tf.placeholder(tf.float32, [None, 4, 5])
    i = tf.placeholder(tf.int32, [None, 7, 2])
    assert tf.gather_nd(p, i).shape.as_list() == [None, 7, 5]
    assert tf.gather_nd(p, i, batch_dims=1).shape.as_list() == [None, 7]
    assert tf.gather_nd(p, tf.placeholder(tf.int32, [3, None])).shape.ndims is None
    assert tf.scatter_nd(i, tf.zeros([3, 7, 5]), [9, 4, 5]).shape.as_list() == [9, 4, 5]
    assert tf.batch_gather(p, tf.placeholder(tf.int32, [None, 2])).shape.as_list() == [None, 2, 5]
    assert tf.gather_nd(p, i).op.type == "GatherNd"
    assert tf.tensor_scatter_update(p, i, tf.zeros([2, 7, 5])).op.type == "TensorScatterUpdate"
    assert tf.tensor_scatter_nd_min(p, i, tf.zeros([2, 7, 5])).op.name == "TensorScatterMin"
    v = tf.Variable(tf.zeros([3, 2]))
    assert tf.scatter_update(v, [0], [[1.0, 2.0]]).op.type == "ScatterUpdate"
    assert tf.scatter_nd_add(v, [[0]], [[1.0, 2.0]], use_locking=True).op.get_attr("use_locking")
