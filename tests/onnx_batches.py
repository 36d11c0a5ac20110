"""ONNX conformance cases compiled in batches: each batch's models imported side by side into one
graph and compiled into one program, so the suite starts the C compiler once per batch instead
of once per case (as tests/opcheck.py batches the op tests).

`BatchedBackend` is tfc.onnx.backend's TfcBackend with one difference: `prepare(model)` of a model
that belongs to a registered batch returns a rep whose `run(inputs)` feeds `inputs` to that
model's placeholders in the batch program (the other members get the inputs their cases store),
runs the whole program natively and returns this model's outputs. Nothing is memoized: each run
computes. A batch whose program fails to compile or to run is split in halves until the member
at fault runs alone, as any model not in a batch does, through TfcBackend itself.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from tfc.client.session import Session
from tfc.ir.graph import Graph
from tfc.onnx.backend import TfcBackend, TfcRep, feed_value, fetch_value
from tfc.onnx.importer import ImportedModel, import_graph


def model_key(model: onnx.ModelProto) -> str:
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


@dataclass
class Member:
    """One case of a batch: its model and the inputs it is run with."""

    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    imported: ImportedModel | None = None
    group: _Group | None = None


@dataclass
class _Group:
    """Members compiled into one program (one Session of one graph)."""

    members: list[Member]
    graph: Graph = field(default_factory=Graph)
    session: Session | None = None

    def feeds(self, override: Member | None = None, values: Sequence[Any] = ()) -> dict:
        feed = {}
        for m in self.members:
            given = values if m is override else m.inputs
            assert m.imported is not None
            for ph, elem, name, v in zip(
                m.imported.inputs, m.imported.input_types, m.imported.input_names, given
            ):
                feed[ph] = feed_value(v, elem, name)
        return feed

    def fetches(self) -> list:
        return [t for m in self.members for t in m.imported.outputs]  # type: ignore[union-attr]

    def run(self, member: Member, values: Sequence[Any]) -> list[np.ndarray]:
        assert self.session is not None and member.imported is not None
        results = self.session.run(self.fetches(), self.feeds(member, values))
        start = 0
        for m in self.members:
            if m is member:
                break
            start += len(m.imported.outputs)  # type: ignore[union-attr]
        mine = results[start : start + len(member.imported.outputs)]
        return [fetch_value(r, e) for r, e in zip(mine, member.imported.output_types)]


class Batches:
    """The registered batches, by model: built (imported, compiled, run once) on first use."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[int, Member]] = {}
        self._batches: list[list[Member]] = []
        self._built: set[int] = set()
        self.compiles = 0

    def register(self, members: Sequence[Member], size: int) -> None:
        for start in range(0, len(members), size):
            index = len(self._batches)
            chunk = list(members[start : start + size])
            self._batches.append(chunk)
            for m in chunk:
                self._by_key.setdefault(model_key(m.model), (index, m))

    def member(self, model: onnx.ModelProto) -> Member | None:
        found = self._by_key.get(model_key(model))
        if found is None:
            return None
        index, member = found
        if index not in self._built:
            self._built.add(index)
            self._compile(self._batches[index])
        return member if member.group is not None else None

    def _compile(self, members: list[Member]) -> None:
        """One program for `members`; halves of them when it fails (down to one, which then
        runs alone, where its test sees its own error)."""
        if not members:
            return
        group = _Group(list(members))
        ok = []
        for k, m in enumerate(members):
            try:
                m.imported = import_graph(m.model, graph=group.graph, scope=f"case{k}")
                ok.append(m)
            except Exception:
                m.imported = None  # its own prepare raises the import error
        group.members = ok
        if not ok:
            return
        try:
            group.session = Session(graph=group.graph)
            self.compiles += 1
            group.session.run(group.fetches(), group.feeds())
        except Exception:
            if group.session is not None:
                group.session.close()
            if len(ok) == 1:
                ok[0].imported = None
                return
            half = len(ok) // 2
            self._compile(ok[:half])
            self._compile(ok[half:])
            return
        for m in ok:
            m.group = group


BATCHES = Batches()


class BatchedRep(TfcRep):
    """A model's rep inside its batch's program."""

    def __init__(self, member: Member) -> None:  # no Session of its own
        self.model = member.imported  # type: ignore[assignment]
        self.device = "CPU"
        self.member = member

    def run(self, inputs: Any, **kwargs: Any) -> Any:
        values = list(inputs) if not isinstance(inputs, np.ndarray) else [inputs]
        m = self.member
        same = len(values) == len(m.inputs) and all(
            np.asarray(v).shape == s.shape and np.asarray(v).dtype == s.dtype
            for v, s in zip(values, m.inputs)
        )
        assert m.group is not None
        if not same:  # another shape: compiled on its own
            return TfcRep(import_graph(m.model)).run(values)
        return m.group.run(m, values)


class BatchedBackend(TfcBackend):
    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> TfcRep:
        if device == "CPU" and isinstance(model, onnx.ModelProto):
            member = BATCHES.member(model)
            if member is not None:
                return BatchedRep(member)
        return super().prepare(model, device, **kwargs)


def directory_case_inputs(model_dir: str, model: onnx.ModelProto) -> list[np.ndarray] | None:
    """The inputs of a model-directory case's only data set (None when it has several)."""
    sets = glob.glob(os.path.join(model_dir, "test_data_set*"))
    if len(sets) != 1:
        return None
    inputs = []
    for i in range(len(glob.glob(os.path.join(sets[0], "input_*.pb")))):
        t = onnx.TensorProto()
        with open(os.path.join(sets[0], f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        if not model.graph.input[i].type.HasField("tensor_type"):
            return None
        inputs.append(numpy_helper.to_array(t))
    return inputs
