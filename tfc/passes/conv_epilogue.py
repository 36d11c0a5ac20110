"""fuse_conv_epilogues: a convolution absorbs the bias, residual Add and ReLU that follow it,
and convolutions joined along the channels write their slices of the join."""

from __future__ import annotations

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph
from tfc.passes.rewrite import remove_unused, replace_node

_ADDS = ("Add", "AddV2", "BiasAdd")
_ACTIVATIONS = ("Relu", "Relu6")  # tfc.ops.conv.FUSED_ACTIVATIONS
_CHANNELS_LAST = (None, "NHWC", b"NHWC")
_DTYPES = (_dt.float32, _dt.float64)  # tfc_conv.h's element types
_VARIABLE_VALUES = ("VariableV2",)


def fuse_conv_epilogues(graph: Graph, enabled: bool = True) -> Graph:
    """Rewrite `Conv2D(x, F) -> Add(., b) [-> Add(., r)] [-> Relu | Relu6]` as one
    `_FusedConv2D(x, F, b[, r])` (fused_ops "BiasAdd" [, "Add"] [, "Relu" | "Relu6"], as
    TensorFlow's grappler names it), whose kernel applies them to each tile of the convolution
    while it is in registers instead of re-reading the output in an element-wise kernel.

    A VALID Conv2D that reads a Pad (or PadV2 of 0) of the height and width by constants, read
    by it alone, reads the unpadded tensor instead, with padding "EXPLICIT" and those pads as
    explicit_paddings (TensorFlow's attributes): the kernel borders its input anyway, so the
    padded copy goes (ResNet-50 as imported from ONNX: four Pads before stride-2 layers).

    Matched: a float32 or float64 NHWC Conv2D of concrete, non-empty shapes; b a Const of one
    value per output channel (shape [C], or 1s then C: the shift batch norm leaves after
    fold_channel_scales) or a VariableV2 of shape [C] or its Identity read (a Session's model),
    added by Add, AddV2 or BiasAdd (NHWC) in either operand order;
    r any tensor of the output's shape and dtype. Each intermediate value must be read by the
    next op alone (no other consumer, fetch, target or control output), and b has no control
    inputs. `enabled` False (targets without the fused kernel: CUDA) leaves the graph.

    Then a ConcatV2 along the last axis of two or more such _FusedConv2D outputs (without a
    residual; each read by the ConcatV2 alone, once) becomes one `_FusedConv2DConcat`, whose
    members' kernels write their channels of its output: SqueezeNet's fire modules join their
    two expansions without a copy.

    Guarantees: the last op's consumers, fetches and control outputs move to the fused node,
    placed on the Conv2D's device (the ConcatV2's for a join); the matched ops go. Values are
    bit for bit the unfused graph's: the epilogue adds and clamps in the same order and
    precision, and a join only places values.
    """
    if not enabled:
        return graph
    for name in list(graph.nx.nodes):
        if name in graph.nx and graph.op_type(name) == "Conv2D":
            _fuse(graph, name)
    for name in list(graph.nx.nodes):
        if name in graph.nx and graph.op_type(name) == "ConcatV2":
            _join(graph, name)
    return graph


def _join(graph: Graph, concat: str) -> bool:
    *parts, axis = graph.input_edges(concat)
    node = graph.node(concat)
    rank = len(node["shapes"][0] or ())
    axis_node = graph.node(axis[0])
    if axis_node["op"] != "Const" or graph.control_input_names(concat) or len(parts) < 2:
        return False
    if int(np.asarray(axis_node["attrs"]["value"])) not in (rank - 1, -1) or rank != 4:
        return False
    if len(set(parts)) != len(parts):
        return False
    for src, out in parts:
        member = graph.node(src)
        if out or member["op"] != "_FusedConv2D" or member["attrs"].get("num_args") != 1:
            return False
        if _only_reader(graph, src) != concat:
            return False
    operands = [t for src, _ in parts for t in graph.input_edges(src)]
    members = [dict(graph.node(src)["attrs"]) for src, _ in parts]
    joined = graph.unique_name(f"{concat}/convs")
    graph.add_node(
        joined, "_FusedConv2DConcat", operands, {"members": members},
        list(node["dtypes"]), list(node["shapes"]), device=node["device"],
    )  # fmt: skip
    if replace_node(graph, concat, [(joined, 0)]) != "unused":
        return True
    graph.remove_node(concat)
    for src, _ in parts:
        graph.remove_node(src)
    remove_unused(graph, [axis[0]])
    return True


def _fuse(graph: Graph, conv: str) -> bool:
    node = graph.node(conv)
    shape = node["shapes"][0]
    if node["dtypes"][0] not in _DTYPES or node["attrs"].get("data_format") not in _CHANNELS_LAST:
        return False
    if graph.control_input_names(conv):
        return False
    in_shapes = [graph.node(s)["shapes"][o] for s, o in graph.input_edges(conv)]
    if any(s is None or None in s or 0 in s for s in [shape, *in_shapes]):
        return False
    chain = [conv]
    bias_add = _only_reader(graph, conv)
    bias = _bias_operand(graph, bias_add, conv, shape[-1]) if bias_add else None
    if bias is None:
        return False
    chain.append(bias_add)
    operands = [graph.input_edges(conv)[0], graph.input_edges(conv)[1], bias]
    fused_ops = ["BiasAdd"]
    last = bias_add
    after = _only_reader(graph, last)
    if after is not None and graph.op_type(after) in ("Add", "AddV2"):
        residual = _other_operand(graph, after, last)
        source = residual and graph.node(residual[0])
        if source and source["shapes"][residual[1]] == shape:
            if source["dtypes"][residual[1]] == node["dtypes"][0]:
                operands.append(residual)
                fused_ops.append("Add")
                last = after
                chain.append(after)
                after = _only_reader(graph, last)
    if after is not None and graph.op_type(after) in _ACTIVATIONS:
        fused_ops.append(graph.op_type(after))
        last = after
        chain.append(after)
    attrs = {k: v for k, v in node["attrs"].items() if k != "T"}
    attrs.update(fused_ops=fused_ops, num_args=len(operands) - 2)
    padded = _zero_padding(graph, conv)
    if padded is not None:
        operands[0] = padded[0]
        attrs.update(padding="EXPLICIT", explicit_paddings=padded[1])
    fused = graph.unique_name(f"{conv}/fused")
    graph.add_node(
        fused, "_FusedConv2D", operands, attrs, [node["dtypes"][0]], [tuple(shape)],
        device=node["device"],
    )  # fmt: skip
    if replace_node(graph, last, [(fused, 0)]) != "unused":
        return True  # `last` became an Identity of the fused value (it is fetched twice)
    for name in reversed(chain):
        if name in graph.nx and not graph.nx.out_degree(name):
            inputs = [s for s, _ in graph.input_edges(name)]
            graph.remove_node(name)
            remove_unused(graph, inputs)
    return True


def _zero_padding(graph: Graph, conv: str) -> tuple[tuple[str, int], list[int]] | None:
    """(the padded tensor, explicit_paddings) where `conv` (VALID) reads a Pad or PadV2 of zeros
    along the height and width alone, read by it alone: the ONNX importer's form of a
    convolution's `pads` that are not TF's SAME ones (ResNet-50's stride-2 3x3 layers)."""
    source = graph.input_edges(conv)[0][0]
    padding = graph.node(conv)["attrs"].get("padding")
    if padding != "VALID" or graph.op_type(source) not in ("Pad", "PadV2"):
        return None
    if _only_reader(graph, source) != conv or graph.control_input_names(source):
        return None
    x, paddings, *value = graph.input_edges(source)
    consts = [_const_value(graph, t) for t in [paddings, *value]]
    if any(c is None for c in consts) or (value and np.any(consts[1] != 0)):
        return None
    pads = consts[0]
    if pads.shape != (4, 2) or pads.min() < 0 or pads[0].any() or pads[3].any():
        return None
    return x, [int(p) for p in pads.reshape(-1)]


def _const_value(graph: Graph, tensor: tuple[str, int]) -> np.ndarray | None:
    node = graph.node(tensor[0])
    if node["op"] != "Const" or graph.control_input_names(tensor[0]):
        return None
    return np.asarray(node["attrs"]["value"])


def _only_reader(graph: Graph, name: str) -> str | None:
    """The one op reading `name`'s single output, if nothing else uses it."""
    attrs = graph.graph_attrs
    if any(f[0] == name for f in attrs["fetches"]) or name in attrs.get("targets", ()):
        return None
    if graph.control_output_names(name) or len(graph.node(name)["dtypes"]) != 1:
        return None
    consumers = graph.consumers(name)
    if len(consumers) != 1 or graph.control_input_names(consumers[0][0]):
        return None
    reader = consumers[0][0]
    return reader if len(graph.input_edges(reader)) == len(set(graph.input_edges(reader))) else None


def _is_variable_read(graph: Graph, name: str) -> bool:
    """Whether `name` is an Identity of a variable (TF1's `W/read`)."""
    if graph.op_type(name) != "Identity":
        return False
    (source,) = graph.input_edges(name)
    return graph.op_type(source[0]) in _VARIABLE_VALUES


def _other_operand(graph: Graph, add: str, known: str) -> tuple[str, int] | None:
    """Of two-input `add`, the operand that is not `known`'s output."""
    inputs = graph.input_edges(add)
    if len(inputs) != 2:
        return None
    others = [t for t in inputs if t != (known, 0)]
    return others[0] if len(others) == 1 else None


def _bias_operand(graph: Graph, add: str, conv: str, channels: int) -> tuple[str, int] | None:
    """The weights `add` adds to `conv`'s output as a [channels] vector, if it is one: a Const
    (a new Const when it is shaped [1, ..., channels]), or a [channels] variable or its
    Identity read (a model's bias in a Session; a training program keeps the read of a variable
    it writes). The schedule orders every reader of a variable before its writers, the fused
    convolution as the BiasAdd was."""
    kind = graph.op_type(add)
    if kind not in _ADDS or graph.node(add)["attrs"].get("data_format") not in _CHANNELS_LAST:
        return None
    other = _other_operand(graph, add, conv)
    if other is None or (kind == "BiasAdd" and graph.input_edges(add)[0] != (conv, 0)):
        return None
    source = graph.node(other[0])
    if source["op"] in _VARIABLE_VALUES or _is_variable_read(graph, other[0]):
        shape, dtype = source["shapes"][other[1]], source["dtypes"][other[1]]
        ok = tuple(shape or ()) == (channels,) and dtype == graph.node(conv)["dtypes"][0]
        return other if ok and not graph.control_input_names(other[0]) else None
    if source["op"] != "Const" or graph.control_input_names(other[0]):
        return None
    value = np.asarray(source["attrs"]["value"])
    if value.dtype != graph.node(conv)["dtypes"][0].np or value.size != channels:
        return None
    if value.ndim < 1 or value.ndim > 4 or any(d != 1 for d in value.shape[:-1]):
        return None
    if value.ndim == 1:
        return other
    vector = np.ascontiguousarray(value.reshape(channels))
    vector.setflags(write=False)
    const = graph.unique_name(f"{add}/bias")
    dtype = source["dtypes"][0]
    graph.add_node(
        const, "Const", [], {"value": vector, "dtype": dtype}, [dtype], [vector.shape],
        device=source["device"],
    )  # fmt: skip
    return (const, 0)
