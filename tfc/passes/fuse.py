"""fuse_elementwise: chains and trees of element-wise ops become one Fusion node, one kernel.

Guarantees:
- Each Fusion node replaces a group of ops that one loop nest computes (see
  tfc.ops.fusion.plan_fusion): element-wise ops with NumPy broadcasting (Add, Relu,
  ReluGrad, Cast, Select, BiasAdd, broadcasting Tiles, fills...), free views between them
  (Identity, Reshape, ExpandDims, Squeeze that only add or drop size-1 dims), reductions over
  the same dims at the end of chains (Sum, Mean, Max..., the gradient pass's SumToShape) and
  element-wise ops on their results (run in a loop over the kept dims after the nest), and at
  most one rank-2 MatMul whose output the group post-processes row by row (bias-add +
  activation, relu-grad + bias-grad). A group replaces at least two kernels.
- Stateful and random ops never join a group, except an update op (an optimizer's Apply*, an
  Assign/AssignAdd/AssignSub) whose gradient (value) a group computes: it becomes a Fused<Op>
  node running the update in the same kernel, as the update op would. Never where something
  that reads the variable must run before the update but depends on the group, nor where the
  kernel would read the variable anywhere but at the element it is updating.
- Ops whose kernel can fail (integer division by zero) keep their own kernel, which names them.
- Groups are convex in the scheduler's order (data and control edges, and each read of a
  variable before the writes it does not depend on): contracting every group leaves it
  acyclic, so no reader sees an update it did not see before.
- A member is an output of its Fusion node when something outside reads it (a data consumer,
  a fetch): consumers and graph_attrs["fetches"] are rewired to that output. Reductions are
  always outputs (their buffer is their accumulator); a MatMul whose value nothing outside
  reads is an output holding one row (its rows need a buffer).
- A view that something outside reads stays in the graph, reading the Fusion's output.
- Control edges into and out of members become control edges of the Fusion node;
  graph_attrs["targets"] naming a member name the Fusion node instead.
- Numerically the same as unfused: the same operations, in the same order, in the same
  precision, per element and per reduction (tfc.codegen.fusion).
"""

from __future__ import annotations

import networkx as nx

from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import num_elements
from tfc.ops.fusion import (
    UPDATES,
    VIEW_OPS,
    FusedUpdate,
    Member,
    Unfusable,
    accumulate_input,
    fused_update_type,
    loads_of,
    member_kind,
    member_outputs,
    plan_fusion,
    update_grad_position,
)
from tfc.ops.registry import get_opdef
from tfc.passes.nested import map_subgraphs
from tfc.passes.schedule import dependency_graph

# the most ops one fusion group takes: each merge re-plans the whole group, so an unbounded
# group makes the pass quadratic in its size (a converted network with thousands of element-wise
# ops in one chain), and a kernel that large gains nothing more from fusing
MAX_GROUP_OPS = 128


def fuse_elementwise(
    graph: Graph, matmul_groups: bool = True, row_scratch: bool = True, accumulate: bool = True
) -> Graph:
    """`matmul_groups` False: no MatMul joins a group. `row_scratch` False: no group whose
    product only a scratch block of rows would hold (a target that computes the whole product
    before the loop, into an output: CUDA). `accumulate` False: a MatMul + Add group never adds
    its product into its addend's buffer in place (a target whose GEMM cannot accumulate:
    CUDA). Nested graphs are fused within themselves with the same options: a group never spans
    a loop or branch boundary (If and While are no members)."""
    map_subgraphs(
        graph,
        lambda inner, node, key: fuse_elementwise(inner, matmul_groups, row_scratch, accumulate),
    )
    fuser = Fuser(graph, matmul_groups, row_scratch, accumulate)
    for name in fuser.order:
        fuser.place(name)
    for name in fuser.order:
        if graph.op_type(name) in UPDATES:
            fuser.fold_update(name)
    groups = sorted(fuser.groups(), key=lambda g: min(fuser.topo[n] for n in g))
    for group in groups:
        _rewrite(graph, fuser, group)
    return graph


class Fuser:
    """Clusters of nodes (each node starts alone); fusable clusters grow by merging."""

    def __init__(
        self,
        graph: Graph,
        matmul_groups: bool = True,
        row_scratch: bool = True,
        accumulate: bool = True,
    ) -> None:
        self.graph = graph
        self.row_scratch = row_scratch
        self.accumulate = accumulate
        self.order = list(
            nx.lexicographical_topological_sort(graph.nx, key=lambda n: graph.node(n)["id"])
        )
        self.topo = {n: i for i, n in enumerate(self.order)}
        self.fetched = {tuple(t) for t in graph.graph_attrs.get("fetches", [])}
        self.kinds = {
            n: k for n in self.order
            if (k := _kind(graph, n)) is not None and (matmul_groups or k != "matmul")
        }  # fmt: skip
        # successors in the order the scheduler must respect: data and control edges, and the
        # variable rules (a read before a write it does not depend on; writes of one variable in
        # creation order); a group that would put a reader after its writer is a cycle
        order = dependency_graph(graph)
        self.succ = {n: set(order.successors(n)) for n in order.nodes}
        # a topological rank in the scheduler's order, and the highest rank of a node in a
        # cluster of more than one: a path from a node ranked above it meets only single-node
        # clusters of higher ranks, so the cycle check stops there
        self.rank = {
            n: i
            for i, n in enumerate(
                nx.lexicographical_topological_sort(order, key=lambda n: graph.node(n)["id"])
            )
        }
        self.merged_rank = -1
        self.cluster = {n: i for i, n in enumerate(self.order)}
        self.nodes: dict[int, set[str]] = {i: {n} for i, n in enumerate(self.order)}
        self.fusable: set[int] = set()  # clusters that are fusion groups
        # cluster -> (Apply node, the views from its gradient back to the member, that member)
        self.update: dict[int, tuple[str, list[str], str]] = {}

    def groups(self) -> list[set[str]]:
        return [self.nodes[c] for c in self.fusable if _saves_kernels(self, c)]

    def place(self, name: str) -> None:
        """Merge `name` with the groups of its producers that it can join (greedily, in input
        order); a node that joins none starts its own group (a view joins only its input's)."""
        kind = self.kinds.get(name)
        if kind is None:
            return
        merged = {self.cluster[name]}
        if kind != "matmul":  # a GEMM reads whole inputs: it can only start a group
            for src, _ in self.graph.input_edges(name):
                c = self.cluster[src]
                if c in self.fusable and c not in merged and self._fits(merged | {c}):
                    if self._valid(merged | {c}):
                        merged.add(c)
        if kind == "view" and len(merged) == 1:
            return
        self._merge(merged)

    def fold_update(self, apply: str) -> None:
        """Join an update (an optimizer's Apply, an assignment) to the group computing its
        gradient (assigned value), when safe."""
        graph = self.graph
        inputs = graph.input_edges(apply)
        position = update_grad_position(graph.op_type(apply))
        source, views = inputs[position][0], []
        while self.cluster[source] not in self.fusable and graph.op_type(source) in VIEW_OPS:
            views.append(source)
            source = graph.input_edges(source)[0][0]
        c = self.cluster[source]
        if c not in self.fusable or c in self.update:
            return
        value, out = graph.node(inputs[position][0]), graph.node(apply)
        if (value["dtypes"][0], tuple(value["shapes"][0])) != (out["dtypes"][0], out["shapes"][0]):
            return  # an assignment that changes the variable's shape
        refs, ref_inputs = self._refs(apply), get_opdef(graph.op_type(apply)).ref_inputs
        if any(
            i not in ref_inputs and i != position and _buffer_root(graph, t) in refs
            for i, t in enumerate(inputs)
        ):
            return  # a hyper-parameter that is a variable this update writes
        if (apply, 0) in self.fetched or graph.consumers(apply, 0):
            return  # its output (the updated variable) is read: keep the op that makes it
        clusters = {c, self.cluster[apply]} | {self.cluster[v] for v in views}
        if self._valid(clusters, update=(apply, views, source)):
            self._merge(clusters)
            self.update[self.cluster[source]] = (apply, views, source)

    def _refs(self, apply: str) -> set[tuple[str, int]]:
        inputs = self.graph.input_edges(apply)
        return {
            _buffer_root(self.graph, inputs[i])
            for i in get_opdef(self.graph.op_type(apply)).ref_inputs
        }

    # -- checks --------------------------------------------------------------------------------
    def _fits(self, clusters: set[int]) -> bool:
        return sum(len(self.nodes[c]) for c in clusters) <= MAX_GROUP_OPS

    def _valid(self, clusters: set[int], update: tuple | None = None) -> bool:
        group = set().union(*(self.nodes[c] for c in clusters))
        if update is not None:
            group -= {update[0], *update[1]}
        if len({self.graph.node(n)["device"] for n in group}) > 1:
            return False
        for n in group:
            if self.kinds[n] == "view" and self.graph.input_edges(n)[0][0] not in group:
                return False
        if not self._acyclic(clusters):
            return False
        try:
            spec = build_spec(self.graph, group, self, update)
            if spec.row_scratch is not None and not self.row_scratch:
                return False
            grad = spec.update.grad if spec.update is not None else None
            plan = plan_fusion(spec.members, spec.outputs, spec.in_shapes, grad)
        except Unfusable:
            return False
        if update is not None:
            refs = self._refs(update[0])
            chain = list(enumerate(spec.inputs))[spec.update.inputs :]
            written = {k for k, t in chain if _buffer_root(self.graph, t) in refs}
            return not written or _reads_before_writes(spec, plan, written)
        return True

    def _acyclic(self, clusters: set[int]) -> bool:
        """Whether merging `clusters` keeps the graph of clusters acyclic: no path leaves them
        and comes back. Nodes ranked above every member of `clusters` and of any cluster of
        more than one are not followed: all that is reachable from them is single nodes of
        still higher ranks (without this bound, each check of a long chain walked the whole
        rest of the graph)."""
        succ, rank = self.succ.__getitem__, self.rank
        bound = max(self.merged_rank, max(rank[n] for c in clusters for n in self.nodes[c]))
        stack = [
            self.cluster[w]
            for c in clusters
            for n in self.nodes[c]
            for w in succ(n)
            if rank[w] <= bound
        ]
        stack = [k for k in stack if k not in clusters]
        seen: set[int] = set()
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            for n in self.nodes[k]:
                for w in succ(n):
                    if rank[w] > bound:
                        continue
                    if self.cluster[w] in clusters:
                        return False
                    stack.append(self.cluster[w])
        return True

    def _merge(self, clusters: set[int]) -> None:
        target = min(clusters)
        for c in clusters - {target}:
            for n in self.nodes.pop(c):
                self.cluster[n] = target
                self.nodes[target].add(n)
            self.fusable.discard(c)
        self.fusable.add(target)
        if len(self.nodes[target]) > 1:
            self.merged_rank = max(self.merged_rank, *(self.rank[n] for n in self.nodes[target]))


def _reads_before_writes(spec: Spec, plan, written: set[int]) -> bool:
    """Whether the kernel reads the inputs in `written` (a variable its update writes) only
    before writing them: in the loop before the update's, or at the element it updates."""
    grad = spec.update.grad
    phase = 1 if any(m.kind == "reduce" for m in spec.members) else 0
    for m in spec.members:
        if m.kind == "matmul" and any(a[1] in written for a in m.args):
            return False  # a GEMM row reads the variable's other rows
    return all(
        k not in written or dims == plan.out_dims[grad]
        for k, dims in loads_of(spec.members, plan, phase)
    )


def _saves_kernels(fuser: Fuser, c: int) -> bool:
    """A group worth a Fusion node: it replaces at least two kernels."""
    update = fuser.update.get(c)
    skipped = {update[0], *update[1]} if update else set()
    kernels = [n for n in fuser.nodes[c] if n not in skipped and fuser.kinds[n] != "view"]
    return len(kernels) + (1 if update else 0) >= 2


def _kind(graph: Graph, name: str) -> str | None:
    node = graph.node(name)
    if len(node["dtypes"]) != 1 or not _concrete(node["shapes"][0]):
        return None
    inputs = graph.input_edges(name)
    in_shapes = [graph.node(s)["shapes"][i] for s, i in inputs]
    consts = {}
    for i in get_opdef(node["op"]).const_inputs:
        i = i + len(inputs) if i < 0 else i
        if 0 <= i < len(inputs):
            if graph.op_type(inputs[i][0]) != "Const":
                return None
            consts[i] = graph.node(inputs[i][0])["attrs"]["value"]
    # values read element by element must be non-empty (compile-time operands may be: a
    # scalar's Fill dims are [])
    if not all(_concrete(s) or i in consts for i, s in enumerate(in_shapes)):
        return None
    in_dtypes = [graph.node(s)["dtypes"][i] for s, i in inputs]
    in_shapes = [tuple(s) for s in in_shapes]
    return member_kind(node["op"], node["attrs"], in_dtypes, in_shapes, node["shapes"][0], consts)


def _views_needed(graph: Graph, fuser: Fuser, views: list[str], group: set[str]) -> bool:
    """Whether anything but the fused update reads the views between it and its gradient."""
    return any(
        (v, 0) in fuser.fetched or any(c not in group for c, _ in graph.consumers(v, 0))
        for v in views
    )


def _concrete(shape) -> bool:
    return shape is not None and None not in shape and num_elements(shape) > 0


def _buffer_root(graph: Graph, tensor: tuple[str, int]) -> tuple[str, int]:
    """The tensor owning `tensor`'s buffer: aliasing ops (Identity, Reshape...) followed back."""
    while True:
        alias = get_opdef(graph.op_type(tensor[0])).alias
        if alias is None or tensor[1] != 0:
            return tuple(tensor)
        tensor = graph.input_edges(tensor[0])[alias]


# -- what a group becomes ------------------------------------------------------------------------
class Spec:
    """A group as a Fusion node: members, inputs (tensors), exported members, kept views."""

    def __init__(self) -> None:
        self.members: list[Member] = []
        self.names: list[str] = []
        self.inputs: list[tuple[str, int]] = []
        self.in_shapes: list[tuple] = []
        self.outputs: list[int] = []
        self.kept: list[str] = []  # views that stay in the graph, reading a Fusion output
        self.update: FusedUpdate | None = None
        self.row_scratch: int | None = None  # a MatMul exported only to hold its rows


def build_spec(graph: Graph, group: set[str], fuser: Fuser, update: tuple | None) -> Spec:
    spec = Spec()
    spec.names = sorted(group, key=fuser.topo.get)
    index = {n: j for j, n in enumerate(spec.names)}
    apply, views, source = update if update is not None else (None, [], None)
    if apply is not None:
        position = update_grad_position(graph.op_type(apply))
        spec.inputs = [t for i, t in enumerate(graph.input_edges(apply)) if i != position]
    own = len(spec.inputs)
    in_index: dict[tuple[str, int], int] = {}
    for n in spec.names:
        node = graph.node(n)
        inputs = graph.input_edges(n)
        consts = {i + len(inputs) if i < 0 else i for i in get_opdef(node["op"]).const_inputs}
        args = []
        for p, (src, out) in enumerate(inputs):
            if src in index:
                args.append(("m", index[src]))
            elif p in consts:
                args.append(("const", src, graph.node(src)["attrs"]["value"]))
            else:
                if (src, out) not in in_index:
                    in_index[(src, out)] = len(spec.inputs)
                    spec.inputs.append((src, out))
                args.append(("in", in_index[(src, out)]))
        member = Member(
            n, node["op"], fuser.kinds[n], node["attrs"], tuple(args), node["dtypes"][0],
            tuple(node["shapes"][0]),
        )  # fmt: skip
        spec.members.append(member)
    spec.in_shapes = [tuple(graph.node(s)["shapes"][i]) for s, i in spec.inputs]
    outside = set(group) | ({apply, *views} if apply else set())
    wanted = {
        n for n in spec.names
        if (n, 0) in fuser.fetched or any(c not in outside for c, _ in graph.consumers(n, 0))
    }  # fmt: skip
    if _views_needed(graph, fuser, views, outside):
        wanted.add(source)  # the views stay, reading the Fusion's output of `source`
    exported = set()
    for n in reversed(spec.names):
        if n in wanted or fuser.kinds[n] == "reduce":
            if fuser.kinds[n] == "view":
                spec.kept.append(n)
                wanted.add(graph.input_edges(n)[0][0])
            else:
                exported.add(n)
    matmuls = [m for m in spec.members if m.kind == "matmul"]
    # a product that something outside reads is exported whole; one that nothing reads still
    # needs a buffer for its rows (one row, reused) unless a map of its dtype holds them
    if (
        matmuls
        and matmuls[0].name not in exported
        and not any(
            m.kind == "map" and m.dtype == matmuls[0].dtype and m.name in exported
            for m in spec.members
        )
    ):
        exported.add(matmuls[0].name)
        spec.row_scratch = index[matmuls[0].name]
    spec.outputs = [j for j, n in enumerate(spec.names) if n in exported]
    if apply is not None:
        attrs = dict(graph.node(apply)["attrs"])
        spec.update = FusedUpdate(apply, graph.op_type(apply), attrs, index[source], own)
    return spec


def _rewrite(graph: Graph, fuser: Fuser, group: set[str]) -> None:
    c = fuser.cluster[next(iter(group))]
    update = fuser.update.get(c)
    apply, views, _ = update if update is not None else (None, [], None)
    members = set(group) - ({apply, *views} if apply else set())
    spec = build_spec(graph, members, fuser, update)
    if not spec.outputs and spec.update is None:
        return  # nothing outside reads its values (only control edges): leave it as it is
    last = next(n for n in reversed(spec.names) if fuser.kinds[n] != "view")
    name = graph.unique_name(f"{apply or last}/fusion")
    out_of = {spec.names[j]: k for k, j in enumerate(spec.outputs)}
    attrs: dict = {"members": tuple(spec.members), "outputs": tuple(spec.outputs)}
    if spec.row_scratch is not None:
        attrs["row_scratch"] = spec.row_scratch
    in_dtypes = [graph.node(s)["dtypes"][i] for s, i in spec.inputs]
    added = accumulate_input(spec.members, spec.outputs, spec.in_shapes, in_dtypes, spec.update)
    if fuser.accumulate and added is not None:
        attrs["accumulate"] = added
    dtypes = [dtype for dtype, _ in member_outputs(attrs)]
    shapes = [shape for _, shape in member_outputs(attrs)]
    if apply is not None:
        attrs["update"] = spec.update
    # a kept view stays; an Apply's views stay only when something else reads them
    removed = set(members) - set(spec.kept)
    if apply is not None:
        removed.add(apply)
        if not _views_needed(graph, fuser, views, group):
            removed.update(views)
    control = sorted(
        {u for n in group for u in graph.control_input_names(n) if u not in group},
        key=lambda n: graph.node(n)["id"],
    )
    op = fused_update_type(spec.update.op) if apply is not None else "Fusion"
    device = graph.node(spec.names[0])["device"]
    graph.add_node(name, op, spec.inputs, attrs, dtypes, shapes, device, control)
    # the node takes the place of its last op in creation order, which the schedule follows
    graph.node(name)["id"] = graph.node(last)["id"]
    for n in spec.names:  # outside readers (kept views among them) read the Fusion's output
        if n in out_of:
            for consumer, i in graph.consumers(n, 0):
                if consumer not in removed:
                    graph.set_input(consumer, i, (name, out_of[n]))
    for n in removed:
        for v in graph.control_output_names(n):
            if v not in removed:
                graph.add_control_edge(name, v)
    renamed = {(n, 0): (name, out_of[n]) for n in out_of}
    attrs_g = graph.graph_attrs
    attrs_g["fetches"] = [renamed.get(tuple(t), tuple(t)) for t in attrs_g["fetches"]]
    attrs_g["targets"] = [name if t in removed else t for t in attrs_g.get("targets", [])]
    consts = {a[1] for m in spec.members for a in m.args if a[0] == "const"}
    for n in removed:
        graph.remove_node(n)
    fetched = {t[0] for t in attrs_g["fetches"]} | set(attrs_g["targets"])
    for n in consts:  # compile-time operands nothing reads any more
        if n in graph.nx and graph.nx.out_degree(n) == 0 and n not in fetched:
            graph.remove_node(n)
