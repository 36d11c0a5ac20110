"""The compile driver: every pipeline tfc runs, as lists of pass functions, and the one path from
a program graph to a lowered program and its source for a target.

A program graph (tfc.ir.program.make_program_graph) is a copy of the user's graph carrying, in
`graph.graph_attrs`, what the compile is for: "feeds" (FeedSpecs with concrete shapes),
"fetches" ((node, output) pairs) and "targets" (op names). A pass (tfc/passes/) is a function
Graph -> Graph; the pipelines below say which run, in which order, for each entry point:

    entry point                 pipeline                                 through
    Session.run (CPU)           PIPELINE, C                              compile_program
    Session.run (GPU ops)       PIPELINE around STAGE_CUT, C and CUDA    compile_stages
    Session.run (Python ops)    PYTHON_CUT, then each native stage as    split_python_stages
                                above, for the shapes it is handed
    Session.profile             PIPELINE, C with step timers             compile_program
    tfc compile (host, cuda)    PIPELINE per program of the model        compile_program
    tfc compile --target embed  PIPELINE (the train step: guarded),      compile_program
                                C with file-local entries
    tfc compile --cluster       CLUSTER_PLACEMENT, CLUSTER_PARTITION,    place_on_cluster,
                                then task_pipeline(PIPELINE) per part    partition_by_device,
                                                                         compile_program
    tfc inspect, tfc graph      PIPELINE, one pass at a time             run_passes,
                                                                         compile_program
    the interpreter             INTERP_PIPELINE; partitioned runs: the   interpreter_program,
                                cluster pipelines, INTERP_PART_PIPELINE  interpreter_partitions

Lowering (tfc.codegen.lower) turns a planned graph into kernel specs; rendering
(tfc.codegen.render) turns those into the target's source, once per program and target.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tfc.codegen.lower import LoweredProgram, lower_program
from tfc.codegen.render import render_program
from tfc.codegen.targets import CUDA, CUDA_TF32, C, Target
from tfc.ir.dump import graph_text
from tfc.ir.graph import Graph
from tfc.ops.kernels import BFLOAT16_PRODUCTS, MIXED_PRECISION
from tfc.passes.conv_epilogue import fuse_conv_epilogues
from tfc.passes.conv_pack import pack_conv_filters
from tfc.passes.cse import eliminate_common_subexpressions
from tfc.passes.fold import fold_constants
from tfc.passes.fuse import fuse_elementwise
from tfc.passes.guard import guard_updates
from tfc.passes.hoist import hoist_invariants
from tfc.passes.memory import plan_memory
from tfc.passes.native import require_native_ops
from tfc.passes.nested import map_subgraphs
from tfc.passes.partition import partition_graph
from tfc.passes.place import place_devices
from tfc.passes.prune import prune_graph
from tfc.passes.python_stage import stage_python_ops
from tfc.passes.scale import fold_channel_scales
from tfc.passes.schedule import schedule_graph
from tfc.passes.simplify import simplify_algebra
from tfc.passes.specialize import specialize_shapes
from tfc.passes.stage import FEED, FETCH, Stage, stage_devices
from tfc.passes.verify import verify_graph

__all__ = [
    "CLUSTER_PARTITION",
    "CLUSTER_PLACEMENT",
    "GPU_DEVICE",
    "INTERP_PART_PIPELINE",
    "INTERP_PIPELINE",
    "OPTIMIZATIONS",
    "PASS_NAMES",
    "PIPELINE",
    "PYTHON_CUT",
    "STAGE_CUT",
    "STAGE_LATE",
    "CompileOptions",
    "Pass",
    "Program",
    "compile_program",
    "compile_stages",
    "guarded",
    "interpreter_partitions",
    "interpreter_program",
    "parse_pass_list",
    "partition_by_device",
    "pass_name",
    "pipeline",
    "place_on_cluster",
    "run_passes",
    "split_python_stages",
    "task_pipeline",
]

Pass = Callable[..., Graph]

# -- the passes, by the names users give them -----------------------------------------------------
# CompileOptions(disable=["fuse"]), `tfc compile --passes fold,cse`, `tfc inspect --dump-after
# specialize` and the dump files NN_<name>.txt name a pass so, and run_passes' `options` (a
# target's Target.pass_options) are keyed by these names.
PASS_NAMES: dict[Pass, str] = {
    # partial execution: cut the graph at the feeds, keep what the fetches need
    prune_graph: "prune",
    # a native program holds no op that only Python runs (py_func, strings, value-dependent
    # shapes): the error names the op and why, before anything fails less clearly
    require_native_ops: "native",
    # every shape concrete for the fed shapes; compile-time values (shapes, axes) become Consts
    specialize_shapes: "specialize",
    # subgraphs of constants evaluated at compile time (size-capped)
    fold_constants: "fold",
    # algebraic identities: x*1, x+0, double transposes, identity chains, no-op casts
    simplify_algebra: "simplify",
    # loop-invariant work of a while_loop's body done once, before the loop
    hoist_invariants: "hoist",
    # one node for ops with the same type, attributes and inputs (never stateful or random ones)
    eliminate_common_subexpressions: "cse",
    # constant per-channel scales (inference batch norm) folded into a conv's or MatMul's filter
    fold_channel_scales: "scale",
    # a convolution's bias, residual Add and ReLU applied by its kernel (targets that have it)
    fuse_conv_epilogues: "epilogue",
    # chains and trees of element-wise ops become one loop
    fuse_elementwise: "fuse",
    # a fused convolution's constant filter stored in the blocks its kernel reads
    pack_conv_filters: "pack",
    # a full device name on every node (tf.device, tf.colocate_with, variables' groups)
    place_devices: "place",
    # one subgraph per device, a Send/Recv pair on every cut edge (distributed programs)
    partition_graph: "partition",
    # stages alternating between the host and a GPU, the hand-offs on the cut edges (GPU sessions)
    stage_devices: "stage",
    # stages alternating between native code and Python ops (a Session's programs with ops
    # only Python runs); the native stages are compiled when their input shapes are known
    stage_python_ops: "python",
    # a topological order; variable reads before writes they do not depend on
    schedule_graph: "schedule",
    # an arena offset (or a feed/output/variable/constant slot) for every tensor
    plan_memory: "memory",
    # updates of variables wait for checks that the loss and what they read are finite
    guard_updates: "guard",
}


def guarded(passes: Sequence[Pass]) -> list[Pass]:
    """`passes` with guard_updates before fusion (before the schedule when fusion is off): the
    embeddable library's train step, which leaves its state unchanged when the loss or a value
    an update reads is not finite."""
    out = list(passes)
    at = fuse_elementwise if fuse_elementwise in out else schedule_graph
    out.insert(out.index(at) if at in out else len(out), guard_updates)
    return out


def pass_name(p: Pass) -> str:
    """The name users give pass function `p` (its function name if it is none of tfc's)."""
    return PASS_NAMES.get(p, getattr(p, "__name__", str(p)))


# -- the pipelines --------------------------------------------------------------------------------
# A Session's program, and every program of `tfc compile` (native, CUDA, embedded; the ps tasks'
# init programs). `prune` runs again after the graph-shrinking passes because turning shape
# computations into constants and merging nodes leaves producers dead; fusion comes after both,
# on the graph that stays; the schedule and the memory plan are what lowering reads.
PIPELINE: list[Pass] = [
    prune_graph,
    require_native_ops,
    specialize_shapes,
    fold_constants,
    simplify_algebra,
    hoist_invariants,
    eliminate_common_subexpressions,
    prune_graph,
    fold_channel_scales,
    fuse_conv_epilogues,
    fuse_elementwise,
    pack_conv_filters,
    schedule_graph,
    plan_memory,
]

# The optimizations a user may switch off (CompileOptions, tfc compile --passes); the other
# passes of PIPELINE are what compiling is. Results are the same either way (up to rounding where
# `scale` multiplies a filter by a batch norm's scale once); speed and memory are not.
OPTIMIZATIONS: list[Pass] = [
    fold_constants,
    simplify_algebra,
    hoist_invariants,
    eliminate_common_subexpressions,
    fold_channel_scales,
    fuse_conv_epilogues,
    fuse_elementwise,
    pack_conv_filters,
]

# A Session program with ops on a GPU (tf.device("/gpu:0"), or TFC_DEVICE=gpu). First what
# PIPELINE runs before fusion; then placement (ops naming no device go to GPU_DEVICE, host-only
# ops to the host) and the cut into stages that alternate between the host and the GPU ...
STAGE_CUT: list[Pass] = [place_devices, stage_devices]
# ... then, per stage, fusion with the pass options of the stage's target (C or CUDA: a fused
# group never spans devices), its schedule and its memory plan.
STAGE_LATE: list[Pass] = [
    fuse_conv_epilogues, fuse_elementwise, pack_conv_filters, schedule_graph, plan_memory,
]  # fmt: skip
# where a GPU program's ops go when they name no device (TF1 prefers the GPU when present)
GPU_DEVICE = "/job:localhost/replica:0/task:0/device:GPU:0"

# Distributed training (tfc compile --cluster), and the interpreter's partitioned runs: the
# program cut at its feeds with every shape concrete, each op placed on a task's device
# (replica_device_setter's choices, explicit tf.device scopes win) ...
CLUSTER_PLACEMENT: list[Pass] = [
    prune_graph, require_native_ops, specialize_shapes, prune_graph, place_devices,
]  # fmt: skip
# ... then one subgraph per device, a _Send/_Recv pair on every edge between two devices.
CLUSTER_PARTITION: list[Pass] = [partition_graph]
# Each task's part is compiled with task_pipeline(PIPELINE): its shapes are concrete already and
# its feeds are the program's and the values it receives.

# A Session program with ops only Python runs (tf.py_func, strings, shapes that depend on
# values): pruned, then cut into native and Python stages. Each native stage is compiled
# with PIPELINE (or for its devices, as any Session program) once the shapes it reads are known.
PYTHON_CUT: list[Pass] = [prune_graph, stage_python_ops]

# The reference interpreter: the path of compilation up to the schedule, without the
# optimizations (the ops' NumPy references evaluate the graph as the user built it) ...
INTERP_PIPELINE: list[Pass] = [prune_graph, specialize_shapes, prune_graph, schedule_graph]
# ... and for a partitioned run, each part of CLUSTER_PLACEMENT + CLUSTER_PARTITION scheduled.
INTERP_PART_PIPELINE: list[Pass] = [schedule_graph]


def pipeline(enabled: Sequence[str] | None = None) -> list[Pass]:
    """PIPELINE with only the optimizations named in `enabled` (all of them when None)."""
    known = [pass_name(p) for p in OPTIMIZATIONS]
    enabled = known if enabled is None else list(enabled)
    unknown = set(enabled) - set(known)
    if unknown:
        raise ValueError(f"Unknown optimization pass {sorted(unknown)}; known: {', '.join(known)}")
    return [p for p in PIPELINE if p not in OPTIMIZATIONS or pass_name(p) in enabled]


def task_pipeline(passes: Sequence[Pass]) -> list[Pass]:
    """`passes` for one task's part of a distributed program: without specialize_shapes (the
    part's shapes are concrete; its feeds are cut already, so there is nothing to specialize)."""
    return [p for p in passes if p is not specialize_shapes]


@dataclass(frozen=True)
class CompileOptions:
    """Which optimization passes compile a program: all by default, `passes` to name exactly
    which, or `disable` to switch some off (e.g. CompileOptions(disable=["fuse"])).
    The results are numerically the same either way; the passes change speed and memory.
    `allow_tf32`: a GPU program's float32 convolutions may multiply on tensor cores with
    TF32 operands (10 mantissa bits; sums in fp32), as PyTorch's allow_tf32 (off by default:
    float32 is float32).
    `mixed_precision`: "bfloat16" (Keras' "mixed_bfloat16" too) multiplies the float32 matrix
    products and convolutions (MatMul, BatchMatMul, Conv2D and its two gradients) with their
    operands rounded to bfloat16 (to nearest, even) and their sums in fp32, as PyTorch's
    autocast(dtype=torch.bfloat16) does; variables, optimizer slots and updates, reductions,
    softmax, losses and element-wise ops stay float32, and so does every tensor's dtype (the
    rounding is inside the kernels). None or "float32" (the default): float32 throughout."""

    passes: tuple[str, ...] | None = None
    disable: tuple[str, ...] = ()
    allow_tf32: bool = False
    mixed_precision: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mixed_precision", mixed_precision_of(self.mixed_precision))
        if self.passes is not None:
            object.__setattr__(self, "passes", tuple(self.passes))
        object.__setattr__(self, "disable", tuple(self.disable))
        self.pipeline()  # unknown pass names fail here, not at the first run

    def pipeline(self) -> list[Pass]:
        """PIPELINE with the optimizations these options enable."""
        known = [pass_name(p) for p in OPTIMIZATIONS]
        unknown = set(self.disable) - set(known)
        if unknown:
            raise ValueError(
                f"Unknown optimization pass {sorted(unknown)}; known: {', '.join(known)}"
            )
        enabled = known if self.passes is None else self.passes
        return pipeline([p for p in enabled if p not in self.disable])


# CompileOptions(mixed_precision=...)'s values and the precision of products each stands for
MIXED_PRECISIONS: dict[str | None, str | None] = {
    None: None,
    "float32": None,
    "bfloat16": BFLOAT16_PRODUCTS,
    "mixed_bfloat16": BFLOAT16_PRODUCTS,
}


def mixed_precision_of(value: object) -> str | None:
    """CompileOptions' `mixed_precision` as the program's graph attribute holds it ("bfloat16"
    or None); any other value is refused, naming the ones known."""
    if isinstance(value, str) or value is None:
        if value in MIXED_PRECISIONS:
            return MIXED_PRECISIONS[value]
    known = ", ".join(repr(k) for k in MIXED_PRECISIONS)
    raise ValueError(f"CompileOptions(mixed_precision={value!r}): unknown; known: {known}")


def mark_mixed_precision(
    graph: Graph, mixed_precision: str | None, target: Target = C
) -> dict[str, dict]:
    """Mark program graph `graph` with CompileOptions' `mixed_precision` (the attribute the
    products' lowering, fused or not, reads) and return the pass options to compile it with
    for `target`."""
    mixed_precision = mixed_precision_of(mixed_precision)
    if mixed_precision is not None:
        _mark_graphs(graph, mixed_precision)
    return target.pass_options()


def _mark_graphs(graph: Graph, mixed_precision: str) -> Graph:
    """`graph` and (copies of) the graphs nested in its ops, marked: loop bodies and branches
    lower their products as the program does (the user's nested graphs stay unmarked)."""
    graph.graph_attrs[MIXED_PRECISION] = mixed_precision
    map_subgraphs(graph, lambda inner, node, key: _mark_graphs(inner, mixed_precision))
    return graph


def parse_pass_list(text: str | None) -> Sequence[str] | None:
    """`--passes fold,cse,fuse` (or 'none') as a list of names; None means all optimizations."""
    if text is None:
        return None
    text = text.strip()
    return [] if text in ("", "none") else [p.strip() for p in text.split(",") if p.strip()]


# -- running passes -------------------------------------------------------------------------------
def run_passes(
    graph: Graph,
    passes: Sequence[Pass],
    verify: bool = False,
    dump: str | os.PathLike | None = None,
    options: Mapping[str, Mapping[str, object]] | None = None,
) -> Graph:
    """Run `passes` (pass functions) in order; with `verify`, check the graph invariants after
    each one (tfc.passes.verify). `dump` names a directory that receives the graph in text form
    after every pass (NN_<name>.txt). `options` maps a pass's name (PASS_NAMES) to keyword
    arguments of its function: a target's choices, Target.pass_options() (for CUDA, the fuse
    pass forms no group that keeps a product's rows in scratch memory)."""
    options = options or {}
    for i, p in enumerate(passes):
        name = pass_name(p)
        graph = p(graph, **options.get(name, {}))
        if verify:
            verify_graph(graph, after=name)
        if dump is not None:
            path = Path(dump) / f"{i:02d}_{name}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(graph_text(graph))
    return graph


# -- compiling one program ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)  # compared by identity: it holds a whole graph
class Program:
    """A program graph compiled for `target`: the graph after its pipeline (scheduled, memory
    planned), its lowering, and `source`, rendered for the target on first use (tfc inspect
    reads only the lowering). `profile` (default: TFC_PROFILE) renders the profile build,
    `linkage` "static inline " keeps the entry points in their file (the embeddable library),
    `mixed_io` adds a CUDA program's run_mixed entry point (a stage of a staged program)."""

    graph: Graph
    lowered: LoweredProgram
    target: Target = C
    profile: bool | None = None
    linkage: str = ""
    mixed_io: bool = False

    @cached_property
    def source(self) -> str:
        return render_program(self.lowered, self.target, self.profile, self.linkage, self.mixed_io)


def compile_program(
    graph: Graph,
    passes: Sequence[Pass],
    target: Target = C,
    *,
    name: str = "program",
    prefix: str = "tfc_",
    local_prefix: str = "",
    profile: bool | None = None,
    linkage: str = "",
    mixed_io: bool = False,
    verify: bool = False,
    dump: str | os.PathLike | None = None,
    lock_updates: bool = False,
    mixed_precision: str | None = None,
    prepack_weights: bool = False,
) -> Program:
    """Compile program graph `graph` for `target`: `passes` with the target's pass options,
    then lowering. `name` names the program in its source and its build; `prefix` starts its
    exported symbols, `local_prefix` its file-local ones (several programs in one file).
    `lock_updates`: the program may run concurrently with others on the same variables (a
    Session's host programs): updates with use_locking hold the variables' update locks.
    `mixed_precision`: CompileOptions' ("bfloat16" or None): a graph attribute that the
    products' lowering reads. `prepack_weights` (host C programs only; a Session's, which
    passes its state epoch and bumps it wherever it writes variables itself): a program that
    writes no variable keeps its products' weights packed between calls, one that may write
    bumps the epoch around each call (tfc.codegen.lower.lower_program)."""
    if prepack_weights and target.name != C.name:
        raise ValueError(f"prepack_weights is for host C programs, not the {target.name} target")
    options = mark_mixed_precision(graph, mixed_precision, target)
    graph = run_passes(graph, passes, verify, dump, options=options)
    lowered = lower_program(
        graph, name=name, prefix=prefix, local_prefix=local_prefix, lock_updates=lock_updates,
        prepack_weights=prepack_weights,
    )  # fmt: skip
    return Program(graph, lowered, target, profile, linkage, mixed_io)


def compile_stages(
    graph: Graph,
    passes: Sequence[Pass],
    name: str,
    allow_soft_placement: bool = False,
    verify: bool = False,
    allow_tf32: bool = False,
    mixed_precision: str | None = None,
    prepack_weights: bool = False,
) -> list[tuple[Stage, Program]]:
    """The programs of a program graph with ops on a GPU, one per stage in run order: the
    passes of `passes` before fusion, STAGE_CUT, then each stage compiled for its device (CUDA
    or C) with the passes of STAGE_LATE that `passes` has. A program on one device is one stage,
    compiled whole: feeds and fetches in the program's order. The GPU stages of several have
    run_mixed (their hand-offs may stay in device memory). `allow_tf32`, `mixed_precision`:
    CompileOptions'. `prepack_weights`: compile_program's, for the host stages."""
    graph = run_passes(graph, [p for p in passes if p not in STAGE_LATE], verify=verify)
    graph.graph_attrs.update(default_device=GPU_DEVICE, allow_soft_placement=allow_soft_placement)
    graph = run_passes(graph, STAGE_CUT, verify=verify)
    stages: list[Stage] = graph.graph_attrs["stages"]
    late = [p for p in passes if p in STAGE_LATE]
    if len(stages) <= 1:
        device = stages[0].device if stages else GPU_DEVICE
        on_gpu = stages[0].on_gpu if stages else True
        target = _target(on_gpu, allow_tf32)
        program = compile_program(
            graph, late, target, name=name, verify=verify, mixed_precision=mixed_precision,
            prepack_weights=prepack_weights and not on_gpu,
        )  # fmt: skip
        inputs = [(FEED, i) for i in range(len(graph.graph_attrs["feeds"]))]
        outputs = [(FETCH, j) for j in range(len(graph.graph_attrs["fetches"]))]
        whole = Stage(device, program.graph, inputs, outputs)  # type: ignore[arg-type]
        return [(whole, program)]
    compiled = []
    for i, stage in enumerate(stages):
        program = compile_program(
            stage.graph, late, _target(stage.on_gpu, allow_tf32), name=f"{name}.stage{i}",
            mixed_io=stage.on_gpu, verify=verify, mixed_precision=mixed_precision,
            prepack_weights=prepack_weights and not stage.on_gpu,
        )  # fmt: skip
        stage.graph = program.graph
        compiled.append((stage, program))
    return compiled


def _target(on_gpu: bool, allow_tf32: bool) -> Target:
    if not on_gpu:
        return C
    return CUDA_TF32 if allow_tf32 else CUDA


def split_python_stages(graph: Graph, verify: bool = False) -> list[Stage]:
    """PYTHON_CUT on a program graph: its native and Python stages in run order
    (tfc.passes.python_stage; Stage.device is PYTHON or NATIVE), or [] when it holds no op
    only Python runs (`graph`, pruned, then compiles as one program)."""
    return run_passes(graph, PYTHON_CUT, verify=verify).graph_attrs["python_stages"]


# -- graphs that are not lowered: distributed placement, the interpreter --------------------------
def place_on_cluster(graph: Graph, verify: bool = False) -> Graph:
    """CLUSTER_PLACEMENT on a program graph whose graph_attrs say where ops go by default
    ("default_device") and which tasks exist ("cluster"); placement errors raise
    tfc.passes.place.PlacementError."""
    return run_passes(graph, CLUSTER_PLACEMENT, verify=verify)


def partition_by_device(graph: Graph, verify: bool = False) -> tuple[Graph, dict[str, Graph]]:
    """CLUSTER_PARTITION on a placed program graph: (the graph, its parts by device)."""
    graph = run_passes(graph, CLUSTER_PARTITION, verify=verify)
    return graph, graph.graph_attrs["partitions"]


def interpreter_program(graph: Graph) -> Graph:
    """A program graph as the reference interpreter evaluates it: INTERP_PIPELINE."""
    return run_passes(graph, INTERP_PIPELINE)


def interpreter_partitions(graph: Graph) -> tuple[Graph, dict[str, Graph]]:
    """A program graph placed and partitioned (the cluster pipelines), each part scheduled for
    the interpreter: (the program graph, its parts by device)."""
    graph, parts = partition_by_device(place_on_cluster(graph))
    return graph, {device: run_passes(part, INTERP_PART_PIPELINE) for device, part in parts.items()}
