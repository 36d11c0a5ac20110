"""Protocol buffers' text format, read into tfc's message classes (writing is `str(message)`).

The grammar of protobuf's `text_format.Parse`, as far as TensorFlow's `.pbtxt` files use it:
`name: value` for scalars (numbers, `true`/`false`, enum names or numbers, quoted strings with
C escapes, adjacent strings joined), `name { ... }` or `name < ... >` (a colon allowed before
either) for messages, `name: [v, v]` for repeated fields, map entries as `name { key: ...
value ... }`, and `#` comments. Errors name the line and column, as protobuf's do.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tfc.io.proto import Message, ProtoField, scalar_from_field

__all__ = ["ParseError", "parse", "merge"]


class ParseError(ValueError):
    """Text that is not a valid text-format message of the expected type."""


_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r\n]+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)
  | (?P<ident>[-+]?[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}<>:\[\],;])
    """,
    re.VERBOSE,
)
_SIMPLE_ESCAPES = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92, "a": 7, "b": 8,
                   "f": 12, "v": 11, "?": 63}  # fmt: skip


class _Tokens:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, int, int]] = []
        line, line_start, pos = 1, 0, 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ParseError(f"{line}:{pos - line_start + 1} : unexpected {text[pos]!r}")
            kind = m.lastgroup
            assert kind is not None
            if kind != "space":
                self.tokens.append((kind, m.group(), line, pos - line_start + 1))
            newlines = m.group().count("\n")
            if newlines:
                line += newlines
                line_start = pos + m.group().rindex("\n") + 1
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str, int, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def where(self) -> str:
        token = self.peek()
        return f"{token[2]}:{token[3]}" if token else "end of input"

    def next(self, what: str) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise ParseError(f"end of input : expected {what}")
        self.i += 1
        return token[0], token[1]

    def take(self, text: str) -> bool:
        token = self.peek()
        if token is not None and token[0] == "punct" and token[1] == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        where = self.where()
        if not self.take(text):
            token = self.peek()
            found = f"'{token[1]}'" if token else "end of input"
            raise ParseError(f"{where} : expected '{text}', found {found}")


def _unescape(literal: str, where: str) -> bytes:
    body = literal[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        i += 1
        if i >= len(body):
            raise ParseError(f"{where} : string ends inside an escape")
        c = body[i]
        if c in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[c])
            i += 1
        elif c in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i:]).group()  # type: ignore[union-attr]
            out.append(int(digits, 8) & 0xFF)
            i += len(digits)
        elif c in "xX":
            m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 1 :])
            if m is None:
                raise ParseError(f"{where} : \\x needs hexadecimal digits")
            out.append(int(m.group(), 16))
            i += 1 + len(m.group())
        else:
            raise ParseError(f"{where} : unknown escape '\\{c}'")
    return bytes(out)


def _number(text: str, kind: str, where: str) -> Any:
    lowered = text.lower()
    if kind in ("float", "double"):
        if lowered.lstrip("+-") in ("inf", "infinity", "inff", "infinityf"):
            return -math.inf if lowered.startswith("-") else math.inf
        if lowered.lstrip("+-") in ("nan", "nanf"):
            return math.nan
        try:
            return float(text.rstrip("fF") if not lowered.startswith(("0x", "-0x")) else
                         int(text, 16))  # fmt: skip
        except ValueError:
            raise ParseError(f"{where} : couldn't parse float: {text}") from None
    try:
        return int(text, 0) if not re.fullmatch(r"[-+]?0\d+", text) else int(text, 8)
    except ValueError:
        raise ParseError(f"{where} : couldn't parse integer: {text}") from None


def _scalar(tokens: _Tokens, spec: ProtoField, kind: str) -> Any:
    where = tokens.where()
    token_kind, text = tokens.next(f"a value for field '{spec.name}'")
    if kind in ("string", "bytes"):
        if token_kind != "string":
            raise ParseError(f"{where} : expected a string for field '{spec.name}', found {text}")
        data = _unescape(text, where)
        while (peek := tokens.peek()) is not None and peek[0] == "string":
            data += _unescape(tokens.next("a string")[1], tokens.where())
        if kind == "string":
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                raise ParseError(f"{where} : field '{spec.name}' is not valid UTF-8") from None
        return data
    if kind == "bool":
        if text in ("true", "True", "t", "1"):
            return True
        if text in ("false", "False", "f", "0"):
            return False
        raise ParseError(f"{where} : expected true or false for field '{spec.name}', got {text}")
    if kind == "enum":
        if token_kind == "ident":
            if spec.enum is None or text not in spec.enum.keys():
                raise ParseError(f"{where} : enum field '{spec.name}' has no value named {text}")
            return spec.enum.Value(text)
        return _number(text, "int64", where)
    if token_kind not in ("number", "ident"):
        raise ParseError(f"{where} : expected a number for field '{spec.name}', found {text}")
    return _number(text, kind, where)


def _message_body(tokens: _Tokens, message: Message, close: str | None) -> None:
    cls = type(message)
    while True:
        token = tokens.peek()
        if token is None:
            if close is not None:
                raise ParseError(f"end of input : expected '{close}'")
            return
        if token[0] == "punct" and token[1] == close:
            tokens.i += 1
            return
        where = tokens.where()
        token_kind, name = tokens.next("a field name")
        if token_kind != "ident":
            raise ParseError(f"{where} : expected a field name, found '{name}'")
        spec = cls._by_name.get(name)
        if spec is None:
            raise ParseError(
                f'{where} : message type "{cls.__name__}" has no field named "{name}".'
            )
        _field(tokens, message, spec)
        tokens.take(",") or tokens.take(";")


def _sub_message(tokens: _Tokens, into: Message) -> None:
    where = tokens.where()
    tokens.take(":")
    if tokens.take("{"):
        _message_body(tokens, into, "}")
    elif tokens.take("<"):
        _message_body(tokens, into, ">")
    else:
        raise ParseError(f"{where} : expected '{{' or '<'")


def _field(tokens: _Tokens, message: Message, spec: ProtoField) -> None:
    if spec.is_map:
        entry = _MapEntry(spec)
        _read_entry(tokens, entry)
        target = getattr(message, spec.name)
        if spec.message is not None:
            target[entry.key].MergeFrom(entry.value)
        else:
            target[entry.key] = entry.value
        return
    if spec.kind == "message":
        if spec.repeated:
            if tokens.take(":") and tokens.take("["):
                while not tokens.take("]"):
                    _sub_message(tokens, getattr(message, spec.name).add())
                    tokens.take(",")
                return
            _sub_message(tokens, getattr(message, spec.name).add())
        else:
            sub = getattr(message, spec.name)
            _sub_message(tokens, sub)
            message._set_present(spec, sub)
        return
    tokens.expect(":")
    if spec.repeated and tokens.take("["):
        values = []
        while not tokens.take("]"):
            values.append(_scalar(tokens, spec, spec.kind))
            tokens.take(",")
        getattr(message, spec.name).extend(values)
        return
    value = scalar_from_field(spec, _scalar(tokens, spec, spec.kind))
    if spec.repeated:
        getattr(message, spec.name).append(value)
    else:
        setattr(message, spec.name, value)


class _MapEntry:
    """One `key: ... value ...` entry while it is read."""

    def __init__(self, spec: ProtoField) -> None:
        self.spec = spec
        self.key: Any = scalar_from_field(_key_spec(spec), _key_default(spec))
        self.value: Any = spec.message_class() if spec.message is not None else None


def _key_spec(spec: ProtoField) -> ProtoField:
    return ProtoField(1, "key", spec.key_kind)


def _key_default(spec: ProtoField) -> Any:
    return "" if spec.key_kind == "string" else 0


def _map_entry_body(tokens: _Tokens, entry: _MapEntry, close: str) -> None:
    while not tokens.take(close):
        where = tokens.where()
        _, name = tokens.next("key or value")
        if name == "key":
            tokens.expect(":")
            entry.key = _scalar(tokens, _key_spec(entry.spec), entry.spec.key_kind)
        elif name == "value":
            if entry.spec.message is not None:
                _sub_message(tokens, entry.value)
            else:
                tokens.expect(":")
                value_spec = ProtoField(2, "value", entry.spec.value_kind)
                entry.value = _scalar(tokens, value_spec, entry.spec.value_kind)
        else:
            raise ParseError(f"{where} : a map entry has fields key and value, not '{name}'")
        tokens.take(",") or tokens.take(";")


def _read_entry(tokens: _Tokens, entry: _MapEntry) -> None:
    where = tokens.where()
    tokens.take(":")
    if tokens.take("{"):
        _map_entry_body(tokens, entry, "}")
    elif tokens.take("<"):
        _map_entry_body(tokens, entry, ">")
    else:
        raise ParseError(f"{where} : expected '{{' or '<'")


def merge(text: str | bytes, message: Message) -> Message:
    """Read `text` into `message` (fields already set stay, repeated fields grow)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    _message_body(_Tokens(text), message, None)
    return message


def parse(text: str | bytes, message: Message) -> Message:
    """`text_format.Parse`: `message` cleared, then read from `text`; returns it."""
    message.Clear()
    return merge(text, message)
