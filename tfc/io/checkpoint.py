"""Reading checkpoint files (`CheckpointReader`), and the one place to import checkpoints from.

tfc writes a checkpoint as one safetensors file, its whole header validated before any tensor
is read: tfc/io/safetensors.py holds the format (writing, and the header rules shared with the
C runtime), tfc/io/atomic_write.py the atomic writes, tfc/io/checkpoint_state.py the
directory's `checkpoint` state file, tfc/io/checkpoint_cleanup.py what interrupted saves leave.
It also reads TensorFlow's V2 checkpoints (`.index` + `.data-*`, tfc/io/tensor_bundle.py):
`find_checkpoint` tells which format a path names and `open_checkpoint` opens either behind the
same reader interface. Their public names are re-exported here.
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any

import numpy as np

from tfc.io.atomic_write import write_file_atomically
from tfc.io.checkpoint_cleanup import clean_checkpoint_directory
from tfc.io.checkpoint_state import CheckpointState, format_checkpoint_state, parse_checkpoint_state
from tfc.io.pread import read_at
from tfc.io.safetensors import (
    MAX_HEADER_BYTES,
    SUFFIX,
    CorruptCheckpointError,
    TensorInfo,
    parse_header,
    write_safetensors,
)
from tfc.io.tensor_bundle import INDEX_SUFFIX, BundleEntry, TensorBundleReader, data_file_name
from tfc.ir import errors

__all__ = [
    "SUFFIX",
    "MAX_HEADER_BYTES",
    "CorruptCheckpointError",
    "TensorInfo",
    "CheckpointReader",
    "INDEX_SUFFIX",
    "BundleEntry",
    "TensorBundleReader",
    "data_file_name",
    "find_checkpoint",
    "open_checkpoint",
    "write_safetensors",
    "read_safetensors",
    "write_file_atomically",
    "clean_checkpoint_directory",
    "CheckpointState",
    "parse_checkpoint_state",
    "format_checkpoint_state",
]


class CheckpointReader:
    """An open, validated safetensors file: `tensors` (name -> info), `metadata`, `get_tensor`.

    The header is checked in full when the reader is made; tensor data is read on demand from
    the same open file, so a checkpoint renamed over this one meanwhile does not mix in.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self._fd = -1  # first: __del__ runs even when the constructor raises
        self.path = os.fspath(path)
        try:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"checkpoint {self.path} does not exist"
            ) from None
        try:
            self._validate()
        except BaseException:
            self.close()
            raise

    def _fail(self, problem: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(self.path, problem)

    def _read_into(self, offset: int, buffer: Any) -> int:
        """Fill `buffer` from `offset`; returns the bytes read (fewer only at end of file)."""
        return read_at(self._fd, offset, buffer)

    def _read_exact(self, offset: int, size: int) -> bytes:
        buffer = bytearray(size)
        return bytes(buffer[: self._read_into(offset, buffer)])

    def _validate(self) -> None:
        size = os.fstat(self._fd).st_size
        if size < 8:
            raise self._fail(f"is truncated: {size} bytes, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", self._read_exact(0, 8))
        if n > MAX_HEADER_BYTES:
            raise self._fail(
                f"has a corrupt header length: {n} bytes exceeds the safetensors limit of "
                f"{MAX_HEADER_BYTES}"
            )
        if 8 + n > size:
            raise self._fail(
                f"is truncated: header length says {n} header bytes, file has {size - 8}"
            )
        tensors, metadata, data_bytes = parse_header(self.path, self._read_exact(8, n))
        have = size - 8 - n
        if have < data_bytes:
            raise self._fail(f"is truncated: header says {data_bytes} data bytes, file has {have}")
        if have > data_bytes:
            raise self._fail(
                f"has {have - data_bytes} bytes of trailing garbage after the {data_bytes} data "
                "bytes its header describes"
            )
        self.tensors = tensors
        self.metadata = metadata
        self._data_start = 8 + n
        self._size = size

    def has_tensor(self, name: str) -> bool:
        return name in self.tensors

    def get_tensor(self, name: str) -> np.ndarray:
        """The tensor `name` as a new array (native byte order)."""
        if self._fd < 0:
            raise ValueError(f"checkpoint {self.path} is closed")
        info = self.tensors.get(name)
        if info is None:
            raise errors.NotFoundError(
                None, None, f"Key {name} not found in checkpoint {self.path}"
            )
        array = np.empty(info.shape, dtype=info.np_dtype)
        raw = array.reshape(-1).view(np.uint8)
        if self._read_into(self._data_start + info.begin, raw) != raw.size:
            # the file shrank after validation: someone wrote it in place
            raise self._fail(f"is truncated: tensor '{name}' ends past the end of the file")
        if info.dtype == "BOOL":
            bad = raw[raw > 1]
            if bad.size:
                raise self._fail(
                    f"is corrupt: tensor '{name}' of dtype BOOL holds byte value {int(bad[0])} "
                    "(not 0 or 1)"
                )
        return array.astype(array.dtype.newbyteorder("="), copy=False)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(info.shape) for name, info in self.tensors.items()}

    def get_variable_to_dtype_map(self) -> dict[str, Any]:
        from tfc.ir import dtypes

        return {name: dtypes.as_dtype(info.np_dtype) for name, info in self.tensors.items()}

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def read_safetensors(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every tensor of a safetensors file, and its `__metadata__` ({} when it has none)."""
    with CheckpointReader(path) as reader:
        arrays = {name: reader.get_tensor(name) for name in reader.tensors}
        return arrays, dict(reader.metadata or {})


# -- which format a path names -------------------------------------------------------------------
_DATA_FILE = re.compile(r"\.data-\d{5}-of-\d{5}$")


def find_checkpoint(path: str | os.PathLike) -> tuple[str, str]:
    """("safetensors", file) or ("tensorflow", prefix): the checkpoint `path` names.

    `path` is a prefix (`dir/model.ckpt`, whose `.safetensors` file or TF `.index` file
    exists; tfc's own file wins if both do), a `.safetensors` file, or a TF checkpoint's
    `.index` or `.data-*` file. A prefix with neither file names a safetensors file that does
    not exist, so opening it says which file is missing.
    """
    path = os.fspath(path)
    if path.endswith(SUFFIX):
        return "safetensors", path
    if path.endswith(INDEX_SUFFIX) and os.path.isfile(path):
        return "tensorflow", path[: -len(INDEX_SUFFIX)]
    if _DATA_FILE.search(path) and os.path.isfile(path):
        return "tensorflow", _DATA_FILE.sub("", path)
    if not os.path.isfile(path + SUFFIX) and os.path.isfile(path + INDEX_SUFFIX):
        return "tensorflow", path
    return "safetensors", path + SUFFIX


def open_checkpoint(path: str | os.PathLike) -> CheckpointReader | TensorBundleReader:
    """A validated reader of the checkpoint `path` names (see `find_checkpoint`), either format.

    Both readers have `path`, `tensors` (name -> info with `shape`, `np_dtype` and
    `tf_dtype_name`), `has_tensor`, `get_tensor`, the shape and dtype maps, and `close`.
    """
    kind, where = find_checkpoint(path)
    return TensorBundleReader(where) if kind == "tensorflow" else CheckpointReader(where)
