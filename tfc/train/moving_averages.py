"""`tf.train.ExponentialMovingAverage`: shadow variables that track others, built from assigns."""

from __future__ import annotations

import functools
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import (
    GraphKeys,
    Operation,
    Tensor,
    colocate_with,
    get_default_graph,
    name_scope,
)
from tfc.ops.array_fill import zeros
from tfc.ops.constant import convert_to_tensor
from tfc.ops.control import group
from tfc.ops.math import add, cast, divide, minimum, multiply, pow, subtract
from tfc.ops.state import assign, assign_add, assign_sub
from tfc.variables import Variable, global_variables, trainable_variables

__all__ = ["ExponentialMovingAverage", "moving_average_variables"]


def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables an ExponentialMovingAverage.apply() averages (MOVING_AVERAGE_VARIABLES)."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def _key(value: Variable | Tensor) -> tuple:
    kind = "variable" if isinstance(value, Variable) else "tensor"
    return (kind, value.graph, value.name)


def _slot(primary_name: str, initial_value: Any, device_of: Operation) -> Variable:
    """A global, non-trainable variable named `primary_name` (made unique with _1, _2... as TF1's
    slot creator does) beside `device_of`, outside any name scope and control dependency."""
    graph = device_of.graph
    with name_scope(None), graph.control_dependencies(None), colocate_with(device_of):
        return Variable(initial_value, trainable=False, name=primary_name)


def _zeros_slot(name: str, like: Tensor, shape: list) -> Variable:
    return _slot(name, functools.partial(zeros, shape, like.dtype), like.op)


def _assign_moving_average(
    average: Variable, value: Tensor, one_minus_decay: Tensor, debias: tuple | None
) -> Tensor:
    """average -= (average - value) * (1 - decay); with `debias` (biased, local_step) the
    biased average is updated that way and average becomes biased / (1 - decay^local_step)."""
    with name_scope(None, "AssignMovingAvg") as scope:
        if debias is None:
            return assign_sub(
                average, multiply(subtract(average, value), one_minus_decay), name=scope
            )
        biased, local_step = debias
        update_biased = assign_sub(biased, multiply(subtract(biased, value), one_minus_decay))
        step = assign_add(local_step, convert_to_tensor(1, dtype=local_step.dtype))
        one = convert_to_tensor(1, dtype=average.dtype)
        bias_factor = subtract(one, pow(subtract(one, one_minus_decay), step))
        return assign(average, divide(update_biased, bias_factor), name=scope)


class ExponentialMovingAverage:
    """Maintains shadow = decay * shadow + (1 - decay) * value for variables and tensors.

    `apply(var_list)` makes one shadow variable per entry, named `<var>/<name>`
    (`w/ExponentialMovingAverage`), and returns the op that updates them all; `average(var)`
    is the shadow variable. A variable's shadow starts at the variable's initial value (TF1
    reads the variable's current value instead when it is already initialized at that time),
    a tensor's at zero, debiased when `zero_debias`. With `num_updates`, the decay used is
    min(decay, (1 + num_updates) / (10 + num_updates)).
    """

    def __init__(
        self,
        decay: Any,
        num_updates: Any = None,
        zero_debias: bool = False,
        name: str = "ExponentialMovingAverage",
    ) -> None:
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[tuple, Variable] = {}
        self._debias: dict[tuple, tuple[Variable, Variable]] = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list: Any = None) -> Operation:
        """Create the shadow variables of `var_list` (the trainable variables by default) that
        do not exist yet, and return an op that updates every one of `var_list`'s averages."""
        var_list = trainable_variables() if var_list is None else list(var_list)
        for var in var_list:
            if not isinstance(var, (Variable, Tensor)):
                raise TypeError(
                    f"ExponentialMovingAverage.apply averages variables and tensors: {var}"
                )
            if not var.dtype.is_floating:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
        for var in var_list:
            key = _key(var)
            if key in self._averages:
                continue
            slot_name = f"{var.op.name}/{self._name}"
            if isinstance(var, Variable):
                average = _slot(slot_name, var.initialized_value, var.op)
                var.graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                average = _zeros_slot(slot_name, var, var.shape.as_list())
                if self._zero_debias:
                    self._debias[key] = (
                        _zeros_slot(f"{average.op.name}/biased", var, var.shape.as_list()),
                        _zeros_slot(f"{average.op.name}/local_step", var, []),
                    )
            self._averages[key] = average
        with name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=_dt.float32, name="decay")
            if self._num_updates is not None:
                n = cast(self._num_updates, _dt.float32, name="num_updates")
                one = convert_to_tensor(1.0, dtype=_dt.float32)
                ten = convert_to_tensor(10.0, dtype=_dt.float32)
                decay = minimum(decay, divide(add(one, n), add(ten, n)))
            # 1 - decay in float32, then in each variable's dtype, as TF1 computes it
            one_minus_decay = subtract(convert_to_tensor(1.0, dtype=_dt.float32), decay)
            updates = []
            for var in var_list:
                key = _key(var)
                average = self._averages[key]
                # a variable is read after the control dependencies active here (the train op)
                value = var.read_value() if isinstance(var, Variable) else var
                rate = one_minus_decay
                if average.dtype != rate.dtype:
                    rate = cast(rate, average.dtype)
                updates.append(_assign_moving_average(average, value, rate, self._debias.get(key)))
            return group(*updates, name=scope)

    def average(self, var: Variable | Tensor) -> Variable | None:
        """The shadow variable of `var`, or None when apply() has not seen it."""
        return self._averages.get(_key(var))

    def average_name(self, var: Variable | Tensor) -> str:
        """The op name of `var`'s shadow variable: what it is, or what apply() would call it."""
        average = self._averages.get(_key(var))
        if average is not None:
            return average.op.name
        return var.graph.unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Variable]:
        """checkpoint name -> variable, for a Saver that loads the averages into the variables:
        each averaged variable reads its shadow's name; every other global variable its own."""
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + moving_average_variables()
        name_map: dict[str, Variable] = {}
        averaged = {}
        for v in moving_avg_variables:
            averaged.setdefault(v.name, v)
        for v in averaged.values():
            name_map[self.average_name(v)] = v
        for v in global_variables():
            if v.name not in averaged and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
