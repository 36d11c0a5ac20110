"""CompileOptions(mixed_precision="bfloat16"): the float32 products (MatMul, BatchMatMul,
Conv2D and its two gradients) multiply operands rounded to bfloat16 and sum in fp32, on the host
(runtime/include/tfc_gemm_bf16.h, the convolutions' rounded copies) and on the CUDA target
(wmma m16n16k16, emulated by runtime/include/tfc_cuda_emu_wmma.h; the forms off tensor cores
on rounded copies), against NumPy on the rounded operands; everything else stays float32.
"""

from __future__ import annotations

import os
import shutil
from functools import cache

import numpy as np
import pytest
from cuda_devices import DEVICES
from test_ops_conv import CONV_TRIO, conv2d_np, conv_trio, conv_trio_np, tol

import tfc
from tfc.backend.cuda import compile_cuda
from tfc.client.request import RunRequest
from tfc.codegen.cuda import bf16_cores, conv_form
from tfc.codegen.targets import CUDA, C
from tfc.compiler import compile_program, pipeline
from tfc.ir.program import make_program_graph
from tfc.tools.cli import main
from tfc.tools.inspect import product_precisions

NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
CONV_OPS = CONV_TRIO
BF16 = tfc.CompileOptions(passes=[], mixed_precision="bfloat16")

# (a shape, b shape, transpose_a, transpose_b): blocks of A and B past the host's rounding
# blocks (64 x 128, 128 x 256) and partial ones; the CUDA kernel's partial 32 x 32 tiles; a
# row (GEMV), few columns (the narrow kernel), transposes; batches (BatchMatMulV2)
PRODUCTS = [
    ((70, 300), (300, 270), False, False),
    ((300, 37), (45, 300), True, True),
    ((1, 96), (96, 50), False, False),
    ((65, 140), (10, 140), False, True),
    ((3, 5, 40), (40, 33), False, False),
]
# (x, filter, strides, padding, dilations): the CUDA GEMM forms in one chunk (tensor cores)
# and direct or chunked ones (rounded copies); the host's direct and row-scatter variants
CONVS = {
    "gemm-partial-tiles": ((2, 9, 7, 13), (3, 3, 13, 70), (1, 1), "SAME", (1, 1)),
    "gemm-input-s2": ((2, 9, 8, 32), (3, 3, 32, 16), (2, 2), "SAME", (1, 1)),
    "gemm-filter-one-chunk": ((1, 8, 8, 8), (3, 3, 8, 32), (1, 1), "SAME", (1, 1)),
    "direct-small": ((2, 6, 5, 3), (3, 2, 3, 4), (1, 2), "VALID", (1, 1)),
}


def bf16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest, even), as float64."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


@cache
def products_program() -> tuple[tfc.Graph, dict, list[tuple]]:
    """Every product above in one graph: (graph, feeds, [(what, tensor, NumPy on the rounded
    operands, NumPy on the exact ones, (rtol, atol))])."""
    rng = np.random.default_rng(2020)
    graph, feeds, cases = tfc.Graph(), {}, []
    with graph.as_default():
        for ash, bsh, ta, tb in PRODUCTS:
            a = rng.standard_normal(ash).astype("float32")
            b = rng.standard_normal(bsh).astype("float32")
            at, bt = tfc.placeholder(tfc.float32, ash), tfc.placeholder(tfc.float32, bsh)
            feeds.update({at: a, bt: b})
            tensor = tfc.matmul(at, bt, transpose_a=ta, transpose_b=tb)

            def product(x, y, ta=ta, tb=tb):
                return np.matmul(np.swapaxes(x, -1, -2) if ta else x, y.T if tb else y)

            k = ash[-2] if ta else ash[-1]
            cases.append(
                (f"MatMul {ash} {bsh} {ta} {tb}", tensor, product(bf16(a), bf16(b)),
                 product(a.astype(np.float64), b.astype(np.float64)), tol("float32", k))
            )  # fmt: skip
        # a MatMul in a loop body (a nested graph: marked as the program is), twice
        x0 = rng.standard_normal((6, 40)).astype("float32")
        w = (rng.standard_normal((40, 40)) / 6).astype("float32")
        xt, wt = tfc.placeholder(tfc.float32, x0.shape), tfc.placeholder(tfc.float32, w.shape)
        feeds.update({xt: x0, wt: w})
        body = lambda i, x: (i + 1, tfc.matmul(x, wt))  # noqa: E731
        _, looped = tfc.while_loop(lambda i, x: i < 2, body, [tfc.constant(0), xt])
        once = bf16(x0) @ bf16(w)
        twice = bf16(once.astype(np.float32)) @ bf16(w)
        exact = x0.astype(np.float64) @ w @ w
        cases.append(("MatMul in a while loop", looped, twice, exact, tol("float32", 80)))
        for name, (xs, fs, st, pad, dil) in CONVS.items():
            fed, tensors, (x, f, dy), terms = conv_trio(rng, xs, fs, st, pad, dil)
            feeds.update(fed)
            rounded = conv_trio_np(bf16(x), bf16(f), bf16(dy), st, pad, dil)
            exact = conv_trio_np(x, f, dy, st, pad, dil)
            for op, tensor, r, e, n in zip(CONV_OPS, tensors, rounded, exact, terms):
                cases.append((f"{op} {name}", tensor, r, e, tol("float32", n)))
    return graph, feeds, cases


def _check(cases: list[tuple], got: list[np.ndarray]) -> None:
    """Each result is the bfloat16 operands' product to fp32's tolerance, and not the float32
    operands' (bfloat16's 8 bits of mantissa show at that tolerance; float16's 11 would too)."""
    for (what, _, rounded, exact, (rtol, atol)), value in zip(cases, got):
        assert value.dtype == np.float32 and value.shape == rounded.shape, what
        np.testing.assert_allclose(value, rounded, rtol=rtol, atol=atol, err_msg=what)
        assert not np.allclose(value, exact, rtol=rtol, atol=atol), f"{what}: float32 operands"


def test_host_products_multiply_bfloat16_operands():
    graph, feeds, cases = products_program()
    with tfc.Session(graph=graph, config=BF16) as sess:
        got = sess.run([c[1] for c in cases], feed_dict=feeds)
    _check(cases, got)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_cuda_products_multiply_bfloat16_operands(cuda_device, monkeypatch):
    """The GPU program: MatMul on the bfloat16 tensor-core GEMM, the convolutions' GEMMs in one
    chunk on tensor cores, the other forms on rounded copies; all give the host's numbers."""
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, feeds, cases = products_program()
    with tfc.Session(graph=graph, config=BF16) as sess:
        got = sess.run([c[1] for c in cases], feed_dict=feeds)
        (program,) = sess._programs.values()
    assert program.on_device
    cores = {
        step.op: bf16_cores(spec := step.kernels[0].kernel.spec, conv_form(spec))
        for step in program.lowered.steps
        if step.op in CONV_OPS
    }
    assert set(cores) == set(CONV_OPS), cores
    forms = [
        bf16_cores(spec, conv_form(spec))
        for step in program.lowered.steps
        if step.op in CONV_OPS
        for spec in [step.kernels[0].kernel.spec]
    ]
    assert any(forms) and not all(forms)  # both routes run
    _check(cases, got)


def cuda_program_source() -> str:
    graph, feeds, cases = products_program()
    request = RunRequest(graph, [c[1] for c in cases], feeds)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    compiled = compile_program(program, pipeline([]), CUDA, name="bf16", mixed_precision="bfloat16")
    return compiled.source


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_bf16_program_compiles_for_sm_80_and_sm_90():
    """The bfloat16 wmma kernels as nvcc builds them for the A100 and the H100/H200."""
    source = cuda_program_source()
    assert "tfc_cuda_gemm_bf16_f32(" in source and "__nv_bfloat16, wmma::col_major" in source
    assert "tfc_cuda_round_bf16_f32(" in source
    assert compile_cuda(source, name="bf16", cuda_arch="sm_80,sm_90", output="ptx").stat().st_size


@pytest.mark.parametrize("value", ["float16", "bf16", "mixed_float16", 16, True])
def test_unknown_precision_is_refused(value):
    with pytest.raises(ValueError, match=r"mixed_precision=.*known: None, 'float32', 'bfloat16'"):
        tfc.CompileOptions(mixed_precision=value)


def test_float32_and_keras_names():
    assert tfc.CompileOptions(mixed_precision="float32").mixed_precision is None
    assert tfc.CompileOptions(mixed_precision="mixed_bfloat16").mixed_precision == "bfloat16"


def test_cli_inspect_shows_each_products_precision(tmp_path, capsys):
    model = tmp_path / "conv_dense.py"
    model.write_text(
        "import tfc as tf\n\n\n"
        "def signatures():\n"
        "    x = tf.placeholder(tf.float32, [None, 8, 8, 32], name='x')\n"
        "    y = tf.nn.conv2d(x, tf.constant(0.5, shape=[3, 3, 32, 64]), [1, 1, 1, 1], 'SAME')\n"
        "    z = tf.matmul(tf.reshape(y, [-1, 4096]), tf.constant(0.25, shape=[4096, 10]))\n"
        "    return {'predict': {'inputs': {'features': x}, 'outputs': {'z': z}}}\n"
    )
    mixed = "bfloat16 operands, float32 sums (mixed precision)"
    for flags, precision, cores in (
        ([], "float32", ""),
        (["--mixed-precision", "bfloat16"], mixed, ", bf16 tensor cores"),
    ):
        assert main(["inspect", str(model), "--signature", "predict", "--batch", "4", *flags]) == 0
        out = capsys.readouterr().out
        assert f"  Conv2D Conv2D: {precision}\n" in out and f"  MatMul MatMul: {precision}\n" in out
        assert f"  Conv2D Conv2D: implicit GEMM m=256 n=64 k=288{cores}\n" in out, out
    assert main(["inspect", str(model), "--mixed-precision", "float16"]) != 0
    assert "mixed_precision='float16'): unknown" in capsys.readouterr().err


MLP_STEPS, MLP_RATE = 80, 0.3


def _mlp_task() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A fixed synthetic task for an MLP 20 -> 64 -> 3: inputs, labels, initial (w1, b1, w2)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((128, 20)).astype("float32")
    labels = np.argmax(x @ rng.standard_normal((20, 3)), axis=1).astype("int32")
    w1 = (rng.standard_normal((20, 64)) * 0.3).astype("float32")
    w2 = (rng.standard_normal((64, 3)) * 0.3).astype("float32")
    return x, labels, [w1, np.zeros(64, "float32"), w2]


def _exact(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64)


def _train_mlp_numpy(rounding=_exact, steps: int = MLP_STEPS) -> list[float]:
    """The losses of SGD on the task in float64 (each before its step's update), the operands
    of every product passed through `rounding` (bf16: as the kernels under mixed precision)."""
    x, labels, params = _mlp_task()
    x = x.astype(np.float64)
    w1, b1, w2 = (p.astype(np.float64) for p in params)
    r = lambda a: rounding(np.asarray(a, np.float32))  # noqa: E731  (float32 values, as stored)
    onehot = np.eye(3)[labels]
    losses = []
    for _ in range(steps):
        h = np.maximum(r(x) @ r(w1) + b1, 0)
        logits = r(h) @ r(w2)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        losses.append(float(-np.mean(np.sum(onehot * np.log(p), axis=1))))
        dlogits = (p - onehot) / len(x)
        dh = (r(dlogits) @ r(w2).T) * (h > 0)
        w2 = w2 - MLP_RATE * (r(h).T @ r(dlogits))
        w1, b1 = w1 - MLP_RATE * (r(x).T @ r(dh)), b1 - MLP_RATE * dh.sum(axis=0)
    return losses


def _mlp_graph() -> tuple:
    """The task's MLP: (graph, (x, labels) placeholders, (loss, train op, initializer, first
    weights), (x, labels) values)."""
    x, labels, (w1, b1, w2) = _mlp_task()
    graph = tfc.Graph()
    with graph.as_default():
        xt = tfc.placeholder(tfc.float32, x.shape)
        yt = tfc.placeholder(tfc.int32, labels.shape)
        v1, c1, v2 = tfc.Variable(w1), tfc.Variable(b1), tfc.Variable(w2)
        logits = tfc.matmul(tfc.nn.relu(tfc.matmul(xt, v1) + c1), v2)
        loss = tfc.reduce_mean(
            tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=yt, logits=logits)
        )
        train = tfc.train.GradientDescentOptimizer(MLP_RATE).minimize(loss)
        init = tfc.global_variables_initializer()
    return graph, (xt, yt), (loss, train, init, v1), (x, labels)


def test_fused_products_call_the_bfloat16_gemms():
    """With every pass, the training step's MatMuls sit in fusion groups (bias, ReLU, the
    updates): their GEMM calls are the bfloat16 ones on both targets (sources only, no build)."""
    graph, (xt, yt), (loss, train, _, _), (x, labels) = _mlp_graph()
    request = RunRequest(graph, [loss, train], {xt: x, yt: labels})
    gemms = {C: ("tfc_gemm_f32", "tfc_gemm_bf16_f32_ex("),
             CUDA: ("tfc_cuda_gemm_f32", "tfc_cuda_gemm_bf16_f32(")}  # fmt: skip
    for target, (fp32, bf16_gemm) in gemms.items():
        program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
        compiled = compile_program(program, pipeline(), target, mixed_precision="bfloat16")
        nodes = [compiled.graph.node(step.node) for step in compiled.lowered.steps]
        members = [m for node in nodes for m in node["attrs"].get("members", ())]
        assert sum(m.kind == "matmul" for m in members) >= 2, target.name
        assert bf16_gemm in compiled.source and fp32 not in compiled.source, target.name


def test_mlp_trains_to_float32s_loss():
    """fp32 master weights and updates, bfloat16 products (fused with their bias, ReLU and
    updates by the default passes): the first steps' losses are NumPy's with the products'
    operands rounded, and the loss falls as full precision's does (NumPy, float64)."""
    graph, (xt, yt), (loss, train, init, v1), (x, labels) = _mlp_graph()
    with tfc.Session(graph=graph, config=tfc.CompileOptions(mixed_precision="bfloat16")) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], {xt: x, yt: labels})[0] for _ in range(MLP_STEPS)]
        weights = sess.run(v1)
    exact = _train_mlp_numpy()
    assert exact[-1] < 0.3 * exact[0]
    np.testing.assert_allclose(losses[:4], _train_mlp_numpy(bf16, steps=4), rtol=2e-6)
    assert losses[0] == pytest.approx(exact[0], rel=1e-2)
    assert losses[0] != pytest.approx(exact[0], rel=1e-5)  # bfloat16's rounding shows
    assert losses[-1] == pytest.approx(exact[-1], rel=0.1, abs=0.01)
    assert weights.dtype == np.float32  # the master weights


def test_only_float32_products_round():
    """A float16 product (run in float32 kernels) and a float64 one keep their precision; the
    lowering alone says so (no build)."""
    graph, feeds, fetches = tfc.Graph(), {}, []
    with graph.as_default():
        for dtype, name in ((tfc.float16, "half"), (tfc.float64, "double"), (tfc.float32, "f")):
            a, b = tfc.placeholder(dtype, [4, 8]), tfc.placeholder(dtype, [8, 3])
            feeds.update({a: np.ones((4, 8), dtype.as_numpy_dtype), b: np.ones((8, 3))})
            fetches.append(tfc.matmul(a, b, name=name))
    request = RunRequest(graph, fetches, feeds)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    lowered = compile_program(program, pipeline([]), mixed_precision="bfloat16").lowered
    precisions = {node: precision for node, _, precision in product_precisions(lowered.steps)}
    assert precisions == {
        "half": "float32",  # its kernels' dtype: the 16-bit floats widened
        "double": "float64",
        "f": "bfloat16 operands, float32 sums (mixed precision)",
    }


def test_folded_products_round_as_their_kernels():
    """The fold pass evaluates a product of constants with the op's NumPy reference, which
    rounds the operands as the kernel would under mixed precision (no build needed)."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 300)), rng.standard_normal((300, 3))
    x, f = rng.standard_normal((1, 5, 5, 3)), rng.standard_normal((3, 3, 3, 4))
    a, b, x, f = (v.astype("float32") for v in (a, b, x, f))
    graph = tfc.Graph()
    with graph.as_default():
        product = tfc.matmul(tfc.constant(a), tfc.constant(b), name="product")
        conv = tfc.nn.conv2d(tfc.constant(x), tfc.constant(f), [1, 1, 1, 1], "SAME", name="conv")
    request = RunRequest(graph, [product, conv], {})
    for mixed, rounding in ((None, np.float64), ("bfloat16", bf16)):
        program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
        folded = compile_program(program, pipeline(), mixed_precision=mixed).graph
        assert folded.node("product")["op"] == "Const" and folded.node("conv")["op"] == "Const"
        expected = rounding(a) @ rounding(b)
        np.testing.assert_allclose(folded.node("product")["attrs"]["value"], expected, rtol=1e-5)
        expected = conv2d_np(rounding(x), rounding(f), (1, 1), "SAME")
        np.testing.assert_allclose(folded.node("conv")["attrs"]["value"], expected, rtol=1e-5)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_cuda_training_steps_follow_numpys_bfloat16_sgd(cuda_device, monkeypatch):
    """The MLP's steps on the GPU (fused: the groups' GEMMs on tensor cores) give NumPy's
    losses with the products' operands rounded, as the host does."""
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, (xt, yt), (loss, train, init, _), (x, labels) = _mlp_graph()
    with tfc.Session(graph=graph, config=tfc.CompileOptions(mixed_precision="bfloat16")) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], {xt: x, yt: labels})[0] for _ in range(4)]
        assert all(program.on_device for program in sess._programs.values())
    np.testing.assert_allclose(losses, _train_mlp_numpy(bf16, steps=4), rtol=2e-6)
