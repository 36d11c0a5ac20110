"""stage_devices: a program placed on a host CPU and a GPU, cut into stages that run in turn.

A program whose ops sit on two devices of one process cannot run as "the host part, then the
device part": values may cross both ways (CPU -> GPU -> CPU ...). So every node gets a stage:
stages alternate between the devices, and a node goes to the first stage of its device that
comes after the stages of its inputs on the other device and not before those on its own
(the edges of `tfc.passes.schedule.dependency_graph`, so a variable's reads still come before
the writes they do not depend on). A second candidate then moves every node with successors
to the latest stage they allow (so a weight is read in the stage that uses it, not sent on
from the first). Both orders of the devices are tried, each candidate of each; the fewest
stages win, then the fewest tensors crossing, then the host first. Constants and feeds are host
values every stage can read: they never delay a stage; a NoOp computes nothing and joins the
last stage of its inputs, whatever its device. A program on one device is one stage.

The cut is partition.py's (`split_by_device` with one part per stage): one _Send/_Recv pair per
(tensor, reading stage), then one _Send per (tensor, reading device): the stages of one device
that read a tensor share one hand-off under one key, so a GPU value read by two host stages is
copied to the host once. Constants and feeds are copied into the stages that read them, a
variable is in every stage of its device that uses it (one buffer). Each part then becomes a
program of its own: every data _Recv becomes an input (a Feed, among the program's feeds the
stage reads) and every data _Send an output (a fetch after the program's fetches it holds).
Those inputs and outputs are the hand-offs between stages: where each one lives (host or
device memory) is tfc/client/staged.py's choice, made in each GPU program's one host call, so no
copy op is needed. Control pairs vanish: the stage order runs their source first; a control
_Send's source becomes a target of its stage.

Guarantees: graph_attrs["stages"] lists `Stage`s in run order; consecutive stages are on
different devices; every stage reads only program feeds and outputs of earlier stages; running
them in order computes the program (`tfc.reference.interp.evaluate_stages`). Stages that end
up empty are dropped. The stage graphs are pruned, not scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import networkx as nx

from tfc.ir.device import DeviceSpec
from tfc.ir.graph import CONTROL, Graph
from tfc.ir.program import FeedSpec
from tfc.passes.partition import CutEdge, split_by_device
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import dependency_graph

FEED, FETCH, CUT = "feed", "fetch", "cut"


@dataclass
class Stage:
    """One stage: a program graph on `device`. Input i of the program is `inputs[i]`, either
    ("feed", k): feed k of the whole program, or ("cut", key): what an earlier stage outputs
    under `key`; output j is `outputs[j]`, ("fetch", k): fetch k of the program, or ("cut",
    key)."""

    device: str
    graph: Graph
    inputs: list[tuple[str, object]] = field(default_factory=list)
    outputs: list[tuple[str, object]] = field(default_factory=list)

    @property
    def on_gpu(self) -> bool:
        return DeviceSpec.from_string(self.device).device_type == "GPU"


def _is_free(graph: Graph, name: str) -> bool:
    """A value any stage has without waiting: a constant, or a feed."""
    return graph.op_type(name) in ("Const", "Feed") and graph.nx.in_degree(name) == 0


def _device_order(devices: set[str]) -> list[str]:
    """CPUs first, then by name: the order of the tie-breaking rotation."""
    return sorted(devices, key=lambda d: (DeviceSpec.from_string(d).device_type != "CPU", d))


def assign_stages(
    graph: Graph, device_of: dict[str, str] | None = None
) -> tuple[dict[str, int], list[str]]:
    """(node -> stage index, the device of each stage), stages in run order; see the module
    doc. A constant or feed goes to the first stage that reads it (stage 0 if none does); a
    NoOp computes nothing, so it joins the last stage of its inputs, whatever its device.
    `device_of` (node -> where it runs) replaces the nodes' devices: the Python stages of
    tfc/passes/python_stage.py alternate between Python and native code this way."""
    if device_of is None:
        device_of = {n: graph.node(n)["device"] for n in graph.nx.nodes}
    free = {n for n in graph.nx.nodes if _is_free(graph, n)}
    anywhere = {n for n in graph.nx.nodes if graph.op_type(n) == "NoOp"}
    devices = _device_order({device_of[n] for n in graph.nx.nodes if n not in free | anywhere})
    devices = devices or _device_order(set(device_of.values()))[:1]
    stage: dict[str, int] = {n: 0 for n in graph.nx.nodes if n not in free}
    sequence = devices
    if len(devices) > 1:
        order = dependency_graph(graph)
        ids = {n: graph.node(n)["id"] for n in graph.nx.nodes}
        topo = [n for n in nx.lexicographical_topological_sort(order, key=ids.get)
                if n not in free]  # fmt: skip
        best = None
        for shift in range(len(devices)):
            rotation = devices[shift:] + devices[:shift]
            early = _earliest_stages(order, topo, free, anywhere, device_of, rotation)
            late = _latest_stages(order, topo, free, anywhere, device_of, rotation, early)
            for trial in (early, late):
                trial, trial_sequence = _compact(trial, rotation)
                crossings = _crossings(graph, trial, free, trial_sequence)
                if best is None or (len(trial_sequence), crossings) < best[0]:
                    best = ((len(trial_sequence), crossings), trial, trial_sequence)
        assert best is not None
        _, stage, sequence = best
    for n in free:
        readers = [stage[v] for v in graph.nx.successors(n)]
        stage[n] = min(readers, default=0)
    return stage, sequence


def _earliest_stages(order, topo, free, anywhere, device_of, rotation) -> dict[str, int]:
    """Each node's first possible stage when stage i runs on rotation[i % len(rotation)]: the
    first of its device not before its inputs' stages on that device and after the others'."""
    stage: dict[str, int] = {}

    def device(n: str) -> str:
        return rotation[stage[n] % len(rotation)] if n in anywhere else device_of[n]

    for n in topo:
        preds = [p for p in order.pred[n] if p not in free]
        if n in anywhere:
            stage[n] = max((stage[p] for p in preds), default=0)
            continue
        first = max((stage[p] + (device(p) != device_of[n]) for p in preds), default=0)
        while rotation[first % len(rotation)] != device_of[n]:
            first += 1
        stage[n] = first
    return stage


def _latest_stages(order, topo, free, anywhere, device_of, rotation, early) -> dict[str, int]:
    """The earliest stages with every node that has successors moved as late as they allow
    (in reverse order, so chains move together): a variable read just before its use rather
    than sent on from the first stage."""
    stage = dict(early)

    def device(n: str) -> str:
        return rotation[stage[n] % len(rotation)] if n in anywhere else device_of[n]

    for n in reversed(topo):
        succs = list(order.succ[n])
        if n in anywhere or not succs:
            continue
        last = min(stage[m] - (device(m) != device_of[n]) for m in succs)
        while rotation[last % len(rotation)] != device_of[n]:
            last -= 1
        stage[n] = max(last, stage[n])
    return stage


def _compact(stage: dict[str, int], rotation: list[str]) -> tuple[dict[str, int], list[str]]:
    """The stages renumbered 0, 1, ... without those nobody uses, neighbours on one device
    merged (nothing runs between them); and the device of each."""
    sequence: list[str] = []
    number: dict[int, int] = {}
    for s in sorted(set(stage.values())):
        device = rotation[s % len(rotation)]
        if not sequence or sequence[-1] != device:
            sequence.append(device)
        number[s] = len(sequence) - 1
    return {n: number[s] for n, s in stage.items()}, sequence


def _crossings(graph: Graph, stage: dict[str, int], free: set[str], sequence: list) -> int:
    """The tensors that would cross between stages: (tensor, reading device) pairs, as the
    stages of one device that read a tensor share its hand-off (_share_sends)."""
    pairs = set()
    for u, v, data in graph.nx.edges(data=True):
        if "out" not in data or u in free or stage[u] == stage[v]:
            continue
        if graph.op_type(u) == "VariableV2" and sequence[stage[u]] == sequence[stage[v]]:
            continue  # a variable is in every stage of its device that uses it
        pairs.add((u, data["out"], sequence[stage[v]]))
    return len(pairs)


def stage_devices(graph: Graph) -> Graph:
    """Store the stages of a placed program as graph_attrs["stages"] (see the module doc)."""
    stage_of, devices = assign_stages(graph)
    for name, s in stage_of.items():
        if _is_free(graph, name) or graph.op_type(name) == "NoOp":  # they go anywhere
            graph.node(name)["device"] = devices[s]
    graph.graph_attrs["stages"] = cut_stages(graph, stage_of)
    return graph


def cut_stages(graph: Graph, stage_of: dict[str, int]) -> list[Stage]:
    """The stages of a graph whose every node has a stage and the device of its stage: one
    part per stage (split_by_device), one hand-off per (tensor, reading device), each part a
    program of its own; empty stages are dropped. The cuts go to graph_attrs["stage_cuts"]."""
    labels = {n: f"s{s}" for n, s in stage_of.items()}
    parts, cuts = split_by_device(graph, labels, copy_feeds=True)
    graph.graph_attrs["stage_cuts"] = _share_sends(parts, cuts)
    feeds = list(graph.graph_attrs.get("feeds", []))
    stages = []
    for label in sorted(parts, key=lambda k: int(k[1:])):
        stage = _as_program(parts[label], feeds)
        if stage.graph.nx.number_of_nodes():
            stages.append(stage)
    return stages


def _share_sends(parts: dict[str, Graph], cuts: list[CutEdge]) -> list[CutEdge]:
    """One data _Send per (tensor, reading device): a later reader on the device of an earlier
    one receives the earlier one's key and its own _Send goes. The cuts, with the keys and
    sends the receivers now use."""
    first: dict[tuple, CutEdge] = {}
    shared = []
    for cut in cuts:
        if cut.tensor is None:
            shared.append(cut)
            continue
        kept = first.setdefault((cut.tensor, cut.dst_device), cut)
        if kept is not cut:
            source = _holding(parts, cut.send, cut.key)
            source.remove_node(cut.send)
            source.graph_attrs["targets"].remove(cut.send)
            recv = _holding(parts, cut.recv, cut.key).node(cut.recv)
            recv["attrs"] = {**recv["attrs"], "key": kept.key}
            cut = replace(cut, key=kept.key, send=kept.send)
        shared.append(cut)
    return shared


def _holding(parts: dict[str, Graph], name: str, key: str) -> Graph:
    """The part holding the _Send or _Recv `name` of `key` (a _Recv's name repeats in every
    stage that receives the same tensor from the same stage)."""
    return next(
        part for part in parts.values()
        if name in part.nx and part.node(name)["attrs"].get("key") == key
    )  # fmt: skip


def _as_program(part: Graph, feeds: list[FeedSpec]) -> Stage:
    """A part as a program of its own: data _Recv -> inputs, data _Send -> outputs."""
    fetches = list(part.graph_attrs["fetches"])
    outputs: list[tuple[str, object]] = [(FETCH, j) for j in part.graph_attrs["fetch_index"]]
    targets = list(part.graph_attrs["targets"])
    received: dict[str, str] = {}  # the Feed a data _Recv became -> its key
    for name in sorted(part.nx.nodes, key=lambda n: part.node(n)["id"]):
        node = part.node(name)
        if node["op"] == "_Recv":
            key = node["attrs"]["key"]
            if key.rpartition(";")[2].startswith("^"):
                part.remove_node(name)  # the stage order is the control dependency
                continue
            received[name] = key
            shape = node["attrs"]["shape"]
            shape = None if shape is None else tuple(shape)  # unknown rank: a py_func's output
            node.update(op="Feed", attrs={"dtype": node["attrs"]["dtype"], "shape": shape})
        elif node["op"] == "_Send":
            inputs = part.input_edges(name)
            if inputs:
                outputs.append((CUT, node["attrs"]["key"]))
                fetches.append(inputs[0])
            else:  # a control edge: what it waits for must still run in this stage
                sources = [u for u, _, k in part.nx.in_edges(name, keys=True) if k == CONTROL]
                targets += [u for u in sources if u not in targets]
            targets.remove(name)
            part.remove_node(name)
    part.graph_attrs.update(fetches=fetches, targets=targets, feeds_cut=True)
    part = prune_graph(part)
    # the inputs: the feeds and received values the pruned stage still reads, in node order
    inputs: list[tuple[str, object]] = []
    stage_feeds: list[FeedSpec] = []
    for name in sorted(part.nx.nodes, key=lambda n: part.node(n)["id"]):
        node = part.node(name)
        if node["op"] != "Feed":
            continue
        if name in received:
            inputs.append((CUT, received[name]))
            spec = FeedSpec((name, 0), node["attrs"]["dtype"], node["attrs"]["shape"])
        else:
            inputs.append((FEED, node["attrs"]["index"]))
            spec = feeds[node["attrs"]["index"]]
        node["attrs"] = {**node["attrs"], "index": len(stage_feeds)}
        stage_feeds.append(spec)
    part.graph_attrs["feeds"] = stage_feeds
    part.version += 1
    return Stage(part.graph_attrs["device"], part, inputs, outputs)
