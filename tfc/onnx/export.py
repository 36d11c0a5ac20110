"""tfc graphs as ONNX models: `tfc.onnx.export(graph, inputs, outputs, path)` writes the ops the
outputs need, each as the ONNX operators that compute it (opset 17), so a tfc model can be run
and checked in ONNX Runtime. Variables become initializers holding a session's values."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tfc.onnx.types as _types
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor
from tfc.onnx.loading import require_onnx
from tfc.ops.registry import constant_value

OPSET = 17
_INT64_MAX = np.iinfo(np.int64).max


class OnnxExportError(ValueError):
    """A graph tfc cannot write as ONNX: the message names the op and its type."""


Exporter = Callable[["_Export", Operation], None]
EXPORTERS: dict[str, Exporter] = {}


def exporter(*op_types: str) -> Callable[[Exporter], Exporter]:
    def register(fn: Exporter) -> Exporter:
        for t in op_types:
            EXPORTERS[t] = fn
        return fn

    return register


def export(
    graph: Graph,
    inputs: Sequence[Tensor],
    outputs: Sequence[Tensor],
    path: str | os.PathLike | None = None,
    *,
    session: Any = None,
    name: str = "tfc_model",
) -> Any:
    """The ONNX ModelProto computing `outputs` from `inputs` (placeholders) in `graph`, written
    to `path` when given. Variables the outputs read take their values from `session` (a
    tfc.Session whose variables are initialized); without one, a graph with variables is
    refused. Dims unknown in the graph (a None batch) are symbolic in the model."""
    onnx = require_onnx()
    from onnx import checker, helper

    ex = _Export(graph, list(inputs), session)
    needed = ex.needed_ops(outputs)
    for op in needed:
        if op.type not in ("Const", "VariableV2") and ex.const(op) is not None:
            _folded(ex, op)  # a value known without running: an initializer
            continue
        fn = EXPORTERS.get(op.type)
        if fn is None:
            raise OnnxExportError(
                f"op '{op.name}' of type {op.type} has no ONNX equivalent in tfc's exporter"
            )
        fn(ex, op)
    graph_inputs = [_value_info(helper, ex.value(t), t) for t in inputs]
    graph_outputs = []
    for j, t in enumerate(outputs):
        out_name = f"output_{j}" if ex.value(t) in ex.input_names else ex.value(t)
        if out_name != ex.value(t):
            ex.node("Identity", [ex.value(t)], [out_name])
        graph_outputs.append(_value_info(helper, out_name, t))
    nodes, initializers = _live(ex.nodes, ex.initializers, [o.name for o in graph_outputs])
    model = helper.make_model(
        helper.make_graph(nodes, name, graph_inputs, graph_outputs, initializer=initializers),
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="tfc",
    )
    model.ir_version = 8
    checker.check_model(model)
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model


def _live(nodes: list, initializers: list, outputs: list[str]) -> tuple[list, list]:
    """The nodes and initializers the outputs need (an op written whole, e.g. a convolution's
    filter read as a variable and again transposed, leaves values nothing reads)."""
    wanted = set(outputs)
    kept = []
    for node in reversed(nodes):
        if any(o in wanted for o in node.output):
            kept.append(node)
            wanted.update(node.input)
    return kept[::-1], [t for t in initializers if t.name in wanted]


def _value_info(helper: Any, name: str, t: Tensor) -> Any:
    shape = t._shape_tuple
    dims = (
        None if shape is None else ["N" if d is None and i == 0 else d for i, d in enumerate(shape)]
    )
    return helper.make_tensor_value_info(name, _types.onnx_type(t.dtype), dims)


class _Export:
    def __init__(self, graph: Graph, inputs: list[Tensor], session: Any) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.graph = graph
        self.inputs = inputs
        self.session = session
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.names: dict[tuple[str, int], str] = {}
        self.input_names = {self.value(t) for t in inputs}
        self._count = 0

    # -- the ops to write -----------------------------------------------------------------------
    def needed_ops(self, outputs: Sequence[Tensor]) -> list[Operation]:
        fed = {t.op.name for t in self.inputs}
        seen: set[str] = set()
        order: list[Operation] = []
        stack: list[tuple[Operation, bool]] = [(t.op, False) for t in outputs]
        while stack:
            op, done = stack.pop()
            if done:
                order.append(op)
                continue
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.name in fed:
                continue
            stack.append((op, True))
            if self.const(op) is not None or op.type == "VariableV2":
                continue
            for t in reversed(op.inputs):
                if t.op.name not in seen:
                    stack.append((t.op, False))
        return order

    def const(self, op: Operation, index: int = 0) -> np.ndarray | None:
        if op.type in ("Placeholder", "VariableV2") or op.name in {t.op.name for t in self.inputs}:
            return None
        return constant_value(self.graph, (op.name, index))

    # -- names, values, nodes -------------------------------------------------------------------
    def value(self, t: Tensor) -> str:
        key = (t.op.name, t.value_index)
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = f"{t.op.name}:{t.value_index}"
        return name

    def fresh(self, base: str) -> str:
        self._count += 1
        return f"{base}/_{self._count}"

    def initializer(self, value: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        array = np.asarray(value)
        if array.dtype == np.bool_ or array.dtype.kind in "fiu":
            self.initializers.append(self.numpy_helper.from_array(array, name))
        else:
            raise OnnxExportError(f"constant {base} of dtype {array.dtype} cannot be written")
        return name

    def node(
        self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any
    ) -> None:
        self.nodes.append(
            self.helper.make_node(
                op_type,
                list(inputs),
                list(outputs),
                name=self.fresh(outputs[0].split(":")[0]),
                **attrs,
            )
        )

    def temp(self, op: Operation, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        out = self.fresh(op.name)
        self.node(op_type, inputs, [out], **attrs)
        return out

    def int64s(self, values: Sequence[int] | np.ndarray, base: str) -> str:
        return self.initializer(np.asarray(values, dtype=np.int64).reshape(-1), base)

    def scalar(self, value: float, dtype: _dt.DType, base: str) -> str:
        return self.initializer(np.asarray(value, dtype=dtype.np), base)

    def known_value(self, t: Tensor) -> np.ndarray | None:
        """`t`'s value when it is a constant, or a variable (read) the session holds."""
        op = t.op
        if op.type == "Identity" and op.inputs[0].op.type == "VariableV2":
            op = op.inputs[0].op
        if op.type == "VariableV2":
            return None if self.session is None else np.asarray(self.session.run(op.outputs[0]))
        return self.const(op, t.value_index)

    def required_const(self, op: Operation, i: int, what: str) -> np.ndarray:
        t = op.inputs[i]
        value = constant_value(self.graph, (t.op.name, t.value_index))
        if value is None:
            raise OnnxExportError(
                f"op '{op.name}' ({op.type}): its {what} must be a constant to be written as ONNX"
            )
        return np.asarray(value)

    def out(self, op: Operation, j: int = 0) -> str:
        return self.value(op.outputs[j])

    def ins(self, op: Operation) -> list[str]:
        return [self.value(t) for t in op.inputs]

    def rank(self, t: Tensor) -> int:
        if t._shape_tuple is None:
            raise OnnxExportError(f"the rank of {t.name} must be known to write it as ONNX")
        return len(t._shape_tuple)


# -- sources of values ---------------------------------------------------------------------------
@exporter("Const")
def _const(ex: _Export, op: Operation) -> None:
    value = np.asarray(op.get_attr("value"))
    ex.names[(op.name, 0)] = ex.initializer(value, op.name)


def _folded(ex: _Export, op: Operation) -> None:
    """An op whose values are known without running (shapes of static shapes, constants)."""
    for j, t in enumerate(op.outputs):
        value = constant_value(ex.graph, (op.name, j))
        if value is None:
            raise OnnxExportError(f"op '{op.name}' ({op.type}) has no ONNX equivalent")
        ex.names[(op.name, j)] = ex.initializer(np.asarray(value, dtype=t.dtype.np), op.name)


@exporter("VariableV2")
def _variable(ex: _Export, op: Operation) -> None:
    if ex.session is None:
        raise OnnxExportError(
            f"the outputs read variable '{op.name}': pass session= (with its variables "
            "initialized) so its value can be written"
        )
    value = np.asarray(ex.session.run(op.outputs[0]))
    ex.names[(op.name, 0)] = ex.initializer(value, op.name)


@exporter("Placeholder")
def _placeholder(ex: _Export, op: Operation) -> None:
    raise OnnxExportError(
        f"the outputs need placeholder '{op.name}', which is not one of the inputs"
    )


@exporter("PlaceholderWithDefault", "Identity", "StopGradient", "Snapshot")
def _identity(ex: _Export, op: Operation) -> None:
    ex.node("Identity", [ex.value(op.inputs[0])], [ex.out(op)])


# -- element-wise --------------------------------------------------------------------------------
_SAME_NAME = {
    "Neg": "Neg",
    "Abs": "Abs",
    "Exp": "Exp",
    "Log": "Log",
    "Sqrt": "Sqrt",
    "Reciprocal": "Reciprocal",
    "Floor": "Floor",
    "Ceil": "Ceil",
    "Rint": "Round",
    "Round": "Round",
    "Sign": "Sign",
    "Sin": "Sin",
    "Cos": "Cos",
    "Tan": "Tan",
    "Asin": "Asin",
    "Acos": "Acos",
    "Atan": "Atan",
    "Sinh": "Sinh",
    "Cosh": "Cosh",
    "Asinh": "Asinh",
    "Acosh": "Acosh",
    "Atanh": "Atanh",
    "Tanh": "Tanh",
    "Sigmoid": "Sigmoid",
    "Relu": "Relu",
    "Elu": "Elu",
    "Selu": "Selu",
    "Softplus": "Softplus",
    "Softsign": "Softsign",
    "Erf": "Erf",
    "LogicalNot": "Not",
    "IsNan": "IsNaN",
    "IsInf": "IsInf",
    "Add": "Add",
    "AddV2": "Add",
    "Sub": "Sub",
    "Mul": "Mul",
    "RealDiv": "Div",
    "TruncateDiv": "Div",
    "Pow": "Pow",
    "Maximum": "Max",
    "Minimum": "Min",
    "Greater": "Greater",
    "GreaterEqual": "GreaterOrEqual",
    "Less": "Less",
    "LessEqual": "LessOrEqual",
    "Equal": "Equal",
    "LogicalAnd": "And",
    "LogicalOr": "Or",
    "BiasAdd": "Add",
    "SelectV2": "Where",
    "AddN": "Sum",
}


def _same(ex: _Export, op: Operation) -> None:
    if op.type == "TruncateDiv" and op.inputs[0].dtype.is_floating:
        quotient = ex.temp(op, "Div", ex.ins(op))
        ex.node(
            "Cast",
            [ex.temp(op, "Cast", [quotient], to=_types.INT64)],
            [ex.out(op)],
            to=_types.onnx_type(op.outputs[0].dtype),
        )
        return
    ex.node(_SAME_NAME[op.type], ex.ins(op), [ex.out(op)])


for _t in _SAME_NAME:
    EXPORTERS[_t] = _same


@exporter("LeakyRelu")
def _leaky_relu(ex: _Export, op: Operation) -> None:
    ex.node("LeakyRelu", ex.ins(op), [ex.out(op)], alpha=float(op.get_attr("alpha")))


@exporter("Relu6")
def _relu6(ex: _Export, op: Operation) -> None:
    dtype = op.inputs[0].dtype
    ex.node(
        "Clip",
        [*ex.ins(op), ex.scalar(0, dtype, op.name), ex.scalar(6, dtype, op.name)],
        [ex.out(op)],
    )


@exporter("Square")
def _square(ex: _Export, op: Operation) -> None:
    x = ex.value(op.inputs[0])
    ex.node("Mul", [x, x], [ex.out(op)])


@exporter("Rsqrt")
def _rsqrt(ex: _Export, op: Operation) -> None:
    ex.node("Reciprocal", [ex.temp(op, "Sqrt", ex.ins(op))], [ex.out(op)])


@exporter("Log1p", "Expm1")
def _log1p_expm1(ex: _Export, op: Operation) -> None:
    one = ex.scalar(1, op.inputs[0].dtype, op.name)
    x = ex.value(op.inputs[0])
    if op.type == "Log1p":
        ex.node("Log", [ex.temp(op, "Add", [x, one])], [ex.out(op)])
    else:
        ex.node("Sub", [ex.temp(op, "Exp", [x]), one], [ex.out(op)])


@exporter("SquaredDifference")
def _squared_difference(ex: _Export, op: Operation) -> None:
    d = ex.temp(op, "Sub", ex.ins(op))
    ex.node("Mul", [d, d], [ex.out(op)])


@exporter("NotEqual")
def _not_equal(ex: _Export, op: Operation) -> None:
    ex.node("Not", [ex.temp(op, "Equal", ex.ins(op))], [ex.out(op)])


@exporter("FloorDiv", "FloorMod")
def _floor_div_mod(ex: _Export, op: Operation) -> None:
    x, y = ex.ins(op)
    if not op.inputs[0].dtype.is_floating:
        if op.type == "FloorMod":
            ex.node("Mod", [x, y], [ex.out(op)], fmod=0)
            return
        raise OnnxExportError(f"op '{op.name}': integer FloorDiv has no ONNX operator")
    floor = ex.temp(op, "Floor", [ex.temp(op, "Div", [x, y])])
    if op.type == "FloorDiv":
        ex.node("Identity", [floor], [ex.out(op)])
    else:
        ex.node("Sub", [x, ex.temp(op, "Mul", [floor, y])], [ex.out(op)])


@exporter("Cast")
def _cast(ex: _Export, op: Operation) -> None:
    ex.node("Cast", ex.ins(op), [ex.out(op)], to=_types.onnx_type(op.outputs[0].dtype))


@exporter("Fusion")
def _fusion(ex: _Export, op: Operation) -> None:  # pragma: no cover - only compiled graphs
    raise OnnxExportError("export the graph the model built, not a compiled one")


# -- products and convolutions -------------------------------------------------------------------
@exporter("MatMul", "BatchMatMulV2", "BatchMatMul")
def _matmul(ex: _Export, op: Operation) -> None:
    a, b = op.inputs
    names = []
    for t, attr in ((a, ("transpose_a", "adj_x")), (b, ("transpose_b", "adj_y"))):
        flag = any(_attr(op, n, False) for n in attr)
        name = ex.value(t)
        if flag:
            r = ex.rank(t)
            perm = [*range(r - 2), r - 1, r - 2]
            name = ex.temp(op, "Transpose", [name], perm=perm)
        names.append(name)
    ex.node("MatMul", names, [ex.out(op)])


def _attr(op: Operation, name: str, default: Any) -> Any:
    try:
        return op.get_attr(name)
    except (KeyError, ValueError):
        return default


def _to_nchw(ex: _Export, op: Operation, x: str) -> str:
    return ex.temp(op, "Transpose", [x], perm=[0, 3, 1, 2])


def _from_nchw(ex: _Export, op: Operation, y: str) -> None:
    ex.node("Transpose", [y], [ex.out(op)], perm=[0, 2, 3, 1])


def _window_pads(op: Operation, x: Tensor, kernel: Sequence[int], dilations: Sequence[int]) -> list:
    strides = op.get_attr("strides")[1:3]
    if op.get_attr("padding") == "VALID":
        return [0, 0, 0, 0]
    if op.get_attr("padding") == "EXPLICIT":  # NHWC (before, after) pairs; ONNX: befores first
        pads = list(op.get_attr("explicit_paddings"))
        return [pads[2], pads[4], pads[3], pads[5]]
    shape = x._shape_tuple
    if shape is None or shape[1] is None or shape[2] is None:
        raise OnnxExportError(f"op '{op.name}': SAME padding needs the image size to export")
    befores, afters = [], []
    for size, k, s, d in zip(shape[1:3], kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        befores.append(total // 2)
        afters.append(total - total // 2)
    return [*befores, *afters]


@exporter("Conv2D")
def _conv2d(ex: _Export, op: Operation) -> None:
    x, f = op.inputs
    f_value = ex.known_value(f)
    kernel = f._shape_tuple[:2]
    dilations = op.get_attr("dilations")[1:3]
    if f_value is not None:
        w = ex.initializer(np.ascontiguousarray(np.transpose(f_value, (3, 2, 0, 1))), op.name)
    else:
        w = ex.temp(op, "Transpose", [ex.value(f)], perm=[3, 2, 0, 1])
    y = ex.temp(
        op,
        "Conv",
        [_to_nchw(ex, op, ex.value(x)), w],
        strides=op.get_attr("strides")[1:3],
        dilations=list(dilations),
        pads=_window_pads(op, x, kernel, dilations),
        kernel_shape=list(kernel),
    )
    _from_nchw(ex, op, y)


@exporter("MaxPool", "AvgPool")
def _pool(ex: _Export, op: Operation) -> None:
    x = op.inputs[0]
    kernel = op.get_attr("ksize")[1:3]
    attrs = dict(
        kernel_shape=list(kernel),
        strides=op.get_attr("strides")[1:3],
        pads=_window_pads(op, x, kernel, [1, 1]),
    )
    if op.type == "AvgPool":
        attrs["count_include_pad"] = 0
    y = ex.temp(
        op,
        "MaxPool" if op.type == "MaxPool" else "AveragePool",
        [_to_nchw(ex, op, ex.value(x))],
        **attrs,
    )
    _from_nchw(ex, op, y)


# -- shapes and arrangements ---------------------------------------------------------------------
@exporter("Shape", "Size", "Rank")
def _shape(ex: _Export, op: Operation) -> None:
    if constant_value(ex.graph, (op.name, 0)) is not None:
        _folded(ex, op)
        return
    if op.type == "Rank":
        raise OnnxExportError(f"op '{op.name}': the rank must be known to export it")
    kind = "Shape" if op.type == "Shape" else "Size"
    value = ex.temp(op, kind, ex.ins(op)[:1])
    ex.node("Cast", [value], [ex.out(op)], to=_types.onnx_type(op.outputs[0].dtype))


@exporter("Reshape")
def _reshape(ex: _Export, op: Operation) -> None:
    shape = constant_value(ex.graph, (op.inputs[1].op.name, op.inputs[1].value_index))
    if shape is not None:
        target = ex.int64s(shape, op.name)
    else:
        target = ex.temp(op, "Cast", [ex.value(op.inputs[1])], to=_types.INT64)
    ex.node("Reshape", [ex.value(op.inputs[0]), target], [ex.out(op)])


@exporter("ExpandDims")
def _expand_dims(ex: _Export, op: Operation) -> None:
    axis = int(ex.required_const(op, 1, "axis").reshape(()))
    rank = ex.rank(op.outputs[0])
    axis = axis + rank if axis < 0 else axis
    ex.node("Unsqueeze", [ex.value(op.inputs[0]), ex.int64s([axis], op.name)], [ex.out(op)])


@exporter("Squeeze")
def _squeeze(ex: _Export, op: Operation) -> None:
    dims = list(op.get_attr("squeeze_dims") or [])
    rank = ex.rank(op.inputs[0])
    if not dims:
        dims = [i for i, d in enumerate(op.inputs[0]._shape_tuple) if d == 1]
    dims = [d + rank if d < 0 else d for d in dims]
    ex.node("Squeeze", [ex.value(op.inputs[0]), ex.int64s(dims, op.name)], [ex.out(op)])


@exporter("Transpose")
def _transpose(ex: _Export, op: Operation) -> None:
    perm = [int(p) for p in ex.required_const(op, 1, "permutation")]
    ex.node("Transpose", [ex.value(op.inputs[0])], [ex.out(op)], perm=perm)


@exporter("ConcatV2")
def _concat(ex: _Export, op: Operation) -> None:
    axis = int(ex.required_const(op, len(op.inputs) - 1, "axis").reshape(()))
    ex.node("Concat", ex.ins(op)[:-1], [ex.out(op)], axis=axis)


@exporter("Pack")
def _pack(ex: _Export, op: Operation) -> None:
    axis = int(op.get_attr("axis"))
    rank = ex.rank(op.outputs[0])
    axis = axis + rank if axis < 0 else axis
    axes = ex.int64s([axis], op.name)
    parts = [ex.temp(op, "Unsqueeze", [x, axes]) for x in ex.ins(op)]
    ex.node("Concat", parts, [ex.out(op)], axis=axis)


@exporter("Unpack")
def _unpack(ex: _Export, op: Operation) -> None:
    axis = int(op.get_attr("axis"))
    rank = ex.rank(op.inputs[0])
    axis = axis + rank if axis < 0 else axis
    parts = [ex.fresh(op.name) for _ in op.outputs]
    ex.node("Split", [ex.value(op.inputs[0])], parts, axis=axis)
    axes = ex.int64s([axis], op.name)
    for j, p in enumerate(parts):
        ex.node("Squeeze", [p, axes], [ex.out(op, j)])


@exporter("Split", "SplitV")
def _split(ex: _Export, op: Operation) -> None:
    if op.type == "Split":
        axis = int(ex.required_const(op, 0, "axis").reshape(()))
        value = op.inputs[1]
    else:
        axis = int(ex.required_const(op, 2, "axis").reshape(()))
        value = op.inputs[0]
    sizes = [int(t._shape_tuple[axis]) for t in op.outputs]
    ex.node(
        "Split",
        [ex.value(value), ex.int64s(sizes, op.name)],
        [ex.out(op, j) for j in range(len(op.outputs))],
        axis=axis,
    )


@exporter("Slice")
def _slice(ex: _Export, op: Operation) -> None:
    begin = ex.required_const(op, 1, "begin").astype(np.int64)
    size = ex.required_const(op, 2, "size").astype(np.int64)
    end = np.where(size < 0, _INT64_MAX, begin + size)
    ex.node(
        "Slice",
        [ex.value(op.inputs[0]), ex.int64s(begin, op.name), ex.int64s(end, op.name)],
        [ex.out(op)],
    )


@exporter("StridedSlice")
def _strided_slice(ex: _Export, op: Operation) -> None:
    if op.get_attr("ellipsis_mask") or op.get_attr("new_axis_mask"):
        raise OnnxExportError(f"op '{op.name}': ellipsis and new-axis slices are not exported")
    begin, end, strides = (
        ex.required_const(op, i, w).astype(np.int64).reshape(-1)
        for i, w in ((1, "begin"), (2, "end"), (3, "strides"))
    )
    bmask, emask = op.get_attr("begin_mask"), op.get_attr("end_mask")
    shrink = op.get_attr("shrink_axis_mask")
    starts, ends = [], []
    for k, (b, e, s) in enumerate(zip(begin, end, strides)):
        if shrink >> k & 1:
            starts.append(b)
            ends.append(b + 1 if b != -1 else _INT64_MAX)
            continue
        low, high = (-_INT64_MAX, _INT64_MAX) if s > 0 else (_INT64_MAX, -_INT64_MAX)
        starts.append(low if bmask >> k & 1 else b)
        ends.append(high if emask >> k & 1 else e)
    axes = list(range(len(begin)))
    sliced = ex.temp(
        op,
        "Slice",
        [
            ex.value(op.inputs[0]),
            ex.int64s(starts, op.name),
            ex.int64s(ends, op.name),
            ex.int64s(axes, op.name),
            ex.int64s(strides, op.name),
        ],
    )
    squeezed = [k for k in range(len(begin)) if shrink >> k & 1]
    if squeezed:
        ex.node("Squeeze", [sliced, ex.int64s(squeezed, op.name)], [ex.out(op)])
    else:
        ex.node("Identity", [sliced], [ex.out(op)])


@exporter("GatherV2")
def _gather(ex: _Export, op: Operation) -> None:
    axis = int(ex.required_const(op, 2, "axis").reshape(()))
    ex.node("Gather", ex.ins(op)[:2], [ex.out(op)], axis=axis)


@exporter("Tile")
def _tile(ex: _Export, op: Operation) -> None:
    repeats = ex.int64s(ex.required_const(op, 1, "multiples"), op.name)
    ex.node("Tile", [ex.value(op.inputs[0]), repeats], [ex.out(op)])


@exporter("Pad", "PadV2", "MirrorPad")
def _pad(ex: _Export, op: Operation) -> None:
    paddings = ex.required_const(op, 1, "paddings").astype(np.int64)
    pads = ex.int64s(np.concatenate([paddings[:, 0], paddings[:, 1]]), op.name)
    inputs = [ex.value(op.inputs[0]), pads]
    mode = "constant"
    if op.type == "PadV2":
        inputs.append(ex.value(op.inputs[2]))
    elif op.type == "MirrorPad":
        if op.get_attr("mode") != "REFLECT":
            raise OnnxExportError(f"op '{op.name}': SYMMETRIC padding has no ONNX mode")
        mode = "reflect"
    ex.node("Pad", inputs, [ex.out(op)], mode=mode)


@exporter("Fill")
def _fill(ex: _Export, op: Operation) -> None:
    value = ex.required_const(op, 1, "value")
    dims = constant_value(ex.graph, (op.inputs[0].op.name, op.inputs[0].value_index))
    shape = (
        ex.int64s(dims, op.name)
        if dims is not None
        else ex.temp(op, "Cast", [ex.value(op.inputs[0])], to=_types.INT64)
    )
    ex.node(
        "ConstantOfShape",
        [shape],
        [ex.out(op)],
        value=ex.numpy_helper.from_array(np.asarray(value).reshape(1)),
    )


@exporter("ZerosLike", "OnesLike")
def _like(ex: _Export, op: Operation) -> None:
    fill = np.asarray(0 if op.type == "ZerosLike" else 1, dtype=op.outputs[0].dtype.np)
    shape = ex.temp(op, "Shape", ex.ins(op))
    ex.node(
        "ConstantOfShape", [shape], [ex.out(op)], value=ex.numpy_helper.from_array(fill.reshape(1))
    )


# -- along an axis -------------------------------------------------------------------------------
@exporter("Softmax", "LogSoftmax")
def _softmax(ex: _Export, op: Operation) -> None:
    ex.node(op.type, ex.ins(op), [ex.out(op)], axis=-1)


@exporter("Sum", "Mean", "Max", "Min", "Prod")
def _reduce(ex: _Export, op: Operation) -> None:
    rank = ex.rank(op.inputs[0])
    axes = [
        int(a) + rank if int(a) < 0 else int(a)
        for a in ex.required_const(op, 1, "axes").reshape(-1)
    ]
    keep = int(bool(op.get_attr("keep_dims")))
    x = ex.value(op.inputs[0])
    onnx_op = {
        "Sum": "ReduceSum",
        "Mean": "ReduceMean",
        "Max": "ReduceMax",
        "Min": "ReduceMin",
        "Prod": "ReduceProd",
    }[op.type]
    if not axes:
        ex.node("Identity", [x], [ex.out(op)])
    elif op.type == "Sum":
        ex.node(onnx_op, [x, ex.int64s(axes, op.name)], [ex.out(op)], keepdims=keep)
    else:
        ex.node(onnx_op, [x], [ex.out(op)], axes=axes, keepdims=keep)


@exporter("ArgMax", "ArgMin")
def _arg(ex: _Export, op: Operation) -> None:
    axis = int(ex.required_const(op, 1, "dimension").reshape(()))
    index = ex.temp(op, op.type, [ex.value(op.inputs[0])], axis=axis, keepdims=0)
    ex.node("Cast", [index], [ex.out(op)], to=_types.onnx_type(op.outputs[0].dtype))


@exporter("TopKV2")
def _top_k(ex: _Export, op: Operation) -> None:
    k = ex.int64s([int(ex.required_const(op, 1, "k").reshape(()))], op.name)
    indices = ex.fresh(op.name)
    ex.node(
        "TopK", [ex.value(op.inputs[0]), k], [ex.out(op, 0), indices], axis=-1, largest=1, sorted=1
    )
    ex.node("Cast", [indices], [ex.out(op, 1)], to=_types.onnx_type(op.outputs[1].dtype))


@exporter("OneHot")
def _one_hot(ex: _Export, op: Operation) -> None:
    indices, depth, on, off = ex.ins(op)
    values = ex.temp(
        op,
        "Concat",
        [
            ex.temp(op, "Reshape", [off, ex.int64s([1], op.name)]),
            ex.temp(op, "Reshape", [on, ex.int64s([1], op.name)]),
        ],
        axis=0,
    )
    ex.node("OneHot", [indices, depth, values], [ex.out(op)], axis=int(op.get_attr("axis")))


@exporter("Cumsum")
def _cumsum(ex: _Export, op: Operation) -> None:
    ex.node(
        "CumSum",
        ex.ins(op),
        [ex.out(op)],
        exclusive=int(bool(op.get_attr("exclusive"))),
        reverse=int(bool(op.get_attr("reverse"))),
    )


@exporter("Range")
def _range(ex: _Export, op: Operation) -> None:
    if constant_value(ex.graph, (op.name, 0)) is not None:
        _folded(ex, op)
    else:
        ex.node("Range", ex.ins(op), [ex.out(op)])
