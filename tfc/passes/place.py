"""Placement: every node gets a full device name (/job:J/replica:R/task:T/device:TYPE:I).

Guarantees: after `place_devices`, each node's "device" is a full name; the nodes of a
colocation group share one device. Groups come from `tf.colocate_with` (the `_class` attribute
"loc:@NAME") and, implicitly, from variables: every op that updates a VariableV2 buffer (its
Assign, the optimizer's Apply* updates) and every unplaced op reading it directly sits on the
variable's device. The
partial specs of a group's members are merged; two members asking for different values of one
field is an error naming both. Fields left open come from the default device: an op with no job
runs in the task of `graph_attrs["default_device"]` (the client's task, /job:localhost/replica:0
/task:0 when unset); an op with a job but no task goes to task 0 of that job; no device type
means CPU:0, except for an op naming neither job nor device type, which takes the default
device's type (a Session's GPU programs default to GPU:0, as TF1 prefers a GPU when present).
With `graph_attrs["cluster"]` ({job: number of tasks}) every job and task is checked against
the cluster.

Host-only ops (OpDef.host_only: tf.data's iterator ops) never land on a GPU: a group holding
one that would go to a GPU only by default goes to the CPU of its task; one whose members ask
for a GPU explicitly goes there only with `graph_attrs["allow_soft_placement"]`
(ConfigProto(allow_soft_placement=True)), else placement fails as TF1's does, naming the op and
the device.

A loop or conditional runs on one device, with everything inside it: an If or While takes the
device its nested ops ask for when it asks for none itself (two different requests are an error
naming the loop and both devices), is host-only when an op inside is, and its nested ops all
get its device.
"""

from __future__ import annotations

from dataclasses import fields, replace

from tfc.ir.device import DeviceSpec
from tfc.ir.graph import Graph
from tfc.ops.registry import get_opdef
from tfc.passes.nested import functional_nodes, nested_ops, subgraph_keys

DEFAULT_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
VARIABLE_OPS = frozenset({"VariableV2"})


class PlacementError(ValueError):
    """A device no op of a group can have; `node` names the op when one op is to blame."""

    def __init__(self, message: str, node: str | None = None) -> None:
        super().__init__(message)
        self.node = node


def full_device_name(spec: DeviceSpec, default: DeviceSpec) -> str:
    """`spec` with every open field filled: job, replica, task from `default` when `spec`
    names no job, else replica 0 and task 0 of its job; the device type (and index) from
    `default` when `spec` names neither job nor type, else CPU:0 when no type is given."""
    if spec.job is None and spec.device_type is None and default.device_type is not None:
        spec = replace(spec, device_type=default.device_type, device_index=default.device_index)
    if spec.job is None:
        spec = replace(
            spec,
            job=default.job,
            replica=default.replica if spec.replica is None else spec.replica,
            task=default.task if spec.task is None else spec.task,
        )
    spec = replace(
        spec,
        replica=0 if spec.replica is None else spec.replica,
        task=0 if spec.task is None else spec.task,
        device_type=spec.device_type or "CPU",
        device_index=spec.device_index or 0,
    )
    return spec.to_string()


def colocation_groups(graph: Graph) -> dict[str, list[str]]:
    """Root node -> the members (in creation order) of each colocation group."""
    parent = {n: n for n in graph.nx.nodes}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            first, second = sorted((ra, rb), key=lambda n: graph.node(n)["id"])
            parent[second] = first

    for name in graph.node_names():
        node = graph.node(name)
        for cls in node["attrs"].get("_class", ()):
            target = cls[len("loc:@") :] if cls.startswith("loc:@") else None
            if target in parent:
                union(target, name)
        refs = get_opdef(node["op"]).ref_inputs
        for i, (src, _) in enumerate(graph.input_edges(name)):
            # an update of a variable runs where its buffer is; a plain read does too unless
            # it was placed elsewhere (then its value crosses devices like any tensor)
            if graph.node(src)["op"] in VARIABLE_OPS and (i in refs or not node["device"]):
                union(src, name)
    groups: dict[str, list[str]] = {}
    for name in graph.node_names():
        groups.setdefault(find(name), []).append(name)
    return groups


def _merge_group(graph: Graph, members: list[str]) -> DeviceSpec:
    merged: dict[str, object] = {}
    setter: dict[str, str] = {}
    for name in members:
        device = graph.node(name)["device"]
        try:
            spec = DeviceSpec.from_string(device)
        except ValueError as e:
            raise PlacementError(f"Op '{name}': {e}") from None
        for f in fields(DeviceSpec):
            value = getattr(spec, f.name)
            if value is None:
                continue
            if f.name in merged and merged[f.name] != value:
                other = setter[f.name]
                raise PlacementError(
                    f"Cannot colocate '{other}' on {graph.node(other)['device']} with "
                    f"'{name}' on {device}: they must share a device (tf.colocate_with, or "
                    f"'{members[0]}' is a variable they read or update)"
                )
            merged[f.name] = value
            setter.setdefault(f.name, name)
    return DeviceSpec(**merged)


def _host_spec(
    graph: Graph, name: str, spec: DeviceSpec, default: DeviceSpec, soft: bool
) -> DeviceSpec:
    """The spec of a group holding the host-only op `name`: its CPU when a GPU is asked for
    by default or (with soft placement) explicitly; an explicit GPU without it is an error."""
    if spec.device_type is None and spec.job is None and default.device_type not in (None, "CPU"):
        return replace(spec, device_type="CPU", device_index=0)
    if spec.device_type in (None, "CPU"):
        return spec
    if soft:
        return replace(spec, device_type="CPU", device_index=0)
    asked = graph.node(name)["device"] or spec.to_string()
    raise PlacementError(
        f"Cannot assign a device for operation '{name}': Could not satisfy explicit device "
        f"specification '{asked}' because no supported kernel for {spec.device_type} devices "
        f"is available (op: '{graph.op_type(name)}' runs on the host only; "
        "ConfigProto(allow_soft_placement=True) places it on the CPU)",
        name,
    )


def _check_cluster(graph: Graph, name: str, device: str, cluster: dict[str, int]) -> None:
    spec = DeviceSpec.from_string(device)
    if spec.job not in cluster:
        raise PlacementError(
            f"Op '{name}' is placed on {device}, but the cluster has no job '{spec.job}' "
            f"(jobs: {', '.join(sorted(cluster))})"
        )
    if spec.task >= cluster[spec.job]:
        raise PlacementError(
            f"Op '{name}' is placed on {device}, but job '{spec.job}' has "
            f"{cluster[spec.job]} task(s)"
        )


def place_devices(graph: Graph) -> Graph:
    """Give every node a full device name; see the module docstring."""
    default = DeviceSpec.from_string(graph.graph_attrs.get("default_device", DEFAULT_DEVICE))
    if default.job is None:
        raise PlacementError(f"default device {default.to_string()!r} names no job")
    default = replace(
        default,
        replica=default.replica or 0,
        task=default.task or 0,
    )
    cluster = graph.graph_attrs.get("cluster")
    soft = bool(graph.graph_attrs.get("allow_soft_placement"))
    for name in functional_nodes(graph):
        graph.node(name)["device"] = _device_of_nested(graph, name)
    for members in colocation_groups(graph).values():
        spec = _merge_group(graph, members)
        host_only = [n for n in members if _host_only(graph, n)]
        if host_only:
            spec = _host_spec(graph, host_only[0], spec, default, soft)
        device = full_device_name(spec, default)
        for name in members:
            if cluster is not None:
                _check_cluster(graph, name, device, cluster)
            graph.node(name)["device"] = device
    for name in functional_nodes(graph):
        _place_nested(graph.node(name), graph.node(name)["device"])
    graph.graph_attrs["placed"] = True
    graph.version += 1
    return graph


def _host_only(graph: Graph, name: str) -> bool:
    if get_opdef(graph.op_type(name)).host_only:
        return True
    return any(get_opdef(g.op_type(n)).host_only for g, n in _nested(graph, name))


def _nested(graph: Graph, name: str) -> list[tuple[Graph, str]]:
    """Every (graph, node) inside the nested graphs of node `name`, at any depth."""
    found = []
    for key in subgraph_keys(graph, name):
        inner = graph.node(name)["attrs"][key]
        found += [(inner, n) for n in inner.node_names()]
        found += list(nested_ops(inner))
    return found


def _device_of_nested(graph: Graph, name: str) -> str:
    """The device an If or While asks for: its own, merged with those its nested ops ask for."""
    device = graph.node(name)["device"]
    asked_by = name
    for inner, n in _nested(graph, name):
        theirs = inner.node(n)["device"]
        if not theirs:
            continue
        merged = merge_specs(device, theirs)
        if merged is None:
            kind = "while_loop" if graph.op_type(name) == "While" else "cond"
            raise PlacementError(
                f"{kind} '{name}' runs on one device with everything inside it, but '{asked_by}' "
                f"asks for {device} and '{n}' inside it for {theirs}: tfc keeps a loop or "
                "branch within one device (one task of a cluster)",
                name,
            )
        device, asked_by = merged, asked_by if device == merged else n
    return device


def merge_specs(a: str, b: str) -> str | None:
    """The device both partial specs `a` and `b` allow, or None when a field conflicts."""
    sa, sb = DeviceSpec.from_string(a), DeviceSpec.from_string(b)
    merged = {}
    for f in fields(DeviceSpec):
        va, vb = getattr(sa, f.name), getattr(sb, f.name)
        if va is not None and vb is not None and va != vb:
            return None
        merged[f.name] = va if va is not None else vb
    return DeviceSpec(**merged).to_string()


def _place_nested(node: dict, device: str) -> None:
    """Every op inside a placed If or While runs on its device."""
    attrs = dict(node["attrs"])
    for key in get_opdef(node["op"]).subgraphs:
        inner = attrs[key].copy()
        for n in inner.nx.nodes:
            inner.node(n)["device"] = device
            _place_nested(inner.node(n), device)
        inner.graph_attrs["placed"] = True
        attrs[key] = inner
    node["attrs"] = attrs


def task_of(device: str) -> str:
    """The task part of a full device name: "/job:ps/replica:0/task:1"."""
    spec = DeviceSpec.from_string(device)
    return replace(spec, device_type=None, device_index=None).to_string()
