"""A program graph: a copy of the user's graph annotated with one signature (its feeds with
concrete shapes, its fetches and targets), where every compile starts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph


@dataclass(frozen=True)
class FeedSpec:
    """A tensor the caller supplies at run time, with the concrete shape of this signature."""

    tensor: tuple[str, int]  # (node, output index) in the user's graph
    dtype: _dt.DType
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.tensor[0]}:{self.tensor[1]}"


def make_program_graph(
    graph: Graph,
    fetches: Sequence[tuple[str, int]],
    targets: Sequence[str] = (),
    feeds: Sequence[FeedSpec] = (),
) -> Graph:
    """A private copy of `graph` annotated with the signature, ready for the pass pipeline."""
    program = graph.copy()
    program.graph_attrs = {
        "fetches": list(fetches),
        "targets": list(targets),
        "feeds": list(feeds),
    }
    return program
