"""Graph files (tfc.io.graph_file): a graph written as JSON comes back node for node, and its
variables come back through Variable.to_proto/from_proto."""

import json

import numpy as np
import pytest

import tfc as tf
from tfc.io.graph_file import (
    GraphFileError,
    add_document_to_graph,
    graph_to_document,
    read_graph_file,
    write_graph_file,
)
from tfc.ir.dump import graph_text


def _model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    b = tf.get_variable("b", [2], tf.float64, initializer=tf.ones_initializer())
    y = tf.matmul(x, w) + tf.cast(b, tf.float32)
    z = tf.reduce_sum(tf.nn.relu(y), axis=[1], keepdims=True, name="z")
    return x, w, b, tf.strided_slice(z, [0, 0], [0, 1], end_mask=1, shrink_axis_mask=2, name="out")


def test_a_graph_comes_back_node_for_node(tmp_path):
    x, w, b, out = _model()
    graph = tf.get_default_graph()
    graph.seed = 5
    path = tmp_path / "graph.json"
    write_graph_file(graph, path, extra={"note": "mine"})
    document = read_graph_file(path)
    assert document["note"] == "mine" and document["seed"] == 5
    copy = tf.Graph()
    add_document_to_graph(document, copy)
    assert graph_text(copy) == graph_text(graph) and copy.seed == 5
    assert json.dumps(graph_to_document(copy)) == json.dumps(graph_to_document(graph))
    with copy.as_default():
        variables = [tf.Variable.from_proto(v.to_proto()) for v in (w, b)]
        assert [v.name for v in variables] == ["w:0", "b:0"]
        assert variables[1].dtype == tf.float64 and variables[1].initializer.name == "b/Assign"
        feed = np.array([[1.0, -2.0, 3.0], [-1.0, 0.0, 0.0]], np.float32)
        with tf.Session() as sess:
            sess.run(tf.variables_initializer(variables))
            got = sess.run(
                copy.get_tensor_by_name(out.name), {copy.get_tensor_by_name("x:0"): feed}
            )
    want = np.maximum(feed @ np.arange(6, dtype=np.float32).reshape(3, 2) + 1.0, 0).sum(1)
    np.testing.assert_allclose(got, want)


def test_a_rewired_graph_is_written_producers_first():
    a = tf.placeholder(tf.float32, [None], name="a")
    doubled = tf.multiply(a, 2.0, name="doubled")
    late = tf.placeholder(tf.float32, [None], name="late")  # created after its consumer
    graph = tf.get_default_graph()
    graph.set_input("doubled", 0, ("late", 0))
    names = [n["name"] for n in graph_to_document(graph)["nodes"]]
    assert names.index("late") < names.index("doubled")
    copy = tf.Graph()
    add_document_to_graph(graph_to_document(graph), copy)
    with tf.Session(graph=copy) as sess:
        assert list(sess.run(doubled.name, {late.name: [1.0, 2.0]})) == [2.0, 4.0]
    assert a.name in {n.name + ":0" for n in copy.get_operations()}


def test_what_cannot_be_written_or_read_is_named(tmp_path):
    tf.placeholder(tf.float32, [2], name="p")
    graph = tf.get_default_graph()
    graph.node("p")["attrs"]["fn"] = len
    with pytest.raises(GraphFileError, match="node p \\(Placeholder\\) attribute fn holds a"):
        graph_to_document(graph)
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(GraphFileError, match="is not a tfc graph file"):
        read_graph_file(tmp_path / "bad.json")
    with pytest.raises(GraphFileError, match="version 9 is not supported"):
        add_document_to_graph({"format": "tfc-graph", "version": 9, "nodes": []}, tf.Graph())
    backwards = {
        "format": "tfc-graph",
        "version": 1,
        "nodes": [
            {"name": "y", "op": "Identity", "inputs": [["x", 0]], "control_inputs": []}
            | {"attrs": {}, "dtypes": ["float32"], "shapes": [[]], "device": ""}
        ],
    }
    with pytest.raises(GraphFileError, match="node y reads x, which comes before it"):
        add_document_to_graph(backwards, tf.Graph())
