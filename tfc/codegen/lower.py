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
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tfc.codegen.fusion import dense_head_weights, lower_fusion
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph
from tfc.ir.program import FeedSpec
from tfc.ir.tensor_shape import num_elements, shape_str
from tfc.ops.functional import if_layout, while_layout
from tfc.ops.fusion import describe_members, is_fusion
from tfc.ops.kernels import Kernel, Param, c_initializer
from tfc.ops.registry import OpContext, get_opdef
from tfc.passes.memory import root_tensor

_BUF = re.compile(r"(in|out)(\d+)")
EMBED_LIMIT_BYTES = 64 * 1024  # larger constants are passed in by the caller, not compiled in
# a packed copy of a product's weights: the header and the column rounding of tfc_gemm_packed.h
PACK_HEADER_BYTES = 64
PACK_COLS = 64


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
    target: str = ""  # the pointer expression of the output slot (default: outputs[slot])


@dataclass
class Step:
    node: str
    op: str
    comment: list[str]  # lines naming the graph node (and the ops a fused node computes)
    kernels: list[BoundKernel]
    copies: list[FetchCopy]  # fetched values that live in another buffer
    # an If or While: its nested graphs' steps and what runs around them (IfStep, WhileStep)
    control: Any = None
    # the lock words its kernels hold (state pointer expressions, in a fixed order): an update
    # with use_locking, in a program that may run concurrently with others (lock_updates)
    locks: list[str] = field(default_factory=list)


@dataclass
class ConstArray:
    name: str
    ctype: str
    count: int
    init: str


@dataclass(frozen=True)
class Slot:
    """A state pointer the caller passes: a variable's buffer, the lock word of a variable's
    updates with use_locking, a random op's stream state, or (programs lowered with
    `prepack_weights`) the state epoch, a counter every writer of the variables bumps, and a
    product's packed copy of its weights, private to the program (zeroed before its first
    call; `name` is the product's node)."""

    kind: str  # "var", "lock", "rng", "epoch" or "pack"
    name: str  # the variable's (also for "lock") or the random op's node name (in a loop body)
    dtype: _dt.DType
    shape: tuple[int, ...]
    seed: int = 0  # a random op's seeds (0, 0: a fresh stream per session)
    seed2: int = 0


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
    # the slot of the state epoch, which this program bumps before and after each call (it may
    # write variables that another program of its session keeps packed); None: it does not
    bumps_epoch: int | None = None


def lower_program(
    graph: Graph,
    name: str = "program",
    prefix: str = "tfc_",
    local_prefix: str = "",
    lock_updates: bool = False,
    prepack_weights: bool = False,
) -> LoweredProgram:
    """The kernels, state slots and constants of a scheduled, memory-planned program graph.
    `lock_updates`: the program may run concurrently with others on the same variables (a
    Session's), so the updates of ops with use_locking hold their variables' lock words.
    `prepack_weights`: the caller passes the state epoch, which all its programs that may
    write variables bump (this one's bumps are generated here) and every other writer bumps
    too: a program that writes no variable then keeps its products' weights (variables or
    constants) packed between calls, packing again when the epoch moved (tfc_gemm_packed.h)."""
    attrs = graph.graph_attrs
    storage = _storage(graph)
    fetch_slots = _fetch_slots(graph)
    read_first, written = _variable_effects(graph, attrs["schedule"], storage, fetch_slots)
    writes = bool(written) or any(
        get_opdef(graph.op_type(n)).subgraphs for n in attrs["schedule"]
    )  # a branch or loop body may write variables: such a program counts as a writer
    lowering = _Lowering(graph, local_prefix, lock_updates, prepack_weights and not writes)
    bumps_epoch = lowering.epoch_slot() if prepack_weights and writes else None
    top = Binding(
        arena=0,
        feed=lambda i, t: f"(const {t} *)inputs[{i}]",
        feed_base={},
        output=lambda j, t: f"({t} *)outputs[{j}]",
        output_base={j: f"outputs[{j}]" for j in range(len(attrs["fetches"]))},
    )
    steps = lowering.steps(graph, top)
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
        slots=lowering.slots,
        consts=lowering.constants.arrays,
        external_consts=lowering.constants.external,
        steps=steps,
        arena_bytes=attrs["arena_bytes"],
        vars_read_first=read_first,
        vars_written=written,
        local_prefix=local_prefix,
        bumps_epoch=bumps_epoch,
    )


@dataclass
class Binding:
    """Where a graph's feeds, fetches and arena are in the generated code: the program's
    (inputs[i], outputs[j], the arena), or, for a branch or loop body, buffers of the op that
    holds it. `feed(i, ctype)` and `output(j, ctype)` spell typed pointers; `feed_base` and
    `output_base` the untyped expression of each (a fetch copy names its target so, and a
    fetch that already is its target's buffer is not copied)."""

    arena: int  # where the graph's arena starts in the program's arena
    feed: Callable[[int, str], str]
    feed_base: dict[int, str]
    output: Callable[[int, str], str]
    output_base: dict[int, str]


def _storage(graph: Graph) -> dict:
    schedule = graph.graph_attrs["schedule"]
    return {(n, i): s for n in schedule for i, s in enumerate(graph.node(n)["storage"])}


def _fetch_slots(graph: Graph) -> dict[tuple[str, int], list[int]]:
    slots: dict[tuple[str, int], list[int]] = {}  # a merged tensor may fill several
    for j, t in enumerate(graph.graph_attrs["fetches"]):
        slots.setdefault(tuple(t), []).append(j)
    return slots


def _buffer_key(where: tuple, binding: Binding) -> tuple:
    """What identifies a buffer: its storage, or for a feed or fetch bound to a named buffer
    (a loop variable's, which the body may write over in place) that buffer."""
    kind, value = where
    if kind == "feed" and value in binding.feed_base:
        return ("buffer", binding.feed_base[value])
    if kind == "output" and value in binding.output_base:
        return ("buffer", binding.output_base[value])
    return where


class _Lowering:
    """The state one program's lowering shares across its nested graphs: the state slots
    (variables, random streams: those of loop bodies too), the constants, and names for the
    variables the loops' code declares."""

    def __init__(
        self, graph: Graph, local_prefix: str, lock_updates: bool = False, prepack: bool = False
    ) -> None:
        self.local_prefix = local_prefix
        self.lock_updates = lock_updates
        self.prepack = prepack  # products whose B is a variable keep it packed (read-only)
        self.slots: list[Slot] = []
        self.slot_index: dict[tuple[str, str], int] = {}
        self.constants = _Constants(local_prefix)
        self.loops = 0
        self._collect_slots(graph)

    def _collect_slots(self, graph: Graph) -> None:
        for n in graph.graph_attrs["schedule"]:
            node = graph.node(n)
            if node["op"] == "VariableV2":
                self.slot_index[("var", n)] = len(self.slots)
                self.slots.append(Slot("var", n, node["dtypes"][0], tuple(node["shapes"][0])))
            elif get_opdef(node["op"]).random:
                self.slot_index[("rng", n)] = len(self.slots)
                seeds = int(node["attrs"].get("seed", 0)), int(node["attrs"].get("seed2", 0))
                self.slots.append(Slot("rng", n, _dt.int64, (3,), *seeds))
            for key in get_opdef(node["op"]).subgraphs:
                self._collect_slots(node["attrs"][key])

    def lock_words(self, graph: Graph, n: str, storage: dict) -> list[str]:
        """The lock words node `n` holds: those of the variables an update with use_locking
        writes (a fused update's own op's flag), in the order of their names, so that no two
        programs deadlock; none unless the program locks updates."""
        node = graph.node(n)
        update = node["attrs"].get("update") if is_fusion(node["op"]) else None
        flags = update.attrs if update is not None else node["attrs"]
        if not self.lock_updates or not flags.get("use_locking"):
            return []
        inputs = graph.input_edges(n)
        written = set()
        for i in get_opdef(node["op"]).ref_inputs:
            kind, value = storage[root_tensor(storage, inputs[i])]
            if kind == "var":
                written.add(value)
        words = []
        for var in sorted(written):
            if ("lock", var) not in self.slot_index:
                self.slot_index[("lock", var)] = len(self.slots)
                self.slots.append(Slot("lock", var, _dt.int64, (8,)))  # one cache line
            words.append(f"state[{self.slot_index[('lock', var)]}]")
        return words

    def epoch_slot(self) -> int:
        """The index of the state epoch's slot, added on first use."""
        if ("epoch", "") not in self.slot_index:
            self.slot_index[("epoch", "")] = len(self.slots)
            self.slots.append(Slot("epoch", "state_epoch", _dt.uint64, (2,)))
        return self.slot_index[("epoch", "")]

    def packed_weights(self, graph: Graph, n: str, kernel: Kernel, storage: dict) -> Kernel:
        """`kernel` reading its product's B from a packed copy kept between calls (a slot of
        its own, sized for any target's panels) when B is a variable or a constant and the
        program packs weights; otherwise `kernel` as it is."""
        weights = _weights_input(kernel) if self.prepack else None
        if weights is None:
            return kernel
        index, (_, cols, k, _) = weights
        source = graph.input_edges(n)[index]
        if storage[root_tensor(storage, source)][0] not in ("var", "const"):
            return kernel  # a constant is packed once per program (its address never moves)
        dtype = graph.node(source[0])["dtypes"][source[1]]
        # products no target packs (tfc_gemm_packed.h): at most one 64-byte vector of columns
        if cols <= 64 // dtype.size:
            return kernel
        nbytes = PACK_HEADER_BYTES + k * -(-cols // PACK_COLS) * PACK_COLS * dtype.size
        self.slot_index[("pack", n)] = len(self.slots)
        self.slots.append(Slot("pack", n, _dt.uint8, (nbytes,)))
        self.epoch_slot()
        params = [*kernel.params, Param("pk", "uint8_t", False, "pack"), EPOCH_PARAM]
        return replace(kernel, params=params, spec=replace(kernel.spec, packed_b=True))

    def fresh(self, kind: str) -> str:
        """A new name for a C variable of the program's run function."""
        self.loops += 1
        return f"{self.local_prefix}{kind}{self.loops}"

    def steps(self, graph: Graph, binding: Binding) -> list[Step]:
        """The steps of a scheduled, memory-planned graph, its buffers where `binding` says."""
        storage = _storage(graph)
        fetch_slots = _fetch_slots(graph)

        def pointer(tensor: tuple[str, int], dtype: _dt.DType) -> str:
            kind, value = storage[root_tensor(storage, tensor)]
            t = dtype.c_type
            if kind == "arena":
                return f"({t} *)(arena + {binding.arena + value})"
            if kind == "output":
                return binding.output(value, t)
            if kind == "feed":
                return binding.feed(value, t)
            if kind == "var":
                return f"({t} *)state[{self.slot_index[('var', value)]}]"
            return self.constants.pointer(graph, value)

        steps = []
        for n in graph.graph_attrs["schedule"]:
            node = graph.node(n)
            inputs = graph.input_edges(n)
            opdef = get_opdef(node["op"])
            control = None
            bound = []
            if opdef.subgraphs:
                control = lower_control(self, graph, n, pointer, binding)
            else:
                bound = self._kernels(graph, n, pointer, storage, binding)
            copies = []
            for out, dtype in enumerate(node["dtypes"]):
                nbytes = num_elements(node["shapes"][out]) * dtype.size
                root = storage[root_tensor(storage, (n, out))]
                for j in fetch_slots.get((n, out), []):
                    if not nbytes or storage[(n, out)] == ("output", j):
                        continue
                    target = binding.output_base[j]
                    if root[0] == "feed" and binding.feed_base.get(root[1]) == target:
                        continue  # a loop variable the body updated in its own buffer
                    copies.append(FetchCopy(j, pointer((n, out), dtype), nbytes, target))
            comment = _comment(graph, n, inputs)
            locks = self.lock_words(graph, n, storage)
            steps.append(Step(n, node["op"], comment, bound, copies, control, locks))
        return steps

    def _kernels(self, graph, n, pointer, storage, binding) -> list[BoundKernel]:
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
        kernels = [self.packed_weights(graph, n, kernel, storage) for kernel in kernels]
        bound = []
        for kernel in kernels:
            args, buffers = [], []
            for p in kernel.params:
                if p.buf == "state":
                    expr = f"(uint64_t *)state[{self.slot_index[('rng', n)]}]"
                    buffers.append(("rng", n))
                elif p.buf in ("pack", "epoch"):
                    key = (p.buf, n if p.buf == "pack" else "")
                    expr = f"({p.ctype} *)state[{self.slot_index[key]}]"
                    buffers.append(key)
                elif p.buf == "scratch":
                    if not isinstance(node.get("scratch"), int):
                        raise ValueError(f"kernel of '{n}' uses scratch memory the plan lacks")
                    expr = f"({p.ctype} *)(arena + {binding.arena + node['scratch']})"
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
                    buffers.append(_buffer_key(storage[root_tensor(storage, tensor)], binding))
                args.append(f"{expr} + {p.offset}" if p.offset else expr)
            written = {b for b, p in zip(buffers, kernel.params) if not p.const}
            aliased = any(buffers.count(b) > 1 for b in written)
            bound.append(BoundKernel(kernel, args, restrict=not aliased))
        return bound


EPOCH_PARAM = Param("ep", "uint64_t", True, "epoch")


def _weights_input(kernel: Kernel) -> tuple[int, tuple[int, int, int, int]] | None:
    """(the input of `kernel`'s node that its one GEMM call reads as B, (M, N, K, B's column
    stride)) where the call can read B pre-packed (tfc_gemm_<t>_ex_packed: float operands as
    they are, one product); else None."""
    spec = kernel.spec
    if kernel.template == "matmul":
        if spec.dtype not in (_dt.float32, _dt.float64) or spec.precision is not None:
            return None
        if num_elements(spec.batch) != 1:
            return None
        return 1, (spec.m, spec.n, spec.k, spec.sbn)
    if kernel.template == "fused":
        return dense_head_weights(spec)
    return None


class _Constants:
    """Constants as the kernels reference them: small ones become static arrays in the source,
    large ones are passed in by the caller. Only constants something reads are emitted."""

    def __init__(self, local_prefix: str = "") -> None:
        self.local_prefix = local_prefix
        self.arrays: list[ConstArray] = []
        self.external: list[np.ndarray] = []
        self._pointers: dict[tuple[int, str], str] = {}

    def pointer(self, graph: Graph, node_name: str) -> str:
        key = (id(graph), node_name)  # a loop body's constant may share a name with another's
        if key not in self._pointers:
            node = graph.node(node_name)
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
            self._pointers[key] = ptr
        return self._pointers[key]


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


# -- If and While: the steps of their nested graphs, and the code around them -----------------
@dataclass
class Carried:
    """A value an If or While carries: copied from `source` (the op's input) into `buffer` (the
    op's output) before its nested graphs run; they see it through the C variable `current`.
    A double-buffered loop variable's body writes its next value to `second` (a C variable
    starting at `second_buffer`) and the two swap after each iteration."""

    nbytes: int
    source: str
    buffer: str
    current: str
    mode: str  # "alias", "direct", "double" (tfc.passes.memory.carried_modes); If: "alias"
    second: str | None = None
    second_buffer: str | None = None


@dataclass
class WhileStep:
    """A While as the code around its nested graphs' steps (tfc/codegen/control_flow.py)."""

    counter: str  # the C variable counting iterations
    carried: list[Carried]
    # accumulators (pointer, bytes of a row, rows): the rows no iteration wrote are cleared
    zeroed: list[tuple[str, int, int]]
    limit: str | None  # pointer to maximum_iterations (int32), when given
    bound: int | None  # the static bound, enforced when values are accumulated
    cond: list[Step]
    predicate: str  # pointer to the condition's result (bool)
    body: list[Step]
    count: str  # pointer to the iteration count output (int32)


@dataclass
class IfStep:
    predicate: str  # pointer to the If's predicate (bool)
    carried: list[Carried]
    then: list[Step]
    other: list[Step]


def _nbytes(graph: Graph, tensor: tuple[str, int]) -> int:
    node = graph.node(tensor[0])
    return num_elements(node["shapes"][tensor[1]]) * node["dtypes"][tensor[1]].size


def lower_control(
    low: _Lowering,
    graph: Graph,
    name: str,
    pointer: Callable[[tuple[str, int], _dt.DType], str],
    binding: Binding,
) -> WhileStep | IfStep:
    """The step of If or While `name`: its nested graphs lowered into its scratch memory, its
    feeds and fetches bound to its inputs, outputs and carried buffers."""
    node = graph.node(name)
    attrs = node["attrs"]
    inputs = graph.input_edges(name)
    align = int(graph.graph_attrs.get("arena_align", 64))
    ins = [pointer(t, graph.node(t[0])["dtypes"][t[1]]) for t in inputs]
    outs = [pointer((name, j), d) for j, d in enumerate(node["dtypes"])]
    scratch = binding.arena + int(node.get("scratch") or 0)
    v = low.fresh("w" if node["op"] == "While" else "c")

    def carried_value(j: int, source: str, out: int, mode: str, second: int | None) -> Carried:
        return Carried(
            nbytes=_nbytes(graph, (name, out)), source=source, buffer=outs[out],
            current=f"{v}_v{j}", mode=mode,
            second=None if second is None else f"{v}_n{j}",
            second_buffer=None if second is None else f"(char *)(arena + {scratch + second})",
        )  # fmt: skip

    def binding_for(
        carried: list[Carried], captures: dict[int, str], arena: int, outputs: dict[int, str]
    ) -> Binding:
        feed_base = {k: c.current for k, c in enumerate(carried)}

        def feed(i: int, t: str) -> str:
            if i in feed_base:
                return f"({t} *){feed_base[i]}"
            return f"(const {t} *)({captures[i]})"

        return Binding(
            arena=arena,
            feed=feed,
            feed_base=feed_base,
            output=lambda j, t: f"({t} *)({outputs[j]})",
            output_base=outputs,
        )

    if node["op"] == "While":
        layout = while_layout(attrs, node["dtypes"], node["shapes"], align)
        n_lv = attrs["loop_vars"]
        modes = attrs["body"].graph_attrs["carried"]
        carried = [
            carried_value(j, ins[j], j, modes[j], layout.next_buffers.get(j)) for j in range(n_lv)
        ]
        captures = {i: ins[i] for i in range(n_lv, len(inputs))}
        arena = scratch + layout.arena
        predicate = f"(arena + {scratch + layout.predicate})"
        cond = low.steps(attrs["cond"], binding_for(carried, captures, arena, {0: predicate}))
        counter = f"{v}_i"
        body_outputs = {j: c.second or c.current for j, c in enumerate(carried)}
        zeroed = []
        for a, out in enumerate(range(n_lv + 1, len(outs))):
            rows = node["shapes"][out][0]
            row = _nbytes(graph, (name, out)) // max(rows, 1)
            body_outputs[n_lv + a] = f"((char *){outs[out]} + {counter} * {row})"
            zeroed.append((outs[out], row, rows))
        body = low.steps(attrs["body"], binding_for(carried, captures, arena, body_outputs))
        return WhileStep(
            counter=counter, carried=carried, zeroed=zeroed,
            limit=ins[-1] if attrs["maximum_iterations"] else None,
            bound=attrs.get("bound") if zeroed else None,
            cond=cond, predicate=predicate, body=body, count=outs[n_lv],
        )  # fmt: skip
    layout = if_layout(attrs, align)
    results, n_carried = attrs["results"], attrs["carried"]
    carried = [carried_value(k, ins[1 + k], results + k, "alias", None) for k in range(n_carried)]
    captures = {i: ins[1 + i] for i in range(n_carried, len(inputs) - 1)}
    outputs = {j: outs[j] for j in range(len(outs))}
    outputs.update({results + k: c.current for k, c in enumerate(carried)})
    arena = scratch + layout.arena
    branches = [
        low.steps(attrs[key], binding_for(carried, captures, arena, outputs))
        for key in ("then_branch", "else_branch")
    ]
    return IfStep(predicate=ins[0], carried=carried, then=branches[0], other=branches[1])
