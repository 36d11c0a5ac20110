"""Parsing ops: records of text and bytes into tensors, with TensorFlow's rules and errors.

tf.decode_csv (DecodeCSV), tf.decode_raw (DecodeRaw, DecodePaddedRaw), tf.decode_compressed,
tf.parse_tensor / tf.serialize_tensor, and tf.parse_example / tf.parse_single_example
(ParseExampleV2) with tf.FixedLenFeature, tf.FixedLenSequenceFeature, and tf.VarLenFeature and
tf.SparseFeature (SparseTensors).

Every op here reads or makes tf.string values, so a Session evaluates it with its reference in
a Python stage (registry.STRING_REASON) and native builds refuse it by name; the numbers it
produces go on to the compiled stages after it. The references follow TensorFlow's kernels:
decode_csv_op.cc's field splitting and absl's number parsing (SimpleAtoi, SimpleAtof),
example_proto_fast_parsing.cc's errors.
"""

from __future__ import annotations

import base64
import re
import zlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from tfc.io.example_pb import example_features, sequence_example_features
from tfc.io.graph_pb import TensorProto
from tfc.io.proto import DecodeError
from tfc.io.protowire import WireFormatError
from tfc.io.tensor_proto import dtype_to_enum, enum_to_dtype, make_ndarray, shape_to_proto
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import TensorShape, shape_str
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.registry import STRING_REASON, OpContext, OpDef, apply_op, check_dtype, register
from tfc.ops.sparse_ops import sparse_merge
from tfc.ops.sparse_tensor import SparseTensor

__all__ = [
    "decode_csv",
    "decode_raw",
    "decode_compressed",
    "parse_tensor",
    "serialize_tensor",
    "parse_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "VarLenFeature",
    "SparseFeature",
]


def _register(op_type: str, infer: Any, reference: Any, dtypes: tuple = ()) -> None:
    register(
        OpDef(
            op_type,
            infer=infer,
            reference=reference,
            differentiable=False,
            in_python=STRING_REASON,
            dtypes=dtypes,  # beyond the core ones (ir.dtypes.CORE)
        )
    )


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _text(field: bytes) -> str:
    return field.decode("utf-8", "backslashreplace")


# -- numbers as absl parses them -------------------------------------------------------------------
_SPACE = " \t\n\v\f\r"
_INT = re.compile(rb"[+-]?[0-9]+")
_DECIMAL = re.compile(rb"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_HEX = re.compile(rb"-?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?")
_SPECIAL = re.compile(rb"-?(inf|infinity|nan|nan\([0-9a-zA-Z_]*\))", re.IGNORECASE)
_INT_RANGE = {_dt.int32: (-(1 << 31), (1 << 31) - 1), _dt.int64: (-(1 << 63), (1 << 63) - 1)}


def parse_int(field: bytes, dtype: _dt.DType) -> int | None:
    """absl::SimpleAtoi: decimal digits with an optional sign, spaces around; None if not."""
    text = field.strip(_SPACE.encode())
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    low, high = _INT_RANGE[dtype]
    return value if low <= value <= high else None


def parse_float(field: bytes, dtype: _dt.DType) -> float | None:
    """absl::SimpleAtof / SimpleAtod: a decimal or hex number, inf, infinity or nan (any case),
    spaces around, a leading "+" allowed; out of range is +-inf, too small 0. float32 values
    are rounded once, from the decimal, as from_chars<float> rounds."""
    text = field.strip(_SPACE.encode())
    if text.startswith(b"+") and not text.startswith(b"+-"):
        text = text[1:]
    if _SPECIAL.fullmatch(text):
        value = float("nan") if b"nan" in text.lower() else float("inf")
        return -value if text.startswith(b"-") else value
    if _HEX.fullmatch(text):
        negative = text.startswith(b"-")
        body = text[1:] if negative else text
        value = float.fromhex(body.decode())
        value = -value if negative else value
        return float(np.float32(value)) if dtype == _dt.float32 else value
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)  # correctly rounded to a double
    if dtype == _dt.float32:
        return _round_to_float32(text, value)
    return value


def _round_to_float32(text: bytes, value: float) -> float:
    """The float32 nearest the decimal `text`, whose nearest double is `value`: rounding the
    double again is right unless the double is exactly halfway between two float32s."""
    with np.errstate(over="ignore"):
        single = np.float32(value)
        if not np.isfinite(single) or float(single) == value:
            return float(single)
        toward = np.float32(np.inf if value > float(single) else -np.inf)
        other = np.nextafter(single, toward)
    if not np.isfinite(other) or (float(single) + float(other)) / 2 != value:
        return float(single)
    exact = Fraction(text.decode())  # the tie of the double: the decimal decides
    halfway = Fraction(float(single)) + Fraction(float(other) - float(single)) / 2
    if exact == halfway:
        return float(single)  # a true tie: NumPy rounded it to even, as from_chars does
    above = exact > halfway
    return float(other if above == (float(other) > float(single)) else single)


# -- DecodeCSV ------------------------------------------------------------------------------------
_CSV_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64, _dt.string)


def _decode_csv_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "records")
    types = ctx.attrs["OUT_TYPE"]
    if len(ctx.in_dtypes) - 1 != len(types):
        raise ctx.error(f"DecodeCSV has {len(types)} output types and "
                        f"{len(ctx.in_dtypes) - 1} record defaults")  # fmt: skip
    for i, (dtype, shape) in enumerate(zip(ctx.in_dtypes[1:], ctx.in_shapes[1:])):
        check_dtype(ctx, i + 1, _CSV_TYPES, "record_defaults")
        if dtype != types[i]:
            raise ctx.type_error(f"record_defaults[{i}] is {dtype.name}, OUT_TYPE[{i}] "
                                 f"{types[i].name}")  # fmt: skip
        if shape is not None:
            if len(shape) > 1:
                raise ctx.error(f"Shape must be at most rank 1 but is rank {len(shape)}")
            if len(shape) == 1 and shape[0] is not None and shape[0] > 1:
                raise ctx.error("Shape of a default must be a length-0 or length-1 vector, or a "
                                "scalar.")  # fmt: skip
    delim = ctx.attrs["field_delim"]
    if len(delim) != 1:
        raise ctx.error("field_delim should be only 1 char")
    select = list(ctx.attrs["select_cols"])
    if select and len(select) != len(types):
        raise ctx.error("select_cols should match output size")
    if any(a >= b for a, b in zip(select, select[1:])):
        raise ctx.error("select_cols should be strictly increasing indices")
    if select and select[0] < 0:
        raise ctx.error("select_cols should be non-negative indices")
    return [(t, ctx.in_shapes[0]) for t in types]


def csv_fields(
    record: bytes, delim: int, quote: bool, select: list[int] | None = None
) -> list[bytes]:
    """The fields of one record, split as TF's DecodeCSV splits it (its ExtractFields): quoted
    fields when `quote` (a doubled quote inside is one quote), line breaks between fields
    skipped, an empty last field after a trailing delimiter; only the columns `select` when
    given (ascending)."""
    fields: list[bytes] = []
    n, i, parsed, want = len(record), 0, 0, 0
    if n == 0:
        return fields
    while i < n:
        c = record[i]
        if c in (10, 13):
            i += 1
            continue
        include = select is None or select[want] == parsed
        field = bytearray()
        if quote and c == 34:
            i += 1
            while i < n - 1 and (record[i] != 34 or record[i + 1] != delim):
                if record[i] != 34:
                    field.append(record[i])
                    i += 1
                else:
                    if record[i + 1] != 34:
                        raise _invalid("Quote inside a string has to be escaped by another quote")
                    field.append(34)
                    i += 2
            if not (i < n and record[i] == 34 and (i == n - 1 or record[i + 1] == delim)):
                raise _invalid("Quoted field has to end with quote followed by delim or end")
            i += 2
        else:
            while i < n and record[i] != delim:
                if (quote and record[i] == 34) or record[i] in (10, 13):
                    raise _invalid("Unquoted fields cannot have quotes/CRLFs inside")
                field.append(record[i])
                i += 1
            i += 1
        parsed += 1
        if include:
            fields.append(bytes(field))
            want += 1
            if select is not None and want == len(select):
                return fields
    if (select is None or select[want] == parsed) and record[n - 1] == delim:
        fields.append(b"")
    return fields


def _decode_csv_reference(ctx: OpContext, records: np.ndarray, *defaults: np.ndarray) -> list:
    types = ctx.attrs["OUT_TYPE"]
    delim = ctx.attrs["field_delim"].encode("latin-1")[0]
    quote = ctx.attrs["use_quote_delim"]
    na_value = ctx.attrs["na_value"].encode("utf-8")
    select = list(ctx.attrs["select_cols"]) or None
    for f, d in enumerate(defaults):
        if np.ndim(d) > 1:
            raise _invalid("Each record default should be at most rank 1")
        if np.size(d) > 1:
            raise _invalid(
                f"There should only be 1 default per field but field {f} has {np.size(d)}"
            )
    flat = np.asarray(records).reshape(-1)
    outs = [np.empty(flat.shape, dtype=t.np) for t in types]
    for i, record in enumerate(flat):
        fields = csv_fields(bytes(record), delim, quote, select)
        if len(fields) != len(types):
            raise _invalid(f"Expect {len(types)} fields but have {len(fields)} in record {i}")
        for f, (field, dtype) in enumerate(zip(fields, types)):
            if not field or field == na_value:
                if np.size(defaults[f]) != 1:
                    raise _invalid(f"Field {f} is required but missing in record {i}!")
                outs[f][i] = np.asarray(defaults[f]).reshape(-1)[0]
            elif dtype == _dt.string:
                outs[f][i] = field
            else:
                parse = parse_float if dtype.is_floating else parse_int
                value = parse(field, dtype)
                if value is None:
                    kind = {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)
                    raise _invalid(f"Field {f} in record {i} is not a valid {kind}: {_text(field)}")
                outs[f][i] = value
    return [o.reshape(np.shape(records)) for o in outs]


_register("DecodeCSV", _decode_csv_infer, _decode_csv_reference)


def decode_csv(
    records: Any,
    record_defaults: Any,
    field_delim: str = ",",
    use_quote_delim: bool = True,
    name: str | None = None,
    na_value: str = "",
    select_cols: Any = None,
) -> list[Tensor]:
    """`tf.decode_csv` (tf.io.decode_csv): each string of `records` split into fields, one
    output per field with `records`' shape. `record_defaults` gives each column's dtype
    (float32, float64, int32, int64, string) and its value where a field is empty or
    `na_value`; an empty default makes the column required. `select_cols` (ascending) picks
    the columns to parse. Bad records fail the run with TF's InvalidArgumentError."""
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(a >= b for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    with name_scope(name, "DecodeCSV", [records]):
        records_t = convert_to_tensor(records, name="records")
        defaults = []
        for i, d in enumerate(record_defaults):
            if isinstance(d, (list, tuple)) and len(d) == 0:
                d = np.zeros([0], np.float32)  # TF converts [] to an empty float32 tensor
            defaults.append(convert_to_tensor(d, name=f"record_defaults_{i}"))
        attrs = {
            "OUT_TYPE": [d.dtype for d in defaults],
            "field_delim": field_delim,
            "use_quote_delim": bool(use_quote_delim),
            "na_value": na_value,
            "select_cols": select_cols or [],
        }
        for d in defaults:
            if d.dtype not in _CSV_TYPES:
                names = ", ".join(t.name for t in _CSV_TYPES)
                raise TypeError(
                    f"Value passed to parameter 'record_defaults' has DataType "
                    f"{d.dtype.name} not in list of allowed values: {names}"
                )
        return list(apply_op("DecodeCSV", [records_t, *defaults], attrs, name="DecodeCSV").outputs)


# -- DecodeRaw, DecodePaddedRaw -------------------------------------------------------------------
# TF's DecodeRaw types, as far as tfc has them (tfc.ir.dtypes grows)
_RAW_TYPES = (
    _dt.float16, _dt.float32, _dt.float64, _dt.int32, _dt.uint16, _dt.uint8, _dt.int16,
    _dt.int8, _dt.int64, _dt.complex64, _dt.complex128, _dt.bool_,
)  # fmt: skip


def _raw_dtype(ctx: OpContext) -> _dt.DType:
    dtype = ctx.attrs["out_type"]
    if dtype not in _RAW_TYPES:
        names = ", ".join(t.name for t in _RAW_TYPES)
        raise TypeError(f"Value for attr 'out_type' of {dtype.name} is not in the list of allowed "
                        f"values: {names} (op '{ctx.name}' of type {ctx.type})")  # fmt: skip
    return dtype


def _decode_raw_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "bytes")
    shape = ctx.in_shapes[0]
    return [(_raw_dtype(ctx), None if shape is None else (*shape, None))]


def _raw_numpy(dtype: _dt.DType, little_endian: bool) -> np.dtype:
    np_dtype = np.dtype(dtype.np)
    return (
        np_dtype.newbyteorder("<" if little_endian else ">") if np_dtype.itemsize > 1 else np_dtype
    )


def _decode_raw_reference(ctx: OpContext, data: np.ndarray) -> np.ndarray:
    dtype = ctx.attrs["out_type"]
    raw = _raw_numpy(dtype, ctx.attrs["little_endian"])
    flat = [bytes(b) for b in np.asarray(data).reshape(-1)]
    if not flat:
        return np.zeros((*np.shape(data), 0), dtype=dtype.np)
    size = len(flat[0])
    if size % raw.itemsize:
        raise _invalid(f"Input to DecodeRaw has length {size} that is not a multiple of "
                       f"{raw.itemsize}, the size of {_type_words(dtype)}")  # fmt: skip
    for i, b in enumerate(flat):
        if len(b) != size:
            raise _invalid(f"DecodeRaw requires input strings to all be the same size, but "
                           f"element {i} has size {size} != {len(b)}")  # fmt: skip
    values = np.frombuffer(b"".join(flat), dtype=raw).astype(dtype.np)
    return values.reshape(*np.shape(data), size // raw.itemsize)


def _type_words(dtype: _dt.DType) -> str:
    """TF's DataTypeString: "float" for float32, "double" for float64, else the name."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


_register("DecodeRaw", _decode_raw_infer, _decode_raw_reference, _RAW_TYPES)


def _decode_padded_raw_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "input_bytes")
    check_dtype(ctx, 1, [_dt.int32], "fixed_length")
    dtype, shape = _raw_dtype(ctx), ctx.in_shapes[0]
    if dtype == _dt.bool_ or "complex" in dtype.name:
        raise ctx.type_error(f"DecodePaddedRaw does not decode {dtype.name}")
    length = ctx.const(1)
    n = None if length is None else int(length) // np.dtype(dtype.np).itemsize
    return [(dtype, None if shape is None else (*shape, n))]


def _decode_padded_raw_reference(ctx: OpContext, data: np.ndarray, length: np.ndarray) -> Any:
    dtype = ctx.attrs["out_type"]
    raw = _raw_numpy(dtype, ctx.attrs["little_endian"])
    width = int(length)
    if width % raw.itemsize:
        raise _invalid(f"fixed_length ({width}) must be a multiple of the size of out_type "
                       f"({raw.itemsize})")  # fmt: skip
    flat = [bytes(b)[:width].ljust(width, b"\0") for b in np.asarray(data).reshape(-1)]
    values = np.frombuffer(b"".join(flat), dtype=raw).astype(dtype.np)
    return values.reshape(*np.shape(data), width // raw.itemsize)


_register("DecodePaddedRaw", _decode_padded_raw_infer, _decode_padded_raw_reference, _RAW_TYPES)


def decode_raw(
    input_bytes: Any = None,
    out_type: Any = None,
    little_endian: bool = True,
    name: str | None = None,
    bytes: Any = None,  # noqa: A002 - TF1's deprecated name of input_bytes
    fixed_length: Any = None,
) -> Tensor:
    """`tf.decode_raw` (tf.io.decode_raw): the bytes of each string read as an array of
    `out_type`, a new last dimension; all strings must have one length unless `fixed_length`
    (each string then cut or zero-padded to that many bytes)."""
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise ValueError("decode_raw needs input_bytes and out_type")
    # values become strings, as TF's op definition converts them ([] too); a tensor of another
    # dtype is refused by name in the shape rule
    x = convert_to_tensor(
        input_bytes, dtype=None if isinstance(input_bytes, Tensor) else _dt.string
    )
    attrs = {"out_type": _dt.as_dtype(out_type), "little_endian": bool(little_endian)}
    if fixed_length is not None:
        n = convert_to_tensor(fixed_length, dtype=_dt.int32)
        return apply_op("DecodePaddedRaw", [x, n], attrs, name=name or "DecodePaddedRaw").outputs[0]
    return apply_op("DecodeRaw", [x], attrs, name=name or "DecodeRaw").outputs[0]


# -- DecodeCompressed -----------------------------------------------------------------------------
def _decode_compressed_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "bytes")
    if ctx.attrs["compression_type"] not in ("", "ZLIB", "GZIP"):
        raise ctx.error(f"Unsupported compression type {ctx.attrs['compression_type']!r}: "
                        "use '', 'ZLIB' or 'GZIP'")  # fmt: skip
    return [(_dt.string, ctx.in_shapes[0])]


def _decompress(data: bytes, kind: str) -> bytes:
    if not kind:
        return data
    try:  # a gzip member is a zlib stream with gzip's header (windowBits 16 + 15), as in TF
        return zlib.decompress(data, zlib.MAX_WBITS | (16 if kind == "GZIP" else 0))
    except zlib.error as e:
        found = re.match(r"Error (-?\d+) while decompressing data:? ?(.*)", str(e))
        words = f"inflate() failed with error {found[1]}: {found[2]}" if found else str(e)
        raise errors.DataLossError(None, None, words) from None


def _decode_compressed_reference(ctx: OpContext, data: np.ndarray) -> np.ndarray:
    out = np.empty(np.shape(data), dtype=object)
    flat = out.reshape(-1)
    for i, b in enumerate(np.asarray(data).reshape(-1)):
        flat[i] = _decompress(bytes(b), ctx.attrs["compression_type"])
    return out


_register("DecodeCompressed", _decode_compressed_infer, _decode_compressed_reference)


def decode_compressed(bytes: Any, compression_type: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.decode_compressed` (tf.io.decode_compressed): each string decompressed ("ZLIB",
    "GZIP"; "" leaves it as it is)."""
    attrs = {"compression_type": (compression_type or "").upper()}
    x = convert_to_tensor(bytes)
    return apply_op("DecodeCompressed", [x], attrs, name=name or "DecodeCompressed").outputs[0]


# -- SerializeTensor, ParseTensor -----------------------------------------------------------------
def serialize_tensor_bytes(value: np.ndarray) -> bytes:
    """A TensorProto as TF's SerializeTensor writes one: dtype, shape, and the values in
    `tensor_content` (strings in `string_val`)."""
    value = np.asarray(value)
    proto = TensorProto(dtype=dtype_to_enum(_dt.as_dtype(value.dtype)))
    proto.tensor_shape.CopyFrom(shape_to_proto(value.shape))
    if value.dtype == np.object_:
        proto.string_val.extend(bytes(v) for v in value.reshape(-1))
    else:
        proto.tensor_content = (
            np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes()
        )
    return proto.SerializeToString()


def _serialize_tensor_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    return np.array(serialize_tensor_bytes(x), dtype=object)


register(
    OpDef(
        "SerializeTensor",
        infer=lambda ctx: [(_dt.string, ())],
        reference=_serialize_tensor_reference,
        differentiable=False,
        in_python=STRING_REASON,
    )
)


def serialize_tensor(tensor: Any, name: str | None = None) -> Tensor:
    """`tf.serialize_tensor` (tf.io.serialize_tensor): the tensor as a serialized TensorProto."""
    x = convert_to_tensor(tensor)
    return apply_op("SerializeTensor", [x], {"T": x.dtype}, name=name or "SerializeTensor").outputs[
        0
    ]


def _parse_tensor_reference(ctx: OpContext, data: np.ndarray) -> np.ndarray:
    if np.ndim(data) != 0:
        raise _invalid(f"Expected `serialized` to be a scalar, got shape: {list(np.shape(data))}")
    raw = bytes(np.asarray(data)[()])
    try:
        proto = TensorProto.FromString(raw)
        value = make_ndarray(proto)
    except (DecodeError, WireFormatError, ValueError, KeyError):
        raise _invalid(
            "Could not parse `serialized` as TensorProto, base64: " + base64.b64encode(raw).decode()
        ) from None
    parsed = enum_to_dtype(proto.dtype)
    want = ctx.attrs["out_type"]
    if parsed != want:
        raise _invalid(f"Type mismatch between parsed tensor ({_type_words(parsed)}) and dtype "
                       f"({_type_words(want)})")  # fmt: skip
    return np.asarray(value, dtype=want.np)


register(
    OpDef(
        "ParseTensor",
        infer=lambda ctx: [(ctx.attrs["out_type"], None)],
        reference=_parse_tensor_reference,
        differentiable=False,
        in_python=STRING_REASON,
    )
)


def parse_tensor(serialized: Any, out_type: Any, name: str | None = None) -> Tensor:
    """`tf.parse_tensor` (tf.io.parse_tensor): a serialized TensorProto back to a tensor of
    `out_type` (a mismatch fails the run, as in TF)."""
    x = convert_to_tensor(serialized, dtype=_dt.string)
    attrs = {"out_type": _dt.as_dtype(out_type)}
    return apply_op("ParseTensor", [x], attrs, name=name or "ParseTensor").outputs[0]


# -- features -------------------------------------------------------------------------------------
class FixedLenFeature(NamedTuple):
    """`tf.FixedLenFeature(shape, dtype, default_value)`: a feature with `prod(shape)` values
    in every example (float32, int64 or string); without a default it must be present."""

    shape: Any
    dtype: Any
    default_value: Any = None


class FixedLenSequenceFeature(NamedTuple):
    """`tf.FixedLenSequenceFeature(shape, dtype, allow_missing, default_value)`: any number of
    values of `shape` per example, padded with `default_value` to the longest of the batch."""

    shape: Any
    dtype: Any
    allow_missing: bool = False
    default_value: Any = None


class VarLenFeature(NamedTuple):
    """`tf.VarLenFeature(dtype)`: any number of values per example, parsed into a SparseTensor
    [batch, most values] (indices in batch-then-position order)."""

    dtype: Any


class SparseFeature(NamedTuple):
    """`tf.SparseFeature(index_key, value_key, dtype, size)`: a SparseTensor [batch, size]
    whose values (feature `value_key`) sit at the positions feature `index_key` gives."""

    index_key: Any
    value_key: Any
    dtype: Any
    size: Any
    already_sorted: bool = False


_FEATURE_TYPES = (_dt.float32, _dt.int64, _dt.string)
# the words of TF's parse errors for each dtype
_KIND_WORDS = {_dt.float32: "float", _dt.int64: "int64", _dt.string: "string"}


@dataclass(frozen=True)
class _Dense:
    key: str
    dtype: _dt.DType
    shape: tuple  # the shape of one example's value; a sequence feature's element shape
    sequence: bool
    default: Any  # a Tensor, or an empty one when the feature is required


def _dense_specs(features: dict) -> list[_Dense]:
    if not features:
        raise ValueError(f"Argument `features` cannot be None or falsy. Got {features}")
    specs = []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, (VarLenFeature, SparseFeature)):
            continue  # parsed into SparseTensors: _sparse_specs
        if not isinstance(f, (FixedLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Unsupported feature type for {key!r}: {type(f).__name__}")
        dtype = _dt.as_dtype(f.dtype)
        shape = TensorShape(f.shape).as_tuple()
        if shape is None:
            raise ValueError(f"Missing shape for feature {key}.")
        sequence = isinstance(f, FixedLenSequenceFeature)
        if sequence and not f.allow_missing:
            raise ValueError(
                "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
            )
        if None in shape and sequence:
            raise ValueError(f"All dimensions of shape for feature {key} need to be known but "
                             f"received {list(shape)}.")  # fmt: skip
        if None in shape:
            raise ValueError(f"First dimension of shape for feature {key} unknown. Consider "
                             f"using FixedLenSequenceFeature. Received feature={f}.")  # fmt: skip
        if dtype not in _FEATURE_TYPES:
            names = ", ".join(t.name for t in _FEATURE_TYPES)
            raise TypeError(f"Value passed to parameter 'dense_defaults' has DataType "
                            f"{dtype.name} not in list of allowed values: {names}")  # fmt: skip
        specs.append(_Dense(key, dtype, shape, sequence, f.default_value))
    return specs


def _sparse_specs(features: dict) -> list[tuple[str, _dt.DType]]:
    """The (key, dtype) of each feature parsed into a SparseTensor, sorted by key: a
    VarLenFeature's own, and a SparseFeature's index and value features."""
    specs: dict[str, _dt.DType] = {}
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            wanted = [(key, _dt.as_dtype(f.dtype))]
        elif isinstance(f, SparseFeature):
            if not isinstance(f.index_key, str):
                raise NotImplementedError(
                    f"SparseFeature {key!r}: tfc takes one index_key (a string), not "
                    f"{f.index_key!r}"
                )
            wanted = [(f.index_key, _dt.int64), (f.value_key, _dt.as_dtype(f.dtype))]
        else:
            continue
        for name, dtype in wanted:
            if dtype not in _FEATURE_TYPES:
                names = ", ".join(t.name for t in _FEATURE_TYPES)
                raise TypeError(f"Value passed to parameter 'sparse_types' has DataType "
                                f"{dtype.name} not in list of allowed values: {names}")  # fmt: skip
            if specs.setdefault(name, dtype) != dtype:
                raise ValueError(f"Feature {name!r} is parsed with two dtypes: "
                                 f"{specs[name].name} and {dtype.name}")  # fmt: skip
    return sorted(specs.items())


def _default_tensor(spec: _Dense) -> Tensor:
    """The node's dense_defaults input: the default reshaped to the feature's shape, or an
    empty tensor for a required feature (TF's convention)."""
    if spec.default is None:
        return constant(np.zeros([0], spec.dtype.np), name=f"key_{spec.key}")
    if spec.dtype == _dt.string:
        value = _dt.string_array(spec.default)
    else:
        value = np.asarray(_checked_default(spec), dtype=spec.dtype.np)
    if spec.sequence:
        return constant(value, name=f"key_{spec.key}")
    if value.size != int(np.prod(spec.shape)):
        raise ValueError(
            f"Cannot reshape a tensor with {value.size} elements to shape {list(spec.shape)} "
            f"({int(np.prod(spec.shape))} elements) for the default of feature {spec.key}"
        )
    return constant(value.reshape(spec.shape), name=f"key_{spec.key}")


def _checked_default(spec: _Dense) -> Any:
    values = np.asarray(spec.default)
    if spec.dtype == _dt.int64 and values.dtype.kind == "f":
        bad = values.reshape(-1)[0]
        raise TypeError(f"Expected int64, but got {bad!r} of type 'float'.")
    return values


def _parse_example_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "serialized")
    batch = ctx.in_shapes[0]
    if batch is not None and len(batch) > 1:
        raise ctx.error(f"Shape must be at most rank 1 but is rank {len(batch)}")
    if ctx.attrs.get("ragged_value_types"):
        raise ctx.error("tfc parses dense and sparse features only (no RaggedTensor)")
    keys = ctx.const(3)
    types, shapes = ctx.attrs["Tdense"], ctx.attrs["dense_shapes"]
    if keys is not None and np.size(keys) != len(types):
        raise ctx.error(f"{np.size(keys)} dense keys for {len(types)} dense types")
    sparse_types = ctx.attrs["sparse_types"]
    rank = None if batch is None else len(batch) + 1
    outs = [(_dt.int64, (None, rank))] * len(sparse_types)
    outs += [(dtype, (None,)) for dtype in sparse_types]
    outs += [(_dt.int64, (rank,))] * len(sparse_types)
    for dtype, shape in zip(types, shapes):
        lead = () if batch is None or len(batch) == 0 else (batch[0],)
        outs.append((dtype, None if batch is None else (*lead, *shape)))
    return outs


def _parse_example_reference(
    ctx: OpContext,
    serialized: np.ndarray,
    names: np.ndarray,
    sparse_keys: np.ndarray,
    dense_keys: np.ndarray,
    ragged_keys: np.ndarray,
    *defaults: np.ndarray,
) -> list:
    single = np.ndim(serialized) == 0
    records = [bytes(r) for r in np.asarray(serialized).reshape(-1)]
    names_list = [_text(bytes(n)) for n in np.asarray(names).reshape(-1)]
    keys = [_text(bytes(k)) for k in np.asarray(dense_keys).reshape(-1)]
    types, shapes = ctx.attrs["Tdense"], ctx.attrs["dense_shapes"]
    parsed = []
    for record in records:
        try:
            parsed.append(example_features(record))
        except WireFormatError:
            raise _invalid(f"Could not parse example input, value: '{_text(record)}'") from None
    sparse = [
        _parse_var_len(_text(bytes(key)), dtype, parsed, single, names_list)
        for key, dtype in zip(np.asarray(sparse_keys).reshape(-1), ctx.attrs["sparse_types"])
    ]
    outs = [s[0] for s in sparse] + [s[1] for s in sparse] + [s[2] for s in sparse]
    for key, dtype, shape, default in zip(keys, types, shapes, defaults):
        sequence = len(shape) > 0 and shape[0] is None
        element = tuple(shape[1:]) if sequence else tuple(shape)
        size = int(np.prod(element))
        rows = []
        for i, features in enumerate(parsed):
            where = (
                f"Key: {key}" if single
                else f"Name: {names_list[i] if names_list else '<unknown>'}, Key: {key}, "
                f"Index: {i}"
            )  # fmt: skip
            found = features.get(key)
            if found is None:
                if sequence:
                    rows.append(np.zeros((0, *element), dtype.np))
                    continue
                if np.size(default) == 0:
                    prefix = (
                        ""
                        if single
                        else (f"Name: {names_list[i] if names_list else '<unknown>'}, ")
                    )
                    raise _invalid(f"{prefix}Feature: {key} (data type: {_KIND_WORDS[dtype]}) is "
                                   "required but could not be found.")  # fmt: skip
                rows.append(np.asarray(default, dtype.np).reshape(element))
                continue
            kind, values = found
            if kind != _KIND_WORDS[dtype]:
                raise _invalid(f"{where}.  Data types don't match. Data type: {kind} but "
                               f"expected type: {_KIND_WORDS[dtype]}")  # fmt: skip
            array = (
                _dt.string_array(values) if dtype == _dt.string else np.asarray(values, dtype.np)
            )
            if sequence:
                if len(array) % size:
                    raise _invalid(
                        f"{where}.  Number of {kind} values is not a multiple of stride length. "
                        f"Saw {len(array)} values but output shape is: "
                        f"{shape_str((None, *element)).replace('None', '?')}"
                    )
                rows.append(array.reshape(-1, *element))
            elif len(array) != size:
                if single:
                    raise _invalid(f"{where}.  Can't parse serialized Example: Some "
                                   f"{'bytes' if kind == 'string' else kind}_list slice was not "
                                   "parsed.")  # fmt: skip
                raise _invalid(f"{where}.  Number of {kind} values != expected.  Values size: "
                               f"{len(array)} but output shape: {shape_str(element)}")  # fmt: skip
            else:
                rows.append(array.reshape(element))
        if sequence:
            longest = max((len(r) for r in rows), default=0)
            pad = np.asarray(default, dtype.np).reshape(-1)
            fill = pad[0] if pad.size else (b"" if dtype == _dt.string else 0)
            out = np.full((len(rows), longest, *element), fill, dtype=dtype.np)
            for i, r in enumerate(rows):
                out[i, : len(r)] = r
        else:
            out = np.empty((len(rows), *element), dtype=dtype.np)
            for i, r in enumerate(rows):
                out[i, ...] = r
        outs.append(out[0, ...] if single else out)
    return outs


def _parse_var_len(
    key: str, dtype: _dt.DType, parsed: list, single: bool, names_list: list
) -> tuple:
    """A VarLenFeature's (indices, values, dense_shape) over the examples: [N, 2] coordinates
    (example, position) in that order and [batch, most values]; for one example [N, 1] and
    [its count]."""
    indices, values, longest = [], [], 0
    for i, features in enumerate(parsed):
        found = features.get(key)
        if found is None:
            continue
        kind, array = found
        if kind != _KIND_WORDS[dtype]:
            name = names_list[i] if names_list else "<unknown>"
            raise _invalid(f"Name: {name}, Feature: {key}.  Data types don't match. Expected "
                           f"type: {_KIND_WORDS[dtype]}, Actual type: {kind}")  # fmt: skip
        indices += [(i, j) for j in range(len(array))]
        values += list(array)
        longest = max(longest, len(array))
    coords = np.array(indices, np.int64).reshape(-1, 2)
    out = _dt.string_array(values) if dtype == _dt.string else np.asarray(values, dtype.np)
    if single:
        return coords[:, 1:], out.reshape(-1), np.array([longest], np.int64)
    return coords, out.reshape(-1), np.array([len(parsed), longest], np.int64)


register(
    OpDef(
        "ParseExampleV2",
        infer=_parse_example_infer,
        reference=_parse_example_reference,
        differentiable=False,
        in_python=STRING_REASON,
        const_inputs=(2, 3, 4),
    )
)


def _parse_example_op(serialized: Tensor, names: Any, features: dict, scope: str) -> dict:
    specs = _dense_specs(features)
    sparse = _sparse_specs(features)
    names_t = convert_to_tensor(
        _dt.string_array(names) if names is not None else np.zeros([0], object),
        dtype=_dt.string,
    )
    empty = constant(np.zeros([0], object), dtype=_dt.string)
    sparse_keys = constant(_dt.string_array([k for k, _ in sparse]) if sparse else
                           np.zeros([0], object), dtype=_dt.string, name="sparse_keys")  # fmt: skip
    keys = constant(_dt.string_array([s.key for s in specs]), name="dense_keys")
    if not specs:
        keys = constant(np.zeros([0], object), dtype=_dt.string, name="dense_keys")
    defaults = [_default_tensor(s) for s in specs]
    attrs = {
        "Tdense": [s.dtype for s in specs],
        "num_sparse": len(sparse),
        "sparse_types": [d for _, d in sparse],
        "ragged_value_types": [],
        "ragged_split_types": [],
        "dense_shapes": [((None,) if s.sequence else ()) + s.shape for s in specs],
    }
    op = apply_op(
        "ParseExampleV2", [serialized, names_t, sparse_keys, keys, empty, *defaults], attrs,
        name="ParseExampleV2",
    )  # fmt: skip
    n = len(sparse)
    parsed: dict[str, Any] = {
        key: SparseTensor(op.outputs[i], op.outputs[n + i], op.outputs[2 * n + i])
        for i, (key, _) in enumerate(sparse)
    }
    out: dict[str, Any] = {s.key: t for s, t in zip(specs, op.outputs[3 * n :])}
    for key, f in features.items():
        if isinstance(f, VarLenFeature):
            out[key] = parsed[key]
        elif isinstance(f, SparseFeature):
            out[key] = sparse_merge(
                parsed[f.index_key], parsed[f.value_key], int(f.size),
                already_sorted=f.already_sorted,
            )  # fmt: skip
    return out


def parse_example(
    serialized: Any, features: dict, name: str | None = None, example_names: Any = None
) -> dict[str, Tensor]:
    """`tf.parse_example` (tf.io.parse_example): a batch of serialized `tf.train.Example`s
    into a dict of tensors, one per feature of `features` ([batch] + shape; a
    FixedLenSequenceFeature [batch, longest] + shape, padded with its default; a
    VarLenFeature or SparseFeature a SparseTensor)."""
    with name_scope(name, "ParseExample", [serialized]) as scope:
        x = convert_to_tensor(serialized, dtype=_dt.string, name="serialized")
        return _parse_example_op(x, example_names, features, scope)


def parse_single_example(
    serialized: Any, features: dict, name: str | None = None, example_names: Any = None
) -> dict[str, Tensor]:
    """`tf.parse_single_example` (tf.io.parse_single_example): one serialized Example (a
    scalar string) into a dict of tensors of the features' shapes."""
    with name_scope(name, "ParseSingleExample", [serialized]):
        x = convert_to_tensor(serialized, dtype=_dt.string, name="serialized")
        if x._shape_tuple is not None and len(x._shape_tuple) != 0:
            raise ValueError("Input serialized must be a scalar")
        with name_scope(None, "ParseExample", [x]) as scope:
            return _parse_example_op(x, example_names, features, scope)


# -- ParseSingleSequenceExample -------------------------------------------------------------------
def _parse_sequence_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "serialized")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(shape)}")
    context = list(zip(ctx.attrs["context_types"], ctx.attrs["context_shapes"]))
    frames = [(d, (None, *s)) for d, s in zip(ctx.attrs["sequence_types"],
                                              ctx.attrs["sequence_shapes"])]  # fmt: skip
    return [(d, tuple(s)) for d, s in context] + frames


def _parse_sequence_reference(
    ctx: OpContext, serialized: np.ndarray, *defaults: np.ndarray
) -> list:
    record = bytes(np.asarray(serialized)[()])
    try:
        context, lists = sequence_example_features(record)
    except WireFormatError:
        raise _invalid(f"Could not parse example input, value: '{_text(record)}'") from None
    outs = []
    for key, dtype, shape, default in zip(
        ctx.attrs["context_keys"], ctx.attrs["context_types"], ctx.attrs["context_shapes"],
        defaults,
    ):  # fmt: skip
        size = int(np.prod(shape))
        found = context.get(key)
        if found is None:
            if np.size(default) == 0:
                raise _invalid(f"Inconsistent max number of elements for feature {key}: "
                               f"expected {size}, but found 0")  # fmt: skip
            outs.append(np.asarray(default, dtype.np).reshape(shape))
            continue
        kind, values = found
        if kind != _KIND_WORDS[dtype]:
            raise _invalid(f"Name: <unknown>, Context feature: {key}.  Data types don't match. "
                           f"Expected type: {_KIND_WORDS[dtype]}")  # fmt: skip
        array = _dt.string_array(values) if dtype == _dt.string else np.asarray(values, dtype.np)
        if len(array) != size:
            raise _invalid(f"Inconsistent max number of elements for feature {key}: expected "
                           f"{size}, but found {len(array)}")  # fmt: skip
        outs.append(array.reshape(shape))
    for key, dtype, shape, allow_missing in zip(
        ctx.attrs["sequence_keys"], ctx.attrs["sequence_types"], ctx.attrs["sequence_shapes"],
        ctx.attrs["sequence_allow_missing"],
    ):  # fmt: skip
        size = int(np.prod(shape))
        frames = lists.get(key)
        if frames is None:
            if not allow_missing:
                raise _invalid(
                    f"Name: <unknown>, Feature list '{key}' is required but could not be found.  "
                    "Did you mean to include it in feature_list_dense_missing_assumed_empty or "
                    "feature_list_dense_defaults?"
                )
            frames = []
        rows = []
        for index, found in enumerate(frames):
            kind, values = found if found is not None else (_KIND_WORDS[dtype], [])
            if kind != _KIND_WORDS[dtype]:
                raise _invalid(
                    f"Name: <unknown>, Feature list: {key}, Index: {index}.  Data types don't "
                    f"match. Expected type: {_KIND_WORDS[dtype]}"
                )
            if len(values) != size:
                raise _invalid(f"Name: <unknown>, Key: {key}, Index: {index}.  Number of values "
                               f"!= expected.  values size: {len(values)} but output shape: "
                               f"{shape_str(tuple(shape))}")  # fmt: skip
            rows.append(
                _dt.string_array(values) if dtype == _dt.string else np.asarray(values, dtype.np)
            )
        out = np.empty((len(rows), *shape), dtype=dtype.np)
        for i, r in enumerate(rows):
            out[i, ...] = r.reshape(shape)
        outs.append(out)
    return outs


register(
    OpDef(
        "ParseSingleSequenceExample",
        infer=_parse_sequence_infer,
        reference=_parse_sequence_reference,
        differentiable=False,
        in_python=STRING_REASON,
    )
)


def parse_single_sequence_example(
    serialized: Any,
    context_features: dict | None = None,
    sequence_features: dict | None = None,
    example_name: Any = None,
    name: str | None = None,
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """`tf.parse_single_sequence_example` (tf.io): one serialized `tf.train.SequenceExample`
    into (context, sequences): each context feature (a FixedLenFeature) a tensor of its shape,
    each sequence feature (a FixedLenSequenceFeature) [frames] + its shape; a missing feature
    list is empty where `allow_missing`, else an error."""
    context_features = dict(context_features or {})
    sequence_features = dict(sequence_features or {})
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    for key, f in sequence_features.items():
        if isinstance(f, FixedLenSequenceFeature) and f.default_value is not None:
            raise ValueError(f"Value feature_list.dense_defaults[{key}] must be None")
    context = _dense_specs(context_features) if context_features else []
    for spec in context:
        if spec.sequence:
            raise ValueError(f"Context feature {spec.key} must be a FixedLenFeature")
    frames = []
    for key in sorted(sequence_features):
        f = sequence_features[key]
        if not isinstance(f, FixedLenSequenceFeature):
            raise NotImplementedError(
                f"Sequence feature {key!r} is a {type(f).__name__}; tfc parses "
                "FixedLenSequenceFeature sequences only (TF parses the others into SparseTensors)"
            )
        spec = _dense_specs({key: f._replace(allow_missing=True)})[0]
        frames.append((spec, bool(f.allow_missing)))
    with name_scope(name, "ParseSingleSequenceExample", [serialized]):
        x = convert_to_tensor(serialized, dtype=_dt.string, name="serialized")
        defaults = [_default_tensor(s) for s in context]
        attrs = {
            "context_keys": [s.key for s in context],
            "context_types": [s.dtype for s in context],
            "context_shapes": [s.shape for s in context],
            "sequence_keys": [s.key for s, _ in frames],
            "sequence_types": [s.dtype for s, _ in frames],
            "sequence_shapes": [s.shape for s, _ in frames],
            "sequence_allow_missing": [m for _, m in frames],
        }
        op = apply_op("ParseSingleSequenceExample", [x, *defaults], attrs,
                      name="ParseSingleSequenceExample")  # fmt: skip
    outs = list(op.outputs)
    return (
        {s.key: t for s, t in zip(context, outs[: len(context)])},
        {s.key: t for (s, _), t in zip(frames, outs[len(context) :])},
    )
