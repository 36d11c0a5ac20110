"""Protocol-buffer wire format: decoding and encoding the records of a message.

A message is a sequence of (field number, wire type, value) records; a schema names the fields
tfc needs with their kinds, and `decode_message` checks each record's wire type against it,
keeps the last value of a singular field (proto3's rule for scalars; the messages read here
never repeat a singular sub-message, which protobuf would merge), gathers repeated fields
(packed or not) and skips fields it does not know, as any protobuf reader must for forward
compatibility.
Every varint, length and nested message is bounds-checked: a malformed message raises
`WireFormatError` saying where, never an IndexError.

Encoding is the reverse, one field at a time (`encode_field`, `encode_packed`): proto3's rules
of which fields to write are the message classes' (tfc/io/proto.py); here only the bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "WireFormatError",
    "Field",
    "read_varint",
    "decode_message",
    "encode_varint",
    "encode_tag",
    "encode_field",
    "encode_packed",
    "wire_type",
]

VARINT, FIXED64, LENGTH_DELIMITED, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10
_MAX_DEPTH = 32


class WireFormatError(ValueError):
    """Bytes that are not a valid protocol-buffer message of the expected type."""


@dataclass(frozen=True)
class Field:
    """One field of a schema: its name and kind ("int32", "int64", "uint32", "uint64", "sint32",
    "sint64", "enum", "bool", "fixed32", "fixed64", "sfixed32", "sfixed64", "float", "double",
    "bytes", "string" or "message" with `schema`), repeated or not."""

    name: str
    kind: str
    repeated: bool = False
    schema: dict[int, Field] | None = None


_WIRE_TYPE = {"int32": VARINT, "int64": VARINT, "uint32": VARINT, "uint64": VARINT,
              "sint32": VARINT, "sint64": VARINT, "enum": VARINT, "bool": VARINT,
              "fixed32": FIXED32, "sfixed32": FIXED32, "float": FIXED32,
              "fixed64": FIXED64, "sfixed64": FIXED64, "double": FIXED64,
              "bytes": LENGTH_DELIMITED, "string": LENGTH_DELIMITED,
              "message": LENGTH_DELIMITED}  # fmt: skip
_FIXED_WIDTH = {FIXED32: 4, FIXED64: 8}


def wire_type(kind: str) -> int:
    """The wire type a field of `kind` is written with (packed repeated fields aside)."""
    try:
        return _WIRE_TYPE[kind]
    except KeyError:
        raise ValueError(f"unknown protocol-buffer field kind '{kind}'") from None


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
    if kind == "uint32":
        return value & 0xFFFFFFFF  # protobuf truncates a uint32 read from a wider varint
    if kind in ("sint32", "sint64"):
        return (value >> 1) ^ -(value & 1)  # zigzag
    if kind == "float":
        return struct.unpack("<f", value.to_bytes(4, "little"))[0]
    if kind == "double":
        return struct.unpack("<d", value.to_bytes(8, "little"))[0]
    if kind == "sfixed32":
        return value - (1 << 32) if value >= 1 << 31 else value
    if kind == "sfixed64":
        return value - (1 << 64) if value >= 1 << 63 else value
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
    return value  # uint64, fixed32, fixed64, bytes


def _unpack(field: Field, payload: bytes) -> list[int]:
    """The values of a packed repeated scalar field."""
    values = []
    pos = 0
    while pos < len(payload):
        width = _FIXED_WIDTH.get(_WIRE_TYPE[field.kind])
        if width:
            if pos + width > len(payload):
                raise WireFormatError(f"packed field '{field.name}' ends inside a value")
            values.append(int.from_bytes(payload[pos : pos + width], "little"))
            pos += width
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


# -- encoding ------------------------------------------------------------------------------------
def encode_varint(value: int) -> bytes:
    """`value` as a varint; a negative one as its 64-bit two's complement (ten bytes)."""
    if value < 0:
        value += 1 << 64
    if not 0 <= value < 1 << 64:
        raise ValueError(f"varint value {value} does not fit 64 bits")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_tag(number: int, wire: int) -> bytes:
    if not 0 < number < 1 << 29:
        raise ValueError(f"field number {number} is out of range")
    return encode_varint(number << 3 | wire)


_INT_RANGE = {"int32": (-(1 << 31), 1 << 31), "int64": (-(1 << 63), 1 << 63),
              "uint32": (0, 1 << 32), "uint64": (0, 1 << 64), "enum": (-(1 << 31), 1 << 31),
              "sint32": (-(1 << 31), 1 << 31), "sint64": (-(1 << 63), 1 << 63),
              "fixed32": (0, 1 << 32), "fixed64": (0, 1 << 64),
              "sfixed32": (-(1 << 31), 1 << 31), "sfixed64": (-(1 << 63), 1 << 63)}  # fmt: skip


def _scalar_payload(kind: str, value: Any, name: str) -> bytes:
    """The bytes of one scalar value of `kind`, without its tag."""
    if kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(value.__index__())
            except AttributeError:
                raise TypeError(
                    f"field '{name}' ({kind}) takes an integer, got {value!r}"
                ) from None
        if not low <= value < high:
            raise ValueError(f"field '{name}' value {value} is out of the range of {kind}")
        if kind in ("sint32", "sint64"):
            return encode_varint((value << 1) ^ (value >> 63))
        if kind in ("fixed32", "sfixed32"):
            return (value & 0xFFFFFFFF).to_bytes(4, "little")
        if kind in ("fixed64", "sfixed64"):
            return (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
        return encode_varint(value)
    if kind == "bool":
        return b"\x01" if value else b"\x00"
    if kind == "float":  # as protobuf: a double out of float's range becomes an infinity
        with np.errstate(over="ignore"):
            return np.float32(value).astype("<f4").tobytes()
    if kind == "double":
        return struct.pack("<d", value)
    raise ValueError(f"field '{name}': kind '{kind}' is not a scalar")


def encode_field(number: int, kind: str, value: Any, name: str = "") -> bytes:
    """One record: field `number` of `kind` holding `value` (bytes of an encoded message for
    kind "message", str or bytes for "string"/"bytes")."""
    name = name or str(number)
    if kind in ("bytes", "string", "message"):
        if isinstance(value, str):
            if kind == "bytes":
                raise TypeError(f"field '{name}' (bytes) takes bytes, got str {value!r}")
            value = value.encode("utf-8")
        payload = bytes(value)
        return encode_tag(number, LENGTH_DELIMITED) + encode_varint(len(payload)) + payload
    return encode_tag(number, _WIRE_TYPE[kind]) + _scalar_payload(kind, value, name)


def encode_packed(number: int, kind: str, values: Any, name: str = "") -> bytes:
    """A packed repeated scalar field (proto3's default for repeated numbers); nothing when
    `values` is empty."""
    name = name or str(number)
    if kind == "float" or kind == "double":
        payload = np.asarray(values, dtype="<f4" if kind == "float" else "<f8").tobytes()
    else:
        payload = b"".join(_scalar_payload(kind, v, name) for v in values)
    if not payload:
        return b""
    return encode_tag(number, LENGTH_DELIMITED) + encode_varint(len(payload)) + payload
