"""Bitwise ops on integers (`tf.bitwise`): and, or, xor, invert and shifts, element-wise with
NumPy broadcasting. Shift amounts are clamped to [0, bits - 1], as TensorFlow's kernels do; the
left shift works on the unsigned bits (it wraps), the right shift is arithmetic."""

from __future__ import annotations

import numpy as np

from tfc.ops.elementwise import binary_frontend, register_elementwise, unary_frontend

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]


def _amount(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    bits = np.iinfo(x.dtype).bits
    return np.clip(y, 0, bits - 1).astype(x.dtype)


def _left_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    x, y = np.broadcast_arrays(x, y)
    shifted = np.left_shift(x.astype(unsigned), _amount(x, y).astype(unsigned))
    return shifted.astype(unsigned).view(x.dtype)


def _right_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.right_shift(x, _amount(*np.broadcast_arrays(x, y)))


for _type, _fn, _expr in [
    ("BitwiseAnd", np.bitwise_and, "({0} & {1})"),
    ("BitwiseOr", np.bitwise_or, "({0} | {1})"),
    ("BitwiseXor", np.bitwise_xor, "({0} ^ {1})"),
    ("LeftShift", _left_shift, "tfc_shl_{tag}({0}, {1})"),
    ("RightShift", _right_shift, "tfc_shr_{tag}({0}, {1})"),
]:
    register_elementwise(_type, _fn, {"i": _expr}, differentiable=False)
register_elementwise("Invert", np.invert, {"i": "(~{0})"}, differentiable=False)

bitwise_and = binary_frontend("BitwiseAnd", "BitwiseAnd")
bitwise_or = binary_frontend("BitwiseOr", "BitwiseOr")
bitwise_xor = binary_frontend("BitwiseXor", "BitwiseXor")
left_shift = binary_frontend("LeftShift", "LeftShift")
right_shift = binary_frontend("RightShift", "RightShift")
invert = unary_frontend("Invert")
for _f, _doc in [
    (bitwise_and, "`tf.bitwise.bitwise_and`: the bits set in both x and y."),
    (bitwise_or, "`tf.bitwise.bitwise_or`: the bits set in x or y."),
    (bitwise_xor, "`tf.bitwise.bitwise_xor`: the bits set in exactly one of x and y."),
    (left_shift, "`tf.bitwise.left_shift`: x shifted left by y (clamped to [0, bits - 1])."),
    (right_shift, "`tf.bitwise.right_shift`: x shifted right by y, arithmetically (clamped)."),
    (invert, "`tf.bitwise.invert`: every bit of x flipped."),
]:
    _f.__doc__ = _doc
for _f, _name in [
    (bitwise_and, "bitwise_and"),
    (bitwise_or, "bitwise_or"),
    (bitwise_xor, "bitwise_xor"),
    (left_shift, "left_shift"),
    (right_shift, "right_shift"),
    (invert, "invert"),
]:
    _f.__name__ = _f.__qualname__ = _name
