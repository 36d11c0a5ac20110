"""TensorFlow's graph messages: GraphDef, NodeDef, AttrValue, TensorProto and their parts.

Field numbers and kinds are those of tensorflow/core/framework/{types,tensor_shape,tensor,
attr_value,node_def,graph,versions,function}.proto. Functions are declared only as far as
naming them (an imported graph that calls functions is refused by name); fields tfc does not
declare are skipped when reading, as any protobuf reader does.
"""

from __future__ import annotations

from tfc.io.proto import EnumType, Message, ProtoField

__all__ = [
    "DataType",
    "TensorShapeProto",
    "TensorProto",
    "AttrValue",
    "NameAttrList",
    "NodeDef",
    "VersionDef",
    "OpDefName",
    "FunctionDef",
    "GradientDef",
    "FunctionDefLibrary",
    "GraphDef",
]

F = ProtoField

DataType = EnumType(
    "DataType",
    {"DT_INVALID": 0, "DT_FLOAT": 1, "DT_DOUBLE": 2, "DT_INT32": 3, "DT_UINT8": 4,
     "DT_INT16": 5, "DT_INT8": 6, "DT_STRING": 7, "DT_COMPLEX64": 8, "DT_INT64": 9,
     "DT_BOOL": 10, "DT_QINT8": 11, "DT_QUINT8": 12, "DT_QINT32": 13, "DT_BFLOAT16": 14,
     "DT_QINT16": 15, "DT_QUINT16": 16, "DT_UINT16": 17, "DT_COMPLEX128": 18, "DT_HALF": 19,
     "DT_RESOURCE": 20, "DT_VARIANT": 21, "DT_UINT32": 22, "DT_UINT64": 23,
     "DT_FLOAT_REF": 101, "DT_DOUBLE_REF": 102, "DT_INT32_REF": 103, "DT_UINT8_REF": 104,
     "DT_INT16_REF": 105, "DT_INT8_REF": 106, "DT_STRING_REF": 107, "DT_COMPLEX64_REF": 108,
     "DT_INT64_REF": 109, "DT_BOOL_REF": 110, "DT_BFLOAT16_REF": 114, "DT_UINT16_REF": 117,
     "DT_COMPLEX128_REF": 118, "DT_HALF_REF": 119, "DT_RESOURCE_REF": 120,
     "DT_VARIANT_REF": 121, "DT_UINT32_REF": 122, "DT_UINT64_REF": 123},
)  # fmt: skip


class TensorShapeProto(Message):
    class Dim(Message):
        FIELDS = (F(1, "size", "int64"), F(2, "name", "string"))

    FIELDS = (F(2, "dim", "message", repeated=True, message=Dim), F(3, "unknown_rank", "bool"))


class TensorProto(Message):
    FIELDS = (
        F(1, "dtype", "enum", enum=DataType),
        F(2, "tensor_shape", "message", message=TensorShapeProto),
        F(3, "version_number", "int32"),
        F(4, "tensor_content", "bytes"),
        F(13, "half_val", "int32", repeated=True),
        F(5, "float_val", "float", repeated=True),
        F(6, "double_val", "double", repeated=True),
        F(7, "int_val", "int32", repeated=True),
        F(8, "string_val", "bytes", repeated=True),
        F(9, "scomplex_val", "float", repeated=True),
        F(10, "int64_val", "int64", repeated=True),
        F(11, "bool_val", "bool", repeated=True),
        F(12, "dcomplex_val", "double", repeated=True),
        F(16, "uint32_val", "uint32", repeated=True),
        F(17, "uint64_val", "uint64", repeated=True),
    )


class NameAttrList(Message):
    FIELDS = (
        F(1, "name", "string"),
        F(2, "attr", "map", key_kind="string", message=lambda: AttrValue),
    )


class AttrValue(Message):
    class ListValue(Message):
        FIELDS = (
            F(2, "s", "bytes", repeated=True),
            F(3, "i", "int64", repeated=True),
            F(4, "f", "float", repeated=True),
            F(5, "b", "bool", repeated=True),
            F(6, "type", "enum", repeated=True, enum=DataType),
            F(7, "shape", "message", repeated=True, message=TensorShapeProto),
            F(8, "tensor", "message", repeated=True, message=TensorProto),
            F(9, "func", "message", repeated=True, message=NameAttrList),
        )

    FIELDS = (
        F(2, "s", "bytes", oneof="value"),
        F(3, "i", "int64", oneof="value"),
        F(4, "f", "float", oneof="value"),
        F(5, "b", "bool", oneof="value"),
        F(6, "type", "enum", enum=DataType, oneof="value"),
        F(7, "shape", "message", message=TensorShapeProto, oneof="value"),
        F(8, "tensor", "message", message=TensorProto, oneof="value"),
        F(1, "list", "message", message=ListValue, oneof="value"),
        F(10, "func", "message", message=NameAttrList, oneof="value"),
        F(9, "placeholder", "string", oneof="value"),
    )


class NodeDef(Message):
    class ExperimentalDebugInfo(Message):
        FIELDS = (
            F(1, "original_node_names", "string", repeated=True),
            F(2, "original_func_names", "string", repeated=True),
        )

    FIELDS = (
        F(1, "name", "string"),
        F(2, "op", "string"),
        F(3, "input", "string", repeated=True),
        F(4, "device", "string"),
        F(5, "attr", "map", key_kind="string", message=AttrValue),
        F(6, "experimental_debug_info", "message", message=ExperimentalDebugInfo),
    )


class VersionDef(Message):
    FIELDS = (
        F(1, "producer", "int32"),
        F(2, "min_consumer", "int32"),
        F(3, "bad_consumers", "int32", repeated=True),
    )


class OpDefName(Message):
    """The name of an OpDef (a function's signature): all tfc reads of one."""

    FIELDS = (F(1, "name", "string"),)


class FunctionDef(Message):
    FIELDS = (F(1, "signature", "message", message=OpDefName),)


class GradientDef(Message):
    FIELDS = (F(1, "function_name", "string"), F(2, "gradient_func", "string"))


class FunctionDefLibrary(Message):
    FIELDS = (
        F(1, "function", "message", repeated=True, message=FunctionDef),
        F(2, "gradient", "message", repeated=True, message=GradientDef),
    )


class GraphDef(Message):
    FIELDS = (
        F(1, "node", "message", repeated=True, message=NodeDef),
        F(4, "versions", "message", message=VersionDef),
        F(3, "version", "int32"),
        F(2, "library", "message", message=FunctionDefLibrary),
    )
