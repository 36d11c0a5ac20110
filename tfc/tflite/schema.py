"""The part of TensorFlow Lite's schema tfc reads: models, subgraphs, tensors, operators, options.

Field indices and defaults are those of TFLite's `schema.fbs` (the FlatBuffer schema every
`.tflite` file follows); `read_model` turns a file's bytes into the dataclasses below, checking
what tfc relies on (tensor and buffer indices in range, quantization given as scales and zero
points) so that the importer can trust them. Operator options are read per operator kind, by
`OPTIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tfc.tflite.flatbuffer import FlatBufferError, Table, parse_fields, root

# TensorType: the element types of tensors, by their schema number
TENSOR_TYPES = {
    0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool",
    7: "int16", 8: "complex64", 9: "int8", 10: "float64", 11: "complex128", 12: "uint64",
    13: "resource", 14: "variant", 15: "uint32", 16: "uint16", 17: "int4", 18: "bfloat16",
    19: "int2", 20: "uint4",
}  # fmt: skip
PADDINGS = {0: "SAME", 1: "VALID"}
ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}

# BuiltinOperator: every operator's name by its code, for the importer and its messages
BUILTIN_NAMES = (
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE",
    "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC",
    "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1", "RELU6", "RESHAPE",
    "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH", "CONCAT_EMBEDDINGS",
    "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND",
    "TRANSPOSE", "MEAN", "SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX",
    "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM", "ARG_MAX", "MINIMUM",
    "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN",
    "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG",
    "SUM", "SQRT", "RSQRT", "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD",
    "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT", "UNPACK",
    "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD",
    "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS",
    "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK",
    "ELU", "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND",
    "HARD_SWISH", "IF", "WHILE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5",
    "SCATTER_ND", "SELECT_V2", "DENSIFY", "SEGMENT_SUM", "BATCH_MATMUL",
    "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE", "BROADCAST_TO", "RFFT2D",
    "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT",
    "HASHTABLE_SIZE", "REDUCE_ALL", "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE",
    "ASSIGN_VARIABLE", "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM",
    "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2", "UNSORTED_SEGMENT_MIN", "SIGN",
    "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT", "STABLEHLO_LOGISTIC", "STABLEHLO_ADD",
    "STABLEHLO_DIVIDE", "STABLEHLO_MULTIPLY", "STABLEHLO_MAXIMUM", "STABLEHLO_RESHAPE",
    "STABLEHLO_CLAMP", "STABLEHLO_CONCATENATE", "STABLEHLO_BROADCAST_IN_DIM",
    "STABLEHLO_CONVOLUTION", "STABLEHLO_SLICE", "STABLEHLO_CUSTOM_CALL", "STABLEHLO_REDUCE",
    "STABLEHLO_ABS", "STABLEHLO_AND", "STABLEHLO_COSINE", "STABLEHLO_EXPONENTIAL",
    "STABLEHLO_FLOOR", "STABLEHLO_LOG", "STABLEHLO_MINIMUM", "STABLEHLO_NEGATE", "STABLEHLO_OR",
    "STABLEHLO_POWER", "STABLEHLO_REMAINDER", "STABLEHLO_RSQRT", "STABLEHLO_SELECT",
    "STABLEHLO_SUBTRACT", "STABLEHLO_TANH", "STABLEHLO_SCATTER", "STABLEHLO_COMPARE",
    "STABLEHLO_CONVERT", "STABLEHLO_DYNAMIC_SLICE", "STABLEHLO_DYNAMIC_UPDATE_SLICE",
    "STABLEHLO_PAD", "STABLEHLO_IOTA", "STABLEHLO_DOT_GENERAL", "STABLEHLO_REDUCE_WINDOW",
    "STABLEHLO_SORT", "STABLEHLO_WHILE", "STABLEHLO_GATHER", "STABLEHLO_TRANSPOSE", "DILATE",
    "STABLEHLO_RNG_BIT_GENERATOR", "REDUCE_WINDOW", "STABLEHLO_COMPOSITE",
    "STABLEHLO_SHIFT_LEFT", "STABLEHLO_CBRT", "STABLEHLO_CASE",
)  # fmt: skip


def operator_name(code: int) -> str:
    return BUILTIN_NAMES[code] if 0 <= code < len(BUILTIN_NAMES) else f"builtin operator {code}"


_ACTIVATION = ("int8", 0)
# per operator: (the BuiltinOptions union type of its options table, its fields: name ->
# (field index, kind, default)); schema.fbs's tables
OPTIONS: dict[str, tuple[int, dict]] = {
    "CONV_2D": (1, {"padding": (0, "int8", 0), "stride_w": (1, "int32", 0),
                    "stride_h": (2, "int32", 0), "activation": (3, *_ACTIVATION),
                    "dilation_w": (4, "int32", 1), "dilation_h": (5, "int32", 1)}),
    "DEPTHWISE_CONV_2D": (2, {"padding": (0, "int8", 0), "stride_w": (1, "int32", 0),
                              "stride_h": (2, "int32", 0), "depth_multiplier": (3, "int32", 0),
                              "activation": (4, *_ACTIVATION), "dilation_w": (5, "int32", 1),
                              "dilation_h": (6, "int32", 1)}),
    "AVERAGE_POOL_2D": (5, {"padding": (0, "int8", 0), "stride_w": (1, "int32", 0),
                            "stride_h": (2, "int32", 0), "filter_w": (3, "int32", 0),
                            "filter_h": (4, "int32", 0), "activation": (5, *_ACTIVATION)}),
    "FULLY_CONNECTED": (8, {"activation": (0, *_ACTIVATION), "weights_format": (1, "int8", 0),
                            "keep_num_dims": (2, "bool", False),
                            "asymmetric_quantize_inputs": (3, "bool", False)}),
    "SOFTMAX": (9, {"beta": (0, "float32", 0.0)}),
    "CONCATENATION": (10, {"axis": (0, "int32", 0), "activation": (1, *_ACTIVATION)}),
    "ADD": (11, {"activation": (0, *_ACTIVATION), "pot_scale_int16": (1, "bool", True)}),
    "RESHAPE": (17, {"new_shape": (0, "int32[]", None)}),
    "MUL": (21, {"activation": (0, *_ACTIVATION)}),
    "MEAN": (27, {"keep_dims": (0, "bool", False)}),
    "SUB": (28, {"activation": (0, *_ACTIVATION), "pot_scale_int16": (1, "bool", True)}),
    "SQUEEZE": (30, {"squeeze_dims": (0, "int32[]", [])}),
}  # fmt: skip
OPTIONS["MAX_POOL_2D"] = OPTIONS["AVERAGE_POOL_2D"]


@dataclass
class Quantization:
    """A tensor's affine quantization: real = scale * (q - zero_point), per tensor (one of
    each) or per channel along `axis`."""

    scales: np.ndarray
    zero_points: np.ndarray
    axis: int = 0

    @property
    def per_tensor(self) -> bool:
        return len(self.scales) == 1


@dataclass
class TensorInfo:
    index: int
    name: str
    dtype: str
    shape: list[int]
    signature: list[int] | None  # the shape with -1 where a dimension is dynamic
    buffer: int
    quantization: Quantization | None
    is_variable: bool = False


@dataclass
class OperatorInfo:
    index: int
    code: int
    name: str  # the operator's name (CONV_2D), or a custom operator's code
    version: int
    inputs: list[int]  # tensor indices, -1 for an optional input left out
    outputs: list[int]
    options: dict = field(default_factory=dict)
    custom: bool = False


@dataclass
class ModelInfo:
    version: int
    description: str
    tensors: list[TensorInfo]
    operators: list[OperatorInfo]
    inputs: list[int]
    outputs: list[int]
    buffers: list[bytes | None]  # the data of each buffer (None or b"" where it has none)
    subgraphs: int

    def constant(self, tensor: TensorInfo) -> bytes | None:
        data = self.buffers[tensor.buffer] if tensor.buffer < len(self.buffers) else None
        return data if data else None


def _tensor(table: Table, index: int, buffers: int) -> TensorInfo:
    shape = table.array(0, "int32")
    type_code = table.scalar(1, "int8", 0)
    buffer = table.scalar(2, "uint32", 0)
    name = table.string(3, f"tensor_{index}")
    if buffer >= buffers:
        raise FlatBufferError(f"tensor {index} ({name}) names buffer {buffer} of {buffers}")
    quantization = None
    q = table.table(4, "quantization")
    if q is not None:
        if q.scalar(4, "uint8", 0) != 0:
            raise FlatBufferError(
                f"tensor {index} ({name}) has custom or blockwise quantization details, which "
                "tfc does not implement (it implements scales and zero points)"
            )
        scales, zeros = q.array(2, "float32"), q.array(3, "int64")
        if scales is not None and len(scales):
            if zeros is None or len(zeros) != len(scales):
                raise FlatBufferError(
                    f"tensor {index} ({name}) has {len(scales)} scales but "
                    f"{0 if zeros is None else len(zeros)} zero points"
                )
            quantization = Quantization(scales, zeros, q.scalar(6, "int32", 0))
    if table.table(6, "sparsity") is not None:
        raise FlatBufferError(f"tensor {index} ({name}) is sparse; tfc reads dense tensors only")
    signature = table.array(7, "int32")
    return TensorInfo(
        index,
        name,
        TENSOR_TYPES.get(type_code, f"type {type_code}"),
        [] if shape is None else [int(d) for d in shape],
        None if signature is None else [int(d) for d in signature],
        int(buffer),
        quantization,
        table.scalar(5, "bool", False),
    )


def _indices(values: np.ndarray | None, count: int, what: str, optional: bool) -> list[int]:
    out = [] if values is None else [int(v) for v in values]
    for v in out:
        if not (0 <= v < count or (optional and v == -1)):
            raise FlatBufferError(f"{what} names tensor {v}, but the subgraph has {count}")
    return out


def _buffer(table: Table, data: bytes, k: int) -> bytes | None:
    view = table.bytes_view(0)
    if view is not None and len(view):
        return bytes(view)
    offset, size = table.scalar(1, "uint64", 0), table.scalar(2, "uint64", 0)
    if offset > 1:  # data stored after the FlatBuffer (models over 2 GB)
        if offset + size > len(data):
            raise FlatBufferError(
                f"buffer {k}: its {size} bytes at offset {offset} lie beyond the file's "
                f"{len(data)} bytes (the file is truncated)"
            )
        return bytes(data[offset : offset + size])
    return None


def read_model(data: bytes) -> ModelInfo:
    """The main subgraph of a `.tflite` file's bytes, read and checked."""
    model = root(data, b"TFL3", "the model")
    codes = []
    for oc in model.tables(1, "operator_codes"):
        deprecated = oc.scalar(0, "int8", 0)
        code = max(int(deprecated), int(oc.scalar(3, "int32", 0)))
        custom = oc.string(1, "")
        codes.append((code, custom, int(oc.scalar(2, "int32", 1))))
    subgraphs = model.tables(2, "subgraphs")
    if not subgraphs:
        raise FlatBufferError("the model has no subgraph")
    buffer_tables = model.tables(4, "buffers")
    buffers = [_buffer(b, data, k) for k, b in enumerate(buffer_tables)]
    graph = subgraphs[0]
    tables = graph.tables(0, "tensors")
    tensors = [_tensor(t, k, max(len(buffers), 1)) for k, t in enumerate(tables)]
    n = len(tensors)
    operators = []
    for k, op in enumerate(graph.tables(3, "operators")):
        opcode = op.scalar(0, "uint32", 0)
        if opcode >= len(codes):
            raise FlatBufferError(f"operator {k} names operator code {opcode} of {len(codes)}")
        code, custom_code, version = codes[opcode]
        custom = code == BUILTIN_NAMES.index("CUSTOM")
        name = (custom_code or "CUSTOM") if custom else operator_name(code)
        options: dict = {}
        if name in OPTIONS:
            union_type, spec = OPTIONS[name]
            options_type = op.scalar(3, "uint8", 0)
            table = op.table(4, "builtin_options")
            if table is not None and options_type != union_type:
                raise FlatBufferError(
                    f"operator {k} ({name}) has options of union type {options_type}, not "
                    f"{union_type}"
                )
            options = parse_fields(table, spec)
        operators.append(
            OperatorInfo(
                k,
                code,
                name,
                version,
                _indices(op.array(1, "int32"), n, f"operator {k} ({name})", True),
                _indices(op.array(2, "int32"), n, f"operator {k} ({name})", False),
                options,
                custom,
            )
        )
    return ModelInfo(
        int(model.scalar(0, "uint32", 0)),
        model.string(3, ""),
        tensors,
        operators,
        _indices(graph.array(1, "int32"), n, "the subgraph's inputs", False),
        _indices(graph.array(2, "int32"), n, "the subgraph's outputs", False),
        buffers,
        len(subgraphs),
    )
