"""Python operators on Tensors and Variables (`a + b`, `x @ W`, `t[1:, ::2]`), named as in TF1."""

from __future__ import annotations

from typing import Any

import tfc.ops.array as _array
import tfc.ops.linalg as _linalg
import tfc.ops.logic as _logic
import tfc.ops.math as _math
from tfc.ir.graph import Tensor
from tfc.ops.elementwise import convert_operands

_BINARY = {
    # dunder: (function, op name TF1 gives it)
    "add": (lambda x, y, name: _math.add(x, y, name=name), "add"),
    "sub": (lambda x, y, name: _math.subtract(x, y, name=name), "sub"),
    "mul": (lambda x, y, name: _math.multiply(x, y, name=name), "mul"),
    "truediv": (lambda x, y, name: _math.truediv(x, y, name=name), "truediv"),
    "floordiv": (lambda x, y, name: _math.floordiv(x, y, name=name), "floordiv"),
    "mod": (lambda x, y, name: _math.floormod(x, y, name=name), "mod"),
    "pow": (lambda x, y, name: _math.pow(x, y, name=name), "pow"),
    "matmul": (lambda x, y, name: _linalg.matmul(x, y, name=name), "matmul"),
    "and": (lambda x, y, name: _logic.logical_and(x, y, name=name), "and"),
    "or": (lambda x, y, name: _logic.logical_or(x, y, name=name), "or"),
    "xor": (lambda x, y, name: _logic.not_equal(x, y, name=name), "xor"),
}
_COMPARE = {
    "lt": _logic.less,
    "le": _logic.less_equal,
    "gt": _logic.greater,
    "ge": _logic.greater_equal,
}


def _forward(fn, name):
    return lambda self, other: fn(self, other, name)


def _reflected(fn, name):
    def op(self: Any, other: Any) -> Tensor:
        y, x = convert_operands(self, other)  # `other` takes self's dtype, as in TF1
        return fn(x, y, name)

    return op


def _install(cls: type) -> None:
    for dunder, (fn, name) in _BINARY.items():
        setattr(cls, f"__{dunder}__", _forward(fn, name))
        setattr(cls, f"__r{dunder}__", _reflected(fn, name))
    for dunder, fn in _COMPARE.items():
        setattr(cls, f"__{dunder}__", lambda self, other, fn=fn: fn(self, other))
    cls.__neg__ = lambda self: _math.negative(self)
    cls.__abs__ = lambda self: _math.abs(self)
    cls.__invert__ = lambda self: _logic.logical_not(self)
    cls.__getitem__ = lambda self, key: _array.slice_helper(self, key)
    cls.__array_ufunc__ = None  # NumPy defers `ndarray + tensor` to Tensor.__radd__


def install_operators(*classes: type) -> None:
    """Give `classes` (Tensor, and Variable from the namespace layer) the operators above."""
    for cls in classes:
        _install(cls)
