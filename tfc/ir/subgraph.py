"""Graphs nested in an op: the branches of an If, the condition and the body of a While.

A nested graph is a program graph of its own (tfc.ir.program): its arguments are Feed nodes
whose attribute "index" is the position of the op's input they stand for, and its results are
its graph_attrs["fetches"] (graph_attrs["targets"]: ops it must run for their effects). So the
passes that compile a program compile a body the same way, and the op that holds it binds the
feeds and fetches to its own inputs and outputs.

A `Subgraph` is such a graph while user code builds it (tf.cond's branch functions, tf.while_loop's
cond and body). Ops created while it is the default graph belong to it, whatever their inputs:
a tensor of a graph around it becomes one of its inputs (a *capture*: a Feed here, and an input
of the op in the outer graph), so ops created inside a loop body run in every iteration even when
they read only values from outside. Names are unique across the whole nesting (one name table),
collections, variable stores and the graph seed are the outermost graph's, and variables made
inside go to the outermost graph (tfc.ir.graph.init_scope).

A gradient body reads values of the forward body it differentiates, a graph that is not around
it: its `forward` hook decides what such a tensor becomes (a saved value, a recomputation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, as_operation
from tfc.ir.program import FeedSpec
from tfc.ir.tensor_shape import Shape

__all__ = ["Subgraph", "find_operation", "is_ancestor", "nested_graphs"]


def is_ancestor(graph: Graph, inner: Graph) -> bool:
    """Whether `inner` is nested (at any depth) inside `graph`."""
    g = inner.outer
    while g is not None:
        if g is graph:
            return True
        g = g.outer
    return False


class Subgraph(Graph):
    """A graph being built inside an op of `outer`; see the module docstring."""

    def __init__(
        self,
        outer: Graph,
        scope: str,
        forward: tuple[Graph, Callable[[Tensor], Tensor]] | None = None,
    ) -> None:
        super().__init__()
        self.outer = outer
        root = outer.root
        self._names_in_use = root._names_in_use  # names stay unique across the nesting
        self._collections = root._collections
        self.seed = root.seed
        self._next_id = outer._next_id
        self._device_stack = list(outer._device_stack)
        self._name_stack = scope
        # (id of the tensor's graph, name) -> the tensor standing for it here
        self._captured: dict[tuple[int, str], Tensor] = {}
        # the tensors of the graph just outside that the feeds made by capture stand for
        self.captures: list[tuple[Tensor, Tensor]] = []  # (outer tensor, feed here)
        self.control_captures: list[Operation] = []  # outer ops this graph's ops wait for
        self.forward = forward  # (forward graph, hook) of a gradient body
        self.graph_attrs = {"feeds": [], "fetches": [], "targets": [], "feeds_cut": True}

    # -- arguments --------------------------------------------------------------------------------
    def add_feed(self, dtype: _dt.DType, shape: Shape, name: str) -> Tensor:
        """A new argument: a Feed node (its index is set when the op holding this graph is made)."""
        node = self.unique_name(name)
        attrs = {"index": -1, "dtype": dtype, "shape": None if shape is None else tuple(shape)}
        self.add_node(node, "Feed", [], attrs, [dtype], [attrs["shape"]])
        return self.get_operation_by_name(node).outputs[0]

    def capture(self, tensor: Tensor) -> Tensor:
        """`tensor` as a value of this graph: itself, or the feed standing for it here (made on
        first use, and first in the graphs in between when it comes from further out)."""
        if tensor.graph is self:
            return tensor
        key = (id(tensor.graph), tensor.name)
        found = self._captured.get(key)
        if found is not None:
            return found
        if tensor.op.type == "Const":  # copied, so its value stays known when compiling
            node = tensor.op._node
            name = self.unique_name(tensor.op.name.rsplit("/", 1)[-1])
            self.add_node(name, "Const", [], dict(node["attrs"]), node["dtypes"], node["shapes"])
            inner = self.get_operation_by_name(name).outputs[0]
        elif self.forward is not None and tensor.graph is self.forward[0]:
            inner = self.forward[1](tensor)
            inner = self.capture(inner) if inner.graph is not self else inner
        elif tensor.graph is self.outer:
            inner = self.add_feed(tensor.dtype, tensor._shape_tuple, "capture")
            self.captures.append((tensor, inner))
        else:  # from further out (or a forward body an outer gradient body reads)
            inner = self.capture(self.outer.capture(tensor))
        self._captured[key] = inner
        return inner

    # -- ordering ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """Ops of this graph order ops inside it; an op of a graph around it orders the op that
        holds this graph (it waits for the op before running the body at all)."""
        if control_inputs is None:
            with super().control_dependencies(None):
                yield
            return
        inner = []
        for c in control_inputs:
            op = as_operation(c)
            if op.graph is self:
                inner.append(op)
            elif is_ancestor(op.graph, self):
                if op not in self.control_captures:
                    self.control_captures.append(op)
            # an op of a forward body (a gradient rule's gating) orders nothing here: the
            # forward body runs before its gradient
        with super().control_dependencies(inner):
            yield

    def finish(self, fetches: list[Tensor | None], targets: list[Operation] = ()) -> None:
        """Set the results and the ops to run, and give the outer graph back the ids used."""
        self.graph_attrs["fetches"] = [
            None if t is None else (t.op.name, t.value_index) for t in fetches
        ]
        self.graph_attrs["targets"] = [op.name for op in targets]
        self.outer._next_id = max(self.outer._next_id, self._next_id)

    def set_feed_indices(self, index_of: Callable[[Tensor], int]) -> None:
        """Number every Feed by the op input it stands for: `index_of(feed tensor)`."""
        specs = []
        for name in self.node_names():
            node = self.node(name)
            if node["op"] != "Feed":
                continue
            index = index_of(self.get_operation_by_name(name).outputs[0])
            node["attrs"] = dict(node["attrs"], index=index)
            specs.append((index, FeedSpec((name, 0), node["dtypes"][0], node["shapes"][0])))
        self.graph_attrs["feeds"] = [spec for _, spec in sorted(specs, key=lambda s: s[0])]
        self.version += 1


def nested_graphs(attrs: dict) -> list[tuple[str, Graph]]:
    """The (attribute, graph) pairs of a node's attributes that hold nested graphs."""
    return [(k, v) for k, v in sorted(attrs.items()) if isinstance(v, Graph)]


def find_operation(graph: Graph, name: str) -> Operation | None:
    """The operation named `name` in `graph` or in a graph nested in one of its ops (the op a
    failing kernel inside a loop body names), or None."""
    if name in graph.nx:
        return graph.get_operation_by_name(name)
    for node in graph.nx.nodes.values():
        for _, inner in nested_graphs(node["attrs"]):
            found = find_operation(inner, name)
            if found is not None:
                return found
    return None
