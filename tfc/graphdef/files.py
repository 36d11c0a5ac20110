"""GraphDef files: binary (`.pb`) or protobuf text (`.pbtxt`), as tf.train.write_graph writes."""

from __future__ import annotations

import os
from typing import Any

from tfc.io.atomic_write import write_file_atomically
from tfc.io.graph_pb import GraphDef
from tfc.io.proto import DecodeError
from tfc.io.text_format import ParseError, parse
from tfc.ir.graph import Graph

__all__ = ["write_graph", "read_graph_def"]

_TEXT_SUFFIXES = (".pbtxt", ".txt", ".prototxt")


def write_graph(
    graph_or_graph_def: Any, logdir: str | os.PathLike, name: str, as_text: bool = True
) -> str:
    """`tf.train.write_graph`: the GraphDef of a graph (or a GraphDef) to `logdir/name`, in
    text format or binary; the directory is made when missing. Returns the file's path."""
    if isinstance(graph_or_graph_def, Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    elif isinstance(graph_or_graph_def, GraphDef):
        graph_def = graph_or_graph_def
    else:
        raise TypeError(
            f"write_graph takes a Graph or a GraphDef, got {type(graph_or_graph_def).__name__}"
        )
    logdir = os.fspath(logdir)
    os.makedirs(logdir or ".", exist_ok=True)
    path = os.path.join(logdir, name)
    data = str(graph_def).encode("utf-8") if as_text else graph_def.SerializeToString()
    write_file_atomically(path, [data])
    return path


def read_graph_def(path: str | os.PathLike) -> GraphDef:
    """The GraphDef of a file written by write_graph or TensorFlow: text format when its name
    ends in .pbtxt (or .txt, .prototxt), else binary."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        if path.endswith(_TEXT_SUFFIXES):
            return parse(data, GraphDef())
        return GraphDef.FromString(data)
    except (DecodeError, ParseError, UnicodeDecodeError) as e:
        kind = "text" if path.endswith(_TEXT_SUFFIXES) else "binary"
        raise ValueError(f"{path} is not a {kind} GraphDef file: {e}") from None
