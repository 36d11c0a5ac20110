"""Element types: their NumPy, C and TensorFlow names, and TF1's inference from Python values."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


class DType:
    """One element type. Instances are singletons: compare with `is` or `==`."""

    def __init__(self, name: str, tf_name: str, np_type: type, c_type: str, kind: str) -> None:
        self.name = name
        self.tf_name = tf_name  # how TensorFlow's error messages spell it ("float", "double")
        self.np = np.dtype(np_type)
        self.c_type = c_type
        self.kind = kind  # "f" floating, "i" signed integer, "b" bool, "s" string
        self.size = self.np.itemsize

    @property
    def as_numpy_dtype(self) -> type:
        return self.np.type

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_string(self) -> bool:
        return self.kind == "s"

    @property
    def min(self) -> Any:
        return np.finfo(self.np).min if self.is_floating else np.iinfo(self.np).min

    @property
    def max(self) -> Any:
        return np.finfo(self.np).max if self.is_floating else np.iinfo(self.np).max

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self) -> str:
        return self.name


float32 = DType("float32", "float", np.float32, "float", "f")
float64 = DType("float64", "double", np.float64, "double", "f")
int32 = DType("int32", "int32", np.int32, "int32_t", "i")
int64 = DType("int64", "int64", np.int64, "int64_t", "i")
bool_ = DType("bool", "bool", np.bool_, "bool", "b")
float = float32  # noqa: A001  TF1 spells float32 both ways
double = float64

# tf.string: byte strings of any length, held as NumPy object arrays of `bytes`. Native code has
# no strings (generated code knows every buffer's size when it is compiled): the ops that read
# or make strings run in Python, in a Session's Python stages (docs/host-ops.md).
string = DType("string", "string", np.object_, "const char *", "s")

ALL = (float32, float64, int32, int64, bool_, string)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL} | {d.tf_name: d for d in ALL}


def as_dtype(value: Any) -> DType:
    """`tf.as_dtype`: accepts a DType, a NumPy dtype or type, or a name such as "float32"."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    if value is int:
        return int32
    if value is builtins.float:
        return float32
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
    supported = ", ".join(d.name for d in ALL)
    raise TypeError(f"Cannot convert {value!r} to a tfc dtype; supported dtypes: {supported}")


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def infer_dtype(value: Any) -> DType:
    """The dtype TF1's `convert_to_tensor` gives a Python or NumPy value with no dtype asked for.

    Python ints become int32 (int64 when they do not fit), floats float32, bools bool; NumPy
    arrays and scalars keep their own dtype. Nested lists take the widest kind they contain.
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
    if isinstance(value, (list, tuple)):
        if not value:
            return float32
        kinds = [infer_dtype(v) for v in value]
        if string in kinds:
            return string
        for candidate in (float64, float32, int64, int32, bool_):
            if candidate in kinds:
                if candidate in (int32, int64) and any(k.is_floating for k in kinds):
                    continue
                return candidate
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
