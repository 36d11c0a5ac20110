"""NumPy arrays to and from TensorFlow's TensorProto; dtypes to and from its DataType enum.

`make_tensor_proto` writes what TensorFlow's does: the bytes of a numeric array of more than one
element in `tensor_content`, anything else in the typed value field (`float_val`, `int_val`,
...; strings in `string_val`). `make_ndarray` reads either, and TensorFlow's short form: fewer
values than the shape holds means the last value repeats (a constant filled with one number).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.io.graph_pb import DataType, TensorProto, TensorShapeProto
from tfc.ir import dtypes as _dt

__all__ = [
    "dtype_to_enum",
    "enum_to_dtype",
    "enum_to_numpy",
    "shape_to_proto",
    "shape_from_proto",
    "make_tensor_proto",
    "make_ndarray",
]

# DataType number -> (NumPy dtype, the typed value field, TensorFlow's name of the dtype)
_ENUMS: dict[int, tuple[Any, str, str]] = {
    1: (np.float32, "float_val", "float32"),
    2: (np.float64, "double_val", "float64"),
    3: (np.int32, "int_val", "int32"),
    4: (np.uint8, "int_val", "uint8"),
    5: (np.int16, "int_val", "int16"),
    6: (np.int8, "int_val", "int8"),
    7: (np.object_, "string_val", "string"),
    8: (np.complex64, "scomplex_val", "complex64"),
    9: (np.int64, "int64_val", "int64"),
    10: (np.bool_, "bool_val", "bool"),
    # ml_dtypes' bfloat16 where installed, else its 16 bits in a uint16, as tfc holds them
    14: (_dt.BFLOAT16_NUMPY, "half_val", "bfloat16"),
    17: (np.uint16, "int_val", "uint16"),
    18: (np.complex128, "dcomplex_val", "complex128"),
    19: (np.float16, "half_val", "float16"),
    22: (np.uint32, "uint32_val", "uint32"),
    23: (np.uint64, "uint64_val", "uint64"),
}
_BY_NAME = {name: number for number, (_, _, name) in _ENUMS.items()}
_REF_OFFSET = 100  # DT_FLOAT_REF = 101: the dtype of a reference to a variable


def dtype_to_enum(dtype: Any) -> int:
    """The DataType number of a tfc dtype (or anything tf.as_dtype takes)."""
    dt = _dt.as_dtype(dtype)
    try:
        return _BY_NAME[dt.name]
    except KeyError:
        raise TypeError(f"dtype {dt.name} has no TensorFlow DataType") from None


def _enum_name(number: int) -> str:
    try:
        return DataType.Name(number)
    except ValueError:
        return f"DataType {number}"


def enum_to_numpy(number: int) -> np.dtype:
    """The NumPy dtype of a DataType number (references count as their value's type)."""
    entry = _ENUMS.get(number - _REF_OFFSET if number > _REF_OFFSET else number)
    if entry is None:
        raise TypeError(f"{_enum_name(number)} has no NumPy equivalent in tfc")
    return np.dtype(entry[0])


def enum_to_dtype(number: int) -> _dt.DType:
    """The tfc dtype of a DataType number; a TypeError naming it where tfc has none."""
    entry = _ENUMS.get(number - _REF_OFFSET if number > _REF_OFFSET else number)
    if entry is not None:
        try:
            return _dt.as_dtype(entry[2])
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{_enum_name(number)} is not a dtype tfc has")


def shape_to_proto(shape: Any) -> TensorShapeProto:
    """A tfc shape (a tuple of ints or None per dimension; None for an unknown rank)."""
    proto = TensorShapeProto()
    if shape is None:
        proto.unknown_rank = True
        return proto
    for d in shape:
        proto.dim.add(size=-1 if d is None else int(d))
    return proto


def shape_from_proto(proto: TensorShapeProto) -> tuple[int | None, ...] | None:
    if proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in proto.dim)


def make_tensor_proto(values: Any, dtype: Any = None, shape: Any = None) -> TensorProto:
    """`tf.make_tensor_proto`: the TensorProto of `values` (an array, a number, a nested list or
    strings), as dtype and shape when given (a single value fills the shape)."""
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
        array = np.asarray(values, dtype=object if dt.name == "string" else dt.np)
    else:
        array = np.asarray(values)
        if array.dtype.kind in "US":
            array = array.astype(object)
    if array.dtype == object:
        array = np.vectorize(lambda v: v.encode("utf-8") if isinstance(v, str) else v,
                             otypes=[object])(array) if array.size else array  # fmt: skip
        number = 7
    else:
        matches = [n for n, (np_type, _, _) in _ENUMS.items() if np.dtype(np_type) == array.dtype]
        if not matches:
            raise TypeError(f"arrays of {array.dtype} have no TensorFlow DataType")
        number = matches[0]
    target_shape = array.shape if shape is None else tuple(int(d) for d in shape)
    size = int(np.prod(target_shape, dtype=np.int64))
    if array.size not in (size, 1) or (array.size == 1 and size == 0 and array.shape != ()):
        raise ValueError(
            f"Too many elements provided. Needed at most {size}, but received {array.size}"
            if array.size > size
            else f"Expected {size} values for shape {list(target_shape)}, got {array.size}"
        )
    proto = TensorProto(dtype=number)
    proto.tensor_shape.CopyFrom(shape_to_proto(target_shape))
    _, field, _ = _ENUMS[number]
    if number != 7 and array.size == size and size > 1:
        proto.tensor_content = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"),
                                                                  copy=False).tobytes()  # fmt: skip
        return proto
    flat = array.reshape(-1)
    if number == 7:
        proto.string_val.extend(bytes(v) for v in flat)
    elif field == "half_val":
        proto.half_val.extend(int(v) for v in flat.view(np.uint16))
    elif field in ("scomplex_val", "dcomplex_val"):
        getattr(proto, field).extend(float(p) for v in flat for p in (v.real, v.imag))
    elif field in ("float_val", "double_val"):
        getattr(proto, field).extend(float(v) for v in flat)
    elif field == "bool_val":
        proto.bool_val.extend(bool(v) for v in flat)
    else:
        getattr(proto, field).extend(int(v) for v in flat)
    return proto


def make_ndarray(proto: TensorProto) -> np.ndarray:
    """`tf.make_ndarray`: the NumPy array a TensorProto holds."""
    np_dtype = enum_to_numpy(proto.dtype)
    shape = shape_from_proto(proto.tensor_shape)
    if shape is None or any(d is None for d in shape):
        raise ValueError("a TensorProto of a tensor value needs a fully defined shape")
    size = int(np.prod(shape, dtype=np.int64))
    if proto.tensor_content:
        if np_dtype.kind == "O":
            raise ValueError("string tensors are stored in string_val, not tensor_content")
        data = np.frombuffer(proto.tensor_content, dtype=np_dtype.newbyteorder("<"))
        if data.size != size:
            raise ValueError(
                f"tensor_content holds {data.size} values of {np_dtype}; shape {list(shape)} "
                f"needs {size}"
            )
        return data.astype(np_dtype).reshape(shape)
    _, field, _ = _ENUMS[proto.dtype - _REF_OFFSET if proto.dtype > _REF_OFFSET else proto.dtype]
    values: Any = list(getattr(proto, field))
    if field == "half_val":  # the 16 bits of each value, float16's or bfloat16's
        bits = np.asarray(values, dtype=np.uint16)
        values = bits.view(np.float16 if np_dtype == np.float16 else np_dtype)
    elif field in ("scomplex_val", "dcomplex_val"):
        pairs = np.asarray(values, dtype=np.float64).reshape(-1, 2)
        values = pairs[:, 0] + 1j * pairs[:, 1]
    flat = np.asarray(values, dtype=np_dtype) if np_dtype.kind != "O" else _objects(values)
    if flat.size == size:
        return flat.reshape(shape)
    if flat.size == 0:
        return np.zeros(shape, dtype=np_dtype) if np_dtype.kind != "O" else _filled(shape, b"")
    if flat.size > size:
        raise ValueError(
            f"the TensorProto holds {flat.size} values; shape {list(shape)} has {size}"
        )
    out = np.empty(size, dtype=np_dtype)
    out[: flat.size] = flat
    out[flat.size :] = flat[-1]  # TensorFlow's short form: the last value repeats
    return out.reshape(shape)


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _filled(shape: tuple, value: Any) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    out.fill(value)
    return out
