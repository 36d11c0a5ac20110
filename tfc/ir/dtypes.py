"""Element types: their NumPy, C and TensorFlow names, and TF1's inference from Python values."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

try:  # NumPy has no bfloat16; ml_dtypes (what TensorFlow uses) gives one where it is installed
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None

# kinds: "f" float32/float64; "h" the 16-bit floats, stored in 16 bits and computed in float32
# (as TensorFlow does on CPUs); "i" signed and "u" unsigned integers; "b" bool; "s" string;
# "c" complex; "q" TF's quantized integers and "x" handles (resource, variant), which tfc names
# but no op accepts
_KIND_NAMES = {"q": "quantized", "x": "handle"}


class DType:
    """One element type. Instances are singletons: compare with `is` or `==`."""

    def __init__(
        self,
        name: str,
        tf_name: str,
        np_type: Any,
        c_type: str,
        kind: str,
        enum: int,
        real: DType | None = None,
    ) -> None:
        self.name = name
        self.tf_name = tf_name  # how TensorFlow's error messages spell it ("float", "double")
        self.np = np.dtype(np_type)
        self.c_type = c_type
        self.kind = kind
        self.as_datatype_enum = enum  # TensorFlow's DataType enum (types.proto)
        self._real = real
        self.size = 0 if kind == "x" else self.np.itemsize

    @property
    def as_numpy_dtype(self) -> type:
        return self.np.type if self.np.fields is None else self.np

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        """The dtype of a complex type's parts (float32 for complex64); any other dtype itself."""
        return self._real or self

    @property
    def compute(self) -> DType:
        """The dtype kernels compute in: float32 for the 16-bit floats, else the dtype itself."""
        return float32 if self.kind == "h" else self

    @property
    def is_floating(self) -> bool:
        return self.kind in "fh"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_string(self) -> bool:
        return self.kind == "s"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_quantized(self) -> bool:
        return self.kind == "q"

    @property
    def is_numpy_compatible(self) -> bool:
        return self.kind != "x"

    @property
    def min(self) -> Any:
        """The lowest finite value (TF's `DType.min`); TypeError for types without an order."""
        return self._limit("minimum", 0)

    @property
    def max(self) -> Any:
        """The highest finite value (TF's `DType.max`)."""
        return self._limit("maximum", 1)

    def _limit(self, what: str, end: int) -> Any:
        if self.kind in "iu":
            info = np.iinfo(self.np)
            return (info.min, info.max)[end]
        if self.kind == "f" or self is float16:
            info = np.finfo(self.np)
            return (info.min, info.max)[end]
        if self is bfloat16:
            top = builtins.float.fromhex("0x1.fep127")  # the largest finite bfloat16, 0x7f7f
            value = -top if end == 0 else top
            # without ml_dtypes, as a float32 (exact): NumPy has no bfloat16 scalar
            return np.float32(value) if _ml_dtypes is None else self.np.type(value)
        quantized = " with quantized type" if self.kind == "q" else ""
        raise TypeError(f"Cannot find {what} value of {self!r}{quantized}.")

    def is_compatible_with(self, other: Any) -> bool:
        return as_dtype(other) is self

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self) -> str:
        return self.name


float32 = DType("float32", "float", np.float32, "float", "f", 1)
float64 = DType("float64", "double", np.float64, "double", "f", 2)
int32 = DType("int32", "int32", np.int32, "int32_t", "i", 3)
int64 = DType("int64", "int64", np.int64, "int64_t", "i", 9)
bool_ = DType("bool", "bool", np.bool_, "bool", "b", 10)
float = float32  # noqa: A001  TF1 spells float32 both ways
double = float64

# tf.string: byte strings of any length, held as NumPy object arrays of `bytes`. Native code has
# no strings (generated code knows every buffer's size when it is compiled): the ops that read
# or make strings run in Python, in a Session's Python stages (docs/host-ops.md).
string = DType("string", "string", np.object_, "const char *", "s", 7)

# The small and unsigned integers: C's fixed-width types; arithmetic wraps, as in TensorFlow.
int8 = DType("int8", "int8", np.int8, "int8_t", "i", 6)
int16 = DType("int16", "int16", np.int16, "int16_t", "i", 5)
uint8 = DType("uint8", "uint8", np.uint8, "uint8_t", "u", 4)
uint16 = DType("uint16", "uint16", np.uint16, "uint16_t", "u", 17)
uint32 = DType("uint32", "uint32", np.uint32, "uint32_t", "u", 22)
uint64 = DType("uint64", "uint64", np.uint64, "uint64_t", "u", 23)

# The 16-bit floats (docs/dtypes.md): C holds their bits in a struct (runtime tfc_dtypes.h), so
# no kernel can do arithmetic on them by accident; kernels load them into float32, compute and
# round the result back to 16 bits (nearest, ties to even), as TensorFlow's CPU kernels do.
# NumPy holds float16 natively; bfloat16 as ml_dtypes.bfloat16 where that package is installed
# (TensorFlow's own choice), else as its bit patterns in uint16 (`bfloat16.as_numpy_dtype`
# says which; `as_numpy` and `to_float32` convert).
float16 = DType("float16", "half", np.float16, "tfc_f16", "h", 19)
half = float16
BFLOAT16_NUMPY = np.dtype(_ml_dtypes.bfloat16) if _ml_dtypes is not None else np.dtype(np.uint16)
bfloat16 = DType("bfloat16", "bfloat16", BFLOAT16_NUMPY, "tfc_bf16", "h", 14)

# Complex numbers: a struct of two floats in C (tfc_dtypes.h). Values are held and converted
# (Cast, tf.complex, tf.real, tf.imag), moved and compared for equality; ops that compute with
# them refuse complex inputs by name (docs/dtypes.md).
complex64 = DType("complex64", "complex64", np.complex64, "tfc_c64", "c", 8, real=float32)
complex128 = DType("complex128", "complex128", np.complex128, "tfc_c128", "c", 18, real=float64)

# TF's quantized integers and handles exist as names (programs mention them, e.g. in dtype
# checks); no tfc op accepts them: they have no C type.
qint8 = DType("qint8", "qint8", [("qint8", "i1")], "", "q", 11)
quint8 = DType("quint8", "quint8", [("quint8", "u1")], "", "q", 12)
qint16 = DType("qint16", "qint16", [("qint16", "<i2")], "", "q", 15)
quint16 = DType("quint16", "quint16", [("quint16", "<u2")], "", "q", 16)
qint32 = DType("qint32", "qint32", [("qint32", "<i4")], "", "q", 13)
resource = DType("resource", "resource", np.object_, "", "x", 20)
variant = DType("variant", "variant", np.object_, "", "x", 21)

QUANTIZED_DTYPES = frozenset({qint8, quint8, qint16, quint16, qint32})
ALL = (
    float32, float64, int32, int64, bool_, string, int8, int16, uint8, uint16, uint32, uint64,
    float16, bfloat16, complex64, complex128, qint8, quint8, qint16, quint16, qint32, resource,
    variant,
)  # fmt: skip
# the dtypes TF1 programs used before tfc had the others, which every op accepts (ops opt in
# to the others: OpDef.dtypes)
CORE = (float32, float64, int32, int64, bool_, string)
INTEGERS = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
FLOATS = (float16, bfloat16, float32, float64)
COMPLEX = (complex64, complex128)
# what a kernel can hold and move: every dtype with a C type
STORABLE = (*FLOATS, *INTEGERS, bool_, *COMPLEX)
NUMERIC = (*FLOATS, *INTEGERS)

_BY_NP = {d.np: d for d in ALL if d.kind in "fiubc"} | {float16.np: float16}
_BY_NP[np.dtype(np.object_)] = string
if _ml_dtypes is not None:  # else bfloat16's NumPy dtype is uint16's, which means uint16
    _BY_NP[bfloat16.np] = bfloat16
_BY_NAME = {d.name: d for d in ALL} | {d.tf_name: d for d in ALL}
_BY_ENUM = {d.as_datatype_enum: d for d in ALL}


def as_dtype(value: Any) -> DType:
    """`tf.as_dtype`: a DType, a NumPy dtype or type, a name such as "float32" or "half", a
    Python type, or TensorFlow's DataType enum number."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in _BY_ENUM:
        return _BY_ENUM[value]
    if value is bool:
        return bool_
    if value is int:
        return int32
    if value is builtins.float:
        return float32
    if value is builtins.complex:
        return complex128
    if value in (str, bytes):
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NP:
        return _BY_NP[npd]
    if npd is not None and npd.kind in "SU":  # NumPy's fixed-width strings
        return string
    raise TypeError(f"Cannot convert the argument `type_value`: {value!r} to a tfc DType.")


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def infer_dtype(value: Any) -> DType:
    """The dtype TF1's `convert_to_tensor` gives a Python or NumPy value with no dtype asked for.

    Python ints become int32 (int64 when they do not fit), floats float32, complex numbers
    complex128, bools bool; NumPy arrays and scalars keep their own dtype. Nested lists take
    the widest kind they contain.
    """
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype == np.object_:
            return infer_dtype(value.ravel().tolist()) if value.size else string
        return as_dtype(value.dtype)
    if isinstance(value, (str, bytes)):
        return string
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int32 if _INT32_MIN <= value <= _INT32_MAX else int64
    if isinstance(value, builtins.float):
        return float32
    if isinstance(value, builtins.complex):
        return complex128
    if isinstance(value, (list, tuple)):
        if not value:
            return float32
        kinds = [infer_dtype(v) for v in value]
        if string in kinds:
            return string
        for candidate in (complex128, complex64, float64, float32, int64, int32, bool_):
            if candidate in kinds:
                if candidate in (int32, int64) and any(k.is_floating for k in kinds):
                    continue
                return candidate
        return kinds[0]
    raise TypeError(f"Cannot infer a tensor dtype from {value!r} of type {type(value).__name__}")


def string_array(value: Any) -> np.ndarray:
    """`value` as a tf.string tensor holds it: a NumPy object array of `bytes` (str encoded as
    UTF-8, as TF1 does). Anything else in it raises TF's TypeError."""
    array = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if array.dtype.kind in "SU":
        array = array.astype(object)
    elif array.dtype != np.object_:
        raise TypeError(
            f"Expected string, got {array.ravel()[0]!r} of type '{array.dtype.name}' instead."
        )
    out = np.empty(array.shape, dtype=object)
    flat, source = out.reshape(-1), array.reshape(-1)
    for i, item in enumerate(source):
        if isinstance(item, bytes):
            flat[i] = bytes(item)
        elif isinstance(item, str):
            flat[i] = item.encode("utf-8")
        else:
            raise TypeError(
                f"Expected string, got {item!r} of type '{type(item).__name__}' instead."
            )
    return out


# -- NumPy values of the 16-bit floats --------------------------------------------------------
def bfloat16_bits(values: Any) -> np.ndarray:
    """The bfloat16 bit patterns (uint16) nearest to float32 `values`, ties to even; NaN stays
    a quiet NaN of its sign, as TensorFlow (Eigen) rounds. The one implementation of the
    rounding in Python (tfc compile --weights-dtype bfloat16 stores weights with it)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    return np.where(nan, ((bits >> 16) & 0x8000).astype(np.uint16) | 0x7FC0, rounded).astype(
        np.uint16
    )


def bfloat16_from_bits(bits: Any) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_numpy(value: Any, dtype: DType) -> np.ndarray:
    """`value` (a Python value or an array) as an array of `dtype`'s NumPy type.

    Numbers convert as NumPy converts them, except into the 16-bit floats: those go through
    float32 first (a float64 rounds twice, as TensorFlow's Cast does), then round to nearest,
    ties to even. An array already of the dtype's NumPy type is kept as it is (for bfloat16
    without ml_dtypes, a uint16 array is taken as bit patterns)."""
    if dtype is string:
        return string_array(value)
    if dtype.kind != "h":
        return np.asarray(value, dtype=dtype.np)
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype == dtype.np:
        return np.asarray(value)
    wide = np.asarray(value)
    if wide.dtype.kind == "c":
        raise TypeError(f"Cannot convert complex values to {dtype.name}")
    with np.errstate(all="ignore"):  # beyond a 16-bit float's range: infinity
        values = wide.astype(np.float32)
        if dtype is bfloat16 and _ml_dtypes is None:
            return bfloat16_bits(values).reshape(values.shape)
        return values.astype(dtype.np)


def to_float32(array: Any, dtype: DType) -> np.ndarray:
    """The float32 values of an array held as 16-bit float `dtype` (what kernels compute on);
    an array that is not of the dtype's NumPy type is taken to hold values already."""
    array = np.asarray(array)
    if array.dtype != dtype.np:
        return array.astype(np.float32)
    if dtype is bfloat16 and _ml_dtypes is None:
        return bfloat16_from_bits(array).reshape(array.shape)
    return array.astype(np.float32)
