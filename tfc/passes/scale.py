"""fold_channel_scales: a constant per-channel scale after a convolution or MatMul moves into
its constant filter (batch normalization at inference, folded at compile time)."""

from __future__ import annotations

import numpy as np

from tfc.ir.graph import Graph
from tfc.passes.rewrite import remove_unused, replace_node

# the ops whose output channel is the last axis of their output, and the filter input
_FILTERED = {"Conv2D": 1, "Conv3D": 1, "DepthwiseConv2dNative": 1, "MatMul": 1}
_CHANNELS_LAST = (None, "NHWC", "NDHWC")
_SHIFTS = ("Add", "AddV2", "BiasAdd")


def fold_channel_scales(graph: Graph) -> Graph:
    """Rewrite `Mul(op(x, F), s)` (either operand order) as `op(x, F * s)`, and
    `Mul(Add(op(x, F), b), s)` as `Add(op(x, F * s), b * s)` (AddV2 and BiasAdd alike), where
    op is Conv2D, Conv3D or DepthwiseConv2dNative (channels last) or MatMul, F, s and b are
    Consts of a floating dtype, and s and b hold one value per output channel (or one for all:
    their shape is all 1s but maybe the last dimension, the channels', and their rank is at
    most the output's).

    Batch normalization at inference is x * scale + shift with constant per-channel vectors
    (the ONNX importer's, tf.layers' with frozen statistics): after this pass the scale costs
    nothing at run time and the shift is a bias the element-wise fusion joins.

    Guarantees: only where the op's output and the Add's are read by the Mul alone (no other
    consumer, fetch, target or control output), and the Consts have no control inputs; the op
    keeps its name (its new filter is a new Const; the old one goes when nothing else reads
    it); the Mul's consumers, fetches and control outputs move to the node that now computes
    its value. The result equals the unfolded one up to rounding: each product of the op
    multiplies F * s (rounded once) instead of rounding the sum before scaling it, as
    TensorFlow's fold_batch_norms does.
    """
    for name in list(graph.nx.nodes):
        if name in graph.nx and graph.op_type(name) == "Mul":
            _fold(graph, name)
    return graph


def _fold(graph: Graph, mul: str) -> bool:
    inputs = graph.input_edges(mul)
    if len(inputs) != 2 or np.dtype(graph.node(mul)["dtypes"][0].np).kind != "f":
        return False
    for (src, out), other in ((inputs[0], inputs[1]), (inputs[1], inputs[0])):
        scale = _const(graph, other)
        if scale is None or out != 0 or not _read_only_by(graph, src, mul):
            continue
        shift_add, shift_index, shift = None, 0, None
        op = src
        if graph.op_type(src) in _SHIFTS:
            shift_add = src
            found = _const_operand(graph, src)
            if found is None or graph.node(src)["attrs"].get("data_format") not in _CHANNELS_LAST:
                continue
            shift_index, shift, (op, op_out) = found
            if op_out or not _read_only_by(graph, op, src):
                continue
            if graph.op_type(src) == "BiasAdd" and shift_index != 1:
                continue
        if graph.op_type(op) not in _FILTERED:
            continue
        channels = _channels(graph, op)
        vector = _per_channel(scale, channels, graph.node(mul)["shapes"][0])
        if vector is None:
            continue
        if (
            shift is not None
            and _per_channel(shift, channels, graph.node(src)["shapes"][0]) is None
        ):
            continue
        index = _FILTERED[graph.op_type(op)]
        f_in = graph.input_edges(op)[index]
        filt = _const(graph, f_in)
        if filt is None or filt.dtype != scale.dtype:
            continue
        _set_const_input(graph, op, index, _scaled_filter(graph, op, filt, vector), "scaled_filter")
        result = op
        if shift_add is not None:
            _set_const_input(
                graph, shift_add, shift_index, _scaled_shift(shift, scale, vector), "scaled_shift"
            )
            result = shift_add
        if replace_node(graph, mul, [(result, 0)]) == "unused":
            dropped = [s for s, _ in graph.input_edges(mul)]
            graph.remove_node(mul)
            remove_unused(graph, dropped)
        return True
    return False


def _const(graph: Graph, tensor: tuple[str, int]) -> np.ndarray | None:
    """The value of `tensor` if it is a floating Const with no control inputs."""
    node = graph.node(tensor[0])
    if node["op"] != "Const" or graph.control_input_names(tensor[0]):
        return None
    value = np.asarray(node["attrs"]["value"])
    return value if value.dtype.kind == "f" else None


def _const_operand(graph: Graph, add: str) -> tuple[int, np.ndarray, tuple[str, int]] | None:
    """Of Add `add`'s two inputs, the Const's index and value and the other input."""
    inputs = graph.input_edges(add)
    for index in (1, 0):
        value, other = _const(graph, inputs[index]), inputs[1 - index]
        if value is not None and graph.op_type(other[0]) != "Const":
            return index, value, other
    return None


def _read_only_by(graph: Graph, name: str, reader: str) -> bool:
    """Whether `name`'s only use is one data input of `reader`."""
    attrs = graph.graph_attrs
    if any(f[0] == name for f in attrs["fetches"]) or name in attrs.get("targets", ()):
        return False
    if graph.control_output_names(name) or len(graph.node(name)["dtypes"]) != 1:
        return False
    consumers = graph.consumers(name)
    return len(consumers) == 1 and consumers[0][0] == reader


def _channels(graph: Graph, op: str) -> int | None:
    node = graph.node(op)
    if node["attrs"].get("data_format") not in _CHANNELS_LAST:
        return None
    shape = node["shapes"][0]
    return None if not shape or shape[-1] is None else int(shape[-1])


def _per_channel(value: np.ndarray, channels: int | None, out_shape: tuple) -> np.ndarray | None:
    """`value` as a vector of `channels`, if it scales each output channel of a tensor of
    `out_shape` (the op's) by one value and broadcasts to nothing larger."""
    if channels is None or value.ndim > len(out_shape) or value.size not in (1, channels):
        return None
    if any(d != 1 for d in value.shape[:-1]):
        return None
    return np.broadcast_to(value.reshape(-1), (channels,))


def _scaled_filter(graph: Graph, op: str, filt: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Filter `filt` of `op` with output channel k multiplied by vector[k]."""
    node = graph.node(op)
    kind = node["op"]
    if kind == "MatMul":
        if node["attrs"].get("transpose_b"):
            return filt * vector[:, None]
        return filt * vector
    if kind == "DepthwiseConv2dNative":  # (kh, kw, C, multiplier): channel c*multiplier + m
        return filt * vector.reshape(filt.shape[2], filt.shape[3])
    return filt * vector  # HWIO / DHWIO


def _scaled_shift(shift: np.ndarray, scale: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """shift * scale in the shift's shape, or as a vector where one shift meets many scales."""
    if scale.size == 1:
        return shift * vector[0]
    scaled = np.broadcast_to(shift.reshape(-1), vector.shape) * vector
    return scaled.reshape(shift.shape) if shift.size == vector.size else scaled


def _set_const_input(graph: Graph, name: str, index: int, value: np.ndarray, label: str) -> None:
    """Input `index` of `name` becomes a new Const of `value`; the old one goes if now unused."""
    old = graph.input_edges(name)[index][0]
    old_node = graph.node(old)
    value = np.ascontiguousarray(value, dtype=old_node["attrs"]["value"].dtype)
    value.setflags(write=False)
    dtype = old_node["dtypes"][0]
    const = graph.unique_name(f"{name}/{label}")
    graph.add_node(
        const, "Const", [], {"value": value, "dtype": dtype}, [dtype], [value.shape],
        device=old_node["device"],
    )  # fmt: skip
    graph.set_input(name, index, (const, 0))
    remove_unused(graph, [old])
