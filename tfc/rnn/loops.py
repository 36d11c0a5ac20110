"""Running a cell over a sequence, as TF1's rnn.py does: static_rnn (unrolled), dynamic_rnn (a
tf.while_loop over TensorArrays), their bidirectional forms and static_state_saving_rnn.

Scopes and names are TF1's: `rnn/` (or the scope given), `bidirectional_rnn/fw/` and
`bidirectional_rnn/bw/`, so the cells' weights are `rnn/basic_lstm_cell/kernel` and
`bidirectional_rnn/fw/basic_lstm_cell/kernel`. With `sequence_length`, steps at or past an
example's length give zeros and carry the state through unchanged (TF1's _rnn_step, with a
select rather than a cond: the same values).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, control_dependencies, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.ops import nest
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.control_flow import while_loop
from tfc.ops.logic import greater_equal, where
from tfc.ops.math import cast, maximum, minimum
from tfc.ops.reduce import reduce_max
from tfc.ops.tensor_array import TensorArray
from tfc.rnn.cell import RNNCell, zeros_for
from tfc.variables import variable_scope

__all__ = [
    "static_rnn",
    "dynamic_rnn",
    "bidirectional_dynamic_rnn",
    "static_bidirectional_rnn",
    "static_state_saving_rnn",
]


def _check_cell(cell: Any, what: str = "cell") -> None:
    if not isinstance(cell, RNNCell) and not (
        hasattr(cell, "output_size") and hasattr(cell, "state_size") and callable(cell)
    ):
        raise TypeError(f"{what} must be an instance of RNNCell, saw: {type(cell).__name__}")


def _initial_state(cell: Any, initial_state: Any, batch_size: Any, dtype: Any) -> Any:
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def _state_dtype(dtype: Any, state: Any) -> _dt.DType:
    """The dtype of the outputs: `dtype`, else the one dtype of every state tensor."""
    if dtype is not None:
        return _dt.as_dtype(dtype)
    dtypes = {t.dtype for t in nest.flatten(state)}
    if len(dtypes) != 1:
        raise ValueError(f"State has tensors of different inferred dtypes: {sorted(dtypes)}")
    return dtypes.pop()


def _sequence_length(sequence_length: Any) -> Tensor | None:
    if sequence_length is None:
        return None
    lengths = convert_to_tensor(sequence_length, name="sequence_length")
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(
            f"sequence_length must be a vector of length batch_size, but saw shape: {lengths.shape}"
        )
    return _array.identity(cast(lengths, _dt.int32), name="sequence_length")


def _masked_step(time: Any, lengths: Tensor, zero_output: Any, state: Any, call_cell: Callable,
                 ) -> tuple[Any, Any]:  # fmt: skip
    """TF1's _rnn_step: the cell's output and state where time < length, else zeros and the
    state carried through."""
    new_output, new_state = call_cell()
    nest.assert_same_structure(zero_output, new_output)
    nest.assert_same_structure(state, new_state)
    copy = greater_equal(time, lengths)

    def through(old: Any, new: Any) -> Any:
        if isinstance(old, TensorArray) or new.shape.ndims == 0:
            return new
        return where(copy, old, new)

    output = nest.map_structure(through, zero_output, new_output)
    return output, nest.map_structure(through, state, new_state)


def _zero_output(cell: Any, batch_size: Any, dtype: _dt.DType) -> Any:
    return nest.map_structure(lambda s: zeros_for(batch_size, s, dtype), cell.output_size)


def _flat_size(size: Any) -> list[int]:
    if isinstance(size, numbers.Integral):
        return [int(size)]
    return TensorShape(size).as_list()


# -- static_rnn -----------------------------------------------------------------------------------
def static_rnn(
    cell: Any,
    inputs: Any,
    initial_state: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list, Any]:
    """`tf.nn.static_rnn`: the cell applied to each of `inputs` (a list of [batch, depth]
    tensors, or of structures of them) in turn, unrolled; returns (outputs, final state)."""
    _check_cell(cell)
    if not nest.is_nested(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    outputs = []
    with variable_scope(scope or "rnn"):
        first = inputs[0]
        while nest.is_nested(first):
            first = first[0]
        first = convert_to_tensor(first)
        for flat in nest.flatten(inputs):
            shape = convert_to_tensor(flat).shape
            if shape.ndims is not None and shape.ndims >= 2:
                for i, d in enumerate(shape.as_list()[1:]):
                    if d is None:
                        raise ValueError(
                            f"Input size (dimension {i} of inputs) must be accessible via "
                            "shape inference, but saw value None."
                        )
        static = first.shape[0].value if first.shape.ndims else None
        batch_size = static if static is not None else _array.shape(first)[0]
        state = _initial_state(cell, initial_state, batch_size, dtype)
        lengths = _sequence_length(sequence_length)
        if lengths is not None:
            zero_output = _zero_output(cell, batch_size, _state_dtype(dtype, state))
        for time, input_ in enumerate(inputs):

            def call_cell(input_: Any = input_, state: Any = state) -> Any:
                return cell(input_, state)

            if lengths is not None:
                output, state = _masked_step(time, lengths, zero_output, state, call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
    return outputs, state


def _reverse_steps(inputs: list, lengths: Tensor | None) -> list:
    """The list of steps reversed, each example within its own length when lengths are given
    (TF1's _reverse_seq)."""
    if lengths is None:
        return list(reversed(inputs))
    flat_steps = [nest.flatten(step) for step in inputs]
    reversed_flat = []
    for k in range(len(flat_steps[0])):
        stacked = _array.stack([steps[k] for steps in flat_steps])  # [time, batch, ...]
        turned = _array.reverse_sequence(stacked, lengths, seq_axis=0, batch_axis=1)
        reversed_flat.append(_array.unstack(turned, len(inputs)))
    return [
        nest.pack_sequence_as(inputs[t], [parts[t] for parts in reversed_flat])
        for t in range(len(inputs))
    ]


def static_bidirectional_rnn(
    cell_fw: Any,
    cell_bw: Any,
    inputs: Any,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list, Any, Any]:
    """`tf.nn.static_bidirectional_rnn`: a forward and a backward static_rnn; each output is
    the two directions' outputs concatenated. Returns (outputs, fw state, bw state)."""
    _check_cell(cell_fw, "cell_fw")
    _check_cell(cell_bw, "cell_bw")
    if not nest.is_nested(inputs) or not inputs:
        raise TypeError("inputs must be a non-empty sequence")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with variable_scope("bw") as bw_scope:
            lengths = _sequence_length(sequence_length)
            tmp, state_bw = static_rnn(
                cell_bw, _reverse_steps(list(inputs), lengths), initial_state_bw, dtype,
                sequence_length, scope=bw_scope,
            )  # fmt: skip
    output_bw = _reverse_steps(tmp, lengths)
    outputs = [
        nest.pack_sequence_as(
            fw, [_array.concat([f, b], 1) for f, b in zip(nest.flatten(fw), nest.flatten(bw))]
        )
        for fw, bw in zip(output_fw, output_bw)
    ]
    return outputs, state_fw, state_bw


def static_state_saving_rnn(
    cell: Any,
    inputs: Any,
    state_saver: Any,
    state_name: Any,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list, Any]:
    """`tf.nn.static_state_saving_rnn`: static_rnn starting from `state_saver.state(name)`
    and handing the final state to `state_saver.save_state(name, state)` before the last
    output is returned (state_name: one name per state tensor, as a structure like
    cell.state_size)."""
    state_size = cell.state_size
    names = nest.flatten(state_name)
    if nest.is_nested(state_size) != nest.is_nested(state_name):
        raise ValueError(
            f"state_name should be the same type as cell.state_size. state_name: "
            f"{state_name!r}, cell.state_size: {state_size!r}"
        )
    if len(names) != len(nest.flatten(state_size)):
        raise ValueError(
            f"state_name and cell.state_size have different structures: {state_name!r} vs "
            f"{state_size!r}"
        )
    initial = nest.pack_sequence_as(state_size, [state_saver.state(n) for n in names])
    outputs, state = static_rnn(cell, inputs, initial_state=initial,
                                sequence_length=sequence_length, scope=scope)  # fmt: skip
    saves = [state_saver.save_state(n, s) for n, s in zip(names, nest.flatten(state))]
    with control_dependencies(saves):
        last = nest.flatten(outputs[-1])
        last = [_array.identity(t) for t in last]
    outputs[-1] = nest.pack_sequence_as(outputs[-1], last)
    return outputs, state


# -- dynamic_rnn ----------------------------------------------------------------------------------
def _transpose_batch_time(x: Tensor) -> Tensor:
    x = convert_to_tensor(x)
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"dynamic_rnn needs the rank of its inputs; {x.name} has none")
    if rank < 2:
        return x
    return _array.transpose(x, [1, 0, *range(2, rank)])


def _batch_size(flat_input: list[Tensor]) -> Any:
    """The batch size (dimension 1 of time-major inputs): static where known."""
    for x in flat_input:
        if x.shape.ndims is not None and x.shape.ndims >= 2 and x.shape[1].value is not None:
            return x.shape[1].value
    return _array.shape(flat_input[0])[1]


def dynamic_rnn(
    cell: Any,
    inputs: Any,
    sequence_length: Any = None,
    initial_state: Any = None,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: Any = None,
) -> tuple[Any, Any]:
    """`tf.nn.dynamic_rnn`: the cell run over the time axis of `inputs` ([batch, time, ...],
    or [time, batch, ...] when time_major) in a tf.while_loop compiled to a native loop.
    Returns (outputs, final state), outputs in the inputs' layout. `parallel_iterations` and
    `swap_memory` are accepted; iterations run one after the other in planned memory."""
    _check_cell(cell)
    with variable_scope(scope or "rnn"):
        flat_input = [convert_to_tensor(x) for x in nest.flatten(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        lengths = _sequence_length(sequence_length)
        batch_size = _batch_size(flat_input)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        inputs = nest.pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(
            cell, inputs, state, parallel_iterations or 32, lengths, dtype
        )
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
    return outputs, final_state


def _dynamic_rnn_loop(
    cell: Any, inputs: Any, state: Any, parallel_iterations: int, lengths: Tensor | None,
    dtype: Any,
) -> tuple[Any, Any]:  # fmt: skip
    flat_input = nest.flatten(inputs)
    shapes = [x.shape for x in flat_input]
    for shape in shapes:
        if shape.ndims is None or shape.ndims < 3:
            raise ValueError(
                f"Shape {shape} must have rank at least 3: [time, batch, depth] (time major)"
            )
        if not TensorShape(shape.as_list()[2:]).is_fully_defined():
            raise ValueError(
                "Input size (depth of inputs) must be accessible via shape inference, but saw "
                "value None."
            )
    const_time, const_batch = shapes[0].as_list()[:2]
    for shape in shapes[1:]:
        if shape[0].value != const_time:
            raise ValueError("Time steps is not the same for all the elements in the input in a "
                             "batch.")  # fmt: skip
        if shape[1].value != const_batch:
            raise ValueError("Batch_size is not the same for all the elements in the input.")
    time_steps = const_time if const_time is not None else _array.shape(flat_input[0])[0]
    batch_size = const_batch if const_batch is not None else _array.shape(flat_input[0])[1]
    out_dtype = _state_dtype(dtype, state)
    flat_output_size = nest.flatten(cell.output_size)
    zero_output = _zero_output(cell, batch_size, out_dtype) if lengths is not None else None
    with name_scope("dynamic_rnn") as base_name:
        pass
    output_ta = tuple(
        TensorArray(
            out_dtype,
            size=time_steps,
            tensor_array_name=f"{base_name}output_{i}",
            element_shape=[const_batch, *_flat_size(size)],
        )  # fmt: skip
        for i, size in enumerate(flat_output_size)
    )
    input_ta = tuple(
        TensorArray(
            x.dtype,
            size=time_steps,
            tensor_array_name=f"{base_name}input_{i}",
            element_shape=x.shape.as_list()[1:],
        ).unstack(x)  # fmt: skip
        for i, x in enumerate(flat_input)
    )
    time = constant(0, dtype=_dt.int32, name="time")

    def time_step(time: Tensor, output_ta_t: tuple, state: Any) -> tuple:
        flat_t = []
        for ta, shape in zip(input_ta, shapes):
            x = ta.read(time)
            x.set_shape(shape[1:])
            flat_t.append(x)
        input_t = nest.pack_sequence_as(inputs, flat_t)

        def call_cell() -> Any:
            return cell(input_t, state)

        if lengths is not None:
            output, new_state = _masked_step(time, lengths, zero_output, state, call_cell)
        else:
            output, new_state = call_cell()
        flat_output = nest.flatten(output)
        output_ta_t = tuple(ta.write(time, out) for ta, out in zip(output_ta_t, flat_output))
        return time + 1, output_ta_t, new_state

    if lengths is not None:
        # at least one step, as TF1 runs: steps past the longest example are left as zeros
        loop_bound = minimum(time_steps, maximum(1, reduce_max(lengths)))
    else:
        loop_bound = time_steps
    _, final_ta, final_state = while_loop(
        lambda time, *_: time < loop_bound, time_step, (time, output_ta, state),
        parallel_iterations=parallel_iterations, maximum_iterations=time_steps,
    )  # fmt: skip
    final_outputs = []
    for ta, size in zip(final_ta, flat_output_size):
        out = ta.stack()
        out.set_shape([const_time, const_batch, *_flat_size(size)])
        final_outputs.append(out)
    return nest.pack_sequence_as(cell.output_size, final_outputs), final_state


def bidirectional_dynamic_rnn(
    cell_fw: Any,
    cell_bw: Any,
    inputs: Any,
    sequence_length: Any = None,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: Any = None,
) -> tuple[tuple, tuple]:
    """`tf.nn.bidirectional_dynamic_rnn`: dynamic_rnn forward, and backward over the inputs
    reversed within each example's length. Returns ((output_fw, output_bw), (state_fw,
    state_bw)), output_bw in the inputs' time order."""
    _check_cell(cell_fw, "cell_fw")
    _check_cell(cell_bw, "cell_bw")
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def reverse(x: Any) -> Tensor:
        if sequence_length is None:
            return _array.reverse(x, axis=[time_axis])
        return _array.reverse_sequence(
            x, lengths, seq_axis=time_axis, batch_axis=batch_axis
        )  # fmt: skip

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope,
            )  # fmt: skip
        with variable_scope("bw") as bw_scope:
            lengths = None if sequence_length is None else _sequence_length(sequence_length)
            reversed_inputs = nest.map_structure(reverse, inputs)
            tmp, state_bw = dynamic_rnn(
                cell_bw, reversed_inputs, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope,
            )  # fmt: skip
    output_bw = nest.map_structure(reverse, tmp)
    return (output_fw, output_bw), (state_fw, state_bw)
