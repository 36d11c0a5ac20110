"""`tf.image`: dtype conversion (convert_image_dtype), resizing (resize_images, resize_bilinear,
resize_nearest_neighbor) and the codecs (decode_png, decode_jpeg, decode_image, encode_png:
tfc/ops/image_codecs.py)."""

from __future__ import annotations

from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_index import gather
from tfc.ops.array_shape import expand_dims, identity, reshape, shape, squeeze
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conversions import saturate_cast
from tfc.ops.image_codecs import decode_image, decode_jpeg, decode_png, encode_png
from tfc.ops.logic import where_v2
from tfc.ops.math import cast, ceil, floor, floordiv, maximum, minimum, multiply
from tfc.ops.sequences import range as _range

__all__ = [
    "convert_image_dtype",
    "decode_png",
    "decode_jpeg",
    "decode_image",
    "encode_png",
    "ResizeMethod",
    "resize",
    "resize_images",
    "resize_bilinear",
    "resize_nearest_neighbor",
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


class ResizeMethod:
    """`tf.image.ResizeMethod`: TF1's resize_images methods."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _batched(images: Any) -> tuple[Tensor, bool]:
    """`images` as [batch, height, width, channels], and whether it came without the batch."""
    images = convert_to_tensor(images, name="images")
    rank = images.shape.ndims
    if rank not in (3, 4):
        raise ValueError(
            f"images must be [height, width, channels] or [batch, height, width, channels], "
            f"got shape {images.shape}"
        )
    return (expand_dims(images, 0), True) if rank == 3 else (images, False)


def _source_coordinates(
    in_size: Tensor, out_size: Tensor, align_corners: bool, half_pixel_centers: bool
) -> Tensor:
    """Where output pixels 0..out_size-1 sample the input, as TF's resize kernels compute it
    (in float32: the scale is in/out, (in-1)/(out-1) aligning corners)."""
    if align_corners and half_pixel_centers:
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")
    in_f, out_f = cast(in_size, _dt.float32), cast(out_size, _dt.float32)
    if align_corners:
        # out == 1 keeps in/out: (in-1)/(out-1) would divide by zero
        corners = (in_f - 1.0) / maximum(out_f - 1.0, 1.0)
        scale = where_v2(out_size > 1, corners, in_f / out_f)
    else:
        scale = in_f / out_f
    pixels = cast(_range(out_size), _dt.float32)
    if half_pixel_centers:
        return (pixels + 0.5) * scale
    return pixels * scale


def _size_pair(size: Any) -> tuple[Tensor, Tensor]:
    size = convert_to_tensor(size, dtype=_dt.int32, name="size")
    if size.shape.ndims != 1 or size.shape[0].value not in (None, 2):
        raise ValueError(
            f"size must be a 1-D int32 Tensor of 2 elements: new_height, new_width, "
            f"got shape {size.shape}"
        )
    return size[0], size[1]


def resize_bilinear(
    images: Any,
    size: Any,
    align_corners: bool = False,
    name: str | None = None,
    half_pixel_centers: bool = False,
) -> Tensor:
    """`tf.image.resize_bilinear`: each output pixel interpolates its four input neighbours,
    along width first and then height, in float32 as TF's kernel does (the output is float32)."""
    with name_scope(name, "ResizeBilinear", [images, size]) as scope:
        images, unbatched = _batched(images)
        images = cast(images, _dt.float32)
        new_h, new_w = _size_pair(size)
        dims = shape(images)

        def weights(axis: int, out_size: Tensor) -> tuple[Tensor, Tensor, Tensor]:
            in_size = dims[axis]
            where = _source_coordinates(in_size, out_size, align_corners, half_pixel_centers)
            if half_pixel_centers:
                where = where - 0.5
            below = floor(where)
            lower = cast(maximum(below, 0.0), _dt.int32)
            upper = minimum(cast(ceil(where), _dt.int32), in_size - 1)
            return lower, upper, where - below

        y0, y1, dy = weights(1, new_h)
        x0, x1, dx = weights(2, new_w)
        dx = reshape(dx, [1, 1, -1, 1])
        dy = reshape(dy, [1, -1, 1, 1])
        top, bottom = gather(images, y0, axis=1), gather(images, y1, axis=1)
        tl, tr = gather(top, x0, axis=2), gather(top, x1, axis=2)
        bl, br = gather(bottom, x0, axis=2), gather(bottom, x1, axis=2)
        upper_row = tl + (tr - tl) * dx
        lower_row = bl + (br - bl) * dx
        out = upper_row + (lower_row - upper_row) * dy
        return squeeze(out, [0], name=scope) if unbatched else identity(out, name=scope)


def resize_nearest_neighbor(
    images: Any,
    size: Any,
    align_corners: bool = False,
    name: str | None = None,
    half_pixel_centers: bool = False,
) -> Tensor:
    """`tf.image.resize_nearest_neighbor`: each output pixel copies the input pixel its
    coordinate falls in (rounded, aligning corners); the dtype is kept."""
    with name_scope(name, "ResizeNearestNeighbor", [images, size]) as scope:
        images, unbatched = _batched(images)
        new_h, new_w = _size_pair(size)
        dims = shape(images)

        def nearest(axis: int, out_size: Tensor) -> Tensor:
            where = _source_coordinates(dims[axis], out_size, align_corners, half_pixel_centers)
            # TF rounds half away from zero (roundf), not to even: the coordinates are >= 0
            picked = floor(where + 0.5) if align_corners else floor(where)
            return minimum(cast(picked, _dt.int32), dims[axis] - 1)

        out = gather(gather(images, nearest(1, new_h), axis=1), nearest(2, new_w), axis=2)
        return squeeze(out, [0], name=scope) if unbatched else identity(out, name=scope)


def resize_images(
    images: Any,
    size: Any,
    method: int = ResizeMethod.BILINEAR,
    align_corners: bool = False,
    preserve_aspect_ratio: bool = False,
    name: str | None = None,
) -> Tensor:
    """`tf.image.resize_images` (TF1): images [batch,] height, width, channels to `size`;
    bilinear gives float32, nearest neighbour keeps the dtype."""
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images: preserve_aspect_ratio=True is not supported")
    with name_scope(name, "resize", [images, size]) as scope:
        if method == ResizeMethod.BILINEAR:
            return resize_bilinear(images, size, align_corners, name=scope)
        if method == ResizeMethod.NEAREST_NEIGHBOR:
            return resize_nearest_neighbor(images, size, align_corners, name=scope)
        names = {ResizeMethod.BICUBIC: "BICUBIC", ResizeMethod.AREA: "AREA"}
        if method in names:
            raise NotImplementedError(
                f"resize_images: method ResizeMethod.{names[method]} is not supported "
                "(BILINEAR and NEAREST_NEIGHBOR are)"
            )
        raise ValueError(f"resize_images: unknown resize method {method!r}")


resize = resize_images  # tf.compat.v1.image.resize: TF1's resize_images
