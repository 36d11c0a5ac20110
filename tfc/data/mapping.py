"""`Dataset.map`: the function is traced once on placeholders in a private graph, compiled,
and run on each element."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tfc.data.blocks import Block, block_len, group_rows
from tfc.data.pipeline import IterationContext, Stage
from tfc.data.structure import ElementSpec, flatten, lists_to_tuples, pack
from tfc.ir.graph import Graph, Tensor, get_default_graph
from tfc.ops.constant import convert_to_tensor, placeholder

MAP_CHUNK = 1024  # elements mapped before their results move on (bounds the read-ahead)


def _is_leaf(value: Any) -> bool:
    return not isinstance(value, (list, tuple, dict))


def _wrong_graph_message(name: str) -> str:
    return (
        f"Dataset.map: {name} uses a tensor of another graph. tfc traces map functions in a "
        "graph of their own, as TF does; create the tensors it needs inside the function, "
        "or capture NumPy values instead of tensors"
    )


class Map(Stage):
    """Elements through `map_func`: a compiled program of the traced graph, run per element."""

    def __init__(self, input: Stage, map_func: Callable[..., Any]) -> None:
        self.input = input
        name = getattr(map_func, "__name__", repr(map_func))
        spec = input.spec
        self.graph = Graph()
        self.graph.seed = get_default_graph().seed  # random ops inside derive from it, as in TF
        with self.graph.as_default():
            self.args = [
                placeholder(dtype, shape, name=f"arg{i}")
                for i, (dtype, shape) in enumerate(zip(spec.dtypes, spec.shapes))
            ]
            element = pack(spec.template, self.args)
            try:
                # TF passes the components of a plain tuple as separate arguments
                result = map_func(*element) if type(element) is tuple else map_func(element)
                result = lists_to_tuples(result, _is_leaf)
                outputs = [convert_to_tensor(x) for x in flatten(result)]
            except ValueError as e:
                if "must be from the same graph" in str(e):
                    raise ValueError(f"{_wrong_graph_message(name)} ({e})") from None
                raise
        if not outputs:
            raise ValueError(f"Dataset.map: {name} returned no tensors; an element needs one")
        for t in outputs:
            if not isinstance(t, Tensor) or t.graph is not self.graph:
                raise ValueError(_wrong_graph_message(name) + f" ({t})")
        self.outputs = outputs
        # outputs that are an argument unchanged pass through without running anything
        self.passed = [self.args.index(t) if t in self.args else None for t in outputs]
        self.fetches = [t for t, p in zip(outputs, self.passed) if p is None]
        self.spec = ElementSpec.of(
            result, [t.dtype for t in outputs], [t._shape_tuple for t in outputs]
        )

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        runner = ctx.runner(self.graph) if self.fetches else None
        for block in self.input.blocks(ctx):
            n = block_len(block)
            for start in range(0, n, MAP_CHUNK):
                rows = [
                    self._apply(runner, block, i) for i in range(start, min(n, start + MAP_CHUNK))
                ]
                yield from group_rows(rows)

    def _apply(self, runner: Any, block: Block, i: int) -> list[np.ndarray]:
        args = [a[i, ...] for a in block]
        computed = iter(runner.run(self.fetches, dict(zip(self.args, args))) if runner else ())
        return [np.asarray(next(computed)) if p is None else args[p] for p in self.passed]
