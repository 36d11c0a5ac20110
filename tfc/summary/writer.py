"""`tf.summary.FileWriter` and `FileWriterCache`: Summaries, graphs and session logs to event
files TensorBoard reads (the file format is tfc/io/event_file.py)."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np

from tfc.graphdef.export import graph_to_graph_def
from tfc.io.event_file import EventFileWriter
from tfc.io.graph_pb import GraphDef
from tfc.io.summary_pb import Event, SessionLog, Summary, TaggedRunMetadata
from tfc.ir.graph import Graph, get_default_graph

__all__ = ["FileWriter", "FileWriterCache"]


class FileWriter:
    """`tf.summary.FileWriter(logdir, graph=None, max_queue=10, flush_secs=120, ...)`: writes
    to a new event file in `logdir`; with `graph` (or `graph_def`), the graph first, for
    TensorBoard's Graphs tab. Events are flushed every `flush_secs`, when `max_queue` are
    pending, and on flush() and close()."""

    def __init__(
        self,
        logdir: str | os.PathLike,
        graph: Graph | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        graph_def: GraphDef | None = None,
        filename_suffix: str | None = None,
        session: Any = None,
    ) -> None:
        if session is not None:
            raise ValueError(
                "FileWriter(session=...) writes through TF2 summary ops, which tfc does not "
                "have; pass a logdir"
            )
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._seen_summary_tags: set[str] = set()
        self._lock = threading.Lock()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event) -> None:
        self.event_writer.add_event(event)

    def _add(self, event: Event, global_step: Any) -> None:
        event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_summary(self, summary: Any, global_step: Any = None) -> None:
        """Add a Summary (or its serialized bytes, as a summary op's result); as TF does, only
        the first value of a tag keeps its plugin metadata."""
        if isinstance(summary, np.ndarray) and summary.shape == ():
            summary = summary.item()  # a string scalar fetched as a 0-d array
        if isinstance(summary, (bytes, bytearray)):
            summary = Summary.FromString(bytes(summary))
        if not isinstance(summary, Summary):
            raise TypeError(
                f"add_summary takes a Summary or its bytes, got {type(summary).__name__}"
            )
        copy = Summary()
        copy.CopyFrom(summary)
        with self._lock:
            for value in copy.value:
                if not value.HasField("metadata"):
                    continue
                if value.tag in self._seen_summary_tags:
                    value.ClearField("metadata")
                else:
                    self._seen_summary_tags.add(value.tag)
        event = Event()
        event.summary.CopyFrom(copy)
        self._add(event, global_step)

    def add_session_log(self, session_log: SessionLog, global_step: Any = None) -> None:
        if not isinstance(session_log, SessionLog):
            raise TypeError(f"add_session_log takes a SessionLog, got {type(session_log).__name__}")
        event = Event()
        event.session_log.CopyFrom(session_log)
        self._add(event, global_step)

    def add_graph(
        self, graph: Graph | None, global_step: Any = None, graph_def: GraphDef | None = None
    ) -> None:
        """Add a graph (drawn in TensorBoard's Graphs tab): a tfc Graph, or a GraphDef."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def, not both.")
        if isinstance(graph, GraphDef):
            graph, graph_def = None, graph
        if graph is not None:
            if not isinstance(graph, Graph):
                raise TypeError(f"add_graph takes a tfc Graph, got {type(graph).__name__}")
            # for drawing: a node attribute no GraphDef can hold is left out, not an error
            graph_def = graph_to_graph_def(graph, add_shapes=True, lenient=True)
        if not isinstance(graph_def, GraphDef):
            raise TypeError("add_graph needs a Graph or a GraphDef")
        event = Event(graph_def=graph_def.SerializeToString())
        self._add(event, global_step)

    def add_run_metadata(self, run_metadata: Any, tag: str, global_step: Any = None) -> None:
        """Add the RunMetadata of one step under `tag` (its serialized bytes, as TF does)."""
        serialize = getattr(run_metadata, "SerializeToString", None)
        if serialize is None:
            raise TypeError(
                f"add_run_metadata takes a RunMetadata message, got {type(run_metadata).__name__}"
            )
        event = Event()
        event.tagged_run_metadata.CopyFrom(TaggedRunMetadata(tag=tag, run_metadata=serialize()))
        self._add(event, global_step)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        """After close(): go on writing, into a new event file of the same logdir."""
        self.event_writer.reopen()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class FileWriterCache:
    """`tf.summary.FileWriterCache`: one FileWriter per logdir, shared by whoever asks."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir: str | os.PathLike) -> FileWriter:
        """The FileWriter of `logdir` (made, with the default graph, on first use)."""
        key = os.fspath(logdir)
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(key)
            if writer is None:
                writer = FileWriter(key, graph=get_default_graph())
                FileWriterCache._cache[key] = writer
            return writer

    @staticmethod
    def clear() -> None:
        """Close every cached writer and forget them."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache.clear()
