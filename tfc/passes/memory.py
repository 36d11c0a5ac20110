"""plan_memory: where every tensor lives, with intermediates packed into one static arena.

Each output gets a `storage` entry (node attribute "storage", one per output):
    ("arena", byte offset)    an intermediate, alive from its producer to its last reader
    ("output", j)             fetch j, written straight into the caller's result buffer
    ("feed", i)               feed i, read from the caller's buffer
    ("var", name)             a variable's persistent buffer, owned by the session
    ("const", node)           a constant
    ("alias", (node, out))    shares the buffer of another tensor (reshape, identity, assign)
Guarantees: offsets are aligned to ARENA_ALIGN; no two arena buffers that are alive at the
same step overlap (tfc.verify checks it); graph_attrs["arena_bytes"] is the arena's size.
Placement is greedy by size, each buffer into the tightest gap that fits (best fit).
"""

from __future__ import annotations

from tfc.graph import Graph
from tfc.ops.registry import get_opdef
from tfc.tensor_shape import num_elements

ARENA_ALIGN = 64

_FIXED = {"VariableV2": "var", "Feed": "feed", "Const": "const"}


def plan_memory(graph: Graph) -> Graph:
    schedule = graph.graph_attrs["schedule"]
    step = {name: i for i, name in enumerate(schedule)}
    fetch_slot = {}
    for j, tensor in enumerate(graph.graph_attrs["fetches"]):
        fetch_slot.setdefault(tuple(tensor), j)

    storage: dict[tuple[str, int], tuple] = {}
    for name in schedule:
        node = graph.node(name)
        opdef = get_opdef(node["op"])
        inputs = graph.input_edges(name)
        for out in range(len(node["dtypes"])):
            if node["op"] in _FIXED:
                kind = _FIXED[node["op"]]
                value = node["attrs"]["index"] if kind == "feed" else name
                storage[(name, out)] = (kind, value)
            elif opdef.alias is not None and out == 0:
                storage[(name, out)] = ("alias", inputs[opdef.alias])
            elif (name, out) in fetch_slot:
                storage[(name, out)] = ("output", fetch_slot[(name, out)])
            else:
                storage[(name, out)] = ("arena", None)

    # lifetimes of arena buffers: from the producer's step to the last step reading the
    # buffer directly or through an alias of it
    intervals: dict[tuple[str, int], list[int]] = {}
    for tensor, (kind, _) in storage.items():
        if kind == "arena":
            intervals[tensor] = [step[tensor[0]], step[tensor[0]]]
    for name in schedule:
        for src in graph.input_edges(name):
            root = root_tensor(storage, src)
            if root in intervals:
                intervals[root][1] = max(intervals[root][1], step[name])

    sizes = {t: _nbytes(graph, t) for t in intervals}
    offsets, arena_bytes = _place(intervals, sizes)
    for tensor, offset in offsets.items():
        storage[tensor] = ("arena", offset)
    for name in schedule:
        node = graph.node(name)
        node["storage"] = [storage[(name, out)] for out in range(len(node["dtypes"]))]
    graph.graph_attrs["arena_bytes"] = arena_bytes
    graph.graph_attrs["arena_intervals"] = {t: tuple(v) for t, v in intervals.items()}
    return graph


def root_tensor(storage: dict, tensor: tuple[str, int]) -> tuple[str, int]:
    """Follow aliases to the tensor that owns the buffer."""
    while storage.get(tensor, ("",))[0] == "alias":
        tensor = tuple(storage[tensor][1])
    return tensor


def _nbytes(graph: Graph, tensor: tuple[str, int]) -> int:
    node = graph.node(tensor[0])
    return num_elements(node["shapes"][tensor[1]]) * node["dtypes"][tensor[1]].size


def _align(n: int) -> int:
    return (n + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN


def _place(intervals: dict, sizes: dict) -> tuple[dict, int]:
    """Greedy by size, best fit: each buffer goes into the smallest gap among the buffers already
    placed whose lifetimes overlap its own, or on top of them."""
    order = sorted(intervals, key=lambda t: (-sizes[t], intervals[t][0], t))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first step, last step)
    offsets: dict = {}
    top = 0
    for tensor in order:
        size = _align(sizes[tensor])
        if size == 0:
            offsets[tensor] = 0
            continue
        first, last = intervals[tensor]
        busy = sorted((o, e) for o, e, f, l in placed if f <= last and first <= l)
        best, best_gap, cursor = None, None, 0
        for o, e in busy:
            gap = o - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, e)
        offset = best if best is not None else cursor
        offsets[tensor] = offset
        placed.append((offset, offset + size, first, last))
        top = max(top, offset + size)
    return offsets, top
