"""pack_conv_filters: a fused convolution's constant filter laid out as its kernel reads it."""

from __future__ import annotations

import numpy as np

from tfc.ir.graph import Graph
from tfc.ops.conv import conv_geometry, pack_filter
from tfc.ops.conv_algo import default_algorithm, forward_filter_block
from tfc.ops.kernels import MIXED_PRECISION
from tfc.ops.registry import OpContext
from tfc.passes.rewrite import remove_unused


def pack_conv_filters(graph: Graph) -> Graph:
    """Give each `_FusedConv2D` whose filter is a Const (an inference network's weights, batch
    norm folded in) a new Const of the same values in the layout tfc_conv.h's direct kernel
    reads: blocks of its tiles' output channels, each block's taps x channels contiguous
    (tfc.ops.conv.pack_filter), and the attribute `packed_filter` (the filter's HWIO shape).
    The kernel then reads each block where it lies instead of copying it out of the HWIO filter
    on every call (ResNet-50's deep layers: up to 9 MB of filter per call). A packed
    convolution always runs direct, also where the HWIO filter would take im2col (few output
    pixels and a long reduction: ResNet-50's 7x7 layers at batch 1, which the direct kernel
    then runs 1.1-1.4x as fast, f32, 1 thread; a 1x1 layer of few input channels over many
    pixels, conv_algo.POINTWISE_GEMM_MIN_ROWS: ResNet-50's 56x56 ones at batch 32 in 0.76x).

    Left as they are: a filter that is not a Const, or has control inputs; convolutions that an
    `_algorithm` attribute forces, that take the columns kernel, or that run under mixed
    precision (their filter is rounded to bfloat16 in its HWIO layout).
    Values are the same bits as the unpacked op's where that runs direct too (each output is
    the same chain of multiply-adds over the same values); where it would take im2col, the GEMM
    sums in another order, so they differ by rounding. The old Const goes when nothing else
    reads it.
    """
    if graph.graph_attrs.get(MIXED_PRECISION) is not None:
        return graph
    for name in list(graph.nx.nodes):
        if name in graph.nx and graph.op_type(name) == "_FusedConv2D":
            _pack(graph, name)
    return graph


def _pack(graph: Graph, conv: str) -> bool:
    node = graph.node(conv)
    attrs = node["attrs"]
    if attrs.get("packed_filter") or attrs.get("_algorithm") is not None:
        return False
    source, _ = graph.input_edges(conv)[1]
    const = graph.node(source)
    if const["op"] != "Const" or graph.control_input_names(source):
        return False
    value = np.asarray(const["attrs"]["value"])
    ctx = OpContext.for_node(graph, conv)
    dtype = ctx.out_dtypes[0]
    if value.ndim != 4 or value.dtype != dtype.np or tuple(ctx.in_shapes[1]) != value.shape:
        return False
    g = conv_geometry(ctx, ctx.in_shapes[0], value.shape)
    if default_algorithm("forward", g, dtype, packed=True) != "direct":
        return False  # columns, or a 1x1 GEMM
    packed = pack_filter(value, forward_filter_block(g.out_c, dtype))
    packed.setflags(write=False)
    name = graph.unique_name(f"{conv}/packed_filter")
    graph.add_node(
        name, "Const", [], {"value": packed, "dtype": dtype}, [dtype], [packed.shape],
        device=const["device"],
    )  # fmt: skip
    node["attrs"] = {**attrs, "packed_filter": [int(d) for d in value.shape]}
    graph.set_input(conv, 1, (name, 0))
    remove_unused(graph, [source])
    return True
