"""TFLite test models, made by TensorFlow: small CNNs through TensorFlow's converter (float32 and
int8 quantized), and one model per int8 operator written with TFLite's own schema module, each
with random inputs and the outputs of TFLite's interpreter (its reference kernels and its
default, optimized ones).

Needs TensorFlow. tests/test_tflite.py runs it where TensorFlow is importable (against the live
interpreter) and otherwise reads the set it wrote into tests/data/tflite/, which is regenerated
with

    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 python tests/tflite_models.py tests/data/tflite
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _tf():
    import tensorflow as tf

    return tf


# -- running TFLite's interpreter ------------------------------------------------------------------
def interpret(model: bytes, feeds: list[np.ndarray], reference: bool = True) -> list[np.ndarray]:
    """The model's outputs for `feeds` from TFLite's interpreter, with its reference kernels
    (BUILTIN_REF) or its default ones."""
    import warnings

    tf = _tf()
    resolver = tf.lite.experimental.OpResolverType
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tf.lite.Interpreter's deprecation notice
        interpreter = tf.lite.Interpreter(
            model_content=model,
            experimental_op_resolver_type=resolver.BUILTIN_REF if reference else resolver.BUILTIN,
        )
    for detail, value in zip(interpreter.get_input_details(), feeds):
        if list(detail["shape"]) != list(value.shape):
            interpreter.resize_tensor_input(detail["index"], value.shape)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), feeds):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


# -- single int8 operators, through TFLite's schema module ---------------------------------------
class SchemaModel:
    """A one-subgraph model written with TFLite's generated schema classes (object API)."""

    def __init__(self) -> None:
        from tensorflow.lite.python import schema_py_generated as schema

        self.s = schema
        self.tensors: list = []
        self.buffers = [schema.BufferT()]
        self.operators: list = []
        self.codes: list[int] = []

    def tensor(self, shape, dtype, scale=None, zero_point=None, data=None, axis=0, sig=None):
        s = self.s
        types = {"int8": s.TensorType.INT8, "int32": s.TensorType.INT32,
                 "float32": s.TensorType.FLOAT32, "int64": s.TensorType.INT64,
                 "int16": s.TensorType.INT16}  # fmt: skip
        t = s.TensorT()
        t.shape, t.type, t.name = list(shape), types[dtype], f"t{len(self.tensors)}"
        if sig is not None:
            t.shapeSignature = list(sig)
        if scale is not None:
            q = s.QuantizationParametersT()
            q.scale = [float(np.float32(v)) for v in np.atleast_1d(scale)]
            q.zeroPoint = [int(v) for v in np.atleast_1d(zero_point)]
            q.quantizedDimension = axis
            t.quantization = q
        t.buffer = 0
        if data is not None:
            b = s.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data, dtype).tobytes(), np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, name: str, inputs, outputs, options=None, custom: str | None = None) -> None:
        s = self.s
        code = getattr(s.BuiltinOperator, name) if custom is None else (s.BuiltinOperator.CUSTOM,
                                                                         custom)  # fmt: skip
        if code not in self.codes:
            self.codes.append(code)
        o = s.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = self.codes.index(code), list(inputs), list(outputs)
        if options is not None:
            o.builtinOptionsType = getattr(s.BuiltinOptions, type(options).__name__[:-1])
            o.builtinOptions = options
        self.operators.append(o)

    def options(self, kind: str, **fields):
        table = getattr(self.s, f"{kind}OptionsT")()
        for key, value in fields.items():
            setattr(table, key, value)
        return table

    def build(self, inputs, outputs) -> bytes:
        import flatbuffers

        s = self.s
        m = s.ModelT()
        m.version = 3
        m.operatorCodes = []
        for code in self.codes:
            oc = s.OperatorCodeT()
            if isinstance(code, tuple):
                code, oc.customCode = code
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
            m.operatorCodes.append(oc)
        g = s.SubGraphT()
        g.tensors, g.inputs, g.outputs = self.tensors, list(inputs), list(outputs)
        g.operators, g.name = self.operators, "main"
        m.subgraphs, m.buffers = [g], self.buffers
        builder = flatbuffers.Builder(1024)
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def _scale(rng) -> float:
    return float(np.float32(np.exp(rng.uniform(-5, -0.5))))


def _zero(rng) -> int:
    return int(rng.integers(-128, 128))


def _int8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def _conv_like(rng, name: str, per_channel: bool):
    n, h, w, c = 2, int(rng.integers(5, 9)), int(rng.integers(5, 9)), int(rng.integers(2, 6))
    same, act = bool(rng.integers(0, 2)), int(rng.choice([0, 1, 3]))
    stride, dilation = (int(rng.integers(1, 3)), 1), (1, int(rng.integers(1, 3)))
    m = SchemaModel()
    s_in, z_in = _scale(rng), _zero(rng)
    if name == "CONV_2D":
        o = int(rng.integers(2, 7))
        f = rng.integers(-127, 128, size=(o, 3, 3, c)).astype(np.int8)
        axis, options_kind = 0, "Conv2D"
    else:
        mult = int(rng.integers(1, 3))
        o = c * mult
        f = rng.integers(-127, 128, size=(1, 3, 3, o)).astype(np.int8)
        axis, options_kind = 3, "DepthwiseConv2D"
    scales = [_scale(rng) * 0.05 for _ in range(o)] if per_channel else [_scale(rng) * 0.05]
    s_out = s_in * float(np.mean(scales)) * 30 * rng.uniform(0.5, 2)
    x = m.tensor([n, h, w, c], "int8", s_in, z_in)
    ft = m.tensor(f.shape, "int8", scales, [0] * len(scales), data=f, axis=axis)
    bias = rng.integers(-4000, 4000, size=o).astype(np.int32)
    bt = m.tensor([o], "int32", [s_in * v for v in scales], [0] * len(scales), data=bias)
    y = m.tensor([n, 1, 1, o], "int8", s_out, _zero(rng))
    fields = dict(padding=0 if same else 1, strideH=stride[0], strideW=stride[1],
                  dilationHFactor=dilation[0], dilationWFactor=dilation[1],
                  fusedActivationFunction=act)  # fmt: skip
    if name != "CONV_2D":
        fields["depthMultiplier"] = o // c
    m.op(name, [x, ft, bt], [y], m.options(options_kind, **fields))
    return m.build([x], [y]), [_int8(rng, (n, h, w, c))]


def _fully_connected(rng, per_channel: bool):
    m = SchemaModel()
    k, o, batch = int(rng.integers(8, 64)), int(rng.integers(2, 12)), 3
    s_in, z_in = _scale(rng), _zero(rng)
    scales = [_scale(rng) * 0.05 for _ in range(o)] if per_channel else [_scale(rng) * 0.05]
    s_out = s_in * float(np.mean(scales)) * np.sqrt(k) * 20
    f = rng.integers(-127, 128, size=(o, k)).astype(np.int8)
    x = m.tensor([batch, k], "int8", s_in, z_in)
    ft = m.tensor(f.shape, "int8", scales, [0] * len(scales), data=f)
    bias = rng.integers(-4000, 4000, size=o).astype(np.int32)
    bt = m.tensor([o], "int32", [s_in * v for v in scales], [0] * len(scales), data=bias)
    y = m.tensor([batch, o], "int8", s_out, _zero(rng))
    m.op("FULLY_CONNECTED", [x, ft, bt], [y],
         m.options("FullyConnected", fusedActivationFunction=int(rng.choice([0, 1]))))  # fmt: skip
    return m.build([x], [y]), [_int8(rng, (batch, k))]


def _pool(rng, name: str):
    m = SchemaModel()
    s, z = _scale(rng), _zero(rng)
    x = m.tensor([2, 7, 6, 3], "int8", s, z)
    y = m.tensor([2, 1, 1, 3], "int8", s, z)
    m.op(name, [x], [y], m.options("Pool2D", padding=int(rng.integers(0, 2)), strideH=2,
                                   strideW=1, filterHeight=3, filterWidth=2,
                                   fusedActivationFunction=int(rng.choice([0, 1, 3]))))  # fmt: skip
    return m.build([x], [y]), [_int8(rng, (2, 7, 6, 3))]


def _unary(rng, name: str):
    m = SchemaModel()
    x = m.tensor([4, 64], "int8", _scale(rng) * rng.uniform(1, 40), _zero(rng))
    out = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0), "SOFTMAX": (1 / 256, -128)}
    s_out, z_out = out.get(name, (_scale(rng), _zero(rng)))
    y = m.tensor([4, 64], "int8", s_out, z_out)
    options = None
    if name == "SOFTMAX":
        options = m.options("Softmax", beta=float(np.float32(rng.choice([1.0, 0.7]))))
    m.op(name, [x], [y], options)
    values = np.arange(-128, 128).astype(np.int8).reshape(4, 64)  # every int8 value
    return m.build([x], [y]), [values if name != "SOFTMAX" else _int8(rng, (4, 64))]


def _binary(rng, name: str):
    m = SchemaModel()
    s_a, s_b = _scale(rng), _scale(rng)
    a = m.tensor([3, 4, 5], "int8", s_a, _zero(rng))
    b = m.tensor([1, 4, 5], "int8", s_b, _zero(rng))
    s_out = (max(s_a, s_b) * 2) if name == "ADD" else s_a * s_b * 60
    y = m.tensor([3, 4, 5], "int8", s_out, _zero(rng))
    kind = "Add" if name == "ADD" else "Mul"
    m.op(name, [a, b], [y], m.options(kind, fusedActivationFunction=int(rng.choice([0, 1]))))
    return m.build([a, b], [y]), [_int8(rng, (3, 4, 5)), _int8(rng, (1, 4, 5))]


def _quantize(rng, source: str):
    m = SchemaModel()
    if source == "float32":
        x = m.tensor([3, 40], "float32")
        scale = _scale(rng)
        values = (rng.standard_normal((3, 40)) * 2).astype(np.float32)
        values[0] = (np.arange(-20, 20) * 0.5 * np.float32(scale)).astype(np.float32)  # halves
        values[1, :3] = [1e30, -1e30, 0.0]
        y = m.tensor([3, 40], "int8", scale, _zero(rng))
        m.op("QUANTIZE", [x], [y])
        return m.build([x], [y]), [values]
    x = m.tensor([3, 40], "int8", _scale(rng), _zero(rng))
    if source == "int8":
        y = m.tensor([3, 40], "int8", _scale(rng), _zero(rng))
        m.op("QUANTIZE", [x], [y])
    else:
        y = m.tensor([3, 40], "float32")
        m.op("DEQUANTIZE", [x], [y])
    return m.build([x], [y]), [_int8(rng, (3, 40))]


def _shaped(rng, name: str):
    m = SchemaModel()
    s, z = _scale(rng), _zero(rng)
    x = m.tensor([2, 5, 6, 3], "int8", s, z)
    if name == "RESHAPE":
        shape = m.tensor([2], "int32", data=np.array([2, 90], np.int32))
        y = m.tensor([2, 90], "int8", s, z)
        m.op("RESHAPE", [x, shape], [y], m.options("Reshape", newShape=[2, 90]))
        return m.build([x], [y]), [_int8(rng, (2, 5, 6, 3))]
    if name == "CONCATENATION":
        x2 = m.tensor([2, 5, 6, 4], "int8", s, z)
        y = m.tensor([2, 5, 6, 7], "int8", s, z)
        m.op("CONCATENATION", [x, x2], [y], m.options("Concatenation", axis=3))
        return m.build([x, x2], [y]), [_int8(rng, (2, 5, 6, 3)), _int8(rng, (2, 5, 6, 4))]
    if name == "PAD":
        pads = m.tensor([4, 2], "int32", data=np.array([[0, 0], [1, 2], [2, 0], [0, 1]], np.int32))
        y = m.tensor([2, 8, 8, 4], "int8", s, z)
        m.op("PAD", [x, pads], [y])
        return m.build([x], [y]), [_int8(rng, (2, 5, 6, 3))]
    raise ValueError(name)


def _mean(rng, axes, keep_dims: bool, same: bool):
    m = SchemaModel()
    shape = [2, 5, 6, 3]
    s, z = _scale(rng), _zero(rng)
    x = m.tensor(shape, "int8", s, z)
    ax = m.tensor([len(axes)], "int32", data=np.array(axes, np.int32))
    out = (
        [1 if k in axes else d for k, d in enumerate(shape)]
        if keep_dims
        else [d for k, d in enumerate(shape) if k not in axes]
    )
    s_out, z_out = (s, z) if same else (_scale(rng), _zero(rng))
    y = m.tensor(out, "int8", s_out, z_out)
    m.op("MEAN", [x, ax], [y], m.options("Reducer", keepDims=keep_dims))
    return m.build([x], [y]), [_int8(rng, shape)]


def operator_models(seed: int = 0) -> dict[str, Callable[[], tuple[bytes, list]]]:
    """One small model per int8 operator and configuration: name -> maker."""
    rng = np.random.default_rng(seed)
    makers: dict[str, Callable] = {}
    for per_channel in (False, True):
        tag = "per_channel" if per_channel else "per_tensor"
        makers[f"op_conv_2d_{tag}"] = lambda p=per_channel: _conv_like(rng, "CONV_2D", p)
        makers[f"op_depthwise_conv_2d_{tag}"] = lambda p=per_channel: _conv_like(
            rng, "DEPTHWISE_CONV_2D", p
        )
        makers[f"op_fully_connected_{tag}"] = lambda p=per_channel: _fully_connected(rng, p)
    for name in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        makers[f"op_{name.lower()}"] = lambda n=name: _pool(rng, n)
    for name in ("LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1", "SOFTMAX"):
        makers[f"op_{name.lower()}"] = lambda n=name: _unary(rng, n)
    for name in ("ADD", "MUL"):
        makers[f"op_{name.lower()}"] = lambda n=name: _binary(rng, n)
    for source, name in (("float32", "quantize"), ("int8", "requantize"), ("dq", "dequantize")):
        makers[f"op_{name}"] = lambda src=source: _quantize(rng, src)
    for name in ("RESHAPE", "CONCATENATION", "PAD"):
        makers[f"op_{name.lower()}"] = lambda n=name: _shaped(rng, n)
    for axes, keep, same in (([1, 2], True, False), ([1, 2], False, False), ([3], False, True),
                             ([0, 2], True, False)):  # fmt: skip
        label = "_".join(map(str, axes))
        makers[f"op_mean_{label}_{'keep' if keep else 'drop'}{'_same' if same else ''}"] = (
            lambda a=axes, k=keep, s=same: _mean(rng, a, k, s)
        )
    return makers


# -- CNNs through TensorFlow's converter -----------------------------------------------------------
def _cnn_module(tf, kind: str):
    """A small CNN of TF ops for 12x12x1 images (random weights from a fixed seed): "cnn" has
    conv + relu, depthwise conv + relu6, max and average pools, a dense layer and softmax;
    "branches" adds, multiplies, concatenates, pads, logistic, tanh and a mean."""
    rng = np.random.default_rng(7)

    def var(*shape, scale=0.3):
        return tf.Variable(rng.normal(0, scale, shape).astype(np.float32))

    class CNN(tf.Module):
        def __init__(self):
            self.c1, self.b1 = var(3, 3, 1, 8), var(8, scale=0.05)
            self.d2, self.b2 = var(3, 3, 8, 1), var(8, scale=0.05)
            self.c3, self.b3 = var(3, 3, 8, 6), var(6, scale=0.05)
            self.w, self.b = var(6 * 2 * 2 if kind == "cnn" else 6 * 3, 10), var(10)

        @tf.function(input_signature=[tf.TensorSpec([None, 12, 12, 1], tf.float32)])
        def __call__(self, x):
            y = tf.nn.relu(tf.nn.conv2d(x, self.c1, 1, "SAME") + self.b1)
            y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, self.d2, [1, 1, 1, 1], "SAME") + self.b2)
            y = tf.nn.max_pool2d(y, 2, 2, "VALID")
            y = tf.nn.relu(tf.nn.conv2d(y, self.c3, 1, "VALID") + self.b3)
            if kind == "cnn":
                y = tf.nn.avg_pool2d(y, 2, 1, "SAME")
                y = tf.nn.avg_pool2d(y, 2, 2, "VALID")
                y = tf.reshape(y, [-1, 6 * 2 * 2])
            else:
                gate = tf.sigmoid(y)
                squashed = tf.tanh(y)
                y = y * gate + squashed
                y = tf.pad(y, [[0, 0], [1, 0], [0, 1], [0, 0]])
                mean = tf.reduce_mean(y, axis=[1, 2])
                peak = tf.reduce_mean(tf.nn.relu6(y * 2.0), axis=[1, 2], keepdims=True)
                peak = tf.reshape(peak, [-1, 6])
                y = tf.concat([mean, peak, mean * 0.25], axis=1)
            return tf.nn.softmax(tf.matmul(y, self.w) + self.b)

    return CNN()


def converted_models(kind: str) -> dict[str, tuple[bytes, list]]:
    """The float32 model, the int8 model with float32 inputs and outputs (QUANTIZE and
    DEQUANTIZE at its ends), and the int8 model with int8 inputs and outputs, of CNN `kind`."""
    tf = _tf()
    module = _cnn_module(tf, kind)
    concrete = module.__call__.get_concrete_function()
    rng = np.random.default_rng(11)
    calibration = rng.uniform(0, 1, (32, 12, 12, 1)).astype(np.float32)

    def representative():
        for k in range(len(calibration)):
            yield [calibration[k : k + 1]]

    def convert(quantized: bool, int8_io: bool) -> bytes:
        converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], module)
        if quantized:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            converter.representative_dataset = representative
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            if int8_io:
                converter.inference_input_type = tf.int8
                converter.inference_output_type = tf.int8
        return converter.convert()

    x = rng.uniform(0, 1, (4, 12, 12, 1)).astype(np.float32)
    models = {f"{kind}_float": (convert(False, False), [x]),
              f"{kind}_int8_float_io": (convert(True, False), [x])}  # fmt: skip
    int8_model = convert(True, True)
    q = _input_quantization(int8_model)
    xq = np.clip(np.round(x / q[0]) + q[1], -128, 127).astype(np.int8)
    models[f"{kind}_int8"] = (int8_model, [xq])
    return models


def _input_quantization(model: bytes) -> tuple[float, int]:
    tf = _tf()
    interpreter = tf.lite.Interpreter(model_content=model)
    scale, zero = interpreter.get_input_details()[0]["quantization"]
    return float(scale), int(zero)


def bad_models() -> dict[str, bytes]:
    """Models tfc must refuse, by what it must say: name -> the file's bytes."""
    rng = np.random.default_rng(3)
    models = {}
    m = SchemaModel()  # an operator tfc does not implement
    x = m.tensor([2, 6], "int8", 0.1, 0)
    axis = m.tensor([1], "int32", data=np.array([1], np.int32))
    y = m.tensor([2], "int8", 0.1, 0)
    m.op("REDUCE_MAX", [x, axis], [y], m.options("Reducer", keepDims=False))
    models["bad_unsupported_operator"] = m.build([x], [y])
    m = SchemaModel()  # int16 activations (the 16x8 scheme)
    x = m.tensor([1, 4, 4, 2], "int16", 0.01, 0)
    f = rng.integers(-127, 128, size=(3, 3, 3, 2)).astype(np.int8)
    ft = m.tensor(f.shape, "int8", [0.02], [0], data=f)
    y = m.tensor([1, 4, 4, 3], "int16", 0.05, 0)
    m.op("CONV_2D", [x, ft], [y], m.options("Conv2D", padding=0, strideH=1, strideW=1))
    models["bad_int16_activations"] = m.build([x], [y])
    m = SchemaModel()  # per-channel weights with nonzero zero points
    x = m.tensor([1, 4, 4, 2], "int8", 0.01, 0)
    ft = m.tensor(f.shape, "int8", [0.02, 0.03, 0.01], [0, 3, -2], data=f, axis=0)
    y = m.tensor([1, 4, 4, 3], "int8", 0.05, 0)
    m.op("CONV_2D", [x, ft], [y], m.options("Conv2D", padding=0, strideH=1, strideW=1))
    models["bad_asymmetric_per_channel"] = m.build([x], [y])
    m = SchemaModel()  # float activations with int8 weights (dynamic range quantization)
    x = m.tensor([2, 8], "float32")
    w = rng.integers(-127, 128, size=(3, 8)).astype(np.int8)
    wt = m.tensor(w.shape, "int8", [0.02], [0], data=w)
    y = m.tensor([2, 3], "float32")
    m.op("FULLY_CONNECTED", [x, wt], [y], m.options("FullyConnected"))
    models["bad_hybrid_fully_connected"] = m.build([x], [y])
    m = SchemaModel()  # a custom operator
    x = m.tensor([2, 6], "float32")
    y = m.tensor([2, 6], "float32")
    m.op("CUSTOM", [x], [y], custom="MyCustomOp")
    models["bad_custom_operator"] = m.build([x], [y])
    return models


def all_models() -> dict[str, tuple[bytes, list]]:
    models = {name: make() for name, make in operator_models().items()}
    for kind in ("cnn", "branches"):
        models.update(converted_models(kind))
    return models


def write(directory: str | os.PathLike, models: dict | None = None) -> list[str]:
    """Write each model as NAME.tflite and its inputs and the interpreter's outputs as NAME.npz
    (x0, x1... the inputs; ref0... the reference kernels' outputs; opt0... the default
    kernels')."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    models = all_models() if models is None else models
    for name, model in bad_models().items():
        (directory / f"{name}.tflite").write_bytes(model)
    for name, (model, feeds) in models.items():
        (directory / f"{name}.tflite").write_bytes(model)
        arrays = {f"x{k}": v for k, v in enumerate(feeds)}
        arrays |= {f"ref{k}": v for k, v in enumerate(interpret(model, feeds, reference=True))}
        arrays |= {f"opt{k}": v for k, v in enumerate(interpret(model, feeds, reference=False))}
        np.savez(directory / f"{name}.npz", **arrays)
    return sorted(models)


if __name__ == "__main__":
    names = write(sys.argv[1] if len(sys.argv) > 1 else "tests/data/tflite")
    print(f"wrote {len(names)} models: {', '.join(names)}")
