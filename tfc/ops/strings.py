"""String ops, evaluated in Python with TensorFlow's formats, parsing rules and hashes.

tf.as_string, tf.strings.join/length/to_number/substr/strip/upper/lower/format/split,
tf.reduce_join, tf.regex_replace, tf.strings.regex_full_match, the hash buckets, base64.

tf.string values are NumPy object arrays of `bytes` (tfc.ir.dtypes.string); native code has no
strings, so every op here runs in Python (registry.STRING_REASON): a Session evaluates it with
its reference in a Python stage, and what it computes (lengths, numbers, hash buckets) goes on
to the compiled stages after it. The references follow TensorFlow's kernels: its number
formats (printf's), its parsing rules, its hashes bit for bit (tfc/ops/string_hash.py), its
run-time errors. Regular expressions are RE2's in TF and Python's `re` here: the common syntax
is the same; RE2's rewrite "\\1" (a group) and "\\\\" (a backslash) are honoured.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import merge_shapes, shape_str
from tfc.ops.constant import convert_to_tensor
from tfc.ops.registry import (
    STRING_REASON,
    OpContext,
    OpDef,
    apply_op,
    broadcast_shape,
    check_dtype,
    normalize_axis,
    register,
)
from tfc.ops.sparse_tensor import SparseTensor
from tfc.ops.string_hash import fingerprint64, legacy_hash64, siphash24
from tfc.ops.tensor_text import format_template

__all__ = [
    "as_string",
    "string_split",
    "string_join",
    "reduce_join",
    "regex_replace",
    "string_strip",
    "string_to_number",
    "string_to_hash_bucket",
    "string_to_hash_bucket_fast",
    "string_to_hash_bucket_strong",
    "substr",
    "encode_base64",
    "decode_base64",
]

_NUMBERS = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


def _map(function: Callable[[Any], Any], x: np.ndarray, dtype: _dt.DType) -> np.ndarray:
    """`function` of every element of `x`, as an array of `dtype` with x's shape."""
    out = np.empty(x.shape, dtype=dtype.np)
    flat = out.reshape(-1)
    for i, value in enumerate(np.asarray(x).reshape(-1)):
        flat[i] = function(value)
    return out


def _strings(ctx: OpContext, i: int, what: str = "input") -> None:
    check_dtype(ctx, i, [_dt.string], what)


def _register(op_type: str, infer: Callable, reference: Callable, **flags: Any) -> None:
    """A string op: it runs in Python; none has a gradient (TF registers none)."""
    register(
        OpDef(
            op_type,
            infer=infer,
            reference=reference,
            differentiable=False,
            in_python=STRING_REASON,
            **flags,
        )
    )


# -- AsString -----------------------------------------------------------------------------------
def _as_string_format(ctx: OpContext) -> str:
    """The printf format TF's AsStringOp builds from its attributes."""
    dtype, attrs = ctx.in_dtypes[0], ctx.attrs
    precision, width, fill = attrs["precision"], attrs["width"], attrs["fill"]
    scientific, shortest = attrs["scientific"], attrs["shortest"]
    if scientific and shortest:
        raise ctx.error("Cannot select both scientific and shortest notation")
    if not dtype.is_floating and (precision > -1 or scientific or shortest):
        raise ctx.error(f"Cannot select precision, scientific or shortest for {dtype.name}")
    if fill and len(fill) > 1:
        raise ctx.error(f"Fill string must be one or fewer characters, got {fill!r}")
    if fill and fill not in " +-0#":
        raise ctx.error(f"Fill argument not supported: {fill!r}")
    fmt = "%" + fill + (str(width) if width > -1 else "")
    if dtype.is_floating:
        fmt += f".{precision}" if precision > -1 else ""
        return fmt + ("g" if shortest else "e" if scientific else "f")
    return fmt + ("s" if dtype.is_bool or dtype.is_string else "d")


def _as_string_infer(ctx: OpContext) -> list:
    _as_string_format(ctx)
    return [(_dt.string, ctx.in_shapes[0])]


def _as_string_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    fmt, dtype = _as_string_format(ctx), ctx.in_dtypes[0]
    if dtype.is_bool:
        return _map(lambda v: (fmt % ("true" if v else "false")).encode(), x, _dt.string)
    if dtype.is_string:
        return _map(lambda v: (fmt % v.decode("latin-1")).encode("latin-1"), x, _dt.string)
    if dtype.is_floating:
        return _map(lambda v: _printf_float(fmt, float(v)).encode(), x, _dt.string)
    return _map(lambda v: (fmt % int(v)).encode(), x, _dt.string)


def _printf_float(fmt: str, value: float) -> str:
    """C's printf of a double: as Python's, except that a NaN keeps its sign ("-nan") and
    the "0" flag pads infinities and NaNs with spaces."""
    if not np.isfinite(value):
        fmt = fmt.replace("%0", "%", 1)
    text = fmt % value
    if value != value and np.signbit(value):
        text = text.replace("nan", "-nan")
        text = text[1:] if text.startswith(" ") else text  # the sign takes a padding space
    return text


_register("AsString", _as_string_infer, _as_string_reference)


def as_string(
    input: Any,  # noqa: A002 - TF's argument name
    precision: int = -1,
    scientific: bool = False,
    shortest: bool = False,
    width: int = -1,
    fill: str = "",
    name: str | None = None,
) -> Tensor:
    """`tf.as_string`: each element as text, as TF's printf formats write it ("%f" for floats
    by default: 1.5 -> "1.500000"; bools "true"/"false")."""
    x = convert_to_tensor(input)
    attrs = {"precision": int(precision), "scientific": bool(scientific),
             "shortest": bool(shortest), "width": int(width), "fill": str(fill)}  # fmt: skip
    return apply_op("AsString", [x], attrs, name=name or "AsString").outputs[0]


# -- StringJoin ----------------------------------------------------------------------------------
def _join_infer(ctx: OpContext) -> list:
    shape: Any = ()
    for i in range(len(ctx.in_dtypes)):
        _strings(ctx, i, "inputs")
        s = ctx.in_shapes[i]
        if s is not None and len(s) == 0:
            continue  # scalars go with any shape
        if shape == ():
            shape = s
        elif s is not None and shape is not None:
            merged = merge_shapes(shape, s)
            if merged is False:
                raise ctx.error(
                    f"Shapes {shape_str(shape)} and {shape_str(s)} must be equal (string_join "
                    "joins tensors of one shape, and scalars)"
                )
            shape = merged
        else:
            shape = None
    return [(_dt.string, shape)]


def _join_reference(ctx: OpContext, *inputs: np.ndarray) -> np.ndarray:
    parts = np.broadcast_arrays(*inputs) if inputs else []
    shape = parts[0].shape if parts else ()
    separator = ctx.attrs["separator"].encode("utf-8")
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    columns = [p.reshape(-1) for p in parts]
    for i in range(flat.size):
        flat[i] = separator.join(c[i] for c in columns)
    return out


_register("StringJoin", _join_infer, _join_reference)


def string_join(inputs: Sequence[Any], separator: str = "", name: str | None = None) -> Tensor:
    """`tf.string_join` (tf.strings.join): the strings of `inputs` (tensors of one shape, or
    scalars) joined element by element with `separator`."""
    tensors = [convert_to_tensor(x) for x in inputs]
    attrs = {"separator": str(separator), "N": len(tensors)}
    return apply_op("StringJoin", tensors, attrs, name=name or "StringJoin").outputs[0]


# -- StringLength -------------------------------------------------------------------------------
def _utf8_length(value: bytes) -> int:
    return sum(1 for b in value if (b & 0xC0) != 0x80)


def _length_infer(ctx: OpContext) -> list:
    _strings(ctx, 0)
    if ctx.attrs["unit"] not in ("BYTE", "UTF8_CHAR"):
        raise ctx.error(f"unit must be BYTE or UTF8_CHAR, got {ctx.attrs['unit']!r}")
    return [(_dt.int32, ctx.in_shapes[0])]


def _length_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    count = len if ctx.attrs["unit"] == "BYTE" else _utf8_length
    return _map(count, x, _dt.int32)


_register("StringLength", _length_infer, _length_reference)


def string_length(
    input: Any,  # noqa: A002 - TF's argument name
    name: str | None = None,
    unit: str = "BYTE",
) -> Tensor:
    """`tf.strings.length`: each string's length in bytes, or in UTF-8 characters."""
    x = convert_to_tensor(input)
    return apply_op("StringLength", [x], {"unit": unit}, name=name or "StringLength").outputs[0]


# -- StringToNumber -----------------------------------------------------------------------------
_INT = re.compile(rb"\s*[+-]?\d+\s*")
_FLOAT = re.compile(
    rb"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity|nan"
    rb"|0[xX][0-9a-fA-F]+(\.[0-9a-fA-F]*)?([pP][+-]?\d+)?)\s*",
    re.IGNORECASE,
)


def _parse_number(value: bytes, dtype: _dt.DType) -> Any:
    """TF's SafeStringToNumeric: surrounding spaces allowed; ints in range, floats as strtod
    reads them (hex, inf, nan; overflow gives inf); else None."""
    if dtype.is_integer:
        if not _INT.fullmatch(value):
            return None
        number = int(value)
        info = np.iinfo(dtype.np)
        return number if info.min <= number <= info.max else None
    if not _FLOAT.fullmatch(value):
        return None
    text = value.strip().decode("ascii")
    body = text.lstrip("+-")
    if body[:2].lower() == "0x":
        number = float.fromhex(text)
    else:
        number = float(text)
    with np.errstate(over="ignore"):
        return dtype.np.type(number)


def _to_number_infer(ctx: OpContext) -> list:
    _strings(ctx, 0, "string_tensor")
    out = ctx.attrs["out_type"]
    if out not in _NUMBERS:
        names = ", ".join(d.name for d in _NUMBERS)
        raise TypeError(
            f"Value passed to parameter 'out_type' has DataType {out.name} not in list of "
            f"allowed values: {names}"
        )
    return [(out, ctx.in_shapes[0])]


def _to_number_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    out_type = ctx.attrs["out_type"]

    def parse(value: bytes) -> Any:
        number = _parse_number(value, out_type)
        if number is None:
            text = value.decode("utf-8", errors="surrogateescape")
            raise errors.InvalidArgumentError(
                None, None, f"StringToNumberOp could not correctly convert string: {text}"
            )
        return number

    return _map(parse, x, out_type)


_register("StringToNumber", _to_number_infer, _to_number_reference)


def string_to_number(
    string_tensor: Any, out_type: Any = _dt.float32, name: str | None = None
) -> Tensor:
    """`tf.string_to_number` (tf.strings.to_number): each string read as a number of
    `out_type` (float32, float64, int32, int64); one that is not fails the run."""
    x = convert_to_tensor(string_tensor)
    attrs = {"out_type": _dt.as_dtype(out_type)}
    return apply_op("StringToNumber", [x], attrs, name=name or "StringToNumber").outputs[0]


# -- ReduceJoin ---------------------------------------------------------------------------------
def _reduce_axes(ctx: OpContext, rank: int, axes: np.ndarray) -> list[int]:
    """The reduction axes in the order they reduce (TF joins one axis after the other)."""
    flat = [int(a) for a in np.asarray(axes).reshape(-1)]
    out = [normalize_axis(ctx, a, rank, "reduction index") for a in flat]
    if len(set(out)) != len(out):
        duplicate = next(a for a in out if out.count(a) > 1)
        raise ctx.error(f"Duplicate reduction dimension {duplicate}")
    return out


def _reduce_join_infer(ctx: OpContext) -> list:
    _strings(ctx, 0, "inputs")
    shape = ctx.in_shapes[0]
    axes = ctx.const(1)
    if shape is None or axes is None:
        return [(_dt.string, None)]
    reduced = set(_reduce_axes(ctx, len(shape), axes))
    keep = ctx.attrs["keep_dims"]
    out = [1 if i in reduced else d for i, d in enumerate(shape)] if keep else [
        d for i, d in enumerate(shape) if i not in reduced
    ]  # fmt: skip
    return [(_dt.string, tuple(out))]


def _reduce_join_reference(ctx: OpContext, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    separator = ctx.attrs["separator"].encode("utf-8")
    order = _reduce_axes(ctx, x.ndim, axes)
    value = x
    for axis in order:
        moved = np.moveaxis(value, axis, -1)
        joined = np.empty(moved.shape[:-1], dtype=object)
        flat, rows = joined.reshape(-1), moved.reshape(-1, moved.shape[-1])
        for i in range(flat.size):
            flat[i] = separator.join(rows[i])
        value = np.expand_dims(joined, axis)
    if not ctx.attrs["keep_dims"]:
        value = value.reshape(tuple(d for i, d in enumerate(x.shape) if i not in order))
    return value


_register("ReduceJoin", _reduce_join_infer, _reduce_join_reference, const_inputs=(1,))


def reduce_join(
    inputs: Any,
    axis: Any = None,
    keep_dims: Any = None,
    separator: str = "",
    name: str | None = None,
    reduction_indices: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """`tf.reduce_join`: strings joined with `separator` over the axes given, one axis after
    the other (all axes, last first, when none is given)."""
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keep_dims is None else keep_dims)
    with name_scope(name, "ReduceJoin", [inputs]) as scope:
        x = convert_to_tensor(inputs, name="inputs")
        if axis is None:
            rank = x.shape.ndims
            if rank is None:
                raise ValueError("reduce_join over all axes needs the input's rank")
            axis = list(range(rank - 1, -1, -1))
        axes = convert_to_tensor(np.asarray(axis, dtype=np.int32), name="reduction_indices")
        attrs = {"keep_dims": keep, "separator": str(separator)}
        return apply_op("ReduceJoin", [x, axes], attrs, name=scope).outputs[0]


# -- RegexReplace, RegexFullMatch ----------------------------------------------------------------
def _compile(pattern: bytes) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as e:
        text = pattern.decode("utf-8", errors="replace")
        message = f"Invalid pattern: {text}, error: {e}"
        raise errors.InvalidArgumentError(None, None, message) from None


def _rewriter(rewrite: bytes) -> Callable[[re.Match], bytes]:
    """RE2's rewrite string as a function of a match: \\0-\\9 are groups, \\\\ a backslash."""
    pieces: list[Any] = []
    i = 0
    while i < len(rewrite):
        c = rewrite[i : i + 1]
        if c == b"\\" and i + 1 < len(rewrite):
            nxt = rewrite[i + 1 : i + 2]
            if nxt.isdigit():
                pieces.append(int(nxt))
            elif nxt == b"\\":
                pieces.append(b"\\")
            else:
                raise errors.InvalidArgumentError(
                    None, None, f"Invalid rewrite pattern: {rewrite.decode(errors='replace')}"
                )
            i += 2
        else:
            pieces.append(c)
            i += 1
    return lambda m: b"".join(m.group(p) or b"" if isinstance(p, int) else p for p in pieces)


def _regex_infer(ctx: OpContext) -> list:
    for i in range(len(ctx.in_dtypes)):
        _strings(ctx, i)
    for i in range(1, len(ctx.in_dtypes)):
        if ctx.in_shapes[i] is not None and len(ctx.in_shapes[i]) != 0:
            raise ctx.error(f"Shape must be rank 0 but is rank {len(ctx.in_shapes[i])}")
    out = _dt.bool_ if ctx.type == "RegexFullMatch" else _dt.string
    return [(out, ctx.in_shapes[0])]


def _regex_replace_reference(
    ctx: OpContext, x: np.ndarray, pattern: np.ndarray, rewrite: np.ndarray
) -> np.ndarray:
    regex, replace = _compile(pattern.item()), _rewriter(rewrite.item())
    count = 0 if ctx.attrs["replace_global"] else 1
    return _map(lambda v: regex.sub(replace, v, count=count), x, _dt.string)


def _regex_full_match_reference(ctx: OpContext, x: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    regex = _compile(pattern.item())
    return _map(lambda v: regex.fullmatch(v) is not None, x, _dt.bool_)


_register("RegexReplace", _regex_infer, _regex_replace_reference)
_register("RegexFullMatch", _regex_infer, _regex_full_match_reference)


def regex_replace(
    input: Any,  # noqa: A002 - TF's argument name
    pattern: Any,
    rewrite: Any,
    replace_global: bool = True,
    name: str | None = None,
) -> Tensor:
    """`tf.regex_replace`: each match of `pattern` replaced by `rewrite` (\\1 a group), all
    matches or the first only."""
    tensors = [convert_to_tensor(t, dtype=_dt.string) for t in (input, pattern, rewrite)]
    attrs = {"replace_global": bool(replace_global)}
    return apply_op("RegexReplace", tensors, attrs, name=name or "RegexReplace").outputs[0]


def regex_full_match(
    input: Any,  # noqa: A002 - TF's argument name
    pattern: Any,
    name: str | None = None,
) -> Tensor:
    """`tf.strings.regex_full_match`: whether each whole string matches `pattern`."""
    tensors = [convert_to_tensor(t, dtype=_dt.string) for t in (input, pattern)]
    return apply_op("RegexFullMatch", tensors, name=name or "RegexFullMatch").outputs[0]


# -- Substr -------------------------------------------------------------------------------------
def _substr_infer(ctx: OpContext) -> list:
    _strings(ctx, 0)
    check_dtype(ctx, 1, [_dt.int32, _dt.int64], "pos")
    check_dtype(ctx, 2, [_dt.int32, _dt.int64], "len")
    if ctx.attrs["unit"] not in ("BYTE", "UTF8_CHAR"):
        raise ctx.error(f"unit must be BYTE or UTF8_CHAR, got {ctx.attrs['unit']!r}")
    pos_len = broadcast_shape(ctx, ctx.in_shapes[1], ctx.in_shapes[2])
    return [(_dt.string, broadcast_shape(ctx, ctx.in_shapes[0], pos_len))]


def _substr_reference(
    ctx: OpContext, x: np.ndarray, pos: np.ndarray, length: np.ndarray
) -> np.ndarray:
    chars = ctx.attrs["unit"] == "UTF8_CHAR"
    xs, ps, ls = np.broadcast_arrays(x, pos, length)
    out = np.empty(xs.shape, dtype=object)
    flat = out.reshape(-1)
    for i, (s, p, n) in enumerate(zip(xs.reshape(-1), ps.reshape(-1), ls.reshape(-1))):
        text = s.decode("utf-8") if chars else s
        p, n = int(p), int(n)
        if abs(p) > len(text):
            raise errors.InvalidArgumentError(
                None, None, f"pos {p} out of range for string b'{s.decode('latin-1')}' at index {i}"
            )
        p = p + len(text) if p < 0 else p
        piece = text[p:] if n < 0 else text[p : p + n]
        flat[i] = piece.encode("utf-8") if chars else piece
    return out


_register("Substr", _substr_infer, _substr_reference)


def substr(
    input: Any,  # noqa: A002 - TF's argument name
    pos: Any,
    len: Any,  # noqa: A002 - TF's argument name
    name: str | None = None,
    unit: str = "BYTE",
) -> Tensor:
    """`tf.substr` (tf.strings.substr): `len` bytes (or UTF-8 characters) from `pos` (from the
    end when negative) of each string; a `pos` past the end fails the run."""
    x = convert_to_tensor(input)
    p = convert_to_tensor(pos, preferred_dtype=_dt.int32)
    n = convert_to_tensor(len, dtype=p.dtype)
    return apply_op("Substr", [x, p, n], {"unit": unit}, name=name or "Substr").outputs[0]


# -- StringStrip, StringUpper, StringLower ------------------------------------------------------
def _same_strings(ctx: OpContext) -> list:
    _strings(ctx, 0)
    return [(_dt.string, ctx.in_shapes[0])]


_register("StringStrip", _same_strings, lambda ctx, x: _map(lambda v: v.strip(), x, _dt.string))
_register("StringUpper", _same_strings, lambda ctx, x: _map(lambda v: v.upper(), x, _dt.string))
_register("StringLower", _same_strings, lambda ctx, x: _map(lambda v: v.lower(), x, _dt.string))


def string_strip(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.string_strip` (tf.strings.strip): leading and trailing whitespace removed."""
    x = convert_to_tensor(input)
    return apply_op("StringStrip", [x], name=name or "StringStrip").outputs[0]


def _ascii_case(op_type: str) -> Callable[..., Tensor]:
    def case(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
        if encoding not in ("", "utf-8", "UTF-8"):
            raise ValueError(f"encoding must be '' or 'utf-8', got {encoding!r}")
        x = convert_to_tensor(input)
        return apply_op(op_type, [x], {"encoding": encoding}, name=name or op_type).outputs[0]

    return case


upper = _ascii_case("StringUpper")
upper.__doc__ = "`tf.strings.upper`: ASCII letters in upper case."
lower = _ascii_case("StringLower")
lower.__doc__ = "`tf.strings.lower`: ASCII letters in lower case."


# -- hash buckets ---------------------------------------------------------------------------------
def _bucket_infer(ctx: OpContext) -> list:
    _strings(ctx, 0)
    if ctx.attrs["num_buckets"] < 1:
        raise ctx.error(f"num_buckets must be positive, got {ctx.attrs['num_buckets']}")
    if ctx.type == "StringToHashBucketStrong" and len(ctx.attrs["key"]) != 2:
        raise ctx.error(f"key must have 2 elements, got {len(ctx.attrs['key'])}")
    return [(_dt.int64, ctx.in_shapes[0])]


def _bucket_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    n = ctx.attrs["num_buckets"]
    if ctx.type == "StringToHashBucketFast":
        return _map(lambda v: fingerprint64(v) % n, x, _dt.int64)
    if ctx.type == "StringToHashBucket":
        return _map(lambda v: legacy_hash64(v) % n, x, _dt.int64)
    key = tuple(ctx.attrs["key"])
    return _map(lambda v: siphash24(key, v) % n, x, _dt.int64)


for _type in ("StringToHashBucketFast", "StringToHashBucket", "StringToHashBucketStrong"):
    _register(_type, _bucket_infer, _bucket_reference)


def string_to_hash_bucket_fast(
    input: Any,  # noqa: A002 - TF's argument name
    num_buckets: int,
    name: str | None = None,
) -> Tensor:
    """`tf.string_to_hash_bucket_fast`: Fingerprint64 (FarmHash) of each string modulo
    `num_buckets`, as TF computes it."""
    x = convert_to_tensor(input)
    attrs = {"num_buckets": int(num_buckets)}
    op = apply_op("StringToHashBucketFast", [x], attrs, name=name or "StringToHashBucketFast")
    return op.outputs[0]


def string_to_hash_bucket(string_tensor: Any, num_buckets: int, name: str | None = None) -> Tensor:
    """`tf.string_to_hash_bucket`: TF's legacy Hash64 of each string modulo `num_buckets`."""
    x = convert_to_tensor(string_tensor)
    attrs = {"num_buckets": int(num_buckets)}
    return apply_op("StringToHashBucket", [x], attrs, name=name or "StringToHashBucket").outputs[0]


def string_to_hash_bucket_strong(
    input: Any,  # noqa: A002 - TF's argument name
    num_buckets: int,
    key: Sequence[int],
    name: str | None = None,
) -> Tensor:
    """`tf.string_to_hash_bucket_strong`: SipHash-2-4 under `key` (two ints) of each string
    modulo `num_buckets`."""
    x = convert_to_tensor(input)
    attrs = {"num_buckets": int(num_buckets), "key": [int(k) for k in key]}
    name = name or "StringToHashBucketStrong"
    return apply_op("StringToHashBucketStrong", [x], attrs, name=name).outputs[0]


# -- EncodeBase64, DecodeBase64 (web-safe alphabet, as TF's) -------------------------------------
def _encode_base64(value: bytes, pad: bool) -> bytes:
    text = base64.urlsafe_b64encode(value)
    return text if pad else text.rstrip(b"=")


def _decode_base64(value: bytes) -> bytes:
    try:
        return base64.urlsafe_b64decode(value + b"=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        message = "Invalid character found in base64."
        raise errors.InvalidArgumentError(None, None, message) from None


_register(
    "EncodeBase64",
    _same_strings,
    lambda ctx, x: _map(lambda v: _encode_base64(v, ctx.attrs["pad"]), x, _dt.string),
)
_register("DecodeBase64", _same_strings, lambda ctx, x: _map(_decode_base64, x, _dt.string))


def encode_base64(input: Any, pad: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.encode_base64` (tf.io.encode_base64): web-safe base64 ("-" and "_"), "=" padding
    only with `pad`."""
    x = convert_to_tensor(input)
    return apply_op("EncodeBase64", [x], {"pad": bool(pad)}, name=name or "EncodeBase64").outputs[0]


def decode_base64(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.decode_base64`: web-safe base64 decoded, padded or not."""
    x = convert_to_tensor(input)
    return apply_op("DecodeBase64", [x], name=name or "DecodeBase64").outputs[0]


# -- StringFormat (tf.strings.format) -------------------------------------------------------------
def _format_infer(ctx: OpContext) -> list:
    pieces = ctx.attrs["template"].split(ctx.attrs["placeholder"])
    if len(pieces) != len(ctx.in_dtypes) + 1:
        raise ctx.error(
            f"num placeholders in template and num inputs must match: {len(pieces) - 1} vs. "
            f"{len(ctx.in_dtypes)}"
        )
    return [(_dt.string, ())]


def _format_reference(ctx: OpContext, *values: np.ndarray) -> np.ndarray:
    text = format_template(
        ctx.attrs["template"], ctx.attrs["placeholder"], values, ctx.attrs["summarize"]
    )
    return np.array(text.encode("utf-8", errors="surrogateescape"), dtype=object)


_register("StringFormat", _format_infer, _format_reference)


def string_format(
    template: str,
    inputs: Any,
    placeholder: str = "{}",
    summarize: int = 3,
    name: str | None = None,
) -> Tensor:
    """`tf.strings.format`: `template` with each `placeholder` replaced by the next tensor of
    `inputs` as tf.print writes it (the first and last `summarize` entries per dimension)."""
    tensors = [convert_to_tensor(x) for x in (inputs if isinstance(inputs, (list, tuple))
                                               else [inputs])]  # fmt: skip
    attrs = {"template": template, "placeholder": placeholder, "summarize": int(summarize)}
    return apply_op("StringFormat", tensors, attrs, name=name or "StringFormat").outputs[0]


# -- StringSplitV2 (tf.strings.split of a scalar) -------------------------------------------------
def _split_infer(ctx: OpContext) -> list:
    _strings(ctx, 0)
    _strings(ctx, 1, "sep")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(shape)}")
    return [(_dt.int64, (None, 2)), (_dt.string, (None,)), (_dt.int64, (2,))]


def _sparse_rows(rows: list[list]) -> list[np.ndarray]:
    """The SparseTensor arrays (indices, values, dense_shape) of one row of pieces per string:
    entry (row, j) is piece j of that row; the dense shape is [rows, most pieces]."""
    indices = [(row, j) for row, pieces in enumerate(rows) for j in range(len(pieces))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [piece for pieces in rows for piece in pieces]
    longest = max((len(pieces) for pieces in rows), default=0)
    return [
        np.array(indices, dtype=np.int64).reshape(-1, 2),
        values,
        np.array([len(rows), longest], dtype=np.int64),
    ]


def _split_reference(ctx: OpContext, x: np.ndarray, sep: np.ndarray) -> list:
    separator, maxsplit = sep.item(), ctx.attrs["maxsplit"]
    rows = []
    for text in x:
        if separator:
            pieces = text.split(separator, maxsplit) if maxsplit >= 0 else text.split(separator)
        else:  # runs of whitespace, none at the ends
            pieces = text.split(None, maxsplit) if maxsplit >= 0 else text.split()
        rows.append(pieces)
    return _sparse_rows(rows)


_register("StringSplitV2", _split_infer, _split_reference)


def string_split_scalar(
    input: Any = None,  # noqa: A002 - TF's argument name
    sep: Any = None,
    maxsplit: int = -1,
    result_type: str = "SparseTensor",
    source: Any = None,
    name: str | None = None,
) -> Tensor | SparseTensor:
    """`tf.strings.split`: each string split at `sep`, or at runs of whitespace when none is
    given (at most `maxsplit` splits). A vector of strings gives a SparseTensor [rows, most
    pieces] (TF1's result_type="SparseTensor"); one string (a scalar) gives its pieces, a 1-D
    tensor."""
    if input is None:
        input = source  # noqa: A001 - TF's older argument name
    with name_scope(name, "StringSplit", [input]) as scope:
        x = convert_to_tensor(input, dtype=_dt.string)
        if x.shape.ndims != 0 and result_type != "SparseTensor":
            raise NotImplementedError(
                f"tf.strings.split of a rank-{x.shape.ndims} tensor gives a {result_type}, "
                "which tfc does not have: pass result_type='SparseTensor'"
            )
        flat = x
        if x.shape.ndims == 0:
            flat = apply_op("Reshape", [x, convert_to_tensor(np.array([1], np.int32))]).outputs[0]
        separator = convert_to_tensor(b"" if sep is None else sep, dtype=_dt.string)
        op = apply_op("StringSplitV2", [flat, separator], {"maxsplit": int(maxsplit)}, name=scope)
        if x.shape.ndims == 0:
            return op.outputs[1]
        return SparseTensor(*op.outputs)


# -- StringSplit (tf.string_split: TF1's split at any of the delimiter's characters) ------------
def _string_split_infer(ctx: OpContext) -> list:
    _strings(ctx, 0)
    _strings(ctx, 1, "delimiter")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(shape)}")
    return [(_dt.int64, (None, 2)), (_dt.string, (None,)), (_dt.int64, (2,))]


def _as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")


def _string_split_reference(ctx: OpContext, x: np.ndarray, delimiter: np.ndarray) -> list:
    delimiters, skip_empty = delimiter.item(), ctx.attrs["skip_empty"]
    rows = []
    for text in x:
        if delimiters:
            pieces = re.split(b"[" + re.escape(_as_bytes(delimiters)) + b"]", _as_bytes(text))
        else:  # an empty delimiter splits into characters
            pieces = list(_as_bytes(text).decode("utf-8", "surrogateescape"))
            pieces = [p.encode("utf-8", "surrogateescape") for p in pieces]
        if skip_empty:
            pieces = [p for p in pieces if p]
        rows.append(pieces)
    return _sparse_rows(rows)


_register("StringSplit", _string_split_infer, _string_split_reference)


def string_split(
    source: Any,
    sep: Any = None,
    skip_empty: bool = True,
    delimiter: Any = None,
    result_type: str = "SparseTensor",
    name: str | None = None,
) -> SparseTensor:
    """`tf.string_split`: each string of the vector `source` split at every character of
    `delimiter` (default " "; empty: into characters), empty pieces dropped unless
    `skip_empty` is False; a SparseTensor [rows, most pieces] of the pieces."""
    if result_type != "SparseTensor":
        raise NotImplementedError(f"tf.string_split: tfc has no {result_type}")
    delimiter = sep if delimiter is None else delimiter
    with name_scope(name, "StringSplit", [source]) as scope:
        x = convert_to_tensor(source, dtype=_dt.string)
        chars = convert_to_tensor(" " if delimiter is None else delimiter, dtype=_dt.string)
        attrs = {"skip_empty": bool(skip_empty)}
        return SparseTensor(*apply_op("StringSplit", [x, chars], attrs, name=scope).outputs)
