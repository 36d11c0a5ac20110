"""TFRecord files: records framed by their length and masked CRC-32Cs, as TensorFlow writes them.

Each record is: the data's length (uint64, little-endian), the masked CRC-32C of those 8 bytes
(uint32), the data, the masked CRC-32C of the data (uint32). TensorBoard's event files are
TFRecord files of Event messages. Reading checks both checksums and says which record of which
file is damaged; a file cut short inside its last record (a writer still writing, or killed)
ends the records read so far unless `strict`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

from tfc.io.crc32c import crc32c, mask_crc32c
from tfc.ir.errors import DataLossError

__all__ = ["encode_record", "write_record", "read_records"]

_HEADER = struct.Struct("<QI")


def encode_record(data: bytes) -> bytes:
    """One record's bytes: header, data, footer."""
    data = bytes(data)
    length = struct.pack("<Q", len(data))
    return (
        length
        + struct.pack("<I", mask_crc32c(crc32c(length)))
        + data
        + struct.pack("<I", mask_crc32c(crc32c(data)))
    )


def write_record(stream: BinaryIO, data: bytes) -> None:
    stream.write(encode_record(data))


def read_records(path: str | os.PathLike, strict: bool = False) -> Iterator[bytes]:
    """The data of every record of the TFRecord file at `path`, in order. A damaged record
    raises DataLossError naming the file, the record and its offset; a last record cut short
    ends the iteration (or raises, when `strict`)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        index = 0
        while True:
            offset = f.tell()
            header = f.read(_HEADER.size)
            if not header:
                return
            if len(header) < _HEADER.size:
                if strict:
                    _lost(path, index, offset, "the file ends inside a record header")
                return
            length, masked = _HEADER.unpack(header)
            if mask_crc32c(crc32c(header[:8])) != masked:
                _lost(path, index, offset, "corrupted record length (its CRC does not match)")
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                if strict:
                    _lost(path, index, offset, "the file ends inside a record")
                return
            if mask_crc32c(crc32c(data)) != struct.unpack("<I", footer)[0]:
                _lost(path, index, offset, "corrupted record data (its CRC does not match)")
            yield data
            index += 1


def _lost(path: str, index: int, offset: int, what: str) -> Any:
    raise DataLossError(None, None, f"{path}: record {index} at byte {offset}: {what}")
