"""tf.SparseTensor and tf.sparse: the composite's API, Session fetches and feeds of it, every
sparse op against a NumPy computation of the dense tensors involved (all in one run), the
gradients of sparse_tensor_dense_matmul and of the sparse embedding lookups (IndexedSlices
into the table), tf.string_split; the comparison with TensorFlow is
tests/test_sparse_tensor_tf.py."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf
from tfc.compiler import PIPELINE, compile_program
from tfc.ir import errors
from tfc.ir.program import make_program_graph
from tfc.passes.native import NativeBuildError

RNG = np.random.default_rng(17)


def _dense(indices, values, shape, default=0):
    out = np.full(tuple(shape), default, dtype=np.asarray(values).dtype)
    for idx, v in zip(np.asarray(indices).tolist(), np.asarray(values)):
        out[tuple(idx)] = v
    return out


def _random_sparse(shape, n, dtype=np.float32):
    """n distinct coordinates of `shape` in a shuffled order, and their values."""
    flat = RNG.choice(int(np.prod(shape)), size=n, replace=False)
    indices = np.stack(np.unravel_index(flat, shape), axis=1).astype(np.int64)
    values = RNG.uniform(-2, 2, n).astype(dtype)
    return indices, values, np.array(shape, np.int64)


def _row_major(indices, values):
    order = np.lexsort(np.asarray(indices).T[::-1])
    return np.asarray(indices)[order], np.asarray(values)[order]


def test_sparse_tensor_is_a_composite_of_three_tensors():
    with tf.Graph().as_default() as g:
        st = tf.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], [3, 4])
        assert st.dtype == tf.float32 and st.indices.dtype == tf.int64
        assert st.dense_shape.dtype == tf.int64
        assert st.shape.as_list() == [3, 4] and st.get_shape().as_list() == [3, 4]
        assert st.graph is g and st.op is st.values.op
        ph = tf.sparse_placeholder(tf.float32, name="sp")
        assert ph.shape.rank is None
        ph2 = tf.sparse_placeholder(tf.int32, shape=[None, 5])
        assert ph2.shape.as_list() == [None, None]
        ph3 = tf.sparse_placeholder(tf.int32, shape=[2, 5])
        assert ph3.shape.as_list() == [2, 5]
        assert tf.convert_to_tensor_or_sparse_tensor(st) is st
        value = tf.SparseTensorValue([[0]], [1.0], [2])
        assert isinstance(tf.convert_to_tensor_or_sparse_tensor(value), tf.SparseTensor)
        with pytest.raises(ValueError, match="Sparse dtype"):
            tf.convert_to_tensor_or_sparse_tensor(st, dtype=tf.int32)
        assert isinstance(tf.convert_to_tensor_or_sparse_tensor([1.0]), tf.Tensor)
        with pytest.raises(ValueError, match="indices have 3 columns"):
            tf.SparseTensor([[0, 1, 2]], [1.0], [3, 4])
        with pytest.raises(TypeError, match="must be a SparseTensor"):
            tf.sparse.to_dense(tf.constant([1.0]))
        with tf.Session() as sess:
            got = st.eval()
            assert isinstance(got, tf.SparseTensorValue)
            np.testing.assert_array_equal(got.indices, [[0, 1], [2, 0]])
            np.testing.assert_array_equal(got.values, np.float32([1.5, 2.5]))
            np.testing.assert_array_equal(got.dense_shape, [3, 4])
            # a fetched structure holding one, fed from a tuple
            triple = (np.array([[1, 1]]), np.float32([7.0]), np.array([2, 3]))
            both = sess.run({"a": st, "b": [tf.sparse.to_dense(ph)]}, {ph: triple})
            np.testing.assert_array_equal(both["b"][0], _dense(*triple))
            with pytest.raises(TypeError, match="fed a SparseTensorValue"):
                sess.run(ph.values, {ph: np.zeros(3)})
            # make_callable takes a SparseTensor among its feeds and fetches, call after call
            run = sess.make_callable([ph, tf.sparse.to_dense(ph)], feed_list=[ph])
            for k in range(2):
                value = tf.SparseTensorValue([[0, k]], np.float32([k + 1]), [1, 2])
                fetched, dense = run(value)
                assert isinstance(fetched, tf.SparseTensorValue)
                np.testing.assert_array_equal(fetched.indices, [[0, k]])
                np.testing.assert_array_equal(dense, _dense(*value))


@pytest.fixture(scope="module")
def run_cases():
    """Every sparse op on constant and fed SparseTensors, run together: case name -> (value,
    expected value)."""
    a_idx, a_val, a_shape = _random_sparse((4, 5), 8)
    shuffled_idx, shuffled_val = a_idx, a_val
    a_idx, a_val = _row_major(a_idx, a_val)  # TF's canonical order, which to_dense checks
    b_idx, b_val, _ = _random_sparse((4, 5), 7)
    b_idx[:3] = a_idx[:3]  # shared coordinates, for add/maximum/minimum
    b_idx = np.unique(b_idx, axis=0)
    b_idx = b_idx[RNG.permutation(len(b_idx))]
    b_val = b_val[: len(b_idx)]
    a_dense, b_dense = _dense(a_idx, a_val, a_shape), _dense(b_idx, b_val, a_shape)
    present = _dense(a_idx, np.ones_like(a_val), a_shape) > 0
    m_dense = RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
    cases, feeds = {}, {}
    with tf.Graph().as_default() as g:
        a_const = tf.SparseTensor(a_idx, a_val, a_shape)  # a dense_shape known when compiling
        a_fed = tf.sparse_placeholder(tf.float32)  # and one known at run time only
        feeds[a_fed] = tf.SparseTensorValue(a_idx, a_val, a_shape)
        b = tf.SparseTensor(b_idx, b_val, a_shape)
        shuffled = tf.SparseTensor(shuffled_idx, shuffled_val, a_shape)
        shuffled_fed = tf.sparse_placeholder(tf.float32)  # ops that take any order
        feeds[shuffled_fed] = (shuffled_idx, shuffled_val, a_shape)

        def dense_case(name, tensor, want):
            cases[name] = (tensor, want)

        def sparse_case(name, sp, want_dense, sorted_indices=None):
            """A SparseTensor result: its dense form, and its indices where their order
            is defined."""
            cases[name] = (tf.sparse.to_dense(sp), want_dense)
            cases[name + "/shape"] = (sp.dense_shape, np.array(want_dense.shape, np.int64))
            if sorted_indices is not None:
                cases[name + "/indices"] = (sp.indices, sorted_indices)

        for which, a in (("const", a_const), ("fed", a_fed)):
            dense_case(f"to_dense/{which}", tf.sparse_tensor_to_dense(a), a_dense)
            dense_case(
                f"to_dense_default/{which}",
                tf.sparse.to_dense(a, default_value=-3.0),
                np.where(_dense(a_idx, np.ones_like(a_val), a_shape) > 0, a_dense, -3.0),
            )
            dense_case(
                f"matmul/{which}", tf.sparse_tensor_dense_matmul(a, m_dense), a_dense @ m_dense
            )
            dense_case(
                f"matmul_adjoint/{which}",
                tf.sparse.matmul(a, m_dense.T.copy(), adjoint_a=False, adjoint_b=True),
                a_dense @ m_dense,
            )
            dense_case(
                f"matmul_adjoint_a/{which}",
                tf.sparse_tensor_dense_matmul(a, a_dense, adjoint_a=True),
                a_dense.T @ a_dense,
            )
            dense_case(f"reduce_sum/{which}", tf.sparse_reduce_sum(a, axis=1), a_dense.sum(axis=1))
            dense_case(f"reduce_sum_all/{which}", tf.sparse.reduce_sum(a), a_dense.sum())
            dense_case(f"add_dense/{which}", tf.sparse_add(a, b_dense), a_dense + b_dense)
        a = a_fed
        dense_case("reduce_sum_unordered", tf.sparse_reduce_sum(shuffled_fed, 0), a_dense.sum(0))
        dense_case("add_dense_unordered", tf.sparse_add(shuffled_fed, b_dense), a_dense + b_dense)
        dense_case(
            "matmul_unordered",
            tf.sparse_tensor_dense_matmul(shuffled_fed, m_dense),
            a_dense @ m_dense,
        )
        sparse_case("reorder", tf.sparse_reorder(shuffled), a_dense, a_idx)
        cases["reorder/values"] = (tf.sparse_reorder(shuffled).values, a_val)
        sparse_case("reshape", tf.sparse_reshape(a, [2, -1]), a_dense.reshape(2, 10))
        sparse_case("reshape3", tf.sparse.reshape(a, [5, 2, 2]), a_dense.reshape(5, 2, 2))
        sparse_case("concat0", tf.sparse_concat(0, [a, b]), np.concatenate([a_dense, b_dense]))
        sparse_case(
            "concat1",
            tf.sparse.concat(1, [a, b, a]),
            np.concatenate([a_dense, b_dense, a_dense], 1),
        )
        sparse_case("slice", tf.sparse_slice(a, [1, 2], [2, 10]), a_dense[1:3, 2:])
        for i, part in enumerate(tf.sparse_split(sp_input=a, num_split=2, axis=1)):
            sparse_case(f"split{i}", part, np.split(a_dense, [3], axis=1)[i])
        total = a_dense + b_dense
        both = (_dense(a_idx, np.ones_like(a_val), a_shape) > 0) & (
            _dense(b_idx, np.ones_like(b_val), a_shape) > 0
        )
        dropped = both & (np.abs(total) < 0.5)
        sparse_case("add", tf.sparse_add(a, b), total)
        sparse_case("add_thresh", tf.sparse.add(a, b, threshold=0.5), np.where(dropped, 0, total))
        cases["add_thresh/count"] = (
            tf.size(tf.sparse.add(a, b, threshold=0.5).values),
            np.int32(np.count_nonzero((a_dense != 0) | (b_dense != 0)) - dropped.sum()),
        )
        sparse_case("maximum", tf.sparse_maximum(a, b), np.maximum(a_dense, b_dense))
        sparse_case("minimum", tf.sparse.minimum(a, b), np.minimum(a_dense, b_dense))
        softmax = np.zeros_like(a_dense)
        for r in range(a_dense.shape[0]):
            e = np.exp(a_dense[r][present[r]] - a_dense[r][present[r]].max(initial=-np.inf))
            softmax[r][present[r]] = e / e.sum()
        sparse_case("softmax", tf.sparse_softmax(a), softmax)
        # rows 0 and 3 of `holes` have no entry
        holes = tf.SparseTensor([[1, 0], [1, 3], [2, 2]], [1.0, 2.0, 3.0], [4, 4])
        filled, empty = tf.sparse_fill_empty_rows(holes, 9.0)
        want = _dense([[1, 0], [1, 3], [2, 2]], np.float32([1, 2, 3]), [4, 4])
        want[0, 0] = want[3, 0] = 9.0
        sparse_case(
            "fill_empty_rows", filled, want, np.array([[0, 0], [1, 0], [1, 3], [2, 2], [3, 0]])
        )
        dense_case("fill_empty_rows/empty", empty, np.array([True, False, False, True]))
        summed = tf.sparse_reduce_sum_sparse(a, axis=0)
        sparse_case("reduce_sum_sparse", summed, a_dense.sum(axis=0))
        masked_max = np.where(present, a_dense, -np.inf).max(axis=1)
        dense_case(
            "reduce_max", tf.sparse_reduce_max(a, 1), np.where(present.any(1), masked_max, 0)
        )
        sparse_case(
            "reduce_max_sparse",
            tf.sparse.reduce_max_sparse(a, 0),
            np.where(present.any(0), np.where(present, a_dense, -np.inf).max(0), 0),
        )
        dense_case("reduce_max_all", tf.sparse.reduce_max(a), a_val.max())
        sparse_case(
            "reset_shape", tf.sparse_reset_shape(a, [6, 5]), np.pad(a_dense, [(0, 2), (0, 0)])
        )
        tight = tf.sparse.reset_shape(tf.SparseTensor([[0, 1], [2, 0]], [1.0, 2.0], [5, 5]))
        dense_case("reset_shape_tight", tight.dense_shape, np.array([3, 2]))
        words = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], np.int64([2, 0, 3]), [2, 2])
        dense_case(
            "to_indicator",
            tf.sparse_to_indicator(words, 4),
            np.array([[1, 0, 1, 0], [0, 0, 0, 1]], bool),
        )
        merged = tf.sparse_merge(words, tf.SparseTensor(words.indices, [0.5, 1.5, 2.5], [2, 2]), 4)
        sparse_case(
            "merge",
            merged,
            np.float32([[1.5, 0, 0.5, 0], [0, 0, 0, 2.5]]),
            np.array([[0, 0], [0, 2], [1, 3]]),
        )
        dense_case(
            "sparse_matmul",
            tf.sparse_matmul(m_dense, m_dense, transpose_b=True, a_is_sparse=True),
            m_dense @ m_dense.T,
        )
        pair = tf.stack([tf.serialize_sparse(a), tf.serialize_sparse(tf.sparse_reorder(b))])
        sparse_case(
            "serialized",
            tf.deserialize_many_sparse(pair, tf.float32, 3),
            np.stack([a_dense, b_dense]),
        )
        rows = tf.deserialize_many_sparse(tf.serialize_many_sparse(a), tf.float32)
        sparse_case("serialized_rows", rows, a_dense, a_idx)
        keep = np.arange(len(a_val)) % 2 == 0
        sparse_case("retain", tf.sparse_retain(a, keep), _dense(a_idx[keep], a_val[keep], a_shape))
        sparse_case("from_dense", tf.sparse.from_dense(a_dense), a_dense, np.argwhere(a_dense != 0))
        sparse_case("transpose", tf.sparse_transpose(a), a_dense.T)
        cube = tf.SparseTensor([[0, 1, 2], [1, 0, 1]], [1.0, 2.0], [2, 3, 4])
        sparse_case(
            "transpose_perm",
            tf.sparse.transpose(cube, [2, 0, 1]),
            _dense([[0, 1, 2], [1, 0, 1]], np.float32([1, 2]), [2, 3, 4]).transpose(2, 0, 1),
        )
        dense_case(
            "sparse_to_dense",
            tf.sparse_to_dense([1, 3], [5], [4.0, 6.0], default_value=-1.0),
            np.float32([-1, 4, -1, 6, -1]),
        )
        dense_case(
            "sparse_to_dense_scalar",
            tf.sparse_to_dense(
                [[0, 1], [2, 0]], tf.placeholder_with_default(np.array([3, 2], np.int32), [2]), 5, 1
            ),
            np.int32([[1, 5], [1, 1], [5, 1]]),
        )
        slices = tf.IndexedSlices(
            tf.constant(np.arange(8.0).reshape(4, 2)),
            tf.constant([0, 3, 5, 7]),
            tf.constant([8, 2]),
        )
        masked = tf.sparse_mask(slices, [3, 7])
        dense_case("mask/indices", masked.indices, np.int32([0, 5]))
        dense_case("mask/values", masked.values, np.float64([[0, 1], [4, 5]]))
        # segment sums: rows picked by indices, summed per sorted segment id
        data = RNG.uniform(-1, 1, (6, 3)).astype(np.float32)
        picks, segs = np.array([0, 5, 2, 2, 4]), np.array([0, 0, 1, 3, 3])
        want_sum = np.zeros((4, 3), np.float32)
        counts = np.zeros(4, np.float32)
        for p, s in zip(picks, segs):
            want_sum[s] += data[p]
            counts[s] += 1
        dense_case("segment_sum", tf.sparse_segment_sum(data, picks, segs), want_sum)
        dense_case(
            "segment_sum_num",
            tf.sparse.segment_sum(data, picks, segs, num_segments=6),
            np.concatenate([want_sum, np.zeros((2, 3), np.float32)]),
        )
        dense_case(
            "segment_mean",
            tf.sparse_segment_mean(data, picks, segs),
            want_sum / np.maximum(counts, 1)[:, None],
        )
        dense_case(
            "segment_sqrt_n",
            tf.sparse_segment_sqrt_n(data, picks, segs),
            want_sum / np.sqrt(np.maximum(counts, 1))[:, None],
        )
        dense_case(
            "segment_mean_1d",
            tf.sparse.segment_mean(data[:, 0], picks, segs),
            want_sum[:, 0] / np.maximum(counts, 1),
        )
        # sequences along the last dimension: [0,0] "ab" vs "a", [0,1] "" vs "x",
        # [1,0] "c" vs "ce", [1,1] "d" vs "" (normalized: inf), [*,2] both empty
        hyp = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0]], list("abcd"), [2, 2, 2])
        truth = tf.SparseTensor(
            [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 1]], list("axce"), [2, 3, 2]
        )
        dense_case(
            "edit_distance", tf.edit_distance(hyp, truth), np.float32([[1, 1, 0], [0.5, np.inf, 0]])
        )
        dense_case(
            "edit_distance_raw",
            tf.edit_distance(hyp, truth, normalize=False),
            np.float32([[1, 1, 0], [1, 1, 0]]),
        )
        split = tf.string_split(["a b  c", "", "d,e"], delimiter=" ,")
        dense_case(
            "string_split/indices",
            split.indices,
            np.array([[0, 0], [0, 1], [0, 2], [2, 0], [2, 1]]),
        )
        dense_case(
            "string_split/values", split.values, np.array([b"a", b"b", b"c", b"d", b"e"], object)
        )
        dense_case("string_split/shape", split.dense_shape, np.array([3, 3]))
        keep_empty = tf.string_split(["a,,b"], delimiter=",", skip_empty=False)
        dense_case("string_split/empty", keep_empty.values, np.array([b"a", b"", b"b"], object))
        strings_split = tf.strings.split(["a b", "c"])
        dense_case("strings_split/shape", strings_split.dense_shape, np.array([2, 2]))
        names = list(cases)
        with tf.Session(graph=g) as sess:
            values = sess.run([cases[n][0] for n in names], feeds)
    return {n: (v, cases[n][1]) for n, v in zip(names, values)}


CASE_NAMES = [
    *(
        f"{op}/{w}"
        for op in (
            "to_dense",
            "to_dense_default",
            "matmul",
            "matmul_adjoint",
            "matmul_adjoint_a",
            "reduce_sum",
            "reduce_sum_all",
            "add_dense",
        )
        for w in ("const", "fed")
    ),
    "reduce_sum_unordered",
    "add_dense_unordered",
    "matmul_unordered",
    "reorder",
    "reorder/indices",
    "reorder/values",
    "reshape",
    "reshape3",
    "concat0",
    "concat1",
    "slice",
    "slice/shape",
    "split0",
    "split1",
    "split1/shape",
    "add",
    "add_thresh",
    "add_thresh/count",
    "maximum",
    "minimum",
    "softmax",
    "fill_empty_rows",
    "fill_empty_rows/indices",
    "fill_empty_rows/empty",
    "reduce_sum_sparse",
    "reduce_max",
    "reduce_max_sparse",
    "reduce_max_sparse/shape",
    "reduce_max_all",
    "reset_shape",
    "reset_shape/shape",
    "reset_shape_tight",
    "to_indicator",
    "merge",
    "merge/indices",
    "sparse_matmul",
    "edit_distance",
    "serialized",
    "serialized_rows",
    "serialized_rows/indices",
    "edit_distance_raw",
    "retain",
    "from_dense",
    "from_dense/indices",
    "transpose",
    "transpose_perm",
    "sparse_to_dense",
    "sparse_to_dense_scalar",
    "mask/indices",
    "mask/values",
    "segment_sum",
    "segment_sum_num",
    "segment_mean",
    "segment_sqrt_n",
    "segment_mean_1d",
    "string_split/indices",
    "string_split/values",
    "string_split/shape",
    "string_split/empty",
    "strings_split/shape",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_sparse_op_matches_numpy(run_cases, name):
    """The case, and the dense_shape of a SparseTensor result."""
    for part in (name, f"{name}/shape"):
        if part not in run_cases:
            continue
        got, want = run_cases[part]
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape, f"{part}: shape {got.shape}, expected {want.shape}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=part)
        else:
            np.testing.assert_array_equal(got, want, err_msg=part)


def test_matmul_gradients_reach_values_and_the_dense_side():
    """With a dense_shape known when compiling (native) and one fed at run time (through the
    densification in Python), in one run."""
    idx, val, shape = _random_sparse((3, 4), 5)
    m = RNG.uniform(-1, 1, (4, 2)).astype(np.float32)
    w = RNG.uniform(-1, 1, (3, 2)).astype(np.float32)  # loss = sum(w * (A @ m))
    with tf.Graph().as_default():
        values = tf.constant(val)
        dense = tf.constant(m)
        shape_ph = tf.placeholder(tf.int64, [2])
        grads = []
        for sp in (tf.SparseTensor(idx, values, shape), tf.SparseTensor(idx, values, shape_ph)):
            loss = tf.reduce_sum(w * tf.sparse_tensor_dense_matmul(sp, dense))
            g_values, g_dense = tf.gradients(loss, [values, dense])
            # the dense side's gradient is IndexedSlices of the rows the entries read
            grads.append([g_values, tf.convert_to_tensor(g_dense)])
        with tf.Session() as sess:
            got = sess.run(grads, {shape_ph: shape})
    for gv, gd in got:
        # d loss / d A[r, c] = (w @ m.T)[r, c]; d loss / d m = A.T @ w
        np.testing.assert_allclose(gv, (w @ m.T)[idx[:, 0], idx[:, 1]], rtol=1e-5)
        np.testing.assert_allclose(gd, _dense(idx, val, shape).T @ w, rtol=1e-5, atol=1e-6)


def _lookup_reference(table, ids_by_row, weights_by_row, combiner, rows):
    out = np.zeros((rows, table.shape[1]), np.float64)
    for r in range(rows):
        ids, ws = ids_by_row.get(r, []), weights_by_row.get(r, [])
        if not ids:
            continue
        total = sum(w * table[i] for i, w in zip(ids, ws))
        norm = {"sum": 1.0, "mean": sum(ws), "sqrtn": np.sqrt(sum(w * w for w in ws))}[combiner]
        out[r] = total / norm
    return out


def test_embedding_lookup_sparse_and_its_gradient_into_the_table():
    table = RNG.uniform(-1, 1, (6, 3)).astype(np.float32)
    # rows 0, 1, 3 hold ids (row 2 none), row 3 repeats id 5
    idx = np.array([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1]])
    ids = np.array([1, 5, 2, 5, 5], np.int64)
    wts = np.float32([0.5, 2.0, 1.5, 1.0, 3.0])
    with tf.Graph().as_default():
        params = tf.Variable(table)
        sp_ids = tf.sparse_placeholder(tf.int64)
        sp_w = tf.SparseTensor(idx, wts, [4, 2])
        results, want = [], []
        by_row, w_row, one_row = {}, {}, {}
        for (r, _), i, w in zip(idx.tolist(), ids, wts):
            by_row.setdefault(r, []).append(int(i))
            w_row.setdefault(r, []).append(float(w))
            one_row.setdefault(r, []).append(1.0)
        for combiner in ("sum", "mean", "sqrtn"):
            results.append(tf.nn.embedding_lookup_sparse(params, sp_ids, sp_w, combiner=combiner))
            want.append(_lookup_reference(table, by_row, w_row, combiner, 4))
            results.append(tf.nn.embedding_lookup_sparse(params, sp_ids, None, combiner=combiner))
            want.append(_lookup_reference(table, by_row, one_row, combiner, 4))
        # a table in two shards (ids 0-2 and 3-5 with "div") gives the same rows
        shards = [tf.constant(table[:3]), tf.constant(table[3:])]
        results.append(tf.nn.embedding_lookup_sparse(shards, sp_ids, sp_w, "div", combiner="sqrtn"))
        want.append(_lookup_reference(table, by_row, w_row, "sqrtn", 4))
        loss = tf.reduce_sum(results[0] * tf.constant([[1.0, 2.0, 3.0]]))
        (grad,) = tf.gradients(loss, [params])
        assert isinstance(grad, tf.IndexedSlices)
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        feed = {sp_ids: (idx, ids, [4, 2])}
        with tf.Session() as sess:
            sess.run(params.initializer)
            got, g_values, g_indices = sess.run([results, grad.values, grad.indices], feed)
            sess.run(step, feed)
            after = sess.run(params)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    dense_grad = np.zeros_like(table)
    np.add.at(dense_grad, g_indices, g_values)
    expected = np.zeros_like(table)
    for i, w in zip(ids, wts):
        expected[i] += w * np.float32([1, 2, 3])
    np.testing.assert_allclose(dense_grad, expected, rtol=1e-5)
    np.testing.assert_allclose(after, table - 0.1 * expected, rtol=1e-5, atol=1e-6)
    untouched = [r for r in range(6) if r not in set(ids.tolist())]
    np.testing.assert_array_equal(after[untouched], table[untouched])


def test_safe_embedding_lookup_sparse_prunes_and_fills():
    table = RNG.uniform(-1, 1, (5, 2)).astype(np.float32)
    # row 0: ids 1, -1 (pruned); row 1: id 3 with weight 0 (pruned unless "sum"); row 2 empty
    idx = np.array([[0, 0], [0, 1], [1, 0], [3, 0]])
    ids = np.array([1, -1, 3, 4], np.int64)
    wts = np.float32([2.0, 1.0, 0.0, 1.0])
    with tf.Graph().as_default():
        sp_ids = tf.SparseTensor(idx, ids, [4, 2])
        sp_w = tf.SparseTensor(idx, wts, [4, 2])
        zero_rows = tf.nn.safe_embedding_lookup_sparse(table, sp_ids, sp_w, combiner="mean")
        default = tf.nn.safe_embedding_lookup_sparse(table, sp_ids, None, default_id=2)
        summed = tf.nn.safe_embedding_lookup_sparse(table, sp_ids, sp_w, combiner="sum")
        # a rank-3 id tensor: the result keeps the outer dimensions
        ids3 = tf.SparseTensor([[0, 0, 0], [1, 1, 0]], np.int64([4, 0]), [2, 2, 1])
        rank3 = tf.nn.safe_embedding_lookup_sparse(table, ids3, None)
        with tf.Session() as sess:
            got = sess.run([zero_rows, default, summed, rank3])
    z = np.zeros(2, np.float32)
    np.testing.assert_allclose(got[0], [table[1], z, z, table[4]], rtol=1e-6)
    np.testing.assert_allclose(got[1], [table[1], table[3], table[2], table[4]], rtol=1e-6)
    np.testing.assert_allclose(got[2], [2 * table[1], 0 * table[3], z, table[4]], rtol=1e-6)
    np.testing.assert_allclose(got[3], [[table[4], z], [z, table[0]]], rtol=1e-6)
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(table, sp_ids, None, combiner="max")


def test_native_builds_refuse_the_value_dependent_sparse_ops_and_compile_the_rest():
    with tf.Graph().as_default() as g:
        sp = tf.SparseTensor([[1, 0], [0, 2]], [1.0, 2.0], [2, 3])
        dense = tf.sparse.to_dense(sp, validate_indices=False)  # a known shape: a ScatterNd
        product = tf.sparse_tensor_dense_matmul(sp, tf.ones([3, 2]))
        native = make_program_graph(g, [(dense.op.name, 0), (product.op.name, 0)])
        compiled = compile_program(native, PIPELINE)
        assert "SparseToDense" not in {n["op"] for _, n in compiled.graph.nx.nodes(data=True)}
        ordered = tf.sparse_reorder(sp, name="order")
        program = make_program_graph(g, [(ordered.indices.op.name, 0)])
        with pytest.raises(
            NativeBuildError,
            match=r"Op 'order' \(type SparseReorder\) cannot be compiled into a native program: "
            r"tfc has no native kernel for it",
        ):
            compile_program(program, PIPELINE)


def test_bad_sparse_input_is_a_clear_error():
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32)
        other = tf.SparseTensor([[0, 0]], [1.0], [3, 3])
        dense = tf.sparse.to_dense(sp)
        added = tf.sparse_add(sp, other)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="out of bounds"):
                sess.run(dense, {sp: ([[5, 0]], [1.0], [2, 2])})
            with pytest.raises(errors.InvalidArgumentError, match="lexicographic order"):
                sess.run(dense, {sp: ([[1, 0], [0, 0]], [1.0, 2.0], [2, 2])})
            with pytest.raises(errors.InvalidArgumentError, match="shapes do not match"):
                sess.run(added.values, {sp: ([[1, 0]], [1.0], [2, 2])})


def test_every_case_is_checked(run_cases):
    checked = set(CASE_NAMES) | {f"{n}/shape" for n in CASE_NAMES}
    unchecked = set(run_cases) - checked
    assert sorted(unchecked) == []
