"""Placement: tf.device scopes, colocation groups, replica_device_setter, conflicts."""

import pytest

import tfc as tf
from tfc.passes.place import PlacementError, place_devices
from tfc.verify import verify_graph


def _placed(graph=None, **attrs):
    graph = (graph or tf.get_default_graph()).copy()
    graph.graph_attrs.update(attrs)
    graph = place_devices(graph)
    verify_graph(graph, after="place")
    return {n: graph.node(n)["device"] for n in graph.node_names()}


def test_full_and_partial_specs_get_full_names():
    with tf.device("/job:ps/task:1"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:worker/task:1/cpu:0"):
        b = tf.constant(2.0, name="b")
    with tf.device("/gpu:1"):
        c = tf.add(a, b, name="c")
    with tf.device("/job:ps"):
        d = tf.constant(3.0, name="d")
    e = tf.constant(4.0, name="e")
    del c, d, e
    dev = _placed(default_device="/job:worker/task:2")
    assert dev["a"] == "/job:ps/replica:0/task:1/device:CPU:0"
    assert dev["b"] == "/job:worker/replica:0/task:1/device:CPU:0"
    assert dev["c"] == "/job:worker/replica:0/task:2/device:GPU:1"  # the client's task
    assert dev["d"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert dev["e"] == "/job:worker/replica:0/task:2/device:CPU:0"
    assert _placed()["e"] == "/job:localhost/replica:0/task:0/device:CPU:0"


def test_nested_scopes_and_device_functions_merge_as_tf1():
    with tf.device("/job:worker"):
        with tf.device("/task:3"):
            a = tf.constant(1.0, name="a")
        with tf.device(lambda op: "/gpu:0" if op.type == "Add" else "/cpu:0"):
            b = tf.add(a, a, name="b")
            c = tf.constant(1.0, name="c")
            with tf.device(None):
                d = tf.constant(1.0, name="d")
    assert a.device == "/job:worker/task:3"
    # a function replaces the device found so far; the enclosing string fills its open fields
    assert b.device == "/job:worker/device:GPU:0"
    assert c.device == "/job:worker/device:CPU:0"
    assert d.device == ""


def test_variable_is_colocated_with_its_reads_assigns_and_updates():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.device("/job:ps/task:1"):
        w = tf.Variable(tf.ones([3, 2]), name="W")
    with tf.device("/job:worker/task:0"):
        loss = tf.reduce_sum(tf.matmul(x, w))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    dev = _placed(default_device="/job:worker/task:0")
    ps = "/job:ps/replica:0/task:1/device:CPU:0"
    assert dev["W"] == dev["W/Assign"] == dev["W/read"] == ps
    update = [n for n in dev if n.startswith("GradientDescent/update_W")]
    assert update and all(dev[n] == ps for n in update)
    assert dev["MatMul"] == "/job:worker/replica:0/task:0/device:CPU:0"
    assert train.device.startswith("/job:worker")


def test_colocate_with_overrides_device_scope():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:worker/task:1"):
        with tf.colocate_with(a):
            tf.identity(a, name="b")
        tf.identity(a, name="c")
    dev = _placed()
    assert dev["b"] == dev["a"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert dev["c"] == "/job:worker/replica:0/task:1/device:CPU:0"


def test_conflicting_constraints_name_both_ops():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([2]), name="W")
    g = tf.get_default_graph()
    g.node("W/Assign")["device"] = "/job:worker/task:0"
    with pytest.raises(
        PlacementError,
        match=r"Cannot colocate 'W' on /job:ps/task:0 with 'W/Assign' on /job:worker/task:0",
    ):
        _placed()
    del w


def test_devices_are_checked_against_the_cluster():
    with tf.device("/job:ps/task:2"):
        tf.constant(1.0, name="a")
    with pytest.raises(PlacementError, match=r"Op 'a' is placed on .*task:2.*has 2 task"):
        _placed(cluster={"ps": 2, "worker": 1}, default_device="/job:worker/task:0")
    with tf.device("/job:trainer"):
        tf.constant(1.0, name="b")
    with pytest.raises(PlacementError, match="no job 'trainer'"):
        _placed(cluster={"ps": 3, "worker": 1}, default_device="/job:worker/task:0")


def test_replica_device_setter_round_robins_variables():
    setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")
    with tf.device(setter):
        ws = [tf.Variable(tf.zeros([2]), name=f"v{i}") for i in range(5)]
        y = tf.add_n([w.read_value() if hasattr(w, "read_value") else w + 0 for w in ws])
        with tf.device("/job:ps/task:1"):
            pinned = tf.Variable(tf.zeros([2]), name="pinned")
    assert [w.device for w in ws] == [f"/job:ps/task:{i % 2}" for i in range(5)]
    assert pinned.device == "/job:ps/task:1"
    assert y.device == "/job:worker/task:1"
    dev = _placed(cluster={"ps": 2, "worker": 2}, default_device="/job:worker/task:0")
    assert dev["v3/Assign"] == "/job:ps/replica:0/task:1/device:CPU:0"
    assert tf.train.replica_device_setter(ps_tasks=0) is None
    assert tf.train.replica_device_setter(cluster={"ps": ["a:1", "b:2", "c:3"]}) is not None
