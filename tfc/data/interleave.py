"""`Dataset.interleave`: a dataset per input element, their elements interleaved as TF does.

The function is traced once, on placeholders of the input element in a graph of its own (as
TF traces it); the dataset it returns is then iterated once per input element, with the
placeholders bound to that element (IterationContext.bindings). The file datasets take their
file names from such bindings, so `files.interleave(tf.data.TFRecordDataset, cycle_length=4)`
reads four files at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tfc.data.blocks import Block, block_len, group_rows
from tfc.data.pipeline import IterationContext, Stage
from tfc.data.structure import pack
from tfc.ir.graph import Graph, get_default_graph
from tfc.ops.constant import placeholder

INTERLEAVE_CHUNK = 1024  # elements gathered before they move on as blocks

# graphs of traced dataset functions: the file datasets may read their names from them
FUNCTION_GRAPH = "dataset_function"


class Interleave(Stage):
    """Elements of `trace(element)`'s stage for each input element, `cycle_length` inputs at
    a time, `block_length` consecutive elements from each in turn."""

    def __init__(
        self,
        input: Stage,
        trace: Callable[..., Stage],
        cycle_length: int,
        block_length: int,
    ) -> None:
        self.input, self.cycle_length, self.block_length = input, cycle_length, block_length
        spec = input.spec
        self.graph = Graph()
        self.graph.seed = get_default_graph().seed
        self.graph.graph_attrs[FUNCTION_GRAPH] = True
        with self.graph.as_default():
            self.args = [
                placeholder(dtype, shape, name=f"arg{i}")
                for i, (dtype, shape) in enumerate(zip(spec.dtypes, spec.shapes))
            ]
            element = pack(spec.template, self.args)
            # TF passes the components of a plain tuple as separate arguments
            self.inner = trace(*element) if type(element) is tuple else trace(element)
        self.spec = self.inner.spec

    def _rows(self, ctx: IterationContext, row: list[np.ndarray]) -> Iterator[list[np.ndarray]]:
        bound = ctx.bound(dict(zip(self.args, row)))
        for block in self.inner.blocks(bound):
            for i in range(block_len(block)):
                yield [a[i, ...] for a in block]

    def _inputs(self, ctx: IterationContext) -> Iterator[list[np.ndarray]]:
        for block in self.input.blocks(ctx):
            for i in range(block_len(block)):
                yield [a[i, ...] for a in block]

    def _elements(self, ctx: IterationContext) -> Iterator[list[np.ndarray]]:
        # TF's InterleaveDataset: an empty slot of the cycle takes the next input element when
        # the cycle comes round to it; a slot gives up to block_length elements, then the next
        inputs = self._inputs(ctx)
        slots: list[Iterator | None] = [None] * self.cycle_length
        index, taken, open_count, inputs_left = 0, 0, 0, True
        while inputs_left or open_count:
            slot = slots[index]
            if slot is not None:
                item = next(slot, None)
                if item is not None:
                    yield item
                    taken += 1
                    if taken < self.block_length:
                        continue
                else:
                    slots[index] = None
                    open_count -= 1
                index, taken = (index + 1) % self.cycle_length, 0
            elif inputs_left:
                row = next(inputs, None)
                if row is None:
                    inputs_left = False
                else:
                    slots[index] = self._rows(ctx, row)
                    open_count += 1
            else:
                index, taken = (index + 1) % self.cycle_length, 0

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        rows: list[list[np.ndarray]] = []
        for element in self._elements(ctx):
            rows.append(element)
            if len(rows) == INTERLEAVE_CHUNK:
                yield from group_rows(rows)
                rows = []
        if rows:
            yield from group_rows(rows)


def traced_value(ctx: IterationContext, tensor: Any) -> np.ndarray:
    """The value of `tensor` of a traced function's graph, for the bindings of `ctx`."""
    if tensor in ctx.bindings:
        return ctx.bindings[tensor]
    feeds = {t: v for t, v in ctx.bindings.items() if t.graph is tensor.graph}
    return np.asarray(ctx.runner(tensor.graph).run([tensor], feeds)[0])
