"""The graph API: names, scopes, control dependencies, devices, lookups, printing."""

import networkx as nx
import numpy as np
import pytest

import tfc as tf


def test_tensor_and_operation_basics():
    a = tf.add(3, 5)
    assert repr(a) == 'Tensor("Add:0", shape=(), dtype=int32)'
    assert str(a) == repr(a)
    assert a.name == "Add:0" and a.value_index == 0
    assert a.op.name == "Add" and a.op.type == "Add"
    assert [t.op.type for t in a.op.inputs] == ["Const", "Const"]
    assert a.op.outputs == [a]
    assert a.graph is tf.get_default_graph()
    assert a.consumers() == []
    assert repr(a.op) == "<tf.Operation 'Add' type=Add>"


def test_unique_names_follow_tf1():
    c = [tf.constant(1.0) for _ in range(3)]
    assert [t.op.name for t in c] == ["Const", "Const_1", "Const_2"]
    assert tf.constant(1.0, name="Const_1").op.name == "Const_1_1"
    x = tf.placeholder(tf.float32, name="x")
    assert x.name == "x:0"
    assert tf.placeholder(tf.float32, name="x").name == "x_1:0"


def test_name_scopes_nest_and_uniquify():
    with tf.name_scope("layer"):
        a = tf.constant(1.0)
        with tf.name_scope("inner") as scope:
            b = tf.constant(2.0)
            assert scope == "layer/inner/"
    with tf.name_scope("layer"):
        c = tf.constant(3.0)
    with tf.name_scope("layer/"):  # a trailing slash re-enters an existing scope
        d = tf.constant(4.0)
    assert [a.op.name, b.op.name, c.op.name, d.op.name] == [
        "layer/Const",
        "layer/inner/Const",
        "layer_1/Const",
        "layer/Const_1",
    ]
    with tf.name_scope("x"), tf.name_scope(None):
        assert tf.constant(0).op.name == "Const"  # back at the root scope


def test_placeholder_shapes_and_repr():
    x = tf.placeholder(tf.float32, shape=[None, 784], name="x")
    assert repr(x) == 'Tensor("x:0", shape=(?, 784), dtype=float32)'
    assert x.shape.as_list() == [None, 784]
    assert x.get_shape()[1].value == 784 and x.shape[0].value is None
    u = tf.placeholder(tf.int64)
    assert repr(u) == 'Tensor("Placeholder:0", dtype=int64)'
    assert u.shape.ndims is None
    v = tf.placeholder(tf.float32, [3])
    assert str(v.shape) == "(3,)"
    v.set_shape([3])
    with pytest.raises(ValueError):
        v.set_shape([4])


def test_lookup_by_name():
    g = tf.get_default_graph()
    a = tf.constant(1.0, name="a")
    b = tf.add(a, a, name="b")
    assert g.get_tensor_by_name("b:0") is b
    assert g.get_operation_by_name("a") is a.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="only has 1 outputs"):
        g.get_tensor_by_name("b:3")
    with pytest.raises(ValueError, match="looks like an Operation name"):
        g.get_tensor_by_name("b")
    assert g.as_graph_element("b") is b.op
    assert [op.name for op in g.get_operations()] == ["a", "b"]


def test_graph_is_a_networkx_multidigraph():
    a = tf.constant(2.0, name="a")
    b = tf.multiply(a, a, name="sq")
    g = tf.get_default_graph()
    assert isinstance(g.nx, nx.MultiDiGraph)
    edges = sorted(g.nx.in_edges("sq", keys=True, data=True))
    assert edges == [("a", "sq", 0, {"out": 0}), ("a", "sq", 1, {"out": 0})]
    node = g.nx.nodes["sq"]
    assert node["op"] == "Mul" and node["dtypes"] == [tf.float32] and node["shapes"] == [()]
    assert b.op.inputs == [a, a]


def test_control_dependencies():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.control_dependencies([a, b.op]):
        c = tf.constant(3.0, name="c")
        d = tf.add(a, c, name="d")  # a is already a data input: not added again
        with tf.control_dependencies(None):
            e = tf.constant(4.0, name="e")
    assert [op.name for op in c.op.control_inputs] == ["a", "b"]
    assert [op.name for op in d.op.control_inputs] == ["b"]
    assert e.op.control_inputs == []
    grouped = tf.group(c, d, name="all")
    assert grouped.type == "NoOp" and [op.name for op in grouped.control_inputs] == ["c", "d"]


def test_default_graph_and_reset():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1)
        assert tf.get_default_graph() is g
        with pytest.raises(AssertionError, match="nested graphs"):
            tf.reset_default_graph()
    assert a.graph is g
    assert tf.get_default_graph() is not g
    before = tf.get_default_graph()
    tf.reset_default_graph()
    assert tf.get_default_graph() is not before


def test_inputs_from_two_graphs_are_refused():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        b = tf.constant(2.0)
        with pytest.raises(ValueError, match="must be from the same graph"):
            tf.add(a, b)


def test_device_scopes_merge_like_tf1():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0)
        with tf.device("/cpu:0"):
            b = tf.constant(2.0)
        with tf.device("/job:worker"):
            c = tf.constant(3.0)
    with tf.device(lambda op: "/gpu:0" if op.type == "Add" else None):
        d = tf.add(a, b)
        e = tf.constant(0.0)
    assert a.device == "/job:ps/task:0"
    assert b.device == "/job:ps/task:0/device:CPU:0"
    assert c.device == "/job:worker/task:0"
    assert d.device == "/device:GPU:0" and e.device == ""
    with pytest.raises(ValueError, match="Unknown attribute 'bogus:1'"):
        with tf.device("/bogus:1"):
            tf.constant(0)


def test_a_device_function_reads_the_node_def_as_tf1_programs_do():
    # the multi-GPU tower pattern: variables to the parameter device, the rest to the tower's
    def assign(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        return "/cpu:0" if node_def.op in ("Variable", "VariableV2") else "/gpu:1"

    with tf.device(assign):
        w = tf.Variable(tf.zeros([2]), name="w")
        y = tf.add(w, 1.0, name="y")
        with tf.control_dependencies([w.initializer]):
            z = tf.identity(y, name="z")
    assert w.op.device == "/device:CPU:0" and y.op.device == "/device:GPU:1"
    nd = z.op.node_def
    assert (nd.name, nd.op, nd.input, nd.device) == ("z", "Identity", ["y", "^w/Assign"], y.device)
    assert w.op.node_def.attr["dtype"] == tf.float32


def test_collections():
    tf.add_to_collection("stuff", 1)
    tf.add_to_collection("stuff", 2)
    assert tf.get_collection("stuff") == [1, 2]
    assert tf.get_collection("none") == []
    tf.get_collection_ref("stuff").append(3)
    assert tf.get_collection("stuff") == [1, 2, 3]


def test_tensor_is_not_a_python_bool_or_iterable():
    x = tf.placeholder(tf.float32)
    with pytest.raises(TypeError, match="as a Python `bool`"):
        bool(x)
    with pytest.raises(TypeError, match="not iterable"):
        iter(x)
    assert x != tf.placeholder(tf.float32)  # tensors compare by identity, as in TF1
    assert hash(x) == id(x)


def test_constant_shapes_and_errors():
    assert tf.constant(7, shape=[2, 3]).shape.as_list() == [2, 3]
    assert tf.constant([1, 2, 3, 4], shape=[2, 2]).shape.as_list() == [2, 2]
    with pytest.raises(ValueError, match="Too many elements"):
        tf.constant([1, 2, 3], shape=[2, 2])
    with pytest.raises(TypeError, match="Expected float32, got 'abc' of type 'str' instead"):
        tf.constant("abc", dtype=tf.float32)
    value = tf.constant(np.arange(6.0).reshape(2, 3)).op.get_attr("value")
    assert not value.flags.writeable  # graph constants are immutable
