"""export_meta_graph / import_meta_graph / write_graph: graphs go out to a file and come back.

They train and predict the same after the round trip; bad files are refused naming the file and
the problem. init_from_checkpoint is tested here too.
"""

import json
import logging

import numpy as np
import pytest

import tfc as tf
from tfc.graphdef import read_graph_def
from tfc.io.meta_graph import (
    MetaGraphFormatError,
    decode_value,
    encode_meta_graph,
    encode_value,
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 4)).astype(np.float32)
Y = ((X[:, 0] > 0).astype(np.int32) + (X[:, 1] > 0)).astype(np.int32)


def _model():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    hidden = tf.layers.dense(x, 8, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 3, name="logits")
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
    loss = tf.reduce_mean(per_example, name="loss")
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
    tf.add_to_collection("outputs", logits)
    return x, y, logits, loss, train


def test_export_import_restore_predicts_and_trains_the_same(tmp_path):
    x, y, logits, loss, train = _model()
    saver = tf.train.Saver(max_to_keep=2)
    feed = {x: X, y: Y}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train, feed)
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
        saver.export_meta_graph(prefix + ".meta")
        want_logits = sess.run(logits, {x: X})
        for _ in range(5):
            sess.run(train, feed)
        want_loss = sess.run(loss, feed)
    n_ops = len(tf.get_default_graph().get_operations())
    n_globals, n_trainable = len(tf.global_variables()), len(tf.trainable_variables())

    tf.reset_default_graph()
    restorer = tf.train.import_meta_graph(prefix + ".meta")
    graph = tf.get_default_graph()
    assert len(graph.get_operations()) == n_ops
    assert len(tf.global_variables()) == n_globals and len(tf.trainable_variables()) == n_trainable
    # one Variable object per variable, whichever collection holds it
    assert set(map(id, tf.trainable_variables())) <= set(map(id, tf.global_variables()))
    assert restorer.saver_def.max_to_keep == 2
    assert any(v is tf.train.get_global_step() for v in tf.global_variables())
    (logits,) = tf.get_collection("outputs")
    (train,) = tf.get_collection(tf.GraphKeys.TRAIN_OP)
    feed = {"x:0": X, "y:0": Y}
    with tf.Session() as sess:
        restorer.restore(sess, prefix)
        np.testing.assert_array_equal(sess.run(logits, {"x:0": X}), want_logits)
        for _ in range(5):
            sess.run(train, feed)
        np.testing.assert_allclose(sess.run("loss:0", feed), want_loss, rtol=1e-6)
        assert sess.run(tf.train.get_global_step()) == 10
    # a new layer after the import does not collide with the imported names
    extra = tf.layers.dense(graph.get_tensor_by_name("x:0"), 2)
    assert extra.op.name.startswith("dense_1/")


def _describe(graph) -> dict:
    return {
        op.name: (op.type, op.device, op.node_def.attr, [t.name for t in op.inputs],
                  [c.name for c in op.control_inputs])
        for op in graph.get_operations()
    }  # fmt: skip


def test_nodes_keep_attributes_devices_control_edges_and_collections(tmp_path):
    with tf.device("/cpu:0"):
        a = tf.constant(np.arange(6, dtype=np.int64).reshape(2, 3), name="a")
    flags = tf.constant([True, False], name="flags")
    tf.constant(np.array([0.5, np.nan, -np.inf]), name="odd")
    with tf.control_dependencies([flags.op]):
        b = tf.identity(a, name="b")
    pooled = tf.nn.max_pool(tf.zeros([1, 4, 4, 1]), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    tf.add_to_collection("misc", 3)
    tf.add_to_collection("misc", "text")
    tf.add_to_collection("misc", b)
    tf.add_to_collection("misc", b.op)
    tf.train.export_meta_graph(str(tmp_path / "g.meta"), as_text=True)
    before = _describe(tf.get_default_graph())

    tf.reset_default_graph()
    assert tf.train.import_meta_graph(str(tmp_path / "g.meta")) is None  # no variables
    graph = tf.get_default_graph()
    after = _describe(graph)
    assert after.keys() == before.keys()
    for name, (op_type, device, attrs, inputs, control) in before.items():
        got = after[name]
        assert got[0] == op_type and got[1] == device and got[3] == inputs and got[4] == control
        assert got[2].keys() == attrs.keys(), name
        for key, value in attrs.items():
            if isinstance(value, np.ndarray):
                assert got[2][key].dtype == value.dtype
                np.testing.assert_array_equal(got[2][key], value)
            else:
                assert got[2][key] == value and type(got[2][key]) is type(value), (name, key)
    assert after["a"][1] == "/device:CPU:0" and after["b"][4] == ["flags"]
    misc = tf.get_collection("misc")
    assert misc[:2] == [3, "text"] and misc[2].name == "b:0" and misc[3].name == "b"
    with tf.Session() as sess:
        got_b, got_odd, got_pool = sess.run(["b:0", "odd:0", pooled.name])
    np.testing.assert_array_equal(got_b, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(got_odd, [0.5, np.nan, -np.inf])
    assert got_pool.shape == (1, 2, 2, 1)


def test_import_scope_export_scope_and_clear_devices(tmp_path):
    x, y, logits, loss, train = _model()
    meta = tf.train.Saver().export_meta_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = tf.train.Saver().save(sess, str(tmp_path / "m"))
        want = sess.run(logits, {x: X})

    tf.reset_default_graph()
    first = tf.train.import_meta_graph(meta, import_scope="net")
    second = tf.train.import_meta_graph(meta, import_scope="net")  # made unique: net_1
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("net/dense/kernel").type == "VariableV2"
    assert graph.get_operation_by_name("net_1/dense/kernel").type == "VariableV2"
    kernel_read = graph.get_operation_by_name("net/dense/kernel/read")
    assert kernel_read.get_attr("_class") == ["loc:@net/dense/kernel"]
    with tf.Session() as sess:
        first.restore(sess, prefix)  # checkpoint keys stay the unscoped names
        second.restore(sess, prefix)
        np.testing.assert_array_equal(sess.run("net/logits/BiasAdd:0", {"net/x:0": X}), want)
        np.testing.assert_array_equal(sess.run("net_1/logits/BiasAdd:0", {"net_1/x:0": X}), want)

    with tf.name_scope("aux"), tf.device("/cpu:0"):
        tf.multiply(tf.constant([1.0, 2.0]), 3.0, name="tripled")
    part = tf.train.export_meta_graph(export_scope="aux", clear_devices=True)
    assert [n.name for n in part.nodes] == ["Const", "Const_1", "tripled"]
    assert all(n.device == "" for n in part.nodes)
    tf.reset_default_graph()
    tf.train.import_meta_graph(part, import_scope="again")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run("again/tripled:0"), [3.0, 6.0])
    with pytest.raises(ValueError, match="depends on 'net/x', which is outside the export scope"):
        tf.train.import_meta_graph(meta, import_scope="net")
        tf.train.export_meta_graph(export_scope="net/dense")


def test_values_round_trip_exactly():
    values = [None, True, 0, -(2**62), 1.5, float("inf"), "s", b"\x00\xff", [1, [2.5]],
              (None, 3), {"k": (1,)}, tf.float64, np.float32(0.25), np.int64(-3),
              np.arange(4, dtype=np.uint8), np.array([[1 + 2j]], np.complex64),
              np.array(["a", "bc"]), np.array([b"x", b""], dtype=object),
              np.zeros((0, 2))]  # fmt: skip
    for value in values:
        data = json.loads(json.dumps(encode_value(value), allow_nan=False))
        back = decode_value(data)
        if isinstance(value, np.ndarray):
            assert back.dtype == value.dtype and back.shape == value.shape
            np.testing.assert_array_equal(back, value)
        else:
            assert back == value and type(back) is type(value), value
    assert np.isnan(decode_value(encode_value(float("nan"))))


def test_graphs_holding_python_objects_are_refused_and_odd_collection_items_skipped(caplog):
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32))
    dataset.make_one_shot_iterator().get_next()
    with pytest.raises(TypeError, match="attribute '.*' of node '.*' .* cannot be stored"):
        tf.train.export_meta_graph()

    tf.reset_default_graph()
    tf.constant(1.0, name="c")
    tf.add_to_collection("things", object())
    logger = logging.getLogger("tfc")  # tfc's logger need not propagate to the root
    logger.addHandler(caplog.handler)
    try:
        meta = tf.train.export_meta_graph()
    finally:
        logger.removeHandler(caplog.handler)
    assert "things" not in meta.collections
    assert "Issue encountered when serializing things" in caplog.text


def test_write_graph(tmp_path):
    """tf.train.write_graph writes TensorFlow's GraphDef (text by default), as TF1 does; the
    nodes come back through tf.import_graph_def (tests/test_graph_def.py tests it fully)."""
    c = tf.constant([1.0, 2.0], name="c")
    tf.multiply(c, 2.0, name="doubled")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path / "logs"), "graph.pbtxt")
    assert path == str(tmp_path / "logs" / "graph.pbtxt")
    graph_def = read_graph_def(path)
    assert [n.name for n in graph_def.node] == ["c", "Const", "doubled"]
    tf.reset_default_graph()
    tf.import_graph_def(graph_def, name="")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run("doubled:0"), [2.0, 4.0])


# -- refusals --------------------------------------------------------------------------------------
def _valid() -> dict:
    """A small graph's meta graph, as the JSON data its file holds."""
    a = tf.constant([1.0, 2.0], name="a")
    b = tf.add(a, a, name="b")
    tf.add_to_collection("out", b)
    return json.loads(json.dumps(encode_meta_graph(tf.train.export_meta_graph())))


def _node(data: dict, name: str) -> dict:
    return next(n for n in data["nodes"] if n["name"] == name)


def _set(node: str, key: str, value):
    def edit(data):
        _node(data, node)[key] = value

    return edit


BAD_FILES = {
    "format": (lambda d: d.update(format="x"), 'is not a tfc meta graph'),
    "version": (lambda d: d.update(version=2), "has format version 2; this tfc reads 1"),
    "duplicate": (lambda d: d["nodes"].append(d["nodes"][0]), "node 'a': is defined twice"),
    "missing input": (_set("b", "inputs", [["a", 0], ["nowhere", 0]]),
                      "node 'b': input nowhere:0 is not in the graph"),
    "output index": (_set("b", "inputs", [["a", 0], ["a", 1]]), "input a:1 is not in the graph"),
    "cycle": (_set("a", "control_inputs", ["b"]), "is on a cycle of inputs"),
    "dtype": (_set("a", "outputs", [{"dtype": "float128", "shape": [2]}]),
              "node 'a' output 0: Cannot convert the argument `type_value`: 'float128'"),
    "shape": (_set("a", "outputs", [{"dtype": "float32", "shape": [-2]}]), "is not a shape"),
    "array bytes": (
        lambda d: _node(d, "a")["attrs"]["value"]["ndarray"].update(shape=[3]),
        "attribute 'value': an ndarray of float32 \\[3\\] has 8 bytes, not 12",
    ),
    "attr tag": (_set("a", "attrs", {"dtype": {"weird": 1}}), "unknown value tag 'weird'"),
    "name": (_set("a", "name", "a:0"), "has an invalid name"),
    "inputs type": (_set("b", "inputs", "a"), "'inputs' is \"a\", not a list"),
    "collection": (lambda d: d["collections"].update(out=[{"tensor": "b:3"}]),
                   "collection 'out' item 0: tensor b:3 is not an output"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_malformed_meta_graph_files_are_refused(tmp_path, case):
    edit, message = BAD_FILES[case]
    data = _valid()
    edit(data)
    path = tmp_path / "bad.meta"
    path.write_text(json.dumps(data))
    with pytest.raises(MetaGraphFormatError, match=message) as raised:
        tf.train.import_meta_graph(str(path))
    assert str(raised.value).startswith(f"meta graph {path}: ")


def test_files_that_are_not_tfc_meta_graphs(tmp_path):
    proto = tmp_path / "model.ckpt.meta"
    proto.write_bytes(b"\n\x8a\x01\n\x0c\n\x04Const")  # a MetaGraphDef protocol buffer's start
    with pytest.raises(MetaGraphFormatError, match="is not JSON; tfc reads the meta graphs"):
        tf.train.import_meta_graph(str(proto))
    (tmp_path / "broken.meta").write_text('{"format": ')
    with pytest.raises(MetaGraphFormatError, match="is not valid JSON"):
        tf.train.import_meta_graph(str(tmp_path / "broken.meta"))
    with pytest.raises(OSError, match="tfc's Saver.save writes no .meta file"):
        tf.train.import_meta_graph(str(tmp_path / "absent.meta"))


def test_nodes_are_checked_against_the_op_registry_and_a_failed_import_changes_nothing(tmp_path):
    data = _valid()
    path = tmp_path / "g.meta"
    tf.reset_default_graph()
    tf.constant(0, name="already_here")
    before = [op.name for op in tf.get_default_graph().get_operations()]

    unknown = json.loads(json.dumps(data))
    _node(unknown, "b")["op"] = "NoSuchOp"
    path.write_text(json.dumps(unknown))
    with pytest.raises(MetaGraphFormatError, match="node 'b' has op 'NoSuchOp', which tfc does"):
        tf.train.import_meta_graph(str(path))

    lying = json.loads(json.dumps(data))
    _node(lying, "b")["outputs"] = [{"dtype": "int32", "shape": [2]}]
    path.write_text(json.dumps(lying))
    with pytest.raises(MetaGraphFormatError, match="records output 0 as int32 \\[2\\]; its inputs "
                       "and attributes give float32 \\[2\\]"):  # fmt: skip
        tf.train.import_meta_graph(str(path))
    assert [op.name for op in tf.get_default_graph().get_operations()] == before
    assert tf.get_collection("out") == []

    path.write_text(json.dumps(data))
    tf.train.import_meta_graph(str(path))
    with pytest.raises(ValueError, match="the graph already has nodes named a, b"):
        tf.train.import_meta_graph(str(path))


# -- init_from_checkpoint --------------------------------------------------------------------------
def test_init_from_checkpoint(tmp_path):
    from tfc.io.checkpoint import write_safetensors

    kernel = np.arange(12, dtype=np.float32).reshape(3, 4)
    write_safetensors(tmp_path / "w.safetensors", {
        "old/dense/kernel": kernel, "old/dense/bias": np.ones(4, np.float32),
        "other": np.full((3, 4), 7, np.float32),
    })  # fmt: skip
    k = tf.get_variable("new/dense/kernel", [3, 4])
    b = tf.get_variable("new/dense/bias", [4])
    k2 = tf.get_variable("k2", [3, 4])
    untouched = tf.get_variable("untouched", [2], initializer=tf.zeros_initializer())
    tf.train.init_from_checkpoint(str(tmp_path / "w"), {"old/": "new/", "other": k2})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([k, b, k2, untouched])
    np.testing.assert_array_equal(got[0], kernel)
    np.testing.assert_array_equal(got[1], np.ones(4))
    np.testing.assert_array_equal(got[2], np.full((3, 4), 7))
    np.testing.assert_array_equal(got[3], np.zeros(2))

    with pytest.raises(ValueError, match="Tensor old/missing is not found in"):
        tf.train.init_from_checkpoint(str(tmp_path / "w"), {"old/missing": "k2"})
    with pytest.raises(ValueError, match=r"Shape of variable untouched \(\(2,\)\) doesn't match"):
        tf.train.init_from_checkpoint(str(tmp_path / "w"), {"other": "untouched"})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(str(tmp_path / "w"), {"other": "new/"})
