"""Nested structures of values (tf.nest): lists, tuples, namedtuples and dicts around leaves,
flattened in TF's order (dict entries by sorted key) and packed back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["flatten", "pack_sequence_as", "assert_same_structure", "map_structure", "is_nested"]


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def is_nested(value: Any) -> bool:
    """Whether `value` is a structure (list, tuple, dict) rather than a leaf."""
    return isinstance(value, (list, tuple, dict))


def _children(value: Any) -> list:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return list(value)


def flatten(structure: Any) -> list:
    """The leaves of `structure` in order (a leaf alone is a list of itself)."""
    if not is_nested(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def pack_sequence_as(structure: Any, flat: list) -> Any:
    """`flat`'s values in the shape of `structure`."""
    leaves = iter(flat)
    result = _pack(structure, leaves)
    if next(leaves, _END) is not _END:
        raise ValueError(
            f"Could not pack sequence. Structure had {len(flatten(structure))} elements, but "
            f"flat_sequence had {len(flat)} elements."
        )
    return result


_END = object()


def _pack(structure: Any, leaves: Iterator) -> Any:
    if not is_nested(structure):
        value = next(leaves, _END)
        if value is _END:
            raise ValueError("Could not pack sequence: too few values for the structure.")
        return value
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], leaves) for k in sorted(structure)}
        return type(structure)((k, packed[k]) for k in structure)
    items = [_pack(child, leaves) for child in structure]
    if _is_namedtuple(structure):
        return type(structure)(*items)
    return type(structure)(items)


def _shape_text(structure: Any) -> str:
    if not is_nested(structure):
        return "."
    if isinstance(structure, dict):
        items = (f"{k!r}: {_shape_text(structure[k])}" for k in sorted(structure))
        return "{" + ", ".join(items) + "}"
    inner = ", ".join(_shape_text(c) for c in structure)
    return f"[{inner}]" if isinstance(structure, list) else f"({inner})"


def assert_same_structure(a: Any, b: Any, check_types: bool = True) -> None:
    """Raise TF's ValueError when `a` and `b` do not nest alike (TypeError for sequences of
    different types when `check_types`)."""
    why = _difference(a, b, check_types)
    if why is not None:
        kind, text = why
        message = (
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: type={type(a).__name__} str={a}\n\n"
            f"Second structure: type={type(b).__name__} str={b}\n\n"
            f"More specifically: {text}\n"
            f"Entire first structure:\n{_shape_text(a)}\n"
            f"Entire second structure:\n{_shape_text(b)}"
        )
        raise (TypeError if kind == "type" else ValueError)(message)


def _difference(a: Any, b: Any, check_types: bool) -> tuple[str, str] | None:
    if is_nested(a) != is_nested(b):
        seq, other = (a, b) if is_nested(a) else (b, a)
        return (
            "value",
            f'Substructure "type={type(seq).__name__} str={seq}" is a sequence, while '
            f'substructure "type={type(other).__name__} str={other}" is not',
        )
    if not is_nested(a):
        return None
    if check_types and type(a) is not type(b):
        return (
            "type",
            f"The two structures don't have the same sequence type: {type(a).__name__} and "
            f"{type(b).__name__}",
        )
    if isinstance(a, dict) and sorted(a) != sorted(b):
        keys = f"{sorted(a)} and {sorted(b)}"
        return ("value", f"The two dictionaries don't have the same set of keys: {keys}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        return (
            "value",
            f"The two structures don't have the same number of elements. First structure: "
            f"type={type(a).__name__} str={a}, second structure: type={type(b).__name__} "
            f"str={b}.",
        )
    for x, y in zip(ca, cb):
        why = _difference(x, y, check_types)
        if why is not None:
            return why
    return None


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """`fn` applied to the leaves of `structures` (which nest alike), in their structure."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other, check_types=False)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])
