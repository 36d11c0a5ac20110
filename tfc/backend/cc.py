"""Building generated C: the system compiler makes a shared library, cached on disk by content.

The cache key hashes the source, the flags, the compiler binary (path, size, mtime: no process
is started to ask its version), the runtime headers and, for -march=native builds, the CPU.
A second process compiling the same program finds the library and starts no compiler.
Environment: TFC_CC (or CC) picks the compiler, TFC_CFLAGS adds flags (sanitizers, say),
TFC_CACHE_DIR moves the cache, TFC_DUMP_DIR receives a copy of every generated source file,
TFC_GEMM_INLINE=1 compiles the GEMM's paths into each program instead of linking them.

The key is a hash anyone can compute, and what the cache holds is loaded into this process, so
the cache must be the user's alone (as ssh and pip require of theirs): its directories are
created 0700, one that another user owns or may write to (or that sits in a world-writable
directory without the sticky bit) is refused with UnsafeCacheError, and a cached file is used
only when it is a regular file of this user that nobody else may write (else it is built
again and replaced). Entries are written to a temporary name and renamed into place.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import cffi
import numpy as np

COMMON_FLAGS = ["-std=c11", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-fno-math-errno"]
HOST_FLAGS = ["-O3", "-march=native"]
GENERIC_FLAGS = ["-O3"]
# a loaded program is never unloaded: cffi closes a library when its last reference goes, and
# the workers of its thread pool (tfc_threads.h, detached, waiting inside the library) would
# then run unmapped code, or wake for the pool of a later library mapped at the same address
LINK_FLAGS = ["-Wl,-z,nodelete"] if sys.platform.startswith("linux") else []

# counts for tests and measurements: how often each path was taken in this process
BUILD_STATS = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "pch_builds": 0}

_CDEF = """
typedef struct {{ char *msg; int64_t cap; const char *node; }} tfc_error;
int64_t {p}arena_bytes(void);
void {p}set_num_threads(int n);
int {p}run(void *const *state, const void *const *inputs, void *const *outputs,
           const void *const *consts, void *arena_base, tfc_error *err);
"""

_lock = threading.Lock()
_loaded: dict[tuple[str, Path], object] = {}
_ffis: dict[tuple[str, str], cffi.FFI] = {}


_log = logging.getLogger("tfc")


class CompileError(RuntimeError):
    """The C compiler rejected generated code (a tfc bug): the message holds its diagnostics."""


class UnsafeCacheError(RuntimeError):
    """The build cache is a directory others could plant files in: tfc will not load from it."""


def runtime_dir() -> Path:
    """The hand-written C runtime: beside the package in a checkout, inside it in a wheel."""
    here = Path(__file__).resolve().parent.parent  # the tfc package
    for candidate in (here.parent / "runtime", here / "runtime"):
        if (candidate / "include" / "tfc_runtime.h").exists():
            return candidate
    raise FileNotFoundError(
        f"tfc's C runtime (runtime/include/tfc_runtime.h) is missing near {here}"
    )


def compiler() -> str:
    return os.environ.get("TFC_CC") or os.environ.get("CC") or "cc"


def build_flags(native: bool = True) -> list[str]:
    extra = shlex.split(os.environ.get("TFC_CFLAGS", ""))
    return COMMON_FLAGS + (HOST_FLAGS if native else GENERIC_FLAGS) + LINK_FLAGS + extra


def cache_dir() -> Path:
    """The build cache (TFC_CACHE_DIR, else $XDG_CACHE_HOME/tfc or ~/.cache/tfc), made and
    checked as private_dir does."""
    configured = os.environ.get("TFC_CACHE_DIR")
    if configured:
        path = Path(configured)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        path = Path(base) / "tfc"
    return private_dir(path)


def _mode_text(mode: int) -> str:
    return f"{stat.S_IMODE(mode):04o}"


def private_dir(path: Path) -> Path:
    """`path`, created 0700 when absent (parents as well), after checking that only this user
    can put files in it: it must be a directory this user owns that neither group nor others
    may write, and no directory above it may be world-writable without the sticky bit (anyone
    could then swap it). UnsafeCacheError names the directory and the problem otherwise."""
    path = Path(os.path.abspath(path))
    missing = []
    for parent in (path, *path.parents):
        if parent.exists():
            break
        missing.append(parent)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by a concurrent build: checked below
            pass
    st = os.stat(path)
    uid = os.getuid()
    fix = "use a directory of your own (mkdir -m 700), or point TFC_CACHE_DIR elsewhere"
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeCacheError(f"tfc cache {path} is not a directory; {fix}")
    if st.st_uid != uid:
        raise UnsafeCacheError(
            f"tfc cache directory {path} is owned by uid {st.st_uid}, not by you (uid {uid}): "
            f"its owner could plant a library tfc would load; {fix}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeCacheError(
            f"tfc cache directory {path} is writable by group or others (mode "
            f"{_mode_text(st.st_mode)}): anyone who may write there could plant a library tfc "
            f"would load; chmod 700 {path}, or {fix}"
        )
    for parent in path.parents:
        pst = os.stat(parent)
        if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
            raise UnsafeCacheError(
                f"tfc cache directory {path} is inside {parent}, which anyone may write to "
                f"(mode {_mode_text(pst.st_mode)}, no sticky bit): the cache could be replaced "
                f"by another user's directory; {fix}"
            )
    return path


def trusted_cache_file(path: Path) -> bool:
    """Whether `path` may be loaded from the cache: a regular file (not a link) of this user
    that neither group nor others may write. A file that is not is logged and left to be built
    again (the write replaces it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
        if not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return True
    _log.warning(
        "tfc cache: not using %s (owner uid %d, mode %s): only a regular file of yours that "
        "nobody else may write is loaded; building it again",
        path, st.st_uid, _mode_text(st.st_mode),
    )  # fmt: skip
    return False


def install_cache_file(source: Path, target: Path, mode: int = 0o600) -> None:
    """Move `source` (in the same directory tree as `target`) to `target` atomically, readable
    and writable by this user only, whatever the umask made of it."""
    os.chmod(source, mode)
    os.replace(source, target)  # atomic: a concurrent process sees all of it or nothing


@cache
def _runtime_digest(root: str) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(root).rglob("*")):
        if f.is_file():
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()


@cache
def _cpu_identity() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return platform.machine() + line
    except OSError:
        pass
    return platform.machine() + platform.processor()


def toolchain_identity(cc: str) -> str:
    """The compiler `cc` as a cache key: its resolved path, size and modification time."""
    path = shutil.which(cc)
    if path is None:
        raise CompileError(
            f"C compiler '{cc}' not found; install gcc or clang, or point TFC_CC at one"
        )
    st = os.stat(path)
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def cache_key(source: str, flags: list[str], cc: str) -> str:
    h = hashlib.sha256()
    for part in (
        source,
        " ".join(flags),
        toolchain_identity(cc),
        _runtime_digest(str(runtime_dir())),
    ):
        h.update(part.encode())
        h.update(b"\0")
    if "-march=native" in flags:
        h.update(_cpu_identity().encode())
    return h.hexdigest()[:32]


GEMM_LINKED = "-DTFC_GEMM_LINKED"


def program_flags(native: bool = True) -> list[str]:
    """The flags build_shared_library compiles a program with (its runtime header's .gch is
    precompiled with the same ones): the GEMM's paths linked (gemm_paths_archive) unless
    TFC_GEMM_INLINE is set."""
    inline = os.environ.get("TFC_GEMM_INLINE", "") not in ("", "0")
    return [*build_flags(native), "-pthread", *([] if inline else [GEMM_LINKED])]


def build_shared_library(source: str, name: str = "program", native: bool = True) -> Path:
    """Compile `source` into a shared library (or find it in the cache); returns its path.
    Programs link the GEMM's paths from gemm_paths_archive (the linker takes them only where a
    product calls them), or compile them themselves where that cannot be built."""
    cc, flags = compiler(), program_flags(native)
    include = str(runtime_dir() / "include")
    archive = None
    if GEMM_LINKED in flags:  # kernels of the runtime (convolutions) multiply too
        archive = gemm_paths_archive(cc, flags)
        if archive is None:
            flags = [f for f in flags if f != GEMM_LINKED]
    key = cache_key(source, flags, cc)

    def command(src: Path, out: Path) -> list[str]:
        first = precompiled_header_flags(cc, flags, source)
        linked = [str(archive)] if archive is not None else []
        return [cc, *flags, *first, "-I", include, "-o", str(out), str(src), *linked, "-lm"]

    return cached_build(source, name, key, ".c", ".so", cc, command)


# -- the GEMM's paths, compiled once ---------------------------------------------------------
# The packing paths of tfc_gemm.h are most of what a program with a matrix product compiles
# (0.5 of its 0.86 s on average in the test suite): their source does not depend on the shapes,
# which the inline dispatcher passes at run time anyway, so they are compiled once per flag set
# (runtime/src/tfc_gemm_paths.c) into an archive in the cache and linked into the program. The
# native executables link the same source as one of their runtime objects (tfc/aot/build.py).
GEMM_PATHS_SOURCE = "src/tfc_gemm_paths.c"
_gemm_failed: set[str] = set()


@cache
def _gemm_paths_build(cc: str, flags: tuple[str, ...]) -> tuple[str, list[str], str]:
    """(the source, the flags compiling it to an object, its cache key) for a program's flags:
    worked out once per process (reading and hashing them was half of a cache hit's time)."""
    source = (runtime_dir() / GEMM_PATHS_SOURCE).read_text()
    object_flags = [
        f for f in flags if f not in ("-shared", GEMM_LINKED) and not f.startswith(("-Wl,", "-l"))
    ]
    return source, object_flags, cache_key(source, [*object_flags, "-c"], cc)


def gemm_paths_archive(cc: str, flags: list[str]) -> Path | None:
    """The archive of the GEMM's paths compiled with a program's `flags` (built into the cache
    when absent), or None where it cannot be built (no `ar`, a compiler that fails): the
    program then compiles them itself, as the header does by default."""
    source, object_flags, key = _gemm_paths_build(cc, tuple(flags))
    target = cache_dir() / f"gemm-{key}.a"
    if trusted_cache_file(target):
        return target
    archiver = shutil.which("ar")
    if archiver is None or key in _gemm_failed:
        return None
    include = str(runtime_dir() / "include")

    def commands(tmp: Path) -> list[list[str]]:
        (tmp / "tfc_gemm_paths.c").write_text(source)
        compile_cmd = [cc, *object_flags, "-c", "-I", include, "-o", str(tmp / "paths.o")]
        return [[*compile_cmd, str(tmp / "tfc_gemm_paths.c")],
                [archiver, "rcs", str(tmp / target.name), str(tmp / "paths.o")]]  # fmt: skip

    ok = build_optional(target, commands, "compiles", "building the GEMM's paths",
                        "each program compiles them")  # fmt: skip
    if not ok:
        _gemm_failed.add(key)
    return target if ok else None


def build_optional(
    target: Path,
    commands: Callable[[Path], list[list[str]]],
    stat: str,
    what: str,
    otherwise: str,
) -> bool:
    """Build `target` (a cache file the builds can do without; its directory made 0700 if
    absent) by running commands(tmp) one after the other in a new directory beside it, each
    of which must succeed without a word on stderr, then moving tmp/<target's name> into place;
    BUILD_STATS[stat] counts the builds. False, with a warning saying `what` failed and what
    happens `otherwise`, if any did not: never fatal."""
    cmd: list[str] = []
    try:
        target.parent.mkdir(mode=0o700, exist_ok=True)  # a .gch's own directory
        with tempfile.TemporaryDirectory(dir=target.parent, prefix="build-") as tmp:
            BUILD_STATS[stat] += 1
            for cmd in commands(Path(tmp)):
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0 or proc.stderr.strip():
                    why = proc.stderr.strip() or f"exit status {proc.returncode}"
                    break
            else:
                install_cache_file(Path(tmp) / target.name, target)
                return True
    except OSError as e:  # a full disk, say
        why = str(e)
    _log.warning("tfc: %s failed; %s:\n%s\n%s", what, otherwise, " ".join(cmd), why)
    return False


# -- the precompiled runtime header ------------------------------------------------------------
# Parsing tfc_runtime.h (and the intrinsics headers it includes) is most of the time gcc takes
# on a small program: 0.22 of 0.27 s (tfc_cuda.h under device emulation, in C++: 0.36 of
# 0.56 s). After PCH_AFTER compiles with one flag set in this process, or at once when an
# earlier process left it in the cache, programs are compiled with the header precompiled
# (gcc's .gch, for exactly these flags, compiler and runtime). gcc checks that a .gch fits the
# compilation and otherwise reads the header itself; the code it generates is the same.
PCH_AFTER = 3
_pch_compiles: dict[str, int] = {}
_pch_failed: set[str] = set()


def is_gcc(cc: str) -> bool:
    """Whether `cc` resolves to gcc or g++ (whose precompiled headers tfc knows)."""
    path = shutil.which(cc)
    name = Path(os.path.realpath(path)).name if path else ""
    return "clang" not in name and re.search(r"(^|-)(g?cc|[gc]\+\+)(-\d+)?$", name) is not None


def first_include(source: str) -> str | None:
    """The file the first directive of `source` includes with quotes, if it is an include (a
    .gch can only stand for the first include)."""
    m = re.search(r"^\s*#\s*(\w+)\s*(.*?)\s*$", source, re.M)
    if m is None or m.group(1) != "include" or not re.fullmatch(r'"[\w.]+"', m.group(2)):
        return None
    return m.group(2)[1:-1]


def precompiled_header_dir(cc: str, flags: list[str], source: str) -> Path | None:
    """A directory holding the .gch of the runtime header `source` includes first, for
    compiling it with cc and `flags` (those of the compile, not the link), to be searched
    before runtime/include; None when there is none (yet): not gcc, a source that does not
    start with a runtime header, too few compiles so far, or a precompile that failed."""
    header = first_include(source)
    path = runtime_dir() / "include" / header if header else None
    if path is None or not path.is_file() or not is_gcc(cc):
        return None
    language = flags[flags.index("-x") + 1] if "-x" in flags else "c"
    header_flags = [
        f
        for i, f in enumerate(flags)
        if f not in ("-shared", "-x")
        and (i == 0 or flags[i - 1] != "-x")
        and not f.startswith(("-Wl,", "-l"))
    ]
    key = cache_key(header, header_flags, cc)
    directory = cache_dir() / f"pch-{key}"
    gch = directory / f"{header}.gch"
    if trusted_cache_file(gch):
        return directory
    with _lock:
        seen = _pch_compiles[key] = _pch_compiles.get(key, 0) + 1
    if seen <= PCH_AFTER or key in _pch_failed:
        return None

    def commands(tmp: Path) -> list[list[str]]:
        return [
            [cc, *header_flags, "-x", f"{language}-header", str(path), "-o", str(tmp / gch.name)]
        ]

    # never fatal: the programs compile without it
    if build_optional(
        gch, commands, "pch_builds", f"precompiling {header}", "compiling without it"
    ):
        return directory
    _pch_failed.add(key)
    return None


def precompiled_header_flags(cc: str, flags: list[str], source: str) -> list[str]:
    """The -I that puts precompiled_header_dir ahead of runtime/include, or nothing."""
    pch = precompiled_header_dir(cc, flags, source)
    return ["-I", str(pch)] if pch is not None else []


def cached_build(
    source: str,
    name: str,
    key: str,
    ext: str,
    suffix: str,
    tool: str,
    command: Callable[[Path, Path], list[str]],
    rejects: Callable[[subprocess.CompletedProcess], bool] = lambda proc: proc.returncode != 0,
) -> Path:
    """The cache's KEY+suffix built from `source` by command(src, out), building it if absent.
    The readable source stays beside it as KEY+ext; a build that `rejects` keeps it as
    failed-KEY+ext and raises CompileError naming `tool`, the program and the command."""
    _dump(source, name, key)
    directory = cache_dir()
    target = directory / f"{key}{suffix}"
    if trusted_cache_file(target):
        BUILD_STATS["disk_hits"] += 1
        return target
    with tempfile.TemporaryDirectory(dir=directory, prefix="build-") as tmp:
        src = Path(tmp) / f"{key}{ext}"
        src.write_text(source)
        out = Path(tmp) / f"{key}{suffix}"
        cmd = command(src, out)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        BUILD_STATS["compiles"] += 1
        if rejects(proc):
            kept = directory / f"failed-{key}{ext}"
            install_cache_file(src, kept)
            raise CompileError(
                f"{tool} failed on the generated program '{name}' (kept at {kept}):\n"
                f"{' '.join(cmd)}\n{proc.stderr.strip()}"
            )
        install_cache_file(src, directory / f"{key}{ext}")  # the readable source beside it
        install_cache_file(out, target, 0o700)
    return target


def _dump(source: str, name: str, key: str) -> None:
    dump_dir = os.environ.get("TFC_DUMP_DIR")
    if dump_dir:
        path = Path(dump_dir) / f"{name}-{key[:12]}.c"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != source:
            path.write_text(source)


def ffi_for(prefix: str, cdef: str = _CDEF) -> cffi.FFI:
    """One FFI per (declarations, symbol prefix): `cdef` is formatted with p=prefix."""
    with _lock:
        ffi = _ffis.get((cdef, prefix))
        if ffi is None:
            ffi = cffi.FFI()
            ffi.cdef(cdef.format(p=prefix))
            _ffis[(cdef, prefix)] = ffi
        return ffi


def bind_io(ffi: cffi.FFI, inputs: Any, outputs: Any, feeds: list, fetches: list) -> tuple:
    """Point a program's `inputs` at the feeds and its `outputs` at a new array per fetch spec
    (shape, dtype): (the cffi buffers to keep alive during the call, the result arrays)."""
    held = []
    for i, value in enumerate(feeds):
        held.append(ffi.from_buffer(np.ascontiguousarray(value)))
        inputs[i] = held[-1]
    results = [np.empty(f.shape, dtype=f.dtype.np) for f in fetches]
    for j, value in enumerate(results):
        held.append(ffi.from_buffer(value))
        outputs[j] = held[-1]
    return held, results


def program_error(ffi: cffi.FFI, errbuf: Any, err: Any, rc: int, graph: Any) -> Exception:
    """The tf.errors exception of a failed program call: its message and the failing node."""
    from tfc.ir import errors
    from tfc.ir.subgraph import find_operation

    message = ffi.string(errbuf).decode(errors="replace")
    node = ffi.string(err.node).decode() if err.node != ffi.NULL else None
    op = find_operation(graph, node) if node else None  # in a loop body or branch, maybe
    return errors.error_for_code(rc)(None, op, message)


def load_library(path: Path, prefix: str = "tfc_", cdef: str = _CDEF) -> tuple[cffi.FFI, object]:
    """dlopen a built program once per process; later loads reuse the handle. `cdef` declares
    its entry points (the C programs' by default; the CUDA backend passes its own)."""
    ffi = ffi_for(prefix, cdef)
    with _lock:
        lib = _loaded.get((cdef, path))
        if lib is None:
            lib = _loaded[(cdef, path)] = ffi.dlopen(str(path))
        else:
            BUILD_STATS["memory_hits"] += 1
    return ffi, lib
