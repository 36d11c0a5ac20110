"""Protocol-buffer messages as Python classes, with the API of protobuf's generated classes.

A message class declares its fields (`FIELDS`: number, name, kind, repeated, the message class
of a sub-message or a map's values, the enum of an enum field, the oneof it belongs to); the
base class gives what TensorFlow code uses of protobuf's Python messages: keyword construction,
attribute access with proto3 defaults, sub-messages that spring into being when written
(`event.summary.value.add(tag="loss", simple_value=0.5)`), repeated fields with `add`, map
fields (`node.attr["T"].type = 1`), oneofs (`WhichOneof`), `HasField`, `ClearField`,
`CopyFrom`, `MergeFrom`, `SerializeToString`, `ParseFromString`, `FromString`, equality, and
the text format from `str()` (parsing text is tfc/io/text_format.py).

Why not the `protobuf` package: tfc writes a handful of TensorFlow's messages (Event, Summary,
GraphDef and what they hold) and must write the same bytes from C in native executables, where
no protobuf library is; the wire format is tfc/io/protowire.py, already trusted to read
TensorFlow's checkpoints. The tests compare these classes' bytes with protobuf's own where
TensorFlow or TensorBoard is installed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tfc.io import protowire
from tfc.io.protowire import WireFormatError

__all__ = [
    "EnumType",
    "ProtoField",
    "Message",
    "RepeatedField",
    "MessageMap",
    "DecodeError",
    "message_to_text",
]

_INT_KINDS = frozenset(
    ["int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
     "sfixed32", "sfixed64"]
)  # fmt: skip
_FLOAT_KINDS = frozenset(["float", "double"])


class DecodeError(WireFormatError):
    """Bytes that do not parse as the message asked for (protobuf's message.DecodeError)."""


class EnumType:
    """A protobuf enum: its values as attributes, `Name(number)` and `Value(name)`."""

    def __init__(self, name: str, values: dict[str, int]) -> None:
        self._name = name
        self._values = dict(values)
        self._names = {v: k for k, v in reversed(list(values.items()))}
        for key, value in values.items():
            setattr(self, key, value)

    def Name(self, number: int) -> str:  # noqa: N802 - protobuf's name
        try:
            return self._names[number]
        except KeyError:
            raise ValueError(f"Enum {self._name} has no name defined for value {number}") from None

    def Value(self, name: str) -> int:  # noqa: N802 - protobuf's name
        try:
            return self._values[name]
        except KeyError:
            raise ValueError(f"Enum {self._name} has no value defined for name {name!r}") from None

    def keys(self) -> list[str]:
        return list(self._values)

    def values(self) -> list[int]:
        return list(self._values.values())

    def items(self) -> list[tuple[str, int]]:
        return list(self._values.items())


@dataclass(frozen=True)
class ProtoField:
    """One field of a message class. kind: a protowire scalar kind, "enum", "message" or "map"
    (then `key_kind`, and `value_kind` or `message` for message values)."""

    number: int
    name: str
    kind: str
    repeated: bool = False
    message: Any = None  # a Message class, or a function returning one (for recursion)
    enum: EnumType | None = None
    oneof: str | None = None
    key_kind: str = ""
    value_kind: str = ""

    @property
    def message_class(self) -> type[Message]:
        m = self.message
        return m if isinstance(m, type) else m()

    @property
    def is_map(self) -> bool:
        return self.kind == "map"

    def default(self) -> Any:
        return _default(self.kind)


def _default(kind: str) -> Any:
    if kind in _INT_KINDS or kind == "enum":
        return 0
    if kind in _FLOAT_KINDS:
        return 0.0
    if kind == "bool":
        return False
    if kind == "string":
        return ""
    if kind == "bytes":
        return b""
    raise AssertionError(kind)


def _check_scalar(field_name: str, kind: str, value: Any, enum: EnumType | None = None) -> Any:
    """`value` as the Python type of a `kind` field, or a TypeError as protobuf gives."""
    where = f"field {field_name}"
    if kind == "enum":
        if isinstance(value, str) and enum is not None:
            return enum.Value(value)
        kind = "int32"
    if kind in _INT_KINDS:
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"{value!r} has type {type(value).__name__}, but expected one of: "
                            f"int ({where})")  # fmt: skip
        return int(value)
    if kind in _FLOAT_KINDS:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
            raise TypeError(f"{value!r} has type {type(value).__name__}, but expected one of: "
                            f"int, float ({where})")  # fmt: skip
        if kind == "float":  # stored as float32, as protobuf does: it reads back the same
            with np.errstate(over="ignore"):
                return float(np.float32(value))
        return float(value)
    if kind == "bool":
        if not hasattr(value, "__index__"):
            raise TypeError(f"{value!r} has type {type(value).__name__}, but expected one of: "
                            f"bool, int ({where})")  # fmt: skip
        return bool(value)
    if kind == "string":
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{value!r} is not valid UTF-8 ({where})") from None
        if not isinstance(value, str):
            raise TypeError(f"{value!r} has type {type(value).__name__}, but expected one of: "
                            f"bytes, str ({where})")  # fmt: skip
        return value
    if kind == "bytes":
        if isinstance(value, str):
            return value.encode("utf-8")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"{value!r} has type {type(value).__name__}, but expected one of: "
                            f"bytes ({where})")  # fmt: skip
        return bytes(value)
    raise AssertionError(kind)


class RepeatedField(list):
    """A repeated field: a list whose items are checked (scalars) or built (`add` messages)."""

    def __init__(self, owner: Message, spec: ProtoField) -> None:
        super().__init__()
        self._owner = owner
        self._spec = spec

    def _item(self, value: Any) -> Any:
        spec = self._spec
        if spec.kind == "message":
            cls = spec.message_class
            if isinstance(value, dict):
                return cls(**value)
            if not isinstance(value, cls):
                raise TypeError(
                    f"field {spec.name} takes {cls.__name__} messages, got {type(value).__name__}"
                )
            copy = cls()
            copy.CopyFrom(value)
            return copy
        return _check_scalar(spec.name, spec.kind, value, spec.enum)

    def add(self, **kwargs: Any) -> Message:
        if self._spec.kind != "message":
            raise AttributeError(f"field {self._spec.name} holds scalars: use append")
        item = self._spec.message_class(**kwargs)
        super().append(item)
        self._owner._touch()
        return item

    def append(self, value: Any) -> None:
        super().append(self._item(value))
        self._owner._touch()

    def extend(self, values: Iterable[Any]) -> None:
        super().extend(self._item(v) for v in values)
        self._owner._touch()

    def insert(self, index: int, value: Any) -> None:  # type: ignore[override]
        super().insert(index, self._item(value))
        self._owner._touch()

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            super().__setitem__(index, [self._item(v) for v in value])
        else:
            super().__setitem__(index, self._item(value))
        self._owner._touch()

    def MergeFrom(self, other: Iterable[Any]) -> None:  # noqa: N802 - protobuf's name
        self.extend(other)


class MessageMap(dict):
    """A map field: keys checked; a missing message value springs into being when read, as in
    protobuf (`node.attr["T"].type = 1`)."""

    def __init__(self, owner: Message, spec: ProtoField) -> None:
        super().__init__()
        self._owner = owner
        self._spec = spec

    def _key(self, key: Any) -> Any:
        return _check_scalar(self._spec.name + " key", self._spec.key_kind, key)

    def __getitem__(self, key: Any) -> Any:
        key = self._key(key)
        if key not in self and self._spec.message is not None:
            super().__setitem__(key, self._spec.message_class())
            self._owner._touch()
        return super().__getitem__(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if self._spec.message is not None:
            raise ValueError(
                f"map field {self._spec.name} holds messages: assign to their fields, or use "
                "CopyFrom"
            )
        super().__setitem__(self._key(key), _check_scalar(self._spec.name, self._spec.value_kind,
                                                          value))  # fmt: skip
        self._owner._touch()

    def get_or_create(self, key: Any) -> Any:
        return self[key]

    def MergeFrom(self, other: dict) -> None:  # noqa: N802 - protobuf's name
        for key, value in other.items():
            if self._spec.message is not None:
                self[key].MergeFrom(value)
            else:
                self[key] = value


class Message:
    """The base of tfc's protocol-buffer message classes (see the module docstring)."""

    FIELDS: ClassVar[tuple[ProtoField, ...]] = ()
    _by_name: ClassVar[dict[str, ProtoField]]
    _schema: ClassVar[dict[int, protowire.Field] | None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._by_name = {f.name: f for f in cls.FIELDS}
        cls._schema = None

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_pending", {})  # sub-messages read but not yet written
        object.__setattr__(self, "_parent", None)
        for name, value in kwargs.items():
            spec = self._spec(name)
            if spec.repeated and not spec.is_map:
                getattr(self, name).extend(value)
            elif spec.is_map:
                target = getattr(self, name)
                for key, item in dict(value).items():
                    if spec.message is not None:
                        target[key].CopyFrom(item if not isinstance(item, dict)
                                             else spec.message_class(**item))  # fmt: skip
                    else:
                        target[key] = item
            elif spec.kind == "message":
                if value is None:
                    continue
                sub = value if not isinstance(value, dict) else spec.message_class(**value)
                getattr(self, name).CopyFrom(sub)
                self._set_present(spec, getattr(self, name))
            else:
                setattr(self, name, value)

    # -- fields --------------------------------------------------------------------------------
    @classmethod
    def _spec(cls, name: str) -> ProtoField:
        try:
            return cls._by_name[name]
        except KeyError:
            raise ValueError(f'Protocol message {cls.__name__} has no "{name}" field.') from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        spec = type(self)._by_name.get(name)
        if spec is None:
            raise AttributeError(f"{type(self).__name__} has no field named '{name}'")
        values = self._values
        if name in values:
            return values[name]
        if spec.is_map:
            values[name] = MessageMap(self, spec)
            return values[name]
        if spec.repeated:
            values[name] = RepeatedField(self, spec)
            return values[name]
        if spec.kind == "message":
            pending = self._pending.get(name)
            if pending is None:
                pending = spec.message_class()
                object.__setattr__(pending, "_parent", (self, spec))
                self._pending[name] = pending
            return pending
        return spec.default()

    def __setattr__(self, name: str, value: Any) -> None:
        spec = type(self)._by_name.get(name)
        if spec is None:
            raise AttributeError(f"{type(self).__name__} has no field named '{name}'")
        if spec.repeated or spec.kind == "message":
            raise AttributeError(
                f'Assignment not allowed to field "{name}" in protocol message object '
                f"(use CopyFrom, append or add)"
            )
        value = _check_scalar(name, spec.kind, value, spec.enum)
        self._set_present(spec, value)

    def _set_present(self, spec: ProtoField, value: Any) -> None:
        if spec.oneof is not None:
            for other in type(self).FIELDS:
                if other.oneof == spec.oneof and other.name != spec.name:
                    self._values.pop(other.name, None)
                    self._pending.pop(other.name, None)
        self._values[spec.name] = value
        self._pending.pop(spec.name, None)
        self._touch()

    def _touch(self) -> None:
        """A write happened: a sub-message read through its parent becomes present there."""
        parent = self._parent
        if parent is not None:
            owner, spec = parent
            object.__setattr__(self, "_parent", None)
            if owner._pending.get(spec.name) is self:
                owner._set_present(spec, self)

    def SetInParent(self) -> None:  # noqa: N802 - protobuf's name
        """Make this sub-message present in its parent, even while empty."""
        self._touch()

    def HasField(self, name: str) -> bool:  # noqa: N802 - protobuf's name
        spec = type(self)._by_name.get(name)
        if spec is None:
            oneofs = {f.oneof for f in type(self).FIELDS if f.oneof}
            if name in oneofs:
                return self.WhichOneof(name) is not None
            raise ValueError(f'Protocol message {type(self).__name__} has no field "{name}".')
        if spec.repeated:
            raise ValueError(f'Protocol message has no singular "{name}" field.')
        if spec.kind != "message" and spec.oneof is None:
            raise ValueError(
                f'Can\'t test non-optional, non-submessage field "{type(self).__name__}.{name}" '
                "for presence in proto3."
            )
        return name in self._values

    def ClearField(self, name: str) -> None:  # noqa: N802 - protobuf's name
        self._spec(name)
        self._values.pop(name, None)
        self._pending.pop(name, None)

    def WhichOneof(self, group: str) -> str | None:  # noqa: N802 - protobuf's name
        members = [f for f in type(self).FIELDS if f.oneof == group]
        if not members:
            raise ValueError(f'Protocol message has no oneof "{group}" field.')
        for f in members:
            if f.name in self._values:
                return f.name
        return None

    def ListFields(self) -> list[tuple[ProtoField, Any]]:  # noqa: N802 - protobuf's name
        """(field, value) of every field that would be written, in field-number order."""
        out = []
        for spec in sorted(type(self).FIELDS, key=lambda f: f.number):
            if spec.name not in self._values:
                continue
            value = self._values[spec.name]
            if spec.repeated or spec.is_map:
                if len(value):
                    out.append((spec, value))
            elif spec.kind == "message" or spec.oneof is not None:
                out.append((spec, value))
            elif _written(spec.kind, value):
                out.append((spec, value))
        return out

    def Clear(self) -> None:  # noqa: N802 - protobuf's name
        self._values.clear()
        self._pending.clear()

    def CopyFrom(self, other: Message) -> None:  # noqa: N802 - protobuf's name
        if other is self:
            return
        if type(other) is not type(self):
            raise TypeError(
                f"Parameter to CopyFrom() must be instance of same class: expected "
                f"{type(self).__name__} got {type(other).__name__}."
            )
        self.Clear()
        self.MergeFrom(other)
        self._touch()

    def MergeFrom(self, other: Message) -> None:  # noqa: N802 - protobuf's name
        if type(other) is not type(self):
            raise TypeError(
                f"Parameter to MergeFrom() must be instance of same class: expected "
                f"{type(self).__name__} got {type(other).__name__}."
            )
        for spec, value in other.ListFields():
            if spec.is_map or spec.repeated:
                getattr(self, spec.name).MergeFrom(value)
            elif spec.kind == "message":
                sub = getattr(self, spec.name)
                sub.MergeFrom(value)
                self._set_present(spec, sub)
            else:
                self._set_present(spec, value)
        self._touch()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = self.ListFields(), other.ListFields()  # type: ignore[attr-defined]
        if [s.name for s, _ in mine] != [s.name for s, _ in theirs]:
            return False
        for (spec, a), (_, b) in zip(mine, theirs):
            if spec.is_map:
                if dict(a) != dict(b):
                    return False
            elif list(a) != list(b) if spec.repeated else a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]  # mutable, as protobuf's messages

    def __repr__(self) -> str:
        return message_to_text(self)

    __str__ = __repr__

    # -- wire format ---------------------------------------------------------------------------
    def SerializeToString(self, deterministic: bool = False) -> bytes:  # noqa: N802
        """The message's bytes; maps in key order when `deterministic`."""
        out = bytearray()
        for spec, value in self.ListFields():
            n = spec.number
            if spec.is_map:
                items = sorted(value.items()) if deterministic else value.items()
                for key, item in items:
                    entry = protowire.encode_field(1, spec.key_kind, key)
                    if spec.message is not None:
                        payload = item.SerializeToString(deterministic)
                        entry += protowire.encode_field(2, "message", payload)
                    else:
                        entry += protowire.encode_field(2, spec.value_kind, item)
                    out += protowire.encode_field(n, "message", entry, spec.name)
            elif spec.kind == "message":
                for item in value if spec.repeated else [value]:
                    payload = item.SerializeToString(deterministic)
                    out += protowire.encode_field(n, "message", payload, spec.name)
            elif spec.repeated:
                kind = "int32" if spec.kind == "enum" else spec.kind
                if kind in ("string", "bytes"):
                    for item in value:
                        out += protowire.encode_field(n, kind, item, spec.name)
                else:
                    out += protowire.encode_packed(n, kind, value, spec.name)
            else:
                kind = "int32" if spec.kind == "enum" else spec.kind
                out += protowire.encode_field(n, kind, value, spec.name)
        return bytes(out)

    SerializePartialToString = SerializeToString

    def ByteSize(self) -> int:  # noqa: N802 - protobuf's name
        return len(self.SerializeToString())

    @classmethod
    def _wire_schema(cls) -> dict[int, protowire.Field]:
        if cls._schema is None:
            cls._schema = {}  # set first: a recursive message refers to its own schema
            schema = cls._schema
            for spec in cls.FIELDS:
                if spec.is_map:
                    value = (
                        protowire.Field(
                            "value", "message", schema=spec.message_class._wire_schema()
                        )
                        if spec.message is not None
                        else protowire.Field("value", spec.value_kind)
                    )
                    entry = {1: protowire.Field("key", spec.key_kind), 2: value}
                    schema[spec.number] = protowire.Field(spec.name, "message", True, entry)
                elif spec.kind == "message":
                    schema[spec.number] = protowire.Field(
                        spec.name, "message", spec.repeated, spec.message_class._wire_schema()
                    )
                else:
                    kind = "int32" if spec.kind == "enum" else spec.kind
                    schema[spec.number] = protowire.Field(spec.name, kind, spec.repeated)
        return cls._schema

    def MergeFromString(self, data: bytes) -> int:  # noqa: N802 - protobuf's name
        try:
            decoded = protowire.decode_message(bytes(data), type(self)._wire_schema())
        except WireFormatError as e:
            raise DecodeError(f"Error parsing message {type(self).__name__}: {e}") from None
        self._merge_decoded(decoded)
        return len(data)

    def ParseFromString(self, data: bytes) -> int:  # noqa: N802 - protobuf's name
        self.Clear()
        return self.MergeFromString(data)

    @classmethod
    def FromString(cls, data: bytes) -> Message:  # noqa: N802 - protobuf's name
        message = cls()
        message.MergeFromString(data)
        return message

    def _merge_decoded(self, decoded: dict[str, Any]) -> None:
        # fields in number order: of two members of a oneof on the wire, the later number wins
        for spec in sorted(type(self).FIELDS, key=lambda f: f.number):
            if spec.name not in decoded:
                continue
            value = decoded[spec.name]
            if spec.is_map:
                target = getattr(self, spec.name)
                for entry in value:
                    key = entry.get("key", _default(spec.key_kind))
                    if spec.message is not None:
                        target[key]._merge_decoded(entry.get("value", {}))
                    else:
                        value_default = _default(spec.value_kind)
                        dict.__setitem__(target, key, entry.get("value", value_default))
            elif spec.kind == "message":
                if spec.repeated:
                    target = getattr(self, spec.name)
                    for item in value:
                        message = spec.message_class()
                        message._merge_decoded(item)
                        list.append(target, message)
                else:
                    sub = getattr(self, spec.name)
                    sub._merge_decoded(value)
                    self._set_present(spec, sub)
            elif spec.repeated:
                if value:
                    list.extend(getattr(self, spec.name), value)
            else:
                self._set_present(spec, value)

    def __reduce__(self) -> tuple:
        return (type(self).FromString, (self.SerializeToString(),))

    def __deepcopy__(self, memo: dict) -> Message:
        return type(self).FromString(self.SerializeToString())


def _written(kind: str, value: Any) -> bool:
    """Whether proto3 writes a singular scalar: any value but the default (a -0.0 counts)."""
    if kind in _FLOAT_KINDS:
        return value != 0.0 or math.copysign(1.0, value) < 0
    return value != _default(kind)


# -- text format (printing; parsing is tfc/io/text_format.py) ------------------------------------
_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}  # fmt: skip


def _quote(value: str | bytes) -> str:
    """A string literal as protobuf's text format writes it: printable ASCII as is, other bytes
    as three-digit octal escapes (so bytes of any value round-trip)."""
    data = value.encode("utf-8") if isinstance(value, str) else value
    out = []
    for byte in data:
        if byte in _ESCAPES:
            out.append(_ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _format_float(value: float, kind: str) -> str:
    """As protobuf's text format writes numbers: nan, inf, -inf, or the shortest text that reads
    back as the same float (float32 for kind "float"), "1.0" for a whole number."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return str(np.float32(value)) if kind == "float" else repr(float(value))


def _scalar_text(spec: ProtoField, value: Any, kind: str | None = None) -> str:
    kind = kind or spec.kind
    if kind == "enum" and spec.enum is not None:
        try:
            return spec.enum.Name(value)
        except ValueError:
            return str(value)
    if kind in ("string", "bytes"):
        return _quote(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind in _FLOAT_KINDS:
        return _format_float(value, kind)
    return str(value)


def _text_lines(message: Message, indent: int) -> Iterator[str]:
    pad = " " * indent
    for spec, value in message.ListFields():
        if spec.is_map:  # in key order, as protobuf writes maps in text
            for key, item in sorted(value.items()):
                yield f"{pad}{spec.name} {{"
                yield f"{pad}  key: {_scalar_text(spec, key, spec.key_kind)}"
                if spec.message is not None:
                    yield f"{pad}  value {{"
                    yield from _text_lines(item, indent + 4)
                    yield f"{pad}  }}"
                else:
                    yield f"{pad}  value: {_scalar_text(spec, item, spec.value_kind)}"
                yield f"{pad}}}"
        elif spec.kind == "message":
            for item in value if spec.repeated else [value]:
                yield f"{pad}{spec.name} {{"
                yield from _text_lines(item, indent + 2)
                yield f"{pad}}}"
        else:
            for item in value if spec.repeated else [value]:
                yield f"{pad}{spec.name}: {_scalar_text(spec, item)}"


def message_to_text(message: Message, indent: int = 0) -> str:
    """The message in protobuf's text format (as `text_format.MessageToString` writes it)."""
    return "".join(line + "\n" for line in _text_lines(message, indent))


def scalar_from_field(spec: ProtoField, value: Any) -> Any:
    """`value` checked and converted for field `spec` (the text parser's entry point)."""
    return _check_scalar(spec.name, spec.kind, value, spec.enum)
