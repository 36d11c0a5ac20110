"""`tf.summary`: summary ops, the FileWriter that writes them for TensorBoard, and the messages
they are made of."""

from tfc.io.summary_pb import Event, SessionLog, Summary, SummaryDescription, TaggedRunMetadata
from tfc.summary.summary import (
    audio,
    get_summary_description,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from tfc.summary.writer import FileWriter, FileWriterCache

__all__ = [
    "Event",
    "SessionLog",
    "Summary",
    "SummaryDescription",
    "TaggedRunMetadata",
    "audio",
    "get_summary_description",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "tensor_summary",
    "text",
    "FileWriter",
    "FileWriterCache",
]
