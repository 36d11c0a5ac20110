"""partition_graph: one subgraph per device, a _Send/_Recv pair on every edge between devices."""

import pytest
from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.passes.partition import partition_graph
from tfc.passes.place import place_devices

WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
PS = [f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(2)]
CLUSTER = {"ps": 2, "worker": 1}


def _partitioned(fetches, feeds=(), targets=(), **attrs):
    """The program placed (on the worker by default) and cut: the partitions and the cuts."""
    g = front(program(fetches, feeds, targets))
    g.graph_attrs.update(default_device=WORKER, cluster=CLUSTER, **attrs)
    g = run(partition_graph, run(place_devices, g))
    return g, g.graph_attrs["partitions"]


def test_cut_edges_become_send_recv_pairs_and_constants_are_copied():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/job:ps/task:0"):
        w = tf.Variable([1.0, 2.0], name="w")
        bump = tf.assign_add(w, tf.constant([1.0, 1.0], name="one"), name="bump")
    with tf.device("/job:worker/task:0"):
        with tf.control_dependencies([bump]):
            y = tf.multiply(x, w, name="y")  # after the update: a control pair
        z = tf.exp(w, name="z")  # w crosses once for both readers
        tf.add(tf.add(y, z, name="s"), tf.constant([0.5, 0.5], name="half"), name="out")
    with tf.device("/job:ps/task:0"):
        tf.multiply(tf.get_default_graph().get_tensor_by_name("half:0"), 2.0, name="on_ps")
    g, parts = _partitioned([("out", 0), ("on_ps", 0)], [feed("x", (2,))])
    assert list(parts) == [WORKER, PS[0]]  # in the order of their first node (x)
    assert_graph(
        parts[PS[0]],
        """
        w = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        w/read = Identity(w:0) -> float32[2] {_class=['loc:@w']}
        one = Const() -> float32[2] {dtype=float32, value=[1.0, 1.0]}
        bump = AssignAdd(w:0, one:0) -> float32[2]
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        on_ps = Mul(half/_copy_to_ps_0_cpu_0:0, Const:0) -> float32[2]
        w/read/_send_0_to_worker_0_cpu_0 = _Send(w/read:0) -> () {key='/job:ps/replica:0/task:0/device:CPU:0;/job:worker/replica:0/task:0/device:CPU:0;w/read:0', recv_device='/job:worker/replica:0/task:0/device:CPU:0', send_device='/job:ps/replica:0/task:0/device:CPU:0'}
        bump/_send_ctrl_to_worker_0_cpu_0 = _Send(^bump) -> () {key='/job:ps/replica:0/task:0/device:CPU:0;/job:worker/replica:0/task:0/device:CPU:0;^bump', recv_device='/job:worker/replica:0/task:0/device:CPU:0', send_device='/job:ps/replica:0/task:0/device:CPU:0'}
        half/_copy_to_ps_0_cpu_0 = Const() -> float32[2] {dtype=float32, value=[0.5, 0.5]}
        fetches: on_ps:0
        targets: w/read/_send_0_to_worker_0_cpu_0, bump/_send_ctrl_to_worker_0_cpu_0
        device: /job:ps/replica:0/task:0/device:CPU:0
        """,  # noqa: E501
    )
    assert_graph(
        parts[WORKER],
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        y = Mul(x:0, w/read/_recv_0_from_ps_0_cpu_0:0, ^bump/_recv_ctrl_from_ps_0_cpu_0) -> float32[2]
        z = Exp(w/read/_recv_0_from_ps_0_cpu_0:0) -> float32[2]
        s = Add(y:0, z:0) -> float32[2]
        half = Const() -> float32[2] {dtype=float32, value=[0.5, 0.5]}
        out = Add(s:0, half:0) -> float32[2]
        w/read/_recv_0_from_ps_0_cpu_0 = _Recv() -> float32[2] {dtype=float32, key='/job:ps/replica:0/task:0/device:CPU:0;/job:worker/replica:0/task:0/device:CPU:0;w/read:0', recv_device='/job:worker/replica:0/task:0/device:CPU:0', send_device='/job:ps/replica:0/task:0/device:CPU:0', shape=(2,)}
        bump/_recv_ctrl_from_ps_0_cpu_0 = _Recv() -> float32[0] {dtype=float32, key='/job:ps/replica:0/task:0/device:CPU:0;/job:worker/replica:0/task:0/device:CPU:0;^bump', recv_device='/job:worker/replica:0/task:0/device:CPU:0', send_device='/job:ps/replica:0/task:0/device:CPU:0', shape=(0,)}
        fetches: out:0
        device: /job:worker/replica:0/task:0/device:CPU:0
        """,  # noqa: E501
    )
    assert [(c.src_device, c.dst_device, c.tensor) for c in g.graph_attrs["cut_edges"]] == [
        (PS[0], WORKER, ("w/read", 0)), (PS[0], WORKER, None),
    ]  # fmt: skip


def _model():
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [8, 5], name="x")
    y = tf.placeholder(tf.int32, [8], name="y")
    with tf.device("/job:ps/task:0"):
        w1 = tf.Variable(tf.random_normal([5, 6], stddev=0.5), name="W1")
        b1 = tf.Variable(tf.zeros([6]), name="b1")
    with tf.device("/job:ps/task:1"):
        w2 = tf.Variable(tf.random_normal([6, 3], stddev=0.5), name="W2")
        b2 = tf.Variable(tf.zeros([3]), name="b2")
    with tf.device("/job:worker/task:0"):
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(h, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.3, 0.9).minimize(loss, global_step=step)
    return loss, train


def test_no_tensor_crosses_the_same_cut_twice():
    loss, train = _model()
    feeds = [feed("x", (8, 5)), feed("y", (8,), tf.int32)]
    program_graph, parts = _partitioned([(loss.op.name, 0)], feeds, [train.name])
    assert set(parts) == {WORKER, *PS}
    cuts = program_graph.graph_attrs["cut_edges"]
    pairs = [(c.tensor or c.send, c.dst_device) for c in cuts]
    assert len(pairs) == len(set(pairs))
    assert len({c.key for c in cuts}) == len(cuts)
    # W2/read feeds the forward MatMul and the gradient MatMul (dh) on the worker: one pair
    w2 = [c for c in cuts if c.tensor == ("W2/read", 0)]
    assert len(w2) == 1 and w2[0].src_device == PS[1] and w2[0].dst_device == WORKER
    sends = [n for p in parts.values() for n in p.nx.nodes if p.node(n)["op"] == "_Send"]
    recvs = [n for p in parts.values() for n in p.nx.nodes if p.node(n)["op"] == "_Recv"]
    assert len(sends) == len(recvs) == len(cuts)
    # every recv'd tensor's consumers all read the one _Recv node
    worker = parts[WORKER]
    assert len(worker.consumers(w2[0].recv)) >= 2
    # gradients of W1 go from the worker to ps 0, not to ps 1
    to_ps1 = {c.tensor[0] for c in cuts if c.dst_device == PS[1] and c.tensor}
    assert not any("W1" in t for t in to_ps1)
    # constants read across a cut (the optimizer's momentum, created on the worker) are
    # copied into the reading partition, not sent every step
    assert not any(c.tensor and program_graph.node(c.tensor[0])["op"] == "Const" for c in cuts)
    assert any("/_copy_to_ps_0" in n for n in parts[PS[0]].nx.nodes)
    # each partition's nodes are all on its device
    for device, part in parts.items():
        assert {part.node(n)["device"] for n in part.nx.nodes} == {device}
    # placement: variables and their updates on the ps, the model on the worker
    ps0 = parts[PS[0]].nx.nodes
    assert {"W1", "b1", "W1/read"} <= set(ps0)
    assert any(n.startswith("Momentum/update_W1") for n in ps0)
    assert "MatMul" in parts[WORKER].nx.nodes


def test_partition_needs_placement():
    tf.constant(1.0)
    with pytest.raises(ValueError, match="run the 'place' pass first"):
        partition_graph(tf.get_default_graph().copy())
