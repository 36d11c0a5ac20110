"""`tf.import_graph_def`: a GraphDef (TensorFlow's, or tfc's own) added to the current graph.

Every node maps onto tfc's op of the same type: its attributes converted (tfc/graphdef/attrs.py),
the type attributes tfc reads off the inputs checked against them and dropped, TensorFlow's
attributes that tfc does not keep accepted at their defaults, and the op's shape rule run on its
inputs (shapes the GraphDef records in `_output_shapes` refine the inferred ones). The op types
TensorFlow spells differently or fuses are converted (tfc/graphdef/tf_ops.py). A node tfc cannot
import — an unknown op, a missing input, a function, a dtype tfc lacks — stops the import with
an error naming the node and its op, and the graph is left as it was.
"""

from __future__ import annotations

import heapq
from typing import Any

from tfc.graphdef.attrs import TFC_ONLY_ATTRS, derived_type_attrs, from_attr_value
from tfc.graphdef.tf_ops import CONVERSIONS, UNSUPPORTED, ConversionContext
from tfc.io.graph_pb import GraphDef, NodeDef
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.ir.tensor_shape import merge_shapes, shape_str
from tfc.ops.registry import REGISTRY, apply_op

__all__ = ["GraphDefImportError", "import_graph_def", "parse_tensor_name"]

# TensorFlow attributes tfc's ops do not keep, accepted at the value that means what tfc does
_TF_DEFAULTS: dict[str, Any] = {
    "explicit_paddings": [],
    "Truncate": False,
    "grad_a": False,
    "grad_b": False,
    "grad_x": False,
    "grad_y": False,
    "incompatible_shape_error": True,
    "bad_indices_policy": "",
}
_TF_OP_DEFAULTS: dict[str, dict[str, Any]] = {
    "VariableV2": {"container": "", "shared_name": ""},
}
# Attributes TensorFlow's ops declare with a default, which a GraphDef may leave out (one
# written by hand, or by a TensorFlow older than the attribute): tfc's ops read them.
_NHWC = {"data_format": "NHWC"}
_TF_ATTR_DEFAULTS: dict[str, dict[str, Any]] = {
    "Placeholder": {"shape": None},
    "MatMul": {"transpose_a": False, "transpose_b": False},
    "BatchMatMulV2": {"adj_x": False, "adj_y": False},
    "Conv2D": {**_NHWC, "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True},
    "DepthwiseConv2dNative": {**_NHWC, "dilations": [1, 1, 1, 1]},
    "MaxPool": _NHWC,
    "AvgPool": _NHWC,
    "BiasAdd": _NHWC,
    **dict.fromkeys(["Sum", "Mean", "Max", "Min", "Prod", "All", "Any"], {"keep_dims": False}),
    "ArgMax": {"output_type": _dt.int64},
    "ArgMin": {"output_type": _dt.int64},
    "Shape": {"out_type": _dt.int32},
    "Size": {"out_type": _dt.int32},
    "Squeeze": {"squeeze_dims": []},
    "Pack": {"axis": 0},
    "Unpack": {"axis": 0},
    "LeakyRelu": {"alpha": 0.2},
    "GatherV2": {"batch_dims": 0},
    "Range": {"Tidx": _dt.int32},
    "StridedSlice": dict.fromkeys(
        ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"], 0
    ),
}


class GraphDefImportError(ValueError):
    """A GraphDef that tfc cannot import; the message names the node and its op."""


def parse_tensor_name(name: str) -> tuple[str, int]:
    """("x", 1) for "x:1"; ("x", 0) for "x"."""
    node, sep, index = name.rpartition(":")
    if sep and index.isdigit():
        return node, int(index)
    return name, 0


def _shape(t: Tensor) -> tuple | None:
    return None if t.shape.ndims is None else tuple(t.shape.as_list())


def _order(nodes: dict[str, NodeDef]) -> list[str]:
    """The node names with every node after its inputs (GraphDef order where it allows)."""
    position = {name: i for i, name in enumerate(nodes)}
    waiting: dict[str, int] = {}
    readers: dict[str, list[str]] = {name: [] for name in nodes}
    for name, nd in nodes.items():
        sources = set()
        for inp in nd.input:
            src = parse_tensor_name(inp[1:] if inp.startswith("^") else inp)[0]
            if src not in nodes:
                raise GraphDefImportError(
                    f"GraphDef node '{name}' ({nd.op}) has input '{inp}', which names no node "
                    "of the GraphDef"
                )
            sources.add(src)
        waiting[name] = len(sources)
        for src in sources:
            readers[src].append(name)
    ready = [(position[n], n) for n, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for reader in readers[name]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, (position[reader], reader))
    if len(order) < len(nodes):
        stuck = sorted(n for n, count in waiting.items() if count > 0)
        raise GraphDefImportError(
            f"GraphDef has a cycle through nodes {', '.join(stuck[:6])}"
            f"{' ...' if len(stuck) > 6 else ''} (TensorFlow while loops are not imported)"
        )
    return order


class _Importer:
    def __init__(self, graph_def: GraphDef, graph: Graph, prefix: str,
                 input_map: dict[str, Any]) -> None:  # fmt: skip
        self.graph = graph
        self.prefix = prefix
        self.input_map = input_map
        self.nodes: dict[str, NodeDef] = {}
        for nd in graph_def.node:
            if nd.name in self.nodes:
                raise GraphDefImportError(f"GraphDef has two nodes named '{nd.name}'")
            if not nd.name:
                raise GraphDefImportError(f"GraphDef has a node of op '{nd.op}' without a name")
            self.nodes[nd.name] = nd
        self.functions = {f.signature.name for f in graph_def.library.function}
        self.outputs: dict[str, list[Tensor]] = {}
        self.ops: dict[str, str] = {}  # GraphDef node -> the tfc op that carries its name
        self.added: list[str] = []
        self.used_outputs: dict[str, set[int]] = {n: set() for n in self.nodes}
        for nd in self.nodes.values():
            for inp in nd.input:
                if not inp.startswith("^"):
                    src, index = parse_tensor_name(inp)
                    if src in self.used_outputs:
                        self.used_outputs[src].add(index)

    def scoped(self, name: str) -> str:
        return self.prefix + name

    def where(self, nd: NodeDef) -> str:
        return f"GraphDef node '{nd.name}' ({nd.op})"

    def run(self) -> None:
        unmapped = [k for k in self.input_map
                    if parse_tensor_name(k.lstrip("^"))[0] not in self.nodes]  # fmt: skip
        if unmapped:
            raise ValueError(
                f"Attempted to map inputs that were not found in graph_def: [{', '.join(unmapped)}]"
            )
        clashes = [self.scoped(n) for n in self.nodes if self.scoped(n) in self.graph.nx]
        if clashes:
            raise ValueError(
                f"Cannot import the GraphDef: the graph already has nodes named "
                f"{', '.join(clashes[:5])}{' ...' if len(clashes) > 5 else ''}; import it with "
                "a name (a prefix), or into a new graph"
            )
        for name in _order(self.nodes):
            self.import_node(self.nodes[name])

    def tensor(self, nd: NodeDef, inp: str) -> Tensor:
        src, index = parse_tensor_name(inp)
        key = f"{src}:{index}"
        if key in self.input_map or (index == 0 and src in self.input_map):
            mapped = self.input_map.get(key, self.input_map.get(src))
            if not isinstance(mapped, Tensor):
                raise TypeError(f"input_map[{key!r}] must be a Tensor, got {type(mapped).__name__}")
            return mapped
        outputs = self.outputs[src]
        if index >= len(outputs) or outputs[index] is None:
            raise GraphDefImportError(
                f"{self.where(nd)} has input '{inp}', but '{src}' ({self.nodes[src].op}) has "
                f"{len(outputs)} output{'s' if len(outputs) != 1 else ''} in tfc"
            )
        return outputs[index]

    def control(self, inp: str) -> str:
        src = inp[1:]
        mapped = self.input_map.get(inp)
        if mapped is not None:
            op = mapped.op if isinstance(mapped, Tensor) else mapped
            if not isinstance(op, Operation):
                raise TypeError(f"input_map[{inp!r}] must be an Operation or a Tensor")
            return op.name
        return self.ops[src]

    def attrs(self, nd: NodeDef) -> dict[str, Any]:
        out = {}
        for key in sorted(nd.attr):
            try:
                out[key] = from_attr_value(key, nd.attr[key])
            except (TypeError, ValueError) as e:
                raise GraphDefImportError(f"{self.where(nd)}: {e}") from None
        return out

    def import_node(self, nd: NodeDef) -> None:
        where = self.where(nd)
        if nd.op in self.functions:
            raise GraphDefImportError(
                f"{where} calls a function of the GraphDef's library; tfc imports graphs "
                "without functions"
            )
        if nd.op in UNSUPPORTED:
            raise GraphDefImportError(f"{where} cannot be imported: {UNSUPPORTED[nd.op]}")
        if nd.op not in CONVERSIONS and nd.op not in REGISTRY:
            raise GraphDefImportError(
                f"{where}: tfc has no op '{nd.op}' (op type not registered); the GraphDef "
                "cannot be imported"
            )
        inputs = [self.tensor(nd, i) for i in nd.input if not i.startswith("^")]
        controls = [self.control(i) for i in nd.input if i.startswith("^")]
        attrs = self.attrs(nd)
        recorded = attrs.pop("_output_shapes", None)  # a hint for the shapes, not an attribute
        name = self.scoped(nd.name)
        before = set(self.graph.nx)
        try:
            with self.graph.name_scope(None):
                if nd.op in CONVERSIONS:
                    ctx = ConversionContext(name, nd.op, inputs, attrs, self.graph, where,
                                            self.used_outputs[nd.name])  # fmt: skip
                    outputs = CONVERSIONS[nd.op](ctx)
                else:
                    outputs = self.generic(nd, name, inputs, attrs)
        except GraphDefImportError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, NotImplementedError) as e:
            raise GraphDefImportError(f"{where} is not valid for tfc: {e}") from None
        finally:
            self.added.extend(n for n in self.graph.nx if n not in before)
        if name not in self.graph.nx:
            raise AssertionError(f"the conversion of {nd.op} made no op named {name}")
        for src in controls:
            self.graph.add_control_edge(src, name)
        if nd.device:
            self.graph.node(name)["device"] = nd.device
        if recorded is not None and nd.op not in CONVERSIONS:
            self.refine_shapes(nd, name, recorded)
        self.outputs[nd.name] = outputs
        self.ops[nd.name] = name

    def generic(self, nd: NodeDef, name: str, inputs: list[Tensor], attrs: dict) -> list:
        derived = derived_type_attrs(nd.op, [t.dtype for t in inputs])
        for key, expected in derived.items():
            if key in attrs:
                if attrs[key] != expected:
                    shown = getattr(expected, "name", expected)
                    raise GraphDefImportError(
                        f"{self.where(nd)}: attribute {key}={_show(attrs[key])} does not match "
                        f"its inputs, which give {shown}"
                    )
                del attrs[key]
        defaults = {**_TF_DEFAULTS, **_TF_OP_DEFAULTS.get(nd.op, {})}
        for key, default in defaults.items():
            if key in attrs:
                value = attrs.pop(key)
                if (list(value) if isinstance(value, (list, tuple)) else value) != default:
                    raise GraphDefImportError(
                        f"{self.where(nd)}: attribute {key}={_show(value)} is not supported "
                        f"(tfc computes {key}={_show(default)})"
                    )
        for key, value in {
            **_TF_ATTR_DEFAULTS.get(nd.op, {}),
            **TFC_ONLY_ATTRS.get(nd.op, {}),
        }.items():
            attrs.setdefault(key, value)
        op = apply_op(nd.op, inputs, attrs, name=name + "/")
        return list(op.outputs)

    def refine_shapes(self, nd: NodeDef, name: str, recorded: Any) -> None:
        node = self.graph.node(name)
        if not isinstance(recorded, list) or len(recorded) != len(node["shapes"]):
            return  # a malformed hint is no reason to refuse the graph
        refined = []
        for i, (inferred, hint) in enumerate(zip(node["shapes"], recorded)):
            merged = merge_shapes(inferred, hint)
            if merged is False:
                raise GraphDefImportError(
                    f"{self.where(nd)}: output {i} is recorded as {shape_str(hint)}, but its "
                    f"inputs give {shape_str(inferred)}"
                )
            refined.append(merged)
        node["shapes"] = refined

    def undo(self) -> None:
        for name in reversed(self.added):
            if name in self.graph.nx:
                self.graph.remove_node(name)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return getattr(value, "name", None) or repr(value)


def _mark_names_used(graph: Graph, names: list[str]) -> None:
    """Later name scopes and ops avoid the imported names ("dense" after "dense/kernel")."""
    prefixes = {n[:i] for n in names for i, c in enumerate(n) if c == "/"}
    with graph.name_scope(None):
        for prefix in sorted(prefixes):
            if graph.unique_name(prefix, mark_as_used=False) == prefix:
                graph.unique_name(prefix)


def _normalized_input_map(input_map: Any) -> dict[str, Any]:
    if input_map is None:
        return {}
    if not isinstance(input_map, dict):
        raise TypeError("input_map must be a dictionary mapping strings to Tensor objects.")
    out = {}
    for key, value in input_map.items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be strings, got {key!r}")
        if not key.startswith("^"):
            src, index = parse_tensor_name(key)
            key = f"{src}:{index}"
        out[key] = value
    return out


def import_graph_def(
    graph_def: GraphDef,
    input_map: dict[str, Any] | None = None,
    return_elements: list[str] | None = None,
    name: str | None = None,
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list[Any] | None:
    """`tf.import_graph_def`: add the nodes of `graph_def` to the default graph, under the
    name scope `name` ("import" by default; "" for none).

    `input_map` maps tensor names of graph_def ("x:0", "x") to Tensors of this graph that
    replace them ("^x" to an Operation, for control inputs); `return_elements` names the
    Operations ("x") and Tensors ("x:0") to return, in order. `op_dict` and `producer_op_list`
    are accepted and unused, as in TF1 (deprecated there).
    """
    if not isinstance(graph_def, GraphDef):
        raise TypeError(
            f"graph_def must be a GraphDef proto, got {type(graph_def).__name__} "
            "(tf.GraphDef.FromString parses bytes)"
        )
    mapping = _normalized_input_map(input_map)
    if return_elements is not None and not all(isinstance(e, str) for e in return_elements):
        raise TypeError("return_elements must be a list of strings.")
    graph = get_default_graph()
    if name == "":
        prefix = ""
    else:
        with graph.name_scope(name or "import") as scope:
            prefix = scope
    importer = _Importer(graph_def, graph, prefix, mapping)
    try:
        importer.run()
    except BaseException:
        importer.undo()
        raise
    _mark_names_used(graph, importer.added)
    if return_elements is None:
        return None
    results: list[Any] = []
    for element in return_elements:
        if ":" in element and element.rpartition(":")[2].isdigit():
            src, index = parse_tensor_name(element)
            if src not in importer.outputs:
                raise ValueError(f"Requested return tensor '{element}' not found in graph def")
            outputs = importer.outputs[src]
            if index >= len(outputs) or outputs[index] is None:
                raise ValueError(f"Requested return tensor '{element}' not found in graph def")
            results.append(outputs[index])
        else:
            if element not in importer.ops:
                raise ValueError(f"Requested return node '{element}' not found in graph def")
            results.append(graph.get_operation_by_name(importer.ops[element]))
    return results
