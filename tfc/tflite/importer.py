"""`.tflite` models as tfc graphs: float32 operators onto tfc's ops, int8 ones onto the Int8 ops.

`import_graph` reads a model's main subgraph (tfc/tflite/schema.py) and builds, operator by
operator in the file's order, the tfc ops computing what TensorFlow Lite's interpreter computes:
float32 operators become the TF1 ops of the same meaning (filters moved to TF's layouts when
the model is read), int8 operators the ops of tfc/ops/quantized.py and quantized_nn.py, which
follow TFLite's integer arithmetic bit for bit. Anything tfc does not implement (an operator,
int16 or uint8 activations, asymmetric per-channel weights, a hybrid operator mixing float
inputs with int8 weights) is refused with a TFLiteImportError naming the file, the operator's
index and its name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tfc.ops.array_join as _join
import tfc.ops.array_shape as _shape
import tfc.ops.conv as _conv
import tfc.ops.conv_depthwise as _depthwise
import tfc.ops.linalg as _linalg
import tfc.ops.math as _math
import tfc.ops.nn as _nn
import tfc.ops.quantized as _q
import tfc.ops.quantized_nn as _qnn
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Tensor, get_default_graph
from tfc.ops.constant import constant, placeholder
from tfc.tflite.flatbuffer import FlatBufferError
from tfc.tflite.schema import ACTIVATIONS, PADDINGS, ModelInfo, OperatorInfo, TensorInfo, read_model


class TFLiteImportError(ValueError):
    """A `.tflite` file tfc cannot import: the message names the file, and the operator (its
    index in the subgraph and its name) where one is to blame."""


# the TFLite element types a tfc graph holds, and how their buffers are laid out
_DTYPES = {
    "float32": (_dt.float32, "<f4"), "int8": (_dt.int8, "<i1"), "int32": (_dt.int32, "<i4"),
    "int64": (_dt.int64, "<i8"), "uint8": (_dt.uint8, "<u1"), "int16": (_dt.int16, "<i2"),
    "bool": (_dt.bool_, "<u1"), "float16": (_dt.float16, "<f2"), "float64": (_dt.float64, "<f8"),
}  # fmt: skip


@dataclass
class ImportedGraph:
    """What import_graph built: the graph, its inputs (placeholders) and outputs in the
    model's order, and their TFLite tensor names."""

    graph: Graph
    inputs: list[Tensor]
    outputs: list[Tensor]
    input_names: list[str]
    output_names: list[str]


class _Unsupported(Exception):
    """Raised by a converter; import_graph adds the file and the operator to the message."""


def _op_name(op: OperatorInfo) -> str:
    return f"op{op.index}_{re.sub(r'[^a-z0-9]+', '_', op.name.lower()).strip('_')}"


class _Builder:
    """The tfc tensor of each TFLite tensor, made as operators need them."""

    def __init__(self, model: ModelInfo, batch: int | None, flexible: bool) -> None:
        self.model = model
        self.batch = batch
        self.flexible = flexible  # the batch dimension is not the model's own
        self.values: dict[int, Tensor] = {}

    def info(self, index: int) -> TensorInfo:
        return self.model.tensors[index]

    def array(self, index: int) -> np.ndarray | None:
        """The constant value of tensor `index`, or None when it is computed."""
        info = self.info(index)
        data = self.model.constant(info)
        if data is None:
            return None
        if info.dtype not in _DTYPES:
            raise _Unsupported(
                f"tensor {index} ({info.name}) holds {info.dtype} values, which tfc does not read"
            )
        layout = np.dtype(_DTYPES[info.dtype][1])
        count = int(np.prod(info.shape, dtype=np.int64))
        if len(data) != count * layout.itemsize:
            raise _Unsupported(
                f"tensor {index} ({info.name}) of shape {info.shape} has "
                f"{len(data)} bytes, not {count * layout.itemsize}"
            )
        return np.frombuffer(data, layout).astype(layout.newbyteorder("=")).reshape(info.shape)

    def tensor(self, index: int) -> Tensor:
        if index in self.values:
            return self.values[index]
        value = self.array(index)
        if value is None:
            info = self.info(index)
            raise _Unsupported(
                f"its input tensor {index} ({info.name}) is neither a constant "
                "nor computed by an earlier operator"
            )
        info = self.info(index)
        dtype = _DTYPES[info.dtype][0]
        self.values[index] = constant(value, dtype=dtype, name=f"t{index}")
        return self.values[index]

    def dtype(self, index: int) -> str:
        return self.info(index).dtype

    def quantization(self, index: int, what: str) -> tuple[float, int]:
        """(scale, zero point) of a per-tensor quantized int8 tensor."""
        info = self.info(index)
        q = info.quantization
        if q is None:
            raise _Unsupported(
                f"its {what} (tensor {index}, {info.name}) is {info.dtype} "
                "without quantization parameters"
            )
        if not q.per_tensor:
            raise _Unsupported(
                f"its {what} (tensor {index}, {info.name}) is quantized per "
                "channel; tfc implements per-channel scales for weights only"
            )
        return float(q.scales[0]), int(q.zero_points[0])

    def filter_scales(self, index: int, axis: int, channels: int) -> list[float]:
        """The scales of an int8 weight tensor, per tensor or per channel along `axis`; its zero
        points must be 0 (TFLite's int8 kernels have symmetric weights)."""
        info = self.info(index)
        q = info.quantization
        if info.dtype != "int8" or q is None:
            raise _Unsupported(
                f"its weights (tensor {index}, {info.name}) are {info.dtype}"
                f"{'' if q else ' without quantization parameters'}; with int8 "
                "activations tfc takes int8 weights"
            )
        if np.any(q.zero_points != 0):
            kind = "per-tensor" if q.per_tensor else "per-channel"
            raise _Unsupported(
                f"its weights (tensor {index}, {info.name}) have {kind} zero points "
                f"{q.zero_points.tolist()[:8]}: asymmetric weights are a quantization scheme "
                "tfc does not implement (TFLite's int8 kernels take weights with zero point 0)"
            )
        if not q.per_tensor and (q.axis != axis or len(q.scales) != channels):
            raise _Unsupported(
                f"its weights (tensor {index}, {info.name}) have "
                f"{len(q.scales)} scales along axis {q.axis}; expected "
                f"{channels} along axis {axis}"
            )
        return [float(s) for s in q.scales]

    def bias(self, op: OperatorInfo, channels: int) -> Tensor:
        """An int8 operator's int32 bias (zeros where the operator has none)."""
        if len(op.inputs) < 3 or op.inputs[2] < 0:
            return constant(np.zeros(channels, np.int32), name=f"{_op_name(op)}_bias")
        index = op.inputs[2]
        if self.dtype(index) != "int32":
            raise _Unsupported(
                f"its bias (tensor {index}) is {self.dtype(index)}; tfc's int8 "
                "kernels take int32 biases (int64 ones go with int16 "
                "activations)"
            )
        return self.tensor(index)

    def target_shape(self, index: int) -> list[int]:
        """The shape of tensor `index` for a reshape: its signature's (-1 where dynamic), with
        the batch dimension -1 where the importer changed the batch."""
        info = self.info(index)
        dims = list(info.signature if info.signature is not None else info.shape)
        if self.flexible and dims and self.model.inputs:
            first = self.info(self.model.inputs[0])
            if dims[0] in (-1, first.shape[0] if first.shape else -1):
                dims[0] = -1
        return dims


# -- float32 operators ----------------------------------------------------------------------------
def _activation(x: Tensor, activation: int, name: str) -> Tensor:
    kind = ACTIVATIONS.get(activation, f"activation {activation}")
    if kind == "NONE":
        return x
    if kind == "RELU":
        return _nn.relu(x, name=f"{name}_relu")
    if kind == "RELU6":
        return _nn.relu6(x, name=f"{name}_relu6")
    if kind == "RELU_N1_TO_1":
        return _math.clip_by_value(x, -1.0, 1.0, name=f"{name}_relu_n1_to_1")
    if kind == "TANH":
        return _math.tanh(x, name=f"{name}_tanh")
    raise _Unsupported(f"its fused activation {kind} is not implemented")


def _padding(options: dict) -> str:
    padding = PADDINGS.get(options["padding"])
    if padding is None:
        raise _Unsupported(f"its padding {options['padding']} is neither SAME nor VALID")
    return padding


def _strides(options: dict) -> list[int]:
    return [1, options["stride_h"], options["stride_w"], 1]


def _float_weights(b: _Builder, index: int, what: str) -> np.ndarray | Tensor:
    value = b.array(index)
    if b.dtype(index) != "float32":
        raise _Unsupported(
            f"its {what} (tensor {index}) are {b.dtype(index)} while its input is float32: a "
            "hybrid operator (float activations, quantized weights) is a quantization scheme "
            "tfc does not implement"
        )
    return b.tensor(index) if value is None else value


def _float_bias(b: _Builder, op: OperatorInfo, y: Tensor) -> Tensor:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return y
    return _nn.bias_add(y, b.tensor(op.inputs[2]), name=f"{_op_name(op)}_bias")


def _float_conv(b: _Builder, op: OperatorInfo) -> Tensor:
    o = op.options
    w = _float_weights(b, op.inputs[1], "filter")
    if isinstance(w, Tensor):
        w = _join.transpose(w, [1, 2, 3, 0])
    else:
        w = np.ascontiguousarray(w.transpose(1, 2, 3, 0))  # [O, KH, KW, I] -> [KH, KW, I, O]
    y = _conv.conv2d(
        b.tensor(op.inputs[0]),
        w,
        _strides(o),
        _padding(o),
        dilations=[1, o["dilation_h"], o["dilation_w"], 1],
        name=_op_name(op),
    )
    return _activation(_float_bias(b, op, y), o["activation"], _op_name(op))


def _float_depthwise(b: _Builder, op: OperatorInfo) -> Tensor:
    o = op.options
    x = b.tensor(op.inputs[0])
    channels = x.shape.as_list()[3]
    w = _float_weights(b, op.inputs[1], "filter")
    _, kh, kw, out_c = b.info(op.inputs[1]).shape
    if channels is None or out_c % channels:
        raise _Unsupported(
            f"its filter's {out_c} channels are not a multiple of the input's {channels}"
        )
    shape = [kh, kw, channels, out_c // channels]  # [1, KH, KW, C*M] is [KH, KW, C, M]
    w = _shape.reshape(w, shape) if isinstance(w, Tensor) else np.reshape(w, shape)
    y = _depthwise.depthwise_conv2d_native(
        x,
        w,
        _strides(o),
        _padding(o),
        dilations=[1, o["dilation_h"], o["dilation_w"], 1],
        name=_op_name(op),
    )
    return _activation(_float_bias(b, op, y), o["activation"], _op_name(op))


def _float_fully_connected(b: _Builder, op: OperatorInfo) -> Tensor:
    o = op.options
    if o["weights_format"] != 0:
        raise _Unsupported("its weights are shuffled (SHUFFLED4x16INT8), which tfc does not read")
    x = b.tensor(op.inputs[0])
    w = _float_weights(b, op.inputs[1], "weights")
    depth = b.info(op.inputs[1]).shape[1]
    rows = _shape.reshape(x, [-1, depth], name=f"{_op_name(op)}_rows")
    y = _linalg.matmul(rows, w, transpose_b=True, name=_op_name(op))
    y = _activation(_float_bias(b, op, y), o["activation"], _op_name(op))
    if o["keep_num_dims"]:
        dims = x.shape.as_list()
        y = _shape.reshape(y, [-1 if d is None else d for d in dims[:-1]] + [y.shape.as_list()[1]])
    return y


def _float_pool(kind: str) -> Callable[[_Builder, OperatorInfo], Tensor]:
    def convert(b: _Builder, op: OperatorInfo) -> Tensor:
        o = op.options
        pool = _conv.avg_pool if kind == "avg" else _conv.max_pool
        ksize = [1, o["filter_h"], o["filter_w"], 1]
        y = pool(b.tensor(op.inputs[0]), ksize, _strides(o), _padding(o), name=_op_name(op))
        return _activation(y, o["activation"], _op_name(op))

    return convert


def _reshape(b: _Builder, op: OperatorInfo) -> Tensor:
    x = b.tensor(op.inputs[0])
    if b.dtype(op.inputs[0]) == "int8":
        _same_quantization(b, op, op.inputs[0], op.outputs[0])
    return _shape.reshape(x, b.target_shape(op.outputs[0]), name=_op_name(op))


def _float_softmax(b: _Builder, op: OperatorInfo) -> Tensor:
    x = b.tensor(op.inputs[0])
    beta = float(op.options["beta"])
    if beta != 1.0:
        x = _math.multiply(x, np.float32(beta), name=f"{_op_name(op)}_beta")
    return _nn.softmax(x, name=_op_name(op))


_BINARY = {"ADD": _math.add, "MUL": _math.multiply, "SUB": _math.subtract}


def _float_binary(b: _Builder, op: OperatorInfo) -> Tensor:
    y = _BINARY[op.name](b.tensor(op.inputs[0]), b.tensor(op.inputs[1]), name=_op_name(op))
    return _activation(y, op.options["activation"], _op_name(op))


_UNARY = {
    "LOGISTIC": _math.sigmoid,
    "TANH": _math.tanh,
    "RELU": _nn.relu,
    "RELU6": _nn.relu6,
}


def _float_unary(b: _Builder, op: OperatorInfo) -> Tensor:
    x = b.tensor(op.inputs[0])
    if op.name == "RELU_N1_TO_1":
        return _math.clip_by_value(x, -1.0, 1.0, name=_op_name(op))
    return _UNARY[op.name](x, name=_op_name(op))


def _axis_list(b: _Builder, op: OperatorInfo, index: int) -> list[int]:
    value = b.array(index)
    if value is None:
        raise _Unsupported(
            f"its axes (tensor {index}) are computed at run time; tfc needs them constant"
        )
    return [int(v) for v in np.ravel(value)]


def _concatenation(b: _Builder, op: OperatorInfo) -> Tensor:
    inputs = [b.tensor(i) for i in op.inputs]
    if b.dtype(op.inputs[0]) == "int8":
        for i in op.inputs:
            _same_quantization(b, op, i, op.outputs[0])
        if ACTIVATIONS.get(op.options["activation"]) != "NONE":
            raise _Unsupported("an int8 concatenation with a fused activation is not implemented")
        return _join.concat(inputs, op.options["axis"], name=_op_name(op))
    y = _join.concat(inputs, op.options["axis"], name=_op_name(op))
    return _activation(y, op.options["activation"], _op_name(op))


def _mean(b: _Builder, op: OperatorInfo) -> Tensor:
    x = b.tensor(op.inputs[0])
    axes = _axis_list(b, op, op.inputs[1])
    keep = bool(op.options["keep_dims"])
    if b.dtype(op.inputs[0]) == "int8":
        return _qnn.int8_mean(
            x,
            axes,
            keep,
            b.quantization(op.inputs[0], "input"),
            b.quantization(op.outputs[0], "output"),
            name=_op_name(op),
        )
    return _reduce.reduce_mean(x, axes, keepdims=keep, name=_op_name(op))


def _pad(b: _Builder, op: OperatorInfo) -> Tensor:
    x = b.tensor(op.inputs[0])
    paddings = b.array(op.inputs[1])
    if paddings is None:
        raise _Unsupported("its paddings are computed at run time; tfc needs them constant")
    value: Any = 0
    if b.dtype(op.inputs[0]) == "int8":
        _same_quantization(b, op, op.inputs[0], op.outputs[0])
        value = b.quantization(op.outputs[0], "output")[1]  # PAD fills with the zero point
    if op.name == "PADV2" and len(op.inputs) > 2 and op.inputs[2] >= 0:
        fill = b.array(op.inputs[2])
        if fill is None:
            raise _Unsupported("its padding value is computed at run time")
        value = np.ravel(fill)[0]
    return _join.pad(
        x, np.asarray(paddings, np.int64).tolist(), constant_values=value, name=_op_name(op)
    )


# -- int8 operators -------------------------------------------------------------------------------
def _same_quantization(b: _Builder, op: OperatorInfo, a: int, c: int) -> None:
    qa, qc = b.quantization(a, "input"), b.quantization(c, "output")
    if qa != qc:
        raise _Unsupported(
            f"its int8 input (scale {qa[0]}, zero point {qa[1]}) and output "
            f"(scale {qc[0]}, zero point {qc[1]}) are quantized differently, "
            "which TFLite's int8 kernel of this operator does not allow"
        )


def _int8_activation(op: OperatorInfo) -> str:
    kind = ACTIVATIONS.get(op.options.get("activation", 0), "?")
    if kind not in _q.ACTIVATIONS:
        raise _Unsupported(f"its fused activation {kind} has no int8 kernel")
    return kind


def _int8_conv(b: _Builder, op: OperatorInfo) -> Tensor:
    o = op.options
    x, f = op.inputs[0], op.inputs[1]
    channels = b.info(f).shape[0]
    return _qnn.int8_conv2d(
        b.tensor(x), b.tensor(f), b.bias(op, channels), b.quantization(x, "input"),
        b.filter_scales(f, 0, channels), b.quantization(op.outputs[0], "output"),
        (o["stride_h"], o["stride_w"]), _padding(o), (o["dilation_h"], o["dilation_w"]),
        _int8_activation(op), name=_op_name(op),
    )  # fmt: skip


def _int8_depthwise(b: _Builder, op: OperatorInfo) -> Tensor:
    o = op.options
    x, f = op.inputs[0], op.inputs[1]
    out_c = b.info(f).shape[3]
    in_c = b.info(x).shape[3]
    if not in_c or out_c % in_c:
        raise _Unsupported(
            f"its filter's {out_c} channels are not a multiple of the input's {in_c}"
        )
    return _qnn.int8_depthwise_conv2d(
        b.tensor(x), b.tensor(f), b.bias(op, out_c), b.quantization(x, "input"),
        b.filter_scales(f, 3, out_c), b.quantization(op.outputs[0], "output"), out_c // in_c,
        (o["stride_h"], o["stride_w"]), _padding(o), (o["dilation_h"], o["dilation_w"]),
        _int8_activation(op), name=_op_name(op),
    )  # fmt: skip


def _int8_fully_connected(b: _Builder, op: OperatorInfo) -> Tensor:
    o = op.options
    if o["weights_format"] != 0:
        raise _Unsupported("its weights are shuffled (SHUFFLED4x16INT8), which tfc does not read")
    x, f = op.inputs[0], op.inputs[1]
    outputs = b.info(f).shape[0]
    return _qnn.int8_fully_connected(
        b.tensor(x), b.tensor(f), b.bias(op, outputs), b.quantization(x, "input"),
        b.filter_scales(f, 0, outputs), b.quantization(op.outputs[0], "output"),
        _int8_activation(op), bool(o["keep_num_dims"]), name=_op_name(op),
    )  # fmt: skip


def _int8_pool(kind: str) -> Callable[[_Builder, OperatorInfo], Tensor]:
    def convert(b: _Builder, op: OperatorInfo) -> Tensor:
        o = op.options
        _same_quantization(b, op, op.inputs[0], op.outputs[0])
        return _qnn.int8_pool(
            kind, b.tensor(op.inputs[0]), b.quantization(op.inputs[0], "input"),
            (o["filter_h"], o["filter_w"]), (o["stride_h"], o["stride_w"]), _padding(o),
            _int8_activation(op), name=_op_name(op),
        )  # fmt: skip

    return convert


def _int8_softmax(b: _Builder, op: OperatorInfo) -> Tensor:
    scale, zero = b.quantization(op.outputs[0], "output")
    if (np.float32(scale), zero) != (np.float32(1 / 256), -128):
        raise _Unsupported(
            f"its int8 output has scale {scale} and zero point {zero}; TFLite's "
            "int8 softmax gives scale 1/256 and zero point -128"
        )
    x = op.inputs[0]
    return _qnn.int8_softmax(
        b.tensor(x), b.quantization(x, "input")[0], op.options["beta"], name=_op_name(op)
    )


def _int8_binary(b: _Builder, op: OperatorInfo) -> Tensor:
    if op.name == "SUB":
        raise _Unsupported("int8 SUB is not implemented (float32 SUB is)")
    a, c = op.inputs[0], op.inputs[1]
    if b.dtype(c) != "int8":
        raise _Unsupported(f"its second input is {b.dtype(c)}, its first int8")
    build = _q.int8_add if op.name == "ADD" else _q.int8_mul
    quantizations = [b.quantization(a, "first input"), b.quantization(c, "second input")]
    return build(
        b.tensor(a),
        b.tensor(c),
        quantizations,
        b.quantization(op.outputs[0], "output"),
        _int8_activation(op),
        name=_op_name(op),
    )


def _int8_unary(b: _Builder, op: OperatorInfo) -> Tensor:
    x = op.inputs[0]
    q_in, q_out = b.quantization(x, "input"), b.quantization(op.outputs[0], "output")
    if op.name in ("LOGISTIC", "TANH"):
        return _q.int8_lookup(b.tensor(x), op.name, q_in, q_out, name=_op_name(op))
    return _q.int8_relu(b.tensor(x), op.name, q_in, q_out, name=_op_name(op))


def _quantize(b: _Builder, op: OperatorInfo) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    if b.dtype(y) != "int8":
        raise _Unsupported(f"it quantizes to {b.dtype(y)}; tfc implements int8 quantization")
    q_out = b.quantization(y, "output")
    if b.dtype(x) == "float32":
        return _q.int8_quantize(b.tensor(x), *q_out, name=_op_name(op))
    if b.dtype(x) == "int8":
        return _q.int8_requantize(b.tensor(x), b.quantization(x, "input"), q_out, name=_op_name(op))
    raise _Unsupported(f"it quantizes {b.dtype(x)} values; tfc quantizes float32 and int8")


def _dequantize(b: _Builder, op: OperatorInfo) -> Tensor:
    x = op.inputs[0]
    if b.dtype(x) == "float16":
        return _math.cast(b.tensor(x), _dt.float32, name=_op_name(op))
    if b.dtype(x) != "int8":
        raise _Unsupported(f"it dequantizes {b.dtype(x)} values; tfc dequantizes int8 and float16")
    return _q.int8_dequantize(b.tensor(x), *b.quantization(x, "input"), name=_op_name(op))


# operator name -> (float32 converter, int8 converter), chosen by the first input's type
CONVERTERS: dict[str, tuple[Callable | None, Callable | None]] = {
    "CONV_2D": (_float_conv, _int8_conv),
    "DEPTHWISE_CONV_2D": (_float_depthwise, _int8_depthwise),
    "FULLY_CONNECTED": (_float_fully_connected, _int8_fully_connected),
    "AVERAGE_POOL_2D": (_float_pool("avg"), _int8_pool("avg")),
    "MAX_POOL_2D": (_float_pool("max"), _int8_pool("max")),
    "RESHAPE": (_reshape, _reshape),
    "SOFTMAX": (_float_softmax, _int8_softmax),
    "ADD": (_float_binary, _int8_binary),
    "MUL": (_float_binary, _int8_binary),
    "SUB": (_float_binary, _int8_binary),
    "LOGISTIC": (_float_unary, _int8_unary),
    "TANH": (_float_unary, _int8_unary),
    "RELU": (_float_unary, _int8_unary),
    "RELU6": (_float_unary, _int8_unary),
    "RELU_N1_TO_1": (_float_unary, _int8_unary),
    "CONCATENATION": (_concatenation, _concatenation),
    "MEAN": (_mean, _mean),
    "PAD": (_pad, _pad),
    "PADV2": (_pad, _pad),
    "QUANTIZE": (_quantize, _quantize),
    "DEQUANTIZE": (_dequantize, _dequantize),
}


_SCHEMES = {
    "int16": "int16 activations",
    "uint8": "uint8 activations (the older asymmetric scheme)",
}


def _convert(b: _Builder, op: OperatorInfo) -> None:
    if op.custom:
        raise _Unsupported("custom operators have no tfc implementation")
    if op.name not in CONVERTERS:
        known = ", ".join(sorted(CONVERTERS))
        raise _Unsupported(f"the operator is not supported (tfc imports {known})")
    if not op.inputs or op.inputs[0] < 0 or len(op.outputs) != 1:
        raise _Unsupported(f"it has inputs {op.inputs} and outputs {op.outputs}")
    kind = b.dtype(op.inputs[0])
    if op.name in ("QUANTIZE", "DEQUANTIZE"):
        kind = "float32"  # each handles every input type itself
    if kind in ("int16", "uint8"):
        raise _Unsupported(
            f"its input is {kind}: {_SCHEMES[kind]} are a quantization scheme tfc does not "
            "implement (it implements TFLite's int8 and float32 kernels)"
        )
    float_converter, int8_converter = CONVERTERS[op.name]
    converter = {"float32": float_converter, "int8": int8_converter}.get(kind)
    if converter is None:
        raise _Unsupported(f"its input is {kind}; tfc imports float32 and int8 operators")
    y = converter(b, op)
    out = op.outputs[0]
    expected = _DTYPES.get(b.dtype(out), (None,))[0]
    if y.dtype is not expected:
        raise _Unsupported(f"its output is {b.dtype(out)}, but tfc computes {y.dtype.name}")
    b.values[out] = y


def _input_placeholder(b: _Builder, index: int) -> Tensor:
    info = b.info(index)
    if info.dtype in _SCHEMES:
        raise _Unsupported(
            f"input tensor {index} ({info.name}) is {info.dtype}: "
            f"{_SCHEMES[info.dtype]} are a quantization scheme tfc does not "
            "implement (it implements TFLite's int8 and float32 kernels)"
        )
    if info.dtype not in ("float32", "int8", "int32", "int64", "bool"):
        raise _Unsupported(
            f"input tensor {index} ({info.name}) is {info.dtype}; tfc feeds "
            "float32, int8, int32, int64 and bool"
        )
    dims: list[int | None] = list(info.signature if info.signature is not None else info.shape)
    dims = [None if d < 0 else d for d in dims]
    if dims and (b.batch is not None or b.flexible):
        dims[0] = b.batch
    return placeholder(_DTYPES[info.dtype][0], dims, name=f"input_{len(b.values)}")


def _by_name(model: ModelInfo, names: Sequence[str], what: str, path: str) -> list[int]:
    index = {t.name: t.index for t in model.tensors}
    missing = [n for n in names if n not in index]
    if missing:
        raise TFLiteImportError(
            f"{path}: no tensor is named {missing[0]!r} (--{what}); the "
            f"model's tensors include {sorted(index)[:10]}"
        )
    return [index[n] for n in names]


def _needed(model: ModelInfo, outputs: Sequence[int], inputs: Sequence[int]) -> list[int]:
    """The operators computing `outputs` from `inputs` and constants, in the file's order."""
    producer = {t: op.index for op in model.operators for t in op.outputs}
    needed, stack = set(), [t for t in outputs]
    while stack:
        t = stack.pop()
        if t in inputs or t not in producer or producer[t] in needed:
            continue
        needed.add(producer[t])
        stack.extend(i for i in model.operators[producer[t]].inputs if i >= 0)
    return sorted(needed)


def read_file(model: str | os.PathLike | bytes) -> tuple[ModelInfo, str]:
    """The model's subgraph and the name messages call it by."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        data, path = bytes(model), "<tflite bytes>"
    else:
        path = str(model)
        if not Path(path).is_file():
            raise FileNotFoundError(f"model file {path} does not exist")
        data = Path(path).read_bytes()
    try:
        return read_model(data), path
    except FlatBufferError as e:
        raise TFLiteImportError(f"{path}: not a valid TensorFlow Lite model: {e}") from None


def import_graph(
    model: str | os.PathLike | bytes,
    batch: int | None = None,
    graph: Graph | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    dynamic_batch: bool = False,
) -> ImportedGraph:
    """Build the tfc ops of a `.tflite` model (a path or the file's bytes) in `graph` (default:
    the default graph). `batch` replaces the first dimension of every input (None: the model's
    own, or None where its shape signature leaves it dynamic). `input_names`/`output_names`
    (TFLite tensor names) cut the subgraph between them: the inputs become placeholders.
    `dynamic_batch` leaves the first dimension None even where the model fixes it (`tfc compile`
    compiles the batch it is given)."""
    info, path = read_file(model)
    graph = graph if graph is not None else get_default_graph()
    inputs = _by_name(info, input_names, "inputs", path) if input_names else list(info.inputs)
    outputs = _by_name(info, output_names, "outputs", path) if output_names else list(info.outputs)
    if not outputs:
        raise TFLiteImportError(f"{path}: the model has no outputs")
    flexible = (
        dynamic_batch
        or batch is not None
        or any((info.tensors[i].signature or [0])[:1] == [-1] for i in inputs)
    )
    b = _Builder(info, batch, flexible)
    with graph.as_default():
        try:
            for i in inputs:
                b.values[i] = _input_placeholder(b, i)
        except _Unsupported as e:
            raise TFLiteImportError(f"{path}: {e}") from None
        for k in _needed(info, outputs, inputs):
            op = info.operators[k]
            try:
                _convert(b, op)
            except _Unsupported as e:
                raise TFLiteImportError(f"{path}: operator {k} ({op.name}): {e}") from None
            except (ValueError, TypeError) as e:
                raise TFLiteImportError(f"{path}: operator {k} ({op.name}): {e}") from None
        missing = [t for t in outputs if t not in b.values]
        if missing:
            raise TFLiteImportError(
                f"{path}: output tensor {missing[0]} "
                f"({info.tensors[missing[0]].name}) is computed by no "
                "operator"
            )
    return ImportedGraph(
        graph,
        [b.values[i] for i in inputs],
        [b.values[t] for t in outputs],
        [info.tensors[i].name for i in inputs],
        [info.tensors[t].name for t in outputs],
    )


def import_model(
    model: str | os.PathLike | bytes, batch: int | None = None, graph: Graph | None = None
) -> tuple[Graph, list[Tensor], list[Tensor]]:
    """`graph, inputs, outputs = tfc.tflite.import_model(path)`: a `.tflite` model (float32, or
    int8 quantized by TensorFlow's converter) as a tfc graph; `inputs` are its placeholders and
    `outputs` its results, in the model's order. Run them in a Session, or compile them (`tfc
    compile model.tflite`). `batch` sets the inputs' first dimension (see import_graph)."""
    imported = import_graph(model, batch, graph if graph is not None else Graph())
    return imported.graph, imported.inputs, imported.outputs
