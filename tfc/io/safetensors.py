"""The safetensors format in pure NumPy: files written atomically, every header field checked.

Layout (https://github.com/huggingface/safetensors, "Format"): an 8-byte little-endian header
length N, N bytes of UTF-8 JSON mapping each tensor name to {"dtype", "shape", "data_offsets"}
(plus an optional "__metadata__" object of strings), then the raw little-endian, C-ordered data.
Files are written as the reference implementation writes them: tensors sorted by descending
alignment (I64, F64, F32, I32, BOOL), then by name, each packed after the previous one; the
header padded with spaces to a multiple of 8 bytes so every tensor starts aligned; compact JSON.

tfc accepts the subset it can hold in variables: dtypes F32, F64, I32, I64 and BOOL, names and
metadata without NUL characters (the C runtime keeps them as C strings). Reading refuses with a
`CorruptCheckpointError` (a `tfc.errors.DataLossError`) naming the file and what is wrong:
header length vs file size, JSON syntax, duplicate keys, unknown fields and dtypes, negative or
non-integer shapes and offsets, byte counts that are not prod(shape) * itemsize, offsets that
overlap, leave gaps or do not start at 0, data shorter (truncated) or longer (trailing garbage)
than the header says, and BOOL bytes other than 0 and 1. runtime/src/tfc_safetensors_header.c
applies the same rules with the same messages.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.io.atomic_write import write_file_atomically
from tfc.ir import errors

__all__ = [
    "SUFFIX",
    "MAX_HEADER_BYTES",
    "CorruptCheckpointError",
    "TensorInfo",
    "write_safetensors",
    "parse_header",
]

SUFFIX = ".safetensors"
MAX_HEADER_BYTES = 100_000_000  # the reference reader's limit (MAX_HEADER_SIZE)
_INT64_MAX = 2**63 - 1

# safetensors dtype code -> little-endian NumPy dtype. Declaration order is the reference's
# Dtype enum order (ascending alignment), which its writer sorts by, descending.
_DTYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype("bool"),
    "I32": np.dtype("<i4"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
}
_RANK = {code: i for i, code in enumerate(_DTYPES)}
_CODE_BY_KIND = {(dt.kind, dt.itemsize): code for code, dt in _DTYPES.items()}
_FIELDS = ("dtype", "shape", "data_offsets")
_TF_NAMES = {"BOOL": "bool", "I32": "int32", "F32": "float", "F64": "double", "I64": "int64"}


class CorruptCheckpointError(errors.DataLossError):
    """A checkpoint file that is not a valid safetensors file tfc can read."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(None, None, f"checkpoint {path} {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's header entry, validated: where its bytes lie in the data section."""

    name: str
    dtype: str  # safetensors code: "F32", "F64", "I32", "I64" or "BOOL"
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def np_dtype(self) -> np.dtype:
        return _DTYPES[self.dtype]

    @property
    def tf_dtype_name(self) -> str:
        """The dtype as TensorFlow's messages spell it ("float", "double", "int32", ...)."""
        return _TF_NAMES[self.dtype]


# -- writing -------------------------------------------------------------------------------------
def _dtype_code(name: str, array: np.ndarray) -> str:
    code = _CODE_BY_KIND.get((array.dtype.kind, array.dtype.itemsize))
    if code is None:
        raise ValueError(
            f"tensor '{name}' has dtype {array.dtype}; tfc checkpoints hold float32, float64, "
            "int32, int64 and bool"
        )
    return code


def _check_text(what: str, text: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    if "\0" in text:
        raise ValueError(f"{what} {text!r} contains a NUL character")
    text.encode("utf-8")  # raises on lone surrogates, which no reader could decode


def _header_bytes(
    entries: list[tuple[str, str, tuple[int, ...], int]], metadata: Mapping[str, str] | None
) -> bytes:
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata)}
    offset = 0
    for name, code, shape, nbytes in entries:
        header[name] = {
            "dtype": code,
            "shape": list(shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    if len(text) > MAX_HEADER_BYTES:
        raise ValueError(
            f"safetensors header of {len(text)} bytes exceeds the limit of {MAX_HEADER_BYTES}"
        )
    return text


def write_safetensors(
    path: str | os.PathLike, tensors: Mapping[str, Any], metadata: Mapping[str, str] | None = None
) -> None:
    """Write `tensors` (name -> array) and `metadata` to `path` atomically, as safetensors."""
    path = os.fspath(path)
    if metadata is not None:
        for key, value in metadata.items():
            _check_text("metadata key", key)
            _check_text(f"metadata value of {key!r}", value)
    arrays = []
    for name, value in tensors.items():
        _check_text("tensor name", name)
        if name == "__metadata__":
            raise ValueError("'__metadata__' is reserved by safetensors and cannot name a tensor")
        array = np.asarray(value)
        code = _dtype_code(name, array)
        array = np.asarray(array, dtype=_DTYPES[code], order="C")  # keeps 0-d arrays 0-d
        arrays.append((name, code, array))
    arrays.sort(key=lambda item: (-_RANK[item[1]], item[0]))
    entries = [(name, code, array.shape, array.nbytes) for name, code, array in arrays]
    header = _header_bytes(entries, metadata)

    def chunks() -> Iterable[Any]:
        yield struct.pack("<Q", len(header)) + header
        for _, _, array in arrays:
            yield memoryview(array.reshape(-1).view(np.uint8))

    write_file_atomically(path, chunks())


# -- reading -------------------------------------------------------------------------------------
class _HeaderProblem(Exception):
    """Raised inside header validation; parse_header makes it a CorruptCheckpointError."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        for text in (key, value):
            if isinstance(text, str) and not _encodable(text):
                raise _HeaderProblem("has a corrupt header: a string holds a lone surrogate escape")
        if key in out:
            raise _HeaderProblem(f"has a corrupt header: duplicate key '{key}'")
        out[key] = value
    return out


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _not_json(name: str) -> Any:
    raise _HeaderProblem(f"has a corrupt header: invalid JSON: {name} is not a JSON value")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64_MAX


def _check_nul(what: str, text: str) -> None:
    if "\0" in text:  # the C runtime holds names and metadata as C strings
        raise _HeaderProblem(f"has a corrupt header: {what} contains a NUL character")


def _tensor_info(name: str, entry: Any) -> TensorInfo:
    where = f"has a corrupt header: tensor '{name}'"
    _check_nul("a tensor name", name)
    if not isinstance(entry, dict):
        raise _HeaderProblem(f"{where}: entry is not an object")
    for key in entry:
        if key not in _FIELDS:
            raise _HeaderProblem(f"{where}: unknown field '{key}'")
    for key in _FIELDS:
        if key not in entry:
            raise _HeaderProblem(f"{where}: field '{key}' is missing")
    code = entry["dtype"]
    if not isinstance(code, str) or code not in _DTYPES:
        raise _HeaderProblem(
            f"{where}: field 'dtype' is {json.dumps(code, ensure_ascii=False)}, not one of F32, "
            "F64, I32, I64, BOOL"
        )
    shape = entry["shape"]
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise _HeaderProblem(f"{where}: field 'shape' is not a list of non-negative integers")
    offsets = entry["data_offsets"]
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_is_count, offsets)):
        raise _HeaderProblem(
            f"{where}: field 'data_offsets' is not a list of two non-negative integers"
        )
    begin, end = offsets
    if begin > end:
        raise _HeaderProblem(
            f"{where}: field 'data_offsets' [{begin}, {end}] ends before it begins"
        )
    count = 1
    for dim in shape:  # left to right, as the reference checks for overflow
        count *= dim
        if count > _INT64_MAX:
            raise _HeaderProblem(f"{where}: field 'shape' {shape} overflows a 64-bit size")
    nbytes = count * _DTYPES[code].itemsize
    if nbytes > _INT64_MAX:
        raise _HeaderProblem(f"{where}: field 'shape' {shape} overflows a 64-bit size")
    if end - begin != nbytes:
        raise _HeaderProblem(
            f"{where}: field 'data_offsets' [{begin}, {end}] holds {end - begin} bytes, but "
            f"{code} shape {shape} needs {nbytes}"
        )
    return TensorInfo(name, code, tuple(shape), begin, end)


def _parse_json_header(raw: bytes) -> tuple[dict[str, TensorInfo], dict[str, str] | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _HeaderProblem(f"has a corrupt header: not valid UTF-8 at byte {e.start}") from None
    if not text.startswith("{"):
        raise _HeaderProblem("has a corrupt header: it does not start with '{'")
    try:
        header = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_not_json)
    except RecursionError:
        raise _HeaderProblem("has a corrupt header: invalid JSON: nested too deeply") from None
    except json.JSONDecodeError as e:
        raise _HeaderProblem(
            f"has a corrupt header: invalid JSON at byte {e.pos}: {e.msg}"
        ) from None
    metadata = header.pop("__metadata__", None)
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise _HeaderProblem("has a corrupt header: field '__metadata__' is not an object")
        for key, value in metadata.items():
            _check_nul("a __metadata__ key", key)
            if not isinstance(value, str):
                raise _HeaderProblem(
                    f"has a corrupt header: field '__metadata__' value of '{key}' is not a string"
                )
            _check_nul(f"__metadata__ value of '{key}'", value)
    tensors = {name: _tensor_info(name, entry) for name, entry in header.items()}
    return tensors, metadata


def _check_layout(tensors: dict[str, TensorInfo]) -> int:
    """The data section must be the tensors back to back from 0; returns its size."""
    expected, previous = 0, None
    for info in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if info.begin != expected:
            where = f"has a corrupt header: tensor '{info.name}': field 'data_offsets'"
            span = f"[{info.begin}, {info.end}]"
            if previous is None:
                raise _HeaderProblem(f"{where} {span}: the data does not start at offset 0")
            other = f"tensor '{previous.name}' [{previous.begin}, {previous.end}]"
            if info.begin < expected:
                raise _HeaderProblem(f"{where} {span} overlaps {other}")
            raise _HeaderProblem(f"{where} {span} leaves a gap after {other}")
        expected, previous = info.end, info
    return expected


def parse_header(path: str, raw: bytes) -> tuple[dict[str, TensorInfo], dict[str, str] | None, int]:
    """Validate the header bytes `raw` of the file `path` (named in errors).

    Returns the tensors by name, the `__metadata__` (None when absent) and the size of the data
    section the header describes; raises CorruptCheckpointError on the first problem.
    """
    try:
        tensors, metadata = _parse_json_header(raw)
        return tensors, metadata, _check_layout(tensors)
    except _HeaderProblem as e:
        raise CorruptCheckpointError(path, str(e)) from None
