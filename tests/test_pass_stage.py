"""stage_devices: a program placed on the host CPU and a GPU, cut into stages that run in turn."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from passcheck import assert_graph, front, run

import tfc as tf
from tfc.client.request import RunRequest
from tfc.compiler import GPU_DEVICE
from tfc.ir.program import make_program_graph
from tfc.passes.cse import eliminate_common_subexpressions
from tfc.passes.fold import fold_constants
from tfc.passes.place import place_devices
from tfc.passes.prune import prune_graph
from tfc.passes.simplify import simplify_algebra
from tfc.passes.stage import stage_devices

ROOT = Path(__file__).resolve().parent.parent
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = GPU_DEVICE


def _staged(graph, fetches, feed_dict=None, soft=False):
    """The program graph of a run after the passes a GPU program runs first, placement (GPU by
    default) and the stage pass."""
    request = RunRequest(graph, fetches, feed_dict)
    program = front(make_program_graph(graph, request.fetch_keys, request.targets, request.feeds))
    for optimization in (fold_constants, simplify_algebra, eliminate_common_subexpressions):
        program = run(optimization, program)
    program = run(prune_graph, program)
    program.graph_attrs.update(default_device=GPU, allow_soft_placement=soft)
    return run(stage_devices, run(place_devices, program))


def _gpu_cpu_gpu():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    with tf.device("/gpu:0"):
        w = tf.Variable(tf.ones([3, 2]), name="W")
        h = tf.matmul(x, w, name="h")
    with tf.device("/cpu:0"):
        c = tf.exp(h, name="c")
    with tf.device("/gpu:0"):
        d = tf.add(c, h, name="d")
    return x, d


def test_values_crossing_both_ways_make_alternating_stages():
    x, d = _gpu_cpu_gpu()
    program = _staged(tf.get_default_graph(), [d], {x: np.ones((4, 3), np.float32)})
    stages = program.graph_attrs["stages"]
    h_to_cpu = f"{GPU}@s0;{CPU}@s1;h:0"
    h_to_gpu = f"{GPU}@s0;{GPU}@s2;h:0"  # read again two stages on: through the host
    c_to_gpu = f"{CPU}@s1;{GPU}@s2;c:0"
    expected = [
        (GPU, [("feed", 0)], [("cut", h_to_cpu), ("cut", h_to_gpu)]),
        (CPU, [("cut", h_to_cpu)], [("cut", c_to_gpu)]),
        (GPU, [("cut", c_to_gpu), ("cut", h_to_gpu)], [("fetch", 0)]),
    ]
    assert [(s.device, s.inputs, s.outputs) for s in stages] == expected
    assert [s.on_gpu for s in stages] == [True, False, True]
    # received values are the stages' feeds, sent values their fetches, in the same order
    assert_graph(
        stages[0].graph,
        """
        x = Feed() -> float32[4,3] {dtype=float32, index=0, shape=(4, 3)}
        W = VariableV2() -> float32[3,2] {dtype=float32, shape=(3, 2)}
        h = MatMul(x:0, W:0) -> float32[4,2] {transpose_a=False, transpose_b=False}
        fetches: h:0, h:0
        device: /job:localhost/replica:0/task:0/device:GPU:0
        """,
    )
    assert_graph(
        stages[1].graph,
        """
        c = Exp(h/_recv_0_from_localhost_0_gpu_0_s0:0) -> float32[4,2]
        h/_recv_0_from_localhost_0_gpu_0_s0 = Feed() -> float32[4,2] {dtype=float32, index=0, shape=(4, 2)}
        fetches: c:0
        device: /job:localhost/replica:0/task:0/device:CPU:0
        """,  # noqa: E501
    )
    assert_graph(
        stages[2].graph,
        """
        d = Add(c/_recv_0_from_localhost_0_cpu_0_s1:0, h/_recv_0_from_localhost_0_gpu_0_s0:0) -> float32[4,2]
        c/_recv_0_from_localhost_0_cpu_0_s1 = Feed() -> float32[4,2] {dtype=float32, index=0, shape=(4, 2)}
        h/_recv_0_from_localhost_0_gpu_0_s0 = Feed() -> float32[4,2] {dtype=float32, index=1, shape=(4, 2)}
        fetches: d:0
        device: /job:localhost/replica:0/task:0/device:GPU:0
        """,  # noqa: E501
    )
    assert [f.tensor for f in stages[2].graph.graph_attrs["feeds"]] == [
        ("c/_recv_0_from_localhost_0_cpu_0_s1", 0), ("h/_recv_0_from_localhost_0_gpu_0_s0", 0),
    ]  # fmt: skip


def test_stages_of_one_device_reading_a_tensor_share_one_hand_off():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    with tf.device("/gpu:0"):
        w = tf.Variable(tf.ones([3, 2]), name="W")
        h = tf.matmul(x, w, name="h")
    with tf.device("/cpu:0"):
        c = tf.exp(h, name="c")
    with tf.device("/gpu:0"):
        d = tf.multiply(c, 2.0, name="d")
    with tf.device("/cpu:0"):
        e = tf.add(h, d, name="e")  # h again, two host stages on
    program = _staged(tf.get_default_graph(), [e], {x: np.ones((4, 3), np.float32)})
    stages = program.graph_attrs["stages"]
    assert [s.on_gpu for s in stages] == [True, False, True, False]
    h_to_cpu = f"{GPU}@s0;{CPU}@s1;h:0"
    assert stages[0].outputs == [("cut", h_to_cpu)]  # one copy of h for both host stages
    assert_graph(
        stages[0].graph,
        """
        x = Feed() -> float32[4,3] {dtype=float32, index=0, shape=(4, 3)}
        W = VariableV2() -> float32[3,2] {dtype=float32, shape=(3, 2)}
        h = MatMul(x:0, W:0) -> float32[4,2] {transpose_a=False, transpose_b=False}
        fetches: h:0
        device: /job:localhost/replica:0/task:0/device:GPU:0
        """,
    )
    assert stages[1].inputs == [("cut", h_to_cpu)] and ("cut", h_to_cpu) in stages[3].inputs
    cuts = [c for c in program.graph_attrs["stage_cuts"] if c.tensor == ("h", 0)]
    assert len(cuts) == 2 and {c.key for c in cuts} == {h_to_cpu}


def _mixed_model():
    """A training step: the first layer on the GPU, a host-placed bias (variable and update
    on the CPU), the rest on the GPU; the gradients cross back to the host for the bias."""
    tf.set_random_seed(5)
    x = tf.placeholder(tf.float32, [8, 5], name="x")
    y = tf.placeholder(tf.int32, [8], name="y")
    with tf.device("/gpu:0"):
        w1 = tf.Variable(tf.random_normal([5, 6], stddev=0.5), name="W1")
        h = tf.nn.relu(tf.matmul(x, w1))
    with tf.device("/cpu:0"):
        b = tf.Variable(tf.zeros([6]), name="b")
        s = tf.tanh(h + b)
    with tf.device("/gpu:0"):
        w2 = tf.Variable(tf.random_normal([6, 3], stddev=0.5), name="W2")
        logits = tf.matmul(s, w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.MomentumOptimizer(0.2, 0.9).minimize(loss)
    return x, y, loss, train


def test_a_training_step_alternates_between_the_gpu_and_the_host_bias():
    x, y, loss, train = _mixed_model()
    graph = tf.get_default_graph()
    program = _staged(graph, [tf.global_variables_initializer()])
    assert len(program.graph_attrs["stages"]) == 2  # the host's bias, the GPU's weights
    feed = {x: np.zeros((8, 5), np.float32), y: np.zeros(8, np.int32)}
    program = _staged(graph, [loss, train], feed)
    stages = program.graph_attrs["stages"]
    # forward GPU, bias on the host, the rest and the gradients on the GPU, the bias update
    assert [s.on_gpu for s in stages] == [True, False, True, False]
    assert "b/read" in stages[1].graph.nx and "W2" in stages[2].graph.nx
    assert any(stages[3].graph.op_type(n) == "ApplyMomentum" for n in stages[3].graph.nx)
    # weights are read where they are used (not sent on from the first stage), and the train
    # op's NoOp joins the last stage instead of making a stage of its own
    cut = {c.tensor for c in program.graph_attrs["stage_cuts"] if c.tensor}  # data, not control
    assert cut == {("Relu", 0), ("Tanh", 0), ("gradients/add_grad/SumToShape", 0)}
    assert "Momentum" in stages[3].graph.nx


def test_a_control_edge_between_devices_is_the_stage_order():
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/cpu:0"):
        counter = tf.Variable(0.0, name="counter")
        bump = tf.assign_add(counter, 1.0, name="bump")
    with tf.device("/gpu:0"), tf.control_dependencies([bump]):
        out = tf.multiply(x, 2.0, name="out")
    program = _staged(tf.get_default_graph(), [out], {x: np.arange(3, dtype=np.float32)})
    host, gpu = program.graph_attrs["stages"]
    assert (host.device, gpu.device) == (CPU, GPU)
    assert host.outputs == [] and gpu.inputs == [("feed", 0)]  # nothing crosses for it
    assert_graph(
        host.graph,
        """
        counter = VariableV2() -> float32[] {dtype=float32, shape=()}
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        bump = AssignAdd(counter:0, Const:0) -> float32[]
        targets: bump
        device: /job:localhost/replica:0/task:0/device:CPU:0
        """,
    )
    assert_graph(
        gpu.graph,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        Const_1 = Const() -> float32[] {dtype=float32, value=2.0}
        out = Mul(x:0, Const_1:0) -> float32[3]
        fetches: out:0
        device: /job:localhost/replica:0/task:0/device:GPU:0
        """,
    )


def test_feeds_and_constants_never_delay_a_stage():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [3], name="x")
        k = tf.constant([1.0, 2.0, 3.0], name="k")
    with tf.device("/gpu:0"):
        y = tf.multiply(x, k, name="y")
    with tf.device("/cpu:0"):
        z = tf.add(x, k, name="z")
    program = _staged(tf.get_default_graph(), [y, z], {x: np.ones(3, np.float32)})
    stages = program.graph_attrs["stages"]
    # both read the feed and the constant: two independent stages, nothing crosses
    assert [(s.device, s.inputs, s.outputs) for s in stages] == [
        (CPU, [("feed", 0)], [("fetch", 1)]), (GPU, [("feed", 0)], [("fetch", 0)]),
    ]  # fmt: skip
    assert program.graph_attrs["stage_cuts"] == []
    assert_graph(
        stages[0].graph,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        k = Const() -> float32[3] {dtype=float32, value=[1.0, 2.0, 3.0]}
        z = Add(x:0, k:0) -> float32[3]
        fetches: z:0
        device: /job:localhost/replica:0/task:0/device:CPU:0
        """,
    )
    assert_graph(
        stages[1].graph,
        """
        y = Mul(x:0, k/_copy_to_localhost_0_gpu_0_s1:0) -> float32[3]
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        k/_copy_to_localhost_0_gpu_0_s1 = Const() -> float32[3] {dtype=float32, value=[1.0, 2.0, 3.0]}
        fetches: y:0
        device: /job:localhost/replica:0/task:0/device:GPU:0
        """,  # noqa: E501
    )


def _sample_train(model, batch):
    sys.path.insert(0, str(ROOT / "samples"))
    try:
        module = importlib.import_module(model)
    finally:
        sys.path.pop(0)
    graph = tf.Graph()
    with graph.as_default():
        sig = module.signatures()["train"]
    inputs = sig["inputs"]
    feed = {
        inputs["features"]: np.zeros((batch, *inputs["features"].shape[1:]), np.float32),
        inputs["labels"]: np.zeros(batch, inputs["labels"].dtype.np),
    }
    return graph, [sig["loss"], sig["train_op"]], feed


@pytest.mark.parametrize("model", ["digits_model", "lenet_model"])
def test_an_all_gpu_training_step_is_one_stage(model):
    graph, fetches, feed = _sample_train(model, 4)
    program = _staged(graph, fetches, feed)
    (stage,) = program.graph_attrs["stages"]
    assert stage.on_gpu and program.graph_attrs["stage_cuts"] == []


def test_host_only_ops_of_a_gpu_program_run_on_the_host():
    with tf.device("/gpu:0"):
        dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
        iterator = dataset.make_initializable_iterator()
        v = tf.Variable(tf.ones([2]), name="v")
    with pytest.raises(ValueError, match="operation 'MakeIterator'.*'/device:GPU:0'"):
        _staged(tf.get_default_graph(), [iterator.initializer, v.initializer])
    program = _staged(tf.get_default_graph(), [iterator.initializer, v.initializer], soft=True)
    host, gpu = program.graph_attrs["stages"]
    assert_graph(
        host.graph,
        """
        MakeIterator = MakeIterator() -> () {dataset=<Batch>, iterator=<tf.data.Iterator 'Iterator' elements: float32[?]>}
        targets: MakeIterator
        device: /job:localhost/replica:0/task:0/device:CPU:0
        """,  # noqa: E501
    )
    assert_graph(
        gpu.graph,
        """
        ones = Const() -> float32[2] {dtype=float32, value=[1.0, 1.0]}
        v = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        v/Assign = Assign(v:0, ones:0) -> float32[2] {_class=['loc:@v'], validate_shape=True}
        targets: v/Assign
        device: /job:localhost/replica:0/task:0/device:GPU:0
        """,
    )
