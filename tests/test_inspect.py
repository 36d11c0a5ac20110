"""tfc inspect and tfc graph: pass-by-pass op counts, kernels, arena, FLOPs, dumps, pictures."""

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import tfc as tf
from tfc.codegen.lower import lower_program
from tfc.codegen.program_stats import arena_stats, parse_arena_line
from tfc.compiler import CompileOptions, pass_name, run_passes
from tfc.ir.dump import graph_text
from tfc.ops.flops import expression_ops
from tfc.ops.registry import get_opdef
from tfc.tools.cli import main
from tfc.tools.graphviz import graph_dot
from tfc.tools.inspect import inspect_model, program_graph, run_graph, signature_graph

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
IRIS, DIGITS, LENET = (SAMPLES / f"{m}_model.py" for m in ("iris", "digits", "lenet"))
ARENA = re.compile(
    r"^arena ([\d,]+) B = ([\d.]+)x lower bound \(([\d,]+) B\), ([\d.]+)x naive \(([\d,]+) B\)$",
    re.M,
)
NO_OPTIMIZATION = CompileOptions(passes=())
HAS_DOT = shutil.which("dot") is not None


def _number(text: str) -> int:
    return int(text.replace(",", ""))


# -- the report ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "model",
    [
        IRIS,
        DIGITS,
        pytest.param(LENET, marks=pytest.mark.skipif(not LENET.exists(), reason="no LeNet yet")),
    ],
    ids=lambda p: p.stem,
)
@pytest.mark.parametrize("signature", ["train", "predict"])
def test_inspect_counts_what_the_passes_and_the_lowering_produce(model, signature):
    result = inspect_model(model, signature, batch=16)
    pipeline = CompileOptions().pipeline()
    assert [r.name for r in result.records] == [pass_name(p) for p in pipeline]
    assert [r.position for r in result.records] == list(range(1, len(pipeline) + 1))
    # the op counts are those of running the passes on a fresh program graph
    _, _, start = signature_graph(model, signature, batch=16)
    assert result.records[0].ops_before == len(start.node_names())
    for k, record in enumerate(result.records, start=1):
        _, _, graph = signature_graph(model, signature, batch=16)
        assert record.ops_after == len(run_passes(graph, pipeline[:k]).node_names())
        if k > 1:
            assert record.ops_before == result.records[k - 2].ops_after
    graph = run_passes(signature_graph(model, signature, batch=16)[2], pipeline)
    kernels = sum(len(step.kernels) for step in lower_program(graph).steps)

    report = result.report()
    assert f"signature {signature}, batch 16" in report.splitlines()[0]
    assert re.search(
        rf"^kernels {kernels:,} in \d+ of {len(graph.node_names()):,} nodes", report, re.M
    )
    m = ARENA.search(report)
    assert m is not None, report
    arena, lb_ratio, lower, naive_ratio, naive = m.groups()
    assert _number(arena) == graph.graph_attrs["arena_bytes"]
    assert 0 < _number(lower) <= _number(arena) <= _number(naive)
    assert float(lb_ratio) == pytest.approx(_number(arena) / _number(lower), abs=0.005)
    assert float(naive_ratio) == pytest.approx(_number(arena) / _number(naive), abs=0.005)
    assert parse_arena_line(report) == result.arena
    flops = _number(re.search(r"^flops ([\d,]+) per step", report, re.M).group(1))
    moved = _number(re.search(r"^bytes moved ([\d,]+) per step", report, re.M).group(1))
    assert flops == result.cost.flops > 0 and moved == result.cost.bytes_moved > 0


def test_arena_bounds_computed_from_the_plan_match_the_planner():
    """Without the planner's measures, inspect derives them from the schedule and storage."""
    for model in (IRIS, DIGITS):
        graph = program_graph(model, "train")[2]
        recorded = arena_stats(graph)
        for key in ("arena_lower_bound", "arena_naive_bytes"):
            graph.graph_attrs.pop(key, None)
        derived = arena_stats(graph)
        assert derived.arena_bytes == recorded.arena_bytes
        assert derived.naive_bytes == recorded.naive_bytes
        assert derived.lower_bound == recorded.lower_bound <= derived.arena_bytes


def _single_op_model(build):
    def signatures():
        x = tf.placeholder(tf.float32, [None, *build.in_shape], name="x")
        return {"predict": {"inputs": {"features": x}, "outputs": {"y": build(x)}}}

    return signatures


@pytest.mark.parametrize("case", ["plain", "transpose_a", "transpose_b", "batched"])
def test_flops_of_a_matmul_are_exactly_2mnk(case):
    batch, k, n, rows = 12, 5, 7, 3  # rows: the matrices per example of the batched product
    shapes = {  # x (per example), w, and the product's (M, N, K)
        "plain": ([k], [k, n], (batch, n, k)),
        "transpose_a": ([k], [batch, n], (k, n, batch)),  # x^T w: contracts the batch
        "transpose_b": ([k], [n, k], (batch, n, k)),
        "batched": ([rows, k], [k, n], (batch * rows, n, k)),
    }
    x_shape, w_shape, (m_, n_, k_) = shapes[case]

    def build(x):
        w = tf.constant(1.0, shape=w_shape)
        return tf.matmul(x, w, transpose_a=case == "transpose_a", transpose_b=case == "transpose_b")

    build.in_shape = x_shape
    result = inspect_model(_single_op_model(build), "predict", batch=batch, options=NO_OPTIMIZATION)
    op = "BatchMatMulV2" if case == "batched" else "MatMul"
    assert [s.op for s in result.program.steps if s.kernels] == [op]
    assert result.cost.flops == 2 * m_ * n_ * k_
    x_bytes = batch * (rows if case == "batched" else 1) * k
    assert result.cost.bytes_moved == 4 * (x_bytes + w_shape[0] * w_shape[1] + m_ * n_)
    assert not result.cost.no_rule


def test_bytes_moved_are_the_inputs_and_outputs_of_every_kernel():
    rows, cols = 8, 5

    def build(x):
        return tf.nn.relu(x + tf.constant(0.5, shape=[cols]))

    build.in_shape = [cols]
    result = inspect_model(_single_op_model(build), "predict", batch=rows, options=NO_OPTIMIZATION)
    assert [s.op for s in result.program.steps if s.kernels] == ["Add", "Relu"]
    add = rows * cols + cols + rows * cols  # x, the bias, x + bias
    relu = 2 * rows * cols
    assert result.cost.bytes_moved == 4 * (add + relu)
    assert result.cost.flops == 2 * rows * cols  # one + and one comparison per element
    assert result.cost.flops_by_type == {"Add": rows * cols, "Relu": rows * cols}


def test_an_op_without_a_flops_rule_is_estimated_and_named(monkeypatch):
    monkeypatch.setattr(get_opdef("Softmax"), "flops", None)

    def build(x):
        return tf.nn.softmax(x)

    build.in_shape = [6]
    result = inspect_model(_single_op_model(build), "predict", batch=4, options=NO_OPTIMIZATION)
    assert result.cost.no_rule == ["Softmax"]
    assert result.cost.flops == 4 * 6  # the fallback: one FLOP per element written
    assert "no FLOPs rule: Softmax (counted as 1 FLOP per output element)" in result.report()


def test_expression_ops_count_operators_and_calls():
    assert expression_ops("{0} + {1}") == 1
    assert expression_ops("({0} - {1}) * ({0} - {1})") == 3
    assert expression_ops("({T})-0.5 * {1} * {0} * {0} * {0}") == 4  # a literal's sign is free
    assert expression_ops("({0} < 0 ? ({T})0 : {0})") == 1  # selecting is free
    assert expression_ops("exp{sfx}({0})") == 1
    assert expression_ops(["{var} -= alpha * delta;"]) == 2
    attrs = {"use_nesterov": False}
    adam = get_opdef("ApplyAdam")
    ctx = type("Ctx", (), {"attrs": attrs, "out_shapes": [(10, 3)]})()
    # alpha (5: * sqrt - / -), m (4: += - * -), v (5: += * - * -), var (5: -= * / sqrt +)
    assert adam.flops(ctx) == 19 * 30


# -- the command line ---------------------------------------------------------------------------
def test_cli_inspect_prints_the_report_and_the_graph_after_a_pass(capsys):
    assert main(["inspect", str(IRIS), "--signature", "predict", "--dump-after", "specialize"]) == 0
    out = capsys.readouterr().out
    pipeline = CompileOptions().pipeline()
    k = [pass_name(p) for p in pipeline].index("specialize") + 1
    report, _, dump = out.partition(f"# graph after pass {k} (specialize)\n")
    assert ARENA.search(report) and dump
    graph = run_passes(signature_graph(IRIS, "predict")[2], pipeline[:k])
    assert dump == graph_text(graph)
    assert "hiddenlayer_0/MatMul = MatMul(features:0, hiddenlayer_0/kernel/read:0)" in dump


def test_cli_dump_after_writes_a_file(tmp_path, capsys):
    path = tmp_path / "after.txt"
    assert main(["inspect", str(DIGITS), "--dump-after", "none", "-o", str(path)]) == 0
    out = capsys.readouterr().out
    assert "graph after pass 0 (none) written to" in out
    text = path.read_text().splitlines()
    assert text[0] == "# graph after pass 0 (none)"
    # before any pass: every op the model built, one line each
    assert len(text) - 1 == len(signature_graph(DIGITS)[2].node_names()) > 200


def _model_file(tmp_path, body: str) -> Path:
    path = tmp_path / "only_predict.py"
    path.write_text("import tfc as tf\n\n\ndef signatures():\n" + body)
    return path


@pytest.mark.parametrize(
    "args,message",
    [
        (["--dump-after", "bogus"], "unknown pass 'bogus'; the pipeline runs prune, "),
        (["--passes", "none", "--dump-after", "cse"], "pass 'cse' does not run in this pipeline"),
        (["--dump-after", "99"], "pass position 99 is out of range"),
        (["--passes", "nonsense"], "Unknown optimization pass ['nonsense']"),
        (["--signature", "train"], "model only_predict has no 'train' signature"),
        (["--batch", "0"], "batch must be at least 1"),
    ],
)
def test_cli_inspect_errors_say_what_is_wrong(tmp_path, capsys, args, message):
    model = _model_file(
        tmp_path,
        "    x = tf.placeholder(tf.float32, [None, 3], name='x')\n"
        "    return {'predict': {'inputs': {'features': x}, 'outputs': {'y': x * 2.0}}}\n",
    )
    assert main(["inspect", str(model), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tfc inspect: error: ") and message in err


def test_cli_errors_for_a_missing_model_and_an_unknown_format(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope.py")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["graph", str(IRIS), "-o", str(tmp_path / "g.png")]) == 1
    assert "name a .dot, .svg or .html file" in capsys.readouterr().err


def test_svg_without_graphviz_fails_saying_how_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    for suffix in ("svg", "html"):
        out = tmp_path / f"g.{suffix}"
        assert main(["graph", str(IRIS), "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert "needs Graphviz's `dot`" in err and "install" in err and ".dot" in err
        assert not out.exists()
    assert main(["graph", str(IRIS), "-o", str(tmp_path / "g.dot")]) == 0  # DOT needs nothing


# -- pictures -----------------------------------------------------------------------------------
_NODE = re.compile(r'^\s*(u\d+) \[label="((?:[^"\\]|\\.)*)"', re.M)
_EDGE = re.compile(r"^\s*(u\d+) -> (u\d+)", re.M)


def _parse_dot(text: str) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """Nodes (id -> label lines) and edges of DOT written by graph_dot, structure checked."""
    assert text.startswith("digraph tfc {\n") and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")
    nodes = {m.group(1): m.group(2).split("\\n") for m in _NODE.finditer(text)}
    edges = [(m.group(1), m.group(2)) for m in _EDGE.finditer(text)]
    assert len(nodes) == len(set(_NODE.findall(text)))
    assert all(a in nodes and b in nodes and a != b for a, b in edges)
    return nodes, edges


def _ops_drawn(nodes: dict[str, list[str]]) -> int:
    """Ops a picture accounts for: one per op node, the count written in each scope box."""
    total = 0
    for label in nodes.values():
        box = re.fullmatch(r"(\d+) ops: .*", label[1]) if label[0].endswith("/") else None
        total += int(box.group(1)) if box else 1
    return total


def test_a_200_op_training_graph_is_drawn_as_a_few_scope_boxes():
    graph = program_graph(DIGITS, "train", after="none")[2]
    ops = len(graph.node_names())
    assert ops > 200
    nodes, edges = _parse_dot(graph_dot(graph))
    assert len(nodes) <= 30 and _ops_drawn(nodes) == ops
    boxes = {label[0]: node for node, label in nodes.items() if label[0].endswith("/")}
    assert {"gradients/", "Adam/", "hidden1/", "hidden2/", "logits/"} <= set(boxes)
    images = next(n for n, label in nodes.items() if label[:2] == ["Placeholder", "images"])
    # a tensor crossing a box's border is an edge, labeled with its shape
    assert (images, boxes["hidden1/"]) in edges
    assert (boxes["hidden1/"], boxes["hidden2/"]) in edges
    assert (boxes["gradients/"], boxes["Adam/"]) in edges

    opened, _ = _parse_dot(graph_dot(graph, expand=["gradients"]))
    assert len(nodes) < len(opened) and _ops_drawn(opened) == ops
    assert ["Fill", "Fill", "float32[]"] in opened.values()  # gradients/Fill, named in its cluster
    assert 'subgraph "cluster_gradients"' in graph_dot(graph, expand=["gradients"])
    everything, _ = _parse_dot(graph_dot(graph, expand=["all"]))
    assert len(everything) == ops


def test_graph_after_a_pass_shows_types_shapes_and_devices(tmp_path, capsys):
    path = tmp_path / "iris.dot"
    assert main(["graph", str(IRIS), "-o", str(path), "--after", "specialize"]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    nodes, _ = _parse_dot(path.read_text())
    assert ["Feed", "features", "float32[32,4]"] in nodes.values()
    with tf.Graph().as_default() as g, tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.nn.relu(x * 2.0, name="y")
    # without fusion, so the mul and the relu stay two nodes to draw
    options = tf.CompileOptions(disable=["fuse"])
    program = run_graph(y, {x: [[1.0, -2.0, 3.0]]}, graph=g, after="schedule", options=options)
    assert program.graph_attrs["schedule"] and "storage" not in program.node("y")
    nodes, edges = _parse_dot(graph_dot(program))
    assert ["Relu", "y", "float32[1,3]", "/device:CPU:0"] in nodes.values()
    assert len(edges) == 3  # x -> mul, the constant -> mul, mul -> y


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
def test_svg_and_html_render_and_the_page_is_self_contained(tmp_path):
    svg_path, html_path = tmp_path / "g.svg", tmp_path / "g.html"
    for path in (svg_path, html_path):
        args = ["graph", str(DIGITS), "-o", str(path), "--expand", "gradients"]
        assert main(args) == 0
    root = ET.fromstring(svg_path.read_text())
    drawn = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]
    nodes, _ = _parse_dot(graph_dot(program_graph(DIGITS)[2], expand=["gradients"]))
    assert sorted(g.get("id") for g in drawn) == sorted(nodes)
    page = html_path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<?xml" not in page
    for remote in ("<script", "src=", "<link", 'href="http', "url("):
        assert remote not in page
    graph = program_graph(DIGITS)[2]
    for name in graph.node_names():  # the index lists every op, linked to what draws it
        assert f"<code>{name}</code>" in page
    for target in set(re.findall(r'href="#(u\d+)"', page)):
        assert f'id="{target}"' in page
    # dot itself accepts the DOT
    proc = subprocess.run(
        ["dot", "-Tsvg"], input=graph_dot(graph), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "<svg" in proc.stdout


def test_digits_model_rows_are_the_training_split():
    import importlib.util

    spec = importlib.util.spec_from_file_location("digits_model", DIGITS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.training_rows()
    assert rows.shape == (1797 - 360, 65)
    assert 0.0 <= rows[:, :64].min() and rows[:, :64].max() <= 1.0
    assert set(rows[:, 64].astype(int)) == set(range(10))


def test_the_report_names_each_convolutions_cuda_form():
    """A stride-1 Conv2D wide enough for the implicit GEMM, and a stride-2 input gradient (a
    GEMM per stride phase) and a narrow one (the direct kernel): the choices CUDA makes."""

    def build(x):
        wide = tf.constant(0.5, shape=[3, 3, 32, 64])
        narrow = tf.constant(0.5, shape=[3, 3, 4, 64])
        y = tf.nn.conv2d(x, wide, [1, 1, 1, 1], "SAME")  # [4, 8, 8, 64]
        grad = tf.nn.conv2d_backprop_input([4, 16, 16, 32], wide, y, [1, 2, 2, 1], "SAME")
        small = tf.nn.conv2d_backprop_input([4, 16, 16, 4], narrow, y, [1, 2, 2, 1], "SAME")
        return tf.reduce_sum(grad) + tf.reduce_sum(small)

    build.in_shape = [8, 8, 32]
    for allow_tf32, cores in ((False, ""), (True, ", TF32 tensor cores")):
        options = CompileOptions(allow_tf32=allow_tf32)
        report = inspect_model(_single_op_model(build), "predict", 4, options).report()
        lines = [line.strip() for line in report.splitlines()]
        at = lines.index("convolutions on a GPU (the CUDA target's choice for each shape):")
        forms = sorted(line.split(": ", 1)[1] for line in lines[at + 1 : at + 4])
        assert forms == [
            "direct",
            # phases of 4 x 8 x 8 rows (256, whole tiles) at 4 phases; k: 2 x 2 taps x 64
            "implicit GEMM m=1024 n=32 k=256, 4 stride phases" + cores,
            "implicit GEMM m=256 n=64 k=288" + cores,
        ], report


def test_the_report_names_each_convolutions_host_kernel():
    """tfc_conv.h's kernel of each convolution as conv_algo chose it: a 1x1 one 64->64 with a
    residual over POINTWISE_GEMM_MIN_ROWS pixels as a GEMM on the image, a 3x3 one direct on its
    packed filter."""

    def build(x):
        f1 = tf.constant(0.5, shape=[1, 1, 64, 64])
        f3 = tf.constant(0.25, shape=[3, 3, 64, 8])
        bias = tf.constant(1.0, shape=[8])
        y = tf.nn.relu(tf.nn.conv2d(x, f1, 1, "VALID") + tf.constant(1.0, shape=[64]) + x)
        return tf.nn.conv2d(x, f3, 1, "SAME") + bias + y[..., :8] * 2.0

    build.in_shape = [128, 128, 64]
    report = inspect_model(_single_op_model(build), "predict", 1).report()
    lines = [line.strip() for line in report.splitlines()]
    at = lines.index("convolutions on the host (tfc_conv.h's choice for each shape):")
    forms = sorted(line.split(": ", 1)[1] for line in lines[at + 1 : at + 3])
    assert forms == [
        "forward, 1x1 GEMM on the image, blocks of 768 rows, residual epilogue",
        "forward, direct, packed filter",
    ], report


def test_cli_inspect_allow_tf32_marks_the_tensor_core_convolutions(tmp_path, capsys):
    model = tmp_path / "wide_conv.py"
    model.write_text(
        "import tfc as tf\n\n\n"
        "def signatures():\n"
        "    x = tf.placeholder(tf.float32, [None, 8, 8, 32], name='x')\n"
        "    y = tf.nn.conv2d(x, tf.constant(0.5, shape=[3, 3, 32, 64]), [1, 1, 1, 1], 'SAME')\n"
        "    return {'predict': {'inputs': {'features': x}, 'outputs': {'y': y}}}\n"
    )
    for flags, cores in (([], ""), (["--allow-tf32"], ", TF32 tensor cores")):
        assert main(["inspect", str(model), "--signature", "predict", "--batch", "4", *flags]) == 0
        out = capsys.readouterr().out
        assert f"  Conv2D Conv2D: implicit GEMM m=256 n=64 k=288{cores}\n" in out, out
