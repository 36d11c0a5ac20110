"""The compile driver: pass names, pipelines chosen by CompileOptions, run_passes' dumps and
options, and compile_program's one rendering per target. No C compiler runs here."""

import numpy as np
import pytest

import tfc as tf
from tfc.codegen.targets import CUDA, C
from tfc.compiler import (
    OPTIMIZATIONS,
    PASS_NAMES,
    PIPELINE,
    CompileOptions,
    compile_program,
    pass_name,
    pipeline,
    run_passes,
)
from tfc.ir.dump import graph_text
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.fuse import fuse_elementwise
from tfc.passes.prune import prune_graph
from tfc.passes.specialize import specialize_shapes


def _program():
    """The program graph of y = relu(x @ w + 1), in a graph of its own."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.ones((3, 2), np.float32), name="w")
        tf.nn.relu(tf.matmul(x, w) + 1.0, name="y")
    feeds = [FeedSpec(("x", 0), tf.float32, (4, 3))]
    return make_program_graph(graph, [("y", 0)], [], feeds)


def test_every_pass_has_the_name_users_give_it():
    assert [pass_name(p) for p in PIPELINE] == [
        "prune", "native", "specialize", "fold", "simplify", "hoist", "cse", "prune", "scale",
        "epilogue", "fuse", "pack", "schedule", "memory",
    ]  # fmt: skip
    assert sorted(PASS_NAMES.values()) == sorted(
        ["prune", "native", "specialize", "fold", "simplify", "hoist", "cse", "scale", "epilogue",
         "fuse", "pack", "place",
         "partition", "stage", "python", "schedule", "memory", "guard"]
    )  # fmt: skip
    assert [pass_name(p) for p in OPTIMIZATIONS] == [
        "fold", "simplify", "hoist", "cse", "scale", "epilogue", "fuse", "pack"
    ]  # fmt: skip


def test_compile_options_choose_the_optimizations_by_name():
    assert CompileOptions().pipeline() == PIPELINE
    names = [pass_name(p) for p in CompileOptions(disable=["fuse", "cse"]).pipeline()]
    assert names == [
        "prune", "native", "specialize", "fold", "simplify", "hoist", "prune", "scale",
        "epilogue", "pack", "schedule", "memory",
    ]  # fmt: skip
    assert CompileOptions(passes=["fuse"]).pipeline() == pipeline(["fuse"])
    assert fuse_elementwise not in pipeline([])
    with pytest.raises(ValueError, match=r"Unknown optimization pass \['place'\]"):
        CompileOptions(disable=["place"])
    with pytest.raises(ValueError, match=r"Unknown optimization pass \['fusion'\]"):
        pipeline(["fusion"])


def test_run_passes_dumps_the_graph_after_each_pass_under_its_name(tmp_path):
    graph = run_passes(_program(), [prune_graph, specialize_shapes], dump=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00_prune.txt", "01_specialize.txt"]
    assert (tmp_path / "01_specialize.txt").read_text() == graph_text(graph)


def test_run_passes_hands_each_pass_the_options_of_its_name():
    seen = []

    def record(graph, **kwargs):
        seen.append(kwargs)
        return graph

    run_passes(_program(), [record, record], options={"record": {"level": 2}, "fuse": {"x": 1}})
    assert seen == [{"level": 2}, {"level": 2}]  # a function outside the table: its own name


def test_a_program_is_rendered_for_its_target_only():
    graph = _program()
    c = compile_program(graph.copy(), PIPELINE, C, name="p")
    cuda = compile_program(graph.copy(), PIPELINE, CUDA, name="p")
    assert "__global__" not in c.source and "__global__" in cuda.source
    assert c.source is c.source  # rendered once, on first use
    assert c.graph.graph_attrs["schedule"] == [s.node for s in c.lowered.steps]
