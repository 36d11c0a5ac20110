"""A model's programs (init, train step, predict at the batch and at 1) and the state they share.

Each program is compiled as Session.run compiles one signature (tfc.compiler.compile_program: a
program graph, the pass pipeline, lowering, the source for the target); here with a distinct
prefix per program so that all link into one executable. The model's state table is the union of
the programs' slots (variables and random streams, in order of first use); each program binds it
through its own slot list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfc.aot.signatures import ModelError, ModelSignatures, TrainSignature
from tfc.codegen.lower import LoweredProgram
from tfc.codegen.targets import C, Target
from tfc.compiler import PIPELINE, Pass, compile_program
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, GraphKeys
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops.registry import constant_value, python_reason
from tfc.train.training_util import get_global_step
from tfc.variables import variables_initializer

# train outputs after the loss named "summary:<tag>" are tf.summary.scalar values: train
# --logdir writes them to its event file (the model descriptor's summaries table)
SUMMARY_OUTPUT_PREFIX = "summary:"


def train_summaries(graph: Graph, feeds: list[FeedSpec]) -> list[tuple[str, object]]:
    """(tag, value tensor) of each tf.summary.scalar (ScalarSummary with a constant scalar tag
    and a real scalar value) that the train step can compute natively from its feeds. The
    summary op itself makes a string, which native code has not: its value is fetched and the
    driver writes the Summary."""
    fed = {spec.tensor[0] for spec in feeds}
    found: list[tuple[str, object]] = []
    for op in graph.get_operations():
        if op.type != "ScalarSummary":
            continue
        tags_t, value = op.inputs
        tags = constant_value(graph, (tags_t.op.name, tags_t.value_index))
        if tags is None or tags.shape != () or value.shape.ndims != 0:
            continue
        if not (value.dtype.is_floating or value.dtype.is_integer):
            continue
        if not _computable(graph, value.op.name, fed):
            continue
        tag = tags[()].decode("utf-8", errors="replace")
        if tag not in {t for t, _ in found}:
            found.append((tag, value))
    return found


def _computable(graph: Graph, name: str, fed: set[str]) -> bool:
    """Whether node `name` depends on no placeholder but the fed ones and on no Python op."""
    seen, stack = set(), [name]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in fed:
            continue
        if graph.op_type(node) == "Placeholder" or python_reason(graph, node):
            return False
        stack.extend(src for src, _ in graph.input_edges(node))
        stack.extend(graph.control_input_names(node))
    return True


@dataclass
class Program:
    role: str  # "init", "train", "predict", "predict_one"
    lowered: LoweredProgram
    source: str
    input_names: list[str]  # what each feed is for: "features", "labels", a hyperparameter
    output_names: list[str]
    slots: list[int] = field(default_factory=list)  # indices into ModelPlan.state
    suffix: str = ".c"  # ".cu" for the CUDA target

    @property
    def filename(self) -> str:
        return f"program_{self.role}{self.suffix}"


@dataclass(frozen=True)
class StateEntry:
    kind: str  # "var" or "rng"
    name: str
    dtype: _dt.DType
    shape: tuple[int, ...]
    saved: bool  # a global variable: checkpoints hold it
    seed: int = 0
    seed2: int = 0


@dataclass
class ModelPlan:
    name: str
    batch: int
    programs: dict[str, Program]  # by role, in the order init, train, predict, predict_one
    state: list[StateEntry]
    global_step: int  # index into state, -1 when the train step advances no global step
    signatures: ModelSignatures


def train_feeds(tr: TrainSignature, batch: int) -> tuple[list[FeedSpec], list[str]]:
    """The train program's feeds and their names: features, labels (if any), then each
    hyperparameter placeholder as a scalar."""
    feeds = [batch_feed(tr.features, batch)]
    names = ["features"]
    if tr.labels is not None:
        feeds.append(batch_feed(tr.labels, batch))
        names.append("labels")
    for name, t in tr.hyperparameters.items():
        feeds.append(FeedSpec((t.op.name, t.value_index), t.dtype, ()))
        names.append(name)
    return feeds, names


def batch_feed(tensor, batch: int) -> FeedSpec:
    """The FeedSpec of placeholder `tensor` ([None, ...] or [batch, ...]) at `batch`."""
    dims = tensor.shape.as_list()
    if dims[0] is not None and dims[0] != batch:
        raise ModelError(
            f"placeholder {tensor.name} has batch dimension {dims[0]}, but the model is "
            f"compiled for batch {batch}: use --batch {dims[0]} or a placeholder of shape "
            f"[None, ...]"
        )
    return FeedSpec((tensor.op.name, tensor.value_index), tensor.dtype, (batch, *dims[1:]))


def signature_graph(sigs: ModelSignatures, fetches, targets, feeds) -> Graph:
    """The program graph of one signature of the model: its fetches (tensors), targets (ops)
    and feeds (FeedSpecs), before the passes (native, distributed and embedded builds)."""
    return make_program_graph(
        sigs.graph,
        [(t.op.name, t.value_index) for t in fetches],
        [op.name for op in targets],
        feeds,
    )


def _compile(
    sigs: ModelSignatures, role: str, fetches, targets, feeds, names, passes, target: Target
) -> Program:
    graph = signature_graph(sigs, fetches, targets, feeds)
    name, prefix = f"{sigs.name}:{role}", f"{sigs.name}_{role}_"
    compiled = compile_program(graph, passes, target, name=name, prefix=prefix)
    return Program(
        role, compiled.lowered, compiled.source, list(names[0]), list(names[1]),
        suffix=target.source_suffix,
    )  # fmt: skip


def plan_model(
    sigs: ModelSignatures, batch: int, passes: list[Pass] = PIPELINE, target: Target = C
) -> ModelPlan:
    """Compile the model's programs for `batch` with `passes` for `target` (C or CUDA) and lay
    out their shared state."""
    if batch < 1:
        raise ModelError(f"batch must be at least 1, got {batch}")
    graph, programs = sigs.graph, {}
    if sigs.train is not None:
        tr = sigs.train
        with graph.as_default():
            variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
                GraphKeys.LOCAL_VARIABLES
            )
            init = variables_initializer(variables, name="tfc_init")
        programs["init"] = _compile(sigs, "init", [], [init], [], ([], []), passes, target)
        feeds, names = train_feeds(tr, batch)
        summaries = train_summaries(graph, feeds)
        fetches = [tr.loss, *(t for _, t in summaries)]
        outputs = ["loss", *(SUMMARY_OUTPUT_PREFIX + tag for tag, _ in summaries)]
        programs["train"] = _compile(
            sigs, "train", fetches, [tr.train_op], feeds, (names, outputs), passes, target
        )
    if sigs.predict is not None:
        pr = sigs.predict
        sizes = {"predict": batch}
        if batch > 1 and pr.features.shape.as_list()[0] is None:
            sizes["predict_one"] = 1
        for role, n in sizes.items():
            program = _compile(
                sigs,
                role,
                list(pr.outputs.values()),
                [],
                [batch_feed(pr.features, n)],
                (["features"], list(pr.outputs)),
                passes,
                target,
            )
            for key, fetch in zip(pr.outputs, program.lowered.fetches):
                if not fetch.shape or fetch.shape[0] != n:
                    raise ModelError(
                        f"predict output '{key}' must have the batch as its first dimension: "
                        f"for a batch of {n} it has shape {list(fetch.shape)}"
                    )
            programs[role] = program
    state = layout_state(sigs, programs)
    global_step = -1
    step = get_global_step(graph)
    if "train" in programs and step is not None:
        if step.op.name in programs["train"].lowered.vars_written:
            global_step = next(
                i for i, s in enumerate(state) if s.kind == "var" and s.name == step.op.name
            )
    return ModelPlan(sigs.name, batch, programs, state, global_step, sigs)


def layout_state(sigs: ModelSignatures, programs: dict[str, Program]) -> list[StateEntry]:
    """The state table the `programs` share (each program's slots into it appended to its
    `slots`), checked: train and predict read only what init and checkpoints set."""
    graph = sigs.graph
    saved = {v.op.name for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
    state: list[StateEntry] = []
    index: dict[tuple[str, str], int] = {}
    for program in programs.values():
        for slot in program.lowered.slots:
            key = (slot.kind, slot.name)
            if key not in index:
                if slot.kind == "var" and slot.dtype not in _SUPPORTED_STATE:
                    raise ModelError(
                        f"variable {slot.name} has dtype {slot.dtype.name}; checkpoints of "
                        f"native executables hold {', '.join(d.name for d in _SUPPORTED_STATE)}"
                    )
                index[key] = len(state)
                state.append(
                    StateEntry(
                        slot.kind,
                        slot.name,
                        slot.dtype,
                        tuple(slot.shape),
                        slot.kind == "var" and slot.name in saved,
                        slot.seed,
                        slot.seed2,
                    )
                )
            program.slots.append(index[key])
    if "init" in programs:
        initialized = set(programs["init"].lowered.vars_written)
        for var in programs["train"].lowered.vars_read_first:
            if var not in initialized:
                raise ModelError(
                    f"variable {var} is read by the train step, but no initializer of the "
                    "global and local variables sets it"
                )
    for role in ("predict", "predict_one"):
        if role in programs:
            for var in programs[role].lowered.vars_read_first:
                if not state[index[("var", var)]].saved:
                    raise ModelError(
                        f"variable {var} is read by predict but is not a global variable, so "
                        "no checkpoint holds it"
                    )
    return state


_SUPPORTED_STATE = (_dt.float32, _dt.float64, _dt.int32, _dt.int64, _dt.bool_)
