"""ONNX element types as tfc dtypes: the types tfc has, and the wider tfc dtype that holds each
narrower ONNX type (its values are converted where they enter and leave the model)."""

from __future__ import annotations

import numpy as np

from tfc.ir import dtypes as _dt

# TensorProto.DataType numbers (stable across ONNX releases), named as ONNX names them
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 10, 11, 12, 13, 14, 15, 16
UINT4, INT4, UINT2, INT2 = 21, 22, 25, 26

NAMES = {
    0: "UNDEFINED",
    1: "FLOAT",
    2: "UINT8",
    3: "INT8",
    4: "UINT16",
    5: "INT16",
    6: "INT32",
    7: "INT64",
    8: "STRING",
    9: "BOOL",
    10: "FLOAT16",
    11: "DOUBLE",
    12: "UINT32",
    13: "UINT64",
    14: "COMPLEX64",
    15: "COMPLEX128",
    16: "BFLOAT16",
    17: "FLOAT8E4M3FN",
    18: "FLOAT8E4M3FNUZ",
    19: "FLOAT8E5M2",
    20: "FLOAT8E5M2FNUZ",
    21: "UINT4",
    22: "INT4",
    23: "FLOAT4E2M1",
    24: "FLOAT8E8M0",
    25: "UINT2",
    26: "INT2",
}

# the tfc dtype that computes each ONNX type tfc supports; narrow integers and half floats are
# held in a wider type (exact for every value they can hold: int32 holds int2..uint16, int64
# holds uint32 and the uint64 values below 2**63, float32 holds float16 and bfloat16)
COMPUTE: dict[int, _dt.DType] = {
    FLOAT: _dt.float32,
    DOUBLE: _dt.float64,
    INT32: _dt.int32,
    INT64: _dt.int64,
    BOOL: _dt.bool_,
    FLOAT16: _dt.float32,
    BFLOAT16: _dt.float32,
    UINT8: _dt.int32,
    INT8: _dt.int32,
    UINT16: _dt.int32,
    INT16: _dt.int32,
    UINT32: _dt.int64,
    UINT64: _dt.int64,
    UINT4: _dt.int32,
    INT4: _dt.int32,
    UINT2: _dt.int32,
    INT2: _dt.int32,
}

# the integer types held in a wider one: (min, max) of the values they hold
INTEGER_RANGES: dict[int, tuple[int, int]] = {
    UINT8: (0, 2**8 - 1),
    INT8: (-(2**7), 2**7 - 1),
    UINT16: (0, 2**16 - 1),
    INT16: (-(2**15), 2**15 - 1),
    UINT32: (0, 2**32 - 1),
    UINT64: (0, 2**64 - 1),
    UINT4: (0, 2**4 - 1),
    INT4: (-(2**3), 2**3 - 1),
    UINT2: (0, 2**2 - 1),
    INT2: (-2, 1),
}
UNSIGNED = (UINT8, UINT16, UINT32, UINT64, UINT4, UINT2)
HALF_FLOATS = (FLOAT16, BFLOAT16)

_FROM_TFC = {
    _dt.float32: FLOAT,
    _dt.float64: DOUBLE,
    _dt.int32: INT32,
    _dt.int64: INT64,
    _dt.bool_: BOOL,
}


def name(elem_type: int) -> str:
    """ONNX's name of element type `elem_type` ("FLOAT16")."""
    return NAMES.get(elem_type, f"type {elem_type}")


def supported(elem_type: int) -> bool:
    return elem_type in COMPUTE


def compute_dtype(elem_type: int, what: str) -> _dt.DType:
    """The tfc dtype that holds values of ONNX type `elem_type`; `what` names the value in the
    error for a type tfc cannot compute."""
    dtype = COMPUTE.get(elem_type)
    if dtype is None:
        known = ", ".join(name(t) for t in COMPUTE)
        raise TypeError(
            f"{what} has element type {name(elem_type)}, which tfc does not compute "
            f"(supported: {known})"
        )
    return dtype


def onnx_type(dtype: _dt.DType) -> int:
    """The ONNX element type of tfc dtype `dtype`."""
    return _FROM_TFC[dtype]


def numpy_dtype(elem_type: int) -> np.dtype:
    """The NumPy dtype ONNX's own tools give values of `elem_type` (bfloat16 from ml_dtypes)."""
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
