"""Partitioning: the whitepaper-style example (weights on two ps tasks, the model on a worker)."""

import numpy as np
import pytest

import tfc as tf
from tfc.ir.program import FeedSpec
from tfc.reference.interp import Interpreter, InterpState, evaluate_partitions, partition_program

WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
PS = [f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(2)]


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
    return x, y, loss, train


def _feeds(x, y):
    return [
        FeedSpec((x.op.name, 0), tf.float32, (8, 5)),
        FeedSpec((y.op.name, 0), tf.int32, (8,)),
    ]


def test_partitions_recombine_into_the_original_computation():
    x, y, loss, train = _model()
    graph = tf.get_default_graph()
    init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(8, 5)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32))
               for _ in range(5)]  # fmt: skip

    reference = Interpreter(graph)
    reference.run(init)
    want = [reference.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]

    attrs = {"default_device": WORKER, "cluster": {"ps": 2, "worker": 1}}
    state = InterpState()
    _, init_parts = partition_program(graph, [], [init.name], **attrs)
    evaluate_partitions(init_parts, [], state)
    program, parts = partition_program(
        graph, [(loss.op.name, 0)], [train.name], _feeds(x, y), **attrs
    )
    assert set(parts) == {WORKER, *PS}
    got = []
    for bx, by in batches:
        sends_before = state.rendezvous.sends
        got.append(evaluate_partitions(parts, [bx, by], state)[0])
        # every cut edge carried exactly one tensor this step, and every one was received
        assert state.rendezvous.sends - sends_before == len(program.graph_attrs["cut_edges"])
        assert state.rendezvous.pending() == []
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for name in ("W1", "b1", "W2", "b2", "global_step"):
        np.testing.assert_allclose(state.vars[name], reference.state.vars[name], rtol=1e-6)
    assert int(state.vars["global_step"]) == 5

    # placement: variables and their updates on the ps, the model on the worker
    ps0 = parts[PS[0]].nx.nodes
    assert {"W1", "b1", "W1/read"} <= set(ps0)
    assert any(n.startswith("Momentum/update_W1") for n in ps0)
    assert "MatMul" in parts[WORKER].nx.nodes


def test_no_tensor_crosses_the_same_cut_twice():
    x, y, loss, train = _model()
    graph = tf.get_default_graph()
    program, parts = partition_program(
        graph, [(loss.op.name, 0)], [train.name], _feeds(x, y),
        default_device=WORKER, cluster={"ps": 2, "worker": 1},
    )  # fmt: skip
    cuts = program.graph_attrs["cut_edges"]
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
    assert not any(c.tensor and program.node(c.tensor[0])["op"] == "Const" for c in cuts)
    assert any("/_copy_to_ps_0" in n for n in parts[PS[0]].nx.nodes)
    # each partition's nodes are all on its device
    for device, part in parts.items():
        assert {part.node(n)["device"] for n in part.nx.nodes} == {device}


def test_partition_needs_placement():
    from tfc.passes.partition import partition_graph

    tf.constant(1.0)
    with pytest.raises(ValueError, match="run the 'place' pass first"):
        partition_graph(tf.get_default_graph().copy())
