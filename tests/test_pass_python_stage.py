"""stage_python_ops and require_native_ops: a program with ops only Python runs, cut into native
and Python stages; native builds refusing such ops by name. No C compiler."""

import numpy as np
import pytest
from passcheck import assert_graph, feed, program, run

import tfc as tf
from tfc.compiler import CLUSTER_PLACEMENT, PIPELINE, PYTHON_CUT
from tfc.passes.native import NativeBuildError, require_native_ops
from tfc.passes.prune import prune_graph
from tfc.passes.python_stage import NATIVE, PYTHON, stage_python_ops, with_feed_shapes


def _stages(fetches, feeds=(), targets=()):
    graph = run(prune_graph, program(fetches, feeds, targets))
    return run(stage_python_ops, graph).graph_attrs["python_stages"]


def test_native_python_native_with_hand_offs_between_them():
    x = tf.placeholder(tf.float32, [None], name="x")
    doubled = tf.multiply(x, 2.0, name="doubled")
    values, _ = tf.unique(doubled, name="unique")
    tf.add(values, 1.0, name="plus_one")
    stages = _stages([("plus_one", 0)], [feed("x", (3,))])
    key = "/device:NATIVE:0@s0;/device:PYTHON:0@s1;doubled:0"
    key2 = "/device:PYTHON:0@s1;/device:NATIVE:0@s2;unique:0"
    assert [(s.device, s.inputs, s.outputs) for s in stages] == [
        (NATIVE, [("feed", 0)], [("cut", key)]),
        (PYTHON, [("cut", key)], [("cut", key2)]),
        (NATIVE, [("cut", key2)], [("fetch", 0)]),
    ]
    # the native stage after the Python one reads a shape known only when that one has run
    assert_graph(
        stages[2].graph,
        """
        Const_1 = Const() -> float32[] {dtype=float32, value=1.0}
        plus_one = Add(unique/_recv_0_from_local_0_python_0_s1:0, Const_1:0) -> float32[?]
        unique/_recv_0_from_local_0_python_0_s1 = Feed() -> float32[?] {dtype=float32, index=0, shape=(None,)}
        fetches: plus_one:0
        """,  # noqa: E501
    )
    concrete = with_feed_shapes(stages[2], [(2,)])
    assert concrete.graph_attrs["feeds"][0].shape == (2,)
    assert concrete.node("unique/_recv_0_from_local_0_python_0_s1")["shapes"] == [(2,)]
    assert stages[2].graph.graph_attrs["feeds"][0].shape == (None,)  # the stage itself stays


def test_a_program_without_python_ops_is_left_as_it_was():
    x = tf.placeholder(tf.float32, [2], name="x")
    tf.negative(x, name="y")
    tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], name="check")
    assert _stages([("y", 0)], [feed("x", (2,))], ["check/Assert"]) == []


def test_fetched_strings_come_from_a_python_stage():
    tf.constant("hello", name="greeting")
    tf.constant([1.0], name="numbers")
    stages = _stages([("greeting", 0), ("numbers", 0)])
    assert [s.device for s in stages] == [PYTHON]
    assert_graph(
        stages[0].graph,
        """
        greeting = Const() -> string[] {dtype=string, value=b'hello'}
        numbers = Const() -> float32[1] {dtype=float32, value=[1.0]}
        greeting/fetch_0 = Identity(greeting:0) -> string[]
        fetches: greeting/fetch_0:0, numbers:0
        """,
    )


def test_variables_are_in_every_native_stage_that_uses_them():
    w = tf.Variable(np.ones(3, np.float32), name="w")
    picked = tf.boolean_mask(w, w > 0.5, name="picked")
    tf.assign_sub(w, tf.reduce_sum(picked) * tf.ones(3), name="update")
    stages = _stages([("update", 0)])
    assert [s.device for s in stages] == [NATIVE, PYTHON, NATIVE]
    assert all("w" in stages[i].graph.nx for i in (0, 2))


@pytest.mark.parametrize(
    "build, node, why",
    [
        (lambda x: tf.py_func(np.sin, [x], tf.float32, name="pf"), "pf",
         "it calls a Python function"),
        (lambda x: tf.unique(x, name="u")[0], "u", "its output shape depends on its input values"),
        (lambda x: tf.strings.length(tf.as_string(x, name="text")), "text",
         "it works on tf.string values"),
        (lambda x: tf.Print(x, [tf.as_string(x)], name="p"), "as_string_of_x",
         "it works on tf.string values"),
        (lambda x: tf.identity(tf.constant("s"), name="s"), "s", "it works on tf.string"),
    ],
)  # fmt: skip
def test_native_builds_name_the_op_and_why(build, node, why):
    x = tf.placeholder(tf.float32, [2], name="x")
    if node == "as_string_of_x":
        with tf.name_scope(None):
            y = tf.Print(x, [tf.as_string(x, name="as_string_of_x")], name="p")
    else:
        y = build(x)
    graph = run(prune_graph, program([(y.op.name, 0)], [feed("x", (2,))]))
    with pytest.raises(NativeBuildError, match=f"Op '{node}' .* cannot be compiled into a native "
                       f"program: {why}") as e:  # fmt: skip
        require_native_ops(graph)
    assert "Only a tf.Session can run it" in str(e.value)


def test_a_fetched_string_is_refused_too():
    tf.constant(["a"], name="words")
    graph = run(prune_graph, program([("words", 0)]))
    with pytest.raises(NativeBuildError, match="Op 'words' .* fetches its output 0, a tf.string"):
        require_native_ops(graph)


def test_print_and_assert_with_constant_strings_are_native():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.Print(x, [x, "a constant string", tf.constant(["s", "t"])], message="m", name="p")
    check = tf.Assert(x[0] > 0, ["text", x], name="a")
    graph = run(prune_graph, program([(y.op.name, 0)], [feed("x", (2,))], [check.name]))
    assert run(require_native_ops, graph) is graph


def test_every_native_pipeline_checks_for_python_ops_right_after_pruning():
    for pipeline in (PIPELINE, CLUSTER_PLACEMENT):
        assert pipeline[:2] == [prune_graph, require_native_ops]
    assert PYTHON_CUT == [prune_graph, stage_python_ops]
