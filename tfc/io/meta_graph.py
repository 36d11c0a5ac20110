"""tfc's meta graph file: a graph, its collections and its saver as JSON (docs/file-formats.md).

The in-memory form is `MetaGraph`: the nodes (`NodeDef`: name, op, data inputs as (node,
output) pairs, control inputs, device, attributes, output dtypes and shapes), the collections
(each item a `TensorRef`, `OperationRef`, `VariableDef` or a plain value), an optional
`SaverDef`, and free-form `meta_info`. `encode_meta_graph`/`decode_meta_graph` map it to and
from JSON; `write_meta_graph_file`/`read_meta_graph_file` do the file, written atomically.

Attribute values and plain collection values are JSON where JSON holds them exactly (null,
bools, ints, finite floats, strings, lists) and one-key tagged objects otherwise:
{"tuple": [...]}, {"dtype": "float32"}, {"float": "nan"|"inf"|"-inf"}, {"bytes": base64},
{"dict": {...}}, {"ndarray": {"dtype", "shape", "data": base64 of little-endian C-order bytes}}
(or "strings" for arrays of str/bytes), {"scalar": <ndarray>} for a NumPy scalar. Any other
value (a Python object such as a dataset or a callable) cannot be stored: encoding raises a
TypeError naming the node and the attribute.

Reading validates everything before anything is built: the format tag and version, every
field's type, unique node names, inputs naming existing nodes and outputs, known dtypes,
shapes of non-negative ints or null, no cycle; the nodes come back in an order where every
node follows its inputs. This module only reads and writes: adding the nodes to a graph and
checking them against the op registry is tfc.train's job (import_meta_graph).
"""

from __future__ import annotations

import base64
import heapq
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfc.io.atomic_write import write_file_atomically
from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import Shape

__all__ = [
    "FORMAT",
    "VERSION",
    "MetaGraphFormatError",
    "NodeDef",
    "TensorRef",
    "OperationRef",
    "VariableDef",
    "SaverDef",
    "MetaGraph",
    "encode_value",
    "decode_value",
    "encode_meta_graph",
    "decode_meta_graph",
    "write_meta_graph_file",
    "read_meta_graph_file",
]

FORMAT = "tfc.MetaGraph"
VERSION = 1
_NUMERIC_KINDS = "biufc"  # bool, signed, unsigned, float, complex


class MetaGraphFormatError(ValueError):
    """A meta graph file (or object) that tfc cannot read; the message names the file."""


@dataclass
class NodeDef:
    name: str
    op: str
    inputs: list[tuple[str, int]] = field(default_factory=list)
    control_inputs: list[str] = field(default_factory=list)
    device: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    dtypes: list[_dt.DType] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)


@dataclass(frozen=True)
class TensorRef:
    name: str  # "op:index"


@dataclass(frozen=True)
class OperationRef:
    name: str


@dataclass(frozen=True)
class VariableDef:
    """TF's VariableDef: the nodes that make up one variable (tfc/variables.py)."""

    variable_name: str  # the VariableV2 output, "w:0"
    initializer_name: str  # its Assign op, "w/Assign"
    snapshot_name: str  # the value others read, "w/read:0"
    initial_value_name: str = ""  # the initial value tensor, when it has one
    trainable: bool = True


@dataclass
class SaverDef:
    """What rebuilds a tf.train.Saver: checkpoint key -> variable op name, and its options."""

    var_list: dict[str, str]
    max_to_keep: int | None = 5
    keep_checkpoint_every_n_hours: float = 10000.0
    sharded: bool = False
    pad_step_number: bool = False
    save_relative_paths: bool = False


@dataclass
class MetaGraph:
    nodes: list[NodeDef]
    # each item a TensorRef, OperationRef, VariableDef or plain value
    collections: dict[str, list[Any]] = field(default_factory=dict)
    saver_def: SaverDef | None = None
    meta_info: dict[str, Any] = field(default_factory=dict)


# -- values --------------------------------------------------------------------------------------
def _encode_array(array: np.ndarray) -> dict:
    if array.dtype.kind in _NUMERIC_KINDS:
        little = array.astype(array.dtype.newbyteorder("<"), copy=False)
        data = base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii")
        return {"dtype": array.dtype.name, "shape": list(array.shape), "data": data}
    flat = array.reshape(-1).tolist()
    if all(isinstance(x, str) for x in flat):
        return {"dtype": "str", "shape": list(array.shape), "strings": flat}
    if all(isinstance(x, bytes) for x in flat):
        strings = [base64.b64encode(x).decode("ascii") for x in flat]
        return {"dtype": "bytes", "shape": list(array.shape), "strings": strings,
                "object": array.dtype.kind == "O"}  # fmt: skip
    raise TypeError(f"an array of dtype {array.dtype} holding Python objects")


def encode_value(value: Any) -> Any:
    """`value` as JSON-ready data (see the module docstring); TypeError if it cannot be."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode_value(v) for v in value]}
    if isinstance(value, _dt.DType):
        return {"dtype": value.name}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, np.ndarray):
        return {"ndarray": _encode_array(value)}
    if isinstance(value, np.generic):
        return {"scalar": _encode_array(np.asarray(value))}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode_value(v) for k, v in value.items()}}
    raise TypeError(f"a value of type {type(value).__name__}")


def _decode_array(data: Any) -> np.ndarray:
    if not isinstance(data, dict):
        raise ValueError("an ndarray is not an object")
    shape = data.get("shape")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ValueError(f"an ndarray has shape {shape!r}")
    count = math.prod(shape)
    dtype = data.get("dtype")
    if dtype in ("str", "bytes"):
        strings = data.get("strings")
        if not isinstance(strings, list) or len(strings) != count:
            raise ValueError(f"a string array of shape {shape} has no list of {count} strings")
        if not all(isinstance(s, str) for s in strings):
            raise ValueError("a string array holds a non-string")
        if dtype == "str":
            return np.array(strings, dtype=str).reshape(shape)
        items = [base64.b64decode(s, validate=True) for s in strings]
        if data.get("object"):
            out = np.empty(count, dtype=object)
            out[:] = items
            return out.reshape(shape)
        return np.array(items, dtype=bytes).reshape(shape)
    try:
        np_dtype = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        np_dtype = None
    if np_dtype is None or np_dtype.kind not in _NUMERIC_KINDS or np_dtype.name != dtype:
        raise ValueError(f"an ndarray has unknown dtype {dtype!r}")
    if not isinstance(data.get("data"), str):
        raise ValueError("an ndarray has no base64 'data'")
    raw = base64.b64decode(data["data"], validate=True)
    if len(raw) != count * np_dtype.itemsize:
        raise ValueError(
            f"an ndarray of {dtype} {shape} has {len(raw)} bytes, not {count * np_dtype.itemsize}"
        )
    array = np.frombuffer(raw, dtype=np_dtype.newbyteorder("<")).reshape(shape)
    if np_dtype.kind == "b" and np.any(np.frombuffer(raw, np.uint8) > 1):
        raise ValueError("a bool ndarray holds bytes other than 0 and 1")
    return array.astype(np_dtype.newbyteorder("="))  # a fresh, writable, native array


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def decode_value(data: Any) -> Any:
    """The value `encode_value` encoded as `data`; ValueError if `data` is not such an encoding."""
    if data is None or isinstance(data, (bool, int, str, float)):
        return data
    if isinstance(data, list):
        return [decode_value(v) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"{json.dumps(data)[:60]} is not a tagged value")
    ((tag, body),) = data.items()
    if tag == "tuple" and isinstance(body, list):
        return tuple(decode_value(v) for v in body)
    if tag == "dtype" and isinstance(body, str):
        try:
            return _dt.as_dtype(body)
        except TypeError as e:
            raise ValueError(str(e)) from None
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "bytes" and isinstance(body, str):
        return base64.b64decode(body, validate=True)
    if tag == "ndarray":
        return _decode_array(body)
    if tag == "scalar":
        array = _decode_array(body)
        if array.shape != ():
            raise ValueError(f"a scalar has shape {list(array.shape)}")
        return array[()]
    if tag == "dict" and isinstance(body, dict):
        return {k: decode_value(v) for k, v in body.items()}
    raise ValueError(f"unknown value tag {tag!r}")


def _encode_shape(shape: Shape) -> Any:
    return None if shape is None else list(shape)


def _decode_shape(data: Any) -> Shape:
    if data is None:
        return None
    if isinstance(data, list) and all(d is None or (_is_int(d) and d >= 0) for d in data):
        return tuple(data)
    raise ValueError(f"{data!r} is not a shape (a list of non-negative ints and nulls, or null)")


# -- the whole meta graph ------------------------------------------------------------------------
def _encode_item(item: Any) -> dict:
    if isinstance(item, TensorRef):
        return {"tensor": item.name}
    if isinstance(item, OperationRef):
        return {"operation": item.name}
    if isinstance(item, VariableDef):
        return {"variable": {
            "variable_name": item.variable_name, "initializer_name": item.initializer_name,
            "snapshot_name": item.snapshot_name, "initial_value_name": item.initial_value_name,
            "trainable": item.trainable,
        }}  # fmt: skip
    return {"value": encode_value(item)}


def encode_meta_graph(meta: MetaGraph) -> dict:
    """`meta` as JSON-ready data; TypeError names the node and attribute it cannot hold."""
    nodes = []
    for node in meta.nodes:
        attrs = {}
        for key in sorted(node.attrs):
            try:
                attrs[key] = encode_value(node.attrs[key])
            except TypeError as e:
                raise TypeError(
                    f"attribute '{key}' of node '{node.name}' ({node.op}) cannot be stored in a "
                    f"meta graph: it is {e}"
                ) from None
        nodes.append({
            "name": node.name, "op": node.op, "device": node.device,
            "inputs": [[src, index] for src, index in node.inputs],
            "control_inputs": list(node.control_inputs), "attrs": attrs,
            "outputs": [{"dtype": d.name, "shape": _encode_shape(s)}
                        for d, s in zip(node.dtypes, node.shapes)],
        })  # fmt: skip
    data: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "meta_info": {k: encode_value(v) for k, v in meta.meta_info.items()},
        "nodes": nodes,
        "collections": {k: [_encode_item(i) for i in v] for k, v in meta.collections.items()},
    }
    if meta.saver_def is not None:
        s = meta.saver_def
        data["saver_def"] = {
            "var_list": dict(s.var_list), "max_to_keep": s.max_to_keep,
            "keep_checkpoint_every_n_hours": s.keep_checkpoint_every_n_hours,
            "sharded": s.sharded, "pad_step_number": s.pad_step_number,
            "save_relative_paths": s.save_relative_paths,
        }  # fmt: skip
    return data


class _Reader:
    """Typed access to decoded JSON, each failure naming the file and where in it."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> MetaGraphFormatError:
        return MetaGraphFormatError(f"meta graph {self.source}: {where}: {problem}")

    def get(self, obj: dict, key: str, kind: type | tuple, where: str, default: Any = ...) -> Any:
        if key not in obj:
            if default is ...:
                raise self.fail(where, f"has no '{key}'")
            return default
        value = obj[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
            raise self.fail(where, f"'{key}' is {json.dumps(value)[:60]}, not {_kind_name(kind)}")
        return value


def _kind_name(kind: type | tuple) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({dict: "an object", list: "a list", str: "a string", int: "an integer",
                        bool: "a boolean", float: "a number", type(None): "null"}[k]
                       for k in kinds)  # fmt: skip


def _decode_node(r: _Reader, data: Any, n: int) -> NodeDef:
    where = f"node {n}"
    if not isinstance(data, dict):
        raise r.fail(where, "is not an object")
    name = r.get(data, "name", str, where)
    where = f"node '{name}'"
    if not name or ":" in name or name.startswith("^"):
        raise r.fail(where, "has an invalid name")
    op = r.get(data, "op", str, where)
    device = r.get(data, "device", str, where, "")
    inputs = []
    for i, item in enumerate(r.get(data, "inputs", list, where, [])):
        ok = isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
        if not ok or not _is_int(item[1]) or item[1] < 0:
            raise r.fail(where, f"input {i} is {json.dumps(item)[:60]}, not [node, output]")
        inputs.append((item[0], item[1]))
    control = r.get(data, "control_inputs", list, where, [])
    if not all(isinstance(c, str) for c in control):
        raise r.fail(where, "has a control input that is not a node name")
    attrs = {}
    for key, value in r.get(data, "attrs", dict, where, {}).items():
        try:
            attrs[key] = decode_value(value)
        except (ValueError, TypeError) as e:
            raise r.fail(where, f"attribute '{key}': {e}") from None
    dtypes, shapes = [], []
    for i, out in enumerate(r.get(data, "outputs", list, where, [])):
        if not isinstance(out, dict):
            raise r.fail(where, f"output {i} is not an object")
        try:
            dtypes.append(_dt.as_dtype(r.get(out, "dtype", str, f"{where} output {i}")))
            shapes.append(_decode_shape(out.get("shape")))
        except (ValueError, TypeError) as e:
            raise r.fail(f"{where} output {i}", str(e)) from None
    return NodeDef(name, op, inputs, list(control), device, attrs, dtypes, shapes)


def _tensor_name(r: _Reader, name: Any, outputs: dict[str, int], where: str) -> str:
    if not isinstance(name, str) or ":" not in name:
        raise r.fail(where, f"{json.dumps(name)[:60]} is not a tensor name 'op:index'")
    op, _, index = name.rpartition(":")
    if op not in outputs or not index.isdigit() or int(index) >= outputs[op]:
        raise r.fail(where, f"tensor {name} is not an output of a node of the graph")
    return name


def _decode_item(r: _Reader, data: Any, outputs: dict[str, int], where: str) -> Any:
    if not isinstance(data, dict) or len(data) != 1:
        raise r.fail(where, "is not a one-key object")
    ((tag, body),) = data.items()
    if tag == "tensor":
        return TensorRef(_tensor_name(r, body, outputs, where))
    if tag == "operation":
        if body not in outputs:
            raise r.fail(where, f"operation {json.dumps(body)[:60]} is not a node of the graph")
        return OperationRef(body)
    if tag == "variable":
        if not isinstance(body, dict):
            raise r.fail(where, "variable is not an object")
        initializer = r.get(body, "initializer_name", str, where)
        if initializer not in outputs:
            raise r.fail(where, f"initializer {initializer} is not a node of the graph")
        initial = r.get(body, "initial_value_name", str, where, "")
        return VariableDef(
            variable_name=_tensor_name(r, body.get("variable_name"), outputs, where),
            initializer_name=initializer,
            snapshot_name=_tensor_name(r, body.get("snapshot_name"), outputs, where),
            initial_value_name=_tensor_name(r, initial, outputs, where) if initial else "",
            trainable=r.get(body, "trainable", bool, where, True),
        )
    if tag == "value":
        try:
            return decode_value(body)
        except (ValueError, TypeError) as e:
            raise r.fail(where, str(e)) from None
    raise r.fail(where, f"unknown item kind {tag!r}")


def _in_input_order(r: _Reader, nodes: list[NodeDef]) -> list[NodeDef]:
    """`nodes` ordered so each follows its data and control inputs, else in file order."""
    position = {n.name: i for i, n in enumerate(nodes)}
    waiting = [0] * len(nodes)  # inputs not yet placed
    consumers: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        sources = {s for s, _ in node.inputs} | set(node.control_inputs)
        waiting[i] = len(sources)
        for src in sources:
            consumers[position[src]].append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for j in consumers[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(nodes):
        stuck = next(n.name for i, n in enumerate(nodes) if waiting[i])
        raise r.fail(f"node '{stuck}'", "is on a cycle of inputs")
    return order


def decode_meta_graph(data: Any, source: str = "<object>") -> MetaGraph:
    """The MetaGraph that `encode_meta_graph` encoded as `data`, fully validated."""
    r = _Reader(source)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise r.fail("top level", f'is not a tfc meta graph (no "format": "{FORMAT}")')
    version = r.get(data, "version", int, "top level")
    if version != VERSION:
        raise r.fail("top level", f"has format version {version}; this tfc reads {VERSION}")
    nodes = [_decode_node(r, n, i) for i, n in enumerate(r.get(data, "nodes", list, "top level"))]
    outputs: dict[str, int] = {}
    for node in nodes:
        if node.name in outputs:
            raise r.fail(f"node '{node.name}'", "is defined twice")
        outputs[node.name] = len(node.dtypes)
    for node in nodes:
        for src, index in node.inputs:
            if src not in outputs or index >= outputs[src]:
                raise r.fail(f"node '{node.name}'", f"input {src}:{index} is not in the graph")
        for src in node.control_inputs:
            if src not in outputs:
                raise r.fail(f"node '{node.name}'", f"control input {src} is not in the graph")
    collections = {}
    for key, items in r.get(data, "collections", dict, "top level", {}).items():
        if not isinstance(items, list):
            raise r.fail(f"collection '{key}'", "is not a list")
        collections[key] = [
            _decode_item(r, item, outputs, f"collection '{key}' item {i}")
            for i, item in enumerate(items)
        ]
    saver_def = None
    saver = r.get(data, "saver_def", dict, "top level", None)
    if saver is not None:
        var_list = r.get(saver, "var_list", dict, "saver_def")
        for key, op in var_list.items():
            if op not in outputs:
                raise r.fail("saver_def", f"variable {op!r} of key {key!r} is not in the graph")
        saver_def = SaverDef(
            var_list=dict(var_list),
            max_to_keep=r.get(saver, "max_to_keep", (int, type(None)), "saver_def", 5),
            keep_checkpoint_every_n_hours=float(r.get(
                saver, "keep_checkpoint_every_n_hours", (int, float), "saver_def", 10000.0)),
            sharded=r.get(saver, "sharded", bool, "saver_def", False),
            pad_step_number=r.get(saver, "pad_step_number", bool, "saver_def", False),
            save_relative_paths=r.get(saver, "save_relative_paths", bool, "saver_def", False),
        )  # fmt: skip
    meta_info = {}
    for key, value in r.get(data, "meta_info", dict, "top level", {}).items():
        try:
            meta_info[key] = decode_value(value)
        except (ValueError, TypeError) as e:
            raise r.fail(f"meta_info '{key}'", str(e)) from None
    return MetaGraph(_in_input_order(r, nodes), collections, saver_def, meta_info)


def write_meta_graph_file(path: str | os.PathLike, meta: MetaGraph, as_text: bool = True) -> None:
    """Write `meta` to `path` atomically: indented JSON, or compact with `as_text=False`."""
    data = encode_meta_graph(meta)
    if as_text:
        text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    write_file_atomically(path, [text.encode("utf-8")])


def read_meta_graph_file(path: str | os.PathLike) -> MetaGraph:
    """The validated MetaGraph in file `path`; MetaGraphFormatError says what is wrong."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.lstrip()[:1] == b"{":
        raise MetaGraphFormatError(
            f"meta graph {path}: is not JSON; tfc reads the meta graphs it writes itself "
            "(TensorFlow's MetaGraphDef protocol buffers are not read)"
        )
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MetaGraphFormatError(f"meta graph {path}: is not valid JSON: {e}") from None
    return decode_meta_graph(data, path)


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)
