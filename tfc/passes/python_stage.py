"""stage_python_ops: a program with ops only Python can run, cut into native and Python stages.

Some ops cannot be compiled ahead of time (OpDef.in_python, registry.python_reason says why for
each node): they call a Python function (tf.py_func), their output shape depends on their input
values (tf.unique, tf.boolean_mask's tf.where), or they work on tf.string values, which native
code does not have. A Session still runs such a program: this pass gives every node a stage,
stages alternating between native code and Python, with tfc/passes/stage.py's assignment (its
"devices" are the two kinds here: PYTHON and NATIVE) and its cut (one part per stage, one
hand-off per tensor and reading kind, constants and feeds copied into the stages that read
them, a variable in every native stage that uses it: one buffer, bound by name). A fetched
string constant or feed is fetched through an Identity, so a Python stage delivers it.

Each stage is a program graph of its own (Stage: its inputs are program feeds or hand-offs of
earlier stages, its outputs fetches or hand-offs). A native stage is not compiled here: the
shapes it reads from a Python stage are known only when that stage has run, so the client
compiles it then, for those shapes (`with_feed_shapes`), and caches it per shape as a Session
caches programs per feed shape (tfc/client/python_stage.py). Nodes keep their devices in
native stages (a native stage may still run on a GPU); Stage.device is PYTHON or NATIVE.

Guarantees: graph_attrs["python_stages"] lists the stages in run order (none when the program
needs no Python, which leaves the graph as it was); consecutive stages
are of different kinds; no native stage holds a node with a python_reason or reads or fetches
a string; every stage reads only program feeds and outputs of earlier stages.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tfc.ir.graph import Graph
from tfc.ir.program import FeedSpec
from tfc.ops.registry import constant_value, python_reason
from tfc.passes.rewrite import remove_unused
from tfc.passes.stage import Stage, assign_stages, cut_stages

PYTHON = "/device:PYTHON:0"
NATIVE = "/device:NATIVE:0"


def python_nodes(graph: Graph) -> dict[str, str]:
    """The nodes of `graph` only Python can run, each with the reason (registry.python_reason)."""
    reasons = {n: python_reason(graph, n) for n in graph.node_names()}
    return {n: why for n, why in reasons.items() if why}


def needs_python(graph: Graph) -> bool:
    """Whether a (pruned) program graph has a Python op or fetches a string."""
    fetched = [graph.node(n)["dtypes"][i] for n, i in graph.graph_attrs.get("fetches", [])]
    return any(d.is_string for d in fetched) or bool(python_nodes(graph))


def stage_python_ops(graph: Graph) -> Graph:
    """Store the native and Python stages of a pruned program as graph_attrs["python_stages"]
    (see the module doc); none when it needs no Python (it is then one native program)."""
    if not needs_python(graph):
        graph.graph_attrs["python_stages"] = []
        return graph
    _fetch_strings_through_identity(graph)
    _static_string_shapes_as_constants(graph)
    python = python_nodes(graph)
    kind_of = {n: PYTHON if n in python else NATIVE for n in graph.nx.nodes}
    stage_of, kinds = assign_stages(graph, kind_of)
    devices = {n: graph.node(n)["device"] for n in graph.nx.nodes}
    was_placed = graph.graph_attrs.get("placed")
    for name, s in stage_of.items():
        graph.node(name)["device"] = kinds[s]
    graph.graph_attrs["placed"] = True  # split_by_device cuts placed graphs: the kinds place it
    try:
        stages = cut_stages(graph, stage_of)
    finally:
        for name, device in devices.items():
            graph.node(name)["device"] = device
        graph.graph_attrs.pop("placed")
        if was_placed is not None:
            graph.graph_attrs["placed"] = was_placed
    for stage in stages:
        stage.device = stage.graph.graph_attrs.pop("device")
        stage.graph.graph_attrs.pop("placed", None)
        if was_placed is not None:
            stage.graph.graph_attrs["placed"] = was_placed
        for name in stage.graph.nx.nodes:  # hand-offs and copied constants: unplaced
            stage.graph.node(name)["device"] = devices.get(name, "")
    graph.graph_attrs["python_stages"] = stages
    return graph


def _static_string_shapes_as_constants(graph: Graph) -> None:
    """Shape, Size and Rank of a string tensor whose shape is static become Consts. They read
    no string, so they need no Python stage, and what native ops compute from them stays known
    at compile time (slice_input_producer over file names: its row count is a Range limit)."""
    for name in list(graph.nx.nodes):
        node = graph.node(name)
        if node["op"] not in ("Shape", "Size", "Rank"):
            continue
        ((src, out),) = graph.input_edges(name)
        if not graph.node(src)["dtypes"][out].is_string:
            continue
        value = constant_value(graph, (name, 0))
        if value is None:
            continue
        graph.nx.remove_edge(src, name, key=0)
        value = np.asarray(value, dtype=node["dtypes"][0].np)
        value.setflags(write=False)
        node.update(op="Const", attrs={"value": value, "dtype": node["dtypes"][0]})
        graph.version += 1
        remove_unused(graph, [src])


def _fetch_strings_through_identity(graph: Graph) -> None:
    """A fetched string Const or Feed is fetched through an Identity: constants and feeds go
    to whichever stage reads them, and only a Python stage can deliver a string."""
    fetches = []
    for src, out in graph.graph_attrs["fetches"]:
        node = graph.node(src)
        if node["op"] in ("Const", "Feed") and node["dtypes"][out].is_string:
            name = graph.unique_name(f"{src}/fetch_{out}")
            dtype, shape = node["dtypes"][out], node["shapes"][out]
            graph.add_node(name, "Identity", [(src, out)], {}, [dtype], [shape])
            src, out = name, 0
        fetches.append((src, out))
    graph.graph_attrs["fetches"] = fetches


def with_feed_shapes(stage: Stage, shapes: list[tuple[int, ...]]) -> Graph:
    """A copy of native stage `stage`'s graph whose feeds have the concrete `shapes` (one per
    input): what is compiled for one run's hand-offs (the pipeline's specialize pass makes
    every other shape concrete from these)."""
    graph = stage.graph.copy()
    feeds: list[FeedSpec] = list(graph.graph_attrs["feeds"])
    for name in graph.nx.nodes:
        node = graph.node(name)
        if node["op"] == "Feed":
            index = node["attrs"]["index"]
            shape = tuple(shapes[index])
            node["attrs"] = {**node["attrs"], "shape": shape}
            node["shapes"] = [shape]
            feeds[index] = replace(feeds[index], shape=shape)
    graph.graph_attrs["feeds"] = feeds
    graph.version += 1
    return graph
