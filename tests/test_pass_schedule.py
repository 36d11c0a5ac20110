"""schedule_graph: a topological order in creation order, variable reads before writes."""

import tfc as tf
from tfc.passes import run_passes
from tfc.signature import make_program_graph


def _schedule(fetches, targets=()):
    g = make_program_graph(tf.get_default_graph(), fetches, targets)
    g = run_passes(g, ["prune", "specialize", "prune", "schedule"], verify=True)
    return g.graph_attrs["schedule"]


def test_creation_order_among_free_choices():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    c = tf.add(b, a, name="c")
    d = tf.exp(a, name="d")
    e = tf.add(c, d, name="e")
    assert _schedule([("e", 0)]) == ["a", "b", "c", "d", "e"]
    del e


def test_control_edges_order_nodes():
    a = tf.constant(1.0, name="a")
    late = tf.exp(a, name="late")
    with tf.control_dependencies([late]):
        tf.log(a, name="early")  # created after, and must run after `late` anyway
    order = _schedule([("early", 0)])
    assert order.index("late") < order.index("early")


def test_reads_of_a_variable_come_before_an_unrelated_write():
    v = tf.Variable(tf.ones([3]), name="v")
    update = tf.assign(v, tf.zeros([3]), name="update")  # created before the read
    read = tf.multiply(v, 2.0, name="read2")
    order = _schedule([("read2", 0)], targets=["update"])
    assert order.index("read2") < order.index("update")
    del update, read


def test_a_read_that_depends_on_the_write_stays_after_it():
    v = tf.Variable(tf.ones([3]), name="v")
    update = tf.assign_add(v, tf.ones([3]), name="update")
    with tf.control_dependencies([update]):
        after = tf.identity(v, name="after")
    order = _schedule([("after", 0)])
    assert order.index("update") < order.index("after")
    del after
