"""What an operator's converter sees of one ONNX node (NodeContext), and the table of converters.

A converter is a function `convert(ctx: NodeContext) -> list[Tensor | None]` that builds tfc ops
computing the node's outputs from its inputs, registered for the operator types it handles with
`@converter("Relu", ...)`. It reads attributes with `ctx.attr`, input values known when the
graph is built with `ctx.const` / `ctx.require_const`, and raises `ctx.error(...)` for what tfc
cannot compute, which names the file, the node and the operator.

Image tensors are NCHW in ONNX and NHWC in tfc's convolutions and pools. A converter that works
channels-last asks `ctx.channels_last(x)` for the input and returns `ctx.channels_first(y)`: the
importer remembers which NCHW tensor is the transpose of which NHWC one, so a chain of image ops
(Conv, BatchNormalization, Relu, Add, MaxPool, Concat on channels) computes channels-last
throughout, and the transposes nothing reads are pruned when the program compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tfc.onnx.types as _types
import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Tensor
from tfc.onnx.loading import OnnxImportError
from tfc.ops.registry import constant_value

Converter = Callable[["NodeContext"], Sequence[Any]]

# (domain, op_type) -> converter; the default domain is ""
CONVERTERS: dict[tuple[str, str], Converter] = {}


def converter(*op_types: str, domain: str = "") -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of `op_types`."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            key = (domain, op_type)
            if key in CONVERTERS:
                raise ValueError(f"ONNX operator {op_type} has two converters")
            CONVERTERS[key] = fn
        return fn

    return register


def channels_last_perm(rank: int) -> list[int]:
    """NC... -> N...C"""
    return [0, *range(2, rank), 1]


def channels_first_perm(rank: int) -> list[int]:
    """N...C -> NC..."""
    return [0, rank - 1, *range(1, rank - 1)]


class NotKnownError(OnnxImportError):
    """A value a converter needs when the graph is built (an axis, a shape, a count) depends on
    run-time values: `values` names the ONNX values it is computed from. A caller that knows
    the graph inputs behind them can import again with those inputs as constants
    (tfc.onnx.backend does)."""

    def __init__(self, message: str, values: list[str]) -> None:
        super().__init__(message)
        self.values = list(values)


@dataclass
class Layouts:
    """Channels-last twins of channels-first tensors: twin[x] = transpose(x, N...C)."""

    twin: dict[Tensor, Tensor] = field(default_factory=dict)

    def channels_last(self, x: Tensor) -> Tensor:
        y = self.twin.get(x)
        if y is None:
            rank = len(x.shape)
            y = self.twin[x] = _array.transpose(x, channels_last_perm(rank))
        return y

    def channels_first(self, y: Tensor) -> Tensor:
        x = _array.transpose(y, channels_first_perm(len(y.shape)))
        self.twin[x] = y
        return x


@dataclass
class NodeContext:
    """One ONNX node as its converter sees it."""

    node: Any  # onnx.NodeProto
    inputs: list[Tensor | None]
    input_types: list[int | None]  # the inputs' ONNX element types
    output_types: list[int | None]  # the outputs' ONNX element types where known
    opset: int  # of the node's domain
    source: str  # how errors name the model (its file)
    graph: Graph
    layouts: Layouts
    # whether an ONNX value is computed from the values of graph inputs (not only their shapes)
    reads_graph_inputs: Callable[[str], bool] = lambda value: False
    # the outputs' static shapes as ONNX's shape inference gives them (None where it does not)
    output_shapes: list[tuple | None] = field(default_factory=list)
    # the dtypes of a subgraph's outputs for inputs of the given (dtype, shape)s (a trial
    # import: a loop makes its per-iteration arrays before its body is built)
    subgraph_dtypes: Callable[[Any, list[tuple[Any, Any]]], list[Any]] | None = None
    # the element type ONNX declares or infers for a value (by name), None where it does not
    value_type: Callable[[str], int | None] = lambda name: None
    # a subgraph (If's branches, Loop's and Scan's body) imported into the current graph with
    # its inputs bound to the given tensors: its outputs
    import_subgraph: Callable[[Any, list[Tensor]], list[Tensor]] | None = None

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def name(self) -> str:
        return self.node.name or (self.node.output[0] if self.node.output else "")

    @property
    def n_outputs(self) -> int:
        return len(self.node.output)

    def wants_output(self, j: int) -> bool:
        return j < len(self.node.output) and self.node.output[j] != ""

    # -- errors ---------------------------------------------------------------------------------
    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(node_message(self.source, self.node, self.opset, message))

    # -- inputs ---------------------------------------------------------------------------------
    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def input(self, i: int) -> Tensor:
        if not self.has_input(i):
            raise self.error(f"input {i} is required but missing")
        return self.inputs[i]  # type: ignore[return-value]

    def optional(self, i: int) -> Tensor | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def input_type(self, i: int) -> int | None:
        return self.input_types[i] if i < len(self.input_types) else None

    def const(self, i: int) -> np.ndarray | None:
        """Input `i`'s value when it is known as the graph is built (initializers, Constant
        nodes, shapes of static shapes and what is computed from them), else None."""
        t = self.optional(i)
        if t is None:
            return None
        return constant_value(t.graph, (t.op.name, t.value_index))

    def require_const(self, i: int, what: str) -> np.ndarray:
        value = self.const(i)
        if value is None:
            raise NotKnownError(
                node_message(
                    self.source,
                    self.node,
                    self.opset,
                    f"its {what} (input {i}, '{self.node.input[i]}') must be known "
                    "when the model is compiled, but it is computed from run-time "
                    "values: tfc compiles static shapes ahead of time (give the model's "
                    "inputs static shapes, e.g. batch=N)",
                ),
                [self.node.input[i]],
            )
        return value

    def subgraph(self, graph: Any, inputs: list[Tensor]) -> list[Tensor]:
        """The outputs of subgraph `graph` (a GraphProto attribute) built into the current
        default graph, its inputs bound to `inputs`; it reads the enclosing graph's values."""
        if self.import_subgraph is None:
            raise self.error("subgraphs cannot be imported here")
        return self.import_subgraph(graph, inputs)

    def needs_const(self, i: int) -> bool:
        """Whether input `i` is unknown when the graph is built because it is computed from the
        values of graph inputs (so require_const can bind them): not a shape computation that
        tfc folds once the program's shapes are known."""
        return self.const(i) is None and self.reads_graph_inputs(self.node.input[i])

    def shape(self, i: int) -> tuple | None:
        """Input `i`'s static shape (None dims unknown), None when its rank is unknown."""
        return self.input(i)._shape_tuple

    def rank(self, i: int) -> int:
        shape = self.shape(i)
        if shape is None:
            raise self.error(f"the rank of input {i} must be known when the model is imported")
        return len(shape)

    # -- attributes -----------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        for a in self.node.attribute:
            if a.name == name:
                return attribute_value(a)
        return default

    def has_attr(self, name: str) -> bool:
        return any(a.name == name for a in self.node.attribute)

    # -- layouts --------------------------------------------------------------------------------
    def channels_last(self, x: Tensor) -> Tensor:
        """`x` (N, C, ...) as (N, ..., C): its twin when it has one, else a transpose."""
        return self.layouts.channels_last(x)

    def channels_first(self, y: Tensor) -> Tensor:
        """The ONNX value of channels-last result `y`, remembered as y's twin."""
        return self.layouts.channels_first(y)

    def twin(self, x: Tensor) -> Tensor | None:
        return self.layouts.twin.get(x)

    # -- dtypes ---------------------------------------------------------------------------------
    def compute_dtype(self, elem_type: int, what: str) -> _dt.DType:
        try:
            return _types.compute_dtype(elem_type, what)
        except TypeError as e:
            raise self.error(str(e)) from None


def attribute_value(a: Any) -> Any:
    """An AttributeProto's value as Python: ints, floats, str, lists, NumPy arrays, graphs."""
    from onnx import AttributeProto, numpy_helper

    kind = a.type
    if kind == AttributeProto.INT:
        return int(a.i)
    if kind == AttributeProto.FLOAT:
        return float(a.f)
    if kind == AttributeProto.STRING:
        return a.s.decode("utf-8", errors="replace")
    if kind == AttributeProto.INTS:
        return [int(v) for v in a.ints]
    if kind == AttributeProto.FLOATS:
        return [float(v) for v in a.floats]
    if kind == AttributeProto.STRINGS:
        return [s.decode("utf-8", errors="replace") for s in a.strings]
    if kind == AttributeProto.TENSOR:
        return numpy_helper.to_array(a.t)
    if kind == AttributeProto.GRAPH:
        return a.g
    if kind == AttributeProto.GRAPHS:
        return list(a.graphs)
    if kind == AttributeProto.TENSORS:
        return [numpy_helper.to_array(t) for t in a.tensors]
    if kind == AttributeProto.SPARSE_TENSOR:
        return a.sparse_tensor
    return None


def node_message(source: str, node: Any, opset: int, message: str) -> str:
    """How an error about `node` reads: the file, the node, the operator and its opset."""
    name = node.name or (node.output[0] if node.output else "?")
    domain = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return f"{source}: node '{name}' (operator {domain}{node.op_type}, opset {opset}): {message}"
