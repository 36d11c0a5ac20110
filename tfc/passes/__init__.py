"""The compiler pipeline: passes run by name, in order, each a function Graph -> Graph.

A program graph is a copy of the user's graph carrying, in `graph.graph_attrs`, what the
compile is for: "feeds" (FeedSpec list), "fetches" ((node, output) list), "targets" (op names).
Passes add what later stages read: shapes made concrete, "schedule", and per-node "storage".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from tfc.graph import Graph
from tfc.passes.memory import plan_memory
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import schedule_graph
from tfc.passes.specialize import specialize_shapes

PASSES: dict[str, Callable[[Graph], Graph]] = {
    # partial execution: cut the graph at the feeds, keep what the fetches need
    "prune": prune_graph,
    # every shape concrete for the fed shapes; compile-time values (shapes, axes) become Consts
    "specialize": specialize_shapes,
    # a topological order; variable reads before writes they do not depend on
    "schedule": schedule_graph,
    # an arena offset (or a feed/output/variable/constant slot) for every tensor
    "memory": plan_memory,
}

# The pipeline Session.run compiles with. "prune" runs again after "specialize" because
# turning shape computations into constants leaves their producers dead.
PIPELINE: list[str] = ["prune", "specialize", "prune", "schedule", "memory"]


def run_passes(
    graph: Graph,
    passes: Sequence[str] = PIPELINE,
    verify: bool = False,
    dump: str | os.PathLike | None = None,
) -> Graph:
    """Run `passes` by name; with `verify`, check the graph invariants after each one.

    `dump` names a directory that receives the graph in text form after every pass.
    """
    from tfc.verify import verify_graph

    for i, name in enumerate(passes):
        try:
            fn = PASSES[name]
        except KeyError:
            raise ValueError(f"Unknown pass '{name}'; known passes: {', '.join(PASSES)}") from None
        graph = fn(graph)
        if verify:
            verify_graph(graph, after=name)
        if dump is not None:
            from tfc.dump import graph_text

            path = Path(dump) / f"{i:02d}_{name}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(graph_text(graph))
    return graph
