"""A validating reader of FlatBuffers: tables, vectors, strings and scalars, every offset checked.

A `.tflite` file is one FlatBuffer. FlatBuffers' own Python runtime reads whatever offsets a
file holds (a truncated or corrupt file fails deep inside it, or reads garbage), so tfc reads
the few tables of TFLite's schema it needs through this class, which checks every position
against the buffer before it reads, and raises FlatBufferError saying which field of which
table points where.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np


class FlatBufferError(ValueError):
    """The bytes are not a well-formed FlatBuffer where the reader looked."""


_SCALARS = {
    "bool": ("<B", 1), "int8": ("<b", 1), "uint8": ("<B", 1), "int16": ("<h", 2),
    "uint16": ("<H", 2), "int32": ("<i", 4), "uint32": ("<I", 4), "int64": ("<q", 8),
    "uint64": ("<Q", 8), "float32": ("<f", 4), "float64": ("<d", 8),
}  # fmt: skip
_VECTOR_DTYPES = {
    "int8": "<i1", "uint8": "<u1", "int16": "<i2", "int32": "<i4", "uint32": "<u4",
    "int64": "<i8", "float32": "<f4", "float64": "<f8",
}  # fmt: skip


class Table:
    """One table of a FlatBuffer: fields by their index in the schema."""

    def __init__(self, buf: bytes | memoryview, pos: int, what: str) -> None:
        self.buf, self.pos, self.what = buf, pos, what
        self._check(pos, 4, "its start")
        vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self._check(vtable, 4, "its vtable")
        vtable_size, _ = struct.unpack_from("<HH", buf, vtable)
        if vtable_size < 4 or vtable_size % 2:
            raise FlatBufferError(f"{what}: its vtable has the impossible size {vtable_size}")
        self._check(vtable, vtable_size, "its vtable")
        self.fields = struct.unpack_from(f"<{(vtable_size - 4) // 2}H", buf, vtable + 4)

    def _check(self, pos: int, size: int, what: str) -> None:
        if pos < 0 or size < 0 or pos + size > len(self.buf):
            raise FlatBufferError(
                f"{self.what}: {what} lies at bytes {pos}..{pos + size} of a {len(self.buf)}-byte "
                "buffer (the file is truncated or corrupt)"
            )

    def _field(self, index: int) -> int | None:
        """The position of field `index`, or None where the table leaves it out."""
        if index >= len(self.fields) or self.fields[index] == 0:
            return None
        return self.pos + self.fields[index]

    def scalar(self, index: int, kind: str, default: Any = 0) -> Any:
        pos = self._field(index)
        if pos is None:
            return default
        fmt, size = _SCALARS[kind]
        self._check(pos, size, f"field {index}")
        value = struct.unpack_from(fmt, self.buf, pos)[0]
        return bool(value) if kind == "bool" else value

    def _target(self, index: int) -> int | None:
        """Where the offset in field `index` points (a table, vector or string)."""
        pos = self._field(index)
        if pos is None:
            return None
        self._check(pos, 4, f"field {index}")
        return pos + struct.unpack_from("<I", self.buf, pos)[0]

    def _vector(self, index: int, element_size: int) -> tuple[int, int] | None:
        start = self._target(index)
        if start is None:
            return None
        self._check(start, 4, f"the length of vector field {index}")
        count = struct.unpack_from("<I", self.buf, start)[0]
        self._check(start + 4, count * element_size, f"the {count} elements of field {index}")
        return start + 4, count

    def table(self, index: int, what: str) -> Table | None:
        target = self._target(index)
        return None if target is None else Table(self.buf, target, f"{self.what}.{what}")

    def string(self, index: int, default: str = "") -> str:
        vector = self._vector(index, 1)
        if vector is None:
            return default
        start, count = vector
        return bytes(self.buf[start : start + count]).decode("utf-8", errors="replace")

    def array(self, index: int, kind: str) -> np.ndarray | None:
        """A vector of scalars as a NumPy array (a copy), or None where the field is absent."""
        dtype = np.dtype(_VECTOR_DTYPES[kind])
        vector = self._vector(index, dtype.itemsize)
        if vector is None:
            return None
        start, count = vector
        return np.frombuffer(self.buf, dtype, count, start).copy()

    def tables(self, index: int, what: str) -> list[Table]:
        """A vector of tables (each element an offset from its own position)."""
        vector = self._vector(index, 4)
        if vector is None:
            return []
        start, count = vector
        out = []
        for k in range(count):
            element = start + 4 * k
            out.append(
                Table(
                    self.buf,
                    element + struct.unpack_from("<I", self.buf, element)[0],
                    f"{self.what}.{what}[{k}]",
                )
            )
        return out

    def bytes_view(self, index: int) -> memoryview | None:
        """A vector of bytes, without a copy."""
        vector = self._vector(index, 1)
        if vector is None:
            return None
        start, count = vector
        return memoryview(self.buf)[start : start + count]


def root(buf: bytes, identifier: bytes | None, what: str) -> Table:
    """The root table of FlatBuffer `buf`, whose file identifier (bytes 4..8) must be
    `identifier` where given."""
    if len(buf) < 8:
        raise FlatBufferError(f"{what}: {len(buf)} bytes are too few for a FlatBuffer")
    if identifier is not None and bytes(buf[4:8]) != identifier:
        found = bytes(buf[4:8])
        raise FlatBufferError(
            f"{what}: the file identifier is {found!r}, not {identifier!r} (not a "
            f"{identifier.decode()} file)"
        )
    return Table(buf, struct.unpack_from("<I", buf, 0)[0], what)


def parse_fields(table: Table | None, spec: dict[str, tuple[int, str, Any]]) -> dict:
    """The scalar fields named in `spec` (name -> (index, kind, default)) of an options
    table; their defaults where the table is None or leaves them out. Kind "int32[]" reads a
    vector."""
    out = {}
    for name, (index, kind, default) in spec.items():
        if table is None:
            out[name] = default
        elif kind.endswith("[]"):
            values = table.array(index, kind[:-2])
            out[name] = default if values is None else [int(v) for v in values]
        else:
            out[name] = table.scalar(index, kind, default)
    return out


Reader = Callable[[Table], Any]
