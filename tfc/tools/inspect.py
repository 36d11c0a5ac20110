"""`tfc inspect` and `tfc graph`: what the pass pipeline does to one program, in numbers,
text and pictures.

For one program (a model file's train step or predict at a batch, or what a Session.run would
compile) it reports the op count before and after every pass, the kernels of the lowered
program, the arena next to its lower bound and its naive size, the kernel the C target and the
form the CUDA target give each convolution (direct kernel, im2col, implicit GEMM), and the
FLOPs and bytes one run computes and moves (tfc/codegen/program_stats.py says how each is
counted); it can keep the graph's text after any pass, and hands the graph after any pass to
tfc/tools/graphviz.py to draw.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfc.aot.programs import batch_feed, train_feeds
from tfc.aot.signatures import (
    EMBED_DTYPES,
    ModelError,
    build_signatures,
    load_signatures_function,
)
from tfc.client.request import RunRequest
from tfc.codegen.cuda import conv_forms
from tfc.codegen.lower import LoweredProgram
from tfc.codegen.program_stats import (
    FALLBACK_FLOPS_PER_ELEMENT,
    ArenaStats,
    CostEstimate,
    arena_stats,
    estimate_cost,
    kernel_count,
    parse_arena_line,
)
from tfc.compiler import (
    PASS_NAMES,
    CompileOptions,
    Pass,
    compile_program,
    mark_mixed_precision,
    pass_name,
    pipeline,
    run_passes,
)
from tfc.ir.graph import Graph, get_default_graph
from tfc.ir.program import make_program_graph
from tfc.ir.tensor_shape import num_elements
from tfc.ops.conv_algo import describe_plan
from tfc.ops.kernels import BFLOAT16_PRODUCTS, ConvSpec, GemmSpec
from tfc.tools.graphviz import graph_dot, graph_html, graph_svg, write_graph

__all__ = [
    "ArenaStats",
    "CostEstimate",
    "Inspection",
    "arena_stats",
    "estimate_cost",
    "graph_dot",
    "graph_html",
    "graph_svg",
    "host_conv_forms",
    "inspect_model",
    "parse_arena_line",
    "program_graph",
    "run_graph",
    "signature_graph",
    "write_graph",
]


@dataclass
class PassRecord:
    position: int  # 1-based, in the pipeline
    name: str
    ops_before: int
    ops_after: int
    seconds: float


@dataclass
class Inspection:
    model: str
    signature: str
    batch: int
    records: list[PassRecord]
    graph: Graph  # after the whole pipeline
    program: LoweredProgram
    arena: ArenaStats
    cost: CostEstimate
    baseline_kernels: int | None = None  # with no optimization pass, when some ran
    dump: str | None = None  # the graph's text after the --dump-after pass
    dump_pass: str | None = None
    allow_tf32: bool = False  # CompileOptions': the GPU convolutions that would use tensor cores

    @property
    def kernels(self) -> int:
        return kernel_count(self.program)

    @property
    def computing_nodes(self) -> int:
        return sum(1 for step in self.program.steps if step.kernels)

    def report(self) -> str:
        lines = [f"tfc inspect: model {self.model}, signature {self.signature}, batch {self.batch}"]
        lines.append(f"  {'#':>2}  {'pass':<12}{'ops before':>11}{'ops after':>11}{'time':>11}")
        for r in self.records:
            lines.append(
                f"  {r.position:>2}  {r.name:<12}{r.ops_before:>11,}{r.ops_after:>11,}"
                f"{r.seconds * 1e3:>8.1f} ms"
            )
        nodes = len(self.graph.node_names())
        kernels = f"kernels {self.kernels:,} in {self.computing_nodes:,} of {nodes:,} nodes"
        if self.baseline_kernels is not None:
            kernels += f" ({self.baseline_kernels:,} with no optimization pass)"
        lines.append(kernels)
        lines.append(self.arena.line())
        lines.append(
            f"intermediates {self.arena.intermediate_bytes:,} B after the passes, "
            f"{self.arena.naive_bytes:,} B with none (the naive total)"
        )
        lines += control_flow_report(self.graph)
        products = product_precisions(self.program.steps)
        if products:
            lines.append("matrix products and convolutions (the precision they multiply in):")
            lines += [f"  {op} {node}: {precision}" for node, op, precision in products]
        host = host_conv_forms(self.program.steps)
        if host:
            lines.append("convolutions on the host (tfc_conv.h's choice for each shape):")
            lines += [f"  {op} {node}: {form}" for node, op, form in host]
        forms = conv_forms(self.program.steps, self.allow_tf32)
        if forms:
            lines.append("convolutions on a GPU (the CUDA target's choice for each shape):")
            lines += [f"  {op} {node}: {form}" for node, op, form in forms]
        cost = self.cost
        top = sorted(cost.flops_by_type.items(), key=lambda kv: (-kv[1], kv[0]))
        shares = ", ".join(f"{t} {_percent(f, cost.flops)}" for t, f in top[:4] if f)
        lines.append(f"flops {cost.flops:,} per step" + (f" ({shares})" if shares else ""))
        intensity = cost.flops / cost.bytes_moved if cost.bytes_moved else 0.0
        lines.append(f"bytes moved {cost.bytes_moved:,} per step ({intensity:.2f} FLOP/B)")
        if cost.no_rule:
            lines.append(
                f"no FLOPs rule: {', '.join(cost.no_rule)} (counted as "
                f"{FALLBACK_FLOPS_PER_ELEMENT} FLOP per output element)"
            )
        return "\n".join(lines) + "\n"


def control_flow_report(graph: Graph, indent: str = "") -> list[str]:
    """A line per loop and conditional of a memory-planned graph (and of those nested in it):
    a loop's iteration bound, how its loop variables are carried from one iteration to the
    next (alias: updated in place; direct: the next value written over the current one;
    double: a second buffer), what it accumulates for its gradient, its nested arenas."""
    lines = []
    for name in graph.node_names():
        node = graph.node(name)
        attrs = node["attrs"]

        def nbytes(j: int, node: dict = node) -> int:
            return num_elements(node["shapes"][j]) * node["dtypes"][j].size

        def arena(key: str, attrs: dict = attrs) -> int:
            return int(attrs[key].graph_attrs.get("arena_bytes", 0))

        if node["op"] == "While":
            n_lv = attrs["loop_vars"]
            modes = attrs["body"].graph_attrs.get("carried") or ["?"] * n_lv
            kinds = ", ".join(f"{modes.count(m)} {m}" for m in ("alias", "direct", "double")
                              if m in modes)  # fmt: skip
            second = sum(nbytes(j) for j in range(n_lv) if modes[j] == "double")
            saved = range(n_lv + 1, len(node["dtypes"]))
            bound = attrs.get("bound")
            lines.append(
                f"{indent}loop '{name}': at most {bound if bound is not None else '?'} "
                f"iterations; {n_lv} loop variables ({kinds}; {second:,} B of second buffers); "
                f"{len(saved)} accumulators ({sum(nbytes(j) for j in saved):,} B); arenas: body "
                f"{arena('body'):,} B, cond {arena('cond'):,} B"
            )
            for key in ("cond", "body"):
                lines += control_flow_report(attrs[key], indent + "  ")
        elif node["op"] == "If":
            lines.append(
                f"{indent}cond '{name}': {attrs['carried']} carried values; arenas: true branch "
                f"{arena('then_branch'):,} B, false branch {arena('else_branch'):,} B"
            )
            for key in ("then_branch", "else_branch"):
                lines += control_flow_report(attrs[key], indent + "  ")
    return lines


def _percent(part: int, whole: int) -> str:
    share = 100 * part / whole
    return "<1%" if share < 1 else f"{share:.0f}%"


# -- the program of one signature ---------------------------------------------------------------
def signature_graph(
    model: Any, signature: str | None = None, batch: int = 32
) -> tuple[str, str, Graph]:
    """(model name, signature, program graph before any pass) for one signature of `model` (a
    model file's path, a module or a signatures function; see `pydoc tfc.aot`). `signature` is
    "train" or "predict"; by default train when the model has one. Its feeds are those `tfc
    compile` gives the same program."""
    name, fn = load_signatures_function(model, batch)
    sigs = build_signatures(name, fn, EMBED_DTYPES)  # the program, as any target compiles it
    available = [s for s in ("train", "predict") if getattr(sigs, s) is not None]
    signature = signature or available[0]
    if signature not in ("train", "predict"):
        raise ModelError(f"unknown signature '{signature}': a model has train and predict")
    if signature not in available:
        raise ModelError(
            f"model {name} has no '{signature}' signature; signatures() returns only "
            f"{', '.join(available)}"
        )
    if batch < 1:
        raise ModelError(f"batch must be at least 1, got {batch}")
    if signature == "train":
        tr = sigs.train
        feeds, _ = train_feeds(tr, batch)
        fetches, targets = [tr.loss], [tr.train_op.name]
    else:
        pr = sigs.predict
        feeds, fetches, targets = [batch_feed(pr.features, batch)], list(pr.outputs.values()), []
    graph = make_program_graph(
        sigs.graph, [(t.op.name, t.value_index) for t in fetches], targets, feeds
    )
    return name, signature, graph


def pass_position(passes: Sequence[Pass], after: str | int) -> int:
    """How many of `passes` run to get the graph "after" `after`: a pass name (its first run),
    a 1-based position in the pipeline, or "none" (0: the graph before any pass)."""
    names = [pass_name(p) for p in passes]
    text = str(after).strip()
    if text == "none":
        return 0
    if text.isdigit():
        position = int(text)
        if not 0 <= position <= len(names):
            raise ValueError(
                f"pass position {position} is out of range: the pipeline has {len(names)} "
                f"passes ({', '.join(names)})"
            )
        return position
    if text in names:
        return names.index(text) + 1
    if text in PASS_NAMES.values():
        raise ValueError(
            f"pass '{text}' does not run in this pipeline ({', '.join(names)}); "
            "choose the optimizations with --passes"
        )
    raise ValueError(
        f"unknown pass '{text}'; the pipeline runs {', '.join(names)} (a name, a position "
        "from 1, or 'none' for the graph before any pass)"
    )


def run_pipeline(
    graph: Graph,
    passes: Sequence[Pass],
    first: int = 1,
    options: Mapping[str, Mapping[str, object]] | None = None,
) -> tuple[Graph, list[PassRecord]]:
    """Run `passes` one at a time, recording op counts and times (positions numbered from
    `first`), with run_passes' `options`. Graph invariants are checked after each pass when
    TFC_VERIFY is set, as sessions do."""
    verify = bool(os.environ.get("TFC_VERIFY"))
    records = []
    for i, p in enumerate(passes, start=first):
        before = len(graph.node_names())
        start = time.perf_counter()
        graph = run_passes(graph, [p], verify=verify, options=options)
        elapsed = time.perf_counter() - start
        records.append(PassRecord(i, pass_name(p), before, len(graph.node_names()), elapsed))
    return graph, records


def program_graph(
    model: Any,
    signature: str | None = None,
    batch: int = 32,
    options: CompileOptions | None = None,
    after: str | int | None = None,
) -> tuple[str, str, Graph]:
    """(model name, signature, program graph) after pass `after` (see `pass_position`; by
    default after the whole pipeline): what `tfc graph` draws."""
    passes = (options or CompileOptions()).pipeline()
    stop = len(passes) if after is None else pass_position(passes, after)
    name, signature, graph = signature_graph(model, signature, batch)
    return name, signature, run_pipeline(graph, passes[:stop])[0]


def product_precisions(steps: list) -> list[tuple[str, str, str]]:
    """(node, op, precision in words) of every matrix product and convolution among lowered
    `steps`: its dtype, or under mixed precision its bfloat16 operands and fp32 sums."""
    products = []
    for step in steps:
        for bound in step.kernels:
            spec = bound.kernel.spec
            if isinstance(spec, (GemmSpec, ConvSpec)):
                precision = spec.dtype.name
                if spec.precision == BFLOAT16_PRODUCTS:
                    precision = "bfloat16 operands, float32 sums (mixed precision)"
                products.append((step.node, step.op, precision))
    return products


def host_conv_forms(steps: list) -> list[tuple[str, str, str]]:
    """(node, op, the kernel in words) of every convolution among lowered `steps`: the kernel
    of runtime/include/tfc_conv.h that the C target calls (tfc/ops/conv_algo.py chose it)."""
    forms = []
    for step in steps:
        for bound in step.kernels:
            spec = bound.kernel.spec
            if isinstance(spec, ConvSpec):
                forms.append(
                    (step.node, step.op, f"{spec.kind}, {describe_plan(spec.kind, spec.plan)}")
                )
    return forms


# -- measures -----------------------------------------------------------------------------------
def run_graph(
    fetches: Any,
    feed_dict: Any = None,
    graph: Graph | None = None,
    options: CompileOptions | None = None,
    after: str | int | None = None,
) -> Graph:
    """The program `Session.run(fetches, feed_dict)` compiles, after pass `after` (by default
    after the whole pipeline), e.g. `write_graph(run_graph(train_op, {x: batch}), "g.svg")`."""
    graph = graph or get_default_graph()
    request = RunRequest(graph, fetches, feed_dict)
    program = make_program_graph(graph, request.fetch_keys, request.targets, request.feeds)
    passes = (options or CompileOptions()).pipeline()
    stop = len(passes) if after is None else pass_position(passes, after)
    return run_pipeline(program, passes[:stop])[0]


# -- the whole inspection -----------------------------------------------------------------------
def inspect_model(
    model: Any,
    signature: str | None = None,
    batch: int = 32,
    options: CompileOptions | None = None,
    dump_after: str | int | None = None,
) -> Inspection:
    """Compile one signature of `model` pass by pass and measure the result (see the module
    docstring). `dump_after` keeps the graph's text after that pass (see `pass_position`)."""
    options = options or CompileOptions()
    passes = options.pipeline()
    stop = len(passes) if dump_after is None else pass_position(passes, dump_after)
    name, signature, graph = signature_graph(model, signature, batch)
    unoptimized = pipeline([])
    baseline_graph = graph.copy()
    pass_options = mark_mixed_precision(graph, options.mixed_precision)
    graph, records = run_pipeline(graph, passes[:stop], options=pass_options)
    dump = dump_pass = None
    if dump_after is not None:
        from tfc.ir.dump import graph_text

        dump = graph_text(graph)
        dump_pass = f"{stop} ({pass_name(passes[stop - 1])})" if stop else "0 (none)"
    graph, rest = run_pipeline(graph, passes[stop:], first=stop + 1, options=pass_options)
    records += rest
    # lowered, not rendered: the passes ran already, one at a time
    program = compile_program(
        graph, [], name=f"{name}:{signature}", mixed_precision=options.mixed_precision
    ).lowered
    baseline_graph = run_pipeline(baseline_graph, unoptimized)[0]
    baseline = None
    if passes != unoptimized:
        baseline = kernel_count(compile_program(baseline_graph, []).lowered)
    return Inspection(
        name,
        signature,
        batch,
        records,
        graph,
        program,
        arena_stats(graph, baseline_graph),
        estimate_cost(graph, program),
        baseline,
        dump,
        dump_pass,
        options.allow_tf32,
    )


def write_dump(inspection: Inspection, output: str | os.PathLike | None) -> str | None:
    """The --dump-after text, headed by the pass it follows: returned for stdout when `output`
    is None, else written to that file."""
    if inspection.dump is None:
        return None
    text = f"# graph after pass {inspection.dump_pass}\n{inspection.dump}"
    if output is None:
        return text
    Path(output).write_text(text)
    return None
