"""tf.data's file datasets: TFRecordDataset, TextLineDataset, FixedLengthRecordDataset.

Their elements are the records of the files (scalar tf.string), read when an iterator needs
them, a block of up to RECORD_CHUNK at a time, and split as TF splits them
(tfc/io/record_files.py). `num_parallel_reads` interleaves the files, one record from each
of that many open files in turn, in the deterministic order TF gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tfc.data.blocks import Block
from tfc.data.dataset import Dataset, int_arg, to_array
from tfc.data.interleave import FUNCTION_GRAPH, traced_value
from tfc.data.pipeline import IterationContext, Stage
from tfc.data.structure import ElementSpec
from tfc.io.record_files import RecordFormat, file_records
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor

__all__ = ["TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"]

RECORD_CHUNK = 1024  # records per block


class FileRecords(Stage):
    """The records of `filenames` in order (or interleaved `cycle` files at a time)."""

    def __init__(self, filenames: list[str] | Tensor, fmt: RecordFormat, cycle: int) -> None:
        # a tensor: the names are an argument of the function an interleave traced
        self.filenames, self.fmt, self.cycle = filenames, fmt, cycle
        self.spec = ElementSpec.of(0, [_dt.string], [()])

    def _names(self, ctx: IterationContext) -> list[str]:
        if not isinstance(self.filenames, Tensor):
            return self.filenames
        names = np.asarray(traced_value(ctx, self.filenames)).reshape(-1)
        return [bytes(n).decode("utf-8", "surrogateescape") for n in names]

    def _records(self, filenames: list[str]) -> Iterator[bytes]:
        if self.cycle <= 1:
            for name in filenames:
                for _, data in file_records(name, self.fmt):
                    yield data
            return
        # TF's interleave with block_length 1: an empty slot of the cycle is filled with the
        # next file when the cycle comes round to it; an ended file frees its slot
        pending = iter(filenames)
        slots: list[Iterator | None] = [None] * self.cycle
        index, open_count, inputs_left = 0, 0, True
        while inputs_left or open_count:
            slot = slots[index]
            if slot is not None:
                item = next(slot, None)
                if item is not None:
                    yield item[1]
                else:
                    slots[index] = None
                    open_count -= 1
                index = (index + 1) % self.cycle
            elif inputs_left:
                name = next(pending, None)
                if name is None:
                    inputs_left = False
                else:
                    slots[index] = file_records(name, self.fmt)
                    open_count += 1
            else:
                index = (index + 1) % self.cycle

    def blocks(self, ctx: IterationContext) -> Iterator[Block]:
        chunk: list[bytes] = []
        for data in self._records(self._names(ctx)):
            chunk.append(data)
            if len(chunk) == RECORD_CHUNK:
                yield [_strings(chunk)]
                chunk = []
        if chunk:
            yield [_strings(chunk)]


def _strings(items: list[bytes]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def _filenames(filenames: Any, what: str) -> list[str] | Tensor:
    """The file names a file dataset reads: a string, or a list or vector of them, known when
    the graph is built; or a string tensor of the function an interleave traces."""
    if isinstance(filenames, Dataset):
        raise TypeError(
            f"{what}: filenames must be a string or a list of strings known when the graph is "
            "built; for a dataset of file names use names.interleave(tf.data."
            f"{what}, cycle_length=...)"
        )
    if isinstance(filenames, Tensor) and filenames.graph.graph_attrs.get(FUNCTION_GRAPH):
        if filenames.dtype != _dt.string:
            raise TypeError(
                f"{what}: `filenames` must be a tf.string tensor, got {filenames.dtype}"
            )
        rank = filenames.get_shape().ndims
        if rank is not None and rank > 1:
            raise ValueError(f"{what}: `filenames` must be a scalar or a vector, got rank {rank}")
        return filenames
    array = to_array(filenames, "filenames", what)
    if array.dtype != object:
        raise TypeError(f"{what}: `filenames` must be a tf.string tensor, got {array.dtype}")
    if array.ndim > 1:
        raise ValueError(f"{what}: `filenames` must be a scalar or a vector, got rank {array.ndim}")
    return [bytes(n).decode("utf-8", "surrogateescape") for n in array.reshape(-1)]


def _compression(compression_type: Any) -> str:
    return "" if compression_type is None else compression_type


def _cycle(num_parallel_reads: Any) -> int:
    if num_parallel_reads is None:
        return 1
    n = int_arg(num_parallel_reads, "num_parallel_reads")
    if n < 1:
        raise ValueError(f"num_parallel_reads must be positive, got {n}")
    return n


class TFRecordDataset(Dataset):
    """`tf.data.TFRecordDataset(filenames, compression_type, buffer_size, num_parallel_reads)`:
    the records of TFRecord files. `buffer_size` is accepted (files are read in chunks)."""

    def __init__(
        self,
        filenames: Any,
        compression_type: Any = None,
        buffer_size: Any = None,
        num_parallel_reads: Any = None,
    ) -> None:
        fmt = RecordFormat("tfrecord", _compression(compression_type))
        names = _filenames(filenames, "TFRecordDataset")
        super().__init__(FileRecords(names, fmt, _cycle(num_parallel_reads)))


class TextLineDataset(Dataset):
    """`tf.data.TextLineDataset(filenames, compression_type, buffer_size, num_parallel_reads)`:
    the lines of text files, without their newlines."""

    def __init__(
        self,
        filenames: Any,
        compression_type: Any = None,
        buffer_size: Any = None,
        num_parallel_reads: Any = None,
    ) -> None:
        fmt = RecordFormat("text_line", _compression(compression_type))
        names = _filenames(filenames, "TextLineDataset")
        super().__init__(FileRecords(names, fmt, _cycle(num_parallel_reads)))


class FixedLengthRecordDataset(Dataset):
    """`tf.data.FixedLengthRecordDataset`: records of `record_bytes` bytes of each file, after
    its `header_bytes` and before its `footer_bytes`, which must fill the rest exactly (TF's
    errors: InvalidArgumentError, or DataLossError at its end for a compressed file)."""

    def __init__(
        self,
        filenames: Any,
        record_bytes: Any,
        header_bytes: Any = None,
        footer_bytes: Any = None,
        buffer_size: Any = None,
        compression_type: Any = None,
        num_parallel_reads: Any = None,
    ) -> None:
        fmt = RecordFormat(
            "fixed_length", _compression(compression_type),
            record_bytes=int_arg(record_bytes, "record_bytes"),
            header_bytes=0 if header_bytes is None else int_arg(header_bytes, "header_bytes"),
            footer_bytes=0 if footer_bytes is None else int_arg(footer_bytes, "footer_bytes"),
            exact=True,
        )  # fmt: skip
        names = _filenames(filenames, "FixedLengthRecordDataset")
        super().__init__(FileRecords(names, fmt, _cycle(num_parallel_reads)))
