"""tf.train.Example and its kin: the messages of tensorflow/core/example/{example,feature}.proto.

The classes (Example, Features, Feature, BytesList, FloatList, Int64List, SequenceExample,
FeatureList, FeatureLists) are tfc/io/proto.py messages, with protobuf's API and bytes.
`example_features` decodes a serialized Example straight into arrays, as parse_example needs
them thousands of times a step: packed floats through NumPy, without building messages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.io import protowire
from tfc.io.proto import DecodeError, Message, ProtoField

__all__ = [
    "BytesList",
    "FloatList",
    "Int64List",
    "Feature",
    "Features",
    "FeatureList",
    "FeatureLists",
    "Example",
    "SequenceExample",
    "example_features",
    "sequence_example_features",
    "FEATURE_KINDS",
]

F = ProtoField


class BytesList(Message):
    FIELDS = (F(1, "value", "bytes", repeated=True),)


class FloatList(Message):
    FIELDS = (F(1, "value", "float", repeated=True),)


class Int64List(Message):
    FIELDS = (F(1, "value", "int64", repeated=True),)


class Feature(Message):
    FIELDS = (
        F(1, "bytes_list", "message", message=BytesList, oneof="kind"),
        F(2, "float_list", "message", message=FloatList, oneof="kind"),
        F(3, "int64_list", "message", message=Int64List, oneof="kind"),
    )


class Features(Message):
    FIELDS = (F(1, "feature", "map", key_kind="string", message=Feature),)


class FeatureList(Message):
    FIELDS = (F(1, "feature", "message", repeated=True, message=Feature),)


class FeatureLists(Message):
    FIELDS = (F(1, "feature_list", "map", key_kind="string", message=FeatureList),)


class Example(Message):
    FIELDS = (F(1, "features", "message", message=Features),)


class SequenceExample(Message):
    FIELDS = (
        F(1, "context", "message", message=Features),
        F(2, "feature_lists", "message", message=FeatureLists),
    )


# the Feature oneof's field number -> the kind of its values, as TF's parse errors name them
FEATURE_KINDS = {1: "string", 2: "float", 3: "int64"}


def _fields(data: bytes, what: str) -> list[tuple[int, int, Any]]:
    """(number, wire type, value) of each field of a message's bytes: an int for varints and
    fixed-width values, the payload for length-delimited ones."""
    out = []
    pos, end = 0, len(data)
    while pos < end:
        key, pos = protowire.read_varint(data, pos, what)
        number, wire = key >> 3, key & 7
        if wire == protowire.VARINT:
            value, pos = protowire.read_varint(data, pos, what)
        elif wire == protowire.LENGTH_DELIMITED:
            size, pos = protowire.read_varint(data, pos, what)
            if pos + size > end:
                raise DecodeError(f"{what}: field {number} runs past the end")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (protowire.FIXED32, protowire.FIXED64):
            width = 4 if wire == protowire.FIXED32 else 8
            if pos + width > end:
                raise DecodeError(f"{what}: field {number} runs past the end")
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise DecodeError(f"{what}: field {number} has wire type {wire}")
        out.append((number, wire, value))
    return out


def _varints(payload: bytes, what: str) -> list[int]:
    values, pos = [], 0
    while pos < len(payload):
        value, pos = protowire.read_varint(payload, pos, what)
        values.append(value - (1 << 64) if value >= 1 << 63 else value)
    return values


def _feature_values(data: bytes) -> tuple[str, Any] | None:
    """The kind and values of a serialized Feature: a list of bytes, a float32 array or an
    int64 array; None for a Feature with no kind set."""
    found: tuple[str, Any] | None = None
    for number, wire, payload in _fields(data, "Feature"):
        if number not in FEATURE_KINDS or wire != protowire.LENGTH_DELIMITED:
            continue
        kind = FEATURE_KINDS[number]
        parts: list[Any] = []
        for n, w, value in _fields(payload, f"{kind} list"):
            if n != 1:
                continue
            if kind == "string" and w == protowire.LENGTH_DELIMITED:
                parts.append(value)
            elif kind == "float" and w == protowire.LENGTH_DELIMITED:
                if len(value) % 4:
                    raise DecodeError("packed float list ends inside a value")
                parts.extend(np.frombuffer(value, "<f4").tolist())
            elif kind == "float" and w == protowire.FIXED32:
                parts.append(np.frombuffer(value.to_bytes(4, "little"), "<f4")[0])
            elif kind == "int64" and w == protowire.LENGTH_DELIMITED:
                parts.extend(_varints(value, "packed int64 list"))
            elif kind == "int64" and w == protowire.VARINT:
                parts.append(value - (1 << 64) if value >= 1 << 63 else value)
            else:
                raise DecodeError(f"{kind} list value has wire type {w}")
        # a oneof member seen again merges into the same list; another member replaces it
        if found is not None and found[0] == kind:
            parts = found[1] + parts
        found = (kind, parts)
    if found is None:
        return None
    kind, parts = found
    if kind == "float":
        return kind, np.array(parts, dtype=np.float32)
    if kind == "int64":
        return kind, np.array(parts, dtype=np.int64)
    return kind, parts


def example_features(data: bytes) -> dict[str, tuple[str, Any] | None]:
    """The features of a serialized Example by name: (kind, values) with kind "string"
    (a list of bytes), "float" (float32 array) or "int64" (int64 array); None for a Feature
    without a kind. Raises DecodeError for bytes that are not an Example."""
    data = bytes(data)
    features: dict[str, tuple[str, Any] | None] = {}
    for number, wire, payload in _fields(data, "Example"):
        if number != 1 or wire != protowire.LENGTH_DELIMITED:
            continue
        for n, w, entry in _fields(payload, "Features"):
            if n != 1 or w != protowire.LENGTH_DELIMITED:
                continue
            key, value = "", b""
            for k, kw, part in _fields(entry, "Features entry"):
                if k == 1 and kw == protowire.LENGTH_DELIMITED:
                    try:
                        key = part.decode("utf-8")
                    except UnicodeDecodeError:
                        raise DecodeError("a feature name is not valid UTF-8") from None
                elif k == 2 and kw == protowire.LENGTH_DELIMITED:
                    value = part
            features[key] = _feature_values(value)  # a map key seen again: the last wins
    return features


def _features_map(payload: bytes, entry_field: int, what: str) -> dict[str, bytes]:
    """The entries of a map<string, message> field's messages: key -> the value's bytes."""
    out: dict[str, bytes] = {}
    for n, w, entry in _fields(payload, what):
        if n != entry_field or w != protowire.LENGTH_DELIMITED:
            continue
        key, value = "", b""
        for k, kw, part in _fields(entry, f"{what} entry"):
            if k == 1 and kw == protowire.LENGTH_DELIMITED:
                try:
                    key = part.decode("utf-8")
                except UnicodeDecodeError:
                    raise DecodeError("a feature name is not valid UTF-8") from None
            elif k == 2 and kw == protowire.LENGTH_DELIMITED:
                value = part
        out[key] = value  # a map key seen again: the last wins
    return out


def sequence_example_features(
    data: bytes,
) -> tuple[dict[str, tuple[str, Any] | None], dict[str, list[tuple[str, Any] | None]]]:
    """The context features of a serialized SequenceExample (as example_features gives an
    Example's) and its feature lists: name -> the (kind, values) of each of its Features."""
    data = bytes(data)
    context: dict[str, bytes] = {}
    lists: dict[str, bytes] = {}
    for number, wire, payload in _fields(data, "SequenceExample"):
        if wire != protowire.LENGTH_DELIMITED:
            continue
        if number == 1:
            context.update(_features_map(payload, 1, "Features"))
        elif number == 2:
            lists.update(_features_map(payload, 1, "FeatureLists"))
    frames: dict[str, list[tuple[str, Any] | None]] = {}
    for key, payload in lists.items():
        frames[key] = [
            _feature_values(feature)
            for n, w, feature in _fields(payload, "FeatureList")
            if n == 1 and w == protowire.LENGTH_DELIMITED
        ]
    return {k: _feature_values(v) for k, v in context.items()}, frames
