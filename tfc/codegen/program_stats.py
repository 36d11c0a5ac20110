"""Measures of a compiled program: its arena next to the bounds, its FLOPs and bytes moved.

The arena line reads `arena 85,312 B = 1.04x lower bound (82,000 B), 0.31x naive (275,000 B)`:
the planned arena, the most bytes of arena tensors alive at one step of the schedule (no
placement can do with less), and the sum of all arena tensors (no reuse at all).

FLOPs come from each op's `OpDef.flops` rule (tfc/ops/flops.py); element-wise ops count the
operations of their C expression. An op with no rule is counted as FALLBACK_FLOPS_PER_ELEMENT
FLOP per element it writes, and the estimate names its type. Bytes moved are the bytes each
computing node (one that runs a kernel) reads and writes: all its inputs and outputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tfc.codegen.lower import LoweredProgram, WhileStep
from tfc.ir.graph import Graph
from tfc.ops.flops import elements, elementwise_flops
from tfc.ops.registry import OpContext, get_opdef
from tfc.passes.memory import SCRATCH, scratch_bytes

FALLBACK_FLOPS_PER_ELEMENT = 1  # ops without a rule: one FLOP per element of their outputs
ARENA_LINE = re.compile(
    r"arena (?P<arena>[\d,]+) B = (?P<lb_ratio>[\d.]+|inf)x lower bound \((?P<lb>[\d,]+) B\), "
    r"(?P<naive_ratio>[\d.]+|inf)x naive \((?P<naive>[\d,]+) B\)"
)


@dataclass(frozen=True)
class ArenaStats:
    arena_bytes: int
    lower_bound: int  # the most bytes of arena tensors alive at one step of the schedule
    # one buffer per intermediate, nothing shared, of the program compiled with no optimization
    # pass: what a compiler without fusion or memory planning allocates
    naive_bytes: int
    # the sum of this (optimized) program's arena tensors; not on the arena line
    intermediate_bytes: int = field(default=0, compare=False)

    def line(self) -> str:
        """The arena line of the report, in the form scripts parse (ARENA_LINE)."""
        return (
            f"arena {self.arena_bytes:,} B = {_ratio(self.arena_bytes, self.lower_bound)}x "
            f"lower bound ({self.lower_bound:,} B), {_ratio(self.arena_bytes, self.naive_bytes)}"
            f"x naive ({self.naive_bytes:,} B)"
        )


def parse_arena_line(text: str) -> ArenaStats:
    """The ArenaStats of the first arena line in `text` (a `tfc inspect` report)."""
    m = ARENA_LINE.search(text)
    if m is None:
        raise ValueError("no arena line in the text")
    number = lambda key: int(m.group(key).replace(",", ""))  # noqa: E731
    return ArenaStats(number("arena"), number("lb"), number("naive"))


def _ratio(value: int, reference: int) -> str:
    if reference == 0:
        return "1.00" if value == 0 else "inf"
    return f"{value / reference:.2f}"


@dataclass
class CostEstimate:
    flops: int
    bytes_moved: int
    flops_by_type: dict[str, int]
    no_rule: list[str]  # op types of computing nodes without a FLOPs rule (FALLBACK counted)


def arena_stats(graph: Graph, unoptimized: Graph | None = None) -> ArenaStats:
    """The arena of a memory-planned graph next to its lower bound and the naive size, the
    intermediates of `unoptimized` (the same signature compiled with no optimization pass;
    `graph` itself when None). The planner's own measures when it records them, else computed
    from the schedule and the storage (in-place pairs counted once)."""
    stats = _arena_stats(graph)
    naive = stats.naive_bytes if unoptimized is None else _arena_stats(unoptimized).naive_bytes
    return ArenaStats(stats.arena_bytes, stats.lower_bound, naive, stats.naive_bytes)


def _arena_stats(graph: Graph) -> ArenaStats:
    attrs = graph.graph_attrs
    if "arena_lower_bound" in attrs and "arena_naive_bytes" in attrs:
        return ArenaStats(
            attrs["arena_bytes"], attrs["arena_lower_bound"], attrs["arena_naive_bytes"]
        )
    schedule = attrs["schedule"]
    step = {name: i for i, name in enumerate(schedule)}
    storage = {(n, i): s for n in schedule for i, s in enumerate(graph.node(n)["storage"])}

    def root(tensor: tuple[str, int]) -> tuple[str, int]:
        while storage[tensor][0] == "alias":
            tensor = tuple(storage[tensor][1])
        return tensor

    live = {t: [step[t[0]], step[t[0]]] for t, s in storage.items() if s[0] == "arena"}
    for name in schedule:
        for src in graph.input_edges(name):
            r = root(src)
            if r in live:
                live[r][1] = max(live[r][1], step[name])
    size = {t: _nbytes(graph, t) for t in live}
    for name in schedule:  # a kernel's scratch memory lives during its own step
        if isinstance(graph.node(name).get("scratch"), int):
            live[(name, SCRATCH)] = [step[name], step[name]]
            size[(name, SCRATCH)] = scratch_bytes(graph, name)
    delta = [0] * (len(schedule) + 1)
    for t, (first, last) in live.items():
        delta[first] += size[t]
        delta[last + 1] -= size[t]
    # an output written over an input that dies at its step shares those bytes there
    dying = {(storage[t][1], last): t for t, (_, last) in live.items() if t in storage}
    for t, (first, _) in live.items():
        if t not in storage:
            continue
        other = dying.get((storage[t][1], first))
        if other is not None and other != t:
            delta[first] -= min(size[t], size[other])
            delta[first + 1] += min(size[t], size[other])
    peak = running = 0
    for d in delta:
        running += d
        peak = max(peak, running)
    return ArenaStats(attrs["arena_bytes"], peak, sum(size.values()))


def _nbytes(graph: Graph, tensor: tuple[str, int]) -> int:
    node = graph.node(tensor[0])
    return elements(node["shapes"][tensor[1]]) * node["dtypes"][tensor[1]].size


def node_flops(graph: Graph, name: str) -> int | None:
    """FLOPs of one run of node `name` by its op's rule; None when its op has none."""
    opdef = get_opdef(graph.op_type(name))
    ctx = OpContext.for_node(graph, name)
    if opdef.flops is not None:
        return int(opdef.flops(ctx))
    if opdef.expr is not None:
        return elementwise_flops(ctx)
    return None


def estimate_cost(graph: Graph, program: LoweredProgram) -> CostEstimate:
    """FLOPs and bytes moved by one run of a lowered program: over the nodes that run kernels;
    a loop's body and condition as often as its iteration bound allows (once when it has none
    known), a conditional's costlier branch."""
    cost = CostEstimate(0, 0, {}, [])
    no_rule: set[str] = set()
    _add_cost(cost, no_rule, graph, program.steps, 1)
    cost.no_rule = sorted(no_rule)
    return cost


def _add_cost(cost: CostEstimate, no_rule: set, graph: Graph, steps: list, times: int) -> None:
    for step in steps:
        if step.control is not None:
            attrs = graph.node(step.node)["attrs"]
            if isinstance(step.control, WhileStep):
                n = times * (attrs.get("bound") or 1)
                _add_cost(cost, no_rule, attrs["cond"], step.control.cond, n)
                _add_cost(cost, no_rule, attrs["body"], step.control.body, n)
            else:
                branches = []
                for key, nested in (("then_branch", step.control.then),
                                    ("else_branch", step.control.other)):  # fmt: skip
                    part = CostEstimate(0, 0, {}, [])
                    _add_cost(part, no_rule, attrs[key], nested, times)
                    branches.append(part)
                part = max(branches, key=lambda c: c.flops)
                cost.flops += part.flops
                cost.bytes_moved += part.bytes_moved
                for t, f in part.flops_by_type.items():
                    cost.flops_by_type[t] = cost.flops_by_type.get(t, 0) + f
        if not step.kernels:
            continue
        ctx = OpContext.for_node(graph, step.node)
        n = node_flops(graph, step.node)
        if n is None:
            no_rule.add(step.op)
            n = FALLBACK_FLOPS_PER_ELEMENT * sum(elements(s) for s in ctx.out_shapes)
        cost.flops += n * times
        cost.flops_by_type[step.op] = cost.flops_by_type.get(step.op, 0) + n * times
        for dtype, shape in [
            *zip(ctx.in_dtypes, ctx.in_shapes),
            *zip(ctx.out_dtypes, ctx.out_shapes),
        ]:
            cost.bytes_moved += elements(shape) * dtype.size * times


def kernel_count(program: LoweredProgram) -> int:
    """Kernels in the program's code (a loop body's and each branch's counted once)."""
    return _kernels_in(program.steps)


def _kernels_in(steps: list) -> int:
    count = 0
    for step in steps:
        count += len(step.kernels)
        control = step.control
        if isinstance(control, WhileStep):
            count += _kernels_in(control.cond) + _kernels_in(control.body)
        elif control is not None:
            count += _kernels_in(control.then) + _kernels_in(control.other)
    return count
