"""The forward direct convolution on the image itself, without a zero-bordered copy: its tiles
at an edge run on a copy of their windows with zeros outside the image (tfc_conv_strip) and give
the bits of the bordered kernel over every kind of edge."""

import os
import platform

import numpy as np
import pytest

import tfc as tf
from tfc.ops import conv_algo
from tfc.ops.kernels import ConvPlan, Geometry
from tfc.ops.registry import apply_op

RNG = np.random.default_rng(18)
# name: (x shape, filter shape, strides, dilations, (top, bottom, left, right) or SAME/VALID).
# Rows of several pixel tiles (widths 13, 30), each tile at an edge or not; a stride of 2 whose
# SAME padding lies after the image only; dilation; explicit paddings, uneven, one-sided and
# wider than the kernel (output rows and columns with no tap inside the image); images smaller
# than the kernel; 3, 8 and 64 input channels; 9 (a partial block), 32 and 64 (two blocks)
# output channels; a small image under a large filter (the blocked kernel, filter blocks
# outermost, which keeps the bordered copy).
CONVS = {
    "same-s1-w13": ((2, 5, 13, 8), (3, 3, 8, 32), (1, 1), (1, 1), "SAME"),
    "same-s1-w30-o9": ((1, 4, 30, 3), (3, 3, 3, 9), (1, 1), (1, 1), "SAME"),
    "same-s2-even": ((2, 8, 14, 8), (3, 3, 8, 64), (2, 2), (1, 1), "SAME"),
    "same-s2-odd": ((2, 7, 9, 5), (3, 3, 5, 9), (2, 2), (1, 1), "SAME"),
    "same-dilated": ((1, 7, 11, 4), (3, 3, 4, 16), (1, 1), (2, 2), "SAME"),
    "same-5x5-on-2x3": ((2, 2, 3, 8), (5, 5, 8, 16), (1, 1), (1, 1), "SAME"),
    "same-7x7-s2": ((1, 9, 12, 3), (7, 7, 3, 16), (2, 2), (1, 1), "SAME"),
    "valid-s1": ((1, 6, 13, 8), (3, 3, 8, 32), (1, 1), (1, 1), "VALID"),
    "explicit-uneven": ((2, 6, 7, 5), (3, 3, 5, 9), (2, 2), (1, 1), (1, 2, 2, 0)),
    "explicit-wide": ((1, 3, 4, 8), (3, 3, 8, 16), (1, 1), (1, 1), (4, 1, 5, 3)),
    "explicit-dilated-s2": ((1, 8, 10, 8), (3, 3, 8, 32), (2, 2), (2, 3), (3, 0, 0, 4)),
    "blocked-3x3": ((4, 3, 3, 64), (3, 3, 64, 64), (1, 1), (1, 1), "SAME"),
}


def _pads(x_shape, f_shape, strides, dilations, padding):
    """(top, bottom, left, right) as TF pads: SAME's odd pixel after."""
    if not isinstance(padding, str):
        return padding
    pads = []
    for size, k, s, d in zip(x_shape[1:3], f_shape[:2], strides, dilations):
        span = (k - 1) * d + 1
        out = -(-size // s) if padding == "SAME" else -(-(size - span + 1) // s)
        total = max((out - 1) * s + span - size, 0) if padding == "SAME" else 0
        pads += [total // 2, total - total // 2]
    return tuple(pads)


def conv2d_np(x, f, strides, dilations, pads):
    """NHWC x HWIO in float64 with zero padding `pads` (top, bottom, left, right)."""
    top, bottom, left, right = pads
    xp = np.pad(x.astype(np.float64), [(0, 0), (top, bottom), (left, right), (0, 0)])
    kh, kw = f.shape[:2]
    (sh, sw), (dh, dw) = strides, dilations
    oh = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((x.shape[0], oh, ow, f.shape[3]))
    for i in range(kh):
        for j in range(kw):
            window = xp[:, i * dh : i * dh + (oh - 1) * sh + 1 : sh]
            window = window[:, :, j * dw : j * dw + (ow - 1) * sw + 1 : sw]
            y += np.einsum("nhwc,co->nhwo", window, f[i, j].astype(np.float64))
    return y


def _graph():
    """Every case as a forced-direct _FusedConv2D (bias, Relu) of fed tensors; the feeds and
    the float64 results each should be near."""
    g = tf.Graph()
    feeds, outputs, wants = {}, [], []
    with g.as_default():
        for xs, fs, strides, dilations, padding in CONVS.values():
            x = RNG.standard_normal(xs).astype(np.float32)
            f = RNG.standard_normal(fs).astype(np.float32)
            bias = RNG.standard_normal(fs[3]).astype(np.float32)
            pads = _pads(xs, fs, strides, dilations, padding)
            attrs = {"strides": [1, *strides, 1], "dilations": [1, *dilations, 1]}
            if isinstance(padding, str):
                attrs["padding"] = padding
            else:
                attrs.update(padding="EXPLICIT", explicit_paddings=[0, 0, *pads, 0, 0])
            attrs.update(fused_ops=["BiasAdd", "Relu"], num_args=1, _algorithm="direct")
            inputs = []
            for value in (x, f, bias):
                inputs.append(tf.placeholder(tf.float32, value.shape))
                feeds[inputs[-1]] = value
            outputs.append(apply_op("_FusedConv2D", inputs, attrs).outputs[0])
            wants.append(np.maximum(conv2d_np(x, f, strides, dilations, pads) + bias, 0))
    return g, feeds, outputs, wants


@pytest.fixture(scope="module")
def results():
    """Each case's outputs from the kernel on the image and from the bordered kernel."""
    g, feeds, outputs, wants = _graph()
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        for bordered in (False, True):
            mp.setattr(conv_algo, "FORWARD_BORDERED", bordered)
            with tf.Session(graph=g, config=tf.CompileOptions(passes=[])) as sess:
                got[bordered] = sess.run(outputs, feeds)
    return got, wants


@pytest.mark.parametrize("index, case", list(enumerate(CONVS)), ids=list(CONVS))
def test_the_image_without_a_border_gives_the_bordered_bits(results, index, case):
    got, wants = results
    unbordered, bordered = got[False][index], got[True][index]
    taps = np.prod(CONVS[case][1][:3])
    np.testing.assert_allclose(unbordered, wants[index], rtol=1e-5, atol=3e-7 * taps)
    np.testing.assert_array_equal(unbordered, bordered)


def test_only_padded_forward_convolutions_skip_the_copy():
    """The plan's hp, wp: the image's own size where the forward kernel reads it as it is,
    the padded size for the kernels that still read a bordered copy (backprop filter, and the
    blocked forward kernel, whose strips would be copied once per filter block)."""
    g = Geometry(1, 5, 6, 8, 5, 6, 16, 3, 3, 1, 1, 1, 1, 1, 1)
    assert g.padded_size() == (7, 8)
    assert not conv_algo.bordered_input("forward", g)
    assert conv_algo.bordered_input("forward", g, blocked=True)
    assert conv_algo.bordered_input("filter", g)
    valid = Geometry(1, 5, 6, 8, 3, 4, 16, 3, 3, 1, 1, 1, 1, 0, 0)
    assert not conv_algo.bordered_input("filter", valid)


def test_the_blocked_kernel_splits_a_part_into_equal_groups_of_rows():
    """As few groups as fit conv_algo.L2_GROUP_BYTES, of equal size (a last group of a row or
    two read the whole filter for little work)."""
    f32 = tf.float32
    # ResNet-50's 3x3 stride-2 512->512 into 7x7, 2 images a part: 14 rows, 13 fit
    strided = Geometry(32, 14, 14, 512, 7, 7, 512, 3, 3, 2, 2, 1, 1, 0, 0)
    assert conv_algo.group_rows(strided, 2, 15, f32) == 7
    # 1x1 1024->512 on 14x14: 28 rows, 12 fit
    wide = Geometry(32, 14, 14, 1024, 14, 14, 512, 1, 1, 1, 1, 1, 1, 0, 0)
    assert conv_algo.group_rows(wide, 2, 14, f32) == 10
    # all the rows where they fit, one row where not even two do
    assert (
        conv_algo.group_rows(Geometry(2, 7, 7, 8, 7, 7, 8, 1, 1, 1, 1, 1, 1, 0, 0), 2, 7, f32) == 14
    )
    huge = Geometry(1, 9, 4096, 64, 9, 4096, 64, 1, 1, 1, 1, 1, 1, 0, 0)
    assert conv_algo.group_rows(huge, 1, 4096, f32) == 1


def test_inspect_names_the_bordered_copy_only_where_there_is_one():
    fields = dict(in_h=5, in_w=6, hp=5, wp=6, packed=0, blocked=0, k_h=3, k_w=3)
    on_image = ConvPlan("direct", "direct", fields, (None, None), 0)
    assert conv_algo.describe_plan("forward", on_image) == "direct"
    copy = ConvPlan("direct", "direct", dict(fields, hp=7, wp=8), (0, None), 0)
    assert conv_algo.describe_plan("forward", copy) == "direct, on a zero-bordered copy"


def test_the_input_rows_are_prefetched_where_a_pixel_spans_more_than_a_cache_line():
    """Plan field prefetch_rows: the forward direct kernel prefetches the next output row's
    input rows from 17 float32 channels (68 bytes a pixel) on, not at 16 (64) nor at SqueezeNet
    conv1's 3; 9 float64 channels (72) on. Backprop input always; backprop filter never."""
    from tfc.ops.registry import OpContext

    def plan(kind, in_c, dtype=tf.float32, out_c=32):
        g = Geometry(1, 8, 8, in_c, 8, 8, out_c, 3, 3, 1, 1, 1, 1, 1, 1)
        ctx = OpContext("conv", "Conv2D", {"_algorithm": "direct"}, [dtype], [])
        return conv_algo.plan_conv(ctx, kind, g, dtype).fields["prefetch_rows"]

    assert [plan("forward", c) for c in (3, 16, 17, 64)] == [0, 0, 1, 1]
    assert [plan("forward", c, tf.float64) for c in (8, 9)] == [0, 1]
    # backprop input's direct kernel (not the row scatter of few input channels) reads the
    # gradient's out_c channels a pixel: 3 or 64
    assert [plan("input", 64, out_c=c) for c in (3, 64)] == [1, 1]
    assert [plan("filter", c) for c in (3, 64)] == [0, 0]


# (x shape, filter shape, dtype, a residual added): rows of 7 (one tile), 13 and 30 pixels,
# out_c 64 (two blocks of 32) and 40 (a partial block), a 1x1 filter; f32 and f64
PACKED = [
    ((2, 7, 7, 16), (3, 3, 16, 64), tf.float32, True),
    ((1, 5, 13, 8), (3, 3, 8, 40), tf.float32, True),
    ((1, 3, 30, 24), (1, 1, 24, 64), tf.float32, False),
    ((1, 6, 7, 8), (3, 3, 8, 32), tf.float64, False),
]


def _packed_graph():
    """The PACKED forward convolutions of constant filters (packed in blocks by
    tfc/passes/conv_pack.py), bias, residual and Relu fused, SAME: the feeds, outputs and
    float64 results."""
    rng = np.random.default_rng(29)
    g = tf.Graph()
    feeds, outputs, wants = {}, [], []
    with g.as_default():
        for xs, fs, dtype, residual in PACKED:
            x = rng.standard_normal(xs).astype(dtype.as_numpy_dtype)
            f = rng.standard_normal(fs).astype(dtype.as_numpy_dtype)
            bias = rng.standard_normal(fs[3]).astype(dtype.as_numpy_dtype)
            xt = tf.placeholder(dtype, xs)
            feeds[xt] = x
            y = tf.nn.bias_add(tf.nn.conv2d(xt, tf.constant(f), [1, 1, 1, 1], "SAME"), bias)
            pads = _pads(xs, fs, (1, 1), (1, 1), "SAME")
            want = conv2d_np(x, f, (1, 1), (1, 1), pads) + bias
            if residual:
                r = rng.standard_normal(want.shape).astype(dtype.as_numpy_dtype)
                rt = tf.placeholder(dtype, r.shape)
                feeds[rt] = r
                y, want = y + rt, want + r
            outputs.append(tf.nn.relu(y))
            wants.append(np.maximum(want, 0))
    return g, feeds, outputs, wants


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 vector flags")
@pytest.mark.parametrize("flags", ["-mno-avx512f", "-mno-avx"], ids=["avx", "sse"])
def test_the_narrow_tiles_give_the_numbers_on_32_and_16_byte_vectors(monkeypatch, flags):
    """The forward tiles of vectors narrower than 64 bytes run a block of channels in parts of
    at most TFC_CONV_NARROW_ACC accumulators (tfc_conv_narrow_part): 6 pixels x 2 vectors, or
    a 7-pixel row. Built without AVX-512 (32-byte vectors, what an AVX2 host builds) and
    without AVX (16-byte ones), every case above and the packed filters match float64, to a
    tolerance per product summed (each output's taps)."""
    monkeypatch.setenv("TFC_CFLAGS", f"{os.environ.get('TFC_CFLAGS', '')} {flags}")
    runs = [
        (_graph, tf.CompileOptions(passes=[]), [np.prod(c[1][:3]) for c in CONVS.values()]),
        (_packed_graph, None, [np.prod(case[1][:3]) for case in PACKED]),
    ]
    for make, config, taps in runs:
        g, feeds, outputs, wants = make()
        with tf.Session(graph=g, config=config) as sess:
            got = sess.run(outputs, feeds)
        for out, want, value, n in zip(outputs, wants, got, taps, strict=True):
            rtol, eps = (1e-5, 3e-7) if out.dtype == tf.float32 else (1e-12, 1e-15)
            np.testing.assert_allclose(value, want, rtol=rtol, atol=eps * n, err_msg=out.name)


def test_a_narrow_forward_tile_is_six_pixels_or_a_row_of_seven():
    """The plan's pix_block for the tiles of 32-byte vectors: 6 pixels (x 2 vectors per part)
    on wide rows, the whole row where it has at most NARROW_ROW_PIXELS."""
    from tfc.ops.registry import OpContext

    def pix(width, out_c=64):
        g = Geometry(1, 9, width, 64, 9, width, out_c, 3, 3, 1, 1, 1, 1, 1, 1)
        ctx = OpContext("conv", "Conv2D", {"_algorithm": "direct"}, [tf.float32], [])
        return conv_algo.plan_conv(ctx, "forward", g, tf.float32).fields["pix_block"]

    assert [pix(w) for w in (56, 14, 8, 7, 5, 3)] == [6, 6, 6, 7, 5, 3]
    assert pix(56, out_c=8) == 8  # one vector of channels: 8 pixels
