"""PNG encoding of 8-bit images (grayscale, gray+alpha, RGB, RGBA), with the standard library.

Enough for TensorBoard's image summaries: one IDAT chunk, every row with filter type 0,
zlib at its default level. Decoders (TensorBoard's, libpng, Pillow) read it as any PNG.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["encode_png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> gray, gray+alpha, RGB, RGBA


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(image: np.ndarray, compression: int = -1) -> bytes:
    """The PNG file of `image`: uint8 values, shape [height, width, channels] (1 to 4)."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] not in _COLOR_TYPE:
        raise ValueError(f"a PNG image is [height, width, 1|2|3|4] values, got {image.shape}")
    if image.dtype != np.uint8:
        raise TypeError(f"a PNG image here holds uint8 values, got {image.dtype}")
    height, width, channels = image.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPE[channels], 0, 0, 0)
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # filter byte 0 per row
    rows[:, 1:] = image.reshape(height, width * channels)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), compression))
        + _chunk(b"IEND", b"")
    )
