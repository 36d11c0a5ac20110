"""Graph-level and op-level random seeds, combined by TF1's rules (tf.set_random_seed)."""

from __future__ import annotations

from tfc.ir.graph import get_default_graph

__all__ = ["set_random_seed", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def set_random_seed(seed: int | None) -> None:
    """`tf.set_random_seed`: the graph-level seed; random ops created afterwards derive theirs.

    With it set, a graph built twice by the same program draws the same numbers, and ops that
    pass no seed of their own still differ from each other (each takes its creation index).
    """
    get_default_graph().seed = seed


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32  # seeds must fit the int attributes of the random ops


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The (seed, seed2) attributes of a new random op, from the graph seed and `op_seed`.

    Graph seed set: the op seed defaults to the count of ops created so far. Only the op seed
    set: the graph seed is DEFAULT_GRAPH_SEED. Neither: (None, None), a fresh stream per
    session. (0, 0) would mean "unseeded" to the ops, so it becomes (0, 2**31 - 1).
    """
    graph = get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            op_seed = graph._next_id
        seeds = (_truncate_seed(graph.seed), _truncate_seed(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds
