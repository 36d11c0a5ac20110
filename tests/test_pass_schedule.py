"""schedule_graph: a valid order (data, control, variable rules) with a low peak of live bytes."""

import networkx as nx
import pytest

import tfc as tf
from tfc.compiler import run_passes
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.memory import analyze_liveness
from tfc.passes.prune import prune_graph
from tfc.passes.schedule import SCHEDULERS, Costs, dependency_graph, schedule_graph
from tfc.passes.specialize import specialize_shapes

PASSES = [prune_graph, specialize_shapes, prune_graph, schedule_graph]


def _program(fetches, targets=(), feeds=()):
    g = make_program_graph(tf.get_default_graph(), fetches, targets, feeds)
    return run_passes(g, PASSES, verify=True)


def _schedule(fetches, targets=()):
    return _program(fetches, targets).graph_attrs["schedule"]


def _feed(name, shape):
    return FeedSpec((name, 0), tf.float32, shape)


def _peaks(g):
    """The peak of live arena bytes of every candidate schedule."""
    order, costs = dependency_graph(g), Costs(g)
    return {
        name: analyze_liveness(g, s(order, costs)).lower_bound for name, s in SCHEDULERS.items()
    }


def test_creation_order_among_free_choices():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    c = tf.add(b, a, name="c")
    d = tf.exp(a, name="d")
    e = tf.add(c, d, name="e")
    g = _program([("e", 0)])
    # every candidate peaks at the same bytes here: the creation order is kept
    assert g.graph_attrs["schedule"] == ["a", "b", "c", "d", "e"]
    assert g.graph_attrs["schedule_strategy"] == "creation"
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


def test_unrelated_writes_of_one_variable_keep_creation_order():
    import numpy as np

    v = tf.Variable(tf.zeros([256]), name="v")
    first = tf.assign(v, tf.exp(tf.ones([256])), name="first")  # needs a 1 KiB temporary
    second = tf.assign(v, tf.constant(np.zeros(256, np.float32)), name="second")  # needs none
    # branches that make a memory-aware schedule win over creation order
    x = tf.placeholder(tf.float32, [1024], name="x")
    products = [x * float(i) for i in range(3)]
    total = tf.add_n([tf.reduce_sum(p) for p in products], name="total")
    g = _program([("total", 0)], targets=["first", "second"], feeds=[_feed("x", (1024,))])
    assert g.graph_attrs["schedule_strategy"] != "creation"
    # that schedule would run the cheaper write first; TF1 users get them in the order written
    order = g.graph_attrs["schedule"]
    assert order.index("first") < order.index("second")
    del first, second, total


def test_memory_aware_order_lowers_the_peak_of_independent_branches():
    x = tf.placeholder(tf.float32, [1024], name="x")
    # creation order makes all four 4 KiB products, then reduces them: 16 KiB alive at once
    products = [tf.multiply(x, float(i + 2), name=f"p{i}") for i in range(4)]
    sums = [tf.reduce_sum(p, name=f"s{i}") for i, p in enumerate(products)]
    total = tf.add_n(sums, name="total")
    g = _program([("total", 0)], feeds=[_feed("x", (1024,))])
    peaks = _peaks(g)
    assert peaks["creation"] >= 4 * 4096
    # reduce each product as soon as it exists: one product and a few scalars alive
    assert g.graph_attrs["arena_lower_bound"] == 4096 + 4 * 4  # s3 is written while p3 lives
    assert g.graph_attrs["schedule_strategy"] != "creation"
    order = g.graph_attrs["schedule"]
    for i in range(3):
        assert order.index(f"s{i}") < order.index(f"p{i + 1}")
    del total


def test_a_value_needed_late_is_computed_late():
    x = tf.placeholder(tf.float32, [16, 16], name="x")
    w = tf.placeholder(tf.float32, [16, 8], name="w")
    late = tf.matmul(x, w, name="late")  # 512 B, ready at once, read only by the last op
    h = x
    for i in range(3):
        h = tf.matmul(h, x, name=f"h{i}")  # a chain of 1 KiB values, two alive at each step
    tf.matmul(h, late, name="out")
    g = _program([("out", 0)], feeds=[_feed("x", (16, 16)), _feed("w", (16, 8))])
    peaks = _peaks(g)
    # running `late` first (creation order, and the forward greedy: it grows the arena less
    # than h0) keeps it alive through the chain; scheduling from the end computes it last
    assert peaks["creation"] == peaks["least_growth"] == 2048 + 512
    assert g.graph_attrs["arena_lower_bound"] == 2048
    assert g.graph_attrs["schedule_strategy"].startswith("late_")
    order = g.graph_attrs["schedule"]
    assert order.index("h2") < order.index("late")


def _digits_training_graph(batch=32):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "samples" / "digits_mlp.py"
    spec = importlib.util.spec_from_file_location("digits_mlp_sample", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tf.set_random_seed(1)
    images = tf.placeholder(tf.float32, [None, 64], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    loss, train_op, _ = module.build_model(images, labels, 0.002)
    feeds = [
        FeedSpec(("images", 0), tf.float32, (batch, 64)),
        FeedSpec(("labels", 0), tf.int64, (batch,)),
    ]
    return make_program_graph(tf.get_default_graph(), [(loss.op.name, 0)], [train_op.name], feeds)


def test_every_candidate_obeys_the_dependencies_of_a_training_step():
    g = run_passes(_digits_training_graph(), PASSES, verify=True)
    order, costs = dependency_graph(g), Costs(g)
    assert order.number_of_edges() > g.nx.number_of_edges()  # the variable rules add edges
    for name, scheduler in SCHEDULERS.items():
        schedule = scheduler(order, costs)
        assert sorted(schedule) == sorted(g.nx.nodes), name
        position = {n: i for i, n in enumerate(schedule)}
        late = [(u, v) for u, v in order.edges if position[u] >= position[v]]
        assert not late, (name, late[:3])
    assert nx.is_directed_acyclic_graph(order)


def test_the_training_step_schedule_beats_creation_order_and_is_deterministic():
    schedules = []
    for _ in range(2):
        tf.reset_default_graph()
        g = run_passes(_digits_training_graph(), PASSES, verify=True)
        schedules.append((g.graph_attrs["schedule"], g.graph_attrs["arena_lower_bound"]))
        peaks = _peaks(g)
        # weight gradients are applied as soon as they exist instead of piling up
        assert g.graph_attrs["arena_lower_bound"] == min(peaks.values())
        assert g.graph_attrs["arena_lower_bound"] < 0.98 * peaks["creation"]
        assert g.graph_attrs["arena_naive_bytes"] > 2 * g.graph_attrs["arena_lower_bound"]
    assert schedules[0] == schedules[1]


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_each_candidate_is_deterministic(name):
    g = run_passes(_digits_training_graph(), PASSES, verify=True)
    order = dependency_graph(g)
    runs = [SCHEDULERS[name](order, Costs(g)) for _ in range(2)]
    shuffled = nx.DiGraph()  # the same graph, its nodes and edges inserted in another order
    shuffled.add_nodes_from(sorted(order.nodes, reverse=True))
    shuffled.add_edges_from(sorted(order.edges, reverse=True))
    runs.append(SCHEDULERS[name](shuffled, Costs(g)))
    assert runs[0] == runs[1] == runs[2]
