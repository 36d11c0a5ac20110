"""Compiled distributed training with GPU workers (`tfc compile --cluster --target cuda`): the
worker step is a CUDA program, the ps programs stay C. On a GPU (`cuda` marker) and under device
emulation, a synchronous 1 ps + 2 workers cluster trains to the C cluster's weights and losses
(and, emulated, runs clean under ASan and UBSan); nvcc builds the cluster warning-free without a
GPU; worker ops placed on /job:worker/device:GPU:0 make the worker CUDA; what cannot be compiled
is refused naming it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_devices import DEVICES, GPU_OK
from test_cuda_emulated import _sanitizer_runtime
from test_cuda_executables import SANITIZE

import tfc as tf
from tfc.aot import ModelError
from tfc.aot import compile as tfc_compile
from tfc.aot.launch import Launcher
from tfc.io.checkpoint import read_safetensors

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "samples" / "digits_model.py"
B = 8  # per worker
# 20 steps: under emulation each worker step runs every GPU thread on the CPU (about 20 steps/s
# from -O0 objects on 2 cores), so the cluster trains in about a second; the weights have moved
STEPS, LOG_EVERY = 20, 10
TIMEOUT = 60
PROGRESS = re.compile(r"^\[worker:(\d)\] worker:\d: step (\d+)  loss (\S+)  \d+ examples/s$")
NVCC = shutil.which(os.environ.get("TFC_NVCC") or "nvcc")

sys.path.insert(0, str(ROOT / "samples"))
import digits_model  # noqa: E402


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The training rows, a cluster file, and the C-only cluster's checkpoint and progress."""
    tmp = tmp_path_factory.mktemp("dist_cuda")
    rows = tmp / "digits.npy"
    np.save(rows, digits_model.training_rows())
    cluster = tmp / "cluster.json"
    cluster.write_text(json.dumps({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"] * 2}))
    c_only = tfc_compile(MODEL, tmp / "c", batch=B, target="generic", cluster=cluster)
    return rows, cluster, _train(c_only.outdir, rows, tmp / "c_ckpt")


def _train(outdir: Path, rows: Path, ckpt: Path) -> tuple[dict, dict]:
    """Synchronous 1 ps + 2 workers for STEPS steps: the ps's checkpoint and every worker's
    progress lines {(worker, step): loss}."""
    args = ["--sync", "--data", str(rows), "--steps", str(STEPS), "--log-every", str(LOG_EVERY),
            "--save-every", "0", "--checkpoint-dir", str(ckpt), "--timeout-ms", "2000"]  # fmt: skip
    with open(os.devnull, "w") as devnull:
        launcher = Launcher(outdir, 1, 2, args, max_restarts=0, timeout=TIMEOUT, out=devnull)
        rc = launcher.run()
    assert rc == 0, "\n".join(launcher.lines[-30:])
    progress = {}
    for line in launcher.lines:
        m = PROGRESS.match(line)
        if m:
            progress[int(m[1]), int(m[2])] = float(m[3])
    tensors, _ = read_safetensors(ckpt / "ps-0" / f"model.ckpt-{STEPS}.safetensors")
    return tensors, progress


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_gpu_workers_train_as_the_c_cluster(digits, tmp_path, cuda_device):
    rows, cluster, (want, want_progress) = digits
    arch = None if GPU_OK or cuda_device == "emulated" else "sm_80"
    model = tfc_compile(
        MODEL, tmp_path / "out", batch=B, target="cuda", cluster=cluster, cuda_arch=arch,
        cuda_emulate=cuda_device == "emulated",
    )  # fmt: skip
    assert model.cuda_emulated == (cuda_device == "emulated")
    assert sorted(p.name for p in model.outdir.glob("program_*")) == [
        "program_ps0_apply.c", "program_ps0_init.c", "program_ps0_serve.c", "program_worker.cu",
    ]  # fmt: skip
    got, progress = _train(model.outdir, rows, tmp_path / "ckpt")
    assert set(got) == set(want) and int(got["global_step"]) == STEPS
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
    # the weights moved in those steps: Adam's slots left zero, the kernel its initial value
    assert np.abs(got["hidden1/kernel/Adam"]).max() > 1e-4
    # both workers logged their progress, with the C workers' losses
    steps = range(LOG_EVERY, STEPS + 1, LOG_EVERY)
    assert set(progress) == {(w, s) for w in (0, 1) for s in steps}
    for key, loss in progress.items():
        assert loss == pytest.approx(want_progress[key], rel=1e-4, abs=1e-5), key


@pytest.mark.skipif(_sanitizer_runtime() is None, reason="the C++ compiler has no libasan")
def test_emulated_gpu_workers_run_clean_under_sanitizers(digits, tmp_path, monkeypatch):
    """ASan and UBSan in the worker's CUDA program (its copies between the transport's host
    buffers and the device, every kernel's indexing): the cluster trains clean, as the C one."""
    rows, cluster, (want, _) = digits
    monkeypatch.setenv("TFC_CUDA_EMU_FLAGS", SANITIZE)
    # no leak check: a program's device copies (arena, state) live until exit, as on a GPU
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=0")
    model = tfc_compile(MODEL, tmp_path / "out", batch=B, target="cuda", cluster=cluster,
                        cuda_emulate=True)  # fmt: skip
    assert "-fsanitize=address,undefined" in (model.outdir / "Makefile").read_text()
    got, _ = _train(model.outdir, rows, tmp_path / "ckpt")
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_nvcc_builds_the_cluster_without_a_gpu_and_without_warnings(digits, tmp_path):
    """tfc's build (-Werror all-warnings) and the Makefile's rebuild with nvcc, for sm_80."""
    _, cluster, _ = digits
    model = tfc_compile(
        MODEL, tmp_path / "out", batch=B, target="cuda", cluster=cluster, cuda_arch="sm_80",
        cuda_emulate=False,
    )  # fmt: skip
    assert model.train.exists() and not model.cuda_emulated
    make = subprocess.run(
        ["make", "-B", "-j2"], cwd=model.outdir, capture_output=True, text=True, timeout=300
    )
    assert make.returncode == 0, make.stderr
    assert "warning" not in make.stderr.lower(), make.stderr
    nvcc_lines = [line for line in make.stdout.splitlines() if line.startswith("nvcc ")]
    assert len(nvcc_lines) == 1 and "program_worker.cu" in nvcc_lines[0]
    assert "arch=compute_80,code=sm_80" in nvcc_lines[0]
    # the ps programs are C, built by the C compiler
    for role in ("init", "serve", "apply"):
        assert any(f"-c program_ps0_{role}.c " in line for line in make.stdout.splitlines())
    help_text = subprocess.run(
        [str(model.train), "--help"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert "--job ps|worker" in help_text.stdout + help_text.stderr


def _signatures_on(worker_device: str):
    """A linear model whose variables the compile's device setter puts on the ps and whose
    compute the model places on `worker_device`."""

    def signatures():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w = tf.Variable(tf.random_normal([4, 3]), name="W")
        with tf.device(worker_device):
            logits = tf.matmul(x, w)
            loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        return {"train": {"inputs": {"features": x, "labels": y}, "loss": loss,
                          "train_op": train}}  # fmt: skip

    return signatures


@pytest.mark.parametrize(
    "device, target, worker",
    [
        ("/device:GPU:0", "generic", "program_worker.cu"),
        ("/job:worker/device:GPU:0", "generic", "program_worker.cu"),
        ("/device:CPU:0", "cuda", "program_worker.cu"),
        ("/device:CPU:0", "generic", "program_worker.c"),
    ],
)
def test_worker_ops_placed_on_a_gpu_make_the_worker_cuda(digits, tmp_path, device, target, worker):
    _, cluster, _ = digits
    model = tfc_compile(
        _signatures_on(device), tmp_path / "out", target=target, cluster=cluster, build=False,
        cuda_emulate=worker.endswith(".cu"),
    )  # fmt: skip
    names = sorted(p.name for p in tmp_path.joinpath("out").glob("program_*"))
    assert names == sorted([worker, "program_ps0_apply.c", "program_ps0_init.c",
                            "program_ps0_serve.c"])  # fmt: skip
    assert model.plan.worker_on_gpu == worker.endswith(".cu")
    # one worker program: every tensor crosses between the worker and the ps, none between
    # the worker's CPU and its GPU
    assert model.plan.links and all((k.src == -1) != (k.dst == -1) for k in model.plan.links)
    makefile = tmp_path.joinpath("out", "Makefile").read_text()
    assert ("obj/%.o: %.cu" in makefile) == worker.endswith(".cu")


def test_recompiling_for_cpu_workers_removes_the_cuda_worker(digits, tmp_path):
    """make prefers a .c source to a .cu one: a stale program of the other target must go."""
    _, cluster, _ = digits
    tfc_compile(MODEL, tmp_path, batch=B, target="cuda", cluster=cluster, build=False,
                cuda_emulate=True)  # fmt: skip
    tfc_compile(MODEL, tmp_path, batch=B, target="generic", cluster=cluster, build=False)
    assert not (tmp_path / "program_worker.cu").exists()
    assert (tmp_path / "program_worker.c").exists()


@pytest.mark.parametrize(
    "device, target, emulate, error, message",
    [
        ("/job:worker/device:GPU:1", "cuda", True, ModelError,
         r"an op is placed on /job:worker/replica:0/task:0/device:GPU:1: .* CPU:0 or GPU:0"),
        ("/device:CPU:0", "generic", True, ValueError,
         r"CUDA device emulation needs a GPU worker \(target 'cuda'\)"),
    ],
)  # fmt: skip
def test_what_gpu_workers_cannot_do_is_refused(
    digits, tmp_path, device, target, emulate, error, message
):
    _, cluster, _ = digits
    with pytest.raises(error, match=message):
        tfc_compile(_signatures_on(device), tmp_path, target=target, cluster=cluster,
                    build=False, cuda_emulate=emulate)  # fmt: skip
