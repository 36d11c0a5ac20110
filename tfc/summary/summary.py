"""TF1's summary ops: `tf.summary.scalar`, `histogram`, `image`, `audio`, `text`,
`tensor_summary`, `merge`, `merge_all`, named and collected as TensorFlow 1 does.

Each op's tag is its name scope (with `family`, "family/scope"); the op is added to the
SUMMARIES collection (or `collections`). What the ops compute is tfc/ops/summary_ops.py.
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import contextmanager
from typing import Any

import numpy as np

import tfc.ops.summary_ops  # noqa: F401 - registers the summary ops
from tfc.io.graph_pb import NodeDef
from tfc.io.summary_pb import SummaryDescription, SummaryMetadata
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Operation, Tensor, get_default_graph, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.registry import apply_op

__all__ = [
    "scalar",
    "histogram",
    "image",
    "audio",
    "text",
    "tensor_summary",
    "merge",
    "merge_all",
    "get_summary_description",
]

_log = logging.getLogger("tfc")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name: str | None) -> str | None:
    """`name` with the characters TensorBoard's tags may not hold replaced by '_'."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        _log.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextmanager
def _summary_scope(name: str, family: str | None, values: list) -> Any:
    """TF1's summary_scope: yields (tag, scope) for a summary op."""
    name = _clean_tag(name) or ""
    family = _clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with name_scope(base, None, values) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def _collect(op_output: Tensor, collections: Any, default: list[str]) -> None:
    keys = default if collections is None else collections
    graph = op_output.graph
    for key in keys:
        graph.add_to_collection(key, op_output)


def _tag_tensor(tag: str, name: str) -> Tensor:
    return constant(tag, dtype=_dt.string, name=name)


def scalar(
    name: str, tensor: Any, collections: list[str] | None = None, family: str | None = None
) -> Tensor:
    """`tf.summary.scalar`: a Summary with one simple value, the real scalar `tensor`."""
    t = convert_to_tensor(tensor)
    with _summary_scope(name, family, [t]) as (tag, scope):
        tags = _tag_tensor(tag, "tags")
        out = apply_op("ScalarSummary", [tags, t], {}, name=scope).outputs[0]
    _collect(out, collections, [GraphKeys.SUMMARIES])
    return out


def histogram(
    name: str, values: Any, collections: list[str] | None = None, family: str | None = None
) -> Tensor:
    """`tf.summary.histogram`: a Summary with a histogram of `values` (TF's buckets); a
    non-finite value fails the run ("Nan in summary histogram for: ...")."""
    t = convert_to_tensor(values)
    with _summary_scope(name, family, [t]) as (tag, scope):
        tag_t = _tag_tensor(tag, "tag")
        out = apply_op("HistogramSummary", [tag_t, t], {}, name=scope).outputs[0]
    _collect(out, collections, [GraphKeys.SUMMARIES])
    return out


def image(
    name: str,
    tensor: Any,
    max_outputs: int = 3,
    collections: list[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """`tf.summary.image`: the first `max_outputs` images of `tensor` ([batch, height, width,
    1|3|4]) as PNGs, tagged "<tag>/image/<i>" ("<tag>/image" when max_outputs is 1)."""
    t = convert_to_tensor(tensor)
    with _summary_scope(name, family, [t]) as (tag, scope):
        tag_t = _tag_tensor(tag, "tag")
        attrs = {"max_images": int(max_outputs), "bad_color": _bad_color()}
        out = apply_op("ImageSummary", [tag_t, t], attrs, name=scope).outputs[0]
    _collect(out, collections, [GraphKeys.SUMMARIES])
    return out


def _bad_color() -> np.ndarray:
    return np.array([255, 0, 0, 255], dtype=np.uint8)  # TF's default: opaque red


def audio(
    name: str,
    tensor: Any,
    sample_rate: Any,
    max_outputs: int = 3,
    collections: list[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """`tf.summary.audio`: the first `max_outputs` clips of `tensor` ([batch, frames,
    channels] or [batch, frames] floats in [-1, 1]) as 16-bit WAV files."""
    t = convert_to_tensor(tensor)
    with _summary_scope(name, family, [t]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=_dt.float32, name="sample_rate")
        tag_t = _tag_tensor(tag, "tag")
        attrs = {"max_outputs": int(max_outputs)}
        out = apply_op("AudioSummaryV2", [tag_t, t, rate], attrs, name=scope).outputs[0]
    _collect(out, collections, [GraphKeys.SUMMARIES])
    return out


def tensor_summary(
    name: str,
    tensor: Any,
    summary_description: str | None = None,
    collections: list[str] | None = None,
    summary_metadata: SummaryMetadata | None = None,
    family: str | None = None,
    display_name: str | None = None,
) -> Tensor:
    """`tf.summary.tensor_summary`: a Summary holding the whole `tensor` as a TensorProto,
    with `summary_metadata` (its description and display name set when given)."""
    metadata = SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    t = convert_to_tensor(tensor)
    with _summary_scope(name, family, [t]) as (tag, scope):
        tag_t = _tag_tensor(tag, "tag")
        serialized = constant(metadata.SerializeToString(), dtype=_dt.string,
                              name="serialized_summary_metadata")  # fmt: skip
        out = apply_op("TensorSummaryV2", [tag_t, t, serialized], {}, name=scope).outputs[0]
    _collect(out, collections, [GraphKeys.SUMMARIES])
    return out


def text(name: str, tensor: Any, collections: list[str] | None = None) -> Tensor:
    """`tf.summary.text`: a string tensor for TensorBoard's text dashboard."""
    t = convert_to_tensor(tensor)
    if t.dtype != _dt.string:
        raise ValueError(f"Expected tensor {t.name} to have dtype string, got {t.dtype.name}")
    metadata = SummaryMetadata()
    metadata.plugin_data.plugin_name = "text"
    return tensor_summary(name, t, summary_metadata=metadata, collections=collections)


def merge(
    inputs: list[Any], collections: list[str] | None = None, name: str | None = None
) -> Tensor:
    """`tf.summary.merge`: one Summary with the values of all `inputs` (serialized Summary
    strings); a tag found twice fails the run."""
    tensors = [convert_to_tensor(x) for x in inputs]
    if not tensors:
        raise ValueError("tf.summary.merge needs at least one input")
    with name_scope(name, "Merge", tensors) as scope:
        out = apply_op("MergeSummary", tensors, {"N": len(tensors)}, name=scope).outputs[0]
    if collections:
        _collect(out, collections, [])
    return out


def merge_all(
    key: str = GraphKeys.SUMMARIES, scope: str | None = None, name: str | None = None
) -> Tensor | None:
    """`tf.summary.merge_all`: every summary of collection `key` merged; None when there is
    none."""
    ops = get_default_graph().get_collection(key, scope=scope)
    if not ops:
        return None
    return merge(ops, name=name)


def get_summary_description(node_def: Any) -> SummaryDescription:
    """`tf.summary.get_summary_description`: the SummaryDescription of a TensorSummary node
    (its `description` attribute, JSON)."""
    if isinstance(node_def, Operation):
        op, description = node_def.type, node_def.get_attr("description")
    elif isinstance(node_def, NodeDef):
        op, description = node_def.op, node_def.attr["description"].s
    else:
        raise TypeError(f"expected a NodeDef or an Operation, got {type(node_def).__name__}")
    if op != "TensorSummary":
        raise ValueError(f"Can't get_summary_description on {op}")
    if isinstance(description, bytes):
        description = description.decode("utf-8")
    fields = json.loads(description) if description else {}
    return SummaryDescription(type_hint=fields.get("typeHint", fields.get("type_hint", "")))
