"""The embeddable library cross-built and run: aarch64 and armhf Linux under qemu-user (the same
bits as this machine's build), a Cortex-M4 with an FPU under qemu-system-arm (mps2-an386, output
and exit status through semihosting), and wasm32 freestanding under wasmtime. Each test skips,
saying which, when its toolchain or emulator is missing (.ci/run installs them on Debian)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from embed_support import (
    ROOT,
    build,
    compile_with_harness,
    inputs,
    parse_stdout,
    reference_words,
    split_words,
)

# the comparison builds: no fused multiply-adds (aarch64 would contract a*b+c), no fast-math
SAME_BITS = ["-O2", "-ffp-contract=off"]
M4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
M4_DIR = ROOT / "samples" / "embed" / "cortex-m4"


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (see .ci/run for the Debian packages)")


def _run(cmd, cwd, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _iris(tmp_path, sub="lib", reference=True, **kw):
    """The library and harness of Iris; the session's words (`reference`: a test that runs
    the harness compares them)."""
    x, y = inputs(4, 4, 3, seed=3)
    out = tmp_path / sub
    compile_with_harness("iris_model.py", out, 4, x, y, prefix="iris_", **kw)
    if not reference:
        return out, None
    expected = reference_words(
        "iris_model.py", 4, x, y, trainable=kw.get("inference_only") is not True
    )
    return out, expected


def _host_words(out) -> list[int]:
    exe = build(["cc"], out, [*SAME_BITS, "-DHARNESS_STDIO"], "harness_host", ["-lm"])
    proc = _run([str(exe)], out)
    assert proc.returncode == 0, proc.stderr
    return parse_stdout(proc.stdout)


def _check_session(words, expected, rtol=2e-5, atol=2e-6):
    got = split_words(words, [len(e) for e in expected])
    for i, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"result {i}")


@pytest.mark.parametrize(
    "gcc, qemu, sysroot",
    [
        ("aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"),
        ("arm-linux-gnueabihf-gcc", "qemu-arm", "/usr/arm-linux-gnueabihf"),
    ],
    ids=["aarch64", "armhf"],
)
def test_linux_cross_build_gives_the_hosts_bits(tmp_path, gcc, qemu, sysroot):
    need(gcc, qemu)
    out, expected = _iris(tmp_path)
    exe = build([gcc], out, [*SAME_BITS, "-DHARNESS_STDIO"], "harness_cross", ["-lm"])
    proc = _run([qemu, "-L", sysroot, str(exe)], out)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-1000:]
    words = parse_stdout(proc.stdout)
    assert words == _host_words(out)
    _check_session(words, expected)


def test_lstm_digits_trains_and_predicts_under_qemu_aarch64(tmp_path):
    """The LSTM of samples/lstm_digits_model.py (a dynamic_rnn loop of 8 steps, bounded) as an
    embedded library on aarch64: training steps and predictions equal to the host build's and
    the Session's within float rounding (its thousands of expf/tanhf calls meet inputs where
    glibc's aarch64 and x86-64 versions, the latter picking an FMA variant at run time, round
    the last bit differently)."""
    need("aarch64-linux-gnu-gcc", "qemu-aarch64")
    x, y = inputs(4, 64, 10, seed=6)
    x = np.abs(x) / 3
    out = tmp_path / "lib"
    compile_with_harness("lstm_digits_model.py", out, 4, x, y, prefix="lstm_")
    exe = build(["aarch64-linux-gnu-gcc"], out, [*SAME_BITS, "-DHARNESS_STDIO"], "harness_cross",
                ["-lm"])  # fmt: skip
    proc = _run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(exe)], out)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-1000:]
    words = parse_stdout(proc.stdout)
    host = np.array(_host_words(out), np.uint32).view(np.float32)
    np.testing.assert_allclose(np.array(words, np.uint32).view(np.float32), host, rtol=1e-5)
    _check_session(words, reference_words("lstm_digits_model.py", 4, x, y))


def _lenet_predict(tmp_path, reference=True):
    """LeNet-5 on one 28x28 image, inference only: the convolution and pooling kernels."""
    x, y = inputs(1, 28 * 28, 10, seed=4)
    x = np.abs(x).reshape(1, 28, 28, 1)
    out = tmp_path / "lib"
    compile_with_harness("lenet_model.py", out, 1, x, y, inference_only=True)
    if not reference:
        return out, None
    return out, reference_words("lenet_model.py", 1, x, y, trainable=False)


@pytest.mark.parametrize("case", [_iris, _lenet_predict], ids=["iris-train", "lenet-predict"])
def test_cortex_m4_under_qemu_system_arm(tmp_path, case):
    need("arm-none-eabi-gcc", "qemu-system-arm")
    out, expected = case(tmp_path)
    extra = [
        str(M4_DIR / "startup.c"), "-nostartfiles", f"-T{M4_DIR / 'mps2-an386.ld'}",
        "-Wl,--gc-sections", "-lm",
    ]  # fmt: skip
    flags = [*SAME_BITS, *M4, "-DHARNESS_SEMIHOSTING", "-ffunction-sections"]
    exe = build(["arm-none-eabi-gcc"], out, flags, "harness.elf", extra)
    cmd = [
        "qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
        "-semihosting-config", "enable=on,target=native", "-kernel", str(exe),
    ]  # fmt: skip
    proc = _run(cmd, out)
    # QEMU writes the semihosting console (SYS_WRITE0) to its stderr
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-1000:]}"
    words = parse_stdout(proc.stderr)
    # newlib's expf/logf are not glibc's: equal to the session within float rounding
    _check_session(words, expected)
    host = np.array(_host_words(out), np.uint32).view(np.float32)
    np.testing.assert_allclose(np.array(words, np.uint32).view(np.float32), host, rtol=1e-5)


def _lenet_train(tmp_path, reference=False):
    """LeNet-5 training steps on one image: the convolutions' and pooling's gradients."""
    x, y = inputs(1, 28 * 28, 10, seed=5)
    x = np.abs(x).reshape(1, 28, 28, 1)
    out = tmp_path / "lib"
    compile_with_harness("lenet_model.py", out, 1, x, y)
    return out, None


# libgcc's soft double (__aeabi_dmul, __aeabi_l2d, ...: __muldf3 and kin) and 64-bit division
SOFT_DOUBLE_OR_LONG_DIVISION = re.compile(
    r"^(__aeabi_(d\w+|u?i2d|u?l2d|f2d|u?ldivmod)|__\w*df\w*|__u?(div|mod|divmod)di[34])$"
)


@pytest.mark.parametrize("opt", ["-Os", "-O2"])
@pytest.mark.parametrize("case", [_iris, _lenet_predict, _lenet_train],
                         ids=["iris-train", "lenet-predict", "lenet-train"])  # fmt: skip
def test_cortex_m4_links_no_double_arithmetic_or_64_bit_division(tmp_path, case, opt):
    """A Cortex-M4 has a single-precision FPU and divides 32-bit integers: the library links
    neither libgcc's soft double nor its 64-bit division (the harness prints hex, no floats)."""
    need("arm-none-eabi-gcc", "arm-none-eabi-nm")
    out, _ = case(tmp_path, reference=False)  # linked, not run
    extra = [
        str(M4_DIR / "startup.c"), "-nostartfiles", f"-T{M4_DIR / 'mps2-an386.ld'}",
        "-Wl,--gc-sections", "-lm",
    ]  # fmt: skip
    flags = [opt, *M4, "-DHARNESS_SEMIHOSTING", "-ffunction-sections"]
    exe = build(["arm-none-eabi-gcc"], out, flags, "harness.elf", extra)
    listing = _run(["arm-none-eabi-nm", str(exe)], out).stdout
    linked = {line.split()[-1] for line in listing.splitlines() if line.strip()}
    assert linked & {"model_predict", "iris_predict"}, "the library is not in the program"
    assert not {s for s in linked if SOFT_DOUBLE_OR_LONG_DIVISION.match(s)}, sorted(linked)


@pytest.mark.parametrize("model", ["iris", "digits", "lenet"])
def test_stack_bytes_bounds_what_gcc_measures_on_cortex_m4(tmp_path, model):
    """model.h's STACK_BYTES against arm-none-eabi-gcc's -fcallgraph-info=su (-fstack-usage's
    frames along the deepest chain of calls) at -Os and -O2; LeNet-5's inference within 32 KB
    of RAM in all (arena, stack, no state)."""
    need("arm-none-eabi-gcc")
    from tfc.aot.embed import EMBED_CFLAGS, compile_embed
    from tfc.aot.embed_stack import measure_stack

    for inference_only in (True, False):
        out = tmp_path / str(inference_only)
        m = compile_embed(ROOT / "samples" / f"{model}_model.py", out, 1,
                          inference_only=inference_only)  # fmt: skip
        entries = ["model_predict"] + (["model_train_step"] if m.trainable else [])
        for opt in ("-Os", "-O2"):
            measured = measure_stack(out, ["arm-none-eabi-gcc"], [*EMBED_CFLAGS, opt, *M4], entries)
            assert 0 < max(measured.values()) <= m.stack_bytes, (opt, measured, m.stack_bytes)
        if model == "lenet" and inference_only:
            assert m.state_bytes + m.arena_bytes + m.stack_bytes <= 32 * 1024


def test_cortex_m4_exit_status_reports_a_failure(tmp_path):
    """The harness's status reaches the test: a failing init is not a passing run."""
    need("arm-none-eabi-gcc", "qemu-system-arm")
    out, _ = _iris(tmp_path, reference=False)  # the run fails on purpose
    data = (out / "harness_data.h").read_text()
    (out / "harness_data.h").write_text(data.replace("#define H_INIT(s, sb) iris_init(s, sb)",
                                                     "#define H_INIT(s, sb) 7"))  # fmt: skip
    extra = [str(M4_DIR / "startup.c"), "-nostartfiles", f"-T{M4_DIR / 'mps2-an386.ld'}", "-lm"]
    exe = build(["arm-none-eabi-gcc"], out, ["-O2", *M4, "-DHARNESS_SEMIHOSTING"], "bad.elf",
                extra)  # fmt: skip
    cmd = ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
           "-semihosting-config", "enable=on,target=native", "-kernel", str(exe)]  # fmt: skip
    proc = _run(cmd, out)
    assert proc.returncode == 17, (proc.returncode, proc.stderr[-500:])
    assert "end failed" in proc.stderr


@pytest.mark.parametrize("case", [_iris, _lenet_predict], ids=["iris-train", "lenet-predict"])
def test_wasm32_freestanding_under_wasmtime(tmp_path, case):
    need("clang", "wasm-ld")
    wasmtime = pytest.importorskip("wasmtime", reason="wasmtime (pip install wasmtime) missing")
    out, expected = case(tmp_path)
    flags = [
        "--target=wasm32", "-nostdlib", "-ffreestanding", "-Iruntime/freestanding",
        *SAME_BITS, "-DHARNESS_WASM",
    ]  # fmt: skip
    extra = ["runtime/freestanding/tfc_freestanding.c", "-Wl,--no-entry"]
    exe = build(["clang"], out, flags, "harness.wasm", extra)
    store = wasmtime.Store()
    module = wasmtime.Module.from_file(store.engine, str(exe))
    assert not module.imports, [i.name for i in module.imports]  # nothing from a host
    instance = wasmtime.Instance(store, module, [])
    ex = instance.exports(store)
    assert ex["run"](store) == 0
    n, ptr = ex["n_words"](store), ex["words"](store)
    raw = ex["memory"].read(store, ptr, ptr + 4 * n)
    words = np.frombuffer(bytes(raw), dtype="<u4").tolist()
    _check_session(words, expected)


def test_footprint_targets_on_cortex_m4(monkeypatch):
    """The issue's budgets: digits and Iris MLPs under 8 KB of code predicting, 16 KB with
    training; LeNet predicting under 16 KB; arenas within 5% of the live-bytes lower bound."""
    need("arm-none-eabi-gcc")
    from tfc.aot import footprint
    from tfc.aot.footprint import measure

    # the board's toolchain alone: the budgets are its (`tfc inspect --target embed`, in
    # test_embed.py, measures with every toolchain found)
    m4 = [t for t in footprint.TOOLCHAINS if t.name == "cortex-m4"]
    assert len(m4) == 1
    monkeypatch.setattr(footprint, "TOOLCHAINS", tuple(m4))

    def unmeasured(*args):  # a second compile of model.c per variant, for a stack not checked
        raise RuntimeError("the stack is test_stack_bytes_bounds_what_gcc_measures_on_cortex_m4's")

    monkeypatch.setattr(footprint, "measure_stack", unmeasured)
    for model, predict_budget, train_budget in (
        ("iris_model.py", 8192, 16384),
        ("digits_model.py", 8192, 16384),
        ("lenet_model.py", 16384, None),
    ):
        fp = measure(ROOT / "samples" / model, 1)
        code = {k: v.code["cortex-m4"] for k, v in fp.variants.items()}
        assert 0 < code["predict"] < predict_budget, (model, code)
        if train_budget is not None:
            assert code["predict"] < code["train"] < train_budget, (model, code)
        for v in fp.variants.values():
            assert v.model.arena_bytes <= 1.05 * v.model.arena_lower_bound, model


def _newlib_rdimon() -> bool:
    proc = _run(["arm-none-eabi-gcc", "--specs=rdimon.specs", "-print-file-name=librdimon.a"], ROOT)
    return proc.returncode == 0 and Path(proc.stdout.strip()).is_absolute()


def test_cortex_m4_misused_entry_points_return_their_status_codes(tmp_path):
    """tests/embed/checks.c on the Cortex-M4: among the misuses, an arena misaligned by one
    byte returns TFC_ERR_ALIGNMENT where the board would fault on its float loads."""
    need("arm-none-eabi-gcc", "qemu-system-arm")
    if not _newlib_rdimon():
        pytest.skip("newlib's librdimon not installed (libnewlib-arm-none-eabi)")
    from embed_support import CHECKS, WARNINGS

    from tfc.aot.embed import EMBED_CFLAGS, compile_embed

    compile_embed(ROOT / "samples" / "iris_model.py", tmp_path, 4)
    cmd = ["arm-none-eabi-gcc", *EMBED_CFLAGS, *WARNINGS, "-O2", *M4, "-DTFC_NEWLIB_STDIO",
           str(CHECKS), "model.c", str(M4_DIR / "startup.c"), "--specs=rdimon.specs",
           "-nostartfiles", f"-T{M4_DIR / 'mps2-an386.ld'}", "-lm", "-o", "checks.elf"]  # fmt: skip
    proc = _run(cmd, tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = _run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
                 "-semihosting-config", "enable=on,target=native", "-kernel", "checks.elf"],
                tmp_path)  # fmt: skip
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok"), proc.stdout + proc.stderr


@pytest.mark.parametrize("target", ["cortex-m4", "wasm"])
def test_sample_makefile_target_trains_and_classifies(tmp_path, target):
    """`make cortex-m4` (newlib's printf over semihosting, under qemu-system-arm) and `make
    wasm` (clang, the stdio shim, wasmtime) build samples/embed/main.c as a new user would and
    run it: the loss falls and the tutorial's flowers are classified."""
    import os
    import sys

    if target == "cortex-m4":
        need("arm-none-eabi-gcc", "qemu-system-arm")
        if not _newlib_rdimon():
            pytest.skip("newlib's librdimon not installed (libnewlib-arm-none-eabi)")
    else:
        need("clang", "wasm-ld")
        pytest.importorskip("wasmtime", reason="wasmtime (pip install wasmtime) missing")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = ["make", "-s", "-C", str(ROOT / "samples" / "embed"), f"OUT={tmp_path}",
           f"PYTHON={sys.executable}", "CFLAGS=-O2 -Werror", target]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", proc.stdout)]
    assert len(losses) == 4 and losses[-1] < 0.1 * losses[0], proc.stdout
    flowers = re.findall(r"flower \d: (\w+)", proc.stdout)
    assert flowers == ["setosa", "versicolor", "virginica"], proc.stdout
