"""`tfc inspect --target embed`: what the embeddable library costs on each target.

The library is compiled twice (predict only, and with the training step) into temporary
directories, then model.c is compiled with -Os by every cross compiler found on PATH. Code bytes
are the object's executable sections (what `size -A` lists as .text*), read from the ELF (or
wasm) file itself so no target's binutils are needed; constants and weights are read-only data
and are counted apart. libm functions the model calls (expf, logf) are not in the object.

RAM is the state block, the arena and the stack: model.h's STACK_BYTES bound, and the deepest
call GCC measures (-fcallgraph-info: tfc/aot/embed_stack.py) with each GCC toolchain.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfc.aot.embed import EMBED_CFLAGS, EmbeddedModel, compile_embed, library_sources
from tfc.aot.embed_stack import measure_stack
from tfc.compiler import CompileOptions
from tfc.ir import dtypes as _dt


@dataclass(frozen=True)
class Toolchain:
    name: str
    cc: tuple[str, ...]
    flags: tuple[str, ...] = ()


TOOLCHAINS = (
    Toolchain("host", ("cc",)),
    Toolchain("aarch64", ("aarch64-linux-gnu-gcc",)),
    Toolchain("armhf", ("arm-linux-gnueabihf-gcc",)),
    Toolchain(
        "cortex-m4",
        ("arm-none-eabi-gcc",),
        ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"),
    ),
    Toolchain(
        "wasm32",
        ("clang", "--target=wasm32"),
        ("-ffreestanding", "-nostdlib", "-Iruntime/freestanding"),
    ),
)
SIZE_FLAGS = ["-Os", "-ffunction-sections", "-fdata-sections"]


@dataclass
class Variant:
    """One build of the library: predict only, or with the training step."""

    model: EmbeddedModel
    code: dict[str, int] = field(default_factory=dict)  # toolchain -> code bytes
    stack: dict[str, int] = field(default_factory=dict)  # GCC toolchain -> measured stack bytes

    @property
    def ram_bytes(self) -> int:
        """The state block, the arena and model.h's stack bound."""
        m = self.model
        return m.state_bytes + m.arena_bytes + m.stack_bytes

    @property
    def constant_bytes(self) -> int:
        """The constants compiled into model.c (read-only data beside the code): an imported
        model's weights (a .tflite or GraphDef model holds them as constants, not variables)."""
        sizes = {d.c_type: d.size for d in _dt.ALL if d.c_type}
        programs = self.model.programs.values()
        return sum(c.count * sizes[c.ctype] for p in programs for c in p.lowered.consts)


@dataclass
class Footprint:
    name: str
    batch: int
    variants: dict[str, Variant]  # "predict", "train"
    missing: list[str]

    def report(self) -> str:
        names = [t.name for t in TOOLCHAINS if t.name not in self.missing]
        lines = [f"embeddable library of {self.name}, batch {self.batch} (model.c at -Os)", ""]
        lines.append(f"{'code bytes (.text)':24}" + "".join(f"{n:>11}" for n in names))
        for key, v in self.variants.items():
            label = "predict only" if key == "predict" else "train_step + predict"
            lines.append(f"  {label:22}" + "".join(f"{v.code[n]:>11,}" for n in names))
        lines.append("")
        head = ["weights", "state", "arena", "lower bound", "stack", "RAM"]
        lines.append(f"{'':24}" + "".join(f"{h:>13}" for h in head))
        for key, v in self.variants.items():
            m = v.model
            label = "predict only" if key == "predict" else "train_step + predict"
            row = [m.weights_bytes, m.state_bytes, m.arena_bytes, m.arena_lower_bound]
            row += [m.stack_bytes, v.ram_bytes]
            lines.append(f"  {label:22}" + "".join(f"{n:>13,}" for n in row))
        constants = {key: v.constant_bytes for key, v in self.variants.items()}
        if any(constants.values()):
            lines.append("")
            lines.append(f"{'constants (read-only)':24}{'bytes':>11}")
            for key, n in constants.items():
                label = "predict only" if key == "predict" else "train_step + predict"
                lines.append(f"  {label:22}{n:>11,}")
        gcc = [n for n in names if all(n in v.stack for v in self.variants.values())]
        if gcc:
            lines.append("")
            lines.append(f"{'stack measured by GCC':24}" + "".join(f"{n:>11}" for n in gcc))
            for key, v in self.variants.items():
                label = "predict only" if key == "predict" else "train_step + predict"
                lines.append(f"  {label:22}" + "".join(f"{v.stack[n]:>11,}" for n in gcc))
        if self.missing:
            lines.append(f"\nnot measured (no toolchain on PATH): {', '.join(self.missing)}")
        return "\n".join(lines) + "\n"


def measure(
    model: Any, batch: int = 1, options: CompileOptions | None = None, name: str | None = None
) -> Footprint:
    """Compile `model`'s library both ways and measure it with every toolchain found."""
    available = [t for t in TOOLCHAINS if shutil.which(t.cc[0])]
    missing = [t.name for t in TOOLCHAINS if t not in available]
    variants: dict[str, Variant] = {}
    with tempfile.TemporaryDirectory(prefix="tfc-footprint-") as tmp:
        for key, inference_only in (("predict", True), ("train", False)):
            out = Path(tmp) / key
            m = compile_embed(model, out, batch, inference_only=inference_only, options=options)
            if key == "train" and not m.trainable:
                continue
            variant = Variant(m)
            for t in available:
                variant.code[t.name] = 0
                for k, source in enumerate(["model.c", *library_sources()]):
                    obj = f"{t.name}-{k}.o"
                    cmd = [*t.cc, *EMBED_CFLAGS, *SIZE_FLAGS, *t.flags, "-c", source, "-o", obj]
                    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
                    if proc.returncode != 0:
                        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
                    variant.code[t.name] += code_bytes((out / obj).read_bytes())
                entries = [f"{m.prefix}predict"]
                if m.trainable:
                    entries.append(f"{m.prefix}train_step")
                flags = [*EMBED_CFLAGS, *SIZE_FLAGS, *t.flags]
                try:
                    variant.stack[t.name] = max(measure_stack(out, t.cc, flags, entries).values())
                except (RuntimeError, ValueError):
                    pass  # not GCC (no -fcallgraph-info), or a graph it cannot bound
            variants[key] = variant
    label = name or (Path(model).stem if isinstance(model, (str, Path)) else "model")
    return Footprint(label, batch, variants, missing)


def code_bytes(obj: bytes) -> int:
    """The executable bytes of an ELF object (its SHF_EXECINSTR sections), or the size of a
    wasm object's code section."""
    if obj[:4] == b"\0asm":
        return _wasm_code_bytes(obj)
    if obj[:4] != b"\x7fELF":
        raise ValueError("not an ELF or wasm object")
    is64, little = obj[4] == 2, obj[5] == 1
    e = "<" if little else ">"
    if is64:
        shoff, shentsize, shnum = (
            struct.unpack_from(e + "Q", obj, 0x28)[0],
            *struct.unpack_from(e + "HH", obj, 0x3A),
        )
    else:
        shoff, shentsize, shnum = (
            struct.unpack_from(e + "I", obj, 0x20)[0],
            *struct.unpack_from(e + "HH", obj, 0x2E),
        )
    total = 0
    for i in range(shnum):
        base = shoff + i * shentsize
        if is64:
            flags, size = (
                struct.unpack_from(e + "Q", obj, base + 8)[0],
                struct.unpack_from(e + "Q", obj, base + 32)[0],
            )
        else:
            flags, size = (
                struct.unpack_from(e + "I", obj, base + 8)[0],
                struct.unpack_from(e + "I", obj, base + 20)[0],
            )
        if flags & 0x4 and flags & 0x2:  # SHF_EXECINSTR and SHF_ALLOC
            total += size
    return total


def _leb128(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _wasm_code_bytes(obj: bytes) -> int:
    pos, total = 8, 0
    while pos < len(obj):
        section = obj[pos]
        size, pos = _leb128(obj, pos + 1)
        if section == 10:  # the code section: every function body
            total += size
        pos += size
    return total
