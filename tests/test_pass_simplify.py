"""simplify_algebra: identities removed bit-exactly; variable reads and effects stay."""

import pytest
from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.ir.dump import program_text
from tfc.ops.registry import apply_op
from tfc.passes.simplify import simplify_algebra


def _simplify(fetches, targets=(), feeds=()):
    return run(simplify_algebra, front(program(fetches, feeds, targets)))


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x * 1.0,
        lambda x: 1.0 * x,
        lambda x: x / 1.0,
        lambda x: x - 0.0,
        lambda x: x + tf.constant(-0.0),
        lambda x: tf.constant(-0.0) + x,
        lambda x: x * tf.ones([2, 3]),
        lambda x: tf.nn.bias_add(x, tf.constant([-0.0, -0.0, -0.0])),
    ],
)
def test_arithmetic_identities_disappear(make):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    tf.exp(make(x), name="y")
    g = _simplify([("y", 0)], feeds=[feed("x", (2, 3))])
    # the operation and its constant are gone
    assert_graph(
        g,
        """
        x = Feed() -> float32[2,3] {dtype=float32, index=0, shape=(2, 3)}
        y = Exp(x:0) -> float32[2,3]
        fetches: y:0
        """,
    )


def test_integer_identities_disappear():
    i = tf.placeholder(tf.int32, [4], name="i")
    tf.abs(((i + 0) * 1 - 0) // 1, name="y")
    g = _simplify([("y", 0)], feeds=[feed("i", (4,), tf.int32)])
    assert_graph(
        g,
        """
        i = Feed() -> int32[4] {dtype=int32, index=0, shape=(4,)}
        y = Abs(i:0) -> int32[4]
        fetches: y:0
        """,
    )


def test_what_is_not_an_identity_stays():
    x = tf.placeholder(tf.float32, [4], name="x")
    tf.add(x, tf.zeros([3, 4], name="zeros"), name="widened")  # broadcasts to [3, 4]: not x
    tf.add(x, 0.0, name="plus_zero")  # -0.0 + 0.0 is +0.0: not x, bit for bit
    tf.subtract(x, -0.0, name="minus_neg_zero")
    tf.multiply(x, 2.0, name="times_two")
    tf.multiply(x, tf.constant([1.0, 1.0, 2.0, 1.0], name="ones_but_one"), name="mixed")
    names = ["widened", "plus_zero", "minus_neg_zero", "times_two", "mixed"]
    g = _simplify([(n, 0) for n in names], feeds=[feed("x", (4,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[4] {dtype=float32, index=0, shape=(4,)}
        zeros/shape_as_tensor = Const() -> int32[2] {dtype=int32, value=[3, 4]}
        zeros/Const = Const() -> float32[] {dtype=float32, value=0.0}
        zeros = Fill(zeros/shape_as_tensor:0, zeros/Const:0) -> float32[3,4]
        widened = Add(x:0, zeros:0) -> float32[3,4]
        Const = Const() -> float32[] {dtype=float32, value=0.0}
        plus_zero = Add(x:0, Const:0) -> float32[4]
        Const_1 = Const() -> float32[] {dtype=float32, value=-0.0}
        minus_neg_zero = Sub(x:0, Const_1:0) -> float32[4]
        Const_2 = Const() -> float32[] {dtype=float32, value=2.0}
        times_two = Mul(x:0, Const_2:0) -> float32[4]
        ones_but_one = Const() -> float32[4] {dtype=float32, value=[1.0, 1.0, 2.0, 1.0]}
        mixed = Mul(x:0, ones_but_one:0) -> float32[4]
        fetches: widened:0, plus_zero:0, minus_neg_zero:0, times_two:0, mixed:0
        """,
    )


def test_transposes_compose_and_cancel():
    x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
    t1 = tf.transpose(x, [1, 2, 0], name="t1")
    tf.transpose(t1, [2, 0, 1], name="t2")  # the inverse of t1: nothing remains
    tf.transpose(t1, [1, 0, 2], name="t3")  # one transpose by the composed perm
    tf.transpose(x, [0, 1, 2], name="t4")  # the identity perm
    g = _simplify([("t2", 0), ("t3", 0), ("t4", 0)], feeds=[feed("x", (2, 3, 4))])
    # t2's fetch moved to x; t4 stays as an Identity (no kernel) so x is not fetched twice
    assert_graph(
        g,
        """
        x = Feed() -> float32[2,3,4] {dtype=float32, index=0, shape=(2, 3, 4)}
        t3 = Transpose(x:0, t3/perm_1:0) -> float32[4,3,2]
        t4 = Identity(x:0) -> float32[2,3,4]
        t3/perm_1 = Const() -> int32[3] {dtype=int32, value=[2, 1, 0]}
        fetches: x:0, t3:0, t4:0
        """,
    )


def test_reshapes_collapse():
    x = tf.placeholder(tf.float32, [2, 6], name="x")
    r1 = tf.reshape(x, [3, 4], name="r1")
    tf.reshape(tf.expand_dims(r1, 0, name="e"), [12], name="r2")
    tf.reshape(x, [2, 6], name="same")
    g = _simplify([("r2", 0), ("same", 0)], feeds=[feed("x", (2, 6))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[2,6] {dtype=float32, index=0, shape=(2, 6)}
        r2/shape = Const() -> int32[1] {dtype=int32, value=[12]}
        r2 = Reshape(x:0, r2/shape:0) -> float32[12]
        fetches: r2:0, x:0
        """,
    )  # the fetch of `same` moved to its input


def test_identity_chains_no_op_casts_and_squeezes_disappear():
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.identity(tf.stop_gradient(tf.identity(x, name="i1"), name="sg"), name="i2")
    c = apply_op("Cast", [a], {"SrcT": tf.float32, "DstT": tf.float32}, name="c").outputs[0]
    tf.negative(tf.squeeze(c, name="sq"), name="y")  # x has no dimension of size 1
    g = _simplify([("y", 0)], feeds=[feed("x", (3,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        y = Neg(x:0) -> float32[3]
        fetches: y:0
        """,
    )


def _training_graph():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    out = tf.identity(tf.matmul(x, w), name="out")
    tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(out), name="step")


def test_a_written_variable_keeps_its_read():
    _training_graph()
    train = _simplify([("out", 0)], targets=["step"], feeds=[feed("x", (1, 2))])
    # w is written: its read stays; the other identities go (`out` is fetched: the fetch moved)
    assert_graph(
        train,
        """
        x = Feed() -> float32[1,2] {dtype=float32, index=0, shape=(1, 2)}
        w = VariableV2() -> float32[2,1] {dtype=float32, shape=(2, 1)}
        w/read = Identity(w:0) -> float32[2,1] {_class=['loc:@w']}
        MatMul = MatMul(x:0, w/read:0) -> float32[1,1] {transpose_a=False, transpose_b=False}
        gradients/grad_ys_0 = Const() -> float32[] {dtype=float32, value=1.0}
        gradients/Shape = Const() -> int32[0] {dtype=int32, value=[]}
        gradients/Fill = Fill(gradients/Shape:0, gradients/grad_ys_0:0) -> float32[]
        gradients/Sum_grad/Const = Const() -> int32[2] {dtype=int32, value=[1, 1]}
        gradients/Sum_grad/Reshape = Reshape(gradients/Fill:0, gradients/Sum_grad/Const:0) -> float32[1,1]
        gradients/Sum_grad/Tile = Tile(gradients/Sum_grad/Reshape:0, gradients/Sum_grad/Tile/const_input_1:0) -> float32[1,1]
        gradients/MatMul_grad/MatMul_1 = MatMul(x:0, gradients/Sum_grad/Tile:0) -> float32[2,1] {transpose_a=True, transpose_b=False}
        step/learning_rate = Const() -> float32[] {dtype=float32, value=0.1}
        step/update_w/ApplyGradientDescent = ApplyGradientDescent(w:0, step/learning_rate:0, gradients/MatMul_grad/MatMul_1:0) -> float32[2,1] {_class=['loc:@w']}
        step = NoOp(^step/update_w/ApplyGradientDescent) -> ()
        gradients/Sum_grad/Tile/const_input_1 = Const() -> int32[2] {dtype=int32, value=[1, 1]}
        fetches: MatMul:0
        targets: step
        """,  # noqa: E501
    )


def test_a_variable_nothing_writes_is_read_through_a_plain_alias():
    _training_graph()
    predict = _simplify([("out", 0)], feeds=[feed("x", (1, 2))])
    assert_graph(
        predict,
        """
        x = Feed() -> float32[1,2] {dtype=float32, index=0, shape=(1, 2)}
        w = VariableV2() -> float32[2,1] {dtype=float32, shape=(2, 1)}
        MatMul = MatMul(x:0, w:0) -> float32[1,1] {transpose_a=False, transpose_b=False}
        fetches: MatMul:0
        """,
    )


def test_a_written_variable_is_not_read_through_a_removed_copy():
    v = tf.Variable([1.0, 2.0], name="v")
    snapshot = tf.multiply(v, 1.0, name="snapshot")  # a copy taken before the update
    inc = tf.assign_add(v, [10.0, 10.0], name="inc")
    with tf.control_dependencies([inc]):
        tf.add(snapshot, 0, name="after")
    g = _simplify([("after", 0)])
    assert_graph(
        g,
        """
        v = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        v/read = Identity(v:0) -> float32[2] {_class=['loc:@v']}
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        snapshot = Mul(v/read:0, Const:0) -> float32[2]
        Const_1 = Const() -> float32[2] {dtype=float32, value=[10.0, 10.0]}
        inc = AssignAdd(v:0, Const_1:0) -> float32[2]
        Const_2 = Const(^inc) -> float32[] {dtype=float32, value=0.0}
        after = Add(snapshot:0, Const_2:0, ^inc) -> float32[2]
        fetches: after:0
        """,
    )  # v * 1 must not become v itself


def test_control_inputs_that_order_effects_are_kept():
    v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [], name="x")
    inc = tf.assign_add(v, 1.0, name="inc")
    with tf.control_dependencies([inc]):
        y = tf.identity(x, name="y")  # fetching y runs inc
    tf.exp(y, name="z")
    g = _simplify([("z", 0)], feeds=[feed("x", ())])
    assert_graph(
        g,
        """
        v = VariableV2() -> float32[] {dtype=float32, shape=()}
        x = Feed() -> float32[] {dtype=float32, index=0, shape=()}
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        inc = AssignAdd(v:0, Const:0) -> float32[]
        y = Identity(x:0, ^inc) -> float32[]
        z = Exp(y:0) -> float32[]
        fetches: z:0
        """,
    )


def test_a_fetch_is_never_duplicated():
    x = tf.placeholder(tf.float32, [2], name="x")
    e = tf.exp(x, name="e")
    tf.multiply(e, 1.0, name="f")
    g = _simplify([("e", 0), ("f", 0)], feeds=[feed("x", (2,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        e = Exp(x:0) -> float32[2]
        f = Identity(e:0) -> float32[2]
        fetches: e:0, f:0
        """,
    )  # f stays as an Identity: no kernel, the value is copied out
    again = run(simplify_algebra, g.copy())
    assert program_text(again) == program_text(g)  # stable


def test_select_on_a_constant_condition_picks_its_branch():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.where(tf.constant([True, True, True]), x, tf.exp(x, name="unused"), name="pick")
    tf.negative(y, name="n")
    g = _simplify([("n", 0)], feeds=[feed("x", (3,))])
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        n = Neg(x:0) -> float32[3]
        fetches: n:0
        """,
    )


def test_a_variable_read_only_an_ordering_needs_is_kept():
    v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    m = tf.exp(v, name="m")
    with tf.control_dependencies([m]):
        y = tf.identity(x, name="y")
    tf.negative(y, name="alone")
    tf.add(y, v, name="with_v")
    g = _simplify([("with_v", 0)], feeds=[feed("x", (2,))])
    assert_graph(
        g,
        """
        v = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        with_v = Add(x:0, v:0) -> float32[2]
        fetches: with_v:0
        """,
    )  # v is read anyway: y goes
    g = _simplify([("alone", 0)], feeds=[feed("x", (2,))])
    assert_graph(
        g,
        """
        v = VariableV2() -> float32[2] {dtype=float32, shape=(2,)}
        x = Feed() -> float32[2] {dtype=float32, index=0, shape=(2,)}
        m = Exp(v:0) -> float32[2]
        y = Identity(x:0, ^m) -> float32[2]
        alone = Neg(y:0) -> float32[2]
        fetches: alone:0
        """,
    )  # the only read of v: it stays, and so must fail when uninitialized
