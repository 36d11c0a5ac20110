"""Image codecs: tf.image.decode_png, decode_jpeg, decode_image (DecodePng, DecodeJpeg,
DecodeImage) and encode_png (EncodePng), through Pillow.

Their inputs or outputs are tf.string, so a Session runs them in a Python stage and native
builds refuse them by name (registry.STRING_REASON). As TF 2's kernels, each decoder takes
PNG, JPEG and GIF (decode_image BMP too), told by their first bytes. The pixels are the file's,
converted to the channels asked for as TF converts them: gray replicated into RGB, an opaque
alpha channel added, alpha dropped; color made gray with libpng's weights (0.299, 0.587,
0.114 in 15-bit fixed point, rounded down), or, for JPEG, libjpeg's own luma. JPEG pixels are
libjpeg's as Pillow builds it, which may differ from TF's libjpeg-turbo by a few levels.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor
from tfc.ops.constant import convert_to_tensor
from tfc.ops.registry import STRING_REASON, OpContext, OpDef, apply_op, check_dtype, register

__all__ = ["decode_png", "decode_jpeg", "decode_image", "encode_png"]

_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
]
_UNKNOWN = "Unknown image file format. One of JPEG, PNG, GIF, BMP required."


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise errors.UnimplementedError(
            None, None, "tfc decodes and encodes images with Pillow, which is not installed "
            "(pip install Pillow)",
        ) from None  # fmt: skip
    return Image


def _format(data: bytes) -> str:
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    raise errors.InvalidArgumentError(None, None, _UNKNOWN)


def _gray(rgb: np.ndarray) -> np.ndarray:
    """libpng's RGB to gray conversion as TF's PNG decoder asks for it."""
    r, g, b = (rgb[..., k].astype(np.uint32) for k in range(3))
    return ((9798 * r + 19235 * g + 3735 * b) >> 15).astype(rgb.dtype)


def _channels(pixels: np.ndarray, want: int) -> np.ndarray:
    """[h, w, c] pixels with `want` channels (0: as they are)."""
    have = pixels.shape[-1]
    if want in (0, have):
        return pixels
    opaque = np.full(pixels.shape[:-1] + (1,), np.iinfo(pixels.dtype).max, pixels.dtype)
    color = pixels[..., :3] if have >= 3 else np.repeat(pixels[..., :1], 3, axis=-1)
    alpha = pixels[..., -1:] if have in (2, 4) else opaque
    if want == 1:
        return pixels[..., :1] if have <= 2 else _gray(color)[..., None]
    if want == 3:
        return color
    return np.concatenate([color, alpha], axis=-1)


def _pixels(frame: Any) -> np.ndarray:
    """A Pillow image's pixels as [h, w, c], c in 1..4, of uint8 (or uint16 for 16-bit gray)."""
    mode = frame.mode
    if mode == "P":
        frame = frame.convert("RGBA" if "transparency" in frame.info else "RGB")
    elif mode in ("1",):
        frame = frame.convert("L")
    elif mode in ("I;16", "I;16B", "I"):
        return np.asarray(frame, dtype=np.uint16)[..., None]
    elif mode not in ("L", "LA", "RGB", "RGBA"):
        frame = frame.convert("RGB")  # CMYK, YCbCr...
    array = np.asarray(frame)
    return array[..., None] if array.ndim == 2 else array


def decode_bytes(
    data: bytes, channels: int, dtype: _dt.DType, animations: bool, op_name: str
) -> np.ndarray:
    """The pixels of an image file: [h, w, c], or [frames, h, w, c] for a GIF when
    `animations`; `dtype` uint8, uint16 or float32 (in [0, 1])."""
    kind = _format(data)
    image_module = _pillow()
    try:
        image = image_module.open(io.BytesIO(data))
        if kind == "JPEG" and channels == 1:
            image.draft("L", image.size)  # libjpeg's own luma, as TF's decoder asks for
        frames = []
        for index in range(getattr(image, "n_frames", 1) if kind == "GIF" else 1):
            image.seek(index)
            frame = image.convert("RGB") if kind == "GIF" else image
            frame.load()
            frames.append(_pixels(frame))
    except (OSError, ValueError, SyntaxError) as e:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid {kind} data, size {len(data)} ({e})"
        ) from None
    if kind == "BMP" and channels == 1:
        raise errors.InvalidArgumentError(
            None, None, f"`channels` must be 0, 3 or 4 for BMP, but got {channels}"
        )
    if kind == "GIF" and channels not in (0, 3):
        raise errors.InvalidArgumentError(
            None, None, f"channels must be 0 or 3 for GIF, got {channels}"
        )
    frames = [_channels(f, channels) for f in frames]
    out = np.stack(frames) if kind == "GIF" and animations else frames[0]
    if dtype == _dt.uint16 and out.dtype == np.uint8:
        return out.astype(np.uint16) * np.uint16(257)
    if dtype == _dt.uint8 and out.dtype == np.uint16:
        return (out >> 8).astype(np.uint8)
    if dtype == _dt.float32:
        return out.astype(np.float32) / np.float32(np.iinfo(out.dtype).max)
    return out


# -- the decoders ---------------------------------------------------------------------------------
def _decode_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "contents")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(shape)}")
    channels = ctx.attrs["channels"]
    if ctx.type == "DecodeJpeg" and channels not in (0, 1, 3):
        raise ctx.error(f"channels must be 0, 1 or 3, got {channels}")
    if channels not in (0, 1, 3, 4):  # a file's own two channels (gray, alpha) stay possible
        raise ctx.error(f"`channels` must be 0, 1, 3 or 4 but got {channels}")
    dtype = ctx.attrs.get("dtype", _dt.uint8)
    if ctx.type == "DecodeImage" and ctx.attrs["expand_animations"]:
        return [(dtype, None)]  # a GIF's frames make it 4-D
    return [(dtype, (None, None, channels or None))]


def _decode_reference(ctx: OpContext, contents: np.ndarray) -> np.ndarray:
    data = bytes(np.asarray(contents)[()])
    try:
        if ctx.type != "DecodeImage" and _format(data) == "BMP":
            raise errors.InvalidArgumentError(
                None, None, "Trying to decode BMP format using a wrong op. Use `decode_bmp` or "
                f"`decode_image` instead. Op used: {ctx.type}",
            )  # fmt: skip
        return decode_bytes(
            data, ctx.attrs["channels"], ctx.attrs.get("dtype", _dt.uint8),
            bool(ctx.attrs.get("expand_animations", False)), ctx.name,
        )  # fmt: skip
    except errors.OpError as e:
        raise type(e)(None, None, f"{e.message} (op '{ctx.name}' of type {ctx.type})") from None


for _type in ("DecodePng", "DecodeJpeg", "DecodeImage"):
    register(
        OpDef(
            _type,
            infer=_decode_infer,
            reference=_decode_reference,
            differentiable=False,
            in_python=STRING_REASON,
            dtypes=(_dt.uint8, _dt.uint16),
        )
    )


def _image_dtype(dtype: Any, allowed: tuple) -> _dt.DType:
    d = _dt.as_dtype(dtype)
    if d not in allowed:
        names = ", ".join(t.name for t in allowed)
        raise TypeError(f"Value for attr 'dtype' of {d.name} is not in the list of allowed "
                        f"values: {names}")  # fmt: skip
    return d


def decode_png(
    contents: Any, channels: int = 0, dtype: Any = _dt.uint8, name: str | None = None
) -> Tensor:
    """`tf.image.decode_png`: an image file's pixels as [height, width, channels] of uint8 or
    uint16 (`channels` 0: the file's own)."""
    x = convert_to_tensor(contents, dtype=_dt.string)
    attrs = {"channels": int(channels), "dtype": _image_dtype(dtype, (_dt.uint8, _dt.uint16))}
    return apply_op("DecodePng", [x], attrs, name=name or "DecodePng").outputs[0]


def decode_jpeg(
    contents: Any,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    try_recover_truncated: bool = False,
    acceptable_fraction: float = 1,
    dct_method: str = "",
    name: str | None = None,
) -> Tensor:
    """`tf.image.decode_jpeg`: an image file's pixels as [height, width, channels] uint8.
    Only the defaults of ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction
    and dct_method are decoded; others are refused."""
    if ratio != 1 or not fancy_upscaling or try_recover_truncated or acceptable_fraction != 1:
        raise NotImplementedError(
            "decode_jpeg: tfc decodes with ratio=1, fancy_upscaling=True, "
            "try_recover_truncated=False and acceptable_fraction=1 only"
        )
    if dct_method not in ("", "INTEGER_ACCURATE"):
        raise NotImplementedError(f"decode_jpeg: dct_method {dct_method!r} (tfc's is libjpeg's "
                                  "default, INTEGER_ACCURATE)")  # fmt: skip
    x = convert_to_tensor(contents, dtype=_dt.string)
    attrs = {"channels": int(channels), "dtype": _dt.uint8}
    return apply_op("DecodeJpeg", [x], attrs, name=name or "DecodeJpeg").outputs[0]


def decode_image(
    contents: Any,
    channels: int | None = None,
    dtype: Any = _dt.uint8,
    name: str | None = None,
    expand_animations: bool = True,
) -> Tensor:
    """`tf.image.decode_image`: a PNG, JPEG, GIF or BMP file's pixels, [h, w, c] (a GIF's
    frames [n, h, w, c] when `expand_animations`); float32 values are scaled into [0, 1]."""
    x = convert_to_tensor(contents, dtype=_dt.string)
    attrs = {
        "channels": int(channels or 0),
        "dtype": _image_dtype(dtype, (_dt.uint8, _dt.uint16, _dt.float32)),
        "expand_animations": bool(expand_animations),
    }
    return apply_op("DecodeImage", [x], attrs, name=name or "decode_image").outputs[0]


# -- EncodePng ------------------------------------------------------------------------------------
def _encode_png_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.uint8, _dt.uint16], "image")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) != 3:
        raise ctx.error(f"Shape must be rank 3 but is rank {len(shape)}")
    if shape is not None and shape[2] is not None and not 1 <= shape[2] <= 4:
        raise ctx.error(f"image must have 1, 2, 3, or 4 channels, got {shape[2]}")
    if not -1 <= ctx.attrs["compression"] <= 9:
        raise ctx.error(f"compression should be in [-1,9], got {ctx.attrs['compression']}")
    return [(_dt.string, ())]


def _encode_png_reference(ctx: OpContext, image: np.ndarray) -> np.ndarray:
    image_module = _pillow()
    pixels = np.ascontiguousarray(image)
    channels = pixels.shape[2]
    if pixels.dtype == np.uint16:
        if channels != 1:
            raise errors.UnimplementedError(
                None, None, f"EncodePng '{ctx.name}': tfc encodes 16-bit images with one channel "
                f"only, got {channels}",
            )  # fmt: skip
        frame = image_module.fromarray(pixels[..., 0].astype("<u2"))  # mode I;16
    else:
        mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
        frame = image_module.fromarray(pixels[..., 0] if channels == 1 else pixels, mode)
    out = io.BytesIO()
    level = ctx.attrs["compression"]
    frame.save(out, "PNG", compress_level=6 if level < 0 else level)
    return np.array(out.getvalue(), dtype=object)


register(
    OpDef(
        "EncodePng",
        infer=_encode_png_infer,
        reference=_encode_png_reference,
        differentiable=False,
        in_python=STRING_REASON,
        dtypes=(_dt.uint8, _dt.uint16),
    )
)


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """`tf.image.encode_png`: a [height, width, channels] uint8 (or one-channel uint16) image
    as the bytes of a PNG file; `compression` 0..9 (-1: zlib's default)."""
    x = convert_to_tensor(image)
    attrs = {"compression": int(compression)}
    return apply_op("EncodePng", [x], attrs, name=name or "EncodePng").outputs[0]
