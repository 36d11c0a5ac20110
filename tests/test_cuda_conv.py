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

import numpy as np
import pytest
from test_ops_conv import (
    CONVS,
    conv2d_filter_grad_np,
    conv2d_input_grad_np,
    conv2d_np,
    out_shape,
    tol,
)

import tfc
from tfc.backend_c import runtime_dir
from tfc.backend_cuda import build_flags, gpu_status, nvcc
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
RNG = np.random.default_rng(4242)


def _case(name, dtype, algorithm=None):
    """A graph of the three conv ops of CONVS[name], its feeds, and the NumPy results."""
    xs, fs, st, pad, dil = CONVS[name]
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


def _conv_kernels(graph, fetches, feeds):
    """{op type: its Kernel} of the program a GPU session compiles for `fetches`."""
    request = RunRequest(graph, fetches, feeds)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    lowered = lower_program(run_passes(program, pipeline([])), name="conv")
    return {s.op: s.kernels[0].kernel for s in lowered.steps if s.op in CONV_OPS}


def _harness(kernels: list[tuple[str, object]]) -> str:
    """A host program running each kernel's emulation on the files <dir>/<name>.x0, .x1."""
    parts = ["#include <stdlib.h>", '#include "tfc_cuda.h"', ""]
    calls = []
    for name, kernel in kernels:
        parts.append(render_kernel(kernel, CUDA, name=name))
        t = kernel.params[0].ctype
        scratch = ", NULL" if len(kernel.params) > 3 else ""
        calls.append(
            f"    {{\n        (void)&{name};\n        size_t n;\n"
            f'        {t} *x0 = ({t} *)load(dir, "{name}.x0", &n);\n'
            f'        {t} *x1 = ({t} *)load(dir, "{name}.x1", &n);\n'
            f'        {t} *y = ({t} *)load(dir, "{name}.y", &n);\n'
            f"        {name}_emulate(y, x0, x1{scratch});\n"
            f'        save(dir, "{name}.y", y, n);\n'
            f"        free(x0), free(x1), free(y);\n    }}"
        )
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


CASES = [(name, "float32", None) for name in CONVS] + [
    ("dilated-valid", "float64", None),
    ("rect-kernel-strides", "float64", "im2col"),
    ("wide-channels-s2", "float32", "im2col"),
]


@needs_nvcc
def test_conv_kernels_emulated_on_the_host_match_numpy(tmp_path):
    kernels, expected = [], {}
    for k, (name, dtype, algorithm) in enumerate(CASES):
        graph, fetches, feeds, want = _case(name, dtype, algorithm)
        for op, kernel in _conv_kernels(graph, fetches, feeds).items():
            label = f"c{k}_{op}"
            (a, b), result, terms = want[op]
            a.tofile(tmp_path / f"{label}.x0")
            b.tofile(tmp_path / f"{label}.x1")
            np.full(result.shape, np.nan, result.dtype).tofile(tmp_path / f"{label}.y")
            kernels.append((label, kernel))
            expected[label] = (result, tol(dtype, terms), f"{op} {name} {dtype} {algorithm}")
    kinds = {cuda_kernel_data(kernel)["kind"] for _, kernel in kernels}
    chunked = [cuda_kernel_data(k)["chunks"] > 1 for n, k in kernels if n.endswith("Filter")]
    assert kinds == {"forward", "input", "filter"} and any(chunked) and not all(chunked)
    source = tmp_path / "harness.cu"
    source.write_text(_harness(kernels))
    exe = tmp_path / "harness"
    flags = [f for f in build_flags("sm_80") if f != "-DTFC_NO_CUBLAS"]
    flags += ["-DTFC_NO_CUBLAS", "-DTFC_CUDA_EMULATE", "-I", str(runtime_dir() / "include")]
    cmd = [nvcc(), *flags, "-o", str(exe), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr[-4000:]
    run = subprocess.run([str(exe), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for label, (result, (rtol, atol), what) in expected.items():
        got = np.fromfile(tmp_path / f"{label}.y", result.dtype).reshape(result.shape)
        np.testing.assert_allclose(got, result, rtol=rtol, atol=atol, err_msg=what)


# -- on a GPU ---------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.skipif(not GPU_OK, reason=f"no GPU to run CUDA programs on: {GPU_WHY}")
@pytest.mark.parametrize("name", ["rect-kernel-strides", "dilated-valid", "lenet-c3"])
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
