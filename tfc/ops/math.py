"""Element-wise math: arithmetic, comparisons, logic, unary functions, Cast, Select, AddN."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.elementwise import (
    binary_frontend,
    convert_operands,
    integer_division_check,
    register_elementwise,
    unary_frontend,
)
from tfc.ops.flops import elements, per_output_element
from tfc.ops.grad_ops import select
from tfc.ops.kernels import cast_expr, elementwise_expr, loop_kernel, view
from tfc.ops.registry import (
    OpDef,
    apply_op,
    check_dtype,
    check_same_dtypes,
    get_opdef,
    register,
)

__all__ = [
    "cast",
    "to_float",
    "to_int32",
    "to_int64",
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
    "to_double",
    "accumulate_n",
    "realdiv",
    "floor_div",
    "truncatediv",
    "truncatemod",
    "div_no_nan",
    "rint",
    "acos",
    "asin",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
]


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


def numpy_sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function in NumPy, without overflow for large |x|."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


_DIV_GUARD = {"i": ("{1} == 0", "Integer division by zero")}


def _fused(op_type: str, y, dy):
    """TF's fused gradient ops (tfc/ops/math_grad.py): dy * f'(x) from the output y."""
    return apply_op(op_type, [y, dy], name=op_type).outputs[0]


def _conjugate(x: Tensor) -> Tensor:
    """conj(x) for a complex x (the gradients of complex products use it, as TF's), else x."""
    return apply_op("Conj", [x], name="Conj").outputs[0] if x.dtype.is_complex else x


def _pow_grad(op, dy):
    x, y = op.inputs
    positive = x > 0
    # d/dy x^y = x^y log x, taken as 0 where x <= 0 (TF's convention): log sees only x > 0
    log_x = select(positive, log(select(positive, x, 1)), 0)
    return [dy * y * pow(x, y - 1), dy * op.outputs[0] * log_x]


def _extremum_grad(mask_op: str):
    """Maximum/Minimum: the gradient goes to the chosen input (to x on ties, as TF)."""

    def grad(op, dy):
        chosen = apply_op(mask_op, op.inputs, name=mask_op).outputs[0]
        return [select(chosen, dy, 0), select(chosen, 0, dy)]

    return grad


def _squared_difference_grad(op, dy):
    gx = multiply(2 * dy, op.inputs[0] - op.inputs[1])
    return [gx, -gx]


# -- binary arithmetic ---------------------------------------------------------------------------
# rules may return output-shaped gradients: the gradient pass sums away broadcast dims
for _type, _fn, _exprs, _grad in [
    (
        "Add",
        np.add,
        {"f": "{0} + {1}", "i": "tfc_add_{tag}({0}, {1})", "c": "tfc_add_{tag}({0}, {1})"},
        lambda op, dy: [dy, dy],
    ),
    (
        "Sub",
        np.subtract,
        {"f": "{0} - {1}", "i": "tfc_sub_{tag}({0}, {1})", "c": "tfc_sub_{tag}({0}, {1})"},
        lambda op, dy: [dy, negative(dy)],
    ),
    (
        "Mul",
        np.multiply,
        {"f": "{0} * {1}", "i": "tfc_mul_{tag}({0}, {1})", "c": "tfc_mul_{tag}({0}, {1})"},
        lambda op, dy: [
            multiply(dy, _conjugate(op.inputs[1])),
            multiply(_conjugate(op.inputs[0]), dy),
        ],
    ),
    (
        "RealDiv",
        np.true_divide,
        {"f": "{0} / {1}", "c": "tfc_div_{tag}({0}, {1})"},
        lambda op, dy: [
            _realdiv(dy, _conjugate(op.inputs[1])),
            dy
            * _realdiv(
                _realdiv(-_conjugate(op.inputs[0]), _conjugate(op.inputs[1])),
                _conjugate(op.inputs[1]),
            ),
        ],
    ),
    (
        "Maximum",
        np.maximum,
        {"f": "tfc_max_{tag}({0}, {1})", "i": "({0} > {1} ? {0} : {1})"},
        _extremum_grad("GreaterEqual"),
    ),
    (
        "Minimum",
        np.minimum,
        {"f": "tfc_min_{tag}({0}, {1})", "i": "({0} < {1} ? {0} : {1})"},
        _extremum_grad("LessEqual"),
    ),
    (
        "SquaredDifference",
        lambda x, y: np.square(x - y),
        {"f": "({0} - {1}) * ({0} - {1})", "i": "tfc_square_{tag}(tfc_sub_{tag}({0}, {1}))"},
        _squared_difference_grad,
    ),
]:
    register_elementwise(_type, _fn, _exprs, grad=_grad)
register_elementwise(
    "FloorDiv",
    _checked(
        lambda x, y: np.floor(x / y) if x.dtype.kind == "f" else np.floor_divide(x, y),
        integer_division_check,
    ),
    {"f": "tfc_floordiv_{tag}({0}, {1})", "i": "tfc_floordiv_{tag}({0}, {1})"},
    guards=_DIV_GUARD,
    differentiable=False,  # piecewise constant, as TF declares it
)
register_elementwise(
    "FloorMod",
    _checked(np.mod, integer_division_check),
    {"f": "tfc_floormod_{tag}({0}, {1})", "i": "tfc_floormod_{tag}({0}, {1})"},
    guards=_DIV_GUARD,
    # x - floor(x / y) * y, with floor's derivative 0
    grad=lambda op, dy: [dy, negative(dy) * floordiv(op.inputs[0], op.inputs[1])],
)
register_elementwise(
    "Pow",
    _int_pow,
    # TF has no unsigned Pow (its guard would compare an unsigned exponent with 0)
    {"f": "pow{sfx}({0}, {1})", "i": "tfc_pow_{tag}({0}, {1})", "u": None},
    guards={"i": ("{1} < 0", "Integers to negative integer powers are not allowed")},
    grad=_pow_grad,
)

# -- unary functions -----------------------------------------------------------------------------
for _type, _fn, _exprs, _grad in [
    (
        "Neg",
        np.negative,
        {"f": "-{0}", "i": "tfc_neg_{tag}({0})", "c": "tfc_neg_{tag}({0})"},
        lambda op, dy: [-dy],
    ),
    (
        "Abs",
        np.abs,
        {"f": "fabs{sfx}({0})", "i": "tfc_abs_{tag}({0})"},
        lambda op, dy: [dy * sign(op.inputs[0])],
    ),
    (
        "Square",
        np.square,
        {"f": "{0} * {0}", "i": "tfc_square_{tag}({0})"},
        lambda op, dy: [dy * (2 * op.inputs[0])],
    ),
]:
    register_elementwise(_type, _fn, _exprs, grad=_grad)
register_elementwise(
    "Sign",
    np.sign,
    {"f": "tfc_sign_{tag}({0})", "i": "tfc_sign_{tag}({0})"},
    differentiable=False,
)
register_elementwise(
    "Round", np.rint, {"f": "tfc_round_{tag}({0})", "i": "{0}"}, differentiable=False
)
register_elementwise("Floor", np.floor, {"f": "floor{sfx}({0})"}, differentiable=False)
register_elementwise("Ceil", np.ceil, {"f": "ceil{sfx}({0})"}, differentiable=False)
for _type, _fn, _c, _grad in [
    ("Reciprocal", np.reciprocal, "({T})1 / {0}", "ReciprocalGrad"),
    ("Rsqrt", lambda x: 1 / np.sqrt(x), "({T})1 / sqrt{sfx}({0})", "RsqrtGrad"),
    ("Sigmoid", numpy_sigmoid, "tfc_sigmoid_{tag}({0})", "SigmoidGrad"),
    ("Exp", np.exp, "exp{sfx}({0})", lambda op, dy: [dy * op.outputs[0]]),
    ("Expm1", np.expm1, "expm1{sfx}({0})", lambda op, dy: [dy * exp(op.inputs[0])]),
    ("Log", np.log, "log{sfx}({0})", lambda op, dy: [_realdiv(dy, op.inputs[0])]),
    ("Log1p", np.log1p, "log1p{sfx}({0})", lambda op, dy: [_realdiv(dy, 1 + op.inputs[0])]),
    ("Sqrt", np.sqrt, "sqrt{sfx}({0})", "SqrtGrad"),
    ("Sin", np.sin, "sin{sfx}({0})", lambda op, dy: [dy * cos(op.inputs[0])]),
    ("Cos", np.cos, "cos{sfx}({0})", lambda op, dy: [-dy * sin(op.inputs[0])]),
    ("Tan", np.tan, "tan{sfx}({0})", lambda op, dy: [_realdiv(dy, square(cos(op.inputs[0])))]),
    ("Tanh", np.tanh, "tfc_tanh_{tag}({0})", "TanhGrad"),
]:
    if isinstance(_grad, str):  # the fused op computing dy * f'(x) from y = f(x)
        _grad = lambda op, dy, _t=_grad: [_fused(_t, op.outputs[0], dy)]  # noqa: E731
    register_elementwise(_type, _fn, {"f": _c}, grad=_grad)


def _realdiv(x, y):
    x, y = convert_operands(x, y)
    return apply_op("RealDiv", [x, y], name="truediv").outputs[0]


# -- division flavours ---------------------------------------------------------------------------
register_elementwise(
    "TruncateDiv",
    _checked(
        lambda x, y: np.trunc(x / y) if x.dtype.kind == "f" else _numpy_truncdiv(x, y),
        integer_division_check,
    ),
    {"f": "trunc{sfx}({0} / {1})", "i": "tfc_truncdiv_{tag}({0}, {1})"},
    guards=_DIV_GUARD,
    differentiable=False,  # piecewise constant: TF's rule gives no gradient
)
register_elementwise(
    "TruncateMod",
    _checked(np.fmod, integer_division_check),
    {"f": "fmod{sfx}({0}, {1})", "i": "tfc_truncmod_{tag}({0}, {1})"},
    guards=_DIV_GUARD,
    differentiable=False,  # TF registers no gradient
)


def _div_no_nan(x, y):
    safe = np.where(y == 0, np.ones_like(y), y)
    return np.where(y == 0, np.zeros_like(x), x / safe)


register_elementwise(
    "DivNoNan",
    _div_no_nan,
    {"f": "{1} == 0 ? ({T})0 : {0} / {1}"},
    grad=lambda op, dy: [
        div_no_nan(dy, op.inputs[1]),
        dy * div_no_nan(div_no_nan(-op.inputs[0], op.inputs[1]), op.inputs[1]),
    ],
)
register_elementwise(
    "Xlogy",
    lambda x, y: np.where(x == 0, np.zeros_like(x), x * np.log(y)),
    {"f": "{0} == 0 ? ({T})0 : {0} * log{sfx}({1})"},
    grad=lambda op, dy: [
        dy * xlogy(_nonzero(op.inputs[0]), op.inputs[1]),
        dy * xdivy(op.inputs[0], op.inputs[1]),
    ],
)
register_elementwise(
    "Xdivy",
    lambda x, y: np.where(x == 0, np.zeros_like(x), x / y),
    {"f": "{0} == 0 ? ({T})0 : {0} / {1}"},
    grad=lambda op, dy: [
        dy * xdivy(_nonzero(op.inputs[0]), op.inputs[1]),
        dy * xdivy(-op.inputs[0], square(op.inputs[1])),
    ],
)

register_elementwise(
    "Xlog1py",
    lambda x, y: np.where(x == 0, np.zeros_like(x), x * np.log1p(y)),
    {"f": "{0} == 0 ? ({T})0 : {0} * log1p{sfx}({1})"},
    grad=lambda op, dy: [
        dy * xlog1py(_nonzero(op.inputs[0]), op.inputs[1]),
        dy * xdivy(op.inputs[0], op.inputs[1] + 1),
    ],
)
register_elementwise(
    "MulNoNan",
    lambda x, y: np.where(y == 0, np.zeros_like(x), x * y),
    {"f": "{1} == 0 ? ({T})0 : {0} * {1}"},
    grad=lambda op, dy: [multiply_no_nan(dy, op.inputs[1]), multiply_no_nan(op.inputs[0], dy)],
)


def _numpy_truncdiv(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's integer division (toward zero), wrapping INT_MIN / -1 as tfc's kernels do."""
    q = np.floor_divide(x, y)
    return np.where((q * y != x) & ((x < 0) != (y < 0)), q + 1, q).astype(x.dtype)


def _nonzero(x: Tensor) -> Tensor:
    """1 where x != 0, else 0, in x's dtype (TF's masks in the Xlogy and Xdivy gradients)."""
    return cast(apply_op("NotEqual", [x, convert_to_tensor(0, dtype=x.dtype)]).outputs[0], x.dtype)


# -- inverse trigonometric and hyperbolic functions ----------------------------------------------
def _one_minus_square(x: Tensor) -> Tensor:
    return 1 - square(x)


for _type, _fn, _c, _grad in [
    (
        "Acos",
        np.arccos,
        "acos{sfx}({0})",
        lambda op, dy: [-dy * rsqrt(_one_minus_square(op.inputs[0]))],
    ),
    (
        "Asin",
        np.arcsin,
        "asin{sfx}({0})",
        lambda op, dy: [dy * rsqrt(_one_minus_square(op.inputs[0]))],
    ),
    ("Atan", np.arctan, "atan{sfx}({0})", lambda op, dy: [_realdiv(dy, 1 + square(op.inputs[0]))]),
    ("Sinh", np.sinh, "sinh{sfx}({0})", lambda op, dy: [dy * cosh(op.inputs[0])]),
    ("Cosh", np.cosh, "cosh{sfx}({0})", lambda op, dy: [dy * sinh(op.inputs[0])]),
    ("Asinh", np.arcsinh, "asinh{sfx}({0})", lambda op, dy: [_realdiv(dy, cosh(op.outputs[0]))]),
    ("Acosh", np.arccosh, "acosh{sfx}({0})", lambda op, dy: [_realdiv(dy, sinh(op.outputs[0]))]),
    (
        "Atanh",
        np.arctanh,
        "atanh{sfx}({0})",
        lambda op, dy: [_realdiv(dy, _one_minus_square(op.inputs[0]))],
    ),
]:
    register_elementwise(_type, _fn, {"f": _c}, grad=_grad)


def _atan2_grad(op, dy):
    y, x = op.inputs
    scaled = _realdiv(dy, square(x) + square(y))
    return [x * scaled, -y * scaled]


register_elementwise("Atan2", np.arctan2, {"f": "atan2{sfx}({0}, {1})"}, grad=_atan2_grad)
# round half to even, like Round; TF gives it a zero gradient where Round has none
register_elementwise(
    "Rint",
    np.rint,
    {"f": "tfc_round_{tag}({0})"},
    grad=lambda op, dy: [apply_op("ZerosLike", [op.inputs[0]]).outputs[0]],
)


# -- Cast ---------------------------------------------------------------------------------------
def float_to_integer(x: np.ndarray, dst: _dt.DType) -> np.ndarray:
    """NumPy's twin of tfc_math.h's tfc_f2<int>: truncation toward zero; NaN and values out of
    range as TensorFlow's vectorized CPU kernels give them (see tfc_math.h)."""
    x = np.asarray(x, dtype=np.float64)

    def truncated(values: np.ndarray, wide: type) -> np.ndarray:
        info = np.iinfo(wide)
        ok = (values > float(info.min) - 1) & (values < float(info.max) + 1)
        return np.where(ok, np.trunc(np.where(ok, values, 0)), info.min).astype(wide)

    if dst in (_dt.uint32, _dt.uint64):
        wide, top = (np.int32, 2.0**31) if dst is _dt.uint32 else (np.int64, 2.0**63)
        low = truncated(x, wide)
        return np.where(low < 0, low | truncated(x - top, wide), low).view(dst.np)
    if dst.size == 8:
        return truncated(x, np.int64).astype(dst.np)
    info = np.iinfo(dst.np)
    return np.clip(truncated(x, np.int32), info.min, info.max).astype(dst.np)


def _cast_reference(ctx, x):
    dst = ctx.attrs["DstT"]
    with np.errstate(all="ignore"):
        if x.dtype.kind == "c" and dst.kind != "c":
            if dst.is_bool:
                return x != 0
            x = x.real
        if x.dtype.kind == "f" and dst.is_integer:
            return float_to_integer(x, dst)
        # a 16-bit float is made of the float32 value (the reference runs them in float32)
        return x.astype(dst.compute.np)


register(
    OpDef(
        "Cast",
        infer=lambda ctx: [(ctx.attrs["DstT"], ctx.in_shapes[0])],
        reference=_cast_reference,
        dtypes=_dt.STORABLE,
        flops=per_output_element(1),
        lower=lambda ctx: loop_kernel(
            ctx.out_shapes[0],
            view("out0", ctx.out_dtypes[0], ctx.out_shapes[0]),
            [view("in0", ctx.in_dtypes[0], ctx.in_shapes[0])],
            cast_expr(ctx.in_dtypes[0], ctx.out_dtypes[0]),
        ),
        # only float to float carries a gradient; integers and bools carry none
        grad=lambda op, dy: [
            cast(dy, op.inputs[0].dtype) if op.inputs[0].dtype.is_floating else None
        ],
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


def to_double(x: Any, name: str = "ToDouble") -> Tensor:
    return cast(x, _dt.float64, name=name)


# -- AddN ---------------------------------------------------------------------------------------
def _add_n_infer(ctx):
    check_same_dtypes(ctx, [f"inputs[{i}]" for i in range(len(ctx.in_dtypes))])
    check_dtype(ctx, 0, (*_dt.NUMERIC, *_dt.COMPLEX), "inputs")
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
    add = get_opdef("Add").expr.expr_for(dtype)
    expr = "{0}"
    for i in range(1, len(ctx.in_dtypes)):
        expr = elementwise_expr(add, dtype, [expr, f"{{{i}}}"])
    ins = [view(f"in{i}", dtype, shape) for i in range(len(ctx.in_dtypes))]
    return loop_kernel(shape, view("out0", dtype, shape), ins, expr)


register(
    OpDef(
        "AddN",
        infer=_add_n_infer,
        reference=lambda ctx, *xs: np.sum(np.stack(xs), axis=0).astype(xs[0].dtype),
        lower=_add_n_lower,
        flops=lambda ctx: (len(ctx.in_shapes) - 1) * elements(ctx.out_shapes[0]),
        grad=lambda op, dy: [dy] * len(op.inputs),
        dtypes=(*_dt.NUMERIC, *_dt.COMPLEX),
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


def accumulate_n(
    inputs: Any, shape: Any = None, tensor_dtype: Any = None, name: str | None = None
) -> Tensor:
    """`tf.accumulate_n`: the sum of a list of tensors, like add_n (TF1 sums them in place, a
    memory optimization tfc's planner makes for add_n already); `shape` and `tensor_dtype`
    are checked against the inputs."""
    if not inputs:
        raise ValueError("inputs must be a non-empty list of Tensors")
    tensors = convert_operands(*inputs)
    if tensor_dtype is not None and _dt.as_dtype(tensor_dtype) != tensors[0].dtype:
        raise TypeError(
            f"tensor_dtype {tensor_dtype} does not match the inputs' {tensors[0].dtype}"
        )
    if shape is not None:
        want = tuple(None if d is None else int(d) for d in shape)
        for t in tensors:
            got = t._shape_tuple
            if got is not None and (
                len(got) != len(want)
                or any(a is not None and b is not None and a != b for a, b in zip(got, want))
            ):
                raise ValueError(f"Input tensor {t.name} has shape {got}, expected {want}")
    return add_n(tensors, name=name or "accumulate_n")


# -- frontends ----------------------------------------------------------------------------------
add = binary_frontend("Add", "Add")
subtract = binary_frontend("Sub", "Sub")
multiply = binary_frontend("Mul", "Mul")
floordiv = binary_frontend("FloorDiv", "floordiv")
floormod = mod = binary_frontend("FloorMod", "FloorMod")
pow = binary_frontend("Pow", "Pow")  # noqa: A001  tf.pow
maximum = binary_frontend("Maximum", "Maximum")
minimum = binary_frontend("Minimum", "Minimum")
squared_difference = binary_frontend("SquaredDifference", "SquaredDifference")
negative = neg = unary_frontend("Neg")
_real_abs = unary_frontend("Abs")


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001  tf.abs
    """`tf.abs`: |x| element-wise; for a complex x its modulus, in its parts' dtype."""
    x = convert_to_tensor(x)
    if x.dtype.is_complex:
        attrs = {"Tout": x.dtype.real_dtype}
        return apply_op("ComplexAbs", [x], attrs, name=name or "ComplexAbs").outputs[0]
    return _real_abs(x, name=name)


sign = unary_frontend("Sign")
square = unary_frontend("Square")
reciprocal = unary_frontend("Reciprocal")
rsqrt = unary_frontend("Rsqrt")
sigmoid = unary_frontend("Sigmoid")
round = unary_frontend("Round")  # noqa: A001  tf.round
floor = unary_frontend("Floor")
ceil = unary_frontend("Ceil")
exp = unary_frontend("Exp")
expm1 = unary_frontend("Expm1")
log = unary_frontend("Log")
log1p = unary_frontend("Log1p")
sqrt = unary_frontend("Sqrt")
sin = unary_frontend("Sin")
cos = unary_frontend("Cos")
tan = unary_frontend("Tan")
tanh = unary_frontend("Tanh")
realdiv = binary_frontend("RealDiv", "RealDiv")
floor_div = binary_frontend("FloorDiv", "FloorDiv")
truncatediv = binary_frontend("TruncateDiv", "TruncateDiv")
truncatemod = binary_frontend("TruncateMod", "TruncateMod")
div_no_nan = binary_frontend("DivNoNan", "div_no_nan")
xlogy = binary_frontend("Xlogy", "Xlogy")
xdivy = binary_frontend("Xdivy", "Xdivy")
xlog1py = binary_frontend("Xlog1py", "Xlog1py")
multiply_no_nan = binary_frontend("MulNoNan", "MulNoNan")
atan2 = binary_frontend("Atan2", "Atan2")
rint = unary_frontend("Rint")
acos = unary_frontend("Acos")
asin = unary_frontend("Asin")
atan = unary_frontend("Atan")
sinh = unary_frontend("Sinh")
cosh = unary_frontend("Cosh")
asinh = unary_frontend("Asinh")
acosh = unary_frontend("Acosh")
atanh = unary_frontend("Atanh")

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


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """`tf.math.reciprocal_no_nan`: 1 / x, 0 where x is 0."""
    x = convert_to_tensor(x)
    one = convert_to_tensor(1, dtype=x.dtype)
    return apply_op("DivNoNan", [one, x], name=name or "reciprocal_no_nan").outputs[0]


def polyval(coeffs: Any, x: Any, name: str | None = None) -> Tensor:
    """`tf.math.polyval`: coeffs[0] * x^(n-1) + ... + coeffs[n-1] by Horner's rule, as TF
    builds it (zeros like x for no coefficients)."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(
            f"coeffs must be a list of tensors or numbers, got {type(coeffs).__name__}"
        )
    with name_scope(name, "polyval") as scope:
        x = convert_to_tensor(x)
        if not coeffs:
            return apply_op("ZerosLike", [x], name=scope).outputs[0]
        result = convert_to_tensor(coeffs[0], dtype=x.dtype)
        for c in coeffs[1:]:
            result = add(convert_to_tensor(c, dtype=x.dtype), multiply(result, x))
        return apply_op("Identity", [result], name=scope).outputs[0]


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
