"""`tf.layers.BatchNormalization` and `batch_normalization`, as TF1's graph-mode layer computes
them: variables gamma, beta, moving_mean, moving_variance; moving averages updated by ops in
tf.GraphKeys.UPDATE_OPS; `training` a Python bool or a bool tensor.

Training normalizes with the batch's moments, inference with the moving ones. The update of a
moving average is TF's `assign_sub(moving, (moving - batch) * (1 - momentum))`. With a bool
tensor for `training`, TF picks the branch with a cond; tfc computes both branches and selects,
and the momentum of the update becomes 1 when not training, so the update subtracts zero and
the moving averages do not change. The fused form (the default for 4-D inputs, channels on
axis 1 or 3) moves the averages toward the unbiased batch variance, as TF's fused kernel
does; the other form toward the biased one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tfc.init_ops as init_ops
import tfc.ops.array as _array
from tfc.ir.graph import Tensor, colocate_with, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.layers.base import InputSpec, Layer, static_training
from tfc.ops.constant import constant
from tfc.ops.logic import where
from tfc.ops.normalization import batch_normalization as nn_batch_normalization
from tfc.ops.normalization import fused_batch_norm, moments
from tfc.ops.state import assign_sub

__all__ = ["BatchNormalization", "batch_normalization"]


class BatchNormalization(Layer):
    """`tf.layers.BatchNormalization`: normalize over every axis but `axis`, then scale by
    gamma and shift by beta; `call(inputs, training=False)`."""

    def __init__(
        self,
        axis: Any = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = None,
        gamma_initializer: Any = None,
        moving_mean_initializer: Any = None,
        moving_variance_initializer: Any = None,
        beta_regularizer: Callable | None = None,
        gamma_regularizer: Callable | None = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        renorm: bool = False,
        renorm_clipping: Any = None,
        renorm_momentum: float = 0.99,
        fused: bool | None = None,
        trainable: bool = True,
        virtual_batch_size: int | None = None,
        adjustment: Any = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainable=trainable, name=name, **kwargs)
        unsupported = {
            "renorm": renorm,
            "virtual_batch_size": virtual_batch_size is not None,
            "adjustment": adjustment is not None,
        }
        for option, used in unsupported.items():
            if used:
                raise NotImplementedError(
                    f"tf.layers.BatchNormalization: {option} is not supported by tfc (batch "
                    "renormalization, ghost batches and adjustments are not implemented)"
                )
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise NotImplementedError(
                    f"tf.layers.BatchNormalization normalizes over one feature axis in tfc, "
                    f"got axis={list(axis)}"
                )
            axis = axis[0]
        self.axis = int(axis)
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer or init_ops.zeros_initializer()
        self.gamma_initializer = gamma_initializer or init_ops.ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or init_ops.zeros_initializer()
        self.moving_variance_initializer = (
            moving_variance_initializer or init_ops.ones_initializer()
        )
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.fused = fused
        self.gamma: Any = None
        self.beta: Any = None
        self.moving_mean: Any = None
        self.moving_variance: Any = None

    def build(self, input_shape: Any) -> None:
        input_shape = TensorShape(input_shape)
        rank = input_shape.ndims
        if rank is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        if not -rank <= self.axis < rank:
            raise ValueError(f"Invalid axis: {self.axis}")
        self.axis %= rank
        depth = input_shape[self.axis].value
        if depth is None:
            raise ValueError(
                f"Input has undefined `axis` dimension. Received input with shape {input_shape} "
                f"and axis={self.axis}"
            )
        if self.fused is None:
            self.fused = rank == 4 and self.axis in (1, 3)
        elif self.fused and not (rank == 4 and self.axis in (1, 3)):
            raise ValueError(
                "Unsupported axis, fused batch norm only supports axis == [1] or axis == [3] "
                f"of 4-D inputs, got axis={self.axis} of a rank-{rank} input"
            )
        self.input_spec = InputSpec(ndim=rank, axes={self.axis: depth})
        if self.scale:
            self.gamma = self.add_weight(
                "gamma",
                shape=[depth],
                initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer,
                constraint=self.gamma_constraint,
            )
        if self.center:
            self.beta = self.add_weight(
                "beta",
                shape=[depth],
                initializer=self.beta_initializer,
                regularizer=self.beta_regularizer,
                constraint=self.beta_constraint,
            )
        self.moving_mean = self.add_weight(
            "moving_mean", shape=[depth], initializer=self.moving_mean_initializer, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance",
            shape=[depth],
            initializer=self.moving_variance_initializer,
            trainable=False,
        )
        self.built = True

    # -- the two computations ---------------------------------------------------------------------
    def _gamma_beta(self, inputs: Tensor) -> tuple[Any, Any]:
        depth = self.moving_mean.shape[0].value
        gamma = self.gamma if self.scale else constant(1.0, dtype=inputs.dtype, shape=[depth])
        beta = self.beta if self.center else constant(0.0, dtype=inputs.dtype, shape=[depth])
        return gamma, beta

    def _fused(self, inputs: Tensor, training: bool) -> tuple[Tensor, Tensor, Tensor]:
        gamma, beta = self._gamma_beta(inputs)
        data_format = "NHWC" if self.axis == 3 else "NCHW"
        if training:
            return fused_batch_norm(
                inputs, gamma, beta, epsilon=self.epsilon, data_format=data_format
            )
        return fused_batch_norm(
            inputs,
            gamma,
            beta,
            mean=self.moving_mean,
            variance=self.moving_variance,
            epsilon=self.epsilon,
            data_format=data_format,
            is_training=False,
        )

    def _normalize(self, inputs: Tensor, mean: Tensor, variance: Tensor) -> Tensor:
        """batch_normalization with per-feature statistics broadcast along `axis`."""
        rank = inputs.shape.ndims
        shape = [1] * rank
        shape[self.axis] = -1

        def broadcast(t: Any) -> Any:
            if t is None or self.axis == rank - 1:
                return t
            return _array.reshape(t, shape)

        return nn_batch_normalization(
            inputs,
            broadcast(mean),
            broadcast(variance),
            broadcast(self.beta if self.center else None),
            broadcast(self.gamma if self.scale else None),
            self.epsilon,
        )

    def _moving_update(self, variable: Any, value: Tensor, momentum: Any) -> Tensor:
        """TF's _assign_moving_average: variable -= (variable - value) * (1 - momentum)."""
        with name_scope(None, "AssignMovingAvg", [variable, value, momentum]) as scope:
            with colocate_with(variable):
                decay = 1.0 - momentum
                if not isinstance(decay, Tensor):
                    decay = constant(decay, dtype=variable.dtype, name="decay")
                delta = (variable.value() - value) * decay
                return assign_sub(variable, delta, name=scope)

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        training = static_training(training)
        if training is False:
            if self.fused:
                return self._fused(inputs, False)[0]
            return self._normalize(inputs, self.moving_mean, self.moving_variance)
        outputs = None
        if self.fused:
            outputs, batch_mean, batch_variance = self._fused(inputs, True)
        else:
            reduction = [a for a in range(inputs.shape.ndims) if a != self.axis]
            batch_mean, batch_variance = moments(inputs, reduction)
        momentum: Any
        if training is True:
            mean, variance = batch_mean, batch_variance
            # TF's fused layer takes the momentum as a tensor (its decay is 1 - momentum in the
            # variable's dtype), the other one as a Python number
            momentum = constant(self.momentum, dtype=inputs.dtype) if self.fused else self.momentum
        else:
            # not training: the moving statistics, and a momentum of 1 (the update adds zero)
            mean = where(training, batch_mean, self.moving_mean.value())
            variance = where(training, batch_variance, self.moving_variance.value())
            momentum = where(
                training,
                constant(self.momentum, dtype=inputs.dtype),
                constant(1.0, dtype=inputs.dtype),
            )
        if not self.fused:
            outputs = self._normalize(inputs, mean, variance)
        elif training is not True:
            outputs = where(training, outputs, self._fused(inputs, False)[0])
        self.add_update(self._moving_update(self.moving_mean, mean, momentum))
        self.add_update(self._moving_update(self.moving_variance, variance, momentum))
        return outputs

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)


def batch_normalization(
    inputs: Any,
    axis: Any = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-3,
    center: bool = True,
    scale: bool = True,
    beta_initializer: Any = None,
    gamma_initializer: Any = None,
    moving_mean_initializer: Any = None,
    moving_variance_initializer: Any = None,
    beta_regularizer: Callable | None = None,
    gamma_regularizer: Callable | None = None,
    beta_constraint: Any = None,
    gamma_constraint: Any = None,
    training: Any = False,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
    renorm: bool = False,
    renorm_clipping: Any = None,
    renorm_momentum: float = 0.99,
    fused: bool | None = None,
    virtual_batch_size: int | None = None,
    adjustment: Any = None,
) -> Tensor:
    """`tf.layers.batch_normalization`: a BatchNormalization layer applied once. Run the ops of
    tf.GraphKeys.UPDATE_OPS with the training step (tf.control_dependencies) to update the
    moving mean and variance."""
    layer = BatchNormalization(
        axis=axis,
        momentum=momentum,
        epsilon=epsilon,
        center=center,
        scale=scale,
        beta_initializer=beta_initializer,
        gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer,
        gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint,
        gamma_constraint=gamma_constraint,
        renorm=renorm,
        renorm_clipping=renorm_clipping,
        renorm_momentum=renorm_momentum,
        fused=fused,
        trainable=trainable,
        virtual_batch_size=virtual_batch_size,
        adjustment=adjustment,
        name=name,
        _scope=name,
        _reuse=reuse,
    )
    return layer.apply(inputs, training=training)
