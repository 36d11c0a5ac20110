"""What one run asks for: the fetches and feeds of a `run` call resolved against a graph and
checked, the program signature they define, and the caller's fetch structure rebuilt from values.
Shared by Session and the interpreter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from tfc.client.queue_runs import QueueRuns
from tfc.ir.dtypes import as_numpy, string_array
from tfc.ir.graph import Graph, Operation, Tensor
from tfc.ir.program import FeedSpec


class FeedSource(Protocol):
    """Supplies values for tensors the caller did not feed: the tf.data iterators of a session
    (tfc/data/runtime.py). It appends (tensor, array) pairs the run needs to the feeds."""

    def add_feeds(
        self,
        graph: Graph,
        fetches: list[Tensor],
        targets: list[str],
        feed_tensors: list[Tensor],
        feed_values: list[np.ndarray],
    ) -> None: ...


class FeedSources:
    """Several feed sources, asked in turn (a session's iterators, its variables' flags)."""

    def __init__(self, *sources: FeedSource) -> None:
        self.sources = sources

    def add_feeds(
        self,
        graph: Graph,
        fetches: list[Tensor],
        targets: list[str],
        feed_tensors: list[Tensor],
        feed_values: list[np.ndarray],
    ) -> None:
        for source in self.sources:
            source.add_feeds(graph, fetches, targets, feed_tensors, feed_values)


class RunRequest:
    """The fetches and feeds of one `run` call, resolved against a graph and checked.

    `fetches` are the distinct fetched tensors (program outputs), `targets` the names of
    fetched operations, `feeds` the FeedSpecs and `feed_values` the converted arrays, with
    what `feed_source` adds for the tensors nobody fed (the next elements of iterators).
    `results(values)` rebuilds the caller's fetch structure from one array per fetch.
    """

    def __init__(
        self,
        graph: Graph,
        fetches: Any,
        feed_dict: Any = None,
        feed_source: FeedSource | None = None,
        queue_runs: QueueRuns | None = None,
        deadline_ns: int = 0,
    ) -> None:
        leaves, self._rebuild = flatten_fetches(fetches)
        self._graph = graph
        self._elements = [_fetch_element(graph, x) for x in leaves]
        # distinct fetched tensors in first-seen order (a dict: runs fetch hundreds at once)
        self.fetches: list[Tensor] = list(
            dict.fromkeys(e for e in self._elements if isinstance(e, Tensor))
        )
        self.targets = sorted({e.name for e in self._elements if isinstance(e, Operation)})
        feed_tensors, self.feed_values = convert_feeds(graph, feed_dict)
        self.n_fed = len(feed_tensors)  # the caller's feeds come first, sources' after them
        if feed_source is not None:
            feed_source.add_feeds(graph, self.fetches, self.targets, feed_tensors, self.feed_values)
        # the run's queue ops: dequeues now (their values fed), enqueues in finish()
        self._queue_step = None
        if queue_runs is not None:
            self._queue_step = queue_runs.step(
                graph, self.fetches, self.targets, feed_tensors, deadline_ns
            )
        if self._queue_step is not None:
            self._queue_step.take(graph, feed_tensors, self.feed_values)
            self.fetches = list(dict.fromkeys(self.fetches + self._queue_step.extra_fetches))
        self.feeds = [
            FeedSpec((t.op.name, t.value_index), t.dtype, tuple(v.shape))
            for t, v in zip(feed_tensors, self.feed_values)
        ]

    @property
    def fetch_keys(self) -> list[tuple[str, int]]:
        return [(t.op.name, t.value_index) for t in self.fetches]

    def signature(self) -> tuple:
        return (tuple(self.fetch_keys), tuple(self.targets), tuple(self.feeds))

    def finish(self, values: Sequence[np.ndarray]) -> None:
        """After the program ran (one value per fetch): the run's enqueues and closes."""
        if self._queue_step is not None:
            self._queue_step.finish(self._graph, dict(zip(self.fetches, values)))

    @property
    def queued(self) -> bool:
        """Whether the run has queue ops (dequeues before the program, enqueues after)."""
        return self._queue_step is not None

    def result_layout(self) -> tuple[list[int | None], Callable[[list], Any]]:
        """Where each fetched element's value is among `fetches` (None: an operation's), and
        the function that rebuilds the caller's fetch structure from the elements' values."""
        index = {t: i for i, t in enumerate(self.fetches)}
        picks = [None if isinstance(e, Operation) else index[e] for e in self._elements]
        return picks, self._rebuild

    def results(self, values: Sequence[np.ndarray]) -> Any:
        by_tensor = dict(zip(self.fetches, values))
        return self._rebuild(
            [None if isinstance(e, Operation) else as_result(by_tensor[e]) for e in self._elements]
        )


def _fetch_element(graph: Graph, fetch: Any) -> Tensor | Operation:
    if fetch is None:
        raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
    try:
        return graph.as_graph_element(fetch)
    except KeyError as e:
        raise ValueError(
            f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})"
        ) from None
    except (TypeError, ValueError) as e:
        raise type(e)(
            f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})"
        ) from None


def convert_feeds(graph: Graph, feed_dict: Any) -> tuple[list[Tensor], list[np.ndarray]]:
    """Resolve feed keys to tensors and convert values to their dtypes, checking shapes."""
    fed: dict[Tensor, np.ndarray] = {}
    pairs: list = []
    for key, value in (feed_dict or {}).items():
        components = getattr(key, "feed_components", None)
        # a SparseTensor: each of its tensors is fed its part of the value
        pairs.extend(components(value) if components is not None else [(key, value)])
    for key, value in pairs:
        try:
            tensor = graph.as_graph_element(key)
        except (KeyError, TypeError, ValueError) as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        if isinstance(tensor, Operation):
            raise TypeError(
                "Cannot interpret feed_dict key as Tensor: Can not convert an Operation "
                f"'{tensor.name}' into a Tensor."
            )
        if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
            raise TypeError(
                "The value of a feed cannot be a tf.Tensor object. Acceptable feed values "
                "include Python scalars, strings, lists, numpy ndarrays, or TensorHandles."
            )
        try:
            if hasattr(value, "__cuda_array_interface__"):  # in device memory: fed in place
                from tfc.backend.device_array import device_feed

                array = device_feed(value, tensor.dtype.np, tensor.name)
            elif tensor.dtype.is_string:
                array = string_array(value)
            else:
                with np.errstate(all="ignore"):
                    array = np.asarray(as_numpy(value, tensor.dtype), order="C")
        except (TypeError, ValueError, OverflowError) as e:
            raise ValueError(
                f"Cannot convert the value fed for '{tensor.name}' to {tensor.dtype.name}: {e}"
            ) from None
        if not tensor.shape.is_compatible_with(array.shape):
            raise ValueError(
                f"Cannot feed value of shape {array.shape!r} for Tensor {tensor.name!r}, "
                f"which has shape {str(tensor.get_shape())!r}"
            )
        fed.setdefault(tensor, array)
    return list(fed), list(fed.values())


def as_result(array: Any) -> Any:
    """Scalars come back as NumPy scalars, as TF1 returns them (device arrays as they are)."""
    return array[()] if isinstance(array, np.ndarray) and array.ndim == 0 else array


def flatten_fetches(fetches: Any) -> tuple[list, Callable[[list], Any]]:
    """The leaves of a nested fetch structure, and a function that rebuilds it from values."""
    if isinstance(fetches, dict):
        keys = list(fetches)
        parts = [flatten_fetches(fetches[k]) for k in keys]

        def rebuild_dict(values: list) -> Any:
            out, pos = {}, 0
            for k, (leaves, rebuild) in zip(keys, parts):
                out[k] = rebuild(values[pos : pos + len(leaves)])
                pos += len(leaves)
            return out if type(fetches) is dict else type(fetches)(out)

        return [x for leaves, _ in parts for x in leaves], rebuild_dict
    if isinstance(fetches, (list, tuple)):
        parts = [flatten_fetches(f) for f in fetches]

        def rebuild_seq(values: list) -> Any:
            items, pos = [], 0
            for leaves, rebuild in parts:
                items.append(rebuild(values[pos : pos + len(leaves)]))
                pos += len(leaves)
            if hasattr(fetches, "_fields"):  # namedtuple
                return type(fetches)(*items)
            return type(fetches)(items) if isinstance(fetches, tuple) else items

        return [x for leaves, _ in parts for x in leaves], rebuild_seq
    components = getattr(fetches, "fetch_components", None)
    if components is not None:  # an IndexedSlices: its tensors, and the value made of them
        tensors, result = components()
        return list(tensors), result
    return [fetches], lambda values: values[0]
