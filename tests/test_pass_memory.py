"""plan_memory: storage kinds, arena reuse, and the plan checked by the verifier."""

import pytest

import tfc as tf
from tfc.passes import run_passes
from tfc.passes.memory import ARENA_ALIGN
from tfc.signature import FeedSpec, make_program_graph
from tfc.verify import GraphInvariantError, verify_graph

PIPELINE = ["prune", "specialize", "prune", "schedule", "memory"]


def _plan(fetches, feeds=(), targets=()):
    g = make_program_graph(tf.get_default_graph(), fetches, targets, feeds)
    return run_passes(g, PIPELINE, verify=True)


def test_storage_kinds():
    x = tf.placeholder(tf.float32, [4], name="x")
    v = tf.Variable(tf.ones([4]), name="v")
    c = tf.constant([1.0, 2.0, 3.0, 4.0], name="c")
    t = tf.add(x, c, name="t")
    r = tf.multiply(t, v, name="r")
    g = _plan([("r", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (4,))])
    s = {n: g.node(n)["storage"] for n in g.graph_attrs["schedule"]}
    assert s["x"] == [("feed", 0)]
    assert s["c"] == [("const", "c")]
    assert s["v"] == [("var", "v")]
    assert s["v/read"] == [("alias", ("v", 0))]
    assert s["t"][0][0] == "arena"
    assert s["r"] == [("output", 0)]  # a fetched value is written straight to the caller
    del r


def test_buffers_whose_lifetimes_do_not_overlap_share_space():
    x = tf.placeholder(tf.float32, [1024], name="x")
    h = x
    for i in range(6):  # a chain: each intermediate dies when the next is made
        h = tf.exp(h, name=f"h{i}")
    g = _plan([(h.op.name, 0)], feeds=[FeedSpec(("x", 0), tf.float32, (1024,))])
    # two buffers alive at a time (the input and the output of a step) suffice
    assert g.graph_attrs["arena_bytes"] == 2 * 4096
    offsets = [g.node(f"h{i}")["storage"][0][1] for i in range(5)]
    assert all(o % ARENA_ALIGN == 0 for o in offsets)
    assert all(a != b for a, b in zip(offsets, offsets[1:]))


def test_verifier_catches_overlapping_live_buffers():
    x = tf.placeholder(tf.float32, [64], name="x")
    a = tf.exp(x, name="a")
    b = tf.log(x, name="b")
    tf.add(a, b, name="c")
    g = _plan([("c", 0)], feeds=[FeedSpec(("x", 0), tf.float32, (64,))])
    g.node("b")["storage"] = list(g.node("a")["storage"])  # break the plan on purpose
    with pytest.raises(GraphInvariantError, match="alive together and overlap"):
        verify_graph(g)
