"""Graph -> Graph passes: each a function in its own module, named verb_noun, whose docstring
states what it guarantees. Passes never generate code; tfc/compiler.py lists which run, in which
order, for each entry point (and the names users give them).

A program graph is a copy of the user's graph carrying, in `graph.graph_attrs`, what the
compile is for: "feeds" (FeedSpec list), "fetches" ((node, output) list), "targets" (op names).
Passes add what later stages read: shapes made concrete, "schedule", and per-node "storage".

The modules: prune (prune_graph), specialize (specialize_shapes), fold (fold_constants),
simplify (simplify_algebra), cse (eliminate_common_subexpressions), fuse (fuse_elementwise),
place (place_devices), partition (partition_graph), stage (stage_devices), schedule
(schedule_graph), memory (plan_memory); rewrite holds the graph edits they share, and verify
the invariants checked after each pass in the tests.
"""
