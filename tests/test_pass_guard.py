"""guard_updates: every variable update waits for finite checks of the loss and the values the
updates read, so a failing check leaves the variables unchanged."""

from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.passes.guard import guard_updates


def _sgd_step():
    x = tf.placeholder(tf.float32, [2], name="x")
    lr = tf.placeholder(tf.float32, [], name="lr")
    w = tf.Variable(tf.zeros([2]), name="w")
    loss = tf.reduce_sum(tf.square(w - x), name="loss")
    step = tf.Variable(0, dtype=tf.int64, name="step")
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step, name="train")
    return front(program([("loss", 0)], [feed("x", (2,)), feed("lr", ())], [train.name]))


def _updates(g):
    return [n for n in g.node_names() if g.op_type(n) in ("ApplyGradientDescent", "AssignAdd")]


def test_updates_wait_for_checks_of_the_loss_and_what_they_read():
    g = run(guard_updates, _sgd_step())
    checks = [n for n in g.node_names() if n.startswith("tfc_finite/")]
    assert [g.op_type(n) for n in checks] == ["CheckNumerics"] * len(checks)
    checked = {g.input_edges(n)[0] for n in checks}
    # the loss (fetched), the learning rate and w's gradient: not the variables, not the int64
    # step's increment
    apply = next(n for n in _updates(g) if g.op_type(n) == "ApplyGradientDescent")
    lr, grad = g.input_edges(apply)[1], g.input_edges(apply)[2]
    assert checked == {("loss", 0), lr, grad}, checked
    assert len(_updates(g)) == 2
    for update in _updates(g):
        assert set(checks) <= set(g.control_input_names(update)), update


def test_a_program_without_updates_is_unchanged():
    x = tf.placeholder(tf.float32, [3], name="x")
    tf.exp(x, name="y")
    g = run(guard_updates, front(program([("y", 0)], [feed("x", (3,))])))
    assert_graph(
        g,
        """
        x = Feed() -> float32[3] {dtype=float32, index=0, shape=(3,)}
        y = Exp(x:0) -> float32[3]
        fetches: y:0
        """,
    )


def test_the_guarded_pipeline_checks_before_any_update():
    from tfc.codegen.targets import C
    from tfc.compiler import PIPELINE, compile_program, guarded, pass_name

    names = [pass_name(p) for p in guarded(PIPELINE)]
    at = names.index("guard")
    assert names[at - 1 : at + 2] == ["epilogue", "guard", "fuse"]
    compiled = compile_program(_sgd_step(), guarded(PIPELINE), C, name="guarded")
    order = compiled.graph.graph_attrs["schedule"]
    updates = [order.index(n) for n in _updates(compiled.graph)]
    checks = [order.index(n) for n in order if n.startswith("tfc_finite/")]
    assert len(checks) == 3 and len(updates) == 2 and max(checks) < min(updates)
