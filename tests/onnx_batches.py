"""ONNX conformance cases compiled in batches: each batch's models imported side by side into one
graph and compiled into one program, so the suite starts the C compiler once per batch instead
of once per case (as tests/opcheck.py batches the op tests).

`BatchedBackend` is tfc.onnx.backend's TfcBackend with one difference: `prepare(model)` of a model
that belongs to a registered batch returns a rep whose `run(inputs)` feeds `inputs` to that
model's placeholders in the batch program (the other members get the inputs their cases store),
runs the whole program natively and returns this model's outputs. Nothing is memoized: each run
computes. Inputs a model needs as constants (axes, shapes: tfc.onnx.backend.import_for_values)
are imported with the case's values; a run with other values, or other shapes, is compiled on
its own. A batch whose program fails to compile or to run is split in halves until the member at
fault runs alone, as any model not in a batch does, through TfcBackend itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from tfc.client.session import Session
from tfc.ir.graph import Graph
from tfc.onnx.backend import TfcBackend, TfcRep, feed_value, fetch_value, import_for_values
from tfc.onnx.importer import ImportedModel


def model_key(model: onnx.ModelProto) -> str:
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


@dataclass
class Member:
    """One case of a batch: its model and the inputs it is run with (the model's order)."""

    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    imported: ImportedModel | None = None
    group: _Group | None = None

    @property
    def input_names(self) -> list[str]:
        initializers = {t.name for t in self.model.graph.initializer}
        return [i.name for i in self.model.graph.input if i.name not in initializers]

    def values(self, inputs: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(self.input_names, inputs))


@dataclass
class _Group:
    """Members compiled into one program (one Session of one graph)."""

    members: list[Member]
    graph: Graph = field(default_factory=Graph)
    session: Session | None = None

    def feeds(self, override: Member | None = None, values: Sequence[Any] = ()) -> dict:
        feed = {}
        for m in self.members:
            given = m.values(values if m is override else m.inputs)
            imported = m.imported
            assert imported is not None
            for ph, elem, name in zip(imported.inputs, imported.input_types, imported.input_names):
                feed[ph] = feed_value(given[name], elem, name)
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
        self.programs = 0

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
                m.imported = import_for_values(
                    m.model, m.values(m.inputs), graph=group.graph, scope=f"case{k}"
                )
                ok.append(m)
            except Exception:
                m.imported = None  # its own prepare raises the import error
        group.members = ok
        if not ok:
            return
        try:
            group.session = Session(graph=group.graph)
            self.programs += 1
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
        self.member = member
        self.device = "CPU"
        self.kwargs = {}
        self.proto = member.model
        self.model = member.imported
        self.session = None
        self.specialized = {}

    def run(self, inputs: Any, **kwargs: Any) -> Any:
        m = self.member
        values = list(inputs) if not isinstance(inputs, np.ndarray) else [inputs]
        same = len(values) == len(m.inputs) and all(
            np.asarray(v).shape == s.shape and np.asarray(v).dtype == s.dtype
            for v, s in zip(values, m.inputs)
        )
        assert m.imported is not None and m.group is not None
        bound = m.values(values)
        same = same and all(
            np.array_equal(np.asarray(bound[n]), v) for n, v in m.imported.constants.items()
        )
        if not same:  # other shapes or other bound values: compiled on its own
            return TfcRep(m.model).run(values)
        return m.group.run(m, values)


class BatchedBackend(TfcBackend):
    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> TfcRep:
        if device == "CPU" and isinstance(model, onnx.ModelProto):
            member = BATCHES.member(model)
            if member is not None:
                return BatchedRep(member)
        return super().prepare(model, device, **kwargs)
