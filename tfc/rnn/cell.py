"""TF1's recurrent cells (`tf.nn.rnn_cell`): the RNNCell base, BasicRNNCell, BasicLSTMCell,
LSTMCell, GRUCell and LSTMStateTuple, with TF1's formulas and variable names.

A cell is a `tf.layers.Layer`: its first call opens its variable scope (`basic_lstm_cell`,
made unique as a layer's name is, under whatever scope the RNN function opened: `rnn/`) and
builds its weights there, so `rnn/basic_lstm_cell/kernel` and `.../bias` have the names and
shapes TF1 gives them and checkpoints map one to one. Weights made while a loop body is being
built go to the outermost graph (tfc/variables.py), and every later call reuses them.
"""

from __future__ import annotations

import collections
import numbers
from collections.abc import Callable
from typing import Any

import tfc.init_ops as init_ops
import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.layers.base import Layer
from tfc.ops import nest
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.math import clip_by_value, sigmoid, tanh
from tfc.ops.nn import bias_add

__all__ = [
    "RNNCell",
    "LayerRNNCell",
    "LSTMStateTuple",
    "BasicRNNCell",
    "BasicLSTMCell",
    "LSTMCell",
    "GRUCell",
]

WEIGHTS_NAME = "kernel"
BIAS_NAME = "bias"


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: `c` the cell state, `h` the output (TF1's order)."""

    __slots__ = ()

    @property
    def dtype(self) -> Any:
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def zeros_for(batch_size: Any, size: Any, dtype: Any) -> Tensor:
    """A zero tensor of shape [batch_size, *size]: batch_size an int or a scalar tensor."""
    dims = [int(size)] if isinstance(size, numbers.Integral) else TensorShape(size).as_list()
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"a state or output size must be known when the graph is built: {size}")
    zeros = _array.zeros([batch_size, *dims], dtype)
    if isinstance(batch_size, numbers.Integral):
        zeros.set_shape([int(batch_size), *dims])
    return zeros


class RNNCell(Layer):
    """`tf.nn.rnn_cell.RNNCell`: `cell(inputs, state)` returns `(output, new_state)`.

    Subclasses say their `state_size` and `output_size` (an int, a TensorShape, or a nested
    structure of them) and implement `call(inputs, state)`."""

    def __call__(self, inputs: Any, state: Any, scope: Any = None, **kwargs: Any) -> Any:
        return super().__call__(inputs, state, scope=scope, **kwargs)

    @property
    def state_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define state_size")

    @property
    def output_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define output_size")

    def build(self, inputs_shape: Any) -> None:
        self.built = True

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """The state of zeros: a tensor [batch_size, s] per entry of `state_size`."""
        dtype = _dt.as_dtype(dtype)
        with name_scope(type(self).__name__ + "ZeroState"):
            return nest.map_structure(lambda s: zeros_for(batch_size, s, dtype), self.state_size)

    def get_initial_state(
        self, inputs: Any = None, batch_size: Any = None, dtype: Any = None
    ) -> Any:
        """zero_state, with the batch size and dtype taken from `inputs` when given."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            static = inputs.shape[0].value if inputs.shape.ndims else None
            batch_size = static if static is not None else _array.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(
                "get_initial_state needs inputs, or both batch_size and dtype: got "
                f"batch_size={batch_size}, dtype={dtype}"
            )
        return self.zero_state(batch_size, dtype)


LayerRNNCell = RNNCell


def input_depth(cell: RNNCell, inputs_shape: Any) -> int:
    """The last dimension of a cell's input, which its weights' shapes need."""
    shape = TensorShape(inputs_shape)
    depth = shape[-1].value if shape.ndims else None
    if depth is None:
        raise ValueError(
            f"Expected inputs.shape[-1] to be known, saw shape: {shape} (building "
            f"{type(cell).__name__})"
        )
    return depth


def _activation(activation: Any) -> Callable:
    if activation is None:
        return tanh
    if not callable(activation):
        raise TypeError(f"activation must be a callable, got {activation!r}")
    return activation


class BasicRNNCell(RNNCell):
    """output = new_state = activation(W [inputs, state] + b); weights `kernel`
    [input_depth + num_units, num_units] and `bias` [num_units] (zeros)."""

    def __init__(
        self,
        num_units: int,
        activation: Any = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = input_depth(self, inputs_shape)
        self._kernel = self.add_weight(
            WEIGHTS_NAME, shape=[depth + self._num_units, self._num_units]
        )
        self._bias = self.add_weight(
            BIAS_NAME, shape=[self._num_units], initializer=init_ops.zeros_initializer()
        )
        self.built = True

    def call(self, inputs: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        gate_inputs = matmul(_array.concat([inputs, state], 1), self._kernel)
        output = self._activation(bias_add(gate_inputs, self._bias))
        return output, output


class GRUCell(RNNCell):
    """Gated recurrent unit (Cho et al.): r, u = sigmoid(W_g [x, h] + b_g);
    c = activation(W_c [x, r * h] + b_c); h' = u * h + (1 - u) * c. Weights `gates/kernel`,
    `gates/bias` (ones), `candidate/kernel`, `candidate/bias` (zeros)."""

    def __init__(
        self,
        num_units: int,
        activation: Any = None,
        reuse: Any = None,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = input_depth(self, inputs_shape) + self._num_units
        n = self._num_units
        bias = self._bias_initializer
        self._gate_kernel = self.add_weight(
            f"gates/{WEIGHTS_NAME}", shape=[depth, 2 * n], initializer=self._kernel_initializer
        )
        self._gate_bias = self.add_weight(
            f"gates/{BIAS_NAME}",
            shape=[2 * n],
            initializer=bias if bias is not None else init_ops.constant_initializer(1.0),
        )
        self._candidate_kernel = self.add_weight(
            f"candidate/{WEIGHTS_NAME}", shape=[depth, n], initializer=self._kernel_initializer
        )
        self._candidate_bias = self.add_weight(
            f"candidate/{BIAS_NAME}",
            shape=[n],
            initializer=bias if bias is not None else init_ops.zeros_initializer(),
        )
        self.built = True

    def call(self, inputs: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        gate_inputs = matmul(_array.concat([inputs, state], 1), self._gate_kernel)
        value = sigmoid(bias_add(gate_inputs, self._gate_bias))
        r, u = _array.split(value, 2, axis=1)
        candidate = matmul(_array.concat([inputs, r * state], 1), self._candidate_kernel)
        c = self._activation(bias_add(candidate, self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """LSTM (Hochreiter & Schmidhuber; Zaremba et al.'s form): i, j, f, o = W [x, h] + b;
    c' = c * sigmoid(f + forget_bias) + sigmoid(i) * activation(j);
    h' = activation(c') * sigmoid(o). Weights `kernel` [input_depth + num_units,
    4 * num_units] and `bias` [4 * num_units] (zeros). The state is LSTMStateTuple(c, h), or
    [c, h] concatenated when state_is_tuple=False."""

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Any = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = input_depth(self, inputs_shape)
        n = self._num_units
        self._kernel = self.add_weight(WEIGHTS_NAME, shape=[depth + n, 4 * n])
        self._bias = self.add_weight(
            BIAS_NAME, shape=[4 * n], initializer=init_ops.zeros_initializer()
        )
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Any]:
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = _array.split(state, 2, axis=1)
        gate_inputs = bias_add(matmul(_array.concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = _array.split(gate_inputs, 4, axis=1)
        forget_bias = constant(self._forget_bias, dtype=f.dtype)
        new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * sigmoid(o)
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, _array.concat([new_c, new_h], 1)


class LSTMCell(RNNCell):
    """LSTM with optional peepholes (`w_f_diag`, `w_i_diag`, `w_o_diag`), cell clipping and a
    projection of the output (`projection/kernel` [num_units, num_proj], optionally clipped),
    as TF1's LSTMCell (Sak et al. 2014). Weights `kernel` [input_depth + h_depth,
    4 * num_units] (h_depth: num_proj or num_units) and `bias` (zeros). The state is
    LSTMStateTuple(c, m)."""

    def __init__(
        self,
        num_units: int,
        use_peepholes: bool = False,
        cell_clip: float | None = None,
        initializer: Any = None,
        num_proj: int | None = None,
        proj_clip: float | None = None,
        num_unit_shards: int | None = None,
        num_proj_shards: int | None = None,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Any = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError(
                "LSTMCell: num_unit_shards and num_proj_shards (deprecated in TF1) are not "
                "supported; use a partitioner in the variable scope"
            )
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n, p = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, p) if self._state_is_tuple else n + p

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = input_depth(self, inputs_shape)
        n = self._num_units
        h_depth = self._num_proj or n
        init = self._initializer
        self._kernel = self.add_weight(WEIGHTS_NAME, shape=[depth + h_depth, 4 * n],
                                       initializer=init)  # fmt: skip
        self._bias = self.add_weight(
            BIAS_NAME, shape=[4 * n], initializer=init_ops.zeros_initializer()
        )
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", shape=[n], initializer=init)
            self._w_i_diag = self.add_weight("w_i_diag", shape=[n], initializer=init)
            self._w_o_diag = self.add_weight("w_o_diag", shape=[n], initializer=init)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight(
                f"projection/{WEIGHTS_NAME}", shape=[n, self._num_proj], initializer=init
            )
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Any]:
        n = self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev, m_prev = _array.split(state, [n, self._num_proj or n], axis=1)
        lstm_matrix = bias_add(matmul(_array.concat([inputs, m_prev], 1), self._kernel),
                               self._bias)  # fmt: skip
        i, j, f, o = _array.split(lstm_matrix, 4, axis=1)
        if self._use_peepholes:
            c = sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev + sigmoid(
                i + self._w_i_diag * c_prev
            ) * self._activation(j)
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        if self._state_is_tuple:
            return m, LSTMStateTuple(c, m)
        return m, _array.concat([c, m], 1)
