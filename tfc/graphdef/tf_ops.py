"""TensorFlow op types that tfc builds from other ops when it reads a GraphDef.

Most of TensorFlow's ops are tfc's under the same name and attributes (the importer adds them
as they are). The ones here differ: a newer or older spelling of an op tfc has (AddV2,
BatchMatMul, Concat, Select, Div, Snapshot, PlaceholderV2), or a fused op tfc composes from
its parts (FusedBatchNorm in inference mode). Each converter gets the node's inputs and
attributes and returns its outputs in order, built with tfc's ops; the op that gives output 0
carries the node's own name, so "name:0" finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Tensor
from tfc.ops.constant import constant
from tfc.ops.registry import apply_op

__all__ = ["ConversionContext", "CONVERSIONS", "UNSUPPORTED"]


@dataclass
class ConversionContext:
    """One GraphDef node as a converter sees it: its tfc name, inputs and attributes."""

    name: str
    op: str
    inputs: list[Tensor]
    attrs: dict[str, Any]
    graph: Graph
    where: str  # "GraphDef node 'x' (Op)": the start of an error message
    used_outputs: set[int] = field(default_factory=set)

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.where}: {message}")

    def op_named(self, op_type: str, inputs: list[Tensor], attrs: dict | None = None) -> Tensor:
        """An op of `op_type` carrying the node's name; its first output."""
        return apply_op(op_type, inputs, attrs or {}, name=self.name + "/").outputs[0]


def _rename(op_type: str, keep: tuple[str, ...] = ()) -> Callable[[ConversionContext], list]:
    def convert(ctx: ConversionContext) -> list:
        attrs = {k: ctx.attrs[k] for k in keep if k in ctx.attrs}
        return [ctx.op_named(op_type, ctx.inputs, attrs)]

    return convert


def _placeholder_v2(ctx: ConversionContext) -> list:
    attrs = {"dtype": ctx.attrs["dtype"], "shape": ctx.attrs.get("shape")}
    return [ctx.op_named("Placeholder", [], attrs)]


def _batch_matmul_v3(ctx: ConversionContext) -> list:
    ta, tb, tout = (ctx.attrs.get(k) for k in ("Ta", "Tb", "Tout"))
    if not ta == tb == tout:
        raise ctx.error(f"BatchMatMulV3 of mixed types ({ta}, {tb} -> {tout}) is not supported")
    attrs = {"adj_x": ctx.attrs.get("adj_x", False), "adj_y": ctx.attrs.get("adj_y", False)}
    return [ctx.op_named("BatchMatMulV2", ctx.inputs, attrs)]


def _div(ctx: ConversionContext) -> list:
    # TensorFlow's Div: true division of floats, C's truncating division of integers
    op_type = "RealDiv" if ctx.inputs[0].dtype.is_floating else "TruncateDiv"
    return [ctx.op_named(op_type, ctx.inputs)]


def _concat_v1(ctx: ConversionContext) -> list:
    axis, *values = ctx.inputs
    return [ctx.op_named("ConcatV2", [*values, axis], {"N": len(values)})]


def _select_v1(ctx: ConversionContext) -> list:
    """Select: a condition of x's shape picks elements; a vector condition picks rows."""
    cond, x, y = ctx.inputs
    crank, xrank = cond.shape.ndims, x.shape.ndims
    if (crank is None and xrank != 0 and xrank != 1) or (crank == 1 and xrank is None):
        raise ctx.error(
            "Select of tensors of unknown rank: a vector condition picks rows, one of x's shape "
            "picks elements, and tfc must know which when it builds the graph"
        )
    if crank == 1 and xrank is not None and xrank > 1:
        with ctx.graph.name_scope(ctx.name + "/"):
            rows = constant([-1] + [1] * (xrank - 1), dtype=_dt.int32, name="row_shape")
            cond = apply_op("Reshape", [cond, rows], {}, name="cond_rows").outputs[0]
    return [ctx.op_named("SelectV2", [cond, x, y])]


def _fused_batch_norm(ctx: ConversionContext) -> list:
    """Inference-mode FusedBatchNorm (V1 to V3): x normalized with the given mean and variance,
    (x - mean) * scale / sqrt(variance + epsilon) + offset, on the channel axis of data_format."""
    if ctx.attrs.get("is_training", True):
        raise ctx.error(
            "FusedBatchNorm with is_training=true computes batch statistics; tfc imports the "
            "inference form (freeze the graph with is_training=False)"
        )
    x, scale, offset, mean, variance = ctx.inputs
    fmt = ctx.attrs.get("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW"):
        raise ctx.error(f"data_format {fmt} is not supported (NHWC or NCHW)")
    if ctx.used_outputs - {0, 1, 2}:
        raise ctx.error("its reserve-space outputs are used; tfc gives the inference outputs only")
    epsilon = float(ctx.attrs.get("epsilon", 1e-4))
    with ctx.graph.name_scope(ctx.name + "/"):
        eps = constant(epsilon, dtype=variance.dtype, name="epsilon")
        inv = apply_op("Rsqrt", [apply_op("Add", [variance, eps], name="add").outputs[0]],
                       name="Rsqrt").outputs[0]  # fmt: skip
        factor = apply_op("Mul", [inv, scale], name="mul").outputs[0]
        shift = apply_op("Sub", [offset, apply_op("Mul", [mean, factor], name="mul_1").outputs[0]],
                         name="sub").outputs[0]  # fmt: skip
        if fmt == "NCHW":
            channels = constant([1, -1, 1, 1], dtype=_dt.int32, name="channel_shape")
            factor = apply_op("Reshape", [factor, channels], name="factor").outputs[0]
            shift = apply_op("Reshape", [shift, channels], name="shift").outputs[0]
        scaled = apply_op("Mul", [x, factor], name="mul_2").outputs[0]
    return [ctx.op_named("Add", [scaled, shift]), mean, variance]


CONVERSIONS: dict[str, Callable[[ConversionContext], list]] = {
    "AddV2": _rename("Add"),
    "BatchMatMul": _rename("BatchMatMulV2", ("adj_x", "adj_y")),
    "BatchMatMulV3": _batch_matmul_v3,
    "Snapshot": _rename("Identity"),
    "PreventGradient": _rename("StopGradient"),
    "CheckNumericsV2": _rename("CheckNumerics", ("message",)),
    "PlaceholderV2": _placeholder_v2,
    "Div": _div,
    "Concat": _concat_v1,
    "Select": _select_v1,
    "FusedBatchNorm": _fused_batch_norm,
    "FusedBatchNormV2": _fused_batch_norm,
    "FusedBatchNormV3": _fused_batch_norm,
}

# op types with a known reason tfc cannot import them
UNSUPPORTED: dict[str, str] = {
    **dict.fromkeys(
        ["VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
         "AssignSubVariableOp", "ResourceApplyGradientDescent", "VarIsInitializedOp"],
        "it works on resource variables, which tfc does not have; freeze the graph "
        "(tf.graph_util.convert_variables_to_constants) or build it with "
        "use_resource=False",
    ),
    **dict.fromkeys(
        ["Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "StatelessWhile",
         "While", "If", "StatelessIf", "PartitionedCall", "StatefulPartitionedCall"],
        "it is TensorFlow control flow or a function call, which tfc's GraphDef import does "
        "not convert",
    ),
}  # fmt: skip
