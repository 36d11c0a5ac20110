"""The records of one input file, as TF1's readers and tf.data's file datasets split it.

Four formats: TFRecord files (tfc/io/tfrecord.py), text lines, fixed-length records between a
header and a footer, and whole files. Each yields (position, data) pairs, where the position
is what TF's reader ops put after the file name in their keys ("name:position"): the byte
offset of a TFRecord, the 1-based number of a line (skipped header lines counted), the
0-based number of a fixed-length record. Compressed files ("ZLIB", "GZIP") are read through
their uncompressed stream.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tfc.io.tfrecord import RecordReader, compression_name, open_for_reading
from tfc.ir import errors

__all__ = ["RecordFormat", "file_records", "FORMATS"]

_CHUNK = 1 << 16

FORMATS = ("tfrecord", "text_line", "fixed_length", "whole_file", "identity")


@dataclass(frozen=True)
class RecordFormat:
    """How a file is split into records: `kind` (one of FORMATS) and its parameters."""

    kind: str
    compression: str = ""
    skip_header_lines: int = 0
    record_bytes: int = 0
    header_bytes: int = 0
    footer_bytes: int = 0
    hop_bytes: int = 0
    # fixed-length records filling the body exactly (tf.data's rule; the reader op's is looser)
    exact: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FORMATS:
            raise ValueError(f"unknown record format {self.kind!r}; one of {FORMATS}")
        object.__setattr__(self, "compression", compression_name(self.compression))
        for field in ("skip_header_lines", "header_bytes", "footer_bytes", "hop_bytes"):
            if getattr(self, field) < 0:
                raise ValueError(f"{field} must be >= 0, got {getattr(self, field)}")
        if self.kind == "fixed_length" and self.record_bytes <= 0:
            raise ValueError(f"record_bytes must be > 0, got {self.record_bytes}")


def file_records(path: str, fmt: RecordFormat) -> Iterator[tuple[int | None, bytes]]:
    """(position, data) of every record of the file at `path`; the position is None for the
    formats whose keys are the file name alone (whole files, identity)."""
    if fmt.kind == "tfrecord":
        with RecordReader(path, fmt.compression, strict=True) as reader:
            while True:
                offset = reader.offset
                data = reader.read()
                if data is None:
                    return
                yield offset, data
    elif fmt.kind == "text_line":
        yield from _text_lines(path, fmt)
    elif fmt.kind == "fixed_length":
        yield from _fixed_length(path, fmt)
    elif fmt.kind == "whole_file":
        stream = open_for_reading(path, fmt.compression)
        try:
            yield None, _read_all(stream)
        finally:
            stream.close()
    else:  # identity: the work item is the record
        yield None, path.encode("utf-8", "surrogateescape")


def _read_all(stream: Any) -> bytes:
    parts = []
    while chunk := stream.read(_CHUNK):
        parts.append(chunk)
    return b"".join(parts)


def _chunks(path: str, compression: str) -> Iterator[bytes]:
    stream = open_for_reading(path, compression)
    try:
        while chunk := stream.read(_CHUNK):
            yield chunk
    finally:
        stream.close()


def _text_lines(path: str, fmt: RecordFormat) -> Iterator[tuple[int, bytes]]:
    """Lines without their "\\n" (and a "\\r" before it, as TF's InputBuffer::ReadLine); a
    last line without a newline counts unless empty."""
    number = 0
    pending = b""
    for chunk in _chunks(path, fmt.compression):
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            number += 1
            if number > fmt.skip_header_lines:
                yield number, line[:-1] if line.endswith(b"\r") else line
    if pending.endswith(b"\r"):
        pending = pending[:-1]
    if pending:
        number += 1
        if number > fmt.skip_header_lines:
            yield number, pending


def _fixed_length(path: str, fmt: RecordFormat) -> Iterator[tuple[int, bytes]]:
    """Records of `record_bytes` starting after `header_bytes`, every `hop_bytes` (or
    back to back), each ending at least `footer_bytes` before the end of the file."""
    hop = fmt.hop_bytes or fmt.record_bytes
    if fmt.exact and not fmt.compression and os.path.isfile(path):
        _check_body(path, os.path.getsize(path), fmt, errors.InvalidArgumentError)
    buffer = b""
    start = fmt.header_bytes  # where the next record begins, in the file
    base = 0  # the file position of buffer[0]
    index = 0
    for chunk in _chunks(path, fmt.compression):
        buffer += chunk
        # a record is certain once the footer's bytes after it are there
        while start + fmt.record_bytes + fmt.footer_bytes <= base + len(buffer):
            at = start - base
            yield index, buffer[at : at + fmt.record_bytes]
            index += 1
            start += hop
        drop = min(start - base, len(buffer))
        if drop > 0:
            buffer, base = buffer[drop:], base + drop
    if fmt.exact and fmt.compression:  # its length is known only now
        _check_body(path, base + len(buffer), fmt, errors.DataLossError)


def _check_body(path: str, size: int, fmt: RecordFormat, error: type) -> None:
    body = size - fmt.header_bytes - fmt.footer_bytes
    if body % fmt.record_bytes:
        raise error(
            None, None, f"Excluding the header ({fmt.header_bytes} bytes) and footer "
            f"({fmt.footer_bytes} bytes), input file \"{path}\" has body length {body} bytes, "
            f"which is not an exact multiple of the record length ({fmt.record_bytes} bytes).",
        )  # fmt: skip
