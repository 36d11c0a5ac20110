"""TFRecord files: records framed by their length and masked CRC-32Cs, as TensorFlow writes them.

Each record is: the data's length (uint64, little-endian), the masked CRC-32C of those 8 bytes
(uint32), the data, the masked CRC-32C of the data (uint32). A file may be compressed as a
whole, as TF's `TFRecordOptions` say: "ZLIB" (a zlib stream) or "GZIP" (a gzip member); offsets
are then those of the uncompressed stream, as TF counts them. TensorBoard's event files are
TFRecord files of Event messages.

Reading checks both checksums; a damaged record raises DataLossError with TensorFlow's words
("corrupted record at 12") after the file, the record and its offset. A file cut short inside
its last record (a writer still writing, or killed) ends the records read so far, unless
`strict` (TF's readers are strict: "truncated record at 21").

The `tf.python_io` API is here too: `TFRecordWriter`, `tf_record_iterator`, `TFRecordOptions`
and `TFRecordCompressionType`.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

from tfc.io.crc32c import crc32c, mask_crc32c
from tfc.ir.errors import DataLossError, NotFoundError

__all__ = [
    "encode_record",
    "write_record",
    "read_records",
    "RecordReader",
    "compression_name",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "tf_record_iterator",
]

_HEADER = struct.Struct("<QI")
HEADER_BYTES = _HEADER.size
FOOTER_BYTES = 4
_CHUNK = 1 << 16


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


# -- compression ---------------------------------------------------------------------------------
class TFRecordCompressionType:
    """`tf.python_io.TFRecordCompressionType`: how a whole TFRecord file is compressed."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_TYPE_NAMES = {
    TFRecordCompressionType.NONE: "",
    TFRecordCompressionType.ZLIB: "ZLIB",
    TFRecordCompressionType.GZIP: "GZIP",
}


def compression_name(options: Any) -> str:
    """ "", "ZLIB" or "GZIP" from what TF accepts as a reader's or writer's compression: None,
    a name ("" or "NONE" for none), a TFRecordCompressionType, or TFRecordOptions."""
    if options is None:
        return ""
    if isinstance(options, TFRecordOptions):
        options = options.compression_type
    if isinstance(options, bytes):
        options = options.decode()
    if isinstance(options, str):
        name = options.upper()
        if name in ("", "NONE", "ZLIB", "GZIP"):
            return "" if name == "NONE" else name
        raise ValueError(f"Unsupported compression type: {options!r}; use '', 'ZLIB' or 'GZIP'")
    if isinstance(options, int) and not isinstance(options, bool) and options in _TYPE_NAMES:
        return _TYPE_NAMES[options]
    raise ValueError(f"Unsupported compression type: {options!r}; use '', 'ZLIB' or 'GZIP'")


class TFRecordOptions:
    """`tf.python_io.TFRecordOptions`: the compression of a TFRecord file and its zlib knobs.

    `compression_level` (0..9, -1: zlib's default), `window_bits` (ZLIB only) and `mem_level`
    shape what is written; the buffer sizes and `flush_mode` change nothing a reader sees
    and are accepted as they are.
    """

    compression_type_map = {
        TFRecordCompressionType.ZLIB: "ZLIB",
        TFRecordCompressionType.GZIP: "GZIP",
        TFRecordCompressionType.NONE: "",
    }

    def __init__(
        self,
        compression_type: Any = None,
        flush_mode: Any = None,
        input_buffer_size: int | None = None,
        output_buffer_size: int | None = None,
        window_bits: int | None = None,
        compression_level: int | None = None,
        compression_method: Any = None,
        mem_level: int | None = None,
        compression_strategy: Any = None,
    ) -> None:
        compression_name(compression_type)  # refuses what is not a compression type
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy
        if compression_level is not None and not -1 <= compression_level <= 9:
            raise ValueError(f"compression_level must be in [-1, 9], got {compression_level}")

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        return compression_name(options)


class _ZlibReader:
    """A readable stream of a zlib-compressed file's uncompressed bytes."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._inflate = zlib.decompressobj()
        self._buffer = b""

    def read(self, n: int) -> bytes:
        while len(self._buffer) < n and not self._inflate.eof:
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                break
            try:
                self._buffer += self._inflate.decompress(chunk)
            except zlib.error as e:
                raise OSError(f"not a zlib stream: {e}") from None
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def close(self) -> None:
        self._raw.close()


def open_for_reading(path: str, compression: str) -> Any:
    """The file's (uncompressed) bytes as a stream with read(n) and close()."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise NotFoundError(None, None, f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise DataLossError(None, None, f"{path}: is a directory, not a TFRecord file") from None
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "ZLIB":
        return _ZlibReader(raw)
    return raw


class RecordReader:
    """The records of one TFRecord file, one at a time, resumable at a record's offset.

    `offset` is where the next record starts in the (uncompressed) stream and `index` how many
    records were read; `read()` returns the next record's data or None at the end.
    """

    def __init__(
        self, path: str | os.PathLike, compression: Any = "", strict: bool = True, offset: int = 0
    ) -> None:
        self.path = os.fspath(path)
        self.compression = compression_name(compression)
        self.strict = strict
        self.index = 0
        self.offset = 0
        self._stream = open_for_reading(self.path, self.compression)
        if offset:
            self._skip(offset)

    def _skip(self, offset: int) -> None:
        while self.offset < offset:
            got = len(self._read(min(_CHUNK, offset - self.offset)))
            if not got:
                raise DataLossError(
                    None, None, f"{self.path}: cannot resume at byte {offset}: the file has only "
                    f"{self.offset} bytes",
                )  # fmt: skip
            self.offset += got

    def _read(self, n: int) -> bytes:
        try:
            return self._stream.read(n)
        except (OSError, EOFError, zlib.error) as e:
            kind = {"GZIP": "gzip", "ZLIB": "zlib"}.get(self.compression, "")
            raise DataLossError(
                None, None, f"{self.path}: cannot read it as a {kind} compressed TFRecord file "
                f"({e})",
            ) from None  # fmt: skip

    def read(self) -> bytes | None:
        offset = self.offset
        header = self._read(HEADER_BYTES)
        if not header:
            return None
        if len(header) < HEADER_BYTES:
            return self._truncated(offset, "the file ends inside a record header")
        length, masked = _HEADER.unpack(header)
        if mask_crc32c(crc32c(header[:8])) != masked:
            hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
            self._lost(offset, "corrupted record length (its CRC does not match)",
                       f"corrupted record at {offset}{hint}")  # fmt: skip
        data = self._read(length)
        footer = self._read(FOOTER_BYTES)
        if len(data) < length or len(footer) < FOOTER_BYTES:
            return self._truncated(offset, "the file ends inside a record")
        if mask_crc32c(crc32c(data)) != struct.unpack("<I", footer)[0]:
            self._lost(offset, "corrupted record data (its CRC does not match)",
                       f"corrupted record at {offset + HEADER_BYTES}")  # fmt: skip
        self.offset = offset + HEADER_BYTES + length + FOOTER_BYTES
        self.index += 1
        return data

    def _truncated(self, offset: int, what: str) -> None:
        if self.strict:
            self._lost(
                offset,
                what,
                f"truncated record at {offset}' failed with Read less bytes than requested",
            )
        return None

    def _lost(self, offset: int, what: str, tf_words: str) -> Any:
        raise DataLossError(
            None, None, f"{self.path}: record {self.index} at byte {offset}: {what}: {tf_words}"
        )

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[bytes]:
        while (data := self.read()) is not None:
            yield data


def read_records(
    path: str | os.PathLike, strict: bool = False, compression: Any = ""
) -> Iterator[bytes]:
    """The data of every record of the TFRecord file at `path`, in order. A damaged record
    raises DataLossError naming the file, the record and its offset; a last record cut short
    ends the iteration (or raises, when `strict`)."""
    with RecordReader(path, compression, strict) as reader:
        yield from reader


def tf_record_iterator(path: str | os.PathLike, options: Any = None) -> Iterator[bytes]:
    """`tf.python_io.tf_record_iterator`: the records of a TFRecord file, as TF reads them
    (strictly: a record cut short is a DataLossError)."""
    return read_records(path, strict=True, compression=compression_name(options))


class TFRecordWriter:
    """`tf.python_io.TFRecordWriter(path, options)`: writes records to a new TFRecord file,
    compressed as `options` say; `close()` (or leaving a `with` block) finishes the file."""

    def __init__(self, path: str | os.PathLike, options: Any = None) -> None:
        self.path = os.fspath(path)
        self._compression = compression_name(options)
        level = -1
        if isinstance(options, TFRecordOptions) and options.compression_level is not None:
            level = options.compression_level
        try:
            self._raw: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115
        except FileNotFoundError:
            raise NotFoundError(None, None, f"{self.path}; No such file or directory") from None
        self._gzip: gzip.GzipFile | None = None
        self._deflate: Any = None
        if self._compression == "GZIP":
            self._gzip = gzip.GzipFile(
                fileobj=self._raw, mode="wb", compresslevel=9 if level < 0 else level, mtime=0
            )
        elif self._compression == "ZLIB":
            bits = 15
            if isinstance(options, TFRecordOptions) and options.window_bits is not None:
                bits = options.window_bits
            mem = 8
            if isinstance(options, TFRecordOptions) and options.mem_level is not None:
                mem = options.mem_level
            self._deflate = zlib.compressobj(level, zlib.DEFLATED, bits, mem)

    def _out(self, data: bytes) -> None:
        if self._raw is None:
            raise ValueError(f"TFRecordWriter of {self.path} is closed")
        if self._gzip is not None:
            self._gzip.write(data)
        elif self._deflate is not None:
            self._raw.write(self._deflate.compress(data))
        else:
            self._raw.write(data)

    def write(self, record: bytes | str) -> None:
        """Append one record (bytes, or a str written as UTF-8)."""
        if isinstance(record, str):
            record = record.encode("utf-8")
        self._out(encode_record(record))

    def flush(self) -> None:
        if self._raw is None:
            return
        if self._gzip is not None:
            self._gzip.flush()
        elif self._deflate is not None:
            self._raw.write(self._deflate.flush(zlib.Z_SYNC_FLUSH))
        self._raw.flush()

    def close(self) -> None:
        if self._raw is None:
            return
        if self._gzip is not None:
            self._gzip.close()
        elif self._deflate is not None:
            self._raw.write(self._deflate.flush())
        self._raw.close()
        self._raw = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
