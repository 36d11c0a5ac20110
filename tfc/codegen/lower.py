"""Lowering: a scheduled, memory-planned program graph becomes plain data for the templates.

The result, a `LoweredProgram`, holds each step's kernels (typed specs, tfc/ops/kernels.py: each
target renders them) with the pointer expressions of their arguments (C syntax, which the C and
CUDA programs share: both address buffers in one arena), the constants to embed, the state
slots (variables and random-number streams) the caller binds, and the copies that deliver
fetched values which live in someone else's buffer (a variable, a feed, a constant, an alias).
Fusion nodes are lowered by tfc/codegen/fusion.py, every other node by its op's `lower` rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from tfc.codegen.fusion import lower_fusion
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph
from tfc.ir.program import FeedSpec
from tfc.ir.tensor_shape import num_elements, shape_str
from tfc.ops.fusion import describe_members, is_fusion
from tfc.ops.kernels import Kernel, c_initializer
from tfc.ops.registry import OpContext, get_opdef
from tfc.passes.memory import root_tensor

_BUF = re.compile(r"(in|out)(\d+)")
EMBED_LIMIT_BYTES = 64 * 1024  # larger constants are passed in by the caller, not compiled in


@dataclass
class BoundKernel:
    kernel: Kernel
    args: list[str]  # one C pointer expression per kernel param
    # False when a written param shares its buffer with another param (AssignAdd(w, w)):
    # the kernel's pointers must then not be declared restrict
    restrict: bool = True


@dataclass(frozen=True)
class FetchCopy:
    """A fetched value copied into its output slot from the buffer that holds it."""

    slot: int  # the index in outputs
    source: str  # the pointer expression of the buffer
    nbytes: int


@dataclass
class Step:
    node: str
    op: str
    comment: list[str]  # lines naming the graph node (and the ops a fused node computes)
    kernels: list[BoundKernel]
    copies: list[FetchCopy]  # fetched values that live in another buffer


@dataclass
class ConstArray:
    name: str
    ctype: str
    count: int
    init: str


@dataclass(frozen=True)
class Slot:
    """A state pointer the caller passes: a variable's buffer or a random op's stream state."""

    kind: str  # "var" or "rng"
    name: str  # the variable's or the random op's node name
    dtype: _dt.DType
    shape: tuple[int, ...]


@dataclass(frozen=True)
class FetchSpec:
    tensor: tuple[str, int]
    dtype: _dt.DType
    shape: tuple[int, ...]


@dataclass
class LoweredProgram:
    name: str
    prefix: str
    feeds: list[FeedSpec]
    fetches: list[FetchSpec]
    slots: list[Slot]
    consts: list[ConstArray]
    external_consts: list[np.ndarray]
    steps: list[Step]
    arena_bytes: int
    vars_read_first: list[str] = field(default_factory=list)  # must be initialized on entry
    vars_written: list[str] = field(default_factory=list)
    # starts the names of the program's static kernels and constants, so that several
    # programs can share one C file (the embeddable library's model.c)
    local_prefix: str = ""


def lower_program(
    graph: Graph, name: str = "program", prefix: str = "tfc_", local_prefix: str = ""
) -> LoweredProgram:
    attrs = graph.graph_attrs
    schedule = attrs["schedule"]
    storage = {(n, i): s for n in schedule for i, s in enumerate(graph.node(n)["storage"])}

    slots: list[Slot] = []
    slot_index: dict[tuple[str, str], int] = {}
    for n in schedule:
        node = graph.node(n)
        if node["op"] == "VariableV2":
            slot_index[("var", n)] = len(slots)
            slots.append(Slot("var", n, node["dtypes"][0], tuple(node["shapes"][0])))
        elif get_opdef(node["op"]).random:
            slot_index[("rng", n)] = len(slots)
            slots.append(Slot("rng", n, _dt.int64, (3,)))

    constants = _Constants(graph, local_prefix)

    def pointer(tensor: tuple[str, int], dtype: _dt.DType) -> str:
        kind, value = storage[root_tensor(storage, tensor)]
        t = dtype.c_type
        if kind == "arena":
            return f"({t} *)(arena + {value})"
        if kind == "output":
            return f"({t} *)outputs[{value}]"
        if kind == "feed":
            return f"(const {t} *)inputs[{value}]"
        if kind == "var":
            return f"({t} *)state[{slot_index[('var', value)]}]"
        return constants.pointer(value)

    fetch_slots: dict[tuple[str, int], list[int]] = {}  # a merged tensor may fill several
    for j, t in enumerate(attrs["fetches"]):
        fetch_slots.setdefault(tuple(t), []).append(j)
    steps = []
    for n in schedule:
        node = graph.node(n)
        inputs = graph.input_edges(n)
        ctx = OpContext.for_node(graph, n)
        opdef = get_opdef(node["op"])
        if is_fusion(node["op"]):  # its kernels are lowered here, in codegen, from its plan
            kernels = lower_fusion(ctx)
        elif opdef.lower is None:
            raise NotImplementedError(f"Op '{node['op']}' (node '{n}') has no C kernel in tfc")
        else:
            kernels = opdef.lower(ctx)
        bound = []
        for kernel in kernels:
            args, buffers = [], []
            for p in kernel.params:
                if p.buf == "state":
                    expr = f"(uint64_t *)state[{slot_index[('rng', n)]}]"
                    buffers.append(("rng", n))
                elif p.buf == "scratch":
                    if not isinstance(node.get("scratch"), int):
                        raise ValueError(f"kernel of '{n}' uses scratch memory the plan lacks")
                    expr = f"({p.ctype} *)(arena + {node['scratch']})"
                    buffers.append(("scratch", n))
                else:
                    m = _BUF.fullmatch(p.buf)
                    if m is None:
                        raise ValueError(f"kernel of '{n}' names unknown buffer '{p.buf}'")
                    index = int(m.group(2))
                    tensor = inputs[index] if m.group(1) == "in" else (n, index)
                    dtype = graph.node(tensor[0])["dtypes"][tensor[1]]
                    expr = pointer(tensor, dtype)
                    # by storage, not by tensor: an in-place output shares its input's offset
                    buffers.append(storage[root_tensor(storage, tensor)])
                args.append(f"{expr} + {p.offset}" if p.offset else expr)
            written = {b for b, p in zip(buffers, kernel.params) if not p.const}
            aliased = any(buffers.count(b) > 1 for b in written)
            bound.append(BoundKernel(kernel, args, restrict=not aliased))
        copies = []
        for out, dtype in enumerate(node["dtypes"]):
            nbytes = num_elements(node["shapes"][out]) * dtype.size
            for j in fetch_slots.get((n, out), []):
                if nbytes and storage[(n, out)] != ("output", j):
                    copies.append(FetchCopy(j, pointer((n, out), dtype), nbytes))
        steps.append(Step(n, node["op"], _comment(graph, n, inputs), bound, copies))

    read_first, written = _variable_effects(graph, schedule, storage, fetch_slots)
    fetches = [
        FetchSpec(
            tuple(t), graph.node(t[0])["dtypes"][t[1]], tuple(graph.node(t[0])["shapes"][t[1]])
        )
        for t in attrs["fetches"]
    ]
    return LoweredProgram(
        name=name,
        prefix=prefix,
        feeds=list(attrs["feeds"]),
        fetches=fetches,
        slots=slots,
        consts=constants.arrays,
        external_consts=constants.external,
        steps=steps,
        arena_bytes=attrs["arena_bytes"],
        vars_read_first=read_first,
        vars_written=written,
        local_prefix=local_prefix,
    )


class _Constants:
    """Constants as the kernels reference them: small ones become static arrays in the source,
    large ones are passed in by the caller. Only constants something reads are emitted."""

    def __init__(self, graph: Graph, local_prefix: str = "") -> None:
        self.graph = graph
        self.local_prefix = local_prefix
        self.arrays: list[ConstArray] = []
        self.external: list[np.ndarray] = []
        self._pointers: dict[str, str] = {}

    def pointer(self, node_name: str) -> str:
        if node_name not in self._pointers:
            node = self.graph.node(node_name)
            value, dtype = node["attrs"]["value"], node["dtypes"][0]
            if value.size == 0:
                ptr = "NULL"
            elif value.nbytes <= EMBED_LIMIT_BYTES:
                cname = f"{self.local_prefix}c{len(self.arrays)}"
                init = c_initializer(value, dtype)
                self.arrays.append(ConstArray(cname, dtype.c_type, value.size, init))
                # read through tfc_opaque: see runtime/include/tfc_runtime.h (a GCC bug)
                ptr = f"(const {dtype.c_type} *)tfc_opaque({cname})"
            else:
                ptr = f"(const {dtype.c_type} *)consts[{len(self.external)}]"
                self.external.append(np.ascontiguousarray(value, dtype=dtype.np))
            self._pointers[node_name] = ptr
        return self._pointers[node_name]


def _variable_effects(graph, schedule, storage, fetch_slots) -> tuple[list[str], list[str]]:
    """Variables read before this program writes them (they must be initialized on entry), and
    variables it writes (initialized after it runs)."""
    written: list[str] = []
    read_first: list[str] = []

    def var_of(tensor):
        kind, value = storage[root_tensor(storage, tensor)]
        return value if kind == "var" else None

    for n in schedule:
        opdef = get_opdef(graph.op_type(n))
        for i, src in enumerate(graph.input_edges(n)):
            var = var_of(src)
            if var is None:
                continue
            is_ref = i in opdef.ref_inputs
            if (not is_ref or opdef.reads_ref) and var not in written and var not in read_first:
                read_first.append(var)
            if is_ref and var not in written:
                written.append(var)
        for out in range(len(graph.node(n)["dtypes"])):
            var = var_of((n, out))
            if (n, out) in fetch_slots and var is not None:
                if var not in written and var not in read_first:
                    read_first.append(var)
    return read_first, written


def _comment(graph: Graph, name: str, inputs: list) -> list[str]:
    node = graph.node(name)
    ins = ", ".join(f"{s}:{i} {shape_str(graph.node(s)['shapes'][i])}" for s, i in inputs)
    outs = ", ".join(f"{d.name}{shape_str(s)}" for d, s in zip(node["dtypes"], node["shapes"]))
    lines = [f"{name} ({node['op']}): ({ins}) -> {outs}"]
    if is_fusion(node["op"]):  # and one line per op the fused kernel computes
        lines += describe_members(node["attrs"], [f"{s}:{i}" for s, i in inputs])
    return [line.replace("*/", "* /") for line in lines]
