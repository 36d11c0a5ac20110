"""Array ops that reorder elements: ReverseV2, ReverseSequence, Roll, Sort, searchsorted's
LowerBound/UpperBound, InvertPermutation, UnravelIndex; and BroadcastTo, BroadcastArgs.

ReverseV2, Roll and BroadcastTo are strided copies whose axes and shifts are known when
compiling. ReverseSequence reads each batch entry's length at run time. Sort orders each row
stably (ties keep their order) and gives the positions too; tf.sort and tf.argsort use it (TF
builds them from TopKV2, which gives the same order). The searches and InvertPermutation read
their inputs at run time and fail the run with TensorFlow's messages on bad values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import shape_str
from tfc.ops.array_common import (
    INDEX_DTYPES,
    check_rank,
    contiguous,
    index_tensor,
    int_list,
    merge_or_raise,
    shape_value,
    strided_copy,
)
from tfc.ops.array_join import transpose
from tfc.ops.array_shape import expand_dims, reshape, shape
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import no_flops
from tfc.ops.grad_ops import shape_tensor
from tfc.ops.kernels import (
    Kernel,
    Operand,
    OrderSpec,
    Param,
    SequenceSpec,
    c_literal,
    contiguous_strides,
    loop_kernel,
    view,
)
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = [
    "reverse",
    "reverse_v2",
    "reverse_sequence",
    "roll",
    "sort",
    "argsort",
    "searchsorted",
    "invert_permutation",
    "unravel_index",
    "broadcast_to",
    "broadcast_dynamic_shape",
]


def _axis_values(ctx: OpContext, i: int, rank: int | None, what: str = "axis") -> list[int] | None:
    """The axes input `i` holds (TF's error for one out of range), normalized; None if unknown."""
    check_dtype(ctx, i, INDEX_DTYPES, what)
    value = ctx.const(i)
    if value is None or rank is None:
        return None
    axes = []
    for k, a in enumerate(int_list(value)):
        if not -rank <= a < rank:
            raise ctx.error(f"'{what}'[{k}] = {a} is out of valid range [0, {rank - 1}")
        axes.append(a % rank)
    return axes


# -- ReverseV2 ------------------------------------------------------------------------------------
def _reverse_infer(ctx: OpContext) -> list:
    x = ctx.in_shapes[0]
    vector = ctx.in_shapes[1]
    if vector is not None and len(vector) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(vector)}")
    axes = _axis_values(ctx, 1, None if x is None else len(x))
    if axes is not None:
        seen = set()
        for a in axes:
            if a in seen:
                raise ctx.error(f"axis {a} specified more than once.")
            seen.add(a)
    return [(ctx.in_dtypes[0], x)]


def _reverse_reference(ctx: OpContext, x: np.ndarray, axis: Any) -> np.ndarray:
    axes = tuple(a % max(x.ndim, 1) for a in int_list(axis))
    return np.array(np.flip(x, axes)) if axes else np.array(x)


def _reverse_lower(ctx: OpContext) -> list:
    shape_, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    axes = {a % len(shape_) for a in int_list(ctx.require_const(1, "axis"))}
    strides = contiguous_strides(shape_)
    offset = sum((shape_[k] - 1) * strides[k] for k in axes if shape_[k])
    src = Operand(
        "in0", dtype, tuple(-s if k in axes else s for k, s in enumerate(strides)), offset
    )
    return strided_copy(shape_, contiguous("out0", dtype, shape_), src)


register(
    OpDef(
        "ReverseV2",
        dtypes=_dt.STORABLE,
        infer=_reverse_infer,
        reference=_reverse_reference,
        lower=_reverse_lower,
        flops=no_flops,
        const_inputs=(1,),
        grad=lambda op, dy: [apply_op("ReverseV2", [dy, op.inputs[1]]).outputs[0], None],
        input_names=("tensor", "axis"),
    )
)


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """`tf.reverse` (`tf.reverse_v2`): the elements in reverse order along each of `axis`."""
    with name_scope(name, "ReverseV2", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        axis_t = index_tensor(axis, "axis")
        return apply_op("ReverseV2", [x, axis_t], name=scope).outputs[0]


reverse_v2 = reverse


# -- ReverseSequence ------------------------------------------------------------------------------
def _sequence_dims(ctx: OpContext, rank: int) -> tuple[int, int]:
    seq, batch = int(ctx.attrs["seq_dim"]), int(ctx.attrs["batch_dim"])
    if seq == batch:
        raise ctx.error(f"seq_dim and batch_dim must differ, both are {seq}")
    if seq >= rank or seq < 0:
        raise ctx.error(f"seq_dim must be < input rank: {seq} vs. {rank}")
    if batch >= rank or batch < 0:
        raise ctx.error(f"batch_dim must be < input rank: {batch} vs. {rank}")
    return seq, batch


def _reverse_sequence_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "seq_lengths")
    check_rank(ctx, 1, 1)
    x, lengths = ctx.in_shapes
    if x is not None:
        _, batch = _sequence_dims(ctx, len(x))
        n, b = (None if lengths is None else lengths[0]), x[batch]
        if n is not None and b is not None and n != b:
            raise ctx.error(f"Dimensions must be equal, but are {b} and {n}")
    return [(ctx.in_dtypes[0], x)]


def _check_lengths(lengths: np.ndarray, size: int, seq: int) -> None:
    for b, n in enumerate(np.ravel(lengths).tolist()):
        if n > size:
            raise errors.InvalidArgumentError(None, None, f"seq_lens({b}) > input.dims({seq})")
        if n < 0:
            raise errors.InvalidArgumentError(None, None, f"seq_lens({b}) < 0")


def _reverse_sequence_reference(ctx: OpContext, x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    seq, batch = _sequence_dims(ctx, x.ndim)
    _check_lengths(lengths, x.shape[seq], seq)
    out = np.array(x, copy=True)
    for b, n in enumerate(np.ravel(lengths).tolist()):
        rows = [slice(None)] * x.ndim
        rows[batch] = b
        rows[seq] = slice(0, n)
        out[tuple(rows)] = np.flip(x[tuple(rows)], axis=seq - (batch < seq))
    return out


def _reverse_sequence_lower(ctx: OpContext) -> list:
    x, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    seq, batch = _sequence_dims(ctx, len(x))
    total = math.prod(x)
    strides = contiguous_strides(x)
    spec = SequenceSpec(
        dtype, ctx.in_dtypes[1], total, x[batch], strides[batch], x[seq], strides[seq], seq
    )
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("lengths", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    return [Kernel("reverse_sequence", params, spec, can_fail=True)]


def _reverse_sequence_grad(op, dy: Tensor) -> list:
    attrs = {"seq_dim": op.get_attr("seq_dim"), "batch_dim": op.get_attr("batch_dim")}
    return [apply_op("ReverseSequence", [dy, op.inputs[1]], attrs).outputs[0], None]


register(
    OpDef(
        "ReverseSequence",
        dtypes=_dt.STORABLE,
        infer=_reverse_sequence_infer,
        reference=_reverse_sequence_reference,
        lower=_reverse_sequence_lower,
        flops=no_flops,
        grad=_reverse_sequence_grad,
        input_names=("input", "seq_lengths"),
    )
)


def reverse_sequence(
    input: Any,  # noqa: A002
    seq_lengths: Any,
    seq_axis: int | None = None,
    batch_axis: int | None = None,
    name: str | None = None,
    seq_dim: int | None = None,
    batch_dim: int | None = None,
) -> Tensor:
    """`tf.reverse_sequence`: along `seq_axis`, the first seq_lengths[b] elements of each batch
    entry b (along `batch_axis`) reversed, the rest kept. A length outside [0, the sequence
    dim] fails the run with InvalidArgumentError."""
    seq = _pick(seq_axis, "seq_axis", seq_dim, "seq_dim")
    batch = _pick(batch_axis, "batch_axis", batch_dim, "batch_dim")
    if seq is None:
        raise TypeError("reverse_sequence() missing required argument 'seq_axis'")
    with name_scope(name, "ReverseSequence", [input, seq_lengths]) as scope:
        x = convert_to_tensor(input, name="input")
        lengths = convert_to_tensor(seq_lengths, name="seq_lengths")
        rank = x._shape_tuple
        attrs = {"seq_dim": int(seq), "batch_dim": 0 if batch is None else int(batch)}
        if rank is not None:  # negative axes count from the end, as TF's Python layer has them
            attrs = {k: v % len(rank) if v < 0 else v for k, v in attrs.items()}
        return apply_op("ReverseSequence", [x, lengths], attrs, name=scope).outputs[0]


def _pick(new: Any, new_name: str, old: Any, old_name: str) -> Any:
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


# -- Roll -----------------------------------------------------------------------------------------
def _roll_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "shift")
    check_dtype(ctx, 2, INDEX_DTYPES, "axis")
    shift, axis = ctx.in_shapes[1], ctx.in_shapes[2]
    for s in (shift, axis):
        if s is not None and len(s) > 1:
            raise ctx.error(f"Shape must be at most rank 1 but is rank {len(s)}")
    if shift is not None and axis is not None:
        merge_or_raise(ctx, tuple(shift), tuple(axis))
    x = ctx.in_shapes[0]
    if x is not None and len(x) == 0:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    _roll_shifts(ctx, x, ctx.const(1), ctx.const(2))
    return [(ctx.in_dtypes[0], x)]


def _roll_shifts(ctx: OpContext, x: tuple | None, shift: Any, axis: Any) -> dict[int, int] | None:
    """Each rolled axis's total shift (repeated axes add up), in [0, dim)."""
    if x is None or shift is None or axis is None:
        return None
    shifts, axes = int_list(shift), int_list(axis)
    if len(shifts) != len(axes):
        raise ctx.error(f"shift and axis must have the same size: {len(shifts)} vs {len(axes)}")
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes):
        if not -len(x) <= a < len(x):
            raise ctx.error(f"axis {a} is out of range")
        a %= len(x)
        total[a] = total.get(a, 0) + s
    return {a: s % x[a] if x[a] else 0 for a, s in total.items() if x[a] is not None}


def _roll_reference(ctx: OpContext, x: np.ndarray, shift: Any, axis: Any) -> np.ndarray:
    shifts = _roll_shifts(ctx, x.shape, shift, axis)
    return np.array(np.roll(x, list(shifts.values()), list(shifts.keys()))) if shifts else x


def _roll_lower(ctx: OpContext) -> list:
    """One strided copy per combination of the two pieces of each rolled axis."""
    x, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    shifts = _roll_shifts(ctx, x, ctx.require_const(1, "shift"), ctx.require_const(2, "axis"))
    strides = contiguous_strides(x)
    rolled = [a for a, s in shifts.items() if s]
    kernels = []
    for pieces in itertools.product((0, 1), repeat=len(rolled)):
        sizes, out_offset, in_offset = list(x), 0, 0
        for a, piece in zip(rolled, pieces):
            s = shifts[a]
            # output [0, s) comes from input [d - s, d); output [s, d) from input [0, d - s)
            sizes[a] = s if piece == 0 else x[a] - s
            out_offset += (0 if piece == 0 else s) * strides[a]
            in_offset += (x[a] - s if piece == 0 else 0) * strides[a]
        out = Operand("out0", dtype, strides, out_offset)
        kernels += strided_copy(sizes, out, Operand("in0", dtype, strides, in_offset))
    return kernels


def _roll_grad(op, dy: Tensor) -> list:
    back = apply_op("Neg", [op.inputs[1]]).outputs[0]
    return [apply_op("Roll", [dy, back, op.inputs[2]]).outputs[0], None, None]


register(
    OpDef(
        "Roll",
        dtypes=_dt.STORABLE,
        infer=_roll_infer,
        reference=_roll_reference,
        lower=_roll_lower,
        flops=no_flops,
        const_inputs=(1, 2),
        grad=_roll_grad,
        input_names=("input", "shift", "axis"),
    )
)


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.roll`: elements shifted along `axis` by `shift`, those leaving one end coming back at
    the other; a repeated axis takes the sum of its shifts."""
    with name_scope(name, "Roll", [input, shift, axis]) as scope:
        x = convert_to_tensor(input, name="input")
        shift_t = index_tensor(shift, "shift")
        axis_t = index_tensor(axis, "axis")
        return apply_op("Roll", [x, shift_t, axis_t], name=scope).outputs[0]


# -- Sort (tf.sort, tf.argsort) -------------------------------------------------------------------
_SORTABLE = _dt.NUMERIC
# {u} strictly before {v}: NaN is the largest value (last ascending, first descending)
_BEFORE = {
    ("f", "ASCENDING"): "({u} < {v} || ({v} != {v} && {u} == {u}))",
    ("f", "DESCENDING"): "({u} > {v} || ({u} != {u} && {v} == {v}))",
    ("i", "ASCENDING"): "({u} < {v})",
    ("i", "DESCENDING"): "({u} > {v})",
}


def _sort_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _SORTABLE, "values")
    if ctx.attrs["direction"] not in ("ASCENDING", "DESCENDING"):
        raise ctx.error(f"direction must be ASCENDING or DESCENDING, got {ctx.attrs['direction']}")
    x = ctx.in_shapes[0]
    if x is not None and len(x) == 0:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    return [(ctx.in_dtypes[0], x), (_dt.int32, x)]


def sort_order(x: np.ndarray, descending: bool) -> np.ndarray:
    """The positions sorting each row (last axis) of x stably, NaN the largest value: the
    kernel's order."""
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    # ascending over the reversed row puts equal values last-first; reversed back, descending
    # with equal values in their order
    n = x.shape[-1]
    return n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]


def _sort_reference(ctx: OpContext, x: np.ndarray) -> list:
    order = sort_order(x, ctx.attrs["direction"] == "DESCENDING")
    return [np.take_along_axis(x, order, axis=-1), order.astype(np.int32)]


def _sort_lower(ctx: OpContext) -> list:
    x, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    n = x[-1]
    rows = math.prod(x[:-1])
    if rows * n == 0:
        return []
    before = _BEFORE[("f" if dtype.kind == "f" else "i", ctx.attrs["direction"])]
    spec = OrderSpec(dtype, _dt.int32, rows, n, before)
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("yi", "int32_t", False, "out1"),
        Param("x", dtype.c_type, True, "in0"),
        Param("s", "int64_t", False, "scratch"),
    ]
    return [Kernel("sort", params, spec)]


def _sort_grad(op, dy: Tensor, _: Tensor = None) -> list:
    """Each sorted value's gradient back at the position it came from: ScatterNd over the
    rows (the batch dims), the positions a permutation of each row."""
    x, positions = op.inputs[0], op.outputs[1]
    rank = len(x._shape_tuple)
    tuples = expand_dims(positions, -1)
    attrs = {"batch_dims": rank - 1}
    return [apply_op("ScatterNd", [tuples, dy, shape_tensor(x)], attrs).outputs[0]]


register(
    OpDef(
        "Sort",
        infer=_sort_infer,
        reference=_sort_reference,
        lower=_sort_lower,
        flops=no_flops,
        grad=_sort_grad,
        scratch=lambda ctx: 16 * ctx.in_shapes[0][-1],  # two int64 positions per value
        input_names=("values",),
        dtypes=_dt.NUMERIC,
        computes_in=HALVES_IN_FLOAT32,
    )
)


def _sorted(values: Any, axis: Any, direction: str, name: Any, scope_name: str) -> tuple:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(
            "Argument `direction` should be one of ASCENDING, DESCENDING. Received: "
            f"direction={direction}"
        )
    with name_scope(name, scope_name, [values]) as scope:
        x = convert_to_tensor(values, name="values")
        dims = x._shape_tuple
        if dims is None:
            raise ValueError(f"{scope_name} needs the rank of its input when the graph is built")
        if len(dims) == 0:
            raise ValueError(f"{scope_name} needs a tensor of rank 1 or more, got a scalar")
        axis = int(axis)
        if not -len(dims) <= axis < len(dims):
            raise ValueError(f"axis {axis} is out of range for a tensor of rank {len(dims)}")
        axis %= len(dims)
        last = len(dims) - 1
        perm = list(range(len(dims)))
        perm[axis], perm[last] = last, axis
        if axis != last:
            x = transpose(x, perm)
        op = apply_op("Sort", [x], {"direction": direction}, name=scope)
        values_out, positions = op.outputs
        if axis != last:  # the swap is its own inverse
            values_out, positions = transpose(values_out, perm), transpose(positions, perm)
        return values_out, positions


def sort(
    values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None
) -> Tensor:
    """`tf.sort`: the values sorted along `axis`; equal values keep their order."""
    return _sorted(values, axis, direction, name, "sort")[0]


def argsort(
    values: Any,
    axis: int = -1,
    direction: str = "ASCENDING",
    stable: bool = False,
    name: str | None = None,
) -> Tensor:
    """`tf.argsort`: the int32 positions that sort `values` along `axis`; always stable (equal
    values in their original order), which `stable=False` permits."""
    return _sorted(values, axis, direction, name, "argsort")[1]


# -- LowerBound, UpperBound (tf.searchsorted) -----------------------------------------------------
def _search_infer(ctx: OpContext) -> list:
    sorted_, values = ctx.in_shapes
    if ctx.in_dtypes[1] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input 'values' of '{ctx.type}' Op has type {ctx.in_dtypes[1].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument 'sorted_inputs'."
        )
    check_dtype(ctx, 0, _SORTABLE, "sorted_inputs")
    out_type = ctx.attrs["out_type"]
    if out_type not in INDEX_DTYPES:
        raise TypeError(f"out_type must be int32 or int64, got {out_type.name} for '{ctx.name}'")
    check_rank(ctx, 0, 2)
    check_rank(ctx, 1, 2)
    if sorted_ is not None and values is not None:
        a, b = sorted_[0], values[0]
        if a is not None and b is not None and a != b:
            raise ctx.error("Leading dim_size of both tensors must match.")
    return [(out_type, values)]


def _search_reference(side: str) -> Callable:
    def reference(ctx: OpContext, sorted_: np.ndarray, values: np.ndarray) -> np.ndarray:
        if sorted_.shape[0] != values.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "Leading dim_size of both tensors must match."
            )
        out = [np.searchsorted(s, v, side=side) for s, v in zip(sorted_, values)]
        return np.array(out, dtype=ctx.attrs["out_type"].np).reshape(values.shape)

    return reference


def _search_lower(side: str) -> Callable:
    def lower(ctx: OpContext) -> list:
        (rows, n), (_, m) = ctx.in_shapes
        if rows * m == 0:
            return []
        dtype, out = ctx.in_dtypes[0], ctx.out_dtypes[0]
        # a row value {u} lies before where {v} goes: left, u < v; right, u <= v
        before = "({u} < {v})" if side == "left" else "({u} <= {v})"
        spec = OrderSpec(dtype, out, rows, n, before, m)
        params = [
            Param("y", out.c_type, False, "out0"),
            Param("x", dtype.c_type, True, "in0"),
            Param("vals", dtype.c_type, True, "in1"),
        ]
        return [Kernel("search_sorted", params, spec)]

    return lower


for _type, _side in (("LowerBound", "left"), ("UpperBound", "right")):
    register(
        OpDef(
            _type,
            infer=_search_infer,
            reference=_search_reference(_side),
            lower=_search_lower(_side),
            flops=no_flops,
            differentiable=False,
            dtypes=_dt.NUMERIC,
            computes_in=HALVES_IN_FLOAT32,
            input_names=("sorted_inputs", "values"),
        )
    )


def searchsorted(
    sorted_sequence: Any,
    values: Any,
    side: str = "left",
    out_type: Any = _dt.int32,
    name: str | None = None,
) -> Tensor:
    """`tf.searchsorted`: for each value, the position in its row of `sorted_sequence` (sorted
    along the last axis; the leading dims shared with `values`) where it would be inserted:
    before equal values (`side="left"`) or after them ("right")."""
    if side not in ("left", "right"):
        raise ValueError(
            f"Argument `side` must be either 'right' or 'left'. Received: `side` = '{side}'."
        )
    op_type = "LowerBound" if side == "left" else "UpperBound"
    with name_scope(name, "searchsorted", [sorted_sequence, values]):
        sequence = convert_to_tensor(sorted_sequence, name="sorted_sequence")
        vals = convert_to_tensor(values, dtype=sequence.dtype, name="values")
        seq_shape, val_shape = sequence._shape_tuple, vals._shape_tuple
        if seq_shape is None or val_shape is None:
            raise ValueError("searchsorted needs the ranks of its inputs when the graph is built")
        if len(seq_shape) == 0 or len(val_shape) == 0:
            raise ValueError("searchsorted needs tensors of rank 1 or more")
        n = seq_shape[-1] if seq_shape[-1] is not None else shape(sequence)[-1]
        m = val_shape[-1] if val_shape[-1] is not None else shape(vals)[-1]
        sequence_2d = reshape(sequence, [-1, n])
        values_2d = reshape(vals, [-1, m])
        attrs = {"out_type": _dt.as_dtype(out_type)}
        found = apply_op(op_type, [sequence_2d, values_2d], attrs, name=op_type).outputs[0]
        return reshape(found, shape(vals))


# -- InvertPermutation ----------------------------------------------------------------------------
def _invert_permutation_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "x")
    check_rank(ctx, 0, 1)
    return [(ctx.in_dtypes[0], ctx.in_shapes[0])]


def _invert_permutation_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    n = x.size
    out = np.full(n, -1, x.dtype)
    for i, v in enumerate(x.tolist()):
        if not 0 <= v < n:
            raise errors.InvalidArgumentError(None, None, f"{v} is not between 0 and {n}")
        if out[v] != -1:
            raise errors.InvalidArgumentError(None, None, f"{v} is duplicated in the input.")
        out[v] = i
    return out


def _invert_permutation_lower(ctx: OpContext) -> list:
    n = ctx.in_shapes[0][0]
    if n == 0:
        return []
    dtype = ctx.in_dtypes[0]
    spec = OrderSpec(dtype, dtype, 1, n, "")
    params = [Param("y", dtype.c_type, False, "out0"), Param("x", dtype.c_type, True, "in0")]
    return [Kernel("invert_permutation", params, spec, can_fail=True)]


register(
    OpDef(
        "InvertPermutation",
        infer=_invert_permutation_infer,
        reference=_invert_permutation_reference,
        lower=_invert_permutation_lower,
        flops=no_flops,
        differentiable=False,
        input_names=("x",),
    )
)


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """`tf.invert_permutation`: y[x[i]] = i; x must hold each of 0..n-1 once (else the run
    fails with InvalidArgumentError)."""
    with name_scope(name, "InvertPermutation", [x]) as scope:
        return apply_op("InvertPermutation", [convert_to_tensor(x)], name=scope).outputs[0]


# -- UnravelIndex ---------------------------------------------------------------------------------
def _unravel_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "indices")
    if ctx.in_dtypes[1] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input 'dims' of 'UnravelIndex' Op has type {ctx.in_dtypes[1].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument 'indices'."
        )
    check_rank(ctx, 1, 1)
    indices = ctx.in_shapes[0]
    if indices is not None and len(indices) > 1:
        raise ctx.error(f'The indices can only be scalar or vector, got "{shape_str(indices)}"')
    dims = ctx.const(1)
    if dims is not None:
        for k, d in enumerate(int_list(dims)):
            if d < 0:
                raise ctx.error(f"Input dims cannot be negative. Got dim = {d} at index {k}")
            if d == 0:
                raise ctx.error(
                    f"Input dims cannot contain a dim of zero, but dims contains zero at index {k}"
                )
    n = None if ctx.in_shapes[1] is None else ctx.in_shapes[1][0]
    if indices is None:
        return [(ctx.in_dtypes[0], None)]
    return [(ctx.in_dtypes[0], (n, *indices))]


def _unravel_reference(ctx: OpContext, indices: np.ndarray, dims: np.ndarray) -> np.ndarray:
    dims = int_list(dims)
    if (indices >= math.prod(dims)).any():
        raise errors.InvalidArgumentError(None, None, "index is out of bound as with dims")
    flat = indices.astype(np.int64)
    rows = []
    for k in range(len(dims)):
        stride = math.prod(dims[k + 1 :])
        q = np.trunc(flat / stride).astype(np.int64)  # C's truncating division and remainder
        rows.append(np.fmod(q, dims[k]))
    return np.array(rows, dtype=indices.dtype).reshape(ctx.out_shapes[0])


def _unravel_lower(ctx: OpContext) -> list:
    """One row of coordinates per dim: (index / stride) % dim, each failing past the end."""
    dtype = ctx.in_dtypes[0]
    count = math.prod(ctx.in_shapes[0])
    dims = int_list(ctx.require_const(1, "dims"))
    total = c_literal(math.prod(dims), dtype)
    guard = (f"{{0}} >= {total}", "index is out of bound as with dims")
    kernels = []
    for k, d in enumerate(dims):
        stride = c_literal(math.prod(dims[k + 1 :]), dtype)
        out = Operand("out0", dtype, (1,), k * count)
        expr = f"({{0}} / {stride}) % {c_literal(d, dtype)}"
        kernels += loop_kernel((count,), out, [Operand("in0", dtype, (1,))], expr, guard)
    return kernels


register(
    OpDef(
        "UnravelIndex",
        infer=_unravel_infer,
        reference=_unravel_reference,
        lower=_unravel_lower,
        flops=no_flops,
        const_inputs=(1,),
        differentiable=False,
        input_names=("indices", "dims"),
    )
)


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """`tf.unravel_index`: the coordinates in a tensor of shape `dims` of flat `indices`
    (a scalar: a vector of len(dims); a vector: one column per index)."""
    with name_scope(name, "UnravelIndex", [indices, dims]) as scope:
        indices = convert_to_tensor(indices, name="indices")
        dims = convert_to_tensor(dims, dtype=indices.dtype, name="dims")
        return apply_op("UnravelIndex", [indices, dims], name=scope).outputs[0]


# -- BroadcastTo, BroadcastArgs -------------------------------------------------------------------
def _broadcast_to_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "shape")
    check_rank(ctx, 1, 1)
    x, target = ctx.in_shapes[0], shape_value(ctx, 1)
    if x is None or target is None:
        return [(ctx.in_dtypes[0], target)]
    if len(x) > len(target):
        raise ctx.error(f"Shape must be at most rank {len(target)} but is rank {len(x)}")
    padded = (1,) * (len(target) - len(x)) + tuple(x)
    out = []
    for d, t in zip(padded, target):
        if d is not None and t is not None and d != 1 and d != t:
            raise ctx.error(f"Dimensions must be equal, but are {d} and {t}")
        out.append(t if t is not None else (d if d != 1 else None))
    return [(ctx.in_dtypes[0], tuple(out))]


def _broadcast_to_lower(ctx: OpContext) -> list:
    x, out, dtype = ctx.in_shapes[0], ctx.out_shapes[0], ctx.in_dtypes[0]
    return strided_copy(out, contiguous("out0", dtype, out), view("in0", dtype, x, out))


register(
    OpDef(
        "BroadcastTo",
        dtypes=_dt.STORABLE,
        infer=_broadcast_to_infer,
        reference=lambda ctx, x, target: np.array(np.broadcast_to(x, tuple(int_list(target)))),
        lower=_broadcast_to_lower,
        flops=no_flops,
        const_inputs=(1,),
        # the gradient has the output's shape: the gradient pass sums it back to the input's
        grad=lambda op, dy: [dy, None],
        input_names=("input", "shape"),
    )
)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.broadcast_to`: `input` repeated along the dims where it has size 1 (or lacks them)."""
    with name_scope(name, "BroadcastTo", [input, shape]) as scope:
        x = convert_to_tensor(input, name="input")
        return apply_op("BroadcastTo", [x, index_tensor(shape, "shape")], name=scope).outputs[0]


def _broadcast_args_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "s0")
    if ctx.in_dtypes[1] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input 's1' of 'BroadcastArgs' Op has type {ctx.in_dtypes[1].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument 's0'."
        )
    check_rank(ctx, 0, 1)
    check_rank(ctx, 1, 1)
    a, b = ctx.const(0), ctx.const(1)
    if a is not None and b is not None:
        try:
            _broadcast_values(a, b)
        except errors.InvalidArgumentError as e:
            raise ctx.error(e.message) from None
    lengths = [s[0] if s is not None else None for s in ctx.in_shapes]
    n = None if None in lengths else max(lengths)
    return [(ctx.in_dtypes[0], (n,))]


def _broadcast_values(a: Any, b: Any) -> list[int]:
    a, b = int_list(a), int_list(b)
    try:
        return list(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Incompatible shapes: [{','.join(map(str, a))}] vs. [{','.join(map(str, b))}]",
        ) from None


def _broadcast_args_lower(ctx: OpContext) -> list:
    """The broadcast shape, known when compiling from the two constant shapes: each value
    written as a literal."""
    dtype = ctx.out_dtypes[0]
    values = _broadcast_values(ctx.require_const(0, "s0"), ctx.require_const(1, "s1"))
    kernels = []
    for k, v in enumerate(values):
        kernels += loop_kernel((1,), Operand("out0", dtype, (1,), k), [], c_literal(v, dtype))
    return kernels


register(
    OpDef(
        "BroadcastArgs",
        infer=_broadcast_args_infer,
        reference=lambda ctx, a, b: np.array(_broadcast_values(a, b), ctx.out_dtypes[0].np),
        lower=_broadcast_args_lower,
        flops=no_flops,
        const_inputs=(0, 1),
        differentiable=False,
        input_names=("s0", "s1"),
    )
)


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """`tf.broadcast_dynamic_shape`: the shape two tensors of shapes `shape_x` and `shape_y`
    broadcast to, as a 1-D tensor (both shapes must be known when compiling)."""
    a = index_tensor(shape_x, "shape_x")
    b = convert_to_tensor(shape_y, dtype=a.dtype, name="shape_y")
    return apply_op("BroadcastArgs", [a, b], name="BroadcastArgs").outputs[0]
