"""A Session program split between the host and a GPU: its stages' programs, run in turn.

tfc/passes/stage.py cuts a program placed on the host CPU and a GPU into stages that alternate
between them; each stage is compiled on its own (C for the host, CUDA for the GPU). A run
calls them in order: a stage's inputs are the run's feeds and the values earlier stages
output, and those hand-overs are the host/device copies (a CUDA stage copies its host inputs
in and its outputs out in its one host call). Variables stay where they are placed: the
session hands each stage its state through `Session._call_program`, which keeps the GPU copy
(backend_cuda.DeviceState) and the host buffer of each variable coherent per stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfc.graph import Graph
from tfc.lower import LoweredProgram, lower_program
from tfc.passes import run_passes
from tfc.passes.stage import FEED, FETCH, Stage
from tfc.targets import CUDA, C, Target

# where a GPU program's ops go when they name no device (TF1 prefers the GPU when present)
GPU_DEVICE = "/job:localhost/replica:0/task:0/device:GPU:0"
# run per stage, after the cut: fusion with the options of the stage's target (a group never
# spans devices), then its schedule and memory plan
LATE_PASSES = ("fuse", "schedule", "memory")


def plan_stages(
    graph: Graph, passes: list[str], name: str, allow_soft_placement: bool = False,
    verify: bool = False,
) -> list[tuple[Stage, LoweredProgram]]:  # fmt: skip
    """The lowered programs of a program graph with ops on a GPU, one per stage in run order:
    the optimizations of `passes` (not fuse), placement (ops naming no device go to the GPU,
    host-only ops to the host), the stage cut, then each stage fused for its target (CUDA or
    C), scheduled and planned. A program
    on one device is one stage, compiled whole: feeds and fetches in the program's order."""
    graph = run_passes(graph, [p for p in passes if p not in LATE_PASSES], verify=verify)
    graph.graph_attrs.update(default_device=GPU_DEVICE, allow_soft_placement=allow_soft_placement)
    graph = run_passes(graph, ["place", "stage"], verify=verify)
    stages: list[Stage] = graph.graph_attrs["stages"]
    late = [p for p in passes if p in LATE_PASSES]
    if len(stages) <= 1:
        device = stages[0].device if stages else GPU_DEVICE
        on_gpu = stages[0].on_gpu if stages else True
        graph = run_passes(graph, late, verify=verify, options=_target(on_gpu).pass_options())
        inputs = [(FEED, i) for i in range(len(graph.graph_attrs["feeds"]))]
        outputs = [(FETCH, j) for j in range(len(graph.graph_attrs["fetches"]))]
        whole = Stage(device, graph, inputs, outputs)  # type: ignore[arg-type]
        return [(whole, lower_program(graph, name=name))]
    planned = []
    for i, stage in enumerate(stages):
        options = _target(stage.on_gpu).pass_options()
        stage.graph = run_passes(stage.graph, late, verify=verify, options=options)
        planned.append((stage, lower_program(stage.graph, name=f"{name}.stage{i}")))
    return planned


def _target(on_gpu: bool) -> Target:
    return CUDA if on_gpu else C


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

    def __call__(self, feeds: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        results: list[Any] = [None] * self.n_fetches
        sent: dict[str, np.ndarray] = {}
        for stage, program in zip(self.stages, self.programs):
            inputs = [feeds[k] if kind == FEED else sent[k] for kind, k in stage.inputs]
            rc, outputs = self._session._call_program(program, inputs)
            if rc != 0:
                self._failed = program
                return rc, results
            for (kind, k), value in zip(stage.outputs, outputs):
                if kind == FETCH:
                    results[k] = value
                else:
                    sent[k] = value
        return 0, results

    def error(self, rc: int, graph: Any) -> Any:
        """The error of the stage that failed in the last call."""
        return self._failed.error(rc, graph)
