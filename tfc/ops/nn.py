"""`tf.nn` ops: activations, Softmax/LogSoftmax (one fused kernel), BiasAdd, and dropout."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import TensorShape, merge_shapes, num_elements, shape_str
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.elementwise import apply_elementwise, register_elementwise
from tfc.ops.flops import per_input_element, per_output_element
from tfc.ops.grad_ops import reduce_sum_over, shape_tensor
from tfc.ops.kernels import (
    Kernel,
    Operand,
    Param,
    RowSpec,
    c_literal,
    elementwise_expr,
    format_expr,
    loop_kernel,
    view,
)
from tfc.ops.linalg import matmul
from tfc.ops.logic import equal
from tfc.ops.math import cast, divide, floor, sigmoid, tanh, to_float
from tfc.ops.random import random_uniform
from tfc.ops.reduce import reduce_mean
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    check_same_dtypes,
    constant_value,
    get_opdef,
    register,
)

__all__ = [
    "relu",
    "relu6",
    "elu",
    "selu",
    "leaky_relu",
    "softplus",
    "softsign",
    "crelu",
    "swish",
    "silu",
    "relu_layer",
    "xw_plus_b",
    "zero_fraction",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
    "bias_add",
    "dropout",
]

_FLOATS = _dt.FLOATS  # the 16-bit floats run in float32 (OpDef.computes_in)
_NUMERIC = _dt.NUMERIC


# -- element-wise activations -------------------------------------------------------------------
def _softplus(x: np.ndarray) -> np.ndarray:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _fused(op_type: str, dy: Tensor, t: Tensor, **attrs: Any) -> list:
    """TF's fused gradient ops (tfc/ops/nn_grad.py): dy * f'(x), from x or from y = f(x)."""
    return [apply_op(op_type, [dy, t], attrs, name=op_type).outputs[0]]


# NaN passes through every activation, as Eigen's max/min/select give it in TensorFlow
register_elementwise(
    "Relu",
    lambda x: np.where(x < 0, 0, x),
    {"f": "({0} < 0 ? ({T})0 : {0})", "i": "({0} < 0 ? ({T})0 : {0})", "u": "{0}"},
    grad=lambda op, dy: _fused("ReluGrad", dy, op.outputs[0]),  # y > 0 exactly where x > 0
)
register_elementwise(
    "Relu6",
    lambda x: np.where(x < 0, 0, np.where(x > 6, 6, x)),
    {
        "f": "({0} < 0 ? ({T})0 : ({0} > 6 ? ({T})6 : {0}))",
        "i": "({0} < 0 ? ({T})0 : ({0} > 6 ? ({T})6 : {0}))",
        "u": "({0} > 6 ? ({T})6 : {0})",
    },
    grad=lambda op, dy: _fused("Relu6Grad", dy, op.inputs[0]),
)
register_elementwise(
    "Elu",
    lambda x: np.where(x < 0, np.expm1(x), x),
    {"f": "({0} < 0 ? expm1{sfx}({0}) : {0})"},
    grad=lambda op, dy: _fused("EluGrad", dy, op.outputs[0]),
)
register_elementwise(
    "LeakyRelu",
    lambda attrs, x: np.where(x > 0, x, x * x.dtype.type(attrs["alpha"])),
    {"f": "({0} > 0 ? {0} : {0} * ({alpha}))"},
    params=lambda attrs, dtype: {"alpha": c_literal(attrs["alpha"], dtype)},
    grad=lambda op, dy: _fused("LeakyReluGrad", dy, op.inputs[0], alpha=op.get_attr("alpha")),
)
register_elementwise(
    "Softplus",
    _softplus,
    {"f": "tfc_softplus_{tag}({0})"},
    grad=lambda op, dy: _fused("SoftplusGrad", dy, op.inputs[0]),
)


# SELU's constants (Klambauer et al., 2017), as TF's kernel spells them
SELU_SCALE = 1.0507009873554804934193349852946
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123  # scale * alpha


def selu_constants(dtype: _dt.DType) -> dict:
    """SELU's constants as C literals of `dtype` (the expression placeholders of Selu, SeluGrad)."""
    return {
        "scale": c_literal(SELU_SCALE, dtype),
        "scale_alpha": c_literal(SELU_SCALE_ALPHA, dtype),
    }


register_elementwise(
    "Selu",
    lambda attrs, x: np.where(
        x < 0, x.dtype.type(SELU_SCALE_ALPHA) * np.expm1(x), x.dtype.type(SELU_SCALE) * x
    ),
    {"f": "({0} < 0 ? {scale_alpha} * expm1{sfx}({0}) : {scale} * {0})"},
    params=lambda attrs, dtype: selu_constants(dtype),
    grad=lambda op, dy: _fused("SeluGrad", dy, op.outputs[0]),
)
register_elementwise(
    "Softsign",
    lambda x: x / (1 + np.abs(x)),
    {"f": "{0} / (({T})1 + fabs{sfx}({0}))"},
    grad=lambda op, dy: _fused("SoftsignGrad", dy, op.inputs[0]),
)


def relu(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.relu`: max(features, 0)."""
    return apply_elementwise("Relu", features, name=name or "Relu")


def relu6(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.relu6`: min(max(features, 0), 6)."""
    with name_scope(name, "Relu6", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        return apply_op("Relu6", [features], name=scope).outputs[0]


def elu(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.elu`: features if > 0, else exp(features) - 1."""
    return apply_elementwise("Elu", features, name=name or "Elu")


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """`tf.nn.leaky_relu`: features if > 0, else alpha * features (integers become float32)."""
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = to_float(features)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return apply_op("LeakyRelu", [features], {"alpha": float(alpha)}, name=scope).outputs[0]


def softplus(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.softplus`: log(exp(features) + 1), computed without overflow."""
    return apply_elementwise("Softplus", features, name=name or "Softplus")


def selu(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.selu`: scale * features if > 0, else scale * alpha * (exp(features) - 1)."""
    return apply_elementwise("Selu", features, name=name or "Selu")


def softsign(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.softsign`: features / (abs(features) + 1)."""
    return apply_elementwise("Softsign", features, name=name or "Softsign")


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """`tf.nn.crelu`: relu of [features, -features] concatenated along `axis` (twice the depth)."""
    with name_scope(name, "CRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        both = _array.concat([features, -features], axis)
        return relu(both, name=scope)


def swish(features: Any, beta: float = 1.0, name: str | None = None) -> Tensor:
    """`tf.nn.swish` (= `tf.nn.silu`): features * sigmoid(beta * features)."""
    with name_scope(name, "swish", [features]):
        features = convert_to_tensor(features, name="features")
        if isinstance(beta, numbers.Real) and beta == 1.0:
            return features * sigmoid(features)
        beta = convert_to_tensor(beta, dtype=features.dtype, name="beta")
        return features * sigmoid(beta * features)


silu = swish


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """`tf.math.log_sigmoid`: log(1 / (1 + exp(-x))) = -softplus(-x), without overflow."""
    with name_scope(name, "LogSigmoid", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return apply_op("Neg", [softplus(-x)], name=scope).outputs[0]


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """`tf.nn.xw_plus_b`: matmul(x, weights) + biases, for a matrix x and a vector of biases."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, dtype=x.dtype, name="weights")
        biases = convert_to_tensor(biases, dtype=x.dtype, name="biases")
        return bias_add(matmul(x, weights), biases, name=scope)


def relu_layer(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """`tf.nn.relu_layer`: relu(matmul(x, weights) + biases)."""
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, dtype=x.dtype, name="weights")
        biases = convert_to_tensor(biases, dtype=x.dtype, name="biases")
        return relu(bias_add(matmul(x, weights), biases), name=scope)


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """`tf.math.zero_fraction`: the fraction of `value`'s elements that are zero, as float32
    (NaN for an empty tensor, as TF's mean of nothing)."""
    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        zero = convert_to_tensor(0, dtype=value.dtype, name="zero")
        return reduce_mean(cast(equal(value, zero), _dt.float32), name="fraction")


# -- Softmax, LogSoftmax --------------------------------------------------------------------------
def _softmax_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _FLOATS, "logits")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    return [(ctx.in_dtypes[0], shape)]


def _softmax_reference(log: bool):
    def reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
        if x.shape[-1] == 0:
            return x.copy()
        with np.errstate(all="ignore"):
            shifted = x - x.max(axis=-1, keepdims=True)
            total = np.exp(shifted).sum(axis=-1, keepdims=True)
            return shifted - np.log(total) if log else np.exp(shifted) / total

    return reference


def _softmax_lower(log: bool):
    """One pass per row over the last axis: max, then sum of exp(x - max), then normalize."""

    def lower(ctx: OpContext) -> list:
        dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
        if num_elements(shape) == 0:
            return []
        if log:
            accumulate = ["s += exp{sfx}(xr[j] - m);"]
            prelude = ["const {T} log_s = log{sfx}(s);"]
            finish = "(xr[j] - m) - log_s"
        else:
            accumulate = ["yr[j] = exp{sfx}(xr[j] - m);", "s += yr[j];"]
            prelude = []
            finish = "yr[j] / s"
        params = [
            Param("y", dtype.c_type, False, "out0"),
            Param("x0", dtype.c_type, True, "in0"),
        ]
        exprs = {
            # NaN-propagating max, so a row holding NaN gives NaN everywhere as in NumPy
            "max": format_expr("tfc_max_{tag}(m, xr[j])", dtype),
            "accumulate": tuple(format_expr(line, dtype) for line in accumulate),
            "prelude": tuple(format_expr(line, dtype) for line in prelude),
            "finish": finish,
        }
        spec = RowSpec(dtype, num_elements(shape[:-1]), shape[-1], exprs)
        return [Kernel("softmax", params, spec)]

    return lower


for _type, _log in [("Softmax", False), ("LogSoftmax", True)]:
    register(
        OpDef(
            _type,
            infer=_softmax_infer,
            reference=_softmax_reference(_log),
            lower=_softmax_lower(_log),
            flops=per_input_element(6 if _log else 5),  # max, exp(x - max), sum, / or log
            # one fused row kernel from the output: (dy - sum(dy * y)) * y, dy - e^y sum(dy)
            grad=lambda op, dy: [
                apply_op(op.type + "Grad", [op.outputs[0], dy], name=op.type + "Grad").outputs[0]
            ],
            input_names=("logits",),
            dtypes=(_dt.float16, _dt.bfloat16),
            computes_in=HALVES_IN_FLOAT32,
        )
    )


def _softmax_axis(axis: int | None, dim: int | None) -> int:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = dim if axis is None else axis
    return -1 if axis is None else int(axis)


def _softmax(logits: Any, op_type: str, axis: int, name: str | None) -> Tensor:
    """The op on the last axis; another axis is swapped with the last one and back, as TF does."""
    logits = convert_to_tensor(logits)
    shape = logits._shape_tuple
    if axis == -1 or (shape is not None and axis == len(shape) - 1):
        return apply_op(op_type, [logits], name=name or op_type).outputs[0]
    if shape is None:
        raise ValueError(
            f"{op_type} over axis {axis} needs the rank of logits to be known when the graph "
            "is built"
        )
    rank = len(shape)
    if not -rank <= axis < rank:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Dimension ({axis}) must be in the range [{-rank}, {rank}) where {rank} is the "
            "number of dimensions in the input.",
        )
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    swapped = apply_op(op_type, [_array.transpose(logits, perm)], name=op_type).outputs[0]
    output = _array.transpose(swapped, perm, name=name)
    output.set_shape(shape)
    return output


def softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """`tf.nn.softmax`: exp(logits) / sum(exp(logits), axis), stable for large logits."""
    return _softmax(logits, "Softmax", _softmax_axis(axis, dim), name)


def log_softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """`tf.nn.log_softmax`: logits - log(sum(exp(logits), axis)), stable for large logits."""
    return _softmax(logits, "LogSoftmax", _softmax_axis(axis, dim), name)


# -- BiasAdd ------------------------------------------------------------------------------------
def _bias_axis(data_format: str, rank: int) -> int:
    return 1 if data_format == "NCHW" else rank - 1


def _bias_add_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("value", "bias"))
    check_dtype(ctx, 0, _NUMERIC, "value")
    value, bias = ctx.in_shapes
    data_format = ctx.attrs.get("data_format", "NHWC")
    least = 3 if data_format == "NCHW" else 2
    if value is not None and len(value) < least:
        raise ctx.error(f"Shape must be at least rank {least} but is rank {len(value)}")
    if bias is not None and len(bias) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(bias)}")
    if value is None:
        return [(ctx.in_dtypes[0], None)]
    axis = _bias_axis(data_format, len(value))
    channels = merge_shapes((value[axis],), (None,) if bias is None else bias)
    if channels is False:
        raise ctx.error(f"Dimensions must be equal, but are {value[axis]} and {bias[0]}")
    out = list(value)
    out[axis] = channels[0]
    return [(ctx.in_dtypes[0], tuple(out))]


def _bias_add_reference(ctx: OpContext, value: np.ndarray, bias: np.ndarray) -> np.ndarray:
    axis = _bias_axis(ctx.attrs.get("data_format", "NHWC"), value.ndim)
    shape = [1] * value.ndim
    shape[axis] = bias.shape[0]
    with np.errstate(all="ignore"):
        return (value + bias.reshape(shape)).astype(value.dtype)


def _bias_add_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    axis = _bias_axis(ctx.attrs.get("data_format", "NHWC"), len(shape))
    bias_strides = tuple(1 if k == axis else 0 for k in range(len(shape)))
    expr = elementwise_expr(get_opdef("Add").expr.expr_for(dtype), dtype, ["{0}", "{1}"])
    return loop_kernel(
        shape,
        view("out0", dtype, shape),
        [view("in0", dtype, shape), Operand("in1", dtype, bias_strides)],
        expr,
    )


def _bias_add_grad(op, dy: Tensor) -> list:
    """The bias gradient sums dy over every dim but the channel one (TF's BiasAddGrad)."""
    rank = None if dy._shape_tuple is None else len(dy._shape_tuple)
    if op.get_attr("data_format") == "NCHW":
        if rank is None:
            raise ValueError(f"The gradient of '{op.name}' (BiasAdd, NCHW) needs its rank")
        return [dy, reduce_sum_over(dy, [k for k in range(rank) if k != 1])]
    if rank is None:  # channels last: the rows of dy seen as [-1, channels]
        channels = shape_tensor(op.inputs[1])
        rows = apply_op("ConcatV2", [constant([-1]), channels, constant(0)], {"N": 2}).outputs[0]
        return [dy, reduce_sum_over(_array.reshape(dy, rows), [0])]
    return [dy, reduce_sum_over(dy, list(range(rank - 1)))]


register(
    OpDef(
        "BiasAdd",
        infer=_bias_add_infer,
        reference=_bias_add_reference,
        lower=_bias_add_lower,
        flops=per_output_element(1),
        grad=_bias_add_grad,
        input_names=("value", "bias"),
        dtypes=_dt.NUMERIC,
    )
)


def bias_add(
    value: Any, bias: Any, data_format: str | None = None, name: str | None = None
) -> Tensor:
    """`tf.nn.bias_add`: adds the 1-D `bias` along the channel dim (last, or 1 for NC...)."""
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError("data_format must be of the form `N...C` or `NC...`")
        value = convert_to_tensor(value, name="input")
        bias = convert_to_tensor(bias, dtype=value.dtype, name="bias")
        attrs = {"data_format": data_format or "NHWC"}
        return apply_op("BiasAdd", [value, bias], attrs, name=scope).outputs[0]


# -- dropout --------------------------------------------------------------------------------------
def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    """noise_shape with its unknown dims taken from x's static shape (TF's _get_noise_shape)."""
    if noise_shape is None:
        return _array.shape(x)
    try:
        dims = TensorShape(noise_shape).as_tuple()
    except (TypeError, ValueError):
        return noise_shape  # a tensor: the random op checks it
    x_dims = x._shape_tuple
    if x_dims is not None and dims is not None and len(x_dims) == len(dims):
        return TensorShape([n if n is not None else d for n, d in zip(dims, x_dims)])
    return noise_shape


def dropout(
    x: Any,
    keep_prob: Any = None,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
    rate: Any = None,
) -> Tensor:
    """`tf.nn.dropout`: each entry kept with probability keep_prob (= 1 - rate) and scaled by
    1 / keep_prob, else zeroed; entries sharing a noise_shape cell are kept or dropped together.
    """
    try:
        keep = 1.0 - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(
            f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})"
        ) from None
    if rate is not None and keep is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
    rate = keep if rate is None else rate
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    with name_scope(name, "dropout", [x]):  # the result is "dropout/mul", as in TF
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(
                "x has to be a floating point tensor since it's going to be scaled. Got a "
                f"{x.dtype.name} tensor instead."
            )
        if isinstance(rate, numbers.Real):
            if not 0 <= rate < 1:
                raise ValueError(
                    f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}"
                )
            if rate == 0:
                return x
        rate = convert_to_tensor(rate, dtype=x.dtype, name="rate")
        if rate._shape_tuple not in (None, ()):
            raise ValueError(f"rate must be a scalar, got shape {shape_str(rate._shape_tuple)}")
        known = constant_value(rate.graph, (rate.op.name, rate.value_index))
        if known is not None and float(known) == 0:
            return x
        keep_prob = 1 - rate
        # uniform in [keep_prob, 1 + keep_prob): its floor is 1 with probability keep_prob
        random_tensor = keep_prob + random_uniform(
            _noise_shape(x, noise_shape), seed=seed, dtype=x.dtype
        )
        binary_tensor = floor(random_tensor)
        ret = divide(x, keep_prob) * binary_tensor
        ret.set_shape(x.get_shape())
        return ret
