"""A run signature's repeat path: what a second `run` of the same fetches, feed keys, shapes and
dtypes needs, so that Session.run and make_callable's callables skip resolving them again."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tfc.ir.program import FeedSpec

MISS = object()  # RunPlan.feeds' answer for values the plan's program was not compiled for


def plan_key(fetches: Any, feed_dict: Any) -> tuple:
    """The key of a run's plan: the fetches as given and the feed keys in order. Raises
    TypeError where they are not hashable (dict fetches, nested lists): such runs have no
    plan and take the generic path."""
    kind = type(fetches)  # a list and a tuple of the same tensors return different types
    return kind, tuple(fetches) if kind is list else fetches, tuple(feed_dict or ())


class RunPlan:
    """One run signature's compiled host program, the layout of the feeds it was compiled for,
    where each fetched element's value is among the program's fetches, and the variables it
    needs initialized (`reads`) and initializes (`writes`), as state keys."""

    __slots__ = ("program", "version", "reads", "writes", "_layout", "_picks", "_rebuild")

    def __init__(
        self,
        program: Any,
        version: int,
        feeds: list[FeedSpec],
        layout: tuple[list[int | None], Callable[[list], Any]],
        reads: frozenset,
        writes: list,
        bare: bool,
    ) -> None:
        self.program = program
        self.version = version  # of the graph it was made from: a changed graph needs a new plan
        self.reads = reads
        self.writes = writes
        self._layout = [
            (spec.shape, spec.dtype.np, _c_strides(spec.shape, spec.dtype.np.itemsize))
            for spec in feeds
        ]
        picks, self._rebuild = layout
        # a bare tensor's value comes back as it is; otherwise the caller's structure is rebuilt
        self._picks = picks[0] if bare and picks[0] is not None else picks

    def feeds(self, values: Iterable[Any]) -> list[np.ndarray] | object:
        """The feed values as the program reads them in place, or MISS unless each is a NumPy
        array of the compiled shape and dtype, C-contiguous (the generic path converts)."""
        arrays = []
        for value, (shape, dtype, strides) in zip(values, self._layout):
            if (
                type(value) is not np.ndarray
                or value.shape != shape
                or value.dtype is not dtype  # NumPy's own dtypes are single objects
                or value.strides != strides
            ):
                return MISS
            arrays.append(value)
        return arrays

    def results(self, values: list[np.ndarray]) -> Any:
        """The caller's fetch structure from the program's fetches (scalars as NumPy
        scalars, as TF1 returns them)."""
        picks = self._picks
        if type(picks) is int:
            return _as_fetched(values[picks])
        return self._rebuild([None if i is None else _as_fetched(values[i]) for i in picks])


def _as_fetched(value: np.ndarray) -> Any:
    return value[()] if value.ndim == 0 else value


def _c_strides(shape: tuple, itemsize: int) -> tuple | None:
    """The strides NumPy gives a new C-ordered array of `shape`: a value with these strides is
    contiguous (one with others may be too, and takes the generic path). None for an empty
    shape, whose strides NumPy does not fix: empty feeds take the generic path."""
    if 0 in shape:
        return None
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))
