"""Philox-4x32-10 and TensorFlow's random distributions in NumPy: twin of runtime's tfc_philox.h.

The random ops' references use these so that the interpreter and the generated C draw the same
numbers from the same seeds (uniforms bit for bit; normals to the last bit of libm's sin/log).
An op's state is three uint64: (seed, seed2, 128-bit samples reserved by earlier runs).
"""

from __future__ import annotations

import numpy as np

_M_A, _M_B = 0xD2511F53, 0xCD9E8D57
_W_A, _W_B = 0x9E3779B9, 0xBB67AE85
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
SAMPLES_PER_OUTPUT = 256


def philox_blocks(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox-4x32-10 of each row of `counters` ((n, 4) uint32) under `key`: (n, 4) uint32."""
    c = [counters[:, k].astype(np.uint64) for k in range(4)]
    k0, k1 = key
    for _ in range(10):
        p0 = np.uint64(_M_A) * c[0]
        p1 = np.uint64(_M_B) * c[2]
        c = [
            (p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0),
            p1 & np.uint64(_MASK32),
            (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1),
            p0 & np.uint64(_MASK32),
        ]
        k0 = (k0 + _W_A) & _MASK32
        k1 = (k1 + _W_B) & _MASK32
    return np.stack(c, axis=1).astype(np.uint32)


def reserve(state: np.ndarray, n: int) -> tuple[int, tuple[int, int]]:
    """Take this run's counter base (a 128-bit int) and key, and advance `state` past n outputs."""
    seed, seed2, used = (int(v) for v in state)
    key = (seed & _MASK32, (seed >> 32) & _MASK32)
    base = (seed2 << 64) + used
    state[2] = np.uint64((used + n * SAMPLES_PER_OUTPUT) & _MASK64)
    return base, key


def blocks_from(base: int, steps: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Blocks at counters base + steps, in the 128-bit arithmetic of PhiloxRandom::Skip."""
    base_lo = np.uint64(base & _MASK64)
    lo = base_lo + steps.astype(np.uint64)
    hi = np.uint64((base >> 64) & _MASK64) + (lo < base_lo).astype(np.uint64)
    m32, s32 = np.uint64(_MASK32), np.uint64(32)
    counters = np.stack([lo & m32, lo >> s32, hi & m32, hi >> s32], axis=1).astype(np.uint32)
    return philox_blocks(counters, key)


def u32_to_f32(x: np.ndarray) -> np.ndarray:
    bits = (np.uint32(127 << 23) | (x.astype(np.uint32) & np.uint32(0x7FFFFF))).astype(np.uint32)
    return bits.view(np.float32) - np.float32(1.0)


def u64_to_f64(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    bits = (
        (np.uint64(1023) << np.uint64(52))
        | ((x0.astype(np.uint64) & np.uint64(0xFFFFF)) << np.uint64(32))
        | x1.astype(np.uint64)
    )
    return bits.view(np.float64) - 1.0


def box_muller_f32(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u1 = np.maximum(u32_to_f32(x0), np.float32(1.0e-7))
    v1 = (2.0 * np.pi) * u32_to_f32(x1).astype(np.float64)
    u2 = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
    return (np.sin(v1) * u2).astype(np.float32), (np.cos(v1) * u2).astype(np.float32)


def box_muller_f64(x0, x1, x2, x3) -> tuple[np.ndarray, np.ndarray]:
    u1 = np.maximum(u64_to_f64(x0, x1), 1.0e-7)
    v1 = (2.0 * np.pi) * u64_to_f64(x2, x3)
    u2 = np.sqrt(-2.0 * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


def uniform(state: np.ndarray, n: int, dtype: np.dtype) -> np.ndarray:
    """n uniforms in [0, 1), as TensorFlow's RandomUniform draws them."""
    base, key = reserve(state, n)
    if np.dtype(dtype) == np.float32:
        blocks = blocks_from(base, np.arange((n + 3) // 4), key)
        return u32_to_f32(blocks.ravel())[:n]
    blocks = blocks_from(base, np.arange((n + 1) // 2), key)
    pairs = np.stack(
        [u64_to_f64(blocks[:, 0], blocks[:, 1]), u64_to_f64(blocks[:, 2], blocks[:, 3])], 1
    )
    return pairs.ravel()[:n]


def normal(state: np.ndarray, n: int, dtype: np.dtype) -> np.ndarray:
    """n standard normals (Box-Muller), as TensorFlow's RandomStandardNormal draws them."""
    base, key = reserve(state, n)
    if np.dtype(dtype) == np.float32:
        b = blocks_from(base, np.arange((n + 3) // 4), key)
        f0, f1 = box_muller_f32(b[:, 0], b[:, 1])
        f2, f3 = box_muller_f32(b[:, 2], b[:, 3])
        return np.stack([f0, f1, f2, f3], 1).ravel()[:n]
    b = blocks_from(base, np.arange((n + 1) // 2), key)
    d0, d1 = box_muller_f64(b[:, 0], b[:, 1], b[:, 2], b[:, 3])
    return np.stack([d0, d1], 1).ravel()[:n]


def truncated_normal(state: np.ndarray, n: int, dtype: np.dtype) -> np.ndarray:
    """n normals within (-2, 2) by rejection; each group of outputs has its own sub-stream."""
    base, key = reserve(state, n)
    if n == 0:
        return np.zeros(0, dtype)
    is_f32 = np.dtype(dtype) == np.float32
    group = 4 if is_f32 else 2
    groups = (n + group - 1) // group
    starts = np.arange(groups, dtype=np.uint64) * np.uint64(group * SAMPLES_PER_OUTPUT // 4)
    first = 4  # blocks drawn per group up front: enough for all but ~1e-9 of groups
    steps = (starts[:, None] + np.arange(first, dtype=np.uint64)[None, :]).ravel()
    words = blocks_from(base, steps, key).reshape(groups, first * 4)
    cand = _normal_candidates(words, is_f32)
    accepted = np.abs(cand) < 2.0
    order = np.argsort(~accepted, axis=1, kind="stable")[:, :group]
    out = np.take_along_axis(cand, order, axis=1)
    for g in np.nonzero(accepted.sum(axis=1) < group)[0]:
        out[g] = _truncated_group_slowly(base, int(starts[g]), key, is_f32, group)
    return out.ravel()[:n]


def _normal_candidates(words: np.ndarray, is_f32: bool) -> np.ndarray:
    """Box-Muller over consecutive 32-bit words, in the order a single-sample stream yields them."""
    if is_f32:
        f0, f1 = box_muller_f32(words[:, 0::2], words[:, 1::2])
    else:
        f0, f1 = box_muller_f64(words[:, 0::4], words[:, 1::4], words[:, 2::4], words[:, 3::4])
    return np.stack([f0, f1], axis=2).reshape(words.shape[0], -1)


def _truncated_group_slowly(base, start, key, is_f32, group) -> list:
    accepted: list = []
    block = 0
    while len(accepted) < group:
        words = blocks_from(base, np.array([start + block], dtype=np.uint64), key)
        block += 1
        for c in _normal_candidates(words, is_f32)[0]:
            if abs(c) < 2.0 and len(accepted) < group:
                accepted.append(c)
    return accepted
