"""An ONNX model as a tfc graph: inputs become placeholders, initializers constants (or variables,
to fine-tune), and every node the ops its converter builds (tfc/onnx/convert_*.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import tfc.onnx.convert_array  # noqa: F401  (each module registers its converters)
import tfc.onnx.convert_attention  # noqa: F401
import tfc.onnx.convert_control  # noqa: F401
import tfc.onnx.convert_index  # noqa: F401
import tfc.onnx.convert_math  # noqa: F401
import tfc.onnx.convert_nn  # noqa: F401
import tfc.onnx.convert_quantize  # noqa: F401
import tfc.onnx.convert_recurrent  # noqa: F401
import tfc.onnx.convert_reduce  # noqa: F401
import tfc.onnx.convert_resize  # noqa: F401
import tfc.onnx.convert_signal  # noqa: F401
import tfc.onnx.types as _types
import tfc.ops.math as _math
import tfc.variables as _variables
from tfc.ir.graph import Graph, Tensor
from tfc.onnx.loading import OnnxImportError, default_opset, infer_types, load_model
from tfc.onnx.node import CONVERTERS, Layouts, NodeContext, NotKnownError, node_message
from tfc.ops.constant import constant, placeholder
from tfc.ops.registry import constant_value

_NAME = re.compile(r"[^A-Za-z0-9_.\-/]")

# operators whose integer results may leave a narrow integer type's range: an int8 or uint8
# result held in int32 wraps as the narrow type would (two's complement)
_WRAPPING = {
    "Add",
    "Sub",
    "Mul",
    "Neg",
    "Abs",
    "Sum",
    "Pow",
    "CumSum",
    "ReduceSum",
    "ReduceProd",
    "MatMul",
    "Gemm",
    "Einsum",
    "BitShift",
    "Mean",
    "ReduceSumSquare",
    "Cast",
    "CastLike",
    "BitwiseNot",
}


@dataclass
class ImportedModel:
    """An imported model: its graph and its inputs and outputs, in the model's order, with the
    ONNX names and element types of each (a narrow type is computed in a wider tfc dtype)."""

    graph: Graph
    inputs: list[Tensor]
    outputs: list[Tensor]
    input_names: list[str]
    output_names: list[str]
    input_types: list[int]
    output_types: list[int]
    source: str
    opset: int
    constants: dict[str, np.ndarray]  # graph inputs imported as constants (by name)


def import_model(
    model: Any,
    batch: int | None = None,
    trainable: bool = False,
    *,
    graph: Graph | None = None,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
) -> tuple[Graph, list[Tensor], list[Tensor]]:
    """`graph, inputs, outputs = tfc.onnx.import_model(model)`: an ONNX model (a ModelProto, its
    bytes or a file path) as a tfc graph.

    `inputs` and `outputs` come back as lists of tensors in the model's order: placeholders to
    feed and the tensors to fetch. `batch` replaces the first dimension of every input (None
    keeps the model's; its symbolic dimensions become None, compiled per fed shape). With
    `trainable`, float initializers become `tf.Variable`s (trainable, in GLOBAL_VARIABLES) that
    an optimizer can fine-tune; otherwise they are constants. `graph` (default: a new Graph)
    receives the ops. `inputs`/`outputs` given as ONNX value names cut a subgraph: those values
    become the placeholders and the fetched tensors. ONNX types tfc has no dtype for are held in a
    wider one (uint8 and int8 in int32, float16 in float32)."""
    m = import_graph(model, batch, trainable, graph=graph, input_names=inputs, output_names=outputs)
    return m.graph, m.inputs, m.outputs


def import_graph(
    model: Any,
    batch: int | None = None,
    trainable: bool = False,
    *,
    graph: Graph | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    scope: str | None = None,
    constants: Mapping[str, Any] | None = None,
) -> ImportedModel:
    """import_model, keeping the ONNX names and element types (tfc.onnx.backend, tfc compile).
    `scope` names a name scope that holds every op (several models in one graph). `constants`
    maps graph inputs to values they are imported as (constants, not placeholders): a model
    whose axes or shapes are inputs is compiled for their values."""
    proto, source = load_model(model)
    graph = graph if graph is not None else Graph()
    importer = _Importer(proto, source, graph, batch, trainable, dict(constants or {}))
    with graph.as_default():
        if scope:
            with graph.name_scope(scope):
                return importer.run(input_names, output_names)
        return importer.run(input_names, output_names)


def op_name(name: str, fallback: str) -> str:
    """An ONNX name as a tfc op name (letters, digits and _ . - /, not starting with - or /)."""
    cleaned = _NAME.sub("_", name).strip("/")
    if not cleaned or cleaned[0] in "-_/":
        cleaned = fallback + ("_" + cleaned.lstrip("-_/") if cleaned.strip("-_/") else "")
    return cleaned


class _Importer:
    def __init__(
        self,
        proto: Any,
        source: str,
        graph: Graph,
        batch: int | None,
        trainable: bool,
        constants: dict[str, Any],
    ) -> None:
        self.constants = constants
        self.proto = proto
        self.source = source
        self.graph = graph
        self.batch = batch
        self.trainable = trainable
        self.opsets = {
            ("" if e.domain == "ai.onnx" else e.domain): int(e.version) for e in proto.opset_import
        }
        self.opsets.setdefault("", default_opset(proto))
        self.types = infer_types(proto)
        self.values: dict[str, Tensor] = {}
        self.elem_types: dict[str, int] = {}
        self.layouts = Layouts()

    # -- the walk -------------------------------------------------------------------------------
    def run(
        self, input_names: Sequence[str] | None, output_names: Sequence[str] | None
    ) -> ImportedModel:
        g = self.proto.graph
        initializers = {t.name: t for t in g.initializer}
        if input_names is None:
            input_names = [i.name for i in g.input if i.name not in initializers]
        if output_names is None:
            output_names = [o.name for o in g.output]
        known = self._known_names(g)
        for name in [*input_names, *output_names]:
            if name not in known:
                raise OnnxImportError(
                    f"{self.source}: the model has no value named '{name}' (graph inputs: "
                    f"{[i.name for i in g.input if i.name not in initializers][:8]}, outputs: "
                    f"{[o.name for o in g.output][:8]})"
                )
        unknown = sorted(set(self.constants) - set(input_names))
        if unknown:
            raise OnnxImportError(f"{self.source}: constants {unknown} name no model input")
        declared = {info.name: info for info in [*g.input, *g.value_info, *g.output]}
        for name in input_names:
            self._placeholder(name, declared.get(name))
        fed = [n for n in input_names if n not in self.constants]
        inputs = [self.values[n] for n in fed]
        needed = self._needed_nodes(g, set(input_names), list(output_names))
        # in the order the nodes first read them: a set's order, which the hash seed sets, made
        # each process's graph (and generated source) differ, so no build cache hit across them
        used = dict.fromkeys(n for node in needed for n in node.input)
        for name in [*used, *output_names]:
            if name in initializers and name not in self.values:
                self._initializer(initializers[name])
        for node in needed:
            self._convert(node)
        outputs = []
        for name in output_names:
            if name not in self.values:
                raise OnnxImportError(
                    f"{self.source}: the model output '{name}' is not computed by any node"
                )
            outputs.append(self.values[name])
        return ImportedModel(
            self.graph,
            inputs,
            outputs,
            fed,
            list(output_names),
            [self.elem_types[n] for n in fed],
            [self._declared_type(n) for n in output_names],
            self.source,
            self.opsets[""],
            {n: self.constants[n] for n in input_names if n in self.constants},
        )

    def _known_names(self, g: Any) -> set[str]:
        names = {i.name for i in g.input} | {t.name for t in g.initializer}
        for node in g.node:
            names.update(node.output)
        return names

    def _needed_nodes(self, g: Any, cut: set[str], outputs: list[str]) -> list[Any]:
        """The nodes the outputs need, in the model's (topological) order, none behind a cut
        input; a node whose subgraphs read outer values needs those values' producers too."""
        producer = {}
        for index, node in enumerate(g.node):
            for out in node.output:
                if out:
                    producer[out] = index
        wanted: set[int] = set()
        stack = [n for n in outputs if n not in cut]
        while stack:
            name = stack.pop()
            index = producer.get(name)
            if index is None or index in wanted:
                continue
            wanted.add(index)
            node = g.node[index]
            for n in [*node.input, *_outer_names(node)]:
                if n and n not in cut:
                    stack.append(n)
        return [g.node[i] for i in sorted(wanted)]

    def _declared_type(self, name: str) -> int:
        t = self.types.get(name)
        if t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type:
            return int(t.tensor_type.elem_type)
        return self.elem_types[name]

    # -- sources of values ----------------------------------------------------------------------
    def _placeholder(self, name: str, info: Any) -> Tensor:
        t = info.type if info is not None else self.types.get(name)
        if t is None or not t.HasField("tensor_type"):
            kind = "no type" if t is None else f"a {t.WhichOneof('value')}"
            raise OnnxImportError(
                f"{self.source}: input '{name}' has {kind}; tfc imports tensor inputs only"
            )
        elem = int(t.tensor_type.elem_type)
        try:
            dtype = _types.compute_dtype(elem, f"input '{name}'")
        except TypeError as e:
            raise OnnxImportError(f"{self.source}: {e}") from None
        shape: list[int | None] | None = None
        if t.tensor_type.HasField("shape"):
            shape = [
                int(d.dim_value) if d.HasField("dim_value") else None
                for d in t.tensor_type.shape.dim
            ]
            if self.batch is not None and shape:
                shape[0] = int(self.batch)
        if name in self.constants:
            value = np.asarray(self.constants[name])
            if (
                shape is not None
                and value.size == int(np.prod([d or 1 for d in shape]))
                and (all(d is not None for d in shape))
            ):
                value = value.reshape(shape)  # a scalar input given as one element, say
            self.values[name] = constant(
                value.astype(dtype.np), dtype=dtype, name=op_name(name, "input")
            )
            self.elem_types[name] = elem
            return self.values[name]
        ph = placeholder(dtype, shape, name=op_name(name, "input"))
        self.values[name] = ph
        self.elem_types[name] = elem
        return ph

    def _initializer(self, proto: Any, trainable: bool | None = None) -> None:
        from onnx import numpy_helper

        elem = int(proto.data_type)
        what = f"initializer '{proto.name}'"
        try:
            dtype = _types.compute_dtype(elem, what)
            value = numpy_helper.to_array(proto)
        except (TypeError, ValueError) as e:
            raise OnnxImportError(f"{self.source}: {e}") from None
        value = np.asarray(value).astype(dtype.np)
        name = op_name(proto.name, "initializer")
        if (self.trainable if trainable is None else trainable) and dtype.is_floating:
            var = _variables.Variable(value, name=name, trainable=True)
            tensor = var.value()
        else:
            tensor = constant(value, dtype=dtype, name=name)
        self.values[proto.name] = tensor
        self.elem_types[proto.name] = elem

    # -- one node -------------------------------------------------------------------------------
    def _convert(self, node: Any, opsets: dict[str, int] | None = None) -> None:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opsets = opsets or self.opsets
        opset = opsets.get(domain, 0)
        convert = CONVERTERS.get((domain, node.op_type))
        if convert is None:
            body = self._function_body(node, domain, opset)
            if body is None:
                raise OnnxImportError(
                    node_message(self.source, node, opset, "tfc has no converter for this operator")
                )
            nodes, body_opsets = body
            try:
                for inner in nodes:  # an operator ONNX defines as a function: its body's nodes
                    self._convert(inner, {**opsets, **body_opsets})
            except NotKnownError as e:  # the body's values come from the node's inputs
                raise NotKnownError(str(e), [*e.values, *node.input]) from e
            return
        inputs: list[Tensor | None] = []
        for name in node.input:
            if not name:
                inputs.append(None)
            elif name in self.values:
                inputs.append(self.values[name])
            else:
                raise OnnxImportError(
                    node_message(
                        self.source,
                        node,
                        opset,
                        f"its input '{name}' is not computed "
                        "before it (the nodes are not in topological order)",
                    )
                )
        ctx = NodeContext(
            node=node,
            inputs=inputs,
            input_types=[self.elem_types.get(n) if n else None for n in node.input],
            output_types=[self._inferred_type(n) for n in node.output],
            opset=opset,
            source=self.source,
            graph=self.graph,
            layouts=self.layouts,
            reads_graph_inputs=lambda value: bool(graph_inputs_behind(self.proto, value)),
            output_shapes=[self._inferred_shape(n) for n in node.output],
            subgraph_dtypes=self.subgraph_output_dtypes,
            import_subgraph=self.import_subgraph,
            value_type=self._inferred_type,
        )
        scope = op_name(node.name or (node.output[0] if node.output else ""), node.op_type)
        try:
            with self.graph.name_scope(scope):
                results = list(convert(ctx))
        except OnnxImportError:
            raise
        except (ValueError, TypeError, NotImplementedError, IndexError, KeyError) as e:
            raise OnnxImportError(node_message(self.source, node, opset, str(e))) from e
        for j, out in enumerate(node.output):
            if not out:
                continue
            if j >= len(results) or results[j] is None:
                raise OnnxImportError(
                    node_message(self.source, node, opset, f"tfc does not compute its output {j}")
                )
            tensor = results[j]
            elem = ctx.output_types[j]
            if elem is None or not _types.supported(elem):
                if elem is not None:
                    raise ctx.error(
                        f"its output '{out}' has element type {_types.name(elem)}, which tfc "
                        "does not compute"
                    )
                elem = _types.onnx_type(tensor.dtype)
            expected = _types.COMPUTE[elem]
            if tensor.dtype != expected:
                raise ctx.error(
                    f"output {j} is {tensor.dtype.name} where {_types.name(elem)} "
                    f"({expected.name}) is declared"
                )
            if elem in _types.INTEGER_RANGES and node.op_type in _WRAPPING:
                tensor = wrap_integer(tensor, elem)
            self.values[out] = tensor
            self.elem_types[out] = elem

    def _function_body(self, node: Any, domain: str, opset: int) -> tuple[list, dict] | None:
        """The nodes of the function ONNX's schema defines operator `node` as (for `opset`,
        built for the node's input types when the function depends on them), renamed into
        the node's scope; None when it has none."""
        import onnx

        try:
            schema = onnx.defs.get_schema(node.op_type, opset, domain)
        except onnx.defs.SchemaError:
            return None
        function = None
        versions = sorted(v for v in schema.function_opset_versions if v <= opset)
        if versions:
            function = onnx.FunctionProto()
            function.ParseFromString(schema.get_function_with_opset_version(versions[-1]))
        else:
            versions = sorted(
                v for v in schema.context_dependent_function_opset_versions if v <= opset
            )
            if not versions:
                return None
            types = []
            for name in node.input:
                if not name:
                    types.append(onnx.TypeProto())
                    continue
                t = self.values[name]
                elem = self.elem_types.get(name) or _types.onnx_type(t.dtype)
                shape = t._shape_tuple
                types.append(onnx.helper.make_tensor_type_proto(elem, shape))
            with_defaults = onnx.NodeProto()
            with_defaults.CopyFrom(node)
            given = {a.name for a in node.attribute}
            for attr_name, attr in schema.attributes.items():
                if attr_name not in given and attr.default_value.name:
                    with_defaults.attribute.extend([attr.default_value])
            function = onnx.FunctionProto()
            function.ParseFromString(
                schema.get_context_dependent_function_with_opset_version(
                    versions[-1],
                    with_defaults.SerializeToString(),
                    [t.SerializeToString() for t in types],
                )
            )
        body_opsets = {
            ("" if e.domain == "ai.onnx" else e.domain): int(e.version)
            for e in function.opset_import
        }
        prefix = op_name(node.name or node.output[0], node.op_type) + "/"
        return expand_function(node, function, schema, prefix), body_opsets

    def _inferred_shape(self, name: str) -> tuple | None:
        t = self.types.get(name) if name else None
        if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            return None
        dims = t.tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            return None
        return tuple(int(d.dim_value) for d in dims)

    def import_subgraph(self, g: Any, inputs: list[Tensor]) -> list[Tensor]:
        """Subgraph `g` built into the current default graph (a branch or a loop body that
        tfc's control flow is building), its inputs bound to `inputs`. Its values and the
        channels-last twins made inside stay inside: the enclosing graph's tables are
        restored after."""
        saved = (self.values, self.elem_types, self.types, self.layouts)
        self.values, self.elem_types = dict(self.values), dict(self.elem_types)
        self.types, self.layouts = dict(self.types), Layouts(dict(self.layouts.twin))
        try:
            for info in [*g.input, *g.value_info, *g.output]:
                if info.type.WhichOneof("value") is not None and info.name not in self.types:
                    self.types[info.name] = info.type
            if len(inputs) != len(g.input):
                raise OnnxImportError(
                    f"{self.source}: subgraph '{g.name}' takes {len(g.input)} inputs, "
                    f"given {len(inputs)}"
                )
            for name in set(_outer_names_of_graph(g)):
                # enclosing values known as the graph is built are constants inside too (a
                # captured value would hide them from the converters that need them)
                outer = self.values.get(name)
                known = (
                    None
                    if outer is None
                    else constant_value(outer.graph, (outer.op.name, outer.value_index))
                )
                if known is not None:
                    self.values[name] = constant(known, dtype=outer.dtype)
            for info, tensor in zip(g.input, inputs):
                self.values[info.name] = tensor
                elem = info.type.tensor_type.elem_type if info.type.HasField("tensor_type") else 0
                self.elem_types[info.name] = int(elem) or _types.onnx_type(tensor.dtype)
            for init in g.initializer:
                self._initializer(init, trainable=False)
            for node in g.node:
                self._convert(node)
            missing = [o.name for o in g.output if o.name not in self.values]
            if missing:
                raise OnnxImportError(f"{self.source}: subgraph '{g.name}' computes no {missing}")
            return [self.values[o.name] for o in g.output]
        finally:
            self.values, self.elem_types, self.types, self.layouts = saved

    def subgraph_output_dtypes(self, g: Any, inputs: list[tuple[Any, Any]]) -> list[Any]:
        """The dtypes of subgraph `g`'s outputs for inputs of these (dtype, shape)s, from a
        trial import into a scratch graph where the enclosing values it reads are placeholders
        of their dtypes and shapes (a loop needs them before its body is built)."""
        scratch = Graph()
        saved = self.values
        outer = {n for n in _outer_names_of_graph(g) if n in saved}
        with scratch.as_default():
            self.values = {}
            for n in outer:
                t = saved[n]
                known = constant_value(t.graph, (t.op.name, t.value_index))
                self.values[n] = (
                    placeholder(t.dtype, t._shape_tuple)
                    if known is None
                    else constant(known, dtype=t.dtype)
                )
            try:
                phs = [placeholder(dtype, shape) for dtype, shape in inputs]
                return [t.dtype for t in self.import_subgraph(g, phs)]
            finally:
                self.values = saved

    def _inferred_type(self, name: str) -> int | None:
        t = self.types.get(name) if name else None
        if t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type:
            return int(t.tensor_type.elem_type)
        return None


def wrap_integer(t: Tensor, elem: int) -> Tensor:
    """`t` (a narrow integer type held in int32/int64) wrapped into the type's range, as the
    type's own two's-complement arithmetic would leave it."""
    low, high = _types.INTEGER_RANGES[elem]
    span = high - low + 1
    if span > 2**63:  # uint64 in int64: int64 arithmetic wraps the same bits already
        return t
    if low == 0:
        return _math.floormod(t, constant(span, dtype=t.dtype))
    shifted = _math.add(t, constant(-low, dtype=t.dtype))
    return _math.add(
        _math.floormod(shifted, constant(span, dtype=t.dtype)), constant(low, dtype=t.dtype)
    )


def _outer_names_of_graph(g: Any) -> list[str]:
    """Values graph `g` (a subgraph) reads from the enclosing graphs."""
    local = {i.name for i in g.input} | {t.name for t in g.initializer}
    for inner in g.node:
        local.update(inner.output)
    names = [n for inner in g.node for n in [*inner.input, *_outer_names(inner)] if n not in local]
    return names + [o.name for o in g.output if o.name not in local]


def _outer_names(node: Any) -> list[str]:
    """Values a node's subgraphs read from the enclosing graph."""
    from onnx import AttributeProto

    names: list[str] = []
    for a in node.attribute:
        graphs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            local = {i.name for i in g.input} | {t.name for t in g.initializer}
            for inner in g.node:
                local.update(inner.output)
            for inner in g.node:
                names.extend(n for n in [*inner.input, *_outer_names(inner)] if n not in local)
            names.extend(o.name for o in g.output if o.name not in local)
    return names


def graph_inputs_behind(proto: Any, value: str) -> list[str]:
    """The graph inputs (not initializers) whose values ONNX value `value` is computed from
    (not through Shape and Size, which read only shapes)."""
    g = proto.graph
    initializers = {t.name for t in g.initializer}
    inputs = {i.name for i in g.input} - initializers
    producer = {out: node for node in _all_nodes(g) for out in node.output if out}
    found: list[str] = []
    seen: set[str] = set()
    stack = [value]
    while stack:
        name = stack.pop()
        if name in seen or not name:
            continue
        seen.add(name)
        if name in inputs:
            found.append(name)
        elif name in producer:
            node = producer[name]
            if node.op_type not in ("Shape", "Size"):
                stack.extend([*node.input, *_outer_names(node)])
    return sorted(found)


def _all_nodes(g: Any) -> list[Any]:
    """The nodes of graph `g` and of its nodes' subgraphs, nested."""
    from onnx import AttributeProto

    nodes = []
    for node in g.node:
        nodes.append(node)
        for a in node.attribute:
            for sub in [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs):
                nodes.extend(_all_nodes(sub))
    return nodes


def expand_function(node: Any, function: Any, schema: Any, prefix: str) -> list[Any]:
    """The body of `function` as nodes computing `node`: its formal inputs and outputs renamed
    to the node's, its own values prefixed, attribute references given the node's values (or
    the schema's defaults)."""
    import onnx

    names = {}
    for formal, actual in zip(function.input, node.input):
        names[formal] = actual
    for formal in function.input[len(node.input) :]:
        names[formal] = ""
    for formal, actual in zip(function.output, node.output):
        if actual:
            names[formal] = actual
    given = {a.name: a for a in node.attribute}
    for attr_name, attr in schema.attributes.items():
        if attr_name not in given and attr.default_value.name:
            given[attr_name] = attr.default_value

    def rename(name: str) -> str:
        if not name:
            return ""
        return names.get(name, prefix + name)

    def copy(inner: Any, rename_edge) -> Any:
        out = onnx.NodeProto()
        out.CopyFrom(inner)
        del out.input[:]
        del out.output[:]
        del out.attribute[:]
        out.input.extend(rename_edge(n) for n in inner.input)
        out.output.extend(rename_edge(n) for n in inner.output)
        out.name = prefix + (inner.name or (inner.output[0] if inner.output else inner.op_type))
        for a in inner.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in given:
                    resolved = onnx.AttributeProto()
                    resolved.CopyFrom(given[a.ref_attr_name])
                    resolved.name = a.name
                    out.attribute.append(resolved)
                continue
            attribute = onnx.AttributeProto()
            attribute.CopyFrom(a)
            if a.type == onnx.AttributeProto.GRAPH:
                _rename_subgraph(attribute.g, rename_edge)
            out.attribute.append(attribute)
        return out

    def _rename_subgraph(g: Any, outer) -> None:
        """A subgraph's own names prefixed, the names it reads from the body renamed as
        the body's."""
        local = {i.name for i in g.input} | {o.name for o in g.output}
        local |= {t.name for t in g.initializer} | {n for node in g.node for n in node.output}

        def inner_rename(name: str) -> str:
            if not name:
                return ""
            return prefix + name if name in local else outer(name)

        for info in [*g.input, *g.output, *g.value_info]:
            info.name = inner_rename(info.name)
        for t in g.initializer:
            t.name = inner_rename(t.name)
        nodes = [copy(node, inner_rename) for node in g.node]
        del g.node[:]
        g.node.extend(nodes)

    return [copy(inner, rename) for inner in function.node]
