"""Pipeline stages: each turns its input's stream of blocks into its own, on whole arrays.

A stage is immutable and shared by every iterator made from it; what one pass through it
needs (shuffle epochs, compiled map functions) lives in the IterationContext of that pass.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tfc.data.blocks import Block, block_len, concat_rows, slice_rows
from tfc.data.structure import ElementSpec
from tfc.ir import dtypes as _dt

RANGE_CHUNK = 1 << 16  # Dataset.range materializes this many elements at a time


class IterationContext:
    """One pass of one iterator through a pipeline (made when the iterator is initialized).

    `epochs` counts the passes through each shuffle stage (a repeat re-enters its input), so
    a seeded pipeline replays the same orders after re-initialization and in a new session;
    `entropy` seeds unseeded shuffles; `runner(graph)` runs a traced map function.
    """

    def __init__(self, runner: Callable[[Any], Any]) -> None:
        self.epochs: dict[int, int] = {}
        self.entropy = int.from_bytes(os.urandom(8), "little")
        self.runner = runner
        # the values of the arguments of the traced functions being run (an interleave's
        # element), by placeholder: stages made inside such a function read them
        self.bindings: dict[Any, np.ndarray] = {}

    def bound(self, bindings: dict[Any, np.ndarray]) -> IterationContext:
        """This pass, with `bindings` added (it shares the epochs, entropy and runner)."""
        ctx = copy.copy(self)
        ctx.bindings = {**self.bindings, **bindings}
        return ctx

    def next_epoch(self, stage: Stage) -> int:
        epoch = self.epochs.get(id(stage), 0)
        self.epochs[id(stage)] = epoch + 1
        return epoch


class Stage:
    """A dataset's element stream; `spec` says what its elements are."""

    spec: ElementSpec

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        raise NotImplementedError(type(self).__name__)


class TensorSlices(Stage):
    """`from_tensor_slices`: row i of every component is element i."""

    def __init__(self, structure: Any, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays
        self.spec = ElementSpec.of(
            structure, [_dt.as_dtype(a.dtype) for a in arrays], [a.shape[1:] for a in arrays]
        )

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        if block_len(self.arrays):
            yield self.arrays


class Tensors(Stage):
    """`from_tensors`: the whole structure is the one element."""

    def __init__(self, structure: Any, arrays: list[np.ndarray]) -> None:
        self.rows = [a[None] for a in arrays]
        self.spec = ElementSpec.of(
            structure, [_dt.as_dtype(a.dtype) for a in arrays], [a.shape for a in arrays]
        )

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        yield self.rows


class Range(Stage):
    """`Dataset.range(start, stop, step)`: int64 scalars, made a chunk at a time."""

    def __init__(self, start: int, stop: int, step: int) -> None:
        self.start, self.step = start, step
        self.count = len(range(start, stop, step))
        self.spec = ElementSpec.of(0, [_dt.int64], [()])

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        for first in range(0, self.count, RANGE_CHUNK):
            index = np.arange(first, min(first + RANGE_CHUNK, self.count), dtype=np.int64)
            yield [self.start + self.step * index]


class Repeat(Stage):
    """`repeat(count)`: `count` passes through the input (forever when count is -1)."""

    def __init__(self, input: Stage, count: int) -> None:
        self.input, self.count = input, count
        self.spec = input.spec

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        done = 0
        while self.count < 0 or done < self.count:
            empty = True
            for block in self.input.blocks(ctx):
                empty = False
                yield block
            if empty:  # repeating nothing forever is still nothing (TF ends here too)
                return
            done += 1


class Take(Stage):
    """`take(count)`: the first `count` elements (all of them when count is negative)."""

    def __init__(self, input: Stage, count: int) -> None:
        self.input, self.count = input, count
        self.spec = input.spec

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        if self.count < 0:
            yield from self.input.blocks(ctx)
            return
        left = self.count
        if left == 0:
            return  # without touching the input, which may be infinite
        for block in self.input.blocks(ctx):
            n = block_len(block)
            if n >= left:
                yield slice_rows(block, 0, left)
                return
            left -= n
            yield block


class Skip(Stage):
    """`skip(count)`: all but the first `count` elements (none when count is negative)."""

    def __init__(self, input: Stage, count: int) -> None:
        self.input, self.count = input, count
        self.spec = input.spec

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        left = self.count
        for block in self.input.blocks(ctx):
            if left < 0:
                continue
            n = block_len(block)
            if left >= n:
                left -= n
                continue
            yield slice_rows(block, left) if left else block
            left = 0


class Batch(Stage):
    """`batch(size, drop_remainder)`: consecutive elements stacked; full batches are views."""

    def __init__(self, input: Stage, size: int, drop_remainder: bool) -> None:
        self.input, self.size, self.drop_remainder = input, size, drop_remainder
        outer = size if drop_remainder else None
        shapes = [None if s is None else (outer, *s) for s in input.spec.shapes]
        self.spec = ElementSpec(input.spec.template, input.spec.dtypes, tuple(shapes))

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        size = self.size
        pending: list[Block] = []  # fewer than `size` rows waiting for the next block
        waiting = 0
        for block in self.input.blocks(ctx):
            if pending:
                need = size - waiting
                if block_len(block) < need:
                    pending.append(block)
                    waiting += block_len(block)
                    continue
                first = concat_rows([*pending, slice_rows(block, 0, need)])
                yield [a[None] for a in first]
                block, pending, waiting = slice_rows(block, need), [], 0
            n = block_len(block)
            full = n // size
            if full:
                yield [a[: full * size].reshape((full, size, *a.shape[1:])) for a in block]
            if n % size:
                pending, waiting = [slice_rows(block, full * size)], n % size
        if pending and not self.drop_remainder:
            yield [a[None] for a in concat_rows(pending)]
