"""tf.gradients: every op's rule against finite differences, and tf.gradients' semantics.

The table holds one or more cases per differentiable op type. Each case becomes a scalar loss
L = sum(y * w) (fixed random weights w), built in float64 and in float32 in one graph that is
compiled once. The float64 gradients, compiled and interpreted, must match a fourth-order
central difference of L (relative error < 1e-6); the float32 ones must match the float64 ones
at float32 precision. Finite differences perturb one element of every case per run, so the
whole table takes a few hundred runs of one compiled program.
"""

from __future__ import annotations

import contextlib
import functools
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import tfc as tf
from tfc.ops.registry import REGISTRY, OpDef, apply_op
from tfc.reference.interp import Interpreter

RNG = np.random.default_rng(20240611)
H = 2.0**-10  # the five-point stencil's step (error O(h^4)); dyadic, so x +- 2h is exact
FD_RTOL = 1e-6
F32_RTOL = 1e-5  # about 80 float32 ulps, norm-wise


# -- inputs: float32-representable values, away from kinks and poles ------------------------------
def _f32(x) -> np.ndarray:
    return np.asarray(x, np.float32).astype(np.float64)


def normal(*shape):
    return _f32(RNG.standard_normal(shape))


def uniform(lo, hi, *shape):
    return _f32(RNG.uniform(lo, hi, shape))


def away(*shape, lo=0.3, hi=2.0):
    """Magnitudes in [lo, hi], random signs: no element near 0."""
    return _f32(RNG.uniform(lo, hi, shape) * RNG.choice([-1.0, 1.0], shape))


def positive(*shape):
    return uniform(0.5, 2.0, *shape)


def distinct(*shape):
    """Values 0.25 apart in random order: no ties for max/min."""
    return _f32(RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 1.0)


def dyadic(*shape):
    """Multiples of 1/64: sums and float32 casts of these (and of x +- 2h) are exact."""
    return RNG.integers(-100, 100, shape) / 64.0


def apart(*shape):
    """(x, y) with y broadcast along the first dim and |x - y| >= 0.2 everywhere."""
    y = normal(*shape[1:])
    return _f32(y + away(*shape, lo=0.2, hi=1.0)), y


def relu6_inputs(*shape):
    pieces = [uniform(-2, -0.3, *shape), uniform(0.3, 5.7, *shape), uniform(6.3, 8, *shape)]
    return np.choose(RNG.integers(0, 3, shape), pieces)


def floormod_inputs(n):
    y = uniform(0.7, 1.3, n)
    x = y * (RNG.integers(-2, 3, n) + RNG.uniform(0.2, 0.8, n))  # x / y far from integers
    return _f32(x), y


def late(value) -> tf.Tensor:
    """An int tensor known when compiling but not when the graph is built (its static shape
    is unknown): rules must then build what they need from graph ops."""
    value = np.asarray(value, np.int32)
    return tf.placeholder_with_default(value, shape=[None] * value.ndim)


def op(op_type: str, *inputs, **attrs) -> tf.Tensor:
    """An op applied directly (gradient-only ops have no frontend)."""
    tensors = [t if isinstance(t, tf.Tensor) else tf.constant(t) for t in inputs]
    return apply_op(op_type, tensors, attrs).outputs[0]


# -- the table -------------------------------------------------------------------------------------
@dataclass
class Case:
    """y = build(*tensors): float inputs are fed placeholders (shape `dims` when given, so
    None dims are known only at run time) and differentiated; others are constants."""

    name: str
    build: Callable
    inputs: tuple
    dims: tuple | None = None
    exact: bool = False  # dyadic inputs and weights: the loss is exact in float32 as well


def C(name, build, *inputs, dims=None, exact=False) -> Case:  # noqa: N802
    return Case(name, build, inputs, dims, exact)


def _second(fn):
    """The gradient of sum(fn(x) * v), itself differentiated: second derivatives."""

    def build(x, v):
        return tf.gradients(tf.reduce_sum(fn(x) * v), x)[0]

    return build


def invertible(*shape):
    """[..., n, n] matrices with singular values in [0.5, 2] (condition <= 4)."""
    n = shape[-1]
    q1, _ = np.linalg.qr(RNG.standard_normal((*shape[:-2], n, n)))
    q2, _ = np.linalg.qr(RNG.standard_normal((*shape[:-2], n, n)))
    return _f32(q1 @ (RNG.uniform(0.5, 2.0, (*shape[:-2], n, 1)) * q2))


def diagonal_heavy(*shape):
    """[..., n, n] matrices near 2 I: every triangle of them is well conditioned."""
    return _f32(2.0 * np.eye(shape[-1]) + 0.3 * RNG.standard_normal(shape))


def spread_symmetric(*shape):
    """Symmetric [..., n, n] matrices whose eigenvalues are at least 0.8 apart."""
    n = shape[-1]
    q, _ = np.linalg.qr(RNG.standard_normal((*shape[:-2], n, n)))
    e = np.arange(n) - (n - 1) / 2 + RNG.uniform(-0.1, 0.1, (*shape[:-2], n))
    return _f32(q @ (e[..., :, None] * np.swapaxes(q, -1, -2)))


def eye2(x) -> tf.Tensor:
    return tf.eye(x.shape.as_tuple()[-1], dtype=x.dtype) * 2.0


COND = RNG.random((2, 3)) < 0.5
CONV_S2_SAME = dict(strides=[1, 2, 2, 1], padding="SAME")
POOL_K3_S2_SAME = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
SLICE_MASKS = dict(begin_mask=0, end_mask=1, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
CASES = [
    # element-wise arithmetic, with broadcasting (the pass sums it away)
    C("Add", lambda a, b: a + b, normal(3, 4), normal(4), dims=((None, 4), (4,))),
    C("Add-scalar", tf.add, normal(2, 3), normal()),
    C("Sub", lambda a, b: a - b, normal(2, 3), normal(2, 1)),
    C("Mul", lambda a, b: a * b, normal(3, 1), normal(1, 4)),
    C("Mul-None", lambda a, b: a * b, normal(3, 4), normal(1, 4), dims=((None, 4), (None, 4))),
    C("RealDiv", lambda a, b: a / b, normal(3, 4), away(4)),
    C("FloorMod", tf.floormod, *floormod_inputs(6)),
    C("Pow", tf.pow, positive(3, 4), uniform(-1.5, 1.5, 4)),
    C("Maximum", tf.maximum, *apart(3, 4)),
    C("Minimum", tf.minimum, *apart(2, 5)),
    C("SquaredDifference", tf.squared_difference, normal(2, 3), normal(3)),
    C("AddN", lambda a, b: tf.add_n([a, b, a]), normal(2, 3), normal(2, 3)),
    C("SelectV2", lambda a, b: tf.where(COND, a, b), normal(2, 3), normal(3)),
    C("Cast", lambda a: tf.cast(tf.cast(a, _other(a)), a.dtype) * 2.0, dyadic(2, 3), exact=True),
    # unary functions
    C("Neg", tf.negative, normal(5)),
    C("Abs", tf.abs, away(2, 3)),
    C("Square", tf.square, normal(2, 3)),
    C("Reciprocal", tf.reciprocal, away(2, 3, lo=0.5)),
    C("Rsqrt", tf.rsqrt, positive(2, 3)),
    C("Sqrt", tf.sqrt, positive(2, 3)),
    C("Exp", tf.exp, normal(2, 3)),
    C("Expm1", tf.expm1, normal(2, 3)),
    C("Log", tf.log, positive(2, 3)),
    C("Log1p", tf.log1p, uniform(-0.5, 2, 2, 3)),
    C("Sin", tf.sin, normal(2, 3)),
    C("Cos", tf.cos, normal(2, 3)),
    C("Tan", tf.tan, uniform(-1, 1, 2, 3)),
    C("Tanh", tf.tanh, normal(2, 3), dims=((None, 3),)),
    C("Sigmoid", tf.sigmoid, normal(2, 3) * 2),
    C("Tanh-second", _second(tf.tanh), normal(2, 3), normal(2, 3)),
    C("Sigmoid-second", _second(tf.sigmoid), normal(2, 3), normal(2, 3)),
    # shapes and views
    C("Identity", tf.identity, normal(2, 3)),
    C("PlaceholderWithDefault", lambda a: tf.placeholder_with_default(a, [None, 3]), normal(2, 3)),
    C("Reshape", lambda a: tf.reshape(a, [-1, 2, 3]), normal(2, 6), dims=((None, 6),)),
    C("ExpandDims", lambda a: tf.expand_dims(a, 1), normal(2, 3)),
    C("Squeeze", lambda a: tf.squeeze(a, [1]), normal(3, 1, 2), dims=((None, 1, 2),)),
    C("Transpose", lambda a: tf.transpose(a, [2, 0, 1]), normal(2, 3, 4)),
    C("Transpose-late", lambda a: tf.transpose(a, late([1, 0])), normal(3, 2)),
    # joins and parts
    C(
        "ConcatV2",
        lambda a, b: tf.concat([a, b], 1),
        normal(2, 3),
        normal(2, 2),
        dims=((None, 3), (None, 2)),
    ),
    C(
        "ConcatV2-late",
        lambda a, b: tf.concat([a, b], tf.rank(a) - 1),
        normal(2, 3),
        normal(2, 1),
        dims=((None, 3), (None, 1)),
    ),
    C("Pack", lambda a, b: tf.stack([a, b], axis=1), normal(2, 3), normal(2, 3)),
    C("Unpack", lambda a: tf.unstack(a, axis=1), normal(3, 2)),
    C("Unpack-partial", lambda a: tf.unstack(a)[1] * 2.0, normal(3, 2)),
    C("Split", lambda a: tf.split(a, 3, axis=1), normal(2, 6)),
    C("Split-partial", lambda a: tf.split(a, 2, 0)[0], normal(4, 2)),
    C("SplitV", lambda a: tf.split(a, [2, -1, 1], axis=0), normal(5, 2)),
    C("Tile", lambda a: tf.tile(a, [2, 3, 1]), normal(2, 1, 3)),
    C("Tile-None", lambda a: tf.tile(a, [1, 2]), normal(2, 3), dims=((None, 3),)),
    C("Tile-late", lambda a: tf.tile(a, late([2, 1])), normal(2, 3)),
    # slices and pads
    C("Slice", lambda a: tf.slice(a, [1, 2], [2, -1]), normal(4, 5), dims=((None, 5),)),
    C("Slice-late", lambda a: tf.slice(a, late([1, 0]), [2, 2]), normal(3, 3)),
    C("StridedSlice", lambda a: a[1:, ::-2, 1], normal(3, 5, 4)),
    C("StridedSlice-newaxis", lambda a: a[..., tf.newaxis, 1:3], normal(2, 4), dims=((None, 4),)),
    C("Pad", lambda a: tf.pad(a, [[1, 0], [2, 1]]), normal(2, 3), dims=((None, 3),)),
    C("Pad-late", lambda a: tf.pad(a, late([[0, 1], [1, 0]])), normal(2, 2)),
    C("PadV2", lambda a, c: tf.pad(a, [[1, 1], [0, 2]], constant_values=c), normal(2, 3), normal()),
    C("MirrorPad-REFLECT", lambda a: tf.pad(a, [[1, 2], [2, 1]], "REFLECT"), normal(4, 4)),
    C("MirrorPad-SYMMETRIC", lambda a: tf.pad(a, [[2, 1], [0, 3]], "SYMMETRIC"), normal(3, 3)),
    C("GatherV2", lambda p: tf.gather(p, [4, 0, 4, 2]), normal(5, 3), dims=((5, None),)),
    C("GatherV2-axis1", lambda p: tf.gather(p, [[0, 2], [2, 2]], axis=1), normal(2, 3, 2)),
    C("Fill", lambda v: tf.fill([2, 3], v), normal()),
    # reductions
    C("Sum", lambda a: tf.reduce_sum(a, axis=1), normal(3, 4), dims=((None, 4),)),
    C("Sum-keepdims", lambda a: tf.reduce_sum(a, [0, 2], keepdims=True), normal(2, 3, 2)),
    C("Sum-all", tf.reduce_sum, normal(2, 3)),
    C("Sum-late", lambda a: tf.reduce_sum(a, axis=tf.rank(a) - 1), normal(3, 4), dims=((None, 4),)),
    C("Mean", lambda a: tf.reduce_mean(a, axis=0), normal(4, 3), dims=((None, 3),)),
    C("Mean-all", tf.reduce_mean, normal(2, 3)),
    C("Max", lambda a: tf.reduce_max(a, axis=1), distinct(3, 4)),
    C("Min", lambda a: tf.reduce_min(a, [0], keepdims=True), distinct(3, 4), dims=((None, 4),)),
    C("Prod", lambda a: tf.reduce_prod(a, axis=1), away(3, 4, lo=0.5, hi=1.5)),
    C(
        "Prod-zeros",
        lambda a: tf.reduce_prod(a, axis=1),
        np.array([[0.5, -1.25, 2.0], [0.0, 1.5, -0.75], [0.0, 0.0, 1.25]]),
    ),
    # matrix products
    C("MatMul", tf.matmul, normal(3, 4), normal(4, 2), dims=((None, 4), (4, 2))),
    C("MatMul-ta", lambda a, b: tf.matmul(a, b, transpose_a=True), normal(4, 3), normal(4, 2)),
    C("MatMul-tb", lambda a, b: tf.matmul(a, b, transpose_b=True), normal(3, 4), normal(2, 4)),
    C("MatMul-tab", lambda a, b: tf.matmul(a, b, True, True), normal(4, 3), normal(2, 4)),
    C("BatchMatMulV2", tf.matmul, normal(2, 3, 4), normal(4, 2)),
    C("BatchMatMulV2-broadcast", tf.matmul, normal(2, 1, 3, 4), normal(3, 4, 2)),
    C(
        "BatchMatMulV2-adjoint",
        lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True),
        normal(2, 4, 3),
        normal(1, 2, 4),
    ),
    C(
        "BatchMatMulV2-None",
        tf.matmul,
        normal(2, 3, 4),
        normal(1, 4, 2),
        dims=((None, 3, 4), (None, 4, 2)),
    ),
    # tf.nn
    C("Relu", tf.nn.relu, away(3, 4), dims=((None, 4),)),
    C("Relu6", tf.nn.relu6, relu6_inputs(3, 4)),
    C("Elu", tf.nn.elu, away(3, 4)),
    C("LeakyRelu", lambda a: tf.nn.leaky_relu(a, 0.1), away(3, 4)),
    C("Softplus", tf.nn.softplus, normal(3, 4) * 3),
    C("Selu", tf.nn.selu, away(3, 4)),
    C("Softsign", tf.nn.softsign, away(3, 4)),
    C("Softsign-second", _second(tf.nn.softsign), away(2, 3), normal(2, 3)),
    C("TopKV2", lambda a: tf.nn.top_k(a, 3)[0], distinct(2, 5)),
    C("Softmax", tf.nn.softmax, normal(3, 4), dims=((None, 4),)),
    C("Softmax-axis0", lambda a: tf.nn.softmax(a, axis=0), normal(3, 4)),
    C("LogSoftmax", tf.nn.log_softmax, normal(2, 5)),
    C("Softmax-second", _second(tf.nn.softmax), normal(2, 4), normal(2, 4)),
    C("LogSoftmax-second", _second(tf.nn.log_softmax), normal(2, 4), normal(2, 4)),
    C("BiasAdd", tf.nn.bias_add, normal(3, 4), normal(4), dims=((None, 4), (4,))),
    C("BiasAdd-NCHW", lambda a, b: tf.nn.bias_add(a, b, "NCHW"), normal(2, 3, 2), normal(3)),
    C(
        "SparseSoftmaxCrossEntropyWithLogits",
        lambda a: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0, 3], logits=a),
        normal(3, 4),
    ),
    C("CheckNumerics", lambda a: tf.check_numerics(a, "bad"), normal(2, 3)),
    # convolution and pooling, NHWC (dyadic values: every sum exact in float32 too)
    C(
        "Conv2D",
        lambda x, f: tf.nn.conv2d(x, f, [1, 2, 2, 1], "SAME"),  # padding 0/1 rows, 1/1 cols
        dyadic(2, 4, 5, 1),
        dyadic(3, 3, 1, 2),
        dims=((None, 4, 5, 1), (3, 3, 1, 2)),
        exact=True,
    ),
    C(
        "Conv2D-valid-dilated",
        lambda x, f: tf.nn.conv2d(x, f, [1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 1]),
        dyadic(1, 5, 4, 2),
        dyadic(2, 2, 2, 2),
        exact=True,
    ),
    C(
        "MaxPool",
        lambda x: tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
        distinct(1, 5, 5, 2),
        dims=((None, 5, 5, 2),),
    ),
    C("MaxPool-valid", lambda x: tf.nn.max_pool(x, 2, 2, "VALID"), distinct(2, 4, 5, 1)),
    C(
        "AvgPool",
        lambda x: tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
        normal(1, 5, 5, 2),
        dims=((None, 5, 5, 2),),
    ),
    # the gradient-only ops (second derivatives use them)
    C("SigmoidGrad", lambda y, d: op("SigmoidGrad", y, d), uniform(0.1, 0.9, 2, 3), normal(2, 3)),
    C("TanhGrad", lambda y, d: op("TanhGrad", y, d), uniform(-0.9, 0.9, 2, 3), normal(2, 3)),
    C("SqrtGrad", lambda y, d: op("SqrtGrad", y, d), positive(2, 3), normal(2, 3)),
    C("RsqrtGrad", lambda y, d: op("RsqrtGrad", y, d), positive(2, 3), normal(2, 3)),
    C("ReciprocalGrad", lambda y, d: op("ReciprocalGrad", y, d), normal(2, 3), normal(2, 3)),
    C("ReluGrad", lambda d, x: op("ReluGrad", d, x), normal(2, 3), away(2, 3)),
    C("Relu6Grad", lambda d, x: op("Relu6Grad", d, x), normal(2, 3), relu6_inputs(2, 3)),
    C("EluGrad", lambda d, y: op("EluGrad", d, y), normal(2, 3), away(2, 3, lo=0.1, hi=0.9)),
    C("LeakyReluGrad", lambda d, x: op("LeakyReluGrad", d, x, alpha=0.3), normal(2, 3), away(2, 3)),
    C("SoftplusGrad", lambda d, x: op("SoftplusGrad", d, x), normal(2, 3), normal(2, 3)),
    C("SeluGrad", lambda d, y: op("SeluGrad", d, y), normal(2, 3), away(2, 3, lo=0.1, hi=1.5)),
    C("SoftsignGrad", lambda d, x: op("SoftsignGrad", d, x), normal(2, 3), away(2, 3)),
    C("SoftmaxGrad", lambda y, d: op("SoftmaxGrad", y, d), normal(2, 4), normal(2, 4)),
    C("LogSoftmaxGrad", lambda y, d: op("LogSoftmaxGrad", y, d), normal(2, 4), normal(2, 4)),
    C("SumToShape", lambda g: op("SumToShape", g, np.array([3, 1], np.int32)), normal(2, 3, 4)),
    C(
        "StridedSliceGrad",
        lambda d: op(
            "StridedSliceGrad",
            np.array([4, 5], np.int32),
            np.array([1, 4], np.int32),
            np.array([0, 0], np.int32),
            np.array([1, -2], np.int32),
            d,
            **SLICE_MASKS,  # x[1:, 4:0:-2]
        ),
        normal(3, 2),
    ),
    C(
        "MirrorPadGrad",
        lambda d: op("MirrorPadGrad", d, np.array([[1, 1], [2, 1]], np.int32), mode="REFLECT"),
        normal(5, 6),
    ),
    C(
        "UnsortedSegmentSum",
        lambda d: op("UnsortedSegmentSum", d, np.array([0, 2, -1, 2, 1], np.int32), np.int32(3)),
        normal(5, 2),
    ),
    C(
        "Conv2DBackpropInput",
        lambda f, d: op(
            "Conv2DBackpropInput", np.array([2, 4, 5, 1], np.int32), f, d, **CONV_S2_SAME
        ),
        dyadic(3, 3, 1, 2),
        dyadic(2, 2, 3, 2),
        exact=True,
    ),
    C(
        "Conv2DBackpropFilter",
        lambda x, d: op(
            "Conv2DBackpropFilter", x, np.array([3, 3, 1, 2], np.int32), d, **CONV_S2_SAME
        ),
        dyadic(2, 4, 5, 1),
        dyadic(2, 2, 3, 2),
        exact=True,
    ),
    C(
        "MaxPoolGrad",
        lambda x, y, d: op("MaxPoolGrad", x, y, d, **POOL_K3_S2_SAME),
        distinct(1, 5, 5, 1),
        normal(1, 3, 3, 1),
        normal(1, 3, 3, 1),
    ),
    C(
        "MaxPoolGradGrad",
        lambda x, y, g: op("MaxPoolGradGrad", x, y, g, **POOL_K3_S2_SAME),
        distinct(1, 5, 5, 1),
        normal(1, 3, 3, 1),
        normal(1, 5, 5, 1),
    ),
    C(
        "AvgPoolGrad",
        lambda d: op("AvgPoolGrad", np.array([1, 5, 5, 2], np.int32), d, **POOL_K3_S2_SAME),
        normal(1, 3, 3, 2),
    ),
    # index tuples and reordering (tfc/ops/array_nd_index.py, array_order.py)
    C(
        "GatherNd",
        lambda p: tf.gather_nd(p, [[1, 0], [2, 1], [1, 0]]),
        normal(3, 2, 2),
        dims=((None, 2, 2),),
    ),
    C(
        "GatherNd-batch",
        lambda p: tf.gather_nd(p, [[[1], [0]], [[2], [2]]], batch_dims=1),
        normal(2, 3, 2),
    ),
    C("ScatterNd", lambda u: tf.scatter_nd([[1], [3], [1]], u, [4, 2]), normal(3, 2)),
    C(
        "TensorScatterUpdate",
        lambda t, u: tf.tensor_scatter_nd_update(t, [[0], [2]], u),
        normal(3, 2),
        normal(2, 2),
    ),
    C(
        "TensorScatterAdd",
        lambda t, u: tf.tensor_scatter_nd_add(t, [[2, 1], [0, 0], [2, 1]], u),
        normal(3, 2),
        normal(3),
    ),
    C(
        "TensorScatterSub",
        lambda t, u: tf.tensor_scatter_nd_sub(t, [[1]], u),
        normal(3, 2),
        normal(1, 2),
    ),
    C(
        "TensorScatterMin",
        lambda t, u: tf.tensor_scatter_nd_min(t, [[3], [0], [1]], u),
        distinct(4),
        distinct(3) + 0.125,
    ),
    C(
        "TensorScatterMax",
        lambda t, u: tf.tensor_scatter_nd_max(t, [[1], [2]], u),
        distinct(4),
        distinct(2) + 0.125,
    ),
    C("ReverseV2", lambda a: tf.reverse(a, [1, 0]), normal(2, 3), dims=((None, 3),)),
    C(
        "ReverseSequence",
        lambda a: tf.reverse_sequence(a, [2, 4, 0], seq_axis=1, batch_axis=0),
        normal(3, 4),
    ),
    C("Roll", lambda a: tf.roll(a, [1, -2], [0, 1]), normal(3, 4)),
    C("Sort", lambda a: tf.sort(a, direction="DESCENDING"), distinct(2, 5), dims=((None, 5),)),
    C("Sort-axis0", lambda a: tf.sort(a, axis=0), distinct(4, 2)),
    C("BroadcastTo", lambda a: tf.broadcast_to(a, [3, 2, 4]), normal(2, 1)),
    C("EnsureShape", lambda a: tf.ensure_shape(a, [None, 3]), normal(2, 3), dims=((None, 3),)),
    C("IdentityN", lambda a, b: tf.identity_n([a, b]), normal(2), normal(3, 2)),
    # depthwise convolution: a filter per channel, multiplier 2 (dyadic: sums exact in float32)
    C(
        "DepthwiseConv2dNative",
        lambda x, f: tf.nn.depthwise_conv2d_native(x, f, [1, 2, 2, 1], "SAME"),
        dyadic(2, 5, 4, 3),
        dyadic(3, 3, 3, 2),
        dims=((None, 5, 4, 3), (3, 3, 3, 2)),
        exact=True,
    ),
    C(
        "DepthwiseConv2dNative-NCHW-dilated",
        lambda x, f: tf.nn.depthwise_conv2d_native(
            x, f, [1, 1, 1, 1], "VALID", data_format="NCHW", dilations=[1, 1, 2, 1]
        ),
        dyadic(1, 2, 5, 4),
        dyadic(2, 2, 2, 1),
        exact=True,
    ),
    C(
        "DepthwiseConv2dNativeBackpropInput",
        lambda f, d: op(
            "DepthwiseConv2dNativeBackpropInput",
            np.array([2, 5, 4, 3], np.int32),
            f,
            d,
            **CONV_S2_SAME,
        ),  # fmt: skip
        dyadic(3, 3, 3, 2),
        dyadic(2, 3, 2, 6),
        exact=True,
    ),
    C(
        "DepthwiseConv2dNativeBackpropFilter",
        lambda x, d: op(
            "DepthwiseConv2dNativeBackpropFilter",
            x,
            np.array([3, 3, 3, 2], np.int32),
            d,
            **CONV_S2_SAME,
        ),  # fmt: skip
        dyadic(2, 5, 4, 3),
        dyadic(2, 3, 2, 6),
        exact=True,
    ),
    C(
        "MaxPoolWithArgmax",
        lambda x: tf.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")[0],
        distinct(2, 5, 5, 2),
        dims=((None, 5, 5, 2),),
    ),
    C(
        "LRN",
        lambda x: tf.nn.lrn(x, 2, 1.5, 0.3, 0.75),
        normal(2, 2, 3, 7),
        dims=((None, 2, 3, 7),),
    ),
    C(
        "ExtractImagePatches",
        lambda x: tf.extract_image_patches(x, [1, 3, 2, 1], [1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
        normal(2, 5, 5, 2),
        dims=((None, 5, 5, 2),),
    ),
    # linear algebra: inputs far from singular; eigen- and singular vectors enter squared (their
    # signs are each algorithm's own); Cholesky sees a symmetric x x^T + 2 I
    C("MatrixInverse", tf.matrix_inverse, invertible(3, 3)),
    C("MatrixInverse-adjoint", lambda a: tf.matrix_inverse(a, adjoint=True), invertible(2, 3, 3)),
    C("MatrixDeterminant", tf.matrix_determinant, invertible(2, 3, 3)),
    C("LogMatrixDeterminant", lambda a: tf.linalg.slogdet(a)[1], invertible(3, 3)),
    C(
        "Cholesky",
        lambda x: tf.cholesky(tf.matmul(x, x, transpose_b=True) + eye2(x)),
        normal(2, 3, 3),
    ),
    C("MatrixSolve", tf.matrix_solve, invertible(2, 3, 3), normal(2, 3, 2)),
    C(
        "MatrixSolve-adjoint",
        lambda a, b: tf.matrix_solve(a, b, adjoint=True),
        invertible(3, 3),
        normal(3, 1),
    ),
    C("MatrixTriangularSolve", tf.matrix_triangular_solve, diagonal_heavy(3, 3), normal(3, 2)),
    C(
        "MatrixTriangularSolve-upper-adjoint",
        lambda a, b: tf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
        diagonal_heavy(2, 3, 3),
        normal(2, 3, 2),
    ),
    C(
        "MatrixTriangularSolve-broadcast",
        tf.matrix_triangular_solve,
        diagonal_heavy(3, 3),
        normal(2, 3, 2),
    ),
    C("Qr", tf.qr, normal(4, 3)),
    C("Qr-wide", tf.qr, normal(2, 2, 4)),
    C(
        "SelfAdjointEigV2",
        lambda a: [tf.self_adjoint_eig(a)[0], tf.square(tf.self_adjoint_eig(a)[1])],
        spread_symmetric(2, 3, 3),
    ),
    C("SelfAdjointEigV2-values", tf.self_adjoint_eigvals, spread_symmetric(4, 4)),
    C("Svd", lambda a: [t * t for t in tf.svd(a)], normal(2, 4, 3)),
    C("Svd-wide-full", lambda a: [t * t for t in tf.svd(a, full_matrices=True)], normal(3, 4)),
    C("Svd-values", lambda a: tf.svd(a, compute_uv=False), normal(3, 5)),
    C("MatrixBandPart", lambda a: tf.matrix_band_part(a, 1, 0), normal(2, 3, 4)),
    C("MatrixDiagV3", lambda d: tf.matrix_diag(d, k=1), normal(2, 3)),
    C("MatrixDiagPartV3", lambda a: tf.matrix_diag_part(a, k=-1), normal(2, 3, 4)),
    C("MatrixSetDiagV3", tf.matrix_set_diag, normal(2, 3, 3), normal(2, 3)),
    C("Diag", tf.diag, normal(2, 2)),
    C("DiagPart", tf.diag_part, normal(2, 3, 2, 3)),
    C("Cross", tf.cross, normal(4, 3), normal(4, 3)),
    # text and value-dependent shapes (tfc/ops/logging_ops.py, tfc/ops/array_dynamic.py); the
    # last two run in Python stages between the compiled ones
    C("Print", lambda x: tf.Print(x, [x], message="gradient case ", first_n=1), normal(2, 3)),
    C(
        "DynamicPartition",
        lambda x: tf.dynamic_partition(x, np.array([2, 0, 2, 1], np.int32), 3),
        normal(4, 2),
        dims=((None, 2),),
    ),
    C(
        "DynamicStitch",
        lambda a, b: tf.dynamic_stitch([late([3, 0]), late([[1], [2]])], [a, b]),
        normal(2, 3),
        normal(2, 1, 3),
    ),
    # SparseTensor ops whose output size is a run-time value (tfc/ops/sparse_ops.py,
    # tfc/ops/sparse_math.py): Python stages too
    C(
        "SparseToDense",
        lambda v, d: tf.sparse_to_dense(
            np.array([[0, 1], [1, 0], [2, 2]], np.int32), late([3, 3]), v, d
        ),
        normal(3),
        normal(),
    ),
    C(
        "SparseSegmentSum",
        lambda x: tf.sparse_segment_sum(x, [0, 2, 2, 1], [0, 0, 2, 2]),
        normal(3, 2),
    ),
    # control flow (tfc/ops/functional.py, tfc/ops/tensor_array.py): more in test_control_flow
    C(
        "If",
        lambda x, y: tf.cond(tf.reduce_sum(x) > 0, lambda: x * y, lambda: x - y),
        positive(2, 3),
        normal(2, 3),
    ),
    C(
        "If_else",
        lambda x, y: tf.cond(tf.reduce_sum(x) < 0, lambda: x * y, lambda: tf.sin(x)),
        positive(2, 3),
        normal(2, 3),
    ),
    C(
        "While",
        lambda x, w: tf.while_loop(
            lambda i, h: i < 3, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w) + x)), (0, x)
        )[1],
        normal(2, 3),
        normal(3, 3) * 0.5,
    ),
    C(
        "TensorArrayWriteV3",
        lambda a, b: (lambda ta: [ta.read(1) * 2.0, ta.stack()])(
            tf.TensorArray(a.dtype, size=3).write(0, a).write(1, b).write(2, a * b)
        ),
        normal(4),
        normal(4),
    ),
    C(
        "TensorArrayUnstack",
        lambda x: tf.TensorArray(x.dtype, size=3).unstack(x).read(1) ** 2,
        normal(3, 2),
    ),
    C(
        "TensorArrayScatterV3",
        lambda x: tf.TensorArray(x.dtype, size=4).scatter([2, 0, 3, 1], x).gather([1, 3]) * x[:2],
        normal(4, 2),
    ),
    C(
        "TensorArrayPutRows",
        lambda base, v: (
            op("TensorArrayPutRows", base, np.array([2, 0], np.int32), v, mode="add") * base
        ),
        normal(3, 2),
        normal(2, 2),
    ),
]

# issue 16's math ops: inverse trigonometric, hyperbolic and special functions, division
# flavours
CASES += [
    C("Acos", tf.acos, uniform(-0.8, 0.8, 2, 3)),
    C("Asin", tf.asin, uniform(-0.8, 0.8, 2, 3)),
    C("Atan", tf.atan, normal(2, 3) * 2),
    C("Atan2", tf.atan2, normal(2, 3), away(3)),
    C("Sinh", tf.sinh, normal(2, 3)),
    C("Cosh", tf.cosh, normal(2, 3)),
    C("Asinh", tf.asinh, normal(2, 3) * 2),
    C("Acosh", tf.acosh, uniform(1.2, 4, 2, 3)),
    C("Atanh", tf.atanh, uniform(-0.8, 0.8, 2, 3)),
    C("Erf", tf.erf, normal(2, 3)),
    C("Erfc", tf.erfc, normal(2, 3)),
    C("Lgamma", tf.lgamma, uniform(0.3, 5, 2, 3)),
    C("Lgamma-negative", tf.lgamma, uniform(-2.8, -2.2, 2, 3)),
    C("Digamma", tf.digamma, uniform(0.3, 5, 2, 3)),
    C("Polygamma", lambda x: tf.polygamma(tf.ones_like(x) * 2.0, x), uniform(0.5, 4, 2, 3)),
    C("Zeta", lambda q: tf.zeta(tf.ones_like(q) * 3.0, q), uniform(0.5, 4, 2, 3)),
    C("Lgamma-second", _second(tf.lgamma), uniform(0.5, 4, 2, 3), normal(2, 3)),
    C("Rint", tf.rint, np.array([[0.2, 1.3, -2.1], [3.7, -0.9, 0.05]])),
    C("DivNoNan", tf.div_no_nan, normal(2, 3), away(3)),
    C("Xlogy", tf.math.xlogy, away(2, 3), positive(3)),
    C("Xdivy", tf.math.xdivy, away(2, 3), away(2, 3)),
    C("Xlog1py", tf.math.xlog1py, away(2, 3), positive(2, 3)),
    C("MulNoNan", tf.math.multiply_no_nan, normal(2, 3), away(3)),
    C("lbeta", tf.lbeta, uniform(0.5, 3, 2, 3)),
]  # fmt: skip

# running sums and products, segment reductions, linspace
SEGMENT_IDS = np.array([0, 0, 2, 3, 3], np.int32)
UNSORTED_IDS = np.array([2, -1, 0, 2, 1], np.int32)
WITH_ZEROS = np.array([[0.5, -1.25], [0.0, 1.5], [2.0, 0.0], [0.0, 0.75], [0.0, 1.25]])
CASES += [
    C("Cumsum", lambda a: tf.cumsum(a, axis=1), normal(3, 4), dims=((None, 4),)),
    C("Cumsum-exclusive-reverse", lambda a: tf.cumsum(a, 0, True, True), normal(3, 4)),
    C("Cumprod", lambda a: tf.cumprod(a, axis=1), away(3, 4, lo=0.5, hi=1.5)),
    C("Cumprod-exclusive-reverse", lambda a: tf.cumprod(a, 0, True, True), away(3, 4, lo=0.5)),
    C("SegmentSum", lambda d: tf.segment_sum(d, SEGMENT_IDS), normal(5, 2)),
    C("SegmentMean", lambda d: tf.segment_mean(d, SEGMENT_IDS), normal(5, 2)),
    C("SegmentMax", lambda d: tf.segment_max(d, SEGMENT_IDS), distinct(5, 2)),
    C("SegmentMin", lambda d: tf.segment_min(d, SEGMENT_IDS), distinct(5, 2)),
    C("SegmentProd", lambda d: tf.segment_prod(d, SEGMENT_IDS), away(5, 2, lo=0.5, hi=1.5)),
    C("SegmentProd-zeros", lambda d: tf.segment_prod(d, SEGMENT_IDS), WITH_ZEROS),
    C("UnsortedSegmentMax", lambda d: tf.unsorted_segment_max(d, UNSORTED_IDS, 3), distinct(5, 2)),
    C("UnsortedSegmentMin", lambda d: tf.unsorted_segment_min(d, UNSORTED_IDS, 3), distinct(5, 2)),
    C(
        "UnsortedSegmentProd",
        lambda d: tf.unsorted_segment_prod(d, UNSORTED_IDS, 3),
        away(5, 2, lo=0.5, hi=1.5),
    ),
    C("UnsortedSegmentProd-zeros", lambda d: tf.unsorted_segment_prod(d, SEGMENT_IDS, 4),
      WITH_ZEROS),
    C("unsorted_segment_sqrt_n", lambda d: tf.unsorted_segment_sqrt_n(d, UNSORTED_IDS, 4),
      normal(5, 2)),
    C("linspace", lambda a, b: tf.linspace(a, b, 5), normal(), normal()),
]  # fmt: skip

# composites whose gradients come from their parts: logsumexp, einsum, norms, clipping
CASES += [
    C("reduce_logsumexp", lambda a: tf.reduce_logsumexp(a, axis=1), normal(3, 4) * 3),
    C("einsum", lambda a, b: tf.einsum("bij,bkj->bik", a, b), normal(2, 3, 4), normal(2, 5, 4)),
    C("einsum-diagonal", lambda a: tf.einsum("iji->j", a), normal(3, 2, 3)),
    C("tensordot", lambda a, b: tf.tensordot(a, b, [[0, 2], [2, 0]]), normal(2, 3, 4),
      normal(4, 5, 2)),
    C("norm", lambda a: tf.norm(a, axis=1), normal(3, 4)),
    C("norm-p3", lambda a: tf.norm(a, ord=3, axis=0), away(3, 4)),
    C("clip_by_norm", lambda a: tf.clip_by_norm(a, 1.0), normal(3, 4)),
    C("clip_by_global_norm", lambda a, b: tf.clip_by_global_norm([a, b], 1.0)[0], normal(3, 4),
      normal(2)),
]  # fmt: skip

# complex numbers: real losses of complex products and quotients (TF's conjugate rules)
CASES += [
    C("Complex-Real-Imag-Conj", lambda a, b: tf.real(tf.complex(a, b) * tf.conj(tf.complex(b, a)))
      + tf.imag(tf.complex(a, b) / tf.complex(b, 1.0 + a * a)), normal(3, 2), normal(3, 2)),
]  # fmt: skip


def _other(t: tf.Tensor):
    return tf.float32 if t.dtype == tf.float64 else tf.float64


# -- building, running, differencing --------------------------------------------------------------
@contextlib.contextmanager
def recording_rules(used: set):
    """Note the type of every op whose gradient rule runs."""

    def record(op_type, rule, op, *dys):
        used.add(op_type)
        return rule(op, *dys)

    saved = {t: d.grad for t, d in REGISTRY.items() if d.grad is not None}
    for t, rule in saved.items():
        REGISTRY[t].grad = functools.partial(record, t, rule)
    try:
        yield
    finally:
        for t, rule in saved.items():
            REGISTRY[t].grad = rule


class Built:
    """One case in one dtype: its placeholders, values, loss and gradients."""

    def __init__(self, case: Case, dtype, feed: dict) -> None:
        self.case, self.dtype = case, dtype
        self.xs, self.values, tensors = [], [], []
        for k, value in enumerate(case.inputs):
            value = np.asarray(value)
            if value.dtype.kind != "f":
                tensors.append(tf.constant(value))
                continue
            shape = case.dims[k] if case.dims else value.shape
            x = tf.placeholder(dtype, shape)
            feed[x] = value.astype(dtype.as_numpy_dtype)
            self.xs.append(x)
            self.values.append(value)
            tensors.append(x)
        ys = case.build(*tensors)
        self.ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]

    def finish(self, y_values: list, used: set) -> None:
        """The loss sum(y * w) with weights of y's run-time shapes, and its gradients."""
        rng = np.random.default_rng(zlib.crc32(self.case.name.encode()))  # same in both dtypes
        self.loss = 0.0
        for y, value in zip(self.ys, y_values):
            shape = np.shape(value)
            if self.case.exact:
                w = rng.choice([-1.0, -0.5, 0.25, 0.5, 1.0], shape)
            else:
                w = _f32(rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape))
            w = tf.constant(w.astype(self.dtype.as_numpy_dtype))
            self.loss = self.loss + tf.reduce_sum(y * w)
        with recording_rules(used):
            self.grads = tf.gradients(self.loss, self.xs)


class Table:
    """A batch of cases in float64 and float32, in one graph compiled once. Its program has
    four outputs (each dtype's losses, and its gradients flattened into one vector): a run's
    cost grows with the number of fetches and feeds."""

    def __init__(self, cases: list[Case]) -> None:
        self.graph = tf.Graph()
        self.feed: dict = {}
        self.used: dict[str, set] = {}
        with self.graph.as_default():
            self.built = {
                (c.name, d.name): Built(c, d, self.feed)
                for c in cases
                for d in (tf.float64, tf.float32)
            }
            ys = [y for b in self.built.values() for y in b.ys]
            values = iter(Interpreter(self.graph).run(ys, self.feed))
            for (name, _), b in self.built.items():
                b.finish([next(values) for _ in b.ys], self.used.setdefault(name, set()))
            self.fetches = []
            for dtype in ("float64", "float32"):
                built = [b for (_, d), b in self.built.items() if d == dtype]
                grads = [tf.reshape(g, [-1]) for b in built for g in b.grads if g is not None]
                self.fetches += [tf.stack([b.loss for b in built]), tf.concat(grads, 0)]

    def unpack(self, results: list) -> dict:
        """{(case, dtype): (loss, [gradient or None per x])}"""
        out = {}
        for dtype, losses, flat in (("float64", *results[:2]), ("float32", *results[2:])):
            built = [(k, b) for k, b in self.built.items() if k[1] == dtype]
            sizes = [v.size for _, b in built for g, v in zip(b.grads, b.values) if g is not None]
            pieces = iter(np.split(flat, np.cumsum(sizes)[:-1]))
            for loss, (key, b) in zip(losses, built):
                grads = [
                    None if g is None else next(pieces).reshape(v.shape)
                    for g, v in zip(b.grads, b.values)
                ]
                out[key] = (loss, grads)
        return out

    def run(self) -> dict:
        with tf.Session(graph=self.graph) as sess:
            compiled = self.unpack(sess.run(self.fetches, self.feed))
            fd = self.finite_differences(lambda feed: self.unpack(sess.run(self.fetches, feed)))
        interpreted = self.unpack(Interpreter(self.graph).run(self.fetches, self.feed))
        return {"compiled": compiled, "interpreted": interpreted, "fd": fd}

    def finite_differences(self, run: Callable) -> dict:
        """d loss / d x for every float64 case: run r moves element r of every case at once
        (cases are independent), to x + k h for k in (2, 1, -1, -2)."""
        cases = {k: b for k, b in self.built.items() if k[1] == "float64"}
        sizes = {k: sum(v.size for v in b.values) for k, b in cases.items()}
        flat = {k: np.zeros(n) for k, n in sizes.items()}
        for r in range(max(sizes.values())):
            losses = {}
            for step in (2, 1, -1, -2):
                feed = dict(self.feed)
                for k, b in cases.items():
                    if r < sizes[k]:
                        i, j = _locate(b.values, r)
                        moved = b.values[i].copy()
                        moved.flat[j] += step * H
                        feed[b.xs[i]] = moved
                results = run(feed)
                for k in cases:
                    losses.setdefault(k, []).append(float(results[k][0]))
            for k in cases:
                if r < sizes[k]:
                    l2, l1, m1, m2 = losses[k]
                    flat[k][r] = (-l2 + 8 * l1 - 8 * m1 + m2) / (12 * H)
        out = {}
        for k, b in cases.items():
            split = np.split(flat[k], np.cumsum([v.size for v in b.values])[:-1])
            out[k] = [s.reshape(v.shape) for s, v in zip(split, b.values)]
        return out


def _locate(values: list, r: int) -> tuple[int, int]:
    for i, v in enumerate(values):
        if r < v.size:
            return i, r
        r -= v.size
    raise IndexError(r)


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want), initial=0) / max(np.max(np.abs(want), initial=0), 1e-3))


BATCH = 30  # cases per compiled program: gcc's time grows faster than a program's size


class Tables:
    """Every batch's graph, built at once (cheap); each compiled and run when first needed."""

    def __init__(self) -> None:
        self.tables = [Table(CASES[i : i + BATCH]) for i in range(0, len(CASES), BATCH)]
        self._results: dict[int, dict | Exception] = {}

    def used(self) -> set:
        return set().union(*(u for t in self.tables for u in t.used.values()))

    def get(self, name: str) -> tuple[Table, dict]:
        k = next(k for k, t in enumerate(self.tables) if (name, "float64") in t.built)
        if k not in self._results:
            try:
                self._results[k] = self.tables[k].run()
            except Exception as e:  # a batch that cannot run fails each of its cases, once
                self._results[k] = e
        if isinstance(self._results[k], Exception):
            raise self._results[k]
        return self.tables[k], self._results[k]


@pytest.fixture(scope="module")
def tables() -> Tables:
    return Tables()


# -- (a) every differentiable op has a rule and a case ---------------------------------------------
def test_every_differentiable_op_has_a_rule_and_a_case(tables):
    covered = tables.used()
    missing_rule = sorted(k for k, d in REGISTRY.items() if d.differentiable and d.grad is None)
    untested = sorted(k for k, d in REGISTRY.items() if d.differentiable and k not in covered)
    assert not missing_rule, f"differentiable ops without a gradient rule: {missing_rule}"
    assert not untested, f"differentiable ops no gradient case exercises: {untested}"
    assert not {k for k in covered if not REGISTRY[k].differentiable}


# -- (b), (c) the table ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_gradient_matches_finite_differences(tables, name):
    t, results = tables.get(name)
    key = (name, "float64")
    b = t.built[key]
    loss, grads = results["compiled"][key]
    interpreted_loss, interpreted = results["interpreted"][key]
    np.testing.assert_allclose(loss, interpreted_loss, rtol=1e-12)  # C kernels vs references
    for i, (x, value) in enumerate(zip(b.xs, b.values)):
        fd = results["fd"][key][i]
        got = np.zeros_like(value) if grads[i] is None else grads[i]
        assert got.shape == value.shape and got.dtype == np.float64
        assert b.grads[i] is None or b.grads[i].shape.is_compatible_with(x.shape)
        err = _relative(got, fd)
        assert err < FD_RTOL, f"{name} input {i}: relative error {err:.3g}\n{got}\nvs\n{fd}"
        if grads[i] is not None:
            np.testing.assert_allclose(interpreted[i], grads[i], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_float32_gradient_matches_float64(tables, name):
    _, results = tables.get(name)
    _, g64 = results["compiled"][(name, "float64")]
    _, g32 = results["compiled"][(name, "float32")]
    _, i32 = results["interpreted"][(name, "float32")]
    for i, (a, b) in enumerate(zip(g32, g64)):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert a.dtype == np.float32 and a.shape == b.shape
        assert _relative(a.astype(np.float64), b) < F32_RTOL, f"{name} input {i}"
        np.testing.assert_allclose(i32[i], a, rtol=1e-5, atol=1e-6)


# -- (d) tf.gradients' semantics -------------------------------------------------------------------
def _interp(fetches, feed=None):
    return Interpreter(tf.get_default_graph()).run(fetches, feed)


def test_unconnected_and_non_float_give_none():
    x = tf.placeholder(tf.float64, [3])
    z = tf.placeholder(tf.float64, [3])
    i = tf.placeholder(tf.int32, [3])
    y = tf.reduce_sum(x * x) + tf.reduce_sum(tf.cast(i, tf.float64)) + tf.reduce_sum(tf.floor(x))
    gx, gz, gi = tf.gradients(y, [x, z, i])
    assert gz is None and gi is None
    xv = np.array([0.25, -1.5, 2.0])
    np.testing.assert_allclose(_interp(gx, {x: xv, i: [1, 2, 3]}), 2 * xv)
    assert tf.gradients(tf.cast(i, tf.float32), i) == [None]
    assert tf.gradients(tf.argmax(x), x) == [None]


def test_fan_out_is_summed_with_add_n():
    x = tf.placeholder(tf.float64, [4])
    y = x * tf.sin(x) + tf.square(x)
    (g,) = tf.gradients(y, x)
    assert g.op.type == "AddN" and len(g.op.inputs) == 3
    xv = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(_interp(g, {x: xv}), np.sin(xv) + xv * np.cos(xv) + 2 * xv)


def test_grad_ys_multiple_ys_and_y_in_xs():
    x = tf.placeholder(tf.float64, [2])
    y1, y2 = 3 * x, x * x
    gy1 = tf.constant([1.0, -2.0], tf.float64)
    (g,) = tf.gradients([y1, y2], x, grad_ys=[gy1, None])
    xv = np.array([0.5, 4.0])
    np.testing.assert_allclose(_interp(g, {x: xv}), 3 * np.array([1, -2]) + 2 * xv)
    np.testing.assert_allclose(_interp(tf.gradients(x, x)[0], {x: xv}), [1.0, 1.0])
    with pytest.raises(ValueError, match="grad_ys"):
        tf.gradients([y1, y2], x, grad_ys=[gy1])
    with pytest.raises(TypeError, match="dtype"):
        tf.gradients(y1, x, grad_ys=tf.constant([1.0, 1.0], tf.float32))


def test_stop_gradient_and_stop_gradients():
    x = tf.placeholder(tf.float64, [])
    (g,) = tf.gradients(x * tf.stop_gradient(x), x)
    assert float(_interp(g, {x: 3.0})) == 3.0
    a = tf.constant(0.0)
    b = 2 * a
    ga, gb = tf.gradients(a + b, [a, b], stop_gradients=[a, b])  # TF's documented example
    assert float(_interp(ga)) == 1.0 and float(_interp(gb)) == 1.0
    assert float(_interp(tf.gradients(a + b, a)[0])) == 3.0


def test_variables_as_xs_sum_every_read():
    w = tf.Variable(np.array([1.0, -2.0, 0.5]), name="w")
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(w.read_value())
    (g,) = tf.gradients(loss, [w])
    assert g.shape.as_list() == [3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(g), 2 * np.array([1.0, -2.0, 0.5]) + 1)


def test_missing_rule_raises_lookup_error(monkeypatch):
    monkeypatch.setitem(
        REGISTRY,
        "NoRule",
        OpDef("NoRule", infer=lambda ctx: [(ctx.in_dtypes[0], ctx.in_shapes[0])]),
    )
    x = tf.placeholder(tf.float32, [2])
    y = apply_op("NoRule", [x], name="mystery").outputs[0]
    msg = r"No gradient defined for operation 'mystery' \(op type: NoRule\)"
    with pytest.raises(LookupError, match=msg):
        tf.gradients(y * 2.0, x)
    assert tf.gradients(tf.stop_gradient(y) + x, x)[0] is not None  # not on a gradient path


def test_names_follow_tf1():
    a = tf.placeholder(tf.float32, [2, 3], name="a")
    b = tf.placeholder(tf.float32, [3, 4], name="b")
    ga, gb = tf.gradients(tf.matmul(a, b), [a, b])
    assert (ga.op.name, gb.op.name) == (
        "gradients/MatMul_grad/MatMul",
        "gradients/MatMul_grad/MatMul_1",
    )
    product = tf.matmul(a, b)
    (again,) = tf.gradients(product, a, colocate_gradients_with_ops=True)
    assert again.op.name.startswith("gradients_1/")
    assert again.op.get_attr("_class") == [f"loc:@{product.op.name}"]
    with pytest.raises(ValueError, match="aggregation_method"):
        tf.gradients(a, a, aggregation_method=7)


def test_broadcast_decided_at_run_time():
    """Two [None, 3] inputs fed [1, 3] and [4, 3]: only the fed shapes show the broadcast."""
    x = tf.placeholder(tf.float64, [None, 3])
    y = tf.placeholder(tf.float64, [None, 3])
    gx, gy = tf.gradients(tf.reduce_sum(x * y), [x, y], gate_gradients=True)
    # gated: each gradient is an Identity that waits for the other one's computation
    assert gx.op.type == "Identity" and gy.op.inputs[0].op in gx.op.control_inputs
    xv, yv = RNG.standard_normal((1, 3)), RNG.standard_normal((4, 3))
    with tf.Session() as sess:
        got_x, got_y = sess.run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(got_x, yv.sum(axis=0, keepdims=True))
    np.testing.assert_allclose(got_y, np.broadcast_to(xv, (4, 3)))


def test_ties_share_the_gradient():
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    (g,) = tf.gradients(tf.reduce_max(x, axis=1), x)
    np.testing.assert_allclose(_interp(g), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
    a, b = tf.constant([1.0, 2.0]), tf.constant([1.0, 1.0])
    ga, gb = tf.gradients(tf.maximum(a, b), [a, b])  # TF gives ties to x
    np.testing.assert_allclose(_interp([ga, gb]), [[1, 1], [0, 0]])


def test_mlp_gradients_match_finite_differences():
    """A dense relu layer (matmul, bias_add, relu) and a dense output layer (matmul, +) under a
    softmax cross entropy built from log_softmax, with the batch dim known only at run time."""
    rng = np.random.default_rng(7)
    x = tf.placeholder(tf.float64, [None, 4], name="x")
    labels = tf.placeholder(tf.float64, [None, 3], name="labels")
    while True:  # no hidden pre-activation within the stencil's reach of relu's kink
        params = {"W1": rng.normal(size=(4, 5)), "b1": rng.normal(size=5) * 0.1}
        params.update(W2=rng.normal(size=(5, 3)), b2=rng.normal(size=3) * 0.1)
        xv = rng.normal(size=(6, 4))
        if np.abs(xv @ params["W1"] + params["b1"]).min() > 0.05:
            break
    ph = {k: tf.placeholder(tf.float64, v.shape, name=k) for k, v in params.items()}
    hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, ph["W1"]), ph["b1"]))
    logits = tf.matmul(hidden, ph["W2"]) + ph["b2"]
    loss = tf.reduce_mean(-tf.reduce_sum(labels * tf.nn.log_softmax(logits), axis=1))
    grads = tf.gradients(loss, list(ph.values()))
    feed = {x: xv, labels: np.eye(3)[rng.integers(0, 3, 6)]}
    feed.update({ph[k]: v for k, v in params.items()})
    with tf.Session() as sess:
        got = sess.run(grads, feed)
        for (k, value), g in zip(params.items(), got):
            fd = np.zeros_like(value)
            for j in range(value.size):
                losses = []
                for step in (2, 1, -1, -2):
                    moved = value.copy()
                    moved.flat[j] += step * H
                    losses.append(sess.run(loss, {**feed, ph[k]: moved}))
                fd.flat[j] = (-losses[0] + 8 * losses[1] - 8 * losses[2] + losses[3]) / (12 * H)
            assert _relative(g, fd) < FD_RTOL, k
    interpreted = _interp(grads, feed)
    for a, b in zip(interpreted, got):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
