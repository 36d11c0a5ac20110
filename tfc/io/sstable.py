"""Reading a LevelDB-format sorted table (SSTable): the `.index` file of a TensorFlow checkpoint.

The format is LevelDB's "table_format" (TensorFlow keeps its own copy of it, byte for byte):

    [data block 1] ... [data block N] [meta index block] [index block] [footer: 48 bytes]

- The footer holds two block handles (varint64 offset, varint64 size): the meta index block's,
  then the index block's; zero padding to 40 bytes; then the magic number 0xdb4775248b80fb57
  as a little-endian fixed64.
- Every block is followed by a 5-byte trailer: the compression type (0 none, 1 Snappy) and the
  masked CRC-32C of the block's bytes and that type byte.
- A block is a run of entries, then an array of uint32 restart offsets, then their count.
  An entry is varint32 `shared`, varint32 `non_shared`, varint32 `value_length`, the key's
  last `non_shared` bytes (the first `shared` come from the previous key), then the value.
  At a restart offset an entry's `shared` is 0.
- The index block has one entry per data block, a key >= that block's last key and < the
  next block's first key, whose value is the data block's handle.

Keys are compared bytewise and must increase strictly. Everything is checked before it is
used: handles inside the file, trailers, checksums, entry and restart bounds, key order.
TensorFlow writes its checkpoint indexes uncompressed; a Snappy-compressed table is refused
(tfc has no Snappy decoder).
"""

from __future__ import annotations

import struct

from tfc.io.crc32c import crc32c, unmask_crc32c
from tfc.io.protowire import WireFormatError, read_varint

__all__ = ["TableFormatError", "TABLE_MAGIC", "FOOTER_SIZE", "read_table"]

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48  # two handles of at most 10 + 10 bytes, padded to 40, then the magic
BLOCK_TRAILER_SIZE = 5
_COMPRESSION_NAMES = {1: "Snappy", 2: "Zlib", 3: "LZ4", 4: "LZ4HC", 5: "XPRESS", 6: "ZSTD"}


class TableFormatError(ValueError):
    """Bytes that are not a valid, uncompressed LevelDB table."""


def _handle(data: bytes, pos: int, what: str) -> tuple[int, int, int]:
    """The (offset, size) of a block handle at `pos`, and the position after it."""
    try:
        offset, pos = read_varint(data, pos, f"{what} offset")
        size, pos = read_varint(data, pos, f"{what} size")
    except WireFormatError as e:
        raise TableFormatError(str(e)) from None
    return offset, size, pos


def _read_block(table: bytes, offset: int, size: int, end: int, what: str) -> bytes:
    """The verified contents of the block at (offset, size), which must end before `end`."""
    if offset + size + BLOCK_TRAILER_SIZE > end:
        raise TableFormatError(
            f"{what} at offset {offset} with size {size} (+{BLOCK_TRAILER_SIZE} trailer bytes) "
            f"ends past byte {end}, where the blocks end"
        )
    contents = table[offset : offset + size]
    kind = table[offset + size]
    (stored,) = struct.unpack_from("<I", table, offset + size + 1)
    actual = crc32c(table[offset : offset + size + 1])
    if unmask_crc32c(stored) != actual:
        raise TableFormatError(
            f"{what} at offset {offset} fails its checksum (stored CRC-32C "
            f"{unmask_crc32c(stored):#010x}, computed {actual:#010x})"
        )
    if kind != 0:
        name = _COMPRESSION_NAMES.get(kind)
        if name is None:
            raise TableFormatError(f"{what} at offset {offset} has unknown compression type {kind}")
        raise TableFormatError(
            f"{what} at offset {offset} is {name}-compressed; tfc reads only uncompressed "
            "tables (TensorFlow writes checkpoint indexes uncompressed)"
        )
    return contents


def _block_entries(block: bytes, what: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) entries of one block's contents, with its restart array checked."""
    if len(block) < 4:
        raise TableFormatError(f"{what} has {len(block)} bytes, too few for its restart count")
    (count,) = struct.unpack_from("<I", block, len(block) - 4)
    if count > (len(block) - 4) // 4:
        raise TableFormatError(
            f"{what} says it has {count} restart points, more than its {len(block)} bytes hold"
        )
    limit = len(block) - 4 - 4 * count  # where the entries end and the restart array begins
    restarts = struct.unpack_from(f"<{count}I", block, limit)
    entries: list[tuple[bytes, bytes]] = []
    starts: dict[int, int] = {}  # entry offset -> its `shared` count
    key = b""
    pos = 0
    try:
        while pos < limit:
            start = pos
            shared, pos = read_varint(block, pos, "shared key length")
            non_shared, pos = read_varint(block, pos, "unshared key length")
            value_length, pos = read_varint(block, pos, "value length")
            if shared > len(key):
                raise TableFormatError(
                    f"{what}: entry at byte {start} shares {shared} key bytes with a previous "
                    f"key of {len(key)} bytes"
                )
            if non_shared + value_length > limit - pos:
                raise TableFormatError(
                    f"{what}: entry at byte {start} says {non_shared} key and {value_length} "
                    f"value bytes, {limit - pos} remain before the restart array"
                )
            new_key = key[:shared] + block[pos : pos + non_shared]
            pos += non_shared
            if entries and new_key <= key:
                raise TableFormatError(
                    f"{what}: key {new_key!r} at byte {start} does not sort after {key!r}"
                )
            entries.append((new_key, block[pos : pos + value_length]))
            pos += value_length
            starts[start] = shared
            key = new_key
    except WireFormatError as e:
        raise TableFormatError(f"{what}: {e}") from None
    if not entries:  # an empty block still has its one restart point, at offset 0
        starts[0] = 0
    previous = -1
    for restart in restarts:
        if restart <= previous or starts.get(restart) != 0:
            raise TableFormatError(
                f"{what}: restart offset {restart} is not the start of an entry with no shared "
                "key bytes, in increasing order"
            )
        previous = restart
    if entries and (not restarts or restarts[0] != 0):
        raise TableFormatError(f"{what}: the first entry is not a restart point")
    return entries


def read_table(table: bytes) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of a table held in memory, in key order; TableFormatError if invalid."""
    table = bytes(table)
    if len(table) < FOOTER_SIZE:
        raise TableFormatError(
            f"is truncated: {len(table)} bytes, too short for the {FOOTER_SIZE}-byte footer"
        )
    footer_at = len(table) - FOOTER_SIZE
    (magic,) = struct.unpack_from("<Q", table, len(table) - 8)
    if magic != TABLE_MAGIC:
        raise TableFormatError(
            f"has magic number {magic:#018x} where a table has {TABLE_MAGIC:#018x} (not a "
            "LevelDB table, or truncated)"
        )
    meta_offset, meta_size, pos = _handle(table, footer_at, "meta index handle")
    index_offset, index_size, pos = _handle(table, pos, "index handle")
    if pos > len(table) - 8:
        raise TableFormatError("footer handles run into the magic number")
    _read_block(table, meta_offset, meta_size, footer_at, "meta index block")
    index = _block_entries(
        _read_block(table, index_offset, index_size, footer_at, "index block"), "index block"
    )
    entries: list[tuple[bytes, bytes]] = []
    previous_separator = None
    for n, (separator, handle) in enumerate(index):
        what = f"data block {n}"
        offset, size, end = _handle(handle, 0, f"{what} handle")
        if end != len(handle):
            raise TableFormatError(
                f"index entry {n} holds {len(handle) - end} bytes after its block handle"
            )
        block = _block_entries(_read_block(table, offset, size, footer_at, what), what)
        if block and previous_separator is not None and block[0][0] <= previous_separator:
            raise TableFormatError(
                f"{what}: key {block[0][0]!r} does not sort after the previous block's index "
                f"key {previous_separator!r}"
            )
        if block and block[-1][0] > separator:
            raise TableFormatError(
                f"{what}: last key {block[-1][0]!r} sorts after its index key {separator!r}"
            )
        entries.extend(block)
        previous_separator = separator
    return entries
