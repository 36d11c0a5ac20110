"""Readable text form of a graph: one line per node, in schedule (or creation) order.

The text is stable (attributes sorted by name, values printed the same way on every run) and
complete enough to compare graphs by: the pass tests write the graph they expect as this text.
A node's line is

    name = Op(src:out, ..., ^control, ...) -> dtype[shape], ... {attr=value, ...}  [device]  @ where

followed, one a line and indented, by the records of an attribute that holds a sequence of
them (a fusion's members), and by the text of each nested graph (a branch, a loop's cond and
body: program_text, indented). `[device]` is left out where it is the graph's own (a partition's,
graph_attrs["device"]). `@ where` is the storage the memory plan gave each output (arena
offset, feed, output slot, variable, constant, or alias of another tensor). A Const's value is
printed in full up to SHOWN_VALUES elements, otherwise summarized by its first and last ones.
`program_text` adds a program graph's fetches and targets.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from tfc.ir.dtypes import DType
from tfc.ir.graph import Graph
from tfc.ir.tensor_shape import shape_str

SHOWN_VALUES = 16
# attribute values printed inline; a sequence of anything else is a sequence of records
_PLAIN = (type(None), int, float, str, bytes, tuple, list, dict, DType, np.ndarray, np.generic)


def graph_text(graph: Graph) -> str:
    """Every node's text, in schedule (or creation) order."""
    names = graph.graph_attrs.get("schedule") or graph.node_names()
    return "".join(node_text(graph, name) + "\n" for name in names)


def program_text(graph: Graph) -> str:
    """graph_text, then the lines `fetches: node:out, ...` and `targets: node, ...` of a program
    graph (passes that replace a fetched node rename its fetches), and `device: ...` for a
    partition, whose nodes show their device only where it is not the partition's."""
    attrs = graph.graph_attrs
    lines = []
    if attrs.get("fetches"):
        lines.append("fetches: " + ", ".join(f"{n}:{i}" for n, i in attrs["fetches"]))
    if attrs.get("carried"):  # a loop body's memory plan: how each loop variable is updated
        lines.append("carried: " + ", ".join(attrs["carried"]))
    if attrs.get("targets"):
        lines.append("targets: " + ", ".join(attrs["targets"]))
    if attrs.get("device"):
        lines.append(f"device: {attrs['device']}")
    return graph_text(graph) + "".join(line + "\n" for line in lines)


def node_text(graph: Graph, name: str) -> str:
    """One node's text: its inputs, output types, attributes, device and planned storage; an
    attribute that is a sequence of records (a fusion's members) follows, one record a line."""
    node = graph.node(name)
    outs = ", ".join(f"{d.name}{shape_str(s)}" for d, s in zip(node["dtypes"], node["shapes"]))
    outs = outs or "()"
    ins = [f"{s}:{i}" for s, i in graph.input_edges(name)]
    ins += [f"^{c}" for c in graph.control_input_names(name)]
    inline, blocks = [], []
    for key, value in sorted(node["attrs"].items()):
        if isinstance(value, Graph):
            blocks += [f"  {key}:", *(f"    {line}" for line in program_text(value).splitlines())]
        elif _is_records(value):
            blocks += [f"  {key}:", *(f"    {_value_text(record)}" for record in value)]
        else:
            inline.append(f"{key}={_value_text(value)}")
    line = f"{name} = {node['op']}({', '.join(ins)}) -> {outs}"
    if inline:
        line += " {" + ", ".join(inline) + "}"
    if node["device"] and node["device"] != graph.graph_attrs.get("device"):
        line += f"  [{node['device']}]"
    if "storage" in node:
        line += "  @ " + ", ".join(_storage_text(s) for s in node["storage"])
        if "scratch" in node:
            line += f", scratch arena {node['scratch']}"
    return "\n".join([line, *blocks])


def _value_text(value: Any) -> str:
    """An attribute value: DTypes by name, arrays as (nested) lists, floats with their sign,
    functions and objects without a repr of their own by their class (never an address)."""
    if isinstance(value, DType):
        return value.name
    if isinstance(value, np.ndarray):
        return _array_text(value)
    if isinstance(value, np.generic):
        return _element_text(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(_value_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{_value_text(k)}: {_value_text(v)}" for k, v in items) + "}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return f"<function {value.__qualname__}>"
    if type(value).__repr__ is object.__repr__:  # it would print its address: not stable
        return f"<{type(value).__qualname__}>"
    return repr(value)


def _is_records(value: Any) -> bool:
    """A non-empty tuple or list of objects of the program's own classes (not plain values)."""
    return (
        isinstance(value, (tuple, list))
        and len(value) > 0
        and not any(isinstance(v, _PLAIN) for v in value)
    )


def _array_text(array: np.ndarray) -> str:
    if array.ndim == 0:
        return _element_text(array[()])
    if array.size <= SHOWN_VALUES:
        return _nested_text(array)
    flat = array.reshape(-1)
    head = ", ".join(_element_text(v) for v in flat[:3])
    tail = ", ".join(_element_text(v) for v in flat[-3:])
    return f"[{head}, ..., {tail}] ({array.size} values)"


def _nested_text(array: np.ndarray) -> str:
    if array.ndim == 1:
        return "[" + ", ".join(_element_text(v) for v in array) + "]"
    return "[" + ", ".join(_nested_text(row) for row in array) + "]"


def _element_text(value: np.generic) -> str:
    """The shortest text that reads back as the same value of its dtype (-0.0 keeps its sign)."""
    if isinstance(value, (np.str_, np.bytes_)):
        return repr(value.item())
    return str(value)


def _storage_text(storage: tuple) -> str:
    kind, where = storage
    if kind == "alias":
        return f"alias {where[0]}:{where[1]}"
    return f"{kind} {where}"
