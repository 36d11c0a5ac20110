"""Philox-4x32-10 and TensorFlow's random distributions in NumPy: twin of runtime's tfc_philox.h.

The random ops' references use these so that the interpreter and the generated C draw the same
numbers from the same seeds (uniforms bit for bit; normals to the last bit of libm's sin/log).
An op's state is three uint64: (seed, seed2, 128-bit samples reserved by earlier runs).
"""

from __future__ import annotations

import bisect
import math

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


# -- the sampling ops: the twins of tfc_philox.h's second part -----------------------------------
def reserve_samples(state: np.ndarray, n128: int) -> tuple[int, tuple[int, int]]:
    """Counter base and key for this run, advancing `state` by n128 128-bit samples
    (GuardedPhiloxRandom::ReserveSamples128: RandomShuffle's reservation)."""
    seed, seed2, used = (int(v) for v in state)
    state[2] = np.uint64((used + n128) & _MASK64)
    return (seed2 << 64) + used, (seed & _MASK32, (seed >> 32) & _MASK32)


class PhiloxStream:
    """Blocks of one Philox stream from counter `base + start`, in order, a few computed at a
    time; `single()` hands out their 32-bit words one by one (SingleSampleAdapter)."""

    _BATCH = 8

    def __init__(self, base: int, key: tuple[int, int], start: int = 0) -> None:
        self.base, self.key, self.next_step = base, key, start
        self.blocks: list[np.ndarray] = []
        self.words: list[int] = []

    def block(self) -> np.ndarray:
        if not self.blocks:
            steps = np.arange(self.next_step, self.next_step + self._BATCH, dtype=np.uint64)
            self.blocks = list(blocks_from(self.base, steps, self.key))
            self.next_step += self._BATCH
        return self.blocks.pop(0)

    def single(self) -> int:
        if not self.words:
            self.words = [int(w) for w in self.block()]
        return self.words.pop(0)


def shuffle_permutation(state: np.ndarray, n: int) -> np.ndarray:
    """RandomShuffle's order of n rows: a Fisher-Yates pass drawing word % (n - i)."""
    perm = np.arange(n, dtype=np.int64)
    if n <= 1:
        return perm
    base, key = reserve_samples(state, (n - 1 + 3) // 4)
    stream = PhiloxStream(base, key)
    for i in range(n - 1):
        j = i + stream.single() % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _u64_to_f64(x0: int, x1: int) -> float:
    return float(u64_to_f64(np.uint32(x0), np.uint32(x1)))


def multinomial(state: np.ndarray, logits: np.ndarray, num_samples: int) -> np.ndarray:
    """Multinomial's draws: per row, a double uniform (two words) scaled by the sum of the
    exponentials of the finite logits, found in their running sums (std::upper_bound); every
    row from one stream, in order."""
    batch, classes = logits.shape
    base, key = reserve(state, batch * ((num_samples + 3) // 4 * 4) * 2)
    stream = PhiloxStream(base, key)
    out = np.zeros((batch, num_samples), np.int64)
    for b in range(batch):
        row = [float(v) for v in logits[b]]
        finite = [v for v in row if math.isfinite(v)]
        top = max(finite) if finite else float(np.finfo(logits.dtype).min)
        total, cdf = 0.0, []
        for v in row:
            e = _exp(v - top)
            if math.isfinite(v):
                total += e
            cdf.append(total)
        for j in range(num_samples):
            x0 = stream.single()
            x1 = stream.single()
            out[b, j] = bisect.bisect_right(cdf, _u64_to_f64(x0, x1) * total)
    return out


class _Pool:
    """Doubles of one distribution drawn a block (two values) at a time, handed out from the
    block's end."""

    def __init__(self, stream: PhiloxStream, normal: bool) -> None:
        self.stream, self.normal = stream, normal
        self.values: list[float] = []

    def take(self) -> float:
        if not self.values:
            s = self.stream.block()
            if self.normal:
                self.values = [float(v) for v in box_muller_f64(*(np.uint32(w) for w in s))]
            else:
                self.values = [_u64_to_f64(s[0], s[1]), _u64_to_f64(s[2], s[3])]
        return self.values.pop()


def gamma_sample(stream: PhiloxStream, alpha: float) -> float:
    """One Gamma(alpha, 1) sample, the twin of tfc_gamma_sample."""
    normals, uniforms = _Pool(stream, True), _Pool(stream, False)
    if alpha == 1.0:
        return -_log(1.0 - uniforms.take())
    below_one = alpha < 1.0
    d = alpha + (2.0 / 3.0 if below_one else -1.0 / 3.0)
    c = 1.0 / 3.0 / math.sqrt(d) if d > 0 else math.nan
    while True:
        x = normals.take()
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniforms.take()
        if u < 1.0 - 0.0331 * (x * x) * (x * x) or _log(u) < 0.5 * x * x + d * (1.0 - v + _log(v)):
            sample = d * v
            if below_one:
                sample *= _pow(uniforms.take(), 1.0 / alpha)
            return sample


def _exp(x: float) -> float:
    """C's exp: inf on overflow, NaN through."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log(x: float) -> float:
    """C's log: -inf at 0, NaN below."""
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except (OverflowError, ValueError):
        return float(np.power(np.float64(x), np.float64(y)))


def log_factorial(k: float) -> float:
    """log(k!), the twin of tfc_log_factorial."""
    if k < 19.0:
        product, i = 1.0, 2.0
        while i <= k:
            product *= i
            i += 1.0
        return math.log(product)
    n = k + 1.0
    r = 1.0 / n
    r2 = r * r
    series = r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 / 1680.0)))
    return (n - 0.5) * math.log(n) - n + 0.91893853320467274178 + series


def poisson_sample(stream: PhiloxStream, rate: float, highest: float) -> float:
    """One Poisson(rate) sample, the twin of tfc_poisson_sample."""
    uniforms = _Pool(stream, False)
    if not rate <= highest:
        return rate
    if rate < 10.0:
        limit, product, x = math.exp(-rate), 1.0, 0.0
        while True:
            product *= uniforms.take()
            if product <= limit and x <= highest:
                return x
            x += 1.0
    log_rate = math.log(rate)
    b = 0.931 + 2.53 * math.sqrt(rate)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    while True:
        u = uniforms.take() - 0.5
        v = uniforms.take()
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + rate + 0.43)
        if k > highest:
            continue
        if us >= 0.07 and v <= 0.9277 - 3.6224 / (b - 2.0):
            return float(k)
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        s = _log(v * inv_alpha / (a / (us * us) + b))
        t = -rate + k * log_rate - log_factorial(float(k))
        if s <= t:
            return float(k)


def per_output_samples(state: np.ndarray, params: np.ndarray, num_samples: int, draw) -> np.ndarray:
    """RandomGamma's and RandomPoisson's layout: output (sample, param) from the stream
    skipped 256 blocks per output index o = param * num_samples + sample."""
    count = params.size * num_samples
    base, key = reserve(state, count)
    out = np.zeros((num_samples, params.size), np.float64)
    for o in range(count):
        p, k = divmod(o, num_samples)
        stream = PhiloxStream(base, key, SAMPLES_PER_OUTPUT * o)
        out[k, p] = draw(stream, float(params.flat[p]))
    return out
