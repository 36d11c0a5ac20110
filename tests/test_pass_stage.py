"""Stages: a program placed on the host CPU and a GPU, cut into stages that run in turn."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.client.request import RunRequest
from tfc.codegen.targets import CUDA
from tfc.compiler import (
    GPU_DEVICE,
    STAGE_CUT,
    compile_program,
    compile_stages,
    pipeline,
    run_passes,
)
from tfc.ir.program import make_program_graph
from tfc.passes.cse import eliminate_common_subexpressions
from tfc.passes.fold import fold_constants
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import schedule_graph
from tfc.passes.simplify import simplify_algebra
from tfc.passes.specialize import specialize_shapes
from tfc.reference.interp import Interpreter, InterpState, evaluate_stages

ROOT = Path(__file__).resolve().parent.parent
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = GPU_DEVICE
# what GPU programs run first
PRE = [
    prune_graph,
    specialize_shapes,
    fold_constants,
    simplify_algebra,
    eliminate_common_subexpressions,
    prune_graph,
]


def _staged(graph, fetches, feed_dict=None, soft=False):
    """The request and the program graph after placement and the stage pass."""
    request = RunRequest(graph, fetches, feed_dict)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    program = run_passes(program, PRE, verify=True)
    program.graph_attrs.update(default_device=GPU, allow_soft_placement=soft)
    return request, run_passes(program, STAGE_CUT, verify=True)


def _run_stages(program, request, state):
    stages = program.graph_attrs["stages"]
    for stage in stages:
        run_passes(stage.graph, [schedule_graph])
    return evaluate_stages(stages, request.feed_values, len(request.fetches), state)


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
    _, program = _staged(tf.get_default_graph(), [d], {x: np.ones((4, 3), np.float32)})
    stages = program.graph_attrs["stages"]
    h_to_cpu = f"{GPU}@s0;{CPU}@s1;h:0"
    h_to_gpu = f"{GPU}@s0;{GPU}@s2;h:0"  # read again two stages on: through the host
    c_to_gpu = f"{CPU}@s1;{GPU}@s2;c:0"
    expected = [
        (GPU, {"x", "W", "h"}, [("feed", 0)], [("cut", h_to_cpu), ("cut", h_to_gpu)]),
        (CPU, {"h/_recv_0_from_localhost_0_gpu_0_s0", "c"}, [("cut", h_to_cpu)],
         [("cut", c_to_gpu)]),
        (GPU, {"h/_recv_0_from_localhost_0_gpu_0_s0", "c/_recv_0_from_localhost_0_cpu_0_s1",
               "d"}, [("cut", c_to_gpu), ("cut", h_to_gpu)], [("fetch", 0)]),
    ]  # fmt: skip
    got = [(s.device, set(s.graph.nx.nodes), s.inputs, s.outputs) for s in stages]
    assert got == expected
    # received values are the stages' feeds, sent values their fetches, in the same order
    last = stages[2].graph
    assert [f.tensor for f in last.graph_attrs["feeds"]] == [
        ("c/_recv_0_from_localhost_0_cpu_0_s1", 0), ("h/_recv_0_from_localhost_0_gpu_0_s0", 0),
    ]  # fmt: skip
    assert stages[0].graph.graph_attrs["fetches"] == [("h", 0), ("h", 0)]
    assert all(s.graph.node(n)["device"] == s.device for s in stages for n in s.graph.nx.nodes)
    assert [s.on_gpu for s in stages] == [True, False, True]


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
    request, program = _staged(tf.get_default_graph(), [e], {x: np.ones((4, 3), np.float32)})
    stages = program.graph_attrs["stages"]
    assert [s.on_gpu for s in stages] == [True, False, True, False]
    h_to_cpu = f"{GPU}@s0;{CPU}@s1;h:0"
    assert stages[0].outputs == [("cut", h_to_cpu)]  # one copy of h for both host stages
    assert stages[0].graph.graph_attrs["fetches"] == [("h", 0)]
    assert stages[1].inputs == [("cut", h_to_cpu)] and ("cut", h_to_cpu) in stages[3].inputs
    cuts = [c for c in program.graph_attrs["stage_cuts"] if c.tensor == ("h", 0)]
    assert len(cuts) == 2 and {c.key for c in cuts} == {h_to_cpu}
    state = InterpState()
    state.vars["W"] = np.ones((3, 2), np.float32)
    (got,) = _run_stages(program, request, state)
    np.testing.assert_allclose(got, np.full((4, 2), 3 + 2 * np.exp(3)), rtol=1e-6)


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


def test_stages_run_in_order_compute_the_unsplit_program():
    x, y, loss, train = _mixed_model()
    graph = tf.get_default_graph()
    init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(8, 5)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32))
               for _ in range(4)]  # fmt: skip
    reference = Interpreter(graph)
    reference.run(init)
    state = InterpState()
    request, program = _staged(graph, [init])
    assert len(program.graph_attrs["stages"]) == 2  # the host's bias, the GPU's weights
    _run_stages(program, request, state)
    for name in ("W1", "W2", "b"):
        np.testing.assert_array_equal(state.vars[name], reference.state.vars[name])

    request, program = _staged(graph, [loss, train], {x: batches[0][0], y: batches[0][1]})
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
    for bx, by in batches:
        want = reference.run([loss, train], {x: bx, y: by})[0]
        request.feed_values[:] = [bx, by]
        np.testing.assert_allclose(_run_stages(program, request, state)[0], want, rtol=1e-6)
    for name in ("W1", "W2", "b"):
        np.testing.assert_allclose(state.vars[name], reference.state.vars[name], rtol=1e-6)


def test_a_control_edge_between_devices_is_the_stage_order():
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/cpu:0"):
        counter = tf.Variable(0.0, name="counter")
        bump = tf.assign_add(counter, 1.0, name="bump")
    with tf.device("/gpu:0"), tf.control_dependencies([bump]):
        out = tf.multiply(x, 2.0, name="out")
    graph = tf.get_default_graph()
    state = InterpState()
    state.vars["counter"] = np.zeros((), np.float32)
    request, program = _staged(graph, [out], {x: np.arange(3, dtype=np.float32)})
    host, gpu = program.graph_attrs["stages"]
    assert (host.device, gpu.device) == (CPU, GPU)
    assert host.graph.graph_attrs["targets"] == ["bump"] and host.outputs == []
    assert gpu.inputs == [("feed", 0)]  # nothing crosses for the control edge
    for step in range(1, 3):
        np.testing.assert_array_equal(_run_stages(program, request, state)[0], [0, 2, 4])
        assert state.vars["counter"] == step


def test_feeds_and_constants_never_delay_a_stage():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [3], name="x")
        k = tf.constant([1.0, 2.0, 3.0], name="k")
    with tf.device("/gpu:0"):
        y = tf.multiply(x, k, name="y")
    with tf.device("/cpu:0"):
        z = tf.add(x, k, name="z")
    request, program = _staged(tf.get_default_graph(), [y, z], {x: np.ones(3, np.float32)})
    stages = program.graph_attrs["stages"]
    # both read the feed and the constant: two independent stages, nothing crosses
    assert [(s.device, s.inputs, s.outputs) for s in stages] == [
        (CPU, [("feed", 0)], [("fetch", 1)]), (GPU, [("feed", 0)], [("fetch", 0)]),
    ]  # fmt: skip
    assert program.graph_attrs["stage_cuts"] == []
    y_val, z_val = _run_stages(program, request, InterpState())
    np.testing.assert_array_equal(y_val, [1, 2, 3])
    np.testing.assert_array_equal(z_val, [2, 3, 4])


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
def test_an_all_gpu_training_step_is_one_program(model):
    graph, fetches, feed = _sample_train(model, 4)
    request, program = _staged(graph, fetches, feed)
    (stage,) = program.graph_attrs["stages"]
    assert stage.on_gpu and program.graph_attrs["stage_cuts"] == []
    planned = compile_stages(
        make_program_graph(graph, request.fetch_keys, request.targets, request.feeds),
        pipeline(), "train",
    )  # fmt: skip
    assert len(planned) == 1 and planned[0][0].on_gpu
    ops = {planned[0][0].graph.op_type(n) for n in planned[0][0].graph.graph_attrs["schedule"]}
    assert "Fusion" in ops  # fused for CUDA, the whole step
    # the same CUDA as compiling the whole graph unplaced with CUDA's pass options
    whole = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    assert planned[0][1].source == compile_program(whole, pipeline(), CUDA, name="train").source


def test_host_only_ops_of_a_gpu_program_run_on_the_host():
    with tf.device("/gpu:0"):
        dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
        iterator = dataset.make_initializable_iterator()
        v = tf.Variable(tf.ones([2]), name="v")
    with pytest.raises(ValueError, match="operation 'MakeIterator'.*'/device:GPU:0'"):
        _staged(tf.get_default_graph(), [iterator.initializer, v.initializer])
    _, program = _staged(tf.get_default_graph(), [iterator.initializer, v.initializer], soft=True)
    host, gpu = program.graph_attrs["stages"]
    assert (host.device, set(host.graph.nx.nodes)) == (CPU, {"MakeIterator"})
    assert gpu.device == GPU and "v/Assign" in gpu.graph.nx
