"""eliminate_common_subexpressions: duplicates computed once; stateful and random ops never."""

from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.ir.dump import program_text
from tfc.passes.cse import eliminate_common_subexpressions


def _cse(fetches, targets=(), feeds=()):
    return run(eliminate_common_subexpressions, front(program(fetches, feeds, targets)))


def test_the_same_matmul_written_twice_is_computed_once():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(tf.ones([3, 2]), name="w")
    a = tf.matmul(x, w, name="a")
    b = tf.matmul(x, w, name="b")  # the same product, written again
    tf.add(tf.nn.relu(a, name="ra"), tf.nn.relu(b, name="rb"), name="y")
    g = _cse([("y", 0)], feeds=[feed("x", (4, 3))])
    # relu(b) became relu(a) and merged too
    assert_graph(
        g,
        """
        x = Feed() -> float32[4,3] {dtype=float32, index=0, shape=(4, 3)}
        w = VariableV2() -> float32[3,2] {dtype=float32, shape=(3, 2)}
        w/read = Identity(w:0) -> float32[3,2] {_class=['loc:@w']}
        a = MatMul(x:0, w/read:0) -> float32[4,2] {transpose_a=False, transpose_b=False}
        ra = Relu(a:0) -> float32[4,2]
        y = Add(ra:0, ra:0) -> float32[4,2]
        fetches: y:0
        """,
    )


def test_a_recomputed_loss_collapses_to_a_fixed_point():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    w = tf.Variable(tf.ones([4, 3]), name="w")

    def loss(name):
        logits = tf.matmul(x, w)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name=f"{name}_xent"
        )
        return tf.reduce_mean(xent, name=name)

    loss("loss")
    loss("summary_loss")  # the same loss built again, e.g. for a summary
    feeds = [feed("x", (2, 4)), feed("labels", (2,), tf.int32)]
    fetches = [("loss", 0), ("summary_loss", 0)]
    assert len(front(program(fetches, feeds)).nx) == 12
    g = _cse(fetches, feeds=feeds)
    # the duplicate's MatMul, cross entropy and axes Const merged away; both were fetched: the
    # second stays as an Identity of the first (no kernel)
    assert_graph(
        g,
        """
        x = Feed() -> float32[2,4] {dtype=float32, index=0, shape=(2, 4)}
        labels = Feed() -> int32[2] {dtype=int32, index=1, shape=(2,)}
        w = VariableV2() -> float32[4,3] {dtype=float32, shape=(4, 3)}
        w/read = Identity(w:0) -> float32[4,3] {_class=['loc:@w']}
        MatMul = MatMul(x:0, w/read:0) -> float32[2,3] {transpose_a=False, transpose_b=False}
        loss_xent/loss_xent = SparseSoftmaxCrossEntropyWithLogits(MatMul:0, labels:0) -> float32[2], float32[2,3]
        Const = Const() -> int32[1] {dtype=int32, value=[0]}
        loss = Mean(loss_xent/loss_xent:0, Const:0) -> float32[] {keep_dims=False}
        summary_loss = Identity(loss:0) -> float32[]
        fetches: loss:0, summary_loss:0
        """,  # noqa: E501
    )
    again = run(eliminate_common_subexpressions, g.copy())
    assert program_text(again) == program_text(g)  # a fixed point


def test_random_ops_are_never_merged():
    a = tf.random_uniform([3], seed=1, name="a")
    b = tf.random_uniform([3], seed=1, name="b")  # same attributes, still two streams
    tf.add(a, b, name="s")
    g = _cse([("s", 0)])
    assert_graph(
        g,
        """
        a/shape = Const() -> int32[1] {dtype=int32, value=[3]}
        a/min = Const() -> float32[] {dtype=float32, value=0.0}
        a/max = Const() -> float32[] {dtype=float32, value=1.0}
        a/RandomUniform = RandomUniform(a/shape:0) -> float32[3] {T=int32, dtype=float32, seed=87654321, seed2=1}
        a/sub = Sub(a/max:0, a/min:0) -> float32[]
        a/mul = Mul(a/RandomUniform:0, a/sub:0) -> float32[3]
        a = Add(a/mul:0, a/min:0) -> float32[3]
        b/RandomUniform = RandomUniform(a/shape:0) -> float32[3] {T=int32, dtype=float32, seed=87654321, seed2=1}
        b/mul = Mul(b/RandomUniform:0, a/sub:0) -> float32[3]
        b = Add(b/mul:0, a/min:0) -> float32[3]
        s = Add(a:0, b:0) -> float32[3]
        fetches: s:0
        """,  # noqa: E501
    )


def test_stateful_ops_are_never_merged():
    x1 = tf.placeholder(tf.float32, [2], name="x1")
    x2 = tf.placeholder(tf.float32, [2], name="x2")
    v1 = tf.Variable([1.0, 2.0], name="v1")
    tf.Variable([1.0, 2.0], name="v2")
    tf.assign_add(v1, [1.0, 1.0], name="i1")
    tf.assign_add(v1, [1.0, 1.0], name="i2")  # twice the same update: it runs twice
    tf.add(tf.exp(x1, name="e1"), tf.exp(x2, name="e2"), name="s")
    feeds = [feed("x1", (2,)), feed("x2", (2,))]
    g = _cse([("s", 0), ("v2/read", 0)], targets=["i1", "i2"], feeds=feeds)
    assert_graph(
        g,
        """
        x1 = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        x2 = Feed() -> float32[2] {dtype=float32, index=1, shape=(2,)}
        v1 = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        v2 = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        v2/read = Identity(v2:0) -> float32[2] {_class=['loc:@v2']}
        Const = Const() -> float32[2] {dtype=float32, value=[1.0, 1.0]}
        i1 = AssignAdd(v1:0, Const:0) -> float32[2]
        i2 = AssignAdd(v1:0, Const:0) -> float32[2]
        e1 = Exp(x1:0) -> float32[2]
        e2 = Exp(x2:0) -> float32[2]
        s = Add(e1:0, e2:0) -> float32[2]
        fetches: s:0, v2/read:0
        targets: i1, i2
        """,
    )


def test_constants_merge_only_when_identical():
    x = tf.placeholder(tf.float32, [2], name="x")
    parts = [
        x * tf.constant([1.5, 2.0], name="c1"),
        x * tf.constant([1.5, 2.0], name="c2"),  # equal: merges
        x * tf.constant([1.5, 2.0], dtype=tf.float32, name="c3"),  # equal: merges
        x * tf.constant([0.0, 2.0], name="pos"),
        x * tf.constant([-0.0, 2.0], name="neg"),  # different bits from `pos`
    ]
    tf.add_n(parts, name="s")
    g = _cse([("s", 0)], feeds=[feed("x", (2,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        c1 = Const() -> float32[2] {dtype=float32, value=[1.5, 2.0]}
        mul = Mul(x:0, c1:0) -> float32[2]
        pos = Const() -> float32[2] {dtype=float32, value=[0.0, 2.0]}
        mul_3 = Mul(x:0, pos:0) -> float32[2]
        neg = Const() -> float32[2] {dtype=float32, value=[-0.0, 2.0]}
        mul_4 = Mul(x:0, neg:0) -> float32[2]
        s = AddN(mul:0, mul:0, mul:0, mul_3:0, mul_4:0) -> float32[2]
        fetches: s:0
        """,
    )


def test_constants_of_different_dtypes_stay_apart():
    d1 = tf.constant([1, 2], dtype=tf.int32, name="d1")
    d2 = tf.constant([1, 2], dtype=tf.int64, name="d2")
    tf.add(tf.cast(d1, tf.float32, name="f1"), tf.cast(d2, tf.float32, name="f2"), name="t")
    g = _cse([("t", 0)])
    assert_graph(
        g,
        """
        d1 = Const() -> int32[2] {dtype=int32, value=[1, 2]}
        d2 = Const() -> int64[2] {dtype=int64, value=[1, 2]}
        f1 = Cast(d1:0) -> float32[2] {DstT=float32, SrcT=int32}
        f2 = Cast(d2:0) -> float32[2] {DstT=float32, SrcT=int64}
        t = Add(f1:0, f2:0) -> float32[2]
        fetches: t:0
        """,
    )


def test_control_inputs_must_match():
    x = tf.placeholder(tf.float32, [2], name="x")
    v = tf.Variable([0.0, 0.0], name="v")
    inc = tf.assign_add(v, [1.0, 1.0], name="inc")
    a = tf.exp(x, name="a")
    with tf.control_dependencies([inc]):
        b = tf.exp(x, name="b")  # runs after inc: not the same node as `a`
    tf.add(a, b, name="s")
    g = _cse([("s", 0)], feeds=[feed("x", (2,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        v = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        Const = Const() -> float32[2] {dtype=float32, value=[1.0, 1.0]}
        inc = AssignAdd(v:0, Const:0) -> float32[2]
        a = Exp(x:0) -> float32[2]
        b = Exp(x:0, ^inc) -> float32[2]
        s = Add(a:0, b:0) -> float32[2]
        fetches: s:0
        """,
    )


def test_commutative_inputs_match_in_either_order():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.placeholder(tf.float32, [2], name="y")
    parts = [
        tf.add(x, y, name="xy"),
        tf.add(y, x, name="yx"),  # the same sum
        tf.subtract(x, y, name="x_y"),
        tf.subtract(y, x, name="y_x"),  # not the same difference
    ]
    tf.add_n(parts, name="s")
    g = _cse([("s", 0)], feeds=[feed("x", (2,)), feed("y", (2,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        y = Feed() -> float32[2] {dtype=float32, index=1, shape=(2,)}
        xy = Add(x:0, y:0) -> float32[2]
        x_y = Sub(x:0, y:0) -> float32[2]
        y_x = Sub(y:0, x:0) -> float32[2]
        s = AddN(xy:0, xy:0, x_y:0, y_x:0) -> float32[2]
        fetches: s:0
        """,
    )


def test_merged_fetches_and_targets_stay_valid():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.square(x, name="a")
    tf.square(x, name="b")
    tf.exp(a, name="c")
    feeds = [feed("x", (3,))]
    g = _cse([("c", 0)], targets=["b"], feeds=feeds)  # b is only run, not fetched
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        a = Square(x:0) -> float32[3]
        c = Exp(a:0) -> float32[3]
        fetches: c:0
        targets: a
        """,
    )
    g = _cse([("b", 0), ("c", 0)], feeds=feeds)  # the fetch of b moves to `a`
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        a = Square(x:0) -> float32[3]
        c = Exp(a:0) -> float32[3]
        fetches: a:0, c:0
        """,
    )


def test_multi_output_duplicates_with_colliding_fetches_are_left_alone():
    x = tf.placeholder(tf.float32, [4], name="x")
    tf.split(x, 2, name="a")
    tf.split(x, 2, name="b")
    g = _cse([("a", 0), ("b", 0), ("b", 1)], feeds=[feed("x", (4,))])
    # b:0 cannot move to a:0, fetched already
    assert_graph(
        g,
        """
        x = Feed() -> float32[4] {dtype=float32, index=0, shape=(4,)}
        a/split_dim = Const() -> int32[] {dtype=int32, value=0}
        a = Split(a/split_dim:0, x:0) -> float32[2], float32[2] {num_split=2}
        b = Split(a/split_dim:0, x:0) -> float32[2], float32[2] {num_split=2}
        fetches: a:0, b:0, b:1
        """,
    )
