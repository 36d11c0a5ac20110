"""The passes on nested graphs (If's branches, While's cond and body): each pass works inside
them, never across their boundary, and shrinks or plans the op holding them. Before/Expected
graphs as text, as the other tests of passes; no C compiler."""

import numpy as np
from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.passes.cse import eliminate_common_subexpressions
from tfc.passes.fold import fold_constants
from tfc.passes.hoist import hoist_invariants
from tfc.passes.memory import plan_memory
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import schedule_graph
from tfc.passes.simplify import simplify_algebra
from tfc.passes.specialize import specialize_shapes
from tfc.reference.interp import Interpreter


def test_prune_drops_the_loop_variables_nothing_needs_and_their_inputs():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.placeholder(tf.float32, [3], name="y")
    tf.while_loop(
        lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a * x, b + y), (0, x, y), name="loop"
    )
    g = run(prune_graph, program([("loop", 1)], [feed("x", (3,)), feed("y", (3,))]))
    # b (and y, which only b read) are gone; i stays: the condition reads it
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        Const = Const() -> int32[] {dtype=int32, value=0}
        loop = While(Const:0, x:0, x:0) -> int32[], float32[3], int32[] {back_prop=True, loop_vars=2, maximum_iterations=False, parallel_iterations=10, shape_invariants=((), (3,))}
          body:
            loop/loop_var_3 = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/loop_var_4 = Feed() -> float32[3] {dtype=float32, index=1, shape=(3,)}
            loop/Const_1 = Const() -> int32[] {dtype=int32, value=1}
            loop/add = Add(loop/loop_var_3:0, loop/Const_1:0) -> int32[]
            loop/capture = Feed() -> float32[3] {dtype=float32, index=2, shape=(3,)}
            loop/mul = Mul(loop/loop_var_4:0, loop/capture:0) -> float32[3]
            fetches: loop/add:0, loop/mul:0
          cond:
            loop/loop_var = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/Const = Const() -> int32[] {dtype=int32, value=3}
            loop/Less = Less(loop/loop_var:0, loop/Const:0) -> bool[]
            fetches: loop/Less:0
        fetches: loop:1
        """,  # noqa: E501
    )


def test_specialize_bounds_the_loop_and_shapes_a_tensor_array_from_the_body():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    ta = tf.TensorArray(tf.float32, size=3, name="ta")  # no element shape: the write tells it
    _, ta = tf.while_loop(
        lambda i, t: i < 3, lambda i, t: (i + 1, t.write(i, x)), (0, ta), name="loop"
    )
    stacked = ta.stack()
    g = run(prune_graph, program([(stacked.op.name, 0)], [feed("x", (4, 2))]))
    g = run(specialize_shapes, g)
    assert_graph(
        g,
        """
        x = Feed() -> float32[4,2] {dtype=float32, index=0, shape=(4, 2)}
        ta/Const = Const() -> int32[] {dtype=int32, value=3}
        Const = Const() -> int32[] {dtype=int32, value=0}
        ta/TensorArrayV3 = TensorArrayV3(ta/Const:0) -> float32[3,4,2], int32[3] {clear_after_read=True, dtype=float32, dynamic_size=False, element_shape=(4, 2), tensor_array_name='ta'}
        loop = While(Const:0, ta/TensorArrayV3:0, ta/TensorArrayV3:1, x:0) -> int32[], float32[3,4,2], int32[3], int32[] {back_prop=True, bound=3, loop_vars=3, maximum_iterations=False, parallel_iterations=10, shape_invariants=((), (3, 4, 2), (3,))}
          body:
            loop/loop_var_3 = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/loop_var_4 = Feed() -> float32[3,4,2] {dtype=float32, index=1, shape=(3, 4, 2)}
            loop/loop_var_5 = Feed() -> int32[3] {dtype=int32, index=2, shape=(3,)}
            loop/Const_1 = Const() -> int32[] {dtype=int32, value=1}
            loop/add = Add(loop/loop_var_3:0, loop/Const_1:0) -> int32[]
            loop/TensorArrayWrite/capture = Feed() -> float32[4,2] {dtype=float32, index=3, shape=(4, 2)}
            loop/TensorArrayWrite/TensorArrayWriteV3 = TensorArrayWriteV3(loop/loop_var_4:0, loop/loop_var_5:0, loop/loop_var_3:0, loop/TensorArrayWrite/capture:0) -> float32[3,4,2] {dynamic_size=False, element_shape=(None, 2), tensor_array_name='ta'}
            fetches: loop/add:0, loop/TensorArrayWrite/TensorArrayWriteV3:0, loop/loop_var_5:0
          cond:
            loop/loop_var = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/Const = Const() -> int32[] {dtype=int32, value=3}
            loop/Less = Less(loop/loop_var:0, loop/Const:0) -> bool[]
            fetches: loop/Less:0
        TensorArrayStack/TensorArrayStack = TensorArrayStack(loop:1, loop:2) -> float32[3,4,2] {dynamic_size=False, element_shape=(None, 2), tensor_array_name='ta'}
        fetches: TensorArrayStack/TensorArrayStack:0
        """,  # noqa: E501
    )


def test_fold_and_cse_work_inside_a_body_and_never_across_its_boundary():
    x = tf.placeholder(tf.float32, [2], name="x")
    c = tf.constant([1.0, 2.0], name="c")
    outer = tf.add(x, c * 2.0, name="outer")

    def body(i, s):  # c * 2.0 twice (folded, then merged), and x + c * 2.0 as outside
        return i + 1, s + c * 2.0 + tf.add(x, c * 2.0, name="same")

    tf.while_loop(lambda i, s: i < 2, body, (0, outer), name="loop")
    g = front(program([("loop", 1)], [feed("x", (2,))]))
    g = run(eliminate_common_subexpressions, run(fold_constants, g))
    # loop/same equals `outer` but is computed in every iteration: it stays in the body
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        mul = Const() -> float32[2] {dtype=float32, value=[2.0, 4.0]}
        outer = Add(x:0, mul:0) -> float32[2]
        Const_1 = Const() -> int32[] {dtype=int32, value=0}
        loop = While(Const_1:0, outer:0, x:0) -> int32[], float32[2], int32[] {back_prop=True, bound=2, loop_vars=2, maximum_iterations=False, parallel_iterations=10, shape_invariants=((), (2,))}
          body:
            loop/loop_var_2 = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/loop_var_3 = Feed() -> float32[2] {dtype=float32, index=1, shape=(2,)}
            loop/Const_1 = Const() -> int32[] {dtype=int32, value=1}
            loop/add = Add(loop/loop_var_2:0, loop/Const_1:0) -> int32[]
            loop/mul = Const() -> float32[2] {dtype=float32, value=[2.0, 4.0]}
            loop/add_1 = Add(loop/loop_var_3:0, loop/mul:0) -> float32[2]
            loop/capture = Feed() -> float32[2] {dtype=float32, index=2, shape=(2,)}
            loop/same = Add(loop/capture:0, loop/mul:0) -> float32[2]
            loop/add_2 = Add(loop/add_1:0, loop/same:0) -> float32[2]
            fetches: loop/add:0, loop/add_2:0
          cond:
            loop/loop_var = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/Const = Const() -> int32[] {dtype=int32, value=2}
            loop/Less = Less(loop/loop_var:0, loop/Const:0) -> bool[]
            fetches: loop/Less:0
        fetches: loop:1
        """,  # noqa: E501
    )


def test_simplify_replaces_a_cond_on_a_constant_by_its_taken_branch():
    x = tf.placeholder(tf.float32, [2], name="x")
    flag = tf.placeholder_with_default(True, [], name="flag")  # not fed: the constant True
    y = tf.cond(flag, lambda: tf.square(x, name="sq"), lambda: tf.negative(x, name="neg"))
    tf.identity(y, name="z")
    g = run(simplify_algebra, front(program([("z", 0)], [feed("x", (2,))])))
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        cond/sq_1 = Square(x:0) -> float32[2]
        fetches: cond/sq_1:0
        """,
    )


def test_hoist_moves_loop_invariant_work_before_the_loop():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.placeholder(tf.float32, [3, 3], name="w")

    def body(i, h):  # transpose(w) * 2 is the same in every iteration
        return i + 1, tf.matmul(h, tf.transpose(w) * 2.0)

    tf.while_loop(lambda i, h: i < 4, body, (0, x), name="loop")
    g = run(hoist_invariants, front(program([("loop", 1)], [feed("x", (2, 3)), feed("w", (3, 3))])))
    assert_graph(
        g,
        """
        x = Feed() -> float32[2,3] {dtype=float32, index=0, shape=(2, 3)}
        w = Feed() -> float32[3,3] {dtype=float32, index=1, shape=(3, 3)}
        Const = Const() -> int32[] {dtype=int32, value=0}
        loop = While(Const:0, x:0, w:0, loop/mul_1:0) -> int32[], float32[2,3], int32[] {back_prop=True, bound=4, loop_vars=2, maximum_iterations=False, parallel_iterations=10, shape_invariants=((), (2, 3))}
          body:
            loop/loop_var_2 = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/loop_var_3 = Feed() -> float32[2,3] {dtype=float32, index=1, shape=(2, 3)}
            loop/Const_1 = Const() -> int32[] {dtype=int32, value=1}
            loop/add = Add(loop/loop_var_2:0, loop/Const_1:0) -> int32[]
            loop/transpose/capture = Feed() -> float32[3,3] {dtype=float32, index=2, shape=(3, 3)}
            loop/MatMul = MatMul(loop/loop_var_3:0, loop/mul/hoisted:0) -> float32[2,3] {transpose_a=False, transpose_b=False}
            loop/mul/hoisted = Feed() -> float32[3,3] {dtype=float32, index=3, shape=(3, 3)}
            fetches: loop/add:0, loop/MatMul:0
          cond:
            loop/loop_var = Feed() -> int32[] {dtype=int32, index=0, shape=()}
            loop/Const = Const() -> int32[] {dtype=int32, value=4}
            loop/Less = Less(loop/loop_var:0, loop/Const:0) -> bool[]
            fetches: loop/Less:0
        loop/transpose/perm_1 = Const() -> int32[2] {dtype=int32, value=[1, 0]}
        loop/transpose_1 = Transpose(w:0, loop/transpose/perm_1:0) -> float32[3,3]
        loop/Const_2_1 = Const() -> float32[] {dtype=float32, value=2.0}
        loop/mul_1 = Mul(loop/transpose_1:0, loop/Const_2_1:0) -> float32[3,3]
        fetches: loop:1
        """,  # noqa: E501
    )


def test_hoist_transposes_a_captured_matmul_operand_once_before_the_loop():
    """A body's matmul(h, w, transpose_b=True) of a captured w (an RNN gradient's dz W^T)
    reads w transposed once, before the loop: the GEMM packs a row-major operand; a
    transposed loop variable stays transposed (it changes every iteration)."""
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    w = tf.placeholder(tf.float32, [4, 3], name="w")

    def body(i, h):
        z = tf.matmul(h, w, transpose_b=True, name="hw")  # [2, 4]
        return i + 1, tf.matmul(z, h, transpose_a=True, name="zh")[:2, :3] + h

    out = tf.while_loop(lambda i, h: i < 4, body, (0, x), name="loop")[1]
    g = run(hoist_invariants, front(program([("loop", 1)], [feed("x", (2, 3)), feed("w", (4, 3))])))
    body = g.node("loop")["attrs"]["body"]
    assert body.node("loop/hw")["attrs"]["transpose_b"] is False
    assert body.node("loop/zh")["attrs"]["transpose_a"] is True
    (hoisted,) = [n for n in g.nx if g.op_type(n) == "Transpose"]
    assert g.input_edges(hoisted)[0] == ("w", 0) and g.node(hoisted)["shapes"] == [(3, 4)]
    assert (hoisted, 0) in g.input_edges("loop")
    assert not any(body.op_type(n) == "Transpose" for n in body.nx)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    wv = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    with tf.Session() as sess:
        got = sess.run(out, {x: xv, w: wv})
    h = xv.astype(np.float64)
    for _ in range(4):
        h = ((h @ wv.T).T @ h)[:2, :3] + h
    np.testing.assert_allclose(got, h, rtol=1e-5)


def test_hoist_keeps_random_ops_and_ops_that_can_fail_in_the_loop():
    x = tf.placeholder(tf.float32, [3], name="x")
    idx = tf.placeholder(tf.int32, [2], name="idx")

    def body(i, h):
        noise = tf.random_uniform([3], seed=1, name="noise")  # a new draw every iteration
        picked = tf.gather(x, idx, name="picked")  # can fail: outside it would also run
        return i + 1, h + noise + tf.reduce_sum(picked)

    tf.while_loop(lambda i, h: i < 2, body, (0, x), name="loop")
    g = front(program([("loop", 1)], [feed("x", (3,)), feed("idx", (2,), tf.int32)]))
    g = run(hoist_invariants, run(fold_constants, g))
    body = g.node("loop")["attrs"]["body"]
    kept = {body.op_type(n) for n in body.nx}
    assert {"RandomUniform", "GatherV2", "Sum"} <= kept  # Sum reads the gather: it stays too
    assert not any(g.op_type(n) in ("RandomUniform", "GatherV2") for n in g.nx)


def test_memory_plans_loop_variables_in_place_directly_or_double_buffered():
    """i += 1 and a = tanh(a) write over their current value in place (its readers run
    first); b takes c's value after every read of b; c = b * a is computed while c is still to
    be read (copied into b), so it needs a second buffer; the TensorArray is updated in place."""
    x = tf.placeholder(tf.float32, [4], name="x")

    def body(i, a, b, c, ta):
        return i + 1, tf.tanh(a, name="update"), c, b * a, ta.write(i, b)

    ta = tf.TensorArray(tf.float32, 3, element_shape=[4])
    out = tf.while_loop(lambda i, *r: i < 3, body, (0, x, x * 2.0, x * 3.0, ta), name="loop")
    stacked = out[4].stack()
    fetches = [("loop", k) for k in range(1, 5)] + [(stacked.op.name, 0)]
    g = run(plan_memory, run(schedule_graph, front(program(fetches, [feed("x", (4,))]))))
    body = g.node("loop")["attrs"]["body"]
    assert body.graph_attrs["carried"] == ["direct", "direct", "direct", "double", "alias", "alias"]
    # and the values are right
    xv = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    tensors = [out[1], out[2], out[3], stacked]
    with tf.Session() as sess:
        got = sess.run(tensors, {x: xv})
    want = Interpreter().run(tensors, {x: xv})
    a, b, c, rows = xv, 2 * xv, 3 * xv, []
    for _ in range(3):
        rows.append(b)
        a, b, c = np.tanh(a), c, b * a
    for g_, w_, n_ in zip(got, want, [a, b, c, np.stack(rows)]):
        np.testing.assert_allclose(g_, w_, rtol=1e-6)
        np.testing.assert_allclose(g_, n_, rtol=1e-6)
