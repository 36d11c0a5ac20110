"""tf.gradients: reverse-mode differentiation as one backward walk over local per-op rules.

Guarantees: the result is aligned with `xs`; an entry is None when its x is not connected to
any y through differentiable float or complex ops (integer and bool tensors carry none); otherwise
it is a tensor of x's dtype and shape holding sum_j d(sum(ys[j] * grad_ys[j])) / dx.

How: the ops between xs and ys (reachable from an x and reaching a y by data edges) are visited
in reverse topological order. At each op the gradients of its outputs are summed (`tf.add_n`:
fan-out) and handed to the op's rule (`OpDef.grad(op, *dys)`, unless the user registered one:
tfc/autodiff/registry.py), which returns one gradient per input. A rule returns, for input i,
either a gradient of that input's shape or, for ops that broadcast their inputs (Add, Mul,
SelectV2, BatchMatMulV2's batch dims...), one of the output's shape; this module then sums it
back to the input's shape (SumToShape, tfc/ops/grad_ops.py), the one place where broadcasting is
undone. The reduction is skipped when the static shapes prove the two shapes equal; otherwise
the input's shape comes from a `Shape` op, which is a constant once the fed shapes are known, so
None dims work.
New ops are created under `gradients/` with TF1's names (`gradients/MatMul_grad/MatMul_1`).

Control flow: the gradient rules of If and While (tfc/ops/functional.py) differentiate their
branches and bodies with the same walk (registered below), building the gradient into the
graph being built (a gradient branch or body), which reads the forward values it needs through
its capture hook.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Sequence
from typing import Any

import networkx as nx

from tfc.autodiff.registry import registered_rule
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.ops.array import concat, fill, identity, reshape, stack, unstack
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.functional import register_subgraph_gradients
from tfc.ops.grad_ops import shape_tensor, sum_to_shape
from tfc.ops.indexed_slices import IndexedSlices, as_dense
from tfc.ops.math import add_n, cast
from tfc.ops.registry import get_opdef

__all__ = ["gradients", "hessians", "AggregationMethod", "UnconnectedGradients"]

_Key = tuple[str, int]


class AggregationMethod:
    """TF1's ways of summing fan-out gradients; tfc sums them all with one AddN kernel."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_METHODS = (
    None,
    AggregationMethod.ADD_N,
    AggregationMethod.EXPERIMENTAL_TREE,
    AggregationMethod.EXPERIMENTAL_ACCUMULATE_N,
)


class UnconnectedGradients(enum.Enum):
    """What tf.gradients gives an x that no y depends on: None, or zeros of x's shape."""

    NONE = "none"
    ZERO = "zero"


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
    stop_gradients: Any = None,
    unconnected_gradients: Any = UnconnectedGradients.NONE,
) -> list[Tensor | None]:
    """`tf.gradients`: the symbolic derivatives of sum(ys) with respect to each of `xs`.

    ys, xs: a tensor or a list of them; an x may be a `tf.Variable` (its value). grad_ys: one
    tensor per y (None: ones), the gradient flowing into each y. stop_gradients: tensors held
    constant. gate_gradients: an op's input gradients are all computed before any is used.
    unconnected_gradients: "none" (None for an x no y depends on) or "zero" (zeros like x).
    """
    if aggregation_method not in _METHODS:
        raise ValueError(f"Invalid aggregation_method specified {aggregation_method}.")
    try:
        unconnected = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(
            f"Unknown value for unconnected_gradients: {unconnected_gradients!r}"
        ) from None
    ys = [convert_to_tensor(y) for y in _as_list(ys, "ys")]
    xs = [_as_x(x) for x in _as_list(xs, "xs")]
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys, "grad_ys")
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop_list = [] if stop_gradients is None else _as_list(stop_gradients, "stop_gradients")
    stops = {convert_to_tensor(t).op.name for t in stop_list}
    graph = _common_graph(ys + xs)
    with graph.as_default(), graph.name_scope(name or "gradients"):
        walk = _BackwardWalk(
            graph, graph, ys, xs, stops, colocate_gradients_with_ops, gate_gradients
        )
        walk.seed(ys, grad_ys)
        walk.run()
        result = [walk.total((x.op.name, x.value_index)) if _trainable(x) else None for x in xs]
        if unconnected is UnconnectedGradients.ZERO:
            result = [_zeros_like(x) if g is None else g for g, x in zip(result, xs)]
        return result


def _zeros_like(x: Tensor) -> Tensor:
    return fill(shape_tensor(x), constant(0, dtype=x.dtype), name="zeros_like")


def hessians(
    ys: Any,
    xs: Any,
    name: str = "hessians",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
) -> list[Tensor]:
    """`tf.hessians`: for each x of `xs`, the second derivatives of sum(ys), of shape
    x.shape + x.shape (entry [i..., j...] is d2 sum(ys) / dx[i...] dx[j...]).

    TF builds row j of each Hessian in a while_loop; tfc builds one gradient of the gradient's
    element j per row, so every x needs its number of elements known when the graph is built.
    """
    kwargs = {
        "colocate_gradients_with_ops": colocate_gradients_with_ops,
        "gate_gradients": gate_gradients,
        "aggregation_method": aggregation_method,
    }
    xs = [_as_x(x) for x in _as_list(xs, "xs")]
    with get_default_graph().name_scope(name):
        first = gradients(ys, xs, **kwargs)
        result = []
        for x, gradient in zip(xs, first):
            n = x.shape.num_elements() if x.shape.is_fully_defined() else None
            if n is None:
                raise ValueError(
                    f"tf.hessians needs the shape of {x.name} known when the graph is built, "
                    f"got {x.shape}"
                )
            dims = x.shape.as_list()
            if gradient is None or n == 0:  # no y depends on x: its Hessian is zero
                result.append(fill(dims + dims, constant(0, dtype=x.dtype)))
                continue
            rows = [
                gradients(element, [x], unconnected_gradients="zero", **kwargs)[0]
                for element in unstack(reshape(gradient, [-1]), num=n)
            ]
            result.append(reshape(stack(rows), dims + dims))
        return result


def _subgraph_gradients(ys: list[Tensor], xs: list[Tensor], grad_ys: list[Tensor]) -> list:
    """The gradients of a nested graph's `ys` (a forward branch or loop body) with respect to
    `xs`, built into the default graph (the gradient branch or body being built)."""
    walk = _BackwardWalk(_common_graph(ys + xs), get_default_graph(), ys, xs, set(), False, False)
    walk.seed(ys, grad_ys)
    walk.run()
    # a nested graph's results are tensors: rows of a captured table are added up here
    return [as_dense(walk.total((x.op.name, x.value_index))) if _trainable(x) else None
            for x in xs]  # fmt: skip


register_subgraph_gradients(_subgraph_gradients)


# -- arguments ------------------------------------------------------------------------------------
def _as_list(value: Any, what: str) -> list:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if what in ("ys", "xs") and any(v is None for v in items):
        raise ValueError(f"{what} must be tensors, got None in {items!r}")
    return items


def _as_x(x: Any) -> Tensor:
    """A Variable means the variable itself (TF1's ref), so every read of it is differentiated."""
    variable = getattr(x, "_variable", None)
    return variable if isinstance(variable, Tensor) else convert_to_tensor(x)


def _common_graph(tensors: Sequence[Tensor]) -> Graph:
    graph = tensors[0].graph
    for t in tensors[1:]:
        if t.graph is not graph:
            raise ValueError(f"{t} must be from the same graph as {tensors[0]}.")
    return graph


def _trainable(t: Tensor) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex  # TF's _IsTrainable


# -- the walk -------------------------------------------------------------------------------------
class _BackwardWalk:
    """The gradients of one tf.gradients call: per tensor, the contributions collected so far."""

    def __init__(
        self,
        graph: Graph,
        build: Graph,
        ys: list[Tensor],
        xs: list[Tensor],
        stops: set[str],
        colocate: bool,
        gate: bool,
    ) -> None:
        self.graph = graph  # the graph differentiated
        self.build = build  # where the gradient ops go: `graph`, or a gradient branch or body
        self.stops = stops
        self.colocate = colocate
        self.gate = gate
        self.between = _ops_between(graph, [y.op.name for y in ys], [x.op.name for x in xs])
        self.grads: dict[_Key, list[Tensor]] = {}

    def seed(self, ys: list[Tensor], grad_ys: list[Any]) -> None:
        for i, (y, gy) in enumerate(zip(ys, grad_ys)):
            if not _trainable(y):
                continue
            if gy is None:
                one = constant(1, dtype=y.dtype, name=f"grad_ys_{i}")
                gy = fill(shape_tensor(y), one)
            else:
                gy = convert_to_tensor(gy)
                if gy.dtype != y.dtype:
                    raise TypeError(
                        f"grad_ys[{i}] has dtype {gy.dtype.name}, but ys[{i}] ({y.name}) has "
                        f"dtype {y.dtype.name}"
                    )
                if not _compatible(gy._shape_tuple, y._shape_tuple):
                    raise ValueError(
                        f"grad_ys[{i}] has shape {gy.shape}, incompatible with the shape "
                        f"{y.shape} of ys[{i}] ({y.name})"
                    )
            self.grads.setdefault((y.op.name, y.value_index), []).append(gy)

    def total(self, key: _Key) -> Tensor | IndexedSlices | None:
        """The summed gradient of one tensor (None when nothing reached it); summed once.
        IndexedSlices alone stay IndexedSlices (their rows concatenated, as TF aggregates
        them); mixed with dense gradients they are densified and added."""
        parts = self.grads.get(key)
        if not parts:
            return None
        if len(parts) > 1:
            if all(isinstance(p, IndexedSlices) for p in parts):
                total = IndexedSlices(
                    concat([p.values for p in parts], 0),
                    concat([_as_int64(p.indices, parts) for p in parts], 0),
                    parts[0].dense_shape,
                )
            else:
                total = add_n([as_dense(p) for p in parts])
            self.grads[key] = parts = [total]
        return parts[0]

    def run(self) -> None:
        order = nx.lexicographical_topological_sort(
            self.graph.nx.subgraph(self.between), key=lambda n: self.graph.node(n)["id"]
        )
        for name in reversed(list(order)):
            op = self.graph.get_operation_by_name(name)
            dys = [self.total((name, i)) for i in range(len(op.outputs))]
            if all(d is None for d in dys) or name in self.stops:
                continue
            if not any(t.op.name in self.between for t in op.inputs):
                continue  # an x that no other x flows into: nothing upstream wants gradients
            registered, rule = registered_rule(op)
            if not registered:
                opdef = get_opdef(op.type)
                if not opdef.differentiable:
                    continue
                if opdef.grad is None:
                    raise LookupError(
                        f"No gradient defined for operation '{name}' (op type: {op.type})"
                    )
                rule = opdef.grad
            if rule is None:  # registered as not differentiable
                continue
            if op.type not in _SLICES_PASS_THROUGH:  # other rules take dense gradients
                dys = [as_dense(d) for d in dys]
            colocate = self.colocate and self.build is self.graph
            colocated = self.build.colocate_with(op) if colocate else contextlib.nullcontext()
            with self.build.name_scope(name + "_grad"), colocated:
                self._apply_rule(op, rule, dys)

    def _apply_rule(self, op: Operation, rule: Any, dys: list[Tensor | None]) -> None:
        # a rule sees a gradient for every float output: zeros where none flowed (Unpack, Split)
        outputs = op.outputs
        dys = [
            fill(shape_tensor(t), constant(0, dtype=t.dtype)) if d is None and _trainable(t) else d
            for d, t in zip(dys, outputs)
        ]
        inputs = op.inputs
        in_grads = list(rule(op, *dys))
        if len(in_grads) != len(inputs):
            raise ValueError(
                f"The gradient rule of {op.type} returned {len(in_grads)} gradients for "
                f"'{op.name}', which has {len(inputs)} inputs"
            )
        wanted = []
        for i, (x, g) in enumerate(zip(inputs, in_grads)):
            if g is None or not _trainable(x) or x.op.name not in self.between:
                continue
            if not isinstance(g, IndexedSlices):
                g = convert_to_tensor(g)
            if g.dtype != x.dtype:
                raise TypeError(
                    f"The gradient rule of {op.type} gave input {i} of '{op.name}' a gradient "
                    f"of dtype {g.dtype.name}; the input has dtype {x.dtype.name}"
                )
            if not isinstance(g, IndexedSlices) and not _shapes_match(op, g, x):
                g = sum_to_shape(g, x)
            wanted.append((x, g))
        if self.gate and len(wanted) > 1:
            with (
                self.build.name_scope("tuple"),
                self.build.control_dependencies([g.op for _, g in wanted]),
            ):
                wanted = [(x, _gated(g)) for x, g in wanted]
        for x, g in wanted:
            self.grads.setdefault((x.op.name, x.value_index), []).append(g)


# ops whose rule hands an IndexedSlices gradient on unchanged (a variable's read)
_SLICES_PASS_THROUGH = frozenset({"Identity"})


def _gated(g: Tensor | IndexedSlices) -> Tensor | IndexedSlices:
    if isinstance(g, IndexedSlices):
        return IndexedSlices(identity(g.values), identity(g.indices), g.dense_shape)
    return identity(g)


def _as_int64(indices: Tensor, parts: list) -> Tensor:
    """Indices in one dtype for concatenation: int64 when the parts' dtypes differ."""
    if all(p.indices.dtype == indices.dtype for p in parts):
        return indices
    return cast(indices, _dt.int64)


def _ops_between(graph: Graph, y_ops: list[str], x_ops: list[str]) -> set[str]:
    """Ops reachable from an x op and reaching a y op, by data edges (x and y ops included)."""
    reached = set(x_ops)
    stack = list(x_ops)
    while stack:
        for consumer, _ in graph.consumers(stack.pop()):
            if consumer not in reached:
                reached.add(consumer)
                stack.append(consumer)
    between = {y for y in y_ops if y in reached}
    stack = list(between)
    while stack:
        for src, _ in graph.input_edges(stack.pop()):
            if src in reached and src not in between:
                between.add(src)
                stack.append(src)
    return between


# -- where broadcasting must be undone -----------------------------------------------------------
def _compatible(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(p is None or q is None or p == q for p, q in zip(a, b))


def _shapes_match(op: Operation, g: Tensor, x: Tensor) -> bool:
    """Whether g has x's shape whatever is fed: the same static shape, and every unknown dim
    pinned. An op broadcasting x along dim k would make the output's dim k the other input's
    if that one is known (the shapes would then differ statically) or x's if it is 1; only
    another input unknown at k leaves the question to run time."""
    g_shape, x_shape = g._shape_tuple, x._shape_tuple
    if g_shape is None or x_shape is None or tuple(g_shape) != tuple(x_shape):
        return False
    rank = len(g_shape)
    for k, d in enumerate(g_shape):
        if d is not None:
            continue
        for other in op.inputs:
            shape = other._shape_tuple
            if other is x:  # x itself (x * x) has x's shape: no broadcast between them
                continue
            if shape is None:
                return False
            pos = k - (rank - len(shape))
            if 0 <= pos < len(shape) and shape[pos] is None:
                return False
    return True
