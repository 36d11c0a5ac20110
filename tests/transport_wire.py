"""The transport's wire format written from its description (docs/file-formats.md), for tests
that speak it from Python: a pure-Python CRC32C (the reference for the C one), the client side
of the handshake, and frames with fields to corrupt."""

import hashlib
import hmac
import os
import struct

import numpy as np


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli, reflected), a byte at a time: the reference for the C code."""
    crc, table = 0xFFFFFFFF, _CRC32C_TABLE
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def handshake(sock, token=None, name=b"python"):
    """The client side of the handshake, written from the protocol's description: (ACK magic,
    verdict)."""
    nonce_c = os.urandom(32)
    field = name.ljust(32, b"\0")
    sock.sendall(struct.pack("<IHH", 0x48434654, 2, 1 if token else 0) + nonce_c + field)
    reply = read_exact(sock, 76)
    magic, version, flags = struct.unpack("<IHH", reply[:8])
    nonce_s, idle, mac_s = reply[8:40], reply[40:44], reply[44:76]
    assert (magic, version) == (0x48434654, 2)
    if token:
        want = hmac.new(token, b"tfc server" + nonce_c + nonce_s + field + idle, hashlib.sha256)
        assert mac_s == want.digest(), "the server's proof"
        proof = hmac.new(token, b"tfc client" + nonce_s + nonce_c + field, hashlib.sha256).digest()
    else:
        proof = bytes(32)
    sock.sendall(struct.pack("<I", 0x48434654) + proof)
    return struct.unpack("<II", read_exact(sock, 8))


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def frame(key=b"k", step=1, dtype=3, wire=None, dims=(2,), payload=None, **override):
    """A frame as the protocol describes it (little-endian), with fields to corrupt."""
    wire = dtype if wire is None else wire
    if payload is None:
        payload = np.arange(int(np.prod(dims)), dtype=np.int32).tobytes()
    fields = dict(magic=0x46434654, version=1, key_len=len(key), rank=len(dims),
                  nbytes=len(payload))  # fmt: skip
    fields.update(override)
    head = struct.pack(
        "<IHHqIBBBBQ", fields["magic"], fields["version"], 0, step, fields["key_len"], dtype,
        wire, fields["rank"], 0, fields["nbytes"],
    )  # fmt: skip
    body = head + b"".join(struct.pack("<q", d) for d in dims) + key + payload
    return body + struct.pack("<I", crc32c(body))


def corrupt_crc(frame):
    return frame[:-4] + struct.pack("<I", struct.unpack("<I", frame[-4:])[0] ^ 1)
