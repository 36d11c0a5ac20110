"""place_devices: tf.device scopes, colocation groups, replica_device_setter, conflicts."""

import numpy as np
import pytest
from passcheck import assert_graph, run

import tfc as tf
from tfc.passes.place import PlacementError, place_devices


def _placed(**attrs):
    graph = tf.get_default_graph().copy()
    graph.graph_attrs.update(attrs)
    return run(place_devices, graph)


def _devices(graph):
    return {n: graph.node(n)["device"] for n in graph.node_names()}


def test_full_and_partial_specs_get_full_names():
    with tf.device("/job:ps/task:1"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:worker/task:1/cpu:0"):
        b = tf.constant(2.0, name="b")
    with tf.device("/gpu:1"):
        tf.add(a, b, name="c")  # on the client's task
    with tf.device("/job:ps"):
        tf.constant(3.0, name="d")
    tf.constant(4.0, name="e")
    assert_graph(
        _placed(default_device="/job:worker/task:2"),
        """
        a = Const() -> float32[] {dtype=float32, value=1.0}  [/job:ps/replica:0/task:1/device:CPU:0]
        b = Const() -> float32[] {dtype=float32, value=2.0}  [/job:worker/replica:0/task:1/device:CPU:0]
        c = Add(a:0, b:0) -> float32[]  [/job:worker/replica:0/task:2/device:GPU:1]
        d = Const() -> float32[] {dtype=float32, value=3.0}  [/job:ps/replica:0/task:0/device:CPU:0]
        e = Const() -> float32[] {dtype=float32, value=4.0}  [/job:worker/replica:0/task:2/device:CPU:0]
        """,  # noqa: E501
    )
    assert _devices(_placed())["e"] == "/job:localhost/replica:0/task:0/device:CPU:0"


def test_nested_scopes_and_device_functions_merge_as_tf1():
    with tf.device("/job:worker"):
        with tf.device("/task:3"):
            a = tf.constant(1.0, name="a")
        with tf.device(lambda op: "/gpu:0" if op.type == "Add" else "/cpu:0"):
            tf.add(a, a, name="b")
            tf.constant(1.0, name="c")
            with tf.device(None):
                tf.constant(1.0, name="d")
    # a function replaces the device found so far; the enclosing string fills its open fields
    assert_graph(
        tf.get_default_graph(),
        """
        a = Const() -> float32[] {dtype=float32, value=1.0}  [/job:worker/task:3]
        b = Add(a:0, a:0) -> float32[]  [/job:worker/device:GPU:0]
        c = Const() -> float32[] {dtype=float32, value=1.0}  [/job:worker/device:CPU:0]
        d = Const() -> float32[] {dtype=float32, value=1.0}
        """,
    )


def test_variable_is_colocated_with_its_reads_assigns_and_updates():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.device("/job:ps/task:1"):
        w = tf.Variable(tf.ones([3, 2]), name="W")
    with tf.device("/job:worker/task:0"):
        loss = tf.reduce_sum(tf.matmul(x, w))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    dev = _devices(_placed(default_device="/job:worker/task:0"))
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
    assert_graph(
        _placed(),
        """
        a = Const() -> float32[] {dtype=float32, value=1.0}  [/job:ps/replica:0/task:0/device:CPU:0]
        b = Identity(a:0) -> float32[] {_class=['loc:@a']}  [/job:ps/replica:0/task:0/device:CPU:0]
        c = Identity(a:0) -> float32[]  [/job:worker/replica:0/task:1/device:CPU:0]
        """,
    )


def test_conflicting_constraints_name_both_ops():
    with tf.device("/job:ps/task:0"):
        tf.Variable(tf.zeros([2]), name="W")
    g = tf.get_default_graph()
    g.node("W/Assign")["device"] = "/job:worker/task:0"
    with pytest.raises(
        PlacementError,
        match=r"Cannot colocate 'W' on /job:ps/task:0 with 'W/Assign' on /job:worker/task:0",
    ):
        _placed()


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
    dev = _devices(_placed(cluster={"ps": 2, "worker": 2}, default_device="/job:worker/task:0"))
    assert dev["v3/Assign"] == "/job:ps/replica:0/task:1/device:CPU:0"
    assert tf.train.replica_device_setter(ps_tasks=0) is None
    assert tf.train.replica_device_setter(cluster={"ps": ["a:1", "b:2", "c:3"]}) is not None


GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def _iterator_under_gpu():
    with tf.device("/gpu:0"):
        dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
        iterator = dataset.make_initializable_iterator()
        doubled = tf.multiply(iterator.get_next(), 2.0, name="doubled")
    return iterator, doubled


def test_host_only_ops_under_gpu_need_soft_placement():
    _iterator_under_gpu()
    # TF1 without allow_soft_placement: the error names the op and the device it asked for
    with pytest.raises(
        PlacementError,
        match=r"operation 'MakeIterator': Could not satisfy explicit device specification "
        r"'/device:GPU:0' because no supported kernel for GPU devices",
    ):
        _placed()
    assert_graph(
        _placed(allow_soft_placement=True),
        """
        MakeIterator = MakeIterator() -> () {dataset=<Batch>, iterator=<tf.data.Iterator 'Iterator' elements: float32[?]>}  [/job:localhost/replica:0/task:0/device:CPU:0]
        IteratorGetNext = IteratorGetNext() -> float32[?] {iterator=<tf.data.Iterator 'Iterator' elements: float32[?]>, output_shapes=[(None,)], output_types=[float32]}  [/job:localhost/replica:0/task:0/device:CPU:0]
        Const = Const() -> float32[] {dtype=float32, value=2.0}  [/job:localhost/replica:0/task:0/device:GPU:0]
        doubled = Mul(IteratorGetNext:0, Const:0) -> float32[?]  [/job:localhost/replica:0/task:0/device:GPU:0]
        """,  # noqa: E501
    )


def test_gpu_default_device_places_unplaced_ops_on_the_gpu_and_host_only_ops_on_the_host():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
    iterator = dataset.make_one_shot_iterator()
    x = iterator.get_next()
    y = tf.multiply(x, 3.0, name="y")
    with tf.device("/cpu:0"):
        z = tf.exp(y, name="z")
    with tf.device("/job:localhost"):  # a job and no device type: its CPU, as without a default
        tf.identity(z, name="w")
    with tf.device("/gpu:0"), tf.colocate_with(x):  # colocation wins over the scope: the host
        tf.identity(x, name="near_x")
    # no soft placement: only defaults move
    assert_graph(
        _placed(default_device=GPU),
        """
        IteratorGetNext = IteratorGetNext() -> float32[?] {iterator=<tf.data.Iterator 'OneShotIterator' elements: float32[?]>, output_shapes=[(None,)], output_types=[float32]}  [/job:localhost/replica:0/task:0/device:CPU:0]
        Const = Const() -> float32[] {dtype=float32, value=3.0}  [/job:localhost/replica:0/task:0/device:GPU:0]
        y = Mul(IteratorGetNext:0, Const:0) -> float32[?]  [/job:localhost/replica:0/task:0/device:GPU:0]
        z = Exp(y:0) -> float32[?]  [/job:localhost/replica:0/task:0/device:CPU:0]
        w = Identity(z:0) -> float32[?]  [/job:localhost/replica:0/task:0/device:CPU:0]
        near_x = Identity(IteratorGetNext:0) -> float32[?] {_class=['loc:@IteratorGetNext']}  [/job:localhost/replica:0/task:0/device:CPU:0]
        """,  # noqa: E501
    )


def test_explicit_gpu_in_a_host_only_group_is_an_error_naming_the_op():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
    x = dataset.make_one_shot_iterator().get_next()
    with tf.colocate_with(x):
        tf.identity(x, name="near_x")
    # a member of the iterator's group asks for a GPU itself (as a device function could)
    tf.get_default_graph().node("near_x")["device"] = "/job:localhost/task:0/gpu:0"
    with pytest.raises(PlacementError, match=r"'IteratorGetNext'.*'/job:localhost/task:0"):
        _placed(default_device=GPU)
    dev = _devices(_placed(default_device=GPU, allow_soft_placement=True))
    assert dev["near_x"] == dev["IteratorGetNext"] == CPU
