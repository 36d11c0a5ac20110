"""Graph invariants, checked after each pass when the compiler runs with verify=True (tests)."""

from __future__ import annotations

import networkx as nx

from tfc.ir.graph import CONTROL, Graph
from tfc.ir.tensor_shape import is_fully_defined
from tfc.ops.registry import REGISTRY, OpContext, infer_outputs


class GraphInvariantError(AssertionError):
    pass


def verify_graph(graph: Graph, after: str = "") -> None:
    """Raise GraphInvariantError naming the node and the broken rule."""
    where = f" after pass '{after}'" if after else ""

    def fail(message: str) -> None:
        raise GraphInvariantError(message + where)

    if not nx.is_directed_acyclic_graph(graph.nx):
        fail(f"graph has a cycle: {nx.find_cycle(graph.nx)}")
    attrs = graph.graph_attrs
    concrete = "schedule" in attrs or attrs.get("specialized", False)
    for name, node in graph.nx.nodes(data=True):
        if node["op"] not in REGISTRY:
            fail(f"node '{name}' has unregistered op type '{node['op']}'")
        if len(node["dtypes"]) != len(node["shapes"]):
            fail(f"node '{name}' has {len(node['dtypes'])} dtypes but {len(node['shapes'])} shapes")
        keys = sorted(k for edges in graph.nx.pred[name].values() for k in edges if k != CONTROL)
        if keys != list(range(len(keys))):
            fail(f"node '{name}' has input indices {keys}, not 0..n-1 (one producer per input)")
        for src, out in graph.input_edges(name):
            if out >= len(graph.node(src)["dtypes"]):
                fail(f"node '{name}' reads output {out} of '{src}', which has fewer outputs")
        if attrs.get("placed") and not _is_full_device(node["device"]):
            fail(f"node '{name}' has no full device name after placement: '{node['device']}'")
        if concrete and not all(is_fully_defined(s) for s in node["shapes"]):
            fail(f"node '{name}' has a shape that is not fully defined: {node['shapes']}")
        if concrete:
            why = _disagrees_with_shape_rule(graph, name)
            if why is not None:
                fail(f"node '{name}' ({node['op']}) {why}")
    for src, out in attrs.get("fetches", []):
        if src not in graph.nx:
            fail(f"fetch '{src}:{out}' is not in the graph")
    if "schedule" in attrs:
        schedule = attrs["schedule"]
        if sorted(schedule) != sorted(graph.nx.nodes):
            fail("the schedule is not a permutation of the nodes")
        position = {n: i for i, n in enumerate(schedule)}
        for u, v in graph.nx.edges():
            if position[u] >= position[v]:
                fail(f"the schedule runs '{v}' before its input '{u}'")
    if "arena_bytes" in attrs:
        verify_memory_plan(graph, fail)
    for name, node in graph.nx.nodes(data=True):
        for key in REGISTRY[node["op"]].subgraphs:
            inner = node["attrs"][key]
            _verify_interface(graph, name, key, inner, fail)
            verify_graph(inner, after=f"{after}, in {key} of '{name}'".lstrip(", "))


def _verify_interface(graph: Graph, name: str, key: str, inner: Graph, fail) -> None:
    """A nested graph's feeds stand for inputs of its op, of their dtypes; its fetches are in
    it (a While's cond fetches one value, its body and an If's branches one per output)."""
    node = graph.node(name)
    offset = 1 if node["op"] == "If" else 0
    inputs = graph.input_edges(name)
    for n in inner.nx.nodes:
        data = inner.node(n)
        if data["op"] != "Feed":
            continue
        i = data["attrs"]["index"] + offset
        if not offset <= i < len(inputs):
            fail(f"feed '{n}' of {key} of '{name}' stands for input {i}, which it has not")
        src, out = inputs[i]
        if graph.node(src)["dtypes"][out] != data["dtypes"][0]:
            fail(f"feed '{n}' of {key} of '{name}' has another dtype than input {i}")
    fetches = inner.graph_attrs["fetches"]
    for f in fetches:
        if f[0] not in inner.nx:
            fail(f"{key} of '{name}' fetches '{f[0]}', which it has not")
    # a While's outputs: its loop variables, the iteration count, its accumulators
    expected = 1 if key == "cond" else len(node["dtypes"]) - (1 if key == "body" else 0)
    if len(fetches) != expected:
        fail(f"{key} of '{name}' fetches {len(fetches)} values, its op expects {expected}")


def verify_memory_plan(graph: Graph, fail) -> None:
    """Every arena buffer is aligned and inside the arena, and no two arena tensors alive at
    one step overlap, except an in-place pair: an output written over an input of the same
    node, of the same bytes, shape and element size, that the op declares it may overwrite
    and that nothing reads after that node. Lifetimes are recomputed from the schedule, not
    taken from the planner."""
    from tfc.passes.memory import ARENA_ALIGN, SCRATCH, scratch_bytes, tensor_nbytes

    attrs = graph.graph_attrs
    step = {n: i for i, n in enumerate(attrs["schedule"])}
    storage = {}
    for n in step:
        outputs = graph.node(n).get("storage")
        if outputs is None or len(outputs) != len(graph.node(n)["dtypes"]):
            fail(f"node '{n}' has no storage for each of its outputs")
        storage.update(((n, i), s) for i, s in enumerate(outputs))
        if scratch_bytes(graph, n) > 0:
            if not isinstance(graph.node(n).get("scratch"), int):
                fail(f"node '{n}' needs scratch memory and has none planned")
            storage[(n, SCRATCH)] = ("arena", graph.node(n)["scratch"])

    def root(tensor):
        while storage[tensor][0] == "alias":
            tensor = tuple(storage[tensor][1])
        return tensor

    life = {t: [step[t[0]], step[t[0]]] for t, s in storage.items() if s[0] == "arena"}
    for n in attrs["schedule"]:
        for src in graph.input_edges(n):
            r = root(src)
            if r in life:
                life[r][1] = max(life[r][1], step[n])

    buffers = []
    align = attrs.get("arena_align", ARENA_ALIGN)
    for tensor, (first, last) in life.items():
        offset = storage[tensor][1]
        size = tensor_nbytes(graph, tensor)
        if not isinstance(offset, int) or offset % align:
            fail(f"tensor {tensor} at offset {offset} is not {align}-byte aligned")
        if offset + size > attrs["arena_bytes"]:
            fail(f"tensor {tensor} ends at {offset + size}, past the arena")
        if size:
            buffers.append((first, last, offset, offset + size, tensor))

    def inplace_error(out, src) -> str | None:
        """Why `out` may not share the bytes of `src` (None: it may): the in-place rule,
        checked from scratch."""
        n = out[0]
        readings = [i for i, t in enumerate(graph.input_edges(n)) if root(t) == src]
        if out[1] != 0 or not readings:
            return "not an output written over an input of its node"
        if life[src][1] != step[n]:
            return f"'{n}' writes over {src}, which is read later (step {life[src][1]})"
        if storage[out] != storage[src] or tensor_nbytes(graph, out) != tensor_nbytes(graph, src):
            return f"{out} and {src} are not the same bytes"
        opdef = REGISTRY[graph.op_type(n)]
        ctx = OpContext.for_node(graph, n)
        declared = set(opdef.inplace(ctx)) if opdef.inplace is not None else set()
        for i in readings:
            if ctx.in_shapes[i] != ctx.out_shapes[0]:
                return f"input {i} of '{n}' has shape {ctx.in_shapes[i]}, not the output's"
            if ctx.in_dtypes[i].size != ctx.out_dtypes[0].size:
                return f"input {i} of '{n}' has another element size than the output"
            if i not in declared:
                return f"{opdef.type} does not let its output overwrite input {i}"
        return None

    buffers.sort()
    for i, (_, l1, o1, e1, t1) in enumerate(buffers):
        for f2, _, o2, e2, t2 in buffers[i + 1 :]:
            if f2 > l1:
                break  # sorted by first step: no later buffer is alive with this one
            if o1 < e2 and o2 < e1:
                # t2 starts no earlier than t1: only t2 can be written over t1
                why = inplace_error(t2, t1)
                if why is not None:
                    fail(
                        f"tensors {t1} and {t2} are alive together and overlap in the arena: {why}"
                    )


def _disagrees_with_shape_rule(graph: Graph, name: str) -> str | None:
    """Why the node's outputs are not what its op's shape rule gives on its inputs as they are
    now (None when they are): a pass that rewired an input to a tensor of another shape or
    dtype, or recorded outputs its op does not make. Unknown dims of the rule match any."""
    node = graph.node(name)
    try:
        inferred = infer_outputs(graph, name)
    except (ValueError, TypeError, NotImplementedError) as e:
        return f"fails its shape rule on its inputs: {e}"
    if len(inferred) != len(node["dtypes"]):
        return f"has {len(node['dtypes'])} outputs; its shape rule gives {len(inferred)}"
    for i, ((dtype, shape), have_dtype, have) in enumerate(
        zip(inferred, node["dtypes"], node["shapes"])
    ):
        if dtype != have_dtype:
            return f"output {i} is {have_dtype.name}; its shape rule gives {dtype.name}"
        if shape is not None and not _compatible(shape, have):
            return f"output {i} has shape {list(have)}; its shape rule gives {list(shape)}"
    return None


def _compatible(rule, have) -> bool:
    return len(rule) == len(have) and all(r is None or r == h for r, h in zip(rule, have))


def _is_full_device(device: str) -> bool:
    from tfc.ir.device import DeviceSpec

    spec = DeviceSpec.from_string(device)
    return None not in (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index)
