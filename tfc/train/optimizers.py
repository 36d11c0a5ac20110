"""TF1's optimizers: gradient descent, momentum (Nesterov), Adagrad, RMSProp, Adam."""

from __future__ import annotations

from typing import Any

import tfc.ops.training_ops as training_ops
from tfc.ir.graph import (
    Operation,
    Tensor,
    colocate_with,
    control_dependencies,
    get_default_graph,
)
from tfc.ops.control import group
from tfc.train.optimizer import Optimizer, cast_to
from tfc.variables import Variable

__all__ = [
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "AdagradOptimizer",
    "RMSPropOptimizer",
    "AdamOptimizer",
]


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(
        self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        lr = cast_to(self._learning_rate_tensor, var)
        return training_ops.apply_gradient_descent(var, lr, grad, use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (Nesterov: lr * (grad + momentum *
    accum)). The slot is "momentum"."""

    def __init__(
        self,
        learning_rate: Any,
        momentum: Any,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return training_ops.apply_momentum(
            var,
            self.get_slot(var, "momentum"),
            cast_to(self._learning_rate_tensor, var),
            grad,
            cast_to(self._momentum_tensor, var),
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        )


class AdagradOptimizer(Optimizer):
    """accum += grad^2; var -= lr * grad / sqrt(accum). The slot is "accumulator"."""

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return training_ops.apply_adagrad(
            var,
            self.get_slot(var, "accumulator"),
            cast_to(self._learning_rate_tensor, var),
            grad,
            use_locking=self._use_locking,
        )


class RMSPropOptimizer(Optimizer):
    """ms = decay * ms + (1 - decay) * grad^2; mom = momentum * mom + lr * grad / sqrt(ms +
    epsilon); var -= mom. Centered: ms - mg^2 replaces ms, mg the moving mean of grad.
    Slots: "rms" (starts at 1), "momentum", and "mg" when centered."""

    def __init__(
        self,
        learning_rate: Any,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: Any = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._constant_slot(v, 1.0, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._decay_tensor = self._hyper(self._decay, "decay")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")
        self._epsilon_tensor = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        hyper = [
            cast_to(t, var)
            for t in (
                self._learning_rate_tensor,
                self._decay_tensor,
                self._momentum_tensor,
                self._epsilon_tensor,
            )
        ]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            mg = self.get_slot(var, "mg")
            return training_ops.apply_centered_rms_prop(
                var, mg, rms, mom, *hyper, grad, use_locking=self._use_locking
            )
        return training_ops.apply_rms_prop(
            var, rms, mom, *hyper, grad, use_locking=self._use_locking
        )


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba): lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m, v moving averages
    of grad and grad^2; var -= lr_t * m / (sqrt(v) + epsilon). Slots "m", "v"; the powers
    beta1^t, beta2^t are the optimizer's variables "beta1_power", "beta2_power", updated after
    the variables."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        epsilon: Any = 1e-8,
        use_locking: bool = False,
        name: str = "Adam",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self) -> tuple[Variable, Variable]:
        graph = get_default_graph()
        return (
            self._get_non_slot_variable("beta1_power", graph),
            self._get_non_slot_variable("beta2_power", graph),
        )

    def _create_slots(self, var_list: list[Variable]) -> None:
        # the powers live next to the first variable by name, as in TF1
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        beta1_power, beta2_power = self._get_beta_accumulators()
        return training_ops.apply_adam(
            var,
            self.get_slot(var, "m"),
            self.get_slot(var, "v"),
            cast_to(beta1_power, var),
            cast_to(beta2_power, var),
            cast_to(self._lr_t, var),
            cast_to(self._beta1_t, var),
            cast_to(self._beta2_t, var),
            cast_to(self._epsilon_t, var),
            grad,
            use_locking=self._use_locking,
        )

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        with control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with colocate_with(beta1_power.op):
                update_beta1 = beta1_power.assign(beta1_power * self._beta1_t)
                update_beta2 = beta2_power.assign(beta2_power * self._beta2_t)
        return group(*update_ops, update_beta1, update_beta2, name=name_scope)
