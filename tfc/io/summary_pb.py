"""TensorBoard's messages: Summary, HistogramProto, SummaryMetadata, Event, SessionLog, ...

Field numbers and kinds are those of tensorflow/core/framework/summary.proto and
tensorflow/core/util/event.proto, which TensorBoard reads.
"""

from __future__ import annotations

from tfc.io.graph_pb import TensorProto
from tfc.io.proto import EnumType, Message, ProtoField

__all__ = [
    "DataClass",
    "SummaryDescription",
    "HistogramProto",
    "SummaryMetadata",
    "Summary",
    "LogMessage",
    "SessionLog",
    "TaggedRunMetadata",
    "SourceMetadata",
    "Event",
]

F = ProtoField

DataClass = EnumType(
    "DataClass",
    {"DATA_CLASS_UNKNOWN": 0, "DATA_CLASS_SCALAR": 1, "DATA_CLASS_TENSOR": 2,
     "DATA_CLASS_BLOB_SEQUENCE": 3},
)  # fmt: skip


class SummaryDescription(Message):
    FIELDS = (F(1, "type_hint", "string"),)


class HistogramProto(Message):
    FIELDS = (
        F(1, "min", "double"),
        F(2, "max", "double"),
        F(3, "num", "double"),
        F(4, "sum", "double"),
        F(5, "sum_squares", "double"),
        F(6, "bucket_limit", "double", repeated=True),
        F(7, "bucket", "double", repeated=True),
    )


class SummaryMetadata(Message):
    class PluginData(Message):
        FIELDS = (F(1, "plugin_name", "string"), F(2, "content", "bytes"))

    FIELDS = (
        F(1, "plugin_data", "message", message=PluginData),
        F(2, "display_name", "string"),
        F(3, "summary_description", "string"),
        F(4, "data_class", "enum", enum=DataClass),
    )


class Summary(Message):
    class Image(Message):
        FIELDS = (
            F(1, "height", "int32"),
            F(2, "width", "int32"),
            F(3, "colorspace", "int32"),
            F(4, "encoded_image_string", "bytes"),
        )

    class Audio(Message):
        FIELDS = (
            F(1, "sample_rate", "float"),
            F(2, "num_channels", "int64"),
            F(3, "length_frames", "int64"),
            F(4, "encoded_audio_string", "bytes"),
            F(5, "content_type", "string"),
        )

    class Value(Message):
        FIELDS = (
            F(7, "node_name", "string"),
            F(1, "tag", "string"),
            F(9, "metadata", "message", message=SummaryMetadata),
            F(2, "simple_value", "float", oneof="value"),
            F(3, "obsolete_old_style_histogram", "bytes", oneof="value"),
            F(4, "image", "message", message=lambda: Summary.Image, oneof="value"),
            F(5, "histo", "message", message=HistogramProto, oneof="value"),
            F(6, "audio", "message", message=lambda: Summary.Audio, oneof="value"),
            F(8, "tensor", "message", message=TensorProto, oneof="value"),
        )

    FIELDS = (F(1, "value", "message", repeated=True, message=Value),)


class LogMessage(Message):
    Level = EnumType(
        "Level",
        {"UNKNOWN": 0, "DEBUGGING": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50},
    )
    UNKNOWN, DEBUGGING, INFO, WARN, ERROR, FATAL = 0, 10, 20, 30, 40, 50
    FIELDS = (F(1, "level", "enum", enum=Level), F(2, "message", "string"))


class SessionLog(Message):
    SessionStatus = EnumType(
        "SessionStatus", {"STATUS_UNSPECIFIED": 0, "START": 1, "STOP": 2, "CHECKPOINT": 3}
    )
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    FIELDS = (
        F(1, "status", "enum", enum=SessionStatus),
        F(2, "checkpoint_path", "string"),
        F(3, "msg", "string"),
    )


class TaggedRunMetadata(Message):
    FIELDS = (F(1, "tag", "string"), F(2, "run_metadata", "bytes"))


class SourceMetadata(Message):
    FIELDS = (F(1, "writer", "string"),)


class Event(Message):
    FIELDS = (
        F(1, "wall_time", "double"),
        F(2, "step", "int64"),
        F(3, "file_version", "string", oneof="what"),
        F(4, "graph_def", "bytes", oneof="what"),
        F(5, "summary", "message", message=Summary, oneof="what"),
        F(6, "log_message", "message", message=LogMessage, oneof="what"),
        F(7, "session_log", "message", message=SessionLog, oneof="what"),
        F(8, "tagged_run_metadata", "message", message=TaggedRunMetadata, oneof="what"),
        F(9, "meta_graph_def", "bytes", oneof="what"),
        F(10, "source_metadata", "message", message=SourceMetadata),
    )
