"""Sources of values: Const, Placeholder, PlaceholderWithDefault, and converting Python values."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import TensorShape, merge_shapes, shape_str
from tfc.ops.registry import OpDef, apply_op, constant_value, register

# -- Const ---------------------------------------------------------------------------------------
register(
    OpDef(
        "Const",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: [(ctx.attrs["dtype"], tuple(ctx.attrs["value"].shape))],
        reference=lambda ctx: ctx.attrs["value"],
        lower=lambda ctx: [],  # constants live in the generated source or are passed in
        differentiable=False,
    )
)


def _python_values_fit(value: Any, dtype: _dt.DType) -> Any:
    """The first element of a Python value that TF refuses to convert to `dtype`, else None."""
    if isinstance(value, (list, tuple)):
        for v in value:
            bad = _python_values_fit(v, dtype)
            if bad is not None:
                return bad
        return None
    if isinstance(value, bool) or isinstance(value, (np.ndarray, np.generic)):
        return None
    if isinstance(value, complex):
        return None if dtype.is_complex else value
    if isinstance(value, float) and not (dtype.is_floating or dtype.is_complex):
        return value
    if isinstance(value, int) and dtype.is_integer:
        info = np.iinfo(dtype.np)
        return value if not info.min <= value <= info.max else None
    if isinstance(value, (int, float)):
        return None
    return value


def _to_numpy(value: Any, dtype: _dt.DType | None) -> np.ndarray:
    if dtype is None:
        dtype = _dt.infer_dtype(value)
    elif dtype is not _dt.string:
        bad = _python_values_fit(value, dtype)
        if bad is not None:
            raise TypeError(
                f"Expected {dtype.name}, got {bad!r} of type '{type(bad).__name__}' instead."
            )
    if dtype is _dt.string:
        return _dt.string_array(value)
    try:
        with np.errstate(all="ignore"):
            return np.array(_dt.as_numpy(value, dtype), copy=True)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"Cannot convert {value!r} to a tensor of dtype {dtype.name}: {e}"
        ) from None


def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str = "Const",
    verify_shape: bool = False,
) -> Tensor:
    """`tf.constant`: a tensor holding `value` (broadcast to `shape` when it is a scalar)."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    array = _to_numpy(value, dtype)
    dtype = dtype or _dt.as_dtype(array.dtype)
    if shape is not None:
        shape = tuple(TensorShape(shape).as_list())
        if array.shape != shape:
            if verify_shape:
                raise TypeError(f"Expected Tensor's shape: {shape}, got {array.shape}.")
            if array.size == 1:
                array = np.full(shape, array.reshape(()), dtype=array.dtype)
            elif array.size == int(np.prod(shape)):
                array = array.reshape(shape)
            else:
                raise ValueError(
                    f"Too many elements provided. Needed at most {int(np.prod(shape))}, "
                    f"but received {array.size}"
                )
    array = np.asarray(array, order="C")
    array.setflags(write=False)
    op = apply_op("Const", [], {"value": array, "dtype": dtype}, name=name)
    return op.outputs[0]


def is_tensor_like(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def convert_to_tensor(
    value: Any, dtype: Any = None, name: str | None = None, preferred_dtype: Any = None
) -> Tensor:
    """`tf.convert_to_tensor`: Tensors pass, Variables are read, Python values become Const."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    if hasattr(value, "_as_tensor"):
        value = value._as_tensor(dtype)
    if _CONVERSIONS and not isinstance(value, Tensor):
        value = _registered_conversion(value, dtype, name)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}"
            )
        return value
    if isinstance(value, (list, tuple)) and any(is_tensor_like(v) for v in _flatten(value)):
        # a list mixing tensors and numbers is packed along a new first axis, as tf.stack does
        tensors = [convert_to_tensor(v, dtype) for v in value]
        attrs = {"axis": 0, "N": len(tensors)}
        return apply_op("Pack", tensors, attrs, name=name or "packed").outputs[0]
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


# tf.register_tensor_conversion_function's registrations: (priority, order, type, function)
_CONVERSIONS: list[tuple[int, int, type, Any]] = []
_UNREGISTRABLE = (bool, int, float, complex, str, bytes, list, tuple, np.ndarray, np.generic)


def register_tensor_conversion_function(
    base_type: Any, conversion_func: Any, priority: int = 100
) -> None:
    """`tf.register_tensor_conversion_function`: convert_to_tensor (and so every op) converts
    an instance of `base_type` (a type or a tuple of types) with
    `conversion_func(value, dtype=None, name=None, as_ref=False)`, which returns a Tensor or
    NotImplemented (then the next function is tried). Lower priorities are tried first."""
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    for t in types:
        if not isinstance(t, type):
            raise TypeError(f"base_type must be a type or a tuple of types, got {t!r}")
        if issubclass(t, _UNREGISTRABLE):
            raise TypeError(
                "Cannot register conversions for Python numeric types and NumPy scalars and arrays."
            )
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    for t in types:
        _CONVERSIONS.append((int(priority), len(_CONVERSIONS), t, conversion_func))
    _CONVERSIONS.sort(key=lambda entry: entry[:2])


def _registered_conversion(value: Any, dtype: _dt.DType | None, name: str | None) -> Any:
    """`value` converted by the first registered function for its type that accepts it, or
    `value` itself when none is registered for it."""
    for _, _, base_type, function in _CONVERSIONS:
        if not isinstance(value, base_type):
            continue
        result = function(value, dtype=dtype, name=name, as_ref=False)
        if result is NotImplemented:
            continue
        if not isinstance(result, Tensor):
            raise RuntimeError(
                f"{function.__name__} returned non-Tensor: {result!r} (converting a "
                f"{type(value).__name__})"
            )
        if dtype is not None and result.dtype != dtype:
            raise RuntimeError(
                f"Tensor conversion function for type {type(value).__name__} returned "
                f"incompatible dtype: requested = {dtype.name}, actual = {result.dtype.name}"
            )
        return result
    return value


def _flatten(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


# -- Placeholder --------------------------------------------------------------------------------
def _placeholder_infer(ctx):
    return [(ctx.attrs["dtype"], ctx.attrs["shape"])]


# stateful: two placeholders with equal attributes are different inputs, never merged
register(
    OpDef(
        "Placeholder",
        infer=_placeholder_infer,
        differentiable=False,
        stateful=True,
        dtypes=_dt.STORABLE,
    )
)


def missing_feed_message(name: str, dtype: _dt.DType, shape: Any) -> str:
    """TF's error for a placeholder nobody fed."""
    message = f"You must feed a value for placeholder tensor '{name}' with dtype {dtype.tf_name}"
    if shape is not None:
        message += f" and shape {shape_str(shape)}"
    return message


def placeholder(dtype: Any = _dt.float32, shape: Any = None, name: str | None = None) -> Tensor:
    """`tf.placeholder`: a value to be fed at run time; `None` dimensions are known at run time.

    TF1 requires `dtype`; tfc defaults it to float32 so the whitepaper's
    `tf.placeholder(name="x")` runs as written.
    """
    dtype = _dt.as_dtype(dtype)
    shape = TensorShape(shape).as_tuple()
    return apply_op("Placeholder", [], {"dtype": dtype, "shape": shape}, name=name).outputs[0]


def _placeholder_with_default_infer(ctx):
    merged = merge_shapes(ctx.in_shapes[0], ctx.attrs["shape"])
    if merged is False:
        raise ctx.error(
            f"The default value's shape {shape_str(ctx.in_shapes[0])} is not compatible "
            f"with the placeholder's shape {shape_str(ctx.attrs['shape'])}"
        )
    return [(ctx.in_dtypes[0], ctx.attrs["shape"])]


register(
    OpDef(
        "PlaceholderWithDefault",
        dtypes=_dt.STORABLE,
        infer=_placeholder_with_default_infer,
        reference=lambda ctx, x: x,
        lower=lambda ctx: [],
        alias=0,
        grad=lambda op, dy: [dy],  # unfed, it passes its default through
    )
)


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """A placeholder that passes `input` through when it is not fed."""
    value = convert_to_tensor(input)
    shape = TensorShape(shape).as_tuple()
    return apply_op("PlaceholderWithDefault", [value], {"shape": shape}, name=name).outputs[0]


# -- Feed: a fed tensor inside a compiled program (made by the prune pass, never by users) ------
register(
    OpDef(
        "Feed",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: [(ctx.attrs["dtype"], ctx.attrs["shape"])],
        lower=lambda ctx: [],
        differentiable=False,
        stateful=True,
    )
)


def is_tensor(x: Any) -> bool:
    """`tf.is_tensor`: whether x is a tensor or tensor-like (a Variable), not a Python value."""
    return isinstance(x, Tensor) or hasattr(x, "_as_tensor")


def get_static_value(tensor: Any, partial: bool = False) -> np.ndarray | None:
    """`tf.get_static_value`: the value of `tensor` when it follows from constants and static
    shapes (what constant folding computes), else None; a Python value comes back as is."""
    if not is_tensor(tensor):
        return tensor
    t = convert_to_tensor(tensor)  # a Variable: its value, which only a session knows
    value = constant_value(t.graph, (t.op.name, t.value_index))
    return None if value is None else np.array(value)


def convert_to_tensor_or_indexed_slices(
    value: Any, dtype: Any = None, name: str | None = None
) -> Tensor:
    """`tf.convert_to_tensor_or_indexed_slices`: an IndexedSlices (it has `fetch_components`)
    as it is, anything else as convert_to_tensor makes it."""
    if hasattr(value, "fetch_components") and hasattr(value, "indices"):
        if dtype is not None and _dt.as_dtype(dtype) != value.dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {_dt.as_dtype(dtype).name} for "
                f"IndexedSlices with dtype {value.dtype.name}"
            )
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
