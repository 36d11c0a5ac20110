"""fold_constants: constant subgraphs become Consts; never random, stateful or fed ones."""

import time

import numpy as np
from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.passes.fold import FOLD_LIMIT_BYTES, fold_constants


def _fold(fetches, targets=(), feeds=()):
    return run(fold_constants, front(program(fetches, feeds, targets)))


def test_a_constant_subgraph_becomes_one_const():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.constant(2.0, name="a")
    b = tf.constant([1.0, 2.0, 3.0], name="b")
    c = tf.add(tf.multiply(a, b, name="ab"), 1.0, name="c")
    tf.add(x, c, name="y")
    g = _fold([("y", 0)], feeds=[feed("x", (3,))])
    # before: x, a, b, ab, the 1.0, c, y (7 nodes); after: x, c (float32, as its inputs), y
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        c = Const() -> float32[3] {dtype=float32, value=[3.0, 5.0, 7.0]}
        y = Add(x:0, c:0) -> float32[3]
        fetches: y:0
        """,
    )
    assert g.node("c")["attrs"]["value"].dtype == np.float32


def test_a_fetched_node_that_folds_keeps_its_name():
    a = tf.constant([1, 2], name="a")
    tf.square(a, name="sq")
    g = _fold([("sq", 0)])
    assert_graph(
        g,
        """
        sq = Const() -> int32[2] {dtype=int32, value=[1, 4]}
        fetches: sq:0
        """,
    )


def test_zeros_and_ones_like_fold_from_the_static_shape():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    ones = tf.ones_like(x, name="ones")
    tf.reduce_sum(ones, name="count")
    g = _fold([("count", 0)], feeds=[feed("x", (5, 2))])
    assert_graph(
        g,
        """
        count = Const() -> float32[] {dtype=float32, value=10.0}
        fetches: count:0
        """,
    )  # the feed's values were never needed


def test_size_cap_keeps_big_fills_as_kernels():
    tf.zeros([4, 4], name="small")
    tf.zeros([4096, 4096], name="big")
    start = time.perf_counter()
    g = _fold([("small", 0), ("big", 0)])
    assert time.perf_counter() - start < 1.0  # the 64 MB value is never even computed
    # 64 MB stays one loop, not an embedded constant
    assert_graph(
        g,
        """
        small = Const() -> float32[4,4] {dtype=float32, value=[[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]}
        big/shape_as_tensor = Const() -> int32[2] {dtype=int32, value=[4096, 4096]}
        big/Const = Const() -> float32[] {dtype=float32, value=0.0}
        big = Fill(big/shape_as_tensor:0, big/Const:0) -> float32[4096,4096]
        fetches: small:0, big:0
        """,  # noqa: E501
    )
    largest = max(g.node(n)["attrs"]["value"].nbytes for n in g.nx if g.node(n)["op"] == "Const")
    assert largest <= FOLD_LIMIT_BYTES


def test_random_stateful_and_fed_ops_are_never_folded():
    tf.set_random_seed(1)
    r = tf.random_uniform([3], name="r")
    v = tf.Variable(tf.ones([3]), name="v")
    x = tf.placeholder(tf.float32, [3], name="x")
    two = tf.constant(2.0, name="two")
    tf.multiply(r, two, name="r2")
    tf.multiply(v, two, name="v2")
    tf.multiply(x, tf.multiply(two, 3.0, name="six"), name="x6")
    tf.assign_add(v, tf.constant([1.0, 1.0, 1.0], name="one"), name="inc")
    feeds = [feed("x", (3,))]
    g = _fold([("r2", 0), ("v2", 0), ("x6", 0)], targets=["inc"], feeds=feeds)
    # two * 3.0 folds into `six` (and the draw's range max - min into r/sub); nothing that
    # reads the random draw, the variable or the feed folds
    assert_graph(
        g,
        """
        r/shape = Const() -> int32[1] {dtype=int32, value=[3]}
        r/min = Const() -> float32[] {dtype=float32, value=0.0}
        r/RandomUniform = RandomUniform(r/shape:0) -> float32[3] {T=int32, dtype=float32, seed=1, seed2=3}
        r/sub = Const() -> float32[] {dtype=float32, value=1.0}
        r/mul = Mul(r/RandomUniform:0, r/sub:0) -> float32[3]
        r = Add(r/mul:0, r/min:0) -> float32[3]
        v = VariableV2() -> float32[3] {dtype=float32, shape=(3,)}
        v/read = Identity(v:0) -> float32[3] {_class=['loc:@v']}
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        two = Const() -> float32[] {dtype=float32, value=2.0}
        r2 = Mul(r:0, two:0) -> float32[3]
        v2 = Mul(v/read:0, two:0) -> float32[3]
        six = Const() -> float32[] {dtype=float32, value=6.0}
        x6 = Mul(x:0, six:0) -> float32[3]
        one = Const() -> float32[3] {dtype=float32, value=[1.0, 1.0, 1.0]}
        inc = AssignAdd(v:0, one:0) -> float32[3]
        fetches: r2:0, v2:0, x6:0
        targets: inc
        """,  # noqa: E501
    )


def test_control_inputs_from_stateful_ops_block_folding():
    v = tf.Variable(1.0, name="v")
    inc = tf.assign_add(v, 1.0, name="inc")
    with tf.control_dependencies([inc]):
        tf.add(tf.constant(1.0, name="c1"), 1.0, name="after")
    g = _fold([("after", 0)])
    assert_graph(
        g,
        """
        v = VariableV2() -> float32[] {dtype=float32, shape=()}
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        inc = AssignAdd(v:0, Const:0) -> float32[]
        c1 = Const(^inc) -> float32[] {dtype=float32, value=1.0}
        Const_1 = Const(^inc) -> float32[] {dtype=float32, value=1.0}
        after = Add(c1:0, Const_1:0, ^inc) -> float32[]
        fetches: after:0
        """,
    )


def test_a_folded_const_keeps_what_its_inputs_kept_running():
    # zeros_like(r * 2) folds, yet r's random stream must advance exactly as without the pass
    tf.set_random_seed(7)
    r = tf.random_uniform([4], name="r")
    r2 = tf.multiply(r, 2.0, name="r2")
    tf.add(tf.zeros_like(r2, name="z"), 1.0, name="z1")
    g = _fold([("z1", 0)])
    assert_graph(
        g,
        """
        r/shape = Const() -> int32[1] {dtype=int32, value=[4]}
        r/min = Const() -> float32[] {dtype=float32, value=0.0}
        r/RandomUniform = RandomUniform(r/shape:0) -> float32[4] {T=int32, dtype=float32, seed=7, seed2=3}
        r/sub = Const() -> float32[] {dtype=float32, value=1.0}
        r/mul = Mul(r/RandomUniform:0, r/sub:0) -> float32[4]
        r = Add(r/mul:0, r/min:0) -> float32[4]
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        r2 = Mul(r:0, Const:0) -> float32[4]
        z1 = Const(^r2) -> float32[4] {dtype=float32, value=[1.0, 1.0, 1.0, 1.0]}
        fetches: z1:0
        """,  # noqa: E501
    )


def test_a_failing_evaluation_stays_a_run_time_error():
    tf.floordiv(tf.constant(1, name="one"), tf.constant(0, name="zero"), name="q")
    g = _fold([("q", 0)])
    assert_graph(
        g,
        """
        one = Const() -> int32[] {dtype=int32, value=1}
        zero = Const() -> int32[] {dtype=int32, value=0}
        q = FloorDiv(one:0, zero:0) -> int32[]
        fetches: q:0
        """,
    )


def test_a_multi_output_node_becomes_one_const_per_used_output():
    x = tf.placeholder(tf.float32, [2], name="x")
    parts = tf.split(tf.constant([1.0, 2.0, 3.0, 4.0], name="c"), 2, name="split")
    tf.add(x, parts[0], name="y")
    g = _fold([("y", 0), ("split", 1)], feeds=[feed("x", (2,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        y = Add(x:0, split/folded_0:0) -> float32[2]
        split/folded_0 = Const() -> float32[2] {dtype=float32, value=[1.0, 2.0]}
        split/folded_1 = Const() -> float32[2] {dtype=float32, value=[3.0, 4.0]}
        fetches: y:0, split/folded_1:0
        """,
    )


def test_reading_an_uninitialized_variable_still_fails():
    # the folded value needs no read of v, but the read stays, so the run still fails
    v = tf.Variable([1.0, 2.0], name="v")
    tf.add(tf.zeros_like(tf.multiply(v, 2.0, name="twice"), name="z"), 1.0, name="z1")
    g = _fold([("z1", 0)])
    assert_graph(
        g,
        """
        v = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        v/read = Identity(v:0) -> float32[2] {_class=['loc:@v']}
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        twice = Mul(v/read:0, Const:0) -> float32[2]
        z1 = Const(^twice) -> float32[2] {dtype=float32, value=[1.0, 1.0]}
        fetches: z1:0
        """,
    )
