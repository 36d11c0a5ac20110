"""`tf.image`: its dtype conversion, convert_image_dtype, and the codecs (decode_png,
decode_jpeg, decode_image, encode_png: tfc/ops/image_codecs.py)."""

from __future__ import annotations

from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_shape import identity
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conversions import saturate_cast
from tfc.ops.image_codecs import decode_image, decode_jpeg, decode_png, encode_png
from tfc.ops.math import cast, floordiv, multiply

__all__ = [
    "convert_image_dtype",
    "decode_png",
    "decode_jpeg",
    "decode_image",
    "encode_png",
]


def convert_image_dtype(
    image: Any, dtype: Any, saturate: bool = False, name: str | None = None
) -> Tensor:
    """`tf.image.convert_image_dtype`: pixel values rescaled between dtypes, as TF does: floats
    lie in [0, 1], integers in [0, MAX]; integer to integer scales by the ratio of (MAX + 1)s,
    float to integer multiplies by MAX + 0.5 and casts (clamped first when `saturate`)."""
    image = convert_to_tensor(image, name="image")
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if not (image.dtype.is_floating or image.dtype.is_integer):
        raise AttributeError("image dtype must be either floating point or integer")
    if dtype is image.dtype:
        return identity(image, name=name)
    narrow = saturate_cast if saturate else cast
    with name_scope(name, "convert_image") as scope:
        if image.dtype.is_integer and dtype.is_integer:
            scale_in, scale_out = int(image.dtype.max), int(dtype.max)
            if scale_in > scale_out:  # scale first: in.max lands below out.max + 1
                scaled = floordiv(image, (scale_in + 1) // (scale_out + 1))
                return narrow(scaled, dtype, name=scope)
            # cast first; in.max does not reach out.max, but the round trip is exact
            return multiply(narrow(image, dtype), (scale_out + 1) // (scale_in + 1), name=scope)
        if image.dtype.is_floating and dtype.is_floating:
            return cast(image, dtype, name=scope)
        if image.dtype.is_integer:
            return multiply(cast(image, dtype), 1.0 / float(image.dtype.max), name=scope)
        scaled = multiply(image, float(dtype.max) + 0.5)  # + 0.5: no rounding down at MAX
        return narrow(scaled, dtype, name=scope)
