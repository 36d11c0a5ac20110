"""The compiler pipeline: passes run by name, in order, each a function Graph -> Graph.

A program graph is a copy of the user's graph carrying, in `graph.graph_attrs`, what the
compile is for: "feeds" (FeedSpec list), "fetches" ((node, output) list), "targets" (op names).
Passes add what later stages read: shapes made concrete, "schedule", and per-node "storage".
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tfc.ir.graph import Graph

# name -> "module:function", imported when first used
PASSES: dict[str, str] = {
    # partial execution: cut the graph at the feeds, keep what the fetches need
    "prune": "tfc.passes.prune:prune_graph",
    # every shape concrete for the fed shapes; compile-time values (shapes, axes) become Consts
    "specialize": "tfc.passes.specialize:specialize_shapes",
    # subgraphs of constants evaluated at compile time (size-capped)
    "fold": "tfc.passes.fold:fold_constants",
    # algebraic identities: x*1, x+0, double transposes, identity chains, no-op casts
    "simplify": "tfc.passes.simplify:simplify_algebra",
    # one node for ops with the same type, attributes and inputs (never stateful or random ones)
    "cse": "tfc.passes.cse:eliminate_common_subexpressions",
    # chains and trees of element-wise ops become one loop
    "fuse": "tfc.passes.fuse:fuse_elementwise",
    # a full device name on every node (tf.device, tf.colocate_with, variables' groups)
    "place": "tfc.passes.place:place_devices",
    # one subgraph per device, a Send/Recv pair on every cut edge (distributed programs)
    "partition": "tfc.passes.partition:partition_graph",
    # stages alternating between the host and a GPU, copies on the cut edges (GPU sessions)
    "stage": "tfc.passes.stage:stage_devices",
    # a topological order; variable reads before writes they do not depend on
    "schedule": "tfc.passes.schedule:schedule_graph",
    # an arena offset (or a feed/output/variable/constant slot) for every tensor
    "memory": "tfc.passes.memory:plan_memory",
}

# The order of all passes. "prune" runs again after the graph-shrinking passes because
# turning shape computations into constants and merging nodes leaves producers dead.
ORDER: list[str] = [
    "prune", "specialize", "fold", "simplify", "cse", "prune", "fuse", "schedule", "memory",
]  # fmt: skip

# Optimizations a user may switch off (Session(config=tfc.CompileOptions(disable=[...])),
# tfc compile --passes); the other passes are what compiling is.
OPTIMIZATIONS: list[str] = ["fold", "simplify", "cse", "fuse"]


def pipeline(enabled: Sequence[str] | None = None) -> list[str]:
    """The passes in ORDER, with only the `enabled` optimizations (all of them when None)."""
    enabled = OPTIMIZATIONS if enabled is None else list(enabled)
    unknown = set(enabled) - set(OPTIMIZATIONS)
    if unknown:
        raise ValueError(
            f"Unknown optimization pass {sorted(unknown)}; known: {', '.join(OPTIMIZATIONS)}"
        )
    optional = set(OPTIMIZATIONS)
    return [p for p in ORDER if p not in optional or p in enabled]


PIPELINE: list[str] = pipeline()


def get_pass(name: str) -> Callable[[Graph], Graph]:
    try:
        module, _, function = PASSES[name].partition(":")
    except KeyError:
        raise ValueError(f"Unknown pass '{name}'; known passes: {', '.join(PASSES)}") from None
    return getattr(importlib.import_module(module), function)


def run_passes(
    graph: Graph,
    passes: Sequence[str] = PIPELINE,
    verify: bool = False,
    dump: str | os.PathLike | None = None,
    options: Mapping[str, Mapping[str, object]] | None = None,
) -> Graph:
    """Run `passes` by name; with `verify`, check the graph invariants after each one.

    `dump` names a directory that receives the graph in text form after every pass.
    `options` maps a pass name to keyword arguments of its function (a target's choices,
    Target.pass_options: for CUDA, the fuse pass forms no group that keeps a product's rows in
    scratch memory).
    """
    from tfc.passes.verify import verify_graph

    options = options or {}
    for i, name in enumerate(passes):
        graph = get_pass(name)(graph, **options.get(name, {}))
        if verify:
            verify_graph(graph, after=name)
        if dump is not None:
            from tfc.ir.dump import graph_text

            path = Path(dump) / f"{i:02d}_{name}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(graph_text(graph))
    return graph
