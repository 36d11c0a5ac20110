"""A graph as a JSON document: every node (op, attributes, inputs, dtypes, shapes, device), to
write a model's graph to disk and add it back to another graph later.

Attribute values are tagged by type so they come back as they were: tuples stay tuples, NumPy
arrays (inline, base64) keep dtype and shape, DTypes and TensorShapes are named. A value of any
other type (a Python function, a pipeline object) cannot be written, and the error names the
node and the attribute.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from tfc.io.atomic_write import write_file_atomically
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import TensorShape

__all__ = ["graph_to_document", "add_document_to_graph", "write_graph_file", "read_graph_file"]

FORMAT = "tfc-graph"
VERSION = 1


class GraphFileError(ValueError):
    """A graph that cannot be written, or a document that is not a graph file."""


def _encode(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, where) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise GraphFileError(f"{where}: a dict attribute needs string keys")
        return {"dict": {k: _encode(v, where) for k, v in value.items()}}
    if isinstance(value, _dt.DType):
        return {"dtype": value.name}
    if isinstance(value, TensorShape):
        return {"tensor_shape": None if value.ndims is None else value.as_list()}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise GraphFileError(f"{where}: arrays of {array.dtype} cannot be written")
        data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")
        tag = "ndarray" if isinstance(value, np.ndarray) else "scalar"
        return {tag: {"dtype": array.dtype.str, "shape": list(array.shape), "base64": data}}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode("ascii")}
    raise GraphFileError(f"{where} holds a {type(value).__name__}, which a graph file cannot hold")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    ((tag, body),) = value.items()
    if tag == "tuple":
        return tuple(_decode(v) for v in body)
    if tag == "dict":
        return {k: _decode(v) for k, v in body.items()}
    if tag == "dtype":
        return _dt.as_dtype(body)
    if tag == "tensor_shape":
        return TensorShape(body)
    if tag in ("ndarray", "scalar"):
        raw = base64.b64decode(body["base64"])
        array = np.frombuffer(raw, dtype=np.dtype(body["dtype"])).reshape(body["shape"]).copy()
        return array if tag == "ndarray" else array[()]
    if tag == "bytes":
        return base64.b64decode(body)
    raise GraphFileError(f"unknown attribute tag {tag!r} in a graph file")


def _shape(shape: Any) -> Any:
    return None if shape is None else list(shape)


def _producers_first(graph: Graph) -> list[str]:
    """The node names in creation order, except that every node comes after its inputs (a
    rewired graph may have a node read one created after it)."""
    order = {name: i for i, name in enumerate(graph.node_names())}
    return list(nx.lexicographical_topological_sort(graph.nx, key=order.__getitem__))


def graph_to_document(graph: Graph) -> dict:
    """The nodes of `graph`, each after its inputs, as JSON-ready data."""
    nodes = []
    for name in _producers_first(graph):
        node = graph.node(name)
        where = f"node {name} ({node['op']})"
        nodes.append(
            {
                "name": name,
                "op": node["op"],
                "inputs": [[src, out] for src, out in graph.input_edges(name)],
                "control_inputs": graph.control_input_names(name),
                "attrs": {
                    k: _encode(v, f"{where} attribute {k}") for k, v in node["attrs"].items()
                },
                "dtypes": [d.name for d in node["dtypes"]],
                "shapes": [_shape(s) for s in node["shapes"]],
                "device": node["device"],
            }
        )
    return {"format": FORMAT, "version": VERSION, "seed": graph.seed, "nodes": nodes}


def add_document_to_graph(document: Any, graph: Graph) -> None:
    """Add the nodes of a graph document to `graph` (their names must be free there)."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise GraphFileError("not a tfc graph document (its 'format' is not 'tfc-graph')")
    if document.get("version") != VERSION:
        raise GraphFileError(
            f"graph document version {document.get('version')} is not supported (this tfc "
            f"reads version {VERSION})"
        )
    for node in document["nodes"]:
        for src in [s for s, _ in node["inputs"]] + node["control_inputs"]:
            if src not in graph.nx:
                raise GraphFileError(f"node {node['name']} reads {src}, which comes before it")
        graph.add_node(
            node["name"],
            node["op"],
            [(src, int(out)) for src, out in node["inputs"]],
            {k: _decode(v) for k, v in node["attrs"].items()},
            [_dt.as_dtype(d) for d in node["dtypes"]],
            [None if s is None else tuple(s) for s in node["shapes"]],
            device=node["device"],
            control_inputs=list(node["control_inputs"]),
        )
    if graph.seed is None:
        graph.seed = document.get("seed")


def write_graph_file(graph: Graph, path: str | Path, extra: dict | None = None) -> None:
    """Write `graph` to `path` as JSON; `extra` adds top-level entries (what the graph is)."""
    document = graph_to_document(graph)
    document.update(extra or {})
    write_file_atomically(path, [json.dumps(document, indent=1).encode()])


def read_graph_file(path: str | Path) -> dict:
    """The document of a graph file, checked to be one (add_document_to_graph adds its nodes)."""
    try:
        document = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise GraphFileError(f"{path} is not a graph file: {e}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise GraphFileError(f"{path} is not a tfc graph file")
    return document
