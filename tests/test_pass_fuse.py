"""fuse_elementwise: which groups form, what they export, and how the graph is rewired."""

import numpy as np
import pytest
from passcheck import assert_graph, front, run

import tfc as tf
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops import training_ops
from tfc.passes import fuse
from tfc.passes.fuse import fuse_elementwise


def _feeds(feed_dict):
    return [
        FeedSpec((t.op.name, t.value_index), t.dtype, np.shape(v)) for t, v in feed_dict.items()
    ]


def _program(fetches, feed_dict=None, targets=()):
    """The program graph of `fetches` after the front passes and the fuse pass, checked."""
    graph = make_program_graph(
        tf.get_default_graph(),
        [(t.op.name, t.value_index) for t in fetches],
        [op.name for op in targets],
        _feeds(feed_dict or {}),
    )
    return run(fuse_elementwise, front(graph))


def _fusions(graph):
    """{fusion node: ([member names], [exported member names])}."""
    found = {}
    for name in graph.node_names():
        attrs = graph.node(name)["attrs"]
        if "members" in attrs:
            members = [m.name for m in attrs["members"]]
            found[name] = (members, [members[j] for j in attrs["outputs"]])
    return found


def _ops(graph):
    return {graph.op_type(n) for n in graph.node_names()}


# -- which groups form, and how the graph around them is rewired -------------------------------
def test_a_broadcasting_chain_becomes_one_node_with_one_output():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    b = tf.constant([1.0, 2.0, 3.0], name="b")
    y = tf.nn.relu(tf.multiply(x, 2.0, name="mul") + b, name="y")
    z = tf.exp(y, name="z")
    g = _program([z], {x: np.zeros((4, 3), np.float32)})
    # one output (z, member 3); the Const is the 2.0
    assert_graph(
        g,
        """
        x = Feed() -> float32[4,3] {dtype=float32, index=0, shape=(4, 3)}
        b = Const() -> float32[3] {dtype=float32, value=[1.0, 2.0, 3.0]}
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        z/fusion = Fusion(x:0, Const:0, b:0) -> float32[4,3] {outputs=(3,)}
          members:
            mul (Mul: in0, in1)
            add (Add: m0, in2)
            y (Relu: m1)
            z (Exp: m2)
        fetches: z/fusion:0
        """,
    )


def test_a_member_needed_outside_becomes_an_output_and_consumers_are_rewired():
    x = tf.placeholder(tf.float32, [8], name="x")
    y = tf.square(x + 1.0, name="y")
    z = tf.nn.softmax(tf.reshape(y, [2, 4]), name="z")  # not element-wise: reads y from outside
    w = tf.sqrt(y, name="w") * 3.0
    g = _program([y, z, w], {x: np.ones(8, np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[8] {dtype=float32, index=0, shape=(8,)}
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        Reshape/shape = Const() -> int32[2] {dtype=int32, value=[2, 4]}
        Reshape = Reshape(mul/fusion:0, Reshape/shape:0) -> float32[2,4]
        z = Softmax(Reshape:0) -> float32[2,4]
        Const_1 = Const() -> float32[] {dtype=float32, value=3.0}
        mul/fusion = Fusion(x:0, Const:0, Const_1:0) -> float32[8], float32[8] {outputs=(1, 3)}
          members:
            add (Add: in0, in1)
            y (Square: m0)
            w (Sqrt: m1)
            mul (Mul: m2, in2)
        fetches: mul/fusion:0, z:0, mul/fusion:1
        """,
    )


def test_single_ops_and_stateful_or_random_ops_are_left_alone():
    x = tf.placeholder(tf.float32, [5], name="x")
    v = tf.Variable(tf.zeros([5]), name="v")
    r = tf.random_uniform([5], seed=1, name="r")  # RandomUniform, then r/mul and r (an Add)
    lone = tf.negative(x, name="lone")
    before = tf.add(r * 2.0, x, name="before")  # random -> element-wise
    step = tf.assign_add(v, before, name="step")  # stateful: its value is read, so it stays
    after = tf.exp(step, name="after") - 1.0  # element-wise after the update
    g = _program([lone, after], {x: np.ones(5, np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[5] {dtype=float32, index=0, shape=(5,)}
        v = VariableV2() -> float32[5] {dtype=float32, shape=(5,)}
        r/shape = Const() -> int32[1] {dtype=int32, value=[5]}
        r/min = Const() -> float32[] {dtype=float32, value=0.0}
        r/max = Const() -> float32[] {dtype=float32, value=1.0}
        r/RandomUniform = RandomUniform(r/shape:0) -> float32[5] {T=int32, dtype=float32, seed=87654321, seed2=1}
        lone = Neg(x:0) -> float32[5]
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        before/fusion = Fusion(r/max:0, r/min:0, r/RandomUniform:0, Const:0, x:0) -> float32[5] {outputs=(4,)}
          members:
            r/sub (Sub: in0, in1)
            r/mul (Mul: in2, m0)
            r (Add: m1, in1)
            mul (Mul: m2, in3)
            before (Add: m3, in4)
        step = AssignAdd(v:0, before/fusion:0) -> float32[5]
        Const_1 = Const() -> float32[] {dtype=float32, value=1.0}
        sub/fusion = Fusion(step:0, Const_1:0) -> float32[5] {outputs=(1,)}
          members:
            after (Exp: in0)
            sub (Sub: m0, in1)
        fetches: lone:0, sub/fusion:0
        """,  # noqa: E501
    )


def test_an_assignment_of_an_element_wise_value_runs_in_its_loop():
    x = tf.placeholder(tf.float32, [5], name="x")
    v = tf.Variable(tf.ones([5]), name="v")
    step = tf.assign(v, tf.sqrt(v.value() * x + 1.0, name="value"), name="step")
    g = _program([], {x: np.ones(5, np.float32)}, targets=[step.op])
    assert_graph(
        g,
        """
        x = Feed() -> float32[5] {dtype=float32, index=0, shape=(5,)}
        v = VariableV2() -> float32[5] {dtype=float32, shape=(5,)}
        v/read = Identity(v:0) -> float32[5] {_class=['loc:@v']}
        Const = Const() -> float32[] {dtype=float32, value=1.0}
        step/fusion = FusedAssign(v:0, v/read:0, x:0, Const:0) -> () {outputs=(), update=step (Assign of member 2)}
          members:
            mul (Mul: in1, in2)
            add (Add: m0, in3)
            value (Sqrt: m1)
        targets: step/fusion
        """,  # noqa: E501
    )


def test_groups_are_convex():
    x = tf.placeholder(tf.float32, [3, 4], name="x")
    a = tf.exp(x, name="a")
    s = tf.nn.softmax(a, name="s")  # a -> s -> c: a and c cannot share a node (a cycle)
    c = tf.add(a, s, name="c")
    d = tf.multiply(c, 2.0, name="d")
    g = _program([d], {x: np.ones((3, 4), np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[3,4] {dtype=float32, index=0, shape=(3, 4)}
        a = Exp(x:0) -> float32[3,4]
        s = Softmax(a:0) -> float32[3,4]
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        d/fusion = Fusion(a:0, s:0, Const:0) -> float32[3,4] {outputs=(1,)}
          members:
            c (Add: in0, in1)
            d (Mul: m0, in2)
        fetches: d/fusion:0
        """,
    )


def test_the_cycle_check_of_a_long_chain_stays_near_the_group(monkeypatch):
    """Each merge's cycle check looks at the nodes ranked up to the group's, not at the rest of
    the graph (which made the pass quadratic in a chain of thousands of groups)."""
    lookups = []

    class CountingSuccessors(dict):
        def __getitem__(self, node):
            lookups.append(node)
            return dict.__getitem__(self, node)

    init = fuse.Fuser.__init__

    def counting_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.succ = CountingSuccessors(self.succ)

    monkeypatch.setattr(fuse.Fuser, "__init__", counting_init)
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    y = x
    for _ in range(150):  # softmax joins no group: 150 groups of two, one after the other
        y = tf.nn.softmax(tf.exp(tf.negative(y)))
    g = _program([y], {x: np.ones((2, 3), np.float32)})
    assert len(_fusions(g)) == 150
    # a walk to the end of the chain at each check would be about 150 * 450 / 2 lookups
    assert len(lookups) < 5 * g.nx.number_of_nodes()


def test_a_reduction_ends_a_chain_and_what_reads_it_runs_after_the_loop():
    x = tf.placeholder(tf.float32, [6, 5], name="x")
    p = tf.multiply(x, x, name="p")
    s = tf.reduce_sum(p, axis=0, name="s")
    t = tf.reduce_max(p, axis=0, name="t")  # the same reduced dims: the same loop
    after = tf.sqrt(s + t, name="after")  # on reduced values: a loop over the kept dim
    m = tf.reduce_mean(p, axis=1, name="m")  # other dims: another kernel
    g = _program([after, m], {x: np.ones((6, 5), np.float32)})
    # reductions are always outputs: their buffers are their accumulators
    assert_graph(
        g,
        """
        x = Feed() -> float32[6,5] {dtype=float32, index=0, shape=(6, 5)}
        after/fusion = Fusion(x:0) -> float32[6,5], float32[5], float32[5], float32[5] {outputs=(0, 1, 2, 4)}
          members:
            p (Mul: in0, in0)
            s (Sum: m0, Const)
            t (Max: m0, Const_1)
            add (Add: m1, m2)
            after (Sqrt: m3)
        Const_2 = Const() -> int32[] {dtype=int32, value=1}
        m = Mean(after/fusion:0, Const_2:0) -> float32[6] {keep_dims=False}
        fetches: after/fusion:3, m:0
        """,  # noqa: E501
    )


def test_matmul_bias_add_and_activation_are_one_node():
    x = tf.placeholder(tf.float32, [7, 5], name="x")
    w = tf.constant(np.ones((5, 3), np.float32), name="w")
    b = tf.constant(np.ones(3, np.float32), name="b")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w, name="mm"), b, name="ba"), name="h")
    g = _program([h], {x: np.ones((7, 5), np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[7,5] {dtype=float32, index=0, shape=(7, 5)}
        w = Const() -> float32[5,3] {dtype=float32, value=[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]}
        b = Const() -> float32[3] {dtype=float32, value=[1.0, 1.0, 1.0]}
        h/fusion = Fusion(x:0, w:0, b:0) -> float32[7,3] {outputs=(2,)}
          members:
            mm (MatMul: in0, in1)
            ba (BiasAdd: m0, in2)
            h (Relu: m1)
        fetches: h/fusion:0
        """,  # noqa: E501
    )


def test_a_view_needed_outside_stays_and_reads_the_fusion():
    x = tf.placeholder(tf.float32, [4], name="x")
    y = tf.identity(tf.abs(x, name="a"), name="view")
    z = tf.multiply(y, 2.0, name="z")
    g = _program([y, z], {x: np.ones(4, np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[4] {dtype=float32, index=0, shape=(4,)}
        view = Identity(z/fusion:0) -> float32[4]
        Const = Const() -> float32[] {dtype=float32, value=2.0}
        z/fusion = Fusion(x:0, Const:0) -> float32[4], float32[4] {outputs=(0, 2)}
          members:
            a (Abs: in0)
            view (Identity: m0)
            z (Mul: m1, in1)
        fetches: view:0, z/fusion:1
        """,
    )


def test_control_edges_move_to_the_fusion_node():
    x = tf.placeholder(tf.float32, [3], name="x")
    v = tf.Variable(tf.ones([3]), name="v")
    bump = tf.assign_add(v, [1.0, 1.0, 1.0], name="bump")
    with tf.control_dependencies([bump]):
        a = tf.exp(x, name="a")
    b = tf.negative(a, name="b")
    with tf.control_dependencies([b]):
        c = tf.identity(x, name="c")
    g = _program([c, b], {x: np.ones(3, np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        v = VariableV2() -> float32[3] {dtype=float32, shape=(3,)}
        Const = Const() -> float32[3] {dtype=float32, value=[1.0, 1.0, 1.0]}
        bump = AssignAdd(v:0, Const:0) -> float32[3]
        b/fusion = Fusion(x:0, ^bump) -> float32[3] {outputs=(1,)}
          members:
            a (Exp: in0)
            b (Neg: m0)
        c = Identity(x:0, ^b/fusion) -> float32[3]
        fetches: c:0, b/fusion:0
        """,
    )


def test_the_gradient_of_a_layer_folds_into_its_optimizer_update():
    x = tf.placeholder(tf.float32, [8, 4], name="x")
    w = tf.Variable(tf.ones([4, 3]), name="w")
    b = tf.Variable(tf.zeros([3]), name="b")
    h = tf.nn.relu(tf.matmul(x, w) + b)
    loss = tf.reduce_mean(tf.square(h))
    train = tf.train.AdamOptimizer(0.1).minimize(loss)
    g = _program([loss], {x: np.ones((8, 4), np.float32)}, targets=[train])
    ops = _ops(g)
    # the bias gradient (a reduction of relu-grad * upstream) and the weights' gradient (a
    # MatMul) are applied in the loops that compute them
    assert "ApplyAdam" not in ops and "FusedApplyAdam" in ops
    assert {"ReluGrad", "Sum", "Relu", "Square"}.isdisjoint(ops)
    fused = {g.input_edges(n)[0][0]: n for n in g.node_names() if g.op_type(n) == "FusedApplyAdam"}
    assert sorted(fused) == ["b", "w"]
    # the weights' gradient is never materialized: one row at a time feeds the update
    assert g.node(fused["w"])["shapes"] == [(3,)]
    # Adam's beta powers: beta * beta_power assigned in one kernel
    assert [n for n in g.node_names() if g.op_type(n) == "FusedAssign"] == [
        "Adam/Assign/fusion",
        "Adam/Assign_1/fusion",
    ]


def test_an_update_reading_its_variable_element_by_element_is_fused():
    x = tf.placeholder(tf.float32, [8, 4], name="x")
    w = tf.Variable(np.arange(12.0, dtype=np.float32).reshape(4, 3), name="w")
    loss = tf.reduce_sum(tf.matmul(x, w)) + 0.1 * tf.nn.l2_loss(w)  # the gradient reads w
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    g = _program([loss], {x: np.ones((8, 4), np.float32)}, targets=[train])
    assert "FusedApplyGradientDescent" in _ops(g)  # w[i] is read before w[i] is written


def test_an_update_whose_loop_reads_its_variable_elsewhere_is_not_fused():
    x = tf.placeholder(tf.float32, [3, 3], name="x")
    w = tf.Variable(np.arange(9.0, dtype=np.float32).reshape(3, 3) / 10, name="w")
    step = tf.nn.relu(tf.matmul(x, w, name="mm"), name="step")  # a GEMM row reads all of w
    train = training_ops.apply_gradient_descent(w, 0.5, step, name="sgd")
    g = _program([train], {x: np.ones((3, 3), np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[3,3] {dtype=float32, index=0, shape=(3, 3)}
        w = VariableV2() -> float32[3,3] {dtype=float32, shape=(3, 3)}
        w/read = Identity(w:0) -> float32[3,3] {_class=['loc:@w']}
        step/fusion = Fusion(x:0, w/read:0) -> float32[3,3] {outputs=(1,)}
          members:
            mm (MatMul: in0, in1)
            step (Relu: m0)
        alpha = Const() -> float32[] {dtype=float32, value=0.5}
        sgd = ApplyGradientDescent(w:0, alpha:0, step/fusion:0) -> float32[3,3]
        fetches: sgd:0
        """,
    )


def test_a_product_read_outside_its_group_is_exported_whole():
    # the product feeds a reduction in its group and a MatMul outside it: the reader needs all
    # of its rows, not the one-row scratch of a product nothing outside reads (issue 19)
    x = tf.placeholder(tf.float32, [8, 3], name="x")
    w = tf.constant(np.ones((3, 16), np.float32), name="w")
    v = tf.constant(np.ones((16, 2), np.float32), name="v")
    p = tf.matmul(x, w, name="p")
    s = tf.reduce_sum(p, axis=0, name="s")
    q = tf.matmul(p, v, name="q")
    g = _program([s, q], {x: np.ones((8, 3), np.float32)})
    assert_graph(
        g,
        """
        x = Feed() -> float32[8,3] {dtype=float32, index=0, shape=(8, 3)}
        w = Const() -> float32[3,16] {dtype=float32, value=[1.0, 1.0, 1.0, ..., 1.0, 1.0, 1.0] (48 values)}
        v = Const() -> float32[16,2] {dtype=float32, value=[1.0, 1.0, 1.0, ..., 1.0, 1.0, 1.0] (32 values)}
        s/fusion = Fusion(x:0, w:0) -> float32[8,16], float32[16] {outputs=(0, 1)}
          members:
            p (MatMul: in0, in1)
            s (Sum: m0, Const)
        q = MatMul(s/fusion:0, v:0) -> float32[8,2] {transpose_a=False, transpose_b=False}
        fetches: s/fusion:1, q:0
        """,  # noqa: E501
    )


def test_broadcasting_chains_of_many_ops_form_one_loop_nest():
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [5, 1, 4], name="x")
    y = tf.placeholder(tf.float32, [3, 1], name="y")
    n = tf.placeholder(tf.int32, [6], name="n")
    z = tf.constant(rng.normal(size=4).astype(np.float32))
    a = x * y + z
    b = tf.nn.relu(a) - tf.sigmoid(a) * 0.5
    c = tf.where(b > 0, tf.exp(-b), tf.square(b))
    fetches = [
        c,
        tf.reduce_sum(c, axis=[0, 2]),  # reduced, kept, reduced
        tf.reduce_mean(tf.tanh(c), axis=2),  # a reduced suffix: a double accumulator
        tf.reduce_max(b * 2.0, axis=0),  # no suffix: accumulated in the output
        tf.reduce_sum(a * a),  # everything
        tf.tile(tf.expand_dims(z, 0), [6, 1]) * 2.0 + tf.zeros_like(z),
        tf.cast(tf.logical_and(b > 0, c < 1.0), tf.float32) + tf.ones_like(b),
        tf.abs(n - 4) * n + tf.maximum(n, 2),
        tf.cast(tf.cast(n, tf.float64) * 0.75, tf.int64),
        tf.add_n([x * 2.0, x, x + 1.0]),
    ]
    feed = {x: np.ones((5, 1, 4), np.float32), y: np.ones((3, 1), np.float32)}
    feed[n] = np.arange(-3, 3, dtype=np.int32)
    g = _program(fetches, feed)
    groups = list(_fusions(g).values())
    # c, its Sum over dims 0 and 2, and everything element-wise on a, b, c: one loop nest
    assert any({"Select", "Sum", "Tanh", "LogicalAnd", "ones_like"} <= set(m) for m, _ in groups)
    assert {g.op_type(n) for n in ("Mean", "Max", "Sum_1")} == {"Mean", "Max", "Sum"}


def test_softmax_cross_entropy_forward_and_backward_fuse():
    logits = tf.placeholder(tf.float32, [16, 10], name="logits")
    labels = tf.placeholder(tf.float32, [16, 10], name="labels")
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    dlogits, dlabels = tf.gradients(loss, [logits, labels])
    feed = {logits: np.ones((16, 10), np.float32), labels: np.ones((16, 10), np.float32)}
    assert _fusions(_program([loss, dlogits, dlabels], feed))


@pytest.mark.parametrize(
    "optimizer, clip",
    [
        (lambda: tf.train.AdamOptimizer(0.01), False),
        (lambda: tf.train.MomentumOptimizer(0.1, 0.9), True),
    ],
    ids=["adam", "momentum-clipped"],
)
def test_an_mlp_training_step_applies_its_updates_in_fused_loops(optimizer, clip):
    tf.set_random_seed(5)
    x = tf.placeholder(tf.float32, [32, 12], name="x")
    y = tf.placeholder(tf.float32, [32, 3], name="y")
    h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="h1")
    h = tf.layers.dense(h, 8, activation=tf.tanh, name="h2")
    out = tf.layers.dense(h, 3, activation=tf.sigmoid, name="out")
    loss = tf.reduce_mean(tf.squared_difference(out, y))
    opt = optimizer()
    grads = opt.compute_gradients(loss)
    if clip:
        grads = [(tf.clip_by_value(g, -0.05, 0.05), v) for g, v in grads]
    train = opt.apply_gradients(grads)
    feed = {x: np.ones((32, 12), np.float32), y: np.ones((32, 3), np.float32)}
    g = _program([loss], feed, targets=[train])
    assert any(t.startswith("FusedApply") for t in _ops(g))
