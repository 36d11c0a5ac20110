"""The `checkpoint` state file beside checkpoints: TensorFlow's CheckpointState.

It is protocol buffer text format (`model_checkpoint_path: "..."`), parsed and written here as
TensorFlow does, so TF's tools and runtime/src/tfc_checkpoint_state.c read each other's files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CheckpointState", "parse_checkpoint_state", "format_checkpoint_state"]


@dataclass
class CheckpointState:
    """TensorFlow's CheckpointState: the newest checkpoint prefix and the ones still kept."""

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float = 0.0

    def __str__(self) -> str:
        return format_checkpoint_state(self)


_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\", "a": "\a",
                   "b": "\b", "f": "\f", "v": "\v", "?": "?"}  # fmt: skip
_TOKEN = re.compile(
    r"""\s+|\#[^\n]*|(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*"""
    r"""(?:(?P<str>(?:"(?:[^"\\\n]|\\.)*"\s*|'(?:[^'\\\n]|\\.)*'\s*)+)|(?P<num>[-+0-9.eEinfINFa]+))"""
)


def _unescape(body: str) -> str:
    """A text-format string literal's bytes (C escapes, octal and hex) decoded as UTF-8."""
    out = bytearray()
    i = 0
    raw = body.encode("utf-8")
    while i < len(raw):
        c = raw[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        esc = chr(raw[i + 1])
        if esc in "01234567":
            digits = re.match(rb"[0-7]{1,3}", raw[i + 1 : i + 4]).group()
            out.append(int(digits, 8) & 0xFF)
            i += 1 + len(digits)
        elif esc in "xX":
            digits = re.match(rb"[0-9A-Fa-f]{1,2}", raw[i + 2 : i + 4])
            if digits is None:
                raise ValueError("\\x escape without hex digits")
            out.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        elif esc in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[esc].encode()
            i += 2
        else:
            raise ValueError(f"unknown escape \\{esc}")
    return out.decode("utf-8")


def parse_checkpoint_state(text: str) -> CheckpointState:
    """Parse a `checkpoint` state file; ValueError says where it is malformed."""
    state = CheckpointState()
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise ValueError(f"line {line}: cannot parse {text[pos : pos + 40]!r}")
        pos = m.end()
        name = m.group("name")
        if name is None:
            continue
        if m.group("str") is not None:
            literals = re.findall(r""""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'""", m.group("str"))
            value: Any = "".join(_unescape(a or b) for a, b in literals)
        else:
            value = float(m.group("num"))
        if name == "model_checkpoint_path" and isinstance(value, str):
            state.model_checkpoint_path = value
        elif name == "all_model_checkpoint_paths" and isinstance(value, str):
            state.all_model_checkpoint_paths.append(value)
        elif name == "all_model_checkpoint_timestamps" and isinstance(value, float):
            state.all_model_checkpoint_timestamps.append(value)
        elif name == "last_preserved_timestamp" and isinstance(value, float):
            state.last_preserved_timestamp = value
        else:
            line = text.count("\n", 0, m.start()) + 1
            raise ValueError(f"line {line}: unexpected field {name} with value {value!r}")
    return state


def _escape(value: str) -> str:
    """C-style escaping as protobuf's text format writes it (non-ASCII bytes in octal)."""
    out = []
    for byte in value.encode("utf-8"):
        char = chr(byte)
        if char in "\"'\\":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def format_checkpoint_state(state: CheckpointState) -> str:
    lines = [f'model_checkpoint_path: "{_escape(state.model_checkpoint_path)}"']
    lines += [
        f'all_model_checkpoint_paths: "{_escape(p)}"' for p in state.all_model_checkpoint_paths
    ]
    lines += [
        f"all_model_checkpoint_timestamps: {t!r}" for t in state.all_model_checkpoint_timestamps
    ]
    if state.last_preserved_timestamp:
        lines.append(f"last_preserved_timestamp: {state.last_preserved_timestamp!r}")
    return "\n".join(lines) + "\n"
