"""pack_conv_filters: a fused convolution's constant filter in the blocks its kernel reads."""

import numpy as np
from passcheck import feed, front, program, run

import tfc as tf
from tfc.codegen.targets import C
from tfc.compiler import PIPELINE, compile_program
from tfc.ops.conv import pack_filter
from tfc.ops.kernels import MIXED_PRECISION
from tfc.ops.registry import apply_op
from tfc.passes.conv_epilogue import fuse_conv_epilogues
from tfc.passes.conv_pack import pack_conv_filters

RNG = np.random.default_rng(0)
X = feed("x", (1, 5, 5, 8))


def _fused_graph(fetches, feeds=(X,)):
    return run(fuse_conv_epilogues, front(program(fetches, feeds)))


def _conv(x, f, name, **attrs):
    attrs.update(strides=[1, 1, 1, 1], padding="SAME")
    y = apply_op("Conv2D", [x, f], attrs, name=name).outputs[0]
    return tf.nn.relu(tf.nn.bias_add(y, np.ones(f.shape[3], np.float32)), name=f"{name}_out")


def _filters(graph):
    """{fused conv: (its filter's node, that node's value, its packed_filter attribute)}"""
    out = {}
    for name in graph.node_names():
        if graph.op_type(name) == "_FusedConv2D":
            source = graph.input_edges(name)[1][0]
            value = graph.node(source)["attrs"].get("value")
            shape = graph.node(name)["attrs"].get("packed_filter")
            out[name.split("/")[0]] = (source, value, shape)
    return out


def test_a_constant_filter_is_packed_in_blocks_of_the_tiles_channels():
    x = tf.placeholder(tf.float32, [1, 5, 5, 8], name="x")
    f = RNG.standard_normal((3, 3, 8, 40)).astype(np.float32)
    _conv(x, tf.constant(f, name="f"), "conv")
    g = run(pack_conv_filters, _fused_graph([("conv_out", 0)]))
    source, value, shape = _filters(g)["conv"]
    assert shape == [3, 3, 8, 40]
    # 40 channels: blocks of two 8-lane vectors (not of four: 40 is no multiple of 32)
    assert value.shape == (3, 72, 16)
    np.testing.assert_array_equal(value, pack_filter(f, 16))
    assert "f" not in g.nx  # the HWIO Const is read by nothing else
    assert g.node(source)["op"] == "Const"


def test_a_shared_filter_stays_for_its_other_reader():
    x = tf.placeholder(tf.float32, [1, 5, 5, 8], name="x")
    f = tf.constant(RNG.standard_normal((1, 1, 8, 32)).astype(np.float32), name="f")
    _conv(x, f, "conv")
    tf.identity(f, name="also")
    g = run(pack_conv_filters, _fused_graph([("conv_out", 0), ("also", 0)]))
    assert _filters(g)["conv"][1].shape == (1, 8, 32)
    assert g.input_edges("also") == [("f", 0)]


def test_what_is_not_packed():
    x = tf.placeholder(tf.float32, [1, 5, 5, 8], name="x")
    fed = tf.placeholder(tf.float32, [3, 3, 8, 16], name="fed")
    _conv(x, fed, "fed_filter")
    f = RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)
    _conv(x, tf.constant(f), "forced", _algorithm="im2col")
    small = tf.placeholder(tf.float32, [1, 5, 5, 1], name="small")
    _conv(small, tf.constant(f[:, :, :1, :8]), "columns")  # LeNet's conv1: the columns kernel
    fetches = [(n, 0) for n in ("fed_filter_out", "forced_out", "columns_out")]
    feeds = [X, feed("fed", (3, 3, 8, 16)), feed("small", (1, 5, 5, 1))]
    g = run(pack_conv_filters, _fused_graph(fetches, feeds))
    filters = _filters(g)
    assert sorted(filters) == ["columns", "fed_filter", "forced"]
    assert all(shape is None for _, _, shape in filters.values())


def test_mixed_precision_programs_keep_hwio_filters():
    x = tf.placeholder(tf.float32, [1, 5, 5, 8], name="x")
    _conv(x, tf.constant(RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)), "conv")
    g = _fused_graph([("conv_out", 0)])
    g.graph_attrs[MIXED_PRECISION] = "bfloat16"
    assert _filters(run(pack_conv_filters, g))["conv"][2] is None


def test_packed_programs_compute_the_values_of_the_unpacked_ones():
    """A small residual network (batch norm folded, epilogues fused) with and without the pass,
    including a 7x7 layer of few pixels and a long reduction that im2col runs unpacked."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, 7, 7, 64])
        h = x
        for k, channels in ((3, 64), (1, 96), (1, 64)):
            f = (RNG.standard_normal((k, k, h.shape[3], channels)) * 0.1).astype(np.float32)
            shift = RNG.standard_normal(channels).astype(np.float32)
            h = tf.nn.conv2d(h, f, [1, 1, 1, 1], "SAME") + shift
            h = tf.nn.relu(h + x if channels == 64 and k == 1 else h)
        xv = RNG.standard_normal((1, 7, 7, 64)).astype(np.float32)
        with tf.Session() as sess:
            got = sess.run(h, {x: xv})
        with tf.Session(config=tf.CompileOptions(disable=["pack"])) as sess:
            want = sess.run(h, {x: xv})
        compiled = compile_program(
            program([(h.op.name, 0)], [feed(x.op.name, xv.shape)]), PIPELINE, C
        )
    assert sorted(compiled.graph.op_type(n) for n in compiled.graph.node_names()) == [
        *["Const"] * 6,
        "Feed",
        *["_FusedConv2D"] * 3,
    ]
    shapes = [shape for _, _, shape in _filters(compiled.graph).values()]
    assert shapes == [[3, 3, 64, 64], [1, 1, 64, 96], [1, 1, 96, 64]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
