"""tf.bitwise: BitwiseAnd, BitwiseOr, BitwiseXor, Invert, LeftShift, RightShift.

Element-wise ops on integers of every width (TF's CPU kernels'); the shifts clamp the amount to
[0, bits - 1] as TF's kernels do, and a right shift of a negative signed value is arithmetic.
"""

from __future__ import annotations

import numpy as np

from tfc.ops.elementwise import binary_frontend, register_elementwise, unary_frontend

__all__ = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "invert",
    "left_shift",
    "right_shift",
]


def _clamped(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The shift amounts TF's kernels use: y clamped to [0, bits - 1]."""
    return np.clip(y, 0, x.dtype.itemsize * 8 - 1).astype(x.dtype)


def _left_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    unsigned = x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "i" else x
    shifted = np.left_shift(unsigned, _clamped(y, x).astype(unsigned.dtype))
    return shifted.view(x.dtype)


for _type, _fn, _c in [
    ("BitwiseAnd", np.bitwise_and, "({T})({0} & {1})"),
    ("BitwiseOr", np.bitwise_or, "({T})({0} | {1})"),
    ("BitwiseXor", np.bitwise_xor, "({T})({0} ^ {1})"),
    ("LeftShift", _left_shift, "tfc_shl_{tag}({0}, {1})"),
    ("RightShift", lambda x, y: np.right_shift(x, _clamped(y, x)), "tfc_shr_{tag}({0}, {1})"),
]:
    register_elementwise(_type, _fn, {"i": _c}, differentiable=False)
register_elementwise("Invert", np.invert, {"i": "({T})~{0}"}, differentiable=False)

bitwise_and = binary_frontend("BitwiseAnd", "BitwiseAnd")
bitwise_or = binary_frontend("BitwiseOr", "BitwiseOr")
bitwise_xor = binary_frontend("BitwiseXor", "BitwiseXor")
left_shift = binary_frontend("LeftShift", "LeftShift")
right_shift = binary_frontend("RightShift", "RightShift")
invert = unary_frontend("Invert")
# the frontends' names and help as tf.bitwise spells them (the generic ones name the op type)
for _f, _name, _doc in [
    (bitwise_and, "bitwise_and", "the bits set in both x and y."),
    (bitwise_or, "bitwise_or", "the bits set in x or y."),
    (bitwise_xor, "bitwise_xor", "the bits set in exactly one of x and y."),
    (left_shift, "left_shift", "x shifted left by y (clamped to [0, bits - 1]), wrapping."),
    (right_shift, "right_shift", "x shifted right by y (clamped), arithmetically."),
    (invert, "invert", "every bit of x flipped."),
]:
    _f.__name__ = _f.__qualname__ = _name
    _f.__doc__ = f"`tf.bitwise.{_name}`: {_doc}"
