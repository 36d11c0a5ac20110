"""The CUDA target's convolution kernels (templates/cuda/kernels/conv2d.cu.j2).

Without a GPU: the kernels of every convolution shape of test_ops_conv are compiled by nvcc
into a host program (TFC_CUDA_EMULATE) that runs each GPU thread's work in thread order, with
the same per-thread functions the device runs, and the results are checked against NumPy.
On a GPU (`cuda` marker): the forward and both gradients, and a LeNet-sized training graph.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import numpy as np
import pytest
from test_ops_conv import (
    CONVS,
    POOLS,
    avg_pool_grad_np,
    avg_pool_np,
    conv2d_filter_grad_np,
    conv2d_input_grad_np,
    conv2d_np,
    max_pool_grad_grad_np,
    max_pool_grad_np,
    max_pool_np,
    out_shape,
    tol,
)

import tfc
from tfc.backend_c import runtime_dir
from tfc.backend_cuda import COMMON_FLAGS, gpu_status, nvcc
from tfc.kernels_cuda import cuda_kernel_data
from tfc.lower import lower_program
from tfc.ops.registry import apply_op
from tfc.passes import pipeline, run_passes
from tfc.render import render_kernel
from tfc.signature import RunRequest, make_program_graph
from tfc.targets import CUDA

NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
GPU_OK, GPU_WHY = gpu_status()
CONV_OPS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")
POOL_OPS = ("MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad", "MaxPoolGradGrad")
RNG = np.random.default_rng(4242)


# wider than test_ops_conv's: the forward (or the input gradient) runs as the implicit GEMM
# (partial tiles of pixels, channels and taps on every side)
WIDE = {
    "gemm-partial-tiles": ((2, 9, 7, 13), (3, 3, 13, 70), (1, 1), "SAME", (2, 2)),
    "gemm-s2": ((3, 10, 10, 16), (2, 2, 16, 64), (2, 2), "VALID", (1, 1)),
    "gemm-input-same": ((2, 8, 9, 40), (3, 2, 40, 24), (1, 1), "SAME", (2, 1)),
    "gemm-input-valid": ((1, 6, 7, 36), (3, 3, 36, 8), (1, 1), "VALID", (1, 2)),
}
SHAPES = {**CONVS, **WIDE}


def _case(name, dtype, algorithm=None):
    """A graph of the three conv ops of SHAPES[name], its feeds, and the NumPy results."""
    xs, fs, st, pad, dil = SHAPES[name]
    x = RNG.standard_normal(xs).astype(dtype)
    f = RNG.standard_normal(fs).astype(dtype)
    dy = RNG.standard_normal(out_shape(xs, fs[:2], st, pad, fs[3], dil)).astype(dtype)
    attrs = {"strides": [1, *st, 1], "padding": pad, "dilations": [1, *dil, 1]}
    if algorithm is not None:
        attrs["_algorithm"] = algorithm
    graph = tfc.Graph()
    with graph.as_default():
        xt, ft, dyt = (tfc.placeholder(v.dtype, v.shape) for v in (x, f, dy))
        fetches = [
            apply_op("Conv2D", [xt, ft], attrs).outputs[0],
            apply_op("Conv2DBackpropInput", [tfc.constant(list(xs)), ft, dyt], attrs).outputs[0],
            apply_op("Conv2DBackpropFilter", [xt, tfc.constant(list(fs)), dyt], attrs).outputs[0],
        ]
    feeds = {xt: x, ft: f, dyt: dy}
    want = {
        "Conv2D": ((x, f), conv2d_np(x, f, st, pad, dil), fs[0] * fs[1] * fs[2]),
        "Conv2DBackpropInput": ((f, dy), conv2d_input_grad_np(xs, f, dy, st, pad, dil),
                                fs[0] * fs[1] * fs[3]),
        "Conv2DBackpropFilter": ((x, dy), conv2d_filter_grad_np(x, fs, dy, st, pad, dil),
                                 dy.size // fs[3]),
    }  # fmt: skip
    return graph, fetches, feeds, want


def _kernels(graph, fetches, feeds, ops):
    """{op type: its Kernel} of the ops of type `ops` in the program a GPU session compiles."""
    request = RunRequest(graph, fetches, feeds)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    lowered = lower_program(run_passes(program, pipeline([])), name="conv")
    return {s.op: s.kernels[0].kernel for s in lowered.steps if s.op in ops}


def _harness(kernels: list[tuple[str, Any]]) -> str:
    """A host program running each kernel's emulation on the files <dir>/<name>.x0 (.x1), and
    writing its output over <dir>/<name>.y (a scratch parameter gets NULL: it is not read)."""
    parts = ["#include <stdlib.h>", '#include "tfc_cuda.h"', ""]
    calls = []
    for name, kernel in kernels:
        parts.append(render_kernel(kernel, CUDA, name=name))
        t = kernel.params[0].ctype
        lines = [f"(void)&{name};", "size_t n, n_y;"]
        args = []
        for p in kernel.params:
            if p.name in ("y", "x0", "x1"):
                size = "&n_y" if p.name == "y" else "&n"
                lines.append(f'{t} *{p.name} = ({t} *)load(dir, "{name}.{p.name}", {size});')
            args.append(p.name if p.name in ("y", "x0", "x1") else "NULL")
        lines.append(f"{name}_emulate({', '.join(args)});")
        lines.append(f'save(dir, "{name}.y", y, n_y);')
        lines += [f"free({p.name});" for p in kernel.params if p.name in ("y", "x0", "x1")]
        calls.append("    {\n" + "".join(f"        {line}\n" for line in lines) + "    }")
    parts.append(r"""
static FILE *open_in(const char *dir, const char *file, const char *mode) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, mode);
    if (f == NULL) { fprintf(stderr, "cannot open %s\n", path); exit(2); }
    return f;
}
static void *load(const char *dir, const char *file, size_t *bytes) {
    FILE *f = open_in(dir, file, "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)n + 1);
    if (p == NULL || fread(p, 1, (size_t)n, f) != (size_t)n) exit(3);
    fclose(f);
    *bytes = (size_t)n;
    return p;
}
static void save(const char *dir, const char *file, const void *p, size_t bytes) {
    FILE *f = open_in(dir, file, "wb");
    if (fwrite(p, 1, bytes, f) != bytes) exit(4);
    fclose(f);
}
int main(int argc, char **argv) {
    if (argc != 2) return 1;
    const char *dir = argv[1];
""")
    parts += calls
    parts.append("    return 0;\n}\n")
    return "\n".join(parts)


def _emulate(tmp_path, cases: list[tuple]) -> None:
    """Run the kernels of `cases` ((label, kernel, inputs, expected, (rtol, atol), what)) on the
    host through their emulation, and check each output against its expected value."""
    for label, kernel, inputs, expected, _, _ in cases:
        assert len(kernel.params) >= len(inputs) + 1, label
        for k, value in enumerate(inputs):
            np.ascontiguousarray(value).tofile(tmp_path / f"{label}.x{k}")
        np.full(expected.shape, np.nan, expected.dtype).tofile(tmp_path / f"{label}.y")
    source = tmp_path / "harness.cu"
    source.write_text(_harness([(c[0], c[1]) for c in cases]))
    exe = tmp_path / "harness"
    # device code as PTX only (no machine code: the emulation runs the host side)
    flags = [*COMMON_FLAGS, "-gencode", "arch=compute_80,code=compute_80"]
    flags += ["-DTFC_NO_CUBLAS", "-DTFC_CUDA_EMULATE", "-I", str(runtime_dir() / "include")]
    proc = subprocess.run([nvcc(), *flags, "-o", str(exe), str(source)], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr[-4000:]
    run = subprocess.run([str(exe), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for label, _, _, expected, (rtol, atol), what in cases:
        got = np.fromfile(tmp_path / f"{label}.y", expected.dtype).reshape(expected.shape)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=what)


CASES = [(name, "float32", None) for name in CONVS] + [
    ("dilated-valid", "float64", None),
    ("rect-kernel-strides", "float64", "im2col"),
    ("wide-channels-s2", "float32", "im2col"),
    ("gemm-partial-tiles", "float32", None),
    ("gemm-partial-tiles", "float64", None),
    ("gemm-s2", "float32", None),
    ("gemm-input-same", "float32", None),
    ("gemm-input-valid", "float64", None),
]


@needs_nvcc
def test_conv_kernels_emulated_on_the_host_match_numpy(tmp_path):
    cases = []
    for k, (name, dtype, algorithm) in enumerate(CASES):
        graph, fetches, feeds, want = _case(name, dtype, algorithm)
        for op, kernel in _kernels(graph, fetches, feeds, CONV_OPS).items():
            inputs, expected, terms = want[op]
            what = f"{op} {name} {dtype} {algorithm}"
            cases.append((f"c{k}_{op}", kernel, inputs, expected, tol(dtype, terms), what))
    kinds = {cuda_kernel_data(c[1])["kind"] for c in cases}
    for op in ("_Conv2D", "_Conv2DBackpropInput", "_Conv2DBackpropFilter"):
        gemm = [cuda_kernel_data(c[1])["gemm"] for c in cases if c[0].endswith(op)]
        assert any(gemm) and not all(gemm), op
    assert kinds == {"forward", "input", "filter"}
    filters = [cuda_kernel_data(c[1]) for c in cases if c[0].endswith("Filter")]
    chunked = [d.get("chunks", d.get("gemm_chunks")) > 1 for d in filters]
    assert any(chunked) and not all(chunked)
    _emulate(tmp_path, cases)


@needs_nvcc
def test_pool_kernels_emulated_on_the_host_match_numpy(tmp_path):
    cases = []
    for k, (name, (xs, ks, st, pad)) in enumerate(POOLS.items()):
        dtype = "float64" if k % 3 == 2 else "float32"
        x = RNG.standard_normal(xs).astype(dtype)
        ties = RNG.integers(-2, 3, xs).astype(dtype)  # equal maxima: the first one wins
        dy = RNG.standard_normal(out_shape(xs, ks, st, pad, xs[3])).astype(dtype)
        g = RNG.standard_normal(xs).astype(dtype)
        attrs = {"ksize": [1, *ks, 1], "strides": [1, *st, 1], "padding": pad}
        graph = tfc.Graph()
        with graph.as_default():
            xt, tt, dyt, gt = (tfc.placeholder(v.dtype, v.shape) for v in (x, ties, dy, g))
            fetches = [
                apply_op("MaxPool", [tt], attrs).outputs[0],
                apply_op("MaxPoolGrad", [tt, dyt, dyt], attrs).outputs[0],
                apply_op("AvgPool", [xt], attrs).outputs[0],
                apply_op("AvgPoolGrad", [tfc.constant(list(xs)), dyt], attrs).outputs[0],
                apply_op("MaxPoolGradGrad", [tt, dyt, gt], attrs).outputs[0],
            ]
        feeds = {xt: x, tt: ties, dyt: dy, gt: g}
        terms = ks[0] * ks[1]
        want = {
            "MaxPool": ([ties], max_pool_np(ties, ks, st, pad), (0, 0)),
            "MaxPoolGrad": ([ties, dy], max_pool_grad_np(ties, dy, ks, st, pad), tol(dtype, 4)),
            "AvgPool": ([x], avg_pool_np(x, ks, st, pad), tol(dtype, terms)),
            "AvgPoolGrad": ([dy], avg_pool_grad_np(xs, dy, ks, st, pad), tol(dtype, terms)),
            "MaxPoolGradGrad": ([ties, g], max_pool_grad_grad_np(ties, g, ks, st, pad), (0, 0)),
        }
        for op, kernel in _kernels(graph, fetches, feeds, POOL_OPS).items():
            inputs, expected, tolerance = want[op]
            what = f"{op} {name} {dtype}"
            cases.append((f"p{k}_{op}", kernel, inputs, expected, tolerance, what))
    templates = {c[1].template for c in cases}
    assert templates == {"max_pool", "max_pool_grad", "avg_pool", "avg_pool_grad",
                         "max_pool_grad_grad"}  # fmt: skip
    _emulate(tmp_path, cases)


# -- on a GPU ---------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.skipif(not GPU_OK, reason=f"no GPU to run CUDA programs on: {GPU_WHY}")
@pytest.mark.parametrize(
    "name",
    ["rect-kernel-strides", "dilated-valid", "lenet-c3", "gemm-partial-tiles", "gemm-input-same"],
)
def test_conv_ops_on_gpu_match_numpy(name, monkeypatch):
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, fetches, feeds, want = _case(name, "float32")
    with tfc.Session(graph=graph, config=tfc.CompileOptions(passes=[])) as sess:
        got = sess.run(fetches, feed_dict=feeds)
        assert all(p.on_device for p in sess._programs.values())
    for op, value in zip(CONV_OPS, got):
        _, result, terms = want[op]
        rtol, atol = tol("float32", terms)
        np.testing.assert_allclose(value, result, rtol=rtol, atol=atol, err_msg=f"{op} {name}")


@pytest.mark.cuda
@pytest.mark.skipif(not GPU_OK, reason=f"no GPU to run CUDA programs on: {GPU_WHY}")
def test_conv_filter_gradient_on_gpu_is_deterministic(monkeypatch):
    """A large pixel sum split into chunks: the same bits every run."""
    monkeypatch.setenv("TFC_DEVICE", "gpu")
    graph, fetches, feeds, want = _case("lenet-c1", "float32")
    with tfc.Session(graph=graph, config=tfc.CompileOptions(passes=[])) as sess:
        first = sess.run(fetches[2], feed_dict=feeds)
        again = sess.run(fetches[2], feed_dict=feeds)
    np.testing.assert_array_equal(first, again)
    _, result, terms = want["Conv2DBackpropFilter"]
    np.testing.assert_allclose(first, result, *tol("float32", terms))
