"""`tf.train.export_meta_graph`: graphs out to tfc's meta graph file; `tf.train.write_graph`
(TensorFlow's GraphDef, tfc/graphdef/files.py) is exported from here too.

What goes in: the nodes, the collections and the saver; the file format is tfc/io/meta_graph.py
(docs/file-formats.md).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from tfc.graphdef.files import write_graph
from tfc.io.meta_graph import (
    MetaGraph,
    NodeDef,
    OperationRef,
    SaverDef,
    TensorRef,
    VariableDef,
    encode_meta_graph,
    write_meta_graph_file,
)
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.variables import Variable
from tfc.version import __version__

__all__ = ["export_meta_graph", "write_graph", "graph_to_meta_graph"]

_log = logging.getLogger("tfc")
_COLOCATION_ATTR = "_class"  # ["loc:@<op name>"]: names a node, so scopes rewrite it
_PLAIN = (type(None), bool, int, float, str, bytes)


def _strip(name: str, scope: str | None, node: str) -> str:
    if scope is None:
        return name
    if not name.startswith(scope + "/"):
        raise ValueError(
            f"node '{node}' depends on '{name}', which is outside the export scope '{scope}'"
        )
    return name[len(scope) + 1 :]


def _in_scope(name: str, scope: str | None) -> bool:
    return scope is None or name.startswith(scope + "/")


def _nodes(graph: Graph, scope: str | None, clear_devices: bool) -> list[NodeDef]:
    nodes = []
    for name in graph.node_names():
        if not _in_scope(name, scope):
            continue
        node = graph.node(name)
        attrs = dict(node["attrs"])
        if _COLOCATION_ATTR in attrs:
            attrs[_COLOCATION_ATTR] = [
                "loc:@" + _strip(c[len("loc:@") :], scope, name) if c.startswith("loc:@") else c
                for c in attrs[_COLOCATION_ATTR]
            ]
        nodes.append(NodeDef(
            name=_strip(name, scope, name),
            op=node["op"],
            inputs=[(_strip(src, scope, name), out) for src, out in graph.input_edges(name)],
            control_inputs=[_strip(c, scope, name) for c in graph.control_input_names(name)],
            device="" if clear_devices else node["device"],
            attrs=attrs,
            dtypes=list(node["dtypes"]),
            shapes=list(node["shapes"]),
        ))  # fmt: skip
    return nodes


def _collection_item(item: Any, scope: str | None) -> Any:
    """The stored form of one collection item; None when it is outside the scope."""

    def local(name: str) -> str | None:
        return name if scope is None else name[len(scope) + 1 :] if _in_scope(name, scope) else None

    if isinstance(item, Variable):
        names = [item.name, item.initializer.name, item.value().name]
        initial = item.initial_value
        names.append(initial.name if initial is not None else "")
        stripped = [local(n) if n else "" for n in names]
        if None in stripped:
            return None
        return VariableDef(
            variable_name=stripped[0],
            initializer_name=stripped[1],
            snapshot_name=stripped[2],
            initial_value_name=stripped[3],
            trainable=item.trainable,
        )
    if isinstance(item, Tensor):
        name = local(item.name)
        return None if name is None else TensorRef(name)
    if isinstance(item, Operation):
        name = local(item.name)
        return None if name is None else OperationRef(name)
    return item


def graph_to_meta_graph(
    graph: Graph,
    collection_list: list[str] | None = None,
    saver_def: SaverDef | None = None,
    meta_info: dict[str, Any] | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
) -> MetaGraph:
    """The MetaGraph of `graph`: every node (under `export_scope`, names made relative to it),
    the collections (all, or those named), and `saver_def`. As TensorFlow does, a collection
    item that is not a Variable, Tensor, Operation or plain value is left out with a warning."""
    scope = export_scope.rstrip("/") if export_scope else None
    collections: dict[str, list[Any]] = {}
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in keys:
        items = []
        for item in graph.get_collection(key):
            if not isinstance(item, (Variable, Tensor, Operation, *_PLAIN)):
                _log.warning(
                    "Issue encountered when serializing %s: a %s cannot be stored in a meta "
                    "graph; it is left out.",
                    key,
                    type(item).__name__,
                )
                continue
            stored = _collection_item(item, scope)
            if stored is not None:
                items.append(stored)
        if items:
            collections[key] = items
    if saver_def is not None and scope is not None:
        raise ValueError("a saver_def cannot be exported with an export_scope")
    info = {"tfc_version": __version__, **(meta_info or {})}
    return MetaGraph(_nodes(graph, scope, clear_devices), collections, saver_def, info)


def export_meta_graph(
    filename: str | os.PathLike | None = None,
    meta_info_def: dict[str, Any] | None = None,
    graph_def: Graph | None = None,
    saver_def: SaverDef | None = None,
    collection_list: list[str] | None = None,
    as_text: bool = False,
    graph: Graph | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    save_debug_info: bool = False,
    **kwargs: Any,
) -> MetaGraph:
    """`tf.train.export_meta_graph`: the MetaGraph of `graph` (default: the default graph),
    also written to `filename` when given (JSON; indented with `as_text`).

    `graph_def` may be a tfc Graph (tfc has no GraphDef protocol buffers); `meta_info_def` a
    dict kept in the file's "meta_info". tfc's graphs have no default attributes to strip, no
    saver nodes and no debug info, so `strip_default_attrs`, `clear_extraneous_savers` and
    `save_debug_info` change nothing.
    """
    if kwargs:
        raise TypeError(f"export_meta_graph() got unexpected arguments {sorted(kwargs)}")
    if graph_def is not None:
        if not isinstance(graph_def, Graph):
            raise TypeError(f"graph_def must be a tfc Graph, got {type(graph_def).__name__}")
        if graph is not None and graph is not graph_def:
            raise ValueError("graph_def and graph name different graphs")
        graph = graph_def
    if meta_info_def is not None and not isinstance(meta_info_def, dict):
        raise TypeError(f"meta_info_def must be a dict, got {type(meta_info_def).__name__}")
    meta = graph_to_meta_graph(
        graph or get_default_graph(),
        collection_list,
        saver_def,
        meta_info_def,
        export_scope,
        clear_devices,
    )
    if filename is not None:
        write_meta_graph_file(filename, meta, as_text=as_text)
    else:
        encode_meta_graph(meta)  # refuse what no file could hold now, as a write would
    return meta
