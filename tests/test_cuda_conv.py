"""The CUDA target's convolution and pooling kernels (templates/cuda/kernels/conv2d_*.cu.j2: the
direct kernel of each op kind and the implicit GEMM; the pool kernels).

On a GPU (`cuda` marker) and under CUDA device emulation (TFC_CUDA=emulate: the program a GPU
session compiles, built by the host C++ compiler, every kernel launch run on the CPU): the
forward convolution and both gradients on every shape of test_ops_conv and on wider ones (the
implicit GEMM with partial tiles), float32 and float64, with the C algorithm forced both ways
on some shapes, and the pool kernels, against NumPy; each dtype's cases are one program (a
build costs more than its runs). Without a GPU the same programs also compile with nvcc,
warnings as errors.
"""

from __future__ import annotations

import os
import shutil
from functools import cache

import numpy as np
import pytest
from cuda_devices import DEVICES
from test_cuda import cuda_source
from test_ops_conv import (
    CONV_TRIO,
    CONVS,
    POOLS,
    F,
    avg_pool_grad_np,
    avg_pool_np,
    conv2d_filter_grad_np,
    conv2d_input_grad_np,
    conv2d_np,
    conv_trio,
    conv_trio_np,
    max_pool_grad_grad_np,
    max_pool_grad_np,
    max_pool_np,
    out_shape,
    tol,
)

import tfc
from tfc.backend.cuda import compile_cuda
from tfc.codegen.cuda import conv_form, tensor_cores
from tfc.codegen.targets import CUDA_TF32
from tfc.ops.registry import apply_op

NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
CONV_OPS = CONV_TRIO
POOL_OPS = ("MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad", "MaxPoolGradGrad")

# wider than test_ops_conv's: the forward (or the input gradient) runs as the implicit GEMM
# (partial tiles of pixels, channels and taps on every side)
WIDE = {
    "gemm-partial-tiles": ((2, 9, 7, 13), (3, 3, 13, 70), (1, 1), "SAME", (2, 2)),
    "gemm-s2": ((3, 10, 10, 16), (2, 2, 16, 64), (2, 2), "VALID", (1, 1)),
    "gemm-input-same": ((2, 8, 9, 40), (3, 2, 40, 24), (1, 1), "SAME", (2, 1)),
    "gemm-input-valid": ((1, 6, 7, 36), (3, 3, 36, 8), (1, 1), "VALID", (1, 2)),
    # 64 pixels: a filter gradient's GEMM in one chunk
    "gemm-filter-one-chunk": ((1, 8, 8, 8), (3, 3, 8, 32), (1, 1), "SAME", (1, 1)),
    # strided input gradients: a GEMM per stride phase (phases without taps: zeros)
    "gemm-input-s2-same": ((2, 9, 8, 32), (3, 3, 32, 16), (2, 2), "SAME", (1, 1)),
    "gemm-input-s3-valid": ((1, 10, 11, 33), (4, 5, 33, 24), (3, 3), "VALID", (1, 1)),
    "gemm-input-s2x1-same": ((2, 7, 6, 40), (3, 2, 40, 32), (2, 1), "SAME", (1, 1)),
    "gemm-input-1x1-s2": ((2, 7, 7, 32), (1, 1, 32, 64), (2, 2), "SAME", (1, 1)),
    "gemm-input-k2-s3": ((1, 8, 8, 32), (2, 2, 32, 64), (3, 3), "VALID", (1, 1)),
}
SHAPES = {**CONVS, **WIDE}
# shapes also run with the C algorithm forced (`_algorithm`): the CUDA kernels take only the
# geometry from the C kernel's plan, whichever tfc_conv.h variant (and scratch) it names
FORCED = ("rect-kernel-strides", "wide-channels-s2", "gemm-partial-tiles", "gemm-input-same")
# the tfc_conv.h variants (ConvPlan.kernel) the cases reach, per op kind
C_VARIANTS = {"forward": {"direct", "im2col", "columns"}, "input": {"direct", "rows", "im2col"},
              "filter": {"direct", "im2col"}}  # fmt: skip


@cache
def conv_program(dtype: str) -> tuple[tfc.Graph, dict, list[tuple]]:
    """One graph holding the three conv ops of every shape of SHAPES (and of FORCED with each
    C algorithm forced) in `dtype`: (graph, feeds, [(what, tensor, NumPy result, (rtol, atol))])."""
    rng = np.random.default_rng(4242 + F.index(dtype))
    graph, feeds, cases = tfc.Graph(), {}, []
    runs = [(name, None) for name in SHAPES]
    runs += [(name, algorithm) for name in FORCED for algorithm in ("direct", "im2col")]
    with graph.as_default():
        for name, algorithm in runs:
            xs, fs, st, pad, dil = SHAPES[name]
            x = rng.standard_normal(xs).astype(dtype)
            f = rng.standard_normal(fs).astype(dtype)
            dy = rng.standard_normal(out_shape(xs, fs[:2], st, pad, fs[3], dil)).astype(dtype)
            attrs = {"strides": [1, *st, 1], "padding": pad, "dilations": [1, *dil, 1]}
            if algorithm is not None:
                attrs["_algorithm"] = algorithm
            xt, ft, dyt = (tfc.placeholder(v.dtype, v.shape) for v in (x, f, dy))
            feeds.update({xt: x, ft: f, dyt: dy})
            sizes = [tfc.constant(list(xs)), tfc.constant(list(fs))]
            what = f"{name} {dtype} {algorithm or 'auto'}"
            cases += [
                (f"Conv2D {what}", apply_op("Conv2D", [xt, ft], attrs).outputs[0],
                 conv2d_np(x, f, st, pad, dil), tol(dtype, fs[0] * fs[1] * fs[2])),
                (f"Conv2DBackpropInput {what}",
                 apply_op("Conv2DBackpropInput", [sizes[0], ft, dyt], attrs).outputs[0],
                 conv2d_input_grad_np(xs, f, dy, st, pad, dil), tol(dtype, fs[0] * fs[1] * fs[3])),
                (f"Conv2DBackpropFilter {what}",
                 apply_op("Conv2DBackpropFilter", [xt, sizes[1], dyt], attrs).outputs[0],
                 conv2d_filter_grad_np(x, fs, dy, st, pad, dil), tol(dtype, dy.size // fs[3])),
            ]  # fmt: skip
    return graph, feeds, cases


def _assert_every_kernel_form_runs(lowered) -> None:
    """The conv steps of `lowered` (the program a session ran) hold each op kind as the direct
    kernel and as the implicit GEMM, a filter gradient with its pixel sum split into chunks and
    one without, strided input gradients as GEMMs per stride phase, and every tfc_conv.h
    variant the C plan can name."""
    forms: dict[str, set] = {}
    variants: dict[str, set] = {}
    phased = 0
    for step in lowered.steps:
        if step.op in CONV_OPS:
            spec = step.kernels[0].kernel.spec
            form = conv_form(spec)
            phased += form.phases > 1
            forms.setdefault(spec.kind, set()).add((form.gemm, form.chunks > 1))
            variants.setdefault(spec.kind, set()).add(spec.plan.kernel)
    assert variants == C_VARIANTS
    for kind, seen in forms.items():
        assert {gemm for gemm, _ in seen} == {False, True}, kind
    assert {chunked for _, chunked in forms["filter"]} == {False, True}
    assert phased >= 5  # every strided input gradient of WIDE


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
@pytest.mark.parametrize("dtype", F)
def test_conv_ops_match_numpy(dtype, cuda_device, monkeypatch):
    """Every case's value, and the same bits on a second run (chunked sums merge in order)."""
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, feeds, cases = conv_program(dtype)
    tensors = [c[1] for c in cases]
    with tfc.Session(graph=graph, config=tfc.CompileOptions(passes=[])) as sess:
        got = sess.run(tensors, feed_dict=feeds)
        again = sess.run(tensors, feed_dict=feeds)
        (program,) = sess._programs.values()
    assert program.on_device
    _assert_every_kernel_form_runs(program.lowered)
    for (what, _, expected, (rtol, atol)), value, repeat in zip(cases, got, again):
        assert value.dtype == expected.dtype and value.shape == expected.shape, what
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=what)
        np.testing.assert_array_equal(repeat, value, err_msg=f"{what}: a second run")


def tf32(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32 as the tensor cores' operands are (cvt.rna: 10 mantissa
    bits, ties away from zero)."""
    bits = a.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


@cache
def tf32_program() -> tuple[tfc.Graph, dict, list[tuple]]:
    """The three conv ops of every WIDE shape in float32: (graph, feeds, [(what, tensor, NumPy
    result of the exact inputs, of the inputs rounded to TF32, (rtol, atol))])."""
    rng = np.random.default_rng(4545)
    graph, feeds, cases = tfc.Graph(), {}, []
    with graph.as_default():
        for name, (xs, fs, st, pad, dil) in WIDE.items():
            fed, tensors, (x, f, dy), terms = conv_trio(rng, xs, fs, st, pad, dil)
            feeds.update(fed)
            exact = conv_trio_np(x, f, dy, st, pad, dil)
            rounded = conv_trio_np(tf32(x), tf32(f), tf32(dy), st, pad, dil)
            for op, tensor, e, r, n in zip(CONV_OPS, tensors, exact, rounded, terms):
                cases.append((f"{op} {name}", tensor, e, r, tol("float32", n)))
    return graph, feeds, cases


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_tf32_convolutions_multiply_rounded_operands(cuda_device, monkeypatch):
    """CompileOptions(allow_tf32=True): the float32 GEMMs in one chunk run on tensor cores
    (wmma; emulated: runtime/include/tfc_cuda_emu_wmma.h) and give the fp32 sums of the
    operands rounded to TF32, which differ from the exact operands' beyond fp32's tolerance;
    the other forms keep the fp32 kernels' results."""
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, feeds, cases = tf32_program()
    options = tfc.CompileOptions(passes=[], allow_tf32=True)
    with tfc.Session(graph=graph, config=options) as sess:
        got = sess.run([c[1] for c in cases], feed_dict=feeds)
        (program,) = sess._programs.values()
    on_cores = {
        step.node: (step.op, conv_form(spec).phases > 1)
        for step in program.lowered.steps
        if step.op in CONV_OPS
        and tensor_cores(spec := step.kernels[0].kernel.spec, conv_form(spec), True)
    }
    assert set(on_cores.values()) == {
        ("Conv2D", False), ("Conv2DBackpropInput", False), ("Conv2DBackpropInput", True),
        ("Conv2DBackpropFilter", False),
    }, on_cores  # fmt: skip
    coarser = 0
    for (what, tensor, exact, rounded, (rtol, atol)), value in zip(cases, got):
        expected = rounded if tensor.op.name in on_cores else exact
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=what)
        coarser += not np.allclose(value, exact, rtol=rtol, atol=atol)
    assert coarser >= len(on_cores) // 2  # TF32's rounding shows


@needs_nvcc
def test_tf32_program_compiles_for_sm_90():
    """The wmma kernels as nvcc builds them for the H100/H200 (and sm_80), warnings as errors."""
    graph, feeds, cases = tf32_program()
    source, ops = cuda_source(graph, [c[1] for c in cases], feeds, "tf32", target=CUDA_TF32)
    assert "wmma::mma_sync" in source and ops >= set(CONV_OPS)
    assert compile_cuda(source, name="tf32", cuda_arch="sm_80,sm_90", output="ptx").stat().st_size


@cache
def pool_program() -> tuple[tfc.Graph, dict, list[tuple]]:
    """One graph holding the five pool ops on every shape of POOLS (float32 and float64
    alternating): (graph, feeds, [(what, tensor, NumPy result, (rtol, atol))])."""
    rng = np.random.default_rng(4343)
    graph, feeds, cases = tfc.Graph(), {}, []
    with graph.as_default():
        for k, (name, (xs, ks, st, pad)) in enumerate(POOLS.items()):
            dtype = F[k % 2]
            x = rng.standard_normal(xs).astype(dtype)
            ties = rng.integers(-2, 3, xs).astype(dtype)  # equal maxima: the first one wins
            dy = rng.standard_normal(out_shape(xs, ks, st, pad, xs[3])).astype(dtype)
            g = rng.standard_normal(xs).astype(dtype)
            attrs = {"ksize": [1, *ks, 1], "strides": [1, *st, 1], "padding": pad}
            xt, tt, dyt, gt = (tfc.placeholder(v.dtype, v.shape) for v in (x, ties, dy, g))
            feeds.update({xt: x, tt: ties, dyt: dy, gt: g})
            terms = ks[0] * ks[1]
            what = f"{name} {dtype}"
            cases += [
                (f"MaxPool {what}", apply_op("MaxPool", [tt], attrs).outputs[0],
                 max_pool_np(ties, ks, st, pad), (0, 0)),
                (f"MaxPoolGrad {what}", apply_op("MaxPoolGrad", [tt, dyt, dyt], attrs).outputs[0],
                 max_pool_grad_np(ties, dy, ks, st, pad), tol(dtype, 4)),
                (f"AvgPool {what}", apply_op("AvgPool", [xt], attrs).outputs[0],
                 avg_pool_np(x, ks, st, pad), tol(dtype, terms)),
                (f"AvgPoolGrad {what}",
                 apply_op("AvgPoolGrad", [tfc.constant(list(xs)), dyt], attrs).outputs[0],
                 avg_pool_grad_np(xs, dy, ks, st, pad), tol(dtype, terms)),
                (f"MaxPoolGradGrad {what}",
                 apply_op("MaxPoolGradGrad", [tt, dyt, gt], attrs).outputs[0],
                 max_pool_grad_grad_np(ties, g, ks, st, pad), (0, 0)),
            ]  # fmt: skip
        cases += _explicit_max_pool_cases(rng, feeds)
    return graph, feeds, cases


def _explicit_max_pool_cases(rng, feeds) -> list[tuple]:
    """MaxPool and its gradients with explicit padding (ONNX's pads, uneven on purpose): the
    VALID pool of the image padded with -inf, ties so that the first maximum must win."""
    xs, ks, st, pads = (2, 7, 6, 3), (3, 2), (2, 1), ((0, 2), (1, 0))
    attrs = {"ksize": [1, *ks, 1], "strides": [1, *st, 1], "padding": "EXPLICIT",
             "explicit_paddings": [0, 0, *pads[0], *pads[1], 0, 0]}  # fmt: skip
    ties = rng.integers(-2, 3, xs).astype(np.float32)
    padded = np.pad(ties, [(0, 0), *pads, (0, 0)], constant_values=-np.inf)
    dy = rng.standard_normal(out_shape(padded.shape, ks, st, "VALID", xs[3])).astype(np.float32)
    g = rng.standard_normal(xs).astype(np.float32)
    tt, dyt, gt = (tfc.placeholder(v.dtype, v.shape) for v in (ties, dy, g))
    feeds.update({tt: ties, dyt: dy, gt: g})
    pooled = apply_op("MaxPool", [tt], attrs).outputs[0]
    inside = (slice(None), slice(pads[0][0], pads[0][0] + xs[1]))
    inside += (slice(pads[1][0], pads[1][0] + xs[2]),)
    g_padded = np.pad(g, [(0, 0), *pads, (0, 0)])
    return [
        ("MaxPool explicit", pooled, max_pool_np(padded, ks, st, "VALID"), (0, 0)),
        ("MaxPoolGrad explicit", apply_op("MaxPoolGrad", [tt, pooled, dyt], attrs).outputs[0],
         max_pool_grad_np(padded, dy, ks, st, "VALID")[inside], tol("float32", 4)),
        ("MaxPoolGradGrad explicit",
         apply_op("MaxPoolGradGrad", [tt, pooled, gt], attrs).outputs[0],
         max_pool_grad_grad_np(padded, g_padded, ks, st, "VALID"), (0, 0)),
    ]  # fmt: skip


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_pool_ops_match_numpy(cuda_device, monkeypatch):
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, feeds, cases = pool_program()
    with tfc.Session(graph=graph, config=tfc.CompileOptions(passes=[])) as sess:
        got = sess.run([c[1] for c in cases], feed_dict=feeds)
        (program,) = sess._programs.values()
    assert program.on_device
    templates = {s.kernels[0].kernel.template for s in program.lowered.steps if s.op in POOL_OPS}
    assert templates == {"max_pool", "max_pool_grad", "avg_pool", "avg_pool_grad",
                         "max_pool_grad_grad"}  # fmt: skip
    for (what, _, expected, (rtol, atol)), value in zip(cases, got):
        assert value.dtype == expected.dtype and value.shape == expected.shape, what
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=what)


@needs_nvcc
def test_conv_and_pool_programs_compile_with_nvcc_without_warnings():
    """The device code of the programs above (the implicit GEMM's only nvcc build without a
    GPU: test_ops_conv's shapes are too narrow for it)."""
    programs = {f"conv_{dtype}": conv_program(dtype) for dtype in F}
    programs["pool"] = pool_program()
    for name, (graph, feeds, cases) in programs.items():
        source, ops = cuda_source(graph, [c[1] for c in cases], feeds, name)
        assert ops >= set(CONV_OPS) or ops >= set(POOL_OPS), name
        # the front end's diagnostics are the check (test_cuda's op batches do the same)
        ptx = compile_cuda(
            source, name=name, cuda_arch="sm_80", output="ptx", optimize_device=False
        )
        assert ptx.stat().st_size
