"""The compiled-program cache: a second process running the same graph starts no compiler."""

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

SCRIPT = """
import numpy as np
import tfc as tf
from tfc.backend.cc import BUILD_STATS
x = tf.placeholder(tf.float32, [None, 3], name="x")
y = tf.reduce_sum(tf.exp(x) * 2.0 + 1.0, axis=1)
with tf.Session() as sess:
    out = sess.run(y, {x: np.ones((2, 3), np.float32)})
print(round(float(out[0]), 4), BUILD_STATS["compiles"], BUILD_STATS["disk_hits"])
"""


def test_second_process_reuses_the_compiled_module(tmp_path):
    log = tmp_path / "compiler-calls.log"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec cc "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    env = dict(
        os.environ, TFC_CC=str(wrapper), TFC_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO)
    )

    def run() -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    first = run()
    calls_after_first = log.read_text().count("\n")
    second = run()
    assert first[0] == second[0] == str(round(3 * (2 * 2.718281828 + 1), 4))
    # the first process compiles the GEMM's paths (gemm_paths_archive) and the program
    assert calls_after_first == 2 and first[1:] == ["2", "0"]
    assert log.read_text().count("\n") == 2  # the wrapper was not started again
    assert second[1:] == ["0", "1"]
    built = list((tmp_path / "cache").glob("*.so"))
    assert len(built) == 1 and built[0].with_suffix(".c").exists()  # readable source beside it


# -- a cache nobody else can plant in ------------------------------------------------------------

PLANTED = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) fputs("the planted library ran", f), fclose(f);
}
int tfc_planted_marker;
"""

PROGRAM = "int tfc_cache_test_answer(void) { return 42; }\n"


def _plant(path, marker):
    """A shared library at `path` whose constructor writes `marker` when it is loaded."""
    src = path.with_suffix(".planted.c")
    src.write_text(PLANTED % marker)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(path), str(src)], check=True)
    src.unlink()


def _load(monkeypatch, cache):
    from tfc.backend import cc

    monkeypatch.setenv("TFC_CACHE_DIR", str(cache))
    path = cc.build_shared_library(PROGRAM, name="cache_test", native=False)
    ffi, lib = cc.load_library(path, cdef="int tfc_cache_test_answer(void);")
    assert lib.tfc_cache_test_answer() == 42
    return path


def test_cache_directories_are_private(tmp_path, monkeypatch):
    cache = tmp_path / "made" / "here" / "cache"
    path = _load(monkeypatch, cache)
    for d in (cache, cache.parent, cache.parent.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE(path.stat().st_mode) == 0o700  # the library: ours alone, any umask
    assert stat.S_IMODE(path.with_suffix(".c").stat().st_mode) == 0o600
    assert not [p for p in cache.iterdir() if p.name.startswith("build-")]  # no temporaries


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757])
def test_a_cache_others_may_write_is_refused(tmp_path, monkeypatch, mode):
    from tfc.backend.cc import UnsafeCacheError

    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(mode)
    marker = tmp_path / "ran"
    from tfc.backend.cc import cache_key, compiler, program_flags

    _plant(cache / f"{cache_key(PROGRAM, program_flags(False), compiler())}.so", marker)
    with pytest.raises(UnsafeCacheError, match=rf"{cache} is writable by group or others"):
        _load(monkeypatch, cache)
    assert not marker.exists()
    inside = cache / "mine"  # a private directory inside one anyone may swap out
    if mode & 0o002:
        with pytest.raises(UnsafeCacheError, match=rf"inside {cache}, which anyone may write"):
            _load(monkeypatch, inside)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a directory to another user")
def test_a_cache_of_another_user_is_refused(tmp_path, monkeypatch):
    from tfc.backend.cc import UnsafeCacheError

    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    with pytest.raises(UnsafeCacheError, match=rf"{cache} is owned by uid 65534, not by you"):
        _load(monkeypatch, cache)


def test_a_planted_or_loose_cached_library_is_never_loaded(tmp_path, monkeypatch):
    """A library under the right key that is not this user's alone is built again, not
    loaded: its constructor never runs."""
    from tfc.backend.cc import cache_key, compiler, program_flags

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    target = cache / f"{cache_key(PROGRAM, program_flags(False), compiler())}.so"
    cases = [("group-writable", 0o664, None), ("world-writable", 0o646, None)]
    if os.getuid() == 0:
        cases.append(("another user's", 0o644, 65534))
    for what, mode, owner in cases:
        marker = tmp_path / f"ran-{mode:o}"
        _plant(target, marker)
        target.chmod(mode)
        if owner is not None:
            os.chown(target, owner, owner)
        path = _load(monkeypatch, cache)
        assert path == target and not marker.exists(), what
        st = target.stat()
        assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700, what


def test_cached_objects_of_tfc_compile_are_checked(tmp_path, monkeypatch):
    """tfc compile's object cache: a cached object others may write is compiled again."""
    from tfc.aot import compile as tfc_compile

    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "cache"))
    tfc_compile(REPO / "samples" / "iris_model.py", tmp_path / "one", batch=4, target="generic")
    objects = tmp_path / "cache" / "objects"
    assert stat.S_IMODE(objects.stat().st_mode) == 0o700
    cached = sorted(objects.glob("*.o"))
    assert cached and all(stat.S_IMODE(o.stat().st_mode) == 0o600 for o in cached)
    loose = cached[0]
    loose.write_bytes(b"not an object")  # what another user would have put there
    loose.chmod(0o666)
    built = tfc_compile(REPO / "samples" / "iris_model.py", tmp_path / "two", batch=4,
                        target="generic")  # fmt: skip
    assert built.train.exists()  # it links: the planted bytes were not used
    assert loose.read_bytes() != b"not an object" and stat.S_IMODE(loose.stat().st_mode) == 0o600


# -- the precompiled runtime header --------------------------------------------------------------

GRAPH = """
import numpy as np
import tfc as tf
x = tf.placeholder(tf.float32, [4, 10], name="x")
y = tf.nn.softmax(tf.tanh(x) * 3.0)
with tf.Session() as sess:
    print(sess.run(tf.reduce_max(y), {x: np.ones((4, 10), np.float32)}))
"""


def test_the_runtime_header_is_precompiled_after_a_few_programs_and_changes_no_code(
    tmp_path, monkeypatch
):
    from tfc.backend import cc

    if not cc.is_gcc(cc.compiler()):
        pytest.skip("precompiled headers are gcc's")
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "cache"))
    flags = cc.program_flags()
    include = str(cc.runtime_dir() / "include")
    programs = [f'#include "tfc_runtime.h"\nint tfc_probe{i}(void) {{ return {i}; }}\n'
                for i in range(cc.PCH_AFTER + 2)]  # fmt: skip
    monkeypatch.setattr(cc, "_pch_compiles", {})  # as in a new process
    built = cc.BUILD_STATS["pch_builds"]
    present = []
    for source in programs:
        cc.build_shared_library(source, "probe")
        present.append(len(list((tmp_path / "cache").glob("pch-*/tfc_runtime.h.gch"))))
    assert present == [0] * cc.PCH_AFTER + [1, 1]
    assert cc.BUILD_STATS["pch_builds"] == built + 1  # made once, then found in the cache
    pch = cc.precompiled_header_dir(cc.compiler(), flags, programs[0])
    gch = pch / "tfc_runtime.h.gch"
    # a source whose first directive is not the runtime header gets none
    assert cc.precompiled_header_dir(cc.compiler(), flags, "#include <math.h>\n") is None
    # a generated program: gcc reads the .gch, and the object is the same
    dump = tmp_path / "dump"
    env = dict(os.environ, TFC_DUMP_DIR=str(dump), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", GRAPH], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    source = max(dump.glob("*.c"), key=lambda p: p.stat().st_size)
    assert source.read_text().count('#include "tfc_runtime.h"') == 1
    objects = []
    for extra in (["-I", str(pch), "-H"], []):
        out = tmp_path / f"o{len(objects)}.o"
        compile_flags = [f for f in flags if f != "-shared" and not f.startswith("-Wl,")]
        cmd = [cc.compiler(), *compile_flags, *extra, "-I", include, "-c",
               str(source), "-o", str(out)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        if extra:
            assert f"! {gch}" in proc.stderr.splitlines()[0], proc.stderr[:500]
        objects.append(out.read_bytes())
    assert objects[0] == objects[1]


def test_the_emulated_cuda_header_is_precompiled_for_cpp(tmp_path, monkeypatch):
    """Device emulation compiles its programs as C++: their header gets a C++ .gch."""
    from tfc.backend import cc, cuda_emu

    cxx, flags = cuda_emu.host_cxx(), cuda_emu.emulation_flags()
    if not cc.is_gcc(cxx):
        pytest.skip("precompiled headers are gcc's")
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cc, "PCH_AFTER", 0)
    source = '#include "tfc_cuda.h"\nint tfc_probe(void) { return 1; }\n'
    pch = cc.precompiled_header_dir(cxx, flags, source)
    assert pch is not None and (pch / "tfc_cuda.h.gch").is_file()
    src = tmp_path / "probe.cu"
    src.write_text(source)
    include = str(cc.runtime_dir() / "include")
    cmd = [cxx, *flags, "-I", str(pch), "-I", include, "-H", "-o", str(tmp_path / "p.so"), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(f"! {pch / 'tfc_cuda.h.gch'}"), proc.stderr[:300]


def test_a_precompile_that_fails_only_costs_the_header(tmp_path, monkeypatch, caplog):
    """No room for the .gch (or a compiler that rejects the header): a warning, and the
    programs compile as before."""
    from tfc.backend import cc

    if not cc.is_gcc(cc.compiler()):
        pytest.skip("precompiled headers are gcc's")
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cc, "PCH_AFTER", 0)
    monkeypatch.setattr(cc, "_pch_failed", set())

    def full_disk(source, target, mode=0o600):
        if str(target).endswith(".gch"):
            raise OSError(28, "No space left on device")
        return install(source, target, mode)

    install = cc.install_cache_file
    monkeypatch.setattr(cc, "install_cache_file", full_disk)
    source = '#include "tfc_runtime.h"\nint tfc_probe(void) { return 7; }\n'
    logger = logging.getLogger("tfc")  # tfc's logger need not propagate to the root
    logger.addHandler(caplog.handler)
    try:
        flags = cc.program_flags()
        assert cc.precompiled_header_dir(cc.compiler(), flags, source) is None
    finally:
        logger.removeHandler(caplog.handler)
    assert "No space left on device" in caplog.text
    assert cc.build_shared_library(source, "probe").is_file()
    assert not list((tmp_path / "cache").glob("pch-*/*.gch"))
