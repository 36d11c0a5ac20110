"""The CUDA backend. Without a GPU: the generated CUDA of every op compiles with nvcc, warnings
as errors. On a GPU (`cuda` marker; skipped with the reason elsewhere) and under CUDA device
emulation (TFC_CUDA=emulate: the same programs built by the host C++ compiler, their kernels run
on the CPU; no GPU or nvcc needed): every op batch of the op tests and the training steps of the
MLP and LeNet samples against the CPU and NumPy, and a failing kernel's report. The executables of
`tfc compile --target cuda` are tested in test_cuda_executables.py."""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from cuda_devices import DEVICES, GPU_OK, GPU_WHY
from opcheck import CaseBatch, assert_same

import tfc
from tfc.backend.cuda import compile_cuda
from tfc.client.request import RunRequest
from tfc.codegen.lower import lower_program
from tfc.codegen.render import render_program
from tfc.codegen.targets import CUDA
from tfc.compiler import pipeline, run_passes
from tfc.ir.program import make_program_graph
from tfc.ops.fusion import is_fusion
from tfc.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")


# every module of op cases runs its batches on the GPU (a new tests/test_ops_<family>.py joins by
# being there), but those whose ops only Python runs: a Session runs them in Python stages
PYTHON_STAGE_MODULES = {
    "test_ops_dynamic",
    "test_ops_script",
    "test_ops_strings",
    "test_ops_parsing",
}
OP_TEST_MODULES = sorted(
    {path.stem for path in (ROOT / "tests").glob("test_ops_*.py")} - PYTHON_STAGE_MODULES
) + ["test_losses", "test_numerics"]
# ops that never become a kernel: graph structure, or values the passes resolve
NO_KERNEL = {"Placeholder", "PlaceholderWithDefault", "Const", "NoOp", "VariableV2", "Identity"}
# not in GPU programs: host-only ops (OpDef.host_only: tf.data's iterator ops) are placed on the
# host (tfc/passes/place.py)
NOT_ON_GPU = {op for op, d in REGISTRY.items() if d.host_only}


def op_batches() -> dict[str, CaseBatch]:
    """Every op test module's CaseBatch, by `module.NAME` (importing the modules builds them)."""
    batches = {}
    for name in OP_TEST_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, CaseBatch):
                batches[f"{name}.{attr}"] = value
    return batches


@functools.cache
def op_batch_names() -> list[str]:
    """The names op_batches() has, read from the modules' source without building a batch (the
    tests are parametrized by them at collection: building every batch took seconds in every test
    worker); test_every_op_is_in_a_cuda_program checks that they are op_batches()'s. A batch is a
    name assigned at module level (in `with`/`if` blocks too) the value of `CaseBatch()` or of a
    module-level function annotated `-> CaseBatch`."""
    names = []
    for module in OP_TEST_MODULES:
        tree = ast.parse((ROOT / "tests" / f"{module}.py").read_text())
        builders = {"CaseBatch"} | {
            f.name
            for f in tree.body
            if isinstance(f, ast.FunctionDef)
            and f.returns
            and ast.unparse(f.returns) == "CaseBatch"
        }
        statements = list(tree.body)
        while statements:
            node = statements.pop(0)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            value = getattr(node, "value", None)
            if (
                isinstance(node, ast.Assign)
                and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in builders
            ):
                names += [f"{module}.{t.id}" for t in node.targets if isinstance(t, ast.Name)]
            for field in ("body", "orelse", "finalbody", "handlers"):
                statements += getattr(node, field, [])
    return sorted(names)


def training_graphs() -> dict[str, tuple]:
    """(graph, fetches, feed_dict) of training steps: the samples' models and every optimizer."""
    graphs = {}
    sys.path.insert(0, str(ROOT / "samples"))
    try:
        for model, shape in (
            ("digits_model", (8, 64)),
            ("lenet_model", (4, 28, 28, 1)),
            ("layers_cnn_model", (4, 28, 28, 1)),
        ):
            module = importlib.import_module(model)
            graph = tfc.Graph()
            with graph.as_default():
                sig = module.signatures()["train"]
                init = tfc.global_variables_initializer()
            rng = np.random.default_rng(0)
            images, labels = sig["inputs"]["features"], sig["inputs"]["labels"]
            ids = rng.integers(0, 10, shape[0]).astype(labels.dtype.np)
            feed = {images: rng.random(shape, np.float32), labels: ids}
            graphs[model] = (graph, [sig["loss"], sig["train_op"]], feed)
            graphs[model + ".init"] = (graph, [init], {})
    finally:
        sys.path.pop(0)
    graph = tfc.Graph()
    with graph.as_default():
        x = tfc.placeholder(tfc.float32, [6, 5])
        fetches = []
        for opt in (
            tfc.train.GradientDescentOptimizer(0.1),
            tfc.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
            tfc.train.AdagradOptimizer(0.1),
            tfc.train.RMSPropOptimizer(0.1),
            tfc.train.RMSPropOptimizer(0.1, centered=True),
            tfc.train.AdamOptimizer(0.1),
            tfc.train.AdadeltaOptimizer(1.0),
            tfc.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
            tfc.train.FtrlOptimizer(0.1, -0.3, l2_shrinkage_regularization_strength=0.1),
            tfc.train.ProximalGradientDescentOptimizer(0.1, 0.01, 0.01),
            tfc.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.01),
            tfc.train.AdagradDAOptimizer(0.1, tfc.train.get_or_create_global_step(), 0.1, 0.01),
        ):
            w = tfc.Variable(tfc.random_normal([5, 3], seed=1))
            loss = tfc.reduce_mean(tfc.square(tfc.matmul(x, w)))
            # an embedding table: its IndexedSlices gradient takes the SparseApply kernels
            table = tfc.Variable(tfc.random_normal([7, 2], seed=2))
            looked = tfc.nn.embedding_lookup(table, tfc.constant([5, 1, 5, 0]))
            fetches.append(opt.minimize(loss + tfc.reduce_sum(tfc.square(looked))))
        init = tfc.global_variables_initializer()
    feed = {x: np.random.default_rng(1).random((6, 5), np.float32)}
    graphs["optimizers"] = (graph, fetches, feed)
    graphs["optimizers.init"] = (graph, [init], {})
    graph = tfc.Graph()
    with graph.as_default():  # the gradient ops of the unary functions, and a few others
        x = tfc.placeholder(tfc.float32, [4, 6])
        v = tfc.Variable(tfc.ones([4, 6]))
        ys = [f(x + 2.0) for f in (
            tfc.tanh, tfc.sigmoid, tfc.sqrt, tfc.rsqrt, tfc.reciprocal, tfc.nn.softplus,
            tfc.nn.relu6, tfc.nn.elu, tfc.nn.softmax, tfc.nn.log_softmax, tfc.nn.selu,
            tfc.nn.softsign,
            lambda t: tfc.nn.leaky_relu(t, 0.2), lambda t: t[1:3, ::2],
            lambda t: tfc.pad(t, [[1, 1], [2, 2]], mode="REFLECT"),
            lambda t: tfc.gather(t, tfc.constant([0, 2, 1, 0])),
        )]  # fmt: skip
        bias = tfc.placeholder(tfc.float32, [6])
        ys.append(x * bias)  # a broadcast: its gradient sums back to the bias's shape
        fetches = tfc.gradients([tfc.reduce_sum(y * y) for y in ys], [x, bias])
        fetches.append(tfc.assign_sub(v, x))
        fetches.append(
            tfc.train.RMSPropOptimizer(0.1, centered=True).minimize(
                tfc.reduce_sum(tfc.square(v * x))
            )
        )
        step = tfc.train.get_or_create_global_step()
        for opt in (  # element-wise gradients: each update fuses with the gradient's loop
            tfc.train.AdadeltaOptimizer(1.0),
            tfc.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
            tfc.train.FtrlOptimizer(0.1, -0.3, l2_shrinkage_regularization_strength=0.1),
            tfc.train.ProximalGradientDescentOptimizer(0.1, 0.01, 0.01),
            tfc.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.01),
            tfc.train.AdagradDAOptimizer(0.1, step, 0.1, 0.01),
        ):
            u = tfc.Variable(tfc.ones([4, 6]))
            fetches.append(opt.minimize(tfc.reduce_sum(tfc.square(u * x - 1.0))))
    feed = {x: np.random.default_rng(2).random((4, 6), np.float32), bias: np.ones(6, np.float32)}
    graphs["gradients"] = (graph, fetches, feed)
    graph = tfc.Graph()
    with graph.as_default():  # the variables' scatter updates, each on a variable of its own
        rows = tfc.placeholder(tfc.float32, [3, 4])
        ups = [tfc.scatter_update, tfc.scatter_add, tfc.scatter_sub, tfc.scatter_mul,
               tfc.scatter_div, tfc.scatter_min, tfc.scatter_max]  # fmt: skip
        updates = tfc.abs(rows * 2.0 - 0.5) + 0.25  # a fused element-wise group feeds them
        fetches = [op(tfc.Variable(tfc.ones([5, 4])), [4, 0, 4], updates) for op in ups]
        nd_ups = [tfc.scatter_nd_update, tfc.scatter_nd_add, tfc.scatter_nd_sub]
        fetches += [
            op(tfc.Variable(tfc.ones([5, 4])), [[1, 3], [0, 0]], rows[0, :2]) for op in nd_ups
        ]
    feed = {rows: np.random.default_rng(3).random((3, 4), np.float32)}
    graphs["scatters"] = (graph, fetches, feed)
    graph = tfc.Graph()
    with graph.as_default():  # the candidate samplers (their seeded draws: the same on the GPU)
        classes = tfc.placeholder(tfc.int64, [3, 2])
        fetches = [
            *tfc.nn.uniform_candidate_sampler(classes, 2, 4, True, 9, seed=1),
            *tfc.nn.log_uniform_candidate_sampler(classes, 2, 4, False, 9, seed=2),
            *tfc.nn.fixed_unigram_candidate_sampler(
                classes, 2, 4, True, 9, unigrams=[1.0, 2, 3, 1, 1, 4, 2, 1, 5], seed=3
            ),
            *tfc.nn.all_candidate_sampler(classes, 2, 9, True),
            tfc.guarantee_const(tfc.cast(classes, tfc.float32) * 2.0),
        ]
    feed = {classes: np.array([[1, 4], [0, 8], [3, 3]], np.int64)}
    graphs["samplers"] = (graph, fetches, feed)
    graphs["control_flow"] = control_flow_graph()
    return graphs


def control_flow_graph() -> tuple:
    """Loops and branches with every TensorArray op, and their gradients: the host code around
    the kernels of nested graphs (tfc/codegen/control_flow.py) compiled by nvcc too."""
    graph = tfc.Graph()
    with graph.as_default():
        x = tfc.placeholder(tfc.float32, [5, 3])
        p = tfc.placeholder(tfc.bool, [])
        k = tfc.placeholder(tfc.int32, [])
        rows = tfc.TensorArray(tfc.float32, size=5).unstack(x)
        grown = tfc.TensorArray(tfc.float32, size=0, dynamic_size=True)

        def body(t, h, out, more):
            h = tfc.tanh(h * rows.read(t))
            return t + 1, h, out.write(t, h), more.write(more.size(), tfc.reduce_sum(h))

        _, h, out, more = tfc.while_loop(
            lambda t, *_: t < 5, body, (0, tfc.ones([3]), tfc.TensorArray(tfc.float32, 5), grown)
        )
        y = tfc.cond(p, lambda: tfc.sigmoid(out.stack()) * 2.0, lambda: out.stack() - 1.0)
        picked = tfc.TensorArray(tfc.float32, size=4).scatter([3, 1], x[:2]).gather([1, 3])
        chosen = tfc.case([(tfc.equal(k, 0), lambda: h), (tfc.equal(k, 1), lambda: -h)])
        loss = tfc.reduce_sum(y * y) + tfc.reduce_sum(picked) + tfc.reduce_sum(more.stack())
        fetches = [*tfc.gradients(loss, [x]), chosen, picked]
    feed = {x: np.random.default_rng(3).random((5, 3), np.float32), p: True, k: 1}
    return graph, fetches, feed


def cuda_source(
    graph, fetches, feed_dict, name: str, optimize: bool = False, target=CUDA
) -> tuple[str, set[str]]:
    """The CUDA program a GPU session compiles (no optimization pass, or all of them with the
    CUDA target's options: fused kernels), and its op types. `target`: CUDA or CUDA_TF32."""
    program = gpu_program_graph(graph, fetches, feed_dict, optimize)
    return render_program(lower_program(program, name=name), target), _op_types(program)


def gpu_program_graph(graph, fetches, feed_dict, optimize: bool):
    """The program graph a GPU session compiles, after no pass or all of them (CUDA's options)."""
    request = RunRequest(graph, fetches, feed_dict)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    passes = pipeline() if optimize else pipeline([])
    return run_passes(program, passes, options=CUDA.pass_options())


def _op_types(graph) -> set[str]:
    """The op types of a graph and of the graphs nested in its ops (loop bodies, branches)."""
    ops = set()
    for n in graph.graph_attrs["schedule"]:
        node = graph.node(n)
        ops.add(node["op"])
        for key in REGISTRY[node["op"]].subgraphs:
            ops |= _op_types(node["attrs"][key])
    return ops


@functools.cache
def _training_graphs_to_render() -> dict[str, tuple]:
    """training_graphs() once per process, for rendering only: the tests that run a training
    step build fresh graphs (the same seeds give the same initial weights)."""
    return training_graphs()


def cuda_program_names() -> list[str]:
    """Every op batch's CUDA program and every training graph's (plain and `.fused`)."""
    training = [name + suffix for name in _training_graphs_to_render() for suffix in ("", ".fused")]
    return sorted(op_batch_names() + training)


@functools.cache
def cuda_program_graph(name: str):
    """The program graph of cuda_program_names()'s `name`, once per process: the coverage test
    needs only these, the nvcc shards render their own share of them."""
    if name in op_batch_names():
        batch = op_batches()[name]
        tensors = [case[0] for case in batch.cases.values()]
        return gpu_program_graph(batch.graph, tensors, batch.feed_dict, optimize=False)
    graph, fetches, feed = _training_graphs_to_render()[name.removesuffix(".fused")]
    return gpu_program_graph(graph, fetches, feed, optimize=name.endswith(".fused"))


def test_every_op_is_in_a_cuda_program():
    assert op_batch_names() == sorted(op_batches())  # the parametrization misses no batch
    covered = set().union(*(_op_types(cuda_program_graph(n)) for n in cuda_program_names()))
    lowered = {op for op, d in REGISTRY.items() if d.lower is not None or is_fusion(op)}
    kernels = lowered - NO_KERNEL - NOT_ON_GPU
    kernels = {op for op in kernels if not op.startswith("Fused")}
    missing = sorted(kernels - covered)
    assert not missing, f"ops no compiled CUDA program holds: {missing}"


NVCC_SHARDS = 4  # the programs split so that parallel test workers share nvcc's minutes


@needs_nvcc
@pytest.mark.parametrize("shard", range(NVCC_SHARDS))
def test_every_op_compiles_with_nvcc_without_warnings(shard):
    names = cuda_program_names()[shard::NVCC_SHARDS]
    sources = {n: render_program(lower_program(cuda_program_graph(n), name=n), CUDA) for n in names}

    def build(name):
        # the op batches' programs are large: their device code is checked (PTX, nvcc's own
        # warnings: those of cicc's front end, run without the optimizer behind it, which took
        # four fifths of the time), and so are the initializers' (their host code is the
        # training programs' runtime); the fused training programs, those a GPU session runs,
        # are compiled whole, host code and all, the device optimizer and ptxas too; the plain
        # ones' device code through the optimizer and ptxas (a cubin: their host code is built
        # from the same templates as the fused programs', and compiling it took half the time)
        source = sources[name]
        if name.startswith("test_") or ".init" in name:
            return compile_cuda(
                source, name=name, cuda_arch="sm_80", output="ptx", optimize_device=False
            )
        output = "object" if name.endswith(".fused") else "cubin"
        return compile_cuda(source, name=name, cuda_arch="sm_80", output=output)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(build, names))
    assert names and all(o.stat().st_size > 0 for o in objects)


@needs_nvcc
def test_fat_binary_flags_name_every_architecture():
    from tfc.backend.cuda import arch_flags

    flags = arch_flags("sm_80,sm_90")
    assert flags == [
        "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
        "-gencode", "arch=compute_90,code=compute_90",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="sm_8x"):
        arch_flags("sm_8x")


def test_gpu_placement_without_a_gpu_says_why(monkeypatch):
    if GPU_OK:
        pytest.skip("this machine has a GPU")
    monkeypatch.delenv("TFC_CUDA", raising=False)
    with tfc.device("/gpu:0"):
        a = tfc.placeholder(tfc.float32, [3])
        b = a * 2.0
    with tfc.Session() as sess, pytest.raises(RuntimeError, match="on /gpu:0"):
        sess.run(b, {a: np.ones(3, np.float32)})


# -- on a GPU, and emulated on the CPU ---------------------------------------------------------
@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
@pytest.mark.parametrize("name", op_batch_names())
def test_op_batch_on_gpu_matches_numpy(name, cuda_device, monkeypatch):
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    batch = op_batches()[name]
    keys = list(batch.cases)
    tensors = [batch.cases[k][0] for k in keys]
    with tfc.Session(graph=batch.graph, config=tfc.CompileOptions(passes=[])) as sess:
        got = sess.run(tensors, feed_dict=batch.feed_dict)
        assert all(p.on_device for p in sess._programs.values())
    for key, value in zip(keys, got):
        _, expected, rtol, atol = batch.cases[key]
        assert_same(value, expected, rtol, atol, f"{key} on the {cuda_device} device vs NumPy")


def _train(model: str, steps: int, device: str, shape) -> tuple[list, dict]:
    graph, fetches, feed = training_graphs()[model]
    init = training_graphs()  # fresh graphs: the same seeds give the same initial weights
    graph, fetches, feed = init[model]
    _, init_fetches, _ = init[model + ".init"]
    losses = []
    with tfc.Session(graph=graph) as sess:
        os.environ["TFC_DEVICE"] = device
        try:
            sess.run(init_fetches)
            for _ in range(steps):
                losses.append(sess.run(fetches, feed)[0])
            weights = {v: sess.read_variable(v) for v in sorted(sess.initialized_variables())}
        finally:
            os.environ.pop("TFC_DEVICE", None)
    return losses, weights


# the CPU's numbers are the reference there: built at -O1 (conftest.quick_builds: -O3's numbers,
# a third of gcc's time); the CUDA programs under test build as they always do
@pytest.mark.usefixtures("quick_builds")
@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
@pytest.mark.parametrize("model", ["digits_model", "lenet_model", "layers_cnn_model"])
def test_training_steps_on_gpu_equal_cpu(model, cuda_device):
    cpu_losses, cpu_weights = _train(model, 5, "cpu", None)
    gpu_losses, gpu_weights = _train(model, 5, "gpu", None)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4, atol=1e-4)
    assert cpu_weights.keys() == gpu_weights.keys()
    for name in cpu_weights:
        np.testing.assert_allclose(
            gpu_weights[name], cpu_weights[name], rtol=1e-4, atol=1e-4, err_msg=name
        )


@pytest.mark.usefixtures("quick_builds")  # the CPU's reference numbers, as above
@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
@pytest.mark.parametrize("name", ["optimizers", "gradients", "scatters"])
def test_training_graphs_on_gpu_equal_cpu(name, cuda_device, monkeypatch):
    """Every optimizer's update, the gradients of the unary functions, softmax, pad, gather and
    a broadcast, and the variables' scatter updates give the CPU's numbers over three steps."""
    results = {}
    for device in ("cpu", "gpu"):
        graph, fetches, feed = training_graphs()[name]  # a fresh graph: the same initial weights
        with graph.as_default():
            init = tfc.global_variables_initializer()
        monkeypatch.setenv("TFC_DEVICE", device)
        with tfc.Session(graph=graph) as sess:
            sess.run(init)
            values = [sess.run(fetches, feed) for _ in range(3)]
            weights = {v: sess.read_variable(v) for v in sorted(sess.initialized_variables())}
            assert all(p.on_device == (device == "gpu") for p in sess._programs.values())
        results[device] = values, weights
    (cpu_values, cpu_weights), (gpu_values, gpu_weights) = results["cpu"], results["gpu"]
    for step, (cpu, gpu) in enumerate(zip(cpu_values, gpu_values)):
        for i, (c, g) in enumerate(zip(cpu, gpu)):
            if c is not None:
                np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5, err_msg=f"{step}.{i}")
    assert cpu_weights.keys() == gpu_weights.keys() and cpu_weights
    for var in cpu_weights:
        np.testing.assert_allclose(gpu_weights[var], cpu_weights[var], rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
@pytest.mark.skipif(not GPU_OK, reason=f"no GPU to run CUDA programs on: {GPU_WHY}")
@pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="no compute-sanitizer")
def test_training_step_is_memcheck_clean(tmp_path):
    script = (
        "import sys; sys.path.insert(0, 'tests'); import test_cuda as t; "
        "losses, _ = t._train('lenet_model', 1, 'gpu', None); print('loss', losses[0])"
    )
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    proc = subprocess.run(
        ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "9", sys.executable,
         "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "ERROR SUMMARY: 0 errors" in proc.stdout


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_a_failing_gpu_kernel_reports_like_the_cpu(cuda_device):
    with tfc.device("/gpu:0"):
        logits = tfc.placeholder(tfc.float32, [4, 3])
        labels = tfc.placeholder(tfc.int64, [4])
        loss = tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    feed = {logits: np.zeros((4, 3), np.float32), labels: np.array([0, 7, 1, -2])}
    with tfc.Session() as sess, pytest.raises(tfc.errors.InvalidArgumentError) as info:
        sess.run(loss, feed)
    assert "Received a label value of -2 which is outside the valid range of [0, 3)" in str(
        info.value
    )
    assert "Label values: 0 7 1 -2" in str(info.value)
    assert info.value.op is not None and info.value.op.type == "SparseSoftmaxCrossEntropyWithLogits"
    feed[labels] = np.array([0, 2, 1, 1])  # the program still runs after a failure
    with tfc.Session() as sess:
        np.testing.assert_allclose(sess.run(loss, feed), np.full(4, np.log(3.0)), rtol=1e-6)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_an_out_of_range_gather_index_names_its_node(cuda_device):
    with tfc.device("/gpu:0"):
        params = tfc.placeholder(tfc.float32, [4, 3])
        indices = tfc.placeholder(tfc.int32, [2])
        picked = tfc.gather(params, indices, name="pick") * 2.0
    feed = {params: np.arange(12, dtype=np.float32).reshape(4, 3), indices: np.array([1, 9])}
    with tfc.Session() as sess:
        with pytest.raises(tfc.errors.InvalidArgumentError, match=r"indices\[1\] = 9 is not in"):
            sess.run(picked, feed)
        assert sess._programs and all(p.on_device for p in sess._programs.values())
        feed[indices] = np.array([3, 0])
        np.testing.assert_array_equal(sess.run(picked, feed), [[18, 20, 22], [0, 2, 4]])
    with tfc.Session() as sess, pytest.raises(tfc.errors.InvalidArgumentError) as info:
        sess.run(picked, {params: feed[params], indices: np.array([-1, 0])})
    assert info.value.op is not None and info.value.op.name == "pick"


class ForeignDeviceArray:
    """Another library's device array (a pycuda GPUArray, a CuPy array...) as tfc sees one: only
    `__cuda_array_interface__`, here over device memory tfc allocated."""

    def __init__(self, array: np.ndarray) -> None:
        self.owner = tfc.DeviceArray.from_numpy(array)
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "data": (self.owner.ptr, False),
            "strides": None, "version": 3,
        }  # fmt: skip


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_device_arrays_feed_and_fetch_without_host_copies(cuda_device):
    with tfc.device("/gpu:0"):
        a = tfc.placeholder(tfc.float32, [2, 3])
        b = tfc.placeholder(tfc.float32, [3])
        y = tfc.nn.relu(a * b) + 1.0
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    w = np.array([2, 3, -1], np.float32)
    expected = np.maximum(x * w, 0) + 1
    on_device = tfc.RunOptions(fetches_on_device=True)
    with tfc.Session() as sess:
        feeds = {a: tfc.DeviceArray.from_numpy(x), b: ForeignDeviceArray(w)}
        np.testing.assert_array_equal(sess.run(y, feeds), expected)  # device in, host out
        fetched = sess.run(y, feeds, options=on_device)
        assert isinstance(fetched, tfc.DeviceArray) and fetched.shape == (2, 3)
        np.testing.assert_array_equal(fetched.get(), expected)
        again = sess.run(y, {a: fetched, b: w}, options=on_device)  # a fetch fed back in place
        np.testing.assert_array_equal(again.get(), np.maximum(expected * w, 0) + 1)
        mixed = sess.run([y, y], {a: x, b: w}, options=on_device)  # host in, device out
        assert all(isinstance(m, tfc.DeviceArray) for m in mixed)
        np.testing.assert_array_equal(mixed[1].get(), expected)
        assert all(p.on_device for p in sess._programs.values())
        with pytest.raises(ValueError, match="holds float64, the tensor is float32"):
            sess.run(y, {a: ForeignDeviceArray(x.astype(np.float64)), b: w})
    z = tfc.placeholder(tfc.float32, [3])
    with tfc.Session() as sess:  # a CPU program gets a host copy of a device feed
        np.testing.assert_array_equal(sess.run(z * 2.0, {z: ForeignDeviceArray(w)}), w * 2)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_a_gpu_program_puts_each_input_and_output_where_asked_in_one_call(cuda_device):
    from tfc.backend.device_array import device_feed
    from tfc.compiler import compile_stages

    with tfc.device("/gpu:0"):
        a = tfc.placeholder(tfc.float32, [2, 3])
        b = tfc.placeholder(tfc.float32, [3])
        y = tfc.nn.relu(a * b) + 1.0
        z, u, v = a - b, a + b, a * 3.0
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    w = np.array([2, 3, -1], np.float32)
    want_y, want_z, want_u = np.maximum(x * w, 0) + 1, x - w, x + w
    user = tfc.get_default_graph()
    request = RunRequest(user, [y, z, u, v], {a: x, b: w})
    graph = make_program_graph(user, request.fetch_keys, request.targets, request.feeds)
    with tfc.Session() as sess:
        ((_, compiled),) = compile_stages(graph, sess._passes, "mixed")
        lowered = compiled.lowered
        # as a stage of a staged program
        program = sess._stage_program(dataclasses.replace(compiled, mixed_io=True))
        assert [tuple(f.shape) for f in lowered.fetches] == [(2, 3)] * 4
        kept = tfc.DeviceArray((2, 3), np.float32)  # a buffer the caller reuses
        for feeds in ([x, w], [device_feed(tfc.DeviceArray.from_numpy(x), np.float32, "a"), w]):
            rc, (host, fresh, same, dropped) = program(feeds, [False, True, kept, None])
            assert rc == 0 and isinstance(host, np.ndarray) and dropped is None
            assert isinstance(fresh, tfc.DeviceArray) and same is kept
            np.testing.assert_array_equal(host, want_y)
            np.testing.assert_array_equal(fresh.get(), want_z)
            np.testing.assert_array_equal(kept.get(), want_u)
        whole = sess._stage_program(compiled)  # a program run whole has no run_mixed
        with pytest.raises(ValueError, match="rendered without run_mixed"):
            whole([x, w], [False] * 4)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_per_thread_index_and_sampling_kernels_equal_cpu(cuda_device, monkeypatch):
    """GatherNd, ReverseSequence, searchsorted and the gamma and Poisson draws (a GPU thread per
    output) give the CPU's values over two runs, and a bad tuple or length reports the CPU's
    message: the first bad one in order, whichever thread met one first."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 5)).astype(np.float32)
    good = {"idx": [[0, 1], [3, 4], [2, 2]], "lens": [5, 0, 3, 1]}
    results = {}
    for device in ("cpu", "gpu"):
        graph = tfc.Graph()
        with graph.as_default():
            x = tfc.placeholder(tfc.float32, [4, 5])
            idx = tfc.placeholder(tfc.int32, [3, 2])
            lens = tfc.placeholder(tfc.int32, [4])
            fetches = [
                tfc.gather_nd(x, idx) * 2.0,
                tfc.reverse_sequence(x, lens, seq_axis=1, batch_axis=0) + 1.0,
                tfc.searchsorted(tfc.sort(x), x),
                tfc.random_gamma([3], [0.5, 2.0], seed=1),
                tfc.random_poisson([3.0, 30.0], [2], dtype=tfc.int32, seed=2),
                *tfc.nn.log_uniform_candidate_sampler([[1, 2]], 2, 5, True, 9, seed=3),
                *tfc.nn.uniform_candidate_sampler([[4]], 1, 6, False, 10, seed=4),
                *tfc.nn.fixed_unigram_candidate_sampler(
                    [[0]], 1, 5, True, 6, seed=5, unigrams=[3, 1, 4, 1, 5, 9]
                ),  # fmt: skip
            ]
        feed = {x: xv, idx: good["idx"], lens: good["lens"]}
        monkeypatch.setenv("TFC_DEVICE", device)
        with tfc.Session(graph=graph) as sess:
            results[device] = [sess.run(fetches, feed) for _ in range(2)]
            bad = {**feed, idx: [[0, 1], [5, 0], [9, 9]]}
            pattern = r"indices\[1\] = \[5, 0\] does not index into param shape \[4,5\]"
            with pytest.raises(tfc.errors.InvalidArgumentError, match=pattern):
                sess.run(fetches[0], bad)
            bad = {**feed, lens: [1, 9, -1, 2]}
            with pytest.raises(tfc.errors.InvalidArgumentError, match=r"seq_lens\(1\) > input"):
                sess.run(fetches[1], bad)
            if device == "gpu":
                assert all(p.on_device for p in sess._programs.values())
    for step in range(2):
        for k, (c, g) in enumerate(zip(results["cpu"][step], results["gpu"][step])):
            np.testing.assert_allclose(g, c, rtol=1e-6, err_msg=f"run {step}, fetch {k}")
