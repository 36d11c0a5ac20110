"""fuse_conv_epilogues: Conv2D absorbs the bias, residual Add and ReLU that follow it."""

import numpy as np
import pytest
from passcheck import feed, front, program, run

import tfc as tf
from tfc.passes.conv_epilogue import fuse_conv_epilogues

RNG = np.random.default_rng(0)
X = feed("x", (1, 5, 5, 2))


def _fuse(fetches, feeds=(X,), **options):
    return run(fuse_conv_epilogues, front(program(fetches, feeds)), **options)


def _ops(graph):
    return sorted(graph.op_type(n) for n in graph.node_names())


def _conv(x, channels=4, name="conv"):
    f = RNG.standard_normal((3, 3, 2, channels)).astype(np.float32)
    return tf.nn.conv2d(x, tf.constant(f), [1, 1, 1, 1], "SAME", name=name)


def _fused(graph):
    (name,) = [n for n in graph.node_names() if graph.op_type(n) == "_FusedConv2D"]
    return name, graph.node(name)["attrs"]


def _bias(channels=4, shape=None):
    value = RNG.standard_normal(channels).astype(np.float32)
    return value if shape is None else value.reshape(shape)


def test_bias_residual_and_relu_become_one_fused_conv():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    r = tf.placeholder(tf.float32, [1, 5, 5, 4], name="r")
    biased = tf.add(_conv(x), _bias((1, 1, 1, 4)), name="biased")  # batch norm's shift
    tf.nn.relu(tf.add(r, biased, name="sum"), name="out")  # the residual first
    g = _fuse([("out", 0)], [X, feed("r", (1, 5, 5, 4))])
    assert _ops(g) == ["Const", "Const", "Feed", "Feed", "_FusedConv2D"]
    name, attrs = _fused(g)
    assert attrs["fused_ops"] == ["BiasAdd", "Add", "Relu"] and attrs["num_args"] == 2
    assert attrs["strides"] == [1, 1, 1, 1] and attrs["padding"] == "SAME"
    x_in, f_in, b_in, r_in = g.input_edges(name)
    assert (x_in, r_in) == (("x", 0), ("r", 0))
    assert g.node(b_in[0])["attrs"]["value"].shape == (4,)  # the shift as a vector
    assert g.graph_attrs["fetches"] == [(name, 0)]


@pytest.mark.parametrize(
    "tail, fused_ops",
    [
        (lambda y: tf.nn.bias_add(y, _bias(), name="out"), ["BiasAdd"]),
        (lambda y: tf.nn.relu6(tf.add(_bias(), y), name="out"), ["BiasAdd", "Relu6"]),
        (lambda y: tf.add(tf.add(y, _bias()), tf.ones([1, 5, 5, 4]), name="out"),
         ["BiasAdd", "Add"]),
    ],
)  # fmt: skip
def test_each_part_of_the_epilogue_is_optional_but_the_bias(tail, fused_ops):
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    tail(_conv(x))
    g = _fuse([("out", 0)])
    assert _fused(g)[1]["fused_ops"] == fused_ops
    assert "Conv2D" not in _ops(g)


def test_what_is_not_an_epilogue_stays():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    tf.nn.relu(_conv(x, name="c1"), name="no_bias")
    s = tf.placeholder(tf.float32, [4], name="s")
    tf.add(_conv(x, name="c2"), s, name="fed_bias")  # not a constant
    tf.add(_conv(x, name="c3"), RNG.standard_normal((5, 1, 4)).astype(np.float32), name="rows")
    y4 = _conv(x, name="c4")
    tf.add(y4, _bias(), name="read_twice")
    tf.identity(y4, name="other_reader")
    y5 = _conv(x, channels=1, name="c5")
    tf.add(y5, np.ones((1, 5, 5, 3), np.float32), name="broadcasts")  # [.., 1] -> [.., 3]
    fetches = ["no_bias", "fed_bias", "rows", "read_twice", "other_reader", "broadcasts"]
    g = _fuse([(f, 0) for f in fetches], [X, feed("s", (4,))])
    assert "_FusedConv2D" not in _ops(g)
    assert _ops(g).count("Conv2D") == 5


def test_a_variable_bias_of_one_value_per_channel_is_absorbed():
    """A Session's model: the bias is a [C] variable (tf.nn.bias_add of tf.get_variable); a
    variable of another shape stays an element-wise add."""
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    bias = tf.Variable(_bias(), name="bias")
    rows = tf.Variable(_bias(shape=(1, 1, 1, 4)), name="rows")
    tf.nn.relu(tf.nn.bias_add(_conv(x, name="c1"), bias), name="out")
    tf.add(_conv(x, name="c2"), rows, name="shaped")
    g = _fuse([("out", 0), ("shaped", 0)])
    name, attrs = _fused(g)
    assert attrs["fused_ops"] == ["BiasAdd", "Relu"]
    assert g.input_edges(name)[2] == ("bias/read", 0)  # the Identity a training program keeps
    assert _ops(g).count("Conv2D") == 1 and "Add" in _ops(g)


def test_a_fetched_intermediate_ends_the_chain_and_targets_without_it_keep_it():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    biased = tf.add(_conv(x), _bias(), name="biased")
    tf.nn.relu(biased, name="out")
    g = _fuse([("biased", 0), ("out", 0)])
    name, attrs = _fused(g)
    assert attrs["fused_ops"] == ["BiasAdd"]  # the biased value is fetched: no Relu inside
    assert g.graph_attrs["fetches"] == [(name, 0), ("out", 0)]
    assert g.input_edges("out") == [(name, 0)]


def test_a_residual_of_another_shape_or_dtype_is_not_absorbed():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    r = tf.placeholder(tf.float32, [1, 1, 1, 4], name="r")
    tf.nn.relu(tf.add(tf.add(_conv(x), _bias()), r), name="out")  # broadcast: not a residual
    g = _fuse([("out", 0)], [X, feed("r", (1, 1, 1, 4))])
    assert _fused(g)[1]["fused_ops"] == ["BiasAdd"]
    assert sorted(_ops(g)) == ["Add", "Const", "Const", "Feed", "Feed", "Relu", "_FusedConv2D"]


def test_targets_without_the_kernel_keep_the_graph():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    tf.nn.relu(tf.add(_conv(x), _bias()), name="out")
    g = _fuse([("out", 0)], enabled=False)
    assert _ops(g) == ["Add", "Const", "Const", "Conv2D", "Feed", "Relu"]


def test_fused_convs_joined_along_the_channels_write_their_slices():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    a = tf.nn.relu(tf.add(_conv(x, 4, "a"), _bias(4)))
    b = tf.add(_conv(x, 3, "b"), _bias(3))
    tf.concat([a, b], 3, name="out")
    g = _fuse([("out", 0)])
    (name,) = [n for n in g.node_names() if g.op_type(n) == "_FusedConv2DConcat"]
    members = g.node(name)["attrs"]["members"]
    assert [m["fused_ops"] for m in members] == [["BiasAdd", "Relu"], ["BiasAdd"]]
    assert [src for src, _ in g.input_edges(name)][0::3] == ["x", "x"]
    assert _ops(g) == ["Const"] * 4 + ["Feed", "_FusedConv2DConcat"]
    assert g.graph_attrs["fetches"] == [(name, 0)]


def test_joins_of_anything_else_stay():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    r = tf.placeholder(tf.float32, [1, 5, 5, 4], name="r")
    fused = [tf.add(_conv(x, name=f"c{i}"), _bias()) for i in range(6)]
    tf.concat([fused[0], x], 3, name="with_a_feed")
    tf.concat([fused[1], fused[2]], 2, name="along_the_width")
    tf.concat([fused[3], tf.add(fused[4], r)], 3, name="with_a_residual")  # c4 absorbs r
    tf.concat([fused[5], fused[5]], 3, name="twice")
    fetches = [(n, 0) for n in ("with_a_feed", "along_the_width", "with_a_residual", "twice")]
    g = _fuse(fetches, [X, feed("r", (1, 5, 5, 4))])
    assert "_FusedConv2DConcat" not in _ops(g)
    assert _ops(g).count("_FusedConv2D") == 6 and _ops(g).count("ConcatV2") == 4


def test_a_pad_of_zeros_before_a_valid_conv_becomes_its_explicit_padding():
    """ONNX's pads that are not TF's SAME ones (ResNet-50's stride-2 3x3 layers) import as a
    Pad then a VALID Conv2D; the fused convolution pads its input itself."""
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    padded = tf.pad(x, [[0, 0], [1, 1], [0, 2], [0, 0]], name="pad")
    f = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32)
    y = tf.nn.conv2d(padded, tf.constant(f), [1, 2, 2, 1], "VALID", name="conv")
    tf.nn.relu(tf.add(y, _bias()), name="out")
    g = _fuse([("out", 0)])
    name, attrs = _fused(g)
    assert attrs["padding"] == "EXPLICIT"
    assert attrs["explicit_paddings"] == [0, 0, 1, 1, 0, 2, 0, 0]
    assert g.input_edges(name)[0] == ("x", 0)
    assert "Pad" not in _ops(g)
    assert g.node(name)["shapes"][0] == (1, 3, 3, 4)


def test_pads_that_are_not_zero_borders_stay():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    f = tf.constant(RNG.standard_normal((3, 3, 2, 4)).astype(np.float32))
    ones = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=1.0)
    channels = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 2]])
    shared = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    tf.identity(shared, name="also")
    same = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    f6 = tf.constant(RNG.standard_normal((3, 3, 4, 4)).astype(np.float32))
    outs = [
        tf.add(tf.nn.conv2d(ones, f, 1, "VALID"), _bias(), name="ones"),
        tf.add(tf.nn.conv2d(channels, f6, 1, "VALID"), _bias(), name="channels"),
        tf.add(tf.nn.conv2d(shared, f, 1, "VALID"), _bias(), name="shared"),
        tf.add(tf.nn.conv2d(same, f, 1, "SAME"), _bias(), name="same"),
    ]
    g = _fuse([(t.op.name, 0) for t in outs] + [("also", 0)])
    assert _ops(g).count("_FusedConv2D") == 4
    assert _ops(g).count("Pad") + _ops(g).count("PadV2") == 4
    for n in g.node_names():
        if g.op_type(n) == "_FusedConv2D":
            assert g.node(n)["attrs"]["padding"] != "EXPLICIT"
