"""Fused kernels on the CUDA target (tfc/codegen/fusion.py, templates/cuda/kernels/fused*.cu.j2).

Without a GPU: GPU programs are compiled with the fuse pass; every Fusion node becomes a
parallel kernel (never the one-thread fallback) and the programs compile with nvcc, warnings
as errors. On a GPU (`cuda` marker) and under CUDA device emulation (TFC_CUDA=emulate: the
program a GPU session compiles, built by the host C++ compiler, every kernel launch run on the
CPU): each graph's fused program runs steps whose fetches and variables (the fused updates'
included) equal the NumPy references' from the same variables.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from cuda_devices import DEVICES
from test_cuda import training_graphs

import tfc
from tfc.backend.cuda import compile_cuda
from tfc.client.request import RunRequest
from tfc.codegen.lower import lower_program
from tfc.codegen.render import render_kernel, render_program
from tfc.codegen.targets import CUDA
from tfc.compiler import pipeline, run_passes
from tfc.ir.program import make_program_graph
from tfc.ops.fusion import is_fusion
from tfc.reference.interp import Interpreter

NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
SERIAL = "one GPU thread runs the C kernel"  # the comment of templates/cuda/serial.cu.j2


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# the names of test_cuda.training_graphs among fused_graphs()
FROM_TEST_CUDA: set[str] = set()


def fused_graphs() -> dict[str, tuple]:
    """(graph, fetches, feed_dict, init fetches) exercising each kind of fused group."""
    graphs = {}
    graph = tfc.Graph()
    with graph.as_default():  # element-wise chains: broadcasting, views, casts, selects
        x = tfc.placeholder(tfc.float32, [6, 1, 5])
        b = tfc.placeholder(tfc.float32, [5])
        n = tfc.placeholder(tfc.int32, [6, 5])
        y = tfc.nn.relu(tfc.reshape(x, [6, 5]) * 2.0 + b)
        z = tfc.where(y > 0.5, tfc.tanh(y), tfc.cast(n, tfc.float32) - y)
        w = tfc.expand_dims(tfc.sigmoid(z), 0) + tfc.square(b)
        k = (n * 3 + 1) % 7 - n
        d = tfc.placeholder(tfc.float64, [3, 4])
        e = tfc.exp(d) * 0.5 - tfc.reshape(tfc.cast(tfc.reshape(x, [6, 5])[:3, :4], tfc.float64),
                                           [3, 4])  # fmt: skip
    feed = {x: _rng(0).standard_normal((6, 1, 5), np.float32),
            b: _rng(1).standard_normal(5, np.float32),
            n: _rng(2).integers(-9, 9, (6, 5)).astype(np.int32),
            d: _rng(3).standard_normal((3, 4))}  # fmt: skip
    graphs["elementwise"] = (graph, [y, z, w, k, e], feed, [])
    graph = tfc.Graph()
    with graph.as_default():  # chains ending in reductions (short: a thread per output; long:
        # blocks), element-wise ops on reduced values, several reductions over the same dims
        x = tfc.placeholder(tfc.float32, [8, 300])
        b = tfc.placeholder(tfc.float32, [300])
        h = tfc.square(x - b)
        rows = tfc.sqrt(tfc.reduce_mean(h, axis=1, keepdims=True)) + 1.0
        cols = tfc.reduce_sum(h, axis=0)
        peak = tfc.reduce_max(tfc.abs(x) * 3.0, axis=0)
        total = tfc.reduce_sum(tfc.exp(x * 0.01))
        i = tfc.placeholder(tfc.int64, [40, 3])
        isum = tfc.reduce_sum(i * i, axis=0) - 2
        v = tfc.placeholder(tfc.float64, [5, 70])
        vm = tfc.reduce_mean(tfc.sin(v), axis=1) * 2.0
        vx = tfc.reduce_max(tfc.sin(v), axis=1)
        c = tfc.placeholder(tfc.float32, [4, 70, 3])  # reduced dims between and around kept ones
        mid = tfc.reduce_sum(tfc.square(c) + 1.0, axis=1) * 0.5
        outer = tfc.reduce_min(tfc.abs(c) - 2.0, axis=[0, 2], keepdims=True)
        g = tfc.placeholder(tfc.float32, [4, 70, 3])  # bool accumulators
        some = tfc.reduce_any(tfc.abs(g) > 2.5, axis=1)
        every = tfc.reduce_all(tfc.abs(g) < 2.5, axis=1)
    feed = {x: _rng(4).standard_normal((8, 300), np.float32),
            b: _rng(5).standard_normal(300, np.float32),
            i: _rng(6).integers(-50, 50, (40, 3)),
            v: _rng(7).standard_normal((5, 70)),
            c: _rng(11).standard_normal((4, 70, 3), np.float32),
            g: _rng(14).standard_normal((4, 70, 3), np.float32)}  # fmt: skip
    fetches = [rows, cols, peak, total, isum, vm, vx, mid, outer, some, every]
    graphs["reductions"] = (graph, fetches, feed, [])
    graph = tfc.Graph()
    with graph.as_default():  # dense layers: GEMM, then bias + relu fused; their gradients
        # (relu-grad + bias-grad: the gradient pass's SumToShape)
        x = tfc.placeholder(tfc.float32, [16, 12])
        w = tfc.Variable(tfc.random_normal([12, 7], seed=3))
        bias = tfc.Variable(tfc.random_normal([7], seed=4))
        h = tfc.nn.relu(tfc.matmul(x, w) + bias)
        loss = tfc.reduce_mean(tfc.square(h - 0.5))
        grads = tfc.gradients(loss, [w, bias, x])
        init = tfc.global_variables_initializer()
        a = tfc.placeholder(tfc.float64, [5, 6])  # transposed operands, float64
        c = tfc.placeholder(tfc.float64, [4, 5])
        t = tfc.tanh(tfc.matmul(a, c, transpose_a=True, transpose_b=True) - 1.0)
    feed = {x: _rng(8).standard_normal((16, 12), np.float32),
            a: _rng(12).standard_normal((5, 6)), c: _rng(13).standard_normal((4, 5))}  # fmt: skip
    graphs["dense"] = (graph, [h, loss, *grads, t], feed, [init])
    graph = tfc.Graph()
    with graph.as_default():  # fused updates: a gradient computed element-wise (a weight
        # multiplying the input) and a reduced one (a bias) for each optimizer
        x = tfc.placeholder(tfc.float32, [9, 4])
        ops = []
        for k, opt in enumerate((
            tfc.train.GradientDescentOptimizer(0.1),
            tfc.train.MomentumOptimizer(0.1, 0.9),
            tfc.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
            tfc.train.AdamOptimizer(0.05),
            tfc.train.AdagradOptimizer(0.1),
            tfc.train.RMSPropOptimizer(0.1),
        )):  # fmt: skip
            w = tfc.Variable(tfc.random_normal([9, 4], seed=10 + k))
            c = tfc.Variable(tfc.random_normal([4], seed=20 + k))
            ops.append(opt.minimize(tfc.reduce_sum(tfc.square(x * w + c))))
        init = tfc.global_variables_initializer()
    feed = {x: _rng(9).standard_normal((9, 4), np.float32)}
    graphs["updates"] = (graph, ops, feed, [init])
    graph = tfc.Graph()
    with graph.as_default():  # fused updates of gradients computed element-wise, alone
        x = tfc.placeholder(tfc.float32, [3, 5])
        ops = []
        for k, opt in enumerate((
            tfc.train.GradientDescentOptimizer(0.1),
            tfc.train.MomentumOptimizer(0.1, 0.9),
            tfc.train.AdamOptimizer(0.05),
            tfc.train.RMSPropOptimizer(0.1, centered=True),
        )):  # fmt: skip
            w = tfc.Variable(tfc.random_normal([3, 5], seed=30 + k))
            ops.append(opt.minimize(tfc.reduce_sum(tfc.square(x * w - 1.0))))
        init = tfc.global_variables_initializer()
    feed = {x: _rng(10).standard_normal((3, 5), np.float32)}
    graphs["updates_elementwise"] = (graph, ops, feed, [init])
    training = training_graphs()
    for name, (graph, fetches, feed) in training.items():
        if not name.endswith(".init"):
            FROM_TEST_CUDA.add(name)
            if name + ".init" in training:
                init = training[name + ".init"][1]
            else:
                with graph.as_default():
                    init = [tfc.global_variables_initializer()]
            graphs[name] = (graph, fetches, feed, init)
    return graphs


def all_steps(steps) -> list:
    """The steps and, recursively, those of the branches, conditions and bodies of If and
    While steps (fusion runs inside each nested graph on its own)."""
    found = []
    for step in steps:
        found.append(step)
        control = getattr(step, "control", None)
        if control is not None:
            for attr in ("then", "other", "cond", "body"):
                found += all_steps(getattr(control, attr, None) or [])
    return found


def gpu_program(graph, fetches, feed):
    """The program graph a GPU session compiles (every pass, the CUDA target's options)."""
    request = RunRequest(graph, fetches, feed)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    return request, run_passes(program, pipeline(), options=CUDA.pass_options())


GRAPHS = fused_graphs()


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_gpu_programs_are_fused_into_parallel_kernels(name):
    graph, fetches, feed, _ = GRAPHS[name]
    _, program = gpu_program(graph, fetches, feed)
    lowered = lower_program(program, name=name)
    fused = [s for s in all_steps(lowered.steps) if is_fusion(s.op)]
    assert fused, "no fused group"
    for step in fused:
        (bound,) = step.kernels
        assert all(p.buf != "scratch" for p in bound.kernel.params)
        text = render_kernel(bound.kernel, CUDA, name="k")
        assert SERIAL not in text and "<<<1, 1," not in text, step.node


def test_each_kind_of_group_is_formed():
    ops, kinds = set(), set()
    for name, (graph, fetches, feed, _) in GRAPHS.items():
        _, program = gpu_program(graph, fetches, feed)
        for step in lower_program(program, name=name).steps:
            if is_fusion(step.op):
                ops.add(step.op)
                kinds.add(_kernel_kind(render_kernel(step.kernels[0].kernel, CUDA)))
    updates = ("GradientDescent", "Momentum", "Adam", "Adagrad", "RMSProp", "CenteredRMSProp",
               "Adadelta", "Ftrl", "FtrlV2", "ProximalGradientDescent", "ProximalAdagrad",
               "AdagradDA")  # fmt: skip
    assert {"Fusion", "FusedAssign", *(f"FusedApply{u}" for u in updates)} <= ops
    assert kinds == {"per-element", "thread per output", "blocks"}


def _kernel_kind(text: str) -> str:
    if "_at(int64_t t" in text:
        return "per-element"
    return "blocks" if "__shared__" in text else "thread per output"


def test_only_the_c_target_keeps_fused_products_in_row_scratch():
    """CUDA programs fuse MatMuls whose product an output holds (the GEMM writes it whole), not
    those whose rows only a scratch block holds (the C kernel's GEMM runs inside its loop); a
    target may also ask for no MatMul groups at all (Target.fuse_matmul)."""
    no_matmul = {"fuse": {"matmul_groups": False}}
    for options, scratch, matmul in (
        (None, True, True), (CUDA.pass_options(), False, True), (no_matmul, False, False)
    ):  # fmt: skip
        kinds, scratches = set(), set()
        for name in ("dense", "digits_model", "lenet_model"):
            graph, fetches, feed, _ = GRAPHS[name]
            request = RunRequest(graph, fetches, feed)
            program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
            program = run_passes(program, pipeline(), options=options)
            for n in program.nx:
                if is_fusion(program.op_type(n)):
                    attrs = program.node(n)["attrs"]
                    kinds.update(m.kind for m in attrs["members"])
                    scratches.add(attrs.get("row_scratch") is not None)
        assert ("matmul" in kinds) == matmul and "reduce" in kinds
        assert (True in scratches) == scratch


@needs_nvcc
def test_fused_gpu_programs_compile_with_nvcc_without_warnings():
    def render(item):
        name, (graph, fetches, feed, _) = item
        _, program = gpu_program(graph, fetches, feed)
        # test_cuda's training graphs are compiled whole (host code too), under the name test_cuda's
        # nvcc check gives their fused programs: the same bytes, so one build in the cache serves
        # both; the others' device code goes through cicc's optimizer and ptxas (a cubin: their
        # host code, the same templates' as the training programs', which launch every kind of
        # fused kernel, took half of each whole build's time)
        output = "cubin"
        if name in FROM_TEST_CUDA:
            name, output = name + ".fused", "object"
        source = render_program(lower_program(program, name=name), CUDA)
        return source, name, output

    sources = [render(item) for item in GRAPHS.items()]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = list(
            pool.map(
                lambda s: compile_cuda(s[0], name=s[1], cuda_arch="sm_80", output=s[2]), sources
            )
        )
    assert len(built) == len(GRAPHS) and all(path.stat().st_size for path in built)


# -- the numbers, on a GPU and emulated on the CPU ----------------------------------------------
def _sync_reference(sess: tfc.Session, interp: Interpreter) -> None:
    """The interpreter's variables set to the session's (each step is then checked alone: the
    same inputs on both sides, so one step's rounding does not carry into the next)."""
    for var in sess.initialized_variables():
        interp.state.assign(var, sess.read_variable(var))


def _assert_close(got, want, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, what)


# float32 steps whose products and sums run in other orders than NumPy's; a wrong index or merge
# is off by far more
RTOL, ATOL = 2e-5, 1e-5
STEPS = 2  # the second step's optimizer slots are no longer zero


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_fused_programs_match_the_references(name, cuda_device, monkeypatch):
    """The GPU program of each graph (fused, every kernel a parallel one) runs STEPS steps from
    the variables the NumPy references initialize; each step's fetches and variables (fused
    updates included) equal the references' from the same variables."""
    graph, fetches, feed, init = GRAPHS[name]
    interp = Interpreter(graph)
    if init:
        interp.run(init)
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    with tfc.Session(graph=graph) as sess:
        for var, value in interp.state.vars.items():
            sess.write_variable(var, value)  # no init program to build: the same start
        for step in range(STEPS):
            got = sess.run(fetches, feed)
            want = interp.run(fetches, feed)
            for k, (g, w) in enumerate(zip(got, want)):
                assert (g is None) == (w is None), k
                if w is not None:
                    _assert_close(g, w, f"step {step}, fetch {k} ({fetches[k]})")
            assert sess.initialized_variables() == set(interp.state.vars)
            for var in sorted(interp.state.vars):
                _assert_close(
                    sess.read_variable(var), interp.state.vars[var], f"step {step}, {var}"
                )
            _sync_reference(sess, interp)
        (program,) = sess._programs.values()
    assert program.on_device
    assert any(is_fusion(s.op) for s in all_steps(program.lowered.steps)), "no fused kernel ran"
