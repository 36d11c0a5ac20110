"""Sessions running host and GPU stages (tfc/client/staged.py). Without a GPU: every stage's source
compiles (C; CUDA with nvcc, warnings as errors), and the stages run in turn with every stage
compiled to C match the unsplit CPU program. On a GPU (`cuda` marker) and under CUDA device
emulation (TFC_CUDA=emulate): the stages run on the host and the (emulated) GPU and match a
CPU-only session, and each hand-off is copied between host and device at most once (counted by
StagedProgram.copies_to_host / copies_to_device)."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_devices import DEVICES

import tfc as tf
from tfc.backend.cc import build_shared_library
from tfc.backend.cuda import compile_cuda
from tfc.client.request import RunRequest
from tfc.client.session import CompiledProgram
from tfc.client.staged import StagedProgram
from tfc.codegen.render import render_program
from tfc.codegen.targets import CUDA
from tfc.compiler import compile_program, compile_stages, pipeline
from tfc.ir.program import make_program_graph

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
VARIABLES = ("W1", "b", "W2", "W1/Momentum", "b/Momentum", "W2/Momentum")


def _model(gpu: str, host: str = "/cpu:0"):
    """A training step whose first layer and head are on `gpu`, with a bias (variable, its use
    and its update) on `host`: on a GPU its values cross GPU -> host -> GPU -> host."""
    tf.set_random_seed(7)
    x = tf.placeholder(tf.float32, [16, 5], name="x")
    y = tf.placeholder(tf.int32, [16], name="y")
    with tf.device(gpu):
        w1 = tf.Variable(tf.random_normal([5, 6], stddev=0.5), name="W1")
        h = tf.nn.relu(tf.matmul(x, w1))
    with tf.device(host):
        b = tf.Variable(tf.random_uniform([6], -0.1, 0.1), name="b")
        s = tf.tanh(h + b)
    with tf.device(gpu):
        w2 = tf.Variable(tf.random_normal([6, 3], stddev=0.5), name="W2")
        logits = tf.matmul(s, w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.MomentumOptimizer(0.2, 0.9).minimize(loss)
    init = tf.global_variables_initializer()
    return x, y, loss, train, init


def _batches(n: int = 4):
    rng = np.random.default_rng(3)
    return [(rng.normal(size=(16, 5)).astype(np.float32), rng.integers(0, 3, 16).astype(np.int32))
            for _ in range(n)]  # fmt: skip


def _train(sess, model, batches):
    x, y, loss, train, init = model
    sess.run(init)
    losses = [sess.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]
    return losses, {v: sess.read_variable(v) for v in VARIABLES}


def _cpu_reference(batches):
    graph = tf.Graph()
    with graph.as_default():
        model = _model("/cpu:0")
    with tf.Session(graph=graph) as sess:
        return _train(sess, model, batches)


def _planned(graph, fetches, feed_dict=None):
    request = RunRequest(graph, fetches, feed_dict)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    return compile_stages(program, tf.CompileOptions().pipeline(), "train", verify=True)


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
def test_an_all_gpu_training_step_renders_the_cuda_of_the_unplaced_graph(model):
    graph, fetches, feed = _sample_train(model, 4)
    request = RunRequest(graph, fetches, feed)
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


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_every_stage_compiles_host_stages_as_c_and_gpu_stages_with_nvcc():
    x, y, loss, train, _ = _model("/gpu:0")
    bx, by = _batches(1)[0]
    planned = _planned(tf.get_default_graph(), [loss, train], {x: bx, y: by})
    assert [stage.on_gpu for stage, _ in planned] == [True, False, True, False]
    for i, (stage, program) in enumerate(planned):
        if stage.on_gpu:  # the whole program, host code and run_mixed too; -Werror
            assert program.mixed_io
            built = compile_cuda(
                program.source, name=f"stage{i}", cuda_arch="sm_80", output="object"
            )
        else:
            built = build_shared_library(program.source, name=f"stage{i}")
        assert built.stat().st_size > 0


def _install_c_stages(sess, fetches, feed_dict=None, iterators=None) -> StagedProgram:
    """Make `sess` run `fetches` as its stages, each compiled to C, the GPU stages too: the
    stage plumbing (order, hand-overs, state per stage) without a GPU. With `iterators` (the
    session's), the signature includes the elements of the iterators it reads (it takes one)."""
    request = RunRequest(sess.graph, fetches, feed_dict, iterators)
    graph = make_program_graph(sess.graph, request.fetch_keys, request.targets, request.feeds)
    soft = bool(getattr(sess.config, "allow_soft_placement", False))
    planned = compile_stages(graph, sess._passes, "staged", soft, verify=True)
    programs = [
        CompiledProgram(sess, program.lowered, render_program(program.lowered))
        for _, program in planned
    ]
    staged = StagedProgram(sess, "staged", [s for s, _ in planned], programs,
                           len(request.fetches))  # fmt: skip
    sess._programs[(request.signature(), sess.graph.version)] = staged
    return staged


def test_stages_run_in_turn_compute_what_the_unsplit_program_does():
    batches = _batches()
    want_losses, want_vars = _cpu_reference(batches)
    model = x, y, loss, train, init = _model("/gpu:0")
    with tf.Session() as sess:
        init_stages = _install_c_stages(sess, init)
        step = _install_c_stages(sess, [loss, train], {x: batches[0][0], y: batches[0][1]})
        assert [s.on_gpu for s in init_stages.stages] == [False, True]  # ties: the host first
        assert [s.on_gpu for s in step.stages] == [True, False, True, False]
        assert set(step.lowered.vars_read_first) == {"W1", "b", "W2", "W1/Momentum",
                                                     "b/Momentum", "W2/Momentum"}  # fmt: skip
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value W1"):
            sess.run([loss, train], {x: batches[0][0], y: batches[0][1]})
        losses, variables = _train(sess, model, batches)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for name in VARIABLES:
        np.testing.assert_allclose(variables[name], want_vars[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)  # fmt: skip


def _iterator_model():
    with tf.device("/gpu:0"):
        dataset = tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32)).batch(2)
        iterator = dataset.make_initializable_iterator()
        v = tf.Variable(tf.fill([2], 10.0), name="v")
        out = iterator.get_next() * 2.0 + v
    return iterator, v, out


def test_iterator_ops_under_gpu_run_in_a_host_stage_with_soft_placement():
    iterator, v, out = _iterator_model()
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        init = _install_c_stages(sess, [iterator.initializer, v.initializer])
        host, gpu = init.stages
        assert not host.on_gpu and set(host.graph.nx.nodes) == {"MakeIterator"}
        assert gpu.on_gpu and "v/Assign" in gpu.graph.nx
        sess.run([iterator.initializer, v.initializer])
        (step,) = _install_c_stages(sess, out, iterators=sess._iterators).stages
        assert step.on_gpu and step.inputs == [("feed", 0)]  # get_next is fed: all on the GPU
        for _ in range(2):  # an initializer run restarts the iterator
            sess.run([iterator.initializer, v.initializer])
            got = [sess.run(out) for _ in range(4)]
            np.testing.assert_array_equal(got, np.arange(8).reshape(4, 2) * 2 + 10)


def test_a_host_only_op_under_gpu_without_soft_placement_fails_as_in_tf():
    with tf.device("/gpu:0"):
        dataset = tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32)).batch(2)
        iterator = dataset.make_initializable_iterator()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(iterator.initializer)
    assert "Cannot assign a device for operation 'MakeIterator'" in str(info.value)
    assert "'/device:GPU:0'" in str(info.value) and info.value.op.type == "MakeIterator"


# -- on a GPU, and emulated on the CPU ----------------------------------------------------
@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_mixed_host_and_gpu_session_equals_the_cpu_session(cuda_device):
    from tfc.backend.cuda import CudaProgram

    batches = _batches()
    want_losses, want_vars = _cpu_reference(batches)
    model = x, y, loss, train, _ = _model("/gpu:0")
    with tf.Session() as sess:
        losses, variables = _train(sess, model, batches)
        step = sess._program(
            RunRequest(sess.graph, [loss, train], {x: batches[0][0], y: batches[0][1]})
        )
        assert isinstance(step, StagedProgram)
        assert [type(p) for p in step.programs] == [CudaProgram, CompiledProgram] * 2
        # the host's variables live on the host only, the GPU's on the GPU
        assert ("var", "b") not in sess._gpu.buffers and ("var", "W1") in sess._gpu.buffers
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-5)
    for name in VARIABLES:
        np.testing.assert_allclose(variables[name], want_vars[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)  # fmt: skip


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_an_all_gpu_training_step_is_one_cuda_program(cuda_device):
    from tfc.backend.cuda import CudaProgram

    batches = _batches(2)
    want_losses, _ = _cpu_reference(batches)
    model = _model("/gpu:0", host="/gpu:0")
    with tf.Session() as sess:
        losses, _ = _train(sess, model, batches)
        assert all(isinstance(p, CudaProgram) for p in sess._programs.values())
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_iterator_ops_under_gpu_run_on_the_host_with_soft_placement(cuda_device):
    iterator, v, out = _iterator_model()
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        sess.run([iterator.initializer, v.initializer])
        got = [sess.run(out) for _ in range(4)]
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32).reshape(4, 2) * 2 + 10)


def _relu_hand_off(step: StagedProgram) -> str:
    """The key under which the first GPU stage hands Relu (the hidden layer) to the second."""
    (key,) = [k for kind, k in step.stages[2].inputs if kind == "cut" and k.endswith(";Relu:0")]
    return key


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_a_gpu_value_skips_the_host_stage_between_gpu_stages(cuda_device):
    batches = _batches()
    want_losses, want_vars = _cpu_reference(batches)
    x, y, loss, train, init = _model("/gpu:0")
    with tf.Session() as sess:
        sess.run(init)
        step = sess._program(
            RunRequest(sess.graph, [loss, train], {x: batches[0][0], y: batches[0][1]})
        )
        relu = _relu_hand_off(step)  # GPU stage 0 -> GPU stage 2, past the host's stage 1
        assert set(step.resident) == {relu}
        buffer = step.resident[relu].owner  # allocated with the program, not per run
        losses = []
        for bx, by in batches:
            w1 = sess.read_variable("W1")
            losses.append(sess.run([loss, train], {x: bx, y: by})[0])
            # the host got Relu once (for its stage), the bias gradient once, the loss; Relu
            # for the GPU stage stayed in the buffer, which holds this step's hidden layer
            assert step.copies_to_host == {
                "Relu:0": 1, "gradients/add_grad/SumToShape:0": 1, ("fetch", 0): 1,
            }  # fmt: skip
            assert step.resident[relu].owner is buffer
            # x is read by both GPU stages: the second reads the first one's copy in place
            assert step.copies_to_device == {("feed", 0): 1, ("feed", 1): 1, "Tanh:0": 1}
            np.testing.assert_allclose(buffer.get(), np.maximum(bx @ w1, 0), rtol=1e-5, atol=1e-6)
        variables = {v: sess.read_variable(v) for v in VARIABLES}
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-5)
    for name in VARIABLES:
        np.testing.assert_allclose(variables[name], want_vars[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)  # fmt: skip


def _two_host_readers():
    """h on the GPU, read by two host stages (c, e) with a GPU stage (d) between them; x is
    read by the first GPU stage and by the last host stage."""
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    with tf.device("/gpu:0"):
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 6, name="W")
        h = tf.matmul(x, w, name="h")
    with tf.device("/cpu:0"):
        c = tf.exp(h, name="c")
    with tf.device("/gpu:0"):
        d = tf.multiply(c, 2.0, name="d")
    with tf.device("/cpu:0"):
        e = tf.add(h, d, name="e") + tf.reduce_sum(x)
    return x, w, h, e


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_a_gpu_value_two_host_stages_read_is_copied_once(cuda_device):
    x, w, h, e = _two_host_readers()
    feed = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    hv = feed @ (np.arange(6, dtype=np.float32).reshape(3, 2) / 6)
    want = hv + 2 * np.exp(hv) + feed.sum()
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(e, {x: feed}), want, rtol=1e-5)
        step = sess._program(RunRequest(sess.graph, e, {x: feed}))
        assert [s.on_gpu for s in step.stages] == [True, False, True, False]
        assert step.resident == {}  # every hand-off here has a host reader
        assert step.copies_to_host == {"h:0": 1, "d:0": 1}  # h once, for both host stages
        # a device feed: the GPU stage reads it in place, the host stage gets one copy
        got = sess.run(e, {x: tf.DeviceArray.from_numpy(feed)})
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert step.copies_to_host == {"h:0": 1, "d:0": 1, ("feed", 0): 1}


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_fetches_of_gpu_stages_follow_run_options(cuda_device):
    x, y, loss, _, init = _model("/gpu:0")
    graph = tf.get_default_graph()
    h, s = graph.get_tensor_by_name("Relu:0"), graph.get_tensor_by_name("Tanh:0")
    bx, by = _batches(1)[0]
    on_device = tf.RunOptions(fetches_on_device=True)
    with tf.Session() as sess:
        sess.run(init)
        want = sess.run([loss, h, s], {x: bx, y: by})
        assert [type(v) for v in want] == [np.float32, np.ndarray, np.ndarray]  # host copies
        step = sess._program(RunRequest(sess.graph, [loss, h, s], {x: bx, y: by}))
        assert [st.on_gpu for st in step.stages] == [True, False, True]
        # h, fetched to the host, is what the host stage reads: it came out once
        assert step.copies_to_host == {("fetch", 0): 1, ("fetch", 1): 1}
        got = sess.run([loss, h, s], {x: tf.DeviceArray.from_numpy(bx), y: by}, options=on_device)
        # the GPU stages' fetches stay on the device, the host stage's come as NumPy
        assert [type(v) for v in got] == [tf.DeviceArray, tf.DeviceArray, np.ndarray]
        assert step.copies_to_host == {"Relu:0": 1}  # for the host stage only
        assert step.copies_to_device == {("feed", 1): 1, "Tanh:0": 1}  # x stayed on the device
        assert got[1].shape == (16, 6) and got[1].dtype == np.float32
        np.testing.assert_allclose(got[0].get(), want[0], rtol=1e-6)
        np.testing.assert_array_equal(got[1].get(), want[1])
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_allclose(want[1], np.maximum(bx @ sess.read_variable("W1"), 0),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
