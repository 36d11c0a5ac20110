"""Protocol-buffer wire format, decoding only: the few messages tfc reads from TensorFlow files.

A message is a sequence of (field number, wire type, value) records; a schema names the fields
tfc needs with their kinds, and `decode_message` checks each record's wire type against it,
keeps the last value of a singular field (proto3's rule for scalars; the messages read here
never repeat a singular sub-message, which protobuf would merge), gathers repeated fields
(packed or not) and skips fields it does not know, as any protobuf reader must for forward
compatibility.
Every varint, length and nested message is bounds-checked: a malformed message raises
`WireFormatError` saying where, never an IndexError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["WireFormatError", "Field", "read_varint", "decode_message"]

VARINT, FIXED64, LENGTH_DELIMITED, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10
_MAX_DEPTH = 32


class WireFormatError(ValueError):
    """Bytes that are not a valid protocol-buffer message of the expected type."""


@dataclass(frozen=True)
class Field:
    """One field of a schema: its name and kind ("int32", "int64", "uint64", "enum", "bool",
    "fixed32", "bytes", "string" or "message" with `schema`), repeated or not."""

    name: str
    kind: str
    repeated: bool = False
    schema: dict[int, Field] | None = None


_WIRE_TYPE = {"int32": VARINT, "int64": VARINT, "uint64": VARINT, "enum": VARINT, "bool": VARINT,
              "fixed32": FIXED32, "bytes": LENGTH_DELIMITED, "string": LENGTH_DELIMITED,
              "message": LENGTH_DELIMITED}  # fmt: skip


def read_varint(data: bytes, pos: int, what: str = "varint") -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it."""
    value = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise WireFormatError(f"{what} at byte {pos} runs past the end ({len(data)} bytes)")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if value >= 1 << 64:
                raise WireFormatError(f"{what} at byte {pos} exceeds 64 bits")
            return value, pos + i + 1
    raise WireFormatError(f"{what} at byte {pos} is longer than {_MAX_VARINT_BYTES} bytes")


def _records(data: bytes) -> list[tuple[int, int, Any, int]]:
    """(field number, wire type, raw value, offset) of every record of a message."""
    records = []
    pos = 0
    while pos < len(data):
        start = pos
        tag, pos = read_varint(data, pos, "field tag")
        number, wire = tag >> 3, tag & 7
        if number == 0 or number >= 1 << 29:
            raise WireFormatError(f"field number {number} at byte {start} is out of range")
        if wire == VARINT:
            value, pos = read_varint(data, pos, f"field {number}")
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > len(data):
                raise WireFormatError(f"field {number} at byte {start} runs past the end")
            value = int.from_bytes(data[pos : pos + width], "little")
            pos += width
        elif wire == LENGTH_DELIMITED:
            length, pos = read_varint(data, pos, f"length of field {number}")
            if length > len(data) - pos:
                raise WireFormatError(
                    f"field {number} at byte {start} says {length} bytes, {len(data) - pos} remain"
                )
            value = data[pos : pos + length]
            pos += length
        else:  # groups are a proto2 relic that none of the messages tfc reads contain
            raise WireFormatError(f"field {number} at byte {start} has wire type {wire}")
        records.append((number, wire, value, start))
    return records


def _signed(value: int, bits: int, name: str) -> int:
    if value >= 1 << 63:
        value -= 1 << 64  # negative numbers are ten-byte two's-complement varints
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise WireFormatError(f"field '{name}' value {value} does not fit int{bits}")
    return value


def _convert(field: Field, value: Any, depth: int) -> Any:
    kind = field.kind
    if kind == "int32":
        return _signed(value, 32, field.name)
    if kind in ("int64", "enum"):
        return _signed(value, 64, field.name)
    if kind == "bool":
        return value != 0
    if kind == "string":
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise WireFormatError(f"field '{field.name}' is not valid UTF-8") from None
    if kind == "message":
        assert field.schema is not None
        return decode_message(value, field.schema, depth + 1)
    return value  # uint64, fixed32, bytes


def _unpack(field: Field, payload: bytes) -> list[int]:
    """The values of a packed repeated scalar field."""
    values = []
    pos = 0
    while pos < len(payload):
        if field.kind == "fixed32":
            if pos + 4 > len(payload):
                raise WireFormatError(f"packed field '{field.name}' ends inside a value")
            values.append(int.from_bytes(payload[pos : pos + 4], "little"))
            pos += 4
        else:
            value, pos = read_varint(payload, pos, f"packed field '{field.name}'")
            values.append(value)
    return values


def decode_message(data: bytes, schema: dict[int, Field], depth: int = 0) -> dict[str, Any]:
    """The fields of `schema` found in `data`, by name: singular fields absent from the message
    are absent from the result (the caller applies proto3's defaults); repeated ones are lists."""
    if depth > _MAX_DEPTH:
        raise WireFormatError(f"messages nested deeper than {_MAX_DEPTH} levels")
    result: dict[str, Any] = {f.name: [] for f in schema.values() if f.repeated}
    for number, wire, value, start in _records(bytes(data)):
        field = schema.get(number)
        if field is None:
            continue
        expected = _WIRE_TYPE[field.kind]
        if field.repeated and wire == LENGTH_DELIMITED and expected != LENGTH_DELIMITED:
            raw = _unpack(field, value)
        elif wire != expected:
            raise WireFormatError(
                f"field '{field.name}' ({number}) at byte {start} has wire type {wire}, "
                f"expected {expected}"
            )
        else:
            raw = [value]
        try:
            converted = [_convert(field, v, depth) for v in raw]
        except WireFormatError as e:
            raise WireFormatError(f"in field '{field.name}' at byte {start}: {e}") from None
        if field.repeated:
            result[field.name].extend(converted)
        else:
            result[field.name] = converted[-1]
    return result
