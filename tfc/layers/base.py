"""`tf.layers.Layer` and `InputSpec`: TF1's layer base class, with TF1's scopes and collections.

A layer gets its variable scope on its first call: its `name`, or the snake case of its class
("conv2d", then "conv2d_1", ...) made unique as a `variable_scope` default name makes it. Its
variables are `get_variable`s in that scope (`conv2d/kernel`), so they are shared under reuse
exactly as TF1's are; later calls re-enter the scope with reuse=True and name their ops in the
name scope of the first call. Losses a layer adds (weight and activity regularization) join
tf.GraphKeys.REGULARIZATION_LOSSES, and the updates of each call (batch normalization's moving
averages) join tf.GraphKeys.UPDATE_OPS, as TF1's graph-mode layers do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, get_default_graph, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.array import shape as shape_of
from tfc.ops.constant import convert_to_tensor
from tfc.ops.math import cast, divide
from tfc.ops.registry import constant_value
from tfc.variables import get_variable, variable_scope

__all__ = ["InputSpec", "Layer"]

# the keyword arguments TF1's Layer accepts besides its own: the functional wrappers' private
# ones, and Keras's shape hints (a graph-mode layer learns its input shape when called)
_ALLOWED_KWARGS = {
    "_scope", "_reuse", "input_shape", "batch_input_shape", "batch_size", "input_dim",
    "autocast", "dynamic",
}  # fmt: skip


def to_snake_case(name: str) -> str:
    """A class name as TF names layers after it: Conv2D -> conv2d, MaxPooling2D ->
    max_pooling2d, BatchNormalization -> batch_normalization."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake if snake[0] != "_" else "private" + snake


class InputSpec:
    """`tf.layers.InputSpec`: what a layer requires of its inputs (dtype, rank, known dims)."""

    def __init__(
        self,
        dtype: Any = None,
        shape: Any = None,
        ndim: int | None = None,
        max_ndim: int | None = None,
        min_ndim: int | None = None,
        axes: dict[int, int] | None = None,
    ) -> None:
        self.dtype = None if dtype is None else _dt.as_dtype(dtype)
        self.shape = None if shape is None else TensorShape(shape).as_list()
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = dict(axes or {})

    def __repr__(self) -> str:
        fields = ("dtype", "shape", "ndim", "max_ndim", "min_ndim", "axes")
        shown = [f"{k}={getattr(self, k)}" for k in fields if getattr(self, k)]
        return f"InputSpec({', '.join(shown)})"

    def check(self, layer_name: str, index: int, x: Tensor) -> None:
        """Raise TF's ValueError when `x` does not meet the spec."""
        where = f"Input {index} of layer {layer_name} is incompatible with the layer"
        shape = x.shape
        rank = shape.ndims
        received = f"Full shape received: {shape.as_list() if rank is not None else None}"
        if self.ndim is not None and rank is not None and rank != self.ndim:
            raise ValueError(f"{where}: expected ndim={self.ndim}, found ndim={rank}. {received}")
        if self.max_ndim is not None and rank is not None and rank > self.max_ndim:
            raise ValueError(
                f"{where}: expected max_ndim={self.max_ndim}, found ndim={rank}. {received}"
            )
        if self.min_ndim is not None and rank is not None and rank < self.min_ndim:
            raise ValueError(
                f"{where}: expected min_ndim={self.min_ndim}, found ndim={rank}. {received}"
            )
        if self.dtype is not None and x.dtype != self.dtype:
            raise ValueError(
                f"{where}: expected dtype={self.dtype.name}, found dtype={x.dtype.name}"
            )
        if rank is None:
            return
        for axis, value in self.axes.items():
            dim = shape[axis].value
            if value is not None and dim not in (value, None):
                raise ValueError(
                    f"{where}: expected axis {axis} of input shape to have value {value} but "
                    f"received input with shape {shape.as_list()}"
                )
        if self.shape is not None:
            for want, got in zip(self.shape, shape.as_list()):
                if want is not None and got is not None and want != got:
                    raise ValueError(
                        f"{where}: expected shape={self.shape}, found shape={shape.as_list()}"
                    )


class Layer:
    """`tf.layers.Layer`: subclasses create weights in `build(input_shape)` with `add_weight`
    and compute in `call(inputs, ...)`; calling the layer builds it once and runs `call`."""

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: Any = None,
        activity_regularizer: Callable | None = None,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - _ALLOWED_KWARGS)
        if unknown:
            raise TypeError(f"Keyword argument not understood: {unknown[0]}")
        self.trainable = trainable
        self.built = False
        self._dtype = None if dtype is None else _dt.as_dtype(dtype)
        self._activity_regularizer = activity_regularizer
        self._reuse = kwargs.get("_reuse")
        self._scope_name = kwargs.get("_scope") or name
        self._base_name = to_snake_case(type(self).__name__)
        self._name = name
        self._scope: Any = None  # the variable scope, set by the first call
        self._name_scope: str | None = None  # the name scope of the first call's ops
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._losses: list[Tensor] = []
        self._updates: list = []
        self.input_spec: Any = None

    # -- what the layer holds -------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The layer's name: the one given, else its variable scope's (unique) last part."""
        if self._name is not None:
            return self._name
        if self._scope is not None:
            return self._scope.name.rsplit("/", 1)[-1]
        return self._base_name

    @property
    def dtype(self) -> _dt.DType | None:
        return self._dtype

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError(
                f"No name available for layer scope because the layer {self.name!r} has not "
                "been used yet. The scope name is determined the first time the layer instance "
                "is called."
            )
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def losses(self) -> list[Tensor]:
        return list(self._losses)

    @property
    def updates(self) -> list:
        return list(self._updates)

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(
                f"You tried to call `count_params` on {self.name}, but the layer isn't built."
            )
        return sum(v.shape.num_elements() for v in self.weights)

    # -- what build and call use ----------------------------------------------------------------
    def add_weight(
        self,
        name: str,
        shape: Any = None,
        dtype: Any = None,
        initializer: Any = None,
        regularizer: Callable | None = None,
        trainable: bool | None = None,
        constraint: Any = None,
        partitioner: Any = None,
        **kwargs: Any,
    ) -> Any:
        """A variable `name` in the layer's scope (shared under reuse), tracked as trainable or
        not; a regularizer's loss is added the first time the variable is created."""
        if constraint is not None:
            raise NotImplementedError(
                f"{self.name}: weight constraints are not supported (tfc's optimizers do not "
                f"apply them); remove the constraint of '{name}'"
            )
        trainable = True if trainable is None else trainable
        dtype = _dt.as_dtype(dtype or self._dtype or _dt.float32)
        # get_variable adds the regularizer's loss (named "<variable>/Regularizer/...") to the
        # collection when it creates the variable, not when it reuses it: the layer keeps those
        graph = get_default_graph()
        before = len(graph.get_collection(GraphKeys.REGULARIZATION_LOSSES))
        variable = get_variable(
            name,
            shape=shape,
            dtype=dtype,
            initializer=initializer,
            regularizer=regularizer,
            trainable=trainable and self.trainable,
            partitioner=partitioner,
        )
        self._losses.extend(graph.get_collection(GraphKeys.REGULARIZATION_LOSSES)[before:])
        if trainable:
            self._trainable_weights.append(variable)
        else:
            self._non_trainable_weights.append(variable)
        return variable

    add_variable = add_weight

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Losses of this layer; in graph mode they join tf.GraphKeys.REGULARIZATION_LOSSES."""
        given = losses if isinstance(losses, (list, tuple)) else [losses]
        new = [t for t in given if t is not None]
        self._losses.extend(new)
        for t in new:
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, t)

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        """Update ops to run with training (moving averages); the call that made them adds them
        to tf.GraphKeys.UPDATE_OPS."""
        for u in updates if isinstance(updates, (list, tuple)) else [updates]:
            self._updates.append(u() if callable(u) else u)

    def build(self, input_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not compute output shapes")

    # -- calling --------------------------------------------------------------------------------
    @contextmanager
    def _enter_scope(self, scope: Any) -> Iterator[None]:
        """The first call opens the layer's variable scope (which names it); later ones re-enter
        it with reuse and name their ops in the first call's name scope."""
        if self._scope is None:
            name = scope if scope is not None else self._scope_name
            if name is None and self._reuse:
                name = self._base_name  # reusing: the default name as it is, not made unique
            with variable_scope(name, default_name=self._base_name, reuse=self._reuse) as vs:
                self._scope = vs
                self._name_scope = vs.original_name_scope
                yield
            return
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False):
            with name_scope(self._name_scope):
                yield

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        scope = kwargs.pop("scope", None)
        inputs = _as_tensors(inputs)
        updates_before = len(self._updates)
        with self._enter_scope(scope):
            tensors = _flatten(inputs)
            specs = self.input_spec
            if specs is not None:
                specs = specs if isinstance(specs, (list, tuple)) else [specs]
                for k, (spec, x) in enumerate(zip(specs, tensors)):
                    if spec is not None:
                        spec.check(self.name, k, x)
            if not self.built:
                if self._dtype is None and tensors:
                    self._dtype = tensors[0].dtype
                shapes = [x.shape for x in tensors]
                self.build(shapes[0] if not isinstance(inputs, (list, tuple)) else shapes)
                self.built = True
            outputs = self.call(inputs, *args, **kwargs)
            if self._activity_regularizer is not None:
                self._add_activity_loss(outputs)
        graph = get_default_graph()
        for update in self._updates[updates_before:]:
            graph.add_to_collection(GraphKeys.UPDATE_OPS, update)
        return outputs

    apply = __call__

    def _add_activity_loss(self, outputs: Any) -> None:
        """The activity regularizer of each output, divided by its batch size (as TF does, so
        that the strength does not depend on the batch)."""
        with name_scope("ActivityRegularizer"):
            for output in _flatten(outputs):
                loss = self._activity_regularizer(output)
                if loss is None:
                    continue
                batch = cast(shape_of(output)[0], loss.dtype)
                self.add_loss(divide(loss, batch))


def _as_tensors(values: Any) -> Any:
    """NumPy arrays, Python numbers and variables among the inputs as tensors (TF converts
    whatever is not a tensor already)."""
    if isinstance(values, (list, tuple)):
        return type(values)(_as_tensors(v) for v in values)
    if isinstance(values, dict):
        return {k: _as_tensors(v) for k, v in values.items()}
    return values if isinstance(values, Tensor) else convert_to_tensor(values)


def _flatten(values: Any) -> list[Tensor]:
    if isinstance(values, (list, tuple)):
        return [t for v in values for t in _flatten(v)]
    if isinstance(values, dict):
        return [t for v in values.values() for t in _flatten(v)]
    return [values] if isinstance(values, Tensor) else []


def static_training(training: Any) -> bool | Tensor:
    """The `training` argument of a layer call as a Python bool where it is known when the graph
    is built (a bool, or a constant tensor: TF's smart_cond), else the bool tensor itself."""
    if training is None:
        return False
    if isinstance(training, (bool, np.bool_)):
        return bool(training)
    tensor = convert_to_tensor(training)
    if tensor.dtype != _dt.bool_ or tensor.shape.ndims not in (None, 0):
        raise TypeError(
            f"training must be a Python bool or a scalar bool tensor, got {tensor.dtype.name}"
            f"{tensor.shape}"
        )
    known = constant_value(tensor.graph, (tensor.op.name, tensor.value_index))
    return tensor if known is None else bool(known)


def normalize_data_format(value: str | None) -> str:
    """A layer's data_format: "channels_last" (the default) or "channels_first"."""
    value = "channels_last" if value is None else str(value).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(
            'The `data_format` argument must be one of "channels_first", "channels_last". '
            f"Received: {value}"
        )
    return value
