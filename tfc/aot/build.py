"""Writing a compiled model's directory and building its executables with the host compiler.

The build does what the directory's Makefile does (the same objects, archive and links), with
each object cached on disk by its source, the flags, the compiler and the headers: compiling
the same model again, or another model, reuses every object that did not change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfc.aot.sources import BASE_CFLAGS
from tfc.backend.cc import (
    GENERIC_FLAGS,
    HOST_FLAGS,
    CompileError,
    cache_dir,
    compiler,
    install_cache_file,
    private_dir,
    runtime_dir,
    toolchain_identity,
    trusted_cache_file,
)

if TYPE_CHECKING:
    from tfc.aot.cuda_build import CudaToolchain
    from tfc.aot.distributed import DistributedPlan
    from tfc.aot.programs import ModelPlan

# the optimization flags of each `tfc compile --target` (the Makefile's CFLAGS default)
TARGET_FLAGS = {"host": HOST_FLAGS, "generic": GENERIC_FLAGS, "cuda": GENERIC_FLAGS}


@dataclass
class CompiledModel:
    """What `tfc.compile` made: the directory, the model's plan, the executables built."""

    outdir: Path
    plan: ModelPlan | DistributedPlan
    executables: dict[str, Path]  # "train", "predict" -> path (empty when not built)
    cuda_emulated: bool = False  # the CUDA programs run under device emulation, on the CPU

    @property
    def train(self) -> Path:
        return self.outdir / "train"

    @property
    def predict(self) -> Path:
        return self.outdir / "predict"


def write_if_changed(path: Path, text: str) -> None:
    """Leave an unchanged file alone, so `make` finds its objects up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def copy_runtime(outdir: Path) -> None:
    """Make OUTDIR/runtime the runtime's headers and sources, exactly (stale files removed)."""
    root = runtime_dir()
    for sub, patterns in (("include", ("*.h",)), ("src", ("*.c", "*.h"))):
        wanted = {f.name: f for pattern in patterns for f in (root / sub).glob(pattern)}
        sync_dir(outdir / "runtime" / sub, wanted)


def sync_dir(target: Path, wanted: dict[str, Path]) -> None:
    """Make the files of TARGET exactly `wanted` (name -> source): stale ones removed, the
    rest written only where they differ (so make rebuilds only what changed)."""
    target.mkdir(parents=True, exist_ok=True)
    for existing in target.iterdir():
        if existing.is_file() and existing.name not in wanted:
            existing.unlink()
    for name, src in wanted.items():
        write_if_changed(target / name, src.read_text())


def _runtime_headers_digest(outdir: Path) -> str:
    """The digest of the runtime's headers, which every source may include (the runtime's own
    sources never include the generated model.h, so their objects are shared by every model
    built with the same flags)."""
    h = hashlib.sha256()
    for f in sorted((outdir / "runtime").rglob("*.h")):
        h.update(f.relative_to(outdir).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _compile_object(cc: str, flags: list[str], outdir: Path, source: str, key_base: str) -> str:
    src = outdir / source
    obj = outdir / "obj" / (source.rsplit(".", 1)[0] + ".o")
    h = hashlib.sha256(key_base.encode())
    h.update(source.encode() + b"\0" + src.read_bytes())
    objects = private_dir(cache_dir() / "objects")
    cached = objects / f"{h.hexdigest()[:32]}.o"
    obj.parent.mkdir(parents=True, exist_ok=True)
    if not trusted_cache_file(cached):
        cmd = [cc, *flags, "-c", source, "-o", str(obj.relative_to(outdir))]
        try:
            proc = subprocess.run(cmd, cwd=outdir, capture_output=True, text=True)
        except FileNotFoundError as e:
            raise CompileError(f"{cc} not found compiling {src}: {e}") from e
        if proc.returncode != 0:
            raise CompileError(f"{cc} failed on {src}:\n{' '.join(cmd)}\n{proc.stderr.strip()}")
        with tempfile.NamedTemporaryFile(dir=objects, prefix=".tmp-", delete=False) as tmp:
            tmp.write(obj.read_bytes())
        install_cache_file(Path(tmp.name), cached)
    else:
        shutil.copyfile(cached, obj)
    return str(obj.relative_to(outdir))


def build_executables(
    outdir: Path,
    executables: list[str],
    model_objects: list[str],
    cflags: list[str],
    cuda: CudaToolchain | None = None,
    cuda_objects: set[str] | None = None,
) -> dict[str, Path]:
    """Compile OUTDIR's sources and link `executables` (main_<name>.c each); their paths.
    `cuda`: the compiler of the programs and the link's libraries when they are CUDA (.cu)
    sources (nvcc, or the host C++ compiler under device emulation); `cuda_objects` names the
    objects of .cu programs (default: every program's; a cluster's GPU worker: the worker's)."""
    cc = compiler()
    flags = [*BASE_CFLAGS, "-Iruntime/include", "-I.", *cflags]
    runtime_key = "\0".join(
        [" ".join(flags), toolchain_identity(cc), _runtime_headers_digest(outdir)]
    )
    # the model's sources and mains include model.h too
    model_key = runtime_key + "\0" + hashlib.sha256((outdir / "model.h").read_bytes()).hexdigest()
    runtime = sorted(f"runtime/src/{f.name}" for f in (outdir / "runtime" / "src").glob("*.c"))
    mains = [f"main_{e}.c" for e in executables]
    if cuda_objects is None:
        cuda_objects = {o for o in model_objects if "/program_" in o} if cuda else set()
    programs = [o[len("obj/") : -2] + (".cu" if o in cuda_objects else ".c") for o in model_objects]
    sources = programs + mains + runtime

    def compile_one(source: str) -> str:
        if cuda is not None and source.endswith(".cu"):
            cu_flags = [*cuda.flags, "-Iruntime/include", "-I."]
            cu_key = "\0".join([" ".join(cu_flags), toolchain_identity(cuda.compiler), model_key])
            return _compile_object(cuda.compiler, cu_flags, outdir, source, cu_key)
        key = runtime_key if source.startswith("runtime/") else model_key
        return _compile_object(cc, flags, outdir, source, key)

    if cuda is not None and shutil.which(cuda.compiler) is None:
        first = next(s for s in sources if s.endswith(".cu"))
        raise CompileError(f"{cuda.compiler} ({cuda.what}) not found: cannot compile {first}")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    by_source = dict(zip(sources, objects))
    archive = outdir / "obj" / "libtfcrt.a"
    archive.unlink(missing_ok=True)
    ar = os.environ.get("AR", "ar")
    _run([ar, "rcs", str(archive.relative_to(outdir)), *(by_source[s] for s in runtime)], outdir)
    built = {}
    for e, main in zip(executables, mains):
        tmp = f".{e}.tmp"
        _run(
            [cc, *cflags, "-o", tmp, by_source[main], *model_objects, "obj/libtfcrt.a", "-lm"]
            + ["-pthread"]
            + (cuda.libs if cuda else []),
            outdir,
        )
        os.replace(outdir / tmp, outdir / e)  # a running executable keeps its old file
        built[e] = outdir / e
    return built


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stderr.strip()}")
