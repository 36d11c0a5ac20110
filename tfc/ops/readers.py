"""TF1's readers: tf.TFRecordReader, TextLineReader, FixedLengthRecordReader, WholeFileReader,
IdentityReader (io_ops.ReaderBase), and their ops.

A reader takes work (file names) from a queue of strings and hands out the records of each
file as (key, value) strings, the key "file:position" as TF's readers make it
(tfc/io/record_files.py splits the files). Like the queue ops, the reader ops are
session-side: a Session runs them before the compiled program of a step, their outputs fed
to it (tfc/client/queue_runs.py), and keeps each reader's place in its work between runs.

Every reader op carries the reader's description (attribute "reader": ReaderSpec.as_attr());
the reads also carry the queue's ("queue"), so nothing but attributes names the resources and
meta graph files hold them. A reader's state is private to its session (a shared_name does not
share it between the sessions of a server target).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tfc.io.record_files import RecordFormat
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Operation, Tensor, get_default_graph
from tfc.ops.constant import convert_to_tensor
from tfc.ops.queues import QUEUE_KINDS, QueueBase, QueueSpec
from tfc.ops.registry import OpContext, OpDef, apply_op, constant_value, register

__all__ = [
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "FixedLengthRecordReader",
    "WholeFileReader",
    "IdentityReader",
]

# the creation op of each reader, and the record format its files have
READER_KINDS = {
    "TFRecordReaderV2": "tfrecord",
    "TextLineReaderV2": "text_line",
    "FixedLengthRecordReaderV2": "fixed_length",
    "WholeFileReaderV2": "whole_file",
    "IdentityReaderV2": "identity",
}
READ_OPS = frozenset({"ReaderReadV2", "ReaderReadUpToV2"})
READER_OPS = READ_OPS | {
    "ReaderNumRecordsProducedV2",
    "ReaderNumWorkUnitsCompletedV2",
    "ReaderResetV2",
}


@dataclass(frozen=True)
class ReaderSpec:
    """What a reader is: its creation node, the format of its files, where its state is kept."""

    op: str
    type: str  # a key of READER_KINDS
    format: RecordFormat
    container: str = ""
    shared_name: str = ""

    def as_attr(self) -> dict:
        return {
            "op": self.op, "type": self.type, "format": asdict(self.format),
            "container": self.container, "shared_name": self.shared_name,
        }  # fmt: skip

    @staticmethod
    def of(op_attrs: dict) -> ReaderSpec:
        a = dict(op_attrs["reader"])
        a["format"] = RecordFormat(**a["format"])
        return ReaderSpec(**a)


def _session_side(op_type: str, infer: Any) -> None:
    register(
        OpDef(
            op_type,
            infer=infer,
            differentiable=False,
            stateful=True,  # every run moves the reader on
            host_only=True,
            session_side=True,
        )
    )


def _read_up_to_infer(ctx: OpContext) -> list:
    return [(_dt.string, (None,)), (_dt.string, (None,))]


for _type in READER_KINDS:
    _session_side(_type, lambda ctx: [])
_session_side("ReaderReadV2", lambda ctx: [(_dt.string, ()), (_dt.string, ())])
_session_side("ReaderReadUpToV2", _read_up_to_infer)
_session_side("ReaderNumRecordsProducedV2", lambda ctx: [(_dt.int64, ())])
_session_side("ReaderNumWorkUnitsCompletedV2", lambda ctx: [(_dt.int64, ())])
_session_side("ReaderResetV2", lambda ctx: [])


# -- the public API -------------------------------------------------------------------------------
class ReaderBase:
    """TF1's io_ops.ReaderBase: read, read_up_to, num_records_produced,
    num_work_units_completed and reset. Made by the subclasses."""

    def __init__(self, op_type: str, fmt: RecordFormat, name: str | None) -> None:
        graph = get_default_graph()
        node = graph.unique_name(name or op_type[: -len("V2")])
        self._spec = ReaderSpec(node, op_type, fmt, graph.current_container, "")
        self._op = apply_op(op_type, [], {"reader": self._spec.as_attr()}, name=node + "/")

    @property
    def reader_ref(self) -> Operation:
        """The reader's creation op (tfc's reader ops name their reader by attribute: TF's
        resource handle tensor has no counterpart)."""
        return self._op

    @property
    def supports_serialize(self) -> bool:
        return False

    def _apply(self, op_type: str, attrs: dict, name: str) -> Operation:
        return apply_op(op_type, [], {"reader": self._spec.as_attr(), **attrs}, name=name)

    @staticmethod
    def _queue_attr(queue: Any) -> dict:
        if isinstance(queue, QueueBase):
            spec = queue.spec
        elif isinstance(queue, Operation) and queue.type in QUEUE_KINDS:
            spec = QueueSpec.of({"queue": queue.get_attr("queue")})
        else:
            raise TypeError(
                f"a reader reads its work from a queue (a tf.FIFOQueue or its queue_ref), got "
                f"{queue!r}"
            )
        if len(spec.dtypes) != 1 or spec.dtypes[0] != _dt.string:
            raise TypeError(
                f"a reader's work queue holds single strings (file names); {spec.label} holds "
                f"{[d.name for d in spec.dtypes]}"
            )
        return spec.as_attr()

    def read(self, queue: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """The next record (key, value): a new file is taken from `queue` when the current
        one is done; OutOfRangeError once the queue is closed and empty."""
        op = self._apply("ReaderReadV2", {"queue": self._queue_attr(queue)}, name or "ReaderReadV2")
        return op.outputs[0], op.outputs[1]

    def read_up_to(
        self, queue: Any, num_records: Any, name: str | None = None
    ) -> tuple[Tensor, Tensor]:
        """Up to `num_records` records (keys, values), as TF: fewer where a file ends."""
        t = convert_to_tensor(num_records, dtype=_dt.int64)
        n = constant_value(t.graph, (t.op.name, t.value_index))
        if n is None or n.ndim != 0 or int(n) < 1:
            raise ValueError(
                f"read_up_to needs num_records to be a positive integer known when the graph is "
                f"built, got {num_records!r}"
            )
        attrs = {"queue": self._queue_attr(queue), "num_records": int(n)}
        op = self._apply("ReaderReadUpToV2", attrs, name or "ReaderReadUpToV2")
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: str | None = None) -> Tensor:
        op = self._apply("ReaderNumRecordsProducedV2", {}, name or "ReaderNumRecordsProducedV2")
        return op.outputs[0]

    def num_work_units_completed(self, name: str | None = None) -> Tensor:
        op = self._apply(
            "ReaderNumWorkUnitsCompletedV2", {}, name or "ReaderNumWorkUnitsCompletedV2"
        )
        return op.outputs[0]

    def reset(self, name: str | None = None) -> Operation:
        """Forget the current file and the counts."""
        return self._apply("ReaderResetV2", {}, name or "ReaderResetV2")


class TFRecordReader(ReaderBase):
    """`tf.TFRecordReader`: the records of TFRecord files; keys "file:byte offset"."""

    def __init__(self, name: str | None = None, options: Any = None) -> None:
        super().__init__("TFRecordReaderV2", RecordFormat("tfrecord", options), name)


class TextLineReader(ReaderBase):
    """`tf.TextLineReader`: the lines of text files without their newlines; keys
    "file:line number", after `skip_header_lines` lines of each file."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        fmt = RecordFormat("text_line", skip_header_lines=int(skip_header_lines or 0))
        super().__init__("TextLineReaderV2", fmt, name)


class FixedLengthRecordReader(ReaderBase):
    """`tf.FixedLengthRecordReader`: records of `record_bytes` bytes after `header_bytes`,
    every `hop_bytes` (back to back when 0), ending `footer_bytes` before the end; keys
    "file:record number". `encoding` "ZLIB" or "GZIP" reads compressed files."""

    def __init__(
        self,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        hop_bytes: int | None = None,
        name: str | None = None,
        encoding: str | None = None,
    ) -> None:
        fmt = RecordFormat(
            "fixed_length", encoding or "", record_bytes=int(record_bytes),
            header_bytes=int(header_bytes or 0), footer_bytes=int(footer_bytes or 0),
            hop_bytes=int(hop_bytes or 0),
        )  # fmt: skip
        super().__init__("FixedLengthRecordReaderV2", fmt, name)


class WholeFileReader(ReaderBase):
    """`tf.WholeFileReader`: each file is one record; its key is the file name."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__("WholeFileReaderV2", RecordFormat("whole_file"), name)


class IdentityReader(ReaderBase):
    """`tf.IdentityReader`: each work item is one record, its own key and value."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__("IdentityReaderV2", RecordFormat("identity"), name)
