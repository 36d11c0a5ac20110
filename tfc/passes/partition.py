"""Partitioning: one subgraph per device, a _Send/_Recv pair on every edge that crosses devices.

Guarantees, for a placed graph (tfc/passes/place.py): every node is in exactly one partition,
the one of its device; an edge between two devices becomes a _Send in the producer's partition
and a _Recv in the consumer's, with one pair per (tensor, destination device), as the
whitepaper's canonicalization describes: a tensor read by several ops of one device crosses
that cut once. A control edge between devices becomes a pair carrying an empty tensor. A
constant (a Const without inputs) read on another device is copied into that partition
instead: nothing crosses a cut for it. The
fetches, targets and feeds of the program go to the partition that holds their node; each
partition's _Send nodes are among its targets, so pruning keeps them.

`partition_graph` stores the partitions as graph_attrs["partitions"] (device -> Graph) and
returns the graph; `split_by_device` is the function itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tfc.ir.graph import CONTROL, Graph
from tfc.ops.sendrecv import CONTROL_DTYPE, CONTROL_SHAPE, rendezvous_key


@dataclass(frozen=True)
class CutEdge:
    """One pair: `tensor` of `src_device` received on `dst_device` by node `recv`."""

    key: str
    src_device: str
    dst_device: str
    tensor: tuple[str, int] | None  # None for a control edge
    send: str
    recv: str


def _device_tag(device: str) -> str:
    """ "/job:ps/replica:0/task:1/device:CPU:0" -> "ps_1_cpu_0" (for node names)."""
    fields = dict(re.findall(r"(job|replica|task|device):([^/]+)", device))
    kind = fields.get("device", "cpu").replace(":", "_").lower()
    return f"{fields.get('job', 'local')}_{fields.get('task', '0')}_{kind}"


def _fresh_name(part: Graph, base: str) -> str:
    name, i = base, 1
    while name in part.nx:
        name, i = f"{base}_{i}", i + 1
    return name


def split_by_device(
    graph: Graph, part_of: Mapping[str, str] | None = None, copy_feeds: bool = False
) -> tuple[dict[str, Graph], list[CutEdge]]:
    """The partitions (device -> Graph, devices in order of their first node) and the cuts.

    `part_of` (node -> part name) cuts finer than by device: the parts are keyed by those
    names, every part's nodes must share one device, and a variable read or updated in several
    parts of its device is in each of them under its own name (one buffer: nothing crosses for
    it). With `copy_feeds`, a Feed read in another part is copied there like a constant (the
    caller hands every part the feeds it reads)."""
    if not graph.graph_attrs.get("placed"):
        raise ValueError("partition_graph needs a placed graph: run the 'place' pass first")
    device_of = {n: graph.node(n)["device"] for n in graph.nx.nodes}
    part_of = device_of if part_of is None else part_of
    parts: dict[str, Graph] = {}
    next_id = graph._next_id
    for name in graph.node_names():
        key = part_of[name]
        part = parts.get(key)
        if part is None:
            part = parts[key] = Graph()
            part.graph_attrs = {
                k: v for k, v in graph.graph_attrs.items()
                if k in ("specialized", "placed", "default_device", "cluster")
            }  # fmt: skip
            part.graph_attrs.update(device=device_of[name], fetches=[], fetch_index=[], targets=[])
            part.graph_attrs["feeds"] = list(graph.graph_attrs.get("feeds", []))
        elif part.graph_attrs["device"] != device_of[name]:
            raise ValueError(
                f"part '{key}' holds ops of two devices: {part.graph_attrs['device']} and "
                f"'{name}' on {device_of[name]}"
            )
        node = dict(graph.node(name))
        part.nx.add_node(name, **node)
    for part in parts.values():
        part._next_id = next_id
    by_device = part_of is device_of

    def tag(key: str) -> str:
        """A part's name in node names: its device, and the part's own name if finer."""
        device_tag = _device_tag(parts[key].graph_attrs["device"])
        return device_tag if by_device else f"{device_tag}_{key}"

    def endpoint(key: str) -> str:
        device = parts[key].graph_attrs["device"]
        return device if by_device else f"{device}@{key}"

    cuts: dict[tuple, CutEdge] = {}

    def cut(src: str, out: int | None, dst: str) -> CutEdge:
        nonlocal next_id
        src_part = part_of[src]
        src_device, dst_device = device_of[src], parts[dst].graph_attrs["device"]
        tensor = f"^{src}" if out is None else f"{src}:{out}"
        found = cuts.get((tensor, dst))
        if found is not None:
            return found
        suffix = "ctrl" if out is None else str(out)
        send = _fresh_name(parts[src_part], f"{src}/_send_{suffix}_to_{tag(dst)}")
        recv = _fresh_name(parts[dst], f"{src}/_recv_{suffix}_from_{tag(src_part)}")
        key = rendezvous_key(endpoint(src_part), endpoint(dst), tensor)
        if out is None:
            dtype, shape = CONTROL_DTYPE, CONTROL_SHAPE
            send_inputs, send_control = [], [src]
        else:
            dtype, shape = graph.node(src)["dtypes"][out], graph.node(src)["shapes"][out]
            shape = None if shape is None else tuple(shape)  # unknown rank: a py_func's output
            send_inputs, send_control = [(src, out)], []
        common = {"key": key, "send_device": src_device, "recv_device": dst_device}
        for part, name, op, inputs, control, attrs, outs in (
            (parts[src_part], send, "_Send", send_inputs, send_control, common, []),
            (parts[dst], recv, "_Recv", [], [], {**common, "dtype": dtype,
                                                 "shape": shape}, [(dtype, shape)]),
        ):  # fmt: skip
            part._next_id = next_id
            part.add_node(
                name, op, inputs, attrs, [d for d, _ in outs], [s for _, s in outs],
                device=part.graph_attrs["device"], control_inputs=control,
            )  # fmt: skip
            next_id += 1
        parts[src_part].graph_attrs["targets"].append(send)
        edge = cuts[(tensor, dst)] = CutEdge(
            key, src_device, dst_device, None if out is None else (src, out), send, recv
        )
        return edge

    copies: dict[tuple[str, str], str] = {}

    def copy_node(src: str, dst: str) -> str:
        """A constant read in another part is copied there rather than sent every step; so is a
        feed with `copy_feeds`, and a variable in another part of its device (same name)."""
        found = copies.get((src, dst))
        if found is None:
            nonlocal next_id
            part, node = parts[dst], graph.node(src)
            found = src  # a feed's or variable's name is what binds it to its buffer
            if node["op"] == "Const":
                found = _fresh_name(part, f"{src}/_copy_to_{tag(dst)}")
            part._next_id = next_id
            part.add_node(found, node["op"], [], dict(node["attrs"]), list(node["dtypes"]),
                          list(node["shapes"]), device=part.graph_attrs["device"])  # fmt: skip
            next_id += 1
            copies[(src, dst)] = found
        return found

    def is_copied(name: str, dst: str) -> bool:
        op = graph.node(name)["op"]
        if op == "VariableV2":  # ref edges never cross devices (placement colocates them)
            return device_of[name] == parts[dst].graph_attrs["device"]
        return graph.nx.in_degree(name) == 0 and (op == "Const" or (copy_feeds and op == "Feed"))

    for u, v, k, data in sorted(
        graph.nx.edges(keys=True, data=True),
        key=lambda e: (graph.node(e[1])["id"], str(e[2]), graph.node(e[0])["id"]),
    ):
        dst = part_of[v]
        if part_of[u] == dst:
            parts[dst].nx.add_edge(u, v, key=k, **data)
        elif k != CONTROL and is_copied(u, dst):
            parts[dst].nx.add_edge(copy_node(u, dst), v, key=k, **data)
        elif k == CONTROL:
            parts[dst].add_control_edge(cut(u, None, dst).recv, v)
        else:
            parts[dst].nx.add_edge(cut(u, data["out"], dst).recv, v, key=k, out=0)
    for j, (src, out) in enumerate(graph.graph_attrs.get("fetches", [])):
        attrs = parts[part_of[src]].graph_attrs
        attrs["fetches"].append((src, out))
        attrs["fetch_index"].append(j)
    for target in graph.graph_attrs.get("targets", []):
        parts[part_of[target]].graph_attrs["targets"].append(target)
    for part in parts.values():
        part.version += 1
    return parts, list(cuts.values())


def partition_graph(graph: Graph) -> Graph:
    """Store the partitions (device -> Graph) and the cut edges in graph_attrs."""
    parts, cuts = split_by_device(graph)
    graph.graph_attrs["partitions"] = parts
    graph.graph_attrs["cut_edges"] = cuts
    return graph
