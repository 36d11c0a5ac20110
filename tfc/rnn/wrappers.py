"""Cells made of cells: MultiRNNCell (stacked layers), DropoutWrapper, ResidualWrapper and
DeviceWrapper, as TF1's rnn_cell has them.

MultiRNNCell is a layer of its own (`multi_rnn_cell/cell_0/basic_lstm_cell/kernel`); the
wrappers open no scope, so a wrapped cell's weights keep the names it has unwrapped.
"""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Callable
from typing import Any

import tfc.ops.array as _array
from tfc.ir.graph import Tensor, device, name_scope
from tfc.ops import nest
from tfc.ops.constant import convert_to_tensor
from tfc.ops.math import divide, floor
from tfc.ops.nn import dropout
from tfc.ops.random import random_uniform
from tfc.ops.registry import constant_value
from tfc.ops.tensor_array import TensorArray
from tfc.rnn.cell import LSTMStateTuple, RNNCell
from tfc.variables import variable_scope

__all__ = ["MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]


class MultiRNNCell(RNNCell):
    """Cells stacked: cell k reads cell k-1's output, under the scope `cell_k`. The state is
    the tuple of the cells' states (or their concatenation: state_is_tuple=False)."""

    def __init__(self, cells: Any, state_is_tuple: bool = True) -> None:
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not nest.is_nested(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        if len({id(c) for c in cells}) < len(cells):
            raise ValueError(
                "At least two cells provided to MultiRNNCell are the same object and will "
                "share weights."
            )
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(nest.is_nested(c.state_size) for c in self._cells):
            raise ValueError(
                "Some cells return tuples of states, but the flag state_is_tuple is not set. "
                f"State sizes are: {[c.state_size for c in self._cells]}"
            )

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        return [w for cell in self._cells for w in cell.trainable_weights]

    @property
    def non_trainable_weights(self) -> list:
        found = [w for cell in self._cells for w in cell.non_trainable_weights]
        if not self.trainable:
            found = [w for cell in self._cells for w in cell.trainable_weights] + found
        return found

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        position = 0
        current = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not nest.is_nested(state):
                        raise ValueError(
                            f"Expected state to be a tuple of length {len(self.state_size)}, "
                            f"but received: {state}"
                        )
                    cell_state = state[i]
                else:
                    size = cell.state_size
                    cell_state = _array.slice(state, [0, position], [-1, size])
                    position += size
                current, new_state = cell(current, cell_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return current, tuple(new_states)
        return current, _array.concat(new_states, 1)


class _Wrapper(RNNCell):
    """A cell around another: no scope of its own, sizes and zero state of the inner cell."""

    def __init__(self, cell: RNNCell) -> None:
        super().__init__()
        if not isinstance(cell, RNNCell):
            raise TypeError(f"The parameter cell is not a RNNCell: {cell!r}")
        self._cell = cell

    @property
    def wrapped_cell(self) -> RNNCell:
        return self._cell

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"):
            return self._cell.zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        return self._cell.trainable_weights

    @property
    def non_trainable_weights(self) -> list:
        return self._cell.non_trainable_weights

    def __call__(self, inputs: Any, state: Any, scope: Any = None, **kwargs: Any) -> Any:
        self.built = True
        return self.call(inputs, state, scope=scope)

    def call(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        raise NotImplementedError


def default_dropout_state_filter(substate: Any) -> Any:
    """TF1's default: an LSTM's c is never dropped, its h is; TensorArrays are not."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return not isinstance(substate, TensorArray)


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and new state (TF1's DropoutWrapper). Each keep
    probability is a float or a scalar tensor; 1.0 means no dropout. With
    variational_recurrent=True one mask per run (shape [1, size], Gal & Ghahramani) is drawn
    when the wrapper is made and used at every step. Seeds are derived from `seed` as TF1 does."""

    def __init__(
        self,
        cell: RNNCell,
        input_keep_prob: Any = 1.0,
        output_keep_prob: Any = 1.0,
        state_keep_prob: Any = 1.0,
        variational_recurrent: bool = False,
        input_size: Any = None,
        dtype: Any = None,
        seed: int | None = None,
        dropout_state_filter_visitor: Callable | None = None,
    ) -> None:
        super().__init__(cell)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError(
                "dropout_state_filter_visitor must be callable. Received: "
                f"{dropout_state_filter_visitor}"
            )
        self._state_filter = dropout_state_filter_visitor or default_dropout_state_filter
        with name_scope("DropoutWrapperInit"):
            for prob, attr in (
                (input_keep_prob, "input_keep_prob"),
                (state_keep_prob, "state_keep_prob"),
                (output_keep_prob, "output_keep_prob"),
            ):
                tensor = convert_to_tensor(prob)
                known = constant_value(tensor.graph, (tensor.op.name, tensor.value_index))
                if known is not None:
                    if not 0 <= float(known) <= 1:
                        raise ValueError(f"Parameter {attr} must be between 0 and 1: {known}")
                    setattr(self, "_" + attr, float(known))
                else:
                    setattr(self, "_" + attr, tensor)
        self._variational = variational_recurrent
        self._seed = seed
        self._input_noise = self._state_noise = self._output_noise = None
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")

            def noise(prefix: str, sizes: Any) -> Any:
                flat = [
                    random_uniform([1, *_size_list(s)], seed=self._gen_seed(prefix, i), dtype=dtype)
                    for i, s in enumerate(nest.flatten(sizes))
                ]
                return nest.pack_sequence_as(sizes, flat)

            if _should_dropout(self._input_keep_prob):
                if input_size is None:
                    raise ValueError(
                        "When variational_recurrent=True and input_keep_prob < 1.0 or is "
                        "unknown, input_size must be provided"
                    )
                self._input_noise = noise("input", input_size)
            self._state_noise = noise("state", cell.state_size)
            self._output_noise = noise("output", cell.output_size)

    def _gen_seed(self, prefix: str, index: int) -> int | None:
        """TF1's per-tensor seed: the first 8 hex digits of md5(str(seed) + prefix_index)."""
        if self._seed is None:
            return None
        salt = f"{self._seed}{prefix}_{index}".encode()
        return int(hashlib.md5(salt).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _dropout(
        self, values: Any, prefix: str, noise: Any, keep: Any, mask: list | None = None
    ) -> Any:
        flat = nest.flatten(values)
        wanted = [True] * len(flat) if mask is None else mask
        noises = nest.flatten(noise) if self._variational else [None] * len(flat)
        out = []
        for i, (v, want, n) in enumerate(zip(flat, wanted, noises)):
            if not want:
                out.append(v)
            elif self._variational:
                binary = floor(keep + n)
                kept = divide(v, keep) * binary
                kept.set_shape(v.shape)
                out.append(kept)
            else:
                out.append(dropout(v, keep_prob=keep, seed=self._gen_seed(prefix, i)))
        return nest.pack_sequence_as(values, out)

    def call(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        if _should_dropout(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_noise, self._input_keep_prob)
        output, new_state = self._cell(inputs, state, scope=scope)
        if _should_dropout(self._state_keep_prob):
            mask = dropout_mask(self._state_filter, new_state)
            new_state = self._dropout(
                new_state, "state", self._state_noise, self._state_keep_prob, mask
            )
        if _should_dropout(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_noise, self._output_keep_prob)
        return output, new_state


def dropout_mask(visitor: Callable, value: Any) -> list[bool]:
    """Per leaf of `value`, whether the state filter lets it be dropped: TF's
    get_traverse_shallow_structure. The visitor sees a structure before its parts; False stops
    (nothing inside is dropped), True goes on into each part, a structure of bools answers
    part by part."""
    answer = visitor(value)
    if not nest.is_nested(value):
        if not isinstance(answer, bool):
            raise TypeError(f"The dropout state filter returned {answer!r} for a leaf")
        return [answer]
    parts = [value[k] for k in sorted(value)] if isinstance(value, dict) else list(value)
    if isinstance(answer, bool):
        if not answer:
            return [False] * len(nest.flatten(value))
        return [m for part in parts for m in dropout_mask(visitor, part)]
    answers = [answer[k] for k in sorted(answer)] if isinstance(answer, dict) else list(answer)
    if len(answers) != len(parts):
        raise ValueError(f"The dropout state filter returned {answer!r} for {value!r}")
    out = []
    for a, part in zip(answers, parts):
        if not isinstance(a, bool):
            raise TypeError(f"The dropout state filter returned {a!r}: expected a bool")
        out += dropout_mask(visitor, part) if a else [False] * len(nest.flatten(part))
    return out


def _should_dropout(keep: Any) -> bool:
    return not isinstance(keep, float) or keep < 1


def _size_list(size: Any) -> list[int]:
    if isinstance(size, numbers.Integral):
        return [int(size)]
    return [int(d) for d in size]


class ResidualWrapper(_Wrapper):
    """The wrapped cell's output plus its input (or `residual_fn(inputs, outputs)`)."""

    def __init__(self, cell: RNNCell, residual_fn: Callable | None = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn

    def call(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        outputs, new_state = self._cell(inputs, state, scope=scope)

        def add(i: Tensor, o: Tensor) -> Tensor:
            i, o = convert_to_tensor(i), convert_to_tensor(o)
            i.shape.assert_is_compatible_with(o.shape)
            return i + o

        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state
        nest.assert_same_structure(inputs, outputs)
        return nest.map_structure(add, inputs, outputs), new_state


class DeviceWrapper(_Wrapper):
    """The wrapped cell's ops on `device`."""

    def __init__(self, cell: RNNCell, device: str) -> None:
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"), device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def call(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        with device(self._device):
            return self._cell(inputs, state, scope=scope)
