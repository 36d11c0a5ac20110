"""_FusedConv2D: the convolution's epilogue (bias, residual, ReLU/ReLU6) on each of tfc_conv.h's
forward kernels, and _FusedConv2DConcat: convolutions writing their channels of a concatenation,
against NumPy and bit for bit against the unfused ops."""

import dataclasses

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from opcheck import CaseBatch
from passcheck import feed, program

import tfc as tf
from tfc.codegen.targets import C
from tfc.compiler import PIPELINE, compile_program
from tfc.ops import conv_algo
from tfc.ops.conv import pack_filter
from tfc.ops.conv_algo import forward_filter_block
from tfc.ops.kernels import Geometry
from tfc.ops.registry import apply_op

RNG = np.random.default_rng(7)
F = ["float32", "float64"]
# the forced kernels (tfc's own choice runs in the end-to-end tests below); the direct kernel
# applies the epilogue to its register tiles, the others to the rows they wrote (one function)
ALGORITHMS = ("direct", "im2col", "columns")
# (x shape, filter shape, stride, padding): full and partial channel blocks (9; 64 = two
# 32-channel blocks), rows of full and partial pixel tiles (13 columns), a stride, and a shape
# the columns kernel takes (3 -> 8 channels at stride 1 along the width), and a 1x1 one (im2col
# reads x as its GEMM's rows: tfc_conv_forward_pointwise; its blocks of rows with a residual:
# test_a_pointwise_gemm_with_a_residual_writes_over_it_in_blocks)
CONVS = {
    "c5-o9-s2": ((2, 7, 9, 5), (3, 3, 5, 9), 2, "SAME"),
    "c8-o64-w13": ((2, 5, 13, 8), (3, 3, 8, 64), 1, "SAME"),
    "c3-o8-cols": ((1, 6, 11, 3), (3, 3, 3, 8), 1, "VALID"),
    "c8-o64-1x1": ((2, 5, 13, 8), (1, 1, 8, 64), 1, "VALID"),
}
# each part alone and all together (Relu6 clamps at 0 as Relu does, then at 6)
F64_CONVS = ("c8-o64-w13",)  # float64's vectors hold half the lanes
EPILOGUES = {
    "bias": ["BiasAdd"],
    "bias-relu": ["BiasAdd", "Relu"],
    "bias-residual-relu6": ["BiasAdd", "Add", "Relu6"],
}


def conv2d_np(x, f, stride, padding):
    """NHWC x HWIO in float64, TF's SAME split (the odd pixel after)."""
    kh, kw = f.shape[:2]
    if padding == "SAME":
        pads = []
        for size, k in zip(x.shape[1:3], (kh, kw)):
            out = -(-size // stride)
            total = max((out - 1) * stride + k - size, 0)
            pads.append((total // 2, total - total // 2))
        x = np.pad(x, [(0, 0), *pads, (0, 0)])
    windows = sliding_window_view(x.astype(np.float64), (kh, kw), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]
    return np.einsum("nhwcij,ijco->nhwo", windows, f.astype(np.float64))


def epilogue_np(y, bias, residual, fused_ops, dtype):
    """The unfused ops in `dtype`: each step rounded."""
    y = y.astype(dtype) + bias
    if "Add" in fused_ops:
        y = y + residual
    if "Relu" in fused_ops or "Relu6" in fused_ops:
        y = np.where(y < 0, 0, y)
    if "Relu6" in fused_ops:
        y = np.where(y > 6, 6, y)
    return y.astype(dtype)


def _build():
    b = CaseBatch()
    pairs, packed_pairs = [], []
    with b.graph.as_default():
        for dtype in F:
            for name, (xs, fs, stride, padding) in CONVS.items():
                if dtype == "float64" and name not in F64_CONVS:
                    continue
                x = RNG.standard_normal(xs).astype(dtype)
                f = RNG.standard_normal(fs).astype(dtype)
                bias = RNG.standard_normal(fs[3]).astype(dtype)
                y = conv2d_np(x, f, stride, padding)
                residual = RNG.standard_normal(y.shape).astype(dtype) * 2
                residual.flat[::7] = np.nan  # NaN passes ReLU as the Relu kernel passes it
                xt, ft, bt, rt = (b.feed(v) for v in (x, f, bias, residual))
                rtol, atol = (1e-5, 3e-7) if dtype == "float32" else (1e-12, 1e-14)
                atol *= fs[0] * fs[1] * fs[2]
                for algorithm in ALGORITHMS:
                    if algorithm == "columns" and not name.endswith("cols"):
                        continue  # the direct kernel would run again
                    attrs = {"strides": [1, stride, stride, 1], "padding": padding}
                    attrs["_algorithm"] = algorithm
                    conv = apply_op("Conv2D", [xt, ft], attrs).outputs[0]
                    for tag, ops in EPILOGUES.items():
                        pointwise = name.endswith("1x1") and algorithm == "im2col"
                        if algorithm != "direct" and tag != "bias-residual-relu6" and not pointwise:
                            continue
                        args = [bt, rt] if "Add" in ops else [bt]
                        fused_attrs = dict(attrs, fused_ops=ops, num_args=len(args))
                        fused = apply_op("_FusedConv2D", [xt, ft, *args], fused_attrs).outputs[0]
                        unfused = tf.nn.bias_add(conv, bt)
                        if "Add" in ops:
                            unfused = tf.add(unfused, rt)
                        if ops[-1] in ("Relu", "Relu6"):
                            unfused = getattr(tf.nn, ops[-1].lower())(unfused)
                        case = f"{dtype}-{algorithm}-{name}-{tag}"
                        want = epilogue_np(y, bias, residual, ops, dtype)
                        b.add(case, fused, want, rtol, atol)
                        b.add(f"{case}-unfused", unfused, want, rtol, atol)
                        pairs.append(case)
                        if algorithm == "direct":  # the filter packed (pack_conv_filters)
                            packed = pack_filter(f, forward_filter_block(fs[3], tf.as_dtype(dtype)))
                            pt = b.feed(packed)
                            packed_attrs = dict(fused_attrs, packed_filter=list(fs))
                            del packed_attrs["_algorithm"]
                            fused = apply_op("_FusedConv2D", [xt, pt, *args], packed_attrs)
                            b.add(f"{case}-packed", fused.outputs[0], want, rtol, atol)
                            packed_pairs.append(case)
        # explicit paddings (a Pad folded in by the epilogue pass), uneven and on one side only
        x = RNG.standard_normal((2, 6, 7, 5)).astype(np.float32)
        f = RNG.standard_normal((3, 3, 5, 9)).astype(np.float32)
        bias = RNG.standard_normal(9).astype(np.float32)
        padded = np.pad(x, [(0, 0), (1, 2), (2, 0), (0, 0)])
        want = epilogue_np(conv2d_np(padded, f, 2, "VALID"), bias, None, ["BiasAdd"], np.float32)
        attrs = {"strides": [1, 2, 2, 1], "padding": "EXPLICIT", "fused_ops": ["BiasAdd"]}
        attrs.update(explicit_paddings=[0, 0, 1, 2, 2, 0, 0, 0], num_args=1)
        inputs = [b.feed(x), b.feed(f), b.feed(bias)]
        for algorithm in ("direct", "im2col"):
            fused = apply_op("_FusedConv2D", inputs, dict(attrs, _algorithm=algorithm))
            b.add(f"explicit-{algorithm}", fused.outputs[0], want, 1e-5, 3e-7 * 45)
        packed = [inputs[0], b.feed(pack_filter(f, 16)), inputs[2]]
        fused = apply_op("_FusedConv2D", packed, dict(attrs, packed_filter=[3, 3, 5, 9]))
        b.add("explicit-packed", fused.outputs[0], want, 1e-5, 3e-7 * 45)
        # joins: each member writes its channels of the concatenation (fire modules: a 1x1
        # and a 3x3 expansion of one image; members of every kernel, with full and partial
        # channel blocks)
        for dtype in F:
            x = RNG.standard_normal((2, 5, 13, 3)).astype(dtype)
            xt = b.feed(x)
            for algorithm in ALGORITHMS if dtype == "float32" else ("direct",):
                members, fused, wants = [], [], []
                for k, channels, ops in ((1, 8, ["BiasAdd", "Relu"]), (3, 33, ["BiasAdd"])):
                    f = RNG.standard_normal((k, k, 3, channels)).astype(dtype)
                    bias = RNG.standard_normal(channels).astype(dtype)
                    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME"}
                    attrs["_algorithm"] = algorithm
                    member = dict(attrs, fused_ops=ops, num_args=1)
                    inputs = [xt, b.feed(f), b.feed(bias)]
                    members.append((inputs, member))
                    fused.append(apply_op("_FusedConv2D", inputs, member).outputs[0])
                    wants.append(epilogue_np(conv2d_np(x, f, 1, "SAME"), bias, None, ops, dtype))
                joined = apply_op(
                    "_FusedConv2DConcat",
                    [t for inputs, _ in members for t in inputs],
                    {"members": [m for _, m in members]},
                ).outputs[0]
                case = f"{dtype}-{algorithm}-join"
                rtol, atol = (1e-5, 3e-7 * 27) if dtype == "float32" else (1e-12, 1e-14 * 27)
                want = np.concatenate(wants, axis=-1)
                b.add(case, joined, want, rtol, atol)
                b.add(f"{case}-unfused", tf.concat(fused, 3), want, rtol, atol)
                pairs.append(case)
    return b, pairs, packed_pairs


BATCH, PAIRS, PACKED = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_fused_conv2d(case):
    BATCH.check(case)


def test_the_epilogue_gives_the_bits_of_the_unfused_ops():
    compiled, _ = BATCH.results()
    for case in PAIRS:
        np.testing.assert_array_equal(compiled[case], compiled[f"{case}-unfused"], err_msg=case)


def test_a_packed_filter_gives_the_bits_of_the_hwio_one():
    compiled, _ = BATCH.results()
    assert len(PACKED) == 15  # every direct case, float32 and float64
    for case in PACKED:
        np.testing.assert_array_equal(compiled[f"{case}-packed"], compiled[case], err_msg=case)


def test_pack_filter_lays_out_blocks_of_output_channels():
    f = np.arange(2 * 1 * 3 * 5, dtype=np.float32).reshape(2, 1, 3, 5)
    packed = pack_filter(f, 4)
    assert packed.shape == (2, 6, 4)  # 5 channels in 2 blocks of 4, 6 taps
    np.testing.assert_array_equal(packed[0], f.reshape(6, 5)[:, :4])
    np.testing.assert_array_equal(packed[1, :, 0], f.reshape(6, 5)[:, 4])
    assert not packed[1, :, 1:].any()  # zeros past the last channel
    x = tf.placeholder(tf.float32, [1, 4, 4, 3])
    b = tf.constant(np.ones(5, np.float32))
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME", "fused_ops": ["BiasAdd"]}
    with pytest.raises(ValueError, match=r"packed from \[2, 1, 3, 5\] must have shape \[1, 6, 8\]"):
        bad = tf.constant(packed)  # blocks of 4, where a 5-channel tile holds 8
        apply_op("_FusedConv2D", [x, bad, b], dict(attrs, num_args=1, packed_filter=[2, 1, 3, 5]))


def test_bad_epilogues_are_named():
    x = tf.placeholder(tf.float32, [1, 5, 5, 2])
    f = tf.constant(np.ones((3, 3, 2, 4), np.float32))
    b = tf.constant(np.ones(4, np.float32))
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME"}
    with pytest.raises(ValueError, match=r"fused_ops \['Relu'\] is not supported"):
        apply_op("_FusedConv2D", [x, f, b], dict(attrs, fused_ops=["Relu"], num_args=1))
    with pytest.raises(ValueError, match="takes 2 argument"):
        apply_op("_FusedConv2D", [x, f, b], dict(attrs, fused_ops=["BiasAdd", "Add"], num_args=1))
    with pytest.raises(ValueError, match="2 members take 6 inputs"):
        member = dict(attrs, fused_ops=["BiasAdd"], num_args=1)
        apply_op("_FusedConv2DConcat", [x, f, b], {"members": [member, member]})
    with pytest.raises(ValueError, match="members must agree"):
        f8 = tf.constant(np.ones((3, 3, 2, 4), np.float32))
        wide = tf.placeholder(tf.float32, [1, 5, 6, 2])
        apply_op("_FusedConv2DConcat", [x, f, b, wide, f8, b], {"members": [member, member]})
    with pytest.raises(ValueError, match=r"explicit_paddings \[0, 0, 1, 1\] must be 8 values"):
        pads = dict(attrs, padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1])
        apply_op("_FusedConv2D", [x, f, b], dict(pads, fused_ops=["BiasAdd"], num_args=1))
    with pytest.raises(ValueError, match="not in the list of allowed values"):  # fused only
        apply_op("Conv2D", [x, f], dict(attrs, padding="EXPLICIT", explicit_paddings=[0] * 8))
    with pytest.raises(ValueError, match=r"bias must have shape \[4\]"):
        bad = tf.constant(np.ones(3, np.float32))
        apply_op("_FusedConv2D", [x, f, bad], dict(attrs, fused_ops=["BiasAdd"], num_args=1))


def test_resnet_blocks_compile_to_fused_convs_with_the_unfused_values():
    """A residual block as the ONNX importer leaves it after batch-norm folding: the default
    pipeline fuses each convolution's epilogue; the result matches the pipeline without it."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 6, 6, 32])
        h = x
        for i in range(2):
            f = RNG.standard_normal((3, 3, 32, 32)).astype(np.float32) * 0.1
            shift = RNG.standard_normal((1, 1, 1, 32)).astype(np.float32)
            scale = RNG.uniform(0.5, 1.5, 32).astype(np.float32)
            y = tf.nn.conv2d(h, f, [1, 1, 1, 1], "SAME") * scale + shift
            h = tf.nn.relu(y + x) if i else tf.nn.relu(y)
        xv = RNG.standard_normal((2, 6, 6, 32)).astype(np.float32)
        kernels, got, want = _fused_and_unfused(h, {x: xv})
    assert kernels == ["_FusedConv2D", "_FusedConv2D"]
    np.testing.assert_array_equal(got, want)


def test_variable_biases_fuse_in_inference_and_training_with_the_unfused_bits():
    """A Session's CNN (filters and biases variables, as samples/lenet_model.py): its training
    step and its inference fuse each bias and ReLU into the convolution, and two steps give the
    bits of the pipeline without the epilogue pass (the second reads the updated biases)."""
    xv = RNG.standard_normal((2, 8, 8, 1)).astype(np.float32)
    init = [_filter(3, 1, 6), _filter(1, 6), _filter(3, 6, 16), _filter(1, 16)]
    results = {}
    for disable in ([], ["epilogue"]):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, xv.shape)
            h = x
            for i in range(0, 4, 2):
                f, b = tf.Variable(init[i]), tf.Variable(init[i + 1])
                h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, f, 1, "SAME"), b))
            step = tf.train.GradientDescentOptimizer(0.01).minimize(tf.reduce_sum(h * h))
            with tf.Session(config=tf.CompileOptions(disable=disable)) as sess:
                sess.run(tf.global_variables_initializer())
                results[bool(disable)] = [sess.run([h, step], {x: xv})[0] for _ in range(2)]
            if not disable:
                feeds = [feed(x.op.name, xv.shape)]
                programs = [
                    program([(h.op.name, 0)], feeds, targets) for targets in ([step.name], [])
                ]
                ops = [
                    [p.graph.op_type(n) for n in p.graph.node_names()]
                    for p in (compile_program(graph, PIPELINE, C) for graph in programs)
                ]
    for kinds in ops:  # the training step, then inference
        assert kinds.count("_FusedConv2D") == 2 and "Conv2D" not in kinds
    np.testing.assert_array_equal(results[False], results[True])


def test_fire_modules_join_their_expansions_without_a_copy():
    """SqueezeNet's fire module as imported: squeeze, then a 1x1 and a 3x3 expansion of it
    concatenated; the default pipeline makes the join one node of two kernels."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, 9, 9, 16])
        h = x
        for _ in range(2):
            squeeze = tf.nn.relu(tf.nn.conv2d(h, _filter(1, 16, 8), 1, "SAME") + _filter(1, 8))
            expand = [
                tf.nn.relu(tf.nn.conv2d(squeeze, _filter(k, 8, 8), 1, "SAME") + _filter(1, 8))
                for k in (1, 3)
            ]
            h = tf.concat(expand, 3)
        xv = RNG.standard_normal((1, 9, 9, 16)).astype(np.float32)
        kernels, got, want = _fused_and_unfused(h, {x: xv})
    assert kernels == ["_FusedConv2D", "_FusedConv2DConcat"] * 2
    np.testing.assert_array_equal(got, want)


def _filter(k, *channels):
    """A [k, k, *channels] filter (k = 1 and one channel count: a bias of that many)."""
    shape = (k, k, *channels) if len(channels) == 2 else channels
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def _fused_and_unfused(fetch, feeds):
    """(the kernels' ops, the result) of the default pipeline, and the result without the
    epilogue pass, in the default graph."""
    with tf.Session() as sess:
        profile = sess.profile(fetch, feeds, runs=1, warmup=0)
        got = sess.run(fetch, feeds)
    with tf.Session(config=tf.CompileOptions(disable=["epilogue"])) as sess:
        want = sess.run(fetch, feeds)
    return [k.ops for k in profile.kernels], got, want


def test_the_direct_kernel_writes_over_a_dying_residual():
    """A residual that no op reads later gives its bytes to the output where the direct kernel
    runs (each tile reads its residual just before writing there), not where im2col runs (its
    product lands on the output before the residual is added): the same values either way."""
    xv = RNG.standard_normal((2, 5, 13, 8)).astype(np.float32)
    f, bias = _filter(3, 8, 64), _filter(1, 64)
    attrs = dict(strides=[1, 1, 1, 1], padding="SAME", fused_ops=["BiasAdd", "Add", "Relu"])
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        ys = {}
        for algorithm, scale in (("direct", 2.0), ("im2col", 3.0)):
            residual = tf.tile(x * scale, [1, 1, 1, 8])  # an arena tensor read once
            inputs = [x, tf.constant(f), tf.constant(bias), residual]
            fused_attrs = dict(attrs, num_args=2, _algorithm=algorithm)
            ys[algorithm] = apply_op("_FusedConv2D", inputs, fused_attrs).outputs[0]
        total = ys["direct"] + ys["im2col"]
        options = tf.CompileOptions(disable=["pack"])  # a packed filter always runs direct
        with tf.Session(config=options) as sess:
            got = sess.run(total, {x: xv})
        compiled = compile_program(
            program([(total.op.name, 0)], [feed(x.op.name, xv.shape)]), options.pipeline(), C
        )
    cg = compiled.graph
    inplace = {
        cg.node(out[0])["attrs"]["_algorithm"]: src
        for out, src in cg.graph_attrs["arena_inplace"].items()
        if cg.op_type(out[0]) == "_FusedConv2D"
    }
    assert list(inplace) == ["direct"]
    want = sum(
        epilogue_np(conv2d_np(xv, f, 1, "SAME"), bias, np.tile(xv * s, 8), ["Add", "Relu"], "f4")
        for s in (2.0, 3.0)
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_pointwise_gemm_with_a_residual_writes_over_it_in_blocks():
    """A 1x1 convolution over POINTWISE_GEMM_MIN_ROWS output pixels with few input channels
    and output channels that fill the GEMM's panels (here with a residual) takes its GEMM on x
    (conv_algo.default_algorithm): its filter stays HWIO (not packed), its rows go in blocks
    through a scratch block (768 rows, the last of 16384 here 256) and its output takes over the
    dying residual; the bits of the unfused ops, whose Conv2D runs the same GEMM."""
    assert conv_algo.POINTWISE_GEMM_MIN_ROWS == 16384
    xv = RNG.standard_normal((1, 128, 128, 64)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        conv = tf.nn.conv2d(x, _filter(1, 64, 64), 1, "VALID") + _filter(1, 64)
        y = tf.nn.relu(conv + x * 2.0) * 0.5  # not fetched: arena
        kernels, got, want = _fused_and_unfused(y, {x: xv})
        compiled = compile_program(
            program([(y.op.name, 0)], [feed(x.op.name, xv.shape)]),
            tf.CompileOptions().pipeline(),
            C,
        )
    assert "_FusedConv2D" in kernels
    cg = compiled.graph
    (fused,) = [n for n in cg.node_names() if cg.op_type(n) == "_FusedConv2D"]
    assert "packed_filter" not in cg.node(fused)["attrs"]
    assert any(out[0] == fused for out in cg.graph_attrs["arena_inplace"])
    assert "tfc_conv_forward_im2col_f32" in compiled.source
    np.testing.assert_array_equal(got, want)
    # below the threshold (one row fewer) or with more input channels the direct kernel runs;
    # without a residual the GEMM too
    big = Geometry(1, 128, 128, 64, 128, 128, 64, 1, 1, 1, 1, 1, 1, 0, 0)
    small = dataclasses.replace(big, in_h=127, out_h=127)
    deep = dataclasses.replace(big, in_c=conv_algo.POINTWISE_GEMM_MAX_IN_C + 1)
    shallow = dataclasses.replace(big, in_c=conv_algo.POINTWISE_GEMM_MIN_IN_C - 1)
    f32 = tf.float32
    assert conv_algo.default_algorithm("forward", big, f32) == "im2col"
    assert conv_algo.default_algorithm("forward", small, f32) == "direct"
    assert conv_algo.default_algorithm("forward", deep, f32) == "direct"
    assert conv_algo.default_algorithm("forward", shallow, f32) == "direct"


def test_a_pointwise_gemm_only_where_the_output_channels_fill_its_panels():
    """The 1x1 GEMM runs only where out_c is a whole number of the AVX-512 build's 64-float
    panels (POINTWISE_GEMM_OUT_BYTES): SqueezeNet's 64->16 squeeze on 55x55 at batch 32 (96800
    rows) runs direct, as do 32, 48, 80 and 96 channels, which leave a panel part empty; 64 and
    256 (ResNet-50's 56x56 layers, where it pays) take the GEMM, as does 128 (whole panels); in
    float64 32 channels fill one."""
    squeeze = Geometry(32, 55, 55, 64, 55, 55, 16, 1, 1, 1, 1, 1, 1, 0, 0)
    f32, f64 = tf.float32, tf.float64
    for out_c in (16, 32, 48, 80, 96, 200):
        geometry = dataclasses.replace(squeeze, out_c=out_c)
        assert conv_algo.default_algorithm("forward", geometry, f32) == "direct", out_c
    for out_c in (64, 128, 256):
        geometry = dataclasses.replace(squeeze, out_c=out_c)
        assert conv_algo.default_algorithm("forward", geometry, f32) == "im2col", out_c
    assert conv_algo.default_algorithm("forward", dataclasses.replace(squeeze, out_c=32), f64) == (
        "im2col"
    )
    assert conv_algo.default_algorithm("forward", squeeze, f64) == "direct"


def test_groups_of_rows_through_the_filter_blocks_give_the_same_bits(monkeypatch):
    """The blocked direct kernel (a filter larger than a part's images) runs groups of output
    rows through every channel block: groups of 2 of a part's 5 rows (the last one short) give
    the bits of one group of all, packed (each group prefetches the first block again) or not."""
    xv = RNG.standard_normal((2, 5, 13, 8)).astype(np.float32)
    f, bias = _filter(3, 8, 64), _filter(1, 64)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        y = tf.nn.relu(tf.nn.conv2d(x, f, 1, "SAME") + bias + tf.tile(x, [1, 1, 1, 8]))
    per_row = (13 * 64 + 15 * 8) * 4  # a row's outputs and the input row it reads
    results = []
    for group_bytes in (conv_algo.L2_GROUP_BYTES, 2 * per_row):
        monkeypatch.setattr(conv_algo, "L2_GROUP_BYTES", group_bytes)
        for disable in ([], ["pack"]):
            with tf.Session(graph=g, config=tf.CompileOptions(disable=disable)) as sess:
                results.append(sess.run(y, {x: xv}))
    for got in results[2:]:
        np.testing.assert_array_equal(got, results[0])
    np.testing.assert_array_equal(results[1], results[0])
