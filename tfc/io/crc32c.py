"""CRC-32C (Castagnoli), and the masked form TensorFlow's checkpoints and LevelDB tables store.

google-crc32c's C implementation (the CPU's CRC32 instructions) computes it where installed: the
TFRecord readers check two CRCs per record, and byte-at-a-time Python held them to a fifteenth of
TensorFlow's records per second. Without it, the same values come from pure NumPy: a long
buffer is cut into equal chunks whose CRC registers advance in lockstep (one vectorized table
step per byte position), then the chunk registers are chained in order with the linear
operator "append L zero bytes", so a 100 MB tensor takes about a second instead of a minute of
byte-at-a-time Python.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

try:
    import google_crc32c as _google_crc32c
except ImportError:  # the NumPy path below gives the same values, slower
    _google_crc32c = None

__all__ = ["crc32c", "crc32c_numpy", "mask_crc32c", "unmask_crc32c"]

# google-crc32c falls back to pure Python where its extension did not build: slower than ours
_NATIVE = _google_crc32c if getattr(_google_crc32c, "implementation", None) == "c" else None

_POLY = 0x82F63B78  # CRC-32C, bit-reflected
_MASK_DELTA = 0xA282EAD8  # LevelDB/TF: stored CRCs are rotated and offset (crc32c::Mask)
_LANES = 4096  # chunks processed side by side; buffers under _SERIAL_BYTES go byte by byte
_SERIAL_BYTES = 16384


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1)
    return table.astype(np.uint32)


_TABLE = _byte_table()
_TABLE_LIST = [int(x) for x in _TABLE]


def _advance_serial(register: int, data: memoryview) -> int:
    table = _TABLE_LIST
    for byte in data.tobytes():
        register = table[(register ^ byte) & 0xFF] ^ (register >> 8)
    return register


def _apply(operator: tuple[int, ...], register: int) -> int:
    """A GF(2)-linear map on 32-bit registers (columns `operator[i]` = image of bit i)."""
    out = 0
    bit = 0
    while register:
        if register & 1:
            out ^= operator[bit]
        register >>= 1
        bit += 1
    return out


def _compose(second: tuple[int, ...], first: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_apply(second, column) for column in first)


@lru_cache(maxsize=64)
def _zeros_operator(count: int) -> tuple[int, ...]:
    """The map register -> register after `count` zero bytes, by repeated squaring."""
    one_byte = tuple(_advance_serial(1 << i, memoryview(b"\0")) for i in range(32))
    result = tuple(1 << i for i in range(32))  # identity
    power = one_byte
    while count:
        if count & 1:
            result = _compose(power, result)
        power = _compose(power, power)
        count >>= 1
    return result


def _byte_tables(operator: tuple[int, ...]) -> list[list[int]]:
    """`operator` as four 256-entry tables, one per register byte, so applying it is 4 lookups."""
    tables = []
    for shift in (0, 8, 16, 24):
        tables.append([_apply(operator, value << shift) for value in range(256)])
    return tables


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC-32C of `data` (any buffer), continuing from the CRC `crc` of the bytes before it."""
    if _NATIVE is not None:
        return _NATIVE.extend(crc, np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8))
    return crc32c_numpy(data, crc)


def crc32c_numpy(data: Any, crc: int = 0) -> int:
    """`crc32c` in NumPy alone (what runs where google-crc32c is not installed)."""
    view = memoryview(data).cast("B")
    register = (crc ^ 0xFFFFFFFF) & 0xFFFFFFFF
    if len(view) < _SERIAL_BYTES:
        return _advance_serial(register, view) ^ 0xFFFFFFFF
    chunk = len(view) // _LANES
    body = np.frombuffer(view[: chunk * _LANES], dtype=np.uint8).reshape(_LANES, chunk)
    columns = np.ascontiguousarray(body.T)  # row k: byte k of every chunk
    lanes = np.zeros(_LANES, dtype=np.uint32)  # each chunk's register, started from zero
    for row in columns:
        lanes = _TABLE[(lanes ^ row) & 0xFF] ^ (lanes >> 8)
    # register after chunks 0..k = shift(register after 0..k-1, chunk bytes) ^ lane k
    t0, t1, t2, t3 = _byte_tables(_zeros_operator(chunk))
    for lane in lanes.tolist():
        register = (
            t0[register & 0xFF]
            ^ t1[(register >> 8) & 0xFF]
            ^ t2[(register >> 16) & 0xFF]
            ^ t3[register >> 24]
            ^ lane
        )
    register = _advance_serial(register, view[chunk * _LANES :])
    return register ^ 0xFFFFFFFF


def mask_crc32c(crc: int) -> int:
    """The stored form: rotated right 15 bits plus a constant, so a CRC of CRCs stays strong."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def unmask_crc32c(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF
