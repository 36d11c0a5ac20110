"""Test-only writer of TensorFlow V2 checkpoints, built from the format's description alone.

It writes what tfc/io/tensor_bundle.py and tfc/io/sstable.py document (a LevelDB table of
protocol-buffer entries beside raw data files), with knobs to make the variants a reader must
accept (several data blocks, restart intervals, shards, big-endian data) and the damage it must
refuse. It shares no code with the reader: its CRC-32C is the bitwise textbook loop, so a bug
in tfc's table-driven one cannot hide behind a round trip. The files TensorFlow itself writes
are checked in tests/test_tf_checkpoint.py where TensorFlow is installed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import numpy as np

MAGIC = 0xDB4775248B80FB57
DTYPE_ENUM = {
    np.dtype("float32"): 1, np.dtype("float64"): 2, np.dtype("int32"): 3,
    np.dtype("uint8"): 4, np.dtype("int16"): 5, np.dtype("int8"): 6, np.dtype("complex64"): 8,
    np.dtype("int64"): 9, np.dtype("bool"): 10, np.dtype("uint16"): 17,
    np.dtype("complex128"): 18, np.dtype("float16"): 19, np.dtype("uint32"): 22,
    np.dtype("uint64"): 23,
}  # fmt: skip


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# -- protocol-buffer encoding ----------------------------------------------------------------------
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64 are ten-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_fixed32(number: int, value: int) -> bytes:
    return varint(number << 3 | 5) + struct.pack("<I", value)


def header_proto(
    num_shards: int = 1,
    endianness: int = 0,
    producer: int = 1,
    min_consumer: int = 0,
    bad_consumers: Iterable[int] = (),
) -> bytes:
    version = field_varint(1, producer) if producer else b""
    if min_consumer:
        version += field_varint(2, min_consumer)
    for bad in bad_consumers:
        version += field_varint(3, bad)
    out = field_varint(1, num_shards) if num_shards else b""
    if endianness:
        out += field_varint(2, endianness)
    return out + field_bytes(3, version)


def shape_proto(shape: Iterable[int]) -> bytes:
    return b"".join(field_bytes(2, field_varint(1, d) if d else b"") for d in shape)


def entry_proto(
    dtype: int,
    shape: Iterable[int],
    shard_id: int = 0,
    offset: int = 0,
    size: int = 0,
    crc: int | None = None,
    slices: int = 0,
) -> bytes:
    out = field_varint(1, dtype) + field_bytes(2, shape_proto(shape))
    if shard_id:
        out += field_varint(3, shard_id)
    if offset:
        out += field_varint(4, offset)
    if size:
        out += field_varint(5, size)
    if crc is not None:
        out += field_fixed32(6, crc)
    for _ in range(slices):
        out += field_bytes(7, field_bytes(1, b""))
    return out


# -- the LevelDB table -----------------------------------------------------------------------------
def block(entries: list[tuple[bytes, bytes]], restart_interval: int = 16) -> bytes:
    out = bytearray()
    restarts = []
    previous = b""
    for i, (key, value) in enumerate(entries):
        if i % restart_interval == 0:
            restarts.append(len(out))
            shared = 0
        else:
            shared = 0
            while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
                shared += 1
        out += varint(shared) + varint(len(key) - shared) + varint(len(value))
        out += key[shared:] + value
        previous = key
    if not restarts:
        restarts.append(0)
    out += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
    return bytes(out)


def with_trailer(contents: bytes, compression: int = 0) -> bytes:
    kind = bytes([compression])
    return contents + kind + struct.pack("<I", masked_crc32c(contents + kind))


def table(
    entries: list[tuple[bytes, bytes]],
    block_size: int = 4096,
    restart_interval: int = 16,
    compression: int = 0,
) -> bytes:
    """A table of `entries` (written in the order given): data blocks cut after `block_size`
    bytes, an empty meta index block, an index block keyed by each block's last key, the footer."""
    out = bytearray()
    index: list[tuple[bytes, bytes]] = []
    pending: list[tuple[bytes, bytes]] = []

    def flush() -> None:
        contents = block(pending, restart_interval)
        handle = varint(len(out)) + varint(len(contents))
        out.extend(with_trailer(contents, compression))
        index.append((pending[-1][0], handle))
        pending.clear()

    for key, value in entries:
        pending.append((key, value))
        if sum(len(k) + len(v) + 3 for k, v in pending) >= block_size:
            flush()
    if pending:
        flush()
    meta = block([])
    meta_handle = varint(len(out)) + varint(len(meta))
    out += with_trailer(meta, compression)
    index_contents = block(index, 1)
    index_handle = varint(len(out)) + varint(len(index_contents))
    out += with_trailer(index_contents, compression)
    footer = meta_handle + index_handle
    out += footer + bytes(40 - len(footer)) + struct.pack("<Q", MAGIC)
    return bytes(out)


# -- a whole checkpoint ----------------------------------------------------------------------------
def write_bundle(
    prefix: str,
    tensors: dict[str, np.ndarray],
    num_shards: int = 1,
    big_endian: bool = False,
    **table_options: int,
) -> None:
    """`prefix.index` and `prefix.data-*` holding `tensors`, dealt round-robin to the shards."""
    data = [bytearray() for _ in range(num_shards)]
    entries = [(b"", header_proto(num_shards, 1 if big_endian else 0))]
    for i, name in enumerate(sorted(tensors)):
        array = np.array(tensors[name], order="C")  # ascontiguousarray makes scalars 1-d
        shard = i % num_shards
        raw = array.astype(array.dtype.newbyteorder(">" if big_endian else "<")).tobytes()
        entry = entry_proto(
            DTYPE_ENUM[array.dtype], array.shape, shard, len(data[shard]), len(raw),
            masked_crc32c(raw),
        )  # fmt: skip
        data[shard] += raw
        entries.append((name.encode(), entry))
    with open(prefix + ".index", "wb") as f:
        f.write(table(entries, **table_options))
    for shard, raw in enumerate(data):
        with open(f"{prefix}.data-{shard:05d}-of-{num_shards:05d}", "wb") as f:
            f.write(raw)
