"""TF1's optimizers: gradient descent, momentum (Nesterov), Adagrad, RMSProp, Adam, Adadelta,
FTRL, the proximal ones and Adagrad dual averaging."""

from __future__ import annotations

from typing import Any

import tfc.ops.training_ops as training_ops
import tfc.ops.training_ops_sparse as sparse_ops
from tfc.ir import dtypes as _dt
from tfc.ir.graph import (
    Operation,
    Tensor,
    colocate_with,
    control_dependencies,
    get_default_graph,
)
from tfc.ops.argminmax import argmax
from tfc.ops.array_fill import ones_like
from tfc.ops.array_index import unsorted_segment_sum
from tfc.ops.array_shape import expand_dims, identity, size
from tfc.ops.control import group
from tfc.ops.indexed_slices import IndexedSlices
from tfc.ops.logic import equal, greater_equal, where
from tfc.ops.math import cast, maximum, sqrt
from tfc.ops.sequences import range as sequence_range
from tfc.ops.state import assign, assign_sub
from tfc.ops.state_scatter import scatter_add, scatter_sub
from tfc.train.optimizer import Optimizer, cast_to
from tfc.variables import Variable

__all__ = [
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "AdagradOptimizer",
    "RMSPropOptimizer",
    "AdamOptimizer",
    "AdadeltaOptimizer",
    "FtrlOptimizer",
    "ProximalGradientDescentOptimizer",
    "ProximalAdagradOptimizer",
    "AdagradDAOptimizer",
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

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Tensor:
        """TF1's: var.scatter_sub(rows * lr), repeated indices adding up."""
        indices, values = kept_rows(grad)
        lr = cast_to(self._learning_rate_tensor, var)
        return scatter_sub(var, indices, values * lr, use_locking=self._use_locking)


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

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return sparse_ops.sparse_apply_momentum(
            var, self.get_slot(var, "momentum"), cast_to(self._learning_rate_tensor, var),
            grad.values, grad.indices, cast_to(self._momentum_tensor, var),
            use_locking=self._use_locking, use_nesterov=self._use_nesterov,
        )  # fmt: skip


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

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return sparse_ops.sparse_apply_adagrad(
            var, self.get_slot(var, "accumulator"), cast_to(self._learning_rate_tensor, var),
            grad.values, grad.indices, use_locking=self._use_locking,
        )  # fmt: skip


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

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        hyper = [
            cast_to(t, var)
            for t in (self._learning_rate_tensor, self._decay_tensor, self._momentum_tensor,
                      self._epsilon_tensor)
        ]  # fmt: skip
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        rows = (grad.values, grad.indices)
        if self._centered:
            return sparse_ops.sparse_apply_centered_rms_prop(
                var, self.get_slot(var, "mg"), rms, mom, *hyper, *rows,
                use_locking=self._use_locking,
            )  # fmt: skip
        return sparse_ops.sparse_apply_rms_prop(
            var, rms, mom, *hyper, *rows, use_locking=self._use_locking
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

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        """TF1's sparse Adam: m and v decay whole, the rows' gradients are added where they
        belong, and the whole variable takes the step (the same values as the dense update;
        the gradient itself is never made dense)."""
        beta1_power, beta2_power = self._get_beta_accumulators()
        beta1_power, beta2_power = cast_to(beta1_power, var), cast_to(beta2_power, var)
        lr_t, beta1_t, beta2_t, epsilon_t = (
            cast_to(t, var) for t in (self._lr_t, self._beta1_t, self._beta2_t, self._epsilon_t)
        )
        lr = lr_t * sqrt(1 - beta2_power) / (1 - beta1_power)
        indices, values = kept_rows(summed_rows(grad))
        m = self.get_slot(var, "m")
        m_t = assign(m, m.value() * beta1_t, use_locking=self._use_locking)
        with control_dependencies([m_t]):
            m_t = scatter_add(m, indices, values * (1 - beta1_t), use_locking=self._use_locking)
        v = self.get_slot(var, "v")
        v_t = assign(v, v.value() * beta2_t, use_locking=self._use_locking)
        with control_dependencies([v_t]):
            v_t = scatter_add(
                v, indices, values * values * (1 - beta2_t), use_locking=self._use_locking
            )
        var_update = assign_sub(var, lr * m_t / (sqrt(v_t) + epsilon_t),
                                use_locking=self._use_locking)  # fmt: skip
        return group(var_update, m_t, v_t)

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        with control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with colocate_with(beta1_power.op):
                update_beta1 = beta1_power.assign(beta1_power * self._beta1_t)
                update_beta2 = beta2_power.assign(beta2_power * self._beta2_t)
        return group(*update_ops, update_beta1, update_beta2, name=name_scope)


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012): accum = rho * accum + (1 - rho) * grad^2; update =
    sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad; var -= lr * update;
    accum_update = rho * accum_update + (1 - rho) * update^2. Slots "accum", "accum_update"."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: Any = 0.95,
        epsilon: Any = 1e-8,
        use_locking: bool = False,
        name: str = "Adadelta",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "lr")
        self._rho_t = self._hyper(self._rho, "rho")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return training_ops.apply_adadelta(
            var,
            self.get_slot(var, "accum"),
            self.get_slot(var, "accum_update"),
            cast_to(self._lr_t, var),
            cast_to(self._rho_t, var),
            cast_to(self._epsilon_t, var),
            grad,
            use_locking=self._use_locking,
        )

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return sparse_ops.sparse_apply_adadelta(
            var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
            cast_to(self._lr_t, var), cast_to(self._rho_t, var), cast_to(self._epsilon_t, var),
            grad.values, grad.indices, use_locking=self._use_locking,
        )  # fmt: skip


def _check_non_negative(**values: float) -> None:
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"{name} {value:f} needs to be positive or zero")


class FtrlOptimizer(Optimizer):
    """FTRL-proximal (McMahan et al., 2013), the default of TF1's linear estimators.

    Per element: new_accum = accum + grad^2; linear += grad - (new_accum^-p - accum^-p) / lr *
    var (p = learning_rate_power); var = (l1 * sign(linear) - linear) / (new_accum^-p / lr +
    2 * l2) where |linear| > l1, else 0. With l2_shrinkage_regularization_strength > 0,
    `linear` takes grad + 2 * l2_shrinkage * var (ApplyFtrlV2). `beta` adds beta / (2 * lr)
    to l2. Slots "accum" (initial_accumulator_value) and "linear" (zeros), their variables
    named by accum_name and linear_name (default: the optimizer's name).
    """

    def __init__(
        self,
        learning_rate: Any,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "Ftrl",
        accum_name: str | None = None,
        linear_name: str | None = None,
        l2_shrinkage_regularization_strength: float = 0.0,
        beta: float | None = None,
    ) -> None:
        super().__init__(use_locking, name)
        if initial_accumulator_value < 0.0:
            raise ValueError(
                f"initial_accumulator_value {initial_accumulator_value:f} needs to be positive "
                "or zero"
            )
        if learning_rate_power > 0.0:
            raise ValueError(
                f"learning_rate_power {learning_rate_power:f} needs to be negative or zero"
            )
        _check_non_negative(
            l1_regularization_strength=l1_regularization_strength,
            l2_regularization_strength=l2_regularization_strength,
            l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength,
        )
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._constant_slot(
                v, self._initial_accumulator_value, "accum", self._accum_name or self._name
            )
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._l1_tensor = self._hyper(self._l1, "l1_regularization_strength")
        if self._beta:
            # beta / (2 lr) joins the stabilizing l2, as TF1 computes it (in float32)
            lr = maximum(self._learning_rate_tensor, 1e-36)
            self._adjusted_l2_tensor = self._l2 + self._beta / (2.0 * lr)
        else:
            self._adjusted_l2_tensor = self._hyper(self._l2, "adjusted_l2_regularization_strength")
        self._l2_shrinkage_tensor = self._hyper(
            self._l2_shrinkage, "l2_shrinkage_regularization_strength"
        )
        self._learning_rate_power_tensor = self._hyper(
            self._learning_rate_power, "learning_rate_power"
        )

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        lr, l1, l2, power = (
            cast_to(t, var)
            for t in (
                self._learning_rate_tensor,
                self._l1_tensor,
                self._adjusted_l2_tensor,
                self._learning_rate_power_tensor,
            )
        )
        if self._l2_shrinkage <= 0.0:
            return training_ops.apply_ftrl(
                var, accum, linear, grad, lr, l1, l2, power, use_locking=self._use_locking
            )
        shrinkage = cast_to(self._l2_shrinkage_tensor, var)
        return training_ops.apply_ftrl_v2(
            var, accum, linear, grad, lr, l1, l2, shrinkage, power, use_locking=self._use_locking
        )

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        lr, l1, l2, power = (
            cast_to(t, var)
            for t in (self._learning_rate_tensor, self._l1_tensor, self._adjusted_l2_tensor,
                      self._learning_rate_power_tensor)
        )  # fmt: skip
        rows = (grad.values, grad.indices)
        if self._l2_shrinkage <= 0.0:
            return sparse_ops.sparse_apply_ftrl(
                var, accum, linear, *rows, lr, l1, l2, power, use_locking=self._use_locking
            )
        shrinkage = cast_to(self._l2_shrinkage_tensor, var)
        return sparse_ops.sparse_apply_ftrl_v2(
            var, accum, linear, *rows, lr, l1, l2, shrinkage, power,
            use_locking=self._use_locking,
        )  # fmt: skip


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent with l1 and l2 penalties applied by their proximal operator (FOBOS):
    prox = var - lr * grad; var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)."""

    def __init__(
        self,
        learning_rate: Any,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "ProximalGradientDescent",
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._l1_tensor = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_tensor = self._hyper(self._l2, "l2_regularization_strength")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return training_ops.apply_proximal_gradient_descent(
            var,
            cast_to(self._learning_rate_tensor, var),
            cast_to(self._l1_tensor, var),
            cast_to(self._l2_tensor, var),
            grad,
            use_locking=self._use_locking,
        )

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return sparse_ops.sparse_apply_proximal_gradient_descent(
            var, cast_to(self._learning_rate_tensor, var), cast_to(self._l1_tensor, var),
            cast_to(self._l2_tensor, var), grad.values, grad.indices,
            use_locking=self._use_locking,
        )  # fmt: skip


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's rate lr / sqrt(accum) (accum += grad^2) in the proximal step of
    ProximalGradientDescentOptimizer. The slot is "accumulator"."""

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "ProximalAdagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._l1_tensor = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_tensor = self._hyper(self._l2, "l2_regularization_strength")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return training_ops.apply_proximal_adagrad(
            var,
            self.get_slot(var, "accumulator"),
            cast_to(self._learning_rate_tensor, var),
            cast_to(self._l1_tensor, var),
            cast_to(self._l2_tensor, var),
            grad,
            use_locking=self._use_locking,
        )

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return sparse_ops.sparse_apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), cast_to(self._learning_rate_tensor, var),
            cast_to(self._l1_tensor, var), cast_to(self._l2_tensor, var), grad.values,
            grad.indices, use_locking=self._use_locking,
        )  # fmt: skip


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (Duchi et al., 2011), for sparse linear models: g += grad, gg +=
    grad^2, var = -lr * sign(g) * max(|g| - l1 * t, 0) / (l2 * t * lr + sqrt(gg)) with t the
    global step + 1 (read before this step's increment). Slots "gradient_accumulator" (zeros)
    and "gradient_squared_accumulator" (initial_gradient_squared_accumulator_value)."""

    def __init__(
        self,
        learning_rate: Any,
        global_step: Any,
        initial_gradient_squared_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "AdagradDA",
    ) -> None:
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(
                "initial_gradient_squared_accumulator_value must be positive: "
                f"{initial_gradient_squared_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._global_step = global_step
        self._initial_gg = initial_gradient_squared_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            self._constant_slot(v, self._initial_gg, "gradient_squared_accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        with colocate_with(self._learning_rate_tensor.op):
            # the step this update is for: the global step before its increment, plus one
            self._global_step_on_worker = identity(self._global_step) + 1
        if self._global_step_on_worker.dtype != _dt.int64:
            self._global_step_on_worker = cast(self._global_step_on_worker, _dt.int64)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        with colocate_with(var.op):
            global_step = identity(self._global_step_on_worker)
        return training_ops.apply_adagrad_da(
            var,
            self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"),
            grad,
            cast_to(self._learning_rate_tensor, var),
            cast(self._l1, var.dtype),
            cast(self._l2, var.dtype),
            global_step,
            use_locking=self._use_locking,
        )

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        with colocate_with(var.op):
            global_step = identity(self._global_step_on_worker)
        return sparse_ops.sparse_apply_adagrad_da(
            var, self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"), grad.values, grad.indices,
            cast_to(self._learning_rate_tensor, var), cast(self._l1, var.dtype),
            cast(self._l2, var.dtype), global_step, use_locking=self._use_locking,
        )  # fmt: skip


def summed_rows(grad: IndexedSlices) -> IndexedSlices:
    """The rows of each index summed into the row where it first occurs, the other rows
    given the index -1 (no row): TF1's _deduplicate_indexed_slices with static shapes (TF's
    unique has a shape that depends on the values). It compares every pair of indices."""
    indices = grad.indices
    same = cast(equal(expand_dims(indices, 1), expand_dims(indices, 0)), _dt.int32)
    first = argmax(same, axis=1, output_type=indices.dtype)
    summed = unsorted_segment_sum(grad.values, first, size(indices))
    is_first = equal(first, cast(sequence_range(size(indices)), indices.dtype))
    return IndexedSlices(summed, where(is_first, indices, -ones_like(indices)), grad.dense_shape)


def kept_rows(grad: IndexedSlices) -> tuple[Tensor, Tensor]:
    """(indices, values) for the scatter ops, which refuse negative indices: a row at a
    negative index (no row, tfc/ops/indexed_slices.py) goes to row 0 with zeros."""
    indices = grad.indices
    keep = greater_equal(indices, 0)
    values = where(keep, grad.values, 0 * grad.values)
    return maximum(indices, 0), values
