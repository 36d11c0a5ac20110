"""Iterators: the graph side of tf.data (IteratorGetNext and MakeIterator ops).

`get_next()` adds an IteratorGetNext node with one output per component. It has no kernel:
like a placeholder it is always fed, by Session.run, which takes the next element of the
iterator whenever a fetch needs its outputs (tfc/data/runtime.py). Where the iterator stands
is state of the session, not of the graph, as with TF's iterator resources.
"""

from __future__ import annotations

import weakref
from typing import Any

from tfc.data.pipeline import Stage
from tfc.data.structure import ElementSpec, flatten, pack
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.ir.tensor_shape import TensorShape, shapes_compatible
from tfc.ops.registry import OpDef, apply_op, register

# graphs that hold iterator ops: Session.run of any other graph skips the iterator hook
GRAPHS_WITH_ITERATORS: weakref.WeakSet[Graph] = weakref.WeakSet()


def _fed_only(ctx: Any, *args: Any) -> list:
    raise ValueError(
        f"'{ctx.name}' (op: 'IteratorGetNext') has no kernel: Session.run feeds its outputs "
        "with the next element of its iterator when a fetch needs them, and here it was "
        "reached without being fed (only through a control dependency, or outside Session.run)"
    )


register(
    OpDef(
        "IteratorGetNext",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: list(zip(ctx.attrs["output_types"], ctx.attrs["output_shapes"])),
        reference=_fed_only,
        lower=_fed_only,
        differentiable=False,
        stateful=True,  # every run takes a new element: never merged or folded
        host_only=True,  # its elements come from the Python pipeline, in host memory
    )
)

# Restarting an iterator is done by Session.run when the op is part of a run; the compiled
# program has nothing to do for it.
register(
    OpDef(
        "MakeIterator",
        infer=lambda ctx: [],
        reference=lambda ctx: [],
        lower=lambda ctx: [],
        differentiable=False,
        stateful=True,
        host_only=True,  # restarts a Python pipeline
    )
)


class Iterator:
    """`tf.data.Iterator`: hands out the elements of a dataset, one per Session.run.

    Made by `Dataset.make_one_shot_iterator()` (starts by itself in each session),
    `Dataset.make_initializable_iterator()` (run `initializer` to start or restart it), or
    `Iterator.from_structure(types, shapes)` (run `make_initializer(dataset)` to switch it
    to a dataset).
    """

    def __init__(self, graph: Graph, name: str, spec: ElementSpec, stage: Stage | None) -> None:
        self.graph = graph
        self.name = name
        self._spec = spec
        self.one_shot_stage = stage  # what a one-shot iterator runs through; else None
        self._initializer: Operation | None = None

    @staticmethod
    def one_shot(stage: Stage) -> Iterator:
        graph = get_default_graph()
        return Iterator(graph, graph.unique_name("OneShotIterator"), stage.spec, stage)

    @staticmethod
    def initializable(stage: Stage) -> Iterator:
        graph = get_default_graph()
        iterator = Iterator(graph, graph.unique_name("Iterator"), stage.spec, None)
        iterator._initializer = iterator._make_iterator_op(stage, None)
        return iterator

    @staticmethod
    def from_structure(
        output_types: Any,
        output_shapes: Any = None,
        shared_name: str | None = None,
        output_classes: Any = None,
    ) -> Iterator:
        """An iterator of the given element structure, not yet bound to a dataset."""
        dtypes = [_dt.as_dtype(t) for t in flatten(output_types)]
        if output_shapes is None:
            shapes = [None] * len(dtypes)
        else:
            shapes = [TensorShape(s).as_tuple() for s in flatten(output_shapes)]
            if len(shapes) != len(dtypes):
                raise ValueError(
                    f"Iterator.from_structure: output_shapes has {len(shapes)} components but "
                    f"output_types has {len(dtypes)}"
                )
        graph = get_default_graph()
        spec = ElementSpec.of(output_types, dtypes, shapes)
        return Iterator(graph, graph.unique_name("Iterator"), spec, None)

    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError(
                f"Iterator '{self.name}' has no initializer: "
                + (
                    "a one-shot iterator starts by itself"
                    if self.one_shot_stage is not None
                    else "use make_initializer(dataset)"
                )
            )
        return self._initializer

    def make_initializer(self, dataset: Any, name: str | None = None) -> Operation:
        """An op that (re)starts this iterator on `dataset`, whose elements must fit it."""
        stage = getattr(dataset, "_stage", None)
        if not isinstance(stage, Stage):
            raise TypeError(f"make_initializer expects a tf.data.Dataset, got {dataset!r}")
        spec, mine = stage.spec, self._spec
        same = spec.template == mine.template and spec.dtypes == mine.dtypes
        if not same or not all(shapes_compatible(a, b) for a, b in zip(spec.shapes, mine.shapes)):
            raise TypeError(
                f"Expected a dataset of {mine.describe()} for iterator '{self.name}', "
                f"got one of {spec.describe()}"
            )
        return self._make_iterator_op(stage, name)

    def _make_iterator_op(self, stage: Stage, name: str | None) -> Operation:
        GRAPHS_WITH_ITERATORS.add(self.graph)
        attrs = {"iterator": self, "dataset": stage}
        return apply_op("MakeIterator", [], attrs, name=name or "MakeIterator", graph=self.graph)

    def get_next(self, name: str | None = None) -> Any:
        """The next element, as tensors in the element's structure. Each Session.run that
        needs any of them takes one new element; at the end it raises OutOfRangeError."""
        GRAPHS_WITH_ITERATORS.add(self.graph)
        attrs = {
            "iterator": self,
            "output_types": list(self._spec.dtypes),
            "output_shapes": list(self._spec.shapes),
        }
        op = apply_op(
            "IteratorGetNext", [], attrs, name=name or "IteratorGetNext", graph=self.graph
        )
        return pack(self._spec.template, list(op.outputs))

    @property
    def output_types(self) -> Any:
        return self._spec.output_types()

    @property
    def output_shapes(self) -> Any:
        return self._spec.output_shapes()

    @property
    def output_classes(self) -> Any:
        return pack(self._spec.template, [Tensor] * len(self._spec.dtypes))

    def __repr__(self) -> str:
        return f"<tf.data.Iterator '{self.name}' elements: {self._spec.describe()}>"


def make_one_shot_iterator(dataset: Any) -> Iterator:
    """`tf.data.make_one_shot_iterator(dataset)` (TF 1.13+): `dataset.make_one_shot_iterator()`."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Any, shared_name: str | None = None) -> Iterator:
    """`tf.data.make_initializable_iterator(dataset)`: `dataset.make_initializable_iterator()`."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_shapes
