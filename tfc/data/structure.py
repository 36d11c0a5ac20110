"""Element structures of datasets: nested tuples and dicts of components, flattened as TF does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import Shape, TensorShape, shape_str


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _sorted_keys(value: dict) -> list:
    # tf.nest orders dict components by sorted key, so output_types and the flat order agree
    try:
        return sorted(value)
    except TypeError:
        raise TypeError(
            f"Dataset element dict keys must be sortable, got {list(value)!r}"
        ) from None


def flatten(structure: Any) -> list:
    """The leaves of a nested structure: tuples (and namedtuples) and dicts nest; lists are
    values (TF converts a list to one tensor)."""
    if isinstance(structure, dict):
        return [x for k in _sorted_keys(structure) for x in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [x for item in structure for x in flatten(item)]
    return [structure]


def leaf_paths(structure: Any, prefix: str = "") -> list[str]:
    """A readable path per leaf, in flatten's order (for error messages): "[0]['x']"."""
    if isinstance(structure, dict):
        return [
            p for k in _sorted_keys(structure) for p in leaf_paths(structure[k], f"{prefix}[{k!r}]")
        ]
    if isinstance(structure, tuple):
        return [p for i, item in enumerate(structure) for p in leaf_paths(item, f"{prefix}[{i}]")]
    return [prefix or "the element"]


def pack(template: Any, leaves: list) -> Any:
    """`template`'s structure with its leaves replaced, in order, by `leaves`."""
    it = iter(leaves)
    result = _pack(template, it)
    if next(it, _END) is not _END:
        raise ValueError("pack: more leaves than the structure has")
    return result


_END = object()


def _pack(template: Any, it: Iterator) -> Any:
    if isinstance(template, dict):
        packed = {k: _pack(template[k], it) for k in _sorted_keys(template)}
        return packed if type(template) is dict else type(template)(packed)
    if _is_namedtuple(template):
        return type(template)(*[_pack(x, it) for x in template])
    if isinstance(template, tuple):
        return tuple(_pack(x, it) for x in template)
    try:
        return next(it)
    except StopIteration:
        raise ValueError("pack: fewer leaves than the structure has") from None


def lists_to_tuples(structure: Any, is_leaf: Callable[[Any], bool]) -> Any:
    """A map function's result with lists read as tuples (TF1 does the same), down to leaves."""
    if is_leaf(structure):
        return structure
    if isinstance(structure, dict):
        return type(structure)((k, lists_to_tuples(v, is_leaf)) for k, v in structure.items())
    if _is_namedtuple(structure):
        return type(structure)(*[lists_to_tuples(x, is_leaf) for x in structure])
    if isinstance(structure, (list, tuple)):
        return tuple(lists_to_tuples(x, is_leaf) for x in structure)
    return structure


@dataclass(frozen=True)
class ElementSpec:
    """What one element of a dataset is: its structure, and each component's dtype and shape.

    `template` is the element's structure with leaf i replaced by the int i; `shapes` are the
    static (possibly partial) shapes, what TF1's `output_shapes` reports.
    """

    template: Any
    dtypes: tuple[_dt.DType, ...]
    shapes: tuple[Shape, ...]

    @staticmethod
    def of(structure: Any, dtypes: list, shapes: list) -> ElementSpec:
        template = pack(structure, list(range(len(flatten(structure)))))
        return ElementSpec(template, tuple(dtypes), tuple(shapes))

    @property
    def paths(self) -> list[str]:
        return leaf_paths(self.template)

    def output_types(self) -> Any:
        return pack(self.template, list(self.dtypes))

    def output_shapes(self) -> Any:
        return pack(self.template, [TensorShape(s) for s in self.shapes])

    def describe(self) -> str:
        parts = [f"{d.name}{shape_str(s)}" for d, s in zip(self.dtypes, self.shapes)]
        return repr(pack(self.template, parts)).replace("'", "")
