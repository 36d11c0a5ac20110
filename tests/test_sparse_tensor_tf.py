"""tf.SparseTensor and tf.sparse against real TensorFlow (needs tensorflow; skipped without
it): the same program written once against a module `lib` (tfc, or tf.compat.v1 in graph
mode) gives the same values for every sparse op, the sparse embedding lookups with their
table gradients, VarLenFeature parsing and tf.string_split."""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc as tf  # noqa: E402

RNG = np.random.default_rng(23)
A_IDX = np.array([[0, 1], [0, 4], [1, 2], [2, 0], [2, 3], [3, 3]], np.int64)
A_VAL = RNG.uniform(-2, 2, len(A_IDX)).astype(np.float32)
B_IDX = np.array([[0, 1], [1, 0], [2, 3], [3, 4]], np.int64)
B_VAL = RNG.uniform(-2, 2, len(B_IDX)).astype(np.float32)
SHAPE = np.array([4, 5], np.int64)
M = RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
DENSE = RNG.uniform(-1, 1, (4, 5)).astype(np.float32)
TABLE = RNG.uniform(-1, 1, (7, 3)).astype(np.float32)
IDS_IDX = np.array([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]], np.int64)
IDS = np.array([1, 6, 2, -1, 6, 4], np.int64)
WEIGHTS = np.float32([0.5, 2.0, 1.5, 1.0, 0.0, 3.0])


def _program(lib):
    """name -> fetch (a Tensor or SparseTensor), and the feed dict, built with `lib`."""
    a = lib.sparse_placeholder(lib.float32)
    b = lib.SparseTensor(B_IDX, B_VAL, SHAPE)
    feed = {a: lib.SparseTensorValue(A_IDX, A_VAL, SHAPE)}
    table = lib.Variable(TABLE)
    good = IDS >= 0
    sp_ids = lib.SparseTensor(IDS_IDX[good], IDS[good], [4, 3])
    sp_w = lib.SparseTensor(IDS_IDX[good], WEIGHTS[good], [4, 3])
    fetches = {
        "to_dense": lib.sparse.to_dense(a, default_value=-1.0),
        "matmul": lib.sparse_tensor_dense_matmul(a, M),
        "matmul_adjoint": lib.sparse_tensor_dense_matmul(a, M.T.copy(), adjoint_b=True),
        "reduce_sum": lib.sparse_reduce_sum(a, 0),
        "reduce_sum_sparse": lib.sparse_reduce_sum_sparse(a, 1),
        "reorder": lib.sparse_reorder(lib.SparseTensor(A_IDX[::-1], A_VAL[::-1], SHAPE)),
        "reshape": lib.sparse_reshape(a, [2, -1]),
        "concat": lib.sparse_concat(1, [a, b]),
        "slice": lib.sparse.slice(a, [1, 1], [2, 3]),
        "split": lib.sparse.split(sp_input=a, num_split=3, axis=1),
        "add": lib.sparse_add(a, b, 0.5),
        "add_dense": lib.sparse_add(a, DENSE),
        "maximum": lib.sparse_maximum(a, b),
        "minimum": lib.sparse_minimum(a, b),
        "softmax": lib.sparse_softmax(a),
        "fill": lib.sparse_fill_empty_rows(lib.SparseTensor([[1, 1]], [5.0], [3, 2]), -2.0),
        "retain": lib.sparse_retain(a, [True, False, True, True, False, True]),
        "transpose": lib.sparse_transpose(a),
        "from_dense": lib.sparse.from_dense(np.float32([[0, 1], [2, 0]])),
        "reduce_max": lib.sparse_reduce_max(a, 1),
        "reduce_max_keep": lib.sparse_reduce_max(a, 0, keepdims=True),
        "reduce_max_sparse": lib.sparse_reduce_max_sparse(a, 0),
        "reset_shape": lib.sparse_reset_shape(a),
        "reset_shape_to": lib.sparse_reset_shape(a, [5, 6]),
        "to_indicator": lib.sparse_to_indicator(sp_ids, 7),
        "merge": lib.sparse_merge(sp_ids, sp_w, 7),
        "sparse_matmul": lib.sparse_matmul(M, M, transpose_a=True, b_is_sparse=True),
        "edit_distance": lib.edit_distance(
            lib.SparseTensor(A_IDX, (A_VAL > 0).astype(np.int64), SHAPE),
            lib.SparseTensor(B_IDX, (B_VAL > 0).astype(np.int64), SHAPE),
        ),
        "edit_distance_raw": lib.edit_distance(
            sp_ids, lib.SparseTensor(IDS_IDX, IDS, [4, 3]), normalize=False
        ),
        "serialize": lib.serialize_sparse(b),
        "serialize_many": lib.serialize_many_sparse(b),
        "deserialize": lib.deserialize_many_sparse(lib.serialize_many_sparse(a), lib.float32, 2),
        "segment_sqrt_n": lib.sparse_segment_sqrt_n(M, [0, 4, 1, 1], [0, 0, 2, 2]),
        "string_split": lib.string_split(["a b", "", "c,d e"], delimiter=", "),
        "strings_split": lib.strings.split(["a  b", "c"], sep=" "),
    }
    for combiner in ("sum", "mean", "sqrtn"):
        looked = lib.nn.embedding_lookup_sparse(table, sp_ids, sp_w, combiner=combiner)
        fetches[f"lookup_{combiner}"] = looked
        fetches[f"lookup_{combiner}_grad"] = lib.convert_to_tensor(
            lib.gradients(lib.reduce_sum(looked * [[1.0, -2.0, 3.0]]), [table])[0]
        )
        fetches[f"lookup_{combiner}_unweighted"] = lib.nn.embedding_lookup_sparse(
            table, sp_ids, None, combiner=combiner
        )
    raw = lib.SparseTensor(IDS_IDX, IDS, [4, 3])
    raw_w = lib.SparseTensor(IDS_IDX, WEIGHTS, [4, 3])
    fetches["safe_mean"] = lib.nn.safe_embedding_lookup_sparse(table, raw, raw_w)
    fetches["safe_default"] = lib.nn.safe_embedding_lookup_sparse(table, raw, None, "sum", 3)
    return fetches, feed, table


def _records():
    ex = real_tf.train.Example
    feats = real_tf.train.Features
    feat = real_tf.train.Feature
    rows = []
    for ints, floats in (([4, 2], [1.5]), ([], [2.5, 3.5]), ([9], [])):
        f = {}
        if ints:
            f["ids"] = feat(int64_list=real_tf.train.Int64List(value=ints))
            f["idx"] = feat(int64_list=real_tf.train.Int64List(value=[i % 3 for i in ints]))
            f["val"] = feat(float_list=real_tf.train.FloatList(value=[float(i) for i in ints]))
        if floats:
            f["w"] = feat(float_list=real_tf.train.FloatList(value=floats))
        rows.append(ex(features=feats(feature=f)).SerializeToString())
    return rows


def _parsing(lib, records):
    features = {
        "ids": lib.VarLenFeature(lib.int64),
        "w": lib.VarLenFeature(lib.float32),
        "pair": lib.SparseFeature("idx", "val", lib.float32, 3),
    }
    return {
        "batch": lib.parse_example(records, features),
        "single": lib.parse_single_example(records[0], features),
    }


def _run(lib, session_type, graph):
    with graph.as_default():
        fetches, feed, table = _program(lib)
        parsed = _parsing(lib, _records())
        with session_type() as sess:
            sess.run(table.initializer)
            return sess.run(fetches, feed), sess.run(parsed)


def _leaves(value, prefix):
    """(name, array) of every array in a fetched structure (SparseTensorValues by field)."""
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _leaves(value[k], f"{prefix}/{k}")
    elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{prefix}/{i}")
    elif hasattr(value, "_fields"):
        for field in value._fields:
            yield f"{prefix}.{field}", np.asarray(getattr(value, field))
    else:
        yield prefix, np.asarray(value)


@pytest.fixture(scope="module")
def both():
    ours = _run(tf, tf.Session, tf.Graph())
    theirs = _run(v1, v1.Session, v1.Graph())
    return dict(_leaves(ours, "")), dict(_leaves(theirs, ""))


def test_every_sparse_result_matches_tensorflow(both):
    ours, theirs = both
    assert sorted(ours) == sorted(theirs) and len(theirs) == 113
    for name in sorted(theirs):
        got, want = ours[name], theirs[name]
        assert got.shape == want.shape, f"{name}: {got.shape} vs TF's {want.shape}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_a_graph_def_of_sparse_ops_made_by_tensorflow_runs_in_tfc():
    """TF's op names and attributes of the sparse ops map onto tfc's: the same GraphDef gives
    the same values."""
    from tfc.io.graph_pb import GraphDef

    graph = v1.Graph()
    with graph.as_default():
        sp = v1.sparse_placeholder(v1.float32, name="sp")
        names = {
            "dense": v1.sparse.to_dense(v1.sparse_reorder(sp), default_value=-1.0),
            "max": v1.sparse_reduce_max(sp, 1),
            "sum_sparse": v1.sparse_reduce_sum_sparse(sp, 0).values,
            "filled": v1.sparse_fill_empty_rows(sp, 7.0)[0].indices,
            "sliced": v1.sparse.slice(sp, [0, 1], [3, 3]).values,
            "reshaped": v1.sparse_reshape(sp, [-1, 2]).indices,
            "softmax": v1.sparse_softmax(sp).values,
            "segments": v1.sparse_segment_sum(M, [0, 3, 4], [0, 0, 1]),
            "split": v1.string_split(["a b", "c"]).indices,
            "parsed": v1.parse_example(_records(), {"ids": v1.VarLenFeature(v1.int64)})[
                "ids"
            ].values,
        }
        outs = {k: v1.identity(t, name=k) for k, t in names.items()}
        feed = {sp: v1.SparseTensorValue(A_IDX[::-1], A_VAL[::-1], SHAPE)}
        with v1.Session() as sess:
            want = sess.run(outs, feed)
        graph_def = GraphDef.FromString(graph.as_graph_def().SerializeToString())
    with tf.Graph().as_default():
        fetched = tf.import_graph_def(graph_def, return_elements=[f"{k}:0" for k in outs], name="")
        tf_feed = {"sp/indices:0": A_IDX[::-1], "sp/values:0": A_VAL[::-1], "sp/shape:0": SHAPE}
        with tf.Session() as sess:
            got = dict(zip(outs, sess.run(fetched, tf_feed)))
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-6, err_msg=key)
