"""Partially known shapes, as TF1's TensorShape and Dimension present them to users.

Inside the compiler a shape is a plain tuple of ints and None (unknown dimension), or None
(unknown rank); these classes wrap that tuple for the public API.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Union

Shape = Union[tuple, None]  # noqa: UP007  tuple of int|None, or None for unknown rank


class Dimension:
    """One dimension: `value` is an int, or None when unknown."""

    def __init__(self, value: Any) -> None:
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            value = int(value)
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self.value = value

    def __repr__(self) -> str:
        return f"Dimension({self.value})"

    def __str__(self) -> str:
        return "?" if self.value is None else str(self.value)

    def __int__(self) -> int:
        if self.value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self.value

    __index__ = __int__

    def __eq__(self, other: Any) -> Any:
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return self.value == other

    def __ne__(self, other: Any) -> Any:
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def __hash__(self) -> int:
        return hash(self.value)

    def is_compatible_with(self, other: Any) -> bool:
        other = other.value if isinstance(other, Dimension) else other
        return self.value is None or other is None or self.value == other


class TensorShape:
    """A shape whose rank and dimensions may be unknown."""

    def __init__(self, dims: Any) -> None:
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        else:
            self._dims = tuple(Dimension(d).value for d in _iterable(dims))

    @property
    def dims(self) -> list[Dimension] | None:
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_tuple(self) -> Shape:
        """The compiler's form: a tuple of int|None, or None for unknown rank."""
        return self._dims

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other: Any) -> bool:
        return shapes_compatible(self._dims, as_shape(other)._dims)

    def merge_with(self, other: Any) -> TensorShape:
        merged = merge_shapes(self._dims, as_shape(other)._dims)
        if merged is False:
            raise ValueError(f"Shapes {self} and {as_shape(other)} are not compatible")
        return TensorShape(merged)

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator[Dimension]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key: Any) -> Any:
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other: Any) -> bool:
        try:
            return self._dims == as_shape(other)._dims
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({_dim_str(self._dims[0])},)"
        return "(" + ", ".join(_dim_str(d) for d in self._dims) + ")"

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape([" + ", ".join(repr(Dimension(d)) for d in self._dims) + "])"


def _iterable(dims: Any) -> Iterable:
    try:
        return list(dims)
    except TypeError:
        raise TypeError(f"A shape must be a list of dimensions, got {dims!r}") from None


def _dim_str(d: int | None) -> str:
    return "?" if d is None else str(d)


def as_shape(value: Any) -> TensorShape:
    return value if isinstance(value, TensorShape) else TensorShape(value)


def shape_str(shape: Shape) -> str:
    """TensorFlow's bracket form used in op errors: [?,784], or ? for unknown rank."""
    if shape is None:
        return "?"
    return "[" + ",".join(_dim_str(d) for d in shape) + "]"


def shapes_compatible(a: Shape, b: Shape) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def merge_shapes(a: Shape, b: Shape) -> Shape | bool:
    """The most specific shape compatible with both, or False when they conflict."""
    if a is None:
        return b
    if b is None:
        return a
    if not shapes_compatible(a, b):
        return False
    return tuple(x if x is not None else y for x, y in zip(a, b))


def is_fully_defined(shape: Shape) -> bool:
    return shape is not None and all(d is not None for d in shape)


def num_elements(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def dimension_value(dimension: Any) -> int | None:
    """`tf.dimension_value`: a Dimension's int (None when unknown); ints and None pass through."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """`tf.dimension_at_index`: dimension `index` of `shape` as a Dimension, unknown when the
    rank is."""
    shape = as_shape(shape)
    if shape.ndims is None:
        return Dimension(None)
    return shape.dims[index]
