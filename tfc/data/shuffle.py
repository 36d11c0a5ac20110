"""`Dataset.shuffle`: TF's buffer algorithm, computed on whole index arrays.

The algorithm (tf.data's documented semantics): fill a buffer with the first `buffer_size`
elements in order; then each output is a buffer slot picked uniformly at random, and the
next input element takes that slot. When the input ends, what is left in the buffer comes
out in a uniformly random order.

The random numbers are raw 64-bit words of a PCG64 stream seeded by (seed, seed2, epoch):
the k-th pick uses word k (slot = word % buffer_size, as TF's `Random() % size`), and the
final order of the buffer is the argsort of the next `len(buffer)` words. A stream of words
does not depend on how many are drawn at a time, so the order does not depend on how the
input is cut into blocks.

Vectorized: at step k the chosen slot r_k holds the input element written there by the last
earlier step j with r_j == r_k (or its initial element), so a stable argsort of r gives every
step's source at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tfc.data.blocks import Block, block_len, slice_rows, take_rows
from tfc.data.pipeline import IterationContext, Stage

MIN_CHUNK = 1024  # small input blocks are gathered to this many rows before a shuffle step


def shuffle_bit_generator(seed: int, seed2: int, epoch: int) -> np.random.PCG64:
    """The stream of random words for one pass (`epoch`) of a shuffle seeded (seed, seed2)."""
    return np.random.PCG64(np.random.SeedSequence([seed, seed2, epoch]))


def shuffle_step(picks: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """One run of the buffer algorithm over n inputs with a full buffer of `size` slots.

    Rows 0..size-1 are the buffer, rows size..size+n-1 the inputs; `picks[k]` is the slot
    chosen at step k. Returns the rows that come out (n) and the buffer afterwards (size).
    """
    n = len(picks)
    order = np.argsort(picks, kind="stable")
    sorted_picks = picks[order]
    same_slot = sorted_picks[1:] == sorted_picks[:-1]
    previous = np.full(n, -1, dtype=np.int64)
    previous[order[1:][same_slot]] = order[:-1][same_slot]
    out = np.where(previous >= 0, size + previous, picks)
    last_in_slot = np.ones(n, dtype=bool)
    last_in_slot[:-1] = ~same_slot
    buffer = np.arange(size, dtype=np.int64)
    buffer[sorted_picks[last_in_slot]] = size + order[last_in_slot]
    return out, buffer


class Shuffle(Stage):
    """`shuffle(buffer_size, seed, reshuffle_each_iteration)`."""

    def __init__(
        self, input: Stage, buffer_size: int, seeds: tuple[int | None, int | None], reshuffle: bool
    ) -> None:
        self.input, self.size, self.seeds, self.reshuffle = input, buffer_size, seeds, reshuffle
        self.spec = input.spec

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        epoch = ctx.next_epoch(self) if self.reshuffle else 0
        seed, seed2 = self.seeds
        if seed is None:  # unseeded: a fresh order for every iterator (and session)
            seed, seed2 = ctx.entropy, id(self)
        words = shuffle_bit_generator(seed, seed2, epoch)
        size = self.size
        buffer: list[Block] = []
        held = 0
        incoming: list[Block] = []
        waiting = 0
        for block in self.input.blocks(ctx):
            if held < size:  # filling the buffer, in order
                n = min(size - held, block_len(block))
                buffer.append(slice_rows(block, 0, n))
                held += n
                if n == block_len(block):
                    continue
                block = slice_rows(block, n)
            incoming.append(block)
            waiting += block_len(block)
            if waiting >= max(size, MIN_CHUNK):
                out, buffer = self._step(words, buffer, incoming, waiting)
                yield from out
                incoming, waiting = [], 0
        if waiting:
            out, buffer = self._step(words, buffer, incoming, waiting)
            yield from out
        if held:
            keys = words.random_raw(held)
            yield from take_rows(buffer, np.argsort(keys, kind="stable"))

    def _step(
        self, words: np.random.PCG64, buffer: list[Block], incoming: list[Block], n: int
    ) -> tuple[list[Block], list[Block]]:
        picks = (words.random_raw(n) % np.uint64(self.size)).astype(np.int64)
        out, kept = shuffle_step(picks, self.size)
        rows = buffer + incoming
        return take_rows(rows, out), take_rows(rows, kept)
