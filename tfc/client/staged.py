"""A Session program split between the host and a GPU: its stages' programs, run in turn.

tfc/passes/stage.py cuts a program placed on the host CPU and a GPU into stages that alternate
between them; each stage is compiled on its own (C for the host, CUDA for the GPU: the
compiler's compile_stages). A run calls them in order: a stage's inputs are the run's feeds and
the values earlier stages output (the hand-offs). A hand-off stays where its producer and its
readers are: a GPU value that only GPU stages read is written by its producer into a device
buffer of this program (allocated once: the shapes are static) and read there in place; one a
host stage reads comes back to the host, once however many host stages read it (the stage pass
gives it one key), and not at all when the user fetches it to the host anyway (the host stages
read the fetch). A GPU stage reads device feeds in place and copies host values in through its
staging, all in its one host call (CudaProgram's run_mixed); later GPU stages read that staged
copy in place (so a host value is copied in once); fetches follow RunOptions.fetches_on_device.
A host stage gets a host copy of a device feed, made once per run. Variables stay where they are
placed: the session hands each stage its state through `Session._call_stage`, which keeps the
GPU copy (device_memory.DeviceState) and the host buffer of each variable coherent per stage.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfc.ops.sendrecv import key_tensor
from tfc.passes.stage import CUT, FEED, FETCH, Stage


@dataclass
class StagedSummary:
    """What the session reads of a program's lowering, for all stages together. The stages
    bind their own state, so the whole has no slots of its own."""

    name: str
    vars_read_first: list[str]
    vars_written: list[str]
    slots: list = field(default_factory=list)


class StagedProgram:
    """The compiled stages of one signature (see the module doc)."""

    on_device = False  # each stage is placed where it runs; the whole binds nothing

    def __init__(self, session: Any, name: str, stages: list[Stage], programs: list[Any],
                 n_fetches: int) -> None:  # fmt: skip
        self._session = session
        self.stages = stages
        self.programs = programs
        self.n_fetches = n_fetches
        read_first: list[str] = []
        written: list[str] = []
        for program in programs:  # initialized on entry: read before any earlier stage writes
            low = program.lowered
            read_first += [v for v in low.vars_read_first if v not in written + read_first]
            written += [v for v in low.vars_written if v not in written]
        self.lowered = StagedSummary(name, read_first, written)
        self.source = "\n".join(
            f"/* ---- stage {i}: {stage.device} ---- */\n{program.source}"
            for i, (stage, program) in enumerate(zip(stages, programs))
        )
        self._failed: Any = None
        self.resident = self._device_hand_offs()
        self.fetched_twin = self._fetched_twins()
        # how often the last run copied a hand-off's tensor ("node:out"), a fetch (("fetch",
        # index)) or a device feed (("feed", index)) from device to host memory: once at most
        self.copies_to_host: Counter = Counter()
        self.copies_to_device: Counter = Counter()  # the same, host to device

    def _device_hand_offs(self) -> dict[str, Any]:
        """A device buffer for every hand-off that a GPU program writes and only GPU programs
        read, as the DeviceFeed its readers take: made now, reused by every run."""
        from tfc.backend.device_array import DeviceArray, DeviceFeed

        readers: dict[Any, list] = {}
        for stage, program in zip(self.stages, self.programs):
            for kind, key in stage.inputs:
                if kind == CUT:
                    readers.setdefault(key, []).append(program)
        resident: dict[str, Any] = {}
        for stage, program in zip(self.stages, self.programs):
            for (kind, key), spec in zip(stage.outputs, program.lowered.fetches):
                if kind != CUT or not program.on_device:
                    continue
                if all(reader.on_device for reader in readers.get(key, [])):
                    array = DeviceArray(spec.shape, spec.dtype.np)
                    resident[key] = DeviceFeed(array.ptr, array.shape, array.dtype, array)
        return resident

    def _fetched_twins(self) -> dict[str, int]:
        """The host-bound hand-offs whose tensor their GPU stage also fetches, with the index
        of that fetch: when the fetch comes to the host, the host stages read it (one copy)."""
        twins: dict[str, int] = {}
        for stage, program in zip(self.stages, self.programs):
            if not program.on_device:
                continue
            tensors = [tuple(t) for t in stage.graph.graph_attrs["fetches"]]
            fetched = {tensors[j]: k for j, (kind, k) in enumerate(stage.outputs) if kind == FETCH}
            for j, (kind, key) in enumerate(stage.outputs):
                if kind == CUT and key not in self.resident and tensors[j] in fetched:
                    twins[key] = fetched[tensors[j]]
        return twins

    def __call__(self, feeds: list, fetches_on_device: bool = False) -> tuple[int, list]:
        """Run the stages in turn on the run's feeds (NumPy arrays or device_array.DeviceFeeds);
        GPU fetches stay on the device with `fetches_on_device`."""
        results: list[Any] = [None] * self.n_fetches
        sent: dict[str, Any] = {}
        on_host: dict[tuple, np.ndarray] = {}  # device feeds copied for host stages, once a run
        on_device: dict[tuple, Any] = {}  # host values a GPU stage staged, for later GPU stages
        self.copies_to_host.clear()
        self.copies_to_device.clear()
        for stage, program in zip(self.stages, self.programs):
            sources = stage.inputs
            inputs = [feeds[k] if kind == FEED else sent[k] for kind, k in sources]
            if program.on_device:
                inputs = [on_device.get(src, v) for v, src in zip(inputs, sources)]
            else:
                inputs = [self._on_host(v, src, on_host) for v, src in zip(inputs, sources)]
            where = [self._where(kind, k, fetches_on_device) for kind, k in stage.outputs]
            rc, outputs = self._session._call_stage(program, inputs, where)
            if rc != 0:
                self._failed = program
                return rc, results
            for i, (value, src) in enumerate(zip(inputs, sources)):
                if program.on_device and isinstance(value, np.ndarray):
                    # its copy stays in the stage's staging until the stage runs again (the
                    # next run): the later GPU stages of this run read it there
                    on_device[src] = program.staged_feed(i)
                    self.copies_to_device[key_tensor(src[1]) if src[0] == CUT else src] += 1
            for (kind, k), value in zip(stage.outputs, outputs):
                if kind == FETCH:
                    results[k] = value
                elif k in self.resident:
                    sent[k] = self.resident[k]
                elif value is not None:  # else its fetched twin, below
                    sent[k] = value
                if program.on_device and isinstance(value, np.ndarray):
                    self.copies_to_host[key_tensor(k) if kind == CUT else (kind, k)] += 1
            for kind, k in stage.outputs:
                if kind == CUT and k not in sent:
                    sent[k] = results[self.fetched_twin[k]]
        return 0, results

    def _where(self, kind: str, k: Any, fetches_on_device: bool) -> Any:
        """Where a GPU stage puts an output (device_array.bind_mixed_io's `where`): a fetch as
        RunOptions say, a hand-off in its device buffer, or on the host unless its fetched
        twin comes there."""
        if kind == FETCH:
            return bool(fetches_on_device)
        if k in self.resident:
            return self.resident[k].owner
        return None if k in self.fetched_twin and not fetches_on_device else False

    def _on_host(self, value: Any, source: tuple[str, Any], done: dict) -> Any:
        """`value` as a host stage reads it: a device feed copied to the host once per run."""
        if isinstance(value, np.ndarray):
            return value
        if source not in done:
            done[source] = value.to_host()
            self.copies_to_host[source] += 1
        return done[source]

    def error(self, rc: int, graph: Any) -> Any:
        """The error of the stage that failed in the last call."""
        return self._failed.error(rc, graph)
