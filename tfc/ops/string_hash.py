"""The string hashes of TensorFlow's hash-bucket ops, bit for bit, in Python.

tf.string_to_hash_bucket_fast: Fingerprint64 (FarmHash's farmhashna::Hash64);
tf.string_to_hash_bucket: TF's legacy Hash64 (a MurmurHash2 variant, seed 0xDECAFCAFFE);
tf.string_to_hash_bucket_strong: SipHash-2-4 under a 128-bit key. All on uint64 arithmetic
modulo 2**64, reading bytes little-endian as TensorFlow does on every platform it builds for.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 8], "little")


def _fetch32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 4], "little")


def _rotate(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & _MASK, _fetch32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = (a + (b << 8)) & 0xFFFFFFFF
        z = (n + (c << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    return _hash_len16(
        (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
        (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK,
        mul,
    )


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _hash_len16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(s, 16) * mul) & _MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & _MASK
    return _hash_len16(
        (_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
        (e + _rotate((f + a) & _MASK, 18) + g) & _MASK,
        mul,
    )


def _weak_len32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _fetch64(s, i), _fetch64(s, i + 8), _fetch64(s, i + 16), _fetch64(s, i + 24)
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(s: bytes) -> int:
    """TensorFlow's Fingerprint64 of `s` (farmhashna::Hash64)."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v, w = (0, 0), (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rotate((x + y + v[0] + _fetch64(s, i + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _MASK
        z = (_rotate((z + w[0]) & _MASK, 33) * _K1) & _MASK
        v = _weak_len32(s, i, (v[1] * _K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak_len32(s, i + 32, (z + w[1]) & _MASK, (y + _fetch64(s, i + 16)) & _MASK)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & _MASK, w[1])
    v = ((v[0] + w[0]) & _MASK, v[1])
    w = ((w[0] + v[0]) & _MASK, w[1])
    x = (_rotate((x + y + v[0] + _fetch64(s, i + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _MASK
    z = (_rotate((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak_len32(s, i, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak_len32(s, i + 32, (z + w[1]) & _MASK, (y + _fetch64(s, i + 16)) & _MASK)
    z, x = x, z
    return _hash_len16(
        (_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _MASK,
        (_hash_len16(v[1], w[1], mul) + x) & _MASK,
        mul,
    )


def legacy_hash64(s: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TensorFlow's Hash64 (tensorflow/core/lib/hash/hash.cc)."""
    m, r = 0xC6A4A7935BD1E995, 47
    n = len(s)
    h = (seed ^ (n * m)) & _MASK
    whole = n - n % 8
    for i in range(0, whole, 8):
        k = (_fetch64(s, i) * m) & _MASK
        k ^= k >> r
        k = (k * m) & _MASK
        h ^= k
        h = (h * m) & _MASK
    rest = s[whole:]
    if rest:
        for j in range(len(rest) - 1, -1, -1):
            h ^= rest[j] << (8 * j)
        h = (h * m) & _MASK
    h ^= h >> r
    h = (h * m) & _MASK
    h ^= h >> r
    return h


def siphash24(key: tuple[int, int], s: bytes) -> int:
    """SipHash-2-4 of `s` under the 128-bit key (key[0], key[1]) (TF's StrongKeyedHash)."""
    k0, k1 = key[0] & _MASK, key[1] & _MASK
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rounds(count: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(count):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    n = len(s)
    whole = n - n % 8
    for i in range(0, whole, 8):
        m = _fetch64(s, i)
        v3 ^= m
        rounds(2)
        v0 ^= m
    last = (n & 0xFF) << 56 | int.from_bytes(s[whole:], "little")
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def _rotl(v: int, shift: int) -> int:
    return ((v << shift) | (v >> (64 - shift))) & _MASK
