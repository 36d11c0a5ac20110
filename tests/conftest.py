"""Test set-up: verify graph invariants after every pass; keep compiled programs in a cache."""

import os

os.environ.setdefault("TFC_VERIFY", "1")

import pytest  # noqa: E402

import tfc  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_default_graph():
    """Each test starts with an empty default graph, as TF1 users get in a new process."""
    tfc.reset_default_graph()
    yield
    tfc.reset_default_graph()


@pytest.fixture
def quick_builds(monkeypatch):
    """Programs built at -O1 (TFC_CFLAGS), for tests whose subject is a graph pass, not gcc:
    with no FMA contraction in ISO C mode at either level and the GEMM's FMAs written as
    intrinsics, -O1 gives the numbers of -O3 bit for bit (checked on the sample models) and
    compiles 3-4x faster. Not for tests of generated code itself (aliasing and other undefined
    behaviour shows at -O3), nor where -O3 is what is measured."""
    monkeypatch.setenv("TFC_CFLAGS", f"{os.environ.get('TFC_CFLAGS', '')} -O1".strip())


@pytest.fixture(scope="session")
def sanitized_cache(tmp_path_factory):
    """One build cache (TFC_CACHE_DIR) for the sanitized Session programs of this test worker:
    their flag set's GEMM archive and precompiled header are built once, not once per test."""
    return tmp_path_factory.mktemp("sanitized-cache")


@pytest.fixture
def cuda_device(request, monkeypatch) -> str:
    """Selects the device of a test parametrized over cuda_devices.DEVICES: the GPU, or the CPU
    under CUDA device emulation (TFC_CUDA, read by the session's CUDA backend)."""
    device = request.param
    monkeypatch.setenv("TFC_CUDA", "emulate" if device == "emulated" else "gpu")
    return device


@pytest.fixture
def safetensors():
    """The safetensors package, the independent reader and writer checkpoints are checked
    against; an optional test dependency, so a test that takes it skips where it is missing."""
    pytest.importorskip("safetensors.numpy", reason="safetensors (pip install safetensors) missing")
    import safetensors

    return safetensors
