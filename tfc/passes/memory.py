"""plan_memory: where every tensor lives, with intermediates packed into one static arena.

Each output gets a `storage` entry (node attribute "storage", one per output):
    ("arena", byte offset)    an intermediate, alive from its producer to its last reader
    ("output", j)             fetch j, written straight into the caller's result buffer
    ("feed", i)               feed i, read from the caller's buffer
    ("var", name)             a variable's persistent buffer, owned by the session
    ("const", node)           a constant
    ("alias", (node, out))    shares the buffer of another tensor (reshape, identity, assign)
A node whose OpDef declares `scratch` bytes also gets "scratch": the arena offset of its
temporary memory, planned as the tensor (node, SCRATCH), alive during that node's step only.

Liveness (`analyze_liveness`): an arena tensor is alive from the step of its producer to the
last step that reads it, directly or through aliases of it. In-place reuse (`inplace_candidates`):
an op whose OpDef declares `inplace` may write its output 0 over an input that dies at that op;
the two tensors then form one buffer, alive over both lifetimes, at one offset.

Measures stored in graph_attrs, in bytes of arena tensors only (feeds, fetched outputs,
variables, constants and aliases own no arena bytes):
    arena_bytes        the arena's size: the end of the highest buffer (offsets aligned)
    arena_naive_bytes  the sum of the sizes of all arena tensors, as if none shared memory
    arena_lower_bound  the largest sum of the sizes of the buffers alive at one step of the
                       schedule, in-place pairs counted once: no placement can be smaller
Placement: each strategy of STRATEGIES gives every buffer an offset; the smallest arena wins
(ties: the first listed), recorded as "arena_strategy" with all sizes in "arena_strategies".
Guarantees: offsets are aligned to graph_attrs["arena_align"] if set (the embeddable library's
--arena-align), else ARENA_ALIGN; two arena tensors alive at the same step never
overlap, except an in-place output and the input it overwrites, which share one offset and meet
only at the step of the op that overwrites it (tfc.verify checks both); variables and optimizer
slots stay in the session's persistent state, never in the arena.

Nested graphs (If's branches, While's cond and body) are planned first, each its own arena
(aligned like the outer one), and live inside the scratch memory of their op
(tfc.ops.functional.while_layout: the arenas of a loop's cond and body share one region, as do an
If's branches: they never run at the same time). A While's loop variable lives in the While's
output buffer; graph_attrs["carried"] of its body says, per loop variable, how the body makes the
next value: "alias" (the body updates the value in place, or returns it unchanged), "direct" (the
body writes the next value over the current one: nothing reads the current one after that
write, or the writing op may write over its input in place) or "double" (the next value goes to
a second buffer in the While's scratch, and the two swap after each iteration).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import num_elements
from tfc.ops.registry import OpContext, get_opdef
from tfc.passes.nested import map_subgraphs

ARENA_ALIGN = 64

_FIXED = {"VariableV2": "var", "Feed": "feed", "Const": "const"}

Tensor = tuple[str, int]
SCRATCH = -1  # the output index of a node's scratch memory, as an arena tensor


def scratch_bytes(graph: Graph, name: str) -> int:
    """Bytes of temporary arena memory the kernels of node `name` use (0: none)."""
    opdef = get_opdef(graph.op_type(name))
    return int(opdef.scratch(OpContext.for_node(graph, name))) if opdef.scratch is not None else 0


def plan_memory(graph: Graph, strategies: Sequence[str] | None = None) -> Graph:
    """Plan with each of `strategies` (names in STRATEGIES; all by default), keep the smallest."""
    align = int(graph.graph_attrs.get("arena_align", ARENA_ALIGN))
    if align < 1 or align & (align - 1):
        raise ValueError(f"arena alignment must be a power of two, got {align}")

    def plan_nested(inner: Graph, name: str, key: str) -> Graph:
        inner.graph_attrs["arena_align"] = align
        inner = plan_memory(inner, strategies)
        if key == "body":
            loop_vars = graph.node(name)["attrs"]["loop_vars"]
            inner.graph_attrs["carried"] = carried_modes(inner, loop_vars)
        return inner

    map_subgraphs(graph, plan_nested)
    live = analyze_liveness(graph, graph.graph_attrs["schedule"])
    sizes: dict[str, int] = {}
    best: tuple[int, str, list[int]] | None = None
    for name in STRATEGIES if strategies is None else strategies:
        offsets, top = STRATEGIES[name](live.buffers, align)
        sizes[name] = top
        if best is None or top < best[0]:
            best = (top, name, offsets)
    if best is None:
        raise ValueError("plan_memory needs at least one placement strategy")
    top, chosen, offsets = best
    storage = dict(live.storage)
    for buffer, offset in zip(live.buffers, offsets):
        for tensor in buffer.tensors:
            storage[tensor] = ("arena", offset)
    for name in graph.graph_attrs["schedule"]:
        node = graph.node(name)
        node["storage"] = [storage[(name, out)] for out in range(len(node["dtypes"]))]
        if (name, SCRATCH) in storage:
            node["scratch"] = storage[(name, SCRATCH)][1]
        else:
            node.pop("scratch", None)
    graph.graph_attrs.update(
        arena_bytes=top,
        arena_align=align,
        arena_intervals=dict(live.intervals),
        arena_inplace=dict(live.inplace),
        arena_lower_bound=live.lower_bound,
        arena_naive_bytes=live.naive_bytes,
        arena_strategy=chosen,
        arena_strategies=sizes,
    )
    return graph


def carried_modes(body: Graph, loop_vars: int) -> list[str]:
    """How a planned While body makes each loop variable's next value: "alias", "direct" or
    "double" (see the module docstring)."""
    schedule = body.graph_attrs["schedule"]
    step = {n: i for i, n in enumerate(schedule)}
    storage = {(n, i): s for n in schedule for i, s in enumerate(body.node(n)["storage"])}
    fetches = [tuple(f) for f in body.graph_attrs["fetches"]]
    feeds = {body.node(n)["attrs"]["index"]: n for n in schedule if body.op_type(n) == "Feed"}
    modes = []
    for j in range(loop_vars):
        feed, fetch = feeds.get(j), fetches[j]
        if feed is not None and root_tensor(storage, fetch) == (feed, 0):
            modes.append("alias")
            continue
        if feed is None:
            modes.append("direct")  # the body never reads the current value
            continue
        writer = fetch[0]  # its kernels (or the copy after them) write the output buffer
        readers = [n for n in schedule for src in body.input_edges(n)
                   if root_tensor(storage, src) == (feed, 0)]  # fmt: skip
        readers += [f[0] for k, f in enumerate(fetches) if k != j and
                    root_tensor(storage, f) == (feed, 0)]  # fmt: skip
        last = max((step[r] for r in readers), default=-1)
        if last < step[writer]:
            modes.append("direct")
        elif (
            last == step[writer]
            and storage[fetch] == ("output", j)
            and _overwrites(body, writer, feed, storage)
        ):
            modes.append("direct")
        else:
            modes.append("double")
    return modes


def _overwrites(graph: Graph, name: str, feed: str, storage: dict) -> bool:
    """Whether node `name` may write its output 0 over the inputs it reads that are `feed`'s
    buffer (the in-place rule of inplace_candidates, for a buffer outside the arena)."""
    opdef = get_opdef(graph.op_type(name))
    if opdef.inplace is None:
        return False
    ctx = OpContext.for_node(graph, name)
    declared = set(opdef.inplace(ctx))
    reading = [i for i, src in enumerate(ctx.inputs) if root_tensor(storage, src) == (feed, 0)]
    return bool(reading) and all(
        i in declared
        and ctx.in_shapes[i] == ctx.out_shapes[0]
        and ctx.in_dtypes[i].size == ctx.out_dtypes[0].size
        for i in reading
    )


# -- liveness -----------------------------------------------------------------------------------
@dataclass
class Buffer:
    """Arena tensors that share one allocation: a tensor and the in-place outputs written over
    it, one after the other."""

    tensors: list[Tensor]
    first: int  # the step that writes the first tensor
    last: int  # the last step that reads any of them
    nbytes: int

    def overlaps(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass
class Liveness:
    """The arena tensors' lifetimes under one schedule, and the buffers they form."""

    storage: dict[Tensor, tuple]  # every tensor's storage; arena offsets still None
    intervals: dict[Tensor, tuple[int, int]]  # each arena tensor's own (first, last) step
    inplace: dict[Tensor, Tensor]  # in-place output -> the arena tensor whose bytes it takes
    buffers: list[Buffer] = field(default_factory=list)
    naive_bytes: int = 0
    lower_bound: int = 0


def classify_storage(graph: Graph) -> dict[Tensor, tuple]:
    """The storage kind of every tensor; arena tensors get ("arena", None)."""
    fetch_slot: dict[Tensor, int] = {}
    for j, tensor in enumerate(graph.graph_attrs["fetches"]):
        fetch_slot.setdefault(tuple(tensor), j)
    storage: dict[Tensor, tuple] = {}
    for name in graph.node_names():
        node = graph.node(name)
        opdef = get_opdef(node["op"])
        for out in range(len(node["dtypes"])):
            if node["op"] in _FIXED:
                kind = _FIXED[node["op"]]
                storage[(name, out)] = (kind, node["attrs"]["index"] if kind == "feed" else name)
            elif opdef.alias is not None and out == 0:
                storage[(name, out)] = ("alias", graph.input_edges(name)[opdef.alias])
            elif (name, out) in fetch_slot:
                storage[(name, out)] = ("output", fetch_slot[(name, out)])
            else:
                storage[(name, out)] = ("arena", None)
        if opdef.scratch is not None and scratch_bytes(graph, name) > 0:
            storage[(name, SCRATCH)] = ("arena", None)
    return storage


def root_tensor(storage: dict, tensor: Tensor) -> Tensor:
    """Follow aliases to the tensor that owns the buffer."""
    while storage.get(tensor, ("",))[0] == "alias":
        tensor = tuple(storage[tensor][1])
    return tensor


def tensor_nbytes(graph: Graph, tensor: Tensor) -> int:
    if tensor[1] == SCRATCH:
        return scratch_bytes(graph, tensor[0])
    node = graph.node(tensor[0])
    return num_elements(node["shapes"][tensor[1]]) * node["dtypes"][tensor[1]].size


def arena_readers(graph: Graph, storage: dict) -> dict[Tensor, set[str]]:
    """For each arena tensor, the nodes that read it, directly or through aliases of it."""
    readers: dict[Tensor, set[str]] = {t: set() for t, s in storage.items() if s[0] == "arena"}
    for t in readers:
        if t[1] == SCRATCH:
            readers[t].add(t[0])  # used by its own node only
    for name in graph.nx.nodes:
        for src in graph.input_edges(name):
            root = root_tensor(storage, src)
            if root in readers:
                readers[root].add(name)
    return readers


def inplace_candidates(graph: Graph, name: str, storage: dict) -> list[Tensor]:
    """The arena tensors whose bytes output 0 of `name` may take over if it is their last
    reader (the caller checks that), in input order.

    The rule: the op's OpDef.inplace(ctx) names the input (its kernel reads element k of that
    input before writing element k of the output, and never reads it again); output 0 is an
    arena tensor; the input's buffer is an arena tensor (not a feed, fetched output, variable or
    constant; an alias of an arena tensor counts as that tensor) of the output's size; the input
    has the output's shape (no broadcasting) and element size; and every other input of the op
    reading that buffer qualifies the same way.
    """
    opdef = get_opdef(graph.op_type(name))
    if opdef.inplace is None or storage.get((name, 0)) != ("arena", None):
        return []
    ctx = OpContext.for_node(graph, name)
    declared = set(opdef.inplace(ctx))
    out_shape, out_size = ctx.out_shapes[0], ctx.out_dtypes[0].size
    nbytes = tensor_nbytes(graph, (name, 0))
    roots = [root_tensor(storage, src) for src in ctx.inputs]

    def qualifies(i: int) -> bool:
        return i in declared and ctx.in_shapes[i] == out_shape and ctx.in_dtypes[i].size == out_size

    found: list[Tensor] = []
    for i, root in enumerate(roots):
        if (
            root not in found
            and qualifies(i)
            and storage[root][0] == "arena"
            and tensor_nbytes(graph, root) == nbytes
            and all(qualifies(j) for j, r in enumerate(roots) if r == root)
        ):
            found.append(root)
    return found


@dataclass
class ArenaModel:
    """What liveness needs of a program graph, whatever its schedule."""

    storage: dict[Tensor, tuple]  # every tensor's storage; arena offsets still None
    readers: dict[Tensor, set[str]]  # arena tensor -> nodes reading it (through aliases too)
    nbytes: dict[Tensor, int]  # arena tensor -> its size
    inplace: dict[str, list[Tensor]]  # node -> inplace_candidates


def arena_model(graph: Graph) -> ArenaModel:
    storage = classify_storage(graph)
    readers = arena_readers(graph, storage)
    return ArenaModel(
        storage,
        readers,
        {t: tensor_nbytes(graph, t) for t in readers},
        {n: inplace_candidates(graph, n, storage) for n in graph.nx.nodes},
    )


def analyze_liveness(
    graph: Graph, schedule: list[str], model: ArenaModel | None = None
) -> Liveness:
    """Lifetimes of the arena tensors under `schedule`, in-place reuse, and the buffers."""
    if model is None:
        model = arena_model(graph)
    step = {name: i for i, name in enumerate(schedule)}
    intervals = {
        t: (step[t[0]], max([step[r] for r in rs], default=step[t[0]]))
        for t, rs in model.readers.items()
    }
    group: dict[Tensor, Tensor] = {}  # tensor -> the first tensor of its buffer
    inplace: dict[Tensor, Tensor] = {}
    for name in schedule:
        dying = [t for t in model.inplace[name] if intervals[t][1] == step[name]]
        if dying:
            inplace[(name, 0)] = dying[0]
            group[(name, 0)] = group.get(dying[0], dying[0])
    members: dict[Tensor, list[Tensor]] = {}
    for tensor in sorted(intervals, key=lambda t: (intervals[t][0], t)):
        members.setdefault(group.get(tensor, tensor), []).append(tensor)
    buffers = [
        Buffer(
            ts,
            min(intervals[t][0] for t in ts),
            max(intervals[t][1] for t in ts),
            model.nbytes[ts[0]],
        )
        for ts in members.values()
    ]
    live = Liveness(dict(model.storage), intervals, inplace, buffers)
    live.naive_bytes = sum(model.nbytes.values())
    delta = [0] * (len(schedule) + 1)
    for b in buffers:
        delta[b.first] += b.nbytes
        delta[b.last + 1] -= b.nbytes
    running = 0
    for d in delta:
        running += d
        live.lower_bound = max(live.lower_bound, running)
    return live


# -- placement strategies -----------------------------------------------------------------------
def _align(n: int, align: int = ARENA_ALIGN) -> int:
    return (n + align - 1) // align * align


def _best_fit(
    buffers: list[Buffer], order: list[int], align: int = ARENA_ALIGN
) -> tuple[list[int], int]:
    """Place buffers in `order`, each into the smallest gap left between the already placed
    buffers whose lifetimes overlap its own, or on top of them."""
    offsets = [0] * len(buffers)
    placed = OverlapIndex(buffers)
    top = 0
    for b in order:
        size = _align(buffers[b].nbytes, align)
        if size == 0:
            continue
        busy = sorted(
            (offsets[p], offsets[p] + _align(buffers[p].nbytes, align))
            for p in placed.overlapping(buffers[b])
        )
        best, best_gap, cursor = None, None, 0
        for start, end in busy:
            gap = start - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, end)
        offsets[b] = best if best is not None else cursor
        placed.add(b)
        top = max(top, offsets[b] + size)
    return offsets, top


class OverlapIndex:
    """Buffers (indices into `buffers`) added one by one, and which of them overlap a lifetime:
    those alive at its first step (a segment tree over the steps: each buffer is stored at the
    O(log steps) nodes that cover its lifetime) and those that start within it (a list sorted by
    first step). A query costs O(log steps) plus what it returns, not a scan of every buffer
    placed (which made placement quadratic in the buffers of a large program)."""

    def __init__(self, buffers: list[Buffer]) -> None:
        self.buffers = buffers
        self.steps = max((b.last for b in buffers), default=0) + 1
        self.cover: dict[int, list[int]] = {}  # segment tree node -> buffers covering it
        self.starts: list[tuple[int, int]] = []  # (first step, buffer), sorted

    def add(self, index: int) -> None:
        b = self.buffers[index]
        bisect.insort(self.starts, (b.first, index))
        stack = [(1, 0, self.steps - 1)]
        while stack:
            node, lo, hi = stack.pop()
            if b.last < lo or hi < b.first:
                continue
            if b.first <= lo and hi <= b.last:
                self.cover.setdefault(node, []).append(index)
                continue
            mid = (lo + hi) // 2
            stack += [(2 * node, lo, mid), (2 * node + 1, mid + 1, hi)]

    def overlapping(self, buffer: Buffer) -> list[int]:
        found = []
        node, lo, hi, step = 1, 0, self.steps - 1, buffer.first
        while True:  # alive at its first step
            found += self.cover.get(node, ())
            if lo == hi:
                break
            mid = (lo + hi) // 2
            node, lo, hi = (2 * node, lo, mid) if step <= mid else (2 * node + 1, mid + 1, hi)
        start = bisect.bisect_right(self.starts, (buffer.first, len(self.buffers)))
        end = bisect.bisect_right(self.starts, (buffer.last, len(self.buffers)))
        found += [index for _, index in self.starts[start:end]]  # starting within it
        return found


def place_by_size(buffers: list[Buffer], align: int = ARENA_ALIGN) -> tuple[list[int], int]:
    """Largest first: big buffers settle at the bottom, small ones fill the gaps they leave."""
    order = sorted(range(len(buffers)), key=lambda b: (-buffers[b].nbytes, buffers[b].first, b))
    return _best_fit(buffers, order, align)


def place_by_breadth(buffers: list[Buffer], align: int = ARENA_ALIGN) -> tuple[list[int], int]:
    """The busiest step first (TFLite's greedy by breadth): its buffers, largest first, then
    those of the next busiest step, so the peak's buffers pack tightly together."""
    steps = max((b.last for b in buffers), default=-1) + 1
    alive: list[list[int]] = [[] for _ in range(steps)]
    load = [0] * steps
    for i, b in enumerate(buffers):
        for s in range(b.first, b.last + 1):
            alive[s].append(i)
            load[s] += b.nbytes
    order: list[int] = []
    seen: set[int] = set()
    for s in sorted(range(steps), key=lambda s: (-load[s], s)):
        for b in sorted(alive[s], key=lambda b: (-buffers[b].nbytes, b)):
            if b not in seen:
                seen.add(b)
                order.append(b)
    return _best_fit(buffers, order, align)


def place_by_area(buffers: list[Buffer], align: int = ARENA_ALIGN) -> tuple[list[int], int]:
    """Largest bytes x steps first: the buffers that constrain the most of the plan settle
    first, short-lived ones fill around them."""
    order = sorted(
        range(len(buffers)),
        key=lambda b: (-buffers[b].nbytes * (buffers[b].last - buffers[b].first + 1), b),
    )
    return _best_fit(buffers, order, align)


def place_by_first_use(buffers: list[Buffer], align: int = ARENA_ALIGN) -> tuple[list[int], int]:
    """In the order the program allocates them (a linear scan), each into the tightest gap."""
    order = sorted(range(len(buffers)), key=lambda b: (buffers[b].first, -buffers[b].nbytes, b))
    return _best_fit(buffers, order, align)


def place_in_slots(buffers: list[Buffer], align: int = ARENA_ALIGN) -> tuple[list[int], int]:
    """Interval-graph colouring: buffers, largest first, share fixed slots; a buffer takes the
    smallest slot free for its whole lifetime, or opens a new one on top. The arena is the sum
    of the slots' sizes (each the size of its first, largest, buffer)."""
    slots: list[tuple[int, int, list[int]]] = []  # (offset, size, buffers)
    offsets = [0] * len(buffers)
    top = 0
    for b in sorted(range(len(buffers)), key=lambda b: (-buffers[b].nbytes, buffers[b].first, b)):
        size = _align(buffers[b].nbytes, align)
        if size == 0:
            continue
        free = [
            slot
            for slot in slots
            if slot[1] >= size and not any(buffers[o].overlaps(buffers[b]) for o in slot[2])
        ]
        if free:
            slot = min(free, key=lambda s: (s[1], s[0]))
        else:
            slot = (top, size, [])
            slots.append(slot)
            top += size
        slot[2].append(b)
        offsets[b] = slot[0]
    return offsets, top


STRATEGIES: dict[str, Callable[[list[Buffer], int], tuple[list[int], int]]] = {
    "size": place_by_size,
    "breadth": place_by_breadth,
    "area": place_by_area,
    "first_use": place_by_first_use,
    "slots": place_in_slots,
}
