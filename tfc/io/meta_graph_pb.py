"""TensorFlow's MetaGraphDef and the messages it holds: TensorInfo, SignatureDef,
CollectionDef, AssetFileDef, SaverDef.

Field numbers and kinds are those of tensorflow/core/protobuf/meta_graph.proto and saver.proto.
These are TF's wire format, for reading and writing TF's messages; tfc's own meta graph files
are tfc/io/meta_graph.py's JSON. The op list of a stripped graph, `Any` payloads, composite
tensor specs and the SavedModel object graph are not declared: reading skips them.
"""

from __future__ import annotations

from tfc.io.graph_pb import DataType, GraphDef, TensorProto, TensorShapeProto
from tfc.io.proto import EnumType, Message, ProtoField

__all__ = [
    "TensorInfo",
    "SignatureDef",
    "CollectionDef",
    "AssetFileDef",
    "SaverDef",
    "MetaGraphDef",
]

F = ProtoField


class TensorInfo(Message):
    """A tensor of a signature: its name (or a sparse tensor's three), dtype and shape."""

    class CooSparse(Message):
        FIELDS = (
            F(1, "values_tensor_name", "string"),
            F(2, "indices_tensor_name", "string"),
            F(3, "dense_shape_tensor_name", "string"),
        )

    FIELDS = (
        F(1, "name", "string", oneof="encoding"),
        F(4, "coo_sparse", "message", message=CooSparse, oneof="encoding"),
        F(2, "dtype", "enum", enum=DataType),
        F(3, "tensor_shape", "message", message=TensorShapeProto),
    )


class SignatureDef(Message):
    FIELDS = (
        F(1, "inputs", "map", key_kind="string", message=TensorInfo),
        F(2, "outputs", "map", key_kind="string", message=TensorInfo),
        F(3, "method_name", "string"),
        F(4, "defaults", "map", key_kind="string", message=TensorProto),
    )


class CollectionDef(Message):
    class NodeList(Message):
        FIELDS = (F(1, "value", "string", repeated=True),)

    class BytesList(Message):
        FIELDS = (F(1, "value", "bytes", repeated=True),)

    class Int64List(Message):
        FIELDS = (F(1, "value", "int64", repeated=True),)

    class FloatList(Message):
        FIELDS = (F(1, "value", "float", repeated=True),)

    FIELDS = (
        F(1, "node_list", "message", message=NodeList, oneof="kind"),
        F(2, "bytes_list", "message", message=BytesList, oneof="kind"),
        F(3, "int64_list", "message", message=Int64List, oneof="kind"),
        F(4, "float_list", "message", message=FloatList, oneof="kind"),
    )


class AssetFileDef(Message):
    FIELDS = (F(1, "tensor_info", "message", message=TensorInfo), F(2, "filename", "string"))


class SaverDef(Message):
    CheckpointFormatVersion = EnumType("CheckpointFormatVersion", {"LEGACY": 0, "V1": 1, "V2": 2})
    LEGACY, V1, V2 = 0, 1, 2

    FIELDS = (
        F(1, "filename_tensor_name", "string"),
        F(2, "save_tensor_name", "string"),
        F(3, "restore_op_name", "string"),
        F(4, "max_to_keep", "int32"),
        F(5, "sharded", "bool"),
        F(6, "keep_checkpoint_every_n_hours", "float"),
        F(7, "version", "enum", enum=CheckpointFormatVersion),
    )


class MetaGraphDef(Message):
    class MetaInfoDef(Message):
        FIELDS = (
            F(1, "meta_graph_version", "string"),
            F(4, "tags", "string", repeated=True),
            F(5, "tensorflow_version", "string"),
            F(6, "tensorflow_git_version", "string"),
            F(7, "stripped_default_attrs", "bool"),
            F(8, "function_aliases", "map", key_kind="string", value_kind="string"),
        )

    FIELDS = (
        F(1, "meta_info_def", "message", message=MetaInfoDef),
        F(2, "graph_def", "message", message=GraphDef),
        F(3, "saver_def", "message", message=SaverDef),
        F(4, "collection_def", "map", key_kind="string", message=CollectionDef),
        F(5, "signature_def", "map", key_kind="string", message=SignatureDef),
        F(6, "asset_file_def", "message", repeated=True, message=AssetFileDef),
    )
