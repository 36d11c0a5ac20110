"""`tf.train.Optimizer`: TF1's base class (compute_gradients, apply_gradients, minimize, slots)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence, ValuesView
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import (
    GraphKeys,
    Operation,
    Tensor,
    colocate_with,
    control_dependencies,
    get_default_graph,
    name_scope,
)
from tfc.ops.array_fill import fill, zeros
from tfc.ops.array_shape import identity
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.control import group
from tfc.ops.indexed_slices import IndexedSlices
from tfc.ops.math import cast
from tfc.ops.state import assign_add
from tfc.variables import Variable, trainable_variables

__all__ = ["Optimizer"]

_VALID_DTYPES = (_dt.float32, _dt.float64)

# train op -> the loss minimize() made it for: what a cluster worker's session reports per step
_TRAIN_LOSSES: weakref.WeakKeyDictionary[Operation, Tensor] = weakref.WeakKeyDictionary()


def train_loss(train_op: Operation) -> Tensor | None:
    """The loss `train_op` was made to minimize by Optimizer.minimize, else None."""
    return _TRAIN_LOSSES.get(train_op)


def record_train_loss(train_op: Operation, loss: Tensor) -> None:
    """Note that `train_op` minimizes `loss` (minimize does; so do wrappers of apply_gradients
    that know their loss, such as SyncReplicasOptimizer)."""
    _TRAIN_LOSSES[train_op] = loss


class Optimizer:
    """Base class of the optimizers: subclasses create slots and give one update op per variable.

    Subclasses implement `_create_slots(var_list)`, `_prepare()` (hyper-parameters as
    tensors), `_apply_dense(grad, var)`, `_apply_sparse(grad, var)` for an IndexedSlices
    gradient (rows of the variable), and optionally `_finish(update_ops, name)`.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[tuple, Variable]] = {}
        self._non_slot_dict: dict[tuple, Variable] = {}

    def get_name(self) -> str:
        return self._name

    # -- the public API --------------------------------------------------------------------------
    def minimize(
        self,
        loss: Tensor,
        global_step: Any = None,
        var_list: Any = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Tensor | None = None,
    ) -> Operation:
        """compute_gradients then apply_gradients: one op that runs a training step."""
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}."
            )
        train_op = self.apply_gradients(grads_and_vars, global_step=global_step, name=name)
        if isinstance(loss, Tensor):
            record_train_loss(train_op, loss)
        return train_op

    def compute_gradients(
        self,
        loss: Tensor,
        var_list: Any = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Tensor | None = None,
    ) -> list[tuple[Tensor | None, Variable]]:
        """[(gradient of `loss` with respect to v, v)] for v in var_list (default: trainable)."""
        from tfc.autodiff.gradients import gradients

        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(
                "gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                f"Optimizer.GATE_GRAPH.  Not {gate_gradients}"
            )
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        loss = convert_to_tensor(loss)
        _assert_valid_dtypes([loss])
        if grad_loss is not None:
            _assert_valid_dtypes([convert_to_tensor(grad_loss)])
        if var_list is None:
            var_list = trainable_variables()
        else:
            var_list = list(_flatten(var_list))
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            _check_variable(v)
        grads = gradients(
            loss,
            var_list,
            grad_ys=grad_loss,
            gate_gradients=gate_gradients == self.GATE_OP,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        if gate_gradients == self.GATE_GRAPH:
            grads = _gate_together(grads)
        grads_and_vars = list(zip(grads, var_list))
        _assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Operation:
        """One op that updates every variable that has a gradient (None gradients are skipped),
        then increments `global_step` when given."""
        grads_and_vars = tuple(grads_and_vars)  # iterated more than once
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for pair in grads_and_vars:
            g, v = pair
            if g is not None and not isinstance(g, IndexedSlices):
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError):
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or None: {g}"
                    ) from None
            _check_variable(v)
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(
                f"No gradients provided for any variable: {[str(v) for _, v in converted]}."
            )
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):  # slots are initialized on their own
                self._create_slots(var_list)
            apply_updates = self._apply_updates(converted, global_step, name)
        train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    def _apply_updates(self, converted: list, global_step: Any, name: str | None) -> Operation:
        update_ops = []
        with name_scope(name, self._name) as scope:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with name_scope("update_" + var.op.name), colocate_with(var.op):
                    if isinstance(grad, IndexedSlices):
                        update = self._apply_sparse_duplicate_indices(grad, var)
                    else:
                        update = self._apply_dense(grad, var)
                    update_ops.append(_as_op(update))
            if global_step is None:
                return self._finish(update_ops, scope)
            with control_dependencies([self._finish(update_ops, "update")]):
                with colocate_with(global_step.op):
                    return assign_add(global_step, 1, name=scope).op

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot variable `name` ("m", "momentum", ...) of `var`, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The optimizer's own variables in the default graph (slots, beta powers), by name."""
        graph = get_default_graph()
        found = [v for v in self._non_slot_dict.values() if v.graph is graph]
        for slots in self._slots.values():
            found += [v for v in slots.values() if v.graph is graph]
        return sorted(found, key=lambda v: v.name)

    # -- for subclasses --------------------------------------------------------------------------
    def _create_slots(self, var_list: list[Variable]) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_dense")

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Any:
        """The update for rows of a gradient (an embedding's); indices may repeat. TF1 sums
        the rows of each index first; tfc's sparse kernels do that themselves."""
        return self._apply_sparse(grad, var)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} does not implement _apply_sparse: it cannot apply the "
            f"IndexedSlices gradient of {var.op.name} (from a gather or embedding_lookup)"
        )

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        return group(*update_ops, name=name_scope)

    def _call_if_callable(self, param: Any) -> Any:
        return param() if callable(param) else param

    def _hyper(self, value: Any, name: str) -> Tensor:
        """A hyper-parameter as a tensor (a Python number becomes a float32 constant, as TF1)."""
        return convert_to_tensor(self._call_if_callable(value), name=name)

    def _get_or_make_slot(
        self, var: Variable, make_value: Callable[[], Any], slot_name: str, op_name: str
    ) -> Variable:
        """The slot `slot_name` of `var`, made on first use as a variable named var/op_name
        (var/op_name_1... when taken) holding `make_value()`: global, not trainable."""
        named_slots = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in named_slots:
            with var.graph.as_default(), name_scope(None), colocate_with(var.op):
                named_slots[key] = Variable(
                    make_value, trainable=False, name=f"{var.op.name}/{op_name}"
                )
        return named_slots[key]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        return self._constant_slot(var, 0, slot_name, op_name)

    def _constant_slot(self, var: Variable, value: float, slot_name: str, op_name: str) -> Variable:
        """A slot of `var`'s shape and dtype with every element `value` at first."""
        shape, dtype = var.shape.as_list(), var.dtype

        def initial() -> Tensor:
            if value == 0:
                return zeros(shape, dtype)
            return fill(shape, constant(value, dtype=dtype))

        return self._get_or_make_slot(var, initial, slot_name, op_name)

    def _create_non_slot_variable(
        self, initial_value: Any, name: str, colocate_with_var: Variable
    ) -> Variable:
        """A variable of the optimizer itself (Adam's beta powers), one per graph."""
        graph = colocate_with_var.graph
        key = (name, graph)
        if key not in self._non_slot_dict:
            with graph.as_default(), colocate_with(colocate_with_var.op):
                self._non_slot_dict[key] = Variable(initial_value, name=name, trainable=False)
        return self._non_slot_dict[key]

    def _get_non_slot_variable(self, name: str, graph: Any = None) -> Variable | None:
        return self._non_slot_dict.get((name, graph or get_default_graph()))


# -- helpers ------------------------------------------------------------------------------------
def cast_to(value: Tensor, var: Variable) -> Tensor:
    """A hyper-parameter in the variable's dtype (TF1 casts each one where it is used)."""
    return cast(value, var.dtype)


def _var_key(var: Variable) -> tuple:
    return (var.graph, var.op.name)


def _as_op(x: Any) -> Operation:
    return x if isinstance(x, Operation) else x.op


def _flatten(value: Any) -> Any:
    # a dict's values() too: TF1's nest flattens mapping views, and GAN programs keep each
    # network's weights in a dict and pass var_list=weights.values()
    if isinstance(value, (list, tuple, ValuesView)):
        for item in value:
            yield from _flatten(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _flatten(item)
    else:
        yield value


def _check_variable(v: Any) -> None:
    if not isinstance(v, Variable):
        raise NotImplementedError(f"Trying to optimize unsupported type {v!r}")


def _assert_valid_dtypes(tensors: Sequence[Any]) -> None:
    for t in tensors:
        dtype = t.dtype
        if dtype not in _VALID_DTYPES:
            valid = ", ".join(repr(d) for d in _VALID_DTYPES)
            raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: [{valid}].")


def _gate_together(grads: list) -> list:
    """GATE_GRAPH: every gradient is available only once all of them are computed."""
    present = [g for g in grads if g is not None]
    if not present:
        return grads
    gate = group(*present)
    with control_dependencies([gate]):
        return [None if g is None else identity(g) for g in grads]
