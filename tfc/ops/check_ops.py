"""tf.assert_* (tf.debugging): checks of values, shapes and types, as TensorFlow 1 makes them.

Each builds what TF's check_ops builds in graph mode: a condition reduced to one bool and a
tf.Assert whose data say what failed ("Condition x == y did not hold element-wise:", the
tensors' names, their values), which compiles to a host kernel (tfc/ops/logging_ops.py) and
fails the run with TF's message. Where the answer is known while the graph is built (both
values constant, a static rank, a dtype) the check happens then, as in TF: a failed value
check raises InvalidArgumentError, a failed rank check ValueError, a wrong type TypeError, and
a check known to pass returns a NoOp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, control_dependencies, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.control import no_op
from tfc.ops.logging_ops import Assert
from tfc.ops.registry import constant_value

__all__ = [
    "assert_equal",
    "assert_none_equal",
    "assert_less",
    "assert_less_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_positive",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_near",
    "assert_rank",
    "assert_rank_at_least",
    "assert_rank_in",
    "assert_integer",
    "assert_type",
    "assert_scalar",
    "assert_same_float_dtype",
    "assert_proper_iterable",
    "is_numeric_tensor",
]


def _static(t: Any) -> np.ndarray | None:
    """The value of tensor `t` when the graph alone determines it (TF's constant_value)."""
    if not isinstance(t, Tensor):
        return None
    return constant_value(t.graph, (t.op.name, t.value_index))


def _static_text(item: Any) -> str:
    """An item of an assertion's data as TF's static failure writes it."""
    if not isinstance(item, Tensor):
        return str(item)
    value = _static(item)
    return str(item) if value is None else str(value)


def _assert_static(condition: bool, data: Sequence[Any]) -> None:
    if not condition:
        message = "\n".join(_static_text(x) for x in data)
        raise errors.InvalidArgumentError(None, None, message)


def _message_prefix(message: str | None) -> str:
    return f"{message}.  " if message else ""


def _binary_assert(
    sym: str,
    opname: str,
    op_func: Callable[[Tensor, Tensor], Tensor],
    static_func: Callable[[np.ndarray, np.ndarray], np.ndarray],
    x: Any,
    y: Any,
    data: Sequence[Any] | None,
    summarize: int | None,
    message: str | None,
    name: str | None,
) -> Operation:
    with name_scope(name, opname, [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [
                f"Condition x {sym} y did not hold element-wise:",
                f"x ({x.name}) = ", x,
                f"y ({y.name}) = ", y,
            ]  # fmt: skip
        if message is not None:
            data = [message, *data]
        condition = _reduce.reduce_all(op_func(x, y))
        x_static, y_static = _static(x), _static(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(static_func(x_static, y_static))), data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(
    x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_equal`: fails the run unless x == y element-wise (TF's message)."""
    with name_scope(name, "assert_equal", [x, y]):  # TF opens (and names) this scope too
        if x is y:
            return no_op()
    return _binary_assert(
        "==", "assert_equal", _logic.equal, np.equal, x, y, data, summarize, message, name
    )


def assert_none_equal(
    x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_none_equal`: fails the run unless x != y element-wise."""
    return _binary_assert(
        "!=", "assert_none_equal", _logic.not_equal, np.not_equal, x, y, data, summarize,
        message, name,
    )  # fmt: skip


def assert_less(
    x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_less`: fails the run unless x < y element-wise."""
    return _binary_assert(
        "<", "assert_less", _logic.less, np.less, x, y, data, summarize, message, name
    )


def assert_less_equal(
    x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_less_equal`: fails the run unless x <= y element-wise."""
    return _binary_assert(
        "<=", "assert_less_equal", _logic.less_equal, np.less_equal, x, y, data, summarize,
        message, name,
    )  # fmt: skip


def assert_greater(
    x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_greater`: fails the run unless x > y element-wise."""
    return _binary_assert(
        ">", "assert_greater", _logic.greater, np.greater, x, y, data, summarize, message, name
    )


def assert_greater_equal(
    x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_greater_equal`: fails the run unless x >= y element-wise."""
    return _binary_assert(
        ">=", "assert_greater_equal", _logic.greater_equal, np.greater_equal, x, y, data,
        summarize, message, name,
    )  # fmt: skip


def _unary_assert(
    opname: str,
    condition_text: str,
    compare: Callable[..., Operation],
    zero_first: bool,
    x: Any,
    data: Any,
    summarize: Any,
    message: Any,
    name: Any,
) -> Operation:
    """x compared with 0 through `compare`: (0, x) when `zero_first`, else (x, 0)."""
    message = _message_prefix(message)
    with name_scope(name, opname, [x]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [message, condition_text, f"x ({x.name}) = ", x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        pair = (zero, x) if zero_first else (x, zero)
        return compare(*pair, data=data, summarize=summarize)


def assert_negative(
    x: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_negative`: fails the run unless x < 0 element-wise."""
    text = "Condition x < 0 did not hold element-wise:"
    return _unary_assert("assert_negative", text, assert_less, False, x, data, summarize,
                         message, name)  # fmt: skip


def assert_positive(
    x: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_positive`: fails the run unless x > 0 element-wise."""
    text = "Condition x > 0 did not hold element-wise:"
    return _unary_assert("assert_positive", text, assert_less, True, x, data, summarize,
                         message, name)  # fmt: skip


def assert_non_negative(
    x: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_non_negative`: fails the run unless x >= 0 element-wise."""
    text = "Condition x >= 0 did not hold element-wise:"
    return _unary_assert("assert_non_negative", text, assert_less_equal, True, x, data,
                         summarize, message, name)  # fmt: skip


def assert_non_positive(
    x: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
) -> Operation:
    """`tf.assert_non_positive`: fails the run unless x <= 0 element-wise. (TF's data joins
    its condition and the name of x in one string, without a separator; so does this.)"""
    message = _message_prefix(message)
    with name_scope(name, "assert_non_positive", [x]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [message, f"Condition x <= 0 did not hold element-wise:x ({x.name}) = ", x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        return assert_less_equal(x, zero, data=data, summarize=summarize)


def assert_near(
    x: Any,
    y: Any,
    rtol: Any = None,
    atol: Any = None,
    data: Any = None,
    summarize: Any = None,
    message: Any = None,
    name: Any = None,
) -> Operation:
    """`tf.assert_near`: fails the run unless |x - y| < atol + rtol * |y| element-wise
    (tolerances default to 10 machine epsilons of x's dtype)."""
    message = _message_prefix(message)
    with name_scope(name, "assert_near", [x, y, rtol, atol]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        eps = np.finfo(x.dtype.np).eps
        rtol = 10 * eps if rtol is None else rtol
        atol = 10 * eps if atol is None else atol
        rtol = convert_to_tensor(rtol, name="rtol", dtype=x.dtype)
        atol = convert_to_tensor(atol, name="atol", dtype=x.dtype)
        if data is None:
            data = [
                message,
                f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
                f"x ({x.name}) = ", x, f"y ({y.name}) = ", y,
            ]  # fmt: skip
        tol = atol + rtol * _math.abs(y)
        diff = _math.abs(x - y)
        condition = _reduce.reduce_all(_logic.less(diff, tol))
        return Assert(condition, data, summarize=summarize)


def _check_rank_type(rank: Tensor) -> None:
    if rank.dtype != _dt.int32:
        raise TypeError(f"{rank.name} must be of type tf.int32; got {rank.dtype!r}")


def _assert_rank_condition(
    x: Tensor,
    rank: Tensor,
    static_condition: Callable[[int, Any], bool],
    dynamic_condition: Callable[[Tensor, Tensor], Tensor],
    data: Sequence[Any],
    summarize: Any,
) -> Operation:
    _check_rank_type(rank)
    rank_static = _static(rank)
    if rank_static is not None:
        if rank_static.ndim != 0:
            raise ValueError("Rank must be a scalar.")
        x_rank = x.shape.ndims
        if x_rank is not None:
            if not static_condition(x_rank, rank_static):
                raise ValueError("Static rank condition failed", x_rank, rank_static)
            return no_op(name="static_checks_determined_all_ok")
    condition = dynamic_condition(_array.rank(x), rank)
    if rank_static is None:
        check = assert_rank(rank, 0, data=["Rank must be a scalar. Received rank: ", rank])
        with control_dependencies([check]):
            condition = _array.identity(condition)
    return Assert(condition, data, summarize=summarize)


def assert_rank(
    x: Any, rank: Any, data: Any = None, summarize: Any = None, message: Any = None,
    name: Any = None,
) -> Operation:  # fmt: skip
    """`tf.assert_rank`: x has rank `rank` (checked now when x's rank is static, else when
    the graph runs)."""
    with name_scope(name, "assert_rank", [x, rank, *(data or [])]):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = _message_prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} must have rank", rank, "Received shape: ",
                    _array.shape(x)]  # fmt: skip
        try:
            return _assert_rank_condition(
                x, rank, lambda actual, given: actual == given, _logic.equal, data, summarize
            )
        except ValueError as e:
            if e.args[0] == "Static rank condition failed":
                raise ValueError(
                    f"{message}Tensor {x.name} must have rank {int(e.args[2])}.  Received rank "
                    f"{e.args[1]}, shape {x.get_shape()}"
                ) from None
            raise ValueError(e.args[0]) from None


def assert_rank_at_least(
    x: Any, rank: Any, data: Any = None, summarize: Any = None, message: Any = None,
    name: Any = None,
) -> Operation:  # fmt: skip
    """`tf.assert_rank_at_least`: x has rank `rank` or more."""
    with name_scope(name, "assert_rank_at_least", [x, rank, *(data or [])]):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = _message_prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} must have rank at least", rank,
                    "Received shape: ", _array.shape(x)]  # fmt: skip
        try:
            return _assert_rank_condition(
                x, rank, lambda actual, given: actual >= given, _logic.greater_equal, data,
                summarize,
            )  # fmt: skip
        except ValueError as e:
            if e.args[0] == "Static rank condition failed":
                raise ValueError(
                    f"{message}Tensor {x.name} must have rank at least {int(e.args[2])}.  "
                    f"Received rank {e.args[1]}, shape {x.get_shape()}"
                ) from None
            raise


def assert_rank_in(
    x: Any, ranks: Sequence[Any], data: Any = None, summarize: Any = None, message: Any = None,
    name: Any = None,
) -> Operation:  # fmt: skip
    """`tf.assert_rank_in`: x's rank is one of `ranks`."""
    with name_scope(name, "assert_rank_in", [x, *ranks, *(data or [])]):
        x = convert_to_tensor(x, name="x")
        ranks = [convert_to_tensor(r, name="rank") for r in ranks]
        message = _message_prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} must have rank in", *ranks, "Received shape: ",
                    _array.shape(x)]  # fmt: skip
        for r in ranks:
            _check_rank_type(r)
        statics = [_static(r) for r in ranks]
        if all(s is not None for s in statics):
            if any(s.ndim != 0 for s in statics):
                raise ValueError("Rank must be a scalar.")
            x_rank = x.shape.ndims
            if x_rank is not None:
                if x_rank not in [int(s) for s in statics]:
                    given = tuple(int(s) for s in statics)
                    raise ValueError(
                        f"{message}Tensor {x.name} must have rank in {given}.  Received rank "
                        f"{x_rank}, shape {x.get_shape()}"
                    )
                return no_op(name="static_checks_determined_all_ok")
        actual = _array.rank(x)
        if not ranks:
            condition = convert_to_tensor(False)
        else:
            condition = _logic.equal(ranks[0], actual)
            for r in ranks[1:]:
                condition = _logic.logical_or(condition, _logic.equal(r, actual))
        checks = [
            assert_rank(r, 0, data=["Rank must be a scalar. Received rank: ", r])
            for r, s in zip(ranks, statics)
            if s is None
        ]
        if checks:
            with control_dependencies(checks):
                condition = _array.identity(condition)
        return Assert(condition, data, summarize=summarize)


def assert_integer(x: Any, message: Any = None, name: Any = None) -> Operation:
    """`tf.assert_integer`: a static check that x has an integer dtype (TypeError if not)."""
    with name_scope(name, "assert_integer", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(
                f'{_message_prefix(message)}Expected "x" to be integer type.  Found: {x.name} '
                f"of dtype {x.dtype!r}"
            )
        return no_op("statically_determined_was_integer")


def assert_type(tensor: Any, tf_type: Any, message: Any = None, name: Any = None) -> Operation:
    """`tf.assert_type`: a static check that tensor has dtype `tf_type` (TypeError if not)."""
    tf_type = _dt.as_dtype(tf_type)
    with name_scope(name, "assert_type", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(
                f"{_message_prefix(message)}{tensor.name} must be of type {tf_type!r}; got "
                f"{tensor.dtype!r}"
            )
        return no_op("statically_determined_correct_type")


def assert_scalar(tensor: Any, name: Any = None, message: Any = None) -> Tensor:
    """`tf.assert_scalar`: a static check that tensor has rank 0; returns it."""
    with name_scope(name, "assert_scalar", [tensor]):
        tensor = convert_to_tensor(tensor)
        shape = tensor.get_shape()
        if shape.ndims != 0:
            raise ValueError(
                f"{_message_prefix(message)}Expected scalar shape for {tensor.name}, saw shape: "
                f"{shape}."
            )
        return tensor


def assert_same_float_dtype(tensors: Any = None, dtype: Any = None) -> _dt.DType:
    """`tf.assert_same_float_dtype`: the one floating dtype of `tensors` (and `dtype`);
    ValueError when they differ or are not floating. float32 when nothing says otherwise."""
    if tensors:
        expected, first = dtype, None
        for item in tensors:
            if item is None:
                continue
            if expected is None:
                expected, first = item.dtype, item.name
            elif item.dtype != expected:
                as_first = f" as {first}" if first else ""
                raise ValueError(
                    f"{item.name}, type={item.dtype!r}, must be of the same type "
                    f"({expected!r}){as_first}."
                )
        dtype = expected
    if not dtype:
        return _dt.float32
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype!r}.")
    return dtype


def assert_proper_iterable(values: Any) -> None:
    """`tf.assert_proper_iterable`: TypeError for a tensor, an array, a string or anything
    not iterable (the things ops taking lists of tensors would misread)."""
    if isinstance(values, (Tensor, np.ndarray, bytes, str)):
        raise TypeError(
            f'Expected argument "values" to be a "proper" iterable.  Found: {type(values)}'
        )
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def is_numeric_tensor(tensor: Any) -> bool:
    """`tf.is_numeric_tensor`: a Tensor of a numeric dtype."""
    return isinstance(tensor, Tensor) and not (tensor.dtype.is_bool or tensor.dtype.is_string)
