"""Element-wise math: arithmetic, comparisons, logic, unary functions, Cast, Select, AddN."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc import dtypes as _dt
from tfc import errors
from tfc.graph import Tensor, name_scope
from tfc.kernels import format_expr, loop_kernel, view
from tfc.ops.constant import convert_to_tensor
from tfc.ops.elementwise import (
    apply_elementwise,
    convert_operands,
    integer_division_check,
    register_elementwise,
)
from tfc.ops.registry import (
    OpDef,
    apply_op,
    broadcast_shape,
    check_same_dtypes,
    register,
)

__all__ = [
    "cast",
    "to_float",
    "to_int32",
    "to_int64",
    "where",
    "add_n",
    "add",
    "subtract",
    "multiply",
    "floordiv",
    "floormod",
    "mod",
    "pow",
    "maximum",
    "minimum",
    "squared_difference",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "negative",
    "neg",
    "abs",
    "sign",
    "square",
    "reciprocal",
    "rsqrt",
    "sigmoid",
    "round",
    "floor",
    "ceil",
    "exp",
    "expm1",
    "log",
    "log1p",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "truediv",
    "divide",
    "div",
    "scalar_mul",
    "clip_by_value",
]

_CMP = _dt.bool_


def _checked(fn, check):
    def run(*xs):
        check(*xs)
        return fn(*xs)

    return run


def _int_pow(x, y):
    if np.issubdtype(y.dtype, np.integer) and (y < 0).any():
        raise errors.InvalidArgumentError(
            None, None, "Integers to negative integer powers are not allowed"
        )
    return np.power(x, y)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


_DIV_GUARD = {"i": ("{1} == 0", "Integer division by zero")}

# -- binary arithmetic ---------------------------------------------------------------------------
register_elementwise("Add", np.add, {"f": "{0} + {1}", "i": "tfc_add_{tag}({0}, {1})"})
register_elementwise("Sub", np.subtract, {"f": "{0} - {1}", "i": "tfc_sub_{tag}({0}, {1})"})
register_elementwise("Mul", np.multiply, {"f": "{0} * {1}", "i": "tfc_mul_{tag}({0}, {1})"})
register_elementwise("RealDiv", np.true_divide, {"f": "{0} / {1}"})
register_elementwise(
    "FloorDiv",
    _checked(
        lambda x, y: np.floor(x / y) if x.dtype.kind == "f" else np.floor_divide(x, y),
        integer_division_check,
    ),
    {"f": "tfc_floordiv_{tag}({0}, {1})", "i": "tfc_floordiv_{tag}({0}, {1})"},
    guards=_DIV_GUARD,
)
register_elementwise(
    "FloorMod",
    _checked(np.mod, integer_division_check),
    {"f": "tfc_floormod_{tag}({0}, {1})", "i": "tfc_floormod_{tag}({0}, {1})"},
    guards=_DIV_GUARD,
)
register_elementwise(
    "Pow",
    _int_pow,
    {"f": "pow{sfx}({0}, {1})", "i": "tfc_pow_{tag}({0}, {1})"},
    guards={"i": ("{1} < 0", "Integers to negative integer powers are not allowed")},
)
register_elementwise(
    "Maximum", np.maximum, {"f": "tfc_max_{tag}({0}, {1})", "i": "({0} > {1} ? {0} : {1})"}
)
register_elementwise(
    "Minimum", np.minimum, {"f": "tfc_min_{tag}({0}, {1})", "i": "({0} < {1} ? {0} : {1})"}
)
register_elementwise(
    "SquaredDifference",
    lambda x, y: np.square(x - y),
    {"f": "({0} - {1}) * ({0} - {1})", "i": "tfc_square_{tag}(tfc_sub_{tag}({0}, {1}))"},
)

# -- comparisons and logic -----------------------------------------------------------------------
for _type, _fn, _sym in [
    ("Greater", np.greater, ">"),
    ("GreaterEqual", np.greater_equal, ">="),
    ("Less", np.less, "<"),
    ("LessEqual", np.less_equal, "<="),
]:
    register_elementwise(
        _type,
        _fn,
        {"f": f"{{0}} {_sym} {{1}}", "i": f"{{0}} {_sym} {{1}}"},
        out=_CMP,
        differentiable=False,
    )
for _type, _fn, _sym in [("Equal", np.equal, "=="), ("NotEqual", np.not_equal, "!=")]:
    register_elementwise(
        _type, _fn, {k: f"{{0}} {_sym} {{1}}" for k in "fib"}, out=_CMP, differentiable=False
    )
register_elementwise("LogicalAnd", np.logical_and, {"b": "{0} && {1}"}, differentiable=False)
register_elementwise("LogicalOr", np.logical_or, {"b": "{0} || {1}"}, differentiable=False)
register_elementwise("LogicalNot", np.logical_not, {"b": "!{0}"}, differentiable=False)

# -- unary functions -----------------------------------------------------------------------------
register_elementwise("Neg", np.negative, {"f": "-{0}", "i": "tfc_neg_{tag}({0})"})
register_elementwise("Abs", np.abs, {"f": "fabs{sfx}({0})", "i": "tfc_abs_{tag}({0})"})
register_elementwise("Sign", np.sign, {"f": "tfc_sign_{tag}({0})", "i": "tfc_sign_{tag}({0})"})
register_elementwise("Square", np.square, {"f": "{0} * {0}", "i": "tfc_square_{tag}({0})"})
register_elementwise("Reciprocal", np.reciprocal, {"f": "({T})1 / {0}"})
register_elementwise("Rsqrt", lambda x: 1 / np.sqrt(x), {"f": "({T})1 / sqrt{sfx}({0})"})
register_elementwise("Sigmoid", _sigmoid, {"f": "tfc_sigmoid_{tag}({0})"})
register_elementwise(
    "Round", np.rint, {"f": "tfc_round_{tag}({0})", "i": "{0}"}, differentiable=False
)
register_elementwise("Floor", np.floor, {"f": "floor{sfx}({0})"}, differentiable=False)
register_elementwise("Ceil", np.ceil, {"f": "ceil{sfx}({0})"}, differentiable=False)
for _type, _fn, _c in [
    ("Exp", np.exp, "exp"),
    ("Expm1", np.expm1, "expm1"),
    ("Log", np.log, "log"),
    ("Log1p", np.log1p, "log1p"),
    ("Sqrt", np.sqrt, "sqrt"),
    ("Sin", np.sin, "sin"),
    ("Cos", np.cos, "cos"),
    ("Tan", np.tan, "tan"),
    ("Tanh", np.tanh, "tanh"),
]:
    register_elementwise(_type, _fn, {"f": f"{_c}{{sfx}}({{0}})"})


# -- Cast ---------------------------------------------------------------------------------------
def _cast_expr(src: _dt.DType, dst: _dt.DType) -> str:
    if dst.kind == "b":
        return "({0} != 0)"
    if src.kind == "f" and dst.kind == "i":
        return f"tfc_f2i{dst.size * 8}({{0}})"
    return f"({dst.c_type})({{0}})"


def _cast_reference(ctx, x):
    dst = ctx.attrs["DstT"]
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f" and dst.is_integer:
            info = np.iinfo(dst.np)
            ok = (x > float(info.min) - 1) & (x < float(info.max) + 1)
            return np.where(ok, np.trunc(np.where(ok, x, 0)), info.min).astype(dst.np)
        return x.astype(dst.np)


register(
    OpDef(
        "Cast",
        infer=lambda ctx: [(ctx.attrs["DstT"], ctx.in_shapes[0])],
        reference=_cast_reference,
        lower=lambda ctx: loop_kernel(
            ctx.out_shapes[0],
            view("out0", ctx.out_dtypes[0], ctx.out_shapes[0]),
            [view("in0", ctx.in_dtypes[0], ctx.in_shapes[0])],
            _cast_expr(ctx.in_dtypes[0], ctx.out_dtypes[0]),
        ),
    )
)


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """`tf.cast`: float to int truncates toward zero; anything to bool is `!= 0`."""
    dtype = _dt.as_dtype(dtype)
    x = convert_to_tensor(x)
    if x.dtype == dtype:
        return x
    return apply_op("Cast", [x], {"SrcT": x.dtype, "DstT": dtype}, name=name or "Cast").outputs[0]


def to_float(x: Any, name: str = "ToFloat") -> Tensor:
    return cast(x, _dt.float32, name=name)


def to_int32(x: Any, name: str = "ToInt32") -> Tensor:
    return cast(x, _dt.int32, name=name)


def to_int64(x: Any, name: str = "ToInt64") -> Tensor:
    return cast(x, _dt.int64, name=name)


# -- Select (where) -----------------------------------------------------------------------------
def _select_infer(ctx):
    if ctx.in_dtypes[0] != _dt.bool_:
        raise TypeError(
            f"Input 'condition' of 'SelectV2' Op has type {ctx.in_dtypes[0].name} that does "
            "not match expected type of bool."
        )
    if ctx.in_dtypes[1] != ctx.in_dtypes[2]:
        raise TypeError(
            f"Input 'e' of 'SelectV2' Op has type {ctx.in_dtypes[2].name} that does not match "
            f"type {ctx.in_dtypes[1].name} of argument 't'."
        )
    shape = broadcast_shape(ctx, ctx.in_shapes[0], ctx.in_shapes[1])
    return [(ctx.in_dtypes[1], broadcast_shape(ctx, shape, ctx.in_shapes[2]))]


def _select_lower(ctx):
    shape = ctx.out_shapes[0]
    ins = [view(f"in{i}", ctx.in_dtypes[i], ctx.in_shapes[i], shape) for i in range(3)]
    return loop_kernel(shape, view("out0", ctx.out_dtypes[0], shape), ins, "{0} ? {1} : {2}")


register(
    OpDef(
        "SelectV2",
        infer=_select_infer,
        reference=lambda ctx, c, x, y: np.where(c, x, y),
        lower=_select_lower,
    )
)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`tf.where(cond, x, y)`: elements of x where cond holds, else of y (broadcasting).

    TF1's form with a vector condition selecting rows of x and y is supported. The one-argument
    form (coordinates of true elements) has a data-dependent shape, which an ahead-of-time
    compiled program cannot have.
    """
    if x is None and y is None:
        raise NotImplementedError(
            "tf.where(condition) returns a tensor whose shape depends on the data; tfc compiles "
            "static shapes ahead of time. Use tf.where(condition, x, y) instead."
        )
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    cond = convert_to_tensor(condition)
    x, y = convert_operands(x, y)
    cond_shape, x_shape = cond._shape_tuple, x._shape_tuple
    if cond_shape is not None and x_shape is not None and len(cond_shape) == 1 < len(x_shape):
        from tfc.ops.array import reshape

        cond = reshape(cond, [-1] + [1] * (len(x_shape) - 1))
    return apply_op("SelectV2", [cond, x, y], name=name or "Select").outputs[0]


# -- AddN ---------------------------------------------------------------------------------------
def _add_n_infer(ctx):
    check_same_dtypes(ctx, [f"inputs[{i}]" for i in range(len(ctx.in_dtypes))])
    shape = ctx.in_shapes[0]
    for s in ctx.in_shapes[1:]:
        if (
            shape is not None
            and s is not None
            and (
                len(shape) != len(s)
                or any(a is not None and b is not None and a != b for a, b in zip(shape, s))
            )
        ):
            raise ctx.error("Shapes must be equal rank, and all dimensions must match")
        shape = s if shape is None else shape
    return [(ctx.in_dtypes[0], shape)]


def _add_n_lower(ctx):
    dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    add = "{0} + {1}" if dtype.is_floating else "tfc_add_{tag}({0}, {1})"
    expr = "{0}"
    for i in range(1, len(ctx.in_dtypes)):
        expr = format_expr(add, dtype, expr, f"{{{i}}}")
    ins = [view(f"in{i}", dtype, shape) for i in range(len(ctx.in_dtypes))]
    return loop_kernel(shape, view("out0", dtype, shape), ins, expr)


register(
    OpDef(
        "AddN",
        infer=_add_n_infer,
        reference=lambda ctx, *xs: np.sum(np.stack(xs), axis=0).astype(xs[0].dtype),
        lower=_add_n_lower,
    )
)


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """`tf.add_n`: the element-wise sum of a list of tensors of one shape and dtype."""
    if not inputs:
        raise ValueError("inputs must be a non-empty list of Tensors")
    tensors = convert_operands(*inputs)
    if len(tensors) == 1:
        return tensors[0]
    return apply_op("AddN", tensors, name=name or "AddN").outputs[0]


# -- frontends ----------------------------------------------------------------------------------
def _binary(op_type: str, default_name: str):
    def fn(x: Any, y: Any, name: str | None = None) -> Tensor:
        return apply_elementwise(op_type, x, y, name=name or default_name)

    fn.__name__ = default_name
    fn.__doc__ = f"Element-wise {op_type} with NumPy broadcasting."
    return fn


def _unary(op_type: str):
    def fn(x: Any, name: str | None = None) -> Tensor:
        return apply_elementwise(op_type, x, name=name or op_type)

    fn.__name__ = op_type.lower()
    fn.__doc__ = f"Element-wise {op_type}."
    return fn


add = _binary("Add", "Add")
subtract = _binary("Sub", "Sub")
multiply = _binary("Mul", "Mul")
floordiv = _binary("FloorDiv", "floordiv")
floormod = mod = _binary("FloorMod", "FloorMod")
pow = _binary("Pow", "Pow")  # noqa: A001  tf.pow
maximum = _binary("Maximum", "Maximum")
minimum = _binary("Minimum", "Minimum")
squared_difference = _binary("SquaredDifference", "SquaredDifference")
greater = _binary("Greater", "Greater")
greater_equal = _binary("GreaterEqual", "GreaterEqual")
less = _binary("Less", "Less")
less_equal = _binary("LessEqual", "LessEqual")
equal = _binary("Equal", "Equal")
not_equal = _binary("NotEqual", "NotEqual")
logical_and = _binary("LogicalAnd", "LogicalAnd")
logical_or = _binary("LogicalOr", "LogicalOr")
logical_not = _unary("LogicalNot")
negative = neg = _unary("Neg")
abs = _unary("Abs")  # noqa: A001  tf.abs
sign = _unary("Sign")
square = _unary("Square")
reciprocal = _unary("Reciprocal")
rsqrt = _unary("Rsqrt")
sigmoid = _unary("Sigmoid")
round = _unary("Round")  # noqa: A001  tf.round
floor = _unary("Floor")
ceil = _unary("Ceil")
exp = _unary("Exp")
expm1 = _unary("Expm1")
log = _unary("Log")
log1p = _unary("Log1p")
sqrt = _unary("Sqrt")
sin = _unary("Sin")
cos = _unary("Cos")
tan = _unary("Tan")
tanh = _unary("Tanh")

_TRUEDIV_FLOAT = {_dt.int32: _dt.float64, _dt.int64: _dt.float64}


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.truediv`: integers are first cast to float64, as TensorFlow does."""
    with name_scope(name, "truediv") as scope:
        x, y = convert_operands(x, y)
        if x.dtype != y.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
        if x.dtype == _dt.bool_:
            raise TypeError("Invalid dtype bool in truediv")
        target = _TRUEDIV_FLOAT.get(x.dtype)
        if target is not None:
            x, y = cast(x, target), cast(y, target)
        return apply_op("RealDiv", [x, y], name=scope).outputs[0]


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.divide`: true division (x / y)."""
    return truediv(x, y, name=name)


def div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.div`: Python 2 division, floor for integers and true division for floats."""
    x, y = convert_operands(x, y)
    if x.dtype.is_integer:
        return floordiv(x, y, name=name or "div")
    return apply_op("RealDiv", [x, y], name=name or "div").outputs[0]


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    return multiply(scalar, x, name=name or "mul")


def clip_by_value(
    t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None
) -> Tensor:
    """`tf.clip_by_value`: min(max(t, clip_value_min), clip_value_max), as TF1 builds it."""
    with name_scope(name, "clip_by_value") as scope:
        t = convert_to_tensor(t)
        low = minimum(t, clip_value_max, name="Minimum")
        return maximum(low, clip_value_min, name=scope)
