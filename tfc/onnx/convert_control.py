"""ONNX control flow on tfc's: If as tf.cond (its branch alone when the condition is known as
the graph is built), Loop and Scan as tf.while_loop, their per-iteration outputs gathered in
TensorArrays. The subgraphs are imported into the branch and body functions tfc's control flow
calls, reading the enclosing graph's values."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.check_ops import assert_equal
from tfc.ops.constant import constant
from tfc.ops.control_flow import cond, while_loop
from tfc.ops.tensor_array import TensorArray


def _output_dtypes(ctx: NodeContext, body: Any, first: int, inputs: list) -> list:
    """The dtypes of the body's outputs from `first` on: declared, inferred by ONNX's shape
    inference, or found by a trial import of the body (for inputs of these (dtype, shape)s)."""
    dtypes = []
    for info in body.output[first:]:
        t = info.type
        elem = t.tensor_type.elem_type if t.HasField("tensor_type") else 0
        elem = elem or ctx.value_type(info.name)
        dtypes.append(ctx.compute_dtype(int(elem), f"output '{info.name}'") if elem else None)
    if any(d is None for d in dtypes):
        assert ctx.subgraph_dtypes is not None
        tried = ctx.subgraph_dtypes(body, inputs)
        dtypes = [d or tried[first + k] for k, d in enumerate(dtypes)]
    return dtypes


@converter("If")
def _if(ctx: NodeContext) -> list:
    then_graph, else_graph = ctx.attr("then_branch"), ctx.attr("else_branch")
    known = ctx.const(0)
    if known is not None:  # tfc's passes would make it its branch anyway
        chosen = then_graph if bool(np.asarray(known).reshape(-1)[0]) else else_graph
        return [_array.identity(t) for t in ctx.subgraph(chosen, [])]
    pred = _array.reshape(ctx.input(0), [])
    outputs = cond(
        pred,
        lambda: [_array.identity(t) for t in ctx.subgraph(then_graph, [])],
        lambda: [_array.identity(t) for t in ctx.subgraph(else_graph, [])],
        strict=True,
    )
    return list(outputs)


@converter("Loop")
def _loop(ctx: NodeContext) -> list:
    body = ctx.attr("body")
    n_state = len(ctx.inputs) - 2
    n_scan = len(body.output) - 1 - n_state
    if n_scan < 0:
        raise ctx.error(f"the body returns {len(body.output)} values for {n_state} states")
    trip = None
    if ctx.has_input(0):
        trip = ctx.const(0)
        if trip is None and (n_scan or ctx.needs_const(0)):
            trip = ctx.require_const(0, "trip count (the size of the scan outputs)")
    if trip is None and ctx.has_input(0):
        limit: Tensor | None = _array.reshape(_math.cast(ctx.input(0), _dt.int64), [])
    else:
        limit = None if trip is None else constant(int(np.asarray(trip).reshape(-1)[0]),
                                                   dtype=_dt.int64)  # fmt: skip
    if limit is None and not ctx.has_input(1):
        raise ctx.error("a Loop with neither a trip count nor a condition never ends")
    if n_scan and trip is None:
        raise ctx.error("scan outputs need the trip count when the model is imported")
    keep_going = (_array.reshape(ctx.input(1), []) if ctx.has_input(1)
                  else constant(True))  # fmt: skip
    states = [ctx.input(2 + k) for k in range(n_state)]
    count = int(np.asarray(trip).reshape(-1)[0]) if trip is not None else 0
    specs = [(_dt.int64, ()), (_dt.bool_, ()), *[(t.dtype, t._shape_tuple) for t in states]]
    scan_dtypes = _output_dtypes(ctx, body, 1 + n_state, specs) if n_scan else []
    arrays = [TensorArray(dtype, size=count) for dtype in scan_dtypes]

    def test(i: Tensor, go: Tensor, *rest: Any) -> Tensor:
        return go if limit is None else _logic.logical_and(go, _logic.less(i, limit))

    def step(i: Tensor, go: Tensor, *rest: Any) -> list:
        values, tas = rest[:n_state], rest[n_state:]
        outs = ctx.subgraph(body, [i, go, *values])
        go_next = _array.reshape(outs[0], [])
        new_values = [_array.identity(v) for v in outs[1 : 1 + n_state]]
        written = [ta.write(_math.cast(i, _dt.int32), v)
                   for ta, v in zip(tas, outs[1 + n_state :])]  # fmt: skip
        return [_math.add(i, constant(1, dtype=_dt.int64)), go_next, *new_values, *written]

    i0 = constant(0, dtype=_dt.int64)
    final = while_loop(test, step, [i0, keep_going, *states, *arrays])
    results = list(final[2 : 2 + n_state])
    if n_scan:
        # the scan outputs hold one row per iteration: a loop its condition stops early would
        # leave rows unwritten, which tfc's static shapes cannot drop
        ran = assert_equal(final[0], limit, message="Loop stopped before its trip count; tfc "
                           "compiles scan outputs for the trip count")  # fmt: skip
        stacked = [ta.stack() for ta in final[2 + n_state :]]
        with ctx.graph.control_dependencies([ran]):
            results += [_array.identity(t) for t in stacked]
    return results


@converter("Scan")
def _scan(ctx: NodeContext) -> list:
    body = ctx.attr("body")
    n_in = int(ctx.attr("num_scan_inputs"))
    if ctx.opset < 9:  # a batch axis in front of everything, a sequence_lens input first
        if ctx.has_input(0):
            raise ctx.error("sequence_lens (Scan of opset 8) is not supported")
        values = [ctx.input(i) for i in range(1, len(ctx.inputs))]
        batch = values[0]._shape_tuple[0] if values and values[0]._shape_tuple else None
        if batch is None:
            raise ctx.error("the batch size must be known when the model is imported")
        per_batch = [
            _scan_once(ctx, body, n_in, [_array.gather(v, b) for v in values]) for b in range(batch)
        ]
        return [_array.stack(list(parts), axis=0) for parts in zip(*per_batch)]
    return _scan_once(ctx, body, n_in, [ctx.input(i) for i in range(len(ctx.inputs))])


def _scan_once(ctx: NodeContext, body: Any, n_in: int, values: list[Tensor]) -> list[Tensor]:
    n_state = len(values) - n_in
    states, scans = values[:n_state], values[n_state:]
    n_out = len(body.output) - n_state
    in_axes = ctx.attr("scan_input_axes") or [0] * n_in
    in_dirs = ctx.attr("scan_input_directions") or [0] * n_in
    out_axes = ctx.attr("scan_output_axes") or [0] * n_out
    out_dirs = ctx.attr("scan_output_directions") or [0] * n_out
    sequences = []
    length = None
    for x, axis, direction in zip(scans, in_axes, in_dirs):
        shape = x._shape_tuple
        if shape is None or any(d is None for d in shape):
            raise ctx.error("the scan inputs' shapes must be known when the model is imported")
        axis = axis + len(shape) if axis < 0 else axis
        if length is None:
            length = shape[axis]
        elif shape[axis] != length:
            raise ctx.error(f"scan inputs of lengths {length} and {shape[axis]}")
        moved = x if axis == 0 else _array.transpose(
            x, [axis, *[d for d in range(len(shape)) if d != axis]])  # fmt: skip
        if direction:
            moved = _array.gather(moved, constant(np.arange(length - 1, -1, -1, dtype=np.int64)))
        sequences.append(TensorArray(x.dtype, size=length).unstack(moved))
    if length is None:
        raise ctx.error("a Scan needs at least one scan input")
    specs = [(t.dtype, t._shape_tuple) for t in states]
    for x, axis in zip(scans, in_axes):
        shape = list(x._shape_tuple)
        del shape[axis + len(shape) if axis < 0 else axis]
        specs.append((x.dtype, tuple(shape)))
    out_dtypes = _output_dtypes(ctx, body, n_state, specs)
    outputs = [TensorArray(dtype, size=length) for dtype in out_dtypes]

    def step(i: Tensor, *rest: Any) -> list:
        carried = rest[:n_state]
        ins, outs = rest[n_state : n_state + n_in], rest[n_state + n_in :]
        elements = [ta.read(i) for ta in ins]
        results = ctx.subgraph(body, [*carried, *elements])
        new_states = [_array.identity(v) for v in results[:n_state]]
        written = [ta.write(i, v) for ta, v in zip(outs, results[n_state:])]
        return [_math.add(i, constant(1)), *new_states, *ins, *written]

    final = while_loop(lambda i, *rest: _logic.less(i, constant(length)), step,
                       [constant(0), *states, *sequences, *outputs])  # fmt: skip
    results = list(final[1 : 1 + n_state])
    for k, ta in enumerate(final[1 + n_state + n_in :]):
        y = ta.stack()
        if out_dirs[k]:
            y = _array.gather(y, constant(np.arange(length - 1, -1, -1, dtype=np.int64)))
        rank = len(y._shape_tuple)
        axis = out_axes[k] + rank if out_axes[k] < 0 else out_axes[k]
        if axis:
            perm = [*range(1, axis + 1), 0, *range(axis + 1, rank)]
            y = _array.transpose(y, perm)
        results.append(y)
    return results
