"""Reading TensorFlow's V2 checkpoints ("tensor bundles"): `prefix.index` + `prefix.data-*`.

What `tf.compat.v1.train.Saver` (and `tf.train.Checkpoint`) write for checkpoint `prefix`:

- `prefix.index`: a LevelDB table (tfc/io/sstable.py) whose key "" holds a BundleHeaderProto
  and whose every other key, a tensor's name, holds a BundleEntryProto, both in protocol-buffer
  wire format (tfc/io/protowire.py):
      BundleHeaderProto  1 num_shards int32, 2 endianness enum (0 little, 1 big),
                         3 version VersionDef (1 producer, 2 min_consumer, 3 bad_consumers)
      BundleEntryProto   1 dtype DataType, 2 shape TensorShapeProto (2 dim: 1 size),
                         3 shard_id int32, 4 offset int64, 5 size int64, 6 crc32c fixed32,
                         7 slices (set for a partitioned variable saved in slices)
- `prefix.data-SSSSS-of-NNNNN` for each shard S of N: the tensors' raw bytes, C order, in the
  header's byte order; an entry's bytes are `size` bytes at `offset` of its shard, and its
  crc32c is the masked CRC-32C of them (tfc/io/crc32c.py).

Everything is checked when the reader opens, before a tensor is trusted: the table, the
header's shard count, byte order and version, every entry's dtype, shape, shard and byte range
(size = prod(shape) * itemsize, inside its data file). A tensor's checksum is checked when it
is read. A bad file is refused with a `CorruptCheckpointError` (a `tfc.errors.DataLossError`)
naming the file and what is wrong. Numeric and bool tensors are read; string tensors, bfloat16,
quantized types and tensors saved in slices are listed but refused when read, saying so.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.io.crc32c import crc32c, mask_crc32c
from tfc.io.pread import read_at
from tfc.io.protowire import Field, WireFormatError, decode_message
from tfc.io.safetensors import CorruptCheckpointError
from tfc.io.sstable import TableFormatError, read_table
from tfc.ir import dtypes, errors

__all__ = [
    "INDEX_SUFFIX",
    "BUNDLE_VERSION",
    "TF_DATA_TYPES",
    "BundleEntry",
    "TensorBundleReader",
    "data_file_name",
]

INDEX_SUFFIX = ".index"
BUNDLE_VERSION = 1  # the format version this reader implements (TF's kTensorBundleVersion)

# TensorFlow's DataType enum (types.proto) -> (the name TF's messages use, NumPy dtype or None
# where NumPy has no such type and tfc cannot read it)
TF_DATA_TYPES: dict[int, tuple[str, np.dtype | None]] = {
    1: ("float", np.dtype("<f4")),
    2: ("double", np.dtype("<f8")),
    3: ("int32", np.dtype("<i4")),
    4: ("uint8", np.dtype("u1")),
    5: ("int16", np.dtype("<i2")),
    6: ("int8", np.dtype("i1")),
    7: ("string", None),
    8: ("complex64", np.dtype("<c8")),
    9: ("int64", np.dtype("<i8")),
    10: ("bool", np.dtype("bool")),
    11: ("qint8", None),
    12: ("quint8", None),
    13: ("qint32", None),
    14: ("bfloat16", None),
    15: ("qint16", None),
    16: ("quint16", None),
    17: ("uint16", np.dtype("<u2")),
    18: ("complex128", np.dtype("<c16")),
    19: ("half", np.dtype("<f2")),
    20: ("resource", None),
    21: ("variant", None),
    22: ("uint32", np.dtype("<u4")),
    23: ("uint64", np.dtype("<u8")),
}

_VERSION = {1: Field("producer", "int32"), 2: Field("min_consumer", "int32"),
            3: Field("bad_consumers", "int32", repeated=True)}  # fmt: skip
_HEADER = {1: Field("num_shards", "int32"), 2: Field("endianness", "enum"),
           3: Field("version", "message", schema=_VERSION)}  # fmt: skip
_DIM = {1: Field("size", "int64"), 2: Field("name", "string")}
_SHAPE = {2: Field("dim", "message", repeated=True, schema=_DIM),
          3: Field("unknown_rank", "bool")}  # fmt: skip
_EXTENT = {1: Field("start", "int64"), 2: Field("length", "int64")}
_SLICE = {1: Field("extent", "message", repeated=True, schema=_EXTENT)}
_ENTRY = {1: Field("dtype", "enum"), 2: Field("shape", "message", schema=_SHAPE),
          3: Field("shard_id", "int32"), 4: Field("offset", "int64"), 5: Field("size", "int64"),
          6: Field("crc32c", "fixed32"),
          7: Field("slices", "message", repeated=True, schema=_SLICE)}  # fmt: skip
_INT64_MAX = 2**63 - 1


def data_file_name(prefix: str, shard: int, num_shards: int) -> str:
    """The data file of shard `shard` of `num_shards`: prefix.data-00000-of-00001."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


@dataclass(frozen=True)
class BundleEntry:
    """One tensor of a TensorFlow checkpoint, validated: its type, shape and where its bytes lie."""

    name: str
    dtype_enum: int  # TensorFlow's DataType number
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int | None  # masked CRC-32C of the bytes; None where the entry has none
    slices: int  # how many slices a partitioned variable was saved in (0: whole)

    @property
    def tf_dtype_name(self) -> str:
        return TF_DATA_TYPES[self.dtype_enum][0]

    @property
    def np_dtype(self) -> np.dtype | None:
        """The tensor's NumPy dtype (little-endian), or None where tfc cannot read it."""
        return TF_DATA_TYPES[self.dtype_enum][1]


class TensorBundleReader:
    """An open, validated TensorFlow V2 checkpoint: `tensors` (name -> BundleEntry), `get_tensor`.

    `prefix` is the checkpoint's prefix (`dir/model.ckpt`); the data files stay open, so
    tensors read later come from the files that were validated.
    """

    def __init__(self, prefix: str | os.PathLike) -> None:
        self._fds: dict[int, int] = {}  # first: __del__ runs even when the constructor raises
        self.prefix = os.fspath(prefix)
        self.path = self.prefix + INDEX_SUFFIX
        self.metadata: dict[str, str] = {"format": "tensorflow"}
        self._closed = False
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _fail(self, problem: str, path: str | None = None) -> CorruptCheckpointError:
        return CorruptCheckpointError(path or self.path, problem)

    def _open(self) -> None:
        try:
            with open(self.path, "rb") as f:
                table = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"checkpoint {self.path} does not exist"
            ) from None
        try:
            records = read_table(table)
        except TableFormatError as e:
            raise self._fail(f"is not a valid TensorFlow checkpoint index: {e}") from None
        if not records or records[0][0] != b"":
            raise self._fail("has no bundle header (the entry with the empty key)")
        self._read_header(records[0][1])
        entries: dict[str, BundleEntry] = {}
        for key, value in records[1:]:
            if key.startswith(b"\0"):
                continue  # one slice of a partitioned variable, named in TF's binary key code
            try:
                name = key.decode("utf-8")
            except UnicodeDecodeError:
                raise self._fail(f"has a tensor name that is not UTF-8: {key!r}") from None
            entries[name] = self._read_entry(name, value)
        self.tensors = entries
        self._open_data_files()

    def _read_header(self, value: bytes) -> None:
        try:
            header = decode_message(value, _HEADER)
        except WireFormatError as e:
            raise self._fail(f"has a corrupt bundle header: {e}") from None
        num_shards = header.get("num_shards", 0)
        if not 1 <= num_shards <= 99999:
            raise self._fail(f"has a bundle header with {num_shards} shards")
        endianness = header.get("endianness", 0)
        if endianness not in (0, 1):
            raise self._fail(f"has a bundle header with unknown byte order {endianness}")
        version = header.get("version", {})
        min_consumer = version.get("min_consumer", 0)
        if min_consumer > BUNDLE_VERSION or BUNDLE_VERSION in version.get("bad_consumers", []):
            raise self._fail(
                f"needs a newer reader: format version {version.get('producer', 0)} asks for "
                f"readers of version >= {min_consumer}, and tfc's is {BUNDLE_VERSION}"
            )
        self.num_shards = num_shards
        self.byte_order = "<" if endianness == 0 else ">"

    def _read_entry(self, name: str, value: bytes) -> BundleEntry:
        try:
            entry = decode_message(value, _ENTRY)
        except WireFormatError as e:
            raise self._fail(f"has a corrupt entry for tensor '{name}': {e}") from None
        dtype = entry.get("dtype", 0)
        if dtype not in TF_DATA_TYPES:
            raise self._fail(f"gives tensor '{name}' unknown dtype {dtype}")
        shape_proto = entry.get("shape", {})
        if shape_proto.get("unknown_rank"):
            raise self._fail(f"gives tensor '{name}' an unknown rank")
        shape = tuple(d.get("size", 0) for d in shape_proto["dim"]) if shape_proto else ()
        if any(d < 0 for d in shape):
            raise self._fail(f"gives tensor '{name}' shape {list(shape)} with an unknown dimension")
        shard, offset, size = entry.get("shard_id", 0), entry.get("offset", 0), entry.get("size", 0)
        if not 0 <= shard < self.num_shards:
            raise self._fail(
                f"puts tensor '{name}' in shard {shard}; the header says {self.num_shards} shards"
            )
        if offset < 0 or size < 0 or offset > _INT64_MAX - size:
            raise self._fail(f"gives tensor '{name}' byte range offset {offset}, size {size}")
        result = BundleEntry(name, dtype, shape, shard, offset, size, entry.get("crc32c"),
                             len(entry["slices"]))  # fmt: skip
        np_dtype = result.np_dtype
        if np_dtype is not None and not result.slices:
            expected = math.prod(shape) * np_dtype.itemsize
            if size != expected:
                raise self._fail(
                    f"gives tensor '{name}' ({result.tf_dtype_name} {list(shape)}) {size} bytes; "
                    f"its shape and dtype need {expected}"
                )
        return result

    def _open_data_files(self) -> None:
        sizes: dict[int, int] = {}
        for shard in sorted({e.shard_id for e in self.tensors.values() if not e.slices}):
            path = data_file_name(self.prefix, shard, self.num_shards)
            try:
                self._fds[shard] = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except FileNotFoundError:
                raise errors.NotFoundError(
                    None, None, f"checkpoint {self.prefix}: data file {path} does not exist"
                ) from None
            sizes[shard] = os.fstat(self._fds[shard]).st_size
        for entry in self.tensors.values():
            if entry.slices:
                continue
            have = sizes[entry.shard_id]
            if entry.offset + entry.size > have:
                raise self._fail(
                    f"is truncated: tensor '{entry.name}' needs bytes {entry.offset} to "
                    f"{entry.offset + entry.size}, the file has {have}",
                    data_file_name(self.prefix, entry.shard_id, self.num_shards),
                )

    # -- TF's CheckpointReader interface ---------------------------------------------------------
    def has_tensor(self, name: str) -> bool:
        return name in self.tensors

    def get_tensor(self, name: str) -> np.ndarray:
        """The tensor `name` as a new array (native byte order), its checksum verified."""
        if self._closed:
            raise ValueError(f"checkpoint {self.prefix} is closed")
        entry = self.tensors.get(name)
        if entry is None:
            raise errors.NotFoundError(
                None, None, f"Key {name} not found in checkpoint {self.prefix}"
            )
        if entry.slices:
            raise errors.UnimplementedError(
                None, None, f"tensor '{name}' of checkpoint {self.prefix} was saved in "
                f"{entry.slices} slices (a partitioned variable); tfc reads only whole tensors",
            )  # fmt: skip
        if entry.np_dtype is None:
            raise errors.UnimplementedError(
                None, None, f"tensor '{name}' of checkpoint {self.prefix} has dtype "
                f"{entry.tf_dtype_name}, which tfc's checkpoint reader does not read",
            )  # fmt: skip
        data_path = data_file_name(self.prefix, entry.shard_id, self.num_shards)
        array = np.empty(entry.shape, dtype=entry.np_dtype.newbyteorder(self.byte_order))
        raw = array.reshape(-1).view(np.uint8)
        if read_at(self._fds[entry.shard_id], entry.offset, raw) != raw.size:
            # the file shrank after validation: someone wrote it in place
            raise self._fail(f"is truncated: tensor '{name}' ends past the end", data_path)
        if entry.crc32c is not None and mask_crc32c(crc32c(raw)) != entry.crc32c:
            raise self._fail(
                f"is corrupt: tensor '{name}' (bytes {entry.offset} to "
                f"{entry.offset + entry.size}) does not match its checksum",
                data_path,
            )
        if entry.np_dtype.kind == "b":
            bad = raw[raw > 1]
            if bad.size:
                raise self._fail(
                    f"is corrupt: tensor '{name}' of dtype bool holds byte value {int(bad[0])} "
                    "(not 0 or 1)",
                    data_path,
                )
        return array.astype(array.dtype.newbyteorder("="), copy=False)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(entry.shape) for name, entry in self.tensors.items()}

    def get_variable_to_dtype_map(self) -> dict[str, Any]:
        """name -> tfc DType; a NumPy dtype where tfc has no DType for it, else TF's name."""
        result: dict[str, Any] = {}
        for name, entry in self.tensors.items():
            if entry.np_dtype is None:
                result[name] = entry.tf_dtype_name
                continue
            try:
                result[name] = dtypes.as_dtype(entry.np_dtype)
            except TypeError:
                result[name] = entry.np_dtype
        return result

    def close(self) -> None:
        self._closed = True
        while self._fds:
            _, fd = self._fds.popitem()
            os.close(fd)

    def __enter__(self) -> TensorBundleReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
